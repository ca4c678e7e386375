#include "analyze/op_cost_rules.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <unordered_map>

namespace gpuscope::analyze {

// ---- Parsing the recorded texts ------------------------------------------------------------

namespace {

struct Cursor {
  std::string_view s;
  size_t i = 0;
  void Skip() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool Eat(char c) {
    Skip();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool Peek(char c) {
    Skip();
    return i < s.size() && s[i] == c;
  }
  bool Int(int64_t* v) {
    Skip();
    const char* b = s.data() + i;
    const auto [p, ec] = std::from_chars(b, s.data() + s.size(), *v);
    if (ec != std::errc()) return false;
    i += static_cast<size_t>(p - b);
    return true;
  }
};

// "[2, 3]" → {2, 3}; "[]" → {}.
bool IntList(Cursor& c, std::vector<int64_t>* out) {
  if (!c.Eat('[')) return false;
  if (c.Eat(']')) return true;
  do {
    int64_t v = 0;
    if (!c.Int(&v)) return false;
    out->push_back(v);
  } while (c.Eat(','));
  return c.Eat(']');
}

// One arg of "Input Dims": an int list (a tensor), or a list of int lists (a TensorList).
bool DimsArg(Cursor& c, OpArg* a) {
  if (!c.Eat('[')) return false;
  if (c.Eat(']')) return true;
  if (c.Peek('[')) {
    a->is_list = true;
    do {
      a->list.emplace_back();
      if (!IntList(c, &a->list.back())) return false;
    } while (c.Eat(','));
    return c.Eat(']');
  }
  do {
    int64_t v = 0;
    if (!c.Int(&v)) return false;
    a->shape.push_back(v);
  } while (c.Eat(','));
  return c.Eat(']');
}

// A JSON list of strings: ["float", "Scalar"] → views of each string's text (no escapes occur in
// what the profiler writes; a string with one is kept raw).
std::vector<std::string_view> Strings(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (true) {
    const size_t open = s.find('"', i);
    if (open == std::string_view::npos) break;
    size_t close = open + 1;
    while (close < s.size() && s[close] != '"') close += s[close] == '\\' ? 2 : 1;
    if (close >= s.size()) break;
    out.push_back(s.substr(open + 1, close - open - 1));
    i = close + 1;
  }
  return out;
}

}  // namespace

bool ParseOpArgs(std::string_view dims, std::string_view types, std::string_view concrete,
                 OpArgs* out) {
  out->args.clear();
  Cursor c{dims};
  if (!c.Eat('[')) return false;
  if (!c.Eat(']')) {
    do {
      out->args.emplace_back();
      if (!DimsArg(c, &out->args.back())) return false;
    } while (c.Eat(','));
    if (!c.Eat(']')) return false;
  }
  const std::vector<std::string_view> t = Strings(types), k = Strings(concrete);
  for (size_t i = 0; i < out->args.size(); ++i) {
    if (i < t.size()) out->args[i].type = t[i];
    if (i < k.size()) out->args[i].concrete = k[i];
  }
  return true;
}

int ElementBytes(std::string_view t) {
  static const std::unordered_map<std::string_view, int> kBytes = {{"float", 4},
                                                                   {"double", 8},
                                                                   {"c10::BFloat16", 2},
                                                                   {"c10::Half", 2},
                                                                   {"long int", 8},
                                                                   {"int", 4},
                                                                   {"short int", 2},
                                                                   {"bool", 1},
                                                                   {"unsigned char", 1},
                                                                   {"signed char", 1},
                                                                   {"c10::Float8_e4m3fn", 1},
                                                                   {"c10::Float8_e5m2", 1},
                                                                   {"c10::Float8_e4m3fnuz", 1},
                                                                   {"c10::Float8_e5m2fnuz", 1},
                                                                   {"c10::complex<float>", 8},
                                                                   {"c10::complex<double>", 16}};
  const auto it = kBytes.find(t);
  return it == kBytes.end() ? 0 : it->second;
}

const char* OpFamilyName(OpFamily f) {
  static constexpr const char* kNames[] = {"gemm",    "conv",        "attention", "norm",
                                           "softmax", "elementwise", "reduction", "embedding",
                                           "loss",    "optimizer"};
  const size_t i = static_cast<size_t>(f);
  return i < std::size(kNames) ? kNames[i] : "?";
}

// ---- Helpers for the formulas ----------------------------------------------------------------

namespace {

using Shape = std::vector<int64_t>;

double Numel(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= static_cast<double>(d);
  return n;
}
bool IsTensor(const OpArg& a) { return !a.is_list && ElementBytes(a.type) > 0; }
// A tensor arg at `i` with `rank` dims (any rank when rank < 0).
const OpArg* Tensor(const OpArgs& a, size_t i, int rank = -1) {
  if (i >= a.size() || !IsTensor(a.args[i])) return nullptr;
  if (rank >= 0 && a.args[i].shape.size() != static_cast<size_t>(rank)) return nullptr;
  return &a.args[i];
}
double Bytes(const OpArg& a) { return Numel(a.shape) * ElementBytes(a.type); }
bool HasPositive(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
}
std::vector<int64_t> ConcreteInts(std::string_view text) {
  std::vector<int64_t> v;
  Cursor c{text};
  if (c.Peek('[')) {
    if (!IntList(c, &v)) v.clear();
    return v;
  }
  int64_t x = 0;
  if (c.Int(&x)) v.push_back(x);
  return v;
}
bool ConcreteTrue(const OpArgs& a, size_t i) {
  return i < a.size() && (a.args[i].concrete == "True" || a.args[i].concrete == "1");
}
std::vector<bool> ConcreteBools(std::string_view text) {  // "[True, False, True]"
  std::vector<bool> v;
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 4, "True") == 0) {
      v.push_back(true);
      i += 4;
    } else if (text.compare(i, 5, "False") == 0) {
      v.push_back(false);
      i += 5;
    } else {
      ++i;
    }
  }
  return v;
}
// torch.ScalarType codes as the profiler writes a dtype argument (c10/core/ScalarType.h).
int ScalarTypeBytes(std::string_view code) {
  const std::vector<int64_t> v = ConcreteInts(code);
  if (v.size() != 1) return 0;
  switch (v[0]) {
    case 0:
    case 1:
    case 11:
    case 23:
    case 24:
    case 25:
    case 26:
      return 1;  // u8 i8 bool fp8s
    case 2:
    case 5:
    case 15:
      return 2;  // i16 half bf16
    case 3:
    case 6:
      return 4;  // i32 float
    case 4:
    case 7:
    case 9:
      return 8;  // i64 double cfloat
    default:
      return 0;
  }
}
void SetMathType(const OpArg& a, OpCost* c) {
  c->math_bytes = ElementBytes(a.type);
  c->fp16 = a.type == "c10::Half";
}

