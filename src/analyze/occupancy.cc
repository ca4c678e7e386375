#include "analyze/occupancy.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>

#include "analyze/kernel_class.h"

namespace gpuscope::analyze {

namespace {

// tb_plugin's range_utils.merge_ranges_with_value followed by the intersection with the range and
// the time-weighted mean. Ends come before starts at the same instant (back-to-back kernels do not
// add up). The running sum is reset to 0 whenever no kernel runs, so float drift cannot leave a
// tiny positive value over idle time (tb_plugin's sum can; its effect is below 1e-12).
//
// `kernels` are rows of `g` with a grid and a length, in start order (ties in table order). The
// sweep takes their starts in that order and their ends from a heap of the running kernels, so it
// sorts nothing and holds only the kernels running at once (a few per stream) — where sorting
// every start and end took most of this analysis.
double SmEfficiency(const GpuActivityTable& g, const std::vector<uint32_t>& kernels, int64_t lo,
                    int64_t hi) {
  if (kernels.empty() || hi <= lo) return -1;
  double weighted = 0;  // Σ efficiency × ns
  double value = 0;
  int64_t active = 0;
  int64_t last = g.start_ns[kernels.front()];
  const auto at = [&](int64_t t, bool is_start, double v) {
    if (t > last && active > 0 && value > 0) {
      const int64_t a = std::max(last, lo), b = std::min(t, hi);
      if (b > a) weighted += std::min(value, 1.0) * static_cast<double>(b - a);
    }
    last = t;
    if (is_start) {
      ++active;
      value += v;
    } else if (--active == 0) {
      value = 0;
    } else {
      value -= v;
    }
  };
  using End = std::pair<int64_t, double>;  // (end ns, blocks per SM)
  std::priority_queue<End, std::vector<End>, std::greater<End>> running;
  for (const uint32_t i : kernels) {
    const int64_t start = g.start_ns[i];
    while (!running.empty() && running.top().first <= start) {
      at(running.top().first, false, running.top().second);
      running.pop();
    }
    const double bps = g.blocks_per_sm[i];
    at(start, true, bps);
    running.push({start + g.dur_ns[i], bps});
  }
  for (; !running.empty(); running.pop()) at(running.top().first, false, running.top().second);
  return weighted / static_cast<double>(hi - lo);
}

}  // namespace

OccupancyStats AnalyzeOccupancy(const Trace& trace, const StepsResult& steps, size_t top_n) {
  return AnalyzeOccupancy(trace, BuildKernelClasses(trace), steps, top_n);
}

OccupancyStats AnalyzeOccupancy(const Trace& trace, const KernelClasses& kernel_classes,
                                const StepsResult& steps, size_t top_n) {
  OccupancyStats out;
  const GpuActivityTable& g = trace.gpu;

  // The rank's device: the args.device most kernels ran on.
  const std::map<int32_t, uint64_t> per_device = KernelsPerDevice(g);
  uint64_t best = 0;
  for (auto [d, n] : per_device) {
    if (n > best) best = n, out.device = d;
  }
  if (per_device.empty()) return out;

  // tb_plugin's range: first complete step's start → last complete step's end.
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const StepBreakdown& s : steps.steps) {
    if (s.incomplete) continue;
    lo = std::min(lo, s.start_ns);
    hi = std::max(hi, s.end_ns);
  }
  if (lo >= hi) {  // no complete step: every step, else every kernel
    for (const StepBreakdown& s : steps.steps) {
      lo = std::min(lo, s.start_ns);
      hi = std::max(hi, s.end_ns);
    }
  }
  if (lo >= hi) {
    for (size_t i = 0; i < g.size(); ++i) {
      if (g.kind[i] != GpuKind::kKernel) continue;
      lo = std::min(lo, g.start_ns[i]);
      hi = std::max(hi, g.start_ns[i] + g.dur_ns[i]);
    }
  }
  out.range_start_ns = lo;
  out.range_end_ns = hi;
  if (lo >= hi) return out;

