#include "analyze/memory.h"

#include <algorithm>
#include <map>

namespace gpuscope::analyze {

namespace {

void BuildTimeline(const std::vector<int64_t>& ts, const std::vector<int64_t>& alloc,
                   const std::vector<int64_t>& reserved, int max_points,
                   std::vector<MemoryPoint>* out) {
  out->clear();
  if (ts.empty()) return;
  const size_t n_points = static_cast<size_t>(std::max(1, max_points));
  size_t distinct = 1;
  for (size_t i = 1; i < ts.size(); ++i) distinct += ts[i] != ts[i - 1];
  if (distinct <= n_points) {
    for (size_t i = 0; i < ts.size(); ++i) {
      if (out->empty() || out->back().ts_ns != ts[i]) {
        out->push_back({ts[i], alloc[i], reserved[i]});
      } else {
        MemoryPoint& p = out->back();
        p.allocated_bytes = std::max(p.allocated_bytes, alloc[i]);
        p.reserved_bytes = std::max(p.reserved_bytes, reserved[i]);
      }
    }
    return;
  }
  const int64_t first = ts.front(), span = ts.back() - first;
  const int64_t width =
      span / static_cast<int64_t>(n_points) + 1;  // last event in bucket < n_points
  size_t i = 0;
  // Level entering the bucket (bucket 0 always holds the first event, so it needs none).
  int64_t level_a = 0, level_r = -1;
  bool have_level = false;
  for (size_t b = 0; b < n_points; ++b) {
    const int64_t lo = first + static_cast<int64_t>(b) * width;
    if (lo > ts.back()) break;
    const int64_t hi = lo + width;
    MemoryPoint p{lo, have_level ? level_a : INT64_MIN, have_level ? level_r : INT64_MIN};
    for (; i < ts.size() && ts[i] < hi; ++i) {
      p.allocated_bytes = std::max(p.allocated_bytes, alloc[i]);
      p.reserved_bytes = std::max(p.reserved_bytes, reserved[i]);
      level_a = alloc[i];
      level_r = reserved[i];
      have_level = true;
    }
    out->push_back(p);
  }
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

    std::vector<int64_t> ts, alloc, reserved;
    ts.reserve(rows.size());
    alloc.reserve(rows.size());
    reserved.reserve(rows.size());
    int64_t level = 0, res = -1;
    for (uint32_t r : rows) {
      // With totals, an event that lacks them moves the level by its delta.
      level = m.total_allocated[r] >= 0 ? m.total_allocated[r] : level + m.bytes_delta[r];
      if (m.total_reserved[r] >= 0) res = m.total_reserved[r];
      ts.push_back(m.ts_ns[r]);
      alloc.push_back(level);
      reserved.push_back(has_reserved ? res : -1);
    }
    d.first_ts_ns = ts.front();
    d.last_ts_ns = ts.back();
    d.final_allocated_bytes = alloc.back();
    d.peak_allocated_bytes = alloc.front();
    d.peak_allocated_ts_ns = ts.front();
    d.min_allocated_bytes = alloc.front();
    for (size_t i = 0; i < alloc.size(); ++i) {
      if (alloc[i] > d.peak_allocated_bytes) {
        d.peak_allocated_bytes = alloc[i];
        d.peak_allocated_ts_ns = ts[i];
      }
      d.min_allocated_bytes = std::min(d.min_allocated_bytes, alloc[i]);
      if (reserved[i] > d.peak_reserved_bytes) {
        d.peak_reserved_bytes = reserved[i];
        d.peak_reserved_ts_ns = ts[i];
      }
    }
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
    BuildTimeline(ts, alloc, reserved, options.max_points, &d.timeline);
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
