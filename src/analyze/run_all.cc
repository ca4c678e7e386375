#include "analyze/run_all.h"

#include <atomic>
#include <memory>

namespace gpuscope::analyze {

namespace {

// One rank's analyses as tasks on `group`. A task that completes an input of a later analysis
// submits it, so each analysis starts as soon as its inputs exist and no thread waits in between.
class RankSchedule : public std::enable_shared_from_this<RankSchedule> {
 public:
  RankSchedule(const Trace& trace, const RunOptions& options, RankResults* out, TaskGroup* group)
      : t_(trace), o_(options), r_(*out), g_(*group) {}

  void Start() {
    r_.trace = &t_;
    // The classes first: three analyses wait for them.
    // A nested task's parameter is the same schedule; s2, s3 only because -Wshadow asks.
    Run([](RankSchedule& s) {
      s.r_.kernel_classes = BuildKernelClasses(s.t_);
      s.Run([](RankSchedule& s2) {
        s2.r_.steps = AnalyzeSteps(s2.t_, s2.r_.kernel_classes);
        s2.Run([](RankSchedule& s3) {
          s3.r_.occupancy = AnalyzeOccupancy(s3.t_, s3.r_.kernel_classes, s3.r_.steps);
        });
        s2.IdleGapInputDone();
      });
      s.Run([](RankSchedule& s2) { s2.r_.gpu_time = AnalyzeGpuTime(s2.t_, s2.r_.kernel_classes); });
      s.Run([](RankSchedule& s2) { s2.r_.kernels = AnalyzeKernels(s2.t_, s2.r_.kernel_classes); });
    });
    Run([](RankSchedule& s) {
      s.r_.sync = AnalyzeSyncPoints(s.t_);
      s.IdleGapInputDone();
    });
    Run([](RankSchedule& s) { s.r_.launches = AnalyzeLaunches(s.t_, s.o_.launches); });
    Run([](RankSchedule& s) { s.r_.copies = AnalyzeCopies(s.t_); });
    Run([](RankSchedule& s) { s.r_.memory = AnalyzeMemory(s.t_); });
    Run([](RankSchedule& s) { s.r_.summary = SummarizeTrace(s.t_); });
    if (o_.monitor != nullptr) {
      Run([](RankSchedule& s) { s.r_.monitor = AnalyzeMonitorBeside(s.t_, *s.o_.monitor); });
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
    Run([](RankSchedule& s) { s.r_.idle_gaps = AnalyzeIdleGaps(s.t_, s.r_.steps, s.r_.sync); });
  }

  const Trace& t_;
  const RunOptions& o_;
  RankResults& r_;
  TaskGroup& g_;
  std::atomic<int> idle_gap_inputs_{2};
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
