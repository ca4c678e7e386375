#include "analyze/op_costs.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "base/enum_names.h"
#include "base/sort.h"

namespace gpuscope::analyze {

constexpr EnumNames<Unpriced, 5> kUnpricedNames(
    {Unpriced::kPriced, ""}, {Unpriced::kNoRule, "no_rule"},
    {Unpriced::kShapesNotRecorded, "shapes_not_recorded"},
    {Unpriced::kShapesNotUnderstood, "shapes_not_understood"},
    {Unpriced::kListsNotParameters, "lists_not_parameters"});

const char* UnpricedName(Unpriced u) { return CNameOf(kUnpricedNames, u); }

bool IsLayoutTransposeKernel(std::string_view name) {
  return name.find("nchwToNhwc") != std::string_view::npos ||
         name.find("nhwcToNchw") != std::string_view::npos;
}

double Bf16TimeNs(const OpCostGroup& g, const hw::GpuPeaks& peaks) {
  const double t = static_cast<double>(g.time_ns);
  const double bf16 = peaks.Of(hw::MathPath::kBf16).Roof(), peak = peaks.Of(g.path).Roof();
  if (!g.math || g.unpriced != Unpriced::kPriced || !(bf16 > 0) || !(peak > 0)) return t;
  if (g.path != hw::MathPath::kFp32Cuda && g.path != hw::MathPath::kTf32 &&
      g.path != hw::MathPath::kTf32x3) {
    return t;
  }
  // cuDNN's layout transposes inside a convolution are memory-bound: half the bytes in bf16.
  const double layout = static_cast<double>(g.layout_ns);
  return g.compute_bound ? (t - layout) * peak / bf16 + layout * 0.5 : t * 0.5;
}

double Tf32TimeNs(const OpCostGroup& g, const hw::GpuPeaks& peaks) {
  const double t = static_cast<double>(g.time_ns);
  const double tf32 = peaks.Of(hw::MathPath::kTf32).Roof(), peak = peaks.Of(g.path).Roof();
  const bool changes = g.math && g.unpriced == Unpriced::kPriced &&
                       g.path == hw::MathPath::kFp32Cuda && g.family != OpFamily::kAttention &&
                       g.compute_bound && tf32 > 0 && peak > 0;
  return changes ? t * peak / tf32 : t;
}

std::optional<hw::MathPath> PathOfPrecision(MathPrecision p) {
  switch (p) {
    case MathPrecision::kFp32Simt:
      return hw::MathPath::kFp32Cuda;
    case MathPrecision::kTf32TensorCore:
      return hw::MathPath::kTf32;
    case MathPrecision::kBf16TensorCore:
      return hw::MathPath::kBf16;
    case MathPrecision::kFp16TensorCore:
      return hw::MathPath::kFp16;
    case MathPrecision::kFp8TensorCore:
      return hw::MathPath::kFp8;
    default:
      return std::nullopt;
  }
}

namespace {

constexpr std::string_view kEngine = "autograd::engine::evaluate_function";

// Forward-only entry points: autograd's backward formulas call aten::mm, convolution_backward and
// the *_backward attention ops, never these, so one of them under the autograd engine is a
// forward pass run again (activation checkpointing).
bool IsForwardEntry(std::string_view n) {
  return n == "aten::linear" || n == "aten::matmul" || n == "aten::conv1d" || n == "aten::conv2d" ||
         n == "aten::conv3d" || n == "aten::convolution" ||
         n == "aten::scaled_dot_product_attention" ||
         n == "aten::_scaled_dot_product_flash_attention" ||
         n == "aten::_scaled_dot_product_efficient_attention" ||
         n == "aten::_scaled_dot_product_cudnn_attention";
}

struct ThreadKey {
  TraceId pid, tid;
  auto operator<=>(const ThreadKey&) const = default;
};

// Per-op accumulation while attributing kernels.
struct Owned {
  int64_t ns = 0;
  int64_t layout_ns = 0;
  uint64_t kernels = 0;
  int64_t top_ns = -1;
  int32_t top_row = -1;
};

hw::MathPath PathFromDtype(const OpCost& c, const std::optional<hw::GpuPeaks>& peaks) {
  if (c.math_bytes == 1) return hw::MathPath::kFp8;
  if (c.math_bytes == 2) return c.fp16 ? hw::MathPath::kFp16 : hw::MathPath::kBf16;
  // fp32 data with an unnamed kernel: TF32 where the GPU has it (the faster roof, so an op is
  // never wrongly shown above it).
  if (peaks && peaks->Of(hw::MathPath::kTf32).datasheet > 0) return hw::MathPath::kTf32;
  return hw::MathPath::kFp32Cuda;
}

// Bytes of an op's fp32 tensor inputs (what autocast casts to bf16 before a GEMM/conv).
double FloatInputBytes(const Trace& t, const OpCostGroup& g) {
  OpArgs args;
  if (!ParseOpArgs(t.Str(g.input_dims), t.Str(g.input_types), "", &args)) return 0;
  double bytes = 0;
  for (const OpArg& a : args.args) {
    if (a.is_list || a.type != "float") continue;
    double n = 1;
    for (int64_t d : a.shape) n *= static_cast<double>(d);
    bytes += n * 4;
  }
  return bytes;
}

// The path a kernel's name names; fp32 in PyTorch's memory-efficient attention kernels
// (fmha_cutlass*_f32) is 3xTF32 (aten/.../mem_eff_attention/gemm_kernel_utils.h:
// DefaultGemmType<float, sm80+> uses OpMultiplyAddFastF32).
std::optional<hw::MathPath> KernelPath(const MathKernelInfo& kernel) {
  const std::optional<hw::MathPath> named = PathOfPrecision(kernel.precision);
  if (named == hw::MathPath::kTf32 && kernel.rule == "xformers-fmha") return hw::MathPath::kTf32x3;
  return named;
}

// The path of a math op: its longest kernel's; where the name says a 16-bit type the recorded
// dtype picks bf16 or fp16 (cuDNN's fused attention names fp16 for both); the dtype alone when
// the name names none.
hw::MathPath MathPathOf(const MathKernelInfo* kernel, const OpCost& cost,
                        const std::optional<hw::GpuPeaks>& peaks) {
  const hw::MathPath dtype = PathFromDtype(cost, peaks);
  if (!kernel) return dtype;
  const std::optional<hw::MathPath> named = KernelPath(*kernel);
  if (!named) return dtype;
  const bool named16 = *named == hw::MathPath::kBf16 || *named == hw::MathPath::kFp16;
  const bool dtype16 = dtype == hw::MathPath::kBf16 || dtype == hw::MathPath::kFp16;
  if (named16 && dtype16) return dtype;
  return *named;
}

// The analysis' state across its passes: the op nesting, which op owns each GPU row, the groups.
class OpCostAnalysis {
 public:
  OpCostAnalysis(const Trace& t, const KernelClasses& classes, const StepsResult& steps)
      : t_(t), c_(t.cpu), rt_(t.runtime), g_(t.gpu), classes_(classes), steps_(steps) {}

