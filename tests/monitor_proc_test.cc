// The /proc path: parsing, and a real child that burns CPU in threads and forks idle workers.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "analyze/monitor_stats.h"
#include "base/sanitize.h"
#include "monitor/proc.h"
#include "ingest/registry.h"
#include "monitor/recorder.h"
#include "monitor_test_util.h"

namespace gpuscope::monitor {
namespace {

TEST(ProcStat, NameWithSpacesAndParentheses) {
  // Fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  // utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss …
  const std::string text =
      "4242 (pt_data (worker) 1) S 4000 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 "
      "12345 1000000 2048 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto s = ParseProcStat(text, 100, 4096);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, 4242);
  EXPECT_EQ(s->ppid, 4000);
  EXPECT_EQ(s->name, "pt_data (worker) 1");
  EXPECT_EQ(s->cpu_time_ns, 300u * 10'000'000u);  // 300 ticks at 100 Hz = 3 s
  EXPECT_EQ(s->rss_bytes, 2048u * 4096u);
  EXPECT_FALSE(ParseProcStat("garbage", 100, 4096).has_value());
  EXPECT_FALSE(ParseProcStat("1 (x) S 0 1", 100, 4096).has_value());
}

// The shared sanitiser (base/sanitize.h) on the characters that drive a terminal: C0 (ESC, BEL,
// newline), DEL, C1 (U+009B is an 8-bit CSI) become a space, invalid UTF-8 becomes U+FFFD, valid
// text stays.
TEST(ProcStat, NamesGoThroughTheSharedSanitiser) {
  SanitizeFixes fixes;
  std::string out;
  fixes = SanitizeText("a\x1b[2Jb\x07" "c\nd\x7f" "e\xc2\x9b" "1m", &out);
  EXPECT_EQ(out, "a [2Jb c d e 1m");
  EXPECT_TRUE(fixes.control);
  EXPECT_FALSE(fixes.invalid_utf8);
  fixes = SanitizeText("caf\xc3\xa9 \xe2\x82\xac \xff", &out);
  EXPECT_EQ(out, "caf\xc3\xa9 \xe2\x82\xac \xEF\xBF\xBD");  // é and € kept
  EXPECT_FALSE(fixes.control);
  EXPECT_TRUE(fixes.invalid_utf8);
  // /proc/PID/stat of a process that named itself ESC]52;c;… (OSC 52: write the clipboard).
  auto s = ParseProcStat(
      "77 (\x1b]52;c;aGk=\x07) S 1 77 77 0 -1 0 0 0 0 0 5 5 3 2 20 0 1 0 999 0 10 0 0 0 0\n", 100,
      4096);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, " ]52;c;aGk= ");
  EXPECT_EQ(s->cpu_time_ns, 100'000'000u);          // utime + stime = 10 ticks
  EXPECT_EQ(s->children_cpu_time_ns, 50'000'000u);  // cutime + cstime = 5 ticks
  EXPECT_EQ(s->start_ticks, 999u);
  EXPECT_EQ(s->pgrp, 77);
  EXPECT_EQ(s->state, 'S');
}

TEST(ProcStat, CoreTimesSkipTheAggregateLine) {
  const auto cores = ParseCoreTimes(
      "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 5 0 5 30 10 0 0 0 0 0\n"
      "intr 1\n");
  ASSERT_EQ(cores.size(), 2u);
  EXPECT_EQ(cores[0].busy, 10u);
  EXPECT_EQ(cores[0].total, 50u);
  EXPECT_EQ(cores[1].busy, 10u);  // iowait counts as idle
}

TEST(ProcessTree, FindsOwnChildren) {
  const pid_t child = fork();
  if (child == 0) {
    usleep(3'000'000);
    _exit(0);
  }
  const auto tree = ProcessTree(getpid());
  EXPECT_EQ(tree.front(), getpid());
  EXPECT_NE(std::find(tree.begin(), tree.end(), child), tree.end());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(ProcSampling, BurnerThreadsAndIdleWorkersAreSeen) {
  const std::string record = testing::TempPath("burner.jsonl");
  // 2 threads burn in the main process for 3 s; 3 worker processes sleep.
  auto r = testing::RunGpuscopeArgs({"run", "--interval", "100ms", "--record", record, "--",
                                     GPUSCOPE_BURNER, "2", "3", "3"},
                                    {{"GPUSCOPE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no GPU metrics"), std::string::npos) << r.err;
  auto rec = ingest::ReadMonitorInput(record);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_GE(rec->samples.size(), 5u);
  const int32_t root = rec->root_pid;
  size_t max_workers = 0;
  uint64_t main_cpu_ns = 0, worker_cpu_ns = 0, max_main_rss = 0;
  for (const Sample& s : rec->samples) {
    size_t workers = 0;
    for (const ProcessSample& p : s.processes) {
      if (p.pid == root) {
        // Sampled before its exec, the child still carries gpuscope's name.
        EXPECT_TRUE(p.name == "monitor_burner" || p.name == "gpuscope") << p.name;
        main_cpu_ns = std::max(main_cpu_ns, p.cpu_time_ns);
      } else {
        EXPECT_EQ(p.ppid, root);
        // Just forked, a worker still has the parent's name until its prctl(PR_SET_NAME).
        EXPECT_TRUE(p.name == "burn_worker" || p.name == "monitor_burner") << p.name;
        ++workers;
        worker_cpu_ns = std::max(worker_cpu_ns, p.cpu_time_ns);
      }
      if (p.pid == root) max_main_rss = std::max(max_main_rss, p.rss_bytes);
    }
    max_workers = std::max(max_workers, workers);
    EXPECT_EQ(s.core_busy_pct.size() > 0, &s != &rec->samples.front());
  }
  EXPECT_EQ(max_workers, 3u);
  EXPECT_GT(max_main_rss, 0u);  // (an exited, not yet reaped worker reads 0)
  EXPECT_GT(main_cpu_ns, worker_cpu_ns);  // burning threads vs sleeping workers
  const analyze::MonitorStats rep = analyze::ComputeMonitorStats(*rec);
  ASSERT_TRUE(rep.cpu.has_value());
  EXPECT_EQ(rep.cpu->main_pid, root);
  EXPECT_EQ(rep.cpu->main_name, "monitor_burner");
  EXPECT_EQ(rep.cpu->workers.size(), 3u);
  EXPECT_EQ(rep.cpu->cores, static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_FALSE(rep.has_gpu);
  EXPECT_NE(r.err.find("workers 3"), std::string::npos) << r.err;
}

// Issue 19 item 3: a tree that forks 200 short busy processes (15 ms of CPU each, far less than
// the 100 ms interval) was reported at a few percent: no sample saw most of them, and the last
// part of every one was lost. Their CPU reaches the parent's cutime/cstime when it waits for them.
// The truth is measured independently: this test's own RUSAGE_CHILDREN grows by everything
// gpuscope and its descendants used (gpuscope's own sampling and the guard included, so the truth
// is a little above the tree's share).
TEST(ProcSampling, ShortLivedChildrenCountInTheTreeCpu) {
  const std::string report = testing::TempPath("short_lived.json");
  constexpr int kChildren = 200;
  constexpr int kCpuMsEach = 15;
  const std::string script = "i=0; while [ $i -lt " + std::to_string(kChildren) + " ]; do '" +
                             GPUSCOPE_BURNER + "' --cpu-ms " + std::to_string(kCpuMsEach) +
                             "; i=$((i+1)); done";
  rusage before{}, after{};
  getrusage(RUSAGE_CHILDREN, &before);
  auto r = testing::RunGpuscopeArgs(
      {"run", "--interval", "100ms", "--report-json", report, "--", "sh", "-c", script},
      {{"GPUSCOPE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}}, 300);
  getrusage(RUSAGE_CHILDREN, &after);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  const double truth_s = seconds(after.ru_utime) - seconds(before.ru_utime) +
                         seconds(after.ru_stime) - seconds(before.ru_stime);
  // The test itself: the children burned what they were told to.
  ASSERT_GE(truth_s, 0.95 * kChildren * kCpuMsEach / 1e3) << r.err;
  const std::string json = testing::ReadFile(report);
  const double tree_s = testing::JsonNumber(json, "tree_cpu_s");
  // Before the fix: about a tenth of the truth. Tolerance: gpuscope's own CPU (in the truth, not
  // in the tree), CPU before the first sample and after the last, 10 ms clock ticks.
  EXPECT_GE(tree_s, 0.8 * truth_s) << "truth " << truth_s << " s\n" << r.err;
  EXPECT_LE(tree_s, 1.05 * truth_s) << "truth " << truth_s << " s\n" << r.err;
  // The steady-state mean says the same (what the report showed as "tree 8 %" before): mean % of a
  // core × the run's duration, looser because it leaves out the first sample.
  const double mean_s = testing::JsonNumber(json, "tree_cpu_mean_pct") / 100 *
                        testing::JsonNumber(json, "duration_ns") / 1e9;
  EXPECT_GE(mean_s, 0.6 * truth_s) << json;
  EXPECT_LE(mean_s, 1.3 * truth_s) << json;
  // They are descendants of the main process (sh): workers, most of them never seen alive.
  EXPECT_GT(testing::JsonNumber(json, "workers_ended_cpu_mean_pct"), 0) << json;
  EXPECT_NE(r.err.find("of it in workers that ended between samples"), std::string::npos) << r.err;
  std::filesystem::remove(report);
}

}  // namespace
}  // namespace gpuscope::monitor
