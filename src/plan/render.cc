#include "plan/render.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "plan/frameworks.h"
#include "render/json_writer.h"

namespace gpuscope::plan {

namespace {

std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

}  // namespace

std::string ModelLine(const ModelConfig& m) {
  std::string s = Fmt("L=%" PRId64 " h=%" PRId64 " a=%" PRId64 " g=%" PRId64 " d_h=%" PRId64
                      " f=%" PRId64 " %s V=%" PRId64 " %s %s",
                      m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn,
                      m.gated_mlp ? "gated MLP (SwiGLU)" : "plain MLP", m.vocab,
                      m.tied_embeddings ? "tied" : "untied", m.rms_norm ? "RMSNorm" : "LayerNorm");
  if (m.experts > 0) s += Fmt(" MoE E=%" PRId64 " top-%" PRId64, m.experts, m.experts_top_k);
  return s;
}

namespace {

struct Launch {
  int64_t nodes = 1, nproc = 1;
};
Launch LaunchShape(const PlanRequest& r, const ParallelConfig& c) {
  const int64_t per_node = r.assumptions.gpus_per_node > 0 ? r.assumptions.gpus_per_node
                                                           : r.gpu.gpus_per_node;
  Launch l;
  l.nproc = std::max<int64_t>(1, std::min(c.gpus, per_node));
  l.nodes = (c.gpus + l.nproc - 1) / l.nproc;
  return l;
}
std::string Torchrun(const PlanRequest& r, const ParallelConfig& c) {
  const Launch l = LaunchShape(r, c);
  std::string cmd = Fmt("torchrun --nnodes=%" PRId64 " --nproc_per_node=%" PRId64, l.nodes, l.nproc);
  if (l.nodes > 1) cmd += " --rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500";
  return cmd;
}

// "the plan is for PyTorch FSDP, not DeepSpeed": a framework's own file for another's plan.
std::string OtherFramework(const ParallelConfig& c, std::string_view mine) {
  return "the plan is for " + std::string(RulesFor(c.framework).title) + ", not " + std::string(mine);
}

// ---- Megatron-LM arguments (megatron/training/arguments.py) ----
ConfigSnippet MegatronArgs(const PlanRequest& r, const ParallelConfig& c) {
  ConfigSnippet sn{"megatron_args", "Megatron-LM (pretrain_gpt.py arguments)", "megatron_args.sh", "", ""};
  if (c.framework != Framework::kMegatron) {
    sn.not_expressed = OtherFramework(c, "Megatron-LM");
    return sn;
  }
  std::string cmd = Torchrun(r, c);
  cmd += Fmt(" pretrain_gpt.py --tensor-model-parallel-size %" PRId64
             " --pipeline-model-parallel-size %" PRId64, c.tp, c.pp);
  if (c.vpp > 1)
    cmd += Fmt(" --num-layers-per-virtual-pipeline-stage %" PRId64, r.model.layers / (c.pp * c.vpp));
  if (c.sp) cmd += " --sequence-parallel";
  cmd += Fmt(" --micro-batch-size %" PRId64 " --global-batch-size %" PRId64 " --seq-length %" PRId64,
             c.mbs, r.global_batch, r.seq_len);
  if (c.recompute == Recompute::kSelective) cmd += " --recompute-granularity selective";
  if (c.recompute == Recompute::kFull)
    cmd += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  if (ZeroStage(c.sharding) >= 1) cmd += " --use-distributed-optimizer";
  if (c.precision == Precision::kFp8) cmd += " --bf16 --fp8-format hybrid";
  else if (c.precision == Precision::kBf16) cmd += " --bf16";
  else if (c.precision == Precision::kFp16) cmd += " --fp16";
  if (c.bf16_grads) cmd += " --grad-reduce-in-bf16";
  cmd += c.optimizer == Optimizer::kSgd ? " --optimizer sgd" : " --optimizer adam";
  sn.text = cmd + "\n";
  return sn;
}

// ---- DeepSpeed config (docs: deepspeed.ai/docs/config-json) ----
ConfigSnippet DeepSpeedConfig(const PlanRequest& r, const ParallelConfig& c) {
  ConfigSnippet sn{"deepspeed_json", "DeepSpeed (ds_config.json)", "ds_config.json", "", ""};
  if (c.framework != Framework::kDeepSpeed) {
    sn.not_expressed = OtherFramework(c, "DeepSpeed");
    return sn;
  }
  if (c.pp > 1)
    sn.title = Fmt("DeepSpeed (ds_config.json; the %" PRId64
                   " pipeline stages are PipelineModule(..., num_stages=%" PRId64 ") in the model code)",
                   c.pp, c.pp);
  render::JsonWriter w(2);
  w.BeginObject();
  w.Key("train_batch_size").Int(r.global_batch);
  w.Key("train_micro_batch_size_per_gpu").Int(c.mbs);
  w.Key("gradient_accumulation_steps").Int(c.grad_accum);
  w.Key("bf16").BeginObject().Key("enabled").Bool(c.precision == Precision::kBf16).EndObject();
  w.Key("fp16").BeginObject().Key("enabled").Bool(c.precision == Precision::kFp16);
  if (c.precision == Precision::kFp16) w.Key("loss_scale").Int(0);  // dynamic loss scaling
  w.EndObject();
  w.Key("zero_optimization").BeginObject();
  w.Key("stage").Int(ZeroStage(c.sharding));
  w.Key("overlap_comm").Bool(true);
  if (c.offload != Offload::kNone)
    w.Key("offload_optimizer").BeginObject().Key("device").String("cpu").Key("pin_memory").Bool(true).EndObject();
  if (c.offload == Offload::kParams)
    w.Key("offload_param").BeginObject().Key("device").String("cpu").Key("pin_memory").Bool(true).EndObject();
  w.EndObject();
  // DeepSpeed's own optimizer: its CPU Adam runs the offloaded step; SGD as named. 8-bit Adam
  // comes from the training script (bitsandbytes), so no section.
  if (c.optimizer == Optimizer::kAdam)
    w.Key("optimizer").BeginObject().Key("type").String("AdamW").EndObject();
  else if (c.optimizer == Optimizer::kSgd)
    w.Key("optimizer").BeginObject().Key("type").String("SGD").EndObject();
  w.EndObject();
  sn.text = w.str() + "\n";
  return sn;
}

// ---- Accelerate config (accelerate launch --config_file) ----
std::string YamlBool(bool b) { return b ? "true" : "false"; }
ConfigSnippet AccelerateConfig(const PlanRequest& r, const ParallelConfig& c) {
  ConfigSnippet sn{"accelerate_yaml", "Accelerate (accelerate launch --config_file accelerate.yaml train.py)",
                   "accelerate.yaml", "", ""};
  const Launch l = LaunchShape(r, c);
  const int zero = ZeroStage(c.sharding);
  std::string body;
  switch (c.framework) {
    case Framework::kMegatron:
      if (c.vpp > 1) sn.not_expressed = "Accelerate's megatron_lm_config has no interleaved (virtual) pipeline setting";
      else if (c.precision == Precision::kFp8) sn.not_expressed = "Accelerate's Megatron-LM plugin takes mixed_precision bf16 or fp16, not Transformer Engine fp8";
      else if (c.recompute == Recompute::kFull) sn.not_expressed = "megatron_lm_recompute_activations is selective recompute; full recompute is not an Accelerate setting";
      else if (c.bf16_grads) sn.not_expressed = "Accelerate's Megatron-LM plugin has no --grad-reduce-in-bf16 setting";
      else if (c.optimizer != Optimizer::kAdam) sn.not_expressed = "Accelerate's Megatron-LM plugin builds Megatron's Adam";
      if (!sn.not_expressed.empty()) return sn;
      body = "distributed_type: MEGATRON_LM\nmegatron_lm_config:\n" +
             Fmt("  megatron_lm_tp_degree: %" PRId64 "\n  megatron_lm_pp_degree: %" PRId64
                 "\n  megatron_lm_num_micro_batches: %" PRId64 "\n",
                 c.tp, c.pp, c.grad_accum) +
             "  megatron_lm_sequence_parallelism: " + YamlBool(c.sp) + "\n" +
             "  megatron_lm_recompute_activations: " + YamlBool(c.recompute == Recompute::kSelective) + "\n" +
             "  megatron_lm_use_distributed_optimizer: " + YamlBool(zero >= 1) + "\n";
      break;
    case Framework::kDeepSpeed:
      if (c.pp > 1) {
        sn.not_expressed = "Accelerate's DeepSpeed integration does not run DeepSpeed's pipeline engine (pp > 1)";
        return sn;
      }
      body = "distributed_type: DEEPSPEED\ndeepspeed_config:\n" +
             Fmt("  zero_stage: %d\n  gradient_accumulation_steps: %" PRId64 "\n", zero, c.grad_accum) +
             "  offload_optimizer_device: " + (c.offload != Offload::kNone ? "cpu" : "none") + "\n" +
             "  offload_param_device: " + (c.offload == Offload::kParams ? "cpu" : "none") + "\n" +
             "  zero3_init_flag: " + YamlBool(zero == 3) + "\n";
      break;
    case Framework::kFsdp:
      body = "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 1\n"
             "  fsdp_sharding_strategy: " +
             std::string(c.hybrid ? "HYBRID_SHARD" : zero == 2 ? "SHARD_GRAD_OP" : "FULL_SHARD") + "\n" +
             "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_backward_prefetch: BACKWARD_PRE\n"
             "  fsdp_use_orig_params: true\n"
             "  fsdp_offload_params: " + YamlBool(c.offload == Offload::kParams) + "\n" +
             "  fsdp_activation_checkpointing: " + YamlBool(c.recompute == Recompute::kFull) + "\n";
      break;
    case Framework::kDdp:
      body = c.gpus > 1 ? "distributed_type: MULTI_GPU\n" : "distributed_type: 'NO'\n";
      break;
  }
  std::string y = "compute_environment: LOCAL_MACHINE\n" + body;
  y += "mixed_precision: " +
       std::string(c.precision == Precision::kFp32 ? "'no'" : std::string(hw::PrecisionName(c.precision))) + "\n";
  y += Fmt("num_machines: %" PRId64 "\nnum_processes: %" PRId64 "\nmachine_rank: 0\n", l.nodes, c.gpus);
  // Micro-batch and accumulation live in the training script under Accelerate.
  y += Fmt("# in the training script: per_device_train_batch_size=%" PRId64
           ", gradient_accumulation_steps=%" PRId64 ", gradient_checkpointing=%s\n",
           c.mbs, c.grad_accum, c.recompute == Recompute::kFull ? "True" : "False");
  sn.text = y;
  return sn;
}

// ---- torchrun + Hugging Face Trainer (transformers TrainingArguments) ----
ConfigSnippet TrainerCommand(const PlanRequest& r, const ParallelConfig& c) {
  ConfigSnippet sn{"trainer_command", "torchrun + Hugging Face Trainer (train.py with TrainingArguments)",
                   "torchrun_trainer.sh", "", ""};
  if (c.framework == Framework::kMegatron) {
    sn.not_expressed = c.tp > 1 || c.pp > 1
                           ? Fmt("the HF Trainer has no tensor or pipeline parallelism (tp=%" PRId64
                                 " pp=%" PRId64 "); use the Megatron-LM arguments", c.tp, c.pp)
                           : "the HF Trainer does not run Megatron-LM; use the Megatron-LM arguments";
    return sn;
  }
  if (c.framework == Framework::kDeepSpeed && c.pp > 1) {
    sn.not_expressed = "the HF Trainer does not run DeepSpeed's pipeline engine (pp > 1)";
    return sn;
  }
  std::string cmd = Torchrun(r, c);
  cmd += Fmt(" train.py --per_device_train_batch_size %" PRId64 " --gradient_accumulation_steps %" PRId64,
             c.mbs, c.grad_accum);
  if (c.precision == Precision::kBf16) cmd += " --bf16";
  if (c.precision == Precision::kFp16) cmd += " --fp16";
  if (c.recompute == Recompute::kFull) cmd += " --gradient_checkpointing";
  cmd += c.optimizer == Optimizer::kSgd        ? " --optim sgd"
         : c.optimizer == Optimizer::kAdam8bit ? " --optim adamw_bnb_8bit"
                                               : " --optim adamw_torch";
  if (c.framework == Framework::kDeepSpeed) cmd += " --deepspeed ds_config.json";
  if (c.framework == Framework::kFsdp) {
    const std::string strategy =
        c.hybrid ? "hybrid_shard" : ZeroStage(c.sharding) == 2 ? "shard_grad_op" : "full_shard";
    cmd += " --fsdp \"" + strategy + " auto_wrap" + (c.offload == Offload::kParams ? " offload" : "") + "\"";
  }
  sn.text = cmd + "\n";
  return sn;
}

}  // namespace

std::vector<ConfigSnippet> Snippets(const PlanRequest& r, const ParallelConfig& c) {
  return {MegatronArgs(r, c), DeepSpeedConfig(r, c), AccelerateConfig(r, c), TrainerCommand(r, c)};
}

}  // namespace gpuscope::plan
