// Per-step time breakdown: where each ProfilerStep's wall time goes, in the PyTorch-profiler
// TensorBoard plugin's (tb_plugin) eight exclusive categories. A pure function of the model.
//
// Definitions (shared/docs/metrics-reference.md §3.1; kineto @ 041e7ce9 :
// tb_plugin/torch_tb_profiler/profiler/event_parser.py and overall_parser.py):
//  * Steps are the ProfilerStep#N CPU events (CpuOpTable::step >= 0; kCpuOp or kUserAnnotation),
//    in start order. A step's device work = the kernels / memcpys / memsets launched by runtime
//    calls lying entirely inside the step's CPU span. Then, if any step has device work, every
//    step's start moves to the end of the previous step (start = max(prev end, host start)) and
//    its end extends to its last device event (end = max(host end, last device end)); the first
//    step's start moves past device work launched outside every step that ended before the
//    step's first device event.
//  * Trailing steps with no device work, and a last step with fewer than 0.8× the device events
//    of the step before it, are "incomplete" (tb_plugin drops them: the profiler probably stopped
//    before their kernels were captured).
//  * Each event has a role; roles in priority order: kernel > memcpy > memset > communication >
//    runtime > dataloader > cpu_exec; each instant of a step goes to the highest-priority role
//    active then, and to "other" when none is. So the eight parts sum exactly to the step.
//  * Without any ProfilerStep, one pseudo-step covers the trace (whole_span_fallback).
//
// Deliberate differences from tb_plugin (details at the definitions in steps.cc):
//  1. Communication kernels are found by ClassifyGpuActivity (kernel names, collective args), not
//     by External-id links to nccl:* CPU ops, which fail on traces whose External id equals the
//     correlation (metrics-reference §1.5).
//  2. CPU communication ops: any kCpuOp / user annotation named "nccl:*" or "gloo:*" (tb_plugin
//     lists ten names and misses nccl:all_to_all, nccl:_allgather_base, nccl:send, ...).
//  3. cuda_driver calls (cuLaunchKernel from Triton, ...) are Runtime and count as launches for
//     step matching; tb_plugin ignores the cuda_driver category.
//  4. gpu_user_annotation ranges (annotations projected onto GPU streams) are not CPU Exec and
//     never steps; tb_plugin maps that category to user_annotation.
//  5. The steady-state mean skips warm-up steps; tb_plugin averages all kept steps (we give that
//     mean too: mean_complete_ns). Incomplete steps are reported (flagged), not removed.
//  6. The whole-span pseudo-step spans cpu ops and user annotations (tb_plugin: cpu ops only), or
//     every event when there is no CPU op (tb_plugin breaks there).
// Not a difference: GPU-side cuda_sync events are ignored (no role, not device work), as in
// tb_plugin, whose category map does not know them.
// On the eight traces with a tb_plugin reference, tb_plugin_compatible reproduces its averages to
// the µs; the default mode differs only through 1-4 (tests/steps_test.cc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyze/kernel_class.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

// tb_plugin's ProfileRole order, which is also the priority order of the exclusive assignment.
enum class StepCategory : uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kCommunication,
  kRuntime,
  kDataLoader,
  kCpuExec,
  kOther,
  kCount
};
inline constexpr size_t kStepCategoryCount = static_cast<size_t>(StepCategory::kCount);

// "kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other".
const char* StepCategoryName(StepCategory c);

using StepCategoryArray = std::array<int64_t, kStepCategoryCount>;

struct StepBreakdown {
  int32_t step = -1;  // N of ProfilerStep#N; -1 for the whole-span pseudo-step
  std::string name;   // "ProfilerStep#N", or "whole trace"
  // The step as analysed: CPU span moved/extended by device work (see above).
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t duration_ns = 0;  // end_ns - start_ns == sum of category_ns
  StepCategoryArray category_ns{};
  bool steady_state = false;  // counted in StepsResult::mean_steady_ns
  // tb_plugin would drop it: a trailing step without device work, or a last step with fewer than
  // last_step_min_device_ratio × the previous step's device events.
  bool incomplete = false;
  int64_t host_start_ns = 0;  // the ProfilerStep event itself
  int64_t host_end_ns = 0;
  uint32_t device_events = 0;  // GPU kernels/memcpys/memsets launched inside the host span