// ---- GEMM --------------------------------------------------------------------------------------
// C[M,N] = A[M,K]·B[K,N]: 2·M·N·K FLOPs; bytes A + B + C (+ bias). Source: the definition of a
// matrix product; TraceLens perf_model GEMM (bias counted as M·N adds).
OpCost Gemm(double b, double m, double n, double k, int ea, int eb, int ec, double bias_elems) {
  OpCost c;
  c.flops = c.model_flops = 2 * b * m * n * k + (bias_elems > 0 ? b * m * n : 0);
  c.bytes = b * (m * k * ea + k * n * eb + m * n * ec) + bias_elems * ec;
  c.m = m;
  c.n = n;
  c.k = k;
  return c;
}

std::optional<OpCost> Mm(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg *x = Tensor(a, 0, 2), *y = Tensor(a, 1, 2);
  if (!x || !y || x->shape[1] != y->shape[0]) return std::nullopt;
  const int e = ElementBytes(x->type);
  OpCost c = Gemm(1, x->shape[0], y->shape[1], x->shape[1], e, ElementBytes(y->type), e, 0);
  SetMathType(*x, &c);
  return c;
}
std::optional<OpCost> Addmm(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg *bias = Tensor(a, 0), *x = Tensor(a, 1, 2), *y = Tensor(a, 2, 2);
  if (!bias || !x || !y || x->shape[1] != y->shape[0]) return std::nullopt;
  const int e = ElementBytes(x->type);
  OpCost c = Gemm(1, x->shape[0], y->shape[1], x->shape[1], e, ElementBytes(y->type), e,
                  Numel(bias->shape));
  SetMathType(*x, &c);
  return c;
}
std::optional<OpCost> Bmm(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg *x = Tensor(a, 0, 3), *y = Tensor(a, 1, 3);
  if (!x || !y || x->shape[2] != y->shape[1] || x->shape[0] != y->shape[0]) return std::nullopt;
  const int e = ElementBytes(x->type);
  OpCost c =
      Gemm(x->shape[0], x->shape[1], y->shape[2], x->shape[2], e, ElementBytes(y->type), e, 0);
  SetMathType(*x, &c);
  return c;
}
std::optional<OpCost> Baddbmm(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg *in = Tensor(a, 0), *x = Tensor(a, 1, 3), *y = Tensor(a, 2, 3);
  if (!in || !x || !y || x->shape[2] != y->shape[1]) return std::nullopt;
  const int e = ElementBytes(x->type);
  OpCost c = Gemm(x->shape[0], x->shape[1], y->shape[2], x->shape[2], e, ElementBytes(y->type), e,
                  Numel(in->shape));
  SetMathType(*x, &c);
  return c;
}
// matmul(a[..., M, K] or [K], b[..., K, N] or [K]): batch = the broadcast leading dims.
std::optional<OpCost> Matmul(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg *x = Tensor(a, 0), *y = Tensor(a, 1);
  if (!x || !y || x->shape.empty() || y->shape.empty()) return std::nullopt;
  Shape xs = x->shape, ys = y->shape;
  if (xs.size() == 1) xs.insert(xs.begin(), 1);
  if (ys.size() == 1) ys.push_back(1);
  const double m = xs[xs.size() - 2], k = xs.back(), n = ys.back();
  if (ys[ys.size() - 2] != xs.back()) return std::nullopt;
  double batch = 1;
  for (size_t i = 0; i + 2 < std::max(xs.size(), ys.size()); ++i) {
    const size_t xi = xs.size() >= 2 + i + 1 ? xs.size() - 3 - i : SIZE_MAX;
    const size_t yi = ys.size() >= 2 + i + 1 ? ys.size() - 3 - i : SIZE_MAX;
    const double dx = xi == SIZE_MAX ? 1 : static_cast<double>(xs[xi]);
    const double dy = yi == SIZE_MAX ? 1 : static_cast<double>(ys[yi]);
    batch *= std::max(dx, dy);
  }
  const int e = ElementBytes(x->type);
  // A 2-D b is shared by the batch: count it once.
  OpCost c = Gemm(batch, m, n, k, e, y->shape.size() <= 2 ? 0 : ElementBytes(y->type), e, 0);
  if (y->shape.size() <= 2) c.bytes += Bytes(*y);
  SetMathType(*x, &c);
  return c;
}
// linear(x[..., K], W[N, K], bias[N]?) = x·Wᵀ + bias.
std::optional<OpCost> Linear(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg *x = Tensor(a, 0), *w = Tensor(a, 1, 2);
  if (!x || !w || x->shape.empty() || x->shape.back() != w->shape[1]) return std::nullopt;
  const OpArg* bias = Tensor(a, 2);
  const double k = w->shape[1], n = w->shape[0], m = Numel(x->shape) / k;
  const int e = ElementBytes(x->type);
  OpCost c = Gemm(1, m, n, k, e, ElementBytes(w->type), e, bias ? Numel(bias->shape) : 0);
  SetMathType(*x, &c);
  return c;
}
// _scaled_mm(a[M,K] fp8, b[K,N] fp8, scale_a, scale_b, bias?, scale_result?, out_dtype?): the
// output is out_dtype (bf16 in practice) when given, else the input type.
std::optional<OpCost> ScaledMm(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg *x = Tensor(a, 0, 2), *y = Tensor(a, 1, 2);
  if (!x || !y || x->shape[1] != y->shape[0]) return std::nullopt;
  int out = ElementBytes(x->type);
  if (a.size() > 6 && ScalarTypeBytes(a.args[6].concrete) > 0)
    out = ScalarTypeBytes(a.args[6].concrete);
  const OpArg* bias = Tensor(a, 4);
  OpCost c = Gemm(1, x->shape[0], y->shape[1], x->shape[1], ElementBytes(x->type),
                  ElementBytes(y->type), out, bias ? Numel(bias->shape) : 0);
  SetMathType(*x, &c);
  return c;
}

