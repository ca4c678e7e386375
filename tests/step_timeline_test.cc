// One step in time (analyze/step_timeline.h) on the bundled example, a real input-bound trace:
// the step drawn is the steady step of median duration; the lanes are the trainer's thread, its
// CUDA runtime calls, the GPU streams and GPU idle; every span lies in the step, in lane order and
// time order; the DataLoader wait is drawn where the GPU is idle; and a synthetic step of many
// tiny kernels stays within the span bound.
#include <gtest/gtest.h>

#include <algorithm>

#include "analyze/run_all.h"
#include "analyze/step_timeline.h"
#include "gpuscope/ingest.h"
#include "gpuscope/synth.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using analyze::TimelineKind;

TEST(StepTimeline, MedianSteadyStepOfTheExampleWithItsThreadsStreamsAndIdle) {
  Result<Trace> t =
      LoadTrace(std::string(GPUSCOPE_SOURCE_DIR) + "/examples/train_input_bound.pt.trace.json.gz");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const analyze::KernelClasses classes = analyze::BuildKernelClasses(*t);
  const analyze::StepsResult steps = analyze::AnalyzeSteps(*t, classes);
  const analyze::StepTimeline tl = analyze::BuildStepTimeline(*t, classes, steps);

  // The median of the steady steps' durations.
  std::vector<int64_t> steady;
  for (const analyze::StepBreakdown& s : steps.steps)
    if (s.steady_state && !s.incomplete) steady.push_back(s.duration_ns);
  ASSERT_GE(steady.size(), 3u);
  std::sort(steady.begin(), steady.end());
  EXPECT_EQ(tl.end_ns - tl.start_ns, steady[(steady.size() - 1) / 2]);
  EXPECT_EQ(tl.step_name, "ProfilerStep#" + std::to_string(tl.step));

  ASSERT_GE(tl.lanes.size(), 4u);
  EXPECT_EQ(tl.lanes[0].rfind("CPU thread ", 0), 0u) << tl.lanes[0];
  EXPECT_NE(tl.lanes[1].find("CUDA runtime"), std::string::npos) << tl.lanes[1];
  EXPECT_EQ(tl.lanes.back(), "GPU idle");
  EXPECT_TRUE(std::any_of(tl.lanes.begin(), tl.lanes.end(),
                          [](const std::string& l) { return l.rfind("GPU 0 stream ", 0) == 0; }));
  ASSERT_FALSE(tl.spans.empty());
  EXPECT_LE(tl.spans.size(), analyze::kTimelineMaxSpans);
  int64_t dataloader = 0, idle = 0, compute = 0;
  for (size_t i = 0; i < tl.spans.size(); ++i) {
    const analyze::TimelineSpan& s = tl.spans[i];
    EXPECT_LT(s.lane, tl.lanes.size());
    EXPECT_GE(s.start_ns, 0);
    EXPECT_GT(s.end_ns, s.start_ns);
    EXPECT_LE(s.end_ns, tl.end_ns - tl.start_ns);
    if (i > 0) {
      const analyze::TimelineSpan& p = tl.spans[i - 1];
      EXPECT_TRUE(p.lane < s.lane || (p.lane == s.lane && p.start_ns <= s.start_ns)) << i;
    }
    if (s.kind == TimelineKind::kDataLoader) dataloader += s.end_ns - s.start_ns;
    if (s.kind == TimelineKind::kGpuIdle) idle += s.end_ns - s.start_ns;
    if (s.kind == TimelineKind::kCompute) compute += s.end_ns - s.start_ns;
  }
  // Input-bound: ~30 % of the step in the DataLoader (the report's finding), the GPU idle then.
  const double step = static_cast<double>(tl.end_ns - tl.start_ns);
  EXPECT_GT(dataloader / step, 0.2);
  EXPECT_LT(dataloader / step, 0.4);
  EXPECT_GE(idle, dataloader * 9 / 10);
  EXPECT_GT(compute, 0);
}

TEST(StepTimeline, ManyTinyKernelsStayWithinTheSpanBound) {
  SynthOptions o;
  o.steps = 4;
  o.layers = 400;  // thousands of kernels per step
  o.seed = 3;
  const std::string path = testing::TempPath("tiny.json");
  ASSERT_TRUE(WriteSynthTrace(o, 0, path).ok());
  Result<Trace> t = LoadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const analyze::KernelClasses classes = analyze::BuildKernelClasses(*t);
  const analyze::StepsResult steps = analyze::AnalyzeSteps(*t, classes);
  size_t kernels = 0;
  for (size_t i = 0; i < t->gpu.size(); ++i) kernels += t->gpu.kind[i] == GpuKind::kKernel;
  const analyze::StepTimeline tl = analyze::BuildStepTimeline(*t, classes, steps);
  EXPECT_GT(kernels / o.steps, analyze::kTimelineMaxSpans);
  EXPECT_LE(tl.spans.size(), analyze::kTimelineMaxSpans);
  EXPECT_FALSE(tl.spans.empty());
  size_t merged = 0;
  for (const analyze::TimelineSpan& s : tl.spans) merged += s.merged;
  EXPECT_GT(merged, tl.spans.size());  // spans stand for several events each
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gpuscope
