// `gpuscope tune` below the real-script tests (tests/python/tune_test.py): the search on fake
// objectives (exact trial sequences), the flag parsers, the OOM message table, throughput from
// lines, the results file, the monitor's trial options, the document, and the CLI's errors.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/numbers.h"
#include "monitor/session.h"
#include "render/json.h"
#include "test_util.h"
#include "tune/metric.h"
#include "tune/oom.h"
#include "tune/params.h"
#include "tune/results.h"
#include "tune/search.h"
#include "tune/tune.h"

namespace gpuscope::tune {
namespace {

using testing::RunGpuscope;
using Kind = Evaluation::Kind;

Param Pow2(std::string name, int64_t lo, int64_t hi) {
  Param p;
  p.name = std::move(name);
  p.kind = ParamKind::kPow2;
  p.lo = lo;
  p.hi = hi;
  return p;
}

Param List(std::string name, std::vector<std::string> values) {
  Param p;
  p.name = std::move(name);
  p.values = std::move(values);
  return p;
}

// A fake objective: a function of the setting, and the settings in the order they were run.
struct Fake {
  explicit Fake(std::function<Evaluation(const Setting&)> fn) : f(std::move(fn)) {}
  std::function<Evaluation(const Setting&)> f;
  std::vector<Setting> calls;
  int stop_after = -1;  // kStop from this call on (the budget)
  Objective objective() {
    return [this](const Setting& s) {
      if (stop_after >= 0 && static_cast<int>(calls.size()) >= stop_after)
        return Evaluation{Kind::kStop, 0};
      calls.push_back(s);
      return f(s);
    };
  }
  std::vector<int64_t> Values(const std::string& name) const {
    std::vector<int64_t> v;
    for (const Setting& s : calls) v.push_back(std::stoll(s.at(name)));
    return v;
  }
};

int64_t At(const Setting& s, const std::string& name) { return std::stoll(s.at(name)); }

// ---- The search ------------------------------------------------------------------------------

TEST(TuneSearch, DoublesUntilThePlateauAndKeepsThePlateauPoint) {
  // samples/s = B up to 64, flat beyond (the GPU is full); memory is no limit.
  Fake fake{[](const Setting& s) {
    return Evaluation{Kind::kOk, static_cast<double>(std::min<int64_t>(At(s, "B"), 64))};
  }};
  const SearchResult r = Search({Pow2("B", 8, 1024)}, {}, fake.objective());
  EXPECT_EQ(fake.Values("B"), (std::vector<int64_t>{8, 16, 32, 64, 128}));
  ASSERT_TRUE(r.have_best);
  EXPECT_EQ(r.best.at("B"), "64");  // 128 gains 0 % ≤ 5 %: the plateau point, not the larger
  ASSERT_EQ(r.boundaries.size(), 1u);
  EXPECT_EQ(r.boundaries[0].largest_fit, 128);
  EXPECT_EQ(r.boundaries[0].first_oom, 0);
  EXPECT_FALSE(r.stopped);
}

TEST(TuneSearch, BisectsBetweenTheLastFitAndTheFirstOomToTheExactBoundary) {
  // Fits at 88, out of memory from 89; throughput rises all the way.
  Fake fake{[](const Setting& s) {
    return At(s, "B") > 88 ? Evaluation{Kind::kOom, 0}
                           : Evaluation{Kind::kOk, static_cast<double>(At(s, "B"))};
  }};
  const SearchResult r = Search({Pow2("B", 8, 512)}, {}, fake.objective());
  // Doubling to 128 (OOM), then 64..128: 96 OOM, 80 fits, 88 fits, 92, 90, 89 OOM.
  EXPECT_EQ(fake.Values("B"), (std::vector<int64_t>{8, 16, 32, 64, 128, 96, 80, 88, 92, 90, 89}));
  EXPECT_EQ(r.best.at("B"), "88");  // the largest that fits: +10 % over 80
  EXPECT_EQ(r.boundaries[0].largest_fit, 88);
  EXPECT_EQ(r.boundaries[0].first_oom, 89);
  EXPECT_TRUE(r.boundaries[0].exact());
}

TEST(TuneSearch, APlateauBelowTheBoundaryKeepsTheSmallerBatch) {
  // Flat from 64 (within 1 %), OOM above 96: the bisection still finds 96, the best stays 64.
  Fake fake{[](const Setting& s) {
    const int64_t b = At(s, "B");
    if (b > 96) return Evaluation{Kind::kOom, 0};
    return Evaluation{Kind::kOk, b <= 64 ? static_cast<double>(b) : 64.0 * (1 + 0.0001 * b)};
  }};
  const SearchResult r = Search({Pow2("B", 16, 512)}, {}, fake.objective());
  EXPECT_EQ(fake.Values("B"), (std::vector<int64_t>{16, 32, 64, 128, 96, 112, 104, 100, 98, 97}));
  EXPECT_EQ(r.best.at("B"), "64");
  EXPECT_EQ(r.boundaries[0].largest_fit, 96);
  EXPECT_EQ(r.boundaries[0].first_oom, 97);
}

TEST(TuneSearch, TheFirstSizeOutOfMemoryStopsWithNothingThatFits) {
  Fake fake{[](const Setting&) { return Evaluation{Kind::kOom, 0}; }};
  const SearchResult r = Search({Pow2("B", 8, 64), List("W", {"0", "2"})}, {}, fake.objective());
  EXPECT_EQ(fake.calls.size(), 1u);
  EXPECT_FALSE(r.have_best);
  EXPECT_EQ(r.boundaries[0].largest_fit, 0);
  EXPECT_EQ(r.boundaries[0].first_oom, 8);
  ASSERT_FALSE(r.log.empty());
  EXPECT_NE(r.log[0].find("nothing to compare with"), std::string::npos);
}

TEST(TuneSearch, ListValuesReplaceTheBestOnlyBeyondTheThreshold) {
  // W = 4 is planted; 8 is 3 % better (noise): the value listed first of the two stays.
  const std::map<std::string, double> tp = {{"0", 100}, {"1", 150}, {"2", 250}, {"4", 400},
                                            {"8", 412}};
  Fake fake{[&](const Setting& s) { return Evaluation{Kind::kOk, tp.at(s.at("W"))}; }};
  const SearchResult r = Search({List("W", {"0", "1", "2", "4", "8"})}, {}, fake.objective());
  EXPECT_EQ(r.best.at("W"), "4");
  EXPECT_EQ(fake.calls.size(), 5u);
}

TEST(TuneSearch, CoordinateDescentRevisitsTheBatchAfterTheWorkersChanged) {
  // With 0 workers loading caps throughput at 40 samples/s; with 4 workers the batch is the limit.
  // OOM above 100.
  Fake fake{[](const Setting& s) {
    const int64_t b = At(s, "B");
    if (b > 100) return Evaluation{Kind::kOom, 0};
    const double cap = s.at("W") == "0" ? 40.0 : 1000.0;
    return Evaluation{Kind::kOk, std::min(static_cast<double>(b), cap)};
  }};
  const SearchResult r = Search({Pow2("B", 8, 256), List("W", {"0", "4"})}, {}, fake.objective());
  std::vector<std::pair<int64_t, std::string>> seq;
  for (const Setting& s : fake.calls) seq.push_back({At(s, "B"), s.at("W")});
  const std::vector<std::pair<int64_t, std::string>> want = {
      // Round 1, B at W=0: 64 reaches the cap (40, +25 % over 32: beats), 128 is out of memory.
      {8, "0"}, {16, "0"}, {32, "0"}, {64, "0"}, {128, "0"},
      // Bisection 64..128 (all that fits gives 40: no gain, the best stays 64).
      {96, "0"}, {112, "0"}, {104, "0"}, {100, "0"}, {102, "0"}, {101, "0"},
      // W at the best batch: 4 workers beat 0.
      {64, "4"},
      // Round 2: B upwards from 64, capped at the largest size known to fit (no new bisection);
      // W at the new best batch needs no trial: (100, 0) ran in the bisection.
      {100, "4"},
  };
  EXPECT_EQ(seq, want);
  EXPECT_EQ(r.best.at("B"), "100");
  EXPECT_EQ(r.best.at("W"), "4");
  EXPECT_EQ(r.boundaries[0].largest_fit, 100);
  EXPECT_EQ(r.boundaries[0].first_oom, 101);
  EXPECT_EQ(r.rounds, 3);  // round 3 changes nothing
}

TEST(TuneSearch, TheBudgetStopsBeforeTheNextTrialAndSaysWhatWasNotTried) {
  Fake fake{[](const Setting& s) { return Evaluation{Kind::kOk, static_cast<double>(At(s, "B"))}; }};
  fake.stop_after = 3;
  const SearchResult r = Search({Pow2("B", 8, 512), List("W", {"0", "2"})}, {}, fake.objective());
  EXPECT_EQ(fake.Values("B"), (std::vector<int64_t>{8, 16, 32}));
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stopped_at.at("B"), "64");
  EXPECT_EQ(r.best.at("B"), "32");  // the best so far
  EXPECT_EQ(r.not_reached, std::vector<std::string>{"W"});
}

TEST(TuneSearch, ATrialWithoutResultEndsTheBisectionWithAnInexactBoundary) {
  Fake fake{[](const Setting& s) {
    const int64_t b = At(s, "B");
    if (b == 96) return Evaluation{Kind::kBad, 0};
    return b > 90 ? Evaluation{Kind::kOom, 0} : Evaluation{Kind::kOk, static_cast<double>(b)};
  }};
  const SearchResult r = Search({Pow2("B", 32, 512)}, {}, fake.objective());
  EXPECT_EQ(fake.Values("B"), (std::vector<int64_t>{32, 64, 128, 96}));
  EXPECT_FALSE(r.boundaries[0].exact());
  EXPECT_EQ(r.boundaries[0].largest_fit, 64);
  EXPECT_EQ(r.boundaries[0].first_oom, 128);
}

// ---- Flags ----------------------------------------------------------------------------------

TEST(TuneParams, ParsesListsAndPow2Ranges) {
  auto list = ParseParam("WORKERS=0, 2,4");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(list->kind, ParamKind::kList);
  EXPECT_EQ(list->values, (std::vector<std::string>{"0", "2", "4"}));
  auto pow2 = ParseParam("BATCH=pow2:8..512");
  ASSERT_TRUE(pow2.ok());
  EXPECT_EQ(pow2->kind, ParamKind::kPow2);
  EXPECT_EQ(pow2->lo, 8);
  EXPECT_EQ(pow2->hi, 512);
  auto precision = ParseParam("PREC=bf16,fp32");
  ASSERT_TRUE(precision.ok());
  EXPECT_EQ(precision->values.front(), "bf16");
}

TEST(TuneParams, BadParamsSayWhatWasExpectedWithAnExample) {
  for (const char* bad : {"BATCH", "1BATCH=2", "BATCH=pow2:8", "BATCH=pow2:0..8",
                          "BATCH=pow2:64..8", "BATCH=pow2:a..b", "W=0,,2", "W=", "W=1,1"}) {
    auto p = ParseParam(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), StatusCode::kUsage);
    EXPECT_NE(p.status().message().find(bad), std::string::npos) << p.status().message();
  }
  EXPECT_NE(ParseParam("BATCH").status().message().find("e.g. --param WORKERS=0,1,2,4"),
            std::string::npos);
  EXPECT_FALSE(CheckParams({}).ok());
  EXPECT_FALSE(CheckParams({List("W", {"1"}), List("W", {"2"})}).ok());
}