  int64_t category(StepCategory c) const { return category_ns[static_cast<size_t>(c)]; }
};

struct StepOptions {
  // Steps left out of the steady-state mean at the start. Default 1: the first recorded step
  // carries one-time costs (cuDNN autotuning, allocator growth, lazy module init) and its start is
  // not moved to a previous step's device work, so it includes the CPU's lead before the first
  // kernel. (With torch.profiler's schedule the profiler's own warm-up steps are not recorded, but
  // the first *recorded* step still has the second problem.) tb_plugin skips none.
  int warmup_steps_to_skip = 1;
  // Leave incomplete steps (see StepBreakdown::incomplete) out of both means, as tb_plugin drops
  // them. false counts them like any other step.
  bool skip_trailing_incomplete = true;
  // tb_plugin (event_parser.py : 434): the last step is incomplete when its device-event count is
  // below this ratio × the previous step's.
  double last_step_min_device_ratio = 0.8;
  // Reproduce tb_plugin's event → role mapping exactly, undoing deliberate differences 1-4 above
  // (for cross-checks against its output; tests/steps_test.cc checks it to the µs). Differences
  // that remain: the whole-span pseudo-step's range and the steady-state mean (mean_complete_ns is
  // tb_plugin's average either way).
  bool tb_plugin_compatible = false;
};

struct StepsResult {
  std::vector<StepBreakdown> steps;  // every detected step, in time order (incomplete ones too)
  // Means over the steady steps (integer ns, truncated; so the parts may sum to a few ns less
  // than mean_steady_step_ns). Steady = not incomplete (if skip_trailing_incomplete) and not among
  // the first warmup_steps_to_skip steps; when that leaves none, every complete step (or, if none,
  // every step).
  StepCategoryArray mean_steady_ns{};
  int64_t mean_steady_step_ns = 0;
  size_t steady_count = 0;
  // tb_plugin's "avg step breakdown": means over every complete step, warm-up included.
  StepCategoryArray mean_complete_ns{};
  int64_t mean_complete_step_ns = 0;
  size_t complete_count = 0;  // tb_plugin's "steps=" (when skip_trailing_incomplete)
  // True when the trace has no ProfilerStep: steps holds one pseudo-step over the CPU span
  // (cpu ops and user annotations; all events if there are none), extended by its device work.
  bool whole_span_fallback = false;
  bool device_steps = false;  // some step launched device work (step times follow the GPU)
  // ProfilerStep ranges (CPU spans, in start order) that start before an earlier one has ended.
  // Identical duplicate events are removed when the trace is read, so these differ in time or
  // thread. Nonzero means the step times above are unreliable (the report warns).
  size_t overlapping_steps = 0;
  // Profiling windows: the profiler numbers steps upward, so a range numbered no higher than the
  // one before it starts a new window (a schedule that repeats, two recordings merged).
  size_t windows = 0;
  size_t repeated_step_numbers = 0;  // ranges whose number an earlier range had
  int64_t first_window_gap_ns = 0;   // from the first window's last range to the second's first
  std::pair<int32_t, int32_t> first_window{-1, -1};  // its first and last step numbers
  // Each window's span, first step's start to last step's end (one for most traces; the
  // whole-span pseudo-step is one too). Idle time between windows belongs to no step.
  std::vector<std::pair<int64_t, int64_t>> window_spans;
  std::pair<int32_t, int32_t> first_overlap{-1, -1};  // (earlier step N, overlapping step N)
};

// `classes`: BuildKernelClasses(trace) (communication kernels by gpuscope's classes; unused with
// tb_plugin_compatible).
StepsResult AnalyzeSteps(const Trace& trace, const KernelClasses& classes,
                         const StepOptions& options = {});
// The same, classifying the trace's kernels itself (one-off callers and tests).
StepsResult AnalyzeSteps(const Trace& trace, const StepOptions& options = {});

}  // namespace gpuscope::analyze
