#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "plan/frameworks.h"
#include "plan/hf_ops.h"
#include "render/format.h"

namespace gpuscope::plan {

std::string Degrees(const ParallelConfig& c) {
  return fmt::format(
      "{} tp={} pp={}{} dp={} mbs={} ga={} {}{} recompute={} {}{} {}{}", FrameworkName(c.framework),
      c.tp, c.pp, c.vpp > 1 ? fmt::format(" vpp={}", c.vpp) : "", c.dp, c.mbs, c.grad_accum,
      ShardingLabel(c), c.sp ? " sp" : "", RecomputeName(c.recompute),
      hw::PrecisionName(c.precision), c.bf16_grads ? " bf16-grads" : "", OptimizerName(c.optimizer),
      c.offload != Offload::kNone ? " offload=" + std::string(OffloadName(c.offload)) : "");
}

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;

// 3,369,340,928
std::string Int(double v) { return render::FormatCount(std::llround(v)); }
std::string Dur(double seconds) { return render::FormatDuration(std::llround(seconds * 1e9)); }
// 4 significant digits: 0.4167, 1.124e+16
std::string Num(double v) { return render::FormatSignificant(v, 4); }
std::string MiB(double bytes) { return render::FormatNumber(bytes / kMiB, 1) + " MiB"; }
std::string GiB(double bytes) { return render::FormatNumber(bytes / kGiB, 2) + " GiB"; }

double WeightBytes(Precision p) { return hw::FullPrecision(p) ? 4 : 2; }
double GradBytes(Precision p, bool fp32_grads) {
  return hw::FullPrecision(p) || fp32_grads ? 4 : 2;
}
double MasterBytes(Precision p) { return hw::FullPrecision(p) ? 0 : 4; }
bool IsPipelineDivisible(int64_t layers, int64_t pp, int64_t vpp) {
  return layers % (pp * vpp) == 0;
}

}  // namespace

double OptimizerStateBytes(Optimizer o) {
  switch (o) {
    case Optimizer::kAdam:
      return 8;
    case Optimizer::kAdam8bit:
      return 2;
    case Optimizer::kSgd:
      return 4;
  }
  return 8;
}

StaticBytes StaticMemory(double params, Precision precision, Optimizer optimizer, Sharding sharding,
                         int64_t dp, bool fp32_grads) {
  const int zero = ZeroStage(sharding);
  const double d = static_cast<double>(dp);
  StaticBytes out;
  out.weights = WeightBytes(precision) * params / (zero >= 3 ? d : 1);
  out.grads = GradBytes(precision, fp32_grads) * params / (zero >= 2 ? d : 1);
  out.master = MasterBytes(precision) * params / (zero >= 1 ? d : 1);
  out.optimizer = OptimizerStateBytes(optimizer) * params / (zero >= 1 ? d : 1);
  return out;
}

int64_t PadVocab(int64_t vocab, int64_t tp, int64_t divisor) {
  const int64_t mult = std::max<int64_t>(1, divisor) * std::max<int64_t>(1, tp);
  return (vocab + mult - 1) / mult * mult;
}

ParamCounts CountParameters(const ModelConfig& m, int64_t vocab) {
  ParamCounts c;
  const double h = static_cast<double>(m.hidden),
               q = static_cast<double>(m.heads) * static_cast<double>(m.head_dim),
               kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim),
               f = static_cast<double>(m.ffn);
  const double gamma_mats = m.gated_mlp ? 3 : 2;  // 2hf·γ with γ = 3/2 for gated
  const double n = m.rms_norm ? 1 : 2;
  c.attention_per_layer = 2 * h * q + 2 * h * kv;
  if (m.experts > 0) {
    c.mlp_per_layer = gamma_mats * h * f * static_cast<double>(m.experts) + h * m.experts;
    c.mlp_active_per_layer =
        gamma_mats * h * f * static_cast<double>(m.experts_top_k) + h * m.experts;
  } else {
    c.mlp_per_layer = c.mlp_active_per_layer = gamma_mats * h * f;
  }
  c.norms_per_layer = 2 * h * n;
  if (m.linear_biases) {
    const double mlp_bias = (m.gated_mlp ? 2 * f : f) + h;
    c.biases_per_layer = (q + 2 * kv) + h + mlp_bias * (m.experts > 0 ? m.experts : 1);
  } else if (m.qkv_bias_only) {
    c.biases_per_layer = q + 2 * kv;
  }
  c.final_norm = n * h;
  c.embedding = h * static_cast<double>(vocab);
  c.output_layer = m.tied_embeddings ? 0 : c.embedding;
  c.positions = h * static_cast<double>(m.learned_positions);
  const double L = static_cast<double>(m.layers);
  const double fixed = c.final_norm + c.embedding + c.output_layer + c.positions;
  c.total = L * (c.attention_per_layer + c.mlp_per_layer + c.norms_per_layer + c.biases_per_layer) +
            fixed;
  c.active = L * (c.attention_per_layer + c.mlp_active_per_layer + c.norms_per_layer +
                  c.biases_per_layer) +
             fixed;
  return c;
}

double GptClosedFormParams(int64_t layers, int64_t hidden, int64_t vocab, int64_t seq) {
  const double L = static_cast<double>(layers), h = static_cast<double>(hidden);
  return 12 * L * h * h * (1 + 13 / (12 * h) + static_cast<double>(vocab + seq) / (12 * L * h));
}

double FlopsKorthikantiModel(double B, double L, double s, double h, double V) {
  return 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
}
double FlopsKorthikantiSelective(double B, double L, double s, double h, double V) {
  return 72 * B * L * s * h * h * (1 + s / (3 * h) + V / (12 * h * L));
}
double FlopsNarayananFull(double B, double L, double s, double h, double V) {
  return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * h * L));
}

// Megatron training.py::num_floating_point_operations (§6); the attention core is causal-halved.
double FlopsMegatron(const ModelConfig& m, double tokens, double sum_seq_sq, int64_t vocab_pad) {
  const double h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn),
               L = static_cast<double>(m.layers),
               q = static_cast<double>(m.heads) * static_cast<double>(m.head_dim),
               kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim);
  const double mats = m.gated_mlp ? 3 : 2;
  const double mlp = m.experts > 0 ? 6 * h * f * static_cast<double>(m.experts_top_k) * mats * L
                                   : 6 * h * f * mats * L;
  const double attn = 6 * (h * (q + 2 * kv) + q * h) * L;
  const double logits = 6 * h * static_cast<double>(vocab_pad);
  return tokens * (mlp + attn + logits) + 6 * sum_seq_sq * q * L;
}

double FlopsPalm(const ModelConfig& m, double params, double tokens, double seq) {
  return tokens * (6 * params + 12 * static_cast<double>(m.layers) * static_cast<double>(m.heads) *
                                    static_cast<double>(m.head_dim) * seq);
}

double ActivationBytesPerLayer(const ModelConfig& m, double s, double b, int64_t tp, bool sp,
                               Recompute r, bool flash, bool dropout) {
  const double h = static_cast<double>(m.hidden), t = static_cast<double>(tp),
               a = static_cast<double>(m.heads), f = static_cast<double>(m.ffn),
               q = static_cast<double>(m.heads) * static_cast<double>(m.head_dim),
               kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim);
  const double sbh = s * b * h;
  if (r == Recompute::kFull) return 2 * sbh / (sp ? t : 1);  // only the layer input is kept
  // Replicated across TP without SP: norm inputs 4, QKV and MLP inputs 4, dropout masks 2.
  const double replicated = (dropout ? 10 : 8) * sbh;
  // Shardable: Q 2sbq, K+V 4sb·kv, out-projection input 2sbq; MLP c·sb·f (GeLU c = 4: fc2
  // input + GeLU input; gated c = 6: gate and up outputs + their product), × top-k for MoE.
  const double c = m.gated_mlp ? 6 : 4;
  const double k = m.experts > 0 ? static_cast<double>(m.experts_top_k) : 1;
  const double shardable = s * b * (4 * q + 4 * kv) + c * s * b * f * k;
  double core = 0;  // attention core: dropped by selective recompute
  if (r == Recompute::kNone)
    core = flash ? 4 * a * s * b / t                       // fp32 softmax statistics
                 : (dropout ? 5 : 4) * a * s * s * b / t;  // softmax 2 + mask 1 + dropout 2
  return (sp ? (replicated + shardable) / t : replicated + shardable / t) + core;
}

