// analyze::RunAll / RunAllRanks against each analysis run alone (each classifying the trace's
// kernels itself, as before the shared KernelClasses), on real and generated traces; the thread
// count must not change a byte of the report; and the monitor section beside a trace.
#include "analyze/run_all.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "gpuscope/ingest.h"
#include "gpuscope/synth.h"
#include "render/json.h"
#include "report/document.h"
#include "report/report.h"
#include "test_util.h"

namespace gpuscope::analyze {
namespace {

// A temporary folder removed at the end of the test.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("gpuscope_run_all_" + std::to_string(getpid()) + "_" + name)) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& file) const { return (path_ / file).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::vector<Trace> LoadShared(const std::vector<std::string>& rel) {
  std::vector<Trace> traces;
  for (const std::string& r : rel) {
    auto t = LoadTrace(testing::SharedDir() + "/traces/" + r);
    EXPECT_TRUE(t.ok()) << r;
    if (t.ok()) traces.push_back(std::move(t.value()));
  }
  return traces;
}

// The report document of `ranks` without advice, as JSON: every analysis result.
std::string JsonOf(std::vector<RankResults> ranks) {
  report::Report rep;
  for (RankResults& r : ranks) {
    report::RankReport rr;
    static_cast<RankResults&>(rr) = std::move(r);
    rep.ranks.push_back(std::move(rr));
  }
  return render::ToJson(report::BuildDocument(rep));
}

// Each analysis alone, in sequence, each building what it needs (the old per-analysis calls).
std::string JsonOfAnalysesAlone(const std::vector<Trace>& traces) {
  std::vector<RankResults> ranks(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) {
    const Trace& t = traces[i];
    RankResults& r = ranks[i];
    r.trace = &t;
    r.summary = SummarizeTrace(t);
    r.gpu_time = AnalyzeGpuTime(t);
    r.steps = AnalyzeSteps(t);
    r.kernels = AnalyzeKernels(t);
    LaunchOptions lo;
    lo.keep_rows = false;
    r.launches = AnalyzeLaunches(t, lo);
    r.copies = AnalyzeCopies(t);
    r.sync = AnalyzeSyncPoints(t);
    r.memory = AnalyzeMemory(t);
    r.occupancy = AnalyzeOccupancy(t, r.steps);
    r.idle_gaps = AnalyzeIdleGaps(t, r.steps, r.sync);
    r.op_shapes = AnalyzeOpShapes(t);
    r.op_costs = AnalyzeOpCosts(t, BuildKernelClasses(t), r.steps);
    r.step_graph = BuildStepGraph(t, BuildKernelClasses(t), r.steps);
    r.critical_path = FindCriticalPath(r.step_graph, Replay(r.step_graph));
    r.step_timeline = BuildStepTimeline(t, BuildKernelClasses(t), r.steps);
  }
  return JsonOf(std::move(ranks));
}

std::string JsonOfRunAll(const std::vector<Trace>& traces, int threads) {
  ThreadPool pool(threads);
  JobResults job = RunAllRanks(traces, RunOptions(), pool);
  return JsonOf(std::move(job.ranks));
}

std::string ReportJson(const std::vector<Trace>& traces, int threads) {
  ThreadPool pool(threads);
  return render::ToJson(report::BuildDocument(report::BuildReport(traces, {}, pool)));
}

TEST(RunAll, EqualsEachAnalysisAloneOnRealTraces) {
  GPUSCOPE_REQUIRE_SHARED();
  // Communication kernels (NCCL, with collective args), a ROCm trace, float timestamps, and two
  // ranks loaded together.
  for (const std::vector<std::string>& rel : std::vector<std::vector<std::string>>{
           {"hta/nccl_parser_config_A100_rank0of2.json.gz"},
           {"hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz"},
           {"hta/ns_resolution_V100_rank0.pt.trace.json.gz"},
           {"hta/sampled_rank-0.json.gz", "hta/sampled_rank-1.json.gz"}}) {
    const std::vector<Trace> traces = LoadShared(rel);
    ASSERT_EQ(traces.size(), rel.size());
    const std::string alone = JsonOfAnalysesAlone(traces);
    EXPECT_GT(alone.size(), 10000u);
    EXPECT_EQ(JsonOfRunAll(traces, 1), alone) << rel[0];
    EXPECT_EQ(JsonOfRunAll(traces, 3), alone) << rel[0];
  }
}

TEST(RunAll, ResultsHoldEveryAnalysisOfTheRank) {
  GPUSCOPE_REQUIRE_SHARED();
  const std::vector<Trace> traces = LoadShared({"hta/nccl_parser_config_A100_rank0of2.json.gz"});
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = traces[0];
  ThreadPool pool(2);
  const RankResults r = RunAll(t, RunOptions(), pool);
  EXPECT_EQ(r.trace, &t);
  // The shared classes are the per-row and per-name functions' answers.
  const std::vector<KernelClass> rows = ClassifyTraceGpuActivities(t);
  EXPECT_EQ(r.kernel_classes.row, rows);
  size_t communication = 0;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    const KernelNameInfo& n = r.kernel_classes.OfName(t.gpu.name[i]);
    ASSERT_EQ(n.hta, HtaKernelTypeOf(t.Str(t.gpu.name[i])));
    ASSERT_EQ(n.short_name, ShortKernelName(t.Str(t.gpu.name[i])));
    communication += rows[i] == KernelClass::kCommunication;
  }
  EXPECT_GT(communication, 0u);
  // Each result is that analysis's own, spot-checked on fields every later stage relies on.
  const GpuTime g = AnalyzeGpuTime(t);
  EXPECT_EQ(r.gpu_time.exclusive.span_ns, g.exclusive.span_ns);
  EXPECT_EQ(r.gpu_time.exclusive.exposed_communication_ns, g.exclusive.exposed_communication_ns);
  EXPECT_EQ(r.gpu_time.temporal.compute_ns, g.temporal.compute_ns);
  EXPECT_GT(r.gpu_time.exclusive.span_ns, 0);
  const StepsResult s = AnalyzeSteps(t);
  ASSERT_EQ(r.steps.steps.size(), s.steps.size());
  EXPECT_EQ(r.steps.mean_steady_step_ns, s.mean_steady_step_ns);
  EXPECT_EQ(r.kernels.classes[1].total_ns, AnalyzeKernels(t).classes[1].total_ns);
  EXPECT_EQ(r.occupancy.compute_kernel_ns, AnalyzeOccupancy(t, s).compute_kernel_ns);
  EXPECT_EQ(r.idle_gaps.gaps, AnalyzeIdleGaps(t, s, AnalyzeSyncPoints(t)).gaps);
  EXPECT_EQ(r.summary.counts.kernels, SummarizeTrace(t).counts.kernels);
  EXPECT_FALSE(r.monitor.has_value());  // no recording given
}

