// The planner: memory per GPU term by term, step time, and the search over parallel layouts for
// transformer training. Pure functions (ModelConfig, GpuSpec, options) → PlanReport; renderers in
// plan/render.h. Formulas: planner-reference.md (section cited beside each); docs/planner.md.
//
// Units: bytes and parameters are doubles (exact below 2^53, i.e. for any real model); FLOPs are
// doubles; times are seconds. GiB = 2^30 B.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/enum_names.h"
#include "gpuscope/status.h"
#include "hw/gpu_table.h"
#include "plan/exact.h"
#include "plan/model_config.h"

namespace gpuscope::plan {

using hw::Precision;

enum class Optimizer { kAdam, kAdam8bit, kSgd };
inline constexpr EnumNames<Optimizer, 3> kOptimizerNames({Optimizer::kAdam, "adam"},
                                                         {Optimizer::kAdam8bit, "adam8bit"},
                                                         {Optimizer::kSgd, "sgd"});
// What is sharded over data parallel, as ZeRO stages: 1 the optimizer states and master weights,
// 2 also the gradients, 3 also the weights. Each framework spells it its own way (Megatron's
// distributed optimizer is stage 1; FSDP's SHARD_GRAD_OP stage 2 and FULL_SHARD stage 3): see
// plan/frameworks.h, which also says which stages a framework has.
enum class Sharding { kNone, kZero1, kZero2, kZero3 };
inline constexpr EnumNames<Sharding, 4> kShardingNames({Sharding::kNone, "zero0"},
                                                       {Sharding::kZero1, "zero1"},
                                                       {Sharding::kZero2, "zero2"},
                                                       {Sharding::kZero3, "zero3"});
// The training framework whose memory rules and configuration files the plan follows.
enum class Framework { kMegatron, kDeepSpeed, kFsdp, kDdp };
inline constexpr EnumNames<Framework, 4> kFrameworkNames({Framework::kMegatron, "megatron"},
                                                         {Framework::kDeepSpeed, "deepspeed"},
                                                         {Framework::kFsdp, "fsdp"},
                                                         {Framework::kDdp, "ddp"});
enum class Recompute { kNone, kSelective, kFull };
inline constexpr EnumNames<Recompute, 3> kRecomputeNames({Recompute::kNone, "none"},
                                                         {Recompute::kSelective, "selective"},
                                                         {Recompute::kFull, "full"});
enum class Offload { kNone, kOptimizer, kParams };
inline constexpr EnumNames<Offload, 3> kOffloadNames({Offload::kNone, "none"},
                                                     {Offload::kOptimizer, "optimizer"},
                                                     {Offload::kParams, "params"});
// Whose modules run the model (what the activations are): Megatron's fused kernels, Transformer
// Engine's (the same formulas), or Hugging Face's eager modules.
enum class Impl { kMegatron, kTe, kHf };
inline constexpr EnumNames<Impl, 3> kImplNames({Impl::kMegatron, "megatron"}, {Impl::kTe, "te"},
                                               {Impl::kHf, "hf"});

inline std::string_view ImplName(Impl i) { return NameOf(kImplNames, i); }
inline std::string_view OptimizerName(Optimizer o) { return NameOf(kOptimizerNames, o); }
inline std::string_view ShardingName(Sharding s) { return NameOf(kShardingNames, s); }
inline std::string_view RecomputeName(Recompute r) { return NameOf(kRecomputeNames, r); }
inline std::string_view OffloadName(Offload o) { return NameOf(kOffloadNames, o); }
inline std::string_view FrameworkName(Framework f) { return NameOf(kFrameworkNames, f); }
inline int ZeroStage(Sharding s) { return static_cast<int>(s); }

// One parallel layout and batch split. GBS = mbs × grad_accum × dp (§9).
struct ParallelConfig {
  int64_t gpus = 1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t vpp = 1;  // interleaved chunks per device, v
  int64_t dp = 1;   // = gpus / (tp·pp)
  bool sp = false;  // sequence parallel (needs tp > 1 to matter)
  int64_t mbs = 1;
  int64_t grad_accum = 1;  // m, micro-batches per step per pipeline
  Sharding sharding = Sharding::kNone;
  Recompute recompute = Recompute::kNone;
  Precision precision = Precision::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
  Offload offload = Offload::kNone;
  Framework framework = Framework::kMegatron;
  // FSDP HYBRID_SHARD: shard within a node (d = min(dp, GPUs per node)), replicate across nodes.
  bool hybrid = false;
  // Megatron --grad-reduce-in-bf16: bf16 main gradients instead of the fp32 default under --bf16.
  bool bf16_grads = false;
};

// "megatron tp=4 pp=2 dp=8 mbs=1 ga=4 zero1 recompute=selective bf16 adam": how every view and
// message of the plan spells a configuration.
std::string Degrees(const ParallelConfig& c);

// Named constants of the model; each is printed with the plan and can be overridden.
struct PlanAssumptions {
  // Share of the dense peak reached by the model's matmul FLOPs at large micro-batches. 0.45 sits
  // below the 52 % of peak Narayanan et al. report for Megatron on A100 (arXiv 2104.04473), and
  // below the MAMF GEMM ceilings of §10 (H100 80 %, A100 87 %). Fitted by --from-trace.
  double efficiency = 0.45;
  // Small micro-batches under-fill the GPU: η_eff = η · T/(T + T½) with T = mbs·s tokens per
  // micro-batch (derived; 0.94·η at 4,096 tokens).
  double efficiency_half_tokens = 256;
  double context_gib = 1.0;  // CUDA context + NCCL + cuBLAS workspaces per GPU (§4: 0.3–2 GiB)
  double headroom = 0.10;    // allocator fragmentation: budget = capacity × (1 − headroom) (§4)
  double overhead_bytes = 0;  // extra memory measured by --from-trace (when no scale fits), bytes
  // Fitted by --from-trace, so that a run measured at one batch predicts another: the measured
  // ÷ formula activation bytes (activations ∝ tokens), and the GPU time per token outside
  // GEMM/conv/attention (elementwise, norms, softmax, loss: ∝ tokens), s.
  double activation_scale = 1.0;
  double other_s_per_token = 0;
  bool flash_attention = true;   // no s² tensors stored (§3)
  bool dropout = true;           // dropout masks counted (Megatron convention, §3)
  double comm_efficiency = 0.8;  // achieved busBW / link bandwidth (derived; Calculon uses 0.65)
  double dp_overlap = 0.8;       // share of DP/ZeRO traffic hidden behind backward (§7: bucketed)
  double inter_node_gbps = 50;   // per-GPU network bandwidth, GB/s (400 Gb/s NIC per GPU)
  int64_t gpus_per_node = 0;     // 0 = the GPU table's value
  double cpu_adam_params_per_s = 1e9;  // CPU Adam update rate per process with offload (assumed)
  int vocab_divisor = 128;  // Megatron pads V to a multiple of divisor·t when t > 1 (§0)
  // Exact mode (--exact): the step measured on fake tensors. Configurations of its precision and
  // recompute take their activation memory and step time from it (scaled to their tokens per
  // micro-batch); the others, and all static memory and communication, stay formulas.
  std::shared_ptr<const MeasuredStep> measured;
  OpEfficiency op_efficiency;  // how measured ops are priced
  // Without a measurement, Hugging Face's modules are priced op by op from formulas
  // (plan/hf_ops.h) instead of η × the dense peak; calibration (--from-trace) turns this off, as
  // it fits η and the time per token of the η formula.
  bool hf_ops_priced = true;
  std::string exact_note;  // why exact mode did not run when it would have (printed)
  // --impl; unset: Megatron's kernels under --framework megatron, Hugging Face's modules under
  // DeepSpeed, FSDP and DDP (the HF Trainer and Accelerate run the model's own code).
  std::optional<Impl> impl;
};

struct ParamCounts {
  double attention_per_layer = 0;   // 2h·q + 2h·kv (§1)
  double mlp_per_layer = 0;         // dense 2hfγ, or E experts × 2hfγ + router h·E
  double mlp_active_per_layer = 0;  // top-k experts instead of E
  double norms_per_layer = 0;       // 2h·n
  double biases_per_layer = 0;
  double final_norm = 0;    // n·h
  double embedding = 0;     // h·V (input)
  double output_layer = 0;  // h·V when untied, else 0
  double positions = 0;     // learned position embedding rows × h
  double total = 0;
  double active = 0;  // per token (MoE: top-k experts)
};

// §0: V_pad = ceil(V / (divisor·t)) · divisor·t.
int64_t PadVocab(int64_t vocab, int64_t tp, int64_t divisor);
ParamCounts CountParameters(const ModelConfig& m, int64_t vocab);

// GPT closed form (§1): 12Lh²(1 + 13/(12h) + (V+s)/(12Lh)).
double GptClosedFormParams(int64_t layers, int64_t hidden, int64_t vocab, int64_t seq);

// FLOPs per iteration of B sequences of length s (§6).
double FlopsKorthikantiModel(double B, double L, double s, double h, double V);      // eq. 7
double FlopsKorthikantiSelective(double B, double L, double s, double h, double V);  // eq. 8
double FlopsNarayananFull(double B, double L, double s, double h, double V);         // eq. 3
double FlopsMegatron(const ModelConfig& m, double tokens, double sum_seq_sq, int64_t vocab_pad);
double FlopsPalm(const ModelConfig& m, double params, double tokens, double seq);

// Activation bytes of one transformer layer on one GPU (§3 "general layer"). With flash off,
// dropout on, g = a, f = 4h and a plain MLP it is Korthikanti's Table 2 row.
double ActivationBytesPerLayer(const ModelConfig& m, double s, double b, int64_t tp, bool sp,
                               Recompute r, bool flash, bool dropout);
// Activation bytes of one transformer layer of Hugging Face's eager modules (docs/planner.md
// "Implementations": each tensor autograd keeps, op by op, as exact mode measures them): fp32
// residual stream, norms that keep their fp32 input (RMSNorm also its normalised value), one
// autocast copy per projection input, GELU-tanh written out (gelu_new) keeping four fp32 tensors,
// GPT-2's K/V cache copies with use_cache, 1-byte dropout masks.
// `autocast`: 16-bit compute over fp32 weights and an fp32 residual (plain PyTorch, DDP); else the
// weights are in the precision's dtype (DeepSpeed, FSDP mixed precision) or fp32.
double HfActivationBytesPerLayer(const ModelConfig& m, double s, double b, Precision p,
                                 bool autocast, Recompute r);
// Outside the layers at the peak (HF): embedding-dropout mask, final norm, LM-head input, and the
// loss's fp32 tensors alive while its backward runs (16-bit logits + fp32 log-softmax + its
// gradient = 10 B per logit under autocast; fp32 12 B).
double HfOutsideLayersBytes(const ModelConfig& m, double s, double b, Precision p, bool autocast);

// Layers' worth of activations on the first pipeline stage (§3 "Pipeline"): L for any p with
// 1F1B and m ≥ p; × min(1, m/p) when m < p; × (1 + (p−1)/(p·v)) interleaved.
double LayersInFlight(int64_t layers, int64_t pp, int64_t vpp, int64_t micro_batches);

// §2 static memory of `params` parameters with ZeRO sharding over d: stage 1 shards the optimizer
// states and master weights, stage 2 also the gradients, stage 3 (and FSDP) also the weights.
// Bytes/param: weights 2 (fp32: 4); grads 2 (fp32 or fp32_grads: 4); master 4 (mixed only);
// optimizer Adam 8, 8-bit Adam 2, SGD momentum 4.
// Optimizer state per parameter (§2): Adam m + v in fp32 8; 8-bit Adam 1 + 1; SGD momentum fp32 4.
double OptimizerStateBytes(Optimizer o);
struct StaticBytes {
  double weights = 0, grads = 0, master = 0, optimizer = 0;
  double Total() const { return weights + grads + master + optimizer; }
};
StaticBytes StaticMemory(double params, Precision precision, Optimizer optimizer, Sharding sharding,
                         int64_t dp, bool fp32_grads);

enum class TermKind { kStatic, kActivation, kTransient, kOverhead, kCpu };
inline constexpr EnumNames<TermKind, 5> kTermKindNames({TermKind::kStatic, "static"},
                                                       {TermKind::kActivation, "activation"},
                                                       {TermKind::kTransient, "transient"},
                                                       {TermKind::kOverhead, "overhead"},
                                                       {TermKind::kCpu, "cpu"});
inline std::string_view TermKindName(TermKind k) { return NameOf(kTermKindNames, k); }

struct MemoryTerm {
  std::string name;
  std::string formula;  // symbols with the numbers filled in
  double bytes = 0;
  TermKind kind = TermKind::kStatic;
  bool counted = true;  // in the peak (transients: only the largest; CPU terms never)
};

struct MemoryBreakdown {
  double params_on_rank = 0;  // P_rank: first pipeline stage, one TP shard
  std::vector<MemoryTerm> terms;
  bool measured = false;    // activations from exact mode (the step measured on fake tensors)
  double static_bytes = 0;  // weights + grads + master + optimizer states on the GPU
  double activation_bytes = 0;
  double peak_bytes = 0;  // Σ counted terms: what the device needs (context included)
  // The prediction of torch.cuda.max_memory_allocated(): the peak without the CUDA context and
  // workspaces (TermKind::kOverhead), which the caching allocator does not count.
  double peak_allocated_bytes = 0;
  double cpu_bytes = 0;  // offloaded state in host memory
  double capacity_bytes = 0;
  double budget_bytes = 0;  // capacity × (1 − headroom)
  bool fits = false;
};

struct TimeTerm {
  std::string name;
  std::string formula;
  double seconds = 0;
};

struct StepTime {
  double flops_model = 0;     // per step, all GPUs (Megatron convention, causal)
  double flops_hardware = 0;  // + recompute
  double peak_flops = 0;      // per GPU, dense, for the precision
  double efficiency = 0;      // η_eff used
  std::vector<TimeTerm> terms;
  double step_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double hfu = 0;
  double bubble_fraction = 0;  // (p−1)/(v·m), relative to ideal
  bool measured = false;       // compute priced from exact mode's ops
};

struct Evaluation {
  ParallelConfig config;
  MemoryBreakdown memory;
  StepTime time;
};

struct PlanRequest {
  ModelConfig model;
  hw::GpuSpec gpu;
  int64_t gpus = 0;
  int64_t global_batch = 0;  // sequences per step
  int64_t seq_len = 0;
  PlanAssumptions assumptions;
  // Fixed choices; unset = searched.
  std::optional<Precision> precision;
  std::optional<Optimizer> optimizer;  // default Adam, never searched
  std::optional<Sharding> sharding;
  std::optional<Framework> framework;  // unset = every framework that supports the layout
  bool hybrid = false;                 // FSDP HYBRID_SHARD (needs --framework fsdp)
  bool bf16_grads = false;             // Megatron --grad-reduce-in-bf16
  std::optional<int64_t> tp, pp, vpp, mbs;
  std::optional<bool> sp;
  std::optional<Recompute> recompute;
  Offload offload = Offload::kNone;  // never searched
  int top = 5;
  bool suggest = true;  // when nothing fits, search variants that would (off inside them)

