// The /proc path: parsing, and a real child that burns CPU in threads and forks idle workers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "monitor/proc.h"
#include "ingest/registry.h"
#include "monitor/recorder.h"
#include "monitor/verdict.h"
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
  const MonitorReport rep = BuildMonitorReport(*rec);
  ASSERT_TRUE(rep.cpu.has_value());
  EXPECT_EQ(rep.cpu->main_pid, root);
  EXPECT_EQ(rep.cpu->main_name, "monitor_burner");
  EXPECT_EQ(rep.cpu->workers.size(), 3u);
  EXPECT_EQ(rep.cpu->cores, static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_FALSE(rep.has_gpu);
  EXPECT_NE(r.err.find("3 workers"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuscope::monitor
