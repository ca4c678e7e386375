// GPU memory from the allocator's [memory] events: peak allocated / reserved per CUDA device, the
// device's capacity and the headroom left, and a small timeline for reports.
//
// Definitions (bytes; GB in docs = 1e9 bytes):
//  * only events with Device Type 1 (CUDA) count, grouped by Device Id; events are taken in time
//    order (stable for equal times, i.e. file order).
//  * allocated level after an event: its "Total Allocated" when present. Traces before ~2022
//    (e.g. the 2021 ResNet-50 samples) carry only the signed "Bytes" delta; the level is then the
//    running sum of the deltas starting at 0 at the device's first event (source = kDeltas). Memory
//    allocated before the profiler started is invisible to that sum, so it is a lower bound, and
//    it can go negative when pre-existing blocks are freed (min_allocated_bytes < 0 shows that).
//  * reserved level: "Total Reserved" when present; unknown (-1) for delta-only traces.
//  * peak = the maximum level over the device's events.
//  * total memory: DeviceProperties::total_global_mem_bytes of Trace::devices with the same id; -1
//    when the trace has no deviceProperties for it.
//  * headroom = total − peak reserved (basis kReserved). When reserved is unknown it is
//    total − peak allocated (basis kAllocated: an upper bound of the true headroom, since the
//    caching allocator reserves more than it allocates). -1 with basis kNone when the total is
//    unknown.
//  * timeline: at most max_points points per device. With ≤ max_points distinct event times, one
//    point per time (the level after the last event at that time, max over the events at that
//    time). Otherwise the span [first event, last event] is cut into max_points equal buckets
//    (width = floor(span / max_points) + 1 ns) and each bucket gives one point at its start time
//    with the maximum level reached in the bucket (the level entering a bucket counts, so a bucket
//    without events repeats the current level). So the timeline's maximum equals the peak exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "gpuscope/model.h"

namespace gpuscope::analyze {

// Default number of timeline points per device (enough for a report chart).
inline constexpr int kMemoryTimelinePoints = 200;

struct MemoryOptions {
  int max_points = kMemoryTimelinePoints;  // ≥ 1
};

enum class MemoryLevelSource : uint8_t { kTotals, kDeltas };
enum class HeadroomBasis : uint8_t { kNone, kReserved, kAllocated };

struct MemoryPoint {
  int64_t ts_ns = 0;
  int64_t allocated_bytes = 0;  // max in the bucket
  int64_t reserved_bytes = -1;  // max in the bucket, -1 unknown
};

struct DeviceMemory {
  int32_t device = -1;
  uint64_t events = 0;
  MemoryLevelSource source = MemoryLevelSource::kTotals;
  int64_t peak_allocated_bytes = 0;
  int64_t peak_allocated_ts_ns = 0;
  int64_t min_allocated_bytes = 0;  // < 0 only with kDeltas (frees of pre-trace blocks)
  int64_t final_allocated_bytes = 0;
  int64_t peak_reserved_bytes = -1;  // -1 unknown
  int64_t peak_reserved_ts_ns = 0;
  int64_t total_bytes = -1;  // deviceProperties totalGlobalMem, -1 unknown
  int64_t headroom_bytes = -1;
  HeadroomBasis headroom_basis = HeadroomBasis::kNone;
  int64_t first_ts_ns = 0;
  int64_t last_ts_ns = 0;
  std::vector<MemoryPoint> timeline;
};

struct MemoryStats {
  std::vector<DeviceMemory> devices;  // CUDA devices with events, ascending id
  uint64_t cpu_events = 0;            // Device Type 0 events (not analysed)
  uint64_t other_events = 0;          // any other device type
};

MemoryStats AnalyzeMemory(const Trace& trace, const MemoryOptions& options = {});

// The rank's own device: the CUDA device with the most [memory] events; null if there is none.
const DeviceMemory* RankDevice(const MemoryStats& stats);

}  // namespace gpuscope::analyze
