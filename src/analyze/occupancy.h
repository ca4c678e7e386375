// How much of the GPU the kernels could occupy: tb_plugin's estimated SM efficiency and achieved
// occupancy, and the kernels whose grid is too small to fill the GPU.
//
// Definitions (shared/docs/metrics-reference.md §3.2; kineto @ 041e7ce9 :
// tb_plugin/torch_tb_profiler/profiler/gpu_metrics_parser.py and range_utils.py). Times ns.
//  * device: the args.device most kernels ran on (tb_plugin reports every device; a rank has one).
//  * analysed range: tb_plugin's [first step start, last step end] over the complete steps of
//    StepsResult (steps.h: start moved to the previous step's device work, end extended to the
//    step's own; trailing incomplete steps left out), or the whole-span pseudo-step.
//  * est. SM efficiency: each kernel with `blocks per SM` > 0 contributes that value while it
//    runs; concurrent kernels add; each slice of the timeline counts min(Σ, 1). Time-weighted
//    over the range: Σ(min(Σ blocks/SM, 1) × slice length) / range length, idle time counting 0.
//    (Same as summing min(blocks/SM, 1) per kernel, then capping at 1.) Worked example: one
//    kernel of 54 blocks on a 108-SM GPU (0.5 blocks/SM) running 10 ms of a 20 ms range → 0.25.
//  * est. achieved occupancy (%): the kernels' `est. achieved occupancy %` arg (Kineto's
//    min(threads / SMs / max threads per SM, theoretical occupancy)), weighted by each kernel's
//    duration clipped to the range; idle time does not count.
//  * tiny grid: a compute kernel (kernel_class.h; communication kernels use few blocks on purpose)
//    with 0 < blocks/SM < 1, i.e. fewer thread blocks than SMs, so some SMs have nothing to do
//    whatever the occupancy per SM. Grouped by ShortKernelName; over the kernels that start in the
//    range on the device. Share = their time / all compute-kernel time (with blocks/SM) there.
//  * lost SM time of a tiny-grid kernel = duration × (1 − blocks/SM): the SM-time its empty SMs
//    waste; the upper bound of what filling the GPU could save, if the work spread perfectly.
// Traces without `blocks per SM` (AMD, older CUPTI) → available = false; without the occupancy
// arg → occupancy_available = false.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/kernel_class.h"
#include "analyze/steps.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

inline constexpr size_t kTopTinyGridKernels = 10;

struct TinyGridKernel {
  std::string name;  // ShortKernelName
  uint64_t count = 0;
  int64_t total_ns = 0;
  double mean_blocks_per_sm = 0;   // arithmetic mean over the launches
  double mean_occupancy_pct = -1;  // duration-weighted; -1 without the arg
  int64_t lost_sm_ns = 0;          // Σ duration × (1 − blocks/SM)
};

struct OccupancyStats {
  bool available = false;            // some kernel carries blocks per SM
  bool occupancy_available = false;  // some kernel carries est. achieved occupancy
  int32_t device = -1;
  int64_t range_start_ns = 0;  // the analysed range (tb_plugin's steps span)
  int64_t range_end_ns = 0;
  double sm_efficiency = -1;           // 0-1; -1 when not available
  double achieved_occupancy_pct = -1;  // 0-100; -1 when not available
  int64_t compute_kernel_ns = 0;       // Σ duration of compute kernels with blocks/SM in range
  int64_t tiny_grid_ns = 0;            // of which tiny grids
  uint64_t tiny_grid_kernels = 0;      // launches
  int64_t tiny_grid_lost_sm_ns = 0;    // Σ duration × (1 − blocks/SM) over tiny grids
  double tiny_grid_share = 0;          // tiny_grid_ns / compute_kernel_ns
  std::vector<TinyGridKernel> tiny;    // by total time, at most kTopTinyGridKernels
  uint64_t tiny_distinct_names = 0;
};

// `classes`: BuildKernelClasses(trace) (tiny grids count compute kernels only).
OccupancyStats AnalyzeOccupancy(const Trace& trace, const KernelClasses& classes,
                                const StepsResult& steps, size_t top_n = kTopTinyGridKernels);
// The same, classifying the trace's kernels itself (one-off callers and tests).
OccupancyStats AnalyzeOccupancy(const Trace& trace, const StepsResult& steps,
                                size_t top_n = kTopTinyGridKernels);

}  // namespace gpuscope::analyze
