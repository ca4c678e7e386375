// The job level: the facts of one rank (map side), ranks grouped into jobs, and collectives
// matched across the ranks of a job (reduce side). Definitions, units and the differences from
// HTA and from the old step-time rule (analyze/ranks.h): docs/jobs.md.
#include "analyze/job.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "analyze/intervals.h"
#include "analyze/kernel_class.h"

namespace gpuscope::analyze {
namespace {

// ---- collective types and sizes ---------------------------------------------------------------

char LowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Lower case without '_', '-' and spaces: "_reduce_scatter_base" → "reducescatterbase".
std::string Squash(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out += LowerAscii(c);
  }
  return out;
}

bool Contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

// PyTorch's "Collective name" values (allreduce, _allgather_base, reduce_scatter_tensor_coalesced,
// all_to_allv, send, recv, barrier, ...) and NCCL kernel words (AllReduce, ReduceScatter,
// SendRecv, ...) onto one vocabulary (model/rank_facts.h); anything else lower-cased as given.
std::string NormalizeCollectiveType(std::string_view given) {
  const std::string s = Squash(given);
  if (Contains(s, "allreduce")) return "allreduce";
  if (Contains(s, "reducescatter")) return "reducescatter";
  if (Contains(s, "allgather")) return "allgather";
  if (Contains(s, "alltoall")) return "alltoall";
  if (Contains(s, "broadcast")) return "broadcast";
  if (Contains(s, "sendrecv")) return "sendrecv";
  if (Contains(s, "barrier")) return "barrier";
  if (s.rfind("send", 0) == 0) return "send";
  if (s.rfind("recv", 0) == 0) return "recv";
  if (s == "reduce") return "reduce";
  std::string lowered;
  for (char c : given) lowered += LowerAscii(c);
  return lowered;
}

// The collective a communication kernel's name announces: ncclKernel_AllReduce_RING_LL_Sum_float,
// ncclDevKernel_AllGather_RING_LL, ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t (NCCL ≤ 2.18 and
// ≥ 2.19), rcclKernel_...; "" when the name carries none (ncclDevKernel_Generic, custom kernels).
std::string CollectiveTypeFromKernelName(std::string_view name) {
  size_t pos = std::string_view::npos;
  for (std::string_view marker : {"ncclDevKernel_", "ncclKernel_", "rcclKernel_"}) {
    pos = name.find(marker);
    if (pos != std::string_view::npos) {
      pos += marker.size();
      break;
    }
  }
  if (pos == std::string_view::npos) return "";
  size_t end = pos;
  while (end < name.size() && name[end] != '_' && name[end] != '(' && name[end] != '<' &&
         name[end] != ' ') {
    ++end;
  }
  const std::string_view word = name.substr(pos, end - pos);
  if (word.empty() || Squash(word) == "generic") return "";
  return NormalizeCollectiveType(word);
}

// Bytes per element of PyTorch's dtype names (c10::ScalarType as the profiler prints it), -1 when
// unknown.
int64_t DtypeBytes(std::string_view dtype) {
  static const std::pair<std::string_view, int64_t> kSizes[] = {
      {"float", 4},
      {"double", 8},
      {"half", 2},
      {"bfloat16", 2},
      {"complexhalf", 4},
      {"complexfloat", 8},
      {"complexdouble", 16},
      {"byte", 1},
      {"char", 1},
      {"short", 2},
      {"int", 4},
      {"long", 8},
      {"bool", 1},
      {"float8e4m3fn", 1},
      {"float8e5m2", 1},
      {"float8e4m3fnuz", 1},
      {"float8e5m2fnuz", 1},
      {"float8e8m0fnu", 1},
      {"uint16", 2},
      {"uint32", 4},
      {"uint64", 8},
      {"int8", 1},
      {"uint8", 1},
      {"int16", 2},
      {"int32", 4},
      {"int64", 8},
      {"float16", 2},
      {"float32", 4},
      {"float64", 8},
      {"bf16", 2},
      {"fp16", 2},
      {"fp32", 4},
  };
  const std::string s = Squash(dtype);
  for (const auto& [name, size] : kSizes) {
    if (s == name) return size;
  }
  return -1;
}

// nccl-tests' bus-bandwidth factor (PERFORMANCE.md): what each rank's links carry relative to the
// algorithm bandwidth, for a group of n ranks. -1 for types nccl-tests does not define.
double BusFactor(std::string_view type, int64_t n) {
  if (n <= 0) return -1;
  const double nd = static_cast<double>(n);
  if (type == "allreduce") return 2.0 * (nd - 1.0) / nd;
  if (type == "allgather" || type == "reducescatter" || type == "alltoall") return (nd - 1.0) / nd;
  if (type == "broadcast" || type == "reduce" || type == "sendrecv" || type == "send" ||
      type == "recv") {
    return 1.0;
  }
  return -1;
}

std::string Str(const Trace& t, StringId id) { return std::string(t.Str(id)); }

// PyTorch's send and recv: one sender and one receiver of a group, numbered by their own
// counter, so neither "every rank of the group" nor the group's seq applies. Not matched. (A
// SendRecv *kernel* without metadata stays: NCCL runs all-to-all as grouped send/recv, across the
// whole group.)
bool PointToPoint(std::string_view type) { return type == "send" || type == "recv"; }

// ---- small helpers ----------------------------------------------------------------------------

int64_t MedianOf(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : v[h - 1] + (v[h] - v[h - 1]) / 2;
}

// Kineto without baseTimeNanoseconds writes epoch µs; a start after 2001-09-09 (1e18 ns) is taken
// to be unix time, so ranks without a base can still be compared (and grouped by start).
constexpr int64_t kEpochLikeNs = 1'000'000'000'000'000'000;
bool EpochLike(int64_t ns) { return ns >= kEpochLikeNs; }

std::string UtcTime(int64_t ns) {
  if (!EpochLike(ns)) return "clock origin unknown";
  const std::time_t secs = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// "19 h 21 min", "7 min 57 s", "12 s".
std::string Duration(int64_t ns) {
  const int64_t s = std::llabs(ns) / 1'000'000'000;
  if (s >= 86400) return fmt::format("{} d {} h", s / 86400, s % 86400 / 3600);
  if (s >= 3600) return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
  if (s >= 60) return fmt::format("{} min {} s", s / 60, s % 60);
  return fmt::format("{} s", s);
}

// ---- map side ---------------------------------------------------------------------------------

// Who the rank is: path, rank, world, backend, clock, host, the trace's span and its device.
void FillIdentity(const Trace& t, int64_t base, model::RankIdentity& id) {
  id.path = t.info.path;
  id.rank = t.info.rank;
  id.rank_source = t.info.rank_source;
  id.world_size = t.info.world_size;
  id.backend = t.info.distributed_backend;
  id.base_time_ns = t.info.base_time_ns;
  id.absolute_clock = t.info.base_time_ns.has_value();
  id.hostname = t.info.hostname;
  int64_t first = INT64_MAX, last = INT64_MIN;
  auto span = [&](const std::vector<int64_t>& start, const std::vector<int64_t>& dur) {
    for (size_t i = 0; i < start.size(); ++i) {
      first = std::min(first, start[i]);
      last = std::max(last, start[i] + std::max<int64_t>(0, dur[i]));
    }
  };
  span(t.gpu.start_ns, t.gpu.dur_ns);
  span(t.runtime.start_ns, t.runtime.dur_ns);
  span(t.cpu.start_ns, t.cpu.dur_ns);
  if (first <= last) {
    id.trace_start_ns = base + first;
    id.trace_end_ns = base + last;
  }
  // The device this rank's kernels ran on (deviceProperties lists every visible GPU).
  {
    int32_t device = -1;
    uint64_t most = 0;
    for (const auto& [d, count] : KernelsPerDevice(t.gpu)) {
      if (d >= 0 && count > most) device = d, most = count;  // kernels without args.device: none
    }
    for (const DeviceProperties& p : t.devices) {
      if (p.id == device) id.device_name = p.name;
    }
    if (id.device_name.empty() && !t.devices.empty()) id.device_name = t.devices[0].name;
  }
}

// GPU busy per time bin: the union of every kernel, copy and set on any stream.
model::BusyTimeline BusyPerBin(const Trace& t, int64_t base) {
  model::BusyTimeline out;
  IntervalUnion gpu_busy;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.kind[i] == GpuKind::kSync) continue;
    gpu_busy.Add(t.gpu.start_ns[i], t.gpu.start_ns[i] + std::max<int64_t>(0, t.gpu.dur_ns[i]));
  }
  const std::vector<Interval> busy = gpu_busy.Take();
  if (!busy.empty()) {
    const int64_t lo = busy.front().start, hi = busy.back().end;
    const int64_t span_ns = std::max<int64_t>(1, hi - lo);
    int64_t bin = (span_ns + static_cast<int64_t>(model::kMaxBusyBins) - 1) /
                  static_cast<int64_t>(model::kMaxBusyBins);
    if (bin > 1000) bin = (bin + 999) / 1000 * 1000;  // whole µs once bins are that long
    bin = std::max<int64_t>(1, bin);
    const size_t bins = static_cast<size_t>((span_ns + bin - 1) / bin);
    out.first_bin_start_ns = base + lo;
    out.bin_ns = bin;
    out.busy_ns.assign(std::min(bins, model::kMaxBusyBins), 0);
    for (const Interval& iv : busy) {
      for (int64_t s = iv.start; s < iv.end;) {
        const size_t b = std::min(static_cast<size_t>((s - lo) / bin), out.busy_ns.size() - 1);
        const int64_t bin_end = lo + static_cast<int64_t>(b + 1) * bin;
        const int64_t e = std::min(iv.end, bin_end);
        out.busy_ns[b] += e - s;
        s = e;
        if (b + 1 == out.busy_ns.size()) {
          out.busy_ns[b] += iv.end - s;  // the last bin takes any rounding remainder
          break;
        }
      }
    }
    for (int64_t& v : out.busy_ns) v = std::min(v, bin);
  }
  return out;
}

}  // namespace

