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
#include "analyze/job.h"
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
    gpuscope::fuzz::CheckColumnsAligned(trace.value());
    std::vector<gpuscope::Trace> traces;
    traces.push_back(std::move(trace.value()));
    const auto report = gpuscope::report::BuildReport(traces, {}, 1);
    for (const gpuscope::report::RankReport& r : report.ranks) {
      gpuscope::fuzz::CheckInvariantsHold(r);
      // The job level on what was read: the rank's facts, and the rank analysed as a job of two
      // identical copies (every collective matches itself: nobody waits, nobody is named).
      const gpuscope::model::RankFacts facts = gpuscope::analyze::ExtractRankFacts(r);
      if (facts.busy.busy_ns.size() > gpuscope::model::kMaxBusyBins)
        gpuscope::fuzz::Fail("%zu busy bins", facts.busy.busy_ns.size());
      for (int64_t b : facts.busy.busy_ns) {
        if (b < 0 || b > facts.busy.bin_ns) gpuscope::fuzz::Fail("busy bin %lld", (long long)b);
      }
      for (size_t i = 0; i < facts.collectives.size(); ++i) {
        const gpuscope::model::CollectiveRecord& c = facts.collectives[i];
        if (c.end_ns < c.start_ns) gpuscope::fuzz::Fail("collective %zu ends before it starts", i);
        if (i > 0 && c.start_ns < facts.collectives[i - 1].start_ns)
          gpuscope::fuzz::Fail("collectives out of order at %zu", i);
      }
      const std::vector<const gpuscope::model::RankFacts*> twice = {&facts, &facts};
      (void)gpuscope::analyze::GroupJobs(twice);
      const gpuscope::analyze::JobAnalysis job = gpuscope::analyze::AnalyzeJob(twice);
      for (const gpuscope::analyze::MatchedCollective& c : job.collectives) {
        if (c.skew_ns != 0 || c.wait_caused_ns != 0 || c.duration_ns < 0)
          gpuscope::fuzz::Fail("identical ranks: skew %lld, wait %lld", (long long)c.skew_ns,
                               (long long)c.wait_caused_ns);
      }
      if (job.straggler) gpuscope::fuzz::Fail("identical ranks: a straggler was named");
    }
    const gpuscope::render::Document doc = gpuscope::report::BuildDocument(report);
    gpuscope::fuzz::CheckDocument(doc);
  }
  return 0;
}
