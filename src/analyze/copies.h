// Memory copies and sets: what moves where, how fast, from which kind of host memory, and whether
// the CPU waited for it.
//
// Definitions (times ns, sizes bytes, bandwidth GB/s = 1e9 bytes/s):
//  * a copy is a GPU activity of GpuKind::kMemcpy, a set one of GpuKind::kMemset. Groups are keyed
//    by (kind, direction, source memory kind, destination memory kind) as the trace names them
//    ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)").
//  * pageable = source or destination is pageable host memory; pinned = source or destination is
//    pinned host memory (GpuActivityTable src_kind / dst_kind).
//  * achieved bandwidth of a group = Σ bytes / Σ duration over the activities with known bytes and
//    a positive duration (a time-weighted mean, not the mean of per-copy bandwidths).
//  * launch mode, from the launching runtime call (GpuActivityTable::launch):
//      - synchronous: a copy/set call whose name lacks "Async" (cudaMemcpy, cudaMemcpy2D,
//      cudaMemset,
//        hipMemcpy, hipMemcpyWithStream — HIP documents it as blocking; treated as synchronous);
//      - asynchronous: the name contains "Async" (cudaMemcpyAsync, cudaMemsetAsync, ...);
//      - graph: launched by a cudaGraphLaunch; unlinked: no launch call in the trace; other: any
//        other call (e.g. a kernel launch).
//    An asynchronous copy to or from pageable memory is effectively synchronous: the driver stages
//    it through a pinned buffer and the call returns only when the staging is done (Nsight Systems'
//    cuda_memcpy_async rule). Such copies are counted in effectively_sync.
//  * size histogram: kCopySizeBuckets power-of-4 buckets; bucket 0 is < 1 KiB, bucket i (1 ≤ i <
//  11)
//    is [1 KiB·4^(i−1), 1 KiB·4^i), bucket 11 is ≥ 1 GiB. Activities without a byte count are not
//    in the histogram (unknown_bytes counts them).
//  * HTA's memory-bandwidth counter (hta_bandwidth): HTA's get_memory_bw_summary, reproduced. The
//    MEMORY rows of the selection (names starting with Memcpy/Memset, HTA's regex) are grouped by
//    HTA's memory type ("Memset", or the first 11 characters of a Memcpy name: "Memcpy HtoD"). Each
//    row adds the trace's "memory bandwidth (GB/s)" at its start and subtracts it at its end (a
//    zero-length row lasts 1 µs); the running sum per group, evaluated at every start and end, is
//    the counter. HTA then describe()s the counter values > 0. So `count` is a number of change
//    points (≈ one per copy when copies do not overlap), and concurrent copies add up.
//    Deliberate differences: at equal times ends are applied before starts (HTA's pandas sort is
//    unstable, so its order there is arbitrary; a copy that starts when another ends is not
//    concurrent with it), and the bandwidth is the model's float. HTA's float64 sums can then leave
//    residues of ~1e-14 GB/s that it counts as points (trace_diff_test DtoD: 5461 points vs our
//    3840, same Σ within 1 %); everywhere else the numbers are HTA's.
//
// Event selection: by default SelectGpuEvents (HTA's step filter and µs rounding, as in
// gpu_time.h); hta_selection = false uses every activity of the trace with exact ns.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/gpu_time.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

inline constexpr int kCopySizeBuckets = 12;
inline constexpr int64_t kTinyCopyBytes = 64 * 1024;  // below this a copy is latency-bound
// Lower bound, in bytes, of histogram bucket i (0 for bucket 0).
inline constexpr int64_t CopySizeBucketLowerBound(int i) {
  return i <= 0 ? 0 : (int64_t{1024} << (2 * (i - 1)));
}
int CopySizeBucket(int64_t bytes);  // bucket of a non-negative size

enum class CopyLaunchMode : uint8_t { kUnlinked, kSync, kAsync, kGraph, kOther };

struct CopyOptions {
  bool hta_selection = true;
  SelectionOptions selection;
  // SelectGpuEvents(trace, selection) made once for the rank (RunAll), or null to make it here.
  const GpuSelection* made_selection = nullptr;
};

struct CopyGroup {
  GpuKind kind = GpuKind::kMemcpy;  // kMemcpy or kMemset
  CopyDirection direction = CopyDirection::kUnknown;
  MemoryKind src_kind = MemoryKind::kUnknown;
  MemoryKind dst_kind = MemoryKind::kUnknown;
  bool pageable = false;  // src or dst pageable
  bool pinned = false;    // src or dst pinned
  uint64_t count = 0;
  int64_t bytes = 0;           // over activities with a known size
  uint64_t unknown_bytes = 0;  // activities without a size
  int64_t time_ns = 0;         // Σ duration
  double achieved_gbps = 0;    // Σ bytes / Σ duration (known bytes, duration > 0)
  double max_gbps = 0;         // fastest single activity
  // By launch mode (see the header comment); effectively_sync ⊂ async.
  uint64_t sync = 0;
  uint64_t async = 0;
  uint64_t effectively_sync = 0;
  uint64_t graph = 0;
  uint64_t unlinked = 0;
  uint64_t other_launch = 0;
  std::array<uint64_t, kCopySizeBuckets> size_histogram{};
};

struct DirectionTotals {
  CopyDirection direction = CopyDirection::kUnknown;
  uint64_t count = 0;
  int64_t bytes = 0;
  int64_t time_ns = 0;
  double achieved_gbps = 0;
  uint64_t pageable = 0;
  uint64_t pinned = 0;
};

// describe() of HTA's bandwidth counter for one memory type (see the header comment).
struct HtaBandwidthSummary {
  std::string name;  // "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memset", ...
  uint64_t count = 0;
  double mean = 0, std = 0, min = 0, p25 = 0, p50 = 0, p75 = 0, max = 0;  // GB/s
};

struct CopyStats {
  std::vector<CopyGroup> groups;  // memcpy groups first, then memset; by direction, src, dst
  std::vector<DirectionTotals> directions;  // memcpys per direction (memsets excluded)
  DirectionTotals memsets;                  // all memsets (direction kUnknown)
  uint64_t memcpys = 0;
  int64_t memcpy_bytes = 0;
  int64_t memcpy_time_ns = 0;
  uint64_t pageable_memcpys = 0;
  uint64_t sync_memcpys = 0;              // synchronous call
  uint64_t effectively_sync_memcpys = 0;  // asynchronous call on pageable memory
  uint64_t sync_memsets = 0;
  // Memcpys smaller than kTinyCopyBytes: each pays a fixed launch and DMA setup cost.
  uint64_t tiny_memcpys = 0;
  int64_t tiny_memcpy_time_ns = 0;
  std::vector<HtaBandwidthSummary> hta_bandwidth;  // sorted by name
  bool step_filtered = false;
  bool rounded = false;
};

CopyStats AnalyzeCopies(const Trace& trace, const CopyOptions& options = {});

// Launch mode of a copy/set activity (row of Trace::gpu).
CopyLaunchMode CopyLaunchModeOf(const Trace& trace, uint32_t gpu_row);

}  // namespace gpuscope::analyze
