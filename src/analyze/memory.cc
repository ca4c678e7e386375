#include "analyze/memory.h"

#include <algorithm>
#include <map>

namespace gpuscope::analyze {

namespace {

// One device's allocator events in time order, as (ts, allocated, reserved) levels computed as
// they are read: the analysis passes over them a few times instead of holding three copies of
// every event (24 bytes per event, tens of MB on a big trace).
struct DeviceLevels {
  const MemoryEventTable& m;
  const std::vector<uint32_t>& rows;  // in time order
  bool has_reserved = false;

  // Calls f(ts, allocated, reserved) for each event in order. With totals, an event that lacks
  // them moves the level by its delta; reserved is −1 when the trace has none.
  template <typename F>
  void ForEach(F&& f) const {
    int64_t level = 0, res = -1;
    for (const uint32_t r : rows) {
      level = m.total_allocated[r] >= 0 ? m.total_allocated[r] : level + m.bytes_delta[r];
      if (m.total_reserved[r] >= 0) res = m.total_reserved[r];
      f(m.ts_ns[r], level, has_reserved ? res : int64_t{-1});
    }
  }
  int64_t ts(size_t i) const { return m.ts_ns[rows[i]]; }
  size_t size() const { return rows.size(); }
};

void BuildTimeline(const DeviceLevels& levels, int max_points, std::vector<MemoryPoint>* out) {
  out->clear();
  if (levels.size() == 0) return;
  const size_t n_points = static_cast<size_t>(std::max(1, max_points));
  size_t distinct = 1;
  for (size_t i = 1; i < levels.size(); ++i) distinct += levels.ts(i) != levels.ts(i - 1);
  if (distinct <= n_points) {
    levels.ForEach([&](int64_t ts, int64_t alloc, int64_t reserved) {
      if (out->empty() || out->back().ts_ns != ts) {
        out->push_back({ts, alloc, reserved});
      } else {
        MemoryPoint& p = out->back();
        p.allocated_bytes = std::max(p.allocated_bytes, alloc);
        p.reserved_bytes = std::max(p.reserved_bytes, reserved);
      }
    });
    return;
  }
  const int64_t first = levels.ts(0), last = levels.ts(levels.size() - 1);
  const int64_t span = last - first;
  const int64_t width =
      span / static_cast<int64_t>(n_points) + 1;  // last event in bucket < n_points
  // Buckets [first + b·width, first + (b+1)·width) up to the one holding the last event; each
  // starts at the level entering it (bucket 0 always holds the first event, so it needs none).
  int64_t level_a = 0, level_r = -1;
  bool have_level = false;
  size_t b = 0;
  MemoryPoint p{first, INT64_MIN, INT64_MIN};
  levels.ForEach([&](int64_t ts, int64_t alloc, int64_t reserved) {
    while (ts >= p.ts_ns + width) {  // the events of bucket b are done: the next one
      out->push_back(p);
      ++b;
      p = {first + static_cast<int64_t>(b) * width, have_level ? level_a : INT64_MIN,
           have_level ? level_r : INT64_MIN};
    }
    p.allocated_bytes = std::max(p.allocated_bytes, alloc);
    p.reserved_bytes = std::max(p.reserved_bytes, reserved);
    level_a = alloc;
    level_r = reserved;
    have_level = true;
  });
  out->push_back(p);
}

}  // namespace

MemoryStats AnalyzeMemory(const Trace& t, const MemoryOptions& options) {
  MemoryStats out;
  const MemoryEventTable& m = t.memory;
  std::map<int32_t, std::vector<uint32_t>> by_device;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.device_type[i] == 1)
      by_device[m.device_id[i]].push_back(static_cast<uint32_t>(i));
    else if (m.device_type[i] == 0)
      ++out.cpu_events;
    else
      ++out.other_events;
  }
  for (auto& [device, rows] : by_device) {
    // Usually in time order already (the allocator writes them as they happen): check first.
    const auto by_time = [&](uint32_t a, uint32_t b) { return m.ts_ns[a] < m.ts_ns[b]; };
    if (!std::is_sorted(rows.begin(), rows.end(), by_time))
      std::stable_sort(rows.begin(), rows.end(), by_time);
    DeviceMemory d;
    d.device = device;
    d.events = rows.size();
    bool has_totals = false, has_reserved = false;
    for (uint32_t r : rows) {
      has_totals |= m.total_allocated[r] >= 0;
      has_reserved |= m.total_reserved[r] >= 0;
    }
    d.source = has_totals ? MemoryLevelSource::kTotals : MemoryLevelSource::kDeltas;

    const DeviceLevels levels{m, rows, has_reserved};
    d.first_ts_ns = levels.ts(0);
    d.last_ts_ns = levels.ts(rows.size() - 1);
    bool first = true;
    levels.ForEach([&](int64_t ts, int64_t alloc, int64_t reserved) {
      if (first) {
        d.peak_allocated_bytes = d.min_allocated_bytes = alloc;
        d.peak_allocated_ts_ns = ts;
        first = false;
      }
      d.final_allocated_bytes = alloc;
      if (alloc > d.peak_allocated_bytes) {
        d.peak_allocated_bytes = alloc;
        d.peak_allocated_ts_ns = ts;
      }
      d.min_allocated_bytes = std::min(d.min_allocated_bytes, alloc);
      if (reserved > d.peak_reserved_bytes) {
        d.peak_reserved_bytes = reserved;
        d.peak_reserved_ts_ns = ts;
      }
    });
    for (const DeviceProperties& p : t.devices) {
      if (p.id == device && p.total_global_mem_bytes > 0) d.total_bytes = p.total_global_mem_bytes;
    }
    if (d.total_bytes > 0) {
      if (d.peak_reserved_bytes >= 0) {
        d.headroom_bytes = d.total_bytes - d.peak_reserved_bytes;
        d.headroom_basis = HeadroomBasis::kReserved;
      } else {
        d.headroom_bytes = d.total_bytes - d.peak_allocated_bytes;
        d.headroom_basis = HeadroomBasis::kAllocated;
      }
    }
    BuildTimeline(levels, options.max_points, &d.timeline);
    out.devices.push_back(std::move(d));
  }
  return out;
}

const DeviceMemory* RankDevice(const MemoryStats& stats) {
  const DeviceMemory* best = nullptr;
  for (const DeviceMemory& d : stats.devices) {
    if (!best || d.events > best->events) best = &d;
  }
  return best;
}

}  // namespace gpuscope::analyze
