// GPU idle gaps: when no kernel, copy or memset runs on any stream, how long, in which step, what
// the host was doing meanwhile, and whether another finding already explains the gap.
//
// Definitions (times ns):
//  * busy: the exact-ns union of every kernel, memcpy and memset in trace.gpu (all devices and
//    streams; cuda_sync records and zero-length ops excluded; touching ops join) — the same union
//    sync_points.h uses for gpu_idle_after_sync_ns, so a gap after a sync is the same gap here.
//  * analysed range: first step start → last step end (StepsResult, incomplete steps included;
//    the whole-span pseudo-step without ProfilerStep), clipped to the first → last GPU op (empty,
//    range_end_ns == range_start_ns, when the steps lie wholly outside the GPU ops). A gap
//    is a maximal part of the range with no busy time, so always between two GPU ops (before the
//    first op the CPU has not started feeding the GPU; after the last the profiler may be
//    stopping). Its step is the step containing its start.
//  * long gap: length ≥ kLongIdleGapNs (1 ms). Launch overhead and kernel-to-kernel queueing make
//    gaps of µs; a gap of a millisecond or more means the host stopped feeding the GPU.
//  * claims (so that a gap is not counted by two findings):
//      - after_sync: a host-blocking sync point (sync_points.h) ends inside the gap (the
//        sync_points finding already counts the whole gap), or the host sits blocked in sync
//        points for at least half of the gap (it waits on work this trace does not show — another
//        device, a peer rank — and is not doing other work);
//      - dataloader_ns: the part of the gap covered by DataLoader ops (CpuOpTable::is_dataloader,
//        any thread); the input_pipeline_stall finding counts that time;
//      - compile_allocator_ns: the part covered by compile spans or the driver's memory calls
//        (host_work.h CompileAndAllocatorSpans, any thread); jit_compile and allocator_churn
//        count that time;
//      - unexplained_ns = 0 after a sync, else length − the part covered by either of the two.
//    claim = sync (after_sync), else dataloader (dataloader_ns ≥ half the gap), else
//    compile_allocator (compile_allocator_ns ≥ half the gap), else host.
//  * host ops: the outermost CPU events (cpu_op, user_annotation, and runtime calls made outside
//    every op; ProfilerStep excluded) on the
//    thread that launched the GPU op ending the gap (the thread with most launches when that op
//    has no linked launch), ranked by their overlap with the gap. Time inside no op is Python
//    between ops (no event without with_stack).
//  * unexplained idle per steady step: |∪ (long, not-after-sync gaps) − ∪ DataLoader ops −
//    ∪ compile and allocator spans| inside the steady steps / number of steady steps.
//  * Nsight's gpu_gaps rule: gaps longer than kNsightGpuGapNs (500 ms) between the first and the
//    last GPU op (whole trace, not only the steps).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "analyze/steps.h"
#include "analyze/sync_points.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

inline constexpr int64_t kLongIdleGapNs = 1'000'000;     // 1 ms
inline constexpr int64_t kNsightGpuGapNs = 500'000'000;  // Nsight gpu_gaps default: 500 ms
inline constexpr size_t kTopIdleGaps = 10;
inline constexpr size_t kTopIdleHostOps = 5;
// Histogram upper bounds (exclusive): < 10 µs, < 100 µs, < 1 ms, < 10 ms, < 100 ms, < 1 s, ≥ 1 s.
inline constexpr std::array<int64_t, 6> kIdleGapBucketBoundsNs = {
    10'000, 100'000, 1'000'000, 10'000'000, 100'000'000, 1'000'000'000};
inline constexpr size_t kIdleGapBuckets = kIdleGapBucketBoundsNs.size() + 1;

enum class IdleClaim : uint8_t { kHost, kSync, kDataLoader, kCompileAllocator };
// "host", "sync", "dataloader", "compile_allocator"
const char* IdleClaimName(IdleClaim c);

struct IdleGap {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t step = -1;  // N of ProfilerStep#N containing the start; -1 outside / pseudo-step
  bool steady = false;
  bool after_sync = false;  // a sync point ends in it, or the host is blocked in syncs ≥ half of it
  int64_t dataloader_ns = 0;
  int64_t compile_allocator_ns = 0;
  int64_t unexplained_ns = 0;
  IdleClaim claim = IdleClaim::kHost;
  // Outermost ops on the launching thread overlapping the gap: (name, overlap ns), largest first,
  // at most 3.
  std::vector<std::pair<StringId, int64_t>> host_ops;

  int64_t length() const { return end_ns - start_ns; }
};

struct IdleHostOp {  // over the unexplained long gaps
  StringId name = kEmptyString;
  uint64_t gaps = 0;  // gaps it overlaps
  int64_t overlap_ns = 0;
};

struct StepIdleGaps {
  int32_t step = -1;
  bool steady = false;
  int64_t idle_ns = 0;  // Σ gap time inside the step
  uint64_t long_gaps = 0;
  int64_t unexplained_ns = 0;  // long-gap time inside the step not claimed (see above)
};

struct IdleGapStats {
  int64_t range_start_ns = 0;
  int64_t range_end_ns = 0;
  int64_t idle_ns = 0;  // Σ of all gaps in the range (between the first and last GPU op)
  uint64_t gaps = 0;
  std::array<uint64_t, kIdleGapBuckets> histogram_count{};
  std::array<int64_t, kIdleGapBuckets> histogram_ns{};
  uint64_t long_gaps = 0;
  int64_t long_gap_ns = 0;
  uint64_t long_gaps_after_sync = 0;
  int64_t long_gap_after_sync_ns = 0;
  uint64_t long_gaps_dataloader = 0;          // claim dataloader
  int64_t long_gap_dataloader_ns = 0;         // Σ dataloader_ns over long gaps not after a sync
  int64_t long_gap_compile_allocator_ns = 0;  // Σ compile_allocator_ns, the same gaps
  int64_t unexplained_ns = 0;                 // Σ unexplained_ns over long gaps (whole range)
  size_t steady_steps = 0;
  int64_t unexplained_ns_per_steady_step = 0;
  // That unexplained time itself, inside the steady steps: sorted, disjoint [start, end) ns (the
  // what-if idle_host_off takes it out of the host's work).
  std::vector<std::pair<int64_t, int64_t>> unexplained_spans;
  int64_t longest_unexplained_ns = 0;  // the longest long gap with claim host (its length)
  std::vector<IdleGap> longest;        // long gaps by length, at most kTopIdleGaps
  std::vector<IdleHostOp> host_ops;    // by overlap, at most kTopIdleHostOps
  std::vector<StepIdleGaps> steps;     // one per step of StepsResult
  uint64_t nsight_gaps = 0;            // gaps > kNsightGpuGapNs, first → last GPU op
  int64_t nsight_longest_gap_ns = 0;   // longest gap first → last GPU op
};

IdleGapStats AnalyzeIdleGaps(const Trace& trace, const StepsResult& steps, const SyncStats& sync);

}  // namespace gpuscope::analyze