  // Unsets the layout (TP, PP, VPP, micro-batch, ZeRO stage, recompute) so that the search
  // chooses it afresh for the same job; precision, framework and sequence parallelism stay.
  void SearchLayout() {
    tp.reset();
    pp.reset();
    vpp.reset();
    mbs.reset();
    sharding.reset();
    recompute.reset();
  }
};

struct Rejection {
  ParallelConfig config;  // the parts known when rejected
  std::string reason;     // "OOM by 3.2 GiB on stage 0 (peak …, budget …)"
  double over_bytes = 0;  // > 0 for out-of-memory rejections
};

struct PlanReport {
  PlanRequest request;
  ParamCounts params;
  int64_t vocab_padded_tp1 = 0;
  std::vector<Evaluation> feasible;  // best first (tokens/s, then lower peak)
  size_t evaluated = 0;
  size_t not_supported = 0;              // candidates no framework searched can run (skipped)
  std::vector<Rejection> rejected;       // every rejected candidate (reason per candidate)
  bool exact = false;                    // every degree given → one configuration evaluated
  std::vector<std::string> assumptions;  // printed with the plan
  std::vector<std::string> suggestions;  // when nothing fits: what would
  std::optional<Evaluation> closest;     // when nothing fits: the candidate closest to fitting
};

// Memory and time of one configuration (no feasibility checks beyond memory).
Evaluation Evaluate(const ModelConfig& m, const hw::GpuSpec& gpu, const ParallelConfig& c,
                    int64_t seq_len, const PlanAssumptions& a);

// Checks request-level nonsense (zero GPUs, unsupported precision…) → kUsage/kInvalidInput.
Status ValidateRequest(const PlanRequest& r);

// Upper bound on --gpus (2^20 = 1,048,576): above it the request is a usage error. Keeps the search
// and the "more GPUs" suggestions (up to 64×) fast and every product of degrees exact in int64.
inline constexpr int64_t kMaxGpus = int64_t{1} << 20;
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 24;
inline constexpr int64_t kMaxGlobalBatch = int64_t{1} << 24;

// Enumerates, evaluates and ranks (§9). Errors only for invalid requests; "nothing fits" is a
// report with no feasible configuration and suggestions.
Result<PlanReport> Plan(const PlanRequest& r);

}  // namespace gpuscope::plan