  OpCosts Run(const OpCostOptions& options) {
    if (!c_.has_shapes()) return std::move(out_);
    out_.shapes = true;
    if (!t_.devices.empty()) out_.device = t_.devices.front().name;
    out_.peaks =
        options.gpu.empty() ? hw::PeaksForDevice(out_.device) : hw::PeaksForGpu(options.gpu);
    // MFU's convention (PaLM, Megatron) divides by the 16-bit tensor-core peak: bf16's, or on a
    // GPU without bf16 (Volta) fp16's, the 16-bit type it trains in.
    for (const hw::MathPath path : {hw::MathPath::kBf16, hw::MathPath::kFp16}) {
      if (out_.mfu_peak_tflops > 0 || !out_.peaks || !(out_.peaks->Of(path).datasheet > 0))
        continue;
      out_.mfu_peak_tflops = out_.peaks->Of(path).datasheet;
      out_.mfu_peak_path = path;
    }
    OrderRows();
    NestOps();
    AttributeGpuTime();
    CountParameters();
    GroupOwners();
    PriceGroups();
    SumGroups();
    PerStepFlops();
    MapSlotsToGroups();
    KernelCosts();
    FusionChains();
    SortGroupsAndMapRows();
    return std::move(out_);
  }

 private:
  int64_t End(uint32_t r) const { return c_.start_ns[r] + c_.dur_ns[r]; }

  uint32_t ThreadNumber(TraceId pid, TraceId tid) {
    return thread_number_
        .try_emplace(ThreadKey{pid, tid}, static_cast<uint32_t>(thread_number_.size()))
        .first->second;
  }

  // Rows bucketed by thread (stable), then each thread's rows ordered by `less`: a thread's rows
  // come almost in time order, so SortRuns does little more than check it.
  template <typename Less>
  static void OrderByThread(const std::vector<uint32_t>& rows,
                            const std::vector<uint32_t>& thread_of_row, size_t threads, Less less,
                            std::vector<uint32_t>* sorted, std::vector<uint32_t>* thread) {
    std::vector<size_t> at(threads + 1, 0);
    for (size_t i = 0; i < rows.size(); ++i) ++at[thread_of_row[i] + 1];
    for (size_t k = 1; k <= threads; ++k) at[k] += at[k - 1];
    sorted->assign(rows.size(), 0);
    thread->assign(rows.size(), 0);
    std::vector<size_t> next(at.begin(), at.end() - 1);
    for (size_t i = 0; i < rows.size(); ++i) {
      const size_t to = next[thread_of_row[i]]++;
      (*sorted)[to] = rows[i];
      (*thread)[to] = thread_of_row[i];
    }
    for (size_t k = 0; k < threads; ++k)
      SortRuns(sorted->begin() + static_cast<std::ptrdiff_t>(at[k]),
               sorted->begin() + static_cast<std::ptrdiff_t>(at[k + 1]), less);
  }

