// Fuzz target: any bytes → LoadTraceFromBytes must return a Trace or a Status, never crash, with
// small batches (so cuts land everywhere) and both thread modes; the full report, its JSON and its
// HTML are then rendered from what was read. Every analysis result must satisfy the invariants of
// analyze/invariants.h (idle, gap and duration figures ≥ 0, parts summing to their whole, shares in
// [0, 1]): a violation prints what failed and traps, so a silent wrong answer is a crash here.
// Seeds: fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "analyze/invariants.h"
#include "checks.h"
#include "gpuscope/ingest.h"
#include "report/document.h"
#include "report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  gpuscope::LoadOptions options;
  // The first byte picks threads and batch size so both paths are explored.
  options.threads = 1 + (data[0] & 1);
  options.batch_bytes = 4096 + (data[0] >> 1) * 97;
  auto trace = gpuscope::LoadTraceFromBytes(
      std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), "fuzz.json", options);
  if (trace.ok()) {
    std::vector<gpuscope::Trace> traces;
    traces.push_back(std::move(trace.value()));
    const auto report = gpuscope::report::BuildReport(traces, {}, 1);
    for (const gpuscope::report::RankReport& r : report.ranks) {
      gpuscope::analyze::AnalysesView view;
      view.gpu_time = &r.gpu_time;
      view.steps = &r.steps;
      view.kernels = &r.kernels;
      view.launches = &r.launches;
      view.copies = &r.copies;
      view.sync = &r.sync;
      view.occupancy = &r.occupancy;
      view.idle_gaps = &r.idle_gaps;
      const std::vector<std::string> violations = gpuscope::analyze::CheckInvariants(view);
      for (const std::string& v : violations)
        std::fprintf(stderr, "invariant violated: %s\n", v.c_str());
      if (!violations.empty()) gpuscope::fuzz::Fail("%zu invariant(s) violated", violations.size());
    }
    const gpuscope::render::Document doc = gpuscope::report::BuildDocument(report);
    gpuscope::fuzz::CheckDocument(doc);
  }
  return 0;
}
