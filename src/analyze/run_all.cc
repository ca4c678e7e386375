#include "analyze/run_all.h"

#include <time.h>

#include <atomic>
#include <memory>

#include "analyze/job.h"

namespace gpuscope::analyze {

const char* AnalysisName(AnalysisId id) {
  static constexpr const char* kNames[] = {
      "kernel_classes", "gpu_selection", "steps",     "occupancy",    "gpu_time",
      "kernels",        "sync_points",   "idle_gaps", "launches",     "copies",
      "memory",         "summary",       "monitor",   "rank_facts",   "op_shapes",
      "op_costs",       "step_graph",    "host_work", "step_timeline"};
  static_assert(std::size(kNames) == kAnalysisCount);
  return kNames[static_cast<size_t>(id)];
}

namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs `f` and adds the thread CPU time it took to the rank's slot `id`.
template <typename F>
void Timed(RankResults& r, AnalysisId id, F&& f) {
  const double t0 = ThreadCpuSeconds();
  f();
  r.cpu_seconds[static_cast<size_t>(id)] += ThreadCpuSeconds() - t0;
}

// One rank's analyses as tasks on `group`. A task that completes an input of a later analysis
// submits it, so each analysis starts as soon as its inputs exist and no thread waits in between.
class RankSchedule : public std::enable_shared_from_this<RankSchedule> {
 public:
  RankSchedule(const Trace& trace, const RunOptions& options, RankResults* out, TaskGroup* group)
      : t_(trace), o_(options), r_(*out), g_(*group) {}

  void Start() {
    r_.trace = &t_;
    // The classes first: three analyses wait for them. The GPU selection is made after them
    // (GPU time needs both; launches and copies read the selection).
    // A nested task's parameter is the same schedule; s2, s3 only because -Wshadow asks.
    Run([](RankSchedule& s) {
      Timed(s.r_, AnalysisId::kKernelClasses,
            [&] { s.r_.kernel_classes = BuildKernelClasses(s.t_); });
      s.Run([](RankSchedule& s2) {
        Timed(s2.r_, AnalysisId::kSteps,
              [&] { s2.r_.steps = AnalyzeSteps(s2.t_, s2.r_.kernel_classes); });
        s2.Run([](RankSchedule& s3) {
          Timed(s3.r_, AnalysisId::kOccupancy, [&] {
            s3.r_.occupancy = AnalyzeOccupancy(s3.t_, s3.r_.kernel_classes, s3.r_.steps);
          });
        });
        s2.Run([](RankSchedule& s3) {
          Timed(s3.r_, AnalysisId::kOpCosts, [&] {
            s3.r_.op_costs =
                AnalyzeOpCosts(s3.t_, s3.r_.kernel_classes, s3.r_.steps, s3.o_.op_costs);
          });
        });
        s2.Run([](RankSchedule& s3) {
          Timed(s3.r_, AnalysisId::kStepGraph, [&] {
            s3.r_.step_graph = BuildStepGraph(s3.t_, s3.r_.kernel_classes, s3.r_.steps);
            s3.r_.critical_path = FindCriticalPath(s3.r_.step_graph, Replay(s3.r_.step_graph));
          });
        });
        s2.Run([](RankSchedule& s3) {
          Timed(s3.r_, AnalysisId::kHostWork,
                [&] { s3.r_.host_work = AnalyzeHostWork(s3.t_, s3.r_.steps); });
        });
        s2.Run([](RankSchedule& s3) {
          Timed(s3.r_, AnalysisId::kStepTimeline, [&] {
            s3.r_.step_timeline = BuildStepTimeline(s3.t_, s3.r_.kernel_classes, s3.r_.steps);
          });
        });
        s2.IdleGapInputDone();
        s2.FactsInputDone();
      });
      s.Run([](RankSchedule& s2) {
        Timed(s2.r_, AnalysisId::kGpuSelection, [&] { s2.selection_ = SelectGpuEvents(s2.t_); });
        s2.Run([](RankSchedule& s3) {
          Timed(s3.r_, AnalysisId::kGpuTime, [&] {
            s3.r_.gpu_time = AnalyzeGpuTimeOf(s3.t_, s3.r_.kernel_classes, s3.selection_);
          });
          s3.FactsInputDone();
          s3.SelectionReaderDone();
        });
        s2.Run([](RankSchedule& s3) {
          Timed(s3.r_, AnalysisId::kLaunches, [&] {
            LaunchOptions o = s3.o_.launches;
            if (o.selection == SelectionOptions{}) o.made_selection = &s3.selection_;
            s3.r_.launches = AnalyzeLaunches(s3.t_, o);
          });
          s3.SelectionReaderDone();
        });
        s2.Run([](RankSchedule& s3) {
          Timed(s3.r_, AnalysisId::kCopies, [&] {
            CopyOptions o;
            o.made_selection = &s3.selection_;
            s3.r_.copies = AnalyzeCopies(s3.t_, o);
          });
          s3.SelectionReaderDone();
        });
      });
      s.Run([](RankSchedule& s2) {
        Timed(s2.r_, AnalysisId::kKernels,
              [&] { s2.r_.kernels = AnalyzeKernels(s2.t_, s2.r_.kernel_classes); });
      });
    });
    Run([](RankSchedule& s) {
      Timed(s.r_, AnalysisId::kSyncPoints, [&] { s.r_.sync = AnalyzeSyncPoints(s.t_); });
      s.IdleGapInputDone();
    });
    Run([](RankSchedule& s) {
      Timed(s.r_, AnalysisId::kMemory, [&] { s.r_.memory = AnalyzeMemory(s.t_); });
    });
    Run([](RankSchedule& s) {
      Timed(s.r_, AnalysisId::kSummary, [&] { s.r_.summary = SummarizeTrace(s.t_); });
    });
    Run([](RankSchedule& s) {
      Timed(s.r_, AnalysisId::kOpShapes, [&] { s.r_.op_shapes = AnalyzeOpShapes(s.t_); });
    });
    if (o_.monitor != nullptr) {
      Run([](RankSchedule& s) {
        Timed(s.r_, AnalysisId::kMonitor,
              [&] { s.r_.monitor = AnalyzeMonitorBeside(s.t_, *s.o_.monitor); });
      });
    }
  }

