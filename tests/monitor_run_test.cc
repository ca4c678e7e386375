// `gpuscope run`: exit code propagation, signal forwarding, the second Ctrl-C, usage errors, and
// the record formats of a real run on this (GPU-less) machine.
#include <gtest/gtest.h>
#include <signal.h>

#include "ingest/recording/recording_reader.h"
#include "monitor/recorder.h"
#include "monitor/session.h"
#include "monitor/verdict.h"
#include "monitor_test_util.h"

namespace gpuscope::monitor {
namespace {

using testing::ReadFile;
using testing::TempPath;

const std::vector<std::pair<std::string, std::string>> kNoNvml = {
    {"GPUSCOPE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}};

TEST(Run, ReturnsTheChildsExitCodeAndPrintsAVerdict) {
  auto r = testing::RunGpuscopeArgs({"run", "--", "sh", "-c", "echo child-out; exit 3"}, kNoNvml);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out, "child-out\n");  // the child's stdout is untouched; ours goes to stderr
  EXPECT_NE(r.err.find("verdict"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exit code 3"), std::string::npos) << r.err;
}

TEST(Run, ChildKilledBySignalGives128PlusSignal) {
  auto r = testing::RunGpuscopeArgs({"run", "--", "sh", "-c", "kill -TERM $$"}, kNoNvml);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
}

TEST(Run, CommandNotFoundIs127) {
  auto r = testing::RunGpuscopeArgs({"run", "--", "/nonexistent/command"}, kNoNvml);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("cannot run \"/nonexistent/command\""), std::string::npos) << r.err;
}

TEST(Run, BadIntervalIsAUsageError) {
  auto r = testing::RunGpuscopeArgs({"run", "--interval", "fast", "--", "true"}, kNoNvml);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--interval \"fast\" is not a duration (hint:"), std::string::npos) << r.err;
  r = testing::RunGpuscopeArgs({"run", "--interval", "1ms", "--", "true"}, kNoNvml);
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Run, UnwritableRecordFailsBeforeStarting) {
  const std::string marker = TempPath("should_not_exist");
  auto r = testing::RunGpuscopeArgs(
      {"run", "--record", "/nonexistent/dir/x.jsonl", "--", "touch", marker}, kNoNvml);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(Run, SigintReachesTheChild) {
  const std::string out = TempPath("sigint_out"), err = TempPath("sigint_err");
  const pid_t pid = testing::StartGpuscope(
      {"run", "--", GPUSCOPE_BURNER, "--trap", std::to_string(SIGINT), "7"}, out, err, kNoNvml);
  ASSERT_TRUE(testing::WaitForText(out, "ready")) << ReadFile(err);
  kill(pid, SIGINT);
  EXPECT_EQ(testing::WaitExit(pid), 7) << ReadFile(err);
  EXPECT_NE(ReadFile(out).find("got-" + std::to_string(SIGINT)), std::string::npos);
}

TEST(Run, SigtermIsForwardedToo) {
  const std::string out = TempPath("sigterm_out"), err = TempPath("sigterm_err");
  const pid_t pid = testing::StartGpuscope(
      {"run", "--", GPUSCOPE_BURNER, "--trap", std::to_string(SIGTERM), "9"}, out, err, kNoNvml);
  ASSERT_TRUE(testing::WaitForText(out, "ready"));
  kill(pid, SIGTERM);
  EXPECT_EQ(testing::WaitExit(pid), 9);
  EXPECT_NE(ReadFile(out).find("got-" + std::to_string(SIGTERM)), std::string::npos);
}

TEST(Run, SecondSigintKillsAChildThatIgnoresTheFirst) {
  const std::string out = TempPath("sigint2_out"), err = TempPath("sigint2_err");
  // The shell ignores SIGINT; `exec sleep` would inherit that, so sleep runs as its child.
  const pid_t pid = testing::StartGpuscope(
      {"run", "--", "sh", "-c", "trap '' INT; echo ready; sleep 300; echo not-killed"}, out, err,
      kNoNvml);
  ASSERT_TRUE(testing::WaitForText(out, "ready"));
  kill(pid, SIGINT);
  usleep(300'000);
  kill(pid, SIGINT);
  EXPECT_EQ(testing::WaitExit(pid, 60), 128 + SIGKILL) << ReadFile(err);
  EXPECT_EQ(ReadFile(out).find("not-killed"), std::string::npos);
}

// A signal ignored when gpuscope starts (SIGHUP under nohup) stays ignored: gpuscope neither
// forwards it nor resets it to the default in the command.
TEST(Run, SignalIgnoredAtStartStaysIgnored) {
  const std::string out = TempPath("nohup_out"), err = TempPath("nohup_err");
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGHUP, &ignore, &old);  // inherited across fork and exec, like nohup does it
  const pid_t pid = testing::StartGpuscope(
      {"run", "--", "sh", "-c", "echo ready; sleep 2; echo done"}, out, err, kNoNvml);
  sigaction(SIGHUP, &old, nullptr);
  ASSERT_TRUE(testing::WaitForText(out, "ready")) << ReadFile(err);
  kill(pid, SIGHUP);
  EXPECT_EQ(testing::WaitExit(pid), 0) << ReadFile(err);
  EXPECT_NE(ReadFile(out).find("done"), std::string::npos);
}

// The wait between samples ends when the command exits, however long --interval is. (The lost
// wake-up this guards against — the exit landing between waitpid and the sleep — is a narrow
// race; this catches a wait that does not wake on SIGCHLD at all.)
TEST(Run, CommandExitEndsALongIntervalWait) {
  const auto start = std::chrono::steady_clock::now();
  auto r = testing::RunGpuscopeArgs({"run", "--interval", "10s", "--", "true"}, kNoNvml);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(seconds, 5.0);  // generous: the point is not waiting the 10 s interval
}

TEST(Run, DropEveryOtherSampleKeepsTheEvenOnesIntact) {
  std::vector<Sample> samples(5);
  for (int i = 0; i < 5; ++i) {
    samples[i].time_ns = i;
    ProcessSample p;
    p.pid = 100 + i;
    samples[i].processes.push_back(p);
    samples[i].core_busy_pct = {double(i)};
  }
  DropEveryOtherSample(&samples);
  ASSERT_EQ(samples.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(samples[k].time_ns, 2 * k);
    ASSERT_EQ(samples[k].processes.size(), 1u) << "sample " << k;  // sample 0 was self-moved
    EXPECT_EQ(samples[k].processes[0].pid, 100 + 2 * k);
    ASSERT_EQ(samples[k].core_busy_pct.size(), 1u);
  }
  std::vector<Sample> none;
  DropEveryOtherSample(&none);
  EXPECT_TRUE(none.empty());
  std::vector<Sample> one(1);
  one[0].processes.resize(2);
  DropEveryOtherSample(&one);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].processes.size(), 2u);
}

// The --record and --tensorboard files are opened before the command starts; the command must
// not inherit their descriptors (a long-lived child would keep them open, or write into them).
TEST(Run, CommandDoesNotInheritTheOutputFiles) {
  const std::string record = TempPath("cloexec.jsonl"), tb = TempPath("cloexec_tb");
  auto r = testing::RunGpuscopeArgs(
      {"run", "--record", record, "--tensorboard", tb, "--", "sh", "-c",
       "for f in /proc/$$/fd/*; do echo \"fd $f -> $(readlink $f)\"; done"},
      kNoNvml);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fd "), std::string::npos) << r.out;  // the listing worked
  EXPECT_EQ(r.out.find(record), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(tb), std::string::npos) << r.out;
}

TEST(Run, RecordsCsvAndChromeTrace) {
  const std::string csv = TempPath("run.csv"), trace = TempPath("run.json");
  auto r = testing::RunGpuscopeArgs(
      {"run", "--interval", "50ms", "--record", csv, "--", "sh", "-c", "sleep 0.5"}, kNoNvml);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = ReadFile(csv);
  EXPECT_EQ(text.rfind("time_s,unix_ns,source,id,metric,value\n", 0), 0u) << text;
  EXPECT_NE(text.find(",proc,"), std::string::npos);
  EXPECT_NE(text.find(":sh,cpu_pct,"), std::string::npos);
  EXPECT_NE(text.find(",core,0,busy_pct,"), std::string::npos);

  r = testing::RunGpuscopeArgs(
      {"run", "--interval", "50ms", "--record", trace, "--", "sh", "-c", "sleep 0.5"}, kNoNvml);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = ReadFile(trace);
  EXPECT_EQ(json.rfind("{\"displayTimeUnit\"", 0), 0u);
  EXPECT_NE(json.find("\"ph\":\"C\""), std::string::npos);
  EXPECT_NE(json.find("CPU % by process"), std::string::npos);
  EXPECT_NE(json.find("]}"), std::string::npos);
}

TEST(Run, AnalyzeReadsTheRecordingBack) {
  const std::string record = TempPath("back.jsonl");
  auto r = testing::RunGpuscopeArgs(
      {"run", "--interval", "50ms", "--record", record, "--", "sh", "-c", "sleep 0.5"}, kNoNvml);
  ASSERT_EQ(r.exit_code, 0);
  auto a = testing::RunGpuscopeArgs({"analyze", record});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("gpuscope monitor · recording"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("verdict"), std::string::npos) << a.out;
  a = testing::RunGpuscopeArgs({"analyze", "--json", record});
  EXPECT_NE(a.out.find("\"monitor_schema_version\": 1"), std::string::npos) << a.out;
}

}  // namespace
}  // namespace gpuscope::monitor

