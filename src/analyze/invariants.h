// Invariants every analysis result must satisfy whatever the input: times that are lengths (idle,
// gaps, durations, busy and blocked time) are ≥ 0, parts sum to their whole, and shares lie in
// [0, 1]. The fuzz target (fuzz/kineto_reader_fuzz.cc) traps on any violation and the corpus tests
// check every real trace, so a regression such as a negative per-stream idle cannot come back
// silently.
//
// Not checked: values the trace itself reports (achieved occupancy %, a copy's bandwidth field),
// raw differences documented as signed (LaunchRow::launch_delay_ns, memory deltas).
#pragma once

#include <string>
#include <vector>

#include "analyze/copies.h"
#include "analyze/gpu_time.h"
#include "analyze/idle_gaps.h"
#include "analyze/kernels.h"
#include "analyze/launches.h"
#include "analyze/occupancy.h"
#include "analyze/run_all.h"
#include "analyze/steps.h"
#include "analyze/sync_points.h"

namespace gpuscope::analyze {

// One rank's results; null members are not checked.
struct AnalysesView {
  const GpuTime* gpu_time = nullptr;
  const StepsResult* steps = nullptr;
  const KernelsResult* kernels = nullptr;
  const LaunchStats* launches = nullptr;
  const CopyStats* copies = nullptr;
  const SyncStats* sync = nullptr;
  const OccupancyStats* occupancy = nullptr;
  const IdleGapStats* idle_gaps = nullptr;
  const OpCosts* op_costs = nullptr;
  const CriticalPath* critical_path = nullptr;
};

// Every analysis of one rank's results (RunAll's, or a report's rank).
AnalysesView ViewOf(const RankResults& rank);

// Every violated invariant, one line each ("gpu_time: stream 7 kernel_wait_ns = -499500000 < 0");
// empty when all hold.
std::vector<std::string> CheckInvariants(const AnalysesView& analyses);

}  // namespace gpuscope::analyze
