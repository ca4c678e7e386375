#include "monitor/session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <set>

#include "monitor/nvml.h"
#include "monitor/proc.h"
#include "monitor/recorder.h"
#include "monitor/tensorboard.h"
#include "monitor/verdict.h"

namespace gpuscope::monitor {

namespace {

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
constexpr int64_t kLiveRefreshNs = 500'000'000;  // the live line changes twice a second

// Written by the signal handler, read by the loop (lock-free atomics are async-signal-safe).
volatile sig_atomic_t g_child_pid = 0;
std::atomic<int> g_interrupts{0};
std::atomic<bool> g_kill_tree{false};

void OnSignal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;  // kill() may set it; the interrupted code must not see that
  const pid_t child = g_child_pid;
  if (sig == SIGINT && g_interrupts.fetch_add(1) + 1 >= 2) {
    // The loop (woken by this signal) kills the whole tree: killing the child here first would
    // orphan its children before the loop can find them.
    g_kill_tree = true;
    errno = saved_errno;
    return;
  }
  // si_code > 0 (SI_KERNEL) means the kernel sent it, e.g. Ctrl-C on the terminal: the child,
  // in our foreground process group, got its own copy.
  const bool from_process = info == nullptr || (info->si_code <= 0 && info->si_pid != child);
  if (child > 0 && from_process) kill(child, sig);
  errno = saved_errno;
}

void OnChild(int) {}  // only to end ppoll when the command ends

int64_t UnixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string LiveLine(const Sample& s) {
  std::string out = "[gpuscope]";
  char buf[160];
  for (const GpuSample& g : s.gpus) {
    std::snprintf(buf, sizeof buf, " GPU%d", g.index);
    out += buf;
    if (g.sm_util_pct) std::snprintf(buf, sizeof buf, " %3.0f%%", *g.sm_util_pct), out += buf;
    if (g.mem_used_bytes && g.mem_total_bytes)
      std::snprintf(buf, sizeof buf, " %.1f/%.0fGB", *g.mem_used_bytes / 1e9,
                    *g.mem_total_bytes / 1e9),
          out += buf;
    if (g.power_w) std::snprintf(buf, sizeof buf, " %.0fW", *g.power_w), out += buf;
    out += " |";
  }
  if (s.gpus.empty()) out += " no GPU |";
  const TreeCpu cpu = SplitTreeCpu(s);
  std::snprintf(buf, sizeof buf, " CPU main %.0f%%", cpu.main_pct);
  out += buf;
  if (cpu.workers > 0) {
    std::snprintf(buf, sizeof buf, " · %d workers %.0f%%", cpu.workers, cpu.workers_pct);
    out += buf;
  }
  return out;
}

}  // namespace

void DropEveryOtherSample(std::vector<Sample>* samples) {
  // Keeps 0, 2, 4, …; sample 0 is already in place (moving it onto itself would empty it).
  size_t kept = 1;
  for (size_t i = 2; i < samples->size(); i += 2) (*samples)[kept++] = std::move((*samples)[i]);
  samples->resize(std::min(kept, samples->size()));
}

std::optional<int64_t> ParseInterval(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return std::nullopt;
  const std::string unit = end;
  double scale = 0;
  if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "us" || unit == "µs")
    scale = 1e3;
  else
    return std::nullopt;
  const double ns = v * scale;
  if (!(ns >= 10e6 && ns <= 3600e9)) return std::nullopt;
  return static_cast<int64_t>(ns);
}