// ---- Convolution
// --------------------------------------------------------------------------------- Forward:
// 2·N·Cout·∏out·(Cin/groups)·∏kernel (+ N·Cout·∏out with a bias); transposed: the same with the
// roles of input and output swapped. Output size: PyTorch's Conv docs, out = ⌊(in + 2p − d(k−1) −
// 1)/s⌋ + 1; transposed (in−1)s − 2p + d(k−1) + output_padding + 1.
struct ConvGeometry {
  double flops = 0;  // one forward pass without bias
  double in_bytes = 0, weight_bytes = 0, out_bytes = 0;
  double out_elems = 0;
};
std::optional<ConvGeometry> Geometry(const OpArg& in, const OpArg& w, const OpArgs& a,
                                     size_t stride_at, bool transposed, size_t out_pad_at,
                                     size_t groups_at) {
  const size_t nd = in.shape.size();
  if (nd < 3 || w.shape.size() != nd || !HasPositive(in.shape) || !HasPositive(w.shape)) {
    return std::nullopt;
  }
  const size_t sp = nd - 2;
  // Stride, padding, dilation (and output padding when transposed) from Concrete Inputs; a trace
  // without them (PyTorch < 2.1) leaves the output size unknown: unpriced, never defaulted.
  bool known = true;
  auto list = [&](size_t at) {
    std::vector<int64_t> v =
        at < a.size() ? ConcreteInts(a.args[at].concrete) : std::vector<int64_t>{};
    if (v.size() == 1) v.assign(sp, v[0]);
    if (v.size() != sp) {
      known = false;
      v.assign(sp, 0);
    }
    return v;
  };
  const std::vector<int64_t> s = list(stride_at), p = list(stride_at + 1), d = list(stride_at + 2);
  const std::vector<int64_t> op = transposed ? list(out_pad_at) : std::vector<int64_t>(sp, 0);
  std::vector<int64_t> g =
      groups_at < a.size() ? ConcreteInts(a.args[groups_at].concrete) : std::vector<int64_t>{};
  if (!known || g.size() != 1 || g[0] <= 0) return std::nullopt;
  const double groups = static_cast<double>(g[0]);
  const double n = in.shape[0], cin = in.shape[1];
  double kernel = 1, in_sp = 1, out_sp = 1;
  for (size_t i = 0; i < sp; ++i) {
    const int64_t k = w.shape[2 + i], x = in.shape[2 + i];
    int64_t o = transposed ? (x - 1) * s[i] - 2 * p[i] + d[i] * (k - 1) + op[i] + 1
                           : (s[i] > 0 ? (x + 2 * p[i] - d[i] * (k - 1) - 1) / s[i] + 1 : 0);
    if (o <= 0) return std::nullopt;
    kernel *= k;
    in_sp *= x;
    out_sp *= o;
  }
  // Weight: [Cout, Cin/g, k…] forward, [Cin, Cout/g, k…] transposed.
  const double cout = transposed ? w.shape[1] * groups : w.shape[0];
  ConvGeometry c;
  c.flops = transposed ? 2 * n * cin * in_sp * (cout / groups) * kernel
                       : 2 * n * cout * out_sp * (cin / groups) * kernel;
  const int e = ElementBytes(in.type);
  c.in_bytes = Bytes(in);
  c.weight_bytes = Bytes(w);
  c.out_elems = n * cout * out_sp;
  c.out_bytes = c.out_elems * e;
  return c;
}
// convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups)
std::optional<OpCost> Conv(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg *in = Tensor(a, 0), *w = Tensor(a, 1);
  if (!in || !w) return std::nullopt;
  const std::optional<ConvGeometry> g = Geometry(*in, *w, a, 3, ConcreteTrue(a, 6), 7, 8);
  if (!g) return std::nullopt;
  const OpArg* bias = Tensor(a, 2);
  OpCost c;
  c.flops = c.model_flops = g->flops + (bias ? g->out_elems : 0);
  c.bytes = g->in_bytes + g->weight_bytes + g->out_bytes + (bias ? Bytes(*bias) : 0);
  SetMathType(*in, &c);
  return c;
}
// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask): the input gradient and the weight gradient
// each cost one forward pass (they are the same products re-associated).
std::optional<OpCost> ConvBackward(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg *go = Tensor(a, 0), *in = Tensor(a, 1), *w = Tensor(a, 2);
  if (!go || !in || !w) return std::nullopt;
  const std::optional<ConvGeometry> g = Geometry(*in, *w, a, 4, ConcreteTrue(a, 7), 8, 9);
  if (!g) return std::nullopt;
  std::vector<bool> mask = a.size() > 10 ? ConcreteBools(a.args[10].concrete) : std::vector<bool>{};
  if (mask.size() < 2) mask = {true, true, false};
  OpCost c;
  c.flops = c.model_flops = g->flops * ((mask[0] ? 1 : 0) + (mask[1] ? 1 : 0));
  c.bytes = Bytes(*go) + g->in_bytes + g->weight_bytes + (mask[0] ? g->in_bytes : 0) +
            (mask[1] ? g->weight_bytes : 0);
  SetMathType(*in, &c);
  return c;
}