  // 1a. Ops sorted by (thread, start, longer first), runtime calls by (thread, start). Threads
  // numbered once (a map over the few distinct (pid, tid) pairs), then rows sorted as compact
  // keys: the sorts are the analysis' main cost on large traces.
  void OrderRows() {
    std::vector<uint32_t> rows, row_thread;
    for (uint32_t i = 0; i < c_.size(); ++i) {
      if (c_.kind[i] != CpuKind::kCpuOp) continue;
      rows.push_back(i);
      row_thread.push_back(ThreadNumber(c_.pid[i], c_.tid[i]));
    }
    std::vector<uint32_t> call_rows(rt_.size()), call_row_thread(rt_.size());
    for (uint32_t i = 0; i < rt_.size(); ++i) {
      call_rows[i] = i;
      call_row_thread[i] = ThreadNumber(rt_.pid[i], rt_.tid[i]);
    }
    const CpuOpTable& c = c_;
    OrderByThread(
        rows, row_thread, thread_number_.size(),
        [&c](uint32_t a, uint32_t b) {
          if (c.start_ns[a] != c.start_ns[b]) return c.start_ns[a] < c.start_ns[b];
          return c.dur_ns[a] > c.dur_ns[b];
        },
        &ops_, &op_thread_);
    const RuntimeCallTable& rt = rt_;
    OrderByThread(
        call_rows, call_row_thread, thread_number_.size(),
        [&rt](uint32_t a, uint32_t b) { return rt.start_ns[a] < rt.start_ns[b]; }, &calls_,
        &call_thread_);
  }

  // Calls of thread `key` that start before `before` (and every call of an earlier thread): the
  // stack holds their enclosing ops, the innermost that covers the call launches it.
  void SettleCallsBefore(uint32_t key, int64_t before, const std::vector<uint32_t>& stack,
                         size_t* k) {
    for (; *k < calls_.size(); ++*k) {
      const uint32_t r = calls_[*k];
      const uint32_t kr = call_thread_[*k];
      if (!(kr < key || (kr == key && rt_.start_ns[r] < before))) break;
      if (kr != key) continue;
      const int64_t call_end = rt_.start_ns[r] + rt_.dur_ns[r];
      for (size_t s = stack.size(); s-- > 0;) {
        if (c_.start_ns[stack[s]] <= rt_.start_ns[r] && End(stack[s]) >= call_end) {
          launcher_[r] = static_cast<int32_t>(stack[s]);
          break;
        }
      }
    }
  }

  // 1b. The op nesting per thread: parent of every cpu_op, and the innermost op around each
  // runtime call.
  void NestOps() {
    parent_.assign(c_.size(), -1);
    launcher_.assign(rt_.size(), -1);
    std::vector<uint32_t> stack;
    size_t k = 0;  // next call
    uint32_t current = 0;
    bool first = true;
    for (size_t i = 0; i < ops_.size(); ++i) {
      const uint32_t o = ops_[i];
      const uint32_t key = op_thread_[i];
      if (first || key != current) {
        if (!first) SettleCallsBefore(current, INT64_MAX, stack, &k);
        stack.clear();
        current = key;
        first = false;
      }
      SettleCallsBefore(key, c_.start_ns[o], stack, &k);
      // Pop what does not enclose o (ended before it ends, or ended where a non-empty o starts).
      while (!stack.empty() && (End(stack.back()) < End(o) ||
                                (End(stack.back()) == c_.start_ns[o] && c_.dur_ns[o] > 0))) {
        stack.pop_back();
      }
      parent_[o] = stack.empty() ? -1 : static_cast<int32_t>(stack.back());
      stack.push_back(o);
    }
    if (!first) SettleCallsBefore(current, INT64_MAX, stack, &k);
  }

  // 2. Rules per op name (by StringId, looked up once per distinct name).
  const CostRule* RuleOfName(StringId name) {
    auto [it, added] = rule_of_.try_emplace(name, nullptr);
    if (added) it->second = FindCostRule(t_.Str(name));
    return it->second;
  }
  const CostRule* Rule(uint32_t op) { return RuleOfName(c_.name[op]); }

