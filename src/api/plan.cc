#include "api/plan.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "analyze/memory_snapshot.h"
#include "gpuscope/ingest.h"
#include "hw/gpu_table.h"
#include "ingest/registry.h"
#include "io/byte_source.h"
#include "plan/render.h"
#include "report/report.h"

namespace gpuscope::api {

namespace {

Result<plan::TraceMeasurement> MeasureTrace(const std::string& path) {
  std::optional<monitor::Recording> recording;
  std::optional<snapshot::Snapshot> snap;
  GPUSCOPE_TRY(loaded, ingest::LoadInputs(path, LoadOptions{}, &recording, &snap));
  plan::TraceMeasurement m;
  m.source = path;
  if (snap) {
    // A CUDA memory snapshot: the peak allocated of the step it recorded, no step time.
    const analyze::SnapshotAnalysis a = analyze::AnalyzeSnapshot(*snap);
    m.memory_only = true;
    m.ranks = 1;
    m.peak_allocated_bytes = static_cast<double>(a.peak_allocated_bytes);
    return m;
  }
  if (recording)
    return Status::Error(StatusCode::kInvalidInput,
                         path +
                             ": a monitor recording has neither step times nor allocated memory "
                             "(hint: --from-trace takes a torch.profiler trace, an Nsight Systems "
                             "export or a CUDA memory snapshot of this model)");
  if (loaded->traces.empty())
    return Status::Error(StatusCode::kInvalidInput, path + ": no readable trace");
  const report::Report rep = report::BuildReport(loaded->traces, loaded->failures);
  m.ranks = rep.ranks.size();
  for (const report::RankReport& rr : rep.ranks) {
    // The slowest rank sets the step time of a synchronous data-parallel job.
    const double step_s = static_cast<double>(rr.steps.mean_steady_step_ns) / 1e9;
    if (step_s > m.step_s) {
      m.step_s = step_s;
      m.steps = rr.steps.steady_count;
    }
    const analyze::OpCosts& oc = rr.op_costs;
    if (oc.shapes && oc.op_ns > 0) {
      int64_t math = 0;
      for (int64_t ns : oc.math_ns) math += ns;
      m.math_share = static_cast<double>(math) / static_cast<double>(oc.op_ns);
    }
    for (const analyze::DeviceMemory& d : rr.memory.devices)
      m.peak_allocated_bytes =
          std::max(m.peak_allocated_bytes, static_cast<double>(d.peak_allocated_bytes));
  }
  return m;
}

Status Usage(std::string message) { return Status::Error(StatusCode::kUsage, std::move(message)); }

// What the table cannot say: the options a plan needs, and combinations of values.
Status CheckOptions(const PlanOptions& o) {
  std::vector<std::string> missing;
  if (o.model.empty()) missing.push_back("--model");
  if (o.gpu.empty() && o.gpu_spec.empty()) missing.push_back("--gpu (or --gpu-spec)");
  if (!o.gpus) missing.push_back("--gpus");
  if (!o.global_batch) missing.push_back("--global-batch");
  if (!o.seq_len) missing.push_back("--seq-len");
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    return Usage("plan needs " + list +
                 " (hint: gpuscope plan --model llama-3-8b --gpu h100-sxm --gpus 8 "
                 "--global-batch 64 --seq-len 4096)");
  }
  GPUSCOPE_RETURN_IF_ERROR(api::CheckOptions(PlanOptionTable(), o));
  if (o.sp && o.tp && *o.tp == 1) return Usage("--sp needs --tp > 1");
  if (o.exact || !o.exact_from.empty()) {
    if (o.precision == "fp8")
      return Usage("exact mode measures fp32, tf32, bf16 and fp16, not fp8");
    if (o.recompute == "selective")
      return Usage(
          "exact mode measures --recompute none or full (Hugging Face gradient checkpointing)");
  }
  return Status::Ok();
}

// The request the options describe (the model's config and the GPU read).
Result<plan::PlanRequest> RequestOf(const PlanOptions& o) {
  plan::PlanRequest r;
  GPUSCOPE_TRY(model, plan::LoadModelConfig(o.model));
  r.model = *model;
  GPUSCOPE_TRY(gpu, o.gpu_spec.empty() ? hw::FindGpu(o.gpu) : hw::ParseGpuSpec(o.gpu_spec));
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
  // Values CheckOptions let through: each parses by its enum's name table.
  if (!o.precision.empty()) r.precision = *FromName(hw::kPrecisionNames, o.precision);
  r.optimizer = *FromName(plan::kOptimizerNames, o.optimizer);
  if (o.fsdp) {
    r.framework = plan::Framework::kFsdp;
    r.sharding = plan::Sharding::kZero3;
  }
  if (!o.framework.empty()) r.framework = *FromName(plan::kFrameworkNames, o.framework);
  r.hybrid = o.hybrid;
  r.bf16_grads = o.bf16_grads;
  if (!o.zero.empty()) r.sharding = static_cast<plan::Sharding>(o.zero[0] - '0');
  if (!o.recompute.empty()) r.recompute = *FromName(plan::kRecomputeNames, o.recompute);
  r.offload = *FromName(plan::kOffloadNames, o.offload);
  r.tp = o.tp;
  r.pp = o.pp;
  r.vpp = o.vpp;
  r.mbs = o.mbs;
  if (o.sp)
    r.sp = true;
  else if (o.tp)
    r.sp = false;  // a given TP without --sp means no sequence parallelism
  if (!o.impl.empty()) a.impl = *FromName(plan::kImplNames, o.impl);
  return r;
}

// Exact mode: the step measured (--exact, or auto) or read (--exact-from) into the request's
// assumptions; auto mode's failure is a note, never an error.
Status AddExactMeasurement(const PlanOptions& o, plan::PlanRequest* request) {
  plan::PlanRequest& r = *request;
  auto& a = r.assumptions;
  // Auto: a config file planned for Hugging Face code, with a precision and recompute exact mode
  // measures, when a Python with torch and transformers is there.
  bool measure = o.exact;
  // A config file python can read (not a bundled name; a pipe or FIFO was consumed by the config
  // reader, and opening a FIFO again would block).
  std::error_code no_throw;
  const bool model_is_file = std::filesystem::is_regular_file(o.model, no_throw);
  std::string exact_python;  // "" = MeasureStep's default ($GPUSCOPE_PYTHON, else python3)
  if (!o.exact && o.exact_from.empty() && !o.no_exact && o.framework != "megatron" &&
      (o.impl.empty() || o.impl == "hf") && o.precision != "fp8" && o.recompute != "selective" &&
      o.from_trace.empty()) {
    if (model_is_file) {
      if (plan::ExactModeAvailable(&exact_python)) {
        measure = true;
      } else {
        a.exact_note = "exact mode: no torch and transformers in " + exact_python +
                       " (set GPUSCOPE_PYTHON to a Python that has them): Hugging Face activations "
                       "and step time are formulas";
      }
    }
  }
  if (measure || !o.exact_from.empty()) {
    Result<plan::MeasuredStep> step = Status::Ok();
    if (measure) {
      plan::ExactRequest x;
      x.config_path = o.model;
      if (!model_is_file)
        return Usage("--exact needs --model to be a Hugging Face config.json file (" + o.model +
                     " is not a file)");
      const int64_t per_gpu = std::max<int64_t>(1, *o.global_batch / std::max<int64_t>(1, *o.gpus));
      x.batch = o.mbs.value_or(per_gpu);
      x.seq_len = *o.seq_len;
      // The search's default precision: bf16, fp16 where the GPU has no bf16.
      x.precision = !o.precision.empty() ? o.precision : r.gpu.tflops_bf16 > 0 ? "bf16" : "fp16";
      x.recompute = o.recompute == "full" ? "full" : "none";
      x.optimizer = o.optimizer == "sgd" ? "sgd" : "adam";
      // --exact: the first Python that has torch; none: the default one, whose error says so.
      if (exact_python.empty() && !plan::ExactModeAvailable(&exact_python)) exact_python.clear();
      x.python = exact_python;
      step = plan::MeasureStep(x);
    } else {
      GPUSCOPE_TRY(source, io::OpenByteSource(o.exact_from));
      auto text = io::ReadHead(**source, size_t{64} << 20);  // a measurement is ~20 KB
      GPUSCOPE_RETURN_IF_ERROR(text.status());
      step = plan::ParseMeasuredStep(*text, o.exact_from);
    }
    if (step.ok()) {
      a.measured = std::make_shared<const plan::MeasuredStep>(std::move(*step));
    } else if (o.exact || !o.exact_from.empty()) {
      return step.status();
    } else {
      // Auto mode never fails the plan: formulas, and the reason.
      a.exact_note = "exact mode failed, formulas used: " + step.status().message();
    }
  }

  return Status::Ok();
}

// --from-trace: the traced configuration fitted to the trace (or snapshot), and the layout
// freed for the re-plan under the fitted constants.
Result<std::optional<plan::Calibration>> CalibrateFromTrace(const PlanOptions& o,
                                                            plan::PlanRequest* request) {
  plan::PlanRequest& r = *request;
  auto& a = r.assumptions;
  std::optional<plan::Calibration> calibration;
  if (!o.from_trace.empty()) {
    // The traced configuration = the options, with unset degrees at their plain defaults.
    GPUSCOPE_RETURN_IF_ERROR(plan::ValidateRequest(r));
    plan::ParallelConfig traced;
    traced.gpus = r.gpus;
    traced.tp = r.tp.value_or(1);
    traced.pp = r.pp.value_or(1);
    traced.vpp = r.vpp.value_or(1);
    if (r.gpus % (traced.tp * traced.pp) != 0) return Usage("--gpus is not a multiple of tp × pp");
    traced.dp = r.gpus / (traced.tp * traced.pp);
    traced.sp = r.sp.value_or(false);
    traced.mbs = r.mbs.value_or(r.global_batch / std::max<int64_t>(1, traced.dp));
    if (traced.mbs <= 0 || r.global_batch % (traced.mbs * traced.dp) != 0)
      return Usage("the traced configuration's --global-batch " + std::to_string(r.global_batch) +
                   " is not divisible by mbs × dp (give --mbs)");
    traced.grad_accum = r.global_batch / (traced.mbs * traced.dp);
    traced.sharding = r.sharding.value_or(plan::Sharding::kNone);
    traced.recompute = r.recompute.value_or(plan::Recompute::kNone);
    traced.precision =
        r.precision.value_or(r.gpu.tflops_bf16 > 0 ? hw::Precision::kBf16 : hw::Precision::kFp16);
    traced.optimizer = *r.optimizer;
    traced.offload = r.offload;
    traced.hybrid = r.hybrid;
    traced.bf16_grads = r.bf16_grads;
    // The trace does not say which framework ran it: the one given, else the one the layout
    // implies (tp/pp: Megatron; sharding: DeepSpeed; neither: DDP).
    traced.framework = r.framework.value_or(
        traced.tp > 1 || traced.pp > 1             ? plan::Framework::kMegatron
        : traced.sharding != plan::Sharding::kNone ? plan::Framework::kDeepSpeed
                                                   : plan::Framework::kDdp);
    GPUSCOPE_TRY(measured, MeasureTrace(o.from_trace));
    GPUSCOPE_TRY(cal, plan::Calibrate(r.model, r.gpu, traced, r.seq_len, a, *measured));
    calibration = *cal;
    if (!measured->memory_only) a.hf_ops_priced = false;  // what was fitted is the η formula
    a.efficiency = cal->efficiency;
    a.overhead_bytes = cal->overhead_bytes;
    a.activation_scale = cal->activation_scale;
    a.other_s_per_token = cal->other_s_per_token;
    // Re-plan: the same job size with the layout searched afresh under the fitted constants.
    r.SearchLayout();
    r.sp.reset();
  }

  return calibration;
}

}  // namespace