double HfActivationBytesPerLayer(const ModelConfig& m, double s, double b, Precision p,
                                 bool autocast, Recompute r) {
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads),
               f = static_cast<double>(m.ffn) *
                   (m.experts > 0 ? static_cast<double>(m.experts_top_k) : 1),
               q = static_cast<double>(m.heads) * static_cast<double>(m.head_dim),
               kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim);
  const double sb = s * b;
  const bool mixed = !hw::FullPrecision(p);
  autocast = autocast && mixed;
  const double e = mixed ? 2 : 4;                  // bytes of a matmul's input and output
  const double res = autocast ? 4 : e;             // the residual stream: fp32 under autocast
  if (r == Recompute::kFull) return res * h * sb;  // the checkpointed block's input
  // Two norms a layer. LayerNorm keeps its input. HF's RMSNorm upcasts: with an fp32 residual
  // it keeps the input and the normalised value (8h); with a 16-bit one, the fp32 copy and the
  // 16-bit normalised value (6h). Each norm's input is the residual (the layer input, then the
  // residual after attention), so the residual is counted here.
  const double norms = 2 * (m.rms_norm ? (res == 4 ? 8 : 6) : res) * h;
  // Projection inputs: under autocast each projection keeps its own 16-bit copy (one for a fused
  // QKV, three for q/k/v; one or two for the MLP); otherwise they share the norm's output.
  const double attn_in = autocast ? (m.fused_qkv ? 1 : 3) * e * h : e * h;
  const double mlp_in = autocast ? (m.gated_mlp ? 2 : 1) * e * h : e * h;
  // Q, K, V as attention keeps them, its output, the fp32 log-sum-exp; GPT-2's cache copies.
  const double attention =
      e * (q + 2 * kv) + e * q + 4 * a + (m.use_cache && m.model_type == "gpt2" ? 2 * e * kv : 0);
  // MLP: gated: gate, up, act(gate), product (the down projection's input); plain: the FC
  // output (the activation's input) and the activation's output; gelu_new (GELU-tanh written
  // out) keeps x (under autocast its fp32 copy: pow is an fp32 op), tanh, 1 + tanh and 0.5·x,
  // then the projection's input.
  double mlp = 2 * e * f;
  if (m.gated_mlp)
    mlp = 4 * e * f;
  else if (m.activation == "gelu_new" || m.activation == "gelu_fast")
    mlp = autocast ? (12 + 2 * e) * f : 5 * e * f;
  const double masks = m.hf_dropout ? 2 * h : 0;  // after attention and after the MLP
  return sb * (norms + attn_in + mlp_in + attention + mlp + masks);
}

double HfOutsideLayersBytes(const ModelConfig& m, double s, double b, Precision p, bool autocast) {
  const double h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab);
  const bool mixed = !hw::FullPrecision(p);
  autocast = autocast && mixed;
  const double e = mixed ? 2 : 4, res = autocast ? 4 : e;
  const double sb = s * b;
  const double final_norm = (m.rms_norm ? (res == 4 ? 8 : 6) : res) * h;
  const double head_in = e * h;  // the autocast copy, or the norm's output
  const double mask = m.hf_dropout ? h : 0;
  // While the loss's backward runs: the logits (16-bit, or fp32), the fp32 log-softmax output
  // and its gradient (the fp32 copy of 16-bit logits is freed when the loss returns).
  return sb * (final_norm + head_in + mask + (mixed ? 10 : 12) * V);
}

double LayersInFlight(int64_t layers, int64_t pp, int64_t vpp, int64_t micro_batches) {
  const double L = static_cast<double>(layers);
  if (pp <= 1) return L;
  const double p = static_cast<double>(pp), v = static_cast<double>(vpp);
  if (vpp > 1) return L * (1 + (p - 1) / (p * v));
  return L * std::min(1.0, static_cast<double>(micro_batches) / p);
}

namespace {

// One configuration's evaluation, section by section of planner-reference.md: what the sections
// share (the layout's numbers, the framework's rules, the measured or written-out step) are its
// fields.
struct Evaluator {
  Evaluator(const ModelConfig& m_in, const hw::GpuSpec& gpu_in, const ParallelConfig& c_in,
            int64_t seq_len_in, const PlanAssumptions& as_in)
      : m(m_in),
        gpu(gpu_in),
        c(c_in),
        seq_len(seq_len_in),
        as(as_in),
        t(static_cast<double>(c.tp)),
        p(static_cast<double>(c.pp)),
        d(static_cast<double>(c.dp)),
        L(static_cast<double>(m.layers)),
        h(static_cast<double>(m.hidden)),
        s(static_cast<double>(seq_len)),
        b(static_cast<double>(c.mbs)),
        mb(static_cast<double>(c.grad_accum)),
        vocab_pad(c.tp > 1 ? PadVocab(m.vocab, c.tp, as.vocab_divisor) : m.vocab),
        V(static_cast<double>(vocab_pad)),
        pc(CountParameters(m, vocab_pad)),
        zero(ZeroStage(c.sharding)) {
    ev.config = c;
  }
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  void Parameters();
  void StaticMemory();
  void Activations();
  void Peak();
  void Compute();
  void Communication();
  void OptimizerStep();
  void add(std::string name, std::string formula, double bytes, TermKind kind) {
    mem.terms.push_back({std::move(name), std::move(formula), bytes, kind, kind != TermKind::kCpu});
  }