TEST(TuneParams, PlaceholdersAreReplacedAndUnknownOnesRefused) {
  const std::vector<Param> params = {Pow2("BATCH", 8, 64), List("W", {"0"})};
  const std::vector<std::string> cmd = {"python", "train.py", "--bs={BATCH}", "-w", "{W}",
                                        "--fmt={{x}}", "{TRACE_DIR}/t"};
  EXPECT_TRUE(CheckPlaceholders(cmd, params, true).ok());
  const Status no_traces = CheckPlaceholders(cmd, params, false);
  ASSERT_FALSE(no_traces.ok());
  EXPECT_NE(no_traces.message().find("{TRACE_DIR} needs --traces"), std::string::npos);
  const Status unknown = CheckPlaceholders({"x", "{BATCHSIZE}"}, params, false);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.code(), StatusCode::kUsage);
  EXPECT_NE(unknown.message().find("{BATCHSIZE} names no --param (known: BATCH, W"),
            std::string::npos);
  const Setting s = {{"BATCH", "32"}, {"W", "4"}};
  EXPECT_EQ(Substitute(cmd, s, "/tmp/tr"),
            (std::vector<std::string>{"python", "train.py", "--bs=32", "-w", "4", "--fmt={x}",
                                      "/tmp/tr/t"}));
  EXPECT_EQ(SettingEnvironment(s, "/tmp/tr"),
            (std::vector<std::string>{"GPUSCOPE_BATCH=32", "GPUSCOPE_W=4",
                                      "GPUSCOPE_TRACE_DIR=/tmp/tr"}));
  EXPECT_EQ(SettingText(FirstSetting(params), params), "BATCH=8 W=0");
}

