// Each analysis of one rank timed on its own (issue 17: "analyses linear in events").
//
//   gpuscope_bench_analyses FILE [--repeat K] [--only NAME]
//
// Loads FILE once (all cores), then runs every analysis RunAll schedules K times (default 5) on
// one thread, in dependency order, each on the results its inputs need, and prints per analysis
// the fastest run's thread CPU milliseconds and nanoseconds per event of the trace. A flat ns/event
// from a 256 MB to a 4 GB trace is what "linear" means; a column that grows is the analysis to
// look at. step_graph and whatif (issue 31) are the replay's parts, reported also as a share of
// RunAll on one thread. --only NAME runs that analysis alone (for perf record). The last line is RunAll itself on the same thread count as `gpuscope analyze -j 1`
// (fastest of K) and on all cores. Each analysis also prints its peak heap: the most bytes it had
// allocated at once above what was allocated before it ran (operator new counted in this binary),
// results included — what it adds to the process's peak RSS while it runs.
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "analyze/run_all.h"
#include "base/malloc_tuning.h"
#include "base/thread_pool.h"
#include "gpuscope/ingest.h"
#include "whatif/whatif.h"

// Heap bytes in use and their peak, counted by operator new/delete (the analyses allocate through
// std containers).
std::atomic<int64_t> g_heap_bytes{0};
std::atomic<int64_t> g_heap_peak{0};

void* operator new(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  const int64_t now = g_heap_bytes += static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = g_heap_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_heap_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_heap_bytes -= static_cast<int64_t>(malloc_usable_size(p));
  std::free(p);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }
// The array forms through the same two, so every allocation is counted (and, under ASan, made
// and freed by one pair).
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete[](void* p, size_t) noexcept { operator delete(p); }

namespace {

using namespace gpuscope;
using namespace gpuscope::analyze;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The fastest of `repeat` runs of f, in seconds of `clock`.
template <typename F>
double Fastest(int repeat, double (*clock)(), F&& f) {
  double best = 1e30;
  for (int i = 0; i < repeat; ++i) {
    const double t0 = clock();
    f();
    best = std::min(best, clock() - t0);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  // The allocator settings of `gpuscope`, so the analyses reuse memory here as they do there.
  TuneMalloc();
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpuscope_bench_analyses FILE [--repeat K] [--only NAME]\n");
    return 2;
  }
  int repeat = 5;
  std::string only;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  auto loaded = LoadTrace(argv[1]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
    return 2;
  }
  const Trace& t = *loaded;
  // Per event of the file (traceEvents entries), whatever the model keeps of them.
  const double events = static_cast<double>(t.info.events_total);
  std::printf("analyses: file=%s events=%.0f gpu=%zu runtime=%zu cpu=%zu memory=%zu repeat=%d\n",
              argv[1], events, t.gpu.size(), t.runtime.size(), t.cpu.size(), t.memory.size(),
              repeat);
  // After the load: the model, what the heap holds (in use, and free but kept), and the RSS.
  {
    const struct mallinfo2 mi = mallinfo2();
    long rss_pages = 0;
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
      long size = 0;
      if (std::fscanf(f, "%ld %ld", &size, &rss_pages) != 2) rss_pages = 0;
      std::fclose(f);
    }
    std::printf("  after load: model %.1f MB, heap in use %.1f MB (of which mmapped %.1f MB), "
                "heap free %.1f MB, RSS %.1f MB\n",
                static_cast<double>(t.TableBytes()) / 1e6,
                static_cast<double>(mi.uordblks + mi.hblkhd) / 1e6,
                static_cast<double>(mi.hblkhd) / 1e6, static_cast<double>(mi.fordblks) / 1e6,
                static_cast<double>(rss_pages) * 4096 / 1e6);
  }
  const auto row = [&](const char* name, double seconds, int64_t peak_bytes = -1) {
    std::printf("  %-15s %9.2f ms %7.2f ns/event", name, seconds * 1e3, seconds * 1e9 / events);
    if (peak_bytes >= 0) std::printf(" %8.1f MB peak heap", static_cast<double>(peak_bytes) / 1e6);
    std::printf("\n");
  };
  // Inputs of the later analyses, made once (each is also timed on its own below).
  const KernelClasses classes = BuildKernelClasses(t);
  const GpuSelection selection = SelectGpuEvents(t);
  const StepsResult steps = AnalyzeSteps(t, classes);
  const SyncStats sync = AnalyzeSyncPoints(t);
  LaunchOptions launch_options = RunOptions{}.launches;
  launch_options.made_selection = &selection;
  CopyOptions copy_options;
  copy_options.made_selection = &selection;