// ---- Attention
// ----------------------------------------------------------------------------------- Q[B,Hq,Sq,D],
// K[B,Hkv,Sk,D], V[B,Hkv,Sk,Dv] (the sdpa entry points; the _efficient_attention_* /
// _flash_attention_* kernels take [B,S,H,D]): forward 2·B·Hq·Sq·Sk·(D+Dv) (QKᵀ and PV), halved when
// causal; bytes Q + K + V + O. Backward (q at arg 1): 2.5× the forward FLOPs executed (2× model),
// bytes Q + K + V + O + dO read, dQ + dK + dV written. Sources: FlashAttention-2 (Dao 2023) §3 and
// its benchmark's FLOP count; TraceLens perf_model SDPA.
struct AttentionLayout {
  size_t q_at;       // index of Q
  bool bshd;         // [B, S, H, D] instead of [B, H, S, D]
  size_t causal_at;  // index of is_causal (or custom_mask_type for the _efficient_* kernels)
  bool backward;
};
std::optional<OpCost> Attention(const OpArgs& a, const AttentionLayout& l) {
  const OpArg *q = Tensor(a, l.q_at, 4), *k = Tensor(a, l.q_at + 1, 4),
              *v = Tensor(a, l.q_at + 2, 4);
  if (!q || !k || !v) return std::nullopt;
  const size_t h = l.bshd ? 2 : 1, s = l.bshd ? 1 : 2;
  const double b = q->shape[0], hq = q->shape[h], sq = q->shape[s], sk = k->shape[s],
               d = q->shape[3], dv = v->shape[3];
  bool causal = ConcreteTrue(a, l.causal_at);
  if (l.bshd && l.causal_at < a.size()) {  // custom_mask_type: 0 none, 1/2 causal
    const std::vector<int64_t> m = ConcreteInts(a.args[l.causal_at].concrete);
    causal = causal || (m.size() == 1 && m[0] > 0);
  }
  const double fwd = 2 * b * hq * sq * sk * (d + dv) * (causal ? 0.5 : 1);
  const int e = ElementBytes(q->type);
  const double o_bytes = b * hq * sq * dv * e;
  OpCost c;
  if (l.backward) {
    c.flops = 2.5 * fwd;
    c.model_flops = 2 * fwd;
    c.bytes = 2 * (Bytes(*q) + Bytes(*k) + Bytes(*v)) + 2 * o_bytes;
  } else {
    c.flops = c.model_flops = fwd;
    c.bytes = Bytes(*q) + Bytes(*k) + Bytes(*v) + o_bytes;
  }
  SetMathType(*q, &c);
  return c;
}
template <size_t QAt, bool Bshd, size_t CausalAt, bool Backward>
std::optional<OpCost> AttentionOf(std::string_view, const OpArgs& a, const CostContext&) {
  return Attention(a, {QAt, Bshd, CausalAt, Backward});
}

// ---- Memory-bound families ---------------------------------------------------------------------
// Every tensor input read once, the output(s) written once; FLOPs per output element as stated.

// Tensor inputs an elementwise op reads: unary ops one, ternary three, others two; a further
// tensor arg is an out= argument (PyTorch < 1.10 recorded clamp_min(self, min, out)), written,
// not read.
size_t ElementwiseArity(std::string_view name) {
  static const std::unordered_map<std::string_view, size_t> kArity = [] {
    std::unordered_map<std::string_view, size_t> m;
    for (std::string_view n : {"aten::neg",         "aten::exp",
                               "aten::log",         "aten::sqrt",
                               "aten::rsqrt",       "aten::tanh",
                               "aten::tanh_",       "aten::sigmoid",
                               "aten::relu",        "aten::relu_",
                               "aten::gelu",        "aten::silu",
                               "aten::silu_",       "aten::native_dropout",
                               "aten::clamp",       "aten::clamp_",
                               "aten::clamp_min",   "aten::clamp_min_",
                               "aten::abs",         "aten::sin",
                               "aten::cos",         "aten::erf",
                               "aten::reciprocal",  "aten::hardtanh",
                               "aten::hardtanh_",   "aten::leaky_relu",
                               "aten::elu",         "aten::softplus",
                               "aten::hardswish",   "aten::mish",
                               "aten::logical_not", "aten::isnan",
                               "aten::gelu_",       "aten::exp_",
                               "aten::sqrt_",       "aten::rsqrt_",
                               "aten::sigmoid_",    "aten::neg_",
                               "aten::reciprocal_", "aten::triu",
                               "aten::tril",        "aten::constant_pad_nd",
                               "aten::clone",       "aten::_to_copy"})
      m.emplace(n, 1);
    for (std::string_view n : {"aten::where", "aten::addcmul", "aten::addcmul_", "aten::addcdiv",
                               "aten::addcdiv_", "aten::lerp", "aten::lerp_"})
      m.emplace(n, 3);
    return m;
  }();
  const auto it = kArity.find(name);
  return it == kArity.end() ? 2 : it->second;
}

