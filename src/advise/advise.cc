#include "advise/advise.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <set>
#include <utility>

#include "base/utf8.h"
#include "render/build.h"
#include "render/format.h"

namespace gpuscope::advise {

namespace {

using namespace render::build;  // the document-builder vocabulary

double Share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

render::Severity SeverityFor(double saving_share) {
  if (saving_share >= kCriticalSavingShare) return render::Severity::kCritical;
  if (saving_share >= kWarningSavingShare) return render::Severity::kWarning;
  return render::Severity::kInfo;
}

// A finding as its rule states it: what it is, its saving per step and the assumption behind
// that saving (one sentence), and the evidence. The engine fills the rest (id, confidence, the
// table's fix unless the rule made it more specific, saving share, severity).
Finding Found(std::string title, int64_t saving_ns_per_step, std::string saving_assumption,
              std::vector<render::Field> evidence) {
  Finding f;
  f.title = std::move(title);
  f.estimated_saving_ns_per_step = saving_ns_per_step;
  f.saving_assumption = std::move(saving_assumption);
  f.evidence = std::move(evidence);
  return f;
}

int64_t StepCat(const analyze::StepsResult& s, analyze::StepCategory c) {
  return s.mean_steady_ns[static_cast<size_t>(c)];
}

// ---- The rules. Each has its fix (k<Rule>Fix), the evidence keys it writes (k<Rule>Evidence,
// for docs/advice.md) and a function that appends its findings, reading only the inputs its entry
// in MakeRules() names; that entry gives its id, inputs, threshold, saving model, confidence and
// verdict. ----

constexpr const char* kInputPipelineStallFix =
    "Load batches in background workers: DataLoader(..., num_workers=N (start with the CPU "
    "cores per GPU), pin_memory=True, persistent_workers=True, prefetch_factor=2), and copy "
    "with .to(device, non_blocking=True).";
constexpr const char* kInputPipelineStallEvidence =
    "dataloader_share, dataloader_per_step_ns, mean_step_ns";

// Time in the step where only the DataLoader runs.
void InputPipelineStall(const RuleContext& c, std::vector<Finding>* out) {
  const int64_t dataloader = StepCat(*c.in.steps, analyze::StepCategory::kDataLoader);
  if (!(Share(dataloader, c.step_ns) > kInputStallShare)) return;
  out->push_back(Found(
      "The GPU waits for the input pipeline", dataloader,
      "Loading the next batch in worker processes hides the DataLoader time that nothing else "
      "overlaps today; the main process's own work stays.",
      {F("dataloader_share", "DataLoader share of the step", ShareOf(dataloader, c.step_ns)),
       F("dataloader_per_step_ns", "DataLoader time per step", Value::Nanos(dataloader)),
       F("mean_step_ns", "mean step", Value::Nanos(c.step_ns))}));
}

constexpr const char* kExposedCommunicationFix =
    "Let DDP overlap gradient all-reduce with backward: DistributedDataParallel(model, "
    "bucket_cap_mb=25 (tune 10-100), gradient_as_bucket_view=True, static_graph=True when the "
    "graph is fixed); avoid synchronising before the optimizer; with FSDP, enable forward/"
    "backward prefetch.";
constexpr const char* kExposedCommunicationEvidence =
    "exposed_comm_per_step_ns, exposed_comm_share, comm_compute_overlap_share (when HTA's "
    "overlap is known)";

// Communication with no kernel beside it (step category).
void ExposedCommunication(const RuleContext& c, std::vector<Finding>* out) {
  const int64_t comm = StepCat(*c.in.steps, analyze::StepCategory::kCommunication);
  if (!(Share(comm, c.step_ns) > kExposedCommShare)) return;
  Finding f = Found(
      "Communication is not hidden behind compute", comm,
      "Overlapping the collectives with backward compute hides at most the communication time "
      "that today runs with no kernel beside it.",
      {F("exposed_comm_per_step_ns", "exposed communication per step", Value::Nanos(comm)),
       F("exposed_comm_share", "share of the step", ShareOf(comm, c.step_ns))});
  if (c.in.gpu_time->comm_compute_overlap_ratio >= 0) {
    f.evidence.push_back(F("comm_compute_overlap_share",
                           "communication under compute (HTA overlap)",
                           Value::Share(c.in.gpu_time->comm_compute_overlap_ratio)));
  }
  out->push_back(std::move(f));
}

constexpr const char* kFp32MathFix =
    "Train in bf16: with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16): "
    "around forward and loss; or at least torch.backends.cuda.matmul.allow_tf32 = "
    "True and torch.backends.cudnn.allow_tf32 = True.";
constexpr const char* kFp32MathEvidence =
    "fp32_path_math_share, fp32_path_math_per_step_ns, bf16_math_per_step_ns (cost model), "
    "autocast_casts_per_step_ns (cost model), tf32_saving_per_step_ns (cost model), "
    "predicted_step_ns, tensor_core_math_share, compute_capability (text)";

// What bf16 autocast (and, where fp32 runs on CUDA cores, TF32) would make of the math that runs
// on fp32 paths, from the per-op cost model: per priced GEMM/conv/attention group on fp32 CUDA
// cores, TF32 or 3xTF32, a compute-bound op keeps its efficiency at the bf16 peak (time × peak
// ratio, achievable peaks), a memory-bound one moves half the bytes; autocast adds its casts.
struct PrecisionPrediction {
  int64_t math_ns = 0;      // per step, all priced GEMM/conv/attention ops
  int64_t fp32_ns = 0;      // per step, on fp32 paths
  int64_t bf16_ns = 0;      // the same ops in bf16
  int64_t casts_ns = 0;     // autocast's casts
  int64_t tf32_ns = 0;      // the same ops with TF32 allowed (CUDA-core GEMM/conv only change)
  bool cuda_cores = false;  // most of fp32_ns is on CUDA cores (TF32 is then the one-line fix)
};

bool PredictPrecision(const RuleContext& c, PrecisionPrediction* p) {
  const analyze::OpCosts* o = c.in.op_costs;
  if (!o || !o->shapes || !o->peaks) return false;
  const hw::GpuPeaks& pk = *o->peaks;
  if (!(pk.Of(hw::MathPath::kBf16).Roof() > 0)) return false;
  double fp32 = 0, to_bf16 = 0, to_tf32 = 0, cuda = 0;
  for (const analyze::OpCostGroup& g : o->groups) {
    if (!g.math || g.unpriced != analyze::Unpriced::kPriced) continue;
    if (g.path != hw::MathPath::kFp32Cuda && g.path != hw::MathPath::kTf32 &&
        g.path != hw::MathPath::kTf32x3) {
      continue;
    }
    const double t = static_cast<double>(g.time_ns);
    fp32 += t;
    to_bf16 += analyze::Bf16TimeNs(g, pk);
    to_tf32 += analyze::Tf32TimeNs(g, pk);
    if (g.path == hw::MathPath::kFp32Cuda) cuda += t;
  }
  if (!(fp32 > 0)) return false;
  double math = 0;  // all priced GEMM/conv/attention time (their layout transposes included)
  for (const analyze::OpCostGroup& g : o->groups)
    if (g.math && g.unpriced == analyze::Unpriced::kPriced) math += static_cast<double>(g.time_ns);
  const double steps = static_cast<double>(c.step_count);
  p->math_ns = static_cast<int64_t>(math / steps);
  p->fp32_ns = static_cast<int64_t>(fp32 / steps);
  p->bf16_ns = static_cast<int64_t>(to_bf16 / steps);
  p->tf32_ns = static_cast<int64_t>(to_tf32 / steps);
  p->casts_ns = static_cast<int64_t>(o->fp32_forward_math_input_bytes_per_step *
                                     kAutocastCastTraffic / pk.hbm_gbps.Roof());
  p->cuda_cores = cuda > fp32 / 2;
  return true;
}

// Math on fp32 paths (CUDA cores, TF32, 3xTF32) on a GPU with tensor cores.
void Fp32Math(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::KernelsResult& k = *c.in.kernels;
  const int32_t cc = c.in.summary->compute_major;
  if (!(cc >= 7)) return;
  auto version = [&c, cc] {  // a version, not a quantity: "7.0"
    return Value::Text(std::to_string(cc) + "." + std::to_string(c.in.summary->compute_minor));
  };
  PrecisionPrediction p;
  if (PredictPrecision(c, &p) && cc >= 8) {
    const int64_t math_per_step = p.math_ns;
    if (!(Share(p.fp32_ns, math_per_step) > kFp32MathShare)) return;
    int64_t saving = p.fp32_ns - p.bf16_ns - p.casts_ns;
    int64_t tf32_saving = p.fp32_ns - p.tf32_ns;
    // The replay, where there is one: the same costs on the step's dependency graph.
    if (const whatif::WhatIfResults* w = c.in.whatif; w && w->replayed) {
      const whatif::FixResult* bf16 = w->Fix("bf16");
      const whatif::FixResult* tf32 = w->Fix("tf32");
      if (bf16) saving = bf16->saving_ns;
      if (tf32) tf32_saving = tf32->saving_ns;
    }
    Finding f =
        Found(p.cuda_cores ? "Matrix math runs in fp32 on CUDA cores, not on tensor cores"
                           : "Matrix math runs in fp32 (TF32) where bf16 tensor cores are faster",
              std::max<int64_t>(saving, 0),
              "Under bf16 autocast each GEMM/conv/attention op that runs on an fp32 path keeps its "
              "efficiency at the bf16 peak (compute-bound: time × peak ratio, achievable peaks) or "
              "moves half the bytes (memory-bound); autocast adds its casts (3× the fp32 inputs of "
              "forward GEMM/conv ops at HBM bandwidth); all other ops unchanged.",
              {F("fp32_path_math_share", "share of GEMM/conv/attention time on fp32 paths",
                 ShareOf(p.fp32_ns, math_per_step)),
               F("fp32_path_math_per_step_ns", "that math per step", Value::Nanos(p.fp32_ns)),
               F("bf16_math_per_step_ns", "the same ops in bf16", Value::Nanos(p.bf16_ns)),
               F("autocast_casts_per_step_ns", "autocast's casts", Value::Nanos(p.casts_ns)),
               F("predicted_step_ns", "predicted step in bf16",
                 Value::Nanos(c.step_ns - std::max<int64_t>(saving, 0))),
               F("tf32_saving_per_step_ns", "TF32 alone would save", Value::Nanos(tf32_saving)),
               F("tensor_core_math_share", "tensor-core share of math",
                 ShareOf(k.tensor_core_ns, k.math_ns)),
               F("compute_capability", "compute capability", version())});
    f.fix =
        "Train in bf16: with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16): "
        "around forward and loss (predicted step " +
        render::FormatDurationApprox(
            static_cast<double>(c.step_ns - std::max<int64_t>(saving, 0))) +
        ").";
    if (p.cuda_cores && tf32_saving > 0) {
      f.fix +=
          " One line short of that: torch.backends.cuda.matmul.allow_tf32 = True and "
          "torch.backends.cudnn.allow_tf32 = True (saves ~" +
          render::FormatDurationApprox(static_cast<double>(tf32_saving)) + " per step).";
    }
    out->push_back(std::move(f));
    return;
  }
  // Without shapes (or an unknown GPU): the CUDA-core fp32 kernel time, at the fixed conservative
  // speed-up.
  const int64_t fp32 =
      k.math_ns_by_precision[static_cast<size_t>(analyze::MathPrecision::kFp32Simt)];
  if (!(Share(fp32, k.math_ns) > kFp32MathShare)) return;
  const int64_t per_step = fp32 / c.step_count;
  Finding f = Found(
      "Matrix math runs in fp32 on CUDA cores, not on tensor cores",
      static_cast<int64_t>(static_cast<double>(per_step) * (1.0 - 1.0 / kAssumedTensorCoreSpeedup)),
      "Without recorded shapes (record_shapes=True) the cost model cannot price the ops: tensor-"
      "core kernels are assumed to run the same GEMMs and convolutions at least 2x faster (a "
      "conservative share of the 8-16x peak ratio); other kernels unchanged.",
      {F("fp32_path_math_share", "fp32 CUDA-core share of GEMM/conv/attention time",
         ShareOf(fp32, k.math_ns)),
       F("fp32_path_math_per_step_ns", "fp32 math time per step", Value::Nanos(per_step)),
       F("tensor_core_math_share", "tensor-core share of math",
         ShareOf(k.tensor_core_ns, k.math_ns)),
       F("compute_capability", "compute capability", version())});
  // The table's fix is bf16 (compute 8.x+); 7.x has fp16 tensor cores only.
  if (cc < 8) {
    f.fix =
        "Use mixed precision: torch.autocast(device_type=\"cuda\", dtype=torch.float16) "
        "with torch.cuda.amp.GradScaler (this GPU has fp16 tensor cores, no bf16).";
  }
  out->push_back(std::move(f));
}

// ---- Rules of the per-op cost model (docs/cost-model.md). Each reads op_costs, which holds
// nothing without record_shapes=True. ----

constexpr const char* kNchwLayoutFix =
    "Use channels_last: model = model.to(memory_format=torch.channels_last) and inputs "
    "x = x.to(memory_format=torch.channels_last) (best with bf16 autocast: cuDNN's tensor-core "
    "convolutions want NHWC).";
constexpr const char* kNchwLayoutEvidence = "layout_transpose_per_step_ns, conv_per_step_ns";

// cuDNN transposes NCHW tensors to NHWC and back around its tensor-core convolutions.
void NchwLayout(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::OpCosts& o = *c.in.op_costs;
  const int64_t layout = o.layout_ns / c.step_count;
  if (!(Share(layout, c.step_ns) > kLayoutShare)) return;
  int64_t conv = 0;
  for (const analyze::OpCostGroup& g : o.groups)
    if (g.family == analyze::OpFamily::kConv) conv += g.time_ns;
  out->push_back(
      Found("Convolutions run in NCHW: cuDNN transposes every tensor to NHWC and back", layout,
            "channels_last removes cuDNN's NCHW↔NHWC transpose kernels (their measured time); the "
            "convolutions themselves are left as they are.",
            {F("layout_transpose_per_step_ns", "layout transposes per step", Value::Nanos(layout)),
             F("conv_per_step_ns", "convolution time per step (transposes included)",
               Value::Nanos(conv / c.step_count))}));
}

constexpr const char* kFusionFix =
    "Fuse the chains: model = torch.compile(model) turns each chain of elementwise kernels into "
    "one kernel (or use the fused op: torch.nn.functional.gelu(x, approximate=\"tanh\"), "
    "torch.nn.functional.rms_norm, torch.nn.functional.silu).";
constexpr const char* kFusionEvidence =
    "unfused_per_step_ns, fused_per_step_ns, chains, chain_N (op sequence), chain_N_kernels, "
    "chain_N_per_step_ns";

// Memory-bound elementwise chains that one fused kernel would do in one pass.
void UnfusedElementwise(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::OpCosts& o = *c.in.op_costs;
  double time = 0, fused = 0;
  for (const analyze::FusionChain& f : o.fusion) {
    time += static_cast<double>(f.time_ns);
    fused += f.fused_ns;
  }
  const double steps = static_cast<double>(c.step_count);
  const int64_t saving = static_cast<int64_t>((time - fused) / steps);
  if (!(Share(saving, c.step_ns) > kFusionShare)) return;
  Finding f = Found(
      "Chains of elementwise kernels each read and write the whole tensor", saving,
      "One fused kernel per chain reads and writes once: the chain's largest op's bytes at the "
      "measured HBM bandwidth, instead of every kernel's (GPU time of the chains today minus "
      "that).",
      {F("unfused_per_step_ns", "those chains per step",
         Value::Nanos(static_cast<int64_t>(time / steps))),
       F("fused_per_step_ns", "fused", Value::Nanos(static_cast<int64_t>(fused / steps))),
       F("chains", "distinct chains", Count(o.fusion.size()))});
  bool gelu = false;
  for (size_t i = 0; i < o.fusion.size() && i < 3; ++i) {
    const analyze::FusionChain& ch = o.fusion[i];
    const std::string n = std::to_string(i + 1);
    f.evidence.push_back(F("chain_" + n, "chain " + n, Value::Text(ch.ops)));
    f.evidence.push_back(F("chain_" + n + "_kernels", "kernels", Count(ch.kernels)));
    f.evidence.push_back(
        F("chain_" + n + "_per_step_ns", "per step",
          Value::Nanos(static_cast<int64_t>(static_cast<double>(ch.time_ns) / steps))));
    gelu = gelu || (ch.ops.find("aten::tanh") != std::string::npos &&
                    ch.ops.find("aten::pow") != std::string::npos);
  }
  if (gelu) {
    f.fix = std::string(kFusionFix) +
            " The tanh/pow chain is GELU written out (Hugging Face's NewGELUActivation, "
            "\"gelu_new\"): set the config's activation_function (GPT-2) or hidden_act to "
            "\"gelu_pytorch_tanh\", one fused kernel with the same numerics.";
  }
  out->push_back(std::move(f));
}

// "8,192×50,257×1,024 (M×N×K<suffix>)": a GEMM group's shape for evidence.
std::string GemmShape(const analyze::OpCostGroup& g, const std::string& suffix) {
  return render::FormatNumber(g.gemm_m, 0) + "×" + render::FormatNumber(g.gemm_n, 0) + "×" +
         render::FormatNumber(g.gemm_k, 0) + " (M×N×K" + suffix + ")";
}

constexpr const char* kMisalignedGemmFix =
    "Pad the odd dimension to a multiple of 64 (a vocabulary: "
    "model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of=64), or config vocab_size "
    "50304 for GPT-2's 50257); keep hidden and batch×sequence sizes multiples of 16 bytes of "
    "their type (8 bf16/fp16, 4 tf32, 16 fp8 elements) so cuBLAS can use its tensor-core "
    "kernels.";
constexpr const char* kMisalignedGemmEvidence =
    "misaligned_gemm_per_step_ns, predicted_per_step_ns, reference_efficiency_share, gemm_N "
    "(shape), gemm_N_efficiency_share";

// GEMMs far below the roofline because a dimension is not a multiple of the tensor-core
// alignment, while the trace's aligned GEMMs on the same math path run near it.
void MisalignedGemm(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::OpCosts& o = *c.in.op_costs;
  if (!o.peaks) return;
  // Elements per tensor-core alignment on the group's path: 16 B of fp8, 16-bit or 32-bit values.
  auto alignment = [](const analyze::OpCostGroup& g) {
    const int e = g.path == hw::MathPath::kFp8                                       ? 1
                  : (g.path == hw::MathPath::kBf16 || g.path == hw::MathPath::kFp16) ? 2
                                                                                     : 4;
    return kTensorCoreAlignBytes / e;
  };
  auto aligned = [&alignment](const analyze::OpCostGroup& g) {
    const double step = alignment(g);
    for (double d : {g.gemm_m, g.gemm_n, g.gemm_k})
      if (std::fmod(d, step) != 0) return false;
    return true;
  };
  // Reference: the time-weighted efficiency of the aligned GEMMs per path.
  std::array<double, hw::kMathPathCount> ref_time{}, ref_roof{};
  for (const analyze::OpCostGroup& g : o.groups) {
    if (g.family != analyze::OpFamily::kGemm || g.unpriced != analyze::Unpriced::kPriced ||
        !(g.gemm_m > 0) || !aligned(g) || g.flops < kSmallGemmFlops) {
      continue;  // the reference is the trace's large aligned GEMMs
    }
    ref_time[static_cast<size_t>(g.path)] += static_cast<double>(g.time_ns);
    ref_roof[static_cast<size_t>(g.path)] += g.roofline_ns * static_cast<double>(g.count);
  }
  double now = 0, predicted = 0;
  std::vector<std::pair<double, const analyze::OpCostGroup*>> worst;
  double reference = 0;
  std::set<int> alignments;  // of the GEMMs counted: the title names it
  for (const analyze::OpCostGroup& g : o.groups) {
    if (g.family != analyze::OpFamily::kGemm || g.unpriced != analyze::Unpriced::kPriced ||
        !(g.gemm_m > 0) || aligned(g) || !g.compute_bound) {
      continue;
    }
    const size_t p = static_cast<size_t>(g.path);
    if (!(ref_time[p] > 0)) continue;
    const double ref = std::min(1.0, ref_roof[p] / ref_time[p]);
    if (!(g.Efficiency() < kMisalignedEfficiency && ref > 2 * g.Efficiency())) continue;
    const double t = static_cast<double>(g.time_ns);
    const double at_ref = g.roofline_ns * static_cast<double>(g.count) / ref;
    now += t;
    predicted += at_ref;
    reference = std::max(reference, ref);
    alignments.insert(alignment(g));
    worst.emplace_back(t - at_ref, &g);
  }
  const double steps = static_cast<double>(c.step_count);
  const int64_t saving = static_cast<int64_t>((now - predicted) / steps);
  if (!(Share(saving, c.step_ns) > kMisalignedShare)) return;
  std::sort(worst.begin(), worst.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  // 8 for 16-bit GEMMs, 4 for TF32/fp32 ones (16 bytes either way), 16 for fp8.
  const std::string multiple = alignments.size() == 1
                                   ? "a multiple of " + std::to_string(*alignments.begin())
                                   : "a multiple of 16 bytes of its type";
  Finding f = Found(
      "GEMMs with a dimension that is not " + multiple + " run far below the roofline", saving,
      "Padded to the tensor-core alignment, those GEMMs reach the efficiency this trace's aligned "
      "GEMMs on the same math path reach (time-weighted); the padding's extra FLOPs are ignored "
      "(under 0.1 % for a vocabulary padded to 64).",
      {F("misaligned_gemm_per_step_ns", "those GEMMs per step",
         Value::Nanos(static_cast<int64_t>(now / steps))),
       F("predicted_per_step_ns", "aligned", Value::Nanos(static_cast<int64_t>(predicted / steps))),
       F("reference_efficiency_share", "efficiency of the aligned GEMMs",
         Value::Share(reference))});
  for (size_t i = 0; i < worst.size() && i < 3; ++i) {
    const analyze::OpCostGroup& g = *worst[i].second;
    const std::string n = std::to_string(i + 1);
    f.evidence.push_back(
        F("gemm_" + n, "GEMM " + n,
          Value::Text(GemmShape(g, ", " + std::string(hw::MathPathName(g.path))))));
    f.evidence.push_back(
        F("gemm_" + n + "_efficiency_share", "efficiency", Value::Share(g.Efficiency())));
  }
  out->push_back(std::move(f));
}

constexpr const char* kSmallGemmFix =
    "Give each GEMM more rows: a larger batch or micro-batch (fewer gradient-accumulation steps), "
    "sequence packing, or fewer, wider matmuls (torch.compile fuses small ones; a grouped GEMM for "
    "many experts/heads); GEMMs under ~1024×1024×1024 reach a fraction of the tensor-core peak.";
constexpr const char* kSmallGemmEvidence =
    "small_gemm_per_step_ns, small_gemm_share, small_gemm_efficiency_share, small_gemms, "
    "largest_small_gemm (shape)";

// GEMMs too small to fill the GPU: time, not a saving — a larger batch does more work per GEMM
// for about the same time (gpu_lab_h200 C1 → C2: 128× the work in 0.92× the step).
void SmallGemm(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::OpCosts& o = *c.in.op_costs;
  if (!o.peaks) return;
  double time = 0, roof = 0, largest = 0;
  uint64_t groups = 0;
  const analyze::OpCostGroup* biggest = nullptr;
  for (const analyze::OpCostGroup& g : o.groups) {
    if (g.family != analyze::OpFamily::kGemm || g.unpriced != analyze::Unpriced::kPriced ||
        !(g.flops > 0) || g.flops >= kSmallGemmFlops || !(g.Efficiency() < kSmallGemmEfficiency)) {
      continue;
    }
    time += static_cast<double>(g.time_ns);
    roof += g.roofline_ns * static_cast<double>(g.count);
    ++groups;
    if (g.flops > largest) {
      largest = g.flops;
      biggest = &g;
    }
  }
  const int64_t per_step = static_cast<int64_t>(time / static_cast<double>(c.step_count));
  if (!biggest || !(Share(per_step, c.step_ns) > kSmallGemmShare)) return;
  Finding f = Found(
      "GEMMs too small to fill the GPU run far below its peak", 0,
      "No step-time saving is claimed: a larger batch gives each GEMM more work for about the same "
      "time, so throughput per step rises rather than the step shortening.",
      {F("small_gemm_per_step_ns", "small GEMMs per step", Value::Nanos(per_step)),
       F("small_gemm_share", "share of the step", ShareOf(per_step, c.step_ns)),
       F("small_gemm_efficiency_share", "of their roofline (time-weighted)",
         Value::Share(roof / time)),
       F("small_gemms", "distinct shapes", Count(groups)),
       F("largest_small_gemm", "largest", Value::Text(GemmShape(*biggest, "")))});
  out->push_back(std::move(f));
}

constexpr const char* kRooflineGapFix =
    "Start from the ops that lose the most time to their roofline (the report's ops table, "
    "`--csv DIR` ops.csv): memory-bound chains fuse with torch.compile; GEMMs below their "
    "peak want larger or aligned shapes; attention wants a fused kernel (SDPA flash / cuDNN).";
constexpr const char* kRooflineGapEvidence =
    "mfu_share, hfu_share, model_tflop_per_step, lost_to_roofline_per_step_ns, op_N, "
    "op_N_lost_per_step_ns, op_N_efficiency_share";

// Where a busy GPU's time goes against the roofline: no fix is predicted, so no saving; it names
// the ops and makes the verdict "compute-bound at X % MFU" when nothing with a saving wins.
void RooflineGap(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::OpCosts& o = *c.in.op_costs;
  if (!o.peaks || o.steps == 0 || !(o.mfu > 0)) return;
  std::vector<std::pair<double, const analyze::OpCostGroup*>> lost;
  double total = 0;
  for (const analyze::OpCostGroup& g : o.groups) {
    if (g.unpriced != analyze::Unpriced::kPriced) continue;
    const double l = static_cast<double>(g.time_ns) - g.roofline_ns * static_cast<double>(g.count);
    if (l <= 0) continue;
    total += l;
    lost.emplace_back(l, &g);
  }
  if (lost.empty()) return;
  std::sort(lost.begin(), lost.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  const double steps = static_cast<double>(c.step_count);
  Finding f = Found(
      render::FormatShare(o.mfu, 1) + " MFU: the ops that lose the most time to their roofline", 0,
      "No saving is predicted here: this names where the time goes against the roofline; the "
      "findings above price the fixes they know.",
      {F("mfu_share", "MFU", Value::Share(o.mfu)), F("hfu_share", "HFU", Value::Share(o.hfu)),
       F("model_tflop_per_step", "model TFLOP per step",
         Value::Number(o.model_flops_per_step / 1e12, 3)),
       F("lost_to_roofline_per_step_ns", "time above the roofline per step",
         Value::Nanos(static_cast<int64_t>(total / steps)))});
  for (size_t i = 0; i < lost.size() && i < 3; ++i) {
    const analyze::OpCostGroup& g = *lost[i].second;
    const std::string n = std::to_string(i + 1);
    const std::string name = c.in.name ? std::string(c.in.name(g.name)) : std::string("op");
    const std::string dims = c.in.name ? std::string(c.in.name(g.input_dims)) : std::string();
    f.evidence.push_back(F("op_" + n, "op " + n, Value::Text(name + " " + dims)));
    f.evidence.push_back(F("op_" + n + "_lost_per_step_ns", "lost per step",
                           Value::Nanos(static_cast<int64_t>(lost[i].first / steps))));
    f.evidence.push_back(
        F("op_" + n + "_efficiency_share", "of roofline", Value::Share(g.Efficiency())));
  }
  out->push_back(std::move(f));
}

constexpr const char* kSyncPointsFix =
    "Move .item(), .cpu(), print(loss) and tensor-dependent Python control flow out of the "
    "step (accumulate on the GPU and read every N steps); use non_blocking=True copies.";
constexpr const char* kSyncPointsEvidence =
    "sync_points_per_step, gpu_idle_after_sync_per_step_ns, host_blocked_ns";

// The GPU idles while the host resumes after blocking syncs.
void SyncPoints(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::SyncStats& sync = *c.in.sync;
  int64_t sync_idle_steps = 0, sync_steps = 0;
  for (const analyze::StepSyncStats& s : sync.steps) {
    sync_idle_steps += s.gpu_idle_after_sync_ns;
    ++sync_steps;
  }
  const int64_t sync_idle =
      sync_steps > 0 ? sync_idle_steps / sync_steps : sync.gpu_idle_after_sync_ns / c.step_count;
  if (sync.points.empty() || !(Share(sync_idle, c.step_ns) > kSyncIdleShare)) return;
  out->push_back(
      Found("Host-device synchronisation stalls the GPU", sync_idle,
            "Without the blocking reads the GPU keeps its queue; it saves the GPU idle time that "
            "follows each sync point, not the host's blocked time.",
            {F("sync_points_per_step", "sync points per step",
               Value::Number(static_cast<double>(sync.points.size()) /
                                 static_cast<double>(std::max<int64_t>(1, sync_steps)),
                             1)),
             F("gpu_idle_after_sync_per_step_ns", "GPU idle after them per step",
               Value::Nanos(sync_idle)),
             F("host_blocked_ns", "host blocked in total", Value::Nanos(sync.blocked_ns))}));
}

constexpr const char* kPageableCopiesFix =
    "Pin host memory: DataLoader(..., pin_memory=True) or tensor.pin_memory(), then "
    ".to(device, non_blocking=True).";
constexpr const char* kPageableCopiesEvidence =
    "pageable_memcpy_count, effectively_sync_memcpy_count, pageable_copy_per_step_ns";

// Pageable copies that become synchronous.
void PageableCopies(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::CopyStats& copies = *c.in.copies;
  int64_t pageable_ns = 0;
  for (const analyze::CopyGroup& g : copies.groups) {
    if (g.kind == GpuKind::kMemcpy && g.pageable) pageable_ns += g.time_ns;
  }
  if (copies.effectively_sync_memcpys + copies.sync_memcpys == 0 || pageable_ns <= 0) return;
  const int64_t per_step = pageable_ns / c.copy_steps;
  out->push_back(Found(
      "Host-device copies from pageable memory block the host",
      static_cast<int64_t>(static_cast<double>(per_step) *
                           (1.0 - 1.0 / kPinnedOverPageableSpeedup)),
      "Pinned copies run about 3x faster than pageable ones and no longer block the host.",
      {F("pageable_memcpy_count", "pageable memcpys", Count(copies.pageable_memcpys)),
       F("effectively_sync_memcpy_count", "asynchronous calls made synchronous",
         Count(copies.effectively_sync_memcpys)),
       F("pageable_copy_per_step_ns", "pageable copy time per step", Value::Nanos(per_step))}));
}

constexpr const char* kTinyCopiesFix =
    "Stack small tensors into one buffer and copy once per step; keep per-step scalars "
    "(losses, metrics) on the GPU and read them every N steps.";
constexpr const char* kTinyCopiesEvidence = "tiny_copies_per_step, tiny_copy_time_per_step_ns";

// Many tiny copies: each pays launch and DMA setup latency for a few bytes.
void TinyCopies(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::CopyStats& copies = *c.in.copies;
  const double tiny_per_step =
      static_cast<double>(copies.tiny_memcpys) / static_cast<double>(c.copy_steps);
  if (!(tiny_per_step >= kTinyCopiesPerStep)) return;
  out->push_back(Found(
      "Many tiny host-device copies", copies.tiny_memcpy_time_ns / c.copy_steps,
      "Batched into one copy per step, the tiny copies' own GPU time (mostly fixed latency) "
      "goes; an upper bound.",
      {F("tiny_copies_per_step", "copies under 64 KiB per step", Value::Number(tiny_per_step, 1)),
       F("tiny_copy_time_per_step_ns", "their GPU time per step",
         Value::Nanos(copies.tiny_memcpy_time_ns / c.copy_steps))}));
}

// idle_gaps' evidence beyond the totals: the longest host-claimed gaps (at most 3), each with its
// length, step and the op the host ran.
void AddLongestGaps(const RankInputs& in, const analyze::IdleGapStats& g, Finding* f) {
  int shown = 0;
  for (const analyze::IdleGap& gap : g.longest) {
    if (gap.claim != analyze::IdleClaim::kHost || shown == 3) continue;
    std::string op = "no recorded op";
    if (in.name && !gap.host_ops.empty()) op = std::string(in.name(gap.host_ops[0].first));
    const std::string n = std::to_string(++shown);
    f->evidence.push_back(F("gap_" + n + "_ns", "gap " + n, Value::Nanos(gap.length())));
    // Step N of ProfilerStep#N; n/a outside the steps.
    f->evidence.push_back(
        F("gap_" + n + "_step", "in step", gap.step >= 0 ? Value::Int(gap.step) : Value::Na()));
    f->evidence.push_back(F("gap_" + n + "_host_op", "host in", Value::Text(std::move(op))));
  }
}

// idle_gaps' fix: names the host ops in the gaps, then the remedies their names point to.
std::string IdleGapsFix(const RankInputs& in, const analyze::IdleGapStats& g,
                        const std::string& generic) {
  std::string ops_text;
  for (const analyze::IdleHostOp& h : g.host_ops) {
    if (!in.name || ops_text.size() > 160) break;
    ops_text += (ops_text.empty() ? "" : ", ") + std::string(in.name(h.name)) + " (" +
                render::FormatDurationApprox(static_cast<double>(h.overlap_ns)) + ")";
  }
  std::string fix = ops_text.empty() ? "In these gaps the host runs Python outside any recorded op "
                                       "(profile with with_stack=True to see it). "
                                     : "In these gaps the host was in " + ops_text + ". ";
  auto any_op = [&](std::initializer_list<const char*> words) {
    for (const analyze::IdleHostOp& h : g.host_ops) {
      if (!in.name) break;
      const std::string_view n = in.name(h.name);
      for (const char* w : words) {
        if (n.find(w) != std::string_view::npos) return true;
      }
    }
    return false;
  };
  if (any_op({"Optimizer", "optimizer", "zero_grad"})) {
    fix +=
        "Use a fused or foreach optimizer (torch.optim.AdamW(..., fused=True)) and "
        "zero_grad(set_to_none=True). ";
  }
  if (any_op({"save", "checkpoint", "Checkpoint"})) {
    fix +=
        "Checkpoint every N steps and asynchronously "
        "(torch.distributed.checkpoint.async_save). ";
  }
  // An op kind whose gaps hold at least a tenth of the gaps' host time (a 1 ms cudaFree among
  // 500 ms of compiling is not the allocator's problem).
  int64_t host_total = 0;
  for (const analyze::IdleHostOp& h : g.host_ops) host_total += h.overlap_ns;
  auto any_name = [&](bool (*pred)(std::string_view)) {
    int64_t ns = 0;
    for (const analyze::IdleHostOp& h : g.host_ops)
      if (in.name && pred(in.name(h.name))) ns += h.overlap_ns;
    return ns > 0 && 10 * ns >= host_total;
  };
  if (any_name(analyze::IsAllocatorCall)) {
    fix +=
        "Keep the caching allocator's memory (no torch.cuda.empty_cache() in the loop; "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True). ";
  }
  if (any_name(analyze::IsCompileName)) {
    fix +=
        "Compile before the measured steps and keep shapes static (TORCH_LOGS=recompiles "
        "names what recompiles). ";
  }
  if (any_op({"aten::to", "aten::copy_", "aten::_to_copy", "aten::cpu", "aten::item"})) {
    fix +=
        "Make copies asynchronous: pinned memory and .to(device, non_blocking=True); keep "
        ".cpu()/.item() reads out of the step. ";
  }
  return fix + generic;
}

constexpr const char* kIdleGapsFix =
    "Move logging, metrics and checkpointing off the step (every N steps, or in a "
    "background thread); when the host work is many small launches, capture the step "
    "with CUDA graphs (torch.compile(mode=\"reduce-overhead\")).";
constexpr const char* kIdleGapsEvidence =
    "unexplained_idle_per_step_ns, unexplained_idle_share, host_gap_count, unexplained_idle_ns, "
    "then per longest gap (N = 1-3) gap_N_ns, gap_N_step, gap_N_host_op (text); longest_gap_ns "
    "when > 500 ms";

// The GPU idles ≥ 1 ms at a time while the host does something that is neither the DataLoader
// (input_pipeline_stall), waiting on a sync (sync_points), compiling (jit_compile) nor the
// driver's memory calls (allocator_churn). The analysis already leaves those parts out, so this
// saving is disjoint from theirs.
void IdleGaps(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::IdleGapStats& g = *c.in.idle_gaps;
  if (g.long_gaps == 0) return;
  const int64_t per_step = g.unexplained_ns_per_steady_step;
  const bool starved = g.longest_unexplained_ns > analyze::kNsightGpuGapNs;
  if (!(Share(per_step, c.step_ns) > kIdleGapShare || starved)) return;
  const uint64_t host_gaps = g.long_gaps - g.long_gaps_after_sync;
  Finding f =
      Found("The GPU sits idle while the host does other work", per_step,
            "Moving that host work off the step's critical path (or overlapping it with GPU work) "
            "removes the GPU idle of gaps of 1 ms or more that no DataLoader wait or sync point "
            "already explains; shorter gaps stay.",
            {F("unexplained_idle_per_step_ns", "unexplained idle per steady step",
               Value::Nanos(per_step)),
             F("unexplained_idle_share", "share of the step", ShareOf(per_step, c.step_ns)),
             F("host_gap_count", "gaps of 1 ms or more, not after a sync", Count(host_gaps)),
             F("unexplained_idle_ns", "their idle not covered by the DataLoader",
               Value::Nanos(g.unexplained_ns))});
  AddLongestGaps(c.in, g, &f);
  if (starved) {
    f.evidence.push_back(F("longest_gap_ns",
                           "longest gap (Nsight gpu_gaps > " +
                               render::FormatDurationApprox(analyze::kNsightGpuGapNs) + ")",
                           Value::Nanos(g.longest_unexplained_ns)));
    f.min_severity = render::Severity::kCritical;  // whatever its share
  }
  f.fix = IdleGapsFix(c.in, g, kIdleGapsFix);
  out->push_back(std::move(f));
}

// ---- Host work that is not the step's: the driver's memory calls, JIT compilation, and time no
// recorded op covers (analyze/host_work.h). Each is priced by its what-if. ----

// "cudaFree ×12 (31.4 ms)" for the first `keep` names.
std::string NamedTimes(const std::vector<analyze::NamedTime>& names, size_t keep) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < keep; ++i)
    out += (out.empty() ? "" : ", ") + names[i].name + " ×" + render::FormatCount(names[i].count) +
           " (" + render::FormatDurationApprox(static_cast<double>(names[i].ns)) + ")";
  return out;
}

constexpr const char* kAllocatorChurnFix =
    "Keep the caching allocator's memory: take torch.cuda.empty_cache() (and gc.collect() that "
    "frees CUDA tensors) out of the loop; set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
    "(ROCm: PYTORCH_HIP_ALLOC_CONF) so changing shapes grow one segment instead of asking the "
    "driver again; when memory is nearly full the allocator frees its cache and retries every "
    "step, and a smaller micro-batch stops that.";
constexpr const char* kAllocatorChurnEvidence =
    "allocator_calls_per_step, allocator_per_step_ns, allocator_calls (text: name ×count (time)), "
    "driver_init_ns (calls over 100 ms, left out)";

// The caching allocator goes to the driver inside the steady steps.
void AllocatorChurn(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::HostWork& h = *c.in.host_work;
  if (h.allocator_calls == 0 || h.windows == 0) return;
  const int64_t per_step = h.allocator_ns / h.windows;
  if (!(Share(per_step, c.step_ns) > kHostChurnShare)) return;
  Finding f = Found(
      "The step asks the driver for memory (cudaMalloc / cudaFree) instead of the caching "
      "allocator's cache",
      per_step,
      "Without the driver's memory calls the step loses their host time; cudaFree's implicit "
      "device synchronisation is not counted, so the real saving can be larger.",
      {F("allocator_calls_per_step", "driver memory calls per step",
         Value::Number(static_cast<double>(h.allocator_calls) / h.windows, 1)),
       F("allocator_per_step_ns", "their time per step", Value::Nanos(per_step)),
       F("allocator_calls", "calls", Value::Text(NamedTimes(h.allocator_names, 4)))});
  if (h.driver_init_calls > 0) {
    f.evidence.push_back(F("driver_init_ns",
                           "left out: driver initialisation (calls > " +
                               render::FormatDurationApprox(analyze::kDriverInitCallNs) + ")",
                           Value::Nanos(h.driver_init_ns)));
  }
  out->push_back(std::move(f));
}

constexpr const char* kJitCompileFix =
    "Compile before the steps you train or measure, once: run warm-up steps first (profile with "
    "torch.profiler.schedule(wait=1, warmup=2, active=3)); if it compiles again every few "
    "steps, shapes or guards change: pad inputs to a few fixed sizes or mark the dynamic "
    "dimension (torch._dynamo.mark_dynamic), and find the cause with TORCH_LOGS=recompiles; "
    "keep the compile cache between runs (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR).";
constexpr const char* kJitCompileEvidence =
    "compile_per_step_ns, compile_share, compile_ops (text: name ×count (time)), "
    "recompiled_regions (torch.compile regions compiled again)";

// JIT compilation or autotuning inside the steady steps.
void JitCompile(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::HostWork& h = *c.in.host_work;
  if (h.compile_ns <= 0 || h.windows == 0) return;
  const int64_t per_step = h.compile_ns / h.windows;
  if (!(Share(per_step, c.step_ns) > kHostChurnShare)) return;
  Finding f =
      Found("Code is compiled inside the step", per_step,
            "Compiled once before the steps (or found in the cache), the compile and autotune time "
            "leaves the step; the compiled code runs as traced.",
            {F("compile_per_step_ns", "compiling per step", Value::Nanos(per_step)),
             F("compile_share", "share of the step", ShareOf(per_step, c.step_ns)),
             F("compile_ops", "compile ops", Value::Text(NamedTimes(h.compile_names, 3)))});
  if (h.recompiled_regions > 0)
    f.evidence.push_back(F("recompiled_regions", "torch.compile regions compiled again",
                           Count(h.recompiled_regions)));
  out->push_back(std::move(f));
}

constexpr const char* kUnrecordedHostTimeFix =
    "Find what the host does there: if these are the first steps (torch.compile compiles on the "
    "first call, cuDNN autotunes, CUDA and the allocator initialise lazily), profile later "
    "steps: torch.profiler.schedule(wait=1, warmup=2, active=3); if every step has it, it is "
    "Python outside torch ops (data preparation, a tokenizer, logging): profile with "
    "with_stack=True or py-spy to name it, then move it off the step (DataLoader workers, every "
    "N steps).";
constexpr const char* kUnrecordedHostTimeEvidence =
    "unrecorded_per_step_ns, unrecorded_share, unrecorded_before_first_launch_per_step_ns, "
    "steady_steps, torch_compile (text, when its regions are in the trace)";

// Most of the step is host time no recorded op covers.
void UnrecordedHostTime(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::HostWork& h = *c.in.host_work;
  if (h.windows == 0) return;
  const int64_t per_step = h.unrecorded_ns / h.windows;
  if (!(Share(per_step, c.step_ns) > kUnrecordedShare)) return;
  Finding f =
      Found("Most of the step is host time no recorded op covers", per_step,
            "If that time is one-time warm-up or Python that can leave the step, the step loses it "
            "where it is on the critical path; the trace cannot tell which.",
            {F("unrecorded_per_step_ns", "host time outside any recorded op, per step",
               Value::Nanos(per_step)),
             F("unrecorded_share", "share of the step", ShareOf(per_step, c.step_ns)),
             F("unrecorded_before_first_launch_per_step_ns",
               "of it before the step's first kernel launch",
               Value::Nanos(h.unrecorded_before_first_launch_ns / h.windows)),
             F("steady_steps", "steady steps", Count(h.windows))});
  if (h.torch_compile) {
    f.evidence.push_back(
        F("torch_compile", "torch.compile",
          Value::Text(h.windows <= 2 ? "in the trace, and only " + std::to_string(h.windows) +
                                           " steady step(s): likely its compile step"
                                     : "in the trace")));
  }
  out->push_back(std::move(f));
}

constexpr const char* kLowOccupancyFix =
    "Give each kernel more work: a larger batch or micro-batch; fuse small element-wise "
    "kernels with torch.compile; set torch.backends.cudnn.benchmark = True so cuDNN picks "
    "kernels for your shapes; replace per-sample or per-parameter Python loops with batched "
    "ops (torch._foreach_*, vmap).";
constexpr const char* kLowOccupancyEvidence =
    "tiny_grid_share, tiny_grid_per_step_ns, est_sm_efficiency, est_achieved_occupancy_share "
    "(when known), then per kernel (N = 1-3) tiny_grid_N_kernel (text), tiny_grid_N_count, "
    "tiny_grid_N_blocks_per_sm, tiny_grid_N_ns";

// Kernels that leave SMs empty. No overlap with the stalls above (they save GPU idle time, this
// saves GPU busy time).
void LowOccupancy(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::OccupancyStats& o = *c.in.occupancy;
  if (!o.available) return;
  const bool tiny = o.tiny_grid_share >= kTinyGridKernelShare;
  const bool low_occ =
      o.achieved_occupancy_pct >= 0 && o.achieved_occupancy_pct < kLowAchievedOccupancyPct;
  if (!tiny && !low_occ) return;
  const analyze::StepsResult& steps = *c.in.steps;
  const int64_t occ_steps = std::max<int64_t>(
      1,
      static_cast<int64_t>(steps.complete_count > 0 ? steps.complete_count : steps.steps.size()));
  // Bounded by the step time during which kernels run at all.
  const int64_t per_step =
      std::min(o.tiny_grid_lost_sm_ns / occ_steps, StepCat(steps, analyze::StepCategory::kKernel));
  Finding f =
      Found(tiny ? "Many kernels launch fewer thread blocks than the GPU has SMs"
                 : "Kernels keep few warps resident per SM",
            tiny ? per_step : 0,
            tiny ? "Upper bound: the tiny-grid kernels' work spread over every SM at the same "
                   "per-SM speed (time × blocks per SM) and the GPU on the critical path; real "
                   "gains are smaller."
                 : "No time estimate: low occupancy alone does not bound the speed-up (a "
                   "memory-bound kernel can saturate bandwidth at low occupancy).",
            {F("tiny_grid_share", "tiny-grid share of compute-kernel time",
               Value::Share(o.tiny_grid_share)),
             F("tiny_grid_per_step_ns", "tiny-grid kernel time per step",
               Value::Nanos(o.tiny_grid_ns / occ_steps))});
  if (o.sm_efficiency >= 0) {
    // tb_plugin's 0-1 figure, shown as the number it prints.
    f.evidence.push_back(F("est_sm_efficiency", "est. SM efficiency (tb_plugin)",
                           Value::Number(o.sm_efficiency, 3)));
  }
  if (o.achieved_occupancy_pct >= 0) {
    f.evidence.push_back(F("est_achieved_occupancy_share",
                           "est. achieved occupancy (duration-weighted)",
                           Value::Share(o.achieved_occupancy_pct / 100.0)));
  }
  for (size_t i = 0; i < o.tiny.size() && i < 3; ++i) {
    const analyze::TinyGridKernel& t = o.tiny[i];
    const std::string n = std::to_string(i + 1);
    f.evidence.push_back(F("tiny_grid_" + n + "_kernel", "tiny grid " + n,
                           Value::Text(std::string(Utf8Prefix(t.name, 60)))));
    f.evidence.push_back(F("tiny_grid_" + n + "_count", "launches", Count(t.count)));
    f.evidence.push_back(F("tiny_grid_" + n + "_blocks_per_sm", "blocks/SM",
                           Value::Number(t.mean_blocks_per_sm, 2)));
    f.evidence.push_back(F("tiny_grid_" + n + "_ns", "time", Value::Nanos(t.total_ns)));
  }
  out->push_back(std::move(f));
}

constexpr const char* kLaunchBoundFix =
    "Capture the step with CUDA graphs (torch.cuda.graphs / "
    "torch.compile(mode=\"reduce-overhead\")), fuse small ops (torch.compile), or raise the "
    "work per kernel (larger batch).";
constexpr const char* kLaunchBoundEvidence =
    "short_kernel_share, gpu_idle_share, runtime_cpu_exec_per_step_ns";

// Many kernels shorter than their launch and an idle GPU not explained by input.
void LaunchBound(const RuleContext& c, std::vector<Finding>* out) {
  const analyze::LaunchSummary& l = c.in.launches->all;
  const analyze::ExclusiveBreakdown& ex = c.in.gpu_time->exclusive;
  const analyze::StepsResult& steps = *c.in.steps;
  // Host time the idle_gaps finding (an earlier rule) already claims is not claimed again.
  int64_t idle_gap_claim = 0;
  for (const Finding& f : c.earlier)
    if (f.id == "idle_gaps") idle_gap_claim = f.estimated_saving_ns_per_step;
  const int64_t runtime =
      std::max<int64_t>(0, StepCat(steps, analyze::StepCategory::kRuntime) +
                               StepCat(steps, analyze::StepCategory::kCpuExec) - idle_gap_claim);
  const int64_t n = static_cast<int64_t>(l.n);
  const int64_t short_kernels = static_cast<int64_t>(l.short_kernels);
  if (!(l.n > 0 && Share(short_kernels, n) > kShortKernelShare &&
        Share(ex.idle_ns, ex.span_ns) > kLaunchIdleShare && runtime > 0)) {
    return;
  }
  out->push_back(Found(
      "The CPU cannot launch kernels fast enough", runtime / 2,
      "CUDA graphs or torch.compile remove about half of the launch and framework time that the "
      "GPU waits on; a rough bound, confidence low.",
      {F("short_kernel_share", "kernels shorter than their launch", ShareOf(short_kernels, n)),
       F("gpu_idle_share", "GPU idle", ShareOf(ex.idle_ns, ex.span_ns)),
       F("runtime_cpu_exec_per_step_ns", "runtime + CPU exec per step", Value::Nanos(runtime))}));
}

// Peak memory of the rank's device: reserved when the trace has it, else allocated.
struct PeakMemory {
  int64_t used_bytes = 0;
  int64_t total_bytes = 0;
  bool reserved = false;
  double share = 0;
};

bool RankPeakMemory(const RankInputs& in, PeakMemory* m) {
  const analyze::DeviceMemory* dev = analyze::RankDevice(*in.memory);
  if (!dev || dev->total_bytes <= 0) return false;
  m->reserved = dev->peak_reserved_bytes >= 0;
  m->used_bytes = m->reserved ? dev->peak_reserved_bytes : dev->peak_allocated_bytes;
  m->total_bytes = dev->total_bytes;
  m->share = Share(m->used_bytes, m->total_bytes);
  return true;
}

std::vector<render::Field> MemoryEvidence(const PeakMemory& m) {
  const Value used = Value::Bytes(static_cast<uint64_t>(std::max<int64_t>(0, m.used_bytes)));
  return {m.reserved ? F("peak_reserved_bytes", "peak reserved", used)
                     : F("peak_allocated_bytes", "peak allocated", used),
          F("device_memory_bytes", "device memory",
            Value::Bytes(static_cast<uint64_t>(m.total_bytes)))};
}

constexpr const char* kNearOomFix =
    "Use activation checkpointing (torch.utils.checkpoint), a smaller micro-batch with "
    "gradient accumulation to keep the global batch, or bf16.";
constexpr const char* kNearOomEvidence =
    "peak_reserved_bytes (peak_allocated_bytes without reserved), device_memory_bytes";

// Memory nearly full: no time saving, a risk.
void NearOom(const RuleContext& c, std::vector<Finding>* out) {
  PeakMemory m;
  if (!RankPeakMemory(c.in, &m) || !(m.share > kNearOomShare)) return;
  out->push_back(Found("Memory is nearly full", 0,
                       "No time saving: this finding is about the risk of running out of memory.",
                       MemoryEvidence(m)));
}

constexpr const char* kMemoryUnderusedFix =
    "Raise the batch size (and the learning rate schedule accordingly), or keep the global "
    "batch with fewer gradient-accumulation steps.";
constexpr const char* kMemoryUnderusedEvidence =
    "peak_reserved_bytes (peak_allocated_bytes without reserved), device_memory_bytes, "
    "batch_growth_ratio";

// Much memory unused: no time saving per step; throughput via a larger batch.
void MemoryUnderused(const RuleContext& c, std::vector<Finding>* out) {
  PeakMemory m;
  if (!RankPeakMemory(c.in, &m) || !(m.share < kMemoryUnusedShare)) return;
  Finding f = Found("Most of the GPU's memory is unused", 0,
                    "No direct time saving per step: a larger batch raises throughput per step.",
                    MemoryEvidence(m));
  f.evidence.push_back(F("batch_growth_ratio", "batch could grow (if activations dominate) up to",
                         Value::Number(0.9 / std::max(m.share, 1e-9), 1, Unit::kRatio)));
  out->push_back(std::move(f));
}

std::string Pct(double share) { return render::FormatShare(share, 0); }
std::string Ms(int64_t ns) { return render::FormatDurationApprox(static_cast<double>(ns)); }
std::string Num(double v) { return render::FormatNumber(v, v == static_cast<int64_t>(v) ? 0 : 1); }

std::vector<Rule> MakeRules() {
  std::vector<Rule> rules = {
      {"input_pipeline_stall", kInSteps,
       "DataLoader-only share of the steady step > " + Pct(kInputStallShare) +
           " (`kInputStallShare`, tb_plugin's rule)",
       "the DataLoader-only time per step", 0.8, "input-bound", kVerdictMinShare,
       kInputPipelineStallFix, kInputPipelineStallEvidence, InputPipelineStall},
      {"exposed_communication", kInSteps | kInGpuTime,
       "communication with no kernel beside it > " + Pct(kExposedCommShare) +
           " of the step (`kExposedCommShare`; tb_plugin says 10 %, but ranking decides the "
           "verdict)",
       "that communication time per step", 0.6, "communication-bound", kVerdictMinShare,
       kExposedCommunicationFix, kExposedCommunicationEvidence, ExposedCommunication},
      {"fp32_math", kInSummary | kInKernels | kInSteps,
       "compute capability ≥ 7.0 and GEMM/conv/attention on fp32 paths (CUDA cores; with the "
       "cost model also TF32 and 3xTF32 on 8.0+) > " +
           Pct(kFp32MathShare) + " of GEMM/conv/attention time (`kFp32MathShare`)",
       "cost model (docs/cost-model.md): Σ over those ops of time − bf16 time (compute-bound: × "
       "achievable peak ratio; memory-bound: × ½) − autocast casts (" +
           Num(kAutocastCastTraffic) +
           "× their fp32 inputs at HBM bandwidth, `kAutocastCastTraffic`); without shapes: fp32 "
           "CUDA-core time × (1 − 1/" +
           Num(kAssumedTensorCoreSpeedup) + ") (`kAssumedTensorCoreSpeedup`)",
       0.7, "precision-bound", kVerdictMinShare, kFp32MathFix, kFp32MathEvidence, Fp32Math},
      {"nchw_layout", kInOpCosts | kInSteps,
       "cuDNN NCHW↔NHWC transposes inside convolutions > " + Pct(kLayoutShare) +
           " of the step (`kLayoutShare`)",
       "the transposes' time per step", 0.6, "layout-bound", kVerdictMinShare, kNchwLayoutFix,
       kNchwLayoutEvidence, NchwLayout},
      {"unfused_elementwise", kInOpCosts | kInSteps,
       "chains of ≥ 3 elementwise kernels over one tensor size, back to back, whose fusion saves "
       "> " +
           Pct(kFusionShare) + " of the step (`kFusionShare`)",
       "their time − one pass each (the chain's largest op's bytes at achievable HBM bandwidth)",
       0.5, "fusion-bound", kVerdictMinShare, kFusionFix, kFusionEvidence, UnfusedElementwise},
      {"misaligned_gemm", kInOpCosts | kInSteps,
       "compute-bound GEMMs with a dimension not a multiple of " + Num(kTensorCoreAlignBytes) +
           " bytes (`kTensorCoreAlignBytes`) below " + Pct(kMisalignedEfficiency) +
           " of their roofline (`kMisalignedEfficiency`) and under half the efficiency of the "
           "trace's aligned GEMMs on the same path, saving > " +
           Pct(kMisalignedShare) + " of the step (`kMisalignedShare`)",
       "their time − their roofline time ÷ the aligned GEMMs' time-weighted efficiency", 0.5,
       "shape-bound", kVerdictMinShare, kMisalignedGemmFix, kMisalignedGemmEvidence,
       MisalignedGemm},
      {"small_gemm", kInOpCosts | kInSteps,
       "GEMMs under " + render::FormatNumber(kSmallGemmFlops / 1e9, 2) +
           " GFLOP a call (`kSmallGemmFlops`: 2·1024³) below " + Pct(kSmallGemmEfficiency) +
           " of their roofline (`kSmallGemmEfficiency`) > " + Pct(kSmallGemmShare) +
           " of the step (`kSmallGemmShare`)",
       "none (throughput: a larger batch gives each GEMM more work for about the same time)", 0.5,
       "", 0, kSmallGemmFix, kSmallGemmEvidence, SmallGemm},
      {"roofline_gap", kInOpCosts | kInSteps,
       "the cost model priced the ops and the trace has steady steps",
       "none (names the ops that lose the most time to their roofline; the verdict "
       "\"compute-bound at X % MFU\" when no finding with a saving is the verdict)",
       0.5, "", 0, kRooflineGapFix, kRooflineGapEvidence, RooflineGap},
      {"sync_points", kInSync | kInSteps,
       "host-blocking sync points, and GPU idle after them > " + Pct(kSyncIdleShare) +
           " of the step (`kSyncIdleShare`)",
       "the GPU idle time after sync points per step (not the host's blocked time)", 0.6,
       "sync-bound", kVerdictMinShare, kSyncPointsFix, kSyncPointsEvidence, SyncPoints},
      {"pageable_copies", kInCopies | kInSteps,
       "synchronous or effectively synchronous memcpys, and pageable copy time > 0",
       "pageable copy time per step × (1 − 1/" + Num(kPinnedOverPageableSpeedup) +
           ") (`kPinnedOverPageableSpeedup`)",
       0.6, "copy-bound", kVerdictMinShare, kPageableCopiesFix, kPageableCopiesEvidence,
       PageableCopies},
      {"tiny_copies", kInCopies | kInSteps,
       "≥ " + Num(kTinyCopiesPerStep) + " memcpys under " +
           render::FormatCount(analyze::kTinyCopyBytes / 1024) +
           " KiB per step (`kTinyCopiesPerStep`, `analyze::kTinyCopyBytes`)",
       "their GPU time per step (an upper bound)", 0.5, "", 0, kTinyCopiesFix, kTinyCopiesEvidence,
       TinyCopies},
      {"idle_gaps", kInIdleGaps | kInSteps,
       "GPU idle in gaps ≥ " + Ms(analyze::kLongIdleGapNs) +
           " (`analyze::kLongIdleGapNs`) that no sync point, DataLoader op, compile or "
           "driver memory call explains > " +
           Pct(kIdleGapShare) + " of the steady step (`kIdleGapShare`); one such gap > " +
           Ms(analyze::kNsightGpuGapNs) +
           " (Nsight's gpu_gaps, `analyze::kNsightGpuGapNs`) fires it as critical",
       "that unexplained idle per steady step (gaps after syncs, the parts DataLoader ops, "
       "compiles and driver memory calls cover are sync_points', input_pipeline_stall's, "
       "jit_compile's and allocator_churn's)",
       0.5, "host-bound", kVerdictMinShare, kIdleGapsFix, kIdleGapsEvidence, IdleGaps},
      {"allocator_churn", kInHostWork | kInSteps,
       "driver memory calls (cudaMalloc, cudaFree, hipFree, pinned-host allocations; one over " +
           Ms(analyze::kDriverInitCallNs) +
           " is the driver initialising, `analyze::kDriverInitCallNs`) in the "
           "steady steps > " +
           Pct(kHostChurnShare) + " of the step (`kHostChurnShare`)",
       "replayed: the step without those calls (what-if allocator_cached); their time per step "
       "without a step graph",
       0.6, "host-bound", kVerdictMinShare, kAllocatorChurnFix, kAllocatorChurnEvidence,
       AllocatorChurn},
      {"jit_compile", kInHostWork | kInSteps,
       "compile and autotune ops (TorchInductor, Triton, nvFuser, NVRTC, module loads) in the "
       "steady steps > " +
           Pct(kHostChurnShare) + " of the step (`kHostChurnShare`)",
       "replayed: the step without their host time (what-if compile_ahead); their time per step "
       "without a step graph",
       0.6, "host-bound", kVerdictMinShare, kJitCompileFix, kJitCompileEvidence, JitCompile},
      {"unrecorded_host_time", kInHostWork | kInSteps,
       "host time in the steady steps that no recorded op, annotation or runtime call covers > " +
           Pct(kUnrecordedShare) + " of the step (`kUnrecordedShare`)",
       "replayed alone, never in the plan (what-if unrecorded_removed: a condition the trace "
       "cannot confirm), capped at what the plan leaves",
       0.3, "host-bound", kVerdictMinShare, kUnrecordedHostTimeFix, kUnrecordedHostTimeEvidence,
       UnrecordedHostTime},
      {"low_occupancy", kInOccupancy | kInSteps,
       "kernels with fewer blocks than SMs ≥ " + Pct(kTinyGridKernelShare) +
           " of compute-kernel time (`kTinyGridKernelShare`), or est. achieved occupancy < " +
           Pct(kLowAchievedOccupancyPct / 100.0) + " (`kLowAchievedOccupancyPct`)",
       "upper bound: Σ tiny-grid time × (1 − blocks/SM) per step, capped by the step's kernel "
       "time; none when only occupancy is low",
       0.3, "", 0, kLowOccupancyFix, kLowOccupancyEvidence, LowOccupancy},
      {"launch_bound", kInLaunches | kInGpuTime | kInSteps,
       "> " + Pct(kShortKernelShare) +
           " of kernels shorter than their launch call "
           "(`kShortKernelShare`) and GPU idle > " +
           Pct(kLaunchIdleShare) + " of the span (`kLaunchIdleShare`)",
       "half of runtime + CPU-exec time per step, less the host time idle_gaps claims", 0.35,
       "launch-bound", kVerdictMinShare, kLaunchBoundFix, kLaunchBoundEvidence, LaunchBound},
      {"near_oom", kInMemory,
       "peak reserved (allocated when the trace has no reserved) > " + Pct(kNearOomShare) +
           " of device memory (`kNearOomShare`, tb_plugin's rule)",
       "none (a risk)", 0.8, "near out of memory", 0, kNearOomFix, kNearOomEvidence, NearOom},
      {"memory_underused", kInMemory,
       "peak reserved (allocated when the trace has no reserved) < " + Pct(kMemoryUnusedShare) +
           " of device memory (`kMemoryUnusedShare`)",
       "none (throughput: a larger batch, up to 0.9 × device / peak reserved)", 0.4,
       "memory-underused", 0, kMemoryUnderusedFix, kMemoryUnderusedEvidence, MemoryUnderused},
  };
  // The rules whose saving shortens the GPU's work (Rule::gpu_work); the others remove host time
  // or a wait.
  static constexpr std::string_view kGpuWork[] = {
      "exposed_communication", "fp32_math",  "nchw_layout",     "unfused_elementwise",
      "misaligned_gemm",       "small_gemm", "roofline_gap",    "tiny_copies",
      "low_occupancy",         "near_oom",   "memory_underused"};
  for (Rule& r : rules)
    r.gpu_work = std::find(std::begin(kGpuWork), std::end(kGpuWork), r.id) != std::end(kGpuWork);
  return rules;
}

bool HasInputs(const RankInputs& in, uint32_t reads) {
  const std::pair<Input, const void*> inputs[] = {
      {kInSummary, in.summary},    {kInGpuTime, in.gpu_time},  {kInSteps, in.steps},
      {kInKernels, in.kernels},    {kInLaunches, in.launches}, {kInCopies, in.copies},
      {kInSync, in.sync},          {kInMemory, in.memory},     {kInOccupancy, in.occupancy},
      {kInIdleGaps, in.idle_gaps}, {kInOpCosts, in.op_costs},  {kInHostWork, in.host_work},
  };
  for (const auto& [bit, ptr] : inputs)
    if ((reads & bit) && !ptr) return false;
  return true;
}

constexpr const char* kComputeBound = "compute-bound — look at the kernels";

// The largest finding that can be a verdict names it when its saving is large enough:
// low_occupancy's saving is an upper bound (confidence 0.3) and tiny_copies' a small one, so a
// measured stall below them still names the bottleneck.
std::string Verdict(const std::vector<Finding>& ranked) {
  for (const Finding& f : ranked) {
    const Rule* rule = FindRule(f.id);
    if (!rule || rule->verdict.empty()) continue;
    return f.estimated_saving_share >= rule->verdict_min_share ? rule->verdict : kComputeBound;
  }
  return kComputeBound;
}

// The verdict from the critical path: what bounds the step (the largest group of its time, or
// the largest wait when it is at least kCriticalSavingShare of the path; the report's
// critical_path row gives every share).
std::string PathVerdict(const analyze::CriticalPath& cp, const analyze::OpCosts* o) {
  using analyze::PathCategory;
  auto at = [&cp](PathCategory c) { return cp.total_ns[static_cast<size_t>(c)]; };
  const std::pair<int64_t, const char*> groups[] = {
      {at(PathCategory::kDataWait), "input-bound"},
      {at(PathCategory::kHostCompute) + at(PathCategory::kLaunchOverhead), "host-bound"},
      {at(PathCategory::kSync), "sync-bound"},
      {at(PathCategory::kGpuCompute), "GPU-bound"},
      {at(PathCategory::kCommunication), "communication-bound"},
      {at(PathCategory::kCopy), "copy-bound"},
      {at(PathCategory::kGpuIdle), "stalled: the GPU waits on something the trace does not record"},
  };
  const auto* best = &groups[0];
  int64_t total = 0;
  for (const auto& g : groups) {
    total += g.first;
    if (g.first > best->first) best = &g;
  }
  // Kernels back to back are no verdict while the GPU waits on something else for a large part
  // of the step: that wait names it (a planted 30 % DataLoader stall beside 70 % of kernels is
  // input-bound).
  if (best == &groups[3]) {
    const auto* stall = &groups[0];
    for (const auto& g : groups)
      if (&g != &groups[3] && g.first > stall->first) stall = &g;
    if (Share(stall->first, total) >= kCriticalSavingShare) best = stall;
  }
  std::string v = best->second;
  if (v == "GPU-bound" && o && o->steps > 0 && o->mfu > 0)
    v = "compute-bound at " + render::FormatShare(o->mfu, 1) + " MFU";
  return v;
}

// A finding for each fix of the plan whose rule did not fire, when the fix's increment is at
// least kReplayedFindingShare of the step (on TraceLens's Falconsai trace the plan's first fix,
// CUDA graphs at 81.5 % of the step, had no finding: launch_bound's thresholds missed it). Its
// saving, evidence and assumption are the replay's (ApplyReplay prices it with the others).
template <typename Scale>
void AddReplayedFindings(const whatif::WhatIfResults& w, Scale scaled, int64_t step_ns,
                         std::vector<Finding>* findings) {
  for (const whatif::PlanEntry& p : w.plan) {
    const whatif::WhatIf* wi = whatif::FindWhatIf(p.id);
    const Rule* rule = wi ? FindRule(wi->rule) : nullptr;
    if (!rule || Share(scaled(p.increment_ns), step_ns) < kReplayedFindingShare) continue;
    if (std::any_of(findings->begin(), findings->end(),
                    [&](const Finding& f) { return f.id == rule->id; }))
      continue;
    Finding f;
    f.id = rule->id;
    f.title = "Replayed: " + wi->fix;
    f.fix = rule->fix;
    f.confidence = rule->confidence;
    f.evidence.push_back(F("found_by", "found by",
                           Value::Text("the replay (the rule's own threshold did not fire)")));
    findings->push_back(std::move(f));
  }
}

// How a plan fix's saving is counted, for its assumption: after the plan's fixes before it, by
// name (the findings are listed by saving, which is not the plan's order).
std::string PlannedBefore(const whatif::WhatIfResults& w, const whatif::PlanEntry* planned) {
  if (!planned || planned == &w.plan.front()) return ".";
  std::string names;
  for (const whatif::PlanEntry* p = w.plan.data(); p != planned; ++p)
    names += (names.empty() ? "" : "; ") + whatif::FindWhatIf(p->id)->fix;
  return ", on top of the plan's fixes before it: " + names + ".";
}

// Savings from the replay: a finding a what-if prices saves its plan increment; the others, in
// order of their own estimate, at most what the plan leaves of the step.
void ApplyReplay(const whatif::WhatIfResults& w, int64_t step_ns, std::vector<Finding>* findings) {
  // The replay's steps (the middle kMaxGraphSteps of a long trace) against the mean steady step:
  // the plan's share of its step applied to this one, so the savings still add up to at most it.
  const double scale =
      w.step_ns > 0 ? static_cast<double>(step_ns) / static_cast<double>(w.step_ns) : 1.0;
  auto scaled = [scale](int64_t ns) {
    return scale == 1.0 ? ns : static_cast<int64_t>(static_cast<double>(ns) * scale);
  };
  AddReplayedFindings(w, scaled, step_ns, findings);
  int64_t claimed = 0;
  std::vector<Finding*> others;
  for (Finding& f : *findings) {
    // A rule no what-if prices, or whose what-if found nothing to change in this trace (bf16
    // without recorded shapes): its own estimate, capped below.
    const whatif::WhatIf* wi = whatif::WhatIfForRule(f.id);
    const whatif::FixResult* fix = wi ? w.Fix(wi->id) : nullptr;
    if (!fix) {
      if (f.estimated_saving_ns_per_step > 0) others.push_back(&f);
      continue;
    }
    const int64_t alone = scaled(fix->saving_ns);
    if (wi->conditional) {  // never in the plan: its alone saving, capped below like the others
      f.estimated_saving_ns_per_step = std::max<int64_t>(alone, 0);
      f.saving_alone_ns_per_step = f.estimated_saving_ns_per_step;
      f.replayed = true;
      f.saving_assumption = wi->assumption + " Replayed alone on the steps' dependency graph.";
      f.evidence.push_back(
          F("replay_saving_alone_ns", "replayed, this fix alone", Value::Nanos(alone)));
      f.severity =
          std::max(f.min_severity, SeverityFor(Share(f.estimated_saving_ns_per_step, step_ns)));
      others.push_back(&f);
      continue;
    }
    const whatif::PlanEntry* planned = w.Planned(wi->id);
    const int64_t increment = planned ? scaled(planned->increment_ns) : 0;
    f.estimated_saving_ns_per_step = increment;
    f.replayed = true;
    f.saving_alone_ns_per_step = std::max<int64_t>(alone, 0);
    claimed += increment;
    f.saving_assumption =
        wi->assumption + " Replayed on the steps' dependency graph" + PlannedBefore(w, planned);
    f.evidence.push_back(
        F("replay_saving_alone_ns", "replayed, this fix alone", Value::Nanos(alone)));
    if (planned) {
      f.evidence.push_back(F("replay_step_after_ns", "predicted step after it",
                             Value::Nanos(scaled(planned->step_after_ns))));
    }
    f.severity = std::max(f.min_severity, SeverityFor(Share(increment, step_ns)));
  }
  std::stable_sort(others.begin(), others.end(), [](const Finding* a, const Finding* b) {
    return a->estimated_saving_ns_per_step > b->estimated_saving_ns_per_step;
  });
  // What the whole plan leaves of the step, its fixes without a finding (a plan entry whose
  // rule did not fire) included: the others save at most that, so no saving is counted twice
  // and the findings' savings add up to at most the step. Of it, a finding that removes host
  // time or a wait saves at most the host and wait part of the path the plan leaves, one that
  // shortens the GPU's work at most its GPU part (on HTA's nccl_parser_config trace the plan
  // leaves 35.8 ms bound by GPU compute, which idle_gaps, priced alone, claimed all of).
  const int64_t plan_leaves = w.plan.empty() ? step_ns : scaled(w.planned_step_ns);
  int64_t left = std::clamp<int64_t>(std::min(step_ns - claimed, plan_leaves), 0, step_ns);
  int64_t gpu_left = 0, host_left = 0;
  for (size_t c = 0; c < analyze::kPathCategoryCount; ++c) {
    const auto category = static_cast<analyze::PathCategory>(c);
    const bool gpu = category == analyze::PathCategory::kGpuCompute ||
                     category == analyze::PathCategory::kCommunication ||
                     category == analyze::PathCategory::kCopy;
    (gpu ? gpu_left : host_left) += scaled(w.path_after_per_step_ns[c]);
  }
  for (Finding* f : others) {
    const Rule* rule = FindRule(f->id);
    int64_t& side = rule && rule->gpu_work ? gpu_left : host_left;
    const int64_t cap = std::max<int64_t>(0, std::min(left, side));
    if (f->estimated_saving_ns_per_step > cap) {
      f->estimated_saving_ns_per_step = cap;
      f->saving_assumption += rule && rule->gpu_work
                                  ? " Capped at the GPU work on the path the replayed plan leaves."
                                  : " Capped at the host time and waits on the path the replayed "
                                    "plan leaves.";
      f->severity = std::max(f->min_severity, SeverityFor(Share(cap, step_ns)));
    }
    left -= f->estimated_saving_ns_per_step;
    side -= f->estimated_saving_ns_per_step;
  }
  for (Finding& f : *findings)
    f.estimated_saving_share = Share(f.estimated_saving_ns_per_step, step_ns);
}

}  // namespace

