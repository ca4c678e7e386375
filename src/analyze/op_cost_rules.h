// The per-op cost model: FLOPs and bytes of one call of an ATen op, from the shapes the profiler
// recorded (record_shapes=True: "Input Dims", "Input type", "Concrete Inputs"). A table of small
// functions, one per op family, each with its formula and source (docs/cost-model.md lists them).
//
// Conventions:
//  * FLOPs: a multiply-add is 2 FLOPs; bias adds count 1 per output element (as TraceLens).
//  * bytes: compulsory traffic: each input tensor read once and each output written once, at the
//    element size of its dtype. Real kernels move at least this much, so bytes / bandwidth is a
//    lower bound of the op's time (the memory roof).
//  * attention: 2·B·Hq·Sq·Sk·(D + Dv) forward; causal counts half (the work done, as
//    FlashAttention's benchmarks count it); backward executes 2.5× the forward (it recomputes
//    QKᵀ: FlashAttention-2 §3) of which 2× is model work (MFU counts 2×, HFU 2.5×).
//  * An op with no row, or whose shapes its row cannot read, is unpriced: never guessed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::analyze {

// One recorded op's arguments, parsed from the profiler's JSON text.
struct OpArg {
  std::vector<int64_t> shape;              // a tensor's dims ([] for a scalar or an absent arg)
  std::vector<std::vector<int64_t>> list;  // a TensorList's tensors, when recorded
  bool is_list = false;                    // dims were a list of lists
  std::string_view type;                   // "float", "c10::BFloat16", "Scalar", "TensorList", …
  std::string_view concrete;               // "Concrete Inputs" text: "[1, 1]", "True", "0.125"
};
struct OpArgs {
  std::vector<OpArg> args;
  size_t size() const { return args.size(); }
};

// Parses the three recorded texts (types and concrete may be empty). False when `dims` is not a
// list of int lists (or lists of them), nested at most three deep; `out` is then unusable.
bool ParseOpArgs(std::string_view dims, std::string_view types, std::string_view concrete,
                 OpArgs* out);

// Bytes per element of a profiler "Input type" ("float" 4, "c10::BFloat16" 2, "long int" 8, …);
// 0 when unknown or not a tensor type.
int ElementBytes(std::string_view type);

enum class OpFamily : uint8_t {
  kGemm,
  kConv,
  kAttention,
  kNorm,
  kSoftmax,
  kElementwise,
  kReduction,
  kEmbedding,
  kLoss,
  kOptimizer,
  kCount
};
const char* OpFamilyName(OpFamily f);  // "gemm", "conv", …
// GEMM, convolution, attention: the ops MFU counts and whose kernels run on a math path.
inline bool IsMathFamily(OpFamily f) {
  return f == OpFamily::kGemm || f == OpFamily::kConv || f == OpFamily::kAttention;
}

struct OpCost {
  double flops = 0;        // executed per call
  double model_flops = 0;  // what MFU counts (attention backward without its recompute)
  double bytes = 0;        // compulsory per call
  // The dtype the math reads: 4 fp32, 2 bf16/fp16, 1 fp8 (0 for non-math ops); with
  // `half_type` which of bf16 / fp16 a 2 means.
  int math_bytes = 0;
  bool fp16 = false;
  // GEMMs: the product's dimensions (C[m,n] = A[m,k]·B[k,n], per batch); 0 for other ops.
  double m = 0, n = 0, k = 0;
};

// What a cost function may need beyond the op's own args.
struct CostContext {
  // Parameters of the model (AccumulateGrad inputs in one step), for optimizer TensorLists whose
  // sizes the profiler does not record; 0 when unknown.
  double param_elements = 0;
  int param_element_bytes = 4;
};

using CostFn = std::optional<OpCost> (*)(std::string_view name, const OpArgs& args,
                                         const CostContext& context);

struct CostRule {
  std::string_view family_id;  // unique id
  OpFamily family;
  std::string_view ops;  // '|'-separated op names ("aten::mm|aten::mm.out")
  CostFn fn;
  // The op owns every kernel launched under it (convolution's cuDNN transposes and bias add,
  // attention's inner ops): its kernels are not priced again by its children.
  bool owns_subtree;
  std::string_view formula;  // as docs/cost-model.md prints it
  std::string_view source;
};

std::span<const CostRule> CostRules();

// The rule for an op name (exact match on one of a row's names, or a row whose ops end in '*' as
// a prefix), nullptr when none.
const CostRule* FindCostRule(std::string_view op_name);

}  // namespace gpuscope::analyze
