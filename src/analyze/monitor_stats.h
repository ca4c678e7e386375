// Statistics of a monitor sample series (a live run, a recording, an nvidia-smi log): pure
// functions from monitor::Recording to MonitorStats — averages over the steady state, the warm-up,
// the CPU of the watched tree split by role, and the longest busy-at-low-power stretch per GPU.
// The rules that turn these into findings and the verdict are in advise/monitor_rules.h.
//
// Definitions (docs/monitor.md lists the same with examples):
//  * main process (the trainer): a process of the watched tree that holds a CUDA context (NVML's
//    compute processes; of several, a top-level one with the most CPU time); without GPU data,
//    the first process on the way from the root to the busiest one that is neither a wrapper
//    (sh, bash, torchrun, accelerate, …) nor a DataLoader worker (pt_data_worker). Not the
//    busiest process: an input-bound job's workers burn more CPU than the trainer. Its
//    descendants are its workers, whatever their names; other tree processes are "other".
//  * steady phase: from the first to the last sample where the mean GPU utilisation reaches
//    kWarmupReachFraction of the 90th percentile of its active samples (those above
//    kStallUtilPct); before it the warm-up (model load, compilation, first batches), after it
//    the teardown (saving, evaluation, exit). Averages and the verdict are over the steady
//    phase; the whole-run utilisation is reported beside it. Fewer than kSteadyMinSamples such
//    samples, or no GPU utilisation at all: the whole run is steady (the trainer's CPU peaks
//    while it imports and builds the model, so it does not mark training).
//  * busy at low power: SM utilisation ≥ kHangUtilPct while the power draw is below
//    kHangPowerFraction of the power limit (a kernel that spins without doing arithmetic).
//  * periodic stall: over the steady state, spans of consecutive samples with utilisation ≤
//    kStallUtilPct ("near 0 %") that neither start at the first nor end at the last sample; at
//    least kStallMinCount of them whose start-to-start gaps are, for kStallRegularShare of them,
//    within max(one sample interval, kStallPeriodTolerance × the median gap) of that median (the
//    period). A stall lasts from its first low sample to the first sample after it; the duty is
//    the median stall length over the period.
//  * balance: the steady mean utilisation of the busiest and of the least busy GPU, and their
//    difference (the spread, percentage points).
//  * energy: per GPU, the growth of the energy counter (DCGM) over the run, decreases (a driver
//    reload) left out; without a counter, each sample's power × the time since the sample before.
//    Per hour: that energy over the time it covers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/monitor_samples.h"