model::RankFacts ExtractRankFacts(const RankResults& rank) {
  model::RankFacts f;
  if (rank.trace == nullptr) return f;
  const Trace& t = *rank.trace;
  const int64_t base = t.info.base_time_ns.value_or(0);

  FillIdentity(t, base, f.identity);

  // Steps (the ProfilerSteps as the steps analysis moved and extended them).
  const StepsResult& st = rank.steps;
  if (!st.whole_span_fallback) {
    for (const StepBreakdown& s : st.steps) {
      if (s.step < 0) continue;
      f.steps.push_back({s.step, base + s.start_ns, base + s.end_ns, s.steady_state});
    }
  }

  // Headline numbers: the same values the rank's report shows (and the old ranks table used).
  const ExclusiveBreakdown& ex = rank.gpu_time.exclusive;
  const bool have_steps = !st.whole_span_fallback && st.steady_count > 0;
  f.mean_step_ns = have_steps ? st.mean_steady_step_ns : ex.span_ns;
  f.steady_steps = have_steps ? static_cast<int64_t>(st.steady_count) : 0;
  f.span_ns = ex.span_ns;
  f.compute_ns = ex.compute_ns;
  f.exposed_communication_ns = ex.exposed_communication_ns;
  f.idle_ns = ex.idle_ns;

  // Collectives: every communication kernel, in start order.
  std::vector<KernelClass> owned;
  const std::vector<KernelClass>* classes = &rank.kernel_classes.row;
  if (classes->size() != t.gpu.size()) {
    owned = ClassifyTraceGpuActivities(t);
    classes = &owned;
  }
  std::unordered_map<uint32_t, uint32_t> info_of;  // GPU row → index into t.collectives
  info_of.reserve(t.collectives.size());
  for (size_t c = 0; c < t.collectives.size(); ++c) {
    info_of.emplace(t.collectives[c].gpu_index, static_cast<uint32_t>(c));
  }
  std::vector<uint32_t> rows;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.kind[i] == GpuKind::kKernel && (*classes)[i] == KernelClass::kCommunication) {
      rows.push_back(static_cast<uint32_t>(i));
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [&](uint32_t a, uint32_t b) { return t.gpu.start_ns[a] < t.gpu.start_ns[b]; });
  std::set<std::string> groups(t.info.process_groups.begin(), t.info.process_groups.end());
  std::map<std::pair<std::string, std::string>, int64_t> ordinal;
  std::unordered_map<StringId, std::string> type_of_name;  // kernel name → type (no metadata)
  // The ProfilerSteps' host spans, by start: a collective belongs to the step whose host span
  // launched it. That is the same on every rank of the program, whereas which device span holds
  // its start depends on each rank's timing (a prefetched all-gather of step N+1 may start before
  // step N's device work ends on a slow rank), and position matching keys on the step.
  std::vector<const StepBreakdown*> host_steps;
  if (!st.whole_span_fallback) {
    for (const StepBreakdown& s : st.steps)
      if (s.step >= 0 && s.host_end_ns > s.host_start_ns) host_steps.push_back(&s);
    std::sort(host_steps.begin(), host_steps.end(),
              [](const StepBreakdown* a, const StepBreakdown* b) {
                return a->host_start_ns < b->host_start_ns;
              });
  }
  // The step of the host span holding `row`'s launch; -1 outside every step; nullopt when the
  // kernel has no linked launch (then its device start decides).
  auto launched_in = [&](uint32_t row) -> std::optional<int32_t> {
    const int32_t call = row < t.gpu.launch.size() ? t.gpu.launch[row] : -1;
    if (call < 0 || static_cast<size_t>(call) >= t.runtime.size() || host_steps.empty())
      return std::nullopt;
    const int64_t at = t.runtime.start_ns[static_cast<size_t>(call)];
    auto it =
        std::upper_bound(host_steps.begin(), host_steps.end(), at,
                         [](int64_t v, const StepBreakdown* s) { return v < s->host_start_ns; });
    if (it == host_steps.begin()) return -1;
    --it;
    return at < (*it)->host_end_ns ? (*it)->step : -1;
  };
  size_t step_cursor = 0;
  f.collectives.reserve(rows.size());
  for (uint32_t row : rows) {
    model::CollectiveRecord r;
    const auto it = info_of.find(row);
    if (it != info_of.end()) {
      const CollectiveInfo& ci = t.collectives[it->second];
      r.group = Str(t, ci.process_group);
      r.group_desc = Str(t, ci.process_group_desc);
      r.group_ranks = Str(t, ci.process_group_ranks);
      r.group_size = ci.group_size;
      r.seq = ci.seq;
      r.dtype = Str(t, ci.dtype);
      r.type = NormalizeCollectiveType(t.Str(ci.collective));
      const int64_t elem = DtypeBytes(r.dtype);
      const int64_t nelems = std::max(ci.in_nelems, ci.out_nelems);
      // nccl-tests' size S: the larger of the input and output buffers (allgather's output,
      // reduce-scatter's input, the buffer itself for allreduce and broadcast).
      if (elem > 0 && nelems >= 0) r.bytes = nelems * elem;
      if (!r.group.empty()) {
        groups.insert(r.group + " " + (r.group_desc.empty() ? "-" : r.group_desc) + " " +
                      r.group_ranks);
      }
    }
    if (r.type.empty()) {
      auto [slot, fresh] = type_of_name.try_emplace(t.gpu.name[row]);
      if (fresh) {
        slot->second = CollectiveTypeFromKernelName(t.Str(t.gpu.name[row]));
        if (slot->second.empty()) slot->second = ShortKernelName(t.Str(t.gpu.name[row]));
      }
      r.type = slot->second;
    }
    // Without a process group name the stream stands in: NCCL runs each communicator on its own
    // stream, created in the same order (so numbered alike) on every rank of a program.
    if (r.group.empty()) r.group = "stream:" + std::to_string(t.gpu.stream[row]);
    r.ordinal = ordinal[{r.group, r.type}]++;
    r.start_ns = base + t.gpu.start_ns[row];
    r.end_ns = r.start_ns + std::max<int64_t>(0, t.gpu.dur_ns[row]);
    // Steps are in time order; records too, so the cursor only moves forward.
    while (step_cursor + 1 < f.steps.size() && f.steps[step_cursor + 1].start_ns <= r.start_ns) {
      ++step_cursor;
    }
    if (const std::optional<int32_t> launched = launched_in(row)) {
      r.step = *launched;
    } else if (!f.steps.empty() && f.steps[step_cursor].start_ns <= r.start_ns &&
               r.start_ns < f.steps[step_cursor].end_ns) {
      r.step = f.steps[step_cursor].step;
    }
    f.collectives.push_back(std::move(r));
  }
  f.identity.process_groups.assign(groups.begin(), groups.end());

  f.busy = BusyPerBin(t, base);
  return f;
}

