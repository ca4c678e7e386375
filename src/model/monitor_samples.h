// The monitor's data model: a series of samples of the GPUs and of the watched process tree,
// whatever the source (live NVML + /proc sampling, a recorded JSONL file, an nvidia-smi log).
//
// Units are fixed here once: times are int64 unix nanoseconds, percentages are 0–100 (CPU % is
// "of one core", so 4 busy threads read 400), bytes are bytes, power is watts, clocks are MHz.
// A metric the source did not provide (NVML said NOT_SUPPORTED, nvidia-smi printed "[N/A]" or
// left the column out) is std::nullopt, never 0: a missing value must not drag an average down.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuscope::monitor {

// NVML clocks-event ("throttle") reason bits we name in the verdict (nvml.h values).
inline constexpr uint64_t kThrottleGpuIdle = 0x1;
inline constexpr uint64_t kThrottleSwPowerCap = 0x4;
inline constexpr uint64_t kThrottleHwSlowdown = 0x8;
inline constexpr uint64_t kThrottleSwThermal = 0x20;
inline constexpr uint64_t kThrottleHwThermal = 0x40;
inline constexpr uint64_t kThrottleHwPowerBrake = 0x80;

struct GpuSample {
  int32_t index = 0;
  std::optional<double> sm_util_pct;   // NVML "gpu" utilisation: time a kernel ran, 0–100
  std::optional<double> mem_util_pct;  // time device memory was read or written, 0–100
  std::optional<uint64_t> mem_used_bytes;
  std::optional<uint64_t> mem_total_bytes;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> pcie_rx_bytes_per_s;
  std::optional<double> pcie_tx_bytes_per_s;
  std::optional<uint64_t> throttle_reasons;  // bitmask, kThrottle*
  // GPU memory used by processes of the watched tree on this GPU (NVML per-process accounting).
  std::optional<uint64_t> tree_mem_bytes;
  // DCGM profiling metrics (dcgmi dmon, dcgm-exporter), as % of the sample period, 0–100 (DCGM
  // gives ratios 0–1): SM active (DCGM_FI_PROF_SM_ACTIVE: share of time at least one warp was
  // resident on an SM, averaged over the SMs), SM occupancy (DCGM_FI_PROF_SM_OCCUPANCY: resident
  // warps over the maximum), tensor pipe active, DRAM active.
  std::optional<double> sm_active_pct;
  std::optional<double> sm_occupancy_pct;
  std::optional<double> tensor_active_pct;
  std::optional<double> dram_active_pct;
  // Cumulative energy counter since the driver loaded, joules (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
  // is in mJ): differences between samples give the energy used.
  std::optional<double> energy_j;
};

struct ProcessSample {
  int32_t pid = 0;
  int32_t ppid = 0;
  std::string name;    // /proc/PID/comm, sanitised (base/sanitize.h)
  double cpu_pct = 0;  // since the previous sample, % of one core
  uint64_t rss_bytes = 0;
  std::optional<uint64_t> read_bytes;  // cumulative storage reads (/proc/PID/io), if readable
  uint64_t cpu_time_ns = 0;            // cumulative user+system CPU time
  // Since the previous sample, % of one core: CPU of this process's children that exited and that
  // it waited for in that interval (with their own waited-for children), less what earlier
  // samples already counted while they were alive. Short-lived processes that no sample saw, and
  // the last part of every child's life, are here. Part of the tree's CPU, not of this process's.
  double reaped_cpu_pct = 0;
  // GPU memory NVML attributes to this process, summed over the GPUs whose compute-process list
  // holds it: present exactly when the process holds a CUDA context (0 when NVML does not know
  // the amount). The training process is the one that holds it (analyze::PickMainPid).
  std::optional<uint64_t> gpu_bytes = std::nullopt;
};

struct Sample {
  int64_t time_ns = 0;  // unix time
  std::vector<GpuSample> gpus;
  std::vector<ProcessSample> processes;  // the watched tree; the root first
  std::vector<double> core_busy_pct;     // system-wide, per logical core, 0–100
};

struct GpuInfo {
  int32_t index = 0;
  std::string name;
  std::optional<uint64_t> mem_total_bytes;
  std::optional<double> power_limit_w;
};

// Where the samples came from.
enum class SourceKind : uint8_t {
  kLive,
  kRecording,
  kNvidiaSmiCsv,
  kNvidiaSmiDmon,
  kDcgmiDmon,     // `dcgmi dmon -e FIELDS`
  kDcgmExporter,  // dcgm-exporter's Prometheus text, scrapes appended
};

struct Recording {
  SourceKind source = SourceKind::kLive;
  std::string source_path;           // file read, empty for a live run
  std::vector<std::string> command;  // the command watched, if known
  int64_t interval_ns = 0;           // requested sampling interval (0 if unknown)
  int64_t start_ns = 0;              // unix time of the start
  int64_t end_ns = 0;                // unix time of the end (0 if unknown)
  std::optional<int> exit_code;      // the command's exit code, if it ended
  int32_t root_pid = 0;
  std::vector<GpuInfo> gpus;
  // Why there are no GPU metrics ("NVML not found: …"), or notes about metrics that failed mid-run.
  std::string gpu_unavailable;
  std::vector<std::string> notes;
  std::vector<Sample> samples;
  bool has_process_data = false;  // /proc sampling happened (live run or a recording of one)
  // Lines of a log that were not understood (counted, skipped), with the first few for the report.
  uint64_t malformed_lines = 0;
  std::vector<std::string> malformed_examples;  // "FILE:LINE: why"
};

}  // namespace gpuscope::monitor
