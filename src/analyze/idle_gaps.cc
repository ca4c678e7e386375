#include "analyze/idle_gaps.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "analyze/host_work.h"
#include "analyze/intervals.h"
#include "analyze/thread_lists.h"
#include "base/enum_names.h"
#include "base/sort.h"

namespace gpuscope::analyze {

constexpr EnumNames<IdleClaim, 4> kIdleClaimNames(
    {IdleClaim::kHost, "host"}, {IdleClaim::kSync, "sync"}, {IdleClaim::kDataLoader, "dataloader"},
    {IdleClaim::kCompileAllocator, "compile_allocator"});

const char* IdleClaimName(IdleClaim c) { return CNameOf(kIdleClaimNames, c); }

namespace {

struct HostOp {
  int64_t start;
  int64_t end;
  StringId name;
};

// Per thread, the outermost cpu_op / user_annotation events (ProfilerStep excluded), by start.
// Outermost ops on one thread are disjoint, so their ends are sorted too.
// Runtime calls made outside every op (cudaDeviceSynchronize called from Python) count too.
// Only ops that overlap one of `gaps` (sorted, disjoint) are kept: they are the only ones a gap can
// name, and an op containing a kept op overlaps the gap too, so which ops are outermost does not
// change. Only `threads` are read: the threads some gap is reported for (the lists are per thread,
// so leaving the others out changes nothing). Filtering first keeps the sort to the ops a gap can
// name instead of every op in the trace.
std::map<ThreadKey, std::vector<HostOp>> OutermostOps(const CpuOpTable& cpu,
                                                      const RuntimeCallTable& runtime,
                                                      const std::vector<Interval>& gaps,
                                                      const std::set<ThreadKey>& threads) {
  // The first gap ending after `start`; the op overlaps it if that gap starts before `end`. Tables
  // are in start order almost everywhere, so the gap is found by moving a cursor forward (a binary
  // search per event of the trace took most of this function); a start earlier than the last one
  // searches again.
  size_t cursor = 0;
  int64_t last_start = INT64_MIN;
  auto overlaps_gap = [&](int64_t start, int64_t end) {
    if (start < last_start) {
      cursor = static_cast<size_t>(
          std::upper_bound(gaps.begin(), gaps.end(), start,
                           [](int64_t v, const Interval& iv) { return v < iv.end; }) -
          gaps.begin());
    }
    last_start = start;
    while (cursor < gaps.size() && gaps[cursor].end <= start) ++cursor;
    return cursor < gaps.size() && gaps[cursor].start < end;
  };
  // Ops and runtime calls in separate lists: each is in table order, nearly ordered by start, so
  // each sorts in about one pass (SortRuns), and the two are merged as they are filtered.
  ThreadLists<HostOp> ops_by_thread;
  ThreadLists<HostOp> calls_by_thread;
  if (gaps.empty()) return {};
  // Whether a row's thread is one of `threads`, looked up once per run of one thread's rows.
  ThreadKey last{0, 0};
  bool last_wanted = threads.count(last) > 0;
  const auto wanted = [&](TraceId pid, TraceId tid) {
    const ThreadKey key{pid, tid};
    if (key != last) last = key, last_wanted = threads.count(key) > 0;
    return last_wanted;
  };
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (cpu.step[i] >= 0) continue;
    if (cpu.kind[i] != CpuKind::kCpuOp && cpu.kind[i] != CpuKind::kUserAnnotation) continue;
    if (!wanted(cpu.pid[i], cpu.tid[i])) continue;
    const int64_t end = cpu.start_ns[i] + cpu.dur_ns[i];
    if (!overlaps_gap(cpu.start_ns[i], end)) continue;
    ops_by_thread.Of(cpu.pid[i], cpu.tid[i]).push_back({cpu.start_ns[i], end, cpu.name[i]});
  }
  for (size_t i = 0; i < runtime.size(); ++i) {
    if (!wanted(runtime.pid[i], runtime.tid[i])) continue;
    const int64_t end = runtime.start_ns[i] + runtime.dur_ns[i];
    if (!overlaps_gap(runtime.start_ns[i], end)) continue;
    calls_by_thread.Of(runtime.pid[i], runtime.tid[i])
        .push_back({runtime.start_ns[i], end, runtime.name[i]});
  }
  // By start, the longer first; ties in list order (ops before calls, each in table order), so
  // which of two identical spans is outermost does not depend on a sort's internals.
  const auto before = [](const HostOp& a, const HostOp& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  };
  std::map<ThreadKey, std::vector<HostOp>>& ops = ops_by_thread.lists();
  std::map<ThreadKey, std::vector<HostOp>>& calls = calls_by_thread.lists();
  for (auto& [key, list] : calls) ops[key];  // every thread with either
  std::map<ThreadKey, std::vector<HostOp>> all;
  for (auto& [key, a] : ops) {
    std::vector<HostOp> none;
    auto c = calls.find(key);
    std::vector<HostOp>& b = c != calls.end() ? c->second : none;
    SortRuns(a.begin(), a.end(), before);
    SortRuns(b.begin(), b.end(), before);
    // The stable merge of the two sorted lists (a call after an op with the same span), filtered
    // as it goes: an op is outermost if it starts at or after the last outermost one's end.
    std::vector<HostOp> outer;
    int64_t cur_end = INT64_MIN;
    const auto offer = [&](const HostOp& op) {
      if (op.start >= cur_end) {
        outer.push_back(op);
        cur_end = op.end;
      }
    };
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) offer(before(b[j], a[i]) ? b[j++] : a[i++]);
    for (; i < a.size(); ++i) offer(a[i]);
    for (; j < b.size(); ++j) offer(b[j]);
    all.emplace(key, std::move(outer));
  }
  return all;
}

