#include "monitor/proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "base/sanitize.h"

namespace gpuscope::monitor {

namespace {

// Reads a small /proc file in one read() (they are generated whole); empty on failure.
std::string ReadSmallFile(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

int64_t ClockTicks() {
  static const int64_t ticks = [] {
    long t = sysconf(_SC_CLK_TCK);
    return t > 0 ? static_cast<int64_t>(t) : int64_t{100};
  }();
  return ticks;
}

int64_t PageBytes() {
  static const int64_t bytes = [] {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<int64_t>(p) : int64_t{4096};
  }();
  return bytes;
}

bool HaveChildrenFiles() {
  // Needs CONFIG_PROC_CHILDREN (Debian and most distribution kernels have it).
  static const bool have = [] {
    const std::string path = fmt::format("/proc/self/task/{}/children", getpid());
    return access(path.c_str(), R_OK) == 0;
  }();
  return have;
}

std::vector<int32_t> NumbersIn(const std::string& text) {
  std::vector<int32_t> out;
  const char* p = text.c_str();
  char* end = nullptr;
  for (;;) {
    long v = std::strtol(p, &end, 10);
    if (end == p) break;
    out.push_back(static_cast<int32_t>(v));
    p = end;
  }
  return out;
}

std::vector<int32_t> ChildrenOf(int32_t pid) {
  std::vector<int32_t> out;
  const std::string path = fmt::format("/proc/{}/task", pid);
  DIR* dir = opendir(path.c_str());
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string children = path + "/" + e->d_name + "/children";
    for (int32_t c : NumbersIn(ReadSmallFile(children.c_str()))) out.push_back(c);
  }
  closedir(dir);
  return out;
}

}  // namespace

std::optional<ProcStat> ParseProcStat(const std::string& text, int64_t clock_ticks_per_s,
                                      int64_t page_bytes) {
  // "PID (comm) S PPID ..." — comm may contain ") ", so the name ends at the LAST ')'.
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat s;
  s.pid = static_cast<int32_t>(std::atoi(text.c_str()));
  // A process picks its own name (prctl, the file it runs): it must not reach a terminal raw.
  s.name = SanitizeText(std::string_view(text).substr(open + 1, close - open - 1));
  // Fields after the name, numbered as in proc(5): 3 state, 4 ppid, 5 pgrp, 14 utime, 15 stime,
  // 16 cutime, 17 cstime, 22 starttime, 24 rss.
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> f;
  std::string word;
  while (rest >> word && f.size() < 22) f.push_back(word);
  if (f.size() < 22) return std::nullopt;
  auto u64 = [&](size_t i) { return std::strtoull(f[i].c_str(), nullptr, 10); };
  s.state = f[0].empty() ? '?' : f[0][0];
  s.ppid = static_cast<int32_t>(std::strtol(f[1].c_str(), nullptr, 10));
  s.pgrp = static_cast<int32_t>(std::strtol(f[2].c_str(), nullptr, 10));
  const uint64_t ns_per_tick = 1'000'000'000ULL / static_cast<uint64_t>(clock_ticks_per_s);
  s.cpu_time_ns = (u64(11) + u64(12)) * ns_per_tick;
  s.children_cpu_time_ns = (u64(13) + u64(14)) * ns_per_tick;
  s.start_ticks = u64(19);
  const int64_t rss_pages = std::strtoll(f[21].c_str(), nullptr, 10);
  s.rss_bytes = rss_pages > 0 ? static_cast<uint64_t>(rss_pages * page_bytes) : 0;
  return s;
}

std::optional<ProcStat> ReadProcStat(int32_t pid) {
  auto s = ParseProcStat(ReadSmallFile(fmt::format("/proc/{}/stat", pid).c_str()), ClockTicks(),
                         PageBytes());
  if (!s) return s;
  // /proc/PID/io "read_bytes": bytes this process caused to be fetched from storage.
  const std::string io = ReadSmallFile(fmt::format("/proc/{}/io", pid).c_str());
  if (size_t at = io.find("\nread_bytes: "); at != std::string::npos)
    s->read_bytes = std::strtoull(io.c_str() + at + 13, nullptr, 10);
  return s;
}

std::vector<CoreTimes> ParseCoreTimes(const std::string& text) {
  std::vector<CoreTimes> cores;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // "cpu0 user nice system idle iowait irq softirq steal guest guest_nice" (jiffies); the
    // aggregate "cpu " line is skipped. Idle = idle + iowait; guest time is inside user already.
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9')
      continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    uint64_t v[8] = {0};
    for (int i = 0; i < 8 && (fields >> v[i]); ++i) {
    }
    CoreTimes t;
    t.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    t.busy = t.total - v[3] - v[4];
    cores.push_back(t);
  }
  return cores;
}

