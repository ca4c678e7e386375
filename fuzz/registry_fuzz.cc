// Fuzz target: any bytes (plain or gzip) → the input registry (src/ingest/registry.h): sniffing,
// the known non-inputs, and whichever reader claims the bytes must give a Trace, a Recording, a
// memory Snapshot or a Status with a message, never crash. Byte 0 picks threads, batch size and a
// small element cap (so the cap's error path runs on small inputs). Seeds: one file of every
// format, fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "advise/monitor_rules.h"
#include "advise/snapshot_rules.h"
#include "analyze/memory_snapshot.h"
#include "analyze/monitor_stats.h"
#include "base/sanitize.h"
#include "checks.h"
#include "ingest/registry.h"
#include "report/document.h"
#include "report/monitor_document.h"
#include "report/report.h"
#include "report/snapshot_document.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  if (size == 0) return 0;
  LoadOptions options;
  options.threads = 1 + (data[0] & 1);
  options.batch_bytes = 4096 + ((data[0] >> 1) & 7) * 997;
  if (data[0] & 0x80) options.max_element_bytes = 256;
  auto in = ingest::ReadInputFromBytes(
      std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), "fuzz.in", options);
  if (!in.ok()) {
    if (in.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (in->kind == ingest::ModelKind::kTrace) {
    if (!in->trace) __builtin_trap();
    fuzz::CheckColumnsAligned(*in->trace);
    std::vector<Trace> traces;
    traces.push_back(std::move(*in->trace));
    const auto report = report::BuildReport(traces, {}, 1);
    const render::Document doc = report::BuildDocument(report);
    fuzz::CheckDocument(doc);
  } else if (in->kind == ingest::ModelKind::kSnapshot) {
    if (!in->snapshot) __builtin_trap();
    const analyze::SnapshotAnalysis a = analyze::AnalyzeSnapshot(*in->snapshot);
    fuzz::CheckDocument(report::BuildSnapshotDocument(*in->snapshot, a, advise::AdviseSnapshot(a)));
  } else {
    if (!in->recording) __builtin_trap();
    for (const monitor::GpuInfo& g : in->recording->gpus)
      if (NeedsSanitizing(g.name)) __builtin_trap();
    const analyze::MonitorStats stats = analyze::ComputeMonitorStats(*in->recording);
    fuzz::CheckDocument(report::BuildRunDocument(stats, advise::AdviseMonitor(stats)));
  }
  return 0;
}
