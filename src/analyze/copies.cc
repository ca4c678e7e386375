#include "analyze/copies.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>

#include "analyze/kernel_class.h"

namespace gpuscope::analyze {

namespace {

// Linear interpolation between order statistics (numpy/pandas default). `v` must be sorted.
double SortedQuantile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// HTA's get_memory_kernel_type.
std::string HtaMemoryType(std::string_view n) {
  if (StartsWith(n, "Memset")) return "Memset";
  if (!StartsWith(n, "Memcpy")) return "Memcpy Unknown";
  return std::string(n.substr(0, 11));
}

bool IsPageable(MemoryKind k) { return k == MemoryKind::kPageable; }

void AddTo(DirectionTotals* d, const GpuActivityTable& g, uint32_t r, int64_t dur) {
  ++d->count;
  d->time_ns += dur;
  if (g.bytes[r] >= 0) d->bytes += g.bytes[r];
  if (IsPageable(g.src_kind[r]) || IsPageable(g.dst_kind[r])) ++d->pageable;
  if (g.src_kind[r] == MemoryKind::kPinned || g.dst_kind[r] == MemoryKind::kPinned) ++d->pinned;
}

}  // namespace

int CopySizeBucket(int64_t bytes) {
  int b = 0;
  while (b + 1 < kCopySizeBuckets && bytes >= CopySizeBucketLowerBound(b + 1)) ++b;
  return b;
}

CopyLaunchMode CopyLaunchModeOf(const Trace& t, uint32_t r) {
  const int32_t call = t.gpu.launch[r];
  if (call < 0) return CopyLaunchMode::kUnlinked;
  const size_t c = static_cast<size_t>(call);
  const RuntimeKind rk = t.runtime.kind[c];
  if (rk == RuntimeKind::kGraphLaunch) return CopyLaunchMode::kGraph;
  if (rk != RuntimeKind::kMemcpy && rk != RuntimeKind::kMemset) return CopyLaunchMode::kOther;
  return t.Str(t.runtime.name[c]).find("Async") != std::string_view::npos ? CopyLaunchMode::kAsync
                                                                          : CopyLaunchMode::kSync;
}

namespace {

// A point of HTA's memory-bandwidth counter: a copy's start (+ its bandwidth) or end (−).
struct HtaCounterChange {
  int64_t ts;
  bool is_end;
  size_t order;  // the copy's row order
  double delta;
};

// HTA's summary of one memory type's counter: the statistics of its positive values.
HtaBandwidthSummary SummarizeHtaCounter(const std::string& name,
                                        std::vector<HtaCounterChange>& ch) {
  // Time order; at equal times ends before starts (HTA's pandas sort is not stable, so its order
  // at ties is arbitrary; this choice does not create sums of copies that merely touch).
  std::sort(ch.begin(), ch.end(), [](const HtaCounterChange& a, const HtaCounterChange& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.is_end != b.is_end) return a.is_end;
    return a.order < b.order;
  });
  std::vector<double> values;
  double sum = 0;
  for (const HtaCounterChange& c : ch) {
    sum += c.delta;
    const double v = sum < 0 ? 0 : sum;
    if (v > 0) values.push_back(v);
  }
  HtaBandwidthSummary s;
  s.name = name;
  s.count = values.size();
  if (!values.empty()) {
    double total = 0;
    for (double v : values) total += v;
    s.mean = total / static_cast<double>(values.size());
    double sq = 0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.std = values.size() > 1 ? std::sqrt(sq / static_cast<double>(values.size() - 1)) : 0;
    std::sort(values.begin(), values.end());
    s.min = values.front();
    s.max = values.back();
    s.p25 = SortedQuantile(values, 0.25);
    s.p50 = SortedQuantile(values, 0.50);
    s.p75 = SortedQuantile(values, 0.75);
  }
  return s;
}

}  // namespace

