#include "plan/render.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

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

std::string AccelerateYaml(const PlanRequest& r, const ParallelConfig& c) {
  const int zero = ZeroStage(c.sharding);
  const int64_t per_node = r.assumptions.gpus_per_node > 0 ? r.assumptions.gpus_per_node
                                                           : r.gpu.gpus_per_node;
  const int64_t nodes = std::max<int64_t>(1, (c.gpus + per_node - 1) / per_node);
  std::string y = "compute_environment: LOCAL_MACHINE\n";
  if (c.tp > 1 || c.pp > 1)
    y += "# tp/pp > 1: Accelerate runs them through Megatron-LM (megatron_lm_config)\n"
         "distributed_type: MEGATRON_LM\nmegatron_lm_config:\n" +
         Fmt("  megatron_lm_tp_degree: %" PRId64 "\n  megatron_lm_pp_degree: %" PRId64
             "\n  megatron_lm_num_micro_batches: %" PRId64
             "\n  megatron_lm_sequence_parallelism: %s\n  megatron_lm_recompute_activations: %s\n"
             "  megatron_lm_use_distributed_optimizer: %s\n",
             c.tp, c.pp, c.grad_accum, c.sp ? "true" : "false",
             c.recompute != Recompute::kNone ? "true" : "false", zero >= 1 ? "true" : "false");
  else if (c.sharding == Sharding::kFsdp)
    y += "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n"
         "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_backward_prefetch: BACKWARD_PRE\n" +
         Fmt("  fsdp_activation_checkpointing: %s\n  fsdp_offload_params: %s\n",
             c.recompute != Recompute::kNone ? "true" : "false",
             c.offload != Offload::kNone ? "true" : "false");
  else if (zero > 0 || c.offload != Offload::kNone)
    y += "distributed_type: DEEPSPEED\ndeepspeed_config:\n" +
         Fmt("  zero_stage: %d\n  gradient_accumulation_steps: %" PRId64
             "\n  offload_optimizer_device: %s\n  offload_param_device: %s\n  zero3_init_flag: %s\n",
             zero, c.grad_accum, c.offload != Offload::kNone ? "cpu" : "none",
             c.offload == Offload::kParams ? "cpu" : "none", zero == 3 ? "true" : "false");
  else
    y += c.gpus > 1 ? "distributed_type: MULTI_GPU\n" : "distributed_type: 'NO'\n";
  y += Fmt("mixed_precision: %s\nnum_machines: %" PRId64 "\nnum_processes: %" PRId64 "\n",
           c.precision == Precision::kFp32 ? "'no'"
                                            : std::string(hw::PrecisionName(c.precision)).c_str(),
           nodes, c.gpus);
  y += Fmt("# in the training script: per_device_train_batch_size=%" PRId64
           ", gradient_accumulation_steps=%" PRId64 "%s\n",
           c.mbs, c.grad_accum,
           c.recompute != Recompute::kNone ? ", gradient_checkpointing=True" : "");
  return y;
}

std::string DeepSpeedJson(const PlanRequest& r, const ParallelConfig& c) {
  render::JsonWriter w(2);
  w.BeginObject();
  w.Key("train_batch_size").Int(r.global_batch);
  w.Key("train_micro_batch_size_per_gpu").Int(c.mbs);
  w.Key("gradient_accumulation_steps").Int(c.grad_accum);
  if (c.precision == Precision::kBf16 || c.precision == Precision::kFp8)
    w.Key("bf16").BeginObject().Key("enabled").Bool(true).EndObject();
  if (c.precision == Precision::kFp16)
    w.Key("fp16").BeginObject().Key("enabled").Bool(true).Key("loss_scale").Int(0).EndObject();
  w.Key("zero_optimization").BeginObject();
  w.Key("stage").Int(ZeroStage(c.sharding));
  w.Key("overlap_comm").Bool(true);
  if (c.offload != Offload::kNone)
    w.Key("offload_optimizer").BeginObject().Key("device").String("cpu").Key("pin_memory").Bool(true).EndObject();
  if (c.offload == Offload::kParams)
    w.Key("offload_param").BeginObject().Key("device").String("cpu").Key("pin_memory").Bool(true).EndObject();
  w.EndObject();
  if (c.recompute != Recompute::kNone)
    w.Key("activation_checkpointing")
        .BeginObject()
        .Key("partition_activations")
        .Bool(c.tp > 1)
        .Key("contiguous_memory_optimization")
        .Bool(false)
        .EndObject();
  if (c.optimizer == Optimizer::kSgd)
    w.Key("optimizer").BeginObject().Key("type").String("SGD").EndObject();
  w.EndObject();
  return w.str() + "\n";
}

std::string TorchrunCommand(const PlanRequest& r, const ParallelConfig& c) {
  const int64_t per_node = r.assumptions.gpus_per_node > 0 ? r.assumptions.gpus_per_node
                                                           : r.gpu.gpus_per_node;
  const int64_t nproc = std::min(c.gpus, per_node);
  const int64_t nodes = (c.gpus + nproc - 1) / nproc;
  std::string cmd = Fmt("torchrun --nnodes=%" PRId64 " --nproc_per_node=%" PRId64, nodes, nproc);
  if (nodes > 1) cmd += " --rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500";
  const std::string prec = std::string(hw::PrecisionName(c.precision));
  if (c.tp > 1 || c.pp > 1) {
    cmd += Fmt(" pretrain_gpt.py --tensor-model-parallel-size %" PRId64
               " --pipeline-model-parallel-size %" PRId64,
               c.tp, c.pp);
    if (c.vpp > 1) cmd += Fmt(" --num-layers-per-virtual-pipeline-stage %" PRId64,
                              r.model.layers / (c.pp * c.vpp));
    if (c.sp) cmd += " --sequence-parallel";
    cmd += Fmt(" --micro-batch-size %" PRId64 " --global-batch-size %" PRId64
               " --seq-length %" PRId64,
               c.mbs, r.global_batch, r.seq_len);
    if (c.recompute == Recompute::kSelective) cmd += " --recompute-granularity selective";
    if (c.recompute == Recompute::kFull)
      cmd += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
    if (ZeroStage(c.sharding) >= 1) cmd += " --use-distributed-optimizer";
    if (c.precision == Precision::kFp8) cmd += " --bf16 --fp8-format hybrid";
    else if (c.precision != Precision::kFp32) cmd += " --" + prec;
    return cmd + "\n";
  }
  cmd += Fmt(" train.py --per_device_train_batch_size %" PRId64
             " --gradient_accumulation_steps %" PRId64,
             c.mbs, c.grad_accum);
  if (c.precision == Precision::kBf16 || c.precision == Precision::kFp16) cmd += " --" + prec;
  if (c.recompute != Recompute::kNone) cmd += " --gradient_checkpointing";
  if (c.sharding == Sharding::kFsdp || c.sharding == Sharding::kZero3)
    cmd += c.offload != Offload::kNone ? " --fsdp \"full_shard auto_wrap offload\""
                                       : " --fsdp \"full_shard auto_wrap\"";
  else if (c.sharding == Sharding::kZero2 || c.sharding == Sharding::kZero1)
    cmd += " --fsdp \"shard_grad_op auto_wrap\"";
  return cmd + "  # Hugging Face Trainer flags\n";
}

}  // namespace gpuscope::plan
