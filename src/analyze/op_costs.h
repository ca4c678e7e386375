// Every op priced: the GPU time of each ATen op (its kernels, found through launch links and the
// op nesting on its thread), its FLOPs and bytes from the recorded shapes (op_cost_rules.h), and
// where that puts it against the GPU's roofline (hw/gpu_peaks.h). Per step: model FLOPs, MFU and
// HFU. docs/cost-model.md has every definition.
//
// Definitions:
//  * An op's kernels: each GPU activity (kernel, memcpy, memset) whose launch call ran inside the
//    op on its thread. The innermost enclosing cpu_op launched it; the activity is counted for
//    the outermost enclosing op whose cost rule owns its subtree (aten::convolution owns the
//    cuDNN transposes and the bias add under it), else for the nearest enclosing op that has a
//    rule, else for the launching op (then unpriced).
//  * Groups: ops with the same name, Input Dims, Input type and Concrete Inputs (TraceLens groups
//    by the same args). time_ns: their kernels' time summed; flops/bytes: per call.
//  * Math path of a GEMM/conv/attention group: that of its longest kernel (kernel_class.h:
//    fp32 on CUDA cores, TF32, bf16, fp16, fp8); the dtype of its input when the kernel name does
//    not tell. Other ops: fp32 CUDA-core peak for their FLOPs, HBM for their bytes.
//  * Roofline time per call: max(flops / peak, bytes / bandwidth) at the achievable peaks;
//    efficiency = roofline time × count / time_ns. An op faster than its roofline at the
//    *datasheet* peaks is "above the roofline": our FLOPs, bytes or path are wrong for it (its
//    bytes less twice the last-level cache, which can spare HBM, and one timestamp tick per
//    kernel allowed).
//  * Per step (the steady-state steps of steps.h): model FLOPs are GEMM/conv/attention FLOPs of
//    ops that started in those steps, without recomputation (a forward op under the autograd
//    engine: activation checkpointing) and with attention backward at 2× its forward; hardware
//    FLOPs include both. MFU = model FLOPs per step / (mean step time × the GPU's dense bf16
//    datasheet peak, fp16's without bf16); HFU the same with hardware FLOPs. Embeddings and
//    elementwise ops count 0.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyze/kernel_class.h"
#include "analyze/op_cost_rules.h"
#include "analyze/steps.h"
#include "gpuscope/model.h"
#include "hw/gpu_peaks.h"

namespace gpuscope::analyze {

enum class Unpriced : uint8_t {
  kPriced,
  kNoRule,
  kShapesNotRecorded,
  kShapesNotUnderstood,
  kListsNotParameters
};
const char* UnpricedName(Unpriced u);  // "", "no_rule", "shapes_not_recorded", …

struct OpCostGroup {
  StringId name = kEmptyString;
  StringId input_dims = kEmptyString;
  StringId input_types = kEmptyString;
  StringId concrete_inputs = kEmptyString;
  OpFamily family = OpFamily::kCount;  // kCount: no rule
  Unpriced unpriced = Unpriced::kNoRule;
  bool math = false;  // GEMM / conv / attention
  hw::MathPath path = hw::MathPath::kFp32Cuda;
  uint64_t count = 0;                  // calls that ran kernels
  uint64_t kernels = 0;                // GPU activities counted for them
  int64_t time_ns = 0;                 // their GPU time, summed
  StringId top_kernel = kEmptyString;  // the longest kernel of the group
  // Per call (0 when unpriced).
  double flops = 0;
  double model_flops = 0;
  double bytes = 0;
  double roofline_ns = 0;  // at achievable peaks
  double physical_ns = 0;  // at datasheet peaks
  bool compute_bound = false;
  bool above_roofline = false;
  // cuDNN's NCHW↔NHWC transposes among its kernels (nchwToNhwcKernel, nhwcToNchwKernel): what
  // channels_last removes.
  int64_t layout_ns = 0;
  double gemm_m = 0, gemm_n = 0, gemm_k = 0;  // GEMMs: the product's dimensions

