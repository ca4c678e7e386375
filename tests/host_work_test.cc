// Host work that is not the step's (analyze/host_work.h) and its findings (issue 32 item 4): the
// driver's memory calls, JIT compilation inside the step, and host time no recorded op covers.
// Hand-made traces with known answers, priced by the replay; the real compile step of HTA's
// triton_example.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyze/host_work.h"
#include "gpuscope/ingest.h"
#include "report/report.h"
#include "render/text.h"
#include "report/document.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using analyze::IsAllocatorCall;
using analyze::IsCompileName;

// Six ProfilerSteps of 10 ms (µs timestamps). Each: aten::mm (host 200 µs) launching a 300 µs
// kernel, an optimizer annotation over +4 to +9.7 ms, `extra(o)`'s host work, then a
// cudaDeviceSynchronize at +9.8 ms. About 1.7 ms of each step is outside any recorded op.
template <typename Extra>
std::string Steps(Extra extra) {
  std::string ev;
  auto add = [&ev](const std::string& e) { ev += (ev.empty() ? "" : ",\n") + e; };
  for (int k = 0; k < 6; ++k) {
    const int64_t o = 1000 + 10'000 * k;
    const int c = 100 + 10 * k;
    auto x = [&](const char* cat, const std::string& name, int64_t ts, int64_t dur, const std::string& args) {
      add(R"({"ph":"X","cat":")" + std::string(cat) + R"(","name":")" + name + R"(","pid":1,"tid":1,"ts":)" +
          std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) + R"(,"args":{)" + args + "}}");
    };
    x("user_annotation", "ProfilerStep#" + std::to_string(k), o, 10'000, "");
    x("cpu_op", "aten::mm", o + 10, 200, R"("External id":)" + std::to_string(c));
    x("cuda_runtime", "cudaLaunchKernel", o + 100, 10, R"("correlation":)" + std::to_string(c));
    add(R"({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":)" + std::to_string(o + 120) +
        R"(,"dur":300,"args":{"device":0,"stream":7,"correlation":)" + std::to_string(c) + "}}");
    x("user_annotation", "Optimizer.step#SGD.step", o + 4'000, 5'700, "");
    extra(o, c, x);
    x("cuda_runtime", "cudaDeviceSynchronize", o + 9'800, 150, R"("correlation":)" + std::to_string(c + 9));
  }
  return R"({"traceEvents":[)" + ev + "]}";
}

report::Report Build(const std::string& json, std::vector<Trace>* keep) {
  Result<Trace> t = LoadTraceFromBytes(json, "host_work.json");
  EXPECT_TRUE(t.ok()) << t.status().message();
  keep->push_back(std::move(t.value()));
  return report::BuildReport(*keep, {}, 1);
}

// The report of a real trace (tests/data or shared/, relative to traces/).
report::Report BuildReal(const std::string& path, std::vector<Trace>* keep) {
  Result<Trace> t = LoadTrace(testing::RealTrace(path));
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (t.ok()) keep->push_back(std::move(t.value()));
  return report::BuildReport(*keep, {}, 1);
}

const advise::Finding* FindingOf(const report::RankReport& r, const std::string& id) {
  for (const advise::Finding& f : r.advice.findings)
    if (f.id == id) return &f;
  return nullptr;
}

TEST(HostWork, NamesOfAllocatorCallsAndCompileOps) {
  for (const char* n : {"cudaMalloc", "cudaFree", "hipFree", "cuMemAlloc_v2", "cudaHostAlloc"})
    EXPECT_TRUE(IsAllocatorCall(n)) << n;
  for (const char* n : {"cudaMallocAsync", "cudaFreeAsync", "cudaMemcpyAsync", "aten::empty"})
    EXPECT_FALSE(IsAllocatorCall(n)) << n;
  for (const char* n : {"FusionExecutor::compileFusion", "nvrtcCompileProgram", "cuModuleLoadData",
                        "torch/_inductor/compile_fx.py(612): compile_fx_inner",
                        "CachingAutotuner.benchmark_all_configs autotune", "hipModuleLoadData"})
    EXPECT_TRUE(IsCompileName(n)) << n;
  for (const char* n : {"Torch-Compiled Region: 0/0", "CompiledFunction", "CompiledFunctionBackward",
                        "aten::mm", "TorchDynamo Cache Lookup"})
    EXPECT_FALSE(IsCompileName(n)) << n;
}