  const ModelConfig& m;
  const hw::GpuSpec& gpu;
  const ParallelConfig& c;
  const int64_t seq_len;
  const PlanAssumptions& as;
  Evaluation ev;
  MemoryBreakdown& mem = ev.memory;
  const double t, p, d, L, h, s, b, mb;
  const int64_t vocab_pad;
  const double V;
  const ParamCounts pc;
  const int zero;
  double P = 0;  // parameters on the most-loaded GPU
  std::string Pn;
  // The framework's rules and what its static terms leave for the step.
  int64_t per_node = 0;
  const FrameworkRules* rules = nullptr;
  const MeasuredStep* ms = nullptr;  // exact mode's step when it applies to this configuration
  bool hf = false, autocast = false, off_opt = false;
  double shard_d = 1, step_state_bytes = 0, step_grad_bytes = 0, state_div = 1, wb = 0;
  // The step priced op by op (measured, or Hugging Face's written out), and its compute.
  std::optional<MeasuredStep> formula_step;
  const MeasuredStep* priced_step = nullptr;
  double token_ratio = 1, tokens = 0, N = 0, compute = 0;
  PricedStep priced;
};

// §1 most-loaded shard (first stage).
void Evaluator::Parameters() {
  // §1 most-loaded shard (first stage): [(attn+mlp)·L/p + h·V]/t + norms·L/p + final norm, plus
  // the output layer when untied and p = 1. Experts shard over TP (expert parallelism not
  // modelled); learned positions and norms are replicated.
  const double tp_sharded_layers =
      (pc.attention_per_layer + pc.mlp_per_layer + pc.biases_per_layer) * L / p;
  const double head = (!m.tied_embeddings && c.pp == 1) ? pc.output_layer : 0;
  const double sharded = (tp_sharded_layers + pc.embedding + head) / t;
  const double replicated = pc.norms_per_layer * L / p + pc.final_norm + pc.positions;
  P = sharded + replicated;
  mem.params_on_rank = P;
  Pn = Int(P);
  add("parameters on most-loaded GPU (P_rank, stage 0)",
      "[(attn+mlp)·L/p + h·V" + std::string(head > 0 ? "·2" : "") + "]/t + norms·L/p + final norm" +
          (pc.positions > 0 ? " + positions" : "") + " = " + Pn +
          " params (0 B: a count, not memory)",
      0, TermKind::kStatic);
}

void Evaluator::StaticMemory() {
  // §2 static memory by the framework's own rules (plan/frameworks.h): each term is bytes per
  // parameter of P_rank, ÷ the shard group d when that framework shards it; offload moves all but
  // the weights (and with --offload params the weights too) to host memory.
  per_node = as.gpus_per_node > 0 ? as.gpus_per_node : gpu.gpus_per_node;
  rules = &RulesFor(c.framework);
  // Exact mode's measured step, when it measured this configuration's precision and recompute.
  // It ran plain PyTorch (autocast over fp32 weights): DDP's regime; DeepSpeed and FSDP hold
  // 16-bit weights and Megatron runs its own kernels, so they keep the formulas.
  ms = as.measured.get();
  if (ms && (c.framework != Framework::kDdp || ms->precision != hw::PrecisionName(c.precision) ||
             (ms->recompute == "full") != (c.recompute == Recompute::kFull) ||
             (ms->recompute != "full" && c.recompute != Recompute::kNone) || ms->Tokens() <= 0 ||
             ms->parameters <= 0))
    ms = nullptr;
  mem.measured = ms != nullptr;
  hf = as.impl ? *as.impl == Impl::kHf : c.framework != Framework::kMegatron;
  // Plain PyTorch / DDP runs autocast over fp32 weights; DeepSpeed and FSDP hold 16-bit weights
  // (their own mixed precision), so the HF modules run in 16 bits throughout.
  autocast = c.framework == Framework::kDdp;
  // Plain PyTorch frees the gradients every step (zero_grad(set_to_none=True)): only those alive
  // at the measured peak count.
  const double grads_alive = ms && c.framework == Framework::kDdp && ms->gradient_bytes > 0
                                 ? std::clamp(ms->peak_gradients / ms->gradient_bytes, 0.0, 1.0)
                                 : 1.0;
  shard_d = static_cast<double>(ShardGroup(c, per_node));
  off_opt = c.offload != Offload::kNone;
  const bool off_par = c.offload == Offload::kParams;
  // The optimizer step per parameter of its shard: reads the gradients, reads and writes the
  // master weights and states, writes the weights (§8 "fused Adam").
  double cpu = 0;
  for (const StaticTerm& term : rules->static_terms(c)) {
    const double div = term.sharded ? shard_d : 1;
    const double alive = term.part == Part::kGrads ? grads_alive : 1.0;
    const double bytes = term.bytes_per_param * P / div * alive;
    const bool offloaded = off_par || (off_opt && term.part != Part::kWeights);
    add(term.name + (offloaded ? " (offloaded)" : ""),
        Num(term.bytes_per_param) + " B × " + Pn + (div > 1 ? " / d=" + Int(div) : "") +
            (alive < 1 ? " × " + Num(alive * 100) + " % alive at the peak (measured)" : ""),
        offloaded ? 0 : bytes, TermKind::kStatic);
    if (offloaded) cpu += bytes;
    if (term.part == Part::kState) {
      step_state_bytes += term.bytes_per_param;
      state_div = div;
    } else if (term.part == Part::kGrads) {
      // The step reads its shard's slice of the widest gradient copy (fp32 where there is one).
      step_grad_bytes = std::max(step_grad_bytes, term.bytes_per_param);
    }
  }
  for (const MemoryTerm& term : mem.terms) mem.static_bytes += term.bytes;
  if (cpu > 0) {
    add("host memory for offloaded state (not on the GPU)",
        std::string(off_par ? "weights + " : "") + "grads + master + optimizer shards", cpu,
        TermKind::kCpu);
    mem.cpu_bytes = cpu;
  }
  wb = WeightBytes(c.precision);  // compute-dtype weight bytes
}

// Activations: exact mode's measured ones, Hugging Face's modules, or Megatron's (§3).
void Evaluator::Activations() {
  // Formula mode under Hugging Face's modules: the step's kernels written from the shape
  // (plan/hf_ops.h) and priced as exact mode's measured ones are. Selective recompute is
  // Megatron's (HF has none) and fp8 needs Transformer Engine: those keep the η formula.
  if (!ms && hf && as.hf_ops_priced && c.recompute != Recompute::kSelective &&
      c.precision != Precision::kFp8) {
    const HfRegime regime = hw::FullPrecision(c.precision) ? HfRegime::kFp32
                            : autocast                     ? HfRegime::kAutocast16
                                                           : HfRegime::kPure16;
    // The optimizer steps over its shard of the parameters (ZeRO / FSDP shard its states).
    formula_step = HfFormulaStep(m, c.mbs, seq_len, c.precision, regime, c.recompute, c.optimizer,
                                 P / state_div);
  }
  priced_step = ms ? ms : formula_step ? &*formula_step : nullptr;
  // Tokens of one micro-batch over the measured step's (exact mode scales by it).
  token_ratio = ms ? b * s / ms->Tokens() : 1;
  const double in_flight = LayersInFlight(m.layers, c.pp, c.vpp, c.grad_accum);
  if (ms) {
    // Measured: the storages each block's forward saved, and what else was alive at the peak
    // (embedding, logits, loss, the backward's temporaries), both ∝ tokens, ÷ t.
    const double per_layer = ms->MeanSavedPerLayer() * token_ratio / t;
    const double layers_at_peak = ms->MeanSavedPerLayer() * static_cast<double>(ms->layers);
    const double other = std::max(0.0, ms->peak_rest - layers_at_peak) * token_ratio / t;
    const std::string at = " at b=" + Int(static_cast<double>(ms->batch)) +
                           ", s=" + Int(static_cast<double>(ms->seq_len));
    add("saved tensors of transformer layers in flight (measured)",
        Num(in_flight) + " layers × " + MiB(ms->MeanSavedPerLayer()) + at + " × " +
            Num(token_ratio) + " tokens/t",
        in_flight * per_layer, TermKind::kActivation);
    add("embedding, logits, loss and backward temporaries at the peak (measured)",
        MiB(std::max(0.0, ms->peak_rest - layers_at_peak)) + at + " × " + Num(token_ratio) +
            " tokens/t",
        other, TermKind::kActivation);
  } else if (hf) {
    // Hugging Face's eager modules (HfActivationBytesPerLayer), no tensor parallelism of their own.
    const double per_layer =
        HfActivationBytesPerLayer(m, s, b, c.precision, autocast, c.recompute) / t;
    add("activations of transformer layers in flight (Hugging Face modules)",
        Num(in_flight) + " layers × s·b·(norms + projection inputs + Q, K, V, output + MLP" +
            (m.hf_dropout ? " + dropout masks" : "") + ")" +
            (c.recompute == Recompute::kFull ? " → the block's input only" : "") +
            (hw::FullPrecision(c.precision) ? ", fp32"
             : autocast                     ? ", autocast over fp32 weights"
                                            : ", 16-bit weights") +
            " = " + Num(in_flight) + " × " + MiB(per_layer),
        in_flight * per_layer, TermKind::kActivation);
    if (c.pp == 1)
      add("final norm, LM-head input and the loss's logits (Hugging Face)",
          std::string("s·b·(norm + head input") + (m.hf_dropout ? " + mask" : "") + " + " +
              (hw::FullPrecision(c.precision) ? "12" : "10") +
              "·V), V=" + Int(static_cast<double>(m.vocab)),
          HfOutsideLayersBytes(m, s, b, c.precision, autocast) / t, TermKind::kActivation);
  } else {
    // §3 activations on the first stage.
    const double per_layer =
        ActivationBytesPerLayer(m, s, b, c.tp, c.sp, c.recompute, as.flash_attention, as.dropout);
    const char* layer_formula = nullptr;
    if (c.recompute == Recompute::kFull)
      layer_formula = c.sp ? "2·s·b·h/t (layer input only)" : "2·s·b·h (layer input only)";
    else if (c.sp)
      layer_formula = "s·b·(R + 4q + 4kv + c·f)/t";
    else
      layer_formula = "s·b·(R + (4q + 4kv + c·f)/t)";
    std::string core_formula;
    if (c.recompute == Recompute::kNone)
      core_formula = as.flash_attention ? " + 4·a·s·b/t (flash softmax stats)"
                     : as.dropout       ? " + 5·a·s²·b/t"
                                  : " + 4·a·s²·b/t (no dropout)";  // as ActivationBytesPerLayer
    add("activations of transformer layers in flight",
        Num(in_flight) + " layers × " + layer_formula + core_formula + " = " + Num(in_flight) +
            " × " + MiB(per_layer),
        in_flight * per_layer, TermKind::kActivation);
    // Token ids (int64) and the embedding-dropout output, for each micro-batch in flight on stage
    // 0.
    const double mbs_in_flight = c.pp > 1 ? std::min(mb, p) : 1;
    const double embed_act = (8 * s * b + (as.dropout ? s * b * h : 0)) * mbs_in_flight / t;
    add("token ids + embedding dropout",
        std::string(as.dropout ? "(8·s·b + s·b·h)" : "8·s·b") + "·" + Num(mbs_in_flight) + "/t",
        embed_act, TermKind::kActivation);
    if (c.pp == 1) {
      const double logits = 4 * s * b * h * (1 + V / h) / t;
      add("final norm + output layer input + fp32 logits", "4·s·b·h·(1 + V/h)/t, V=" + Int(V),
          logits, TermKind::kActivation);
    }
  }
  if (!ms && as.activation_scale != 1.0)
    for (MemoryTerm& term : mem.terms)
      if (term.kind == TermKind::kActivation) {
        term.bytes *= as.activation_scale;
        term.formula += " × " + Num(as.activation_scale) + " (calibrated, --from-trace)";
      }
  for (const MemoryTerm& term : mem.terms)
    if (term.kind == TermKind::kActivation) mem.activation_bytes += term.bytes;
}

// Transients, the context, and the peak against the budget.
void Evaluator::Peak() {
  // §4 transients: only the largest counts towards the peak.
  std::vector<MemoryTerm> transients;
  if (c.recompute == Recompute::kFull && !ms) {
    const double one =
        hf ? HfActivationBytesPerLayer(m, s, b, c.precision, autocast, Recompute::kNone) / t
           : ActivationBytesPerLayer(m, s, b, c.tp, c.sp, Recompute::kNone, as.flash_attention,
                                     as.dropout);
    transients.push_back({"one layer's activations during its recompute",
                          "per-layer activations without recompute", one, TermKind::kTransient,
                          true});
  }
  if (c.framework == Framework::kDeepSpeed && zero >= 3) {
    const double largest = std::max({pc.embedding, static_cast<double>(m.hidden) * m.ffn,
                                     static_cast<double>(m.hidden) * m.heads * m.head_dim}) /
                           t;
    transients.push_back({"ZeRO-3 gathered largest layer (DeepSpeed estimator)",
                          "4 B × P_largest = 4 × " + Int(largest), 4 * largest,
                          TermKind::kTransient, true});
  } else if (c.framework == Framework::kFsdp) {
    const double block =
        (pc.attention_per_layer + pc.mlp_per_layer + pc.biases_per_layer) / t + pc.norms_per_layer;
    transients.push_back({"FSDP unsharded units: 2 blocks gathered + 1 block of grads",
                          "(2·" + Num(wb) + " + " + Num(wb) + ") B × P_block=" + Int(block),
                          3 * wb * block, TermKind::kTransient, true});
  } else if (c.framework == Framework::kDdp && ms) {
    if (ms->peak_autocast_cache > 0)
      transients.push_back({"autocast weight cache at the peak (measured)",
                            MiB(ms->peak_autocast_cache) + " × P_rank/P",
                            ms->peak_autocast_cache * P / ms->parameters, TermKind::kTransient,
                            true});
  } else if (c.framework == Framework::kDdp && !hw::FullPrecision(c.precision)) {
    // §4: autocast caches a 16-bit copy of every weight for the forward.
    transients.push_back({"autocast weight cache (16-bit copies of the fp32 weights)",
                          "2 B × " + Pn, 2 * P, TermKind::kTransient, true});
  }
  if (!transients.empty()) {
    size_t best = 0;
    for (size_t i = 1; i < transients.size(); ++i)
      if (transients[i].bytes > transients[best].bytes) best = i;
    for (size_t i = 0; i < transients.size(); ++i) {
      transients[i].counted = i == best;
      mem.terms.push_back(transients[i]);
    }
  }
  add("CUDA context + NCCL + workspaces (assumed; --context-gib)", Num(as.context_gib) + " GiB",
      as.context_gib * kGiB, TermKind::kOverhead);
  if (as.overhead_bytes != 0)
    add("calibrated overhead (measured − predicted, --from-trace)", GiB(as.overhead_bytes),
        as.overhead_bytes, TermKind::kOverhead);
  for (const MemoryTerm& term : mem.terms)
    if (term.counted) mem.peak_bytes += term.bytes;
  mem.peak_allocated_bytes = mem.peak_bytes - as.context_gib * kGiB;
  mem.capacity_bytes = gpu.memory_gib * kGiB;
  mem.budget_bytes = mem.capacity_bytes * (1 - as.headroom);
  mem.fits = mem.peak_bytes <= mem.budget_bytes;
}

void Evaluator::Compute() {
  // §6 FLOPs (Megatron convention, causal) and §8 step time.
  StepTime& st = ev.time;
  const double gbs = b * mb * d;
  tokens = gbs * s;
  st.flops_model = FlopsMegatron(m, tokens, gbs * s * s, vocab_pad);
  const double q = static_cast<double>(m.heads) * static_cast<double>(m.head_dim);
  double extra = 0;
  if (c.recompute == Recompute::kSelective) extra = 2 * gbs * s * s * q * L;  // core forward again
  if (c.recompute == Recompute::kFull) extra = (st.flops_model - 6 * h * V * tokens) / 3;
  st.flops_hardware = st.flops_model + extra;
  const double peak_tflops = hw::PlanPeakTflops(gpu, c.precision);
  st.peak_flops = peak_tflops * 1e12;
  const double mb_tokens = b * s;
  st.efficiency = as.efficiency * mb_tokens / (mb_tokens + as.efficiency_half_tokens);
  N = static_cast<double>(c.gpus);
  if (priced_step) {
    // Every op of the measured (or written-out) step priced on the roofline at this
    // micro-batch's size, per micro-batch; TP splits each op t ways and PP the layers p ways
    // (approximations).
    st.measured = ms != nullptr;
    priced = PriceMeasuredOps(*priced_step, hw::PeaksOf(gpu), as.op_efficiency, token_ratio / t,
                              ms ? P / ms->parameters : 1.0);
    // On tensor cores a training step's GEMMs and attention together run no faster than η of
    // the dense peak, the efficiency published Megatron runs reach (above); the roofline's
    // achievable peaks are what one kernel reaches alone. fp32's CUDA cores have no such runs
    // (and reach their small peak): the roofline stands there.
    const double math_s = priced.gemm_s + priced.attention_s;
    const double math_floor = hw::MatmulPathOf(c.precision) == hw::MathPath::kFp32Cuda
                                  ? 0
                                  : priced.flops / (st.peak_flops * st.efficiency);
    const double gpu_mb = priced.gpu_s - priced.optimizer_s - math_s + std::max(math_s, math_floor);
    const double host_mb = priced.host_s;
    compute = std::max(gpu_mb, host_mb) * mb / p;
    // Built whole (a fixed buffer cut a long --gpu-spec name mid-character: plan_config_fuzz).
    const std::string formula = fmt::format(
        "max(GPU {}, host {}) × m={} / p: {} kernels per micro-batch (GEMM {} + attention {}{}, "
        "memory-bound {}) on the {} roofline",
        Dur(gpu_mb), Dur(host_mb), Int(mb), Int(static_cast<double>(priced.kernels)),
        Dur(priced.gemm_s), Dur(priced.attention_s),
        math_floor > math_s ? ", at most η " + Num(st.efficiency) + " of peak: " + Dur(math_floor)
                            : std::string(),
        Dur(priced.memory_s - priced.optimizer_s), gpu.name);
    st.terms.push_back(
        {ms ? "compute (measured ops priced)" : "compute (Hugging Face ops priced, formulas)",
         formula, compute});
  } else {
    compute = st.flops_hardware / N / (st.peak_flops * st.efficiency);
    st.terms.push_back({"compute",
                        "hardware FLOPs " + Num(st.flops_hardware) + " / (N=" + Int(N) + " × " +
                            Num(peak_tflops) + " TFLOP/s × η " + Num(st.efficiency) + ")",
                        compute});
    if (as.other_s_per_token > 0) {
      // Per GPU: m micro-batches of b·s tokens, each op split t ways and the layers p ways.
      const double tokens_per_gpu = b * s * mb / (t * p);
      const double other = as.other_s_per_token * tokens_per_gpu;
      st.terms.push_back({"outside GEMM/attention (calibrated, --from-trace)",
                          Num(as.other_s_per_token * 1e9) +
                              " ns per token × b·s·m/(t·p) = " + Int(tokens_per_gpu) + " tokens",
                          other});
      compute += other;
    }
  }
}

// TP, PP (and its bubble) and DP traffic (§7).
void Evaluator::Communication() {
  StepTime& st = ev.time;
  const double intra = gpu.intra_node_gbps * 1e9 * as.comm_efficiency;
  const double inter = as.inter_node_gbps * 1e9 * as.comm_efficiency;
  const double act_bytes = hw::FullPrecision(c.precision) ? 4 : 2;
  double tp_time = 0, pp_time = 0;
  if (c.tp > 1) {
    // §7: 4 all-reduces of b·s·h per layer and micro-batch (2 fwd + 2 bwd), +2 with full recompute.
    const double collectives = c.recompute == Recompute::kFull ? 6 : 4;
    const double bytes = collectives * act_bytes * b * s * h * 2 * (t - 1) / t * (L / p) * mb;
    tp_time = bytes / (c.tp <= per_node ? intra : inter);
    st.terms.push_back({"tensor-parallel communication (exposed)",
                        Num(collectives) + " all-reduces × 2(t−1)/t × " + Num(act_bytes) +
                            " B·b·s·h × L/p × m over " + (c.tp <= per_node ? "NVLink" : "network"),
                        tp_time});
  }
  if (c.pp > 1) {
    // §7: b·s·h per micro-batch per boundary per direction (÷t with SP).
    const double bytes = 2 * act_bytes * b * s * h / (c.sp ? t : 1) * mb;
    pp_time = bytes / (c.tp * c.pp <= per_node ? intra : inter);
    st.terms.push_back(
        {"pipeline point-to-point (exposed)",
         "2 directions × " + Num(act_bytes) + " B·b·s·h" + (c.sp ? "/t" : "") + " × m", pp_time});
  }
  const double stage_work = compute + tp_time + pp_time;
  st.bubble_fraction = (p - 1) / (static_cast<double>(c.vpp) * mb);
  if (c.pp > 1)
    st.terms.push_back({"pipeline bubble",
                        "(p−1)/(v·m) = " + Num(st.bubble_fraction) + " × stage work",
                        stage_work * st.bubble_fraction});
  if (c.dp > 1) {
    const double rb = rules->reduce_bytes(c);  // the framework's reduce dtype
    double bytes = 0;
    std::string f;
    double total = 0;
    const double bw = c.gpus <= per_node ? intra : inter;
    if (c.hybrid) {
      // HYBRID_SHARD: FULL_SHARD traffic inside a node (d_s GPUs over NVLink), then the grad
      // shard all-reduced across the r = dp/d_s replicas over the network.
      const double ds = shard_d, reps = d / shard_d;
      const double inside = (2 * wb + rb) * (ds - 1) / ds * P * mb;
      const double across = rb * 2 * (reps - 1) / reps * P / ds;
      total = inside / intra + across / inter;
      f = "(2 all-gathers + 1 reduce-scatter)·(d_s−1)/d_s × P_rank × m in a node (d_s=" + Int(ds) +
          ") + all-reduce 2(r−1)/r × P_rank/d_s across r=" + Int(reps) + " nodes";
    } else if (zero >= 3) {
      bytes = (2 * wb * (d - 1) / d + rb * (d - 1) / d) * P * mb;
      f = "(2 all-gathers + 1 reduce-scatter)·(d−1)/d × P_rank × m";
    } else if (c.framework == Framework::kFsdp) {
      // SHARD_GRAD_OP: one all-gather per micro-batch's forward, one reduce-scatter per step.
      bytes = (wb * mb + rb) * (d - 1) / d * P;
      f = "(all-gather × m + reduce-scatter)·(d−1)/d × P_rank";
    } else {
      bytes = rb * 2 * (d - 1) / d * P;
      f = zero == 0 ? "all-reduce 2(d−1)/d × " + Num(rb) + " B × P_rank"
                    : "reduce-scatter + all-gather 2(d−1)/d × " + Num(rb) + " B × P_rank";
    }
    if (!c.hybrid) total = bytes / bw;
    const double backward = compute * 2 / 3;
    const double exposed =
        total * (1 - as.dp_overlap) + std::max(0.0, total * as.dp_overlap - backward);
    st.terms.push_back(
        {"data-parallel communication (exposed)",
         f + " = " + Num(total) + " s, " + Num(as.dp_overlap * 100) + " % overlapped with backward",
         exposed});
  }
}

void Evaluator::OptimizerStep() {
  StepTime& st = ev.time;
  const double shard = P / state_div;
  const double gb = step_grad_bytes;
  if (!off_opt && ms) {
    st.terms.push_back({"optimizer step (measured foreach kernels priced)",
                        "the measured step's optimizer kernels × P_rank/P = " + Int(shard) + " / " +
                            Int(ms->parameters) + " params",
                        priced.optimizer_s});
  } else if (!off_opt && priced_step) {
    st.terms.push_back({"optimizer step (foreach kernels priced)",
                        std::string(c.optimizer == Optimizer::kSgd ? "SGD 20" : "AdamW 56") +
                            " B read + written × " + Int(shard) + " params at " +
                            Num(as.op_efficiency.foreach * 100) + " % of HBM bandwidth",
                        priced.optimizer_s});
  } else if (!off_opt) {
    const double touched = 2 * step_state_bytes + gb + wb;  // read+write states, grads, weights
    st.terms.push_back(
        {"optimizer step (memory-bound)",
         Num(touched) + " B × " + Int(shard) + " params / " + Num(gpu.hbm_gbps) + " GB/s",
         touched * shard / (gpu.hbm_gbps * 1e9)});
  } else {
    const double pcie = (gb + wb) * shard / (gpu.pcie_gbps * 1e9);
    st.terms.push_back({"offload: grads to host + weights back over PCIe",
                        "(" + Num(gb) + " + " + Num(wb) + ") B × " + Int(shard) + " / " +
                            Num(gpu.pcie_gbps) + " GB/s",
                        pcie});
    st.terms.push_back({"offload: CPU Adam",
                        Int(shard) + " params / " + Num(as.cpu_adam_params_per_s) + " params/s",
                        shard / as.cpu_adam_params_per_s});
  }
  for (const TimeTerm& term : st.terms) st.step_s += term.seconds;
  st.tokens_per_s = tokens / st.step_s;
  st.mfu = st.flops_model / (st.step_s * N * st.peak_flops);
  st.hfu = st.flops_hardware / (st.step_s * N * st.peak_flops);
}

}  // namespace

