// Host–device synchronisation: where the CPU stops and waits for the GPU, how long, in which step,
// and which op asked for it.
//
// Definitions (times ns):
//  * sync call: a runtime/driver call in one of the SyncCategory classes:
//      - kDeviceSync: cudaDeviceSynchronize, hipDeviceSynchronize, cuCtxSynchronize;
//      - kStreamSync: cuda/hip/cuStreamSynchronize; kEventSync: cuda/hip/cuEventSynchronize;
//      - kStreamWaitEvent: cuda/hip/cuStreamWaitEvent — a GPU-side wait; it does NOT block the
//      host,
//        so it is counted but never forms a sync point;
//      - kSyncMemcpy: a memcpy call whose name lacks "Async" (cudaMemcpy, hipMemcpy,
//        hipMemcpyWithStream, ...): the host waits for the copy;
//      - kPageableMemcpyAsync: a cudaMemcpyAsync (any "Async" memcpy) whose copy touches pageable
//        host memory — effectively synchronous (Nsight's cuda_memcpy_async rule); this is how
//        tensor.item() / .cpu() / .tolist() block;
//      - kSyncMemset: a memset call without "Async" on pinned or managed memory (Nsight's
//        cuda_memset_sync rule; on device memory it does not block the host and is not counted).
//  * blocked time of a call = its duration (the CPU is inside the call until the GPU catches up).
//  * sync point: one host wait as the program asked for it. The enclosing events considered are
//    cpu_op and user_annotation events other than ProfilerStep, on the call's own thread (pid,
//    tid). "Plumbing" ops only wrap a device→host read: aten::item, aten::_local_scalar_dense,
//    aten::copy_, aten::_to_copy, aten::to. When the innermost op enclosing a blocking call is
//    plumbing, the call's anchor is the outermost op of that unbroken plumbing chain, and all
//    blocking calls with the same anchor are ONE sync point: the D2H cudaMemcpyAsync and the
//    cudaStreamSynchronize inside one `aten::item > aten::_local_scalar_dense` (or one
//    `aten::to > aten::_to_copy > aten::copy_`) count once. Any other blocking call is a sync
//    point of its own (two cudaDeviceSynchronize calls in one op are two waits).
//    blocked_ns of a point = Σ duration of its blocking calls.
//  * cause of a point: the innermost enclosing op outside the plumbing set — what called .item() or
//    .to(): aten::is_nonzero, fbgemm::permute_sparse_features, "## sparse_data_dist ##", ...; when
//    nothing encloses the plumbing, the outermost plumbing op itself (e.g. aten::item for a bare
//    loss.item()); for a call with no enclosing op, the call's name.
//  * step of a point: the ProfilerStep CPU event containing the start of its first blocking call
//    (any thread), −1 outside every step.
//  * scalar reads: aten::item and aten::_local_scalar_dense ops; "blocking" ones contain at least
//  one
//    host-blocking call on their thread (an .item() on a CPU tensor does not sync).
//  * GPU-side sync records: cuda_sync activities by cuda_sync_kind (count, Σ duration).
//  * GPU idle after a sync (gpu_idle_after_sync_ns, ns): GPU busy time is the union, exact ns, of
//    every kernel, memcpy and memset in trace.gpu (all devices and streams; cuda_sync records and
//    zero-length ops excluded; touching ops join), intervals [start, start + dur). For a sync
//    point it is the length of the idle gap of that union containing the point's end_ns: the GPU
//    drained during the wait and stays idle until the CPU launches again (Python work using the
//    value, launch latency). 0 when end_ns falls inside busy time (e.g. an all-reduce still
//    running on another stream), before the first or after the last GPU op. A step's value is
//    the Σ over the points assigned to it (by the point's start, as for blocked_ns); the trace's
//    is the Σ over all points. Idle time is not split at step boundaries.
// Everything covers the whole trace (no step filter).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gpuscope/model.h"

