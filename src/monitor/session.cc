#include "monitor/session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "analyze/monitor_stats.h"
#include "base/numbers.h"
#include "base/sanitize.h"
#include "monitor/nvml.h"
#include "monitor/proc.h"
#include "monitor/recorder.h"
#include "monitor/tensorboard.h"

namespace gpuscope::monitor {

namespace {

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
constexpr int64_t kLiveRefreshNs = 500'000'000;  // the live line changes twice a second
// After a forwarded SIGINT/SIGTERM/SIGHUP/SIGQUIT ended CMD, how long the rest of CMD's process
// group may take to exit before it gets SIGKILL; the guard gives the same time once gpuscope died.
constexpr int64_t kStopGraceNs = 5'000'000'000;

// Written by the signal handler, read by the loop (lock-free atomics are async-signal-safe).
volatile sig_atomic_t g_child_pid = 0;
volatile sig_atomic_t g_command_shares_our_group = 0;
std::atomic<int> g_interrupts{0};
std::atomic<bool> g_kill_tree{false};
std::atomic<uint32_t> g_to_forward{0};  // bit N: forward signal N (all forwarded ones are < 32)
std::atomic<int> g_stop_signal{0};      // the first stopping signal received (RunOutcome)

bool IsStopping(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

void OnSignal(int sig, siginfo_t* info, void*) {
  const pid_t child = g_child_pid;
  if (IsStopping(sig) &&
      !(info != nullptr && info->si_code <= 0 && child > 0 && info->si_pid == child)) {
    int none = 0;
    g_stop_signal.compare_exchange_strong(none, sig);
  }
  if (sig == SIGINT && g_interrupts.fetch_add(1) + 1 >= 2) {
    g_kill_tree = true;  // the loop kills the whole job
    return;
  }
  // si_code > 0 (SI_KERNEL) means the kernel sent it: Ctrl-C, Ctrl-\ or a hangup of our terminal.
  // It went to the terminal's foreground process group, so a command sharing our group got its
  // own copy; a command in its own group did not.
  const bool from_terminal = info != nullptr && info->si_code > 0;
  const bool from_command =
      info != nullptr && info->si_code <= 0 && child > 0 && info->si_pid == child;
  if (from_command || (from_terminal && g_command_shares_our_group)) return;
  // Forwarded by the loop (which ppoll() returns to at once): reaching every process of the job
  // walks /proc, which a signal handler must not do.
  g_to_forward.fetch_or(1u << sig);
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

// True when gpuscope is the foreground job of its terminal: then CMD stays in our process group,
// so the terminal's Ctrl-C / Ctrl-\ / Ctrl-Z reach all of it and it can read the terminal.
bool ForegroundOfATerminal() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (!isatty(fd)) continue;
    const pid_t foreground = tcgetpgrp(fd);
    if (foreground > 0) return foreground == getpgrp();
  }
  return false;
}

// Sends `sig` to the whole job: CMD's own process group (`pgid` > 0; one kill, which no fork can
// slip past), then every process of CMD's tree outside that group (one that made a group or
// session of its own), found through /proc.
void SignalJob(pid_t root, pid_t pgid, int sig) {
  if (pgid > 0) kill(-pgid, sig);
  for (int32_t pid : ProcessTree(root)) {
    if (pgid > 0 && getpgid(pid) == pgid) continue;  // reached through the group
    kill(pid, sig);
  }
}

// True while a process of the job has not exited: in CMD's group, or (sharing our group) in its
// tree. Zombies do not count.
bool JobAlive(pid_t root, pid_t pgid) {
  if (pgid > 0) return !LiveProcessesInGroup(pgid).empty();
  for (int32_t pid : ProcessTree(root))
    if (auto s = ReadProcStat(pid); s && s->state != 'Z' && s->state != 'X') return true;
  return false;
}

// The guard: a small process, forked before CMD, that outlives gpuscope. gpuscope keeps one end of
// a socket pair; the kernel closes it however gpuscope ends (SIGKILL, a crash, the OOM killer).
// If that happens while CMD runs, the guard sends SIGTERM to the job, gives it kStopGraceNs, then
// SIGKILL — so the job does not run on orphaned, holding the GPU. When the job ends normally,
// gpuscope says so ('D') and the guard exits without touching anything. It has a process group of
// its own (a kill of gpuscope's whole group does not take it along) and ignores the signals a
// job control or scheduler sends around.
class JobGuard {
 public:
  JobGuard() = default;
  JobGuard(const JobGuard&) = delete;
  JobGuard& operator=(const JobGuard&) = delete;
  ~JobGuard() { Release(); }

