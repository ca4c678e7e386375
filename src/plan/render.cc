#include "plan/render.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <map>

#include "render/json_writer.h"
#include "report/report.h"

namespace gpuscope::plan {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;

std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string Group(double v) { return report::GroupDigits(static_cast<uint64_t>(std::llround(v))); }

std::string MiBText(double bytes) {
  // "6,426.5 MiB" with grouped digits
  const double mib = bytes / kMiB;
  const double whole = std::floor(std::fabs(mib));
  const int tenth = static_cast<int>(std::llround((std::fabs(mib) - whole) * 10));
  double w = whole;
  int t = tenth;
  if (t == 10) w += 1, t = 0;
  return std::string(mib < 0 ? "-" : "") + report::GroupDigits(static_cast<uint64_t>(w)) + "." +
         std::to_string(t) + " MiB";
}

std::string ModelLine(const ModelConfig& m) {
  std::string s = Fmt("L=%" PRId64 " h=%" PRId64 " a=%" PRId64 " g=%" PRId64 " d_h=%" PRId64
                      " f=%" PRId64 " %s V=%" PRId64 " %s %s",
                      m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn,
                      m.gated_mlp ? "gated MLP (SwiGLU)" : "plain MLP", m.vocab,
                      m.tied_embeddings ? "tied" : "untied", m.rms_norm ? "RMSNorm" : "LayerNorm");
  if (m.experts > 0) s += Fmt(" MoE E=%" PRId64 " top-%" PRId64, m.experts, m.experts_top_k);
  return s;
}

std::string Degrees(const ParallelConfig& c) {
  return Fmt("tp=%" PRId64 " pp=%" PRId64 "%s dp=%" PRId64 " mbs=%" PRId64 " ga=%" PRId64
             " %s%s recompute=%s %s %s%s",
             c.tp, c.pp, c.vpp > 1 ? Fmt(" vpp=%" PRId64, c.vpp).c_str() : "", c.dp, c.mbs,
             c.grad_accum, std::string(ShardingName(c.sharding)).c_str(), c.sp ? " sp" : "",
             std::string(RecomputeName(c.recompute)).c_str(),
             std::string(hw::PrecisionName(c.precision)).c_str(),
             std::string(OptimizerName(c.optimizer)).c_str(),
             c.offload != Offload::kNone
                 ? (" offload=" + std::string(OffloadName(c.offload))).c_str()
                 : "");
}

void RenderWorking(std::string& out, const Evaluation& ev) {
  const MemoryBreakdown& mem = ev.memory;
  out += Fmt("memory per GPU (most-loaded: pipeline stage 0)  P_rank = %s params\n",
             Group(mem.params_on_rank).c_str());
  out += Fmt("  %-58s %16s  %s\n", "term", "bytes", "formula");
  for (const MemoryTerm& t : mem.terms) {
    if (t.bytes == 0 && t.kind == TermKind::kStatic && t.name.rfind("parameters", 0) == 0) continue;
    std::string name = "[";  // appended piecewise: GCC 12's false -Wrestrict on "[" + string
    name += TermKindName(t.kind);
    name += "] ";
    name += t.name;
    if (!t.counted && t.kind == TermKind::kTransient) name += " (not the largest transient)";
    out += Fmt("  %-58s %16s  %s\n", name.c_str(), MiBText(t.bytes).c_str(), t.formula.c_str());
  }
  out += Fmt("  %-58s %16s\n", "static (weights + grads + master + optimizer)",
             MiBText(mem.static_bytes).c_str());
  out += Fmt("  %-58s %16s\n", "activations", MiBText(mem.activation_bytes).c_str());
  out += Fmt("  %-58s %16s  %s\n", "predicted peak allocated (Σ counted terms)",
             MiBText(mem.peak_bytes).c_str(),
             Fmt("%.2f GiB of budget %.2f GiB (capacity %.2f GiB) → %s", mem.peak_bytes / kGiB,
                 mem.budget_bytes / kGiB, mem.capacity_bytes / kGiB,
                 mem.fits ? "fits" : "DOES NOT FIT")
                 .c_str());
  if (mem.cpu_bytes > 0)
    out += Fmt("  %-58s %16s\n", "host memory (offloaded)", MiBText(mem.cpu_bytes).c_str());
  const StepTime& st = ev.time;
  out += Fmt("step time  FLOPs/step: model %.4g, hardware %.4g (recompute %s)\n", st.flops_model,
             st.flops_hardware, std::string(RecomputeName(ev.config.recompute)).c_str());
  for (const TimeTerm& t : st.terms)
    out += Fmt("  %-58s %14.4f s  %s\n", t.name.c_str(), t.seconds, t.formula.c_str());
  out += Fmt("  %-58s %14.4f s  tokens/s %s (%s per GPU), MFU %.1f %%, HFU %.1f %%\n",
             "predicted step time", st.step_s, Group(st.tokens_per_s).c_str(),
             Group(st.tokens_per_s / static_cast<double>(ev.config.gpus)).c_str(), st.mfu * 100,
             st.hfu * 100);
}

std::string ReasonClass(const std::string& reason) {
  if (reason.rfind("OOM", 0) == 0) return "out of memory";
  if (reason.find("not divisible") != std::string::npos) return "batch not divisible";
  if (reason.find("interleaving") != std::string::npos) return "interleaving needs m % p == 0";
  return reason;
}

}  // namespace

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

