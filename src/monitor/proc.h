// CPU sampling from /proc (Linux): the watched process tree (CPU %, RSS, storage reads per
// process, so DataLoader workers show up as processes of their own) and system CPU per core.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/monitor_samples.h"

namespace gpuscope::monitor {

// Raw cumulative counters of one process, as /proc gives them.
struct ProcStat {
  int32_t pid = 0;
  int32_t ppid = 0;
  int32_t pgrp = 0;          // process group
  char state = '?';          // R, S, D, Z (zombie: exited, not yet waited for), …
  std::string name;          // comm, through the shared sanitiser (base/sanitize.h): safe to print
  uint64_t cpu_time_ns = 0;  // utime + stime: this process's own threads, live and exited
  // cutime + cstime: children that exited and that this process waited for, with what their own
  // waited-for children used (Linux adds a child's total to its parent's when it is reaped).
  uint64_t children_cpu_time_ns = 0;
  uint64_t start_ticks = 0;  // starttime, clock ticks after boot: with the pid, names the process
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

// Processes of process group `pgid` that have not exited (zombies do not count: they hold no CPU,
// memory or GPU, and an init that does not reap them would keep them forever). Scans /proc.
std::vector<int32_t> LiveProcessesInGroup(int32_t pgid);

// Turns cumulative counters into per-interval rates, sample after sample.
//
// CPU of processes that end between two samples: a process that lives less than one interval is
// never seen, and every process's last part of an interval after the last sample it was seen in
// is gone with it. Linux adds the whole CPU time of a child that exits and is waited for to its
// parent's cutime/cstime, so the growth of a parent's children time is that work — less what
// earlier samples already counted for the children seen alive (their last own + children time),
// which the sampler subtracts. That is ProcessSample::reaped_cpu_pct. Not covered: children that
// nobody waits for (SIGCHLD ignored, or orphaned and reaped by init outside the tree).
class ProcSampler {
 public:
  explicit ProcSampler(int32_t root) : root_(root) {}
  // Samples the tree and the cores into `sample`. `monotonic_ns` is a CLOCK_MONOTONIC reading
  // (std::chrono::steady_clock), used only to turn CPU-time deltas into rates: the wall clock
  // can jump (NTP, an admin), which would make a CPU % out of thin air. The caller stamps
  // `sample->time_ns` (unix) itself.
  void Sample(int64_t monotonic_ns, struct Sample* sample);
  // True once Sample() ran: the next one has rates.
  bool has_baseline() const { return last_monotonic_ns_ > 0; }
  int64_t last_monotonic_ns() const { return last_monotonic_ns_; }

 private:
  // What the previous samples counted for one process.
  struct Seen {
    uint64_t start_ticks = 0;
    int32_t ppid = 0;
    uint64_t cpu_ns = 0;
    uint64_t children_cpu_ns = 0;
  };
  int32_t root_;
  int64_t last_monotonic_ns_ = 0;
  std::map<int32_t, Seen> seen_;  // pid → counters at the last sample it was seen in
  std::vector<CoreTimes> last_cores_;
};

}  // namespace gpuscope::monitor