// Each step frees 2 ms and allocates 0.5 ms through the driver, outside any op, between the
// kernel and the sync. A 1.2 s cudaFree in the first steady step is the driver initialising.
TEST(HostWork, AllocatorChurnIsFoundCountedAndReplayed) {
  std::vector<Trace> keep;
  const report::Report r = Build(Steps([](int64_t o, int c, auto& x) {
    x("cuda_runtime", "cudaFree", o + 1'000, 2'000, R"("correlation":)" + std::to_string(c + 1));
    x("cuda_runtime", "cudaMalloc", o + 3'100, 500, R"("correlation":)" + std::to_string(c + 2));
  }), &keep);
  const report::RankReport& rr = r.ranks[0];
  const analyze::HostWork& h = rr.host_work;
  ASSERT_GT(h.windows, 0u);
  EXPECT_EQ(h.allocator_calls, 2u * h.windows);
  EXPECT_EQ(h.allocator_ns, 2'500'000 * static_cast<int64_t>(h.windows));
  ASSERT_EQ(h.allocator_names.size(), 2u);
  EXPECT_EQ(h.allocator_names[0].name, "cudaFree");
  EXPECT_EQ(h.driver_init_calls, 0u);
  const advise::Finding* f = FindingOf(rr, "allocator_churn");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->replayed);
  // The calls are host time on the critical path (the sync waits for the host, not the GPU):
  // the replay removes all 2.5 ms of them.
  EXPECT_NEAR(static_cast<double>(f->estimated_saving_ns_per_step), 2.5e6, 0.01 * 2.5e6);
  ASSERT_NE(rr.whatif.Fix("allocator_cached"), nullptr);
  EXPECT_NE(f->fix.find("expandable_segments"), std::string::npos);
  EXPECT_EQ(rr.advice.verdict, "host-bound: the driver's memory calls");
}

