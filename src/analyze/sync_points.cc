#include "analyze/sync_points.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "analyze/intervals.h"
#include "analyze/thread_lists.h"
#include "base/enum_names.h"
#include "base/sort.h"

namespace gpuscope::analyze {

namespace {

bool Contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

}  // namespace

std::optional<SyncCategory> SyncCategoryOfCall(const Trace& t, size_t call, int32_t gpu_row) {
  const std::string_view name = t.Str(t.runtime.name[call]);
  switch (t.runtime.kind[call]) {
    case RuntimeKind::kSync:
      if (Contains(name, "StreamWaitEvent")) return SyncCategory::kStreamWaitEvent;
      if (Contains(name, "StreamSynchronize")) return SyncCategory::kStreamSync;
      if (Contains(name, "EventSynchronize")) return SyncCategory::kEventSync;
      if (Contains(name, "DeviceSynchronize") || Contains(name, "CtxSynchronize")) {
        return SyncCategory::kDeviceSync;
      }
      return std::nullopt;
    case RuntimeKind::kMemcpy: {
      if (!Contains(name, "Async")) return SyncCategory::kSyncMemcpy;
      if (gpu_row < 0) return std::nullopt;
      const size_t g = static_cast<size_t>(gpu_row);
      if (t.gpu.src_kind[g] == MemoryKind::kPageable ||
          t.gpu.dst_kind[g] == MemoryKind::kPageable) {
        return SyncCategory::kPageableMemcpyAsync;
      }
      return std::nullopt;
    }
    case RuntimeKind::kMemset: {
      if (Contains(name, "Async") || gpu_row < 0) return std::nullopt;
      const MemoryKind k = t.gpu.dst_kind[static_cast<size_t>(gpu_row)];
      if (k == MemoryKind::kPinned || k == MemoryKind::kManaged) return SyncCategory::kSyncMemset;
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

namespace {

bool IsPlumbing(std::string_view n) {
  return n == "aten::item" || n == "aten::_local_scalar_dense" || n == "aten::copy_" ||
         n == "aten::_to_copy" || n == "aten::to";
}
bool IsScalarRead(std::string_view n) {
  return n == "aten::item" || n == "aten::_local_scalar_dense";
}

// For each query interval on one thread, the CPU events (rows) that contain it, innermost first.
// Events must be sorted by (start asc, end desc); queries by start.
struct ChainFinder {
  ChainFinder(const CpuOpTable& c, const std::vector<uint32_t>& e) : cpu(c), events(e) {}
  const CpuOpTable& cpu;
  const std::vector<uint32_t>& events;
  size_t next = 0;
  std::vector<uint32_t> stack;

  int64_t End(uint32_t r) const { return cpu.start_ns[r] + cpu.dur_ns[r]; }

  void Chain(int64_t start, int64_t end, std::vector<uint32_t>* chain) {
    while (next < events.size() && cpu.start_ns[events[next]] <= start) {
      const uint32_t e = events[next++];
      while (!stack.empty() && End(stack.back()) < End(e)) stack.pop_back();
      stack.push_back(e);
    }
    chain->clear();
    for (size_t i = stack.size(); i-- > 0;) {
      const uint32_t r = stack[i];
      if (cpu.start_ns[r] <= start && End(r) >= end) chain->push_back(r);
    }
  }
};

}  // namespace

constexpr EnumNames<SyncCategory, 7> kSyncCategoryNames(
    {SyncCategory::kDeviceSync, "device_sync"}, {SyncCategory::kStreamSync, "stream_sync"},
    {SyncCategory::kEventSync, "event_sync"}, {SyncCategory::kStreamWaitEvent, "stream_wait_event"},
    {SyncCategory::kSyncMemcpy, "sync_memcpy"},
    {SyncCategory::kPageableMemcpyAsync, "pageable_memcpy_async"},
    {SyncCategory::kSyncMemset, "sync_memset"});

const char* SyncCategoryName(SyncCategory c) { return CNameOf(kSyncCategoryNames, c); }

namespace {

// CPU rows by start, the longer first at equal starts (a parent before its children).
bool StartsFirst(const CpuOpTable& cpu, uint32_t a, uint32_t b) {
  if (cpu.start_ns[a] != cpu.start_ns[b]) return cpu.start_ns[a] < cpu.start_ns[b];
  const int64_t ea = cpu.start_ns[a] + cpu.dur_ns[a], eb = cpu.start_ns[b] + cpu.dur_ns[b];
  if (ea != eb) return ea > eb;
  return a < b;
}

// The first GPU activity of each runtime call, and the cuda_sync records counted by kind.
std::vector<int32_t> CountGpuSyncs(const Trace& t, SyncStats& out) {
  std::vector<int32_t> gpu_of_call(t.runtime.size(), -1);
  std::map<SyncKind, GpuSyncStats> gpu_syncs;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    const int32_t c = t.gpu.launch[i];
    if (c >= 0 && gpu_of_call[static_cast<size_t>(c)] < 0 && t.gpu.kind[i] != GpuKind::kSync) {
      gpu_of_call[static_cast<size_t>(c)] = static_cast<int32_t>(i);
    }
    if (t.gpu.kind[i] == GpuKind::kSync) {
      GpuSyncStats& s = gpu_syncs[t.gpu.sync_kind[i]];
      s.kind = t.gpu.sync_kind[i];
      ++s.count;
      s.total_ns += t.gpu.dur_ns[i];
      ++out.gpu_sync_events;
    }
  }
  for (auto& [kind, s] : gpu_syncs) out.gpu_syncs.push_back(s);
  return gpu_of_call;
}

// Sync calls: API statistics, each call's category, and the host-blocking calls per thread.
std::map<ThreadKey, std::vector<uint32_t>> CountSyncCalls(const Trace& t,
                                                          const std::vector<int32_t>& gpu_of_call,
                                                          SyncStats& out,
                                                          std::vector<SyncCategory>* category_of) {
  std::map<ThreadKey, std::vector<uint32_t>> blocking_by_thread;
  std::map<std::pair<StringId, SyncCategory>, SyncApiStats> apis;
  for (size_t c = 0; c < t.runtime.size(); ++c) {
    const std::optional<SyncCategory> cat = SyncCategoryOfCall(t, c, gpu_of_call[c]);
    if (!cat) continue;
    (*category_of)[c] = *cat;
    SyncApiStats& a = apis[{t.runtime.name[c], *cat}];
    a.name = t.runtime.name[c];
    a.category = *cat;
    ++a.calls;
    a.total_ns += t.runtime.dur_ns[c];
    a.max_ns = std::max(a.max_ns, t.runtime.dur_ns[c]);
    if (SyncCategoryBlocksHost(*cat)) {
      blocking_by_thread[{t.runtime.pid[c], t.runtime.tid[c]}].push_back(static_cast<uint32_t>(c));
      ++out.blocking_calls;
    }
  }
  for (auto& [key, a] : apis) out.apis.push_back(a);
  std::sort(out.apis.begin(), out.apis.end(), [&](const SyncApiStats& a, const SyncApiStats& b) {
    if (a.calls != b.calls) return a.calls > b.calls;
    return t.Str(a.name) < t.Str(b.name);
  });
  return blocking_by_thread;
}

// GPU idle after each point: the all-streams idle gap containing its end.
void AddGpuIdleAfterPoints(const Trace& t, SyncStats& out) {
  if (!out.points.empty()) {
    IntervalUnion gpu_busy;
    for (size_t g = 0; g < t.gpu.size(); ++g) {
      if (t.gpu.kind[g] == GpuKind::kSync) continue;
      gpu_busy.Add(t.gpu.start_ns[g], t.gpu.start_ns[g] + t.gpu.dur_ns[g]);
    }
    const std::vector<Interval> busy = gpu_busy.Take();
    for (SyncPoint& sp : out.points) {
      auto next = std::upper_bound(busy.begin(), busy.end(), sp.end_ns,
                                   [](int64_t ts, const Interval& iv) { return ts < iv.start; });
      if (next == busy.begin() || next == busy.end()) continue;  // no GPU op before / after
      const Interval& prev = *(next - 1);
      if (sp.end_ns < prev.end) continue;  // GPU busy at the point's end
      sp.gpu_idle_after_sync_ns = next->start - prev.end;
      out.gpu_idle_after_sync_ns += sp.gpu_idle_after_sync_ns;
    }
  }
}

// Each point to the step (of the ProfilerStep rows `steps`) that holds its start, or outside
// every step, and the causes by blocked time.
void AssignStepsAndCauses(const Trace& t, std::vector<uint32_t> steps, SyncStats& out) {
  const CpuOpTable& cpu = t.cpu;
  std::sort(steps.begin(), steps.end(),
            [&](uint32_t a, uint32_t b) { return StartsFirst(cpu, a, b); });
  for (uint32_t r : steps) {
    StepSyncStats s;
    s.step = cpu.step[r];
    s.step_start_ns = cpu.start_ns[r];
    s.step_dur_ns = cpu.dur_ns[r];
    out.steps.push_back(s);
  }
  std::map<StringId, SyncCause> causes;
  for (SyncPoint& sp : out.points) {
    out.blocked_ns += sp.blocked_ns;
    // The latest-starting step that contains the point's start.
    auto it =
        std::upper_bound(out.steps.begin(), out.steps.end(), sp.start_ns,
                         [](int64_t ts, const StepSyncStats& s) { return ts < s.step_start_ns; });
    // Steps do not nest, so the latest one starting at or before the point is the only candidate.
    bool assigned = false;
    if (it != out.steps.begin()) {
      --it;
      if (sp.start_ns < it->step_start_ns + it->step_dur_ns) {
        sp.step = it->step;
        ++it->sync_points;
        it->blocked_ns += sp.blocked_ns;
        it->gpu_idle_after_sync_ns += sp.gpu_idle_after_sync_ns;
        assigned = true;
      }
    }
    if (!assigned) {
      ++out.points_outside_steps;
      out.blocked_ns_outside_steps += sp.blocked_ns;
    }
    SyncCause& c = causes[sp.cause];
    c.name = sp.cause;
    ++c.sync_points;
    c.blocked_ns += sp.blocked_ns;
  }
  for (auto& [name, c] : causes) out.causes.push_back(c);
  std::sort(out.causes.begin(), out.causes.end(), [&](const SyncCause& a, const SyncCause& b) {
    if (a.blocked_ns != b.blocked_ns) return a.blocked_ns > b.blocked_ns;
    if (a.sync_points != b.sync_points) return a.sync_points > b.sync_points;
    return t.Str(a.name) < t.Str(b.name);
  });
}

}  // namespace

SyncStats AnalyzeSyncPoints(const Trace& t) {
  SyncStats out;
  const CpuOpTable& cpu = t.cpu;

  const std::vector<int32_t> gpu_of_call = CountGpuSyncs(t, out);

  std::vector<SyncCategory> category_of(t.runtime.size(), SyncCategory::kDeviceSync);
  std::map<ThreadKey, std::vector<uint32_t>> blocking_by_thread =
      CountSyncCalls(t, gpu_of_call, out, &category_of);

  // Enclosing-op candidates per thread: cpu_op and user_annotation events other than ProfilerStep.
  std::vector<int8_t> plumbing(t.strings.size(), -1), scalar(t.strings.size(), -1);
  auto is_plumbing = [&](uint32_t r) {
    const StringId n = cpu.name[r];
    if (plumbing[n] < 0) plumbing[n] = IsPlumbing(t.Str(n)) ? 1 : 0;
    return plumbing[n] == 1;
  };
  auto is_scalar = [&](uint32_t r) {
    const StringId n = cpu.name[r];
    if (scalar[n] < 0) scalar[n] = IsScalarRead(t.Str(n)) ? 1 : 0;
    return scalar[n] == 1;
  };
  ThreadLists<uint32_t> op_lists;
  std::vector<uint32_t> steps;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const uint32_t r = static_cast<uint32_t>(i);
    if (cpu.step[i] >= 0) {
      steps.push_back(r);
      continue;
    }
    if (cpu.kind[i] != CpuKind::kCpuOp && cpu.kind[i] != CpuKind::kUserAnnotation) continue;
    if (is_scalar(r)) {
      if (t.Str(cpu.name[i]) == "aten::item")
        ++out.scalar_reads.item_ops;
      else
        ++out.scalar_reads.local_scalar_dense_ops;
    }
    op_lists.Of(cpu.pid[i], cpu.tid[i]).push_back(r);
  }
  std::map<ThreadKey, std::vector<uint32_t>>& ops_by_thread = op_lists.lists();
  auto by_start_then_longer = [&](uint32_t a, uint32_t b) { return StartsFirst(cpu, a, b); };

  // Outermost scalar reads (not inside another scalar read on their thread). A thread's ops are
  // written in this order (parents first), or in a few ordered runs: SortRuns (the order is total,
  // so any sort gives this result).
  for (auto& [key, ops] : ops_by_thread) {
    SortRuns(ops.begin(), ops.end(), by_start_then_longer);
    int64_t outer_end = INT64_MIN;
    for (uint32_t r : ops) {
      if (!is_scalar(r)) continue;
      const int64_t end = cpu.start_ns[r] + cpu.dur_ns[r];
      if (cpu.start_ns[r] >= outer_end || end > outer_end) {
        out.scalar_reads.total_ns += cpu.dur_ns[r];
        outer_end = end;
      }
    }
  }

  // Group the blocking calls into sync points.
  std::unordered_map<uint32_t, size_t> point_of_anchor;     // anchor cpu row → point
  std::unordered_map<uint32_t, int64_t> blocked_in_scalar;  // outermost scalar op → blocked ns
  std::vector<int64_t> longest_call;                        // per point
  std::vector<uint32_t> chain;
  static const std::vector<uint32_t> kNoOps;
  for (auto& [key, calls] : blocking_by_thread) {
    const auto by_start = [&](uint32_t a, uint32_t b) {
      return t.runtime.start_ns[a] != t.runtime.start_ns[b]
                 ? t.runtime.start_ns[a] < t.runtime.start_ns[b]
                 : a < b;
    };
    SortRuns(calls.begin(), calls.end(), by_start);
    auto ops_it = ops_by_thread.find(key);
    ChainFinder finder(cpu, ops_it == ops_by_thread.end() ? kNoOps : ops_it->second);
    for (uint32_t c : calls) {
      const int64_t start = t.runtime.start_ns[c], dur = t.runtime.dur_ns[c];
      finder.Chain(start, start + dur, &chain);
      // Anchor: the outermost of the plumbing ops around the call (none: the call itself);
      // cause: the first op outside the plumbing.
      int32_t anchor = -1, cause = -1;
      if (!chain.empty()) {
        size_t j = 0;
        if (is_plumbing(chain[0])) {
          while (j + 1 < chain.size() && is_plumbing(chain[j + 1])) ++j;
          anchor = static_cast<int32_t>(chain[j]);
          cause = j + 1 < chain.size() ? static_cast<int32_t>(chain[j + 1]) : anchor;
          // The outermost scalar read inside the plumbing run carries the blocked time.
          for (size_t m = j + 1; m-- > 0;) {
            if (is_scalar(chain[m])) {
              blocked_in_scalar[chain[m]] += dur;
              break;
            }
          }
        } else {
          cause = static_cast<int32_t>(chain[0]);
        }
      }
      size_t p;
      auto found =
          anchor >= 0 ? point_of_anchor.find(static_cast<uint32_t>(anchor)) : point_of_anchor.end();
      if (found != point_of_anchor.end()) {
        p = found->second;
      } else {
        p = out.points.size();
        SyncPoint sp;
        sp.start_ns = start;
        sp.end_ns = start + dur;
        sp.first_call = static_cast<int32_t>(c);
        sp.anchor_op = anchor;
        sp.cause_op = cause;
        sp.cause = cause >= 0 ? cpu.name[static_cast<size_t>(cause)] : t.runtime.name[c];
        sp.pid = key.first;
        sp.tid = key.second;
        out.points.push_back(sp);
        longest_call.push_back(-1);
        if (anchor >= 0) point_of_anchor.emplace(static_cast<uint32_t>(anchor), p);
      }
      SyncPoint& sp = out.points[p];
      sp.end_ns = std::max(sp.end_ns, start + dur);
      sp.blocked_ns += dur;
      ++sp.calls;
      if (dur > longest_call[p]) {
        longest_call[p] = dur;
        sp.category = category_of[c];
      }
    }
  }
  for (auto& [row, ns] : blocked_in_scalar) {
    ++out.scalar_reads.blocking;
    out.scalar_reads.blocked_ns += ns;
  }
  std::sort(out.points.begin(), out.points.end(), [](const SyncPoint& a, const SyncPoint& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.first_call < b.first_call;
  });

  AddGpuIdleAfterPoints(t, out);

  AssignStepsAndCauses(t, std::move(steps), out);
  return out;
}

}  // namespace gpuscope::analyze
