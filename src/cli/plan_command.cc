#include "cli/plan_command.h"

#include "cli/output.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gpuscope/ingest.h"
#include "hw/gpu_table.h"
#include "plan/calibrate.h"
#include "plan/planner.h"
#include "plan/render.h"
#include "report/report.h"

namespace gpuscope::cli {

namespace {

int Fail(const Status& s) {
  PrintError(s);
  return ExitCodeFor(s);
}

Result<plan::TraceMeasurement> MeasureTrace(const std::string& path) {
  auto loaded = LoadInputs(path);
  if (!loaded.ok()) return loaded.status();
  if (loaded->traces.empty())
    return Status::Error(StatusCode::kInvalidInput, path + ": no readable trace");
  const report::Report rep = report::BuildReport(loaded->traces, loaded->failures);
  plan::TraceMeasurement m;
  m.source = path;
  m.ranks = rep.ranks.size();
  for (const report::RankReport& rr : rep.ranks) {
    // The slowest rank sets the step time of a synchronous data-parallel job.
    const double step_s = static_cast<double>(rr.steps.mean_steady_step_ns) / 1e9;
    if (step_s > m.step_s) {
      m.step_s = step_s;
      m.steps = rr.steps.steady_count;
    }
    for (const analyze::DeviceMemory& d : rr.memory.devices)
      m.peak_allocated_bytes =
          std::max(m.peak_allocated_bytes, static_cast<double>(d.peak_allocated_bytes));
  }
  return m;
}

// The best configuration's snippets as files in `dir` (created); what a framework cannot express
// is not written. Names go to stderr, so stdout stays the document.
Status WriteConfigs(const plan::PlanRequest& r, const plan::ParallelConfig& c, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error(StatusCode::kIoError, "--write-configs " + dir + ": " + ec.message());
  for (const plan::ConfigSnippet& sn : plan::Snippets(r, c)) {
    if (sn.text.empty()) continue;
    const std::filesystem::path path = std::filesystem::path(dir) / sn.file;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << sn.text;
    f.close();
    if (!f) return Status::Error(StatusCode::kIoError, path.string() + ": cannot write");
    std::fprintf(stderr, "wrote %s\n", path.c_str());
  }
  return Status::Ok();
}

}  // namespace

CLI::App* AddPlanCommand(CLI::App& app, PlanCliOptions* o) {
  auto* plan = app.add_subcommand(
      "plan",
      "Plan transformer training: memory per GPU term by term, step time, and the best\n"
      "micro-batch / accumulation / TP / PP / ZeRO / recompute / precision for N GPUs, under\n"
      "each framework's own memory rules (Megatron-LM, DeepSpeed, FSDP, DDP; or --framework),\n"
      "with its config files (--write-configs DIR). With every degree given (--tp --pp --mbs\n"
      "--zero|--fsdp --recompute --precision) it evaluates that configuration; otherwise it\n"
      "searches the free ones.");
  plan->add_option("--model", o->model,
                   "Hugging Face config.json, or a bundled model name (--list-models)");
  plan->add_option("--gpu", o->gpu, "GPU name or alias (--list-gpus)");
  plan->add_option("--gpu-spec", o->gpu_spec,
                   "Custom GPU NAME:MEM_GIB:BF16_TFLOPS:HBM_GBPS[:INTRA_NODE_GBPS[:FP8_TFLOPS]]");
  plan->add_option("--gpus", o->gpus, "Number of GPUs N");
  plan->add_option("--global-batch", o->global_batch, "Sequences per optimizer step (GBS)");
  plan->add_option("--seq-len", o->seq_len, "Sequence length in tokens");
  plan->add_option("--precision", o->precision, "bf16, fp16, fp32 or fp8 (default: searched)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32", "fp8"}));
  plan->add_option("--optimizer", o->optimizer, "adam (default), adam8bit or sgd (with momentum)")
      ->check(CLI::IsMember({"adam", "adam8bit", "sgd"}));
  auto* framework =
      plan->add_option("--framework", o->framework,
                       "megatron, deepspeed, fsdp or ddp: whose memory rules and config files the "
                       "plan follows (default: searched over those that run the layout)")
          ->check(CLI::IsMember({"megatron", "deepspeed", "fsdp", "ddp"}));
  auto* zero = plan->add_option("--zero", o->zero,
                                "Sharding stage 0-3 (default: searched): DeepSpeed's ZeRO stage; "
                                "Megatron 1 = --use-distributed-optimizer; FSDP 2 = SHARD_GRAD_OP, "
                                "3 = FULL_SHARD")
                   ->check(CLI::IsMember({"0", "1", "2", "3"}));
  plan->add_flag("--fsdp", o->fsdp, "Shorthand for --framework fsdp --zero 3 (FULL_SHARD)")
      ->excludes(zero)
      ->excludes(framework);
  plan->add_flag("--hybrid", o->hybrid,
                 "FSDP HYBRID_SHARD: full sharding within a node, replicas across nodes");
  plan->add_flag("--grad-reduce-in-bf16", o->bf16_grads,
                 "Megatron-LM: bf16 main gradients instead of the fp32 default under --bf16");
  plan->add_option("--tp", o->tp, "Tensor-parallel degree t");
  plan->add_option("--pp", o->pp, "Pipeline-parallel degree p (1F1B)");
  plan->add_option("--vpp", o->vpp, "Interleaved chunks per pipeline device v");
  plan->add_flag("--sp", o->sp, "Sequence parallel (with --tp > 1; default on when TP is searched)");
  plan->add_option("--mbs", o->mbs, "Micro-batch size per GPU");
  plan->add_option("--recompute", o->recompute, "Activation checkpointing: none, selective, full")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  plan->add_option("--offload", o->offload,
                   "CPU offload: none, optimizer (ZeRO-Offload), params (ZeRO-3 + params)")
      ->check(CLI::IsMember({"none", "optimizer", "params"}));
  plan->add_option("--efficiency", o->efficiency,
                   "Share of dense peak reached by matmuls, η (default 0.45)");
  plan->add_option("--context-gib", o->context_gib,
                   "CUDA context + NCCL + workspaces per GPU, GiB (default 1)");
  plan->add_option("--headroom", o->headroom,
                   "Allocator headroom: budget = capacity × (1 − headroom) (default 0.10)");
  plan->add_option("--inter-node-gbps", o->inter_node_gbps,
                   "Network bandwidth per GPU between nodes, GB/s (default 50)");
  plan->add_flag("--no-flash", o->no_flash, "Explicit attention (stores the s² softmax)");
  plan->add_flag("--no-dropout", o->no_dropout, "Dropout off: no mask bytes");
  plan->add_option("--top", o->top, "Configurations shown (default 5)")->check(CLI::Range(1, 1000));
  plan->add_option("--from-trace", o->from_trace,
                   "Calibrate η and memory overhead from a trace of this model and configuration");
  plan->add_option("--write-configs", o->write_configs,
                   "Write the best configuration's snippets as files into this folder "
                   "(megatron_args.sh, ds_config.json, accelerate.yaml, torchrun_trainer.sh)");
  AddOutputFlags(plan, &o->out);
  plan->add_flag("--list-models", o->list_models, "List the bundled model configs");
  plan->add_flag("--list-gpus", o->list_gpus, "List the known GPUs with their sources");
  return plan;
}

