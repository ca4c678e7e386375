// The verdict rules as pure functions over synthetic sample series with known answers.
#include <gtest/gtest.h>

#include "monitor/verdict.h"

namespace gpuscope::monitor {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kSecond = 1'000'000'000;

struct Shape {
  double gpu_util = -1;  // < 0: no GPU
  double power_w = 300, limit_w = 400;
  uint64_t mem_used = 70'000'000'000, mem_total = 80'000'000'000;
  double main_pct = 50;
  std::vector<double> workers;
  uint64_t throttle = 0;
};

// `seconds` samples 1 s apart; the first `warmup` seconds at a tenth of the utilisation.
Recording Series(const Shape& shape, int seconds, int warmup = 0) {
  Recording r;
  r.root_pid = 100;
  r.has_process_data = true;
  r.interval_ns = kSecond;
  r.start_ns = kT0;
  uint64_t main_cpu = 0;
  for (int i = 0; i < seconds; ++i) {
    Sample s;
    s.time_ns = kT0 + i * kSecond;
    if (shape.gpu_util >= 0) {
      GpuSample g;
      g.sm_util_pct = i < warmup ? shape.gpu_util / 10 : shape.gpu_util;
      g.power_w = shape.power_w;
      g.power_limit_w = shape.limit_w;
      g.mem_used_bytes = shape.mem_used;
      g.mem_total_bytes = shape.mem_total;
      g.throttle_reasons = shape.throttle;
      s.gpus.push_back(g);
    }
    main_cpu += static_cast<uint64_t>(shape.main_pct * 1e7);
    s.processes.push_back({100, 1, "python", shape.main_pct, 1'000'000'000, 0, main_cpu});
    for (size_t w = 0; w < shape.workers.size(); ++w)
      s.processes.push_back({static_cast<int32_t>(200 + w), 100, "pt_data_worker",
                             shape.workers[w], 100'000'000, 0, 1});
    s.core_busy_pct = {60, 40};
    r.samples.push_back(s);
  }
  r.end_ns = r.samples.back().time_ns;
  return r;
}

bool Has(const MonitorReport& r, const std::string& id) {
  for (const Finding& f : r.findings)
    if (f.id == id) return true;
  return false;
}

// Linux adds a reaped child's /proc/PID/io to its parent's: a worker that read 50 bytes and was
// waited for shows up again in the parent's count. Only the last sample's processes are summed.
TEST(Verdict, ReadBytesDoNotCountReapedChildrenTwice) {
  Shape shape;
  shape.gpu_util = 90;
  Recording r = Series(shape, 3);
  r.samples[0].processes[0].read_bytes = 10;
  r.samples[0].processes.push_back({101, 100, "worker", 0, 1000, 50, 1});
  r.samples[1].processes[0].read_bytes = 60;  // 10 + the reaped worker's 50
  r.samples[2].processes[0].read_bytes = 70;
  const MonitorReport rep = BuildMonitorReport(r);
  ASSERT_TRUE(rep.cpu.has_value());
  ASSERT_TRUE(rep.cpu->read_bytes.has_value());
  EXPECT_EQ(*rep.cpu->read_bytes, 70u);  // not 120
}

// CPU of processes that ended between samples (ProcessSample::reaped_cpu_pct) is the tree's; when
// the main process or one of its workers waited for them, they were workers.
TEST(Verdict, EndedChildrenCountInWorkersAndTree) {
  Sample s;
  s.processes.push_back({10, 1, "sh", 5, 0, std::nullopt, 9'000'000'000, 1});           // root
  s.processes.push_back({100, 10, "python", 90, 0, std::nullopt, 50'000'000'000, 30});  // main
  s.processes.push_back({200, 100, "worker", 20, 0, std::nullopt, 1'000'000'000, 7});
  const TreeCpu t = SplitTreeCpu(s, 100);
  EXPECT_DOUBLE_EQ(t.main_pct, 90);               // its own threads only
  EXPECT_DOUBLE_EQ(t.workers_ended_pct, 30 + 7);  // ended children of main and of the worker
  EXPECT_DOUBLE_EQ(t.workers_pct, 20 + 37);
  EXPECT_DOUBLE_EQ(t.tree_pct, 5 + 1 + 90 + 30 + 20 + 7);  // the root's ended child is "other"
  EXPECT_EQ(t.workers, 1);
}

// 0 % per worker seen, but 60 % of a core in workers that lived less than a sample: not idle, so
// no "input pipeline is single-threaded", and the words say where the CPU went.
TEST(Verdict, ShortLivedWorkersAreNotIdle) {
  Shape shape;
  shape.gpu_util = 40;
  shape.main_pct = 95;
  shape.workers = {1, 1};
  Recording r = Series(shape, 20);
  for (Sample& s : r.samples) s.processes[0].reaped_cpu_pct = 60;
  const MonitorReport rep = BuildMonitorReport(r);
  ASSERT_TRUE(rep.cpu.has_value());
  EXPECT_NEAR(rep.cpu->workers_ended_mean_pct, 60, 1e-9);
  EXPECT_NEAR(rep.cpu->workers_mean_pct, 62, 1e-9);
  EXPECT_NEAR(rep.cpu->tree_mean_pct, 95 + 60 + 2, 1e-9);
  // 19 intervals of 1 s after the first sample, each at 157 % of a core.
  EXPECT_NEAR(rep.cpu->tree_cpu_s, 19 * 1.57, 1e-6);
  EXPECT_FALSE(Has(rep, "input_single_threaded"));
  EXPECT_TRUE(Has(rep, "gpu_underused"));
  EXPECT_NE(rep.verdict.find("2 workers averaged 1 % each, and workers that ended between samples "
                             "used 60 % of a core"),
            std::string::npos)
      << rep.verdict;
}

TEST(Verdict, SingleThreadedInputPipeline) {
  Shape s;
  s.gpu_util = 43;
  s.main_pct = 100;
  s.workers = {2, 1, 3, 2};
  const MonitorReport r = BuildMonitorReport(Series(s, 60));
  ASSERT_TRUE(Has(r, "input_single_threaded")) << RenderMonitorText(r);
  EXPECT_EQ(r.verdict,
            "GPU busy 43 % on average while the main process (python, pid 100) used 100 % of one "
            "core and 4 workers idled (2 % each) → Input pipeline is single-threaded");
  ASSERT_TRUE(r.cpu.has_value());
  EXPECT_EQ(r.cpu->workers.size(), 4u);
  EXPECT_FALSE(Has(r, "memory_headroom"));  // 70 of 80 GB
}

TEST(Verdict, WarmupIsSeparatedFromSteadyState) {
  Shape s;
  s.gpu_util = 95;
  const MonitorReport r = BuildMonitorReport(Series(s, 100, 10));
  EXPECT_EQ(r.warmup_ns, 10 * kSecond);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(r.gpus[0].util_mean_pct.value_or(0), 95);
  EXPECT_DOUBLE_EQ(r.gpus[0].util_mean_warmup_pct.value_or(0), 9.5);
  EXPECT_NE(r.verdict.find("GPU well used"), std::string::npos) << r.verdict;
}

TEST(Verdict, WarmupIsCappedAtAThirdOfTheRun) {
  Shape s;
  s.gpu_util = 95;
  const MonitorReport r = BuildMonitorReport(Series(s, 100, 80));
  EXPECT_LE(r.warmup_ns, static_cast<int64_t>(kWarmupMaxFraction * 99 * kSecond));
}

TEST(Verdict, BusyAtLowPowerForMinutesIsProbablyHung) {
  Shape s;
  s.gpu_util = 100;
  s.power_w = 90;  // of 400 W
  const MonitorReport hung = BuildMonitorReport(Series(s, 180));
  ASSERT_TRUE(Has(hung, "probably_hung")) << RenderMonitorText(hung);
  EXPECT_NE(hung.verdict.find("22 % of the limit"), std::string::npos) << hung.verdict;
  // Under a minute: no.
  EXPECT_FALSE(Has(BuildMonitorReport(Series(s, 50)), "probably_hung"));
  // At high power it is working.
  s.power_w = 380;
  EXPECT_FALSE(Has(BuildMonitorReport(Series(s, 180)), "probably_hung"));
}

TEST(Verdict, MemoryHeadroom) {
  Shape s;
  s.gpu_util = 95;
  s.mem_used = 22'000'000'000;
  const MonitorReport r = BuildMonitorReport(Series(s, 30));
  ASSERT_TRUE(Has(r, "memory_headroom"));
  EXPECT_NE(RenderMonitorText(r).find("memory used 22.0 of 80.0 GB at the peak → batch could grow"),
            std::string::npos);
}

TEST(Verdict, SaturatedWorkersAndThrottling) {
  Shape s;
  s.gpu_util = 50;
  s.main_pct = 30;
  s.workers = {95, 97};
  s.throttle = kThrottleHwThermal;
  const MonitorReport r = BuildMonitorReport(Series(s, 30));
  EXPECT_TRUE(Has(r, "workers_saturated")) << RenderMonitorText(r);
  EXPECT_TRUE(Has(r, "throttled"));
  EXPECT_FALSE(Has(r, "input_single_threaded"));
}

TEST(Verdict, NoGpuUsesCpuOnly) {
  Shape s;
  s.main_pct = 99;
  s.workers = {0, 0};
  Recording rec = Series(s, 20);
  rec.gpu_unavailable = "cannot load NVML";
  const MonitorReport r = BuildMonitorReport(rec);
  EXPECT_FALSE(r.has_gpu);
  EXPECT_TRUE(Has(r, "main_cpu_bound"));
  const std::string text = RenderMonitorText(r);
  EXPECT_NE(text.find("GPU         none — cannot load NVML"), std::string::npos) << text;
}

TEST(Verdict, EmptyRecording) {
  Recording rec;
  const MonitorReport r = BuildMonitorReport(rec);
  EXPECT_EQ(r.samples, 0u);
  EXPECT_NE(r.verdict.find("no samples"), std::string::npos);
  EXPECT_NE(RenderMonitorJson(r).find("\"samples\": 0"), std::string::npos);
}

TEST(Verdict, SliceKeepsTheWindow) {
  Shape s;
  s.gpu_util = 80;
  const Recording rec = Series(s, 10);
  const Recording slice = SliceRecording(rec, kT0 + 2 * kSecond, kT0 + 5 * kSecond);
  EXPECT_EQ(slice.samples.size(), 4u);
}

}  // namespace
}  // namespace gpuscope::monitor