  // The op a launch's GPU time is counted for: the outermost enclosing op whose rule owns its
  // subtree, else the nearest with a rule, else the op itself (memoised per launching op).
  uint32_t Owner(uint32_t op) {
    if (owner_of_[op] >= 0) return static_cast<uint32_t>(owner_of_[op]);
    int32_t outer_owner = -1, nearest = -1;
    for (int32_t p = static_cast<int32_t>(op); p >= 0; p = parent_[static_cast<size_t>(p)]) {
      const CostRule* r = Rule(static_cast<uint32_t>(p));
      if (!r) continue;
      if (nearest < 0) nearest = p;
      if (r->owns_subtree) outer_owner = p;
    }
    owner_of_[op] = outer_owner >= 0 ? outer_owner
                    : nearest >= 0   ? nearest
                                     : static_cast<int32_t>(op);
    return static_cast<uint32_t>(owner_of_[op]);
  }

  // The ops that own GPU time: a slot per op (dense, in first-seen order) and its accumulation.
  Owned& OwnedAt(uint32_t op) {
    if (slot_of_[op] == UINT32_MAX) {
      slot_of_[op] = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
      slot_op_.push_back(op);
    }
    return slots_[slot_of_[op]];
  }

  // 3. Attribute every linked GPU activity to the op that owns it.
  void AttributeGpuTime() {
    // Timestamp resolution of the GPU activities: µs in older traces (every duration a multiple
    // of 1,000 ns), where a short kernel's time is off by up to 1 µs; the roofline check allows it.
    for (size_t i = 0; i < g_.size() && resolution_ns_ > 1; ++i)
      if (g_.dur_ns[i] % 1000 != 0) resolution_ns_ = 1;
    owner_of_.assign(c_.size(), -1);
    slot_of_.assign(c_.size(), UINT32_MAX);
    slot_of_row_.assign(g_.size(), UINT32_MAX);
    std::unordered_map<StringId, bool> is_layout;  // per kernel name: a cuDNN layout transpose
    for (size_t i = 0; i < g_.size(); ++i) {
      if (g_.kind[i] == GpuKind::kSync || g_.launch[i] < 0) continue;
      const int32_t op = launcher_[static_cast<size_t>(g_.launch[i])];
      if (op < 0) {
        out_.unattributed_ns += g_.dur_ns[i];
        continue;
      }
      const uint32_t own = Owner(static_cast<uint32_t>(op));
      Owned& o = OwnedAt(own);
      slot_of_row_[i] = slot_of_[own];
      o.ns += g_.dur_ns[i];
      if (g_.kind[i] == GpuKind::kKernel) {
        auto [it, added] = is_layout.try_emplace(g_.name[i], false);
        if (added) it->second = IsLayoutTransposeKernel(t_.Str(g_.name[i]));
        if (it->second) o.layout_ns += g_.dur_ns[i];
      }
      ++o.kernels;
      if (g_.kind[i] == GpuKind::kKernel && g_.dur_ns[i] > o.top_ns) {
        o.top_ns = g_.dur_ns[i];
        o.top_row = static_cast<int32_t>(i);
      }
      out_.op_ns += g_.dur_ns[i];
    }
  }

  // 4. Parameters (for optimizer TensorLists): AccumulateGrad inputs in the first steady step,
  //    else over the whole trace (taken as one step).
  void CountParameters() {
    const StepBreakdown* step = nullptr;
    for (const StepBreakdown& s : steps_.steps)
      if (s.steady_state) {
        step = &s;
        break;
      }
    double elems = 0, bytes = 0;
    OpArgs args;
    for (uint32_t o : ops_) {
      if (t_.Str(c_.name[o]) != "torch::autograd::AccumulateGrad") continue;
      if (step && (c_.start_ns[o] < step->host_start_ns || c_.start_ns[o] >= step->host_end_ns))
        continue;
      if (!ParseOpArgs(t_.Str(c_.input_dims[o]),
                       c_.input_types.empty() ? "" : t_.Str(c_.input_types[o]), "", &args) ||
          args.size() < 1) {
        continue;
      }
      double n = 1;
      for (int64_t d : args.args[0].shape) n *= static_cast<double>(d);
      elems += n;
      bytes += n * ElementBytes(args.args[0].type);
    }
    out_.param_elements = elems;
    out_.param_element_bytes = elems > 0 ? static_cast<int>(bytes / elems + 0.5) : 4;
  }

