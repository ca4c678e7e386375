// Fuzz target: any bytes → two traces (before, after) → a report of each → Diff → text, JSON and
// HTML, as `gpuscope diff` does. Layout: byte 0 picks the diff options; bytes 1–4 are the length
// of the before trace (little endian, capped at what is left); the rest is the after trace. A side
// that does not load is diffed as a report with no traces and the failure (the CLI stops there,
// but the diff must cope with an empty side too). Seeds: fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "checks.h"
#include "diff/diff.h"
#include "gpuscope/ingest.h"
#include "render/text.h"
#include "report/report.h"

namespace {

struct Side {
  std::vector<gpuscope::Trace> traces;
  std::vector<gpuscope::Status> failures;
};

Side Load(std::string_view bytes, const char* name) {
  gpuscope::LoadOptions options;
  options.threads = 1;
  Side side;
  auto trace = gpuscope::LoadTraceFromBytes(bytes, name, options);
  if (trace.ok())
    side.traces.push_back(std::move(trace.value()));
  else
    side.failures.push_back(trace.status());
  return side;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  if (size < 5) return 0;
  const uint8_t mode = data[0];
  size_t split = data[1] | (data[2] << 8) | (data[3] << 16) | (size_t{data[4]} << 24);
  const std::string_view rest(reinterpret_cast<const char*>(data) + 5, size - 5);
  if (split > rest.size()) split = rest.size();
  const Side before = Load(rest.substr(0, split), "before.json");
  const Side after = Load(rest.substr(split), "after.json");
  if (before.traces.empty() && after.traces.empty()) return 0;
  const report::Report rb = report::BuildReport(before.traces, before.failures, 1);
  const report::Report ra = report::BuildReport(after.traces, after.failures, 1);
  diff::DiffOptions options;
  options.names = (mode & 1) ? diff::NameMode::kRaw : diff::NameMode::kShort;
  options.selection =
      (mode & 2) ? diff::Selection::kHtaFirstIteration : diff::Selection::kSteadySteps;
  diff::DiffReport d = diff::Diff(rb, ra, options);
  d.before_label = "before.json";
  d.after_label = "after.json";
  const render::Document document = diff::BuildDocument(d);
  render::TextOptions text;
  text.verbose = mode & 4;
  text.color = mode & 8;
  text.width = (mode & 16) ? 100 : 0;
  if (render::RenderText(document, text).empty()) fuzz::Fail("empty text output");
  fuzz::CheckDocument(document);
  return 0;
}
