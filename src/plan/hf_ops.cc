#include "plan/hf_ops.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "hw/gpu_peaks.h"
#include "plan/planner.h"

namespace gpuscope::plan {
namespace {

// Bytes one class of memory-bound kernels moves (each input read and each output written once,
// as exact mode counts them), per token and per parameter, and how many kernels it launches.
struct Traffic {
  double h = 0, f = 0, kv = 0;  // B per token per element of h, f (per expert run), kv = g·d_h
  double gqa = 0;               // B per token per element of q = a·d_h when g < a (repeat_kv)
  double token = 0;             // B per token (RoPE's cos/sin: fixed by d_h = 64 in the counts)
  double position = 0;          // B per token per position of the sequence (masks)
  double param = 0;             // B per matmul parameter (autocast's weight casts)
  double kernels = 0, gqa_kernels = 0;
};
struct ClassTraffic {
  Traffic memory, normalization, reduction;
};
// Outside the blocks: embeddings, final norm, LM head's casts, log-softmax and NLL loss.
struct OutsideTraffic {
  double h = 0, vocab = 0, token = 0;
  double param = 0;      // B per parameter of the embedding and LM head (V·h, twice untied)
  double position = 0;   // B per token per position (the causal mask)
  double positions = 0;  // B per parameter of a learned position embedding (GPT-2's wpe)
  double kernels = 0;
};
struct OutsideClasses {
  OutsideTraffic memory, normalization, reduction;
};
struct ModuleTraffic {
  ClassTraffic layer;           // one decoder block, forward + backward
  ClassTraffic again;           // what recompute=full adds per block (its forward again)
  OutsideClasses outside;       // without recompute
  OutsideClasses outside_full;  // with recompute=full (checkpointing's own casts and copies)
};

// Counted from exact mode (python/gpuscope/exact.py, torch 2.13, transformers 5.24) by
// tools/fit_hf_traffic.py: eight shapes per kind (h 512–768, f 1280–2560, g 2–12 heads of 64,
// V 5,000–7,000, b 2 and 4, s 128 and 384), two and three layers (a block = the difference),
// least squares per class; every shape is reproduced to < 0.1 % (tests/plan_hf_ops_test.cc checks
// gpt2-medium at s = 1,024, a Llama and a Qwen2 shape at s = 512). kGpt2Tanh: GPT-2's block
// (LayerNorm, fused QKV Conv1D, gelu_new written out, dropout); kGpt2Gelu: the same with a
// one-kernel activation; kLlama: RMSNorm with its fp32 upcast, q/k/v projections, RoPE,
// repeat_kv, SwiGLU; kQwen2: Llama's with biases on q, k, v.
#include "plan/hf_traffic.inc"

const ModuleTraffic& TrafficFor(const ModelConfig& m, HfRegime regime) {
  // GELU-tanh written out in Python ops (GPT-2's default activation); gelu_pytorch_tanh, gelu,
  // relu… are one kernel each.
  const bool written_out = m.activation == "gelu_new" || m.activation == "gelu_fast" ||
                           (m.activation.empty() && m.model_type == "gpt2");
  const int r = regime == HfRegime::kAutocast16 ? 0 : 1;  // kPure16 scales the fp32 counts
  if (m.gated_mlp) return m.qkv_bias_only ? kQwen2[r] : kLlama[r];
  return written_out ? kGpt2Tanh[r] : kGpt2Gelu[r];
}

}  // namespace

MeasuredStep HfFormulaStep(const ModelConfig& m, int64_t batch, int64_t seq_len,
                           hw::Precision precision, HfRegime regime, Recompute recompute,
                           Optimizer optimizer, double parameters) {
  MeasuredStep out;
  out.model_type = m.model_type;
  out.precision = std::string(hw::PrecisionName(precision));
  out.recompute = recompute == Recompute::kFull ? "full" : "none";
  out.optimizer = optimizer == Optimizer::kSgd ? "sgd" : "adam";
  out.batch = batch;
  out.seq_len = seq_len;
  out.layers = m.layers;
  out.parameters = parameters;

  const double T = static_cast<double>(batch) * static_cast<double>(seq_len);
  const double s = static_cast<double>(seq_len), b = static_cast<double>(batch);
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads),
               q = a * static_cast<double>(m.head_dim),
               kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim),
               V = static_cast<double>(m.vocab), L = static_cast<double>(m.layers);
  // A token runs top-k experts' MLPs (the router's work is left out: h·E per token).
  const double f = static_cast<double>(m.ffn) *
                   (m.experts > 0 ? static_cast<double>(std::max<int64_t>(1, m.experts_top_k)) : 1);
  const bool full = hw::FullPrecision(precision);
  const double e = full ? 4 : 2;  // bytes of a matmul's operands
  const std::string path(hw::MathPathName(hw::MatmulPathOf(precision)));
  // Exact mode's fp32 attention is the memory-efficient kernel on 3×TF32 MMAs.
  const std::string attention_path =
      full ? std::string(hw::MathPathName(hw::MathPath::kTf32x3)) : path;
  const double recomputed = recompute == Recompute::kFull ? 1 : 0;

  auto gemm = [&](double mm, double nn, double kk, double count) {
    if (count <= 0 || mm <= 0 || nn <= 0 || kk <= 0) return;
    MeasuredOp op;
    op.op = "mm";
    op.klass = "gemm";
    op.path = path;
    op.flops = 2 * mm * nn * kk;
    op.bytes = (mm * kk + kk * nn + mm * nn) * e;
    op.m = static_cast<int64_t>(mm);
    op.n = static_cast<int64_t>(nn);
    op.k = static_cast<int64_t>(kk);
    op.count = static_cast<int64_t>(count);
    out.ops.push_back(op);
  };
  // A linear layer in → out over T tokens: forward, input gradient, weight gradient; the
  // blocks' forwards run again under full recompute.
  auto linear = [&](double in, double outf, double layers, double forwards) {
    gemm(T, outf, in, layers * forwards);
    gemm(T, in, outf, layers);
    gemm(in, outf, T, layers);
  };
  const double fwd = 1 + recomputed;
  if (m.fused_qkv) {
    linear(h, q + 2 * kv, L, fwd);
  } else {
    linear(h, q, L, fwd);
    linear(h, kv, 2 * L, fwd);
  }
  linear(q, h, L, fwd);
  linear(h, f, m.gated_mlp ? 2 * L : L, fwd);
  linear(f, h, L, fwd);
  linear(h, V, 1, 1);  // the LM head (tied or not: one matmul)

  // SDPA, K and V repeated to a heads (repeat_kv) first. Causal (half the s² work) as is_causal;
  // under gradient checkpointing (use_cache off) the models pass an explicit b × s × s mask
  // instead, which SDPA reads and cannot skip by (exact mode's lists show both).
  const double mask = recomputed > 0 ? e * b * s * s : 0;
  const double attention_flops = 4 * b * s * s * q / (recomputed > 0 ? 1 : 2);
  MeasuredOp fa{"scaled_dot_product_attention",
                "attention",
                attention_path,
                attention_flops,
                4 * e * q * T + 4 * a * T + mask,
                0,
                0,
                0,
                static_cast<int64_t>(L * fwd)};
  MeasuredOp ba{"scaled_dot_product_attention_backward",
                "attention_backward",
                attention_path,
                2.5 * attention_flops,
                8 * e * q * T + 4 * a * T + mask,
                0,
                0,
                0,
                static_cast<int64_t>(L)};
  out.ops.push_back(fa);
  out.ops.push_back(ba);

  // The memory-bound classes, one op each (bytes per call = their mean).
  const ModuleTraffic& t = TrafficFor(m, regime);
  const double scale = regime == HfRegime::kPure16 ? 0.5 : 1;  // fp32 counts at 2 B an element
  const bool gqa = kv < q;
  const double layer_params = h * (q + 2 * kv) + q * h + (m.gated_mlp ? 3 : 2) * h * f;
  const double head_params = V * h * (m.tied_embeddings ? 1 : 2);
  // Bytes and kernels of one block's class of memory-bound ops.
  auto block = [&](const Traffic& c) {
    return T * (c.h * h + c.f * f + c.kv * kv + (gqa ? c.gqa * q : 0) + c.token + c.position * s) +
           c.param * layer_params;
  };
  auto block_kernels = [&](const Traffic& c) { return c.kernels + (gqa ? c.gqa_kernels : 0); };
  auto add = [&](const char* klass, const Traffic& x, const Traffic& y, const OutsideTraffic& o) {
    const double per_layer = block(x) + recomputed * block(y);
    const double outside = T * (o.h * h + o.vocab * V + o.token + o.position * s) +
                           o.param * head_params +
                           o.positions * static_cast<double>(m.learned_positions) * h;
    const double bytes = scale * (L * per_layer + outside);
    const double kernels =
        std::round(L * (block_kernels(x) + recomputed * block_kernels(y)) + o.kernels);
    if (kernels < 1 || bytes <= 0) return;
    MeasuredOp op;
    op.op = klass;
    op.klass = klass;
    op.bytes = bytes / kernels;
    op.count = static_cast<int64_t>(kernels);
    out.ops.push_back(op);
  };
  const OutsideClasses& o = recomputed > 0 ? t.outside_full : t.outside;
  add("memory", t.layer.memory, t.again.memory, o.memory);
  add("normalization", t.layer.normalization, t.again.normalization, o.normalization);
  add("reduction", t.layer.reduction, t.again.reduction, o.reduction);

  // torch.optim's foreach kernels over every parameter (exact mode's lists): AdamW reads and
  // writes 56 B a parameter in 8 kernels; SGD with momentum 20 B in 3.
  const bool sgd = optimizer == Optimizer::kSgd;
  MeasuredOp opt{sgd ? "_foreach_sgd" : "_foreach_adamw",
                 "foreach",
                 "",
                 0,
                 (sgd ? 20.0 : 56.0) / (sgd ? 3 : 8) * parameters,
                 0,
                 0,
                 0,
                 sgd ? 3 : 8};
  out.ops.push_back(opt);
  for (const MeasuredOp& op : out.ops) out.kernels += op.count;
  return out;
}

}  // namespace gpuscope::plan
