// Test child for the /proc sampler: burns CPU in N threads of the main process and forks W
// worker processes (named "burn_worker") that sleep, like idle DataLoader workers.
//   monitor_burner THREADS WORKERS SECONDS
//   monitor_burner --trap SIGNAL CODE   prints "ready", waits for SIGNAL, prints "got-SIGNAL",
//                                       exits with CODE (signal-forwarding tests; a C++ child
//                                       instead of `sh -c 'trap …'`, whose trap dash sometimes
//                                       missed under load)
//   monitor_burner --cpu-ms MS          burns MS milliseconds of its own CPU time (not wall time:
//                                       the same work however loaded the machine is) and exits
//   monitor_burner --busy-workers W SECONDS
//                                       an input-bound trainer: forks W workers (named
//                                       "burn_worker") that burn CPU for SECONDS while the main
//                                       process sleeps, waiting for them
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <string_view>
#include <vector>

// Forks `n` worker processes named "burn_worker" that each run `work` and exit.
template <typename Work>
std::vector<pid_t> ForkWorkers(int n, Work work) {
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_NAME, "burn_worker");
      work();
      _exit(0);
    }
    children.push_back(pid);
  }
  return children;
}

// Keeps one core busy for `seconds` of wall time.
void BurnFor(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile unsigned long x = 0;
  while (std::chrono::steady_clock::now() < end)
    for (int k = 0; k < 100000; ++k) x = x + static_cast<unsigned long>(k) * 2654435761u;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string_view(argv[1]) == "--trap") {
    const int sig = std::atoi(argv[2]);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_BLOCK, &set, nullptr);  // then sigwait: no handler races
    std::printf("ready\n");
    std::fflush(stdout);
    int got = 0;
    sigwait(&set, &got);
    std::printf("got-%d\n", got);
    std::fflush(stdout);
    return std::atoi(argv[3]);
  }
  if (argc == 3 && std::string_view(argv[1]) == "--cpu-ms") {
    const double budget_s = std::atof(argv[2]) / 1e3;
    auto cpu_s = [] {
      timespec ts{};
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
    };
    const double start = cpu_s();
    volatile unsigned long x = 0;
    while (cpu_s() - start < budget_s)
      for (int i = 0; i < 10000; ++i) x = x + static_cast<unsigned long>(i) * 2654435761u;
    return 0;
  }
  if (argc == 4 && std::string_view(argv[1]) == "--busy-workers") {
    const double seconds = std::atof(argv[3]);
    for (pid_t c : ForkWorkers(std::atoi(argv[2]), [seconds] { BurnFor(seconds); })) waitpid(c, nullptr, 0);
    return 0;
  }
  if (argc != 4) return 2;
  const int threads = std::atoi(argv[1]), workers = std::atoi(argv[2]);
  const double seconds = std::atof(argv[3]);
  const std::vector<pid_t> children =
      ForkWorkers(workers, [seconds] { usleep(static_cast<useconds_t>(seconds * 1e6)); });
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<unsigned long> sink{0};
  auto burn = [&] {
    unsigned long x = 0;
    while (std::chrono::steady_clock::now() < end)
      for (int i = 0; i < 100000; ++i) x += static_cast<unsigned long>(i) * 2654435761u;
    sink += x;
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(burn);
  burn();
  for (auto& t : pool) t.join();
  for (pid_t c : children) waitpid(c, nullptr, 0);
  return 0;
}