// The main launching thread: most linked launches.
ThreadKey MainLaunchingThread(const Trace& trace) {
  std::map<ThreadKey, uint64_t> launches_per_thread;
  {
    // The thread's count is looked up once per run of its rows (a map lookup per launch took a
    // third of this analysis on a real trace); a std::map entry stays where it is.
    ThreadKey last{0, 0};
    uint64_t* count = nullptr;
    for (size_t i = 0; i < trace.runtime.size(); ++i) {
      const RuntimeKind k = trace.runtime.kind[i];
      if (k == RuntimeKind::kKernelLaunch || k == RuntimeKind::kGraphLaunch ||
          k == RuntimeKind::kMemcpy || k == RuntimeKind::kMemset) {
        const ThreadKey key{trace.runtime.pid[i], trace.runtime.tid[i]};
        if (count == nullptr || key != last) count = &launches_per_thread[key], last = key;
        ++*count;
      }
    }
  }
  ThreadKey main_thread{0, 0};
  uint64_t most = 0;
  for (const auto& [key, n] : launches_per_thread) {
    if (n > most) most = n, main_thread = key;
  }
  return main_thread;
}

// For each long gap, the thread whose work ends it: the one that launched the GPU op ending the
// gap, else the main launching thread.
std::vector<ThreadKey> GapThreads(const Trace& trace, const std::vector<Interval>& long_idle,
                                  ThreadKey main_thread) {
  const GpuActivityTable& g = trace.gpu;
  const auto is_op = [&g](size_t i) { return g.kind[i] != GpuKind::kSync && g.dur_ns[i] > 0; };
  // Per long gap, the GPU op that ends it: the first by (start, row) starting at or after the
  // gap's end. Each op is offered to the last long gap ending at or before its start (the gaps are
  // disjoint and sorted), which keeps the least: one pass, memory per gap, not per op.
  std::vector<std::pair<int64_t, uint32_t>> op_after(long_idle.size(), {INT64_MAX, UINT32_MAX});
  if (!long_idle.empty()) {
    for (size_t i = 0; i < g.size(); ++i) {
      if (!is_op(i)) continue;
      const int64_t start = g.start_ns[i];
      auto after = std::upper_bound(long_idle.begin(), long_idle.end(), start,
                                    [](int64_t v, const Interval& iv) { return v < iv.end; });
      if (after == long_idle.begin()) continue;
      std::pair<int64_t, uint32_t>& best =
          op_after[static_cast<size_t>(after - long_idle.begin()) - 1];
      best = std::min(best, std::make_pair(start, static_cast<uint32_t>(i)));
    }
  }
  // What the launching thread did in a long gap: the thread that launched the op ending it, else
  // the main launching thread. Only those threads' ops are collected.
  std::vector<ThreadKey> gap_thread(long_idle.size(), main_thread);
  for (size_t k = 0; k < long_idle.size(); ++k) {
    const uint32_t next = op_after[k].second;
    if (next == UINT32_MAX) continue;
    const int32_t launch = g.launch[next];
    if (launch >= 0) {
      gap_thread[k] = {trace.runtime.pid[static_cast<size_t>(launch)],
                       trace.runtime.tid[static_cast<size_t>(launch)]};
    }
  }
  return gap_thread;
}

