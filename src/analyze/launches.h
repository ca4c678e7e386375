// Kernel launch statistics: how long the CPU spends issuing GPU work, and how long that work waits
// before it starts (HTA's get_cuda_kernel_launch_stats, widened to every launch API).
//
// Definitions (all times in ns; "call" = the runtime/driver call linked to a GPU activity through
// GpuActivityTable::launch, i.e. by correlation id):
//  * a launch row is one kernel, memcpy or memset whose launching call is a kernel launch
//    (cudaLaunchKernel(ExC), cuLaunchKernel(Ex), hipLaunchKernel, hipExtModuleLaunchKernel, ...),
//    a memcpy call or a memset call. GPU activities under a cudaGraphLaunch are not launch rows
//    (one call covers many activities, so per-activity CPU cost and delay are meaningless); they
//    are counted in LaunchStats::graphs. cuda_sync activities are never launch rows.
//  * cpu_duration = the call's duration; gpu_duration = the activity's duration.
//  * launch_delay = activity start − call END (HTA: gpu.ts − (cpu.ts + cpu.dur)). The raw value may
//    be negative (a kernel can start before its launch call returns); summaries use it clipped at 0
//    as HTA does. launch_latency = activity start − call START (never clipped) is kept as well.
//  * short kernel (HTA): cpu_duration ≤ kRuntimeCutoffNs and gpu_duration < cpu_duration — the GPU
//    work is cheaper than launching it.
//  * runtime outlier: cpu_duration > kRuntimeCutoffNs; launch-delay outlier: clipped launch_delay >
//    kLaunchDelayCutoffNs.
//  * medians and p95 use linear interpolation between order statistics (pandas / numpy default).
//  * HTA's subset: rows whose call is named exactly cudaLaunchKernel, cudaLaunchKernelExC,
//    cudaMemcpyAsync or cudaMemsetAsync (HTA's include_memory_events=True). LaunchStats::hta
//    summarises that subset so it can be compared with HTA; LaunchStats::all summarises every row.
//  * CUDA-graph replays: a call of RuntimeKind::kGraphLaunch; graphs.gpu_activities counts the
//    kernels/memcpys/memsets linked to such calls.
//
// Event selection: by default the GPU activities of SelectGpuEvents (HTA's step filter drops the
// last ProfilerStep, and float-µs traces are rounded to whole µs the way HTA does; the launch call
// is then rounded too: start up, end down). With hta_selection = false every GPU activity of the
// trace is used with exact ns. API counts (LaunchStats::apis) and graph statistics always cover
// the whole trace.
//
// Agreement with HTA: identical rows and summaries on integer-µs traces. On float-µs traces with
// epoch timestamps (ns_resolution_*), HTA rounds the float64 it parsed, which resolves only 0.25 µs
// at 1.7e15 µs, while we round the exact ns: single rows differ by ≤ 2 µs and the short-kernel and
// runtime-outlier counts by < 0.3 %.
#pragma once

#include <cstdint>
#include <vector>

#include "analyze/gpu_time.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

// HTA's runtime_cutoff default: 50 µs of CPU time per launch call.
inline constexpr int64_t kRuntimeCutoffNs = 50'000;
// HTA's launch_delay_cutoff default: 100 µs from the end of the launch call to the GPU start.
inline constexpr int64_t kLaunchDelayCutoffNs = 100'000;

struct LaunchOptions {
  // true: SelectGpuEvents(trace, selection) (HTA's rows and µs rounding). false: every GPU
  // activity, exact ns.
  bool hta_selection = true;
  SelectionOptions selection;
  // SelectGpuEvents(trace, selection) made once for the rank (RunAll), or null to make it here.
  const GpuSelection* made_selection = nullptr;
  int64_t runtime_cutoff_ns = kRuntimeCutoffNs;
  int64_t launch_delay_cutoff_ns = kLaunchDelayCutoffNs;
  bool keep_rows = true;  // false leaves LaunchStats::rows empty (summaries only)
};

struct LaunchRow {
  uint32_t gpu_row = 0;     // index into Trace::gpu
  int32_t runtime_row = 0;  // index into Trace::runtime
  int64_t cpu_duration_ns = 0;
  int64_t gpu_duration_ns = 0;
  int64_t launch_delay_ns = 0;    // raw: GPU start − call end (may be negative)
  int64_t launch_latency_ns = 0;  // GPU start − call start
  bool hta_api = false;           // call is one of HTA's four names
};

struct LaunchSummary {
  uint64_t n = 0;
  uint64_t short_kernels = 0;
  uint64_t runtime_outliers = 0;
  uint64_t launch_delay_outliers = 0;
  uint64_t negative_launch_delays = 0;  // raw delay < 0 (clipped to 0 in the statistics below)
  double median_cpu_duration_ns = 0;
  double median_gpu_duration_ns = 0;
  double median_launch_delay_ns = 0;  // clipped at 0
  double p95_launch_delay_ns = 0;     // clipped at 0
  // Launch call start → GPU start, of the launches whose kernel starts after its call does; one
  // that starts before (clocks, or a wrong link) is impossible: counted, left out of the median.
  double median_launch_latency_ns = 0;
  uint64_t started_before_launch = 0;
  int64_t total_cpu_duration_ns = 0;
};

// One launch API as seen in the whole trace.
struct LaunchApiCount {
  StringId name = kEmptyString;
  RuntimeKind kind = RuntimeKind::kKernelLaunch;
  bool is_driver = false;
  uint64_t calls = 0;
  uint64_t calls_with_gpu_activity = 0;
  uint64_t gpu_activities = 0;  // kernels + memcpys + memsets linked to these calls
  int64_t total_cpu_duration_ns = 0;
};

struct GraphLaunchStats {
  uint64_t graph_launches = 0;           // calls of RuntimeKind::kGraphLaunch
  uint64_t graph_launches_replayed = 0;  // ... with at least one linked GPU activity
  uint64_t gpu_activities = 0;           // kernels + memcpys + memsets under them
  uint64_t kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t max_activities_per_launch = 0;
  int64_t total_cpu_duration_ns = 0;  // of the graph launch calls
  int64_t total_gpu_duration_ns = 0;  // sum of the activities' durations
};

struct LaunchStats {
  std::vector<LaunchRow> rows;       // in selection order (GPU start); empty if !keep_rows
  LaunchSummary all;                 // every launch row
  LaunchSummary hta;                 // rows with hta_api (HTA's launch stats)
  std::vector<LaunchApiCount> apis;  // kernel-launch and graph-launch APIs, by calls (desc)
  GraphLaunchStats graphs;
  uint64_t gpu_activities_without_launch = 0;  // kernels/memcpys/memsets in the selection, unlinked
  bool step_filtered = false;
  bool rounded = false;
};

LaunchStats AnalyzeLaunches(const Trace& trace, const LaunchOptions& options = {});

}  // namespace gpuscope::analyze
