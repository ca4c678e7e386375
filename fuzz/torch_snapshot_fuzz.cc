// Fuzz target: any bytes → the safe pickle reader and the memory-snapshot reader
// (src/ingest/torch_snapshot) → analyses → rules → the "gpuscope.snapshot" document. Must give a
// Snapshot or a Status with a message, never crash, never run past the reader's bounds; every
// string read is sanitised, the allocated timeline is never negative, and every view of the
// document is checked (fuzz/checks.h). Byte 0 picks the cap on one string (bit 0: 64 bytes), so
// the cap's error path runs too. Seeds: fuzz/seeds/snapshot and the shared snapshots (fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "advise/snapshot_rules.h"
#include "analyze/memory_snapshot.h"
#include "base/sanitize.h"
#include "checks.h"
#include "ingest/torch_snapshot/pickle.h"
#include "ingest/torch_snapshot/snapshot_reader.h"
#include "report/snapshot_document.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  if (size == 0) return 0;
  const size_t cap = (data[0] & 1) ? 64 : kMaxElementBytes;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  ingest::LooksLikePickle(bytes);
  auto snap = ingest::ParseTorchSnapshot(bytes, "fuzz.pickle", cap);
  if (!snap.ok()) {
    if (snap.status().message().empty()) __builtin_trap();
    return 0;
  }
  for (const auto& stack : snap->stacks)
    for (const auto& f : stack)
      if (NeedsSanitizing(f.name) || NeedsSanitizing(f.filename)) __builtin_trap();
  for (const auto& [k, v] : snap->allocator_settings)
    if (NeedsSanitizing(k) || NeedsSanitizing(v)) __builtin_trap();
  const analyze::SnapshotAnalysis a = analyze::AnalyzeSnapshot(*snap);
  for (const auto& d : a.devices) {
    if (d.min_allocated_bytes < 0 || d.peak_allocated_bytes < d.initial_allocated_bytes)
      fuzz::Fail("allocated below 0 or a peak below the start");
    for (int64_t v : d.allocated_bytes)
      if (v < 0) fuzz::Fail("negative allocated bytes in the timeline");
  }
  fuzz::CheckDocument(report::BuildSnapshotDocument(*snap, a, advise::AdviseSnapshot(a)));
  return 0;
}
