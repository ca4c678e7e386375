// Fuzz target: any bytes → what `gpuscope analyze FILE` does with a monitor input
// (cli::MaybeAnalyzeMonitorInput): a gpuscope JSONL recording or an nvidia-smi log (query CSV or
// dmon) must parse to a Recording or a Status, never crash; the verdict is then built from what
// was read, also on a slice of it (as `--monitor` does against a trace), and rendered as text and
// JSON. Seeds: fuzz/run.sh (tests' nvidia-smi samples, recordings).
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "monitor/nvidia_smi.h"
#include "monitor/recorder.h"
#include "monitor/verdict.h"

namespace {

void Check(const gpuscope::monitor::Recording& rec) {
  using namespace gpuscope::monitor;
  const MonitorReport report = BuildMonitorReport(rec);
  if (RenderMonitorText(report).empty()) __builtin_trap();
  // The JSON must stay JSON whatever names and numbers the log holds.
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(RenderMonitorJson(report)).get(doc) != simdjson::SUCCESS) __builtin_trap();
  if (!rec.samples.empty()) {
    const int64_t lo = rec.samples.front().time_ns, hi = rec.samples.back().time_ns;
    const Recording slice = SliceRecording(rec, lo + (hi - lo) / 4, hi - (hi - lo) / 4);
    const MonitorReport r2 = BuildMonitorReport(slice);
    RenderMonitorText(r2);
    RenderMonitorJson(r2);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope::monitor;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The same sniffing as cli::ReadMonitorFile, on the first 64 KiB.
  const std::string head = text.substr(0, 64 * 1024);
  if (LooksLikeJsonlRecording(head)) {
    auto rec = ParseJsonlRecording(text, "fuzz.jsonl");
    if (rec.ok()) Check(*rec);
    else if (rec.status().message().empty()) __builtin_trap();
  }
  // Whatever the sniffing says, the nvidia-smi parser must cope (it sniffs again itself).
  DetectNvidiaSmiLog(head);
  auto rec = ParseNvidiaSmiLog(text, "fuzz.log");
  if (rec.ok()) Check(*rec);
  else if (rec.status().message().empty()) __builtin_trap();
  return 0;
}
