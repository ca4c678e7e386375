// Across ranks: who is slow, and who arrives last at collectives.
//
// Definitions:
//  * per-rank step time: the rank's mean steady-state step duration (steps.h); ranks without steps
//    use their GPU span.
//  * straggler: a rank whose step time exceeds the median over ranks by more than
//    kStragglerThreshold (10 %). `slowdown` = step time / median − 1.
//  * last arrival per collective: the k-th communication kernel on each rank is taken to be the
//  same
//    collective (NCCL issues collectives in the same order on every rank of a group); the rank
//    whose k-th kernel starts last arrived last and the others waited for it. Clock assumption:
//    ranks' timestamps are on one clock (unix time: baseTimeNanoseconds + ts when the trace gives a
//    base); skew between hosts is not corrected, so on multi-node jobs differences below the clock
//    skew (typically tens of µs with NTP) are not meaningful.
#pragma once

#include <cstdint>
#include <vector>

#include "analyze/gpu_time.h"
#include "analyze/kernel_class.h"
#include "analyze/steps.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

inline constexpr double kStragglerThreshold = 0.10;

struct RankRow {
  int32_t rank = -1;
  int64_t step_ns = 0;     // mean steady step (or GPU span without steps)
  int64_t compute_ns = 0;  // exclusive breakdown over the analysed span
  int64_t exposed_communication_ns = 0;
  int64_t idle_ns = 0;
  int64_t span_ns = 0;
  double slowdown = 0;  // step_ns / median − 1
  bool straggler = false;
  uint64_t collectives = 0;    // communication kernels considered for arrival order
  uint64_t last_arrivals = 0;  // collectives at which this rank started last
};

struct RanksResult {
  std::vector<RankRow> ranks;  // input order (sorted by rank by the loader)
  int64_t median_step_ns = 0;
  uint64_t collectives_compared = 0;   // k-th collectives present on every rank
  bool clocks_from_base_time = false;  // every rank had baseTimeNanoseconds
};

// `traces`, `gpu_times`, `steps` and `classes` (BuildKernelClasses of each trace) are parallel
// arrays, one entry per rank.
RanksResult AnalyzeRanks(const std::vector<const Trace*>& traces,
                         const std::vector<const GpuTime*>& gpu_times,
                         const std::vector<const StepsResult*>& steps,
                         const std::vector<const KernelClasses*>& classes);
// The same, classifying each trace's kernels itself (one-off callers and tests).
RanksResult AnalyzeRanks(const std::vector<const Trace*>& traces,
                         const std::vector<const GpuTime*>& gpu_times,
                         const std::vector<const StepsResult*>& steps);

}  // namespace gpuscope::analyze
