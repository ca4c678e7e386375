// GPU facts for the planner: dense peak TFLOP/s per precision, memory, HBM bandwidth and links.
// Each row carries its source (planner-reference.md §10); an unknown GPU is an error, never a
// guess.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/enum_names.h"
#include "gpuscope/status.h"

namespace gpuscope::hw {

// The math a training step's matmuls run in. kFp32 is PyTorch's default for fp32 tensors: CUDA
// cores (torch.backends.cuda.matmul.allow_tf32 is False unless set); kTf32 is fp32 storage with
// TF32 tensor-core matmuls (allow_tf32=True, or torch.set_float32_matmul_precision("high")).
enum class Precision { kFp32, kTf32, kBf16, kFp16, kFp8 };
// fp32 and tf32 keep fp32 weights and gradients (no mixed precision).
inline bool FullPrecision(Precision p) { return p == Precision::kFp32 || p == Precision::kTf32; }

inline constexpr EnumNames<Precision, 5> kPrecisionNames({Precision::kFp32, "fp32"},
                                                         {Precision::kTf32, "tf32"},
                                                         {Precision::kBf16, "bf16"},
                                                         {Precision::kFp16, "fp16"},
                                                         {Precision::kFp8, "fp8"});
inline std::string_view PrecisionName(Precision p) { return NameOf(kPrecisionNames, p); }

struct GpuSpec {
  std::string name;                  // canonical, e.g. "h100-sxm"
  std::vector<std::string> aliases;  // lookup is case-insensitive over name and aliases
  std::string description;           // "H100 SXM5 80 GB HBM3"
  double memory_gib = 0;  // device-reported capacity (CUDA totalGlobalMem) in GiB; see source
  double hbm_gbps = 0;    // HBM bandwidth, GB/s (1e9 B/s)
  // Dense peak TFLOP/s; 0 = the precision is not supported (asking for it is an error). The fp32
  // figure is TF32 tensor-core math where the GPU has it, else plain FP32 (what fp32 training
  // with torch.backends.cuda.matmul.allow_tf32=True runs at). The CUDA-core fp32 peak is
  // hw/gpu_peaks.h's (PlanPeakTflops).
  double tflops_fp32 = 0;
  double tflops_bf16 = 0;
  double tflops_fp16 = 0;
  double tflops_fp8 = 0;
  // Intra-node GPU↔GPU bandwidth per GPU, unidirectional GB/s (NVLink/XGMI peer-to-peer, or PCIe
  // when the GPUs have no fabric). §10 "Intra-node bandwidth".
  double intra_node_gbps = 0;
  double nvlink_bidir_gbps = 0;  // vendor's per-GPU bidirectional total, 0 = none (shown only)
  double pcie_gbps = 0;          // PCIe x16 unidirectional GB/s (Gen3 16, Gen4 31, Gen5 63)
  int gpus_per_node = 8;         // TP stays within a node
  std::string source;

  // The tensor-core peak of p (kFp32 and kTf32: tflops_fp32). The planner's peak per math path,
  // with fp32 on CUDA cores, is hw::PlanPeakTflops.
  double PeakTflops(Precision p) const;
};

// Every known GPU, in table order.
const std::vector<GpuSpec>& KnownGpus();

// Lookup by canonical name or alias, case-insensitive; "_" and " " are read as "-".
// Unknown → kInvalidInput naming every known GPU and --gpu-spec.
Result<GpuSpec> FindGpu(std::string_view name);

// "name:mem_gib:bf16_tflops:hbm_gbps[:intra_gbps[:fp8_tflops]]" → a custom GPU (for --gpu-spec).
Result<GpuSpec> ParseGpuSpec(std::string_view text);

}  // namespace gpuscope::hw
