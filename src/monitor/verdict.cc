#include "monitor/verdict.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "render/json_writer.h"

namespace gpuscope::monitor {

namespace {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
std::string Pct(double v) { return Fmt("%.0f %%", v); }
std::string Gb(uint64_t bytes) { return Fmt("%.1f", bytes / 1e9); }
std::string Seconds(int64_t ns) {
  if (ns >= 120'000'000'000LL) return Fmt("%.1f min", ns / 60e9);
  return Fmt("%.1f s", ns / 1e9);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::floor(p * static_cast<double>(v.size() - 1)));
  return v[i];
}

template <typename T>
std::optional<double> MeanOf(const std::vector<T>& v) {
  if (v.empty()) return std::nullopt;
  double sum = 0;
  for (T x : v) sum += static_cast<double>(x);
  return sum / static_cast<double>(v.size());
}

// Descendants of `main_pid` in one sample (through ppid links of the sampled tree).
std::set<int32_t> DescendantsOf(const Sample& s, int32_t main_pid) {
  std::set<int32_t> out = {main_pid};
  bool grew = true;
  while (grew) {
    grew = false;
    for (const ProcessSample& p : s.processes)
      if (out.count(p.ppid) && out.insert(p.pid).second) grew = true;
  }
  out.erase(main_pid);
  return out;
}

// The main process of the whole run: most CPU time at its last sample.
int32_t PickMainPid(const Recording& r) {
  std::map<int32_t, uint64_t> cpu_ns;
  for (const Sample& s : r.samples)
    for (const ProcessSample& p : s.processes) cpu_ns[p.pid] = p.cpu_time_ns;
  int32_t best = r.root_pid;
  uint64_t best_ns = 0;
  for (auto [pid, ns] : cpu_ns)
    if (ns > best_ns || (ns == best_ns && pid == r.root_pid)) best = pid, best_ns = ns;
  return best;
}

std::optional<double> MeanGpuUtil(const Sample& s) {
  std::vector<double> v;
  for (const GpuSample& g : s.gpus)
    if (g.sm_util_pct) v.push_back(*g.sm_util_pct);
  return MeanOf(v);
}

bool Throttled(uint64_t reasons) {
  return reasons & (kThrottleSwPowerCap | kThrottleHwSlowdown | kThrottleSwThermal |
                    kThrottleHwThermal | kThrottleHwPowerBrake);
}

}  // namespace

TreeCpu SplitTreeCpu(const Sample& s, int32_t main_pid) {
  TreeCpu t;
  if (main_pid == 0) {
    uint64_t best = 0;
    for (const ProcessSample& p : s.processes)
      if (main_pid == 0 || p.cpu_time_ns > best) main_pid = p.pid, best = p.cpu_time_ns;
  }
  t.main_pid = main_pid;
  const std::set<int32_t> workers = DescendantsOf(s, main_pid);
  for (const ProcessSample& p : s.processes) {
    t.tree_pct += p.cpu_pct + p.reaped_cpu_pct;
    // Children that ended, of the main process or of a worker, were workers themselves.
    if (p.pid == main_pid || workers.count(p.pid)) t.workers_ended_pct += p.reaped_cpu_pct;
    if (p.pid == main_pid) {
      t.main_pct = p.cpu_pct;
      t.main_name = p.name;
    } else if (workers.count(p.pid)) {
      ++t.workers;
      t.workers_pct += p.cpu_pct;
    }
  }
  t.workers_pct += t.workers_ended_pct;
  return t;
}

Recording SliceRecording(const Recording& r, int64_t from_ns, int64_t to_ns) {
  Recording out = r;
  out.samples.clear();
  for (const Sample& s : r.samples)
    if (s.time_ns >= from_ns && s.time_ns <= to_ns) out.samples.push_back(s);
  out.start_ns = std::max(r.start_ns, from_ns);
  out.end_ns = out.samples.empty() ? out.start_ns : out.samples.back().time_ns;
  out.exit_code.reset();
  return out;
}

MonitorReport BuildMonitorReport(const Recording& r) {
  MonitorReport rep;
  rep.source = r.source;
  rep.source_path = r.source_path;
  rep.command = r.command;
  rep.exit_code = r.exit_code;
  rep.samples = r.samples.size();
  rep.notes = r.notes;
  rep.malformed_lines = r.malformed_lines;
  rep.malformed_examples = r.malformed_examples;
  rep.gpu_unavailable = r.gpu_unavailable;
  rep.start_ns = r.samples.empty() ? r.start_ns : std::min(r.start_ns ? r.start_ns : INT64_MAX,
                                                           r.samples.front().time_ns);
  const int64_t end_ns = std::max(r.end_ns, r.samples.empty() ? 0 : r.samples.back().time_ns);
  rep.duration_ns = std::max<int64_t>(0, end_ns - rep.start_ns);
  rep.interval_ns = r.interval_ns;
  if (rep.interval_ns == 0 && r.samples.size() > 1) {
    std::vector<double> gaps;
    for (size_t i = 1; i < r.samples.size(); ++i)
      if (r.samples[i].time_ns > r.samples[i - 1].time_ns)
        gaps.push_back(static_cast<double>(r.samples[i].time_ns - r.samples[i - 1].time_ns));
    rep.interval_ns = static_cast<int64_t>(Percentile(gaps, 0.5));
  }
  if (r.samples.empty()) {
    rep.verdict = "no samples: the command ended before the first sample";
    return rep;
  }

  // --- Warm-up: the signal reaches 80 % of its 90th percentile. ---
  const int32_t main_pid = r.has_process_data ? PickMainPid(r) : 0;
  std::vector<std::optional<double>> signal;
  bool gpu_signal = false;
  for (const Sample& s : r.samples)
    if (MeanGpuUtil(s)) gpu_signal = true;
  for (const Sample& s : r.samples) {
    if (gpu_signal)
      signal.push_back(MeanGpuUtil(s));
    else if (r.has_process_data)
      signal.push_back(SplitTreeCpu(s, main_pid).main_pct);
    else
      signal.push_back(std::nullopt);
  }
  std::vector<double> present;
  for (const auto& v : signal)
    if (v) present.push_back(*v);
  const double p90 = Percentile(present, 0.9);
  int64_t warmup_end_ns = r.samples.front().time_ns;
  if (p90 > 0) {
    for (size_t i = 0; i < signal.size(); ++i)
      if (signal[i] && *signal[i] >= kWarmupReachFraction * p90) {
        warmup_end_ns = r.samples[i].time_ns;
        break;
      }
  }
  warmup_end_ns = std::min<int64_t>(
      warmup_end_ns, rep.start_ns + static_cast<int64_t>(kWarmupMaxFraction * rep.duration_ns));
  // Steady from the first sample: no warm-up (the first sample comes a few µs after the start).
  rep.warmup_ns = warmup_end_ns <= r.samples.front().time_ns
                      ? 0
                      : std::max<int64_t>(0, warmup_end_ns - rep.start_ns);
  std::vector<const Sample*> steady, warmup;
  for (const Sample& s : r.samples) (s.time_ns >= warmup_end_ns ? steady : warmup).push_back(&s);
  if (steady.empty())
    for (const Sample& s : r.samples) steady.push_back(&s);

  // --- GPUs. ---
  std::map<int32_t, GpuSummary> gpus;
  for (const GpuInfo& g : r.gpus) {
    gpus[g.index].index = g.index;
    gpus[g.index].name = g.name;
    gpus[g.index].mem_total_bytes = g.mem_total_bytes;
    gpus[g.index].power_limit_w = g.power_limit_w;
  }
  struct Series {
    std::vector<double> util, util_warmup, mem_util, power, clock;
    size_t throttled = 0, throttle_known = 0;
  };
  std::map<int32_t, Series> series;
  for (const Sample& s : r.samples) {
    const bool in_steady = s.time_ns >= warmup_end_ns || steady.size() == r.samples.size();
    for (const GpuSample& g : s.gpus) {
      GpuSummary& sum = gpus[g.index];
      sum.index = g.index;
      Series& ser = series[g.index];
      ++sum.samples;
      if (g.mem_used_bytes)
        sum.mem_used_peak_bytes = std::max(sum.mem_used_peak_bytes.value_or(0), *g.mem_used_bytes);
      if (g.mem_total_bytes) sum.mem_total_bytes = g.mem_total_bytes;
      if (g.tree_mem_bytes)
        sum.tree_mem_peak_bytes = std::max(sum.tree_mem_peak_bytes.value_or(0), *g.tree_mem_bytes);
      if (g.power_limit_w) sum.power_limit_w = g.power_limit_w;
      if (g.temperature_c)
        sum.temperature_max_c = std::max(sum.temperature_max_c.value_or(-1e9), *g.temperature_c);
      if (!in_steady) {
        if (g.sm_util_pct) ser.util_warmup.push_back(*g.sm_util_pct);
        continue;
      }
      if (g.sm_util_pct) ser.util.push_back(*g.sm_util_pct);
      if (g.mem_util_pct) ser.mem_util.push_back(*g.mem_util_pct);
      if (g.power_w) ser.power.push_back(*g.power_w);
      if (g.sm_clock_mhz) ser.clock.push_back(*g.sm_clock_mhz);
      if (g.throttle_reasons) {
        ++ser.throttle_known;
        if (Throttled(*g.throttle_reasons)) ++ser.throttled;
      }
    }
  }
  for (auto& [index, sum] : gpus) {
    const Series& ser = series[index];
    sum.util_mean_pct = MeanOf(ser.util);
    sum.util_mean_warmup_pct = MeanOf(ser.util_warmup);
    sum.mem_util_mean_pct = MeanOf(ser.mem_util);
    sum.power_mean_w = MeanOf(ser.power);
    sum.sm_clock_mean_mhz = MeanOf(ser.clock);
    if (ser.throttle_known)
      sum.throttled_share = static_cast<double>(ser.throttled) / ser.throttle_known;
    rep.gpus.push_back(sum);
  }
  rep.has_gpu = gpu_signal || std::any_of(rep.gpus.begin(), rep.gpus.end(), [](const auto& g) {
                  return g.samples > 0;
                });

  // --- CPU of the tree. ---
  if (r.has_process_data) {
    CpuSummary cpu;
    cpu.main_pid = main_pid;
    std::vector<double> main_pct, workers_pct, workers_ended_pct, tree_pct, system_pct;
    std::map<int32_t, std::pair<double, size_t>> per_worker;  // pid → (sum %, samples)
    std::map<int32_t, std::string> names;
    int64_t previous_ns = r.start_ns;
    for (const Sample& s : r.samples) {
      // A sample's rates cover the time since the sample before it. (After the in-memory halving
      // of long runs a kept sample stands for the dropped one before it too: an unbiased estimate.)
      if (previous_ns > 0 && s.time_ns > previous_ns)
        cpu.tree_cpu_s +=
            SplitTreeCpu(s, main_pid).tree_pct / 100 * (s.time_ns - previous_ns) / 1e9;
      previous_ns = s.time_ns;
      uint64_t rss = 0;
      for (const ProcessSample& p : s.processes) {
        rss += p.rss_bytes;
        names[p.pid] = p.name;
      }
      cpu.peak_rss_bytes = std::max(cpu.peak_rss_bytes, rss);
    }
    for (const Sample* s : steady) {
      const TreeCpu t = SplitTreeCpu(*s, main_pid);
      main_pct.push_back(t.main_pct);
      workers_pct.push_back(t.workers_pct);
      workers_ended_pct.push_back(t.workers_ended_pct);
      tree_pct.push_back(t.tree_pct);
      const std::set<int32_t> workers = DescendantsOf(*s, main_pid);
      for (const ProcessSample& p : s->processes)
        if (workers.count(p.pid)) {
          per_worker[p.pid].first += p.cpu_pct;
          ++per_worker[p.pid].second;
        }
      if (!s->core_busy_pct.empty()) {
        cpu.cores = std::max(cpu.cores, s->core_busy_pct.size());
        system_pct.push_back(*MeanOf(s->core_busy_pct));
      }
    }
    cpu.main_name = names[main_pid];
    cpu.main_mean_pct = MeanOf(main_pct).value_or(0);
    cpu.workers_mean_pct = MeanOf(workers_pct).value_or(0);
    cpu.workers_ended_mean_pct = MeanOf(workers_ended_pct).value_or(0);
    cpu.tree_mean_pct = MeanOf(tree_pct).value_or(0);
    cpu.system_busy_mean_pct = MeanOf(system_pct);
    for (auto& [pid, acc] : per_worker)
      cpu.workers.push_back({pid, names[pid], acc.second ? acc.first / acc.second : 0});
    // Storage reads: the sum over the processes alive in the last sample only. Linux adds a
    // reaped child's I/O to its parent's /proc/PID/io, so also counting the last value seen for
    // processes that have exited (and been waited for) would count their reads twice. Reads of a
    // process that exited unreaped by anything in the tree (reparented away) are missed.
    for (auto s = r.samples.rbegin(); s != r.samples.rend(); ++s) {
      if (s->processes.empty()) continue;
      for (const ProcessSample& p : s->processes)
        if (p.read_bytes) cpu.read_bytes = cpu.read_bytes.value_or(0) + *p.read_bytes;
      break;
    }
    rep.cpu = cpu;
  }

  // --- Findings. ---
  std::optional<double> util;  // steady mean over GPUs
  {
    std::vector<double> v;
    for (const GpuSummary& g : rep.gpus)
      if (g.util_mean_pct) v.push_back(*g.util_mean_pct);
    util = MeanOf(v);
  }
  const CpuSummary* cpu = rep.cpu ? &*rep.cpu : nullptr;
  size_t idle_workers = 0, busy_workers = 0;
  double worker_mean_each = 0;
  if (cpu) {
    for (const WorkerSummary& w : cpu->workers) {
      if (w.cpu_mean_pct < kIdleWorkerPct) ++idle_workers;
      if (w.cpu_mean_pct >= kBusyWorkerPct) ++busy_workers;
      worker_mean_each += w.cpu_mean_pct;
    }
    if (!cpu->workers.empty()) worker_mean_each /= static_cast<double>(cpu->workers.size());
  }
  const bool main_bound = cpu && cpu->main_mean_pct >= kCpuBoundPct;
  // Idle: every worker seen alive below the threshold, and the short-lived ones together too.
  const bool workers_idle =
      cpu && idle_workers == cpu->workers.size() && cpu->workers_ended_mean_pct < kIdleWorkerPct;
  const bool workers_saturated = cpu && !cpu->workers.empty() && busy_workers == cpu->workers.size();
  const bool system_saturated =
      cpu && cpu->system_busy_mean_pct && *cpu->system_busy_mean_pct >= kCpuSaturatedPct;
  auto main_words = [&] {
    return "the main process (" + cpu->main_name + ", pid " + std::to_string(cpu->main_pid) +
           ") used " + Pct(cpu->main_mean_pct) + " of one core";
  };
  auto worker_words = [&] {
    // Below half a percent the short-lived workers are not worth a clause (it rounds to 0 %).
    const bool ended = cpu->workers_ended_mean_pct >= 0.5;
    std::string words;
    if (cpu->workers.empty())
      words = ended ? "no worker process was alive at a sample" : "no worker processes existed";
    else
      words = std::to_string(cpu->workers.size()) + " worker" +
              (cpu->workers.size() == 1 ? "" : "s") + (workers_idle ? " idled (" : " averaged ") +
              Pct(worker_mean_each) + (workers_idle ? " each)" : " each");
    if (ended)
      words += ", and workers that ended between samples used " + Pct(cpu->workers_ended_mean_pct) +
               " of a core";
    return words;
  };
  const std::string gpu_words = util ? "GPU busy " + Pct(*util) + " on average" : "";
  const std::string input_fix =
      "Move data loading and augmentation into DataLoader workers: DataLoader(..., num_workers=N "
      "(start with the CPU cores per GPU), pin_memory=True, persistent_workers=True); keep "
      "per-sample Python work out of the training loop.";

  // Hung in a collective: busy at low power for a long stretch.
  for (const auto& [index, ser_unused] : series) {
    (void)ser_unused;
    int64_t run_start = -1, longest = 0, longest_start = 0;
    double power_sum = 0, limit = 0, longest_power = 0;  // W
    size_t n = 0;
    for (const Sample& s : r.samples) {
      const GpuSample* g = nullptr;
      for (const GpuSample& x : s.gpus)
        if (x.index == index) g = &x;
      const std::optional<double> lim =
          g && g->power_limit_w ? g->power_limit_w : gpus[index].power_limit_w;
      const bool hot = g && g->sm_util_pct && g->power_w && lim && *g->sm_util_pct >= kHangUtilPct &&
                       *g->power_w < kHangPowerFraction * *lim;
      if (hot) {
        if (run_start < 0) run_start = s.time_ns, power_sum = 0, n = 0;
        power_sum += *g->power_w;
        ++n;
        limit = *lim;
        if (s.time_ns - run_start > longest) {
          longest = s.time_ns - run_start;
          longest_start = run_start;
          longest_power = power_sum / static_cast<double>(n);
        }
      } else {
        run_start = -1;
      }
    }
    if (longest >= kHangMinNs) {
      const double mean_power = longest_power;
      rep.findings.push_back(
          {"probably_hung",
           "GPU " + std::to_string(index) + " probably hung in a collective",
           "utilisation ≥ " + Pct(kHangUtilPct) + " at " + Fmt("%.0f", mean_power) + " of " +
               Fmt("%.0f", limit) + " W (" + Pct(100 * mean_power / limit) + " of the limit) for " +
               Seconds(longest) + " from t=" + Seconds(longest_start - rep.start_ns) +
               ": a kernel that spins without doing arithmetic, typically an NCCL collective "
               "waiting for a rank that does not arrive",
           "Check that every rank is alive and reaches the same collective; run with "
           "NCCL_DEBUG=INFO and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and a process-group timeout; "
           "`py-spy dump --pid PID` each rank to see where it waits."});
    }
  }

  if (util && *util < kLowGpuUtilPct && cpu) {
    if (main_bound && workers_idle) {
      rep.findings.push_back(
          {"input_single_threaded", "Input pipeline is single-threaded",
           gpu_words + " while " + main_words() + " and " + worker_words(), input_fix});
    } else if (workers_saturated) {
      rep.findings.push_back(
          {"workers_saturated", "Data-loading workers are saturated",
           gpu_words + " while " + worker_words() + " (each ≥ " + Pct(kBusyWorkerPct) +
               " of a core)",
           system_saturated ? "All cores are busy: make transforms cheaper (decode on the GPU, "
                              "pre-process the data set once) or use a machine with more cores "
                              "per GPU."
                            : "Raise num_workers (cores are free), or make transforms cheaper."});
    } else if (system_saturated) {
      rep.findings.push_back({"cpu_saturated", "All CPU cores are busy",
                              gpu_words + " while the cores were " +
                                  Pct(*cpu->system_busy_mean_pct) + " busy on average",
                              "Find what else runs on the machine (top), or use fewer/cheaper "
                              "CPU transforms per sample."});
    } else if (*util < kIdleGpuUtilPct && cpu->main_mean_pct < kCpuBoundPct / 2) {
      std::string reads;
      if (cpu->read_bytes && rep.duration_ns > 0)
        reads = "; the tree read " + Fmt("%.1f", *cpu->read_bytes / 1e6) + " MB from storage (" +
                Fmt("%.1f", *cpu->read_bytes / 1e6 / (rep.duration_ns / 1e9)) + " MB/s)";
      rep.findings.push_back(
          {"waiting", "GPU and host both mostly idle: the job waits on something else",
           gpu_words + " while " + main_words() + reads,
           "Look for slow storage or network reads, a lock, or another rank it waits for "
           "(py-spy dump shows where)."});
    } else {
      rep.findings.push_back({"gpu_underused", "GPU under-used, host not visibly the bottleneck",
                              gpu_words + "; " + main_words() + "; " + worker_words(),
                              "Profile a few steps (torch.profiler) and run `gpuscope analyze` "
                              "on the trace to see where the step time goes."});
    }
  } else if (!util && cpu) {
    if (main_bound && workers_idle)
      rep.findings.push_back(
          {"main_cpu_bound", "The main process keeps one core full",
           main_words() + " and " + worker_words() +
               " — if this job feeds a GPU, its input pipeline is single-threaded",
           input_fix});
    else if (workers_saturated)
      rep.findings.push_back({"workers_saturated", "Worker processes are saturated",
                              worker_words() + " (each ≥ " + Pct(kBusyWorkerPct) + " of a core)",
                              "Raise the number of workers if cores are free, or make the "
                              "per-sample work cheaper."});
    if (system_saturated)
      rep.findings.push_back({"cpu_saturated", "All CPU cores are busy",
                              "the cores were " + Pct(*cpu->system_busy_mean_pct) +
                                  " busy on average",
                              "Find what else runs on the machine (top), or do less CPU work "
                              "per sample."});
  }

  for (const GpuSummary& g : rep.gpus) {
    if (g.mem_used_peak_bytes && g.mem_total_bytes && *g.mem_total_bytes > 0 &&
        *g.mem_used_peak_bytes < kMemoryHeadroomFraction * *g.mem_total_bytes)
      rep.findings.push_back(
          {"memory_headroom", "GPU " + std::to_string(g.index) + " memory mostly unused",
           "memory used " + Gb(*g.mem_used_peak_bytes) + " of " + Gb(*g.mem_total_bytes) +
               " GB at the peak → batch could grow",
           "Raise the batch size (and scale the learning rate), or keep the global batch with "
           "fewer gradient-accumulation steps."});
    if (g.throttled_share && *g.throttled_share >= kThrottleShareMin)
      rep.findings.push_back(
          {"throttled", "GPU " + std::to_string(g.index) + " clocks slowed down",
           "a power-cap, thermal or hardware slowdown reason was set in " +
               Pct(100 * *g.throttled_share) + " of the steady-state samples" +
               (g.temperature_max_c ? " (max " + Fmt("%.0f", *g.temperature_max_c) + " °C)" : ""),
           "Check cooling and power limits (nvidia-smi -q -d PERFORMANCE)."});
  }

  // --- One-line verdict. ---
  if (!rep.findings.empty() && rep.findings.front().id != "memory_headroom" &&
      rep.findings.front().id != "throttled")
    rep.verdict = rep.findings.front().evidence + " → " + rep.findings.front().title;
  else if (util && *util >= kWellUsedGpuUtilPct)
    rep.verdict = gpu_words + " → GPU well used";
  else if (util)
    rep.verdict = gpu_words;
  else if (cpu)
    rep.verdict = "no GPU data; " + main_words() + ", " + worker_words();
  else
    rep.verdict = "no GPU or CPU data in the samples";
  if (!rep.verdict.empty()) rep.verdict[0] = static_cast<char>(std::toupper(rep.verdict[0]));
  return rep;
}

std::string RenderMonitorText(const MonitorReport& r) {
  std::string out;
  auto line = [&](const std::string& label, const std::string& text) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "  %-11s ", label.c_str());
    out += buf + text + "\n";
  };
  std::string head = "gpuscope monitor · ";
  switch (r.source) {
    case SourceKind::kLive:
      head += "run";
      break;
    case SourceKind::kRecording:
      head += "recording " + r.source_path;
      break;
    case SourceKind::kNvidiaSmiCsv:
      head += "nvidia-smi CSV log " + r.source_path;
      break;
    case SourceKind::kNvidiaSmiDmon:
      head += "nvidia-smi dmon log " + r.source_path;
      break;
  }
  out += head + "\n";
  if (!r.command.empty()) {
    std::string cmd;
    for (const std::string& a : r.command) cmd += (cmd.empty() ? "" : " ") + a;
    line("command", cmd + (r.exit_code ? " → exit code " + std::to_string(*r.exit_code) : ""));
  }
  line("span", Seconds(r.duration_ns) + " · " + std::to_string(r.samples) + " samples" +
                   (r.interval_ns ? " every " + Fmt("%.0f ms", r.interval_ns / 1e6) : "") +
                   (r.warmup_ns > 0 ? " · warm-up " + Seconds(r.warmup_ns) + ", then steady"
                                    : " · no warm-up"));
  if (!r.has_gpu)
    line("GPU", "none — " + (r.gpu_unavailable.empty() ? std::string("no GPU samples")
                                                         : r.gpu_unavailable));
  for (const GpuSummary& g : r.gpus) {
    std::string t = g.name.empty() ? "" : g.name + " · ";
    t += "util " + (g.util_mean_pct ? Pct(*g.util_mean_pct) : std::string("n/a"));
    if (g.util_mean_warmup_pct && r.warmup_ns > 0)
      t += " (warm-up " + Pct(*g.util_mean_warmup_pct) + ")";
    if (g.mem_util_mean_pct) t += " · memory util " + Pct(*g.mem_util_mean_pct);
    if (g.mem_used_peak_bytes)
      t += " · memory " + Gb(*g.mem_used_peak_bytes) +
           (g.mem_total_bytes ? " of " + Gb(*g.mem_total_bytes) : std::string()) + " GB peak";
    if (g.tree_mem_peak_bytes) t += " (this job " + Gb(*g.tree_mem_peak_bytes) + " GB)";
    if (g.power_mean_w)
      t += " · power " + Fmt("%.0f", *g.power_mean_w) +
           (g.power_limit_w ? " of " + Fmt("%.0f", *g.power_limit_w) : std::string()) + " W";
    if (g.sm_clock_mean_mhz) t += " · SM " + Fmt("%.0f MHz", *g.sm_clock_mean_mhz);
    if (g.temperature_max_c) t += " · max " + Fmt("%.0f °C", *g.temperature_max_c);
    line("GPU " + std::to_string(g.index), t);
  }
  if (r.cpu) {
    const CpuSummary& c = *r.cpu;
    std::string t = "main " + c.main_name + " (pid " + std::to_string(c.main_pid) + ") " +
                    Pct(c.main_mean_pct) + " of one core";
    t += " · " + std::to_string(c.workers.size()) + " workers " + Pct(c.workers_mean_pct) +
         " together";
    if (c.workers_ended_mean_pct >= 0.5)
      t += " (" + Pct(c.workers_ended_mean_pct) + " in workers that ended between samples)";
    t += " · tree " + Pct(c.tree_mean_pct) + " (" + Fmt("%.1f", c.tree_cpu_s) + " CPU-s in all)";
    if (c.system_busy_mean_pct)
      t += " · system " + Pct(*c.system_busy_mean_pct) + " of " + std::to_string(c.cores) +
           " cores";
    t += " · RSS " + Fmt("%.1f", c.peak_rss_bytes / 1e6) + " MB peak";
    if (c.read_bytes) t += " · read " + Fmt("%.1f", *c.read_bytes / 1e6) + " MB";
    line("CPU", t);
  }
  line("verdict", r.verdict);
  int n = 0;
  for (const Finding& f : r.findings) {
    out += "  " + std::to_string(++n) + ". " + f.title + "\n";
    out += "     evidence: " + f.evidence + "\n";
    out += "     fix: " + f.fix + "\n";
  }
  for (const std::string& note : r.notes) line("note", note);
  if (r.malformed_lines > 0) {
    line("skipped", std::to_string(r.malformed_lines) + " malformed line" +
                        (r.malformed_lines == 1 ? "" : "s"));
    for (const std::string& e : r.malformed_examples) line("", e);
  }
  return out;
}