// The first `arity` tensor args (all when arity is 0), and TensorLists' tensors.
double InputTensorBytes(const OpArgs& a, size_t arity = 0) {
  double b = 0;
  size_t tensors = 0;
  for (const OpArg& x : a.args) {
    if (IsTensor(x) && (arity == 0 || tensors++ < arity)) b += Bytes(x);
    if (x.is_list && ElementBytes(x.type) > 0)
      for (const Shape& s : x.list) b += Numel(s) * ElementBytes(x.type);
  }
  return b;
}
// The largest tensor input (the output shape of an elementwise op under broadcasting).
const OpArg* Largest(const OpArgs& a) {
  const OpArg* best = nullptr;
  for (const OpArg& x : a.args)
    if (IsTensor(x) && (!best || Numel(x.shape) > Numel(best->shape))) best = &x;
  return best;
}
bool EndsWith(std::string_view s, std::string_view t) {
  return s.size() >= t.size() && s.substr(s.size() - t.size()) == t;
}
bool IsInPlace(std::string_view name) { return EndsWith(name, "_") && !EndsWith(name, "__"); }

// Elementwise: out = broadcast of the inputs (the largest input); 1 FLOP per output element for
// arithmetic (transcendentals counted as 1 too: they are memory-bound either way); bytes = inputs
// + output (in-place ops write their first input). Copies and casts: 0 FLOPs, output in the
// target dtype. Comparisons write bool. fill_ / zero_ write only.
std::optional<OpCost> Elementwise(std::string_view name, const OpArgs& a, const CostContext&) {
  OpCost c;
  if (name == "aten::fill_" || name == "aten::zero_") {
    const OpArg* x = Tensor(a, 0);
    if (!x) return std::nullopt;
    c.bytes = Bytes(*x);
    return c;
  }
  if (name == "aten::cat") {  // cat(TensorList, dim): read all, write the concatenation
    if (a.size() < 1 || !a.args[0].is_list) return std::nullopt;
    double elems = 0;
    int e = 0;
    for (const Shape& s : a.args[0].list) elems += Numel(s);
    // The list's element type is not recorded ("TensorList"): the output's size in bytes is
    // unknown, so cat is unpriced unless a later arg gives it.
    e = ElementBytes(a.args[0].type);
    if (e == 0) return std::nullopt;
    c.bytes = 2 * elems * e;
    return c;
  }
  const OpArg* out = Largest(a);
  if (!out) return std::nullopt;
  const double n = Numel(out->shape);
  int e_out = ElementBytes(out->type);
  const bool copy = name == "aten::copy_" || name == "aten::_to_copy" || name == "aten::clone" ||
                    name == "aten::contiguous";
  if (name == "aten::_to_copy" && a.size() > 1 && ScalarTypeBytes(a.args[1].concrete) > 0) {
    e_out = ScalarTypeBytes(a.args[1].concrete);
  }
  static const std::string_view kCompare[] = {"aten::eq",    "aten::ne",          "aten::lt",
                                              "aten::le",    "aten::gt",          "aten::ge",
                                              "aten::isnan", "aten::logical_not", "aten::isinf"};
  for (std::string_view k : kCompare)
    if (name == k) e_out = 1;
  if (name == "aten::copy_") {  // copy_(self, src): read src, write self
    const OpArg *self = Tensor(a, 0), *src = Tensor(a, 1);
    if (!self || !src) return std::nullopt;
    c.bytes = Bytes(*src) + Bytes(*self);
    return c;
  }
  c.flops = c.model_flops = copy ? 0 : n;
  // In place: the first input is written back (already counted once as read).
  const OpArg* self = Tensor(a, 0);
  c.bytes = InputTensorBytes(a, ElementwiseArity(name)) +
            (IsInPlace(name) ? Bytes(self ? *self : *out) : n * e_out);
  if (name == "aten::native_dropout") c.bytes += n;  // the bool mask
  return c;
}

// Norms: ≈5 FLOPs per element (mean, variance, normalise, scale, shift; TraceLens counts 5);
// bytes = input + output + affine parameters (+ saved mean/rstd). Backward: its tensor inputs
// read, gradients written per output_mask.
std::optional<OpCost> Norm(std::string_view name, const OpArgs& a, const CostContext&) {
  const OpArg* x = Largest(a);
  if (!x) return std::nullopt;
  OpCost c;
  const double n = Numel(x->shape);
  const bool backward = EndsWith(name, "_backward");
  c.flops = c.model_flops = (backward ? 8 : 5) * n;
  c.bytes = InputTensorBytes(a) + Bytes(*x);  // inputs + the normalised output (or grad_input)
  return c;
}