  double Efficiency() const {
    return time_ns > 0 ? roofline_ns * static_cast<double>(count) / static_cast<double>(time_ns)
                       : 0;
  }
  double AchievedTflops() const {
    return time_ns > 0 ? flops * static_cast<double>(count) / static_cast<double>(time_ns) / 1e3
                       : 0;
  }
  double AchievedGbps() const {
    return time_ns > 0 ? bytes * static_cast<double>(count) / static_cast<double>(time_ns) : 0;
  }
  double Intensity() const { return bytes > 0 ? flops / bytes : 0; }
};

// A chain of memory-bound elementwise ops that run back to back on one thread (no other op with
// kernels between them) over tensors of one size: what one fused kernel (torch.compile) would
// do in one pass. Chains with the same op sequence are summed.
struct FusionChain {
  std::string ops;       // "aten::mul → aten::pow → …"
  uint64_t chains = 0;   // how many times it ran
  uint64_t kernels = 0;  // GPU activities in one run of it
  int64_t time_ns = 0;   // their GPU time, summed over its runs
  double fused_ns = 0;   // the same runs as one kernel each: the chain's largest op's bytes
                         // at the achievable HBM bandwidth, summed
};

// One kernel name: its GPU time and the FLOPs and bytes of the ops it ran for, each op's split
// over its kernels by their share of the op's GPU time (a GEMM op's one kernel gets it all; a
// convolution's layout transposes get a share by time: read their FLOP/s as the op's, not theirs).
struct KernelCost {
  StringId name = kEmptyString;
  uint64_t count = 0;
  int64_t time_ns = 0;
  double flops = 0;  // summed over its calls
  double bytes = 0;
  bool math = false;  // the name names a math path (kernel_class.h)
  hw::MathPath path = hw::MathPath::kFp32Cuda;
  double AchievedTflops() const {
    return time_ns > 0 ? flops / static_cast<double>(time_ns) / 1e3 : 0;
  }
  double AchievedGbps() const { return time_ns > 0 ? bytes / static_cast<double>(time_ns) : 0; }
};

struct OpCostOptions {
  // A gpu_table name to price against instead of the trace's device (--gpu); empty: the trace's.
  std::string gpu;
};

struct OpCosts {
  bool shapes = false;                // the trace recorded shapes (else nothing below is set)
  std::optional<hw::GpuPeaks> peaks;  // nullopt: the device is not in the table (costs without
                                      // roofline)
  std::string device;                 // the trace's device name
  std::vector<OpCostGroup> groups;    // by time_ns, descending
  // GPU time of linked activities: counted for an op, priced or not, and without an op.
  int64_t op_ns = 0;
  int64_t priced_ns = 0;
  int64_t unattributed_ns = 0;                        // linked to a launch that no cpu_op encloses
  std::array<int64_t, hw::kMathPathCount> math_ns{};  // GEMM/conv/attention time per path
  // GPU time of ops that are GEMM/conv/attention (by their rule, or their longest kernel's name)
  // but have no FLOP count: MFU leaves them out (a lower bound), or is n/a when they are the
  // larger part.
  int64_t unpriced_math_ns = 0;
  uint64_t above_roofline_groups = 0;
  int64_t layout_ns = 0;            // Σ OpCostGroup::layout_ns
  std::vector<KernelCost> kernels;  // kernels counted for priced ops, by time descending
  std::vector<FusionChain> fusion;  // by time − fused time, descending (chains of ≥ 3 ops)
  double param_elements = 0;        // from AccumulateGrad (optimizer pricing), 0 unknown
  int param_element_bytes = 4;      // their mean element size
  // Per steady-state step (0 when the trace has no steps).
  size_t steps = 0;
  int64_t step_ns = 0;
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  double recomputed_flops_per_step = 0;
  // fp32 tensor inputs of forward GEMM/conv ops on fp32 paths (CUDA cores, TF32) per step: what
  // bf16 autocast would cast (the precision finding's cost of the fix).
  double fp32_forward_math_input_bytes_per_step = 0;
  double mfu = 0;
  double hfu = 0;
  // The dense datasheet peak MFU divides by: bf16's, or fp16's on a GPU without bf16 (V100);
  // 0: neither is known (MFU n/a).
  double mfu_peak_tflops = 0;
  hw::MathPath mfu_peak_path = hw::MathPath::kBf16;
  // Per Trace::gpu row (empty without shapes): the index in `groups` of the op it was counted
  // for (-1: none), and, when some fusion chain exists, the fused ÷ unfused time of the chain
  // run it belongs to (1: in none). The what-ifs rescale activities by these.
  std::vector<int32_t> activity_group;
  std::vector<float> activity_fused_scale;
};

// cuDNN's NCHW↔NHWC transposes (nchwToNhwcKernel, nhwcToNchwKernel): what channels_last removes.
bool IsLayoutTransposeKernel(std::string_view name);
// A GEMM/conv/attention group's GPU time under bf16 autocast, ns: on an fp32 path (CUDA cores,
// TF32, 3xTF32), a compute-bound op keeps its efficiency at the bf16 peak (time × peak ratio,
// achievable peaks; its layout transposes move half the bytes), a memory-bound one moves half
// the bytes. Any other group: unchanged. Autocast's casts are not included.
double Bf16TimeNs(const OpCostGroup& g, const hw::GpuPeaks& peaks);
// The same with TF32 allowed: only compute-bound GEMM/conv on fp32 CUDA cores change.
double Tf32TimeNs(const OpCostGroup& g, const hw::GpuPeaks& peaks);

OpCosts AnalyzeOpCosts(const Trace& t, const KernelClasses& classes, const StepsResult& steps,
                       const OpCostOptions& options = {});

// The math path a kernel's precision names; nullopt for kernels that name none.
std::optional<hw::MathPath> PathOfPrecision(MathPrecision p);

}  // namespace gpuscope::analyze