  // 5a. Group the ops that own time by (name, shapes, types, concrete inputs).
  void GroupOwners() {
    struct Key {
      StringId name, dims, types, concrete;
      bool operator==(const Key&) const = default;
    };
    struct KeyHash {
      size_t operator()(const Key& k) const {
        return (static_cast<size_t>(k.name) * 0x9E3779B97F4A7C15ull) ^
               (static_cast<size_t>(k.dims) * 0xC2B2AE3D27D4EB4Full) ^
               (static_cast<size_t>(k.types) * 0x165667B19E3779F9ull) ^ k.concrete;
      }
    };
    auto col = [](const std::vector<StringId>& v, uint32_t i) {
      return v.empty() ? kEmptyString : v[i];
    };
    std::unordered_map<Key, size_t, KeyHash> index;
    std::vector<int64_t> group_top_ns;
    owned_ops_ = slot_op_;
    std::sort(owned_ops_.begin(), owned_ops_.end());  // row order: groups in a fixed order
    for (uint32_t op : owned_ops_) {
      const Owned& o = slots_[slot_of_[op]];
      const Key k{c_.name[op], col(c_.input_dims, op), col(c_.input_types, op),
                  col(c_.concrete_inputs, op)};
      auto [it, added] = index.try_emplace(k, out_.groups.size());
      if (added) {
        OpCostGroup gr;
        gr.name = k.name;
        gr.input_dims = k.dims;
        gr.input_types = k.types;
        gr.concrete_inputs = k.concrete;
        out_.groups.push_back(gr);
        group_top_ns.push_back(-1);
      }
      OpCostGroup& gr = out_.groups[it->second];
      group_of_op_.push_back(it->second);
      ++gr.count;
      gr.kernels += o.kernels;
      gr.time_ns += o.ns;
      gr.layout_ns += o.layout_ns;
      if (o.top_row >= 0 && o.top_ns > group_top_ns[it->second]) {
        group_top_ns[it->second] = o.top_ns;
        gr.top_kernel = g_.name[static_cast<size_t>(o.top_row)];
      }
    }
  }

  // 5b. Price each group once by its rule; the roofline and the contradiction test.
  void PriceGroups() {
    CostContext context;
    context.param_elements = out_.param_elements;
    context.param_element_bytes = out_.param_element_bytes;
    OpArgs args;
    for (OpCostGroup& gr : out_.groups) {
      const std::string_view name = t_.Str(gr.name);
      const CostRule* r = RuleOfName(gr.name);  // looked up while finding the owners
      if (!r) {
        gr.unpriced = Unpriced::kNoRule;
        continue;
      }
      gr.family = r->family;
      gr.math = IsMathFamily(r->family);
      if (gr.input_dims == kEmptyString) {
        gr.unpriced = Unpriced::kShapesNotRecorded;
        continue;
      }
      std::optional<OpCost> cost;
      if (ParseOpArgs(t_.Str(gr.input_dims), t_.Str(gr.input_types), t_.Str(gr.concrete_inputs),
                      &args)) {
        cost = r->fn(name, args, context);
      }
      if (!cost) {
        gr.unpriced = Unpriced::kShapesNotUnderstood;
        continue;
      }
      gr.unpriced = Unpriced::kPriced;
      gr.gemm_m = cost->m;
      gr.gemm_n = cost->n;
      gr.gemm_k = cost->k;
      gr.flops = cost->flops;
      gr.model_flops = cost->model_flops;
      gr.bytes = cost->bytes;
      gr.path =
          gr.math ? MathPathOf(gr.top_kernel == kEmptyString ? nullptr
                                                             : &classes_.OfName(gr.top_kernel).math,
                               *cost, out_.peaks)
                  : hw::MathPath::kFp32Cuda;
      if (out_.peaks) PlaceOnRoofline(*out_.peaks, r->family, &gr);
    }
  }

  void PlaceOnRoofline(const hw::GpuPeaks& peaks, OpFamily family, OpCostGroup* group) const {
    OpCostGroup& gr = *group;
    const hw::Peak& peak = peaks.Of(gr.path);
    const double compute = peak.Roof() > 0 ? gr.flops / peak.Roof() * 1e-3 : 0;  // ns
    const double memory = gr.bytes / peaks.hbm_gbps.Roof();                      // ns
    gr.roofline_ns = std::max(compute, memory);
    gr.compute_bound = compute > memory;
    const double compute_ds = peak.datasheet > 0 ? gr.flops / peak.datasheet * 1e-3 : 0;
    gr.physical_ns = std::max(compute_ds, gr.bytes / peaks.hbm_gbps.datasheet);
    // The contradiction test. Up to twice the last-level cache of an op's traffic can miss HBM
    // (reads of what the previous kernel just wrote, writes the cache absorbs: a ReLU after the
    // batch norm that wrote its input), so HBM bounds only the rest; 2 % and one timestamp tick
    // per kernel for resolution. Faster than that is a wrong count, never hidden.
    const double llc = peaks.llc_mib * 1024 * 1024;
    const double hbm_floor =
        std::max(0.0, gr.bytes - 2 * llc) / peaks.hbm_gbps.datasheet;  // ns per call
    const double floor_ns = std::max(compute_ds, hbm_floor);
    const double slack = static_cast<double>(gr.kernels * resolution_ns_);
    gr.above_roofline =
        static_cast<double>(gr.time_ns) + slack < 0.98 * floor_ns * static_cast<double>(gr.count);
    if (gr.above_roofline && family == OpFamily::kOptimizer) {
      // TensorLists assumed to hold every parameter, and the op ran faster than that could: its
      // lists are something else (optimizer step counters, bias corrections).
      gr.unpriced = Unpriced::kListsNotParameters;
      gr.flops = gr.model_flops = gr.bytes = gr.roofline_ns = gr.physical_ns = 0;
      gr.above_roofline = false;
    }
  }

