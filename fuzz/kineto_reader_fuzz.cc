// Fuzz target: any bytes → LoadTraceFromBytes must return a Trace or a Status, never crash, with
// small batches (so cuts land everywhere) and both thread modes; the full report, its JSON and its
// HTML are then rendered from what was read. Seeds: fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpuscope/ingest.h"
#include "render/html.h"
#include "render/json.h"
#include "render/text.h"
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
    const gpuscope::render::Document doc = gpuscope::report::BuildDocument(report);
    const std::string json = gpuscope::render::ToJson(doc);
    if (json.empty()) __builtin_trap();
    // The JSON reads back into the same document (the contract round-trips).
    auto back = gpuscope::render::FromJson(json, "fuzz");
    if (!back.ok() || !(*back == doc)) __builtin_trap();
    // No raw control byte reaches a terminal.
    const std::string text = gpuscope::render::RenderText(doc, {false, true, 100});
    for (char c : text)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7F) __builtin_trap();
    // The HTML page must never carry a second <script> element: names are escaped.
    const std::string page = gpuscope::render::RenderHtml(doc);
    const size_t first = page.find("<script");
    if (first == std::string::npos || page.find("<script", first + 1) != std::string::npos)
      __builtin_trap();
  }
  return 0;
}
