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
  // η scales compute, and through it the pipeline bubble (∝ stage work) and the exposed DP time
  // (overlap with backward ∝ compute): solve step(η) = measured on the full evaluation. step(η) is
  // non-increasing in η (every term is either independent of η or grows with compute ∝ 1/η, and
  // the DP term loses at most what backward = 2/3·compute gains), so bisection converges.
  auto step_at = [&](double eta) {
    PlanAssumptions x = base;
    x.efficiency = eta;
    return Evaluate(m, gpu, traced, seq_len, x).time.step_s;
  };
  constexpr double kEtaMin = 0.01, kEtaMax = 1.0;
  const double fastest = step_at(kEtaMax), slowest = step_at(kEtaMin);
  double eta = a.efficiency;
  if (measured.step_s < fastest) {
    eta = kEtaMax;
    cal.notes.push_back("measured step " + std::to_string(measured.step_s) +
                        " s is unreachable: even η = 1 predicts " + std::to_string(fastest) +
                        " s; η clamped to 1 (the trace is faster than the dense peak and the "
                        "modelled communication allow: check --gpu, --precision and the flags)");
  } else if (measured.step_s > slowest) {
    eta = kEtaMin;
    cal.notes.push_back("measured step " + std::to_string(measured.step_s) +
                        " s is slower than η = 0.01 predicts (" + std::to_string(slowest) +
                        " s): η clamped to 0.01 (the traced job is far from compute-bound)");
  } else {
    double lo = kEtaMin, hi = kEtaMax;  // step(lo) ≥ measured ≥ step(hi)
    for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
      const double mid = 0.5 * (lo + hi);
      (step_at(mid) > measured.step_s ? lo : hi) = mid;
    }
    eta = 0.5 * (lo + hi);
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
