#include "analyze/step_timeline.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

namespace gpuscope::analyze {

const char* TimelineKindName(TimelineKind k) {
  static constexpr const char* kNames[] = {"host_op", "dataloader", "launch",
                                           "sync",    "compute",    "communication",
                                           "memory",  "copy",       "gpu_idle"};
  static_assert(std::size(kNames) == kTimelineKindCount);
  const auto i = static_cast<size_t>(k);
  return i < kTimelineKindCount ? kNames[i] : "?";
}

namespace {

// The step drawn: the steady step of median duration, else the longest complete step, else the
// first one. nullptr when the trace has none.
const StepBreakdown* StepToDraw(const StepsResult& steps) {
  std::vector<const StepBreakdown*> steady, complete;
  for (const StepBreakdown& s : steps.steps) {
    if (s.end_ns <= s.start_ns) continue;
    if (!s.incomplete) complete.push_back(&s);
    if (s.steady_state && !s.incomplete) steady.push_back(&s);
  }
  auto by_duration = [](const StepBreakdown* a, const StepBreakdown* b) {
    return a->duration_ns < b->duration_ns;
  };
  if (!steady.empty()) {
    std::stable_sort(steady.begin(), steady.end(), by_duration);
    return steady[(steady.size() - 1) / 2];
  }
  if (!complete.empty()) return *std::max_element(complete.begin(), complete.end(), by_duration);
  for (const StepBreakdown& s : steps.steps)
    if (s.end_ns > s.start_ns) return &s;
  return nullptr;
}

// One event for a lane, in trace time, before clipping and merging.
struct Event {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  TimelineKind kind = TimelineKind::kHostOp;
  StringId name = kEmptyString;
};

// A lane's events (sorted here) clipped to [w0, w1) and drawn relative to w0: a span shorter than
// `res` joins the previous span of its kind when the gap between them is under `res`; the merged
// span keeps the name of its longest event.
void AddLane(std::vector<Event> events, uint32_t lane, int64_t w0, int64_t w1, int64_t res,
             std::vector<TimelineSpan>* out) {
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  const size_t first = out->size();
  int64_t longest = 0;  // of the last span's events
  for (const Event& e : events) {
    const int64_t a = std::max(e.start_ns, w0) - w0, b = std::min(e.end_ns, w1) - w0;
    if (b <= a) continue;
    if (out->size() > first) {
      TimelineSpan& last = out->back();
      const bool short_one = b - a < res || last.end_ns - last.start_ns < res;
      if (last.kind == e.kind && short_one && a - last.end_ns < res) {
        last.end_ns = std::max(last.end_ns, b);
        ++last.merged;
        if (b - a > longest) {
          longest = b - a;
          last.name = e.name;
        }
        continue;
      }
    }
    out->push_back({lane, e.kind, a, b, e.name, 1});
    longest = b - a;
  }
}

bool Overlaps(int64_t start, int64_t dur, int64_t w0, int64_t w1) {
  return start < w1 && start + std::max<int64_t>(dur, 0) > w0;
}

// The CPU lanes: per thread, its outermost ops (the ProfilerStep range itself left out), and its
// CUDA runtime calls on a lane of their own; the threads with the most time in the step first.
void AddCpuLanes(const Trace& t, int64_t w0, int64_t w1, int64_t res, StepTimeline* tl) {
  struct Thread {
    std::vector<Event> ops, runtime;
    int64_t busy_ns = 0;
  };
  std::map<std::pair<TraceId, TraceId>, Thread> threads;
  const CpuOpTable& cpu = t.cpu;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (!Overlaps(cpu.start_ns[i], cpu.dur_ns[i], w0, w1)) continue;
    if (cpu.kind[i] == CpuKind::kGpuUserAnnotation || cpu.kind[i] == CpuKind::kProfilerRange ||
        cpu.step[i] >= 0)
      continue;
    Thread& th = threads[{cpu.pid[i], cpu.tid[i]}];
    th.ops.push_back({cpu.start_ns[i], cpu.start_ns[i] + std::max<int64_t>(cpu.dur_ns[i], 0),
                      cpu.is_dataloader[i] ? TimelineKind::kDataLoader : TimelineKind::kHostOp,
                      cpu.name[i]});
  }
  const RuntimeCallTable& rt = t.runtime;
  for (size_t i = 0; i < rt.size(); ++i) {
    if (!Overlaps(rt.start_ns[i], rt.dur_ns[i], w0, w1)) continue;
    Thread& th = threads[{rt.pid[i], rt.tid[i]}];
    th.runtime.push_back(
        {rt.start_ns[i], rt.start_ns[i] + std::max<int64_t>(rt.dur_ns[i], 0),
         rt.kind[i] == RuntimeKind::kSync ? TimelineKind::kSync : TimelineKind::kLaunch,
         rt.name[i]});
  }
  // Outermost ops only: an op inside the previous outermost one is its child.
  for (auto& [id, th] : threads) {
    std::sort(th.ops.begin(), th.ops.end(), [](const Event& a, const Event& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    std::vector<Event> outer;
    int64_t end = INT64_MIN;
    for (const Event& e : th.ops)
      if (e.start_ns >= end) {
        outer.push_back(e);
        end = e.end_ns;
      }
    th.ops = std::move(outer);
    for (const std::vector<Event>* list : {&th.ops, &th.runtime})
      for (const Event& e : *list) th.busy_ns += std::min(e.end_ns, w1) - std::max(e.start_ns, w0);
  }
  std::vector<const std::pair<const std::pair<TraceId, TraceId>, Thread>*> order;
  for (const auto& entry : threads) order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->second.busy_ns > b->second.busy_ns;
  });
  if (order.size() > kTimelineMaxThreads) order.resize(kTimelineMaxThreads);
  for (const auto* entry : order) {
    const std::string thread = "CPU thread " + std::to_string(entry->first.second);
    if (!entry->second.ops.empty()) {
      AddLane(entry->second.ops, static_cast<uint32_t>(tl->lanes.size()), w0, w1, res, &tl->spans);
      tl->lanes.push_back(thread);
    }
    if (!entry->second.runtime.empty()) {
      AddLane(entry->second.runtime, static_cast<uint32_t>(tl->lanes.size()), w0, w1, res,
              &tl->spans);
      tl->lanes.push_back(thread + " · CUDA runtime");
    }
  }
}

TimelineKind GpuKindOf(const GpuActivityTable& g, const KernelClasses& classes, size_t i) {
  if (g.kind[i] == GpuKind::kMemcpy) return TimelineKind::kCopy;
  if (g.kind[i] == GpuKind::kMemset) return TimelineKind::kMemoryKernel;
  switch (i < classes.row.size() ? classes.row[i] : KernelClass::kCompute) {
    case KernelClass::kCommunication:
      return TimelineKind::kCommunication;
    case KernelClass::kMemory:
      return TimelineKind::kMemoryKernel;
    default:
      return TimelineKind::kCompute;
  }
}

// The GPU lanes: one per stream (the busiest first), then "GPU idle": the stretches of the step
// when no stream of any device ran anything.
void AddGpuLanes(const Trace& t, const KernelClasses& classes, int64_t w0, int64_t w1, int64_t res,
                 StepTimeline* tl) {
  const GpuActivityTable& g = t.gpu;
  std::map<std::pair<int32_t, int64_t>, std::vector<Event>> streams;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.kind[i] == GpuKind::kSync || !Overlaps(g.start_ns[i], g.dur_ns[i], w0, w1)) continue;
    const int64_t end = g.start_ns[i] + std::max<int64_t>(g.dur_ns[i], 0);
    streams[{g.device[i], g.stream[i]}].push_back(
        {g.start_ns[i], end, GpuKindOf(g, classes, i), g.name[i]});
    busy.emplace_back(std::max(g.start_ns[i], w0), std::min(end, w1));
  }
  std::vector<
      std::pair<int64_t, const std::pair<const std::pair<int32_t, int64_t>, std::vector<Event>>*>>
      order;
  for (const auto& entry : streams) {
    int64_t ns = 0;
    for (const Event& e : entry.second) ns += std::min(e.end_ns, w1) - std::max(e.start_ns, w0);
    order.emplace_back(ns, &entry);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (order.size() > kTimelineMaxStreams) order.resize(kTimelineMaxStreams);
  for (const auto& [ns, entry] : order) {
    AddLane(entry->second, static_cast<uint32_t>(tl->lanes.size()), w0, w1, res, &tl->spans);
    tl->lanes.push_back("GPU " + std::to_string(entry->first.first) + " stream " +
                        std::to_string(entry->first.second));
  }
  if (busy.empty()) return;
  std::sort(busy.begin(), busy.end());
  std::vector<Event> idle;
  int64_t cursor = w0;
  for (const auto& [a, b] : busy) {
    if (a - cursor >= res) idle.push_back({cursor, a, TimelineKind::kGpuIdle, kEmptyString});
    cursor = std::max(cursor, b);
  }
  if (w1 - cursor >= res) idle.push_back({cursor, w1, TimelineKind::kGpuIdle, kEmptyString});
  if (idle.empty()) return;
  AddLane(std::move(idle), static_cast<uint32_t>(tl->lanes.size()), w0, w1, res, &tl->spans);
  tl->lanes.push_back("GPU idle");
}

}  // namespace

StepTimeline BuildStepTimeline(const Trace& trace, const KernelClasses& classes,
                               const StepsResult& steps) {
  StepTimeline tl;
  const StepBreakdown* step = StepToDraw(steps);
  if (step == nullptr) return tl;
  tl.step = step->step;
  tl.step_name = step->name;
  tl.start_ns = step->start_ns;
  tl.end_ns = step->end_ns;
  // Coarser until the drawing fits kTimelineMaxSpans (each halving of the resolution at least
  // halves the spans of a lane of short events).
  for (int64_t res = std::max<int64_t>(1, (tl.end_ns - tl.start_ns) / kTimelineResolution);;
       res *= 2) {
    tl.lanes.clear();
    tl.spans.clear();
    AddCpuLanes(trace, tl.start_ns, tl.end_ns, res, &tl);
    AddGpuLanes(trace, classes, tl.start_ns, tl.end_ns, res, &tl);
    if (tl.spans.size() <= kTimelineMaxSpans || res > tl.end_ns - tl.start_ns) break;
  }
  return tl;
}

}  // namespace gpuscope::analyze