int RunPlanCommand(const PlanCliOptions& o) {
  if (o.list_models) {
    for (const std::string& n : plan::BundledModelNames()) {
      auto m = plan::LoadModelConfig(n);
      if (!m.ok()) return Fail(m.status());
      const plan::ParamCounts pc = plan::CountParameters(*m, m->vocab);
      std::printf("%-16s %8.3f B params  L=%lld h=%lld\n", n.c_str(), pc.total / 1e9,
                  static_cast<long long>(m->layers), static_cast<long long>(m->hidden));
    }
    return kExitOk;
  }
  if (o.list_gpus) {
    for (const hw::GpuSpec& g : hw::KnownGpus())
      std::printf("%-14s %-50s %s\n", g.name.c_str(), g.description.c_str(), g.source.c_str());
    return kExitOk;
  }
  std::vector<std::string> missing;
  if (o.model.empty()) missing.push_back("--model");
  if (o.gpu.empty() && o.gpu_spec.empty()) missing.push_back("--gpu (or --gpu-spec)");
  if (!o.gpus) missing.push_back("--gpus");
  if (!o.global_batch) missing.push_back("--global-batch");
  if (!o.seq_len) missing.push_back("--seq-len");
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    return Fail(Status::Error(StatusCode::kUsage,
                              "plan needs " + list + " (hint: gpuscope plan --model llama-3-8b "
                              "--gpu h100-sxm --gpus 8 --global-batch 64 --seq-len 4096)"));
  }
  plan::PlanRequest r;
  auto model = plan::LoadModelConfig(o.model);
  if (!model.ok()) return Fail(model.status());
  r.model = *model;
  auto gpu = o.gpu_spec.empty() ? hw::FindGpu(o.gpu) : hw::ParseGpuSpec(o.gpu_spec);
  if (!gpu.ok()) return Fail(gpu.status());
  r.gpu = *gpu;
  r.gpus = *o.gpus;
  r.global_batch = *o.global_batch;
  r.seq_len = *o.seq_len;
  r.top = o.top;
  auto& a = r.assumptions;
  a.efficiency = o.efficiency;
  a.context_gib = o.context_gib;
  a.headroom = o.headroom;
  a.inter_node_gbps = o.inter_node_gbps;
  a.flash_attention = !o.no_flash;
  a.dropout = !o.no_dropout;
  if (!o.precision.empty())
    r.precision = o.precision == "fp32"   ? hw::Precision::kFp32
                  : o.precision == "fp16" ? hw::Precision::kFp16
                  : o.precision == "fp8"  ? hw::Precision::kFp8
                                          : hw::Precision::kBf16;
  r.optimizer = o.optimizer == "sgd"        ? plan::Optimizer::kSgd
                : o.optimizer == "adam8bit" ? plan::Optimizer::kAdam8bit
                                            : plan::Optimizer::kAdam;
  if (o.fsdp) {
    r.framework = plan::Framework::kFsdp;
    r.sharding = plan::Sharding::kZero3;
  }
  if (!o.framework.empty())
    r.framework = o.framework == "megatron"    ? plan::Framework::kMegatron
                  : o.framework == "deepspeed" ? plan::Framework::kDeepSpeed
                  : o.framework == "fsdp"      ? plan::Framework::kFsdp
                                               : plan::Framework::kDdp;
  r.hybrid = o.hybrid;
  r.bf16_grads = o.bf16_grads;
  if (!o.zero.empty()) r.sharding = static_cast<plan::Sharding>(o.zero[0] - '0');
  if (!o.recompute.empty())
    r.recompute = o.recompute == "full"        ? plan::Recompute::kFull
                  : o.recompute == "selective" ? plan::Recompute::kSelective
                                               : plan::Recompute::kNone;
  r.offload = o.offload == "params"      ? plan::Offload::kParams
              : o.offload == "optimizer" ? plan::Offload::kOptimizer
                                         : plan::Offload::kNone;
  r.tp = o.tp;
  r.pp = o.pp;
  r.vpp = o.vpp;
  r.mbs = o.mbs;
  if (o.sp) r.sp = true;
  else if (o.tp) r.sp = false;  // a given TP without --sp means no sequence parallelism
  if (o.sp && o.tp && *o.tp == 1)
    return Fail(Status::Error(StatusCode::kUsage, "--sp needs --tp > 1"));

  std::optional<plan::Calibration> calibration;
  if (!o.from_trace.empty()) {
    // The traced configuration = the flags, with unset degrees at their plain defaults.
    if (Status s = plan::ValidateRequest(r); !s.ok()) return Fail(s);
    plan::ParallelConfig traced;
    traced.gpus = r.gpus;
    traced.tp = r.tp.value_or(1);
    traced.pp = r.pp.value_or(1);
    traced.vpp = r.vpp.value_or(1);
    if (r.gpus % (traced.tp * traced.pp) != 0)
      return Fail(Status::Error(StatusCode::kUsage, "--gpus is not a multiple of tp × pp"));
    traced.dp = r.gpus / (traced.tp * traced.pp);
    traced.sp = r.sp.value_or(false);
    traced.mbs = r.mbs.value_or(r.global_batch / std::max<int64_t>(1, traced.dp));
    if (traced.mbs <= 0 || r.global_batch % (traced.mbs * traced.dp) != 0)
      return Fail(Status::Error(
          StatusCode::kUsage, "the traced configuration's --global-batch " +
                                  std::to_string(r.global_batch) +
                                  " is not divisible by mbs × dp (give --mbs)"));
    traced.grad_accum = r.global_batch / (traced.mbs * traced.dp);
    traced.sharding = r.sharding.value_or(plan::Sharding::kNone);
    traced.recompute = r.recompute.value_or(plan::Recompute::kNone);
    traced.precision = r.precision.value_or(r.gpu.tflops_bf16 > 0 ? hw::Precision::kBf16
                                                                  : hw::Precision::kFp16);
    traced.optimizer = *r.optimizer;
    traced.offload = r.offload;
    traced.hybrid = r.hybrid;
    traced.bf16_grads = r.bf16_grads;
    // The trace does not say which framework ran it: the one given, else the one the layout
    // implies (tp/pp: Megatron; sharding: DeepSpeed; neither: DDP).
    traced.framework = r.framework.value_or(
        traced.tp > 1 || traced.pp > 1 ? plan::Framework::kMegatron
        : traced.sharding != plan::Sharding::kNone ? plan::Framework::kDeepSpeed
                                                   : plan::Framework::kDdp);
    auto measured = MeasureTrace(o.from_trace);
    if (!measured.ok()) return Fail(measured.status());
    auto cal = plan::Calibrate(r.model, r.gpu, traced, r.seq_len, a, *measured);
    if (!cal.ok()) return Fail(cal.status());
    calibration = *cal;
    a.efficiency = cal->efficiency;
    a.overhead_bytes = cal->overhead_bytes;
    // Re-plan: the same job size with the layout searched afresh under the fitted constants.
    r.tp.reset();
    r.pp.reset();
    r.vpp.reset();
    r.mbs.reset();
    r.sharding.reset();
    r.recompute.reset();
    r.sp.reset();
  }

  auto rep = plan::Plan(r);
  if (!rep.ok()) return Fail(rep.status());
  const plan::Calibration* cal = calibration ? &*calibration : nullptr;
  if (const int rc = Emit(plan::BuildDocument(*rep, cal), o.out); rc != 0) return rc;
  if (!o.write_configs.empty() && !rep->feasible.empty()) {
    if (Status s = WriteConfigs(r, rep->feasible.front().config, o.write_configs); !s.ok())
      return Fail(s);
  }
  if (rep->feasible.empty()) {
    std::string hint;
    for (const std::string& s : rep->suggestions) hint += (hint.empty() ? "" : "; ") + s;
    return Fail(Status::Error(StatusCode::kInvalidInput,
                              std::string(rep->exact ? "the configuration does not fit"
                                                     : "no configuration fits") +
                                  " in " + r.gpu.name + " memory (" + hint + ")"));
  }
  return kExitOk;
}

}  // namespace gpuscope::cli