// ---- job identity -----------------------------------------------------------------------------

namespace {

std::string BaseName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// A profiling session's process: the file name without the trace suffix and without
// tb_plugin's trailing session timestamp ("<run>.<worker>.<epoch ms>.pt.trace.json"), in its
// folder. Files that share it and have no rank id are sessions of one process.
std::string SessionKey(const std::string& path) {
  const std::filesystem::path p(path);
  std::string stem = p.filename().string();
  for (std::string_view suffix : {".gz", ".json", ".trace", ".pt"}) {
    if (stem.size() > suffix.size() &&
        stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0) {
      stem.resize(stem.size() - suffix.size());
    }
  }
  const size_t dot = stem.rfind('.');
  if (dot != std::string::npos && stem.size() - dot - 1 >= 10 &&
      std::all_of(stem.begin() + static_cast<std::ptrdiff_t>(dot) + 1, stem.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    stem.resize(dot);
  }
  return (p.parent_path() / stem).string();
}

// "0 default_pg [0, 1]" → ("0", "default_pg").
std::pair<std::string, std::string> GroupNameDesc(const std::string& g) {
  const size_t a = g.find(' ');
  if (a == std::string::npos) return {g, ""};
  const size_t b = g.find(' ', a + 1);
  return {g.substr(0, a), g.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1)};
}

struct Candidate {
  const model::RankFacts* f = nullptr;
  size_t input = 0;
  bool ranked = false;  // a rank id or a world size above one: part of a multi-rank job
  std::string session;
};

struct Draft {
  std::vector<size_t> members;  // input indices
  bool sessions = false;        // rankless sessions of one process, merged by SessionKey
};

// Why `c` cannot join a job whose first member is `g` (and whose ranks are `taken`); "" if it can.
std::string Incompatibility(const Candidate& c, const Candidate& g,
                            const std::set<int32_t>& taken) {
  const model::RankIdentity& a = c.f->identity;
  const model::RankIdentity& b = g.f->identity;
  if (a.world_size > 0 && b.world_size > 0 && a.world_size != b.world_size) {
    return "world size " + std::to_string(a.world_size) + ", not " + std::to_string(b.world_size);
  }
  if (!a.backend.empty() && !b.backend.empty() && a.backend != b.backend) {
    return "backend " + a.backend + ", not " + b.backend;
  }
  if (!a.device_name.empty() && !b.device_name.empty() && a.device_name != b.device_name) {
    return "device " + a.device_name + ", not " + b.device_name;
  }
  std::map<std::string, std::string> desc;
  for (const std::string& pg : b.process_groups) desc.insert(GroupNameDesc(pg));
  for (const std::string& pg : a.process_groups) {
    const auto [name, d] = GroupNameDesc(pg);
    const auto it = desc.find(name);
    if (it != desc.end() && it->second != d && it->second != "-" && d != "-") {
      return "process group " + name + " is " + d + ", not " + it->second;
    }
  }
  const bool ea = EpochLike(a.trace_start_ns), eb = EpochLike(b.trace_start_ns);
  if (ea != eb) return "one clock is unix time, the other is not";
  if (ea && std::llabs(a.trace_start_ns - b.trace_start_ns) > kSameJobStartWindowNs) {
    return "started " + Duration(a.trace_start_ns - b.trace_start_ns) +
           (a.trace_start_ns > b.trace_start_ns ? " later" : " earlier");
  }
  if (a.rank >= 0 && taken.count(a.rank)) return "rank " + std::to_string(a.rank) + " taken";
  return "";
}

// Notes on the job's rank ids: unknown, twice in the job, or claimed by a file of another job
// started within the window. The rank ids present.
std::set<int32_t> AddRankNotes(const std::vector<const model::RankFacts*>& ranks,
                               const std::vector<Draft>& drafts, size_t d, bool sessions,
                               JobGroup& g) {
  std::set<int32_t> seen;
  for (size_t m : g.members) {
    const model::RankIdentity& r = ranks[m]->identity;
    if (r.rank < 0 && (r.world_size > 1 || (!sessions && g.members.size() > 1))) {
      g.notes.push_back("no rank id: " + r.path + " (shown as rank ?)");
    }
    if (r.rank >= 0 && !seen.insert(r.rank).second) {
      g.notes.push_back("rank " + std::to_string(r.rank) + " appears twice: " + r.path);
    }
  }
  for (size_t m : g.members) {
    const model::RankIdentity& r = ranks[m]->identity;
    if (r.rank < 0) continue;
    for (size_t e = 0; e < drafts.size(); ++e) {
      if (e == d) continue;
      for (size_t o : drafts[e].members) {
        const model::RankIdentity& q = ranks[o]->identity;
        if (q.rank == r.rank && q.world_size == r.world_size && EpochLike(q.trace_start_ns) &&
            EpochLike(r.trace_start_ns) &&
            std::llabs(q.trace_start_ns - r.trace_start_ns) <= kSameJobStartWindowNs) {
          g.notes.push_back("rank " + std::to_string(r.rank) +
                            " is claimed by two files: " + r.path + " (here) and " + q.path +
                            " (job " + std::to_string(e + 1) + "); both kept, never merged");
        }
      }
    }
  }
  return seen;
}

// Ranks of the world size with no trace or summary given: named, so that a job of 1 rank of 8
// (a summary overwritten by another writer, ranks not mapped) is never taken for the job. "" when
// none is absent.
std::string AbsentRanksNote(int32_t world_size, const std::set<int32_t>& seen) {
  if (world_size > 1 && world_size <= (int32_t{1} << 24)) {
    std::string absent;
    int32_t count = 0, ranges = 0;
    for (int32_t k = 0; k < world_size;) {
      if (seen.count(k)) {
        ++k;
        continue;
      }
      int32_t e = k;
      while (e + 1 < world_size && !seen.count(e + 1)) ++e;
      count += e - k + 1;
      if (++ranges <= kMaxAbsentRanges)
        absent += (absent.empty() ? "" : ", ") + std::to_string(k) +
                  (e > k ? (e == k + 1 ? ", " : "–") + std::to_string(e) : std::string());
      else if (ranges == kMaxAbsentRanges + 1)
        absent += ", …";
      k = e + 1;
    }
    if (count > 0)
      return (std::to_string(count) + " of world size " + std::to_string(world_size) +
              " absent: rank" + (count == 1 ? " " : "s ") + absent +
              " (no trace or summary of them was given: job figures cover the " +
              std::to_string(seen.size()) + " present)");
  }
  return "";
}

}  // namespace

