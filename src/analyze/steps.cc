#include "analyze/steps.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <string_view>
#include <unordered_set>

#include "analyze/intervals.h"
#include "analyze/kernel_class.h"
#include "base/enum_names.h"
#include "base/sort.h"

namespace gpuscope::analyze {

constexpr EnumNames<StepCategory, 8> kStepCategoryNames(
    {StepCategory::kKernel, "kernel"}, {StepCategory::kMemcpy, "memcpy"},
    {StepCategory::kMemset, "memset"}, {StepCategory::kCommunication, "communication"},
    {StepCategory::kRuntime, "runtime"}, {StepCategory::kDataLoader, "dataloader"},
    {StepCategory::kCpuExec, "cpu_exec"}, {StepCategory::kOther, "other"});

const char* StepCategoryName(StepCategory c) { return CNameOf(kStepCategoryNames, c); }

namespace {

constexpr int64_t kNoStart = std::numeric_limits<int64_t>::max();
constexpr int64_t kNoEnd = std::numeric_limits<int64_t>::min();

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// tb_plugin event_parser.py : 308-311 (StepParser._parse_step).
bool IsDataLoaderName(std::string_view name) {
  return (StartsWith(name, "enumerate(DataLoader)#") && EndsWith(name, ".__next__")) ||
         StartsWith(name, "enumerate(DataPipe)#");
}

// tb_plugin trace.py : 15-16 has exactly nccl:/gloo: {broadcast, reduce, all_reduce, all_gather,
// reduce_scatter}. Deliberate difference: every record_function range of the two process-group
// backends counts (nccl:all_to_all, nccl:_allgather_base, nccl:_reduce_scatter_base, nccl:send,
// nccl:recv, nccl:all_gather_into_tensor_coalesced, ...), since all of them are the CPU side of a
// collective. c10d::* and record_param_comms stay CPU Exec: they nest inside the nccl:* range
// where there is one, and tb_plugin does not list them either.
bool IsCommunicationOpName(std::string_view name, bool tb_compatible) {
  if (!tb_compatible) return StartsWith(name, "nccl:") || StartsWith(name, "gloo:");
  static constexpr std::string_view kOps[] = {"broadcast", "reduce", "all_reduce", "all_gather",
                                              "reduce_scatter"};
  for (std::string_view lib : {std::string_view("nccl:"), std::string_view("gloo:")}) {
    if (!StartsWith(name, lib)) continue;
    for (std::string_view op : kOps) {
      if (name.substr(lib.size()) == op) return true;
    }
  }
  return false;
}

// Kinds tb_plugin treats as host ops (its OPERATOR and USER_ANNOTATION event types). Deliberate
// difference: kGpuUserAnnotation is left out (tb_plugin's trace.py maps gpu_user_annotation to
// user_annotation, so GPU-stream annotations would count as CPU Exec and ProfilerStep#N ranges
// projected on a GPU stream as extra steps). Python functions are not CpuOp in tb_plugin either.
bool IsHostOpKind(CpuKind k, bool tb_compatible) {
  return k == CpuKind::kCpuOp || k == CpuKind::kUserAnnotation ||
         (tb_compatible && k == CpuKind::kGpuUserAnnotation);
}

// N of "ProfilerStep#N" (digits only), else -1. The reader sets CpuOpTable::step for cpu ops and
// user annotations; tb_plugin-compatible mode also needs it for gpu_user_annotation rows.
int32_t StepOfName(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (!StartsWith(name, kPrefix) || name.size() == kPrefix.size() ||
      name.size() > kPrefix.size() + 9) {
    return -1;
  }
  int32_t v = 0;
  for (char c : name.substr(kPrefix.size())) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

int32_t StepOfRow(const Trace& t, size_t i, bool tb_compatible) {
  if (t.cpu.kind[i] == CpuKind::kGpuUserAnnotation) {
    return tb_compatible ? StepOfName(t.Str(t.cpu.name[i])) : -1;
  }
  return IsHostOpKind(t.cpu.kind[i], tb_compatible) ? t.cpu.step[i] : -1;
}

// Runtime rows that are launches/roles: all of them, or only cuda_runtime when tb-compatible.
bool UseRuntimeRow(const Trace& t, size_t r, bool tb_compatible) {
  return !(tb_compatible && t.runtime.is_driver[r]);
}

struct HostStep {
  int64_t start;
  int64_t end;
  int32_t step;
  StringId name;
  bool pseudo;
};

// The whole-span pseudo-step when there is no ProfilerStep. tb_plugin (StepParser.parse_steps)
// uses the min/max of its OPERATOR/PYTHON events; we take cpu ops and user annotations, and, if a
// trace has none (GPU-only), every GPU and runtime event (tb_plugin would produce a nonsense
// range there).
bool WholeSpan(const Trace& t, int64_t* lo, int64_t* hi) {
  int64_t a = kNoStart, b = kNoEnd;
  WidenToRows(t.cpu, &a, &b, [&](size_t i) { return IsHostOpKind(t.cpu.kind[i], false); });
  if (a > b) {
    WidenToRows(t.gpu, &a, &b);
    WidenToRows(t.runtime, &a, &b);
  }
  if (a > b) return false;
  *lo = a;
  *hi = b;
  return true;
}

// tb_plugin's device nodes: kernels, memcpys and memsets. GPU-side cuda_sync events are not
// mapped by tb_plugin (trace.py EventTypeMap) and are not device work here either.
bool IsDeviceNode(GpuKind k) { return k != GpuKind::kSync; }

struct DeviceSteps {
  std::vector<int64_t> device_end;  // per step: max end of its device events (kNoEnd if none)
  std::vector<uint32_t> matched;    // per step: how many device events it launched
  bool any_matched = false;
  int64_t first_step_start = 0;  // prev_step_end_time for step 0
};

// Port of StepParser._find_device_steps (event_parser.py, within lines 330-443): a two-way merge of
// runtime calls (sorted by start) and host steps; a call lying entirely inside a step's host span
// contributes its device events to that step. Deliberate difference: cuda_driver calls count as
// launches too (tb_plugin ignores the cuda_driver category, so kernels launched by cuLaunchKernel
// never extend a step there).
DeviceSteps FindDeviceSteps(const Trace& t, const std::vector<HostStep>& steps,
                            bool tb_compatible) {
  const size_t n_rt = t.runtime.size();
  // Device events per runtime row (CSR).
  std::vector<uint32_t> offset(n_rt + 1, 0);
  for (size_t g = 0; g < t.gpu.size(); ++g) {
    const int32_t l = t.gpu.launch[g];
    if (l >= 0 && static_cast<size_t>(l) < n_rt && IsDeviceNode(t.gpu.kind[g]) &&
        UseRuntimeRow(t, static_cast<size_t>(l), tb_compatible)) {
      ++offset[l + 1];
    }
  }
  std::partial_sum(offset.begin(), offset.end(), offset.begin());
  std::vector<uint32_t> rows(offset.back());
  {
    std::vector<uint32_t> fill(offset.begin(), offset.end() - 1);
    for (size_t g = 0; g < t.gpu.size(); ++g) {
      const int32_t l = t.gpu.launch[g];
      if (l >= 0 && static_cast<size_t>(l) < n_rt && IsDeviceNode(t.gpu.kind[g]) &&
          UseRuntimeRow(t, static_cast<size_t>(l), tb_compatible)) {
        rows[fill[l]++] = static_cast<uint32_t>(g);
      }
    }
  }
  std::vector<uint32_t> order;
  order.reserve(n_rt);
  for (size_t r = 0; r < n_rt; ++r) {
    if (UseRuntimeRow(t, r, tb_compatible)) order.push_back(static_cast<uint32_t>(r));
  }
  const size_t n_order = order.size();
  // Calls are written in time order per thread: the order is a few ordered runs (SortRuns, the
  // result of a stable sort).
  SortRuns(order.begin(), order.end(),
           [&](uint32_t a, uint32_t b) { return t.runtime.start_ns[a] < t.runtime.start_ns[b]; });

  DeviceSteps out;
  const size_t n_steps = steps.size();
  out.device_end.assign(n_steps, kNoEnd);
  std::vector<int64_t> device_start(n_steps, kNoStart);
  out.matched.assign(n_steps, 0);
  std::vector<uint8_t> matched_gpu(t.gpu.size(), 0);

  size_t i_step = 0, i_rt = 0;
  int64_t dmin = kNoStart, dmax = kNoEnd;
  while (i_step < n_steps && i_rt < n_order) {
    const uint32_t r = order[i_rt];
    const int64_t rs = t.runtime.start_ns[r], re = rs + t.runtime.dur_ns[r];
    if (rs < steps[i_step].start) {
      ++i_rt;  // before this step, or straddling its start
    } else if (re <= steps[i_step].end) {
      for (uint32_t k = offset[r]; k < offset[r + 1]; ++k) {
        const uint32_t g = rows[k];
        dmin = std::min(dmin, t.gpu.start_ns[g]);
        dmax = std::max(dmax, t.gpu.start_ns[g] + t.gpu.dur_ns[g]);
        matched_gpu[g] = 1;
        ++out.matched[i_step];
        out.any_matched = true;
      }
      ++i_rt;
    } else if (rs < steps[i_step].end) {
      ++i_rt;  // straddles the step's end
    } else {
      device_start[i_step] = dmin;
      out.device_end[i_step] = dmax;
      ++i_step;
      dmin = kNoStart;
      dmax = kNoEnd;
    }
  }
  if (i_step < n_steps) {
    device_start[i_step] = dmin;
    out.device_end[i_step] = dmax;
  }

  // Step 0 starts no earlier than the end of device work launched outside every step that ended
  // before step 0's first device event (end of _find_device_steps).
  if (out.any_matched && n_steps > 0) {
    out.first_step_start = steps[0].start;
    if (device_start[0] != kNoStart) {
      for (size_t g = 0; g < t.gpu.size(); ++g) {
        if (matched_gpu[g] || !IsDeviceNode(t.gpu.kind[g])) continue;
        const int64_t end = t.gpu.start_ns[g] + t.gpu.dur_ns[g];
        if (end < device_start[0]) out.first_step_start = std::max(out.first_step_start, end);
      }
    }
  }
  return out;
}

enum Role : size_t {
  kRoleKernel = 0,
  kRoleMemcpy,
  kRoleMemset,
  kRoleCommunication,
  kRoleRuntime,
  kRoleDataLoader,
  kRoleCpuExec,
  kRoleCount  // roles with events; Other is what is left
};

// Event → role (tb_plugin event_parser.py : 293-328), merged per role over the whole trace. Each
// role's set is built as the events come (IntervalUnion): memory is that of the merged sets, not of
// every event's interval.
std::array<std::vector<Interval>, kRoleCount> RoleIntervals(const Trace& t, bool tb_compatible,
                                                            const KernelClasses& kernel_classes) {
  std::array<IntervalUnion, kRoleCount> role;
  // tb_plugin: a kernel is Communication when its External id is that of a CPU op in its NCCL/Gloo
  // name set (StepParser._parse_step; an absent id matches an absent id, as None does there).
  std::unordered_set<int64_t> comm_external_ids;
  if (tb_compatible) {
    for (size_t i = 0; i < t.cpu.size(); ++i) {
      if (IsHostOpKind(t.cpu.kind[i], true) && IsCommunicationOpName(t.Str(t.cpu.name[i]), true)) {
        comm_external_ids.insert(t.cpu.external_id[i]);
      }
    }
  }
  // The GPU and runtime roles have about one merged interval per event: room for each role's
  // count (kernels may go to Communication, so both get the kernels' count).
  {
    std::array<size_t, 4> per_kind{};
    for (const GpuKind k : t.gpu.kind) ++per_kind[static_cast<size_t>(k)];
    role[kRoleKernel].Reserve(per_kind[static_cast<size_t>(GpuKind::kKernel)]);
    role[kRoleMemcpy].Reserve(per_kind[static_cast<size_t>(GpuKind::kMemcpy)]);
    role[kRoleMemset].Reserve(per_kind[static_cast<size_t>(GpuKind::kMemset)]);
    role[kRoleRuntime].Reserve(t.runtime.size());
  }
  const std::vector<KernelClass>& classes = kernel_classes.row;
  for (size_t g = 0; g < t.gpu.size(); ++g) {
    const int64_t start = t.gpu.start_ns[g], end = start + t.gpu.dur_ns[g];
    switch (t.gpu.kind[g]) {
      case GpuKind::kKernel: {
        // Deliberate difference: communication kernels by name/collective args (kernel_class.h),
        // whatever their External id says. Any other kernel is Kernel, as in tb_plugin.
        const bool comm = tb_compatible ? comm_external_ids.count(t.gpu.external_id[g]) != 0
                                        : classes[g] == KernelClass::kCommunication;
        role[comm ? kRoleCommunication : kRoleKernel].Add(start, end);
        break;
      }
      case GpuKind::kMemcpy:
        role[kRoleMemcpy].Add(start, end);
        break;
      case GpuKind::kMemset:
        role[kRoleMemset].Add(start, end);
        break;
      case GpuKind::kSync:
        break;  // not mapped by tb_plugin; GPU-side waits are not work
    }
  }
  // Deliberate difference: cuda_driver calls are Runtime too. tb_plugin leaves the category
  // unmapped, so the CPU time of cuLaunchKernel (Triton, CUDA graphs via the driver) falls to CPU
  // Exec or Other there although it is the same launch overhead as cudaLaunchKernel.
  for (size_t r = 0; r < t.runtime.size(); ++r) {
    if (!UseRuntimeRow(t, r, tb_compatible)) continue;
    role[kRoleRuntime].Add(t.runtime.start_ns[r], t.runtime.start_ns[r] + t.runtime.dur_ns[r]);
  }
  // What a name says, decided once per distinct name (a trace has millions of ops and a few
  // thousand names): bit 1 DataLoader, bit 2 communication op.
  enum : uint8_t { kUnknownName = 0, kNameSeen = 1, kDataLoaderName = 2, kCommName = 4 };
  std::vector<uint8_t> name_role(t.strings.size(), kUnknownName);
  for (size_t i = 0; i < t.cpu.size(); ++i) {
    if (!IsHostOpKind(t.cpu.kind[i], tb_compatible)) continue;
    const int64_t start = t.cpu.start_ns[i], end = start + t.cpu.dur_ns[i];
    const StringId id = t.cpu.name[i];
    uint8_t what = id < name_role.size() ? name_role[id] : uint8_t{kUnknownName};
    if (what == kUnknownName) {
      const std::string_view name = t.Str(id);
      what = kNameSeen | (IsDataLoaderName(name) ? kDataLoaderName : 0) |
             (IsCommunicationOpName(name, tb_compatible) ? kCommName : 0);
      if (id < name_role.size()) name_role[id] = what;
    }
    if (what & kDataLoaderName) {
      role[kRoleDataLoader].Add(start, end);
    } else if (StepOfRow(t, i, tb_compatible) >= 0) {
      // ProfilerStep#N itself is the step, not an op (tb_plugin: EventTypes.PROFILER_STEP).
    } else if (what & kCommName) {
      role[kRoleCommunication].Add(start, end);
    } else {
      role[kRoleCpuExec].Add(start, end);  // every other op and user annotation
    }
  }
  std::array<std::vector<Interval>, kRoleCount> out;
  for (size_t r = 0; r < kRoleCount; ++r) out[r] = role[r].Take();
  return out;
}

void Mean(const std::vector<StepBreakdown>& steps, const std::vector<size_t>& idx,
          StepCategoryArray* mean, int64_t* mean_step) {
  mean->fill(0);
  *mean_step = 0;
  if (idx.empty()) return;
  StepCategoryArray sum{};
  int64_t total = 0;
  for (size_t i : idx) {
    for (size_t c = 0; c < kStepCategoryCount; ++c) sum[c] += steps[i].category_ns[c];
    total += steps[i].duration_ns;
  }
  const int64_t n = static_cast<int64_t>(idx.size());
  for (size_t c = 0; c < kStepCategoryCount; ++c) (*mean)[c] = sum[c] / n;
  *mean_step = total / n;
}

}  // namespace

StepsResult AnalyzeSteps(const Trace& t, const StepOptions& options) {
  // tb_plugin's mapping classifies no kernel: no classes to build.
  return AnalyzeSteps(t, options.tb_plugin_compatible ? KernelClasses() : BuildKernelClasses(t),
                      options);
}

StepsResult AnalyzeSteps(const Trace& t, const KernelClasses& classes, const StepOptions& options) {
  StepsResult out;

  // 1. Host steps, in start order (tb_plugin sorts events by ts; ties keep file order).
  std::vector<HostStep> steps;
  const bool compat = options.tb_plugin_compatible;
  for (size_t i = 0; i < t.cpu.size(); ++i) {
    const int32_t step = StepOfRow(t, i, compat);
    if (step < 0) continue;
    steps.push_back(
        {t.cpu.start_ns[i], t.cpu.start_ns[i] + t.cpu.dur_ns[i], step, t.cpu.name[i], false});
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const HostStep& a, const HostStep& b) { return a.start < b.start; });
  // Overlapping ProfilerStep ranges (identical duplicates were removed at import): the profiler
  // writes one range per step, back to back on one thread, so an overlap means two recordings or
  // threads were mixed. Step times and their means are then unreliable; count them so the report
  // says so instead of averaging silently.
  int64_t host_end = kNoEnd;
  size_t host_end_index = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i > 0 && steps[i].start < host_end) {
      if (out.overlapping_steps == 0)
        out.first_overlap = {steps[host_end_index].step, steps[i].step};
      ++out.overlapping_steps;
    }
    if (steps[i].end > host_end) host_end = steps[i].end, host_end_index = i;
  }
  std::vector<uint8_t> opens_window(steps.size(), 0);
  {
    std::set<int32_t> seen;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (i == 0 || steps[i].step <= steps[i - 1].step) {
        opens_window[i] = 1;
        if (++out.windows == 2) {
          out.first_window_gap_ns = steps[i].start - steps[i - 1].end;
          out.first_window.second = steps[i - 1].step;
        }
        if (i == 0) out.first_window.first = steps[0].step;
      }
      if (!seen.insert(steps[i].step).second) ++out.repeated_step_numbers;
    }
  }
  if (steps.empty()) {
    out.whole_span_fallback = true;
    int64_t lo = 0, hi = 0;
    if (!WholeSpan(t, &lo, &hi)) return out;  // an empty trace
    steps.push_back({lo, hi, -1, kEmptyString, true});
  }
  const size_t n = steps.size();

  // 2. Device work per step; move/extend the steps (StepParser._update_steps_duration).
  const DeviceSteps dev = FindDeviceSteps(t, steps, compat);
  out.device_steps = dev.any_matched;
  out.steps.resize(n);
  int64_t prev_end = dev.first_step_start;
  for (size_t i = 0; i < n; ++i) {
    StepBreakdown& s = out.steps[i];
    s.step = steps[i].step;
    s.name = steps[i].pseudo ? std::string("whole trace") : std::string(t.Str(steps[i].name));
    s.host_start_ns = steps[i].start;
    s.host_end_ns = steps[i].end;
    s.device_events = dev.matched[i];
    int64_t start = steps[i].start, end = steps[i].end;
    if (dev.any_matched) {
      start = std::max(prev_end, steps[i].start);
      // A step without device work (or whose device work ended before its new start) ends no
      // earlier than it starts.
      end = std::max(dev.device_end[i] == kNoEnd ? end : std::max(end, dev.device_end[i]), start);
      prev_end = end;
    }
    s.start_ns = start;
    s.end_ns = end;
    s.duration_ns = std::max<int64_t>(0, end - start);
    if (i >= opens_window.size() || opens_window[i] || out.window_spans.empty())
      out.window_spans.push_back({start, end});
    else
      out.window_spans.back().second = std::max(out.window_spans.back().second, end);
  }

  // 3. Incomplete trailing steps (_update_steps_duration; the 0.8 rule is
  //    event_parser.py : 434): only when steps follow the GPU.
  if (dev.any_matched && n > 1) {
    size_t last = n;  // last step with device work
    for (size_t i = n; i-- > 0;) {
      if (dev.matched[i] > 0) {
        last = i;
        break;
      }
    }
    if (last < n) {
      size_t keep = last + 1;
      if (last > 0 &&
          static_cast<double>(dev.matched[last - 1]) * options.last_step_min_device_ratio >
              static_cast<double>(dev.matched[last])) {
        keep = last;
      }
      for (size_t i = keep; i < n; ++i) out.steps[i].incomplete = true;
    }
  }

  // 4. Exclusive assignment (overall_parser.py : 42-58): free time = the union of the steps; each
  //    role in priority order takes (its merged intervals ∩ free) and removes it from free. One
  //    sweep does it (ExclusiveCoverage; the step-by-step subtraction is its test oracle).
  {
    const auto role = RoleIntervals(t, compat, classes);
    std::vector<Interval> windows;
    windows.reserve(n);
    for (const StepBreakdown& s : out.steps) windows.push_back({s.start_ns, s.end_ns});
    const std::vector<int64_t> share = ExclusiveCoverage(windows, role);
    for (size_t i = 0; i < n; ++i) {
      for (size_t r = 0; r < kRoleCount; ++r)
        out.steps[i].category_ns[r] = share[i * kRoleCount + r];
    }
  }
  // Other: what no role covers. The roles' shares partition the time of the step they cover, so
  // this is the step's time in no role and the parts sum exactly to the step.
  for (StepBreakdown& s : out.steps) {
    int64_t used = 0;
    for (size_t r = 0; r < kRoleCount; ++r) used += s.category_ns[r];
    s.category_ns[static_cast<size_t>(StepCategory::kOther)] = s.duration_ns - used;
  }

  // 5. Means.
  std::vector<size_t> complete, steady;
  for (size_t i = 0; i < n; ++i) {
    if (!(options.skip_trailing_incomplete && out.steps[i].incomplete)) complete.push_back(i);
  }
  const size_t skip = static_cast<size_t>(std::max(0, options.warmup_steps_to_skip));
  if (complete.size() > skip) {
    steady.assign(complete.begin() + static_cast<ptrdiff_t>(skip), complete.end());
  }
  if (steady.empty()) steady = complete;
  if (steady.empty()) {
    // Every step incomplete: cannot happen (the last step with device work, or the one before
    // it, is kept), but stay total.
    steady.resize(n);
    std::iota(steady.begin(), steady.end(), size_t{0});
  }
  for (size_t i : steady) out.steps[i].steady_state = true;
  out.steady_count = steady.size();
  Mean(out.steps, steady, &out.mean_steady_ns, &out.mean_steady_step_ns);
  out.complete_count = complete.size();
  Mean(out.steps, complete, &out.mean_complete_ns, &out.mean_complete_step_ns);
  return out;
}

}  // namespace gpuscope::analyze
