#include "plan/calibrate.h"

#include <algorithm>

#include "render/format.h"

namespace gpuscope::plan {

Result<Calibration> Calibrate(const ModelConfig& m, const hw::GpuSpec& gpu,
                              const ParallelConfig& traced, int64_t seq_len,
                              const PlanAssumptions& a, const TraceMeasurement& measured) {
  if (!measured.memory_only && !(measured.step_s > 0))
    return Status::Error(StatusCode::kInvalidInput,
                         measured.source +
                             ": no step time in the trace (hint: record whole "
                             "training steps with torch.profiler schedule and "
                             "prof.step())");
  Calibration cal;
  cal.measured = measured;
  PlanAssumptions base = a;
  base.overhead_bytes = 0;
  base.activation_scale = 1;
  base.other_s_per_token = 0;
  base.measured.reset();  // calibration fits the formulas: time, the η ones (η and a time per
  // token); a snapshot (memory only) leaves the time model as it is.
  const bool fit_time = !measured.memory_only;
  if (fit_time) base.hf_ops_priced = false;
  cal.before = Evaluate(m, gpu, traced, seq_len, base);
  // Time split: compute ∝ 1/η; η so that compute = the measured math time, then the rest of the
  // measured step per token.
  if (fit_time && measured.math_share > 0 && measured.math_share < 1 &&
      !cal.before.time.terms.empty()) {
    const double math_s = measured.step_s * measured.math_share;
    const double compute_s = cal.before.time.terms.front().seconds;
    const double eta = std::clamp(a.efficiency * compute_s / math_s, 0.01, 1.0);
    PlanAssumptions x = base;
    x.efficiency = eta;
    const Evaluation e = Evaluate(m, gpu, traced, seq_len, x);
    const double t = static_cast<double>(traced.tp), p = static_cast<double>(traced.pp);
    const double tokens = static_cast<double>(traced.mbs) * static_cast<double>(seq_len) *
                          static_cast<double>(traced.grad_accum) / (t * p);
    const double rest = measured.step_s - e.time.step_s;
    if (rest > 0 && tokens > 0) {
      // The time per token enters the stage work (and so the pipeline bubble and the DP overlap):
      // solve step(other) = measured by bisection (step grows with it).
      auto step_with = [&](double other) {
        PlanAssumptions y = x;
        y.other_s_per_token = other;
        return Evaluate(m, gpu, traced, seq_len, y).time.step_s;
      };
      double lo = 0, hi = rest / tokens;
      for (int i = 0; i < 60 && step_with(hi) < measured.step_s; ++i) hi *= 2;
      for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
        const double mid = 0.5 * (lo + hi);
        (step_with(mid) < measured.step_s ? lo : hi) = mid;
      }
      cal.time_split = true;
      cal.efficiency = eta;
      cal.other_s_per_token = 0.5 * (lo + hi);
      cal.notes.push_back(
          "time split: GEMM/conv/attention " + render::FormatShare(measured.math_share, 1) +
          " of the ops' GPU time → η " + render::FormatNumber(eta, 3) + "; the other " +
          render::FormatNumber(cal.other_s_per_token * tokens * 1e3, 3) + " ms of the step as " +
          render::FormatNumber(cal.other_s_per_token * 1e9, 2) + " ns per token");
      if (eta >= 1.0 || eta <= 0.01)
        cal.notes.push_back(
            "η clamped: the model's FLOPs at this precision's peak do not fit the "
            "trace's GEMM/attention time (is the trace of this model and "
            "configuration?)");
    }
  }
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
  // The whole-step fit's bounds, evaluated only when it runs.
  const bool bisect = fit_time && !cal.time_split;
  const double fastest = bisect ? step_at(kEtaMax) : 0;
  const double slowest = bisect ? step_at(kEtaMin) : 0;
  double eta = a.efficiency;
  if (!fit_time) {
    cal.notes.push_back(
        "a memory snapshot has no step time: only memory is fitted (η and the time per token "
        "keep their defaults)");
  } else if (cal.time_split) {
    eta = cal.efficiency;
  } else if (measured.step_s < fastest) {
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
  fitted.other_s_per_token = cal.other_s_per_token;
  if (measured.peak_allocated_bytes >= 0) {
    // Peak allocated excludes the CUDA context, which our peak includes.
    const double predicted_alloc = cal.before.memory.peak_allocated_bytes;
    const double activations = cal.before.memory.activation_bytes;
    const double scale =
        activations > 0
            ? (measured.peak_allocated_bytes - (predicted_alloc - activations)) / activations
            : 0;
    cal.memory_fitted = true;
    if (scale >= 0.05 && scale <= 20) {
      cal.activation_scale = scale;
      fitted.activation_scale = scale;
      cal.notes.push_back("memory: activations × " + std::to_string(scale).substr(0, 5) +
                          " (measured peak − predicted static memory, ÷ predicted activations; "
                          "they scale with tokens)");
    } else {
      cal.overhead_bytes = measured.peak_allocated_bytes - predicted_alloc;
      fitted.overhead_bytes = cal.overhead_bytes;
      cal.notes.push_back(
          "memory: no activation scale in [0.05, 20] matches the measured peak; "
          "a constant overhead instead (it does not scale with the batch)");
    }
  } else {
    cal.notes.push_back(
        "the trace has no memory events (profile_memory=True records them; or fit memory "
        "from a CUDA memory snapshot of the run: --from-trace SNAPSHOT.pickle): memory not "
        "fitted");
  }
  cal.after = Evaluate(m, gpu, traced, seq_len, fitted);
  return cal;
}

}  // namespace gpuscope::plan