Evaluation Evaluate(const ModelConfig& m, const hw::GpuSpec& gpu, const ParallelConfig& c,
                    int64_t seq_len, const PlanAssumptions& as) {
  Evaluator e(m, gpu, c, seq_len, as);
  e.Parameters();
  e.StaticMemory();
  e.Activations();
  e.Peak();
  e.Compute();
  e.Communication();
  e.OptimizerStep();
  return std::move(e.ev);
}

namespace {

// Why framework `f` cannot run what the request fixes; "" when some choice of the free degrees
// (the sharding stage tried over 0–3) lets it.
std::string ForcedRefusal(const FrameworkRules& f, const PlanRequest& r) {
  ParallelConfig c;
  c.framework = f.framework;
  c.gpus = r.gpus;
  c.tp = r.tp.value_or(1);
  c.pp = r.pp.value_or(1);
  c.vpp = r.vpp.value_or(1);
  c.sp = r.sp.value_or(c.tp > 1);
  c.recompute = r.recompute.value_or(Recompute::kNone);
  c.precision = r.precision.value_or(Precision::kBf16);
  c.optimizer = r.optimizer.value_or(Optimizer::kAdam);
  c.offload = r.offload;
  c.hybrid = r.hybrid;
  c.bf16_grads = r.bf16_grads;
  std::string first;
  for (Sharding z : {Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}) {
    if (r.sharding && *r.sharding != z) continue;
    c.sharding = z;
    std::string why = f.refuses(c);
    if (why.empty()) return "";
    if (first.empty()) first = std::move(why);
  }
  return first;
}

}  // namespace