// Softmax / log-softmax: ≈5 FLOPs per element (max, subtract, exp, sum, divide); bytes = input +
// output (fp32 output when half_to_float); backward reads grad and output, writes grad_input.
std::optional<OpCost> Softmax(std::string_view name, const OpArgs& a, const CostContext&) {
  const OpArg* x = Tensor(a, 0);
  if (!x) return std::nullopt;
  OpCost c;
  const double n = Numel(x->shape);
  c.flops = c.model_flops = 5 * n;
  int e_out = ElementBytes(x->type);
  if (!EndsWith(name, "_backward_data") && ConcreteTrue(a, 2)) e_out = 4;
  c.bytes = InputTensorBytes(a) + n * e_out;
  return c;
}

// Reductions (sum, mean, amax, norm, var): 1 FLOP per input element; bytes = input + output,
// the output being the input with the reduced dims (Concrete Inputs' dim list) removed, or one
// element when it reduces everything.
std::optional<OpCost> Reduction(std::string_view, const OpArgs& a, const CostContext&) {
  const OpArg* x = Tensor(a, 0);
  if (!x) return std::nullopt;
  const double n = Numel(x->shape);
  double out = 1;
  if (a.size() > 1) {
    std::vector<int64_t> dims = ConcreteInts(a.args[1].concrete);
    if (!dims.empty() && a.args[1].concrete.starts_with("[")) {
      out = n;
      for (int64_t d : dims) {
        const int64_t r = static_cast<int64_t>(x->shape.size());
        const int64_t i = d < 0 ? d + r : d;
        if (i >= 0 && i < r && x->shape[i] > 0) out /= static_cast<double>(x->shape[i]);
      }
    }
  }
  OpCost c;
  c.flops = c.model_flops = n;
  c.bytes = Bytes(*x) + out * ElementBytes(x->type);
  return c;
}

// Embedding: gather rows: bytes = indices + rows read + rows written (numel(indices)·D each);
// backward: grad read, indices read, the whole [num_weights, D] gradient written.
std::optional<OpCost> Embedding(std::string_view name, const OpArgs& a, const CostContext&) {
  OpCost c;
  if (name == "aten::embedding") {
    const OpArg *w = Tensor(a, 0, 2), *idx = Tensor(a, 1);
    if (!w || !idx) return std::nullopt;
    const double rows = Numel(idx->shape) * w->shape[1] * ElementBytes(w->type);
    c.bytes = Bytes(*idx) + 2 * rows;
    return c;
  }
  if (name == "aten::index_select") {  // index_select(self, dim, index)
    const OpArg *self = Tensor(a, 0), *idx = Tensor(a, 2);
    if (!self || !idx || self->shape.empty()) return std::nullopt;
    std::vector<int64_t> dim =
        a.size() > 1 ? ConcreteInts(a.args[1].concrete) : std::vector<int64_t>{};
    const int64_t r = static_cast<int64_t>(self->shape.size());
    const int64_t d = dim.size() == 1 ? (dim[0] < 0 ? dim[0] + r : dim[0]) : 0;
    if (d < 0 || d >= r || self->shape[d] <= 0) return std::nullopt;
    const double out = Numel(self->shape) / self->shape[d] * Numel(idx->shape);
    c.bytes = Bytes(*idx) + 2 * out * ElementBytes(self->type);
    return c;
  }
  // embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
  const OpArg *g = Tensor(a, 0), *idx = Tensor(a, 1);
  if (!g || !idx || g->shape.empty() || a.size() < 3) return std::nullopt;
  const std::vector<int64_t> nw = ConcreteInts(a.args[2].concrete);
  if (nw.size() != 1 || nw[0] < 0) return std::nullopt;
  c.bytes = Bytes(*g) + Bytes(*idx) +
            static_cast<double>(nw[0]) * g->shape.back() * ElementBytes(g->type);
  return c;
}

// NLL loss (cross-entropy's second half): forward reads one logit per row and its target;
// backward writes one gradient per row (the zero fill is the zero_ op it calls, priced there).
std::optional<OpCost> NllLoss(std::string_view name, const OpArgs& a, const CostContext&) {
  const bool backward = name == "aten::nll_loss_backward";
  const OpArg *x = Tensor(a, backward ? 1 : 0), *t = Tensor(a, backward ? 2 : 1);
  if (!x || !t || x->shape.empty()) return std::nullopt;
  OpCost c;
  const double rows = Numel(t->shape);
  c.flops = c.model_flops = rows;
  c.bytes = Bytes(*t) + rows * ElementBytes(x->type);
  return c;
}