TEST(RunAll, EqualsEachAnalysisAloneOnGeneratedRanks) {
  TempDir dir("synth");
  SynthOptions o;
  o.ranks = 3;
  o.steps = 5;
  o.layers = 4;
  o.straggler_rank = 1;
  o.exposed_comm_fraction = 0.2;
  o.sync_stall_fraction = 0.1;
  o.tiny_grid_fraction = 0.3;
  o.dataloader_stall_fraction = 0.2;
  ASSERT_TRUE(WriteSynthTraces(o, dir.str()).ok());
  auto loaded = LoadInputs(dir.str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->traces.size(), 3u);
  const std::string alone = JsonOfAnalysesAlone(loaded->traces);
  EXPECT_EQ(JsonOfRunAll(loaded->traces, 1), alone);
  EXPECT_EQ(JsonOfRunAll(loaded->traces, 2), alone);
  EXPECT_EQ(JsonOfRunAll(loaded->traces, 4), alone);
}

// The whole report, advice included, is byte-identical on 1, 2 and 3 threads.
TEST(RunAll, ReportJsonDoesNotDependOnTheThreadCount) {
  TempDir dir("threads");
  SynthOptions o;
  o.ranks = 4;
  o.steps = 4;
  o.layers = 3;
  o.straggler_rank = 2;
  o.exposed_comm_fraction = 0.1;
  ASSERT_TRUE(WriteSynthTraces(o, dir.str()).ok());
  auto loaded = LoadInputs(dir.str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::string one = ReportJson(loaded->traces, 1);
  EXPECT_NE(one.find("\"verdict\""), std::string::npos);
  EXPECT_EQ(ReportJson(loaded->traces, 2), one);
  EXPECT_EQ(ReportJson(loaded->traces, 3), one);
  if (testing::HaveShared()) {
    const std::vector<Trace> real =
        LoadShared({"hta/trace_diff_control_A100_rank3of8.json.gz"});
    ASSERT_EQ(real.size(), 1u);
    const std::string real_one = ReportJson(real, 1);
    EXPECT_EQ(ReportJson(real, 2), real_one);
  }
}

// The loader on a shared pool gives the same models as on its own threads (its parse batches and
// the analyses share the pool in `gpuscope analyze`).
TEST(RunAll, LoadingOnTheSharedPoolGivesTheSameReport) {
  TempDir dir("pool");
  SynthOptions o;
  o.steps = 6;
  const std::string path = dir / "rank0.json";
  ASSERT_TRUE(WriteSynthTrace(o, 0, path).ok());
  ThreadPool pool(2);
  LoadOptions with_pool;
  with_pool.pool = &pool;
  with_pool.batch_bytes = 64 * 1024;  // many batches, so several are in flight
  LoadOptions alone;
  alone.threads = 1;
  auto a = LoadInputs(path, with_pool);
  auto b = LoadInputs(path, alone);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->traces[0].gpu.size(), b->traces[0].gpu.size());
  EXPECT_EQ(render::ToJson(report::BuildDocument(report::BuildReport(a->traces, {}, pool))),
            render::ToJson(report::BuildDocument(report::BuildReport(b->traces, {}, 1))));
}