// The analysed range: the steps' span (else the busy span), within the busy span.
Interval AnalysedRange(const StepsResult& steps, const std::vector<Interval>& busy) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const StepBreakdown& s : steps.steps) {
    lo = std::min(lo, s.start_ns);
    hi = std::max(hi, s.end_ns);
  }
  if (lo >= hi) lo = busy.front().start, hi = busy.back().end;
  // Only gaps between two GPU ops: before the first one the CPU is still ahead of any work, after
  // the last one the profiler may be stopping (80 ms of "other" closes the last step of a
  // ResNet-50 sample), and neither is a gap Nsight or HTA would count.
  lo = std::max(lo, busy.front().start);
  hi = std::min(hi, busy.back().end);
  // Steps that lie wholly before or after every GPU op leave nothing to analyse: an empty range,
  // not a negative one (found by the fuzz target's invariant checks).
  return {lo, std::max(hi, lo)};
}

// The outermost host ops of `thread` overlapping the gap `iv`, ns of overlap by name; the three
// largest into *top.
std::map<StringId, int64_t> HostOverlap(const std::map<ThreadKey, std::vector<HostOp>>& outer,
                                        ThreadKey thread, const Interval& iv,
                                        std::vector<std::pair<StringId, int64_t>>* top) {
  std::map<StringId, int64_t> overlap;
  if (auto t = outer.find(thread); t != outer.end()) {
    const std::vector<HostOp>& v = t->second;
    auto op = std::upper_bound(v.begin(), v.end(), iv.start,
                               [](int64_t s, const HostOp& o) { return s < o.end; });
    for (; op != v.end() && op->start < iv.end; ++op) {
      overlap[op->name] += std::min(op->end, iv.end) - std::max(op->start, iv.start);
    }
  }
  for (const auto& [name, ns] : overlap) top->emplace_back(name, ns);
  std::sort(top->begin(), top->end(),
            [](const auto& x, const auto& y) { return x.second > y.second; });
  if (top->size() > 3) top->resize(3);
  return overlap;
}

std::vector<Interval> DataLoaderSpans(const Trace& trace) {
  std::vector<Interval> dl;
  for (size_t i = 0; i < trace.cpu.size(); ++i) {
    if (trace.cpu.is_dataloader[i]) {
      dl.push_back({trace.cpu.start_ns[i], trace.cpu.start_ns[i] + trace.cpu.dur_ns[i]});
    }
  }
  return Merge(std::move(dl));
}

// Compile spans and the driver's memory calls (host_work.h), as a merged set.
std::vector<Interval> HostWorkSpans(const Trace& trace) {
  std::vector<Interval> hw;
  for (const auto& [a, b] : CompileAndAllocatorSpans(trace)) hw.push_back({a, b});
  return hw;
}

std::vector<Interval> Union(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> both = a;
  both.insert(both.end(), b.begin(), b.end());
  return Merge(std::move(both));
}

// Nsight's gpu_gaps: the gaps between the first and the last GPU op.
void NsightGaps(const std::vector<Interval>& busy, IdleGapStats& out) {
  for (size_t i = 1; i < busy.size(); ++i) {
    const int64_t len = busy[i].start - busy[i - 1].end;
    out.nsight_longest_gap_ns = std::max(out.nsight_longest_gap_ns, len);
    if (len > kNsightGpuGapNs) ++out.nsight_gaps;
  }
}

// The steady steps as a merged set; every step gets its row in out.steps.
std::vector<Interval> SteadySteps(const StepsResult& steps, IdleGapStats& out) {
  std::vector<Interval> steady;
  for (const StepBreakdown& s : steps.steps) {
    if (s.steady_state) steady.push_back({s.start_ns, s.end_ns});
    out.steady_steps += s.steady_state;
    StepIdleGaps si;
    si.step = s.step;
    si.steady = s.steady_state;
    out.steps.push_back(si);
  }
  return Merge(std::move(steady));
}

void SyncSpans(const SyncStats& sync, std::vector<int64_t>* sync_ends,
               std::vector<Interval>* blocked) {
  for (const SyncPoint& p : sync.points) {
    sync_ends->push_back(p.end_ns);
    blocked->push_back({p.start_ns, p.end_ns});
  }
  std::sort(sync_ends->begin(), sync_ends->end());
  *blocked = Merge(std::move(*blocked));
}

