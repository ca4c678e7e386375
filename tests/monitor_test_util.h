// Helpers for the monitor tests: start gpuscope with fork/exec (so a test can signal it), wait
// with a generous timeout, and fake-NVML scripts.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "monitor/proc.h"
#include "test_util.h"

namespace gpuscope::testing {

// Starts GPUSCOPE_BINARY with `args`, stdout/stderr to files, `env` added. Returns the pid, which
// is also the id of a new process group holding gpuscope and its command (see WaitExit).
// The output files are created (emptied) before fork(): once this returns, WaitForText cannot
// see text left over from an earlier run.
inline pid_t StartGpuscope(const std::vector<std::string>& args, const std::string& out_path,
                           const std::string& err_path,
                           const std::vector<std::pair<std::string, std::string>>& env = {}) {
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    const int in = open("/dev/null", O_RDONLY);
    dup2(out, 1);
    dup2(err, 2);
    dup2(in, 0);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(GPUSCOPE_BINARY));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(GPUSCOPE_BINARY, argv.data());
    _exit(126);
  }
  if (pid > 0) setpgid(pid, pid);  // also here: no window in which a kill(-pid) misses
  if (out >= 0) close(out);
  if (err >= 0) close(err);
  return pid;
}

// Waits up to `timeout_s`; returns the exit code, 128+signal, or -1 on timeout (then kills its
// whole process group: gpuscope and the command it started, which would otherwise linger).
inline int WaitExit(pid_t pid, double timeout_s = 120) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

// Waits until `path` contains `text` (up to `timeout_s`).
inline bool WaitForText(const std::string& path, const std::string& text, double timeout_s = 60) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (ReadFile(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// True once process `pid`, started at `start_ticks` (ProcStat::start_ticks), has exited: no /proc
// entry, a zombie (an init that does not reap orphans keeps those forever), or the pid names a
// newer process.
inline bool ProcessGone(pid_t pid, uint64_t start_ticks) {
  const auto s = monitor::ReadProcStat(pid);
  return !s || s->start_ticks != start_ticks || s->state == 'Z' || s->state == 'X';
}

inline bool WaitProcessGone(pid_t pid, uint64_t start_ticks, double timeout_s = 60) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (ProcessGone(pid, start_ticks)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ProcessGone(pid, start_ticks);
}

// The value of the first document field keyed KEY in a JSON document (schema_version 2:
// "KEY": {"label": …, "value": N, …}), NaN if absent or not a number.
inline double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": {");
  if (at == std::string::npos) return std::nan("");
  const size_t value = json.find("\"value\": ", at);
  if (value == std::string::npos || value > json.find('}', at)) return std::nan("");
  char* end = nullptr;
  const double v = std::strtod(json.c_str() + value + 9, &end);
  return end == json.c_str() + value + 9 ? std::nan("") : v;
}

struct RunCapture {
  int exit_code = -1;
  std::string out, err;
};

inline RunCapture RunGpuscopeArgs(const std::vector<std::string>& args,
                                  const std::vector<std::pair<std::string, std::string>>& env = {},
                                  double timeout_s = 120) {
  static int counter = 0;
  const std::string tag = std::to_string(++counter);
  const std::string out = TempPath("run_out" + tag), err = TempPath("run_err" + tag);
  RunCapture r;
  r.exit_code = WaitExit(StartGpuscope(args, out, err, env), timeout_s);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

}  // namespace gpuscope::testing
