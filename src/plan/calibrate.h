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
  size_t steps = 0;  // steady steps behind the mean (slowest rank)
  // GEMM/conv/attention share of the ops' GPU time (the trace's priced ops); -1 = unknown (no
  // shapes recorded): then only η is fitted to the whole step.
  double math_share = -1;
  // A CUDA memory snapshot: only peak_allocated_bytes is measured (no step time), so only the
  // memory is fitted.
  bool memory_only = false;
};

struct Calibration {
  TraceMeasurement measured;
  Evaluation before;            // the traced configuration with the default assumptions
  Evaluation after;             // with the fitted η and overhead
  double efficiency = 0;        // fitted
  double prior_efficiency = 0;  // before fitting
  double overhead_bytes = 0;
  double activation_scale = 1;   // measured ÷ formula activations (memory that scales with tokens)
  double other_s_per_token = 0;  // GPU time outside GEMM/attention per token
  bool memory_fitted = false;
  bool time_split = false;  // η fitted to the math time, the rest per token
  std::vector<std::string> notes;
};

// Fits the traced configuration to the trace so that it extrapolates to other batches:
//  * time: with the math share known, η so that compute = the measured GEMM/conv/attention time,
//    and the rest of the step (elementwise, norms, loss, idle) as time per token; else η alone so
//    that the whole step matches (bisection on the full evaluation: η scales compute and with it
//    the pipeline bubble and the exposed data-parallel time). η is clamped to [0.01, 1]; a
//    measured step outside what that range can predict is reported in notes;
//  * memory: a scale on the activation terms (∝ tokens) so that predicted peak allocated (peak −
//    CUDA context) equals the measured peak; a constant overhead when no positive scale in
//    [0.05, 20] does.
Result<Calibration> Calibrate(const ModelConfig& m, const hw::GpuSpec& gpu,
                              const ParallelConfig& traced, int64_t seq_len,
                              const PlanAssumptions& a, const TraceMeasurement& measured);

}  // namespace gpuscope::plan