Status ValidateRequest(const PlanRequest& r) {
  auto usage = [](const std::string& m) { return Status::Error(StatusCode::kUsage, m); };
  if (r.gpus <= 0) return usage("--gpus must be a positive integer");
  if (r.gpus > kMaxGpus)
    return usage("--gpus " + std::to_string(r.gpus) + " is above the planner's limit of " +
                 std::to_string(kMaxGpus) + " GPUs (2^20)");
  if (r.global_batch <= 0) return usage("--global-batch must be a positive integer");
  if (r.seq_len <= 0) return usage("--seq-len must be a positive integer");
  // Far beyond any run (the longest trained contexts are a few M tokens), and they keep every
  // token, FLOP and byte count of the formulas within range.
  if (r.seq_len > kMaxSeqLen)
    return usage("--seq-len " + std::to_string(r.seq_len) + " is above the planner's limit of " +
                 std::to_string(kMaxSeqLen) + " tokens (2^24)");
  if (r.global_batch > kMaxGlobalBatch)
    return usage("--global-batch " + std::to_string(r.global_batch) +
                 " is above the planner's limit of " + std::to_string(kMaxGlobalBatch) +
                 " sequences (2^24)");
  if (r.tp && *r.tp <= 0) return usage("--tp must be a positive integer");
  if (r.pp && *r.pp <= 0) return usage("--pp must be a positive integer");
  if (r.vpp && *r.vpp <= 0) return usage("--vpp must be a positive integer");
  if (r.mbs && *r.mbs <= 0) return usage("--mbs must be a positive integer");
  // Bounded by --gpus (≤ 2^20), so tp·pp and tp·pp·dp stay far from int64 overflow.
  if (r.tp && *r.tp > r.gpus)
    return usage("--tp " + std::to_string(*r.tp) + " exceeds --gpus " + std::to_string(r.gpus));
  if (r.pp && *r.pp > r.gpus)
    return usage("--pp " + std::to_string(*r.pp) + " exceeds --gpus " + std::to_string(r.gpus));
  const auto& a = r.assumptions;
  if (!(a.efficiency > 0 && a.efficiency <= 1))
    return usage("--efficiency must be in (0, 1], got " + Num(a.efficiency));
  if (!(a.headroom >= 0 && a.headroom < 1)) return usage("--headroom must be in [0, 1)");
  if (!(a.context_gib >= 0)) return usage("--context-gib must be ≥ 0");
  if (!(a.inter_node_gbps > 0)) return usage("--inter-node-gbps must be positive");
  if (r.precision && hw::PlanPeakTflops(r.gpu, *r.precision) <= 0)
    return Status::Error(
        StatusCode::kInvalidInput,
        "GPU " + r.gpu.name + " (" + r.gpu.description + ") has no " +
            std::string(hw::PrecisionName(*r.precision)) + " support (hint: " +
            (*r.precision == Precision::kFp8 ? "FP8 needs Ada, Hopper, Blackwell or MI300; use bf16"
                                             : "use fp16 with loss scaling, or fp32") +
            ")");
  if (r.offload == Offload::kParams && r.sharding && ZeroStage(*r.sharding) != 3)
    return usage("--offload params needs ZeRO-3 (--zero 3)");
  if (r.tp && r.model.heads % *r.tp != 0)
    return usage("--tp " + std::to_string(*r.tp) + " does not divide the " +
                 std::to_string(r.model.heads) + " attention heads");
  if (r.tp && r.model.kv_heads % *r.tp != 0)
    return usage("--tp " + std::to_string(*r.tp) + " does not divide the " +
                 std::to_string(r.model.kv_heads) + " KV heads");
  if (r.pp && r.model.layers % (*r.pp * r.vpp.value_or(1)) != 0)
    return usage("--pp " + std::to_string(*r.pp) +
                 (r.vpp ? " × --vpp " + std::to_string(*r.vpp) : "") + " does not divide the " +
                 std::to_string(r.model.layers) + " layers");
  if (r.vpp && *r.vpp > 1 && r.pp && *r.pp == 1)
    return usage("--vpp " + std::to_string(*r.vpp) +
                 " needs --pp > 1 (interleaving splits stages)");
  if (r.tp && r.pp && r.gpus % (*r.tp * *r.pp) != 0)
    return usage("--gpus " + std::to_string(r.gpus) +
                 " is not a multiple of tp × pp = " + std::to_string(*r.tp * *r.pp));
  // What the user fixed must be something a framework runs: the one named, or any.
  std::string why;
  for (const FrameworkRules& f : AllFrameworks()) {
    if (r.framework && *r.framework != f.framework) continue;
    const std::string rule = ForcedRefusal(f, r);
    if (rule.empty()) return Status::Ok();
    if (r.framework)
      return usage("--framework " + std::string(FrameworkName(f.framework)) +
                   " cannot run this: " + rule);
    why += std::string(why.empty() ? "" : "; ") + std::string(FrameworkName(f.framework)) + ": " +
           rule;
  }
  return usage("no framework runs this combination — " + why);
}