Result<RunOutcome> RunAndMonitor(const RunOptions& options) {
  if (options.command.empty())
    return Status::Error(StatusCode::kUsage,
                         "no command to run (hint: gpuscope run -- python train.py)");
  RunOutcome outcome;
  Recording& rec = outcome.recording;
  rec.source = SourceKind::kLive;
  rec.command = options.command;
  rec.interval_ns = options.interval_ns;
  rec.has_process_data = true;

  // Outputs first: a typo in a path should fail before a long job starts.
  std::unique_ptr<Recorder> recorder;
  if (!options.record_path.empty()) {
    auto r = Recorder::Open(options.record_path);
    if (!r.ok()) return r.status();
    recorder = std::move(*r);
  }
  std::unique_ptr<TensorBoardWriter> tensorboard;
  if (!options.tensorboard_dir.empty()) {
    auto t = TensorBoardWriter::Open(options.tensorboard_dir);
    if (!t.ok()) return t.status();
    tensorboard = std::move(*t);
  }

  std::unique_ptr<NvmlSampler> nvml;
  if (auto n = NvmlSampler::Open(options.nvml_library); n.ok()) {
    nvml = std::move(*n);
    rec.gpus = nvml->gpus();
    for (std::string& note : nvml->TakeNotes()) rec.notes.push_back(note);
  } else {
    rec.gpu_unavailable = n.status().message();
    std::fprintf(stderr, "gpuscope: no GPU metrics (%s); sampling CPU only\n",
                 rec.gpu_unavailable.c_str());
  }

  // Signals are handled only inside ppoll() in the loop below: they stay blocked everywhere
  // else, from before fork() on. So none is lost in the window between fork() and the moment we
  // know the child's pid, and none can arrive between "has the child exited?" and the wait (the
  // classic lost wake-up). A signal that was ignored when we started (e.g. SIGHUP under nohup)
  // stays ignored, for us and for the command.
  sigset_t original_mask, blocked;
  sigprocmask(SIG_SETMASK, nullptr, &original_mask);
  sigemptyset(&blocked);
  struct sigaction sa {};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO;
  sigfillset(&sa.sa_mask);  // one handler at a time
  struct sigaction old_actions[std::size(kForwardedSignals)];
  bool handled[std::size(kForwardedSignals)] = {};
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
    sigaction(kForwardedSignals[i], nullptr, &old_actions[i]);
    if (old_actions[i].sa_handler == SIG_IGN) continue;
    handled[i] = true;
    sigaddset(&blocked, kForwardedSignals[i]);
  }
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, nullptr);
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    if (handled[i]) sigaction(kForwardedSignals[i], &sa, nullptr);
  struct sigaction child_action {};
  child_action.sa_handler = OnChild;
  sigemptyset(&child_action.sa_mask);
  struct sigaction old_child_action;
  sigaction(SIGCHLD, &child_action, &old_child_action);
  // The mask ppoll() waits with: ours at entry, but with every signal we handle deliverable.
  sigset_t wait_mask = original_mask;
  for (int sig = 1; sig < NSIG; ++sig)
    if (sigismember(&blocked, sig) == 1) sigdelset(&wait_mask, sig);
  // g_child_pid must be 0 before this runs: pending signals are delivered (to handlers that
  // then do nothing) before the old dispositions come back.
  auto restore_signals = [&] {
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
      if (handled[i]) sigaction(kForwardedSignals[i], &old_actions[i], nullptr);
    sigaction(SIGCHLD, &old_child_action, nullptr);
  };

  // exec failures come back through a close-on-exec pipe: EOF means exec worked.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    restore_signals();
    return Status::Error(StatusCode::kInternal, std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> argv;
  for (const std::string& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  rec.start_ns = UnixNowNs();
  const pid_t child = fork();
  if (child < 0) {
    restore_signals();
    return Status::Error(StatusCode::kInternal, std::string("fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    // The command gets default dispositions (except what was ignored when we started) and the
    // signal mask we started with. Dispositions first: a signal arriving once the mask is back
    // must not run our handler in this process.
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
      if (handled[i]) signal(kForwardedSignals[i], SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    close(exec_pipe[0]);
    execvp(argv[0], argv.data());
    const int err = errno;
    (void)!write(exec_pipe[1], &err, sizeof err);
    _exit(127);
  }
  g_child_pid = child;
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    g_child_pid = 0;
    restore_signals();
    return Status::Error(StatusCode::kNotFound, "cannot run \"" + options.command[0] +
                                                    "\": " + std::strerror(exec_errno) +
                                                    " (hint: is it on PATH?)");
  }
  rec.root_pid = child;
  if (recorder) recorder->WriteHeader(rec);

  ProcSampler proc(child);
  int64_t next_ns = SteadyNowNs();
  int64_t last_live_ns = 0;
  bool live_shown = false;
  size_t keep_every = 1, seen = 0;
  int status = 0;
  for (;;) {
    if (g_kill_tree.exchange(false)) {
      for (int32_t pid : ProcessTree(child)) kill(pid, SIGKILL);
    }
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    const int64_t now = SteadyNowNs();
    if (now >= next_ns) {
      Sample s;
      s.time_ns = UnixNowNs();  // the stamp; rates use the monotonic clock
      proc.Sample(SteadyNowNs(), &s);
      if (nvml) {
        std::set<int32_t> pids;
        for (const ProcessSample& p : s.processes) pids.insert(p.pid);
        s.gpus = nvml->Sample(pids);
        for (std::string& note : nvml->TakeNotes()) {
          if (live_shown) std::fputs("\r\033[K", stderr), live_shown = false;
          std::fprintf(stderr, "gpuscope: %s\n", note.c_str());
          rec.notes.push_back(std::move(note));
        }
      }
      if (recorder) recorder->WriteSample(s);
      if (tensorboard) tensorboard->Write(s);
      if (options.live && now - last_live_ns >= kLiveRefreshNs) {
        std::fprintf(stderr, "\r\033[K%s", LiveLine(s).c_str());
        std::fflush(stderr);
        live_shown = true;
        last_live_ns = now;
      }
      if (seen++ % keep_every == 0) rec.samples.push_back(std::move(s));
      if (rec.samples.size() >= kMaxSamplesInMemory) {
        DropEveryOtherSample(&rec.samples);
        keep_every *= 2;
      }
      next_ns += options.interval_ns;
      if (next_ns <= now) next_ns = now + options.interval_ns;  // fell behind: do not burst
    }
    const int64_t wait_ns = std::max<int64_t>(0, next_ns - SteadyNowNs());
    timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
    // Our signals are deliverable only while ppoll waits: a SIGCHLD or forwarded signal that
    // came in since the waitpid() above is pending and ends the wait at once.
    ppoll(nullptr, 0, &ts, &wait_mask);
  }
  g_child_pid = 0;
  restore_signals();
  if (live_shown) std::fputs("\r\033[K", stderr);
  rec.end_ns = UnixNowNs();
  if (WIFEXITED(status))
    outcome.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    outcome.exit_code = 128 + WTERMSIG(status);
  rec.exit_code = outcome.exit_code;
  if (keep_every > 1)
    rec.notes.push_back("long run: the verdict uses every " + std::to_string(keep_every) +
                        "th sample (the record file has all)");
  if (recorder)
    if (Status s = recorder->Finish(rec); !s.ok()) rec.notes.push_back(s.message());
  if (tensorboard)
    if (Status s = tensorboard->Finish(); !s.ok()) rec.notes.push_back(s.message());
  return outcome;
}

}  // namespace gpuscope::monitor