const OptionTable<PlanOptions>& PlanOptionTable() {
  using O = PlanOptions;
  static const OptionTable<O> table = {
      {"model", &O::model, "Hugging Face config.json, or a bundled model name (--list-models)"},
      {"gpu", &O::gpu, "GPU name or alias (--list-gpus)"},
      {"gpu-spec", &O::gpu_spec,
       "Custom GPU NAME:MEM_GIB:BF16_TFLOPS:HBM_GBPS[:INTRA_NODE_GBPS[:FP8_TFLOPS]]"},
      {"gpus", &O::gpus, "Number of GPUs N"},
      {"global-batch", &O::global_batch, "Sequences per optimizer step (GBS)"},
      {"seq-len", &O::seq_len, "Sequence length in tokens"},
      {"precision", &O::precision,
       "bf16, fp16 (autocast), fp32 (PyTorch's default: matmuls on CUDA cores), tf32 (fp32 with "
       "allow_tf32 = True) or fp8 (Transformer Engine; only when asked). Default: bf16 (fp16 "
       "where the GPU has no bf16)",
       NamesOf(hw::kPrecisionNames)},
      {"optimizer", &O::optimizer, "adam, adam8bit or sgd (with momentum)",
       NamesOf(plan::kOptimizerNames)},
      {"framework", &O::framework,
       "megatron, deepspeed, fsdp or ddp: whose memory rules and config files the plan follows "
       "(default: searched over those that run the layout)",
       NamesOf(plan::kFrameworkNames)},
      {"zero",
       &O::zero,
       "Sharding stage 0-3 (default: searched): DeepSpeed's ZeRO stage; Megatron 1 = "
       "--use-distributed-optimizer; FSDP 2 = SHARD_GRAD_OP, 3 = FULL_SHARD",
       {"0", "1", "2", "3"}},
      {"fsdp",
       &O::fsdp,
       "Shorthand for --framework fsdp --zero 3 (FULL_SHARD)",
       {},
       {},
       {"zero", "framework"}},
      {"hybrid", &O::hybrid,
       "FSDP HYBRID_SHARD: full sharding within a node, replicas across nodes"},
      {"grad-reduce-in-bf16", &O::bf16_grads,
       "Megatron-LM: bf16 main gradients instead of the fp32 default under --bf16"},
      {"tp", &O::tp, "Tensor-parallel degree t"},
      {"pp", &O::pp, "Pipeline-parallel degree p (1F1B)"},
      {"vpp", &O::vpp, "Interleaved chunks per pipeline device v"},
      {"sp", &O::sp, "Sequence parallel (with --tp > 1; default on when TP is searched)"},
      {"mbs", &O::mbs, "Micro-batch size per GPU"},
      {"recompute", &O::recompute, "Activation checkpointing: none, selective, full",
       NamesOf(plan::kRecomputeNames)},
      {"offload", &O::offload,
       "CPU offload: none, optimizer (ZeRO-Offload), params (ZeRO-3 + params)",
       NamesOf(plan::kOffloadNames)},
      {"efficiency", &O::efficiency, "Share of dense peak reached by matmuls, η"},
      {"context-gib", &O::context_gib, "CUDA context + NCCL + workspaces per GPU, GiB"},
      {"headroom", &O::headroom, "Allocator headroom: budget = capacity × (1 − headroom)"},
      {"inter-node-gbps", &O::inter_node_gbps, "Network bandwidth per GPU between nodes, GB/s"},
      {"no-flash", &O::no_flash, "Explicit attention (stores the s² softmax)"},
      {"no-dropout", &O::no_dropout, "Dropout off: no mask bytes"},
      {"top", &O::top, "Configurations shown", {}, std::pair<double, double>{1, 1000}},
      {"from-trace", &O::from_trace,
       "Calibrate from a run of this model and configuration: a trace fits time and memory, a "
       "CUDA memory snapshot memory only"},
      {"impl", &O::impl,
       "Whose modules run the model: megatron (fused kernels), te (Transformer Engine: the same "
       "formulas) or hf (Hugging Face's eager modules). Default: megatron under --framework "
       "megatron, hf under DeepSpeed, FSDP and DDP",
       NamesOf(plan::kImplNames)},
      {"exact", &O::exact,
       "Exact mode: run one training step of the config's Hugging Face model on fake tensors (no "
       "GPU, no weights) with the first Python that has torch >= 2 and transformers "
       "($GPUSCOPE_PYTHON alone when set; else the active venv, python3, this tree's .venv) to "
       "measure activation memory and price every op on the roofline (docs/planner.md)"},
      {"no-exact",
       &O::no_exact,
       "Formulas only. Without --exact or --no-exact, a config.json file planned for Hugging Face "
       "code (not --framework megatron) is measured when such a Python is found",
       {},
       {},
       {"exact"}},
      {"exact-from",
       &O::exact_from,
       "Exact mode from a saved measurement (the JSON python/gpuscope/exact.py prints)",
       {},
       {},
       {"exact", "no-exact"}},
  };
  return table;
}
Result<Planned> PlanJob(const PlanOptions& o) {
  GPUSCOPE_RETURN_IF_ERROR(CheckOptions(o));
  GPUSCOPE_TRY(request, RequestOf(o));
  plan::PlanRequest r = std::move(*request);
  GPUSCOPE_RETURN_IF_ERROR(AddExactMeasurement(o, &r));
  GPUSCOPE_TRY(calibrated, CalibrateFromTrace(o, &r));
  const std::optional<plan::Calibration>& calibration = *calibrated;
  GPUSCOPE_TRY(rep, plan::Plan(r));
  Planned out;
  out.document = plan::BuildDocument(*rep, calibration ? &*calibration : nullptr);
  if (rep->feasible.empty()) {
    std::string hint;
    for (const std::string& s : rep->suggestions) hint += (hint.empty() ? "" : "; ") + s;
    out.fits = Status::Error(
        StatusCode::kInvalidInput,
        std::string(rep->exact ? "the configuration does not fit" : "no configuration fits") +
            " in " + r.gpu.name + " memory (" + hint + ")");
  }
  out.request = std::move(r);
  out.report = std::move(*rep);
  return out;
}

}  // namespace gpuscope::api
