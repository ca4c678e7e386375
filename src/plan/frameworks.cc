#include "plan/frameworks.h"

#include <algorithm>
#include <array>

namespace gpuscope::plan {

namespace {

bool Mixed(const ParallelConfig& c) { return !hw::FullPrecision(c.precision); }
// The weights' bytes in the compute dtype: bf16/fp16 (and fp8's bf16 masters' working copy) 2.
double ComputeBytes(const ParallelConfig& c) { return Mixed(c) ? 2 : 4; }
StaticTerm OptimizerTerm(const ParallelConfig& c, bool sharded) {
  const char* what = c.optimizer == Optimizer::kAdam ? "optimizer states (adam: fp32 m + v)"
                     : c.optimizer == Optimizer::kAdam8bit
                         ? "optimizer states (adam8bit: 8-bit m + v)"
                         : "optimizer states (sgd: fp32 momentum)";
  return {what, OptimizerStateBytes(c.optimizer), sharded, Part::kState};
}

// Rules every framework but the one named shares: options that belong to one framework.
std::string ForeignOptions(const ParallelConfig& c) {
  if (c.hybrid && c.framework != Framework::kFsdp)
    return "HYBRID_SHARD is an FSDP sharding strategy (--framework fsdp)";
  if (c.bf16_grads && c.framework != Framework::kMegatron)
    return "--grad-reduce-in-bf16 is a Megatron-LM option (--framework megatron)";
  if (c.precision == Precision::kFp8 && c.framework != Framework::kMegatron)
    return "fp8 needs Transformer Engine layers; gpuscope plans fp8 with Megatron-LM "
           "(--fp8-format hybrid), the one framework here whose configuration sets it";
  return "";
}

// The HF stacks (Trainer, Accelerate) checkpoint whole blocks.
std::string HfRecompute(const ParallelConfig& c, std::string_view who) {
  if (c.recompute == Recompute::kSelective)
    return std::string(who) +
           " recomputes whole transformer blocks (gradient_checkpointing / activation "
           "checkpointing); selective recompute of the attention core is Megatron-LM's "
           "--recompute-granularity selective (use --recompute full or none)";
  return "";
}

// ---- Megatron-LM ------------------------------------------------------------------------------
// megatron/training/arguments.py: --bf16 sets accumulate_allreduce_grads_in_fp32 (fp32 main_grad
// buffer) unless --grad-reduce-in-bf16; docs/user-guide/features/dist_optimizer.md: the
// distributed optimizer shards the fp32 master weights and Adam states over data parallel; the
// bf16 weights and the main-gradient buffer stay whole (6 + 12/d B/param for bf16).
std::string MegatronRefuses(const ParallelConfig& c) {
  if (std::string f = ForeignOptions(c); !f.empty()) return f;
  if (ZeroStage(c.sharding) >= 2)
    return "Megatron-LM shards only the optimizer over data parallel (--use-distributed-optimizer: "
           "fp32 master weights and Adam states; its bf16 weights and fp32 main-gradient buffer "
           "stay whole); ZeRO-" +
           std::to_string(ZeroStage(c.sharding)) + " is not a Megatron-LM option";
  if (c.optimizer == Optimizer::kAdam8bit)
    return "Megatron-LM's --optimizer is adam or sgd; 8-bit Adam is not one of them";
  if (c.offload != Offload::kNone)
    return "gpuscope does not model Megatron-LM's CPU offload (--optimizer-cpu-offload); plan "
           "offload with --framework deepspeed or fsdp";
  if (c.bf16_grads && c.precision != Precision::kBf16 && c.precision != Precision::kFp8)
    return "--grad-reduce-in-bf16 applies to --bf16 training";
  return "";
}
std::vector<StaticTerm> MegatronTerms(const ParallelConfig& c) {
  const bool dist = ZeroStage(c.sharding) >= 1;
  std::vector<StaticTerm> t;
  if (!Mixed(c)) {
    t.push_back({"fp32 weights", 4, false, Part::kWeights});
    t.push_back({"fp32 gradients (main_grad buffer)", 4, false, Part::kGrads});
    t.push_back(OptimizerTerm(c, dist));
    return t;
  }
  t.push_back({c.precision == Precision::kFp16 ? "fp16 weights" : "bf16 weights", 2, false,
               Part::kWeights});
  if (c.precision == Precision::kFp16) {
    t.push_back({"fp16 gradients (main_grad buffer)", 2, false, Part::kGrads});
    t.push_back({"fp32 gradient copies for the optimizer", 4, dist, Part::kGrads});
  } else if (c.bf16_grads) {
    t.push_back({"bf16 main gradients (--grad-reduce-in-bf16)", 2, false, Part::kGrads});
  } else {
    t.push_back(
        {"fp32 main gradients (main_grad buffer; --bf16 reduces in fp32)", 4, false, Part::kGrads});
  }
  t.push_back({"fp32 master weights", 4, dist, Part::kState});
  t.push_back(OptimizerTerm(c, dist));
  // Transformer Engine keeps the bf16 weights and adds fp8 copies (planner-reference §2 "FP8").
  if (c.precision == Precision::kFp8)
    t.push_back({"fp8 weight copies (Transformer Engine)", 1, false, Part::kWeights});
  return t;
}
double MegatronReduce(const ParallelConfig& c) {
  if (!Mixed(c)) return 4;
  if (c.precision == Precision::kFp16 || c.bf16_grads) return 2;
  return 4;
}

// ---- DeepSpeed --------------------------------------------------------------------------------
// deepspeed/runtime/zero/stage_1_and_2.py, stage3.py (the estimators: ZeRO-2 2 + 18/d with 18 =
// 2 16-bit grads + 4 fp32 grads + 4 fp32 master + 8 Adam; ZeRO-3 18/d = 2 weights + 16, no 16-bit
// grad partition); stage 1 shards the fp32 grads, master and Adam (4 + 16/d);
// deepspeed/runtime/pipe/engine.py: ZeRO-2/3 refused with pipelines.
std::string DeepSpeedRefuses(const ParallelConfig& c) {
  if (std::string f = ForeignOptions(c); !f.empty()) return f;
  if (c.tp > 1)
    return "DeepSpeed has no tensor parallelism of its own for training (Megatron-DeepSpeed adds "
           "Megatron's); plan tp > 1 with --framework megatron";
  if (c.pp > 1 && ZeroStage(c.sharding) >= 2)
    return "DeepSpeed's pipeline engine asserts \"ZeRO-2 and ZeRO-3 are incompatible with pipeline "
           "parallelism\" (deepspeed/runtime/pipe/engine.py)";
  if (c.vpp > 1) return "DeepSpeed's PipelineModule has no interleaved (virtual) pipeline schedule";
  if (c.offload == Offload::kOptimizer && ZeroStage(c.sharding) == 0)
    return "DeepSpeed's offload_optimizer is a ZeRO option (stage 1, 2 or 3)";
  if (c.offload == Offload::kParams && ZeroStage(c.sharding) != 3)
    return "DeepSpeed's offload_param is a ZeRO-3 option";
  if (c.offload != Offload::kNone && c.optimizer != Optimizer::kAdam)
    return "DeepSpeed's offload_optimizer steps with its CPU optimizers (DeepSpeedCPUAdam, "
           "Adagrad, "
           "Lion); SGD and 8-bit Adam are not offloaded";
  if (std::string r = HfRecompute(c, "DeepSpeed (through the HF Trainer or Accelerate)");
      !r.empty())
    return r;
  return "";
}
std::vector<StaticTerm> DeepSpeedTerms(const ParallelConfig& c) {
  const int z = ZeroStage(c.sharding);
  std::vector<StaticTerm> t;
  if (!Mixed(c)) {
    t.push_back({"fp32 weights", 4, z >= 3, Part::kWeights});
    t.push_back({"fp32 gradients", 4, z >= 2, Part::kGrads});
    t.push_back(OptimizerTerm(c, z >= 1));
    return t;
  }
  t.push_back({c.precision == Precision::kFp16 ? "fp16 weights" : "bf16 weights", 2, z >= 3,
               Part::kWeights});
  // Stage 3 reduces into the fp32 partition: DeepSpeed's estimator counts 18/d there (2 + 16).
  if (z < 3) t.push_back({"16-bit gradients", 2, z >= 2, Part::kGrads});
  t.push_back({"fp32 gradients (upcast for the optimizer step)", 4, z >= 1, Part::kGrads});
  t.push_back({"fp32 master weights", 4, z >= 1, Part::kState});
  t.push_back(OptimizerTerm(c, z >= 1));
  return t;
}
// communication_data_type defaults to the model's dtype.
double DeepSpeedReduce(const ParallelConfig& c) { return Mixed(c) ? 2 : 4; }

// ---- PyTorch FSDP -----------------------------------------------------------------------------
// docs/source/notes/fsdp.rst and planner-reference §2 "FSDP": fp32 sharded parameters (the
// masters), fp32 sharded gradients and optimizer states = 16/d; bf16 compute copies are gathered
// per unit; SHARD_GRAD_OP keeps them from forward to backward; accumulation under no_sync keeps
// unsharded gradients (§4).
std::string FsdpRefuses(const ParallelConfig& c) {
  if (std::string f = ForeignOptions(c); !f.empty()) return f;
  if (c.tp > 1 || c.pp > 1)
    return "FSDP through the HF Trainer or Accelerate is data parallel only; tp × pp needs "
           "--framework megatron (2-D FSDP2 + TP as in torchtitan is not modelled)";
  if (ZeroStage(c.sharding) < 2)
    return "FSDP's sharding strategies are FULL_SHARD (ZeRO-3-like), SHARD_GRAD_OP (ZeRO-2-like) "
           "and "
           "HYBRID_SHARD; NO_SHARD is DDP (--framework ddp) and optimizer-only sharding is not one";
  if (c.hybrid && ZeroStage(c.sharding) != 3)
    return "HYBRID_SHARD is FULL_SHARD within a node (--zero 3 with --hybrid)";
  if (c.offload == Offload::kOptimizer)
    return "FSDP's CPUOffload(offload_params=True) moves parameters, gradients and the optimizer "
           "step to the CPU together; it cannot offload only the optimizer (use --offload params)";
  if (c.offload == Offload::kParams && ZeroStage(c.sharding) != 3)
    return "gpuscope models FSDP's CPU offload with FULL_SHARD (--zero 3)";
  if (std::string r = HfRecompute(c, "FSDP"); !r.empty()) return r;
  return "";
}
std::vector<StaticTerm> FsdpTerms(const ParallelConfig& c) {
  std::vector<StaticTerm> t;
  t.push_back({"fp32 sharded parameters", 4, true, Part::kWeights});
  t.push_back({"fp32 sharded gradients", 4, true, Part::kGrads});
  t.push_back(OptimizerTerm(c, true));
  if (ZeroStage(c.sharding) == 2)
    t.push_back({"unsharded compute-dtype weights kept from forward to backward (SHARD_GRAD_OP)",
                 ComputeBytes(c), false, Part::kWeights});
  if (c.grad_accum > 1)
    t.push_back({"unsharded gradients accumulated under no_sync (gradient accumulation)",
                 ComputeBytes(c), false, Part::kGrads});
  return t;
}
// MixedPrecision(param_dtype, reduce_dtype) both the compute dtype, as Accelerate sets them.
double FsdpReduce(const ParallelConfig& c) { return ComputeBytes(c); }

// ---- PyTorch DDP ------------------------------------------------------------------------------
// torch.nn.parallel.DistributedDataParallel with autocast: fp32 weights and gradients, and the
// reducer's gradient buckets beside them (gradient_as_bucket_view=False, the default).
std::string DdpRefuses(const ParallelConfig& c) {
  if (std::string f = ForeignOptions(c); !f.empty()) return f;
  if (c.tp > 1 || c.pp > 1)
    return "DDP replicates the whole model; tp × pp needs --framework megatron";
  if (ZeroStage(c.sharding) > 0)
    return "DDP shards nothing; ZeRO needs --framework deepspeed, sharding parameters --framework "
           "fsdp";
  if (c.offload != Offload::kNone) return "DDP has no CPU offload";
  if (std::string r = HfRecompute(c, "DDP (through the HF Trainer or Accelerate)"); !r.empty())
    return r;
  return "";
}
// On one GPU the plan is plain single-process PyTorch: no DDP wrapper, so no buckets.
std::vector<StaticTerm> DdpTerms(const ParallelConfig& c) {
  std::vector<StaticTerm> t = {
      {Mixed(c) ? "fp32 weights (autocast computes in the 16-bit dtype)" : "fp32 weights", 4, false,
       Part::kWeights},
      {"fp32 gradients", 4, false, Part::kGrads}};
  if (c.gpus > 1)
    t.push_back({"DDP gradient buckets (gradient_as_bucket_view=False)", 4, false, Part::kGrads});
  t.push_back(OptimizerTerm(c, false));
  return t;
}
double DdpReduce(const ParallelConfig&) { return 4; }

constexpr std::array<FrameworkRules, 4> kRules = {{
    {Framework::kMegatron, "Megatron-LM", MegatronRefuses, MegatronTerms, MegatronReduce},
    {Framework::kDeepSpeed, "DeepSpeed", DeepSpeedRefuses, DeepSpeedTerms, DeepSpeedReduce},
    {Framework::kFsdp, "PyTorch FSDP", FsdpRefuses, FsdpTerms, FsdpReduce},
    {Framework::kDdp, "PyTorch DDP", DdpRefuses, DdpTerms, DdpReduce},
}};

}  // namespace

const FrameworkRules& RulesFor(Framework f) {
  for (const FrameworkRules& r : kRules)
    if (r.framework == f) return r;
  return kRules[0];
}
std::span<const FrameworkRules> AllFrameworks() { return kRules; }

int64_t ShardGroup(const ParallelConfig& c, int64_t gpus_per_node) {
  if (c.hybrid && gpus_per_node > 0) return std::min(c.dp, gpus_per_node);
  return c.dp;
}

std::string ShardingLabel(const ParallelConfig& c) {
  const int z = ZeroStage(c.sharding);
  switch (c.framework) {
    case Framework::kMegatron:
      return z >= 1 ? "dist-opt" : "none";
    case Framework::kFsdp:
      return c.hybrid ? "hybrid_shard"
             : z == 2 ? "shard_grad_op"
             : z == 3 ? "full_shard"
                      : "zero" + std::to_string(z);
    case Framework::kDeepSpeed:
      return "zero" + std::to_string(z);
    case Framework::kDdp:
      return "none";
  }
  return "?";
}

}  // namespace gpuscope::plan
