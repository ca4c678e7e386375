#include "plan/render.h"

#include <fmt/format.h>

#include <algorithm>

#include "plan/frameworks.h"
#include "render/json_writer.h"

namespace gpuscope::plan {

std::string ModelLine(const ModelConfig& m) {
  std::string s = fmt::format(
      "L={} h={} a={} g={} d_h={} f={} {} V={} {} {}", m.layers, m.hidden, m.heads, m.kv_heads,
      m.head_dim, m.ffn, m.gated_mlp ? "gated MLP (SwiGLU)" : "plain MLP", m.vocab,
      m.tied_embeddings ? "tied" : "untied", m.rms_norm ? "RMSNorm" : "LayerNorm");
  if (m.experts > 0) s += fmt::format(" MoE E={} top-{}", m.experts, m.experts_top_k);
  return s;
}

namespace {

struct Launch {
  int64_t nodes = 1, nproc = 1;
};
Launch LaunchShape(const PlanRequest& r, const ParallelConfig& c) {
  const int64_t per_node =
      r.assumptions.gpus_per_node > 0 ? r.assumptions.gpus_per_node : r.gpu.gpus_per_node;
  Launch l;
  l.nproc = std::max<int64_t>(1, std::min(c.gpus, per_node));
  l.nodes = (c.gpus + l.nproc - 1) / l.nproc;
  return l;
}
std::string Torchrun(const PlanRequest& r, const ParallelConfig& c) {
  const Launch l = LaunchShape(r, c);
  std::string cmd = fmt::format("torchrun --nnodes={} --nproc_per_node={}", l.nodes, l.nproc);
  if (l.nodes > 1) cmd += " --rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500";
  return cmd;
}

// "the plan is for PyTorch FSDP, not DeepSpeed": a framework's own file for another's plan.
std::string OtherFramework(const ParallelConfig& c, std::string_view mine) {
  return "the plan is for " + std::string(RulesFor(c.framework).title) + ", not " +
         std::string(mine);
}

// ---- Megatron-LM arguments (megatron/training/arguments.py) ----
// A shell script: the model's shape (validate_args requires --num-layers, --hidden-size,
// --num-attention-heads and --max-position-embeddings; the rest builds the model the plan counted),
// then the plan's layout. "$@" passes the run's own flags (data, tokenizer, learning rate,
// iterations); a flag given again there overrides this one (argparse keeps the last).
ConfigSnippet MegatronArgs(const PlanRequest& r, const ParallelConfig& c) {
  ConfigSnippet sn{"megatron_args",
                   "Megatron-LM (pretrain_gpt.py arguments; the run's data, tokenizer and "
                   "learning-rate flags after them)",
                   "megatron_args.sh", "", ""};
  if (c.framework != Framework::kMegatron) {
    sn.not_expressed = OtherFramework(c, "Megatron-LM");
    return sn;
  }
  const ModelConfig& m = r.model;
  std::string cmd = "#!/bin/sh\n";
  // validate_args asserts it with tensor parallelism (before Blackwell; harmless after).
  if (c.tp > 1) cmd += "CUDA_DEVICE_MAX_CONNECTIONS=1 ";
  cmd += Torchrun(r, c);
  cmd += fmt::format(
      " pretrain_gpt.py --num-layers {} --hidden-size {} --ffn-hidden-size {} "
      "--num-attention-heads {}",
      m.layers, m.hidden, m.ffn, m.heads);
  if (m.kv_heads > 0 && m.kv_heads != m.heads)
    cmd += fmt::format(" --group-query-attention --num-query-groups {}", m.kv_heads);
  if (m.head_dim > 0 && m.head_dim * m.heads != m.hidden)
    cmd += fmt::format(" --kv-channels {}", m.head_dim);
  if (m.learned_positions > 0) {
    cmd += fmt::format(" --max-position-embeddings {}", m.learned_positions);
  } else {
    cmd += fmt::format(" --position-embedding-type rope --max-position-embeddings {}",
                       std::max(m.max_positions, r.seq_len));
  }
  if (m.rms_norm) cmd += " --normalization RMSNorm";
  if (m.gated_mlp) cmd += " --swiglu";
  if (m.qkv_bias_only)
    cmd += " --disable-bias-linear --add-qkv-bias";
  else if (!m.linear_biases)
    cmd += " --disable-bias-linear";
  if (!m.tied_embeddings) cmd += " --untie-embeddings-and-output-weights";
  if (m.experts > 0)
    cmd += fmt::format(" --num-experts {} --moe-router-topk {}", m.experts, m.experts_top_k);
  cmd +=
      fmt::format(" --tensor-model-parallel-size {} --pipeline-model-parallel-size {}", c.tp, c.pp);
  if (c.vpp > 1)
    cmd +=
        fmt::format(" --num-layers-per-virtual-pipeline-stage {}", r.model.layers / (c.pp * c.vpp));
  if (c.sp) cmd += " --sequence-parallel";
  cmd += fmt::format(" --micro-batch-size {} --global-batch-size {} --seq-length {}", c.mbs,
                     r.global_batch, r.seq_len);
  if (c.recompute == Recompute::kSelective) cmd += " --recompute-granularity selective";
  if (c.recompute == Recompute::kFull)
    cmd += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  if (ZeroStage(c.sharding) >= 1) cmd += " --use-distributed-optimizer";
  if (c.precision == Precision::kFp8)
    cmd += " --bf16 --fp8-format hybrid";
  else if (c.precision == Precision::kBf16)
    cmd += " --bf16";
  else if (c.precision == Precision::kFp16)
    cmd += " --fp16";
  if (c.bf16_grads) cmd += " --grad-reduce-in-bf16";
  cmd += c.optimizer == Optimizer::kSgd ? " --optimizer sgd" : " --optimizer adam";
  sn.text = cmd + " \"$@\"\n";
  return sn;
}

// ---- DeepSpeed config (docs: deepspeed.ai/docs/config-json) ----
// With pp = 1 the HF Trainer runs it (torchrun_trainer.sh's --deepspeed): the optimizer's
// hyperparameters and the clipping are "auto", which HfTrainerDeepSpeedConfig fills from the
// Trainer's --learning_rate, --adam_beta1/2, --adam_epsilon, --weight_decay and --max_grad_norm
// (a section with no params would make DeepSpeed build the optimizer with its own default lr,
// silently ignoring the Trainer's). Batch sizes and precision stay the plan's numbers: the Trainer
// checks them against its own arguments and stops on a mismatch. With pp > 1 DeepSpeed's
// pipeline engine reads the file itself, where "auto" means nothing: the hyperparameters are the
// run's own to add (said in the title).
ConfigSnippet DeepSpeedConfig(const PlanRequest& r, const ParallelConfig& c) {
  ConfigSnippet sn{"deepspeed_json",
                   "DeepSpeed (ds_config.json for the HF Trainer's --deepspeed; \"auto\" takes the "
                   "Trainer's learning rate, betas, eps, weight decay and clipping)",
                   "ds_config.json", "", ""};
  if (c.framework != Framework::kDeepSpeed) {
    sn.not_expressed = OtherFramework(c, "DeepSpeed");
    return sn;
  }
  const bool trainer = c.pp == 1;
  if (!trainer)
    sn.title = fmt::format(
        "DeepSpeed (ds_config.json; the {} pipeline stages are PipelineModule(..., num_stages={}) "
        "in the model code; add the run's optimizer.params: lr, weight_decay, …)",
        c.pp, c.pp);
  render::JsonWriter w(2);
  w.BeginObject();
  w.Key("train_batch_size").Int(r.global_batch);
  w.Key("train_micro_batch_size_per_gpu").Int(c.mbs);
  w.Key("gradient_accumulation_steps").Int(c.grad_accum);
  if (trainer) w.Key("gradient_clipping").String("auto");
  w.Key("bf16").BeginObject().Key("enabled").Bool(c.precision == Precision::kBf16).EndObject();
  w.Key("fp16").BeginObject().Key("enabled").Bool(c.precision == Precision::kFp16);
  if (c.precision == Precision::kFp16) w.Key("loss_scale").Int(0);  // dynamic loss scaling
  w.EndObject();
  w.Key("zero_optimization").BeginObject();
  w.Key("stage").Int(ZeroStage(c.sharding));
  w.Key("overlap_comm").Bool(true);
  if (c.offload != Offload::kNone)
    w.Key("offload_optimizer")
        .BeginObject()
        .Key("device")
        .String("cpu")
        .Key("pin_memory")
        .Bool(true)
        .EndObject();
  if (c.offload == Offload::kParams)
    w.Key("offload_param")
        .BeginObject()
        .Key("device")
        .String("cpu")
        .Key("pin_memory")
        .Bool(true)
        .EndObject();
  w.EndObject();
  // DeepSpeed's own optimizer: its CPU Adam runs the offloaded step; SGD as named. 8-bit Adam
  // comes from the training script (bitsandbytes), so no section: the Trainer builds its own.
  if (c.optimizer == Optimizer::kAdam || c.optimizer == Optimizer::kSgd) {
    const bool adam = c.optimizer == Optimizer::kAdam;
    w.Key("optimizer").BeginObject().Key("type").String(adam ? "AdamW" : "SGD");
    if (trainer) {
      w.Key("params").BeginObject().Key("lr").String("auto");
      if (adam) w.Key("betas").String("auto").Key("eps").String("auto");
      w.Key("weight_decay").String("auto").EndObject();
    }
    w.EndObject();
  }
  w.EndObject();
  sn.text = w.str() + "\n";
  return sn;
}

// ---- Accelerate config (accelerate launch --config_file) ----
std::string YamlBool(bool b) { return b ? "true" : "false"; }
ConfigSnippet AccelerateConfig(const PlanRequest& r, const ParallelConfig& c) {
  ConfigSnippet sn{"accelerate_yaml",
                   "Accelerate (accelerate launch --config_file accelerate.yaml train.py)",
                   "accelerate.yaml", "", ""};
  const Launch l = LaunchShape(r, c);
  const int zero = ZeroStage(c.sharding);
  std::string body;
  switch (c.framework) {
    case Framework::kMegatron:
      if (c.vpp > 1)
        sn.not_expressed =
            "Accelerate's megatron_lm_config has no interleaved (virtual) pipeline setting";
      else if (c.precision == Precision::kFp8)
        sn.not_expressed =
            "Accelerate's Megatron-LM plugin takes mixed_precision bf16 or fp16, not Transformer "
            "Engine fp8";
      else if (c.recompute == Recompute::kFull)
        sn.not_expressed =
            "megatron_lm_recompute_activations is selective recompute; full recompute is not an "
            "Accelerate setting";
      else if (c.bf16_grads)
        sn.not_expressed = "Accelerate's Megatron-LM plugin has no --grad-reduce-in-bf16 setting";
      else if (c.optimizer != Optimizer::kAdam)
        sn.not_expressed = "Accelerate's Megatron-LM plugin builds Megatron's Adam";
      if (!sn.not_expressed.empty()) return sn;
      body =
          "distributed_type: MEGATRON_LM\nmegatron_lm_config:\n" +
          fmt::format(
              "  megatron_lm_tp_degree: {}\n  megatron_lm_pp_degree: {}\n  "
              "megatron_lm_num_micro_batches: {}\n",
              c.tp, c.pp, c.grad_accum) +
          "  megatron_lm_sequence_parallelism: " + YamlBool(c.sp) + "\n" +
          "  megatron_lm_recompute_activations: " + YamlBool(c.recompute == Recompute::kSelective) +
          "\n" + "  megatron_lm_use_distributed_optimizer: " + YamlBool(zero >= 1) + "\n" +
          // Unset, Accelerate's MegatronLMPlugin takes context parallel 2 (halving data
          // parallel) and rotary positions; the plan has no context parallel, and the model's
          // own positions.
          "  megatron_lm_context_parallel_size: 1\n" +
          "  megatron_lm_use_rotary_position_embeddings: " +
          YamlBool(r.model.learned_positions == 0) + "\n";
      break;
    case Framework::kDeepSpeed:
      if (c.pp > 1) {
        sn.not_expressed =
            "Accelerate's DeepSpeed integration does not run DeepSpeed's pipeline engine (pp > 1)";
        return sn;
      }
      body =
          "distributed_type: DEEPSPEED\ndeepspeed_config:\n" +
          fmt::format("  zero_stage: {}\n  gradient_accumulation_steps: {}\n", zero, c.grad_accum) +
          // Across nodes Accelerate's default DeepSpeed launcher is pdsh with a hostfile;
          // "standard" is torchrun on each node, as the other snippets launch.
          (l.nodes > 1 ? "  deepspeed_multinode_launcher: standard\n" : "") +
          "  offload_optimizer_device: " + (c.offload != Offload::kNone ? "cpu" : "none") + "\n" +
          "  offload_param_device: " + (c.offload == Offload::kParams ? "cpu" : "none") + "\n" +
          "  zero3_init_flag: " + YamlBool(zero == 3) + "\n";
      break;
    case Framework::kFsdp:
      body =
          "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 1\n"
          "  fsdp_sharding_strategy: " +
          std::string(c.hybrid    ? "HYBRID_SHARD"
                      : zero == 2 ? "SHARD_GRAD_OP"
                                  : "FULL_SHARD") +
          "\n" +
          "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_backward_prefetch: "
          "BACKWARD_PRE\n"
          "  fsdp_use_orig_params: true\n"
          "  fsdp_offload_params: " +
          YamlBool(c.offload == Offload::kParams) + "\n" +
          "  fsdp_activation_checkpointing: " + YamlBool(c.recompute == Recompute::kFull) + "\n";
      break;
    case Framework::kDdp:
      body = c.gpus > 1 ? "distributed_type: MULTI_GPU\n" : "distributed_type: 'NO'\n";
      break;
  }
  std::string y = "compute_environment: LOCAL_MACHINE\n" + body;
  y += "mixed_precision: " +
       std::string(hw::FullPrecision(c.precision) ? "'no'"
                                                  : std::string(hw::PrecisionName(c.precision))) +
       "\n";
  y += fmt::format("num_machines: {}\nnum_processes: {}\n", l.nodes, c.gpus);
  if (l.nodes > 1) {
    // Accelerate's launcher asserts a main process address across machines; a YAML file cannot
    // read $MASTER_ADDR as the torchrun lines do, so it is a name to replace or override.
    y += "machine_rank: 0  # this node's rank: accelerate launch --machine_rank K on node K\n"
         "main_process_ip: MASTER_ADDR  # node 0's address: replace, or accelerate launch "
         "--main_process_ip $MASTER_ADDR\n"
         "main_process_port: 29500\n";
  } else {
    y += "machine_rank: 0\n";
  }
  // Micro-batch and accumulation live in the training script under Accelerate.
  y += fmt::format(
      "# in the training script: per_device_train_batch_size={}, gradient_accumulation_steps={}, "
      "gradient_checkpointing={}\n",
      c.mbs, c.grad_accum, c.recompute == Recompute::kFull ? "True" : "False");
  sn.text = y;
  return sn;
}

// ---- torchrun + Hugging Face Trainer (transformers TrainingArguments) ----
ConfigSnippet TrainerCommand(const PlanRequest& r, const ParallelConfig& c) {
  ConfigSnippet sn{"trainer_command",
                   "torchrun + Hugging Face Trainer (train.py with TrainingArguments; the run's "
                   "own flags after them)",
                   "torchrun_trainer.sh", "", ""};
  if (c.framework == Framework::kMegatron) {
    sn.not_expressed =
        c.tp > 1 || c.pp > 1
            ? fmt::format(
                  "the HF Trainer has no tensor or pipeline parallelism (tp={} pp={}); use the "
                  "Megatron-LM arguments",
                  c.tp, c.pp)
            : "the HF Trainer does not run Megatron-LM; use the Megatron-LM arguments";
    return sn;
  }
  if (c.framework == Framework::kDeepSpeed && c.pp > 1) {
    sn.not_expressed = "the HF Trainer does not run DeepSpeed's pipeline engine (pp > 1)";
    return sn;
  }
  std::string cmd = "#!/bin/sh\n" + Torchrun(r, c);
  cmd += fmt::format(" train.py --per_device_train_batch_size {} --gradient_accumulation_steps {}",
                     c.mbs, c.grad_accum);
  if (c.precision == Precision::kBf16) cmd += " --bf16";
  if (c.precision == Precision::kFp16) cmd += " --fp16";
  if (c.recompute == Recompute::kFull) cmd += " --gradient_checkpointing";
  cmd += c.optimizer == Optimizer::kSgd        ? " --optim sgd"
         : c.optimizer == Optimizer::kAdam8bit ? " --optim adamw_bnb_8bit"
                                               : " --optim adamw_torch";
  if (c.framework == Framework::kDeepSpeed) cmd += " --deepspeed ds_config.json";
  if (c.framework == Framework::kFsdp) {
    // transformers 5: --fsdp turns FSDP on and --fsdp_config says how (the "full_shard auto_wrap"
    // strings are deprecated there). FSDP2, its default: reshard_after_forward true is FULL_SHARD,
    // false SHARD_GRAD_OP. HYBRID_SHARD is FSDP1's (version 1, deprecated in transformers 5; FSDP2
    // shards hybrid through a ParallelismConfig in code, not a flag).
    std::string conf = c.hybrid ? "{\"version\": 1, \"reshard_after_forward\": \"hybrid_shard\""
                                : std::string("{\"version\": 2, \"reshard_after_forward\": ") +
                                      (ZeroStage(c.sharding) == 2 ? "false" : "true");
    if (c.offload == Offload::kParams) conf += ", \"cpu_offload\": true";
    cmd += " --fsdp --fsdp_config '" + conf + "}'";
  }
  sn.text = cmd + " \"$@\"\n";
  return sn;
}

}  // namespace

std::vector<ConfigSnippet> Snippets(const PlanRequest& r, const ParallelConfig& c) {
  return {MegatronArgs(r, c), DeepSpeedConfig(r, c), AccelerateConfig(r, c), TrainerCommand(r, c)};
}

}  // namespace gpuscope::plan