// Optimizers: where the profiler recorded the first TensorList's sizes they are used; older and
// newer profilers write [] for _foreach_* and _fused_* lists, and then each TensorList is taken to
// hold every parameter (CostContext: the AccumulateGrad inputs of a step). The element size is
// the parameters' (a TensorList's dtype is not recorded). Bytes = lists read + lists written; FLOPs
// ≈ 1 per element per list op. _fused_adam(w)_: params, grads, exp_avgs, exp_avg_sqs read, params,
// exp_avgs, exp_avg_sqs written (7 passes; amsgrad adds max_exp_avg_sqs); _fused_sgd_: params,
// grads (+ momentum).
std::optional<OpCost> Optimizer(std::string_view name, const OpArgs& a, const CostContext& ctx) {
  size_t lists = 0;
  double recorded = -1;  // elements of the first list, when the profiler recorded its sizes
  for (const OpArg& x : a.args) {
    if (x.type != "TensorList") continue;
    if (x.is_list && recorded < 0) {
      recorded = 0;
      for (const Shape& s : x.list) recorded += Numel(s);
    }
    ++lists;
  }
  if (lists == 0 || (recorded < 0 && !(ctx.param_elements > 0))) return std::nullopt;
  double passes = 0;
  if (name == "aten::_fused_adam_" || name == "aten::_fused_adamw_") {
    passes = 7;
  } else if (name == "aten::_fused_sgd_") {
    passes = 3;
  } else {
    // A lower bound: the first list read and written (or read and a new one written), plus one
    // more list read when there are others: lists may repeat (AdamW's addcmul_(v, g, g)) and
    // the trace does not say which. The check against the roofline (op_costs.cc) catches lists
    // that are not parameter-sized (step counters).
    passes = lists >= 2 ? 3 : 2;
  }
  OpCost c;
  const double n = recorded >= 0 ? recorded : ctx.param_elements;
  c.flops = c.model_flops = n * static_cast<double>(lists);
  c.bytes = passes * n * ctx.param_element_bytes;
  return c;
}

}  // namespace