std::vector<int32_t> ProcessTree(int32_t root) {
  std::vector<int32_t> tree = {root};
  if (HaveChildrenFiles()) {
    for (size_t i = 0; i < tree.size() && tree.size() < 100000; ++i)
      for (int32_t c : ChildrenOf(tree[i])) tree.push_back(c);
    return tree;
  }
  // Fallback: read every process's parent, then walk down from the root.
  std::multimap<int32_t, int32_t> children;
  DIR* dir = opendir("/proc");
  if (!dir) return tree;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/") + e->d_name + "/stat";
    if (auto s = ParseProcStat(ReadSmallFile(path.c_str()), ClockTicks(), PageBytes()))
      children.emplace(s->ppid, s->pid);
  }
  closedir(dir);
  for (size_t i = 0; i < tree.size(); ++i) {
    auto [lo, hi] = children.equal_range(tree[i]);
    for (auto it = lo; it != hi; ++it) tree.push_back(it->second);
  }
  return tree;
}

std::vector<int32_t> LiveProcessesInGroup(int32_t pgid) {
  std::vector<int32_t> out;
  if (pgid <= 0) return out;
  DIR* dir = opendir("/proc");
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/") + e->d_name + "/stat";
    if (auto s = ParseProcStat(ReadSmallFile(path.c_str()), ClockTicks(), PageBytes()))
      if (s->pgrp == pgid && s->state != 'Z' && s->state != 'X') out.push_back(s->pid);
  }
  closedir(dir);
  return out;
}

void ProcSampler::Sample(int64_t monotonic_ns, struct Sample* sample) {
  const int64_t elapsed_ns = last_monotonic_ns_ > 0 ? monotonic_ns - last_monotonic_ns_ : 0;
  std::vector<ProcStat> now;
  std::map<int32_t, size_t> index;  // pid → position in `now`
  for (int32_t pid : ProcessTree(root_)) {
    auto stat = ReadProcStat(pid);
    if (!stat) continue;  // exited and reaped between the walk and the read
    index[pid] = now.size();
    now.push_back(std::move(*stat));
  }
  auto same = [](const Seen& seen, const ProcStat& stat) {
    return seen.start_ticks == stat.start_ticks;  // else the pid was reused
  };

  // Processes seen last time and not in the tree now. Exited and reaped: their reaper's children
  // time grew by their whole CPU time, of which `cpu_ns + children_cpu_ns` was counted already —
  // that much is subtracted from the reaper (the last parent seen; if that one is gone too, its
  // parent, and so on: a child reaped by a process that then exits is in that one's total).
  // Still alive (the walk missed it while the tree changed, or it moved out of the tree when its
  // parent died): nothing was added to anyone, so nothing is subtracted; one missed by the walk
  // stays remembered, so it is not counted from zero when it shows up again.
  std::map<int32_t, uint64_t> counted_already;  // reaper pid → ns to subtract
  std::map<int32_t, Seen> next;
  for (const auto& [pid, seen] : seen_) {
    if (auto it = index.find(pid); it != index.end() && same(seen, now[it->second])) continue;
    const auto alive = ReadProcStat(pid);
    if (alive && same(seen, *alive)) {
      if (index.count(alive->ppid)) next[pid] = seen;
      continue;
    }
    int32_t reaper = seen.ppid;
    for (int hops = 0; hops < 64 && !index.count(reaper); ++hops) {
      const auto up = seen_.find(reaper);
      if (up == seen_.end()) break;
      reaper = up->second.ppid;
    }
    if (index.count(reaper)) counted_already[reaper] += seen.cpu_ns + seen.children_cpu_ns;
  }

  for (const ProcStat& stat : now) {
    ProcessSample p;
    p.pid = stat.pid;
    p.ppid = stat.ppid;
    p.name = stat.name;
    p.rss_bytes = stat.rss_bytes;
    p.read_bytes = stat.read_bytes;
    p.cpu_time_ns = stat.cpu_time_ns;
    // A process new since the last sample: all its CPU time happened within this interval.
    Seen before;
    if (auto it = seen_.find(stat.pid); it != seen_.end() && same(it->second, stat))
      before = it->second;
    if (elapsed_ns > 0) {
      const double interval = static_cast<double>(elapsed_ns);
      if (stat.cpu_time_ns >= before.cpu_ns)
        p.cpu_pct = 100.0 * static_cast<double>(stat.cpu_time_ns - before.cpu_ns) / interval;
      const uint64_t grew = stat.children_cpu_time_ns >= before.children_cpu_ns
                                ? stat.children_cpu_time_ns - before.children_cpu_ns
                                : 0;
      const uint64_t known = counted_already[stat.pid];
      if (grew > known) p.reaped_cpu_pct = 100.0 * static_cast<double>(grew - known) / interval;
    }
    next[stat.pid] = {stat.start_ticks, stat.ppid, stat.cpu_time_ns, stat.children_cpu_time_ns};
    sample->processes.push_back(std::move(p));
  }
  seen_.swap(next);

  std::vector<CoreTimes> cores = ParseCoreTimes(ReadSmallFile("/proc/stat"));
  if (cores.size() == last_cores_.size()) {
    for (size_t i = 0; i < cores.size(); ++i) {
      const uint64_t total = cores[i].total - last_cores_[i].total;
      const uint64_t busy = cores[i].busy - last_cores_[i].busy;
      sample->core_busy_pct.push_back(
          total > 0 ? 100.0 * static_cast<double>(busy) / static_cast<double>(total) : 0.0);
    }
  }
  last_cores_ = std::move(cores);
  last_monotonic_ns_ = monotonic_ns;
}

}  // namespace gpuscope::monitor