  void SumGroups() {
    for (const OpCostGroup& gr : out_.groups) {
      out_.layout_ns += gr.layout_ns;
      if (gr.unpriced == Unpriced::kPriced) out_.priced_ns += gr.time_ns;
      if (gr.math && gr.unpriced == Unpriced::kPriced)
        out_.math_ns[static_cast<size_t>(gr.path)] += gr.time_ns;
      else if (gr.unpriced != Unpriced::kPriced &&
               (gr.math || (gr.top_kernel != kEmptyString &&
                            KernelPath(classes_.OfName(gr.top_kernel).math).has_value())))
        out_.unpriced_math_ns += gr.time_ns;
      out_.above_roofline_groups += gr.above_roofline;
    }
  }

  // Recomputation: a forward entry point (this op or one around it) under the autograd engine.
  // Sets *engine when the op runs under the autograd engine at all.
  bool Recomputed(uint32_t op, bool* engine) const {
    bool forward = false;
    *engine = false;
    for (int32_t p = static_cast<int32_t>(op); p >= 0 && !*engine;
         p = parent_[static_cast<size_t>(p)]) {
      const std::string_view n = t_.Str(c_.name[static_cast<size_t>(p)]);
      if (n.starts_with(kEngine))
        *engine = true;
      else if (IsForwardEntry(n))
        forward = true;
    }
    return *engine && forward;
  }

  // 6. Per step: FLOPs of the math ops that started inside the steady-state steps.
  void PerStepFlops() {
    std::vector<std::pair<int64_t, int64_t>> windows;
    for (const StepBreakdown& s : steps_.steps)
      if (s.steady_state) windows.emplace_back(s.host_start_ns, s.host_end_ns);
    std::sort(windows.begin(), windows.end());
    if (windows.empty() || steps_.mean_steady_step_ns <= 0) return;
    auto in_steps = [&windows](int64_t ts) {
      auto it = std::upper_bound(windows.begin(), windows.end(), std::make_pair(ts, INT64_MAX));
      return it != windows.begin() && ts < std::prev(it)->second;
    };
    double model = 0, hardware = 0, recomputed = 0, fp32_inputs = 0;
    std::vector<double> float_inputs(out_.groups.size(), -1);  // per group, computed once
    for (size_t i = 0; i < owned_ops_.size(); ++i) {
      const uint32_t op = owned_ops_[i];
      const OpCostGroup& gr = out_.groups[group_of_op_[i]];
      if (!gr.math || gr.unpriced != Unpriced::kPriced || !in_steps(c_.start_ns[op])) continue;
      hardware += gr.flops;
      bool engine = false;
      if (Recomputed(op, &engine)) {
        recomputed += gr.flops;
      } else {
        model += gr.model_flops;
      }
      if (!engine && gr.family != OpFamily::kAttention && gr.bytes > 0 &&
          (gr.path == hw::MathPath::kFp32Cuda || gr.path == hw::MathPath::kTf32)) {
        double& b = float_inputs[group_of_op_[i]];
        if (b < 0) b = FloatInputBytes(t_, gr);
        fp32_inputs += b;
      }
    }
    out_.steps = windows.size();
    out_.step_ns = steps_.mean_steady_step_ns;
    const double n = static_cast<double>(windows.size());
    out_.model_flops_per_step = model / n;
    out_.hardware_flops_per_step = hardware / n;
    out_.recomputed_flops_per_step = recomputed / n;
    out_.fp32_forward_math_input_bytes_per_step = fp32_inputs / n;
    // Most math time unpriced (PyTorch 1.8 records no stride or padding, so its convolutions
    // have no output size, and cudnn_convolution_backward_* no rule): MFU is unknown, not the
    // few GEMMs that were priced.
    int64_t priced_math_ns = 0;
    for (const int64_t ns : out_.math_ns) priced_math_ns += ns;
    if (out_.mfu_peak_tflops > 0 && out_.model_flops_per_step > 0 &&
        priced_math_ns >= out_.unpriced_math_ns) {
      const double denom = static_cast<double>(out_.step_ns) * 1e-9 * out_.mfu_peak_tflops * 1e12;
      out_.mfu = out_.model_flops_per_step / denom;
      out_.hfu = out_.hardware_flops_per_step / denom;
    }
  }