namespace {

// Ascending, in O(√n).
std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> low, high;
  for (int64_t i = 1; i <= n / i; ++i)
    if (n % i == 0) {
      low.push_back(i);
      if (i != n / i) high.push_back(n / i);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

}  // namespace

namespace {

// What the search tries: each degree given, or every value that can run.
struct SearchSpace {
  std::vector<int64_t> tps, pps, vpps, mbss;
  std::vector<Sharding> shards;
  std::vector<Recompute> recs;
  std::vector<Precision> precs;
  std::vector<Framework> frameworks;
};

SearchSpace SpaceOf(const PlanRequest& r, int64_t per_node) {
  const ModelConfig& m = r.model;
  SearchSpace x;
  if (r.tp) {
    x.tps = {*r.tp};
  } else {
    for (int64_t t : Divisors(r.gpus))
      if (t <= per_node && m.heads % t == 0 && m.kv_heads % t == 0) x.tps.push_back(t);
  }
  if (r.pp) {
    x.pps = {*r.pp};
  } else {
    for (int64_t p : Divisors(r.gpus))
      if (m.layers % p == 0) x.pps.push_back(p);
  }
  x.vpps = r.vpp ? std::vector<int64_t>{*r.vpp} : std::vector<int64_t>{1, 2};
  if (r.mbs) {
    x.mbss = {*r.mbs};
  } else {
    for (int64_t b = 1; b <= std::min<int64_t>(r.global_batch, 64); b *= 2) x.mbss.push_back(b);
  }
  x.shards = r.sharding ? std::vector<Sharding>{*r.sharding}
                        : std::vector<Sharding>{Sharding::kNone, Sharding::kZero1, Sharding::kZero2,
                                                Sharding::kZero3};
  x.recs = r.recompute
               ? std::vector<Recompute>{*r.recompute}
               : std::vector<Recompute>{Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  if (r.precision) {
    x.precs = {*r.precision};
  } else {
    // fp8 only when asked (--precision fp8): it needs Transformer Engine and convergence checks.
    x.precs.push_back(r.gpu.tflops_bf16 > 0 ? Precision::kBf16 : Precision::kFp16);
  }
  if (r.framework) {
    x.frameworks = {*r.framework};
  } else {
    for (const FrameworkRules& f : AllFrameworks()) x.frameworks.push_back(f.framework);
  }
  return x;
}

// Evaluates every configuration of the space a framework runs: the fitting ones feasible, the
// others rejected with why.
void Search(const PlanRequest& r, const SearchSpace& x, int64_t per_node, PlanReport* rep) {
  const ModelConfig& m = r.model;
  const PlanAssumptions& as = r.assumptions;
  for (int64_t t : x.tps)
    for (int64_t p : x.pps) {
      if (r.gpus % (t * p) != 0) continue;
      const int64_t d = r.gpus / (t * p);
      for (int64_t v : x.vpps) {
        if (v > 1 && (p == 1 || !IsPipelineDivisible(m.layers, p, v))) continue;
        for (int64_t b : x.mbss) {
          ParallelConfig c;
          c.gpus = r.gpus;
          c.tp = t;
          c.pp = p;
          c.vpp = v;
          c.dp = d;
          c.sp = r.sp ? *r.sp : t > 1;
          c.mbs = b;
          c.optimizer = r.optimizer.value_or(Optimizer::kAdam);
          c.offload = r.offload;
          c.bf16_grads = r.bf16_grads;
          if (r.global_batch % (b * d) != 0) {
            Rejection rej{c,
                          "global batch " + std::to_string(r.global_batch) +
                              " not divisible by mbs·dp = " + std::to_string(b) + "·" +
                              std::to_string(d) + " = " + std::to_string(b * d),
                          0};
            rep->rejected.push_back(rej);
            continue;
          }
          c.grad_accum = r.global_batch / (b * d);
          if (v > 1 && c.grad_accum % p != 0) {
            rep->rejected.push_back(
                {c,
                 "interleaving needs m % p == 0 (m=" + std::to_string(c.grad_accum) +
                     ", p=" + std::to_string(p) + ")",
                 0});
            continue;
          }
          for (Sharding z : x.shards) {
            if (d == 1 && z != Sharding::kNone && !r.sharding) continue;  // sharding over 1: same
            if (r.offload == Offload::kParams && ZeroStage(z) != 3) continue;
            for (Framework fw : x.frameworks)
              for (bool hybrid : {false, true}) {
                // Hybrid sharding is searched for FSDP's FULL_SHARD across nodes, or forced.
                if (hybrid != r.hybrid &&
                    (r.hybrid || fw != Framework::kFsdp || z != Sharding::kZero3 || d <= per_node))
                  continue;
                for (Recompute rc : x.recs)
                  for (Precision pr : x.precs) {
                    c.sharding = z;
                    c.recompute = rc;
                    c.precision = pr;
                    c.framework = fw;
                    c.hybrid = hybrid;
                    if (!RulesFor(fw).refuses(c).empty()) {
                      ++rep->not_supported;
                      continue;
                    }
                    Evaluation ev = Evaluate(m, r.gpu, c, r.seq_len, as);
                    ++rep->evaluated;
                    if (ev.memory.fits) {
                      rep->feasible.push_back(std::move(ev));
                    } else {
                      const double over = ev.memory.peak_bytes - ev.memory.budget_bytes;
                      rep->rejected.push_back({c,
                                               "OOM by " + GiB(over) + " on stage 0 (peak " +
                                                   GiB(ev.memory.peak_bytes) + " > budget " +
                                                   GiB(ev.memory.budget_bytes) + ")",
                                               over});
                    }
                  }
              }
          }
        }
      }
    }
}

// Assumptions printed with every plan (§11).
void AddAssumptions(const PlanRequest& r, PlanReport* rep) {
  const ModelConfig& m = r.model;
  const PlanAssumptions& as = r.assumptions;
  auto& A = rep->assumptions;
  A.push_back(
      "memory in GiB/MiB (2^30/2^20 B); predicts peak allocated; budget = capacity × (1 − " +
      Num(as.headroom) + ") allocator headroom");
  A.push_back(
      "static memory by each framework's own rules (docs/planner.md \"Frameworks\"): Megatron "
      "bf16 weights + fp32 main grads (dist-opt shards master + Adam); DeepSpeed 16-bit "
      "weights + grads + fp32 grads, master, Adam by ZeRO stage; FSDP fp32 sharded params, "
      "grads, Adam; DDP fp32 weights, grads, buckets, Adam (one GPU: plain PyTorch, no buckets)");
  A.push_back(std::string(as.flash_attention ? "flash attention (no s² tensors)"
                                             : "explicit attention (5as²b)") +
              "; dropout masks " + (as.dropout ? "counted (Megatron convention)" : "not counted") +
              "; SwiGLU stores gate, up and product (c = 6; Megatron's 18 + 4f/h omits 2sbf/t)");
  A.push_back(
      "most-loaded GPU = first pipeline stage (embedding + p micro-batches in flight under 1F1B)");
  A.push_back("vocab padded to a multiple of " + std::to_string(as.vocab_divisor) +
              "·t when t > 1 (Megatron); experts sharded by TP (no expert parallelism)");
  A.push_back(
      "FLOPs: Megatron convention (causal attention halved); MFU = model FLOPs / (t_step · N · "
      "dense peak); "
      "selective recompute adds one attention-core forward, full adds one forward");
  A.push_back("η = " + Num(as.efficiency) + " of dense peak × T/(T + " +
              Num(as.efficiency_half_tokens) + ") for T tokens per micro-batch; links at " +
              Num(as.comm_efficiency * 100) + " % of bandwidth; inter-node " +
              Num(as.inter_node_gbps) + " GB/s per GPU; " + Num(as.dp_overlap * 100) +
              " % of DP traffic overlaps backward; TP/PP traffic exposed");
  if (as.hf_ops_priced)
    A.push_back(
        "step time under Hugging Face's modules (no measurement): their kernels written out from "
        "the shape and priced on the roofline like measured ops, GEMMs and attention at most η "
        "of dense peak on tensor cores (docs/planner.md \"Formula mode's Hugging Face step\")");
  A.push_back(std::string("activations: ") +
              (as.impl ? "--impl " + std::string(ImplName(*as.impl)) + " for every framework"
                       : "Megatron's fused kernels under Megatron-LM; Hugging Face's eager modules "
                         "(fp32 norms and residual under autocast, gelu_new's fp32 tensors, "
                         "fp32 loss) under DeepSpeed, FSDP and DDP") +
              " (docs/planner.md \"Implementations\")");
  A.push_back("precision: fp32 = PyTorch's default, matmuls on CUDA cores (" +
              Num(hw::PlanPeakTflops(r.gpu, Precision::kFp32)) +
              " TFLOP/s here); tf32 = allow_tf32=True on tensor cores; fp8 only when asked");
  if (!as.exact_note.empty()) A.push_back(as.exact_note);
  if (const MeasuredStep* ms = as.measured.get()) {
    const OpEfficiency& e = as.op_efficiency;
    A.push_back(fmt::format(
        "exact mode: one training step of the model's own code (transformers {}, torch {}) run "
        "on fake tensors at b={}, s={}, {}, recompute {}, {} ({:.1f} s): measured are the "
        "activations and temporaries alive at the peak, the gradients alive then, autocast's "
        "weight cache and every kernel-launching op ({} per micro-batch); static memory and "
        "communication are formulas; a configuration of another framework than DDP (plain "
        "PyTorch), precision or recompute is formulas only",
        ms->transformers_version, ms->torch_version, ms->batch, ms->seq_len, ms->precision,
        ms->recompute, ms->optimizer, ms->seconds, ms->kernels));
    A.push_back(fmt::format(
        "measured ops priced on the {} roofline at achievable peaks: GEMMs on their math path × "
        "the bf16 size curve (× {} when a 16-bit GEMM has a dimension not a multiple of 8), "
        "attention {} / {} of its path (forward / backward), memory-bound ops at HBM × {} "
        "(elementwise), {} (norms, softmax, loss), {} (reductions), {} (optimizer foreach); at "
        "least {} µs per kernel; the host {} µs per op (eager PyTorch); η is not used",
        r.gpu.name, e.misaligned_gemm, e.attention_forward, e.attention_backward, e.elementwise,
        e.normalization, e.reduction, e.foreach, e.min_kernel_s * 1e6, e.host_per_op_s * 1e6));
  }
  for (const std::string& x : m.assumptions) A.push_back("config: " + x);
}

// Nothing fits → say what would (§9, issue item 8).
void Suggest(const PlanRequest& r, PlanReport* rep) {
  const ModelConfig& m = r.model;
  const PlanAssumptions& as = r.assumptions;
  if (!rep->feasible.empty() || !r.suggest) return;
  {
    const Rejection* closest = nullptr;
    for (const Rejection& x : rep->rejected)
      if (x.over_bytes > 0 && (!closest || x.over_bytes < closest->over_bytes)) closest = &x;
    if (closest) {
      rep->closest = Evaluate(m, r.gpu, closest->config, r.seq_len, as);
      rep->suggestions.push_back("closest: " + Degrees(closest->config) +
                                 " is over the budget by " + GiB(closest->over_bytes));
    }
    // Re-run with each restriction lifted, and with more GPUs.
    auto try_variant = [&](PlanRequest v, const std::string& what) {
      v.top = 1;
      v.suggest = false;
      auto sub = Plan(v);
      if (sub.ok() && !sub->feasible.empty()) {
        rep->suggestions.push_back(what + " fits: " + Degrees(sub->feasible.front().config));
        return true;
      }
      return false;
    };
    if (r.mbs && *r.mbs > 1) {
      PlanRequest v = r;
      v.mbs.reset();
      try_variant(v, "a smaller micro-batch");
    }
    if (r.sharding && ZeroStage(*r.sharding) < 3) {
      PlanRequest v = r;
      v.sharding = Sharding::kZero3;
      try_variant(v, "ZeRO-3");
    }
    if (r.recompute && *r.recompute != Recompute::kFull) {
      PlanRequest v = r;
      v.recompute = Recompute::kFull;
      try_variant(v, "full activation checkpointing");
    }
    bool found = false;
    if (r.tp || r.pp) {
      PlanRequest v = r;
      v.tp.reset();
      v.pp.reset();
      v.vpp.reset();
      found |= try_variant(v, "searching TP/PP");
    }
    if (!found && rep->suggestions.size() <= 1) {
      // No single lever is enough: all of them together on the same GPUs.
      PlanRequest v = r;
      v.SearchLayout();
      found = try_variant(v, "searching micro-batch, ZeRO, checkpointing and TP/PP together");
    }
    if (rep->suggestions.size() > 1) found = true;
    for (int64_t mult = 2; mult <= 64 && !found; mult *= 2) {
      PlanRequest v = r;
      // Overflow-safe, and never past the --gpus limit (the re-plan would be rejected anyway).
      if (__builtin_mul_overflow(r.gpus, mult, &v.gpus) || v.gpus > kMaxGpus) break;
      v.SearchLayout();
      found = try_variant(v, std::to_string(v.gpus) + " GPUs");
    }
    if (!found && rep->suggestions.size() <= 1)
      rep->suggestions.push_back("no variant tried fits (up to 64× the GPUs, at most " +
                                 std::to_string(kMaxGpus) +
                                 "): a larger-memory GPU or a shorter --seq-len");
  }
}

}  // namespace

Result<PlanReport> Plan(const PlanRequest& r) {
  GPUSCOPE_RETURN_IF_ERROR(ValidateRequest(r));
  PlanReport rep;
  rep.request = r;
  rep.vocab_padded_tp1 = r.model.vocab;
  rep.params = CountParameters(r.model, r.model.vocab);
  const PlanAssumptions& as = r.assumptions;
  const int64_t per_node = as.gpus_per_node > 0 ? as.gpus_per_node : r.gpu.gpus_per_node;
  Search(r, SpaceOf(r, per_node), per_node, &rep);
  // Every degree given and one framework runs it: that one configuration was evaluated.
  const bool degrees_given = r.tp && r.pp && r.mbs && r.sharding && r.recompute && r.precision;
  rep.exact = degrees_given && rep.evaluated == 1;
  std::stable_sort(rep.feasible.begin(), rep.feasible.end(),
                   [](const Evaluation& x, const Evaluation& y) {
                     if (x.time.tokens_per_s != y.time.tokens_per_s)
                       return x.time.tokens_per_s > y.time.tokens_per_s;
                     return x.memory.peak_bytes < y.memory.peak_bytes;
                   });
  AddAssumptions(r, &rep);
  Suggest(r, &rep);
  return rep;
}

}  // namespace gpuscope::plan
