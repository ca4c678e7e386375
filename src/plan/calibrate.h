// Calibration from a measured trace (issue 5 item 7; the vTrain pattern, planner-reference §5/§8):
// the traced job's steady-state step time fits the efficiency η, and its peak allocated memory
// fits a memory overhead (measured − predicted, may be negative). Pure: the CLI loads the trace.
//
// Assumption: the trace is of the same model and configuration as described by the plan flags
// (--model, --gpus, --tp, --pp, --mbs, ...); a trace carries no model config, so we cannot check.
#pragma once

#include <string>

#include "plan/planner.h"

namespace gpuscope::plan {

struct TraceMeasurement {
  std::string source;
  double step_s = 0;                 // steady-state mean step time of the slowest rank
  double peak_allocated_bytes = -1;  // max over ranks and devices; -1 = no memory events
  size_t ranks = 0;
  size_t steps = 0;                  // steady steps behind the mean (slowest rank)
};

struct Calibration {
  TraceMeasurement measured;
  Evaluation before;  // the traced configuration with the default assumptions
  Evaluation after;   // with the fitted η and overhead
  double efficiency = 0;        // fitted
  double prior_efficiency = 0;  // before fitting
  double overhead_bytes = 0;
  bool memory_fitted = false;
  std::vector<std::string> notes;
};

// Fits η so that the predicted step time of `traced` equals the measured one (solved by bisection
// on the full evaluation: η scales compute and with it the pipeline bubble and the exposed
// data-parallel time), and the overhead so that predicted peak allocated (peak − CUDA context) equals
// the measured peak. η is clamped to [0.01, 1]; a measured step outside what that range can
// predict is reported in notes.
Result<Calibration> Calibrate(const ModelConfig& m, const hw::GpuSpec& gpu,
                              const ParallelConfig& traced, int64_t seq_len,
                              const PlanAssumptions& a, const TraceMeasurement& measured);

}  // namespace gpuscope::plan