std::span<const CostRule> CostRules() {
  static const CostRule kRules[] = {
      {"mm", OpFamily::kGemm, "aten::mm", Mm, false, "2·M·N·K; A + B + C",
       "matrix product; TraceLens perf_model aten_mm"},
      {"addmm", OpFamily::kGemm, "aten::addmm", Addmm, false,
       "2·M·N·K + M·N (bias); A + B + C + bias", "TraceLens perf_model aten_addmm"},
      {"bmm", OpFamily::kGemm, "aten::bmm", Bmm, false, "2·B·M·N·K; B·(A + B + C)",
       "batched matrix product"},
      {"baddbmm", OpFamily::kGemm, "aten::baddbmm", Baddbmm, false,
       "2·B·M·N·K + B·M·N; B·(A + B + C) + input", "batched matrix product with add"},
      {"matmul", OpFamily::kGemm, "aten::matmul", Matmul, false,
       "2·batch·M·N·K with broadcast batch dims; a 2-D right operand read once",
       "torch.matmul semantics"},
      {"linear", OpFamily::kGemm, "aten::linear", Linear, false,
       "2·M·N·K (+ M·N bias), M = all leading dims of x", "torch.nn.functional.linear"},
      {"scaled_mm", OpFamily::kGemm, "aten::_scaled_mm", ScaledMm, false,
       "2·M·N·K; fp8 inputs, output in out_dtype", "torch._scaled_mm"},
      {"convolution", OpFamily::kConv, "aten::convolution", Conv, true,
       "2·N·Cout·∏out·(Cin/groups)·∏k (+ N·Cout·∏out bias); input + weight + output",
       "PyTorch Conv{1,2,3}d output size; TraceLens perf_model aten_conv"},
      {"convolution_backward", OpFamily::kConv, "aten::convolution_backward", ConvBackward, true,
       "forward FLOPs × (input grad + weight grad per output_mask)",
       "dX and dW are the forward product re-associated"},
      {"sdpa_flash", OpFamily::kAttention, "aten::_scaled_dot_product_flash_attention",
       AttentionOf<0, false, 4, false>, true, "2·B·Hq·Sq·Sk·(D+Dv), ½ if causal; Q + K + V + O",
       "FlashAttention-2 §3; TraceLens SDPA"},
      {"sdpa_efficient", OpFamily::kAttention, "aten::_scaled_dot_product_efficient_attention",
       AttentionOf<0, false, 6, false>, true, "as sdpa_flash", "FlashAttention-2 §3"},
      {"sdpa_cudnn", OpFamily::kAttention, "aten::_scaled_dot_product_cudnn_attention",
       AttentionOf<0, false, 6, false>, true, "as sdpa_flash", "FlashAttention-2 §3"},
      {"flash_attention_forward", OpFamily::kAttention, "aten::_flash_attention_forward",
       AttentionOf<0, true, 8, false>, true, "as sdpa_flash, [B,S,H,D] inputs",
       "FlashAttention-2 §3"},
      {"efficient_attention_forward", OpFamily::kAttention, "aten::_efficient_attention_forward",
       AttentionOf<0, true, 9, false>, true,
       "as sdpa_flash, [B,S,H,D] inputs, causal from custom_mask_type", "FlashAttention-2 §3"},
      {"sdpa_flash_backward", OpFamily::kAttention,
       "aten::_scaled_dot_product_flash_attention_backward", AttentionOf<1, false, 11, true>, true,
       "2.5 × forward executed (2 × model); Q K V O dO read, dQ dK dV written",
       "FlashAttention-2 §3 (backward recomputes QKᵀ)"},
      {"sdpa_efficient_backward", OpFamily::kAttention,
       "aten::_scaled_dot_product_efficient_attention_backward", AttentionOf<1, false, 11, true>,
       true, "as sdpa_flash_backward", "FlashAttention-2 §3"},
      {"sdpa_cudnn_backward", OpFamily::kAttention,
       "aten::_scaled_dot_product_cudnn_attention_backward", AttentionOf<1, false, 14, true>, true,
       "as sdpa_flash_backward", "FlashAttention-2 §3"},
      {"flash_attention_backward", OpFamily::kAttention, "aten::_flash_attention_backward",
       AttentionOf<1, true, 11, true>, true, "as sdpa_flash_backward, [B,S,H,D]",
       "FlashAttention-2 §3"},
      {"efficient_attention_backward", OpFamily::kAttention, "aten::_efficient_attention_backward",
       AttentionOf<1, true, 15, true>, true, "as sdpa_flash_backward, [B,S,H,D]",
       "FlashAttention-2 §3"},
      {"norm", OpFamily::kNorm,
       "aten::native_layer_norm|aten::native_layer_norm_backward|aten::native_batch_norm|"
       "aten::native_batch_norm_backward|aten::cudnn_batch_norm|aten::cudnn_batch_norm_backward|"
       "aten::_native_batch_norm_legit|aten::native_group_norm|aten::native_group_norm_backward|"
       "aten::_fused_rms_norm|aten::_fused_rms_norm_backward",
       Norm, true, "5 FLOPs/element (8 backward); inputs + output",
       "TraceLens perf_model Normalization (5 per element)"},
      {"softmax", OpFamily::kSoftmax,
       "aten::_softmax|aten::_log_softmax|aten::_softmax_backward_data|"
       "aten::_log_softmax_backward_data",
       Softmax, true, "5 FLOPs/element; input + output (fp32 out when half_to_float)",
       "max, subtract, exp, sum, divide"},
      {"reduction", OpFamily::kReduction,
       "aten::sum|aten::mean|aten::amax|aten::amin|aten::max|aten::min|aten::norm|"
       "aten::linalg_vector_norm|aten::var|aten::var_mean|aten::std|aten::argmax|aten::prod",
       Reduction, false, "1 FLOP/input element; input + reduced output", "definition"},
      {"embedding", OpFamily::kEmbedding,
       "aten::embedding|aten::index_select|aten::embedding_dense_backward", Embedding, true,
       "gathered rows read and written + indices", "definition"},
      {"nll_loss", OpFamily::kLoss, "aten::nll_loss_forward|aten::nll_loss_backward", NllLoss,
       false, "one element per row + targets", "definition"},
      {"optimizer", OpFamily::kOptimizer,
       "aten::_foreach_*|aten::_fused_adam_|aten::_fused_adamw_|aten::_fused_sgd_", Optimizer, true,
       "TensorLists = all parameters; fused Adam(W) 7 passes, foreach ≥ 2–3 passes × params × "
       "dtype",
       "torch.optim foreach/fused AdamW passes"},
      {"elementwise", OpFamily::kElementwise,
       "aten::add|aten::add_|aten::sub|aten::sub_|aten::mul|aten::mul_|aten::div|aten::div_|"
       "aten::neg|aten::exp|aten::log|aten::sqrt|aten::rsqrt|aten::pow|aten::tanh|aten::tanh_|"
       "aten::sigmoid|aten::relu|aten::relu_|aten::gelu|aten::gelu_backward|aten::silu|aten::silu_|"
       "aten::silu_backward|aten::sigmoid_backward|aten::tanh_backward|aten::threshold_backward|"
       "aten::native_dropout|aten::native_dropout_backward|aten::where|aten::masked_fill|"
       "aten::masked_fill_|aten::clamp|aten::clamp_|aten::clamp_min|aten::clamp_min_|aten::fill_|"
       "aten::zero_|aten::copy_|aten::_to_copy|aten::clone|aten::cat|aten::addcmul|"
       "aten::addcmul_|aten::addcdiv|aten::addcdiv_|aten::lerp|aten::lerp_|aten::abs|aten::sin|"
       "aten::cos|aten::erf|aten::reciprocal|aten::maximum|aten::minimum|aten::eq|aten::ne|"
       "aten::lt|aten::le|aten::gt|aten::ge|aten::hardtanh|aten::hardtanh_|aten::leaky_relu|"
       "aten::elu|aten::softplus|aten::hardswish|aten::mish|aten::logical_not|aten::isnan|"
       "aten::bitwise_and|aten::gelu_|aten::exp_|aten::sqrt_|aten::rsqrt_|aten::pow_|"
       "aten::sigmoid_|aten::neg_|aten::reciprocal_|aten::triu|aten::tril|aten::constant_pad_nd",
       Elementwise, false,
       "1 FLOP/output element (0 for copies); inputs + output (in place: written back)",
       "TraceLens perf_model elementwise (1 per element)"},
  };
  return kRules;
}

const CostRule* FindCostRule(std::string_view op) {
  static const std::unordered_map<std::string_view, const CostRule*> exact = [] {
    std::unordered_map<std::string_view, const CostRule*> m;
    for (const CostRule& r : CostRules()) {
      std::string_view ops = r.ops;
      while (!ops.empty()) {
        const size_t bar = ops.find('|');
        const std::string_view one = ops.substr(0, bar);
        if (!one.ends_with('*')) m.emplace(one, &r);
        ops = bar == std::string_view::npos ? std::string_view{} : ops.substr(bar + 1);
      }
    }
    return m;
  }();
  const auto it = exact.find(op);
  if (it != exact.end()) return it->second;
  for (const CostRule& r : CostRules()) {
    std::string_view ops = r.ops;
    while (!ops.empty()) {
      const size_t bar = ops.find('|');
      const std::string_view one = ops.substr(0, bar);
      if (one.ends_with('*') && op.starts_with(one.substr(0, one.size() - 1))) return &r;
      ops = bar == std::string_view::npos ? std::string_view{} : ops.substr(bar + 1);
    }
  }
  return nullptr;
}

}  // namespace gpuscope::analyze
