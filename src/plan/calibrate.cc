#include "plan/calibrate.h"

#include <algorithm>
#include <cstdio>

namespace gpuscope::plan {

Result<Calibration> Calibrate(const ModelConfig& m, const hw::GpuSpec& gpu,
                              const ParallelConfig& traced, int64_t seq_len,
                              const PlanAssumptions& a, const TraceMeasurement& measured) {
  if (!(measured.step_s > 0))
    return Status::Error(StatusCode::kInvalidInput,
                         measured.source + ": no step time in the trace (hint: record whole "
                                           "training steps with torch.profiler schedule and "
                                           "prof.step())");
  Calibration cal;
  cal.measured = measured;
  PlanAssumptions base = a;
  base.overhead_bytes = 0;
  cal.before = Evaluate(m, gpu, traced, seq_len, base);
  // step = compute(η) + rest, compute ∝ 1/η_eff, and η_eff ∝ η: solve for η.
  const double compute = cal.before.time.terms.front().seconds;  // "compute" is always first
  const double rest = cal.before.time.step_s - compute;
  double eta = a.efficiency;
  if (measured.step_s <= rest) {
    eta = 1.0;
    cal.notes.push_back("measured step time is below the predicted non-compute time (" +
                        std::to_string(rest) + " s): η clamped to 1");
  } else {
    eta = a.efficiency * compute / (measured.step_s - rest);
  }
  if (eta > 1) {
    cal.notes.push_back("fitted η " + std::to_string(eta) + " > 1: clamped to 1 (the trace is "
                        "faster than the dense peak allows: check --gpu, --precision and the flags)");
    eta = 1;
  }
  if (eta < 0.01) {
    cal.notes.push_back("fitted η " + std::to_string(eta) +
                        " < 0.01: clamped (the traced job is far from compute-bound)");
    eta = 0.01;
  }
  cal.efficiency = eta;
  cal.prior_efficiency = a.efficiency;
  PlanAssumptions fitted = base;
  fitted.efficiency = eta;
  if (measured.peak_allocated_bytes >= 0) {
    // Peak allocated excludes the CUDA context, which our peak includes.
    const double predicted_alloc =
        cal.before.memory.peak_bytes - a.context_gib * 1024.0 * 1024 * 1024;
    cal.overhead_bytes = measured.peak_allocated_bytes - predicted_alloc;
    cal.memory_fitted = true;
    fitted.overhead_bytes = cal.overhead_bytes;
  } else {
    cal.notes.push_back("the trace has no memory events (profile_memory=True records them): "
                        "memory overhead not fitted");
  }
  cal.after = Evaluate(m, gpu, traced, seq_len, fitted);
  return cal;
}

}  // namespace gpuscope::plan
