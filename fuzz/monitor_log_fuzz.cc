// Fuzz target: any bytes → each monitor reader (src/ingest/nvidia_smi: query CSV with or without
// a header — also with a --smi-fields list —, dmon; src/ingest/dcgm: dcgmi dmon, dcgm-exporter
// text; src/ingest/recording: JSONL, CSV and Chrome-trace recordings), whatever the sniffers say,
// must return a Recording or a Status, never crash. What was read must hold no control character in
// any string (the sanitiser, base/sanitize.h) and no value out of range; the statistics, rules and
// the run document are then built, also on a slice of it (as `--monitor` does against a trace), and
// every view of it checked (fuzz/checks.h: terminal text, JSON read back as written, HTML). Byte 0
// lowers the line cap so the overlong-line error is reached too; bit 1 adds the --smi-fields read.
// Seeds: fuzz/seeds/monitor (fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <string>

#include "advise/monitor_rules.h"
#include "analyze/monitor_stats.h"
#include "base/sanitize.h"
#include "checks.h"
#include "ingest/common/sample_checks.h"
#include "ingest/dcgm/dcgm.h"
#include "ingest/nvidia_smi/nvidia_smi.h"
#include "ingest/recording/recording_reader.h"
#include "report/monitor_document.h"

namespace {

using namespace gpuscope;
using namespace gpuscope::monitor;

constexpr const char* kFuzzFields =
    "timestamp,index,name,utilization.gpu,utilization.memory,memory.used,memory.total,"
    "power.draw,power.limit,clocks.sm,temperature.gpu";

void CheckClean(const std::string& s) {
  if (NeedsSanitizing(s)) __builtin_trap();
}

render::Document RunDocument(const Recording& rec) {
  const analyze::MonitorStats stats = analyze::ComputeMonitorStats(rec);
  return report::BuildRunDocument(stats, advise::AdviseMonitor(stats));
}

void Check(const Recording& rec) {
  for (const std::string& a : rec.command) CheckClean(a);
  for (const std::string& n : rec.notes) CheckClean(n);
  for (const std::string& m : rec.malformed_examples) CheckClean(m);
  CheckClean(rec.gpu_unavailable);
  for (const GpuInfo& g : rec.gpus) CheckClean(g.name);
  for (const Sample& s : rec.samples) {
    for (const ProcessSample& p : s.processes) CheckClean(p.name);
    for (const GpuSample& g : s.gpus)
      if (!ingest::CheckGpuSample(g).empty()) __builtin_trap();
  }
  // Every view of the run document: terminal text, JSON that reads back as written, HTML.
  fuzz::CheckDocument(RunDocument(rec));
  if (!rec.samples.empty()) {
    const int64_t lo = rec.samples.front().time_ns, hi = rec.samples.back().time_ns;
    const Recording slice = analyze::SliceRecording(rec, lo + (hi - lo) / 4, hi - (hi - lo) / 4);
    fuzz::CheckDocument(RunDocument(slice));
  }
}

template <typename Read>
void Try(Read read, std::string_view text, const char* name, size_t cap) {
  auto source = io::MemoryByteSource(text, name);
  auto rec = read(*source, name, cap);
  if (rec.ok())
    Check(*rec);
  else if (rec.status().message().empty())
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t cap = (data[0] & 1) ? 64 : gpuscope::kMaxElementBytes;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  ingest::DetectNvidiaSmiLog(text);
  ingest::LooksLikeJsonlRecording(text);
  ingest::LooksLikeCsvRecording(text);
  ingest::LooksLikeChromeTraceRecording(text);
  ingest::LooksLikeDcgmiDmon(text);
  ingest::LooksLikeDcgmExporter(text);
  Try(ingest::ReadNvidiaSmiLog, text, "fuzz.log", cap);
  // Bit 1 of byte 0: the headerless CSV read with a --smi-fields list.
  if (data[0] & 2)
    Try([](io::ByteSource& s, const std::string& n,
           size_t c) { return ingest::ReadNvidiaSmiLogWithFields(s, n, c, kFuzzFields); },
        text, "fuzz.log", cap);
  Try(ingest::ReadDcgmiDmon, text, "fuzz.dcgmi", cap);
  Try(ingest::ReadDcgmExporter, text, "fuzz.prom", cap);
  Try(ingest::ReadJsonlRecording, text, "fuzz.jsonl", cap);
  Try(ingest::ReadCsvRecording, text, "fuzz.csv", cap);
  Try(ingest::ReadChromeTraceRecording, text, "fuzz.json", cap);
  return 0;
}