TEST(HostWork, OneLongDriverCallIsInitialisationNotChurn) {
  std::vector<Trace> keep;
  const report::Report r = Build(Steps([](int64_t o, int c, auto& x) {
    if (o == 21'000)  // step 2: context creation inside the first cudaFree
      x("cuda_runtime", "cudaFree", o + 1'000, 150'000, R"("correlation":)" + std::to_string(c + 1));
  }), &keep);
  const analyze::HostWork& h = r.ranks[0].host_work;
  EXPECT_EQ(h.allocator_calls, 0u);
  EXPECT_EQ(h.driver_init_calls, 1u);
  EXPECT_EQ(h.driver_init_ns, 150'000'000);
  EXPECT_EQ(FindingOf(r.ranks[0], "allocator_churn"), nullptr);
}

// nvFuser compiles for 3 ms in every step (a shape that changes every step), inside an op that
// also holds the module load; a recompiled torch.compile region is named.
TEST(HostWork, CompileInsideTheStepIsItsOwnFinding) {
  std::vector<Trace> keep;
  const report::Report r = Build(Steps([](int64_t o, int c, auto& x) {
    x("cpu_op", "FusionExecutor::compileFusion", o + 1'000, 3'000, R"("External id":)" + std::to_string(c + 3));
    x("cuda_driver", "cuModuleLoadData", o + 3'500, 400, R"("correlation":)" + std::to_string(c + 4));
    x("cpu_op", "Torch-Compiled Region: 0/1", o + 5'000, 50, R"("External id":)" + std::to_string(c + 5));
  }), &keep);
  const report::RankReport& rr = r.ranks[0];
  const analyze::HostWork& h = rr.host_work;
  ASSERT_GT(h.windows, 0u);
  EXPECT_EQ(h.compile_ns, 3'000'000 * static_cast<int64_t>(h.windows));  // the driver call is inside it
  ASSERT_FALSE(h.compile_names.empty());
  EXPECT_EQ(h.compile_names[0].name, "FusionExecutor::compileFusion");
  EXPECT_EQ(h.compile_names[0].count, h.windows);
  EXPECT_TRUE(h.torch_compile);
  EXPECT_EQ(h.recompiled_regions, 1u);  // one region (frame 0, compile 1), called in every step
  const advise::Finding* f = FindingOf(rr, "jit_compile");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->replayed);
  EXPECT_NEAR(static_cast<double>(f->estimated_saving_ns_per_step), 3e6, 0.01 * 3e6);
  EXPECT_NE(f->fix.find("TORCH_LOGS=recompiles"), std::string::npos);
  EXPECT_EQ(rr.advice.verdict, "host-bound: compiling inside the step");
}

// Nothing but the step's own work: no finding of these three, whatever the trace's idle time.
TEST(HostWork, AnOrdinaryStepHasNone) {
  std::vector<Trace> keep;
  const report::Report r = Build(Steps([](int64_t o, int c, auto& x) {
    x("cpu_op", "aten::add", o + 400, 9'300, R"("External id":)" + std::to_string(c + 6));
  }), &keep);
  const report::RankReport& rr = r.ranks[0];
  EXPECT_EQ(rr.host_work.allocator_calls, 0u);
  EXPECT_EQ(rr.host_work.compile_ns, 0);
  for (const char* id : {"allocator_churn", "jit_compile", "unrecorded_host_time"})
    EXPECT_EQ(FindingOf(rr, id), nullptr) << id;
  EXPECT_EQ(rr.whatif.Fix("allocator_cached"), nullptr);
}

// HTA's triton_example: one ProfilerStep of 13.3 s with 1.76 µs of GPU work and 1.5 ms of
// recorded ops; the rest no op covers. It was "compute-bound", then "host-bound" with a tiny-grid
// finding first.
TEST(HostWork, TheRealCompileStepIsTimeOutsideAnyRecordedOp) {
  GPUSCOPE_REQUIRE_REAL("traces/hta/triton_example.json.gz");
  std::vector<Trace> keep;
  const report::Report r = BuildReal("hta/triton_example.json.gz", &keep);
  ASSERT_EQ(r.ranks.size(), 1u);
  const report::RankReport& rr = r.ranks[0];
  const analyze::HostWork& h = rr.host_work;
  EXPECT_EQ(h.windows, 1u);
  EXPECT_TRUE(h.torch_compile);
  EXPECT_EQ(h.recompiled_regions, 0u);  // "Torch-Compiled Region: 0/0"
  EXPECT_GT(h.unrecorded_ns, 13'330'000'000);
  EXPECT_LT(h.unrecorded_ns, h.window_ns);
  ASSERT_FALSE(rr.advice.findings.empty());
  const advise::Finding& f = rr.advice.findings.front();
  EXPECT_EQ(f.id, "unrecorded_host_time");
  EXPECT_GT(f.estimated_saving_share, 0.99);
  EXPECT_LE(f.estimated_saving_ns_per_step, rr.steps.mean_steady_step_ns);
  EXPECT_NE(f.fix.find("schedule(wait=1, warmup=2, active=3)"), std::string::npos);
  EXPECT_EQ(rr.advice.verdict,
            "host-bound: time outside any recorded op (a warm-up step, or unprofiled Python)");
  // A condition, never in the plan: the plan's step stays the traced one.
  EXPECT_EQ(rr.whatif.Planned("unrecorded_removed"), nullptr);
  EXPECT_EQ(rr.whatif.planned_step_ns, rr.whatif.step_ns);
}

// A real Nsight Systems export of an nvFuser benchmark on an H200: FusionKernelRuntime::compileFusionParallel
// and module loads inside the profiled range. It was given the generic "move logging out of the
// step" fix; now compiling is the finding and the verdict, with the compile ops named.
TEST(HostWork, RealNsightExportCompilingInsideTheStep) {
  GPUSCOPE_REQUIRE_REAL("traces/nsys/fuser_h200_ee4fcf3_report1.sqlite");
  std::vector<Trace> keep;
  const report::Report r = BuildReal("nsys/fuser_h200_ee4fcf3_report1.sqlite", &keep);
  ASSERT_EQ(r.ranks.size(), 1u);
  const report::RankReport& rr = r.ranks[0];
  ASSERT_FALSE(rr.advice.findings.empty());
  const advise::Finding& f = rr.advice.findings.front();
  EXPECT_EQ(f.id, "jit_compile");
  EXPECT_TRUE(f.replayed);
  EXPECT_GT(f.estimated_saving_share, 0.5);
  bool named = false;
  for (const render::Field& e : f.evidence)
    if (e.key == "compile_ops") named = e.value.text.find("compileFusion") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_EQ(rr.advice.verdict, "host-bound: compiling inside the step");
  double saved = 0;
  for (const advise::Finding& x : rr.advice.findings) saved += x.estimated_saving_share;
  EXPECT_LE(saved, 1.0 + 1e-9);  // savings never add up to more than the step
  // Without ProfilerStep the step is the NVTX ranges' span (857 ms of a 7.3 s capture): the
  // report says so, not "the whole trace".
  EXPECT_TRUE(rr.steps.whole_span_fallback);
  EXPECT_NEAR(static_cast<double>(rr.steps.mean_steady_step_ns), 857.2e6, 0.1e6);
  const std::string text = render::RenderText(report::BuildDocument(r), {});
  EXPECT_NE(text.find("(no ProfilerStep: the span of the NVTX ranges, not the whole capture"),
            std::string::npos);
  EXPECT_EQ(text.find("(the whole trace: no ProfilerStep)"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