std::string RenderPlanText(const PlanReport& rep, const Calibration* cal) {
  const PlanRequest& r = rep.request;
  std::string out;
  out += Fmt("gpuscope plan: %s on %" PRId64 " × %s (%s), global batch %" PRId64
             " × %" PRId64 " tokens\n",
             r.model.name.c_str(), r.gpus, r.gpu.name.c_str(), r.gpu.description.c_str(),
             r.global_batch, r.seq_len);
  out += "model       " + ModelLine(r.model) + "\n";
  out += "parameters  " + Group(rep.params.total) + Fmt(" (%.3f B)", rep.params.total / 1e9);
  if (r.model.experts > 0) out += ", active per token " + Group(rep.params.active);
  out += "\n";
  out += Fmt("gpu         %.1f GiB, %g GB/s HBM, dense peak TFLOP/s bf16 %g fp16 %g fp8 %g fp32 %g, "
             "intra-node %g GB/s (source: %s)\n",
             r.gpu.memory_gib, r.gpu.hbm_gbps, r.gpu.tflops_bf16, r.gpu.tflops_fp16,
             r.gpu.tflops_fp8, r.gpu.tflops_fp32, r.gpu.intra_node_gbps, r.gpu.source.c_str());
  if (cal) {
    out += "\ncalibration from " + cal->measured.source + Fmt(" (%zu rank%s, %zu steady steps)\n", cal->measured.ranks,
                                                              cal->measured.ranks == 1 ? "" : "s",
                                                              cal->measured.steps);
    out += "  traced configuration: " + Degrees(cal->before.config) + "\n";
    out += Fmt("  %-28s %14s %14s %14s\n", "", "measured", "predicted", "calibrated");
    out += Fmt("  %-28s %12.4f s %12.4f s %12.4f s\n", "step time", cal->measured.step_s,
               cal->before.time.step_s, cal->after.time.step_s);
    if (cal->measured.peak_allocated_bytes >= 0) {
      const double ctx = r.assumptions.context_gib * kGiB;
      out += Fmt("  %-28s %16s %16s %16s\n", "peak allocated",
                 MiBText(cal->measured.peak_allocated_bytes).c_str(),
                 MiBText(cal->before.memory.peak_bytes - ctx).c_str(),
                 MiBText(cal->after.memory.peak_bytes - ctx).c_str());
    }
    out += Fmt("  fitted η = %.3f (was %.3f)", cal->efficiency, cal->prior_efficiency);
    if (cal->memory_fitted) out += ", memory overhead = " + MiBText(cal->overhead_bytes);
    out += "\n";
    for (const std::string& n : cal->notes) out += "  note: " + n + "\n";
  }
  out += "\n";
  size_t oom = 0;
  for (const Rejection& x : rep.rejected) oom += x.over_bytes > 0;
  if (!rep.exact)
    out += Fmt("searched %zu configurations: %zu feasible, %zu rejected\n", rep.evaluated +
                   (rep.rejected.size() - oom), rep.feasible.size(), rep.rejected.size());
  if (!rep.feasible.empty()) {
    const size_t n = std::min<size_t>(rep.feasible.size(), static_cast<size_t>(std::max(1, r.top)));
    out += Fmt("%4s %3s %3s %3s %5s %4s %4s %-6s %-3s %-9s %-5s %10s %10s %12s %10s %6s\n", "rank",
               "tp", "pp", "vpp", "dp", "mbs", "ga", "shard", "sp", "recompute", "prec",
               "peak GiB", "step s", "tokens/s", "tok/s/GPU", "MFU");
    for (size_t i = 0; i < n; ++i) {
      const Evaluation& e = rep.feasible[i];
      const ParallelConfig& c = e.config;
      out += Fmt("%4zu %3" PRId64 " %3" PRId64 " %3" PRId64 " %5" PRId64 " %4" PRId64 " %4" PRId64
                 " %-6s %-3s %-9s %-5s %10.2f %10.3f %12s %10s %5.1f%%\n",
                 i + 1, c.tp, c.pp, c.vpp, c.dp, c.mbs, c.grad_accum,
                 std::string(ShardingName(c.sharding)).c_str(), c.sp ? "yes" : "no",
                 std::string(RecomputeName(c.recompute)).c_str(),
                 std::string(hw::PrecisionName(c.precision)).c_str(), e.memory.peak_bytes / kGiB,
                 e.time.step_s, Group(e.time.tokens_per_s).c_str(),
                 Group(e.time.tokens_per_s / static_cast<double>(c.gpus)).c_str(),
                 e.time.mfu * 100);
    }
    out += rep.exact ? "\nconfiguration: " : "\nbest: ";
    out += Degrees(rep.feasible.front().config);
    out += "\n";
    RenderWorking(out, rep.feasible.front());
  } else if (rep.closest) {
    out += "no configuration fits; the closest: " + Degrees(rep.closest->config) + "\n";
    RenderWorking(out, *rep.closest);
  }
  if (!rep.rejected.empty() && !rep.exact) {
    std::map<std::string, size_t> counts;
    for (const Rejection& x : rep.rejected) ++counts[ReasonClass(x.reason)];
    out += "\nrejected:";
    for (const auto& [k, v] : counts) out += Fmt(" %zu %s;", v, k.c_str());
    out += "\n";
    // A few examples: the nearest misses first.
    std::vector<const Rejection*> shown;
    for (const Rejection& x : rep.rejected)
      if (x.over_bytes > 0) shown.push_back(&x);
    std::sort(shown.begin(), shown.end(),
              [](const Rejection* a, const Rejection* b) { return a->over_bytes < b->over_bytes; });
    if (shown.size() > 3) shown.resize(3);
    for (const Rejection& x : rep.rejected)
      if (x.over_bytes <= 0 && shown.size() < 5) shown.push_back(&x);
    for (const Rejection* x : shown)
      out += "  " + Degrees(x->config) + ": " + x->reason + "\n";
  }
  if (!rep.suggestions.empty()) {
    out += "\nwhat would fit:\n";
    for (const std::string& s : rep.suggestions) out += "  " + s + "\n";
  }
  out += "\nassumptions:\n";
  for (const std::string& a : rep.assumptions) out += "  - " + a + "\n";
  if (!rep.feasible.empty()) {
    const ParallelConfig& c = rep.feasible.front().config;
    out += "\nAccelerate (accelerate launch --config_file plan.yaml):\n" + AccelerateYaml(r, c);
    out += "\nDeepSpeed (ds_config.json):\n" + DeepSpeedJson(r, c);
    out += "\ntorchrun:\n" + TorchrunCommand(r, c);
  }
  return out;
}

