// Every analysis of a rank, run once, in dependency order, as tasks on the program's thread pool.
//
// Order (an arrow: needs the result of):
//   kernel classes ← GPU time, steps, kernels;   steps ← occupancy, op costs, step graph,
//   host work, step timeline;
//   steps, sync points ← idle gaps
//   GPU selection (HTA's rows, sorted) ← GPU time, launches, copies
//   steps, GPU time ← the rank's facts (ExtractRankFacts, for the job level and summary files)
//   summary, sync points, memory, the monitor beside the trace: independent.
// The kernel classes (BuildKernelClasses) and the GPU selection (SelectGpuEvents) are computed once
// per rank and shared by every analysis that uses them. Each analysis is a pure function of its
// inputs, so the results do not depend on the thread count or on which task ran first.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "analyze/copies.h"
#include "analyze/gpu_time.h"
#include "analyze/host_work.h"
#include "analyze/idle_gaps.h"
#include "analyze/kernel_class.h"
#include "analyze/kernels.h"
#include "analyze/launches.h"
#include "analyze/memory.h"
#include "analyze/monitor_beside.h"
#include "analyze/occupancy.h"
#include "analyze/op_costs.h"
#include "analyze/op_shapes.h"
#include "analyze/step_graph.h"
#include "analyze/step_timeline.h"
#include "analyze/steps.h"
#include "analyze/sync_points.h"
#include "analyze/trace_summary.h"
#include "base/thread_pool.h"
#include "gpuscope/model.h"
#include "model/rank_facts.h"

namespace gpuscope::analyze {

struct RunOptions {
  // The report keeps only the launch summaries, not one row per launch.
  LaunchOptions launches = [] {
    LaunchOptions o;
    o.keep_rows = false;
    return o;
  }();
  // A monitor recording of the same run: when set, each rank gets RankResults::monitor.
  const monitor::Recording* monitor = nullptr;
  // The op cost model's GPU (--gpu): empty prices against the trace's device.
  OpCostOptions op_costs;
};

// The analyses RunAll schedules, for their CPU times (`--stats`, bench/).
enum class AnalysisId : uint8_t {
  kKernelClasses,
  kGpuSelection,
  kSteps,
  kOccupancy,
  kGpuTime,
  kKernels,
  kSyncPoints,
  kIdleGaps,
  kLaunches,
  kCopies,
  kMemory,
  kSummary,
  kMonitor,
  kRankFacts,
  kOpShapes,
  kOpCosts,
  kStepGraph,
  kHostWork,
  kStepTimeline,
  kCount
};
inline constexpr size_t kAnalysisCount = static_cast<size_t>(AnalysisId::kCount);
// "kernel_classes", "steps", … (snake case, as --stats prints them).
const char* AnalysisName(AnalysisId id);
// Thread CPU seconds of each analysis (each slot written by the one task that runs it).
using AnalysisSeconds = std::array<double, kAnalysisCount>;

// All analysis results of one rank.
struct RankResults {
  // The rank's model, for names the analyses refer to by StringId. Not owned: the trace must
  // outlive the results (and any report built from them).
  const Trace* trace = nullptr;
  KernelClasses kernel_classes;  // shared input of GPU time, steps, kernels, occupancy
  TraceSummary summary;          // what the reader found
  GpuTime gpu_time;              // busy/idle, breakdowns, idle attribution, overlap
  StepsResult steps;             // per-step breakdown (tb_plugin categories)
  KernelsResult kernels;         // top kernels per class, precision mix
  LaunchStats launches;          // launch delay, short kernels, CUDA graphs
  CopyStats copies;              // direction, pageable/pinned, bandwidth, sync
  SyncStats sync;                // host-blocking synchronisation and its causes
  MemoryStats memory;            // peak allocated/reserved vs device memory, timeline
  OccupancyStats occupancy;      // SM efficiency, achieved occupancy, tiny grids (≥ steps)
  OpShapes op_shapes;            // ops per input shape (record_shapes traces)
  OpCosts op_costs;              // every op priced: FLOPs, bytes, roofline, MFU (≥ steps)
  IdleGapStats idle_gaps;        // GPU idle gaps and what the host did (≥ steps, sync)
  HostWork host_work;            // allocator calls, JIT compiles, unrecorded host time (≥ steps)
  // The steady steps as a dependency graph (≥ steps), what the what-ifs replay, and its
  // critical path.
  StepGraph step_graph;
  CriticalPath critical_path;
  StepTimeline step_timeline;  // one steady step in time, per thread and stream (≥ steps)
  std::optional<MonitorBeside> monitor;  // with RunOptions::monitor
  // ExtractRankFacts(*this) (analyze/job.h), made by RunAll as soon as the steps and GPU time are
  // done, beside the other analyses rather than after them; empty where the results were not made
  // by RunAll.
  std::optional<model::RankFacts> facts;
  AnalysisSeconds cpu_seconds{};  // what each analysis cost (not part of any report)
};

// Every analysis of one rank; returns when all are done. The calling thread runs tasks too.
RankResults RunAll(const Trace& trace, const RunOptions& options, ThreadPool& pool);

struct JobResults {
  // In the order of the traces. What happens across ranks is the job level (analyze/job.h), which
  // reads each rank's facts (ExtractRankFacts), not these results.
  std::vector<RankResults> ranks;
};

// Every analysis of every rank (all ranks' tasks on the pool at once, so one big rank also uses
// every core).
JobResults RunAllRanks(const std::vector<Trace>& traces, const RunOptions& options,
                       ThreadPool& pool);

}  // namespace gpuscope::analyze