namespace gpuscope::analyze {

enum class SyncCategory : uint8_t {
  kDeviceSync,
  kStreamSync,
  kEventSync,
  kStreamWaitEvent,
  kSyncMemcpy,
  kPageableMemcpyAsync,
  kSyncMemset,
};
const char* SyncCategoryName(SyncCategory c);  // "device_sync", "stream_sync", ...
// The category of runtime call `call`, or nullopt when it is no sync call. `gpu_row` is the
// call's first linked GPU activity (-1 if none), for the memory kinds of copies and sets.
std::optional<SyncCategory> SyncCategoryOfCall(const Trace& t, size_t call, int32_t gpu_row);
inline constexpr bool SyncCategoryBlocksHost(SyncCategory c) {
  return c != SyncCategory::kStreamWaitEvent;
}

struct SyncApiStats {
  StringId name = kEmptyString;
  SyncCategory category = SyncCategory::kDeviceSync;
  uint64_t calls = 0;
  int64_t total_ns = 0;
  int64_t max_ns = 0;
};

struct GpuSyncStats {
  SyncKind kind = SyncKind::kOther;
  uint64_t count = 0;
  int64_t total_ns = 0;
};

struct SyncPoint {
  int64_t start_ns = 0;                // first blocking call's start
  int64_t end_ns = 0;                  // last blocking call's end
  int64_t blocked_ns = 0;              // Σ blocking call durations
  int64_t gpu_idle_after_sync_ns = 0;  // all-streams GPU idle gap containing end_ns (0 if busy)
  uint32_t calls = 0;                  // blocking calls grouped here
  int32_t first_call = -1;             // RuntimeCallTable row
  int32_t anchor_op = -1;              // CpuOpTable row of the plumbing anchor, -1 if none
  int32_t cause_op = -1;               // CpuOpTable row of the cause, -1 when it is the call itself
  StringId cause = kEmptyString;
  SyncCategory category = SyncCategory::kDeviceSync;  // of its longest blocking call
  int32_t step = -1;
  TraceId pid = 0;
  TraceId tid = 0;
};

struct StepSyncStats {
  int32_t step = -1;  // N of ProfilerStep#N
  int64_t step_start_ns = 0;
  int64_t step_dur_ns = 0;
  uint64_t sync_points = 0;
  int64_t blocked_ns = 0;
  int64_t gpu_idle_after_sync_ns = 0;  // Σ over the step's points
};

struct SyncCause {
  StringId name = kEmptyString;
  uint64_t sync_points = 0;
  int64_t blocked_ns = 0;
};

struct ScalarReadStats {
  uint64_t item_ops = 0;                // aten::item
  uint64_t local_scalar_dense_ops = 0;  // aten::_local_scalar_dense
  uint64_t blocking = 0;   // outermost item/_local_scalar_dense ops with a blocking call
  int64_t blocked_ns = 0;  // Σ blocking call time inside them
  int64_t total_ns = 0;    // Σ duration of the outermost ones
};

struct SyncStats {
  std::vector<SyncApiStats> apis;       // by calls (desc), then name
  std::vector<GpuSyncStats> gpu_syncs;  // cuda_sync activities by kind (ascending SyncKind)
  uint64_t gpu_sync_events = 0;
  ScalarReadStats scalar_reads;
  std::vector<SyncPoint> points;  // by start
  uint64_t blocking_calls = 0;
  int64_t blocked_ns = 0;              // Σ over points
  int64_t gpu_idle_after_sync_ns = 0;  // Σ over points (inside and outside steps)
  std::vector<StepSyncStats> steps;    // every ProfilerStep, by start (also those without syncs)
  uint64_t points_outside_steps = 0;
  int64_t blocked_ns_outside_steps = 0;
  std::vector<SyncCause> causes;  // by blocked_ns (desc), then count
};

SyncStats AnalyzeSyncPoints(const Trace& trace);

}  // namespace gpuscope::analyze
