#include "analyze/monitor_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace gpuscope::analyze {

namespace {

using monitor::GpuInfo;
using monitor::GpuSample;
using monitor::ProcessSample;
using monitor::Recording;
using monitor::Sample;

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

// Launchers and shells that start the training process but are not it (/proc/PID/comm, at most
// 15 characters). `python -m torch.distributed.run` is a "python3" like its ranks: without GPU
// data it reads as the trainer (docs/monitor.md says so).
bool IsWrapper(std::string_view name) {
  static constexpr std::string_view kWrappers[] = {
      "sh",       "bash",       "dash",      "zsh",    "ksh",       "fish",    "env",
      "nohup",    "timeout",    "time",      "stdbuf", "nice",      "ionice",  "taskset",
      "numactl",  "xargs",      "srun",      "mpirun", "mpiexec",   "orterun", "prterun",
      "torchrun", "accelerate", "deepspeed", "tini",   "dumb-init", "sudo",    "su",
      "uv",       "conda",      "make"};
  return std::find(std::begin(kWrappers), std::end(kWrappers), name) != std::end(kWrappers);
}

// PyTorch 2.x names its DataLoader worker processes (torch.utils.data's _worker_loop).
bool IsDataLoaderWorker(std::string_view name) { return name.starts_with("pt_data_worker"); }

// The training process of the whole run. It is not simply the busiest process: in an
// input-bound job the DataLoader workers burn more CPU than the trainer that waits for them.
//  1. A process of the tree that holds a CUDA context (NVML's compute processes, gpu_bytes) is a
//     trainer; of several (ranks under torchrun), the top-level ones (no GPU-holding ancestor:
//     a worker that touched CUDA stays a worker) and of those the one with the most CPU time.
//  2. Without GPU data: the first process on the way from the root down to the busiest process
//     that is neither a wrapper (shell, torchrun, …) nor a DataLoader worker; its children are
//     its workers, whatever their names. A root of wrappers only (a shell loop) is the root.
// Candidates are the root and processes present in at least half of the samples: a short-lived
// child (one of 200 a shell loop starts) may have burnt more CPU than its shell, but it is a
// worker, not the job.
// Over `count` samples from `samples` of a tree rooted at `root_pid`.
int32_t PickMainPid(const Sample* samples, size_t count, int32_t root_pid) {
  std::map<int32_t, uint64_t> cpu_ns;
  std::map<int32_t, size_t> seen;  // samples a process is in
  std::map<int32_t, int32_t> parent;
  std::map<int32_t, std::string> name;
  std::set<int32_t> on_gpu;
  for (const Sample* s = samples; s != samples + count; ++s)
    for (const ProcessSample& p : s->processes) {
      cpu_ns[p.pid] = p.cpu_time_ns, ++seen[p.pid];
      parent[p.pid] = p.ppid;
      name[p.pid] = p.name;
      if (p.gpu_bytes) on_gpu.insert(p.pid);
    }
  auto candidate = [&](int32_t pid) { return pid == root_pid || 2 * seen[pid] >= count; };
  // The chain from `pid` up to the root (or as far as the sampled tree goes), pid first.
  auto chain = [&](int32_t pid) {
    std::vector<int32_t> up = {pid};
    std::set<int32_t> visited = {pid};  // a recording's ppid links may loop
    while (up.back() != root_pid) {
      auto it = parent.find(up.back());
      if (it == parent.end() || !visited.insert(it->second).second || !parent.count(it->second))
        break;
      up.push_back(it->second);
    }
    return up;
  };
  auto busier = [&](int32_t a, int32_t b) {  // a beats b (the root on a tie)
    return cpu_ns[a] > cpu_ns[b] || (cpu_ns[a] == cpu_ns[b] && a == root_pid);
  };
  int32_t best = 0;
  for (int32_t pid : on_gpu) {
    if (!candidate(pid)) continue;
    const std::vector<int32_t> up = chain(pid);
    if (std::any_of(up.begin() + 1, up.end(), [&](int32_t a) { return on_gpu.count(a) > 0; }))
      continue;  // under another GPU holder
    if (best == 0 || busier(pid, best)) best = pid;
  }
  if (best != 0) return best;
  int32_t busiest = root_pid;
  for (const auto& [pid, ns] : cpu_ns)
    if (candidate(pid) && busier(pid, busiest)) busiest = pid;
  if (!cpu_ns.count(busiest)) return busiest;
  std::vector<int32_t> down = chain(busiest);
  std::reverse(down.begin(), down.end());
  for (int32_t pid : down)
    if (!IsWrapper(name[pid]) && !IsDataLoaderWorker(name[pid])) return pid;
  return busiest;
}

std::optional<double> MeanGpuUtil(const Sample& s) {
  std::vector<double> v;
  for (const GpuSample& g : s.gpus)
    if (g.sm_util_pct) v.push_back(*g.sm_util_pct);
  return MeanOf(v);
}

bool Throttled(uint64_t reasons) {
  return reasons & (monitor::kThrottleSwPowerCap | monitor::kThrottleHwSlowdown |
                    monitor::kThrottleSwThermal | monitor::kThrottleHwThermal |
                    monitor::kThrottleHwPowerBrake);
}

// Start, duration and sampling interval of the run (the median gap between samples when the
// source does not say).
void AddTiming(const Recording& r, MonitorStats* out) {
  out->start_ns = r.samples.empty()
                      ? r.start_ns
                      : std::min(r.start_ns ? r.start_ns : INT64_MAX, r.samples.front().time_ns);
  const int64_t end_ns = std::max(r.end_ns, r.samples.empty() ? 0 : r.samples.back().time_ns);
  out->duration_ns = std::max<int64_t>(0, end_ns - out->start_ns);
  out->interval_ns = r.interval_ns;
  if (out->interval_ns == 0 && r.samples.size() > 1) {
    std::vector<double> gaps;
    for (size_t i = 1; i < r.samples.size(); ++i)
      if (r.samples[i].time_ns > r.samples[i - 1].time_ns)
        gaps.push_back(static_cast<double>(r.samples[i].time_ns - r.samples[i - 1].time_ns));
    out->interval_ns = static_cast<int64_t>(Percentile(gaps, 0.5));
  }
}

// The steady phase: from the first to the last sample whose mean GPU utilisation reaches
// kWarmupReachFraction of the 90th percentile of the active samples. Before it the warm-up
// (model load, compilation, the first batches), after it the teardown (saving, evaluation,
// exit). A phase that would hold fewer than kSteadyMinSamples samples is no phase, and without
// a GPU signal there is none either: the trainer's CPU is highest while it imports and builds
// the model and low while it waits for its workers, so it cannot tell training from startup.
// Every sample is steady then. Sets out's warm-up, steady and teardown lengths and returns
// which samples are steady.
std::vector<bool> SteadyPhase(const Recording& r, bool gpu_signal, MonitorStats* out) {
  const size_t n = r.samples.size();
  std::vector<std::optional<double>> signal;
  for (const Sample& s : r.samples) signal.push_back(gpu_signal ? MeanGpuUtil(s) : std::nullopt);
  // The 90th percentile of the active samples (above kStallUtilPct): idle startup and teardown
  // samples do not pull it down, so a steady phase shorter than a tenth of the run is found.
  std::vector<double> active;
  for (const auto& v : signal)
    if (v && *v > kStallUtilPct) active.push_back(*v);
  const double p90 = Percentile(active, 0.9);
  size_t first = n, last = 0;
  if (p90 > 0) {
    for (size_t i = 0; i < n; ++i)
      if (signal[i] && *signal[i] >= kWarmupReachFraction * p90) {
        first = std::min(first, i);
        last = i;
      }
  }
  if (first == n || last + 1 - first < std::min(n, kSteadyMinSamples)) {  // no phases
    out->warmup_ns = out->teardown_ns = 0;
    out->steady_ns = out->duration_ns;
    return std::vector<bool>(n, true);
  }
  std::vector<bool> in_steady(n, false);
  for (size_t i = first; i <= last; ++i) in_steady[i] = true;
  // Steady from the first sample: no warm-up (the first sample comes a few µs after the start).
  // The teardown runs from the last steady sample to the end: none when that is the last sample.
  const int64_t end_ns = out->start_ns + out->duration_ns;
  out->warmup_ns = first == 0 ? 0 : std::max<int64_t>(0, r.samples[first].time_ns - out->start_ns);
  out->teardown_ns = last + 1 == n ? 0 : std::max<int64_t>(0, end_ns - r.samples[last].time_ns);
  out->steady_ns = std::max<int64_t>(0, out->duration_ns - out->warmup_ns - out->teardown_ns);
  return in_steady;
}

// The longest stretch of samples in which GPU `index` was busy at low power. A sample without the
// limit uses `fallback_limit_w` (the header's, or the last one seen).
BusyAtLowPower BusyAtLowPowerOf(const Recording& r, int32_t index,
                                std::optional<double> fallback_limit_w) {
  BusyAtLowPower out;
  int64_t run_start = -1;
  double power_sum = 0;  // W, over the current stretch
  size_t n = 0;
  for (const Sample& s : r.samples) {
    const GpuSample* g = nullptr;
    for (const GpuSample& x : s.gpus)
      if (x.index == index) g = &x;
    const std::optional<double> lim = g && g->power_limit_w ? g->power_limit_w : fallback_limit_w;
    const bool hot = g && g->sm_util_pct && g->power_w && lim && *g->sm_util_pct >= kHangUtilPct &&
                     *g->power_w < kHangPowerFraction * *lim;
    if (!hot) {
      run_start = -1;
      continue;
    }
    if (run_start < 0) run_start = s.time_ns, power_sum = 0, n = 0;
    power_sum += *g->power_w;
    ++n;
    out.power_limit_w = *lim;
    if (s.time_ns - run_start > out.duration_ns) {
      out.duration_ns = s.time_ns - run_start;
      out.start_ns = run_start;
      out.power_mean_w = power_sum / static_cast<double>(n);
    }
  }
  return out;
}

// Energy of GPU `index` over the run: the counter's growth, else power × time (see the header).
void AddEnergy(const Recording& r, int32_t index, MonitorGpu* out) {
  double counter_j = 0, power_j = 0;
  int64_t counter_ns = 0, power_ns = 0;
  std::optional<std::pair<int64_t, double>> last_counter;
  std::optional<int64_t> last_time;
  bool any_power = false;
  for (const Sample& s : r.samples) {
    const GpuSample* g = nullptr;
    for (const GpuSample& x : s.gpus)
      if (x.index == index) g = &x;
    if (!g) continue;
    if (g->energy_j) {
      if (last_counter && *g->energy_j >= last_counter->second && s.time_ns > last_counter->first) {
        counter_j += *g->energy_j - last_counter->second;
        counter_ns += s.time_ns - last_counter->first;
      }
      last_counter = {s.time_ns, *g->energy_j};
    }
    if (g->power_w && last_time && s.time_ns > *last_time) {
      power_j += *g->power_w * static_cast<double>(s.time_ns - *last_time) / 1e9;
      power_ns += s.time_ns - *last_time;
      any_power = true;
    }
    last_time = s.time_ns;
  }
  if (counter_ns > 0) {
    out->energy_j = counter_j;
    out->energy_span_ns = counter_ns;
    out->energy_from_counter = true;
  } else if (any_power) {
    out->energy_j = power_j;
    out->energy_span_ns = power_ns;
  }
}

// Per-GPU summaries: peaks over the run, means over the steady state (`in_steady`), the warm-up
// utilisation, and the busy-at-low-power stretch.
void AddGpus(const Recording& r, const std::vector<bool>& in_steady, MonitorStats* out) {
  std::map<int32_t, MonitorGpu> gpus;
  for (const GpuInfo& g : r.gpus) {
    gpus[g.index].index = g.index;
    gpus[g.index].name = g.name;
    gpus[g.index].mem_total_bytes = g.mem_total_bytes;
    gpus[g.index].power_limit_w = g.power_limit_w;
  }
  struct Series {
    std::vector<double> util, util_warmup, util_run, mem_util, power, clock;
    std::vector<double> sm_active, sm_occupancy, tensor, dram;
    std::vector<std::pair<int64_t, double>> timed_util;  // steady (unix ns, util)
    size_t throttled = 0, throttle_known = 0;
  };
  std::map<int32_t, Series> series;
  const size_t first_steady =
      static_cast<size_t>(std::find(in_steady.begin(), in_steady.end(), true) - in_steady.begin());
  for (size_t i = 0; i < r.samples.size(); ++i) {
    for (const GpuSample& g : r.samples[i].gpus) {
      MonitorGpu& sum = gpus[g.index];
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
      if (g.sm_util_pct) ser.util_run.push_back(*g.sm_util_pct);
      if (!in_steady[i]) {
        if (g.sm_util_pct && i < first_steady) ser.util_warmup.push_back(*g.sm_util_pct);
        continue;
      }
      if (g.sm_util_pct) ser.util.push_back(*g.sm_util_pct);
      if (g.sm_util_pct) ser.timed_util.emplace_back(r.samples[i].time_ns, *g.sm_util_pct);
      if (g.sm_active_pct) ser.sm_active.push_back(*g.sm_active_pct);
      if (g.sm_occupancy_pct) ser.sm_occupancy.push_back(*g.sm_occupancy_pct);
      if (g.tensor_active_pct) ser.tensor.push_back(*g.tensor_active_pct);
      if (g.dram_active_pct) ser.dram.push_back(*g.dram_active_pct);
      if (g.mem_util_pct) ser.mem_util.push_back(*g.mem_util_pct);
      if (g.power_w) ser.power.push_back(*g.power_w);
      if (g.sm_clock_mhz) ser.clock.push_back(*g.sm_clock_mhz);
      if (g.throttle_reasons) {
        ++ser.throttle_known;
        if (Throttled(*g.throttle_reasons)) ++ser.throttled;
      }
    }
  }
  std::vector<double> utils;
  for (auto& [index, sum] : gpus) {
    const Series& ser = series[index];
    sum.util_mean_pct = MeanOf(ser.util);
    sum.util_mean_warmup_pct = MeanOf(ser.util_warmup);
    sum.util_mean_run_pct = MeanOf(ser.util_run);
    sum.mem_util_mean_pct = MeanOf(ser.mem_util);
    sum.power_mean_w = MeanOf(ser.power);
    sum.sm_clock_mean_mhz = MeanOf(ser.clock);
    if (ser.throttle_known)
      sum.throttled_share = static_cast<double>(ser.throttled) / ser.throttle_known;
    if (sum.samples > 0) sum.busy_at_low_power = BusyAtLowPowerOf(r, index, sum.power_limit_w);
    sum.sm_active_mean_pct = MeanOf(ser.sm_active);
    sum.sm_occupancy_mean_pct = MeanOf(ser.sm_occupancy);
    sum.tensor_active_mean_pct = MeanOf(ser.tensor);
    sum.dram_active_mean_pct = MeanOf(ser.dram);
    sum.periodic_stall = FindPeriodicStall(ser.timed_util, out->interval_ns);
    AddEnergy(r, index, &sum);
    if (sum.util_mean_pct) utils.push_back(*sum.util_mean_pct);
    out->gpus.push_back(sum);
  }
  out->util_mean_pct = MeanOf(utils);
  // Balance: the busiest and the least busy GPU (the lower index on a tie).
  const MonitorGpu* busiest = nullptr;
  const MonitorGpu* least = nullptr;
  size_t with_util = 0;
  for (const MonitorGpu& g : out->gpus) {
    if (!g.util_mean_pct) continue;
    ++with_util;
    if (!busiest || *g.util_mean_pct > *busiest->util_mean_pct) busiest = &g;
    if (!least || *g.util_mean_pct < *least->util_mean_pct) least = &g;
  }
  if (with_util >= 2)
    out->balance =
        GpuBalance{busiest->index, *busiest->util_mean_pct, least->index, *least->util_mean_pct,
                   *busiest->util_mean_pct - *least->util_mean_pct};
  // Energy of all GPUs, per hour of the longest span any GPU's energy covers.
  int64_t span_ns = 0;
  for (const MonitorGpu& g : out->gpus) {
    if (!g.energy_j) continue;
    out->energy_j = out->energy_j.value_or(0) + *g.energy_j;
    span_ns = std::max(span_ns, g.energy_span_ns);
  }
  if (out->energy_j && span_ns > 0)
    out->energy_per_hour_wh = *out->energy_j / 3600 / (static_cast<double>(span_ns) / 3.6e12);
}

// Whole-run CPU facts: CPU-seconds of the tree, peak RSS, storage reads.
void AddCpuTotals(const Recording& r, int32_t main_pid, MonitorCpu* cpu,
                  std::map<int32_t, std::string>* names) {
  int64_t previous_ns = r.start_ns;
  for (const Sample& s : r.samples) {
    // A sample's rates cover the time since the sample before it. (After the in-memory halving
    // of long runs a kept sample stands for the dropped one before it too: an unbiased estimate.)
    if (previous_ns > 0 && s.time_ns > previous_ns)
      cpu->tree_cpu_s += SplitTreeCpu(s, main_pid).tree_pct / 100 * (s.time_ns - previous_ns) / 1e9;
    previous_ns = s.time_ns;
    uint64_t rss = 0;
    for (const ProcessSample& p : s.processes) {
      rss += p.rss_bytes;
      (*names)[p.pid] = p.name;
    }
    cpu->peak_rss_bytes = std::max(cpu->peak_rss_bytes, rss);
  }
  // Storage reads: the sum over the processes alive in the last sample only. Linux adds a
  // reaped child's I/O to its parent's /proc/PID/io, so also counting the last value seen for
  // processes that have exited (and been waited for) would count their reads twice. Reads of a
  // process that exited unreaped by anything in the tree (reparented away) are missed.
  for (auto s = r.samples.rbegin(); s != r.samples.rend(); ++s) {
    if (s->processes.empty()) continue;
    for (const ProcessSample& p : s->processes)
      if (p.read_bytes) cpu->read_bytes = cpu->read_bytes.value_or(0) + *p.read_bytes;
    break;
  }
}

// The CPU of the tree split by role, steady-state means.
MonitorCpu CpuStats(const Recording& r, int32_t main_pid, const std::vector<bool>& in_steady) {
  MonitorCpu cpu;
  cpu.main_pid = main_pid;
  std::map<int32_t, std::string> names;
  AddCpuTotals(r, main_pid, &cpu, &names);
  std::vector<double> main_pct, workers_pct, workers_ended_pct, tree_pct, system_pct;
  std::map<int32_t, std::pair<double, size_t>> per_worker;  // pid → (sum %, samples)
  for (size_t i = 0; i < r.samples.size(); ++i) {
    if (!in_steady[i]) continue;
    const Sample& s = r.samples[i];
    const TreeCpu t = SplitTreeCpu(s, main_pid);
    main_pct.push_back(t.main_pct);
    workers_pct.push_back(t.workers_pct);
    workers_ended_pct.push_back(t.workers_ended_pct);
    tree_pct.push_back(t.tree_pct);
    const std::set<int32_t> workers = DescendantsOf(s, main_pid);
    for (const ProcessSample& p : s.processes)
      if (workers.count(p.pid)) {
        per_worker[p.pid].first += p.cpu_pct;
        ++per_worker[p.pid].second;
      }
    if (!s.core_busy_pct.empty()) {
      cpu.cores = std::max(cpu.cores, s.core_busy_pct.size());
      system_pct.push_back(*MeanOf(s.core_busy_pct));
    }
  }
  cpu.main_name = names[main_pid];
  cpu.main_mean_pct = MeanOf(main_pct).value_or(0);
  cpu.workers_mean_pct = MeanOf(workers_pct).value_or(0);
  cpu.workers_ended_mean_pct = MeanOf(workers_ended_pct).value_or(0);
  cpu.tree_mean_pct = MeanOf(tree_pct).value_or(0);
  cpu.system_busy_mean_pct = MeanOf(system_pct);
  std::vector<double> each;
  for (auto& [pid, acc] : per_worker) {
    cpu.workers.push_back({pid, names[pid], acc.second ? acc.first / acc.second : 0});
    each.push_back(cpu.workers.back().cpu_mean_pct);
  }
  cpu.worker_mean_each_pct = MeanOf(each).value_or(0);
  return cpu;
}

}  // namespace