CopyStats AnalyzeCopies(const Trace& t, const CopyOptions& o) {
  CopyStats out;
  const GpuActivityTable& g = t.gpu;

  GpuSelection own;
  const GpuSelection& sel =
      SharedOrOwnSelection(t, o.hta_selection, o.selection, o.made_selection, &own);
  out.step_filtered = sel.step_filtered;
  out.rounded = sel.rounded;

  using Key = std::tuple<GpuKind, CopyDirection, MemoryKind, MemoryKind>;
  std::map<Key, CopyGroup> groups;
  std::map<CopyDirection, DirectionTotals> directions;
  out.memsets.direction = CopyDirection::kUnknown;
  std::map<Key, int64_t> timed_bytes, timed_ns;  // for achieved bandwidth
  // HTA counter points per memory type.
  std::map<std::string, std::vector<HtaCounterChange>> hta_changes;
  std::vector<int8_t> hta_memory(t.strings.size(), -1);  // per name: HTA type MEMORY?

  for (size_t k = 0; k < sel.rows.size(); ++k) {
    const uint32_t r = sel.rows[k];
    const GpuKind kind = g.kind[r];
    if (kind != GpuKind::kMemcpy && kind != GpuKind::kMemset) continue;
    // A copy under 1 µs can come out negative after HTA's rounding (start up, end down): it took
    // no time, not less than none.
    const int64_t dur = std::max<int64_t>(0, sel.end_ns[k] - sel.start_ns[k]);

    const Key key{kind, kind == GpuKind::kMemcpy ? g.copy_direction[r] : CopyDirection::kUnknown,
                  g.src_kind[r], g.dst_kind[r]};
    CopyGroup& grp = groups[key];
    if (grp.count == 0) {
      std::tie(grp.kind, grp.direction, grp.src_kind, grp.dst_kind) = key;
      grp.pageable = IsPageable(grp.src_kind) || IsPageable(grp.dst_kind);
      grp.pinned = grp.src_kind == MemoryKind::kPinned || grp.dst_kind == MemoryKind::kPinned;
    }
    ++grp.count;
    grp.time_ns += dur;
    const int64_t bytes = g.bytes[r];
    if (kind == GpuKind::kMemcpy && bytes >= 0 && bytes < kTinyCopyBytes) {
      ++out.tiny_memcpys;
      out.tiny_memcpy_time_ns += dur;
    }
    if (bytes >= 0) {
      grp.bytes += bytes;
      ++grp.size_histogram[static_cast<size_t>(CopySizeBucket(bytes))];
      if (dur > 0) {
        timed_bytes[key] += bytes;
        timed_ns[key] += dur;
        grp.max_gbps =
            std::max(grp.max_gbps, static_cast<double>(bytes) / static_cast<double>(dur));
      }
    } else {
      ++grp.unknown_bytes;
    }
    const CopyLaunchMode mode = CopyLaunchModeOf(t, r);
    switch (mode) {
      case CopyLaunchMode::kSync:
        ++grp.sync;
        break;
      case CopyLaunchMode::kAsync:
        ++grp.async;
        if (grp.pageable) ++grp.effectively_sync;
        break;
      case CopyLaunchMode::kGraph:
        ++grp.graph;
        break;
      case CopyLaunchMode::kUnlinked:
        ++grp.unlinked;
        break;
      case CopyLaunchMode::kOther:
        ++grp.other_launch;
        break;
    }

    if (kind == GpuKind::kMemcpy) {
      DirectionTotals& d = directions[g.copy_direction[r]];
      d.direction = g.copy_direction[r];
      AddTo(&d, g, r, dur);
      ++out.memcpys;
      out.memcpy_time_ns += dur;
      if (bytes >= 0) out.memcpy_bytes += bytes;
      if (grp.pageable) ++out.pageable_memcpys;
      if (mode == CopyLaunchMode::kSync) ++out.sync_memcpys;
      if (mode == CopyLaunchMode::kAsync && grp.pageable) ++out.effectively_sync_memcpys;
    } else {
      AddTo(&out.memsets, g, r, dur);
      if (mode == CopyLaunchMode::kSync) ++out.sync_memsets;
    }

    // HTA's counter: MEMORY rows by name; a zero-length row lasts 1 µs (trace units).
    const StringId name_id = g.name[r];
    if (hta_memory[name_id] < 0)
      hta_memory[name_id] = HtaKernelTypeOf(t.Str(name_id)) == HtaKernelType::kMemory;
    if (hta_memory[name_id] == 1) {
      const std::string_view name = t.Str(name_id);
      const double bw = g.bandwidth_gbps[r] >= 0 ? static_cast<double>(g.bandwidth_gbps[r]) : 0.0;
      const int64_t end = sel.end_ns[k] == sel.start_ns[k] ? sel.start_ns[k] + 1000
                                                           : sel.end_ns[k];  // as HTA, unclamped
      std::vector<HtaCounterChange>& ch = hta_changes[HtaMemoryType(name)];
      ch.push_back({sel.start_ns[k], false, k, bw});
      ch.push_back({end, true, k, -bw});
    }
  }

  for (auto& [key, grp] : groups) {
    if (timed_ns[key] > 0) {
      grp.achieved_gbps =
          static_cast<double>(timed_bytes[key]) / static_cast<double>(timed_ns[key]);
    }
    out.groups.push_back(grp);
  }
  for (auto& [dir, d] : directions) {
    // Direction bandwidth from its groups' timed bytes / time.
    int64_t b = 0, ns = 0;
    for (auto& [key, grp] : groups) {
      if (std::get<0>(key) == GpuKind::kMemcpy && std::get<1>(key) == dir) {
        b += timed_bytes[key];
        ns += timed_ns[key];
      }
    }
    d.achieved_gbps = ns > 0 ? static_cast<double>(b) / static_cast<double>(ns) : 0;
    out.directions.push_back(d);
  }
  {
    int64_t b = 0, ns = 0;
    for (auto& [key, grp] : groups) {
      if (std::get<0>(key) == GpuKind::kMemset) {
        b += timed_bytes[key];
        ns += timed_ns[key];
      }
    }
    out.memsets.achieved_gbps = ns > 0 ? static_cast<double>(b) / static_cast<double>(ns) : 0;
  }

  for (auto& [name, ch] : hta_changes) out.hta_bandwidth.push_back(SummarizeHtaCounter(name, ch));
  return out;
}

}  // namespace gpuscope::analyze