std::vector<JobGroup> GroupJobs(const std::vector<const model::RankFacts*>& ranks) {
  std::vector<Candidate> cands;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == nullptr) continue;
    Candidate c;
    c.f = ranks[i];
    c.input = i;
    c.ranked = c.f->identity.rank >= 0 || c.f->identity.world_size > 1;
    c.session = SessionKey(c.f->identity.path);
    cands.push_back(std::move(c));
  }
  // Earliest first (unix-time starts before the others), then by path for determinism.
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    const int64_t sa = a.f->identity.trace_start_ns, sb = b.f->identity.trace_start_ns;
    if (EpochLike(sa) != EpochLike(sb)) return EpochLike(sa);
    if (sa != sb) return sa < sb;
    return a.f->identity.path < b.f->identity.path;
  });
  std::vector<size_t> pos_of(ranks.size(), SIZE_MAX);  // input → position in cands
  for (size_t p = 0; p < cands.size(); ++p) pos_of[cands[p].input] = p;

  std::vector<Draft> drafts;
  std::vector<std::set<int32_t>> taken;
  std::vector<std::string> why_apart(cands.size());  // why a file opened a job of its own
  for (size_t p = 0; p < cands.size(); ++p) {
    const Candidate& c = cands[p];
    std::string first_reason;
    size_t joined = SIZE_MAX;
    for (size_t d = 0; d < drafts.size(); ++d) {
      const Candidate& head = cands[pos_of[drafts[d].members.front()]];
      if (head.ranked != c.ranked) {
        if (first_reason.empty()) first_reason = c.ranked ? "it has a rank id" : "no rank id";
        continue;
      }
      const std::string why = Incompatibility(c, head, taken[d]);
      if (why.empty()) {
        joined = d;
        break;
      }
      if (first_reason.empty()) first_reason = why;
    }
    if (joined == SIZE_MAX) {
      drafts.push_back({});
      taken.emplace_back();
      joined = drafts.size() - 1;
      why_apart[p] = first_reason;
    }
    drafts[joined].members.push_back(c.input);
    if (c.f->identity.rank >= 0) taken[joined].insert(c.f->identity.rank);
  }

  // Rankless single processes: sessions of one process (same SessionKey) are one run.
  for (size_t d = 0; d < drafts.size(); ++d) {
    if (cands[pos_of[drafts[d].members.front()]].ranked) continue;
    for (size_t e = d + 1; e < drafts.size();) {
      const Candidate& head_d = cands[pos_of[drafts[d].members.front()]];
      const Candidate& head_e = cands[pos_of[drafts[e].members.front()]];
      auto one_key = [&](const Draft& x, const std::string& key) {
        return std::all_of(x.members.begin(), x.members.end(),
                           [&](size_t m) { return cands[pos_of[m]].session == key; });
      };
      if (!head_e.ranked && one_key(drafts[d], head_d.session) &&
          one_key(drafts[e], head_d.session)) {
        for (size_t m : drafts[e].members) drafts[d].members.push_back(m);
        drafts[d].sessions = true;
        drafts.erase(drafts.begin() + static_cast<std::ptrdiff_t>(e));
        taken.erase(taken.begin() + static_cast<std::ptrdiff_t>(e));
      } else {
        ++e;
      }
    }
  }

  // Members by rank (unknown last), then path.
  auto by_rank = [&](size_t a, size_t b) {
    const model::RankIdentity& x = ranks[a]->identity;
    const model::RankIdentity& y = ranks[b]->identity;
    const int32_t rx = x.rank < 0 ? INT32_MAX : x.rank, ry = y.rank < 0 ? INT32_MAX : y.rank;
    if (rx != ry) return rx < ry;
    return x.path < y.path;
  };
  std::vector<JobGroup> out;
  for (size_t d = 0; d < drafts.size(); ++d) {
    Draft& dr = drafts[d];
    JobGroup g;
    std::vector<size_t> by_time = dr.members;  // in start order (cands order)
    std::sort(by_time.begin(), by_time.end(),
              [&](size_t a, size_t b) { return pos_of[a] < pos_of[b]; });
    g.members = dr.members;
    std::stable_sort(g.members.begin(), g.members.end(), by_rank);
    const model::RankIdentity& head = ranks[by_time.front()]->identity;
    const std::string n = std::to_string(d + 1);
    const std::string started = "started " + UtcTime(head.trace_start_ns);
    g.sessions = dr.sessions;
    if (dr.sessions) {
      g.label = "run " + n + " (" + BaseName(SessionKey(head.path)) + ", " +
                std::to_string(g.members.size()) + " profiling sessions, " + started + ")";
      std::string files;
      for (size_t m : by_time) {
        if (!files.empty()) files += ", ";
        files += ranks[m]->identity.path + " (" + UtcTime(ranks[m]->identity.trace_start_ns) + ")";
      }
      g.notes.push_back(std::to_string(g.members.size()) +
                        " profiling sessions of one process without a rank id, not ranks of one "
                        "job: " +
                        files);
    } else {
      std::string what;
      if (head.world_size > 0) what += "world size " + std::to_string(head.world_size);
      if (!head.backend.empty()) what += (what.empty() ? "" : ", ") + head.backend;
      if (what.empty())
        what = std::to_string(g.members.size()) + (g.members.size() == 1 ? " file" : " files");
      g.label = "job " + n + " (" + what + ", " + started + ")";
    }
    if (drafts.size() > 1) {
      std::string files;
      for (size_t m : g.members) files += (files.empty() ? "" : ", ") + ranks[m]->identity.path;
      const std::string& why = why_apart[pos_of[by_time.front()]];
      if (d == 0) {
        g.notes.push_back("one of " + std::to_string(drafts.size()) +
                          " jobs or runs in the input; this one: " + files);
      } else {
        g.notes.push_back("set apart from the jobs before it" +
                          (why.empty() ? std::string() : " (" + why + ")") + ": " + files);
      }
    }
    const std::set<int32_t> seen = AddRankNotes(ranks, drafts, d, dr.sessions, g);
    if (!dr.sessions)
      if (std::string note = AbsentRanksNote(head.world_size, seen); !note.empty())
        g.notes.push_back(std::move(note));
    out.push_back(std::move(g));
  }
  return out;
}

