// Exact mode: the planner's activation memory and step time measured from one training step of
// the model's own code on fake tensors (python/gpuscope/exact.py, run by MeasureStep), instead of
// formulas. What the step measures is MeasuredStep; PriceMeasuredOps turns its op list into GPU
// time on the roofline with the same peaks per math path the per-op cost model uses
// (hw/gpu_peaks.h). docs/planner.md "Exact mode".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/status.h"
#include "hw/gpu_peaks.h"

namespace gpuscope::plan {

// One kind of kernel-launching op of the measured step: `count` calls of identical shapes.
struct MeasuredOp {
  std::string op;  // ATen name, "mm", "_foreach_mul_", …
  std::string
      klass;  // gemm, attention, attention_backward, normalization, reduction, foreach, memory
  std::string path;             // math path of GEMM/attention (hw::MathPathName); "" for the others
  double flops = 0;             // per call
  double bytes = 0;             // per call: every input read and output written once
  int64_t m = 0, n = 0, k = 0;  // GEMM dimensions (0 when not a GEMM)
  int64_t count = 0;
};

struct MeasuredStep {
  std::string torch_version, transformers_version, model_type, precision, recompute, optimizer;
  int64_t batch = 0, seq_len = 0, layers = 0;
  double parameters = 0;
  double peak_allocated_bytes = 0;
  double parameter_bytes = 0, optimizer_state_bytes = 0, gradient_bytes = 0;
  // Storages alive at the peak, by kind; the rest are activations and temporaries.
  double peak_parameters = 0, peak_optimizer_states = 0, peak_gradients = 0, peak_rest = 0;
  double peak_autocast_cache = 0;  // autocast's 16-bit weight copies (scale with parameters)
  std::vector<double> saved_per_layer_bytes;  // unique bytes each block's forward saved
  std::vector<MeasuredOp> ops;
  int64_t kernels = 0;
  double seconds = 0;  // how long the measurement took

  double MeanSavedPerLayer() const;
  double Tokens() const { return static_cast<double>(batch) * static_cast<double>(seq_len); }
};

// Reads exact.py's JSON (schema gpuscope.exact/1). An {"error": …} document or a malformed one is
// kInvalidInput naming `origin`.
Result<MeasuredStep> ParseMeasuredStep(std::string_view json, std::string_view origin);

struct ExactRequest {
  std::string config_path;  // a Hugging Face config.json
  int64_t batch = 0, seq_len = 0;
  std::string precision;  // fp32, tf32, bf16, fp16
  std::string recompute;  // none, full
  std::string optimizer;  // adam, sgd
  std::string python;     // interpreter; "" = $GPUSCOPE_PYTHON, else python3 on PATH
};
// Runs the embedded exact.py with a Python that has torch ≥ 2 and transformers (the only side
// effect of the plan stage: a child process and a temporary file). kUnavailable-like failures
// (no such Python, torch missing) are kInvalidInput with a hint.
Result<MeasuredStep> MeasureStep(const ExactRequest& r);
// A Python that finds torch and transformers (importlib's find_spec: nothing is imported, ~50 ms
// each): $GPUSCOPE_PYTHON alone when set; else the active virtual environment's
// ($VIRTUAL_ENV/bin/python), python3 on PATH, then this source tree's project venv (.venv, made
// by tools/setup.sh --test). True with *which set to it; false with *which = what was tried.
bool ExactModeAvailable(std::string* which);
std::string_view ExactScript();  // python/gpuscope/exact.py, compiled in

// Kernel-class efficiencies of the pricing (shares of the path's achievable roof), with where
// each comes from; printed with the plan.
struct OpEfficiency {
  double misaligned_gemm = 0.15;    // 16-bit GEMM with a dimension not a multiple of 8
  double attention_forward = 0.20;  // fused attention forward, of the path's roof
  double attention_backward = 0.25;
  double elementwise = 0.90;    // of HBM bandwidth
  double normalization = 0.50;  // layer/RMS norm, softmax, loss
  double reduction = 0.30;
  double foreach = 0.80;           // the optimizer's multi-tensor kernels
  double min_kernel_s = 2e-6;      // a kernel's shortest GPU time
  double host_per_op_s = 9.38e-6;  // eager PyTorch's host time per op (the GPU waits below it)
};

struct PricedStep {
  double gpu_s = 0;        // Σ op time on the GPU
  double host_s = 0;       // ops × host time per op
  double optimizer_s = 0;  // of gpu_s: the foreach (optimizer) ops
  double gemm_s = 0, attention_s = 0, memory_s = 0;
  double flops = 0;  // Σ flops of GEMM + attention (executed)
  int64_t kernels = 0;
};
// Prices every op at `token_scale` × its measured size (activation ops; the optimizer's at
// `param_scale`) on `peaks`' achievable roofs: GEMMs on their path's roof read on the bf16 size
// curve (× misaligned_gemm when a 16-bit GEMM has a dimension not a multiple of 8), attention at
// its class efficiency, the rest at HBM bandwidth × class efficiency; each op at least
// min_kernel_s.
PricedStep PriceMeasuredOps(const MeasuredStep& m, const hw::GpuPeaks& peaks, const OpEfficiency& e,
                            double token_scale, double param_scale);

}  // namespace gpuscope::plan