TEST(TuneParams, DurationsPercentagesAndWarmup) {
  EXPECT_EQ(*ParseTuneDuration("20m", "--budget"), 1200'000'000'000);
  EXPECT_EQ(*ParseTuneDuration("60s", "--trial-time"), 60'000'000'000);
  EXPECT_EQ(*ParseTuneDuration("1.5h", "--budget"), 5400'000'000'000);
  EXPECT_EQ(*ParseTuneDuration("500ms", "--trial-time"), 500'000'000);
  for (const char* bad : {"20", "m", "-5s", "0s", "5 parsecs", "31d"}) {
    auto d = ParseTuneDuration(bad, "--budget");
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find("--budget \"" + std::string(bad) + "\" is not a duration"),
              std::string::npos);
  }
  EXPECT_DOUBLE_EQ(*ParsePercent("5%", "--plateau"), 0.05);
  EXPECT_DOUBLE_EQ(*ParsePercent("12.5", "--plateau"), 0.125);
  EXPECT_FALSE(ParsePercent("150%", "--plateau").ok());
  EXPECT_EQ(ParseWarmup("3")->count, 3);
  EXPECT_EQ(ParseWarmup("10s")->ns, 10'000'000'000);
  EXPECT_EQ(ParseWarmup("10s")->count, 0);
  EXPECT_FALSE(ParseWarmup("soon").ok());
}

// ---- Out-of-memory messages ------------------------------------------------------------------

TEST(TuneOom, TheFrameworksMessagesAsTheyPrintThem) {
  const std::pair<const char*, const char*> cases[] = {
      {"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
       "79.15 GiB total capacity; 76.02 GiB already allocated; 1.02 GiB free; 77.34 GiB reserved "
       "in total by PyTorch)",
       "PyTorch (CUDA)"},
      {"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB", "PyTorch (CUDA)"},
      {"torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
       "capacity of 191.98 GiB",
       "PyTorch (ROCm)"},
      {"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
       "allocate 4294967296 bytes.",
       "JAX/XLA"},
      {"node0:1234:1234 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'", "NCCL"},
      {"NCCL WARN Failed to CUDA calloc 6291456 bytes", "NCCL"},
      {"RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
       "cuBLAS"},
      {"    raise torch.cuda.OutOfMemoryError(", "PyTorch"},
  };
  for (const auto& [line, framework] : cases) {
    const OomPattern* p = MatchOom(line);
    ASSERT_NE(p, nullptr) << line;
    EXPECT_EQ(p->framework, framework) << line;
  }
  for (const char* line : {"loss 0.31, 512 samples/s", "RuntimeError: CUDA error: device-side "
                                                      "assert triggered",
                           "out of memory in the host allocator? no: plain text", ""})
    EXPECT_EQ(MatchOom(line), nullptr) << line;
}

// PyTorch names the per-process cap when it is what ran out ("13.98 GiB allowed"); the device's
// own out-of-memory message names none.
TEST(TuneOom, ThePerProcessCapIsReadFromPyTorchsMessage) {
  EXPECT_EQ(PerProcessCapGib("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.54 "
                             "GiB. GPU 0 has a total capacity of 139.80 GiB of which 126.35 GiB "
                             "is free. Including non-PyTorch memory, this process has 13.44 GiB "
                             "memory in use. 13.98 GiB allowed; Of the allocated memory"),
            13.98);
  EXPECT_EQ(PerProcessCapGib("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB "
                             "total capacity; 76.02 GiB already allocated)"),
            std::nullopt);
  EXPECT_EQ(PerProcessCapGib(" GiB allowed"), std::nullopt);
  EXPECT_EQ(PerProcessCapGib("1.2.3 GiB allowed"), std::nullopt);
}

// The H200 lab's real tune run (GPT-2 small, seq 1024, bf16, under a 0.1 per-process memory
// fraction; PyTorch 2.11's out-of-memory at batch 8) read back from its results file: every trial
// comes from the file, the boundary is exact, and the report says the cap ran out, not the GPU.
TEST(TuneResults, TheH200RunReadsBackWithItsBoundaryAndCap) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/tune.jsonl");
  testing::ScopedTempDir dir;
  const std::string results = dir.File("tune.jsonl");
  testing::WriteFile(results, testing::ReadFile(testing::RealTrace("gpu_lab_h200/tune.jsonl")));
  const auto r = RunGpuscope(
      "tune --param BATCH=pow2:4..128 --metric '([0-9.]+) samples/s' --warmup 3 --results " +
      results +
      " -- python3 lab.py train-gpt --model gpt2 --batch '{BATCH}' --seq 1024 --mem-fraction 0.1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("trials 4 · of them from the file 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("largest that ran 7 · smallest out of memory 8 · exact yes"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("oom (PyTorch (CUDA))"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8 hit this process's cap, 13.98 GiB allowed"), std::string::npos) << r.out;
}

// ---- Throughput from lines -------------------------------------------------------------------

TEST(TuneMetric, MeanOfTheFirstGroupAfterTheWarmup) {
  MetricSpec spec{MetricKind::kRegex, "([0-9.]+) samples/s", {}};
  auto meter = LineMeter::Make(spec);
  ASSERT_TRUE(meter.ok());
  const char* lines[] = {"step 0: 10.0 samples/s", "noise", "step 1: 20 samples/s",
                         "step 2: 100 samples/s", "step 3: 300 samples/s", "step 4: x samples/s"};
  int64_t t = 0;
  for (const char* l : lines) meter->OnLine(l, t += 1'000'000'000);
  const Measurement m = meter->Measure();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.seen, 4u);
  EXPECT_EQ(m.warmup, 2u);  // the default: the first 2 values
  EXPECT_DOUBLE_EQ(m.value, 200);
  EXPECT_EQ(m.samples, (std::vector<double>{100, 300}));
  EXPECT_EQ(meter->unparsed(), 0u);  // "x" does not match [0-9.]+
  // A time warm-up: values in the first 3.5 s are left out (t = 1, 3 s).
  const Measurement timed = MeasureValues({{1'000'000'000, 1}, {3'000'000'000, 2},
                                           {4'000'000'000, 5}, {5'000'000'000, 7}},
                                          Warmup{0, 3'500'000'000});
  EXPECT_EQ(timed.warmup, 2u);
  EXPECT_DOUBLE_EQ(timed.value, 6);
  EXPECT_FALSE(MeasureValues({{0, 1}, {1, 2}}, Warmup{}).ok);  // all warm-up: no_metric
}

TEST(TuneMetric, StepLinesGiveARate) {
  // 2 warm-up lines, then one line every 0.25 s: 4 steps/s.
  std::vector<int64_t> times = {0, 2'000'000'000};
  for (int i = 0; i < 21; ++i) times.push_back(3'000'000'000 + i * 250'000'000LL);
  const Measurement m = MeasureSteps(times, Warmup{});
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.value, 4.0);
  EXPECT_EQ(m.samples.size(), 10u);  // windows of 2 of the 20 gaps
  for (double s : m.samples) EXPECT_DOUBLE_EQ(s, 4.0);
  EXPECT_FALSE(MeasureSteps({0, 1, 2}, Warmup{}).ok);  // one line after the warm-up: no rate
  auto step = LineMeter::Make({MetricKind::kStep, "^step ", {}});
  ASSERT_TRUE(step.ok());
}

TEST(TuneMetric, ProfilerStepsGiveStepsPerSecond) {
  const Measurement m = MeasureStepSpans({{0, 100'000'000}, {100'000'000, 300'000'000}}, Warmup{0, 0});
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.value, 5.0);  // 2 steps in 0.4 s
  EXPECT_EQ(m.samples, (std::vector<double>{10.0, 1e9 / 3e8}));
}

TEST(TuneMetric, ARegexWithoutGroupOrNotARegexIsAUsageError) {
  auto no_group = LineMeter::Make({MetricKind::kRegex, "samples/s", {}});
  ASSERT_FALSE(no_group.ok());
  EXPECT_NE(no_group.status().message().find("has no capture group"), std::string::npos);
  auto bad = LineMeter::Make({MetricKind::kRegex, "([0-9", {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("is not a regular expression"), std::string::npos);
}

// ---- The results file ------------------------------------------------------------------------

TrialRecord SampleRecord() {
  TrialRecord r;
  r.command = {"python", "train.py", "--bs", "{BATCH}"};
  r.metric = "metric:([0-9.]+) samples/s warmup:2";
  r.params = {{"BATCH", "64"}, {"W", "2"}};
  r.repeat = 1;
  r.outcome = "ok";
  r.throughput = 1234.5;
  r.unit = "samples/s";
  r.samples = {1200, 1269};
  r.values = 12;
  r.warmup = 2;
  r.duration_s = 3.25;
  r.gpu_util_mean_pct = 87.5;
  r.gpu_mem_peak_bytes = 79'000'000'000;
  r.gpu_mem_total_bytes = 80'000'000'000;
  r.tree_cpu_mean_pct = 180;
  r.note = "a \"quoted\" note\twith a tab";
  r.started_unix_ms = 1'700'000'000'000;
  return r;
}

TEST(TuneResults, ARecordReadsBackAsWritten) {
  const TrialRecord r = SampleRecord();
  const std::string line = TrialRecordJson(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = ParseTrialRecord(line);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(SameTrial(r, *back));
  EXPECT_EQ(back->outcome, "ok");
  EXPECT_DOUBLE_EQ(back->throughput, 1234.5);
  EXPECT_EQ(back->samples, r.samples);
  EXPECT_EQ(back->gpu_mem_peak_bytes, r.gpu_mem_peak_bytes);
  EXPECT_EQ(back->note, "a \"quoted\" note with a tab");  // control characters: sanitised
  TrialRecord oom = r;
  oom.outcome = "oom";
  oom.oom_framework = "PyTorch (CUDA)";
  auto oom_back = ParseTrialRecord(TrialRecordJson(oom));
  ASSERT_TRUE(oom_back.ok());
  EXPECT_EQ(oom_back->oom_framework, "PyTorch (CUDA)");
  EXPECT_FALSE(HasThroughput(oom_back->outcome));
}

// Huge but finite values average to a finite mean (a plain sum overflowed to inf, and that trial
// won); a negative number is no throughput: counted as unparsed, left out (issue 36 item 4).
TEST(TuneMetric, HugeValuesStayFiniteAndNegativeOnesAreNotThroughputs) {
  MetricSpec spec{MetricKind::kRegex, "(-?[0-9.e+]+) samples/s", Warmup{0, 0}};
  auto meter = LineMeter::Make(spec);
  ASSERT_TRUE(meter.ok());
  for (const char* l : {"1e308 samples/s", "1.5e308 samples/s", "-5 samples/s", "-1e308 samples/s"})
    meter->OnLine(l, 1'000'000'000);
  const Measurement m = meter->Measure();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.samples, (std::vector<double>{1e308, 1.5e308}));
  EXPECT_TRUE(std::isfinite(m.value));
  EXPECT_DOUBLE_EQ(m.value, 1.25e308);
  EXPECT_EQ(meter->unparsed(), 2u);
  EXPECT_DOUBLE_EQ(MeanOf({1.7e308, 1.7e308, 1.7e308}), 1.7e308);
  EXPECT_EQ(MeanOf({}), 0);
  // A results file with a negative throughput or sample is not ours.
  TrialRecord r = SampleRecord();
  r.throughput = -3;
  EXPECT_FALSE(ParseTrialRecord(TrialRecordJson(r)).ok());
  r = SampleRecord();
  r.samples = {1, -2};
  EXPECT_FALSE(ParseTrialRecord(TrialRecordJson(r)).ok());
}

TEST(TuneResults, BadAndCutLinesAreReportedWithFileAndLineAndSkipped) {
  const std::string good = TrialRecordJson(SampleRecord());
  const std::string text = good + "\n{\"type\":\"something else\"}\n\n" + good + "\n" +
                           good.substr(0, good.size() / 2);
  const ResultsFile f = ReadResults(text, "r.jsonl");
  EXPECT_EQ(f.records.size(), 2u);
  ASSERT_EQ(f.skipped.size(), 2u);
  EXPECT_EQ(f.skipped[0].rfind("r.jsonl:2: not a trial record", 0), 0u) << f.skipped[0];
  EXPECT_EQ(f.skipped[1].rfind("r.jsonl:5: not JSON", 0), 0u) << f.skipped[1];
  EXPECT_NE(f.skipped[1].find("cut short"), std::string::npos);
  EXPECT_TRUE(f.ends_mid_line);
  for (const char* bad : {"[]", "{\"type\":\"gpuscope.tune.trial\"}",
                          "{\"type\":\"gpuscope.tune.trial\",\"command\":[],\"params\":{}}"})
    EXPECT_FALSE(ParseTrialRecord(bad).ok()) << bad;
}

TEST(TuneResults, AppendingAfterACutLineStartsANewLine) {
  const std::string path = testing::TempPath("cut.jsonl");
  const std::string good = TrialRecordJson(SampleRecord());
  testing::WriteFile(path, good + "\n" + good.substr(0, 40));
  auto before = LoadResults(path);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(before->ends_mid_line);
  {
    auto w = ResultsWriter::Open(path, before->ends_mid_line);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(SampleRecord()).ok());
  }
  auto after = LoadResults(path);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->records.size(), 2u);
  EXPECT_EQ(after->skipped.size(), 1u);  // the cut line stays one bad line
  EXPECT_FALSE(after->ends_mid_line);
  auto missing = LoadResults(testing::TempPath("does-not-exist.jsonl"));
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->records.empty());
}

// Issue: a --results path that named a trace (or any file tune did not write) got a
// "not JSON; skipped" line per line of it, then the trials' records appended: the file damaged.
TEST(TuneResults, AFileThatIsNotOursIsRefusedAndOnlyCutRecordsAreTolerated) {
  const std::string good = TrialRecordJson(SampleRecord());
  const std::string trace = testing::TempPath("trace.json.gz");
  const std::string gz = testing::ReadFile(std::string(GPUSCOPE_SOURCE_DIR) +
                                           "/examples/train_input_bound.pt.trace.json.gz");
  ASSERT_GT(gz.size(), 1000u);
  testing::WriteFile(trace, gz);
  auto refused = LoadResults(trace);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "--results " + trace +
                ": not a gpuscope tune results file: it starts with gzip bytes (1f 8b at byte 0); "
                "expected an empty file or JSON lines each with \"type\": "
                "\"gpuscope.tune.trial\" (docs/tune.md) (hint: choose another --results path; "
                "tune appends a line per trial and would damage this file)");
  const std::string cut = good.substr(0, 20);  // a kill within the first record's first bytes
  const std::pair<std::string, std::string> foreign[] = {
      {std::string("\x7f") + "ELF\x02\x01", "it starts with binary bytes (7f at byte 0)"},
      {"{\"traceEvents\": [\n{\"ph\": \"X\"}]}\n", "line 1 (byte 0) is not JSON"},
      {"\n  {\"step\": 1, \"loss\": 0.5}\n", "line 2 (byte 3) is not a trial record"},
      {cut + "\nloss 0.5\n", "line 2 (byte 21) is not JSON"},
  };
  for (const auto& [text, want] : foreign) {
    const ResultsFile f = ReadResults(text, "r.jsonl");
    const Status s = CheckResultsFileIsOurs(text, f, "r.jsonl");
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.message().rfind("--results r.jsonl: not a gpuscope tune results file: " + want, 0),
              0u)
        << s.message();
  }
  // Ours: empty, blank, records with bad lines between, a lone record cut by a kill (with or
  // without the newline a later writer adds), a record of another version.
  for (const std::string& text :
       {std::string(), std::string("\n \n"), "bad line\n" + good + "\n", cut, cut + "\n",
        std::string("{\"type\":\"gpuscope.tune.trial\",\"command\":[]}\n")}) {
    const ResultsFile f = ReadResults(text, "r.jsonl");
    EXPECT_TRUE(CheckResultsFileIsOurs(text, f, "r.jsonl").ok()) << text;
  }
}

// LoadResults decides from the file's first 64 KiB: a large file tune did not write (an
// uncompressed trace: one long line) is refused from its head, not read whole first; a results
// file past 64 KiB is read to its end.
TEST(TuneResults, TheHeadDecidesAndALargeResultsFileIsReadWhole) {
  const std::string trace = testing::TempPath("big_trace.json");
  std::string text = "{\"traceEvents\": [";
  while (text.size() < 200 * 1024) text += "{\"ph\": \"X\", \"name\": \"aten::mm\"}, ";
  text += "{}]}\n" + TrialRecordJson(SampleRecord()) + "\n";  // a record past the head
  testing::WriteFile(trace, text);
  auto refused = LoadResults(trace);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("line 1 (byte 0) is not JSON"), std::string::npos)
      << refused.status().message();
  const std::string results = testing::TempPath("big_results.jsonl");
  std::string lines;
  size_t n = 0;
  for (; lines.size() < 150 * 1024; ++n) lines += TrialRecordJson(SampleRecord()) + "\n";
  testing::WriteFile(results, lines);
  auto loaded = LoadResults(results);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->records.size(), n);
  EXPECT_TRUE(loaded->skipped.empty());
  std::remove(trace.c_str());
  std::remove(results.c_str());
}

TEST(TuneCli, AResultsFileThatIsNotOursIsRefusedBeforeAnyTrialAndLeftUntouched) {
  const std::string trace = testing::TempPath("trace.json.gz");
  const std::string marker = testing::TempPath("ran");
  const std::string gz = testing::ReadFile(std::string(GPUSCOPE_SOURCE_DIR) +
                                           "/examples/train_input_bound.pt.trace.json.gz");
  testing::WriteFile(trace, gz);
  const auto r = RunGpuscope("tune -q --results " + trace +
                             " --param X=1 --metric '([0-9]+) x' -- touch " + marker);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--results " + trace + ": not a gpuscope tune results file"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("choose another --results path"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("skipped"), std::string::npos) << r.err;  // no line per line of the trace
  EXPECT_EQ(testing::ReadFile(trace), gz);                       // not appended to
  EXPECT_FALSE(std::filesystem::exists(marker));                 // no trial ran
}

// One duration parser for every flag (base/numbers.h): `run --interval 1h` (and 59m) was "not a
// duration" while tune's --trial-time took 5m and 1.5h.
TEST(TuneParams, DurationsOfEveryFlagShareOneParser) {
  int64_t ns = 0;
  const std::pair<const char*, int64_t> good[] = {
      {"250ns", 250},
      {"500us", 500'000},
      {"500\u00b5s", 500'000},
      {"100ms", 100'000'000},
      {" 1.5s ", 1'500'000'000},
      {"5m", 300'000'000'000},
      {"2min", 120'000'000'000},
      {"1.5h", 5'400'000'000'000},
      {"1e3ms", 1'000'000'000},
  };
  for (const auto& [text, want] : good) {
    ASSERT_EQ(ParseDurationNs(text, &ns), NumberError::kOk) << text;
    EXPECT_EQ(ns, want) << text;
  }
  for (const char* bad : {"", "5", "ms", "5 parsecs", "1d", "infs", "nanms", "0x10s"})
    EXPECT_EQ(ParseDurationNs(bad, &ns), NumberError::kNotANumber) << bad;
  for (const char* big : {"-1s", "300y", "1e300h"})
    EXPECT_NE(ParseDurationNs(big, &ns), NumberError::kOk) << big;
  EXPECT_EQ(monitor::ParseInterval("1h"), 3'600'000'000'000);
  EXPECT_EQ(monitor::ParseInterval("59m"), 3'540'000'000'000);
  EXPECT_EQ(monitor::ParseInterval("100ms"), 100'000'000);
  EXPECT_EQ(monitor::ParseInterval("0.5s"), 500'000'000);
  EXPECT_EQ(monitor::ParseInterval("9ms"), std::nullopt);  // below 10 ms
  EXPECT_EQ(monitor::ParseInterval("61m"), std::nullopt);  // above 1 h
  EXPECT_EQ(*ParseTuneDuration("1.5h", "--budget"), 5'400'000'000'000);
  EXPECT_FALSE(ParseTuneDuration("500us", "--trial-time").ok());  // below 1 ms
  // The CLI: run and tune take the same words.
  auto r = RunGpuscope("run --interval 1h -- true");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunGpuscope("run --interval 59m -- true");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunGpuscope("run --interval 2h -- true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--interval \"2h\" is not a duration (hint: e.g. 100ms, 0.5s, 2s, 5m; "
                       "between 10ms and 1h)"),
            std::string::npos)
      << r.err;
  r = RunGpuscope("tune -q --results " + testing::TempPath("i.jsonl") +
                  " --interval 1h --warmup 0 --param N=1 --metric '([0-9]+) x' -- echo '{N} x'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// ---- The monitor's options for trials --------------------------------------------------------

TEST(TuneMonitor, TrialOutputIsTeedAsLinesWithTheEnvironmentAndTheTimeLimitEndsTheTree) {
  monitor::RunOptions o;
  // Prints a line with the variable, a progress bar redrawn with \r, then sleeps in a child and a
  // grandchild: the time limit must end all of them.
  o.command = {"sh", "-c",
               "echo \"value=$GPUSCOPE_X\"; printf 'a\\rb\\r'; echo err >&2; "
               "sleep 30 & sh -c 'sleep 30' & wait"};
  o.extra_env = {"GPUSCOPE_X=42"};
  o.time_limit_ns = 1'000'000'000;
  o.interval_ns = 50'000'000;
  o.detached = true;
  o.quiet = true;
  o.echo_stdout_fd = o.echo_stderr_fd = -1;
  std::vector<std::pair<int, std::string>> lines;
  o.on_line = [&](int stream, std::string_view line, int64_t) {
    lines.push_back({stream, std::string(line)});
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto out = monitor::RunAndMonitor(o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(out->timed_out);
  EXPECT_EQ(out->exit_code, 128 + SIGTERM);
  EXPECT_EQ(out->stop_signal, 0);
  EXPECT_LT(s, 4.0);  // 1 s limit; the sleeps die at SIGTERM, not after the 5 s grace
  std::vector<std::pair<int, std::string>> want = {{1, "value=42"}, {1, "a"}, {1, "b"}, {2, "err"}};
  std::sort(lines.begin(), lines.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(lines, want);
}

// ---- Summary, significance and the document --------------------------------------------------

TuneResult FakeResult() {
  TuneResult r;
  r.options.command = {"python", "train.py", "--bs", "{BATCH}"};
  r.options.params = {Pow2("BATCH", 8, 64)};
  r.options.metric = {MetricKind::kRegex, "([0-9.]+) samples/s", {}};
  r.unit = "";
  auto trial = [&](const char* b, const char* outcome, std::vector<double> samples) {
    TrialRecord t = SampleRecord();
    t.command = r.options.command;
    t.params = {{"BATCH", b}};
    t.repeat = 0;
    t.outcome = outcome;
    t.samples = std::move(samples);
    double sum = 0;
    for (double x : t.samples) sum += x;
    t.throughput = t.samples.empty() ? 0 : sum / static_cast<double>(t.samples.size());
    r.trials.push_back(t);
    r.resumed.push_back(false);
  };
  trial("8", "ok", {100, 101, 99, 100, 102, 98});
  trial("16", "ok", {200, 199, 201, 202, 198, 200});
  trial("32", "oom", {});
  r.search.first = {{"BATCH", "8"}};
  r.search.best = {{"BATCH", "16"}};
  r.search.have_best = true;
  r.search.boundaries = {{"BATCH", 16, 32}};
  return r;
}

TEST(TuneDocument, BestGainSignificanceAndTheChange) {
  TuneResult r = FakeResult();
  Summarise(&r);
  EXPECT_NEAR(r.gain_share, 1.0, 1e-9);
  EXPECT_TRUE(r.enough_samples);
  EXPECT_TRUE(r.significant);
  EXPECT_NEAR(r.p_value, 0.002, 0.0005);  // 6 vs 6 fully separated, exact two-sided
  const render::Document doc = BuildTuneDocument(r);
  EXPECT_EQ(doc.schema, "gpuscope.tune");
  const render::Section* best = doc.FindSection("best");
  ASSERT_NE(best, nullptr);
  const auto* params = std::get_if<render::Row>(best->FindItem("params"));
  ASSERT_NE(params, nullptr);
  ASSERT_EQ(params->fields.size(), 1u);
  EXPECT_EQ(params->fields[0].key, "BATCH");
  EXPECT_EQ(params->fields[0].value.text, "16");
  const auto* change = std::get_if<render::Row>(best->FindItem("change"));
  ASSERT_NE(change, nullptr);
  EXPECT_EQ(change->fields[0].value.text, "BATCH 8 → 16");
  EXPECT_EQ(change->fields[1].value.text, "python train.py --bs 16");
  const render::Section* trials = doc.FindSection("trials");
  ASSERT_NE(trials, nullptr);
  const auto* table = std::get_if<render::Table>(trials->FindItem("trials"));
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->rows.size(), 3u);
  // The JSON view reads back into the same document.
  auto back = render::FromJson(render::ToJson(doc), "tune.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, render::AsReadBack(doc));
}

TEST(TuneDocument, OverlappingSamplesAreNotSignificant) {
  TuneResult r = FakeResult();
  r.trials[1].samples = {99, 103, 100, 101, 98, 102};
  r.trials[1].throughput = 100.5;
  Summarise(&r);
  EXPECT_TRUE(r.enough_samples);
  EXPECT_FALSE(r.significant);
  EXPECT_GT(r.p_value, 0.05);
  r.trials[0].samples = {100};
  r.trials[1].samples = {200};
  Summarise(&r);
  EXPECT_FALSE(r.enough_samples);  // 1 vs 1: no ordering is unlikely
}

// ---- The command line ------------------------------------------------------------------------

TEST(TuneCli, BadInputIsExit2WithTheReason) {
  const std::string dir = testing::TempPath("");
  const std::pair<std::string, std::string> cases[] = {
      {"--param BATCH=pow2:8 --metric '([0-9]+)' -- true", "pow2 needs a range"},
      {"--param BATCH=8,16 --metric '([0-9]+)' -- echo {BATCHSIZE}",
       "{BATCHSIZE} names no --param"},
      {"--param BATCH=8,16 -- true", "no throughput to measure"},
      {"--param BATCH=8,16 --metric '([0-9]+)' --step x -- true", "one throughput at a time"},
      {"--param BATCH=8,16 --metric 'samples' -- true", "has no capture group"},
      {"--param BATCH=8,16 --metric '([0-9]+)' --budget 20 -- true", "is not a duration"},
      {"--param BATCH=8,16 --metric '([0-9]+)' --trial-time 2m --budget 1m -- true",
       "shorter than one --trial-time"},
      {"--param BATCH=8,16 --metric '([0-9]+)' python train.py --lr 1",
       "put the command after --"},
  };
  for (const auto& [args, want] : cases) {
    const auto r = RunGpuscope("tune --results " + dir + "/r.jsonl " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << args << "\n" << r.err;
  }
}

TEST(TuneCli, NoTrialWithAValueIsExit2WithAHint) {
  const std::string results = testing::TempPath("nometric.jsonl");
  const auto r = RunGpuscope("tune -q --results " + results +
                             " --param N=1,2 --metric '([0-9.]+) samples/s' --trial-time 5s -- "
                             "sh -c 'echo loss 0.5'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.out.find("no_metric"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no line matched --metric"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("no trial gave a throughput"), std::string::npos) << r.err;
}

TEST(TuneCli, ACommandThatCannotRunIs127) {
  const auto r = RunGpuscope("tune -q --results " + testing::TempPath("x.jsonl") +
                             " --param N=1 --metric '([0-9]+)' -- /nonexistent/train {N}");
  EXPECT_EQ(r.exit_code, 127) << r.err;
  EXPECT_NE(r.err.find("cannot run"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuscope::tune

namespace gpuscope::tune {
namespace {

TEST(TuneCli, TracesGiveStepsPerSecondFromTheStepAnalysisTimesTheBatch) {
  // Each trial writes a (synthetic, deterministic) Kineto trace into {TRACE_DIR}: the same steps
  // whatever N, so samples/s = steps/s × N doubles exactly from N=1 to N=2.
  const std::string results = testing::TempPath("traces.jsonl");
  const auto r = RunGpuscope("tune -q --results " + results +
                             " --param N=pow2:1..2 --traces --trial-time 20s --json -- " +
                             GPUSCOPE_BINARY + " synth -o '{TRACE_DIR}/rank0.pt.trace.json' "
                             "--steps 6 --layers 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto file = LoadResults(results);
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(file->records.size(), 2u);
  const TrialRecord& one = file->records[0];
  const TrialRecord& two = file->records[1];
  EXPECT_EQ(one.outcome, "ok") << one.note;
  EXPECT_EQ(one.unit, "samples/s");
  EXPECT_EQ(one.values, 5);  // steady steps: the step analysis leaves out the first of 6
  EXPECT_GT(one.throughput, 0);
  EXPECT_NEAR(two.throughput / one.throughput, 2.0, 1e-9);
  EXPECT_NE(r.out.find("\"N\": {"), std::string::npos);
  std::error_code ec;
  EXPECT_TRUE(std::filesystem::exists(results + ".traces/trial-2/rank0.pt.trace.json", ec));
}

}  // namespace
}  // namespace gpuscope::tune
