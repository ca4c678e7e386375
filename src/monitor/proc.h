// CPU sampling from /proc (Linux): the watched process tree (CPU %, RSS, storage reads per
// process, so DataLoader workers show up as processes of their own) and system CPU per core.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "monitor/samples.h"

namespace gpuscope::monitor {

// Raw cumulative counters of one process, as /proc gives them.
struct ProcStat {
  int32_t pid = 0;
  int32_t ppid = 0;
  std::string name;
  uint64_t cpu_time_ns = 0;  // utime + stime
  uint64_t rss_bytes = 0;
  std::optional<uint64_t> read_bytes;
};

// Parses the text of /proc/PID/stat (the name may hold spaces and ')'). nullopt if malformed.
std::optional<ProcStat> ParseProcStat(const std::string& text, int64_t clock_ticks_per_s,
                                      int64_t page_bytes);
std::optional<ProcStat> ReadProcStat(int32_t pid);

// Per-core busy jiffies and total jiffies from /proc/stat's "cpuN" lines.
struct CoreTimes {
  uint64_t busy = 0;
  uint64_t total = 0;
};
std::vector<CoreTimes> ParseCoreTimes(const std::string& proc_stat_text);

// `root` and all its descendants, root first. Uses /proc/PID/task/TID/children when the kernel
// offers it (cheap: only the tree is read), else scans every /proc/PID/stat.
std::vector<int32_t> ProcessTree(int32_t root);

// Turns cumulative counters into per-interval rates, sample after sample.
class ProcSampler {
 public:
  explicit ProcSampler(int32_t root) : root_(root) {}
  // Samples the tree and the cores into `sample`. `monotonic_ns` is a CLOCK_MONOTONIC reading
  // (std::chrono::steady_clock), used only to turn CPU-time deltas into rates: the wall clock
  // can jump (NTP, an admin), which would make a CPU % out of thin air. The caller stamps
  // `sample->time_ns` (unix) itself.
  void Sample(int64_t monotonic_ns, struct Sample* sample);

 private:
  int32_t root_;
  int64_t last_monotonic_ns_ = 0;
  std::map<int32_t, uint64_t> last_cpu_ns_;  // pid → cumulative CPU time at the last sample
  std::vector<CoreTimes> last_cores_;
};

}  // namespace gpuscope::monitor