PeriodicStall FindPeriodicStall(const std::vector<std::pair<int64_t, double>>& series,
                                int64_t interval_ns) {
  PeriodicStall out;
  // Complete stalls: [start index, end index) of low samples, not touching either end.
  std::vector<std::pair<size_t, size_t>> stalls;
  for (size_t i = 0; i < series.size();) {
    if (series[i].second > kStallUtilPct) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < series.size() && series[j].second <= kStallUtilPct) ++j;
    if (i > 0 && j < series.size()) stalls.emplace_back(i, j);
    i = j;
  }
  if (stalls.size() < kStallMinCount) return out;
  std::vector<double> gaps, lengths;
  for (size_t k = 0; k < stalls.size(); ++k) {
    const auto [b, e] = stalls[k];
    lengths.push_back(static_cast<double>(series[e].first - series[b].first));
    if (k > 0)
      gaps.push_back(static_cast<double>(series[b].first - series[stalls[k - 1].first].first));
  }
  const double period = Percentile(gaps, 0.5);
  const double tolerance =
      std::max(static_cast<double>(interval_ns), kStallPeriodTolerance * period);
  const auto regular = std::count_if(gaps.begin(), gaps.end(),
                                     [&](double g) { return std::abs(g - period) <= tolerance; });
  if (period <= 0 || static_cast<double>(regular) < kStallRegularShare * gaps.size()) return out;
  // The median length: the middle one (the lower middle of an even count).
  std::sort(lengths.begin(), lengths.end());
  const double length = lengths[(lengths.size() - 1) / 2];
  double busy_sum = 0;
  size_t busy_n = 0;
  for (size_t i = stalls.front().first; i < stalls.back().second; ++i)
    if (series[i].second > kStallUtilPct) busy_sum += series[i].second, ++busy_n;
  out.stalls = stalls.size();
  out.period_ns = static_cast<int64_t>(period);
  out.stall_ns = static_cast<int64_t>(length);
  out.duty = length / period;
  out.busy_between_pct = busy_n ? busy_sum / static_cast<double>(busy_n) : 0;
  out.first_ns = series[stalls.front().first].first;
  return out;
}