namespace gpuscope::analyze {

// Thresholds of the statistics, with units. Percentages are 0–100; CPU % is of one core.
inline constexpr double kWarmupReachFraction = 0.8;    // of the 90th percentile
inline constexpr size_t kSteadyMinSamples = 3;         // a shorter "phase" is noise
inline constexpr double kHangUtilPct = 95;             // "busy" for the busy-at-low-power stretch
inline constexpr double kHangPowerFraction = 0.5;      // "low power": of the power limit
inline constexpr double kStallUtilPct = 5;             // "near 0 %": a stalled sample
inline constexpr size_t kStallMinCount = 3;            // stalls needed to call them periodic
inline constexpr double kStallRegularShare = 0.75;     // of the gaps near the period
inline constexpr double kStallPeriodTolerance = 0.15;  // of the period (≥ one sample interval)

// CPU of one sample split by role.
struct TreeCpu {
  int32_t main_pid = 0;
  std::string main_name;
  double main_pct = 0;
  int workers = 0;         // descendants of the main process
  double workers_pct = 0;  // their sum, with workers_ended_pct
  // Part of workers_pct: descendants of the main process that ended within the interval
  // (ProcessSample::reaped_cpu_pct of the main process and of its workers).
  double workers_ended_pct = 0;
  double tree_pct = 0;  // whole tree, with the CPU of its processes that ended
};
// `main_pid` 0 → the trainer as this sample alone shows it (the run's rule, over one sample).
TreeCpu SplitTreeCpu(const monitor::Sample& sample, int32_t main_pid = 0);

// The samples within [from_ns, to_ns] (unix ns); header data kept, the exit code dropped.
monitor::Recording SliceRecording(const monitor::Recording& recording, int64_t from_ns,
                                  int64_t to_ns);

// The longest stretch of consecutive samples in which one GPU was busy at low power.
struct BusyAtLowPower {
  int64_t duration_ns = 0;   // first to last sample of the stretch (0: none)
  int64_t start_ns = 0;      // unix ns of its first sample
  double power_mean_w = 0;   // mean power draw over the stretch
  double power_limit_w = 0;  // the limit at its last sample
};

// Utilisation dropping to near 0 % for part of every period (definition above).
struct PeriodicStall {
  size_t stalls = 0;            // complete stalls in the steady state (0: not periodic)
  int64_t period_ns = 0;        // median start-to-start gap
  int64_t stall_ns = 0;         // median stall length
  double duty = 0;              // stall_ns / period_ns, 0–1
  double busy_between_pct = 0;  // mean utilisation of the other samples, first to last stall
  int64_t first_ns = 0;         // unix ns of the first stall
};

struct MonitorGpu {
  int32_t index = 0;
  std::string name;
  size_t samples = 0;
  std::optional<double> util_mean_pct;         // steady state
  std::optional<double> util_mean_warmup_pct;  // warm-up
  std::optional<double> util_mean_run_pct;     // every sample of the run
  std::optional<double> mem_util_mean_pct;
  std::optional<uint64_t> mem_used_peak_bytes;
  std::optional<uint64_t> mem_total_bytes;
  std::optional<uint64_t> tree_mem_peak_bytes;
  std::optional<double> power_mean_w;
  std::optional<double> power_limit_w;
  std::optional<double> sm_clock_mean_mhz;
  std::optional<double> temperature_max_c;
  std::optional<double> throttled_share;  // steady samples with a thermal/power/HW slowdown bit
  BusyAtLowPower busy_at_low_power;       // over the whole run, warm-up included
  // DCGM profiling metrics, steady means (% of time, 0–100).
  std::optional<double> sm_active_mean_pct;
  std::optional<double> sm_occupancy_mean_pct;
  std::optional<double> tensor_active_mean_pct;
  std::optional<double> dram_active_mean_pct;
  PeriodicStall periodic_stall;  // steady state
  // Energy over the run (definition above); nullopt without a counter or power readings.
  std::optional<double> energy_j;
  int64_t energy_span_ns = 0;  // the time the energy covers
  bool energy_from_counter = false;
};

// The busiest and the least busy GPU by steady mean utilisation (with two GPUs or more).
struct GpuBalance {
  int32_t busiest = 0;
  double busiest_pct = 0;
  int32_t least = 0;
  double least_pct = 0;
  double spread_pct = 0;  // busiest_pct − least_pct, percentage points
};

struct MonitorWorker {
  int32_t pid = 0;
  std::string name;
  double cpu_mean_pct = 0;  // over the samples it was alive in the steady state
};

struct MonitorCpu {
  int32_t main_pid = 0;
  std::string main_name;
  double main_mean_pct = 0;  // steady state
  std::vector<MonitorWorker> workers;
  double workers_mean_pct = 0;  // sum over workers, steady-state mean
  // Part of workers_mean_pct: workers that ended between samples (short-lived processes; none of
  // them is in `workers`, which lists the processes a sample saw alive).
  double workers_ended_mean_pct = 0;
  double worker_mean_each_pct = 0;  // mean of the workers' cpu_mean_pct (0 without workers)
  double tree_mean_pct = 0;
  // CPU time the tree used over the whole run (warm-up included), in CPU-seconds: each sample's
  // tree % × the time since the sample before it.
  double tree_cpu_s = 0;
  size_t cores = 0;
  std::optional<double> system_busy_mean_pct;  // mean over cores and samples
  uint64_t peak_rss_bytes = 0;                 // sum over the tree, largest sample
  std::optional<uint64_t> read_bytes;          // storage reads by the tree during the run
};

// The run over time, for charts: at most kMonitorSeriesPoints points, each the mean of the
// samples in its slice of the run (NaN where a slice has none or the source lacks the metric).
inline constexpr size_t kMonitorSeriesPoints = 600;
struct MonitorSeriesGpu {
  int32_t index = 0;
  std::vector<double> util_pct, mem_used_bytes, power_w, sm_clock_mhz;
};
struct MonitorSeries {
  std::vector<double> t_ns;  // from the run's start
  std::vector<MonitorSeriesGpu> gpus;
  // CPU of the trainer and of its workers (its descendants), % of one core; empty without
  // process samples.
  std::vector<double> main_cpu_pct, workers_cpu_pct;
};

struct MonitorStats {
  monitor::SourceKind source = monitor::SourceKind::kLive;
  std::string source_path;
  std::vector<std::string> command;
  std::optional<int> exit_code;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  int64_t interval_ns = 0;  // requested, or the median gap between samples in a log
  size_t samples = 0;
  int64_t warmup_ns = 0;    // warm-up length from the start
  int64_t steady_ns = 0;    // the steady phase (the whole run without one)
  int64_t teardown_ns = 0;  // teardown length to the end
  bool has_gpu = false;
  std::string gpu_unavailable;
  std::vector<MonitorGpu> gpus;
  std::optional<double> util_mean_pct;  // steady mean over the GPUs' means
  std::optional<GpuBalance> balance;    // two GPUs or more with utilisation
  // Energy of all GPUs together and per hour of the time it covers (the longest GPU's span).
  std::optional<double> energy_j;
  std::optional<double> energy_per_hour_wh;
  std::optional<MonitorCpu> cpu;  // when the source sampled processes
  MonitorSeries series;
  std::vector<std::string> notes;
  uint64_t malformed_lines = 0;
  std::vector<std::string> malformed_examples;
};

MonitorStats ComputeMonitorStats(const monitor::Recording& recording);

// The periodic stall of one series of (unix ns, utilisation %) samples, in time order, taken at
// `interval_ns` (definition above).
PeriodicStall FindPeriodicStall(const std::vector<std::pair<int64_t, double>>& series,
                                int64_t interval_ns);

}  // namespace gpuscope::analyze
