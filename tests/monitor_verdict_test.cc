// The monitor's statistics (analyze/monitor_stats.h) and rules (advise/monitor_rules.h) as pure
// functions over synthetic sample series with known answers, and the run document they make.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "advise/monitor_rules.h"
#include "analyze/monitor_stats.h"
#include "ingest/registry.h"
#include "monitor/recorder.h"
#include "render/csv.h"
#include "render/html.h"
#include "render/json.h"
#include "render/text.h"
#include "report/monitor_document.h"
#include "test_util.h"

namespace gpuscope::monitor {
namespace {

using advise::AdviseMonitor;
using advise::MonitorAdvice;
using advise::MonitorFinding;
using analyze::ComputeMonitorStats;
using analyze::MonitorStats;
using analyze::SliceRecording;
using analyze::SplitTreeCpu;
using analyze::TreeCpu;

// Statistics and advice of one series, and its run document as the terminal shows it.
struct Verdict {
  MonitorStats stats;
  MonitorAdvice advice;
  std::string text;
};
Verdict Judge(const Recording& r) {
  Verdict v{ComputeMonitorStats(r), {}, {}};
  v.advice = AdviseMonitor(v.stats);
  v.text = render::RenderText(report::BuildRunDocument(v.stats, v.advice), {});
  return v;
}

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

bool Has(const Verdict& v, const std::string& id) {
  for (const MonitorFinding& f : v.advice.findings)
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
  const MonitorStats stats = ComputeMonitorStats(r);
  ASSERT_TRUE(stats.cpu.has_value());
  ASSERT_TRUE(stats.cpu->read_bytes.has_value());
  EXPECT_EQ(*stats.cpu->read_bytes, 70u);  // not 120
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
  const Verdict v = Judge(r);
  ASSERT_TRUE(v.stats.cpu.has_value());
  EXPECT_NEAR(v.stats.cpu->workers_ended_mean_pct, 60, 1e-9);
  EXPECT_NEAR(v.stats.cpu->workers_mean_pct, 62, 1e-9);
  EXPECT_NEAR(v.stats.cpu->tree_mean_pct, 95 + 60 + 2, 1e-9);
  // 19 intervals of 1 s after the first sample, each at 157 % of a core.
  EXPECT_NEAR(v.stats.cpu->tree_cpu_s, 19 * 1.57, 1e-6);
  EXPECT_FALSE(Has(v, "input_single_threaded"));
  EXPECT_TRUE(Has(v, "gpu_underused"));
  EXPECT_NE(v.advice.verdict.find("2 workers averaged 1 % each, and workers that ended between "
                                  "samples used 60 % of a core"),
            std::string::npos)
      << v.advice.verdict;
  // The CPU row says it too, and the finding's typed evidence carries the number.
  EXPECT_NE(v.text.find("of it in workers that ended between samples 60 %"), std::string::npos)
      << v.text;
  EXPECT_NE(v.text.find("workers that ended between samples used 60 %"), std::string::npos)
      << v.text;
}

TEST(Verdict, SingleThreadedInputPipeline) {
  Shape s;
  s.gpu_util = 43;
  s.main_pct = 100;
  s.workers = {2, 1, 3, 2};
  const Verdict v = Judge(Series(s, 60));
  ASSERT_TRUE(Has(v, "input_single_threaded")) << v.text;
  EXPECT_EQ(v.advice.verdict,
            "GPU busy 43 % on average while the main process (python, pid 100) used 100 % of one "
            "core and 4 workers idled (2 % each) → The input pipeline runs in the main process");
  ASSERT_TRUE(v.stats.cpu.has_value());
  EXPECT_EQ(v.stats.cpu->workers.size(), 4u);
  EXPECT_FALSE(Has(v, "memory_headroom"));  // 70 of 80 GB
  // The evidence, typed: GPU 43 %, main 100 %, 4 workers at 2 % each.
  const MonitorFinding& f = v.advice.findings.front();
  EXPECT_EQ(f.key, "input_single_threaded");
  EXPECT_EQ(f.severity, render::Severity::kWarning);
  auto value = [&f](const std::string& key) {
    for (const render::Field& e : f.evidence)
      if (e.key == key) return e.value;
    return render::Value::Text("missing " + key);
  };
  EXPECT_EQ(value("gpu_util_mean_pct"), render::Value::Number(43, 0, render::Unit::kPercent));
  EXPECT_EQ(value("main_cpu_mean_pct"), render::Value::Number(100, 0, render::Unit::kPercent));
  EXPECT_EQ(value("main_process"), render::Value::Text("python (pid 100)"));
  EXPECT_EQ(value("workers"), render::Value::Count(4));
  EXPECT_EQ(value("worker_cpu_mean_pct"), render::Value::Number(2, 0, render::Unit::kPercent));
  EXPECT_NE(v.text.find("verdict     GPU busy 43 % on average while the main process (python, pid "
                        "100) used 100 % of one core and 4 workers idled (2 % each) → The input "
                        "pipeline runs in the main process"),
            std::string::npos)
      << v.text;
  EXPECT_NE(v.text.find("evidence (confidence 70 %): GPU busy 43 %; main process python (pid 100); "
                        "main process used 100 %; workers 4; each worker used 2 %"),
            std::string::npos)
      << v.text;
}

// Issue 32 item 2, on a `run` recording (JSONL, read back like any recording): 5 s of startup at
// 0 %, 20 s of training that alternates 1.2 s at 100 % with 0.8 s near 0 % (a loader that runs
// dry), 7 s of teardown at 0 %. The whole run averages 37.5 %; the verdict reads the steady phase
// (62.5 %: from the first burst to the end of the last), and the stalls are found in it.
TEST(Verdict, RunRecordingSteadyPhaseAndPeriodicStalls) {
  std::string jsonl = "{\"type\":\"header\",\"format\":\"gpuscope-monitor\",\"version\":1,"
                      "\"command\":[\"python3\",\"train.py\"],\"interval_ns\":100000000,"
                      "\"start_ns\":" + std::to_string(kT0) + ",\"root_pid\":100,"
                      "\"gpus\":[{\"index\":0,\"name\":\"NVIDIA H200\"}]}\n";
  constexpr int64_t kTick = kSecond / 10;
  for (int i = 0; i < 320; ++i) {
    Sample smp;
    smp.time_ns = kT0 + i * kTick;
    GpuSample g;
    const bool training = i >= 50 && i < 250;
    g.sm_util_pct = training && (i - 50) % 20 < 12 ? 100 : 0;
    smp.gpus.push_back(g);
    ProcessSample p{100, 1, "python3", 100, 1'000'000'000, 0, static_cast<uint64_t>(i) * kTick};
    p.gpu_bytes = 1'000'000'000;
    smp.processes.push_back(p);
    jsonl += SampleToJsonLine(smp) + "\n";
  }
  jsonl += "{\"type\":\"end\",\"end_ns\":" + std::to_string(kT0 + 319 * kTick) +
           ",\"exit_code\":0,\"notes\":[]}\n";
  const std::string path = testing::TempPath("stalls.jsonl");
  { std::ofstream(path) << jsonl; }
  auto rec = ingest::ReadMonitorInput(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  const Verdict v = Judge(*rec);
  EXPECT_EQ(v.stats.warmup_ns, 5 * kSecond);
  EXPECT_EQ(v.stats.steady_ns, 191 * kTick);  // from the first to the last 100 % sample
  const analyze::MonitorGpu& gpu = v.stats.gpus.at(0);
  EXPECT_NEAR(gpu.util_mean_run_pct.value_or(0), 37.5, 0.01);
  EXPECT_NEAR(gpu.util_mean_pct.value_or(0), 62.5, 0.01);  // 10 bursts of 12 samples in 192
  EXPECT_EQ(gpu.periodic_stall.period_ns, 2 * kSecond);
  EXPECT_EQ(gpu.periodic_stall.stall_ns, 8 * kTick);
  ASSERT_TRUE(Has(v, "periodic_stall")) << v.text;
  EXPECT_EQ(v.text.find("cut short"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("util 62 % · whole run 38 %"), std::string::npos) << v.text;
}

// The real H200 recording of the lab's A1 (15 ResNet-50 steps, single-threaded input): 9.1 s of
// startup at ~1 %, 3.7 s of training, 1.5 s of teardown. The whole run averages 5.6 %; the steady
// phase 18.4 %, and the verdict (right before, per the issue) stays that the input pipeline runs
// in the main process — which used 13.6 of the 16 cores, so not "single-threaded".
TEST(Verdict, RealH200RecordingSteadyPhase) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/run_A1.jsonl");
  auto rec = ingest::ReadMonitorInput(testing::RealTrace("gpu_lab_h200/run_A1.jsonl"));
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  const Verdict v = Judge(*rec);
  EXPECT_NEAR(static_cast<double>(v.stats.warmup_ns), 9.10e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(v.stats.steady_ns), 3.70e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(v.stats.teardown_ns), 1.54e9, 0.01e9);
  const analyze::MonitorGpu& gpu = v.stats.gpus.at(0);
  EXPECT_NEAR(gpu.util_mean_pct.value_or(0), 18.42, 0.01);
  EXPECT_NEAR(gpu.util_mean_run_pct.value_or(0), 5.61, 0.01);
  EXPECT_EQ(v.stats.cpu->main_pid, 1080);
  EXPECT_TRUE(Has(v, "input_single_threaded")) << v.text;
  EXPECT_NE(v.advice.verdict.find("used 13.6 cores and no worker processes existed → The input "
                                  "pipeline runs in the main process"),
            std::string::npos)
      << v.advice.verdict;
}

// The recording's samples as a table for --csv (samples.csv: a row per sample, a column per
// series the charts draw); a recording's --csv wrote only an empty workers.csv. Text keeps no
// bare "over time" heading (its charts are HTML's).
TEST(Verdict, RecordingSamplesAreACsvTableAndTextHasNoEmptyHeading) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/run_A1.jsonl");
  auto rec = ingest::ReadMonitorInput(testing::RealTrace("gpu_lab_h200/run_A1.jsonl"));
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  const Verdict v = Judge(*rec);
  const render::Document doc = report::BuildRunDocument(v.stats, v.advice);
  std::string samples;
  for (const auto& [key, text] : render::CsvTables(doc))
    if (key == "samples") samples = text;
  ASSERT_FALSE(samples.empty());
  std::istringstream in(samples);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header,
            "section,run,rank,path,t_ns,gpu_0_util_pct,gpu_0_mem_used_bytes,gpu_0_power_w,"
            "gpu_0_sm_clock_mhz,trainer_cpu_pct,workers_cpu_pct\r");
  size_t rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, v.stats.series.t_ns.size());
  EXPECT_EQ(rows, v.stats.samples);
  EXPECT_EQ(v.text.find("over time"), std::string::npos) << v.text;
  EXPECT_EQ(render::RenderHtml(doc).find(">samples<"), std::string::npos) << "JSON and CSV only";
}

// Issue 32 item 1: the training process is not the busiest one. A process tree as (pid, ppid,
// name, % of a core, holds a CUDA context), sampled for `seconds` at 1 s; the GPU at 40 %.
struct Proc {
  int32_t pid, ppid;
  std::string name;
  double pct;
  bool gpu = false;
};
Recording Tree(int32_t root, const std::vector<Proc>& procs, int seconds = 30) {
  Recording r;
  r.root_pid = root;
  r.has_process_data = true;
  r.interval_ns = kSecond;
  r.start_ns = kT0;
  for (int i = 0; i < seconds; ++i) {
    Sample s;
    s.time_ns = kT0 + i * kSecond;
    GpuSample g;
    g.sm_util_pct = 40;
    s.gpus.push_back(g);
    for (const Proc& p : procs) {
      ProcessSample ps{p.pid, p.ppid, p.name, p.pct, 1'000'000'000, 0,
                       static_cast<uint64_t>(p.pct * 1e7) * (i + 1)};
      if (p.gpu) ps.gpu_bytes = 2'000'000'000;
      s.processes.push_back(ps);
    }
    r.samples.push_back(s);
  }
  r.end_ns = r.samples.back().time_ns;
  return r;
}

int32_t MainPid(const Recording& r) {
  const MonitorStats st = ComputeMonitorStats(r);
  return st.cpu ? st.cpu->main_pid : -1;
}

TEST(TrainerPid, TheProcessHoldingTheCudaContextNotTheBusiestWorker) {
  // H200 ResNet-50 with 12 saturated workers: each worker burns more CPU than the trainer.
  std::vector<Proc> procs = {{10, 1, "bash", 0}, {11, 10, "python3", 35, true}};
  for (int w = 0; w < 12; ++w) procs.push_back({100 + w, 11, "pt_data_worker", 99});
  const Verdict v = Judge(Tree(10, procs));
  ASSERT_TRUE(v.stats.cpu.has_value());
  EXPECT_EQ(v.stats.cpu->main_pid, 11);
  EXPECT_EQ(v.stats.cpu->main_name, "python3");
  EXPECT_EQ(v.stats.cpu->workers.size(), 12u);
  EXPECT_FALSE(Has(v, "input_single_threaded")) << v.text;  // the opposite of the truth before
  EXPECT_NE(v.text.find("main python3 (pid 11)"), std::string::npos) << v.text;
}

TEST(TrainerPid, WithoutGpuDataTheFirstNonWrapperAboveTheBusyWorkers) {
  // sh -c "python3 train.py": workers named anything (burn_worker here) under the trainer.
  EXPECT_EQ(MainPid(Tree(10, {{10, 1, "sh", 0}, {11, 10, "python3", 4},
                              {20, 11, "burn_worker", 100}, {21, 11, "burn_worker", 100}})),
            11);
  // The trainer is the root itself.
  EXPECT_EQ(MainPid(Tree(11, {{11, 1, "python3", 4}, {20, 11, "pt_data_worker", 100}})), 11);
  // torchrun → ranks, no GPU data: the busiest rank's branch, below the launcher.
  EXPECT_EQ(MainPid(Tree(10, {{10, 1, "torchrun", 1}, {11, 10, "python3", 90},
                              {12, 10, "python3", 95}, {30, 12, "pt_data_worker", 100}})),
            12);
  // Wrappers only (a shell loop doing the work itself): the root.
  EXPECT_EQ(MainPid(Tree(10, {{10, 1, "bash", 80}})), 10);
}

// A real recording (tests/data/monitor/run_cpu_busy_workers.jsonl, how it was made in
// tests/data/README.md): torch 2.13 on CPU, 2 DataLoader workers burning a core each, the loop
// waiting 93.6 % of its time for a batch (its own timers). Before, the busiest worker was "main"
// with no workers and the verdict "input pipeline is single-threaded".
TEST(TrainerPid, RealCpuRunWithBusyDataLoaderWorkers) {
  const std::string path = std::string(GPUSCOPE_SOURCE_DIR) + "/tests/data/monitor/run_cpu_busy_workers.jsonl";
  auto rec = ingest::ReadMonitorInput(path);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  const Verdict v = Judge(*rec);
  ASSERT_TRUE(v.stats.cpu.has_value());
  EXPECT_EQ(v.stats.cpu->main_pid, 20308);
  EXPECT_EQ(v.stats.cpu->main_name, "python");
  ASSERT_EQ(v.stats.cpu->workers.size(), 2u);
  for (const auto& w : v.stats.cpu->workers) {
    EXPECT_EQ(w.name, "pt_data_worker");
    EXPECT_GT(w.cpu_mean_pct, 80);  // each saturated a core
  }
  EXPECT_FALSE(Has(v, "input_single_threaded")) << v.text;
  EXPECT_TRUE(Has(v, "workers_saturated")) << v.text;
  EXPECT_NE(v.text.find("main python (pid 20308)"), std::string::npos) << v.text;
}

TEST(TrainerPid, RanksUnderALauncherAndAWorkerThatTouchedCuda) {
  // Two ranks hold contexts: the busier one; a worker that initialised CUDA stays a worker.
  EXPECT_EQ(MainPid(Tree(10, {{10, 1, "python3", 1}, {11, 10, "python3", 60, true},
                              {12, 10, "python3", 80, true}, {30, 12, "pt_data_worker", 100, true}})),
            12);
  // A context held by a short-lived process (seen in under half of the samples) is no trainer.
  Recording r = Tree(10, {{10, 1, "sh", 0}, {11, 10, "python3", 30}});
  for (size_t i = 0; i < 5; ++i) {
    ProcessSample probe{50, 10, "nvidia-smi", 100, 1'000'000, 0, 900'000'000};
    probe.gpu_bytes = 0;
    r.samples[i].processes.push_back(probe);
  }
  EXPECT_EQ(MainPid(r), 11);
}

TEST(Verdict, WarmupIsSeparatedFromSteadyState) {
  Shape s;
  s.gpu_util = 95;
  const Verdict v = Judge(Series(s, 100, 10));
  EXPECT_EQ(v.stats.warmup_ns, 10 * kSecond);
  ASSERT_EQ(v.stats.gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(v.stats.gpus[0].util_mean_pct.value_or(0), 95);
  EXPECT_DOUBLE_EQ(v.stats.gpus[0].util_mean_warmup_pct.value_or(0), 9.5);
  EXPECT_NE(v.advice.verdict.find("GPU well used"), std::string::npos) << v.advice.verdict;
  EXPECT_NE(v.text.find("util 95 % · whole run 86 % · warm-up 10 %"), std::string::npos)
      << v.text;  // 9.5 → 10
  EXPECT_NE(v.text.find("warm-up 10.000 s"), std::string::npos) << v.text;
}

// Issue 32 item 2: the steady phase ends where the GPU's work ends; startup and teardown are
// reported beside it (the whole run's mean), not averaged into the verdict. A long warm-up is
// not cut at a fixed share of the run: 80 s of loading before 20 s of training is 20 s steady.
TEST(Verdict, SteadyPhaseLeavesOutStartupAndTeardown) {
  Shape s;
  s.gpu_util = 95;
  Recording r = Series(s, 100, 80);
  for (size_t i = 90; i < r.samples.size(); ++i) r.samples[i].gpus[0].sm_util_pct = 0;  // teardown
  const Verdict v = Judge(r);
  EXPECT_EQ(v.stats.warmup_ns, 80 * kSecond);
  EXPECT_EQ(v.stats.steady_ns, 9 * kSecond);      // samples 80-89 s
  EXPECT_EQ(v.stats.teardown_ns, 10 * kSecond);  // from the last steady sample to the end (99 s)
  ASSERT_EQ(v.stats.gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(v.stats.gpus[0].util_mean_pct.value_or(0), 95);
  EXPECT_DOUBLE_EQ(v.stats.gpus[0].util_mean_run_pct.value_or(0), (80 * 9.5 + 10 * 95) / 100.0);
  EXPECT_DOUBLE_EQ(v.stats.gpus[0].util_mean_warmup_pct.value_or(0), 9.5);
  EXPECT_NE(v.advice.verdict.find("GPU well used"), std::string::npos) << v.advice.verdict;
  EXPECT_NE(v.text.find("warm-up 80.000 s · steady 9.000 s · teardown 10.000 s"), std::string::npos)
      << v.text;
  EXPECT_NE(v.text.find("util 95 % · whole run 17 % · warm-up 10 %"), std::string::npos) << v.text;
  // Too few busy samples for a phase: the whole run is steady.
  Recording blip = Series(s, 50);
  for (size_t i = 0; i < blip.samples.size(); ++i)
    blip.samples[i].gpus[0].sm_util_pct = i == 20 || i == 21 ? 90 : 0;
  const MonitorStats b = ComputeMonitorStats(blip);
  EXPECT_EQ(b.warmup_ns, 0);
  EXPECT_EQ(b.teardown_ns, 0);
  EXPECT_EQ(b.steady_ns, b.duration_ns);
}

TEST(Verdict, BusyAtLowPowerForMinutesIsProbablyHung) {
  Shape s;
  s.gpu_util = 100;
  s.power_w = 90;  // of 400 W
  const Verdict hung = Judge(Series(s, 180));
  ASSERT_TRUE(Has(hung, "probably_hung")) << hung.text;
  EXPECT_NE(hung.advice.verdict.find("22 % of the limit"), std::string::npos)
      << hung.advice.verdict;
  // 180 samples 1 s apart: the stretch is 179 s, from the first sample.
  EXPECT_EQ(hung.stats.gpus[0].busy_at_low_power.duration_ns, 179 * kSecond);
  EXPECT_EQ(hung.advice.findings.front().key, "probably_hung_gpu_0");
  EXPECT_EQ(hung.advice.findings.front().severity, render::Severity::kCritical);
  // Under a minute: no.
  EXPECT_FALSE(Has(Judge(Series(s, 50)), "probably_hung"));
  // At high power it is working.
  s.power_w = 380;
  EXPECT_FALSE(Has(Judge(Series(s, 180)), "probably_hung"));
}

TEST(Verdict, MemoryHeadroom) {
  Shape s;
  s.gpu_util = 95;
  s.mem_used = 22'000'000'000;
  const Verdict v = Judge(Series(s, 30));
  ASSERT_TRUE(Has(v, "memory_headroom"));
  // Not the verdict: the GPU is well used.
  EXPECT_EQ(v.advice.verdict, "GPU busy 95 % on average → GPU well used");
  EXPECT_NE(v.text.find("GPU 0 memory mostly unused"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("evidence (confidence 60 %): GPU 0; memory used at the peak 22.00 GB; of "
                        "80.00 GB; share 28 %"),
            std::string::npos)
      << v.text;
  EXPECT_NE(v.text.find("memory peak 22.00 GB · of 80.00 GB"), std::string::npos) << v.text;
  EXPECT_EQ(v.advice.findings.front().words,
            "memory used 22.00 GB of 80.00 GB at the peak → batch could grow");
}

TEST(Verdict, SaturatedWorkersAndThrottling) {
  Shape s;
  s.gpu_util = 50;
  s.main_pct = 30;
  s.workers = {95, 97};
  s.throttle = kThrottleHwThermal;
  const Verdict v = Judge(Series(s, 30));
  EXPECT_TRUE(Has(v, "workers_saturated")) << v.text;
  EXPECT_TRUE(Has(v, "throttled"));
  EXPECT_FALSE(Has(v, "input_single_threaded"));
  EXPECT_EQ(v.advice.verdict,
            "GPU busy 50 % on average while 2 workers averaged 96 % each (each ≥ 80 % of a core) "
            "→ Data-loading workers are saturated");
  // The cores are 50 % busy: not saturated, so the fix says cores are free.
  EXPECT_EQ(v.advice.findings.front().fix,
            "Raise num_workers (cores are free), or make transforms cheaper.");
}

TEST(Verdict, NoGpuUsesCpuOnly) {
  Shape s;
  s.main_pct = 99;
  s.workers = {0, 0};
  Recording rec = Series(s, 20);
  rec.gpu_unavailable = "cannot load NVML";
  const Verdict v = Judge(rec);
  EXPECT_FALSE(v.stats.has_gpu);
  EXPECT_TRUE(Has(v, "main_cpu_bound"));
  EXPECT_NE(v.text.find("GPU         none — cannot load NVML"), std::string::npos) << v.text;
}

TEST(Verdict, EmptyRecording) {
  Recording rec;
  const Verdict v = Judge(rec);
  EXPECT_EQ(v.stats.samples, 0u);
  EXPECT_NE(v.advice.verdict.find("no samples"), std::string::npos);
  EXPECT_NE(v.text.find("samples 0"), std::string::npos) << v.text;
}

TEST(Verdict, SliceKeepsTheWindow) {
  Shape s;
  s.gpu_util = 80;
  const Recording rec = Series(s, 10);
  const Recording slice = SliceRecording(rec, kT0 + 2 * kSecond, kT0 + 5 * kSecond);
  EXPECT_EQ(slice.samples.size(), 4u);
}

// The run document reads back from its JSON as it was written (watts, MHz and °C included), and
// its text shows the GPU's readings with their units.
TEST(Verdict, RunDocumentReadsBackFromJson) {
  Shape s;
  s.gpu_util = 50;
  s.workers = {95, 97};
  s.throttle = kThrottleHwThermal;
  Recording rec = Series(s, 30);
  for (Sample& x : rec.samples) {
    x.gpus[0].sm_clock_mhz = 1410;
    x.gpus[0].temperature_c = 71;
  }
  rec.notes = {"GPU 0 power: a note"};
  rec.malformed_lines = 2;
  rec.malformed_examples = {"run.jsonl:3: why", "run.jsonl:9: why"};
  const Verdict v = Judge(rec);
  const render::Document doc = report::BuildRunDocument(v.stats, v.advice);
  EXPECT_EQ(doc.schema, "gpuscope.run");
  auto back = render::FromJson(render::ToJson(doc), "run.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(*back == render::AsReadBack(doc));
  EXPECT_NE(v.text.find("power 300 W · limit 400 W · SM 1,410 MHz · max 71 °C"), std::string::npos)
      << v.text;
  EXPECT_NE(v.text.find("note        GPU 0 power: a note"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("skipped     malformed lines 2\n            run.jsonl:3: why\n"),
            std::string::npos)
      << v.text;
}

// The section beside a trace says why it could not line the recording up, as text, with the spans
// typed; lined up, it holds the run document's items for the samples within the span.
TEST(Verdict, MonitorBesideSectionSaysWhyItCannotLineUp) {
  analyze::MonitorBeside m;
  m.stats.source = SourceKind::kRecording;
  m.stats.source_path = "run.jsonl";
  m.span = {true, kT0, kT0 + 2 * kSecond};
  m.samples_start_ns = kT0 + 10 * kSecond;
  m.samples_end_ns = kT0 + 20 * kSecond;
  const std::pair<analyze::MonitorAlignment, std::string> cases[] = {
      {analyze::MonitorAlignment::kNoEvents, "no events in the trace: nothing to line up"},
      {analyze::MonitorAlignment::kNotWallClock,
       "the trace's timestamps are not wall-clock time: cannot line up"},
      {analyze::MonitorAlignment::kNoOverlap,
       "no monitor sample within the trace's span (trace 1700000000.000–1700000002.000 s, monitor "
       "1700000010.000–1700000020.000 s, unix time): a different run?"}};
  for (const auto& [alignment, text] : cases) {
    m.alignment = alignment;
    const render::Section s = report::BuildMonitorBesideSection(m, "t.json");
    EXPECT_EQ(s.key, "monitor");
    EXPECT_EQ(s.title, "monitor run.jsonl within t.json");
    const auto* row = std::get_if<render::Row>(s.FindItem("alignment"));
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->fields[1].value, render::Value::Int(kT0, render::Unit::kTimestamp));
    bool found = false;
    for (const render::Item& item : s.items)
      if (const auto* t = std::get_if<render::Text>(&item)) found |= t->text == text;
    EXPECT_TRUE(found) << text;
    EXPECT_EQ(s.FindItem("verdict"), nullptr);
  }
  Shape shape;
  shape.gpu_util = 80;  // under 90 %: no "well used"; at or over 70 %: no host rule
  m.alignment = analyze::MonitorAlignment::kAligned;
  m.stats = ComputeMonitorStats(Series(shape, 5));
  const render::Section s = report::BuildMonitorBesideSection(m, "t.json");
  const auto* verdict = std::get_if<render::Row>(s.FindItem("verdict"));
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->fields[0].value, render::Value::Text("GPU busy 80 % on average"));
  const auto* span = std::get_if<render::Row>(s.FindItem("span"));
  ASSERT_NE(span, nullptr);
  EXPECT_EQ(span->fields[1].value, render::Value::Count(5));
}

// --- The rule table -------------------------------------------------------------------------------

TEST(MonitorRules, TableHasUniqueIdsAFixAThresholdAndASavingModelPerRule) {
  std::set<std::string> ids;
  ASSERT_GE(advise::MonitorRules().size(), 9u);
  for (const advise::MonitorRule& r : advise::MonitorRules()) {
    SCOPED_TRACE(r.id);
    EXPECT_TRUE(ids.insert(r.id).second);
    EXPECT_FALSE(r.threshold.empty());
    EXPECT_FALSE(r.saving_model.empty());
    EXPECT_FALSE(r.fix.empty());
    EXPECT_FALSE(r.evidence_keys.empty());
    EXPECT_NE(r.reads, 0u);
    EXPECT_GT(r.confidence, 0);
    EXPECT_LE(r.confidence, 1);
    EXPECT_NE(r.run, nullptr);
    EXPECT_EQ(advise::FindMonitorRule(r.id), &r);
  }
}

// Every rule fires on a series made for it, with the evidence keys the table names and the
// units their suffixes say.
TEST(MonitorRules, EveryRuleFiresWithItsDocumentedEvidenceKeys) {
  std::vector<Recording> series;
  Shape s;
  s.gpu_util = 100, s.power_w = 90;
  series.push_back(Series(s, 180));  // probably_hung
  s = Shape(), s.gpu_util = 43, s.main_pct = 100, s.workers = {2, 1};
  series.push_back(Series(s, 30));  // input_single_threaded
  s = Shape(), s.main_pct = 99;
  series.push_back(Series(s, 30));  // main_cpu_bound
  s = Shape(), s.gpu_util = 50, s.workers = {95, 97}, s.throttle = kThrottleSwPowerCap;
  series.push_back(Series(s, 30));  // workers_saturated, throttled
  s = Shape(), s.gpu_util = 50;
  Recording busy = Series(s, 30);
  for (Sample& x : busy.samples) x.core_busy_pct = {95, 97};
  series.push_back(busy);  // cpu_saturated
  s = Shape(), s.gpu_util = 10, s.main_pct = 5, s.mem_used = 10'000'000'000;
  Recording reads = Series(s, 30);
  reads.samples.back().processes[0].read_bytes = 30'000'000;
  series.push_back(reads);  // waiting, memory_headroom
  s = Shape(), s.gpu_util = 50, s.main_pct = 50, s.workers = {40};
  series.push_back(Series(s, 30));  // gpu_underused
  s = Shape(), s.main_pct = 26, s.workers = {1, 2};
  series.push_back(Series(s, 30));  // waits_on_workers
  s = Shape(), s.gpu_util = 95;
  Recording two = Series(s, 30);
  for (Sample& x : two.samples) {
    x.gpus.push_back(x.gpus[0]);
    x.gpus[1].index = 1;
    x.gpus[1].sm_util_pct = 40;
  }
  series.push_back(two);  // gpu_imbalance
  Recording stalls = Series(s, 60);
  for (size_t i = 0; i < stalls.samples.size(); ++i)
    if (i % 10 >= 7) stalls.samples[i].gpus[0].sm_util_pct = 0;
  series.push_back(stalls);  // periodic_stall
  std::map<std::string, std::set<std::string>> keys;
  for (const Recording& r : series)
    for (const MonitorFinding& f : Judge(r).advice.findings)
      for (const render::Field& e : f.evidence) {
        keys[f.id].insert(e.key);
        const std::string_view suffix = render::RequiredSuffix(e.value.unit);
        EXPECT_TRUE(e.key.size() >= suffix.size() &&
                    e.key.compare(e.key.size() - suffix.size(), suffix.size(), suffix) == 0)
            << f.id << ": " << e.key;
      }
  for (const advise::MonitorRule& r : advise::MonitorRules()) {
    SCOPED_TRACE(r.id);
    ASSERT_TRUE(keys.count(r.id)) << "never fired";
    for (const std::string& k : keys[r.id])
      EXPECT_NE(r.evidence_keys.find(k), std::string::npos) << k << " is not in the table";
  }
}

// No GPU data, a main process at 26 % of a core and two idle workers (a DataLoader whose
// __getitem__ sleeps or reads slow storage): the verdict is that the loop waits for its input,
// not "no GPU data". With a busy GPU the same CPU numbers are no such finding.
TEST(MonitorRules, AMainProcessOffTheCpuWithWorkersWaitsForItsInput) {
  Shape s;
  s.main_pct = 26, s.workers = {1, 2};
  const auto judged = Judge(Series(s, 30));
  ASSERT_FALSE(judged.advice.findings.empty());
  EXPECT_EQ(judged.advice.findings[0].id, "waits_on_workers");
  EXPECT_NE(judged.advice.verdict.find("off the CPU 74 % of the time"), std::string::npos)
      << judged.advice.verdict;
  EXPECT_NE(judged.advice.verdict.find("→ The training process waits for its input"), std::string::npos)
      << judged.advice.verdict;
  s.gpu_util = 95;
  for (const MonitorFinding& f : Judge(Series(s, 30)).advice.findings)
    EXPECT_NE(f.id, "waits_on_workers");
}

TEST(MonitorRules, DocsRuleTableIsTheCodesTable) {
  std::ifstream file(std::string(GPUSCOPE_SOURCE_DIR) + "/docs/monitor.md");
  ASSERT_TRUE(file.good());
  std::stringstream doc;
  doc << file.rdbuf();
  const std::string table = advise::MonitorRulesMarkdown();
  EXPECT_NE(doc.str().find(table), std::string::npos)
      << "docs/monitor.md must hold this table (regenerate it from "
         "advise::MonitorRulesMarkdown()):\n"
      << table;
}

}  // namespace
}  // namespace gpuscope::monitor