monitor::Recording RecordingWithSamplesAt(const std::vector<int64_t>& times_ns, double util) {
  monitor::Recording rec;
  rec.source = monitor::SourceKind::kRecording;
  rec.start_ns = times_ns.empty() ? 0 : times_ns.front();
  rec.interval_ns = 100'000'000;
  rec.gpus = {{0, "GPU", std::nullopt, std::nullopt}};
  for (int64_t t : times_ns) {
    monitor::Sample s;
    s.time_ns = t;
    monitor::GpuSample g;
    g.sm_util_pct = util;
    s.gpus.push_back(g);
    rec.samples.push_back(s);
  }
  return rec;
}

Trace OneKernelTrace(int64_t ts_us, std::optional<int64_t> base_time_ns) {
  std::string json = "{";
  if (base_time_ns) json += "\"baseTimeNanoseconds\":" + std::to_string(*base_time_ns) + ",";
  json += R"("traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" +
          std::to_string(ts_us) + R"(,"dur":1000000,"args":{"stream":7,"device":0}}]})";
  auto t = LoadTraceFromBytes(json, "one.json");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t.value()) : Trace();
}

// The span is the trace's own times plus baseTimeNanoseconds; only samples inside count.
TEST(MonitorBeside, SamplesWithinTheTracesWallClockSpan) {
  constexpr int64_t kBase = 1'700'000'000'000'000'000;  // 2023-11-14, unix ns
  const Trace t = OneKernelTrace(2'000'000, kBase);       // 2 s → 3 s after the base
  const TraceWallSpan span = WallSpanOf(t);
  ASSERT_TRUE(span.has_events);
  EXPECT_EQ(span.start_ns, kBase + 2'000'000'000);
  EXPECT_EQ(span.end_ns, kBase + 3'000'000'000);
  std::vector<int64_t> times;
  for (int64_t s = 0; s < 50; ++s) times.push_back(kBase + s * 100'000'000);  // 0–4.9 s
  const MonitorBeside m = AnalyzeMonitorBeside(t, RecordingWithSamplesAt(times, 42));
  EXPECT_EQ(m.alignment, MonitorAlignment::kAligned);
  EXPECT_EQ(m.samples_start_ns, kBase);
  EXPECT_EQ(m.samples_end_ns, kBase + 4'900'000'000);
  EXPECT_EQ(m.stats.samples, 11u);  // 2.0, 2.1, …, 3.0 s
}

TEST(MonitorBeside, SaysWhyItCannotLineUp) {
  constexpr int64_t kBase = 1'700'000'000'000'000'000;
  const monitor::Recording rec = RecordingWithSamplesAt({kBase, kBase + 100'000'000}, 50);
  // No events.
  auto empty = LoadTraceFromBytes(R"({"traceEvents":[]})", "empty.json");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(AnalyzeMonitorBeside(*empty, rec).alignment, MonitorAlignment::kNoEvents);
  // A clock that is not unix time: 2 s after some arbitrary zero, no base time.
  EXPECT_EQ(AnalyzeMonitorBeside(OneKernelTrace(2'000'000, std::nullopt), rec).alignment,
            MonitorAlignment::kNotWallClock);
  // Unix µs timestamps (no base) an hour after the recording: a different run.
  const MonitorBeside later =
      AnalyzeMonitorBeside(OneKernelTrace((kBase + 3'600'000'000'000) / 1000, std::nullopt), rec);
  EXPECT_EQ(later.alignment, MonitorAlignment::kNoOverlap);
  EXPECT_EQ(later.span.start_ns, kBase + 3'600'000'000'000);
  EXPECT_EQ(later.samples_end_ns, kBase + 100'000'000);
}

// RunAll computes the monitor section when given a recording.
TEST(MonitorBeside, RunAllAddsItWhenGivenARecording) {
  constexpr int64_t kBase = 1'700'000'000'000'000'000;
  const Trace t = OneKernelTrace(0, kBase);
  const monitor::Recording rec =
      RecordingWithSamplesAt({kBase + 100'000'000, kBase + 200'000'000}, 80);
  RunOptions options;
  options.monitor = &rec;
  ThreadPool pool(2);
  const RankResults r = RunAll(t, options, pool);
  ASSERT_TRUE(r.monitor.has_value());
  EXPECT_EQ(r.monitor->alignment, MonitorAlignment::kAligned);
  EXPECT_EQ(r.monitor->stats.samples, 2u);
}

}  // namespace
}  // namespace gpuscope::analyze
