// Fuzz target: any bytes → LoadTraceFromBytes must return a Trace or a Status, never crash, with
// small batches (so cuts land everywhere) and both thread modes; the full report, its JSON and its
// HTML are then rendered from what was read. Every analysis result must satisfy the invariants of
// analyze/invariants.h (idle, gap and duration figures ≥ 0, parts summing to their whole, shares in
// [0, 1]): a violation prints what failed and traps, so a silent wrong answer is a crash here.
// Seeds: fuzz/run.sh.
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "analyze/invariants.h"
#include "gpuscope/ingest.h"
#include "render/html.h"
#include "render/json.h"
#include "render/text.h"
#include "report/document.h"
#include "report/report.h"

namespace {
// Says which check failed (a bare trap leaves only a stack of inlined frames), then traps.
[[noreturn]] __attribute__((format(printf, 1, 2))) void Fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  __builtin_trap();
}
}  // namespace

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
      if (!violations.empty()) Fail("%zu invariant(s) violated", violations.size());
    }
    const gpuscope::render::Document doc = gpuscope::report::BuildDocument(report);
    const std::string json = gpuscope::render::ToJson(doc);
    if (json.empty()) Fail("empty JSON");
    // The JSON reads back into the same document (the contract round-trips).
    auto back = gpuscope::render::FromJson(json, "fuzz");
    if (!back.ok()) Fail("the JSON does not read back: %s", back.status().message().c_str());
    if (!(*back == gpuscope::render::AsReadBack(doc)))
      Fail("the JSON reads back into a different document");
    // No raw control byte reaches a terminal.
    const std::string text = gpuscope::render::RenderText(doc, {false, true, 100});
    for (char c : text)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7F)
        Fail("control byte 0x%02x in the text output", static_cast<unsigned char>(c));
    // The HTML page must never carry a second <script> element: names are escaped.
    const std::string page = gpuscope::render::RenderHtml(doc);
    const size_t first = page.find("<script");
    if (first == std::string::npos || page.find("<script", first + 1) != std::string::npos)
      Fail("the HTML page does not have exactly one <script> element");
  }
  return 0;
}