TreeCpu SplitTreeCpu(const Sample& s, int32_t main_pid) {
  TreeCpu t;
  // Chosen from this sample alone (the live line, TensorBoard): the same rule as the run's.
  if (main_pid == 0 && !s.processes.empty()) main_pid = PickMainPid(&s, 1, s.processes.front().pid);
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

namespace {

// The samples binned into at most kMonitorSeriesPoints slices of the run, each the mean of its
// samples (NaN where none has the metric).
MonitorSeries SeriesOf(const Recording& r, int64_t start_ns, int64_t duration_ns,
                       int32_t main_pid) {
  MonitorSeries out;
  const size_t n = std::min(kMonitorSeriesPoints, r.samples.size());
  if (n == 0) return out;
  const double slice = std::max(1.0, static_cast<double>(duration_ns) / static_cast<double>(n));
  auto bin = [&](int64_t t) {
    return std::min(n - 1, static_cast<size_t>(std::max<double>(0, (t - start_ns) / slice)));
  };
  std::map<int32_t, size_t> gpu_slot;
  for (const Sample& sm : r.samples)
    for (const GpuSample& g : sm.gpus) gpu_slot.emplace(g.index, 0);
  size_t next = 0;
  for (auto& [index, slot] : gpu_slot) slot = next++;
  // Sums and counts per bin and metric: util, memory, power, clock per GPU; main, workers.
  const size_t metrics = 4 * gpu_slot.size() + 2;
  std::vector<double> sum(metrics * n, 0), count(metrics * n, 0);
  auto add = [&](size_t metric, size_t b, std::optional<double> v) {
    if (!v || !std::isfinite(*v)) return;
    sum[metric * n + b] += *v;
    count[metric * n + b] += 1;
  };
  for (const Sample& sm : r.samples) {
    const size_t b = bin(sm.time_ns);
    for (const GpuSample& g : sm.gpus) {
      const size_t base = 4 * gpu_slot[g.index];
      add(base, b, g.sm_util_pct);
      add(base + 1, b,
          g.mem_used_bytes ? std::optional<double>(static_cast<double>(*g.mem_used_bytes))
                           : std::nullopt);
      add(base + 2, b, g.power_w);
      add(base + 3, b, g.sm_clock_mhz);
    }
    if (r.has_process_data && !sm.processes.empty()) {
      const TreeCpu t = SplitTreeCpu(sm, main_pid);
      add(metrics - 2, b, t.main_pct);
      add(metrics - 1, b, t.workers_pct);
    }
  }
  auto series = [&](size_t metric) {
    std::vector<double> v(n);
    for (size_t b = 0; b < n; ++b)
      v[b] = count[metric * n + b] > 0 ? sum[metric * n + b] / count[metric * n + b] : std::nan("");
    return v;
  };
  for (size_t b = 0; b < n; ++b) out.t_ns.push_back((static_cast<double>(b) + 0.5) * slice);
  for (const auto& [index, slot] : gpu_slot)
    out.gpus.push_back({index, series(4 * slot), series(4 * slot + 1), series(4 * slot + 2),
                        series(4 * slot + 3)});
  if (r.has_process_data) {
    out.main_cpu_pct = series(metrics - 2);
    out.workers_cpu_pct = series(metrics - 1);
  }
  return out;
}

}  // namespace

MonitorStats ComputeMonitorStats(const Recording& r) {
  MonitorStats out;
  out.source = r.source;
  out.source_path = r.source_path;
  out.command = r.command;
  out.exit_code = r.exit_code;
  out.samples = r.samples.size();
  out.notes = r.notes;
  out.malformed_lines = r.malformed_lines;
  out.malformed_examples = r.malformed_examples;
  out.gpu_unavailable = r.gpu_unavailable;
  AddTiming(r, &out);
  if (r.samples.empty()) return out;

  const int32_t main_pid =
      r.has_process_data ? PickMainPid(r.samples.data(), r.samples.size(), r.root_pid) : 0;
  bool gpu_signal = false;
  for (const Sample& s : r.samples)
    if (MeanGpuUtil(s)) gpu_signal = true;
  const std::vector<bool> in_steady = SteadyPhase(r, gpu_signal, &out);

  AddGpus(r, in_steady, &out);
  out.has_gpu = gpu_signal || std::any_of(out.gpus.begin(), out.gpus.end(),
                                          [](const MonitorGpu& g) { return g.samples > 0; });
  if (r.has_process_data) out.cpu = CpuStats(r, main_pid, in_steady);
  out.series = SeriesOf(r, out.start_ns, out.duration_ns, main_pid);
  return out;
}

}  // namespace gpuscope::analyze