const std::vector<Rule>& Rules() {
  static const std::vector<Rule> rules = MakeRules();
  return rules;
}

const Rule* FindRule(std::string_view id) {
  for (const Rule& r : Rules())
    if (r.id == id) return &r;
  return nullptr;
}

std::string InputNames(uint32_t inputs) {
  static constexpr std::pair<Input, const char*> kNames[] = {
      {kInSummary, "summary"},    {kInGpuTime, "gpu_time"},  {kInSteps, "steps"},
      {kInKernels, "kernels"},    {kInLaunches, "launches"}, {kInCopies, "copies"},
      {kInSync, "sync_points"},   {kInMemory, "memory"},     {kInOccupancy, "occupancy"},
      {kInIdleGaps, "idle_gaps"}, {kInOpCosts, "op_costs"},  {kInHostWork, "host_work"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames)
    if (inputs & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

std::string RulesMarkdown() {
  std::string out =
      "| id | reads | fires when | estimated saving per step | confidence | verdict |\n"
      "|---|---|---|---|---|---|\n";
  for (const Rule& r : Rules()) {
    out += "| `" + r.id + "` | " + InputNames(r.reads) + " | " + r.threshold + " | " +
           r.saving_model + " | " + render::FormatNumber(r.confidence, 2) + " | " +
           (r.verdict.empty() ? "never" : "`" + r.verdict + "`") + " |\n";
  }
  out += "\n| id | evidence keys | fix |\n|---|---|---|\n";
  for (const Rule& r : Rules())
    out += "| `" + r.id + "` | " + r.evidence_keys + " | " + r.fix + " |\n";
  return out;
}

Advice AdviseRank(const RankInputs& in) {
  Advice advice;
  const analyze::StepsResult& steps = *in.steps;
  const int64_t step_ns = steps.mean_steady_step_ns;
  if (in.summary->counts.kernels + in.summary->counts.memcpys == 0 || step_ns <= 0) {
    // A CUPTI counter trace has GPU work but no timeline of it (trace_summary's warning says why).
    advice.verdict = in.summary->counts.kernels == 0 && in.summary->counts.profiler_ranges > 0
                         ? "no GPU timeline (a CUPTI counter trace)"
                         : "no GPU work";
    return advice;
  }
  // Whole-trace sums (kernels, copies) divided over the steps the trace holds.
  const int64_t step_count = std::max<int64_t>(1, static_cast<int64_t>(steps.steps.size()));
  const bool copies_filtered = in.copies && in.copies->step_filtered;
  const RuleContext ctx{in, step_ns, step_count,
                        copies_filtered && step_count > 1 ? step_count - 1 : step_count,
                        advice.findings};
  for (const Rule& rule : Rules()) {
    if (!HasInputs(in, rule.reads)) continue;
    const size_t first = advice.findings.size();
    rule.run(ctx, &advice.findings);
    for (size_t i = first; i < advice.findings.size(); ++i) {
      Finding& f = advice.findings[i];
      f.id = rule.id;
      f.confidence = rule.confidence;
      if (f.fix.empty()) f.fix = rule.fix;
      f.estimated_saving_share = Share(f.estimated_saving_ns_per_step, step_ns);
      // A rule may raise its severity (idle_gaps: one gap > 500 ms), never lower it.
      f.severity = std::max(f.min_severity, SeverityFor(f.estimated_saving_share));
    }
  }
  if (in.whatif && in.whatif->replayed) ApplyReplay(*in.whatif, step_ns, &advice.findings);
  std::stable_sort(advice.findings.begin(), advice.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     return a.estimated_saving_ns_per_step > b.estimated_saving_ns_per_step;
                   });
  advice.verdict = Verdict(advice.findings);
  // A GPU whose time no saving-bearing finding claims: say how well it is used (MFU) rather than
  // "look at the kernels" or a zero-saving note (memory_underused).
  const analyze::OpCosts* o = in.op_costs;
  if (o && o->steps > 0 && o->mfu > 0) {
    bool saving_verdict = false;
    for (const Finding& f : advice.findings) {
      const Rule* rule = FindRule(f.id);
      if (rule && !rule->verdict.empty() && f.estimated_saving_ns_per_step > 0 &&
          f.estimated_saving_share >= rule->verdict_min_share) {
        saving_verdict = true;
        break;
      }
    }
    if (!saving_verdict && advice.verdict != "near out of memory") {
      advice.verdict = "compute-bound at " + render::FormatShare(o->mfu, 1) + " MFU";
    }
  }
  // With a step graph the verdict names what bounds its critical path (a host-bound loop is
  // host-bound whatever syncs it has).
  // Where kernels bound it, a kernel-side finding that names a verdict refines it
  // (precision-bound, fusion-bound, layout-bound, shape-bound).
  if (in.critical_path && in.critical_path->built && in.critical_path->window_ns > 0) {
    const std::string path = PathVerdict(*in.critical_path, o);
    const bool kernels = path == "GPU-bound" || path.starts_with("compute-bound");
    static constexpr std::string_view kKernelSide[] = {"precision-bound", "fusion-bound",
                                                       "layout-bound", "shape-bound"};
    const bool refined = kernels && std::find(std::begin(kKernelSide), std::end(kKernelSide),
                                              advice.verdict) != std::end(kKernelSide);
    if (!refined) advice.verdict = path;
    // A host-bound step whose largest finding names the host work says which (issue 32 item 4:
    // a compile step is not "compute-bound", and not just "host-bound" either).
    static constexpr std::pair<std::string_view, const char*> kHostWork[] = {
        {"allocator_churn", "host-bound: the driver's memory calls"},
        {"jit_compile", "host-bound: compiling inside the step"},
        {"unrecorded_host_time",
         "host-bound: time outside any recorded op (a warm-up step, or unprofiled Python)"}};
    if (advice.verdict == "host-bound" && !advice.findings.empty()) {
      for (const auto& [id, verdict] : kHostWork)
        if (advice.findings.front().id == id &&
            advice.findings.front().estimated_saving_share >= kVerdictMinShare)
          advice.verdict = verdict;
    }
  }
  return advice;
}

render::Finding ToDocumentFinding(const Finding& f) {
  render::Finding d;
  d.key = f.id;
  d.title = f.title;
  d.severity = f.severity;
  // A rule that estimates no time (memory findings, occupancy alone) gives n/a, not "0 ns".
  const bool saves = f.estimated_saving_ns_per_step > 0 || f.replayed;
  d.saving = saves ? Value::Nanos(f.estimated_saving_ns_per_step) : Value::Na(Unit::kNanos);
  d.saving_share = saves ? Value::Share(f.estimated_saving_share) : Value::Na(Unit::kShare);
  d.saving_assumption = f.saving_assumption;
  if (f.saving_alone_ns_per_step >= 0) d.saving_alone = Value::Nanos(f.saving_alone_ns_per_step);
  d.confidence = f.confidence;
  d.evidence = f.evidence;
  d.fix = f.fix;
  return d;
}

}  // namespace gpuscope::advise