  double sum = 0;
  const auto timed = [&](const char* name, auto&& f) {
    if (!only.empty() && only != name) return;
    const int64_t before = g_heap_bytes.load();
    g_heap_peak.store(before);
    const double s = Fastest(repeat, ThreadCpuSeconds, f);
    sum += s;
    row(name, s, g_heap_peak.load() - before);
  };
  timed("kernel_classes", [&] { (void)BuildKernelClasses(t); });
  timed("gpu_selection", [&] { (void)SelectGpuEvents(t); });
  timed("steps", [&] { (void)AnalyzeSteps(t, classes); });
  timed("occupancy", [&] { (void)AnalyzeOccupancy(t, classes, steps); });
  timed("gpu_time", [&] { (void)AnalyzeGpuTimeOf(t, classes, selection); });
  timed("kernels", [&] { (void)AnalyzeKernels(t, classes); });
  timed("sync_points", [&] { (void)AnalyzeSyncPoints(t); });
  timed("idle_gaps", [&] { (void)AnalyzeIdleGaps(t, steps, sync); });
  timed("launches", [&] { (void)AnalyzeLaunches(t, launch_options); });
  timed("copies", [&] { (void)AnalyzeCopies(t, copy_options); });
  timed("memory", [&] { (void)AnalyzeMemory(t); });
  timed("summary", [&] { (void)SummarizeTrace(t); });
  timed("op_costs", [&] { (void)AnalyzeOpCosts(t, classes, steps); });
  timed("host_work", [&] { (void)AnalyzeHostWork(t, steps); });
  // Issue 31: the step graph, its critical path and every what-if with the plan, against the
  // rest of analyze (RunAll on one thread, below).
  double replay = 0, last = 0;
  const auto replay_timed = [&](const char* name, auto&& f) {
    const double before = sum;
    timed(name, f);
    last = sum - before;
    replay += last;
  };
  replay_timed("step_graph", [&] {
    const StepGraph g = BuildStepGraph(t, classes, steps);
    (void)FindCriticalPath(g, Replay(g));
  });
  RankResults results;
  results.trace = &t;
  results.steps = steps;
  results.op_costs = AnalyzeOpCosts(t, classes, steps);
  results.step_graph = BuildStepGraph(t, classes, steps);
  results.host_work = AnalyzeHostWork(t, steps);  // the what-ifs read its spans
  replay_timed("whatif", [&] { (void)whatif::RunWhatIfs(t, results); });
  const double whatifs = last;  // analyze runs them after RunAll (report/report.cc)
  row("sum", sum);
  if (!only.empty()) return 0;
  ThreadPool one(1);
  const double run_all = Fastest(repeat, WallSeconds, [&] { (void)RunAll(t, RunOptions{}, one); });
  row("RunAll -j 1", run_all);
  std::printf("  step graph + critical path + what-ifs: %.1f %% of analyze's (RunAll -j 1 + what-ifs) "
              "(graph nodes %zu, edges %zu)\n",
              100 * replay / (run_all + whatifs), results.step_graph.size(), results.step_graph.edge_from.size());
  ThreadPool all(0);
  char label[32];
  std::snprintf(label, sizeof label, "RunAll -j %zu", static_cast<size_t>(all.threads()));
  row(label, Fastest(repeat, WallSeconds, [&] { (void)RunAll(t, RunOptions{}, all); }));
  return 0;
}