 private:
  template <typename F>
  void Run(F f) {
    g_.Run([self = shared_from_this(), f] { f(*self); });
  }
  // Idle gaps need both the steps and the sync points: whichever finishes second submits it.
  void IdleGapInputDone() {
    if (idle_gap_inputs_.fetch_sub(1) != 1) return;
    Run([](RankSchedule& s) {
      Timed(s.r_, AnalysisId::kIdleGaps,
            [&] { s.r_.idle_gaps = AnalyzeIdleGaps(s.t_, s.r_.steps, s.r_.sync); });
    });
  }

  // The rank's facts need the steps and GPU time (its exclusive breakdown; not the selection):
  // whichever finishes second submits them. They read those two results and the kernel classes
  // while other tasks write other members of the results.
  void FactsInputDone() {
    if (facts_inputs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    Run([](RankSchedule& s) {
      Timed(s.r_, AnalysisId::kRankFacts, [&] { s.r_.facts = ExtractRankFacts(s.r_); });
    });
  }
  // GPU time, launches and copies read the selection: the last of them to finish moves it into
  // the GPU time result (which keeps the selection its numbers came from), so it is never copied.
  // The atomic's acquire-release orders GPU time's write of r_.gpu_time before the move.
  void SelectionReaderDone() {
    if (selection_readers_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    r_.gpu_time.selection = std::move(selection_);
  }

  const Trace& t_;
  const RunOptions& o_;
  RankResults& r_;
  TaskGroup& g_;
  std::atomic<int> idle_gap_inputs_{2};
  std::atomic<int> selection_readers_{3};
  std::atomic<int> facts_inputs_{2};
  // SelectGpuEvents(trace) with the default options, for GPU time, launches and copies; written
  // by one task before the tasks that read it are submitted.
  GpuSelection selection_;
};

}  // namespace

RankResults RunAll(const Trace& trace, const RunOptions& options, ThreadPool& pool) {
  RankResults out;
  TaskGroup group(pool);
  std::make_shared<RankSchedule>(trace, options, &out, &group)->Start();
  group.Wait();
  return out;
}

JobResults RunAllRanks(const std::vector<Trace>& traces, const RunOptions& options,
                       ThreadPool& pool) {
  JobResults out;
  out.ranks.resize(traces.size());
  {
    TaskGroup group(pool);
    for (size_t i = 0; i < traces.size(); ++i)
      std::make_shared<RankSchedule>(traces[i], options, &out.ranks[i], &group)->Start();
    group.Wait();
  }
  return out;
}

}  // namespace gpuscope::analyze