namespace {

void WriteEvaluation(render::JsonWriter& w, const Evaluation& e) {
  const ParallelConfig& c = e.config;
  w.BeginObject();
  w.Key("tp").Int(c.tp).Key("pp").Int(c.pp).Key("vpp").Int(c.vpp).Key("dp").Int(c.dp);
  w.Key("sp").Bool(c.sp).Key("mbs").Int(c.mbs).Key("grad_accum").Int(c.grad_accum);
  w.Key("sharding").String(ShardingName(c.sharding)).Key("zero_stage").Int(ZeroStage(c.sharding));
  w.Key("recompute").String(RecomputeName(c.recompute));
  w.Key("precision").String(hw::PrecisionName(c.precision));
  w.Key("optimizer").String(OptimizerName(c.optimizer));
  w.Key("offload").String(OffloadName(c.offload));
  const MemoryBreakdown& m = e.memory;
  w.Key("memory").BeginObject();
  w.Key("params_on_rank").Int(std::llround(m.params_on_rank));
  w.Key("static_bytes").Int(std::llround(m.static_bytes));
  w.Key("activation_bytes").Int(std::llround(m.activation_bytes));
  w.Key("peak_bytes").Int(std::llround(m.peak_bytes));
  w.Key("cpu_bytes").Int(std::llround(m.cpu_bytes));
  w.Key("capacity_bytes").Int(std::llround(m.capacity_bytes));
  w.Key("budget_bytes").Int(std::llround(m.budget_bytes));
  w.Key("fits").Bool(m.fits);
  w.Key("terms").BeginArray();
  for (const MemoryTerm& t : m.terms) {
    w.BeginObject();
    w.Key("name").String(t.name).Key("kind").String(TermKindName(t.kind));
    w.Key("formula").String(t.formula).Key("bytes").Int(std::llround(t.bytes));
    w.Key("counted").Bool(t.counted);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  const StepTime& st = e.time;
  w.Key("time_terms").BeginArray();
  for (const TimeTerm& t : st.terms)
    w.BeginObject().Key("name").String(t.name).Key("formula").String(t.formula).Key("seconds").Double(t.seconds, 6).EndObject();
  w.EndArray();
  w.Key("flops_model").Double(st.flops_model, 0).Key("flops_hardware").Double(st.flops_hardware, 0);
  w.Key("efficiency").Double(st.efficiency, 4).Key("bubble_fraction").Double(st.bubble_fraction, 4);
  w.Key("step_time_s").Double(st.step_s, 6);
  w.Key("tokens_per_s").Double(st.tokens_per_s, 1);
  w.Key("tokens_per_s_per_gpu").Double(st.tokens_per_s / static_cast<double>(c.gpus), 1);
  w.Key("mfu").Double(st.mfu, 4).Key("hfu").Double(st.hfu, 4);
  w.EndObject();
}

}  // namespace

std::string RenderPlanJson(const PlanReport& rep, const Calibration* cal) {
  const PlanRequest& r = rep.request;
  render::JsonWriter w(2);
  w.BeginObject();
  w.Key("schema_version").Int(kPlanSchemaVersion);
  w.Key("model").BeginObject();
  w.Key("name").String(r.model.name).Key("model_type").String(r.model.model_type);
  w.Key("layers").Int(r.model.layers).Key("hidden").Int(r.model.hidden);
  w.Key("heads").Int(r.model.heads).Key("kv_heads").Int(r.model.kv_heads);
  w.Key("head_dim").Int(r.model.head_dim).Key("ffn").Int(r.model.ffn);
  w.Key("vocab").Int(r.model.vocab).Key("tied_embeddings").Bool(r.model.tied_embeddings);
  w.Key("gated_mlp").Bool(r.model.gated_mlp).Key("experts").Int(r.model.experts);
  w.Key("experts_top_k").Int(r.model.experts_top_k);
  w.EndObject();
  w.Key("gpu").BeginObject();
  w.Key("name").String(r.gpu.name).Key("memory_gib").Double(r.gpu.memory_gib, 3);
  w.Key("source").String(r.gpu.source);
  w.EndObject();
  w.Key("gpus").Int(r.gpus).Key("global_batch").Int(r.global_batch).Key("seq_len").Int(r.seq_len);
  w.Key("parameters_total").Int(std::llround(rep.params.total));
  w.Key("parameters_active").Int(std::llround(rep.params.active));
  w.Key("exact").Bool(rep.exact);
  w.Key("evaluated").Uint(rep.evaluated);
  w.Key("feasible").Uint(rep.feasible.size());
  w.Key("configurations").BeginArray();
  const size_t n = std::min<size_t>(rep.feasible.size(), static_cast<size_t>(std::max(1, r.top)));
  for (size_t i = 0; i < n; ++i) WriteEvaluation(w, rep.feasible[i]);
  w.EndArray();
  w.Key("rejected_count").Uint(rep.rejected.size());
  w.Key("rejected").BeginArray();
  size_t shown = 0;
  for (const Rejection& x : rep.rejected) {
    if (++shown > 50) break;
    w.BeginObject().Key("config").String(Degrees(x.config)).Key("reason").String(x.reason);
    w.Key("over_bytes").Int(std::llround(x.over_bytes)).EndObject();
  }
  w.EndArray();
  if (rep.closest) {
    w.Key("closest");
    WriteEvaluation(w, *rep.closest);
  }
  w.Key("suggestions").BeginArray();
  for (const std::string& s : rep.suggestions) w.String(s);
  w.EndArray();
  w.Key("assumptions").BeginArray();
  for (const std::string& s : rep.assumptions) w.String(s);
  w.EndArray();
  if (cal) {
    w.Key("calibration").BeginObject();
    w.Key("trace").String(cal->measured.source);
    w.Key("measured_step_time_s").Double(cal->measured.step_s, 6);
    w.Key("predicted_step_time_s").Double(cal->before.time.step_s, 6);
    w.Key("calibrated_step_time_s").Double(cal->after.time.step_s, 6);
    w.Key("measured_peak_allocated_bytes").Int(std::llround(cal->measured.peak_allocated_bytes));
    w.Key("efficiency").Double(cal->efficiency, 4);
    w.Key("memory_overhead_bytes").Int(std::llround(cal->overhead_bytes));
    w.Key("memory_fitted").Bool(cal->memory_fitted);
    w.EndObject();
  }
  w.EndObject();
  return w.str() + "\n";
}

}  // namespace gpuscope::plan
