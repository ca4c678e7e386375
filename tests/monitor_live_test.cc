// The live line of `gpuscope run`: on stderr when it is a terminal (or --live always), never when
// stderr is a pipe (auto) or with --live never. Run on a pseudo-terminal, with the fake NVML so the
// line carries GPU values.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "monitor_test_util.h"

namespace gpuscope {
namespace {

constexpr const char* kScript = R"(gpus 1
name 0 NVIDIA A100-SXM4-80GB
util 0 43 20
memory 0 22000000000 80000000000
power 0 120500 400000
)";

struct TtyRun {
  int exit_code = -1;
  std::string seen;  // what the terminal received (stderr, and stdout of the watched command)
};

// gpuscope with stdin/stdout/stderr on a pseudo-terminal (or stderr on a pipe).
TtyRun RunOnTerminal(const std::vector<std::string>& args, bool stderr_on_pipe = false) {
  const std::string script = testing::TempPath("live_nvml_script");
  testing::WriteFile(script, kScript);
  int pipefd[2] = {-1, -1};
  if (stderr_on_pipe && pipe(pipefd) != 0) return {};
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    if (stderr_on_pipe) dup2(pipefd[1], STDERR_FILENO);
    setenv("GPUSCOPE_NVML_LIBRARY", GPUSCOPE_FAKE_NVML, 1);
    setenv("GPUSCOPE_FAKE_NVML_SCRIPT", script.c_str(), 1);
    std::vector<char*> argv = {const_cast<char*>(GPUSCOPE_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(GPUSCOPE_BINARY, argv.data());
    _exit(127);
  }
  if (stderr_on_pipe) close(pipefd[1]);
  TtyRun r;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child has exited and closed the terminal
    r.seen.append(buf, static_cast<size_t>(n));
  }
  if (stderr_on_pipe) {
    for (;;) {
      const ssize_t n = read(pipefd[0], buf, sizeof buf);
      if (n <= 0) break;
      r.seen.append(buf, static_cast<size_t>(n));
    }
    close(pipefd[0]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(MonitorLive, LineOnATerminalCarriesGpuAndCpu) {
  const TtyRun r = RunOnTerminal({"run", "--interval", "100ms", "--", "sleep", "1.6"});
  EXPECT_EQ(r.exit_code, 0) << r.seen;
  // Redrawn in place ("\r" + clear line), with the scripted GPU values and the CPU split.
  EXPECT_NE(r.seen.find("\r\033[K[gpuscope] GPU0  43% 22.0/80GB 120W | CPU main"),
            std::string::npos)
      << r.seen;
  // Refreshed twice a second over ~1.6 s: at least two draws.
  size_t draws = 0;
  for (size_t at = r.seen.find("[gpuscope] GPU0"); at != std::string::npos;
       at = r.seen.find("[gpuscope] GPU0", at + 1))
    ++draws;
  EXPECT_GE(draws, 2u) << r.seen;
  // The verdict follows on a clean line (the live line was erased first).
  EXPECT_NE(r.seen.find("gpuscope monitor"), std::string::npos) << r.seen;
}

TEST(MonitorLive, QuietWhenNotATerminalOrNever) {
  const TtyRun piped =
      RunOnTerminal({"run", "--interval", "100ms", "--", "sleep", "0.8"}, /*stderr_on_pipe=*/true);
  EXPECT_EQ(piped.exit_code, 0) << piped.seen;
  EXPECT_EQ(piped.seen.find("[gpuscope] GPU0"), std::string::npos) << piped.seen;
  EXPECT_NE(piped.seen.find("gpuscope monitor"), std::string::npos) << piped.seen;

  const TtyRun never =
      RunOnTerminal({"run", "--live", "never", "--interval", "100ms", "--", "sleep", "0.8"});
  EXPECT_EQ(never.exit_code, 0) << never.seen;
  EXPECT_EQ(never.seen.find("[gpuscope] GPU0"), std::string::npos) << never.seen;
}

// Reads the terminal until `text` appears in what it showed (or `timeout_s` passes).
bool ReadUntil(int master, std::string* seen, const std::string& text, double timeout_s = 60) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (seen->find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= end) return false;
    pollfd p{master, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) return seen->find(text) != std::string::npos;
    seen->append(buf, static_cast<size_t>(n));
  }
  return true;
}

// In the foreground of a terminal the command shares gpuscope's process group (Ctrl-C reaches all
// of it by itself); a SIGTERM sent to gpuscope by a process must still reach its grandchildren —
// here a sleep under `sh -c`. gpuscope runs under a shell that stays alive after it, so no hangup
// of the terminal (which would kill the group anyway) stands in for the forwarding.
TEST(MonitorLive, SigtermInTheForegroundReachesTheGrandchildren) {
  const std::string script = testing::TempPath("live_term_script");
  testing::WriteFile(script, kScript);
  const std::string inner = "sleep 1000 & echo \"grandchild $!\"; wait";
  const std::string outer = std::string("'") + GPUSCOPE_BINARY + "' run -- sh -c '" + inner +
                            "'; echo \"gpuscope-exit $?\"; sleep 60";
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    setenv("GPUSCOPE_NVML_LIBRARY", GPUSCOPE_FAKE_NVML, 1);
    setenv("GPUSCOPE_FAKE_NVML_SCRIPT", script.c_str(), 1);
    execl("/bin/sh", "sh", "-c", outer.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  std::string seen;
  ASSERT_TRUE(ReadUntil(master, &seen, "grandchild ")) << seen;
  ASSERT_TRUE(ReadUntil(master, &seen, "\n")) << seen;
  const pid_t grandchild = std::atoi(seen.c_str() + seen.find("grandchild ") + 11);
  const auto stat = monitor::ReadProcStat(grandchild);
  ASSERT_TRUE(stat.has_value());
  pid_t gpuscope = -1;
  for (int32_t p : monitor::ProcessTree(pid))
    // The outer shell's child (not the guard, gpuscope's own child, which renames itself).
    if (auto s = monitor::ReadProcStat(p); s && s->name == "gpuscope" && s->ppid == pid)
      gpuscope = p;
  ASSERT_GT(gpuscope, 0) << seen;
  EXPECT_EQ(getpgid(grandchild), getpgid(gpuscope));  // the terminal's foreground group
  kill(gpuscope, SIGTERM);
  EXPECT_TRUE(ReadUntil(master, &seen, "gpuscope-exit ")) << seen;
  EXPECT_TRUE(ReadUntil(master, &seen, "gpuscope-exit 143")) << seen;
  EXPECT_TRUE(testing::WaitProcessGone(grandchild, stat->start_ticks, 10))
      << "sleep " << grandchild << " outlived gpuscope\n"
      << seen;
  kill(grandchild, SIGKILL);  // (if the test failed)
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(master);
  std::filesystem::remove(script);
}

}  // namespace
}  // namespace gpuscope
