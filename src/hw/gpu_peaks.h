// Roofline peaks per math path (fp32 on CUDA cores, TF32, bf16, fp16, fp8 tensor cores) and HBM
// bandwidth, for the per-op cost model (docs/cost-model.md). Each GPU row of gpu_table.h gives the
// tensor-core datasheet peaks; this file adds the CUDA-core fp32 peak (which the planner never
// needs) and, where this project measured the GPU, the achievable figures beside the datasheet's.
//
// Two peaks per path, used for two different questions:
//  * datasheet: the physical limit. An op that runs faster than it means our FLOPs, bytes or math
//    path are wrong, and the report says so (an op "above its roofline").
//  * achievable: what a large, well-shaped kernel reaches (measured; the datasheet where nothing
//    was measured). Roofline time, efficiency and every predicted saving use it, because a fix is
//    judged by what the GPU will really do.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "hw/gpu_table.h"

namespace gpuscope::hw {

// kTf32x3: fp32 accuracy from TF32 tensor cores, three MMAs per product (CUTLASS's
// OpMultiplyAddFastF32, which PyTorch's memory-efficient attention uses for fp32 on sm80+).
enum class MathPath : uint8_t { kFp32Cuda, kTf32, kTf32x3, kBf16, kFp16, kFp8, kCount };
inline constexpr size_t kMathPathCount = static_cast<size_t>(MathPath::kCount);
std::string_view MathPathName(MathPath p);  // "fp32_cuda", "tf32", "3xtf32", "bf16", "fp16", "fp8"
// The path a matmul of training precision `p` runs on in PyTorch: fp32 on CUDA cores (TF32 only
// when allowed: Precision::kTf32), the 16- and 8-bit types on their tensor cores.
MathPath MatmulPathOf(Precision p);

struct Peak {
  double datasheet = 0;   // TFLOP/s (dense) or GB/s; 0 = the GPU has no such path
  double achievable = 0;  // measured where `measured`, else the datasheet figure
  bool measured = false;
  double Roof() const { return achievable > 0 ? achievable : datasheet; }
};

struct GpuPeaks {
  std::string gpu;          // gpu_table name, e.g. "h200-sxm"
  std::string description;  // "H200 SXM 141 GB HBM3e"
  std::array<Peak, kMathPathCount> tflops;
  Peak hbm_gbps;  // read + write bytes per second, 1e9 B/s
  // Last-level cache (L2; MI300X: Infinity Cache) in MiB: an op whose bytes fit may be served
  // from it, faster than HBM, so HBM is no roofline for it. 0 when unknown.
  double llc_mib = 0;
  // Host → device copies from pinned memory, GB/s: the PCIe link's datasheet rate (gpu_table);
  // achievable where measured (H200: 55.3 of PCIe Gen5's 63).
  Peak h2d_pinned_gbps;
  // GPU time a CUDA graph adds per kernel it replays, ns (measured on the H200: 955; about 1 µs
  // elsewhere, the same order as the driver's per-node work).
  double graph_kernel_ns = 1000;
  std::string source;  // datasheet source, then what was measured and where
  // Achievable dense bf16 GEMM TFLOP/s of an n×n×n GEMM issued alone, as measured (empty when not
  // measured): the efficiency curve for small shapes. Each point is (n, TFLOP/s).
  std::array<std::pair<int, double>, 5> bf16_curve{};
  bool has_curve = false;

  const Peak& Of(MathPath p) const { return tflops[static_cast<size_t>(p)]; }
  // Achievable TFLOP/s of a bf16 GEMM of `flops` per call: the curve read at the n with
  // 2n³ = flops (log-linear between points, flat beyond the ends); Of(kBf16).Roof() without one.
  double Bf16GemmAchievable(double flops) const;
};

// Dense datasheet TFLOP/s of a training precision's matmuls, from the same table the per-op cost
// model prices with: fp32 on CUDA cores (PyTorch's default), tf32/bf16/fp16/fp8 on tensor cores.
// A GPU of --gpu-spec has no CUDA-core row: fp32 is then taken as tf32 / 8 (A100 19.5 vs 156,
// H100 67 vs 495), and `assumed` (when given) is set.
double PlanPeakTflops(const GpuSpec& gpu, Precision p, bool* assumed = nullptr);

// The GPU a trace ran on, from its deviceProperties name ("NVIDIA H200", "NVIDIA H100 80GB HBM3",
// "NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X"); nullopt for a name no row fits.
std::optional<GpuPeaks> PeaksForDevice(std::string_view device_name);
// The peaks of a GPU row (a --gpu-spec GPU too: datasheet figures only, no CUDA-core fp32).
GpuPeaks PeaksOf(const GpuSpec& gpu);
// By gpu_table name or alias (for --gpu): nullopt when unknown.
std::optional<GpuPeaks> PeaksForGpu(std::string_view gpu_name);

}  // namespace gpuscope::hw
