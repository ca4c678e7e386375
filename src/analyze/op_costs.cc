#include "analyze/op_costs.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "base/sort.h"

namespace gpuscope::analyze {

const char* UnpricedName(Unpriced u) {
  switch (u) {
    case Unpriced::kPriced:
      return "";
    case Unpriced::kNoRule:
      return "no_rule";
    case Unpriced::kShapesNotRecorded:
      return "shapes_not_recorded";
    case Unpriced::kShapesNotUnderstood:
      return "shapes_not_understood";
    case Unpriced::kListsNotParameters:
      return "lists_not_parameters";
  }
  return "?";
}

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

}  // namespace

OpCosts AnalyzeOpCosts(const Trace& t, const KernelClasses& classes, const StepsResult& steps,
                       const OpCostOptions& options) {
  OpCosts out;
  const CpuOpTable& c = t.cpu;
  if (!c.has_shapes()) return out;
  out.shapes = true;
  if (!t.devices.empty()) out.device = t.devices.front().name;
  out.peaks = options.gpu.empty() ? hw::PeaksForDevice(out.device) : hw::PeaksForGpu(options.gpu);

  // 1. The op nesting per thread: parent of every cpu_op, and the innermost op around each
  //    runtime call. Ops sorted by (thread, start, longer first), calls by (thread, start).
  // Threads numbered once (a map over the few distinct (pid, tid) pairs), then rows sorted as
  // compact keys: the sorts are the analysis' main cost on large traces.
  std::map<ThreadKey, uint32_t> thread_number;
  auto number = [&thread_number](TraceId pid, TraceId tid) {
    return thread_number
        .try_emplace(ThreadKey{pid, tid}, static_cast<uint32_t>(thread_number.size()))
        .first->second;
  };
  // Rows bucketed by thread (stable), then each thread's rows ordered by (start, longer first):
  // a thread's rows come almost in time order, so SortRuns does little more than check it.
  auto order = [](const std::vector<uint32_t>& rows, const std::vector<uint32_t>& thread_of_row,
                  size_t threads, auto less, std::vector<uint32_t>* sorted,
                  std::vector<uint32_t>* thread) {
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
  };
  std::vector<uint32_t> rows, row_thread;
  for (uint32_t i = 0; i < c.size(); ++i) {
    if (c.kind[i] != CpuKind::kCpuOp) continue;
    rows.push_back(i);
    row_thread.push_back(number(c.pid[i], c.tid[i]));
  }
  const RuntimeCallTable& rt = t.runtime;
  std::vector<uint32_t> call_rows(rt.size()), call_row_thread(rt.size());
  for (uint32_t i = 0; i < rt.size(); ++i) {
    call_rows[i] = i;
    call_row_thread[i] = number(rt.pid[i], rt.tid[i]);
  }
  std::vector<uint32_t> ops, op_thread, calls, call_thread;
  order(
      rows, row_thread, thread_number.size(),
      [&c](uint32_t a, uint32_t b) {
        if (c.start_ns[a] != c.start_ns[b]) return c.start_ns[a] < c.start_ns[b];
        return c.dur_ns[a] > c.dur_ns[b];
      },
      &ops, &op_thread);
  order(
      call_rows, call_row_thread, thread_number.size(),
      [&rt](uint32_t a, uint32_t b) { return rt.start_ns[a] < rt.start_ns[b]; }, &calls,
      &call_thread);
  std::vector<uint32_t>().swap(rows);
  std::vector<uint32_t>().swap(row_thread);
  std::vector<uint32_t>().swap(call_rows);
  std::vector<uint32_t>().swap(call_row_thread);
  auto end = [&c](uint32_t r) { return c.start_ns[r] + c.dur_ns[r]; };
  std::vector<int32_t> parent(c.size(), -1);
  std::vector<int32_t> launcher(rt.size(), -1);
  {
    std::vector<uint32_t> stack;
    size_t k = 0;  // next call
    auto settle_calls_before = [&](uint32_t key, int64_t before) {
      // Calls of this thread that start before `before`: the stack holds their enclosing ops.
      while (k < calls.size()) {
        const uint32_t r = calls[k];
        const uint32_t kr = call_thread[k];
        if (kr < key || (kr == key && rt.start_ns[r] < before)) {
          if (kr == key) {
            const int64_t call_end = rt.start_ns[r] + rt.dur_ns[r];
            for (size_t s = stack.size(); s-- > 0;) {
              if (c.start_ns[stack[s]] <= rt.start_ns[r] && end(stack[s]) >= call_end) {
                launcher[r] = static_cast<int32_t>(stack[s]);
                break;
              }
            }
          }
          ++k;
        } else {
          break;
        }
      }
    };
    uint32_t current = 0;
    bool first = true;
    for (size_t i = 0; i < ops.size(); ++i) {
      const uint32_t o = ops[i];
      const uint32_t key = op_thread[i];
      if (first || key != current) {
        if (!first) settle_calls_before(current, INT64_MAX);
        stack.clear();
        current = key;
        first = false;
      }
      settle_calls_before(key, c.start_ns[o]);
      // Pop what does not enclose o (ended before it ends, or ended where a non-empty o starts).
      while (!stack.empty() && (end(stack.back()) < end(o) ||
                                (end(stack.back()) == c.start_ns[o] && c.dur_ns[o] > 0))) {
        stack.pop_back();
      }
      parent[o] = stack.empty() ? -1 : static_cast<int32_t>(stack.back());
      stack.push_back(o);
    }
    if (!first) settle_calls_before(current, INT64_MAX);
  }

  // 2. Rules per op name (by StringId, looked up once per distinct name).
  std::unordered_map<StringId, const CostRule*> rule_of;
  auto rule = [&](uint32_t op) -> const CostRule* {
    auto [it, added] = rule_of.try_emplace(c.name[op], nullptr);
    if (added) it->second = FindCostRule(t.Str(c.name[op]));
    return it->second;
  };
  // The op a launch's GPU time is counted for (memoised per launching op).
  std::vector<int32_t> owner_of(c.size(), -1);  // per cpu row, -1: not resolved yet
  auto owner = [&](uint32_t op) {
    if (owner_of[op] >= 0) return static_cast<uint32_t>(owner_of[op]);
    int32_t outer_owner = -1, nearest = -1;
    for (int32_t p = static_cast<int32_t>(op); p >= 0; p = parent[static_cast<size_t>(p)]) {
      const CostRule* r = rule(static_cast<uint32_t>(p));
      if (!r) continue;
      if (nearest < 0) nearest = p;
      if (r->owns_subtree) outer_owner = p;
    }
    owner_of[op] = outer_owner >= 0 ? outer_owner
                   : nearest >= 0   ? nearest
                                    : static_cast<int32_t>(op);
    return static_cast<uint32_t>(owner_of[op]);
  };

  // Timestamp resolution of the GPU activities: µs in older traces (every duration a multiple of
  // 1,000 ns), where a short kernel's time is off by up to 1 µs; the roofline check allows it.
  int64_t resolution_ns = 1000;
  for (size_t i = 0; i < t.gpu.size() && resolution_ns > 1; ++i)
    if (t.gpu.dur_ns[i] % 1000 != 0) resolution_ns = 1;

  // 3. Attribute every linked GPU activity.
  // The ops that own GPU time: a slot per op (dense, in first-seen order) and its accumulation.
  std::vector<uint32_t> slot_of(c.size(), UINT32_MAX);
  std::vector<uint32_t> slot_op;
  std::vector<Owned> slots;
  auto owned_at = [&](uint32_t op) -> Owned& {
    if (slot_of[op] == UINT32_MAX) {
      slot_of[op] = static_cast<uint32_t>(slots.size());
      slots.emplace_back();
      slot_op.push_back(op);
    }
    return slots[slot_of[op]];
  };
  std::unordered_map<StringId, bool> is_layout;  // per kernel name: a cuDNN layout transpose
  const GpuActivityTable& g = t.gpu;
  std::vector<uint32_t> slot_of_row(g.size(), UINT32_MAX);  // the owning op's slot per GPU row
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.kind[i] == GpuKind::kSync || g.launch[i] < 0) continue;
    const int32_t op = launcher[static_cast<size_t>(g.launch[i])];
    if (op < 0) {
      out.unattributed_ns += g.dur_ns[i];
      continue;
    }
    Owned& o = owned_at(owner(static_cast<uint32_t>(op)));
    slot_of_row[i] = slot_of[owner(static_cast<uint32_t>(op))];
    o.ns += g.dur_ns[i];
    if (g.kind[i] == GpuKind::kKernel) {
      auto [it, added] = is_layout.try_emplace(g.name[i], false);
      if (added) {
        it->second = IsLayoutTransposeKernel(t.Str(g.name[i]));
      }
      if (it->second) o.layout_ns += g.dur_ns[i];
    }
    ++o.kernels;
    if (g.kind[i] == GpuKind::kKernel && g.dur_ns[i] > o.top_ns) {
      o.top_ns = g.dur_ns[i];
      o.top_row = static_cast<int32_t>(i);
    }
    out.op_ns += g.dur_ns[i];
  }

  // 4. Parameters (for optimizer TensorLists): AccumulateGrad inputs in the first steady step,
  //    else over the whole trace (taken as one step).
  {
    const StepBreakdown* step = nullptr;
    for (const StepBreakdown& s : steps.steps)
      if (s.steady_state) {
        step = &s;
        break;
      }
    double elems = 0, bytes = 0;
    OpArgs args;
    for (uint32_t o : ops) {
      if (t.Str(c.name[o]) != "torch::autograd::AccumulateGrad") continue;
      if (step && (c.start_ns[o] < step->host_start_ns || c.start_ns[o] >= step->host_end_ns))
        continue;
      if (!ParseOpArgs(t.Str(c.input_dims[o]), c.input_types.empty() ? "" : t.Str(c.input_types[o]),
                       "", &args) ||
          args.size() < 1) {
        continue;
      }
      double n = 1;
      for (int64_t d : args.args[0].shape) n *= static_cast<double>(d);
      elems += n;
      bytes += n * ElementBytes(args.args[0].type);
    }
    out.param_elements = elems;
    out.param_element_bytes = elems > 0 ? static_cast<int>(bytes / elems + 0.5) : 4;
  }
  CostContext context;
  context.param_elements = out.param_elements;
  context.param_element_bytes = out.param_element_bytes;

  // 5. Group the ops that own time, price each group once.
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
  std::vector<size_t> group_of_op;  // parallel to `owned_ops`
  std::vector<uint32_t> owned_ops;
  owned_ops = slot_op;
  std::sort(owned_ops.begin(), owned_ops.end());  // row order: groups come out in a fixed order
  for (uint32_t op : owned_ops) {
    const Owned& o = slots[slot_of[op]];
    const Key k{c.name[op], col(c.input_dims, op), col(c.input_types, op),
                col(c.concrete_inputs, op)};
    auto [it, added] = index.try_emplace(k, out.groups.size());
    if (added) {
      OpCostGroup gr;
      gr.name = k.name;
      gr.input_dims = k.dims;
      gr.input_types = k.types;
      gr.concrete_inputs = k.concrete;
      out.groups.push_back(gr);
      group_top_ns.push_back(-1);
    }
    OpCostGroup& gr = out.groups[it->second];
    group_of_op.push_back(it->second);
    ++gr.count;
    gr.kernels += o.kernels;
    gr.time_ns += o.ns;
    gr.layout_ns += o.layout_ns;
    if (o.top_row >= 0 && o.top_ns > group_top_ns[it->second]) {
      group_top_ns[it->second] = o.top_ns;
      gr.top_kernel = g.name[static_cast<size_t>(o.top_row)];
    }
  }
  OpArgs args;
  for (OpCostGroup& gr : out.groups) {
    const std::string_view name = t.Str(gr.name);
    const CostRule* r = FindCostRule(name);
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
    if (ParseOpArgs(t.Str(gr.input_dims), t.Str(gr.input_types), t.Str(gr.concrete_inputs),
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
    gr.path = gr.math
                  ? MathPathOf(gr.top_kernel == kEmptyString ? nullptr
                                                             : &classes.OfName(gr.top_kernel).math,
                               *cost, out.peaks)
                  : hw::MathPath::kFp32Cuda;
    if (out.peaks) {
      const hw::Peak& peak = out.peaks->Of(gr.path);
      const double compute = peak.Roof() > 0 ? gr.flops / peak.Roof() * 1e-3 : 0;  // ns
      const double memory = gr.bytes / out.peaks->hbm_gbps.Roof();                 // ns
      gr.roofline_ns = std::max(compute, memory);
      gr.compute_bound = compute > memory;
      const double compute_ds = peak.datasheet > 0 ? gr.flops / peak.datasheet * 1e-3 : 0;
      gr.physical_ns = std::max(compute_ds, gr.bytes / out.peaks->hbm_gbps.datasheet);
      // The contradiction test. Up to twice the last-level cache of an op's traffic can miss
      // HBM (reads of what the previous kernel just wrote, writes the cache absorbs: a ReLU after
      // the batch norm that wrote its input), so HBM bounds only the rest; 2 % and one timestamp
      // tick per kernel for resolution. Faster than that is a wrong count, never hidden.
      const double llc = out.peaks->llc_mib * 1024 * 1024;
      const double hbm_floor =
          std::max(0.0, gr.bytes - 2 * llc) / out.peaks->hbm_gbps.datasheet;  // ns per call
      const double floor_ns = std::max(compute_ds, hbm_floor);
      const double slack = static_cast<double>(gr.kernels * resolution_ns);
      gr.above_roofline =
          static_cast<double>(gr.time_ns) + slack < 0.98 * floor_ns * static_cast<double>(gr.count);
      if (gr.above_roofline && r->family == OpFamily::kOptimizer) {
        // TensorLists assumed to hold every parameter, and the op ran faster than that could:
        // its lists are something else (optimizer step counters, bias corrections).
        gr.unpriced = Unpriced::kListsNotParameters;
        gr.flops = gr.model_flops = gr.bytes = gr.roofline_ns = gr.physical_ns = 0;
        gr.above_roofline = false;
        continue;
      }
    }
  }
  for (const OpCostGroup& gr : out.groups) {
    out.layout_ns += gr.layout_ns;
    if (gr.unpriced == Unpriced::kPriced) out.priced_ns += gr.time_ns;
    if (gr.math && gr.unpriced == Unpriced::kPriced)
      out.math_ns[static_cast<size_t>(gr.path)] += gr.time_ns;
    out.above_roofline_groups += gr.above_roofline;
  }

  // 6. Per step: FLOPs of the math ops that started inside the steady-state steps.
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (const StepBreakdown& s : steps.steps)
    if (s.steady_state) windows.emplace_back(s.host_start_ns, s.host_end_ns);
  std::sort(windows.begin(), windows.end());
  if (!windows.empty() && steps.mean_steady_step_ns > 0) {
    auto in_steps = [&windows](int64_t ts) {
      auto it = std::upper_bound(windows.begin(), windows.end(), std::make_pair(ts, INT64_MAX));
      return it != windows.begin() && ts < std::prev(it)->second;
    };
    double model = 0, hardware = 0, recomputed = 0, fp32_inputs = 0;
    std::vector<double> float_inputs(out.groups.size(), -1);  // per group, computed once
    for (size_t i = 0; i < owned_ops.size(); ++i) {
      const uint32_t op = owned_ops[i];
      const OpCostGroup& gr = out.groups[group_of_op[i]];
      if (!gr.math || gr.unpriced != Unpriced::kPriced || !in_steps(c.start_ns[op])) continue;
      hardware += gr.flops;
      // Recomputation: a forward entry point (this op or one around it) under the autograd engine.
      bool forward = false, engine = false;
      for (int32_t p = static_cast<int32_t>(op); p >= 0 && !engine;
           p = parent[static_cast<size_t>(p)]) {
        const std::string_view n = t.Str(c.name[static_cast<size_t>(p)]);
        if (n.starts_with(kEngine))
          engine = true;
        else if (IsForwardEntry(n))
          forward = true;
      }
      if (engine && forward) {
        recomputed += gr.flops;
      } else {
        model += gr.model_flops;
      }
      if (!engine && gr.family != OpFamily::kAttention && gr.bytes > 0 &&
          (gr.path == hw::MathPath::kFp32Cuda || gr.path == hw::MathPath::kTf32)) {
        double& b = float_inputs[group_of_op[i]];
        if (b < 0) b = FloatInputBytes(t, gr);
        fp32_inputs += b;
      }
    }
    out.steps = windows.size();
    out.step_ns = steps.mean_steady_step_ns;
    const double n = static_cast<double>(windows.size());
    out.model_flops_per_step = model / n;
    out.hardware_flops_per_step = hardware / n;
    out.recomputed_flops_per_step = recomputed / n;
    out.fp32_forward_math_input_bytes_per_step = fp32_inputs / n;
    if (out.peaks && out.peaks->Of(hw::MathPath::kBf16).datasheet > 0) {
      out.mfu_peak_tflops = out.peaks->Of(hw::MathPath::kBf16).datasheet;
      const double denom = static_cast<double>(out.step_ns) * 1e-9 * out.mfu_peak_tflops * 1e12;
      out.mfu = out.model_flops_per_step / denom;
      out.hfu = out.hardware_flops_per_step / denom;
    }
  }

  std::vector<size_t> group_at_slot(slots.size());  // owning op's slot → its group
  for (size_t i = 0; i < owned_ops.size(); ++i)
    group_at_slot[slot_of[owned_ops[i]]] = group_of_op[i];
  auto group_at = [&](uint32_t op) -> const OpCostGroup& {
    return out.groups[group_at_slot[slot_of[op]]];
  };

  // 6b. Per kernel name: the priced ops' FLOPs and bytes split over their kernels by time.
  {
    std::unordered_map<StringId, size_t> kernel_at;
    for (size_t i = 0; i < g.size(); ++i) {
      if (g.kind[i] != GpuKind::kKernel || g.launch[i] < 0) continue;
      const int32_t op = launcher[static_cast<size_t>(g.launch[i])];
      if (op < 0) continue;
      const uint32_t own = owner(static_cast<uint32_t>(op));
      const OpCostGroup& gr = group_at(own);
      if (gr.unpriced != Unpriced::kPriced) continue;
      auto [it, added] = kernel_at.try_emplace(g.name[i], out.kernels.size());
      if (added) {
        KernelCost k;
        k.name = g.name[i];
        const std::optional<hw::MathPath> p = KernelPath(classes.OfName(g.name[i]).math);
        k.math = p.has_value();
        k.path = p.value_or(hw::MathPath::kFp32Cuda);
        out.kernels.push_back(k);
      }
      KernelCost& k = out.kernels[it->second];
      ++k.count;
      k.time_ns += g.dur_ns[i];
      const int64_t op_ns = slots[slot_of[own]].ns;
      const double share =
          op_ns > 0 ? static_cast<double>(g.dur_ns[i]) / static_cast<double>(op_ns) : 0;
      k.flops += share * gr.flops;
      k.bytes += share * gr.bytes;
    }
    std::sort(out.kernels.begin(), out.kernels.end(),
              [&t](const KernelCost& a, const KernelCost& b) {
                if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
                return t.Str(a.name) < t.Str(b.name);
              });
  }

  std::vector<float> slot_scale;  // per slot: its fusion chain run's fused ÷ unfused time
  // 7. Fusion chains: per thread in time order, runs of priced elementwise ops with kernels, of
  //    one output size, with no other op with kernels between them.
  if (out.peaks) {
    std::unordered_map<std::string, size_t> chain_at;
    std::vector<uint32_t> run;
    double run_elems = -1;
    auto elems = [&](const OpCostGroup& gr) {  // the op's largest tensor: its output size
      OpArgs parsed;
      if (!ParseOpArgs(t.Str(gr.input_dims), t.Str(gr.input_types), "", &parsed)) return -1.0;
      double best = -1;
      for (const OpArg& a : parsed.args) {
        if (a.is_list || ElementBytes(a.type) == 0) continue;
        double n = 1;
        for (int64_t d : a.shape) n *= static_cast<double>(d);
        best = std::max(best, n);
      }
      return best;
    };
    std::vector<double> group_elems(out.groups.size(), -2);  // -2: not computed yet
    slot_scale.assign(slots.size(), 1.0f);
    auto close = [&] {
      if (run.size() >= 3) {
        std::string key;
        double time = 0, largest = 0;
        uint64_t kernels = 0;
        for (uint32_t op : run) {
          const OpCostGroup& gr = group_at(op);
          key += (key.empty() ? "" : " → ") + std::string(t.Str(gr.name));
          const Owned& o = slots[slot_of[op]];
          time += static_cast<double>(o.ns);
          kernels += o.kernels;
          largest = std::max(largest, gr.bytes);
        }
        auto [it, added] = chain_at.try_emplace(key, out.fusion.size());
        if (added) out.fusion.push_back({key, 0, kernels, 0, 0});
        FusionChain& f = out.fusion[it->second];
        ++f.chains;
        f.time_ns += static_cast<int64_t>(time);
        const double fused = largest / out.peaks->hbm_gbps.Roof();
        f.fused_ns += fused;
        if (time > 0)
          for (uint32_t op : run)
            slot_scale[slot_of[op]] = static_cast<float>(std::min(1.0, fused / time));
      }
      run.clear();
      run_elems = -1;
    };
    uint32_t current = 0;
    bool first = true;
    for (size_t i = 0; i < ops.size(); ++i) {
      const uint32_t o = ops[i];
      if (first || op_thread[i] != current) {
        close();
        current = op_thread[i];
        first = false;
      }
      if (slot_of[o] == UINT32_MAX) continue;  // no kernels of its own: views, wrappers
      const size_t group = group_at_slot[slot_of[o]];
      const OpCostGroup& gr = out.groups[group];
      double& n = group_elems[group];
      if (n == -2) n = elems(gr);
      const bool fusible = gr.family == OpFamily::kElementwise &&
                           gr.unpriced == Unpriced::kPriced && !gr.compute_bound && n > 0;
      if (!fusible || (run_elems >= 0 && n != run_elems)) close();
      if (fusible) {
        run.push_back(o);
        run_elems = n;
      }
    }
    close();
    std::sort(out.fusion.begin(), out.fusion.end(), [](const FusionChain& a, const FusionChain& b) {
      const double sa = static_cast<double>(a.time_ns) - a.fused_ns;
      const double sb = static_cast<double>(b.time_ns) - b.fused_ns;
      if (sa != sb) return sa > sb;
      return a.ops < b.ops;
    });
  }

  std::vector<uint32_t> by_time(out.groups.size());
  for (uint32_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
  std::sort(by_time.begin(), by_time.end(), [&t, &out](uint32_t ia, uint32_t ib) {
    const OpCostGroup& a = out.groups[ia];
    const OpCostGroup& b = out.groups[ib];
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
    sorted.push_back(std::move(out.groups[by_time[i]]));
  }
  out.groups = std::move(sorted);
  // 8. Per GPU row: its group and its fusion scale (the what-ifs rescale activities by them).
  out.activity_group.assign(g.size(), -1);
  if (!slot_scale.empty()) out.activity_fused_scale.assign(g.size(), 1.0f);
  for (size_t i = 0; i < g.size(); ++i) {
    const uint32_t slot = slot_of_row[i];
    if (slot == UINT32_MAX) continue;
    out.activity_group[i] = new_index[group_at_slot[slot]];
    if (!slot_scale.empty()) out.activity_fused_scale[i] = slot_scale[slot];
  }
  return out;
}

}  // namespace gpuscope::analyze
