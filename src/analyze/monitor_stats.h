// Statistics of a monitor sample series (a live run, a recording, an nvidia-smi log): pure
// functions from monitor::Recording to MonitorStats — averages over the steady state, the warm-up,
// the CPU of the watched tree split by role, and the longest busy-at-low-power stretch per GPU.
// The rules that turn these into findings and the verdict are in advise/monitor_rules.h.
//
// Definitions (docs/monitor.md lists the same with examples):
//  * main process: the process of the watched tree with the most CPU time at the end (for a
//    `python train.py` run that is python, not a wrapper shell or launcher); its descendants are
//    its workers (DataLoader workers are forked from it), other tree processes are "other".
//  * warm-up: from the start to the first sample where the signal (mean GPU utilisation, or the
//    main process's CPU % without a GPU) reaches kWarmupReachFraction of its 90th percentile,
//    capped at kWarmupMaxFraction of the run. Steady state is the rest; averages are over it.
//  * busy at low power: SM utilisation ≥ kHangUtilPct while the power draw is below
//    kHangPowerFraction of the power limit (a kernel that spins without doing arithmetic).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/monitor_samples.h"

namespace gpuscope::analyze {

// Thresholds of the statistics, with units. Percentages are 0–100; CPU % is of one core.
inline constexpr double kWarmupReachFraction = 0.8;  // of the 90th percentile
inline constexpr double kWarmupMaxFraction = 0.3;    // of the run's duration
inline constexpr double kHangUtilPct = 95;           // "busy" for the busy-at-low-power stretch
inline constexpr double kHangPowerFraction = 0.5;    // "low power": of the power limit

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
// `main_pid` 0 → the process with the most CPU time in this sample.
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

struct MonitorGpu {
  int32_t index = 0;
  std::string name;
  size_t samples = 0;
  std::optional<double> util_mean_pct;         // steady state
  std::optional<double> util_mean_warmup_pct;  // warm-up
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

struct MonitorStats {
  monitor::SourceKind source = monitor::SourceKind::kLive;
  std::string source_path;
  std::vector<std::string> command;
  std::optional<int> exit_code;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  int64_t interval_ns = 0;  // requested, or the median gap between samples in a log
  size_t samples = 0;
  int64_t warmup_ns = 0;  // warm-up length from the start
  bool has_gpu = false;
  std::string gpu_unavailable;
  std::vector<MonitorGpu> gpus;
  std::optional<double> util_mean_pct;  // steady mean over the GPUs' means
  std::optional<MonitorCpu> cpu;        // when the source sampled processes
  std::vector<std::string> notes;
  uint64_t malformed_lines = 0;
  std::vector<std::string> malformed_examples;
};

MonitorStats ComputeMonitorStats(const monitor::Recording& recording);

}  // namespace gpuscope::analyze