  // Forks the guard. False (and no guard) if that fails: the run goes on without one.
  bool Start() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return false;
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      return false;
    }
    if (pid == 0) Run(fds[1]);  // never returns
    close(fds[1]);
    fd_ = fds[0];
    pid_ = pid;
    return true;
  }

  // CMD has started: from now on the guard ends the job if gpuscope dies.
  void Watch(pid_t root, pid_t pgid) {
    const int32_t message[2] = {root, pgid};
    if (fd_ >= 0) (void)!send(fd_, message, sizeof message, MSG_NOSIGNAL);
  }

  // The job ended (or never started): the guard exits, touching nothing.
  void Release() {
    if (fd_ < 0) return;
    (void)!send(fd_, "D", 1, MSG_NOSIGNAL);
    close(fd_);
    fd_ = -1;
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }

 private:
  [[noreturn]] static void Run(int fd) {
    setpgid(0, 0);
    for (int sig :
         {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE})
      signal(sig, SIG_IGN);
    prctl(PR_SET_NAME, "gpuscope-guard");
    // Nothing of gpuscope's stays open here: a reader of gpuscope's stdout/stderr must see EOF
    // when gpuscope exits, and the --record file is gpuscope's to close.
    if (fd != 3) {
      dup2(fd, 3);
      close(fd);
    }
    const int null = open("/dev/null", O_RDWR);
    for (int i = 0; i < 3; ++i) dup2(null, i);
    close_range(4, ~0U, 0);
    int32_t message[2] = {0, 0};
    size_t got = 0;
    while (got < sizeof message) {
      const ssize_t n = read(3, reinterpret_cast<char*>(message) + got, sizeof message - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(0);  // gpuscope ended before CMD started
      got += static_cast<size_t>(n);
    }
    char done = 0;
    ssize_t n;
    do {
      n = read(3, &done, 1);
    } while (n < 0 && errno == EINTR);
    if (n == 1 && done == 'D') _exit(0);
    // gpuscope is gone and CMD was running.
    const pid_t root = message[0], pgid = message[1];
    SignalJob(root, pgid, SIGTERM);
    SignalJob(root, pgid, SIGCONT);  // a stopped process acts on SIGTERM only once continued
    const int64_t end = SteadyNowNs() + kStopGraceNs;
    while (JobAlive(root, pgid) && SteadyNowNs() < end) usleep(100'000);
    SignalJob(root, pgid, SIGKILL);
    _exit(0);
  }

  int fd_ = -1;
  pid_t pid_ = -1;
};

std::string LiveLine(const Sample& s) {
  std::string out = "[gpuscope]";
  // A terminal status line: fixed widths so that it does not jitter from sample to sample.
  for (const GpuSample& g : s.gpus) {
    out += fmt::format(" GPU{}", g.index);
    if (g.sm_util_pct) out += fmt::format(" {:3.0f}%", *g.sm_util_pct);
    if (g.mem_used_bytes && g.mem_total_bytes)
      out += fmt::format(" {:.1f}/{:.0f}GB", *g.mem_used_bytes / 1e9, *g.mem_total_bytes / 1e9);
    if (g.power_w) out += fmt::format(" {:.0f}W", *g.power_w);
    out += " |";
  }
  if (s.gpus.empty()) out += " no GPU |";
  const analyze::TreeCpu cpu = analyze::SplitTreeCpu(s);
  out += fmt::format(" CPU main {:.0f}%", cpu.main_pct);
  if (cpu.workers > 0) out += fmt::format(" · {} workers {:.0f}%", cpu.workers, cpu.workers_pct);
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
  int64_t ns = 0;
  if (ParseDurationNs(text, &ns) != NumberError::kOk) return std::nullopt;
  if (ns < kMinIntervalNs || ns > kMaxIntervalNs) return std::nullopt;
  return ns;
}

namespace {

// One `gpuscope run`: the command's process tree started under our signal handling, sampled until
// it exits, its output read line by line, signals forwarded and the time limit kept. What the
// steps share is the state below; Run() is the order they happen in.
class Session {
 public:
  explicit Session(const RunOptions& options) : options_(options) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Result<RunOutcome> Run();

 private:
  Status OpenOutputs();
  void OpenGpu();
  void InstallSignals();
  void RestoreSignals();
  Status StartCommand();
  void ClosePipes();
  void CheckRecorder();
  void TakeSample(int64_t now);
  bool ForwardPending();
  void ReadPipes();
  void WaitUntil(int64_t until_ns);
  void CheckTimeLimit(int64_t now);
  int64_t LimitEventNs() const;
  int SampleUntilExit();
  void StopTheRestOfTheGroup();
  RunOutcome Finish(int status);

  const RunOptions& options_;
  RunOutcome outcome_;
  Recording& rec_ = outcome_.recording;
  std::unique_ptr<Recorder> recorder_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  JobGuard guard_;
  std::unique_ptr<NvmlSampler> nvml_;
  bool own_group_ = false;
  // Signal state: the mask at entry, the signals we handle, and what ppoll() waits with.
  sigset_t original_mask_{}, blocked_{}, wait_mask_{};
  struct sigaction old_actions_[std::size(kForwardedSignals)]{};
  bool handled_[std::size(kForwardedSignals)] = {};
  struct sigaction old_child_action_ {};
  // Output pipes (on_line): [stream][0 read, 1 write]; our ends non-blocking.
  int out_pipes_[2][2] = {{-1, -1}, {-1, -1}};
  pid_t child_ = 0, pgid_ = 0;
  std::optional<ProcSampler> proc_;
  bool record_warned_ = false, live_shown_ = false;
  int64_t next_ns_ = 0, last_live_ns_ = 0;
  size_t keep_every_ = 1, seen_ = 0;
  bool stopping_ = false;  // a forwarded signal asked the job to end
  // on_line: what each pipe holds of its current line, and whether that line was cut.
  std::string partial_[2];
  bool cut_[2] = {false, false};
  int64_t started_ns_ = 0;
  int64_t kill_at_ns_ = 0;  // time limit reached: SIGKILL at this time if the job still runs
  bool killed_at_limit_ = false;
};

// Outputs first: a typo in a path should fail before a long job starts.
Status Session::OpenOutputs() {
  if (!options_.record_path.empty()) {
    GPUSCOPE_TRY(r, Recorder::Open(options_.record_path));
    recorder_ = std::move(*r);
  }
  if (!options_.tensorboard_dir.empty()) {
    GPUSCOPE_TRY(t, TensorBoardWriter::Open(options_.tensorboard_dir));
    tensorboard_ = std::move(*t);
  }
  return Status::Ok();
}

// The guard is forked before NVML is loaded: a driver may start threads, and a process forked
// from a threaded one may only call async-signal-safe functions (the guard walks /proc).
void Session::OpenGpu() {
  if (!guard_.Start())
    rec_.notes.push_back(std::string("no guard process (") + std::strerror(errno) +
                         "): if gpuscope is killed, the command is not stopped with it");
  if (auto n = NvmlSampler::Open(options_.nvml_library); n.ok()) {
    nvml_ = std::move(*n);
    rec_.gpus = nvml_->gpus();
    for (std::string& note : nvml_->TakeNotes()) rec_.notes.push_back(note);
  } else {
    rec_.gpu_unavailable = n.status().message();
    if (!options_.quiet)
      std::fprintf(stderr, "gpuscope: no GPU metrics (%s); sampling CPU only\n",
                   rec_.gpu_unavailable.c_str());
  }
}

// Signals are handled only inside ppoll() in the loop: they stay blocked everywhere else, from
// before fork() on. So none is lost in the window between fork() and the moment we know the
// child's pid, and none can arrive between "has the child exited?" and the wait (the classic lost
// wake-up). A signal that was ignored when we started (e.g. SIGHUP under nohup) stays ignored,
// for us and for the command.
void Session::InstallSignals() {
  sigprocmask(SIG_SETMASK, nullptr, &original_mask_);
  sigemptyset(&blocked_);
  struct sigaction sa {};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO;
  sigfillset(&sa.sa_mask);  // one handler at a time
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
    sigaction(kForwardedSignals[i], nullptr, &old_actions_[i]);
    if (old_actions_[i].sa_handler == SIG_IGN) continue;
    handled_[i] = true;
    sigaddset(&blocked_, kForwardedSignals[i]);
  }
  sigaddset(&blocked_, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked_, nullptr);
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    if (handled_[i]) sigaction(kForwardedSignals[i], &sa, nullptr);
  struct sigaction child_action {};
  child_action.sa_handler = OnChild;
  sigemptyset(&child_action.sa_mask);
  sigaction(SIGCHLD, &child_action, &old_child_action_);
  // The mask ppoll() waits with: ours at entry, but with every signal we handle deliverable.
  wait_mask_ = original_mask_;
  for (int sig = 1; sig < NSIG; ++sig)
    if (sigismember(&blocked_, sig) == 1) sigdelset(&wait_mask_, sig);
}

// g_child_pid must be 0 before this runs: pending signals are delivered (to handlers that then
// do nothing) before the old dispositions come back.
void Session::RestoreSignals() {
  sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    if (handled_[i]) sigaction(kForwardedSignals[i], &old_actions_[i], nullptr);
  sigaction(SIGCHLD, &old_child_action_, nullptr);
}

void Session::ClosePipes() {
  for (auto& p : out_pipes_)
    for (int& fd : p)
      if (fd >= 0) close(fd), fd = -1;
}

// Forks and execs the command; on failure (pipe, fork, exec) everything set up is undone.
Status Session::StartCommand() {
  // exec failures come back through a close-on-exec pipe: EOF means exec worked.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0)
    return Status::Error(StatusCode::kInternal, std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> argv;
  for (const std::string& a : options_.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The environment with extra_env, built before fork(): the child may only call
  // async-signal-safe functions (a driver may have started threads).
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (!options_.extra_env.empty()) {
    auto name_of = [](std::string_view e) { return e.substr(0, e.find('=')); };
    for (char** e = environ; *e != nullptr; ++e) {
      bool replaced = false;
      for (const std::string& x : options_.extra_env)
        replaced = replaced || name_of(x) == name_of(*e);
      if (!replaced) env_strings.emplace_back(*e);
    }
    for (const std::string& x : options_.extra_env) env_strings.push_back(x);
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  if (options_.on_line) {
    for (auto& p : out_pipes_) {
      if (pipe2(p, O_CLOEXEC) != 0) {
        const int err = errno;
        ClosePipes();
        close(exec_pipe[0]);
        close(exec_pipe[1]);
        return Status::Error(StatusCode::kInternal, std::string("pipe: ") + std::strerror(err));
      }
      fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    }
  }

  rec_.start_ns = UnixNowNs();
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    const int err = errno;
    ClosePipes();
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return Status::Error(StatusCode::kInternal, std::string("fork: ") + std::strerror(err));
  }
  if (child == 0) {
    if (own_group_) {
      setpgid(0, 0);
      // Should gpuscope die before the guard knows CMD, CMD itself still gets SIGTERM. (Only the
      // direct child: the guard covers the rest of the group.)
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(128 + SIGTERM);
    }
    // The command gets default dispositions (except what was ignored when we started) and the
    // signal mask we started with. Dispositions first: a signal arriving once the mask is back
    // must not run our handler in this process.
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
      if (handled_[i]) signal(kForwardedSignals[i], SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
    close(exec_pipe[0]);
    if (options_.detached) {
      const int null = open("/dev/null", O_RDONLY);
      if (null >= 0 && null != STDIN_FILENO) dup2(null, STDIN_FILENO), close(null);
    }
    if (options_.on_line) {
      dup2(out_pipes_[0][1], STDOUT_FILENO);
      dup2(out_pipes_[1][1], STDERR_FILENO);
    }
    if (envp.empty())
      execvp(argv[0], argv.data());
    else
      execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    (void)!write(exec_pipe[1], &err, sizeof err);
    _exit(127);
  }
  // Also here (whichever runs first): no window in which a kill(-pgid) misses the command.
  // EACCES once the child has exec'd means it did it itself.
  child_ = child;
  pgid_ = own_group_ ? child : 0;
  if (own_group_) setpgid(child, child);
  g_child_pid = child;
  guard_.Watch(child, pgid_);
  close(exec_pipe[1]);
  for (auto& p : out_pipes_)
    if (p[1] >= 0) close(p[1]), p[1] = -1;
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
    ClosePipes();
    guard_.Release();
    g_child_pid = 0;
    return Status::Error(StatusCode::kNotFound,
                         "cannot run \"" + SanitizeText(options_.command[0]) +
                             "\": " + std::strerror(exec_errno) + " (hint: is it on PATH?)");
  }
  rec_.root_pid = child;
  return Status::Ok();
}

void Session::CheckRecorder() {
  if (!recorder_ || !recorder_->failed() || record_warned_) return;
  // Said at once, not only in the verdict: the run may go on for hours without its record.
  if (live_shown_) std::fputs("\r\033[K", stderr), live_shown_ = false;
  std::fprintf(stderr, "gpuscope: warning: %s; recording stopped, the command goes on\n",
               recorder_->error().c_str());
  record_warned_ = true;
}

void Session::TakeSample(int64_t now) {
  Sample s;
  s.time_ns = UnixNowNs();  // the stamp; rates use the monotonic clock
  proc_->Sample(SteadyNowNs(), &s);
  if (nvml_) {
    std::set<int32_t> pids;
    for (const ProcessSample& p : s.processes) pids.insert(p.pid);
    std::map<int32_t, uint64_t> on_gpu;
    s.gpus = nvml_->Sample(pids, &on_gpu);
    for (ProcessSample& p : s.processes)
      if (auto it = on_gpu.find(p.pid); it != on_gpu.end()) p.gpu_bytes = it->second;
    for (std::string& note : nvml_->TakeNotes()) {
      if (live_shown_) std::fputs("\r\033[K", stderr), live_shown_ = false;
      std::fprintf(stderr, "gpuscope: %s\n", note.c_str());
      rec_.notes.push_back(std::move(note));
    }
  }
  RoundAsRecorded(&s);  // recorded or not, so the report is the record's
  if (recorder_) recorder_->WriteSample(s);
  CheckRecorder();
  if (tensorboard_) tensorboard_->Write(s);
  if (options_.live && now - last_live_ns_ >= kLiveRefreshNs) {
    std::fprintf(stderr, "\r\033[K%s", LiveLine(s).c_str());
    std::fflush(stderr);
    live_shown_ = true;
    last_live_ns_ = now;
  }
  if (seen_++ % keep_every_ == 0) rec_.samples.push_back(std::move(s));
  if (rec_.samples.size() >= kMaxSamplesInMemory) {
    DropEveryOtherSample(&rec_.samples);
    keep_every_ *= 2;
  }
}

// Forwards what the handler queued; true if it escalated to SIGKILL.
bool Session::ForwardPending() {
  if (g_kill_tree.exchange(false)) {
    SignalJob(child_, pgid_, SIGKILL);
    stopping_ = true;
    return true;
  }
  const uint32_t pending = g_to_forward.exchange(0);
  for (int sig : kForwardedSignals) {
    if (!(pending & (1u << sig))) continue;
    SignalJob(child_, pgid_, sig);
    if (sig != SIGUSR1 && sig != SIGUSR2) stopping_ = true;
  }
  return false;
}

void Session::ReadPipes() {
  char buf[65536];
  for (int stream = 0; stream < 2; ++stream) {
    int& fd = out_pipes_[stream][0];
    while (fd >= 0) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;  // EAGAIN: nothing more now
      if (n == 0) {      // every writer closed it
        if (!partial_[stream].empty())
          options_.on_line(stream + 1, partial_[stream], SteadyNowNs());
        partial_[stream].clear();
        close(fd);
        fd = -1;
        break;
      }
      const int echo = stream == 0 ? options_.echo_stdout_fd : options_.echo_stderr_fd;
      for (ssize_t done = 0; echo >= 0 && done < n;) {
        const ssize_t w = write(echo, buf + done, static_cast<size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += w;
      }
      const int64_t now = SteadyNowNs();
      for (ssize_t i = 0; i < n; ++i) {
        const char c = buf[i];
        if (c == '\n' || c == '\r') {
          // "\r\n" and the empty line between two '\r' of a redraw are not lines.
          if (!partial_[stream].empty() || cut_[stream])
            options_.on_line(stream + 1, partial_[stream], now);
          partial_[stream].clear();
          cut_[stream] = false;
        } else if (partial_[stream].size() < kMaxLineBytes) {
          partial_[stream] += c;
        } else {
          cut_[stream] = true;
        }
      }
    }
  }
}

void Session::WaitUntil(int64_t until_ns) {
  const int64_t wait_ns = std::max<int64_t>(0, until_ns - SteadyNowNs());
  timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000),
              static_cast<long>(wait_ns % 1'000'000'000)};
  // Our signals are deliverable only while ppoll waits: a SIGCHLD or forwarded signal that came
  // in since the last check is pending and ends the wait at once.
  pollfd fds[2];
  nfds_t nfds = 0;
  for (auto& p : out_pipes_)
    if (p[0] >= 0) fds[nfds++] = pollfd{p[0], POLLIN, 0};
  ppoll(nfds > 0 ? fds : nullptr, nfds, &ts, &wait_mask_);
  if (options_.on_line) ReadPipes();
}

void Session::CheckTimeLimit(int64_t now) {
  if (options_.time_limit_ns <= 0) return;
  if (!outcome_.timed_out && now - started_ns_ >= options_.time_limit_ns) {
    outcome_.timed_out = true;
    SignalJob(child_, pgid_, SIGTERM);
    SignalJob(child_, pgid_, SIGCONT);  // a stopped process acts on SIGTERM only once continued
    stopping_ = true;
    kill_at_ns_ = now + kStopGraceNs;
  } else if (outcome_.timed_out && !killed_at_limit_ && now >= kill_at_ns_) {
    SignalJob(child_, pgid_, SIGKILL);
    killed_at_limit_ = true;
  }
}

// The next moment the loop must act for the time limit.
int64_t Session::LimitEventNs() const {
  if (options_.time_limit_ns <= 0 || killed_at_limit_) return INT64_MAX;
  return outcome_.timed_out ? kill_at_ns_ : started_ns_ + options_.time_limit_ns;
}

// Samples every interval until the command exits; its wait status.
int Session::SampleUntilExit() {
  proc_.emplace(child_);
  next_ns_ = SteadyNowNs();
  started_ns_ = SteadyNowNs();
  int status = 0;
  for (;;) {
    ForwardPending();
    // Has CMD ended? Asked without reaping it (WNOWAIT): one last sample then reads its final
    // counters — a zombie's /proc/PID/stat holds its CPU time, and that of all the children it
    // waited for, to the end — so the tail after the previous sample is not lost.
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(child_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == child_) {
      const int64_t now = SteadyNowNs();
      // Less than half an interval would be a rate over too short a time (CPU time comes in
      // 10 ms ticks) weighing as much as a full sample in the means.
      if (proc_->has_baseline() && now - proc_->last_monotonic_ns() >= options_.interval_ns / 2)
        TakeSample(now);
      while (waitpid(child_, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    }
    const int64_t now = SteadyNowNs();
    CheckTimeLimit(now);
    if (now >= next_ns_) {
      TakeSample(now);
      next_ns_ += options_.interval_ns;
      if (next_ns_ <= now) next_ns_ = now + options_.interval_ns;  // fell behind: do not burst
    }
    WaitUntil(std::min(next_ns_, LimitEventNs()));
  }
}

// Stopped by a signal: CMD has exited, the rest of its group may still be shutting down (e.g.
// python saving a checkpoint after the `sh -c` around it died). gpuscope returns only once they
// are gone, or after kStopGraceNs with SIGKILL, so nothing keeps the GPU after it exits.
void Session::StopTheRestOfTheGroup() {
  if (!own_group_) return;
  ForwardPending();
  if (!stopping_) return;
  const int64_t deadline = SteadyNowNs() + kStopGraceNs;
  bool killed = false;
  while (JobAlive(child_, pgid_) && SteadyNowNs() < deadline && !killed) {
    WaitUntil(std::min(deadline, SteadyNowNs() + 100'000'000));
    killed = ForwardPending();  // a second Ctrl-C does not wait
  }
  if (JobAlive(child_, pgid_)) {
    rec_.notes.push_back("processes of the command's group still ran " +
                         std::to_string(kStopGraceNs / 1'000'000'000) +
                         " s after it ended on a signal: killed (SIGKILL)");
    SignalJob(child_, pgid_, SIGKILL);
  }
}

RunOutcome Session::Finish(int status) {
  // What the job wrote before it ended; a process still holding a pipe (one outside the group)
  // is not waited for.
  if (options_.on_line) {
    ReadPipes();
    for (int stream = 0; stream < 2; ++stream)
      if (!partial_[stream].empty()) options_.on_line(stream + 1, partial_[stream], SteadyNowNs());
    ClosePipes();
  }
  outcome_.stop_signal = g_stop_signal.load();
  guard_.Release();
  g_child_pid = 0;
  RestoreSignals();
  if (live_shown_) std::fputs("\r\033[K", stderr);
  if (WIFEXITED(status))
    outcome_.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    outcome_.exit_code = 128 + WTERMSIG(status);
  rec_.exit_code = outcome_.exit_code;
  if (keep_every_ > 1)
    rec_.notes.push_back("long run: the verdict uses every " + std::to_string(keep_every_) +
                         "th sample (the record file has all)");
  if (recorder_) {
    // A failure seen only now (the last flush, close) is told in the verdict's notes.
    const Status finished = recorder_->Finish(rec_);
    if (!finished.ok()) {
      rec_.notes.push_back(finished.message());
      outcome_.record_failed = true;
    }
  }
  if (tensorboard_)
    if (Status s = tensorboard_->Finish(); !s.ok()) rec_.notes.push_back(s.message());
  return std::move(outcome_);
}

Result<RunOutcome> Session::Run() {
  if (options_.command.empty())
    return Status::Error(StatusCode::kUsage,
                         "no command to run (hint: gpuscope run -- python train.py)");
  rec_.source = SourceKind::kLive;
  // For the report only (printed, recorded); the command runs with its arguments as given.
  for (const std::string& a : options_.command) rec_.command.push_back(SanitizeText(a));
  rec_.interval_ns = options_.interval_ns;
  rec_.has_process_data = true;
  GPUSCOPE_RETURN_IF_ERROR(OpenOutputs());
  OpenGpu();
  // In the foreground of a terminal CMD shares our process group, as it would without gpuscope;
  // anywhere else (a script, a scheduler, nohup, a background job) it gets a group of its own, so
  // that a forwarded signal reaches all of it, grandchildren included, in one kill().
  own_group_ = options_.detached || !ForegroundOfATerminal();
  g_command_shares_our_group = own_group_ ? 0 : 1;
  g_to_forward = 0;
  g_stop_signal = 0;
  g_interrupts = 0;
  g_kill_tree = false;
  InstallSignals();
  if (Status s = StartCommand(); !s.ok()) {
    RestoreSignals();
    return s;
  }
  if (recorder_) recorder_->WriteHeader(rec_);
  CheckRecorder();
  const int status = SampleUntilExit();
  rec_.end_ns = UnixNowNs();
  StopTheRestOfTheGroup();
  return Finish(status);
}

}  // namespace

Result<RunOutcome> RunAndMonitor(const RunOptions& options) { return Session(options).Run(); }

}  // namespace gpuscope::monitor