// The unexplained long-gap time per steady step, the longest gaps and the host ops in them.
void Summarize(const std::vector<Interval>& unexplained, const std::vector<Interval>& claimed,
               const std::vector<Interval>& steady, std::vector<IdleGap> long_gaps,
               const std::unordered_map<StringId, IdleHostOp>& host_ops, IdleGapStats& out) {
  if (out.steady_steps > 0) {
    const std::vector<Interval> mine = Intersect(Subtract(unexplained, claimed), steady);
    out.unexplained_ns_per_steady_step = TotalLength(mine) / static_cast<int64_t>(out.steady_steps);
    for (const Interval& iv : mine) out.unexplained_spans.emplace_back(iv.start, iv.end);
  }

  std::stable_sort(long_gaps.begin(), long_gaps.end(),
                   [](const IdleGap& a, const IdleGap& b) { return a.length() > b.length(); });
  if (long_gaps.size() > kTopIdleGaps) long_gaps.resize(kTopIdleGaps);
  out.longest = std::move(long_gaps);
  for (const auto& [name, h] : host_ops) out.host_ops.push_back(h);
  std::sort(out.host_ops.begin(), out.host_ops.end(), [](const IdleHostOp& a, const IdleHostOp& b) {
    return a.overlap_ns != b.overlap_ns ? a.overlap_ns > b.overlap_ns : a.name < b.name;
  });
  if (out.host_ops.size() > kTopIdleHostOps) out.host_ops.resize(kTopIdleHostOps);
}

}  // namespace