std::string RenderMonitorJson(const MonitorReport& r) {
  render::JsonWriter w(2);
  auto opt = [&](const char* key, const auto& v, int decimals = 2) {
    w.Key(key);
    if (!v) {
      w.Null();
    } else if constexpr (std::is_floating_point_v<std::decay_t<decltype(*v)>>) {
      w.Double(*v, decimals);
    } else {
      w.Uint(*v);
    }
  };
  static const char* const kSources[] = {"live", "recording", "nvidia_smi_csv", "nvidia_smi_dmon"};
  w.BeginObject().Key("monitor_schema_version").Int(1);
  w.Key("source").String(kSources[static_cast<int>(r.source)]).Key("path").String(r.source_path);
  w.Key("command").BeginArray();
  for (const std::string& a : r.command) w.String(a);
  w.EndArray();
  w.Key("exit_code");
  if (r.exit_code)
    w.Int(*r.exit_code);
  else
    w.Null();
  w.Key("start_ns").Int(r.start_ns).Key("duration_ns").Int(r.duration_ns);
  w.Key("interval_ns").Int(r.interval_ns).Key("samples").Uint(r.samples);
  w.Key("warmup_ns").Int(r.warmup_ns).Key("has_gpu").Bool(r.has_gpu);
  w.Key("gpu_unavailable").String(r.gpu_unavailable);
  w.Key("gpus").BeginArray();
  for (const GpuSummary& g : r.gpus) {
    w.BeginObject().Key("index").Int(g.index).Key("name").String(g.name);
    w.Key("samples").Uint(g.samples);
    opt("util_mean_pct", g.util_mean_pct);
    opt("util_mean_warmup_pct", g.util_mean_warmup_pct);
    opt("mem_util_mean_pct", g.mem_util_mean_pct);
    opt("mem_used_peak_bytes", g.mem_used_peak_bytes);
    opt("mem_total_bytes", g.mem_total_bytes);
    opt("tree_mem_peak_bytes", g.tree_mem_peak_bytes);
    opt("power_mean_w", g.power_mean_w);
    opt("power_limit_w", g.power_limit_w);
    opt("sm_clock_mean_mhz", g.sm_clock_mean_mhz);
    opt("temperature_max_c", g.temperature_max_c);
    opt("throttled_share", g.throttled_share, 4);
    w.EndObject();
  }
  w.EndArray();
  w.Key("cpu");
  if (!r.cpu) {
    w.Null();
  } else {
    const CpuSummary& c = *r.cpu;
    w.BeginObject().Key("main_pid").Int(c.main_pid).Key("main_name").String(c.main_name);
    w.Key("main_mean_pct").Double(c.main_mean_pct, 1);
    w.Key("workers").BeginArray();
    for (const WorkerSummary& k : c.workers)
      w.BeginObject()
          .Key("pid")
          .Int(k.pid)
          .Key("name")
          .String(k.name)
          .Key("cpu_mean_pct")
          .Double(k.cpu_mean_pct, 1)
          .EndObject();
    w.EndArray();
    w.Key("workers_mean_pct").Double(c.workers_mean_pct, 1);
    w.Key("workers_ended_mean_pct").Double(c.workers_ended_mean_pct, 1);
    w.Key("tree_mean_pct").Double(c.tree_mean_pct, 1);
    w.Key("tree_cpu_s").Double(c.tree_cpu_s, 3);
    w.Key("cores").Uint(c.cores);
    opt("system_busy_mean_pct", c.system_busy_mean_pct, 1);
    w.Key("peak_rss_bytes").Uint(c.peak_rss_bytes);
    opt("read_bytes", c.read_bytes);
    w.EndObject();
  }
  w.Key("verdict").String(r.verdict);
  w.Key("findings").BeginArray();
  for (const Finding& f : r.findings)
    w.BeginObject()
        .Key("id")
        .String(f.id)
        .Key("title")
        .String(f.title)
        .Key("evidence")
        .String(f.evidence)
        .Key("fix")
        .String(f.fix)
        .EndObject();
  w.EndArray();
  w.Key("notes").BeginArray();
  for (const std::string& n : r.notes) w.String(n);
  w.EndArray();
  w.Key("malformed_lines").Uint(r.malformed_lines);
  w.Key("malformed_examples").BeginArray();
  for (const std::string& e : r.malformed_examples) w.String(e);
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace gpuscope::monitor