  const std::vector<KernelClass>& classes = kernel_classes.row;
  std::vector<uint32_t> grid_kernels;  // with a grid and a length, for the SM efficiency
  double occupancy_weighted = 0;       // Σ occupancy % × clipped ns
  int64_t occupancy_ns = 0;
  struct Acc {
    uint64_t count = 0;
    int64_t total_ns = 0;
    double blocks_sum = 0;
    double occupancy_weighted = 0;
    int64_t occupancy_ns = 0;
    double lost_ns = 0;
  };
  std::unordered_map<StringId, Acc> by_name;  // per distinct full name, folded by short name below
  double lost_total = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.kind[i] != GpuKind::kKernel || g.device[i] != out.device) continue;
    const int64_t start = g.start_ns[i], end = start + g.dur_ns[i];
    const double bps = g.blocks_per_sm[i];
    if (bps > 0) out.available = true;
    // A zero-length kernel weighs nothing in a time-weighted mean, and its end (sorted before
    // starts at the same instant) would reset the running value of a kernel it sits inside.
    if (bps > 0 && end > start) grid_kernels.push_back(static_cast<uint32_t>(i));
    const double occ = g.est_occupancy_pct[i];
    if (occ >= 0) {
      out.occupancy_available = true;
      const int64_t clipped = std::min(end, hi) - std::max(start, lo);
      if (clipped > 0) {
        occupancy_weighted += occ * static_cast<double>(clipped);
        occupancy_ns += clipped;
      }
    }
    // Tiny grids: compute kernels starting in the range.
    if (bps <= 0 || start < lo || start >= hi || classes[i] != KernelClass::kCompute) continue;
    out.compute_kernel_ns += g.dur_ns[i];
    if (bps >= 1.0) continue;
    Acc& a = by_name[g.name[i]];
    ++a.count;
    a.total_ns += g.dur_ns[i];
    a.blocks_sum += bps;
    if (occ >= 0) {
      a.occupancy_weighted += occ * static_cast<double>(g.dur_ns[i]);
      a.occupancy_ns += g.dur_ns[i];
    }
    const double lost = static_cast<double>(g.dur_ns[i]) * (1.0 - bps);
    a.lost_ns += lost;
    lost_total += lost;
    ++out.tiny_grid_kernels;
    out.tiny_grid_ns += g.dur_ns[i];
  }
  // In start order: kernels are written nearly so (streams interleave), so usually only checked.
  const auto by_start = [&g](uint32_t a, uint32_t b) { return g.start_ns[a] < g.start_ns[b]; };
  if (!std::is_sorted(grid_kernels.begin(), grid_kernels.end(), by_start))
    std::stable_sort(grid_kernels.begin(), grid_kernels.end(), by_start);
  out.sm_efficiency = out.available ? SmEfficiency(g, grid_kernels, lo, hi) : -1;
  if (occupancy_ns > 0) out.achieved_occupancy_pct = occupancy_weighted / occupancy_ns;
  out.tiny_grid_lost_sm_ns = static_cast<int64_t>(lost_total);
  out.tiny_grid_share = out.compute_kernel_ns > 0 ? static_cast<double>(out.tiny_grid_ns) /
                                                        static_cast<double>(out.compute_kernel_ns)
                                                  : 0.0;

  std::map<std::string, Acc> by_short;
  for (const auto& [name, a] : by_name) {
    Acc& s = by_short[kernel_classes.OfName(name).short_name];
    s.count += a.count;
    s.total_ns += a.total_ns;
    s.blocks_sum += a.blocks_sum;
    s.occupancy_weighted += a.occupancy_weighted;
    s.occupancy_ns += a.occupancy_ns;
    s.lost_ns += a.lost_ns;
  }
  out.tiny_distinct_names = by_short.size();
  for (const auto& [name, a] : by_short) {
    TinyGridKernel k;
    k.name = name;
    k.count = a.count;
    k.total_ns = a.total_ns;
    k.mean_blocks_per_sm = a.blocks_sum / static_cast<double>(a.count);
    k.mean_occupancy_pct =
        a.occupancy_ns > 0 ? a.occupancy_weighted / static_cast<double>(a.occupancy_ns) : -1;
    k.lost_sm_ns = static_cast<int64_t>(a.lost_ns);
    out.tiny.push_back(std::move(k));
  }
  std::sort(out.tiny.begin(), out.tiny.end(), [](const TinyGridKernel& a, const TinyGridKernel& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (out.tiny.size() > top_n) out.tiny.resize(top_n);
  return out;
}

}  // namespace gpuscope::analyze
