#include "hw/gpu_table.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/sanitize.h"

namespace gpuscope::hw {

double GpuSpec::PeakTflops(Precision p) const {
  switch (p) {
    case Precision::kFp32:
    case Precision::kTf32:
      return tflops_fp32;
    case Precision::kBf16:
      return tflops_bf16;
    case Precision::kFp16:
      return tflops_fp16;
    case Precision::kFp8:
      return tflops_fp8;
  }
  return 0;
}

namespace {

// planner-reference.md §10. The GeForce bf16/fp16 peaks are the FP32-accumulate rates (training
// accumulates in FP32). fp32 = TF32 dense where the GPU has tensor-core TF32.
//
// Memory: the capacity the CUDA runtime reports (cudaDeviceProp::totalGlobalMem, what
// torch.cuda.get_device_properties().total_memory shows), in GiB, because the planner's budget is
// in bytes and PyTorch reports GiB. The vendor's "80 GB" is a nominal figure (§10): read as 1e9 B
// it understates an A100 80GB (80 GiB reported) by 7 %. Each row's source says where its figure
// comes from; where only the nominal figure is known, it is read as GiB (as A100/H100-class parts
// report) and the row says "nominal".
constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double FromBytes(double bytes) { return bytes / kGiB; }
constexpr double FromMib(double mib) { return mib / 1024; }
constexpr char kSmi[] =
    "; memory: nvidia-smi memory.total as listed in modal-labs/modal-client PR #2797";
constexpr char kStas[] = "stas00/ml-engineering compute/accelerator/README.md";

std::vector<GpuSpec> BuildTable() {
  std::vector<GpuSpec> t;
  auto add = [&t](GpuSpec s) { t.push_back(std::move(s)); };
  // One GPU per add, in GpuSpec's order: name, aliases, description; memory GiB, HBM GB/s,
  // TFLOP/s fp32 (TF32 tensor cores where there are), bf16, fp16, fp8; intra-node GB/s, NVLink
  // bidirectional GB/s, PCIe GB/s, GPUs per node; source.
  // clang-format off
  add({"a100-40gb-sxm", {"a100-40gb", "a100-sxm4-40gb", "a100-40gb-sxm4"}, "A100 SXM4 40 GB HBM2",
       FromBytes(42505273344.0), 1555, 156, 312, 312, 0, 300, 600, 31, 8,
       std::string("NVIDIA A100 datasheet; ") + kStas + " (HBM bandwidth unverified)"
           + std::string("; memory: totalGlobalMem 42,505,273,344 B (CUDA deviceProperties)")});
  add({"a100-80gb-sxm", {"a100", "a100-80gb", "a100-sxm4-80gb", "a100-80gb-sxm4", "a100-sxm"}, "A100 SXM4 80 GB HBM2e",
       FromBytes(85899345920.0), 2039, 156, 312, 312, 0, 300, 600, 31, 8,
       std::string("NVIDIA A100 datasheet; ") + kStas
           + std::string( "; memory: totalGlobalMem 85,899,345,920 B = 80 GiB (CUDA deviceProperties)")});
  add({"a100-80gb-pcie", {"a100-pcie"}, "A100 PCIe 80 GB HBM2e",
       FromBytes(85899345920.0), 1935, 156, 312, 312, 0, 31, 600, 31, 8,
       std::string("NVIDIA A100 datasheet; ") + kStas + " (NVLink bridge pairs only: PCIe assumed)"
           + std::string("; memory: 81,920 MiB = 80 GiB (nvidia-smi, as the SXM4 part)")});
  add({"h100-sxm", {"h100", "h100-sxm5", "h100-80gb-sxm"}, "H100 SXM5 80 GB HBM3",
       FromBytes(85520809984.0), 3350, 494.5, 989, 989, 1979, 450, 900, 63, 8,
       std::string("NVIDIA H100 datasheet; ") + kStas
           + std::string("; memory: totalGlobalMem 85,520,809,984 B (CUDA deviceProperties)")});
  add({"h100-pcie", {}, "H100 PCIe 80 GB HBM2e",
       FromBytes(85520809984.0), 2000, 378, 756, 756, 1513, 63, 600, 63, 8,
       std::string("NVIDIA H100 datasheet; ") + kStas + " (bridge pairs only: PCIe assumed)"
           + std::string("; memory: 81,559 MiB as H100 SXM (unverified for PCIe)")});
  add({"h100-nvl", {}, "H100 NVL 94 GB HBM3",
       94.0, 3900, 418, 835, 835, 1671, 63, 600, 63, 8,
       "NVIDIA H100 NVL datasheet (unverified, approximate peaks)" + std::string("; memory: nominal 94 GB read as GiB (device figure unverified)")});
  add({"h200-sxm", {"h200"}, "H200 SXM 141 GB HBM3e",
       FromBytes(150109880320.0), 4800, 494.5, 989, 989, 1979, 450, 900, 63, 8,
       std::string("NVIDIA H200 datasheet; ") + kStas
           + std::string("; memory: total_memory 150,109,880,320 B (PyTorch on an H200: gpu_lab_h200/truth.json)")});
  add({"gh200", {"gh200-96gb"}, "GH200 96 GB HBM3",
       96.0, 4000, 494.5, 989, 989, 1979, 450, 0, 63, 4,
       std::string("NVIDIA GH200 datasheet; ") + kStas
           + std::string("; memory: nominal 96 GB read as GiB (device figure unverified)")});
  add({"b200", {"b200-sxm"}, "B200 180 GB HBM3e",
       180.0, 8000, 1125, 2250, 2250, 4500, 900, 1800, 63, 8,
       std::string("NVIDIA B200 datasheet; ") + kStas
           + std::string("; memory: nominal 180 GB read as GiB (device figure unverified)")});
  add({"gb200", {}, "GB200 (per GPU) 186 GB HBM3e",
       186.0, 8000, 1250, 2500, 2500, 5000, 900, 1800, 63, 4,
       std::string("NVIDIA GB200 datasheet; ") + kStas + " (NVLink unverified)"
           + std::string("; memory: nominal 186 GB read as GiB (device figure unverified)")});
  add({"l4", {}, "L4 24 GB GDDR6",
       FromMib(23034), 300, 60, 121, 121, 242.5, 31, 0, 31, 8,
       "NVIDIA L4 datasheet (unverified)" + std::string(kSmi)});
  add({"l40s", {}, "L40S 48 GB GDDR6",
       FromMib(46068), 864, 183, 362, 362, 733, 31, 0, 31, 8,
       std::string("NVIDIA L40S datasheet; ") + kStas + std::string(kSmi)});
  add({"a10", {"a10g"}, "A10 24 GB GDDR6",
       FromMib(23028), 600, 62.5, 125, 125, 0, 31, 0, 31, 8,
       "NVIDIA A10 datasheet (unverified)" + std::string(kSmi)});
  add({"t4", {}, "T4 16 GB GDDR6 (no bf16, no TF32)",
       FromMib(15360), 320, 8.1, 0, 65, 0, 16, 0, 16, 8,
       "NVIDIA T4 datasheet (third-party checked)" + std::string(kSmi)});
  add({"v100-sxm2", {"v100", "v100-32gb", "v100-sxm"}, "V100 SXM2 32 GB HBM2 (no bf16, no TF32)",
       FromBytes(34089730048.0), 900, 15.7, 0, 125, 0, 150, 300, 16, 8,
       "NVIDIA V100 datasheet (unverified)" + std::string("; memory: totalGlobalMem 34,089,730,048 B for 32 GB (16 GB parts: " "16,945,512,448 B; use --gpu-spec)")});
  add({"rtx-4090", {"4090", "rtx4090"}, "GeForce RTX 4090 24 GB GDDR6X",
       24.0, 1008, 82.6, 165.2, 165.2, 330.3, 31, 0, 31, 8,
       std::string(kStas) + " (FP32-accumulate tensor rates; third-party checked)"
           + std::string("; memory: nominal 24 GB read as GiB (device figure unverified)")});
  add({"rtx-3090", {"3090", "rtx3090"}, "GeForce RTX 3090 24 GB GDDR6X",
       FromMib(24576), 936, 35.6, 71, 71, 0, 31, 112.5, 31, 8,
       "NVIDIA GA102 whitepaper (unverified)" + std::string("; memory: 24,576 MiB (nvidia-smi memory.total)")});
  add({"mi250x", {"mi250x-gcd"}, "MI250X, one GCD (64 GB HBM2e; a card is 2 devices)",
       64.0, 1640, 47.9, 191.5, 191.5, 0, 50, 800, 31, 8,
       std::string("AMD MI250X datasheet; ") + kStas + " (per GCD = half the card)"
           + std::string("; memory: nominal 64 GB per GCD read as GiB (device figure unverified)")});
  add({"mi300x", {}, "MI300X 192 GB HBM3",
       192.0, 5300, 653.7, 1307.4, 1307.4, 2614.9, 64, 896, 63, 8,
       std::string("AMD MI300X datasheet; ") + kStas + " (XGMI peer-to-peer 64 GB/s)"
           + std::string("; memory: nominal 192 GB read as GiB (device figure unverified)")});
  // clang-format on
  return t;
}

std::string Normalise(std::string_view in) {
  std::string s;
  for (char c : in) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    s.push_back(c == '_' || c == ' ' ? '-' : c);
  }
  return s;
}

}  // namespace