  void MapSlotsToGroups() {
    group_at_slot_.assign(slots_.size(), 0);  // owning op's slot → its group
    for (size_t i = 0; i < owned_ops_.size(); ++i)
      group_at_slot_[slot_of_[owned_ops_[i]]] = group_of_op_[i];
  }
  const OpCostGroup& GroupAt(uint32_t op) const {
    return out_.groups[group_at_slot_[slot_of_[op]]];
  }

  // 6b. Per kernel name: the priced ops' FLOPs and bytes split over their kernels by time.
  void KernelCosts() {
    std::unordered_map<StringId, size_t> kernel_at;
    for (size_t i = 0; i < g_.size(); ++i) {
      if (g_.kind[i] != GpuKind::kKernel || g_.launch[i] < 0) continue;
      const int32_t op = launcher_[static_cast<size_t>(g_.launch[i])];
      if (op < 0) continue;
      const uint32_t own = Owner(static_cast<uint32_t>(op));
      const OpCostGroup& gr = GroupAt(own);
      if (gr.unpriced != Unpriced::kPriced) continue;
      auto [it, added] = kernel_at.try_emplace(g_.name[i], out_.kernels.size());
      if (added) {
        KernelCost k;
        k.name = g_.name[i];
        const std::optional<hw::MathPath> p = KernelPath(classes_.OfName(g_.name[i]).math);
        k.math = p.has_value();
        k.path = p.value_or(hw::MathPath::kFp32Cuda);
        out_.kernels.push_back(k);
      }
      KernelCost& k = out_.kernels[it->second];
      ++k.count;
      k.time_ns += g_.dur_ns[i];
      const int64_t op_ns = slots_[slot_of_[own]].ns;
      const double share =
          op_ns > 0 ? static_cast<double>(g_.dur_ns[i]) / static_cast<double>(op_ns) : 0;
      k.flops += share * gr.flops;
      k.bytes += share * gr.bytes;
    }
    const Trace& t = t_;
    std::sort(out_.kernels.begin(), out_.kernels.end(),
              [&t](const KernelCost& a, const KernelCost& b) {
                if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
                return t.Str(a.name) < t.Str(b.name);
              });
  }

  // The op's largest tensor: its output size in elements (-1: shapes not understood).
  double Elements(const OpCostGroup& gr) const {
    OpArgs parsed;
    if (!ParseOpArgs(t_.Str(gr.input_dims), t_.Str(gr.input_types), "", &parsed)) return -1.0;
    double best = -1;
    for (const OpArg& a : parsed.args) {
      if (a.is_list || ElementBytes(a.type) == 0) continue;
      double n = 1;
      for (int64_t d : a.shape) n *= static_cast<double>(d);
      best = std::max(best, n);
    }
    return best;
  }

  // A run of three or more fusible ops becomes a chain: its time, and what one kernel moving
  // the largest op's bytes would take.
  void CloseChain(std::vector<uint32_t>* run, std::unordered_map<std::string, size_t>* chain_at) {
    if (run->size() >= 3) {
      std::string key;
      double time = 0, largest = 0;
      uint64_t kernels = 0;
      for (uint32_t op : *run) {
        const OpCostGroup& gr = GroupAt(op);
        key += (key.empty() ? "" : " → ") + std::string(t_.Str(gr.name));
        const Owned& o = slots_[slot_of_[op]];
        time += static_cast<double>(o.ns);
        kernels += o.kernels;
        largest = std::max(largest, gr.bytes);
      }
      auto [it, added] = chain_at->try_emplace(key, out_.fusion.size());
      if (added) out_.fusion.push_back({key, 0, kernels, 0, 0});
      FusionChain& f = out_.fusion[it->second];
      ++f.chains;
      f.time_ns += static_cast<int64_t>(time);
      const double fused = largest / out_.peaks->hbm_gbps.Roof();
      f.fused_ns += fused;
      if (time > 0)
        for (uint32_t op : *run)
          slot_scale_[slot_of_[op]] = static_cast<float>(std::min(1.0, fused / time));
    }
    run->clear();
  }