namespace gpuscope::monitor {
namespace {

TEST(AnalyzeMonitor, SummarisesTheSamplesWithinTheTracesSpan) {
  // The bundled example trace spans 1734973733.079–1734973733.369 s (unix). A recording with
  // samples inside (60 %) and outside (5 %) that window: only the inside ones count.
  const std::string record = testing::TempPath("aligned.jsonl");
  {
    auto rec = Recorder::Open(record);
    ASSERT_TRUE(rec.ok());
    Recording meta;
    meta.start_ns = 1734973732'000'000'000;
    meta.interval_ns = 50'000'000;
    meta.gpus = {{0, "NVIDIA A100-SXM4-80GB", 80'000'000'000, 400}};
    (*rec)->WriteHeader(meta);
    for (int64_t t = meta.start_ns; t < meta.start_ns + 3'000'000'000; t += meta.interval_ns) {
      Sample s;
      s.time_ns = t;
      GpuSample g;
      const bool inside = t >= 1734973733'079'000'000 && t <= 1734973733'369'000'000;
      g.sm_util_pct = inside ? 60 : 5;
      s.gpus.push_back(g);
      (*rec)->WriteSample(s);
    }
    ASSERT_TRUE((*rec)->Finish(meta).ok());
  }
  auto r = testing::RunGpuscopeArgs({"analyze",
                                     std::string(GPUSCOPE_SOURCE_DIR) +
                                         "/examples/train_input_bound.pt.trace.json.gz",
                                     "--monitor", record});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("monitor " + record + " within"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("util 60 %"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("6 samples"), std::string::npos) << r.out;  // 50 ms apart in 290 ms
}

// Found with fuzz/monitor_log_fuzz (on a hand-made input): times near ±2^63 ns in a recording
// overflowed the verdict's duration (UBSan). A time outside 0 … year 2200 is a malformed line naming the key.
TEST(AnalyzeMonitor, RecordingTimesOutOfRangeAreMalformedLines) {
  const std::string text =
      "{\"type\":\"header\",\"format\":\"gpuscope-monitor\",\"version\":1,"
      "\"start_ns\":1705314225000000000}\n"
      "{\"type\":\"sample\",\"t_ns\":-9223372036854775807,\"gpus\":[{\"index\":0}]}\n"
      "{\"type\":\"sample\",\"t_ns\":1705314225100000000,\"gpus\":[{\"index\":0}]}\n"
      "{\"type\":\"sample\",\"t_ns\":9223372036854775807,\"gpus\":[{\"index\":0}]}\n"
      "{\"type\":\"end\",\"end_ns\":9223372036854775807}\n";
  auto rec = ingest::ParseJsonlRecording(text, "run.jsonl");
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  EXPECT_EQ(rec->samples.size(), 1u);
  EXPECT_EQ(rec->malformed_lines, 3u);
  ASSERT_FALSE(rec->malformed_examples.empty());
  EXPECT_EQ(rec->malformed_examples[0],
            "run.jsonl:2: t_ns is not a time in ns (expected an integer from 0 to "
            "7258118400000000000, the year 2200)");
  const MonitorReport report = BuildMonitorReport(*rec);
  EXPECT_GE(report.duration_ns, 0);
  EXPECT_EQ(report.malformed_lines, 3u);
}

}  // namespace
}  // namespace gpuscope::monitor