const std::vector<GpuSpec>& KnownGpus() {
  static const std::vector<GpuSpec> table = BuildTable();
  return table;
}

Result<GpuSpec> FindGpu(std::string_view name) {
  const std::string key = Normalise(name);
  for (const GpuSpec& g : KnownGpus()) {
    if (g.name == key) return g;
    for (const std::string& a : g.aliases)
      if (a == key) return g;
  }
  std::string known;
  for (const GpuSpec& g : KnownGpus()) known += (known.empty() ? "" : ", ") + g.name;
  return Status::Error(StatusCode::kInvalidInput,
                       "unknown GPU \"" + std::string(name) + "\"; known: " + known +
                           " (hint: describe it with --gpu-spec "
                           "NAME:MEM_GIB:BF16_TFLOPS:HBM_GBPS[:INTRA_NODE_GBPS[:FP8_TFLOPS]])");
}

Result<GpuSpec> ParseGpuSpec(std::string_view text) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : text) {
    if (c == ':') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  parts.push_back(cur);
  const std::string hint =
      " (hint: --gpu-spec NAME:MEM_GIB:BF16_TFLOPS:HBM_GBPS[:INTRA_NODE_GBPS[:FP8_TFLOPS]], "
      "e.g. h800:80:989:3350:200:1979)";
  if (parts.size() < 4 || parts.size() > 6 || parts[0].empty())
    return Status::Error(StatusCode::kUsage, "--gpu-spec \"" + std::string(text) + "\" has " +
                                                 std::to_string(parts.size()) +
                                                 " fields, expected 4 to 6" + hint);
  std::vector<double> v;
  for (size_t i = 1; i < parts.size(); ++i) {
    char* end = nullptr;
    const double x = std::strtod(parts[i].c_str(), &end);
    // Finite and at most 1e9 (GiB, TFLOP/s, GB/s): "inf" or 1e300 would make every plan fit.
    if (parts[i].empty() || *end != '\0' || !(x > 0) || !(x <= 1e9))
      return Status::Error(StatusCode::kUsage, "--gpu-spec field " + std::to_string(i + 1) + " \"" +
                                                   parts[i] +
                                                   "\" is not a positive number up to 1e9" + hint);
    v.push_back(x);
  }
  GpuSpec g;
  // The name is printed and embedded in pages: invalid UTF-8 and control characters are replaced.
  g.name = SanitizeText(parts[0]);
  g.description = "custom GPU from --gpu-spec";
  g.memory_gib = v[0];
  g.tflops_bf16 = g.tflops_fp16 = v[1];
  g.tflops_fp32 = v[1] / 2;  // TF32 is half the bf16 rate on A100/H100-class GPUs
  g.hbm_gbps = v[2];
  g.intra_node_gbps = v.size() > 3 ? v[3] : 31;  // PCIe Gen4 unless told
  g.tflops_fp8 = v.size() > 4 ? v[4] : 0;
  g.pcie_gbps = 31;
  g.source = "--gpu-spec (user supplied)";
  return g;
}

}  // namespace gpuscope::hw