  // 7. Fusion chains: per thread in time order, runs of priced elementwise ops with kernels, of
  //    one output size, with no other op with kernels between them.
  void FusionChains() {
    if (!out_.peaks) return;
    std::unordered_map<std::string, size_t> chain_at;
    std::vector<uint32_t> run;
    double run_elems = -1;
    std::vector<double> group_elems(out_.groups.size(), -2);  // -2: not computed yet
    slot_scale_.assign(slots_.size(), 1.0f);
    auto close = [&] {
      CloseChain(&run, &chain_at);
      run_elems = -1;
    };
    uint32_t current = 0;
    bool first = true;
    for (size_t i = 0; i < ops_.size(); ++i) {
      const uint32_t o = ops_[i];
      if (first || op_thread_[i] != current) {
        close();
        current = op_thread_[i];
        first = false;
      }
      if (slot_of_[o] == UINT32_MAX) continue;  // no kernels of its own: views, wrappers
      const size_t group = group_at_slot_[slot_of_[o]];
      const OpCostGroup& gr = out_.groups[group];
      double& n = group_elems[group];
      if (n == -2) n = Elements(gr);
      const bool fusible = gr.family == OpFamily::kElementwise &&
                           gr.unpriced == Unpriced::kPriced && !gr.compute_bound && n > 0;
      if (!fusible || (run_elems >= 0 && n != run_elems)) close();
      if (fusible) {
        run.push_back(o);
        run_elems = n;
      }
    }
    close();
    std::sort(out_.fusion.begin(), out_.fusion.end(),
              [](const FusionChain& a, const FusionChain& b) {
                const double sa = static_cast<double>(a.time_ns) - a.fused_ns;
                const double sb = static_cast<double>(b.time_ns) - b.fused_ns;
                if (sa != sb) return sa > sb;
                return a.ops < b.ops;
              });
  }

  // 8. Groups by time (longest first, then a fixed order), and per GPU row its group and its
  //    fusion scale (the what-ifs rescale activities by them).
  void SortGroupsAndMapRows() {
    std::vector<uint32_t> by_time(out_.groups.size());
    for (uint32_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
    const Trace& t = t_;
    const std::vector<OpCostGroup>& groups = out_.groups;
    std::sort(by_time.begin(), by_time.end(), [&t, &groups](uint32_t ia, uint32_t ib) {
      const OpCostGroup& a = groups[ia];
      const OpCostGroup& b = groups[ib];
      if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
      if (a.count != b.count) return a.count > b.count;
      const std::string_view an = t.Str(a.name), bn = t.Str(b.name);
      if (an != bn) return an < bn;
      if (t.Str(a.input_dims) != t.Str(b.input_dims))
        return t.Str(a.input_dims) < t.Str(b.input_dims);
      return t.Str(a.concrete_inputs) < t.Str(b.concrete_inputs);
    });
    std::vector<OpCostGroup> sorted;
    sorted.reserve(by_time.size());
    std::vector<int32_t> new_index(by_time.size());
    for (uint32_t i = 0; i < by_time.size(); ++i) {
      new_index[by_time[i]] = static_cast<int32_t>(i);
      sorted.push_back(std::move(out_.groups[by_time[i]]));
    }
    out_.groups = std::move(sorted);
    out_.activity_group.assign(g_.size(), -1);
    if (!slot_scale_.empty()) out_.activity_fused_scale.assign(g_.size(), 1.0f);
    for (size_t i = 0; i < g_.size(); ++i) {
      const uint32_t slot = slot_of_row_[i];
      if (slot == UINT32_MAX) continue;
      out_.activity_group[i] = new_index[group_at_slot_[slot]];
      if (!slot_scale_.empty()) out_.activity_fused_scale[i] = slot_scale_[slot];
    }
  }

  const Trace& t_;
  const CpuOpTable& c_;
  const RuntimeCallTable& rt_;
  const GpuActivityTable& g_;
  const KernelClasses& classes_;
  const StepsResult& steps_;
  OpCosts out_;

  std::map<ThreadKey, uint32_t> thread_number_;
  std::vector<uint32_t> ops_, op_thread_, calls_, call_thread_;  // by (thread, start)
  std::vector<int32_t> parent_;    // per cpu row: the enclosing op, -1 none
  std::vector<int32_t> launcher_;  // per runtime call: the innermost op around it, -1 none
  std::unordered_map<StringId, const CostRule*> rule_of_;
  std::vector<int32_t> owner_of_;  // per cpu row, -1: not resolved yet
  int64_t resolution_ns_ = 1000;
  std::vector<uint32_t> slot_of_;      // per cpu row: its slot, UINT32_MAX none
  std::vector<uint32_t> slot_op_;      // per slot: its op
  std::vector<Owned> slots_;           // per slot: the GPU time it owns
  std::vector<uint32_t> slot_of_row_;  // per GPU row: the owning op's slot
  std::vector<uint32_t> owned_ops_;    // the owning ops in row order
  std::vector<size_t> group_of_op_;    // parallel to owned_ops_
  std::vector<size_t> group_at_slot_;  // per slot: its group
  std::vector<float> slot_scale_;      // per slot: its fusion chain run's fused ÷ unfused time
};

}  // namespace

OpCosts AnalyzeOpCosts(const Trace& t, const KernelClasses& classes, const StepsResult& steps,
                       const OpCostOptions& options) {
  return OpCostAnalysis(t, classes, steps).Run(options);
}

}  // namespace gpuscope::analyze
