#include "hw/gpu_peaks.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "base/enum_names.h"

namespace gpuscope::hw {

constexpr EnumNames<MathPath, 6> kMathPathNames({MathPath::kFp32Cuda, "fp32_cuda"},
                                                {MathPath::kTf32, "tf32"},
                                                {MathPath::kTf32x3, "3xtf32"},
                                                {MathPath::kBf16, "bf16"},
                                                {MathPath::kFp16, "fp16"}, {MathPath::kFp8, "fp8"});

std::string_view MathPathName(MathPath p) { return NameOf(kMathPathNames, p); }

MathPath MatmulPathOf(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return MathPath::kFp32Cuda;
    case Precision::kTf32:
      return MathPath::kTf32;
    case Precision::kBf16:
      return MathPath::kBf16;
    case Precision::kFp16:
      return MathPath::kFp16;
    case Precision::kFp8:
      return MathPath::kFp8;
  }
  return MathPath::kFp32Cuda;
}

namespace {

// Dense fp32 on CUDA cores (FFMA), TFLOP/s, from each vendor's datasheet: gpu_table.h keeps TF32
// in its fp32 column (what the planner needs), so the CUDA-core figure lives here; and the
// last-level cache in MiB (the architecture whitepapers: A100 40, H100/H200 50, L4 48, L40S 96,
// RTX 4090 72; B200 126 unverified; MI250X 8 per GCD; MI300X 256 Infinity Cache).
struct CudaCoreRow {
  std::string_view gpu;
  double fp32_cuda;
  bool has_tf32;
  double llc_mib;  // tensor-core TF32 (NVIDIA Ampere+, AMD CDNA3); gpu_table's fp32 is then TF32
  std::string_view source;
};
constexpr CudaCoreRow kCudaCore[] = {
    {"a100-40gb-sxm", 19.5, true, 40, "A100 datasheet: FP32 19.5 TFLOPS"},
    {"a100-80gb-sxm", 19.5, true, 40, "A100 datasheet: FP32 19.5 TFLOPS"},
    {"a100-80gb-pcie", 19.5, true, 40, "A100 datasheet: FP32 19.5 TFLOPS"},
    {"h100-sxm", 67, true, 50, "H100 datasheet: FP32 67 TFLOPS (SXM)"},
    {"h100-pcie", 51, true, 50, "H100 datasheet: FP32 51 TFLOPS (PCIe)"},
    {"h100-nvl", 60, true, 50, "H100 NVL datasheet: FP32 60 TFLOPS (unverified)"},
    {"h200-sxm", 67, true, 50, "H200 datasheet: FP32 67 TFLOPS (SXM)"},
    {"gh200", 67, true, 50, "GH200 datasheet: FP32 67 TFLOPS"},
    {"b200", 75, true, 126, "HGX B200 datasheet: FP32 600 TFLOPS per 8 GPUs (unverified)"},
    {"gb200", 80, true, 126, "GB200 NVL72 datasheet: FP32 5,760 TFLOPS per 72 GPUs (unverified)"},
    {"l4", 30.3, true, 48, "L4 datasheet: FP32 30.3 TFLOPS"},
    {"l40s", 91.6, true, 96, "L40S datasheet: FP32 91.6 TFLOPS"},
    {"a10", 31.2, true, 6, "A10 datasheet: FP32 31.2 TFLOPS"},
    {"t4", 8.1, false, 4, "T4 datasheet: FP32 8.1 TFLOPS"},
    {"v100-sxm2", 15.7, false, 6, "V100 datasheet: FP32 15.7 TFLOPS (SXM2)"},
    {"rtx-4090", 82.6, true, 72, "RTX 4090 (Ada whitepaper): FP32 82.6 TFLOPS"},
    {"rtx-3090", 35.6, true, 6, "GA102 whitepaper: FP32 35.6 TFLOPS"},
    {"mi250x", 23.95, false, 8, "MI250X datasheet: FP32 vector 47.9 TFLOPS per card = 2 GCDs"},
    {"mi300x", 163.4, true, 256, "MI300X datasheet: FP32 vector 163.4 TFLOPS, TF32 653.7"},
};

// What this project measured (shared/traces/gpu_lab_h200/microbench_h200.json: PyTorch 2.11 +
// CUDA events, mean of 20 runs after 3 warm-ups; dense GEMM 8192³ per precision; HBM from an
// elementwise add counting read + write).
struct MeasuredRow {
  std::string_view gpu;
  double fp32_cuda, tf32, bf16, fp16, fp8, hbm_gbps;
  double h2d_pinned_gbps, graph_kernel_ns;
  std::array<std::pair<int, double>, 5> bf16_curve;
  std::string_view source;
};
constexpr MeasuredRow kMeasured[] = {
    {"h200-sxm",
     51.2,
     410.9,
     780.2,
     756.0,
     1433.6,
     4363,
     55.3,
     955,
     {{{512, 14.1}, {1024, 102.0}, {2048, 662.8}, {4096, 773.5}, {8192, 780.2}}},
     "measured on an H200 (gpu_lab_h200/microbench_h200.json: GEMM 8192³ per precision, bf16 "
     "add 4,363 GB/s read + write, pinned host→device copies 55.3 GB/s, 0.955 µs per kernel "
     "replayed in a CUDA graph)"},
};

std::string Lower(std::string_view in) {
  std::string s(in);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

GpuPeaks Build(const GpuSpec& g) {
  GpuPeaks p;
  p.gpu = g.name;
  p.description = g.description;
  p.source = g.source;
  auto set = [&p](MathPath m, double v) {
    p.tflops[static_cast<size_t>(m)].datasheet = v;
    p.tflops[static_cast<size_t>(m)].achievable = v;
  };
  bool tf32 = true;
  for (const CudaCoreRow& r : kCudaCore) {
    if (r.gpu != g.name) continue;
    set(MathPath::kFp32Cuda, r.fp32_cuda);
    tf32 = r.has_tf32;
    p.llc_mib = r.llc_mib;
    p.source += std::string("; fp32 CUDA cores: ") + std::string(r.source);
  }
  if (tf32) {
    set(MathPath::kTf32, g.tflops_fp32);
    set(MathPath::kTf32x3, g.tflops_fp32 / 3);  // three TF32 MMAs per fp32 product
  }
  set(MathPath::kBf16, g.tflops_bf16);
  set(MathPath::kFp16, g.tflops_fp16);
  set(MathPath::kFp8, g.tflops_fp8);
  p.hbm_gbps = {g.hbm_gbps, g.hbm_gbps, false};
  p.h2d_pinned_gbps = {g.pcie_gbps, g.pcie_gbps, false};
  for (const MeasuredRow& m : kMeasured) {
    if (m.gpu != g.name) continue;
    const double v[] = {m.fp32_cuda, m.tf32, m.tf32 / 3, m.bf16, m.fp16, m.fp8};
    static_assert(sizeof(v) / sizeof(v[0]) == kMathPathCount);
    for (size_t i = 0; i < kMathPathCount; ++i) p.tflops[i] = {p.tflops[i].datasheet, v[i], true};
    p.hbm_gbps = {g.hbm_gbps, m.hbm_gbps, true};
    p.h2d_pinned_gbps = {g.pcie_gbps, m.h2d_pinned_gbps, true};
    p.graph_kernel_ns = m.graph_kernel_ns;
    p.bf16_curve = m.bf16_curve;
    p.has_curve = true;
    p.source += "; " + std::string(m.source);
  }
  return p;
}

}  // namespace

double GpuPeaks::Bf16GemmAchievable(double flops) const {
  const double roof = Of(MathPath::kBf16).Roof();
  if (!has_curve || !(flops > 0)) return roof;
  const double n = std::cbrt(flops / 2);
  if (n <= bf16_curve.front().first) return bf16_curve.front().second;
  if (n >= bf16_curve.back().first) return bf16_curve.back().second;
  for (size_t i = 1; i < bf16_curve.size(); ++i) {
    const auto [n1, t1] = bf16_curve[i];
    if (n > n1) continue;
    const auto [n0, t0] = bf16_curve[i - 1];
    const double f = std::log(n / n0) / std::log(static_cast<double>(n1) / n0);
    return t0 + f * (t1 - t0);
  }
  return roof;
}

double PlanPeakTflops(const GpuSpec& gpu, Precision p, bool* assumed) {
  if (assumed) *assumed = false;
  if (p != Precision::kFp32) return gpu.PeakTflops(p);
  for (const CudaCoreRow& r : kCudaCore)
    if (r.gpu == gpu.name) return r.fp32_cuda;
  if (assumed) *assumed = true;
  return gpu.tflops_fp32 / 8;
}

GpuPeaks PeaksOf(const GpuSpec& gpu) { return Build(gpu); }

std::optional<GpuPeaks> PeaksForGpu(std::string_view gpu_name) {
  Result<GpuSpec> g = FindGpu(gpu_name);
  if (!g.ok()) return std::nullopt;
  return Build(*g);
}

std::optional<GpuPeaks> PeaksForDevice(std::string_view device_name) {
  const std::string n = Lower(device_name);
  auto has = [&n](std::string_view s) { return n.find(s) != std::string::npos; };
  // Most specific first: "gh200" holds "h200", "gb200" holds "b200", "a100" holds "a10",
  // "l40s" holds "l4".
  std::string_view gpu;
  if (has("gh200"))
    gpu = "gh200";
  else if (has("h200"))
    gpu = "h200-sxm";
  else if (has("h100") && has("pcie"))
    gpu = "h100-pcie";
  else if (has("h100") && has("nvl"))
    gpu = "h100-nvl";
  else if (has("h100") || has("h800"))
    gpu = "h100-sxm";
  else if (has("a100") && has("40gb"))
    gpu = "a100-40gb-sxm";
  else if (has("a100") && has("pcie"))
    gpu = "a100-80gb-pcie";
  else if (has("a100") || has("a800"))
    gpu = "a100-80gb-sxm";
  else if (has("gb200"))
    gpu = "gb200";
  else if (has("b200"))
    gpu = "b200";
  else if (has("l40s"))
    gpu = "l40s";
  else if (has(" l4"))
    gpu = "l4";
  else if (has(" a10"))
    gpu = "a10";
  else if (has(" t4"))
    gpu = "t4";
  else if (has("v100"))
    gpu = "v100-sxm2";
  else if (has("4090"))
    gpu = "rtx-4090";
  else if (has("3090"))
    gpu = "rtx-3090";
  else if (has("mi300x"))
    gpu = "mi300x";
  else if (has("mi250"))
    gpu = "mi250x";
  if (gpu.empty()) return std::nullopt;
  return PeaksForGpu(gpu);
}

}  // namespace gpuscope::hw
