// Where gpuscope reproduces HTA's event selection and where it differs on purpose
// (docs/metrics.md, "Event selection" and "Idle attribution per stream"), on small made traces and
// the shared ones.
#include <gtest/gtest.h>

#include "analyze/gpu_time.h"
#include "gpuscope/ingest.h"
#include "test_util.h"

namespace gpuscope::analyze {
namespace {

Trace Parse(const std::string& json) {
  auto t = LoadTraceFromBytes(json, "made.json");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t.value()) : Trace();
}

// Two steps on the CPU, [1000, 2000) and [2000, 3000) µs; three launches at 1100, 2100 and 2700;
// their kernels at 1500, 2600 and 3000 (100 µs each) on stream 7. With `gpu_side_steps`, the
// ProfilerStep annotations also appear on the GPU (gpu_user_annotation, as ROCm and recent CUDA
// traces write them), starting where the GPU reaches each step: 1500 and 2600.
std::string TwoStepTrace(bool gpu_side_steps) {
  std::string json = R"({"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":1000,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":2000,"dur":1000},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1100,"dur":10,"args":{"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2100,"dur":10,"args":{"correlation":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2700,"dur":10,"args":{"correlation":3}},
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":1500,"dur":100,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":2600,"dur":100,"args":{"device":0,"stream":7,"correlation":2}},
{"ph":"X","cat":"kernel","name":"k3","pid":0,"tid":7,"ts":3000,"dur":100,"args":{"device":0,"stream":7,"correlation":3}})";
  if (gpu_side_steps) {
    json += R"(,
{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#1","pid":0,"tid":7,"ts":1500,"dur":1100},
{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#2","pid":0,"tid":7,"ts":2600,"dur":500})";
  }
  return json + "]}";
}

// HTA's last-step cut is the latest start of any non-GPU row named ProfilerStep#N, and a
// gpu_user_annotation has no stream, so the GPU-side copy of the last step (2600) moves the cut
// past the launch at 2100: k2 is kept, k3 (launched at 2700) is not. Without the GPU-side copies
// the cut is the CPU step's start (2000) and only k1 remains.
TEST(HtaSelection, GpuSideStepAnnotationMovesTheLastStepCutAsInHta) {
  const Trace with = Parse(TwoStepTrace(true));
  const GpuSelection s = SelectGpuEvents(with);
  EXPECT_TRUE(s.step_filtered);
  EXPECT_EQ(s.last_step_start_ns, 2'600'000);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(with.Str(with.gpu.name[s.rows[0]]), "k1");
  EXPECT_EQ(with.Str(with.gpu.name[s.rows[1]]), "k2");
  const GpuTime g = AnalyzeGpuTime(with);
  EXPECT_EQ(g.temporal.span_ns, 1'200'000);  // 1500 → 2700 µs
  EXPECT_EQ(g.temporal.idle_ns, 1'000'000);

  const Trace without = Parse(TwoStepTrace(false));
  const GpuSelection w = SelectGpuEvents(without);
  EXPECT_TRUE(w.step_filtered);
  EXPECT_EQ(w.last_step_start_ns, 2'000'000);
  ASSERT_EQ(w.rows.size(), 1u);
  EXPECT_EQ(AnalyzeGpuTime(without).temporal.span_ns, 100'000);

  // include_last_step: up to the latest end of a step row, the GPU-side one included (3100).
  SelectionOptions all;
  all.include_last_step = true;
  EXPECT_EQ(SelectGpuEvents(with, all).rows.size(), 3u);
  EXPECT_EQ(AnalyzeGpuTime(with, all).temporal.span_ns, 1'600'000);  // 1500 → 3100
}

// HTA counts distinct step *names*: a GPU-side copy of the only step adds none, and other GPU-side
// annotations (an optimizer range) are not steps, so one step is still "nothing filtered".
TEST(HtaSelection, GpuSideCopyOfTheOnlyStepFiltersNothing) {
  const Trace t = Parse(R"({"traceEvents":[
{"ph":"X","cat":"gpu_user_annotation","name":"Optimizer.step#SGD.step","pid":0,"tid":7,"ts":1500,"dur":100},
{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#1","pid":0,"tid":7,"ts":1500,"dur":200},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":1000,"dur":1000},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1100,"dur":10,"args":{"correlation":1}},
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":1500,"dur":100,"args":{"device":0,"stream":7,"correlation":1}}]})");
  const GpuSelection s = SelectGpuEvents(t);
  EXPECT_FALSE(s.step_filtered);  // one step name: nothing is filtered
  EXPECT_EQ(s.rows.size(), 1u);
}

// The shared traces with GPU-side annotations. The MI250 trace has CPU ProfilerStep#1 and #2 and a
// GPU-side copy of #1 only, which starts before #2: the cut stays at #2's CPU start (HTA's µs
// rounding: 4203669612512.74 µs → 4203669612513 µs). The GP100 trace's ten GPU-side annotations
// are optimizer ranges and it has no ProfilerStep at all: nothing is filtered (there is no HTA
// reference run of it in shared/reference).
TEST(HtaSelection, SharedTracesWithGpuSideAnnotations) {
  GPUSCOPE_REQUIRE_SHARED();
  auto mi250 = LoadTrace(testing::SharedDir() + "/traces/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  ASSERT_TRUE(mi250.ok());
  size_t gpu_side = 0;
  for (size_t i = 0; i < mi250->cpu.size(); ++i)
    gpu_side += mi250->cpu.kind[i] == CpuKind::kGpuUserAnnotation &&
                mi250->Str(mi250->cpu.name[i]) == "ProfilerStep#1";
  EXPECT_EQ(gpu_side, 1u);
  const GpuSelection s = SelectGpuEvents(*mi250);
  EXPECT_TRUE(s.step_filtered);
  EXPECT_EQ(s.last_step_start_ns, 4203669612513'000);

  auto gp100 = LoadTrace(testing::SharedDir() +
                         "/traces/hta/step_based_trace_GP100_gpu_user_annotation_hist9e27c16.json.gz");
  ASSERT_TRUE(gp100.ok());
  size_t annotations = 0;
  for (size_t i = 0; i < gp100->cpu.size(); ++i)
    annotations += gp100->cpu.kind[i] == CpuKind::kGpuUserAnnotation;
  EXPECT_EQ(annotations, 10u);
  const GpuSelection g = SelectGpuEvents(*gp100);
  EXPECT_FALSE(g.step_filtered);
  EXPECT_EQ(g.rows.size(), 140u);  // 130 kernels + 10 memcpys
}

// A kernel whose launch call is not in the trace. gpuscope: its gap cannot be host wait (nothing
// says when it was launched), so a short gap is kernel wait and a long one other. HTA marks such
// an event's link as 0 ("linked event not in the trace") and its idle-time breakdown then looks 0
// up as a row label: the event takes the start of the trace table's row 0 (the first event of the
// file) as its launch time, and every gap that ends after that row starts is host wait.
// Here the file's first event is a CPU op at 5000 µs, after all the kernels, so HTA would count
// both orphan gaps (10 µs before k2, 100 µs before k4) as host wait: host 210 µs, kernel wait 0,
// other 0 — against gpuscope's host 100, kernel wait 10, other 100. With two or more steps HTA's
// step filter drops such events before any analysis (as gpuscope's selection does), so the
// difference shows only on traces with fewer than two ProfilerSteps.
TEST(HtaSelection, GapBeforeAKernelWithoutItsLaunchIsNeverHostWait) {
  const Trace t = Parse(R"({"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::log","pid":1,"tid":1,"ts":5000,"dur":10},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":900,"dur":10,"args":{"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1250,"dur":10,"args":{"correlation":3}},
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":1000,"dur":100,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":1110,"dur":90,"args":{"device":0,"stream":7,"correlation":2}},
{"ph":"X","cat":"kernel","name":"k3","pid":0,"tid":7,"ts":1300,"dur":100,"args":{"device":0,"stream":7,"correlation":3}},
{"ph":"X","cat":"kernel","name":"k4","pid":0,"tid":7,"ts":1500,"dur":100,"args":{"device":0,"stream":7,"correlation":4}}]})");
  // k2 and k4 have no launch in the trace.
  size_t orphans = 0;
  for (size_t i = 0; i < t.gpu.size(); ++i) orphans += t.gpu.launch[i] < 0;
  EXPECT_EQ(orphans, 2u);
  const GpuTime g = AnalyzeGpuTime(t);
  EXPECT_FALSE(g.selection.step_filtered);
  ASSERT_EQ(g.idle_by_stream.size(), 1u);
  const StreamIdle& s = g.idle_by_stream[0];
  EXPECT_EQ(s.gaps, 3u);
  EXPECT_EQ(s.host_wait_ns, 100'000);   // before k3: launched at 1250, after k2 ended (1200)
  EXPECT_EQ(s.kernel_wait_ns, 10'000);  // before k2 (orphan, 10 µs < 30 µs)
  EXPECT_EQ(s.other_ns, 100'000);       // before k4 (orphan, 100 µs)
  // HTA's rule as described above, applied to the same gaps: the orphans' launch time is the
  // first file row's start (5000 µs), after both previous ends, so all three gaps are host wait.
  constexpr int64_t kHtaFirstRowNs = 5'000'000;
  int64_t hta_host_wait = 0;
  for (size_t k = 1; k < g.selection.rows.size(); ++k) {
    const uint32_t row = g.selection.rows[k];
    const int32_t launch = t.gpu.launch[row];
    const int64_t launch_start = launch >= 0 ? t.runtime.start_ns[launch] : kHtaFirstRowNs;
    if (launch_start > g.selection.end_ns[k - 1])
      hta_host_wait += g.selection.start_ns[k] - g.selection.end_ns[k - 1];
  }
  EXPECT_EQ(hta_host_wait, 210'000);
  EXPECT_EQ(hta_host_wait - s.host_wait_ns, s.kernel_wait_ns + s.other_ns);
}

}  // namespace
}  // namespace gpuscope::analyze