// ---- collectives across ranks -----------------------------------------------------------------

namespace {

// Matched collectives end within this of each other once clocks are aligned (ring collectives
// end within microseconds on every rank); also the width of the window in which the clock offset
// estimate looks for the densest cluster of end differences.
constexpr int64_t kEndAgreementNs = 1'000'000;  // 1 ms

struct Key {
  int32_t group = 0;
  int32_t type = -1;  // -1: matched by seq
  int64_t a = 0;      // seq, or the step
  int64_t b = 0;      // 0, or the index within (group, type, step)
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = static_cast<uint64_t>(k.group) * 0x9e3779b97f4a7c15ULL;
    h ^= static_cast<uint64_t>(k.type) + 0x7f4a7c159e3779b9ULL + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(k.a) + 0x94d049bb133111ebULL + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(k.b) + 0xbf58476d1ce4e5b9ULL + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

struct Part {
  uint32_t member;
  const model::CollectiveRecord* rec;
};
struct Instance {
  Key key;
  std::vector<Part> parts;
};

// Clock offset of one rank from the end differences d = end(reference) − end(rank) of the
// collectives both recorded: the densest kEndAgreementNs-wide cluster of d (matching mistakes and
// collectives that do not end together fall outside it), its median as the offset and its median
// absolute deviation as the uncertainty. Alignable when the cluster holds at least a quarter of
// the samples (and two of them, when there are two or more).
struct ClockFit {
  int64_t offset = 0;
  int64_t uncertainty = 0;
  uint64_t samples = 0;
  bool alignable = true;
};
ClockFit FitClock(std::vector<int64_t> d) {
  ClockFit fit;
  fit.samples = d.size();
  if (d.empty()) return fit;
  std::sort(d.begin(), d.end());
  size_t best_lo = 0, best_n = 0;
  for (size_t lo = 0, hi = 0; lo < d.size(); ++lo) {
    hi = std::max(hi, lo);
    while (hi + 1 < d.size() && d[hi + 1] - d[lo] <= kEndAgreementNs) ++hi;
    if (hi - lo + 1 > best_n) best_lo = lo, best_n = hi - lo + 1;
  }
  std::vector<int64_t> cluster(d.begin() + static_cast<std::ptrdiff_t>(best_lo),
                               d.begin() + static_cast<std::ptrdiff_t>(best_lo + best_n));
  fit.offset = MedianOf(cluster);
  std::vector<int64_t> dev;
  dev.reserve(cluster.size());
  for (int64_t x : cluster) dev.push_back(std::llabs(x - fit.offset));
  fit.uncertainty = MedianOf(std::move(dev));
  fit.alignable = best_n * 4 >= d.size() && (d.size() < 2 || best_n >= 2);
  if (!fit.alignable) {
    // The spread of all samples, as the uncertainty that made the clock unusable.
    const int64_t all = MedianOf(d);
    std::vector<int64_t> all_dev;
    for (int64_t x : d) all_dev.push_back(std::llabs(x - all));
    fit.offset = all;
    fit.uncertainty = MedianOf(std::move(all_dev));
  }
  return fit;
}

// Whether two traces can share collectives: they overlap in time, give or take the start window
// of a job (clocks may be off by that much; sessions of one process are minutes apart).
bool Overlaps(const model::RankIdentity& a, const model::RankIdentity& b) {
  if (!EpochLike(a.trace_start_ns) || !EpochLike(b.trace_start_ns)) return true;
  return a.trace_start_ns <= b.trace_end_ns + kSameJobStartWindowNs &&
         b.trace_start_ns <= a.trace_end_ns + kSameJobStartWindowNs;
}

// JobFix (job.h): each rank's own work per step (its mean step less its waits at collectives), and
// for each fix the longest own work once every rank saves what its replay of the fix saves.
void ReplayJobFixes(const std::vector<const model::RankFacts*>& ranks, JobAnalysis* out) {
  if (ranks.size() < 2 || out->ranks.size() != ranks.size()) return;
  for (const model::RankFacts* f : ranks)
    if (f->replayed_step_ns <= 0) return;  // a rank without a replay: the job cannot be replayed
  std::vector<int64_t> own(ranks.size());
  for (size_t m = 0; m < ranks.size(); ++m) {
    own[m] = std::max<int64_t>(0, ranks[m]->mean_step_ns - out->ranks[m].wait_suffered_ns_per_step);
    if (own[m] > out->own_step_ns) {
      out->own_step_ns = own[m];
      out->own_step_rank = ranks[m]->identity.rank;
    }
  }
  std::vector<std::string> ids;  // every fix some rank replayed, in first-seen order
  for (const model::RankFacts* f : ranks)
    for (const model::FixSaving& s : f->fixes)
      if (std::find(ids.begin(), ids.end(), s.fix) == ids.end()) ids.push_back(s.fix);
  for (const std::string& id : ids) {
    JobFix j;
    j.fix = id;
    j.rank_saving_min_ns = INT64_MAX;
    int64_t after = -1;
    for (size_t m = 0; m < ranks.size(); ++m) {
      int64_t saving = 0;  // a fix that does not apply to a rank saves nothing there
      for (const model::FixSaving& s : ranks[m]->fixes)
        if (s.fix == id) saving = s.saving_ns;
      j.rank_saving_min_ns = std::min(j.rank_saving_min_ns, saving);
      j.rank_saving_max_ns = std::max(j.rank_saving_max_ns, saving);
      const int64_t left = std::max<int64_t>(0, own[m] - saving);
      if (left > after) {
        after = left;
        j.bound_by_rank = ranks[m]->identity.rank;
      }
    }
    j.saving_ns = out->own_step_ns - after;
    out->fixes.push_back(std::move(j));
  }
  std::stable_sort(out->fixes.begin(), out->fixes.end(),
                   [](const JobFix& a, const JobFix& b) { return a.saving_ns > b.saving_ns; });
}

// The collectives of the comparable members matched across members: groups and types interned (a
// group is matched by seq when every record of it has one, else by type, step and order), one
// instance per collective with each member's part.
struct Matched {
  std::vector<std::string> group_name;
  std::vector<std::vector<uint8_t>> in_group;  // [group][member]
  std::vector<Instance> inst;
};

Matched MatchCollectives(const std::vector<const model::RankFacts*>& ranks,
                         const std::vector<uint8_t>& comparable, JobAnalysis& out) {
  const size_t n = ranks.size();
  Matched x;
  std::vector<std::string>& group_name = x.group_name;
  std::vector<std::vector<uint8_t>>& in_group = x.in_group;
  std::vector<Instance>& inst = x.inst;
  std::unordered_map<std::string, int32_t> group_id, type_id;
  std::vector<uint8_t> all_seq;
  auto intern_group = [&](const std::string& g) {
    auto [it, fresh] = group_id.try_emplace(g, static_cast<int32_t>(group_name.size()));
    if (fresh) {
      group_name.push_back(g);
      all_seq.push_back(1);
      in_group.emplace_back(n, 0);
    }
    return it->second;
  };
  for (size_t m = 0; m < n; ++m) {
    if (!comparable[m]) continue;
    for (const model::CollectiveRecord& r : ranks[m]->collectives) {
      if (PointToPoint(r.type)) {
        ++out.point_to_point;
        continue;
      }
      const int32_t g = intern_group(r.group);
      if (r.seq < 0) all_seq[static_cast<size_t>(g)] = 0;
      in_group[static_cast<size_t>(g)][m] = 1;
    }
  }

  std::unordered_map<Key, size_t, KeyHash> index;
  for (size_t m = 0; m < n; ++m) {
    if (!comparable[m]) {
      out.unmatched += ranks[m]->collectives.size();
      continue;
    }
    std::unordered_map<Key, int64_t, KeyHash> within;  // (group, type, step) → next index
    for (const model::CollectiveRecord& r : ranks[m]->collectives) {
      if (PointToPoint(r.type)) continue;
      const int32_t g = group_id.at(r.group);
      Key k;
      k.group = g;
      if (all_seq[static_cast<size_t>(g)]) {
        k.a = r.seq;
      } else {
        auto [tit, fresh] = type_id.try_emplace(r.type, static_cast<int32_t>(type_id.size()));
        (void)fresh;
        k.type = tit->second;
        k.a = r.step;
        k.b = within[Key{g, k.type, r.step, 0}]++;
      }
      auto [it, fresh] = index.try_emplace(k, inst.size());
      if (fresh) inst.push_back({k, {}});
      Instance& in = inst[it->second];
      // Members are taken in order, so a member's part is the last one if it has any (a scan of
      // every part would be quadratic in the ranks).
      const bool again = !in.parts.empty() && in.parts.back().member == m;
      if (again) {
        ++out.unmatched;  // the same seq twice on one rank: not a match for anyone
        continue;
      }
      in.parts.push_back({static_cast<uint32_t>(m), &r});
    }
  }
  return x;
}

// The straggler: the rank whose lateness the others waited for longest, when that wait is a
// visible share of the step (kStragglerMinShare) and its mean lateness where it was last is larger
// than what the clocks can tell apart (the largest clock uncertainty of the job). `caused`: the
// wait each member caused, ns.
void FindStraggler(const std::vector<int64_t>& caused, JobAnalysis& out) {
  const size_t n = caused.size();
  size_t best = SIZE_MAX;
  for (size_t m = 0; m < n; ++m) {
    if (caused[m] <= 0) continue;
    if (best == SIZE_MAX || caused[m] > caused[best]) best = m;
  }
  if (best != SIZE_MAX) {
    int64_t clock_bar = 0;
    for (const ClockOffset& c : out.clocks) {
      if (c.samples > 0) clock_bar = std::max(clock_bar, c.uncertainty_ns);
    }
    const RankWait& w = out.ranks[best];
    const int64_t per_instance =
        caused[best] / static_cast<int64_t>(std::max<uint64_t>(1, w.times_last));
    const double share = out.mean_step_ns > 0 ? static_cast<double>(w.wait_caused_ns_per_step) /
                                                    static_cast<double>(out.mean_step_ns)
                                              : 0.0;
    // Clocks that cannot be aligned make every arrival difference as uncertain as the clocks:
    // nobody is named then (the job reports the clocks instead).
    if (out.clocks_alignable && share > kStragglerMinShare && per_instance > clock_bar) {
      Straggler s;
      s.rank = w.rank;
      s.input = best;
      s.wait_caused_ns_per_step = w.wait_caused_ns_per_step;
      s.share_of_step = share;
      out.straggler = s;
    }
  }
}

// The job's mean step (the median of the members') and the steps every member profiled.
void CountSteps(const std::vector<const model::RankFacts*>& ranks, JobAnalysis& out) {
  const size_t n = ranks.size();
  std::vector<int64_t> steps, means;
  for (const model::RankFacts* f : ranks) {
    steps.push_back(static_cast<int64_t>(f->steps.size()));
    means.push_back(f->mean_step_ns);
  }
  out.mean_step_ns = MedianOf(means);
  // Per-step figures divide by the steps every member profiled: waits accrue only where all
  // ranks of a collective are present, i.e. in those steps (ranks that captured steps 100–104
  // and 101–105 share 4, not 5). Steps without a collective still count (gradient
  // accumulation spreads one all-reduce's wait over its micro-steps). Ranks without
  // ProfilerSteps in common: the median count, at least 1.
  std::vector<int32_t> common;
  for (size_t m = 0; m < n; ++m) {
    std::vector<int32_t> ids;
    for (const model::StepSpan& s : ranks[m]->steps) ids.push_back(s.step);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    if (m == 0) {
      common = std::move(ids);
    } else {
      std::vector<int32_t> both;
      std::set_intersection(common.begin(), common.end(), ids.begin(), ids.end(),
                            std::back_inserter(both));
      common = std::move(both);
    }
  }
  out.steps =
      !common.empty() ? static_cast<int64_t>(common.size()) : std::max<int64_t>(1, MedianOf(steps));
}

// Clock offsets of each member from the reference's, fitted to matched end times; the
// corrections applied (where the job's clocks can be aligned and an offset is beyond its
// uncertainty).
std::vector<int64_t> FitClocks(const std::vector<const model::RankFacts*>& ranks,
                               const std::vector<Instance>& inst, size_t ref, JobAnalysis& out) {
  const size_t n = ranks.size();
  out.clocks.resize(n);
  std::vector<int64_t> correction(n, 0);
  std::vector<std::vector<int64_t>> diffs(n);
  for (const Instance& in : inst) {
    if (in.parts.size() < 2) continue;
    const model::CollectiveRecord* at_ref = nullptr;
    for (const Part& p : in.parts) {
      if (p.member == ref) at_ref = p.rec;
    }
    if (at_ref == nullptr) continue;
    for (const Part& p : in.parts) {
      if (p.member != ref) diffs[p.member].push_back(at_ref->end_ns - p.rec->end_ns);
    }
  }
  for (size_t m = 0; m < n; ++m) {
    ClockOffset& c = out.clocks[m];
    c.rank = ranks[m]->identity.rank;
    if (m == ref) continue;
    const ClockFit fit = FitClock(std::move(diffs[m]));
    c.offset_ns = fit.offset;
    c.uncertainty_ns = fit.uncertainty;
    c.samples = fit.samples;
    if (!fit.alignable) out.clocks_alignable = false;
  }
  for (size_t m = 0; m < n; ++m) {
    ClockOffset& c = out.clocks[m];
    c.applied = out.clocks_alignable && c.samples > 0 && std::llabs(c.offset_ns) > c.uncertainty_ns;
    if (c.applied) correction[m] = c.offset_ns;
  }
  return correction;
}

}  // namespace

JobAnalysis AnalyzeJob(const std::vector<const model::RankFacts*>& ranks) {
  JobAnalysis out;
  const size_t n = ranks.size();
  if (n == 0) return out;

  // Reference: the lowest rank id (the first member when none has one).
  size_t ref = 0;
  for (size_t m = 0; m < n; ++m) {
    const int32_t r = ranks[m]->identity.rank, best = ranks[ref]->identity.rank;
    if (r >= 0 && (best < 0 || r < best)) ref = m;
  }
  out.reference_rank = ranks[ref]->identity.rank;
  CountSteps(ranks, out);

  // A member whose trace does not overlap the reference's in time (another session of a process)
  // shares no collective with it.
  std::vector<uint8_t> comparable(n, 1);
  for (size_t m = 0; m < n; ++m) comparable[m] = Overlaps(ranks[m]->identity, ranks[ref]->identity);

  Matched matched = MatchCollectives(ranks, comparable, out);
  const std::vector<std::string>& group_name = matched.group_name;
  const std::vector<std::vector<uint8_t>>& in_group = matched.in_group;
  const std::vector<Instance>& inst = matched.inst;

  // Clock offsets from matched end times.
  const std::vector<int64_t> correction = FitClocks(ranks, inst, ref, out);

  // Per instance: arrivals, the last arriver, waits, bandwidth.
  std::vector<uint64_t> expected(group_name.size(), 0);
  for (size_t g = 0; g < group_name.size(); ++g) {
    for (size_t m = 0; m < n; ++m) expected[g] += in_group[g][m];
  }
  out.ranks.resize(n);
  std::vector<int64_t> caused(n, 0), suffered(n, 0);
  std::vector<std::unordered_map<uint32_t, int64_t>> waited_for(n);
  for (size_t m = 0; m < n; ++m) {
    out.ranks[m].rank = ranks[m]->identity.rank;
    out.ranks[m].input = m;
  }
  for (const Instance& in : inst) {
    if (in.parts.size() < 2) {
      out.unmatched += in.parts.size();
      continue;
    }
    int64_t min_end = INT64_MAX, max_end = INT64_MIN;
    for (const Part& p : in.parts) {
      min_end = std::min(min_end, p.rec->end_ns + correction[p.member]);
      max_end = std::max(max_end, p.rec->end_ns + correction[p.member]);
    }
    const bool by_seq = in.key.type < 0;
    // Matched by position only: records whose ends disagree are not the same collective (an
    // event the profiler dropped on one rank shifts every later position).
    if (!by_seq && out.clocks_alignable && max_end - min_end > kEndAgreementNs) {
      out.unmatched += in.parts.size();
      continue;
    }
    MatchedCollective mc;
    const model::CollectiveRecord& r0 = *in.parts.front().rec;
    mc.group = group_name[static_cast<size_t>(in.key.group)];
    mc.type = r0.type;
    mc.by_seq = by_seq;
    mc.seq = by_seq ? r0.seq : r0.ordinal;
    for (const Part& p : in.parts) {
      if (p.member == ref) mc.seq = by_seq ? p.rec->seq : p.rec->ordinal;
      if (mc.bytes < 0) mc.bytes = p.rec->bytes;
    }
    mc.ranks = static_cast<int32_t>(in.parts.size());
    mc.expected_ranks = static_cast<int32_t>(expected[static_cast<size_t>(in.key.group)]);
    // Arrivals, latest first; ties keep member order.
    std::vector<std::pair<int64_t, uint32_t>> arr;
    arr.reserve(in.parts.size());
    for (const Part& p : in.parts)
      arr.push_back({p.rec->start_ns + correction[p.member], p.member});
    std::stable_sort(arr.begin(), arr.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    const uint32_t last = arr[0].second;
    mc.last_rank = ranks[last]->identity.rank;
    mc.last_arrival_ns = arr[0].first;
    mc.first_arrival_ns = arr.back().first;
    mc.skew_ns = mc.last_arrival_ns - mc.first_arrival_ns;
    mc.wait_caused_ns = arr[0].first - arr[1].first;
    mc.end_ns = max_end;
    mc.duration_ns = std::max<int64_t>(0, max_end - mc.last_arrival_ns);
    for (const Part& p : in.parts) {
      if (p.member == last) mc.step = p.rec->step;
    }
    if (mc.bytes > 0 && mc.duration_ns > 0) {
      mc.algbw_gbps = static_cast<double>(mc.bytes) / static_cast<double>(mc.duration_ns);
      int64_t size = r0.group_size > 0 ? r0.group_size : mc.expected_ranks;
      const double factor = BusFactor(mc.type, size);
      if (factor >= 0) mc.busbw_gbps = mc.algbw_gbps * factor;
    }
    const bool complete = mc.ranks >= mc.expected_ranks;
    if (!complete) out.unmatched += in.parts.size();
    // Waits count only where every rank of the group is present: a missing rank may have
    // arrived later than the last one seen.
    if (complete) {
      for (const Part& p : in.parts) {
        RankWait& w = out.ranks[p.member];
        ++w.collectives;
        const int64_t wait = mc.last_arrival_ns - (p.rec->start_ns + correction[p.member]);
        suffered[p.member] += wait;
        if (p.member != last && wait > 0) waited_for[p.member][last] += wait;
      }
      if (mc.wait_caused_ns > 0) {
        ++out.ranks[last].times_last;
        caused[last] += mc.wait_caused_ns;
      }
    }
    out.collectives.push_back(std::move(mc));
  }
  std::stable_sort(out.collectives.begin(), out.collectives.end(),
                   [](const MatchedCollective& a, const MatchedCollective& b) {
                     return a.first_arrival_ns < b.first_arrival_ns;
                   });

  for (size_t m = 0; m < n; ++m) {
    RankWait& w = out.ranks[m];
    w.wait_caused_ns_per_step = caused[m] / out.steps;
    w.wait_suffered_ns_per_step = suffered[m] / out.steps;
    int64_t most = 0;
    for (const auto& [who, ns] : waited_for[m]) {
      if (ns > most || (ns == most && ns > 0 && ranks[who]->identity.rank < w.waits_most_for)) {
        most = ns;
        w.waits_most_for = ranks[who]->identity.rank;
      }
    }
  }

  FindStraggler(caused, out);
  ReplayJobFixes(ranks, &out);
  return out;
}

}  // namespace gpuscope::analyze