IdleGapStats AnalyzeIdleGaps(const Trace& trace, const StepsResult& steps, const SyncStats& sync) {
  IdleGapStats out;
  const GpuActivityTable& g = trace.gpu;

  // Busy union.
  const auto is_op = [&g](size_t i) { return g.kind[i] != GpuKind::kSync && g.dur_ns[i] > 0; };
  IntervalUnion gpu_busy;
  for (size_t i = 0; i < g.size(); ++i) {
    if (is_op(i)) gpu_busy.Add(g.start_ns[i], g.start_ns[i] + g.dur_ns[i]);
  }
  const std::vector<Interval> busy = gpu_busy.Take();
  if (busy.empty()) return out;

  NsightGaps(busy, out);

  const Interval range = AnalysedRange(steps, busy);
  const int64_t lo = range.start, hi = range.end;  // named: lambdas below capture them
  out.range_start_ns = lo;
  out.range_end_ns = hi;
  // The idle time [lo, hi) − busy: since lo and hi lie within the busy span, its gaps are those
  // between consecutive busy intervals, clipped to [lo, hi) — walked in place, not stored (one
  // interval per GPU gap: as many as there are busy intervals).
  // Only the parts inside a profiling window: between two windows (step numbers that repeat)
  // the GPU idles in no step, and that time is no gap of the steps (it read as "972 ms in step
  // 2"). Within a window, gaps run across step boundaries as they always did.
  std::vector<Interval> in_steps;
  for (const auto& [a, b] : steps.window_spans) in_steps.push_back({a, b});
  in_steps = Merge(std::move(in_steps));
  const auto for_each_idle = [&](auto&& f) {
    size_t w = 0;
    for (size_t i = 1; i < busy.size(); ++i) {
      const Interval iv{std::max(busy[i - 1].end, lo), std::min(busy[i].start, hi)};
      if (iv.start >= iv.end) continue;
      if (in_steps.empty()) {
        f(iv);
        continue;
      }
      while (w < in_steps.size() && in_steps[w].end <= iv.start) ++w;
      for (size_t k = w; k < in_steps.size() && in_steps[k].start < iv.end; ++k) {
        const Interval part{std::max(iv.start, in_steps[k].start),
                            std::min(iv.end, in_steps[k].end)};
        if (part.start < part.end) f(part);
      }
    }
  };

  // DataLoader ops (any thread), compile and allocator spans (any thread), the time either
  // covers (other findings count it) and the steady steps, as merged sets.
  const std::vector<Interval> dl = DataLoaderSpans(trace);
  const std::vector<Interval> hw = HostWorkSpans(trace);
  const std::vector<Interval> claimed = Union(dl, hw);
  const std::vector<Interval> steady = SteadySteps(steps, out);
  // Steps are in time order and do not overlap: the last one starting at or before t.
  auto step_of = [&](int64_t t) -> int {
    auto s = std::upper_bound(steps.steps.begin(), steps.steps.end(), t,
                              [](int64_t v, const StepBreakdown& b) { return v < b.start_ns; });
    if (s == steps.steps.begin()) return -1;
    --s;
    return t < s->end_ns ? static_cast<int>(s - steps.steps.begin()) : -1;
  };

  // Sync point ends, sorted, to test "a sync ends inside this gap", and the host's blocked time
  // (a sync point's first call start → last call end).
  std::vector<int64_t> sync_ends;
  std::vector<Interval> blocked;
  SyncSpans(sync, &sync_ends, &blocked);

  const ThreadKey main_thread = MainLaunchingThread(trace);
  std::vector<Interval> long_idle;
  for_each_idle([&](const Interval& iv) {
    if (iv.end - iv.start >= kLongIdleGapNs) long_idle.push_back(iv);
  });
  const std::vector<ThreadKey> gap_thread = GapThreads(trace, long_idle, main_thread);
  const std::map<ThreadKey, std::vector<HostOp>> outer =
      OutermostOps(trace.cpu, trace.runtime, long_idle,
                   std::set<ThreadKey>(gap_thread.begin(), gap_thread.end()));
  size_t long_index = 0;  // the long gap's index in long_idle (the loop below meets them in order)

  std::vector<Interval> unexplained;  // long, not-after-sync gaps (before removing `claimed`)
  std::unordered_map<StringId, IdleHostOp> host_ops;
  std::vector<IdleGap> long_gaps;
  for_each_idle([&](const Interval& iv) {
    const int64_t len = iv.end - iv.start;
    ++out.gaps;
    out.idle_ns += len;
    size_t b = 0;
    while (b < kIdleGapBucketBoundsNs.size() && len >= kIdleGapBucketBoundsNs[b]) ++b;
    ++out.histogram_count[b];
    out.histogram_ns[b] += len;
    const int k = step_of(iv.start);
    if (k >= 0) out.steps[static_cast<size_t>(k)].idle_ns += len;
    if (len < kLongIdleGapNs) return;

    IdleGap gap;
    gap.start_ns = iv.start;
    gap.end_ns = iv.end;
    if (k >= 0) {
      gap.step = steps.steps[static_cast<size_t>(k)].step;
      gap.steady = steps.steps[static_cast<size_t>(k)].steady_state;
    }
    auto it = std::lower_bound(sync_ends.begin(), sync_ends.end(), iv.start);
    gap.after_sync = (it != sync_ends.end() && *it <= iv.end) ||
                     2 * LengthWithin(blocked, iv.start, iv.end) >= len;
    gap.dataloader_ns = LengthWithin(dl, iv.start, iv.end);
    gap.compile_allocator_ns = LengthWithin(hw, iv.start, iv.end);
    if (gap.after_sync) {
      gap.claim = IdleClaim::kSync;
    } else {
      gap.unexplained_ns = len - LengthWithin(claimed, iv.start, iv.end);
      gap.claim = 2 * gap.dataloader_ns >= len          ? IdleClaim::kDataLoader
                  : 2 * gap.compile_allocator_ns >= len ? IdleClaim::kCompileAllocator
                                                        : IdleClaim::kHost;
      unexplained.push_back(iv);
    }

    // What the launching thread did: outermost ops overlapping the gap, by overlap.
    const std::map<StringId, int64_t> overlap =
        HostOverlap(outer, gap_thread[long_index++], iv, &gap.host_ops);

    ++out.long_gaps;
    out.long_gap_ns += len;
    if (gap.after_sync) {
      ++out.long_gaps_after_sync;
      out.long_gap_after_sync_ns += len;
    } else {
      out.long_gap_dataloader_ns += gap.dataloader_ns;
      out.long_gap_compile_allocator_ns += gap.compile_allocator_ns;
      out.unexplained_ns += gap.unexplained_ns;
      if (gap.claim == IdleClaim::kDataLoader) ++out.long_gaps_dataloader;
      if (gap.claim == IdleClaim::kHost) {
        out.longest_unexplained_ns = std::max(out.longest_unexplained_ns, len);
        for (const auto& [name, ns] : overlap) {
          IdleHostOp& h = host_ops[name];
          h.name = name;
          ++h.gaps;
          h.overlap_ns += ns;
        }
      }
      if (k >= 0) out.steps[static_cast<size_t>(k)].unexplained_ns += gap.unexplained_ns;
    }
    if (k >= 0) ++out.steps[static_cast<size_t>(k)].long_gaps;
    long_gaps.push_back(std::move(gap));
  });

  Summarize(unexplained, claimed, steady, std::move(long_gaps), host_ops, out);
  return out;
}

}  // namespace gpuscope::analyze
