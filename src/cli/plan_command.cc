#include "cli/plan_command.h"

#include "cli/output.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "api/plan.h"
#include "base/output_file.h"
#include "base/sanitize.h"
#include "hw/gpu_table.h"
#include "plan/planner.h"
#include "plan/render.h"

namespace gpuscope::cli {

namespace {

int Fail(const Status& s) {
  PrintError(s);
  return ExitCodeFor(s);
}

// The best configuration's snippets as files in `dir` (created); what a framework cannot express
// is not written; the .sh scripts are executable. Names go to stderr, so stdout stays the document.
Status WriteConfigs(const plan::PlanRequest& r, const plan::ParallelConfig& c,
                    const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::Error(StatusCode::kIoError, "--write-configs " + dir + ": " + ec.message());
  for (const plan::ConfigSnippet& sn : plan::Snippets(r, c)) {
    if (sn.text.empty()) continue;
    const std::filesystem::path path = std::filesystem::path(dir) / sn.file;
    std::string note;
    if (Status s = WriteOutputFile(path.string(), sn.text, "--write-configs", &note); !s.ok())
      return s;
    if (path.extension() == ".sh") {  // a script with its #! line: runnable as ./name.sh
      namespace fs = std::filesystem;
      fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add, ec);
      if (ec)
        return Status::Error(StatusCode::kIoError, path.string() + ": chmod +x: " + ec.message());
    }
    std::fprintf(stderr, "wrote %s%s\n", SanitizeText(path.string()).c_str(), note.c_str());
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
  plan->add_option("--precision", o->precision,
                   "bf16, fp16 (autocast), fp32 (PyTorch's default: matmuls on CUDA cores), tf32 "
                   "(fp32 with allow_tf32 = True) or fp8 (Transformer Engine; only when asked). "
                   "Default: bf16 (fp16 where the GPU has no bf16)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32", "tf32", "fp8"}));
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
  plan->add_flag("--sp", o->sp,
                 "Sequence parallel (with --tp > 1; default on when TP is searched)");
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
  plan->add_option(
      "--from-trace", o->from_trace,
      "Calibrate from a run of this model and configuration: a trace fits time and memory, a "
      "CUDA memory snapshot memory only");
  plan->add_option("--impl", o->impl,
                   "Whose modules run the model: megatron (fused kernels), te (Transformer Engine: "
                   "the same formulas) or hf (Hugging Face's eager modules). Default: megatron "
                   "under --framework megatron, hf under DeepSpeed, FSDP and DDP")
      ->check(CLI::IsMember({"megatron", "te", "hf"}));
  auto* exact = plan->add_flag(
      "--exact", o->exact,
      "Exact mode: run one training step of the config's Hugging Face model on fake tensors (no "
      "GPU, no weights) with the first Python that has torch >= 2 and transformers "
      "($GPUSCOPE_PYTHON alone when set; else the active venv, python3, this tree's .venv) to "
      "measure activation memory and price every op on the roofline (docs/planner.md)");
  auto* no_exact = plan->add_flag(
      "--no-exact", o->no_exact,
      "Formulas only. Without --exact or --no-exact, a config.json file planned for Hugging Face "
      "code (not --framework megatron) is measured when such a Python is found");
  no_exact->excludes(exact);
  plan->add_option("--exact-from", o->exact_from,
                   "Exact mode from a saved measurement (the JSON python/gpuscope/exact.py prints)")
      ->excludes(exact)
      ->excludes(no_exact);
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
  api::PlanOptions po;
  po.model = o.model;
  po.gpu = o.gpu;
  po.gpu_spec = o.gpu_spec;
  po.gpus = o.gpus;
  po.global_batch = o.global_batch;
  po.seq_len = o.seq_len;
  po.precision = o.precision;
  po.optimizer = o.optimizer;
  po.zero = o.zero;
  po.recompute = o.recompute;
  po.offload = o.offload;
  po.framework = o.framework;
  po.fsdp = o.fsdp;
  po.hybrid = o.hybrid;
  po.bf16_grads = o.bf16_grads;
  po.sp = o.sp;
  po.no_flash = o.no_flash;
  po.no_dropout = o.no_dropout;
  po.tp = o.tp;
  po.pp = o.pp;
  po.vpp = o.vpp;
  po.mbs = o.mbs;
  po.efficiency = o.efficiency;
  po.context_gib = o.context_gib;
  po.headroom = o.headroom;
  po.inter_node_gbps = o.inter_node_gbps;
  po.top = o.top;
  po.from_trace = o.from_trace;
  po.exact = o.exact;
  po.no_exact = o.no_exact;
  po.impl = o.impl;
  po.exact_from = o.exact_from;
  auto planned = api::PlanJob(po);
  if (!planned.ok()) return Fail(planned.status());
  if (const int rc = Emit(planned->document, o.out); rc != 0) return rc;
  if (!o.write_configs.empty() && !planned->report.feasible.empty()) {
    if (Status s = WriteConfigs(planned->request, planned->report.feasible.front().config,
                                o.write_configs);
        !s.ok())
      return Fail(s);
  }
  if (!planned->fits.ok()) return Fail(planned->fits);
  return kExitOk;
}

}  // namespace gpuscope::cli
