#include "analyze/ranks.h"

#include <algorithm>

#include "analyze/kernel_class.h"

namespace gpuscope::analyze {

RanksResult AnalyzeRanks(const std::vector<const Trace*>& traces,
                         const std::vector<const GpuTime*>& gpu_times,
                         const std::vector<const StepsResult*>& steps) {
  std::vector<KernelClasses> owned;
  std::vector<const KernelClasses*> classes;
  // Arrival order needs the classes only with two or more ranks.
  if (traces.size() > 1) {
    owned.reserve(traces.size());
    for (const Trace* t : traces) owned.push_back(BuildKernelClasses(*t));
  } else {
    owned.resize(traces.size());
  }
  for (const KernelClasses& c : owned) classes.push_back(&c);
  return AnalyzeRanks(traces, gpu_times, steps, classes);
}

RanksResult AnalyzeRanks(const std::vector<const Trace*>& traces,
                         const std::vector<const GpuTime*>& gpu_times,
                         const std::vector<const StepsResult*>& steps,
                         const std::vector<const KernelClasses*>& kernel_classes) {
  RanksResult out;
  const size_t n = traces.size();
  if (n == 0) return out;
  out.clocks_from_base_time = true;
  for (const Trace* t : traces) out.clocks_from_base_time &= t->info.base_time_ns.has_value();

  std::vector<int64_t> step_times;
  for (size_t i = 0; i < n; ++i) {
    RankRow row;
    row.rank = traces[i]->info.rank;
    const ExclusiveBreakdown& ex = gpu_times[i]->exclusive;
    row.span_ns = ex.span_ns;
    row.compute_ns = ex.compute_ns;
    row.exposed_communication_ns = ex.exposed_communication_ns;
    row.idle_ns = ex.idle_ns;
    const StepsResult& s = *steps[i];
    row.step_ns =
        (!s.whole_span_fallback && s.steady_count > 0) ? s.mean_steady_step_ns : ex.span_ns;
    step_times.push_back(row.step_ns);
    out.ranks.push_back(row);
  }
  std::vector<int64_t> sorted = step_times;
  std::sort(sorted.begin(), sorted.end());
  out.median_step_ns = sorted.size() % 2
                           ? sorted[sorted.size() / 2]
                           : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  for (RankRow& row : out.ranks) {
    if (out.median_step_ns > 0) {
      row.slowdown =
          static_cast<double>(row.step_ns) / static_cast<double>(out.median_step_ns) - 1.0;
    }
    row.straggler = n > 1 && row.slowdown > kStragglerThreshold;
  }

  // Arrival order at collectives: the k-th communication kernel of each rank, by start time.
  if (n > 1) {
    std::vector<std::vector<int64_t>> starts(n);
    for (size_t i = 0; i < n; ++i) {
      const Trace& t = *traces[i];
      const int64_t base = out.clocks_from_base_time ? *t.info.base_time_ns : 0;
      const std::vector<KernelClass>& classes = kernel_classes[i]->row;
      for (size_t g = 0; g < t.gpu.size(); ++g) {
        if (t.gpu.kind[g] == GpuKind::kKernel && classes[g] == KernelClass::kCommunication) {
          starts[i].push_back(base + t.gpu.start_ns[g]);
        }
      }
      std::sort(starts[i].begin(), starts[i].end());
      out.ranks[i].collectives = starts[i].size();
    }
    size_t common = starts[0].size();
    for (const auto& s : starts) common = std::min(common, s.size());
    out.collectives_compared = common;
    for (size_t k = 0; k < common; ++k) {
      size_t last = 0;
      for (size_t i = 1; i < n; ++i) {
        if (starts[i][k] > starts[last][k]) last = i;
      }
      ++out.ranks[last].last_arrivals;
    }
  }
  return out;
}

}  // namespace gpuscope::analyze
