#include "analyze/memory_snapshot.h"

#include "base/enum_names.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

namespace gpuscope::analyze {

namespace {

using snapshot::Action;

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// A path component of a frame's file, either separator ("torch/optim/adam.py", "…\optim\…").
bool InFolder(std::string_view file, std::string_view folder) {
  for (size_t at = file.find(folder); at != std::string_view::npos;
       at = file.find(folder, at + 1)) {
    const size_t end = at + folder.size();
    if (at > 0 && end < file.size() && (file[at - 1] == '/' || file[at - 1] == '\\') &&
        (file[end] == '/' || file[end] == '\\'))
      return true;
  }
  return false;
}

// "frame 'step' (adam.py): WHAT".
std::string Rule(const snapshot::Frame& f, std::string_view what) {
  const size_t slash = f.filename.find_last_of("/\\");
  std::string out = "frame '";
  out.append(f.name).append("' (");
  out.append(slash == std::string::npos ? std::string_view(f.filename)
                                        : std::string_view(f.filename).substr(slash + 1));
  out.append("): ").append(what);
  return out;
}

}  // namespace

constexpr EnumNames<MemoryCategory, 6> kMemoryCategoryNames(
    {MemoryCategory::kParameters, "parameters"}, {MemoryCategory::kGradients, "gradients"},
    {MemoryCategory::kOptimizerState, "optimizer_state"},
    {MemoryCategory::kActivations, "activations"}, {MemoryCategory::kWorkspace, "workspace"},
    {MemoryCategory::kUnknown, "unknown"});

const char* MemoryCategoryName(MemoryCategory c) { return CNameOf(kMemoryCategoryNames, c); }

StackClass ClassifyStack(const std::vector<snapshot::Frame>& stack) {
  // Rules in order; each looks at every frame (innermost first) before the next rule is tried.
  for (const auto& f : stack)
    if (f.name == "zero_grad") return {MemoryCategory::kGradients, Rule(f, "zero_grad")};
  for (const auto& f : stack)
    if (InFolder(f.filename, "optim") || Contains(f.name, "optimizer"))
      return {MemoryCategory::kOptimizerState, Rule(f, "optimizer (torch.optim)")};
  for (const auto& f : stack)
    if (f.name == "backward" || f.name == "_engine_run_backward" || f.name == "run_backward" ||
        f.name == "_make_grads")
      return {MemoryCategory::kGradients, Rule(f, "backward pass")};
  for (const auto& f : stack)
    if (f.name == "_apply" || f.name == "reset_parameters" || f.name == "load_state_dict" ||
        f.name == "_load_from_state_dict" || f.name == "to_empty" ||
        (f.name == "__init__" && (InFolder(f.filename, "modules") || InFolder(f.filename, "nn"))))
      return {MemoryCategory::kParameters, Rule(f, "module construction or .to()")};
  for (const auto& f : stack)
    if (Contains(f.name, "workspace")) return {MemoryCategory::kWorkspace, Rule(f, "workspace")};
  for (const auto& f : stack)
    if (f.name == "forward" || f.name == "_call_impl" || f.name == "_wrapped_call_impl")
      return {MemoryCategory::kActivations, Rule(f, "a module's forward")};
  return {MemoryCategory::kUnknown, "no rule matched"};
}

const snapshot::Frame* KvCacheFrame(const std::vector<snapshot::Frame>& stack) {
  for (const auto& f : stack) {
    const std::string_view file = f.filename;
    if (file.ends_with("cache_utils.py") && (file.size() == 14 || file[file.size() - 15] == '/'))
      return &f;
  }
  return nullptr;
}

namespace {

struct Live {
  int64_t size = 0;
  int32_t stack = snapshot::kNoStack;
  MemoryCategory category = MemoryCategory::kUnknown;
};

// The bytes live per allocation stack within one category, also ordered by bytes, so the stack
// holding the most is known after every event in O(log stacks).
class StackBytes {
 public:
  void Add(int32_t stack, int64_t bytes) {
    if (bytes == 0) return;
    int64_t& held = by_stack_[stack];
    if (held > 0) ordered_.erase({held, stack});
    held = std::max<int64_t>(0, held + bytes);
    if (held > 0) {
      ordered_.insert({held, stack});
    } else {
      by_stack_.erase(stack);
    }
  }
  // The stack holding the most (the lowest index on a tie), and its bytes; {kNoStack, 0}: none.
  std::pair<int32_t, int64_t> Top() const {
    if (ordered_.empty()) return {snapshot::kNoStack, 0};
    const int64_t most = ordered_.rbegin()->first;
    const auto first = ordered_.lower_bound({most, std::numeric_limits<int32_t>::min()});
    return {first->second, most};
  }

 private:
  std::unordered_map<int32_t, int64_t> by_stack_;
  std::set<std::pair<int64_t, int32_t>> ordered_;  // (bytes, stack)
};

// Which allocations the trace's frees end: free_completed, or free_requested in a trace without
// any free_completed (older recordings).
bool EndsAllocation(Action a, bool from_requested) {
  return from_requested ? a == Action::kFreeRequested : a == Action::kFreeCompleted;
}

// The segments of `device` as the snapshot left them: reserved, allocated, active, and the free
// blocks by size.
void SummarizeSegments(const snapshot::Snapshot& snap, int device, SnapshotDevice& d) {
  static constexpr int64_t kMiB = int64_t{1} << 20;
  d.free_buckets = {{"< 1 MiB", 0, 0, 0},
                    {"1–16 MiB", kMiB, 0, 0},
                    {"16–128 MiB", 16 * kMiB, 0, 0},
                    {"128 MiB–1 GiB", 128 * kMiB, 0, 0},
                    {"≥ 1 GiB", 1024 * kMiB, 0, 0}};
  for (const auto& s : snap.segments) {
    if (s.device != device) continue;
    ++d.segments;
    d.segments_reserved_bytes += s.total_size;
    d.segments_allocated_bytes += s.allocated_size;
    d.expandable_segments += s.is_expandable;
    for (const auto& b : s.blocks) {
      if (b.active_allocated || b.active_pending_free) {
        d.active_allocated_bytes += b.size;
        continue;
      }
      ++d.free_blocks;
      d.largest_free_block_bytes = std::max(d.largest_free_block_bytes, b.size);
      for (size_t k = d.free_buckets.size(); k-- > 0;)
        if (b.size >= d.free_buckets[k].min_bytes) {
          ++d.free_buckets[k].count;
          d.free_buckets[k].bytes += b.size;
          break;
        }
    }
  }
  d.free_in_segments_bytes =
      std::max<int64_t>(0, d.segments_reserved_bytes - d.segments_allocated_bytes);
}

// What is live at the peak, grouped by allocation stack (largest first), the bytes allocated
// before the trace as one group, and the categories' totals; KV-cache stacks counted apart.
void GroupLiveAtPeak(const snapshot::Snapshot& snap, const std::unordered_map<int64_t, Live>& live,
                     int64_t pre_left, const std::vector<StackClass>& classes, SnapshotDevice& d) {
  auto kv_frame = [&snap](int32_t stack) -> const snapshot::Frame* {
    return stack >= 0 && static_cast<size_t>(stack) < snap.stacks.size()
               ? KvCacheFrame(snap.stacks[static_cast<size_t>(stack)])
               : nullptr;
  };
  std::map<int32_t, LiveGroup> groups;
  for (const auto& [addr, l] : live) {
    LiveGroup& g = groups[l.stack];
    g.stack = l.stack;
    g.bytes += l.size;
    ++g.count;
  }
  for (auto& [stack, g] : groups) {
    if (stack >= 0 && static_cast<size_t>(stack) < classes.size()) {
      g.category = classes[static_cast<size_t>(stack)].category;
      g.rule = classes[static_cast<size_t>(stack)].rule;
    } else {
      g.rule = "no frames recorded";
    }
    if (const snapshot::Frame* f = kv_frame(stack)) {
      d.kv_cache_at_peak_bytes += g.bytes;
      d.kv_cache_at_peak_count += g.count;
      if (d.kv_cache_frame.empty())
        d.kv_cache_frame = f->name + " (" + f->filename + ":" + std::to_string(f->line) + ")";
    }
    d.live_at_peak.push_back(g);
  }
  if (pre_left > 0) {
    LiveGroup g;
    g.before_trace = true;
    g.bytes = pre_left;
    g.rule = "allocated before the trace's first event: no stack";
    d.live_at_peak.push_back(g);
  }
  std::stable_sort(d.live_at_peak.begin(), d.live_at_peak.end(),
                   [](const LiveGroup& a, const LiveGroup& b) { return a.bytes > b.bytes; });
  for (int c = 0; c < kMemoryCategoryCount; ++c)
    d.categories_at_peak[static_cast<size_t>(c)].category = static_cast<MemoryCategory>(c);
  for (const LiveGroup& g : d.live_at_peak) {
    auto& cb = d.categories_at_peak[static_cast<size_t>(g.category)];
    cb.bytes += g.bytes;
    cb.count += g.before_trace ? 0 : g.count;
  }
}

// Pass 1: the allocated and reserved bytes at the trace's first event — the snapshot's state
// with the trace's net changes undone, at least what keeps both at or above 0 — and the frees of
// blocks allocated before the trace.
void FindStartState(const std::vector<snapshot::TraceEvent>& events, SnapshotDevice& d) {
  int64_t alloc_net = 0, alloc_min = 0, reserved_net = 0, reserved_min = 0;
  {
    std::unordered_map<int64_t, int64_t> live;
    for (const auto& e : events) {
      if (e.action == Action::kAlloc) {
        alloc_net += e.size;
        live[e.addr] = e.size;
      } else if (EndsAllocation(e.action, d.frees_from_requested)) {
        alloc_net -= e.size;
        if (live.erase(e.addr) == 0) ++d.frees_before_trace;
      } else if (e.action == Action::kSegmentAlloc || e.action == Action::kSegmentMap) {
        reserved_net += e.size;
      } else if (e.action == Action::kSegmentFree || e.action == Action::kSegmentUnmap) {
        reserved_net -= e.size;
      }
      alloc_min = std::min(alloc_min, alloc_net);
      reserved_min = std::min(reserved_min, reserved_net);
    }
  }
  // The state at the first event: the snapshot's state with the trace's net changes undone.
  const int64_t alloc_start = d.active_allocated_bytes - alloc_net;
  const int64_t reserved_start = d.segments_reserved_bytes - reserved_net;
  d.initial_allocated_bytes = std::max<int64_t>({alloc_start, -alloc_min, 0});
  d.initial_reserved_bytes = std::max<int64_t>({reserved_start, -reserved_min, 0});
  if (alloc_start < -alloc_min || alloc_start < 0) {
    d.inconsistent = true;
    d.snapshot_below_trace = true;
  }
  if (reserved_start < -reserved_min || reserved_start < 0) {
    d.inconsistent = true;
    d.notes.push_back(
        "the segments at the snapshot reserve less than the trace's segment events "
        "imply: the start is the least that keeps reserved at or above 0");
  }
}

SnapshotDevice AnalyzeDevice(const snapshot::Snapshot& snap, int device,
                             const snapshot::DeviceTrace* trace,
                             const std::vector<StackClass>& classes) {
  SnapshotDevice d;
  d.device = device;
  SummarizeSegments(snap, device, d);

  const std::vector<snapshot::TraceEvent> none;
  const auto& events = trace ? trace->events : none;
  if (trace) d.other_actions = trace->other_actions;
  d.events = static_cast<int64_t>(events.size());
  for (const auto& e : events) ++d.action_counts[static_cast<size_t>(e.action)];
  d.frees_from_requested = d.action_counts[static_cast<size_t>(Action::kFreeCompleted)] == 0 &&
                           d.action_counts[static_cast<size_t>(Action::kFreeRequested)] > 0;
  if (d.frees_from_requested)
    d.notes.push_back("the trace has no free_completed events: free_requested ends an allocation");

  FindStartState(events, d);
  d.starts_mid_run = !events.empty() && (d.initial_allocated_bytes > 0 || d.frees_before_trace > 0);

  // Pass 2: the timeline and the peak.
  int64_t allocated = d.initial_allocated_bytes, reserved = d.initial_reserved_bytes;
  d.peak_allocated_bytes = allocated;
  d.peak_reserved_bytes = reserved;
  d.min_allocated_bytes = allocated;
  std::array<int64_t, kMemoryCategoryCount> cat{};
  std::array<StackBytes, kMemoryCategoryCount> cat_stacks;
  constexpr size_t kUnknown = static_cast<size_t>(MemoryCategory::kUnknown);
  cat[kUnknown] = allocated;  // before the trace
  cat_stacks[kUnknown].Add(kBeforeTraceStack, allocated);
  std::unordered_map<int64_t, Live> live;
  int64_t pre_left = d.initial_allocated_bytes;  // before-trace bytes not freed yet
  bool exceeded_reserved = false;
  int64_t most_over_reserved = 0;  // bytes: allocated − reserved at its largest
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    bool changed = false;
    if (e.action == Action::kAlloc) {
      const MemoryCategory c = e.stack >= 0 && static_cast<size_t>(e.stack) < classes.size()
                                   ? classes[static_cast<size_t>(e.stack)].category
                                   : MemoryCategory::kUnknown;
      Live& l = live[e.addr];
      if (l.size > 0) {  // a double alloc: replaced
        cat[static_cast<size_t>(l.category)] -= l.size;
        cat_stacks[static_cast<size_t>(l.category)].Add(l.stack, -l.size);
      }
      l = Live{e.size, e.stack, c};
      allocated += e.size;
      cat[static_cast<size_t>(c)] += e.size;
      cat_stacks[static_cast<size_t>(c)].Add(l.stack, e.size);
      changed = true;
    } else if (EndsAllocation(e.action, d.frees_from_requested)) {
      auto it = live.find(e.addr);
      if (it != live.end()) {
        cat[static_cast<size_t>(it->second.category)] -= it->second.size;
        cat_stacks[static_cast<size_t>(it->second.category)].Add(it->second.stack,
                                                                 -it->second.size);
        live.erase(it);
      } else {
        const int64_t take = std::min(pre_left, e.size);
        pre_left -= take;
        cat[kUnknown] -= take;
        cat_stacks[kUnknown].Add(kBeforeTraceStack, -take);
      }
      allocated -= e.size;
      changed = true;
    } else if (e.action == Action::kSegmentAlloc || e.action == Action::kSegmentMap) {
      reserved += e.size;
      changed = true;
    } else if (e.action == Action::kSegmentFree || e.action == Action::kSegmentUnmap) {
      reserved -= e.size;
      changed = true;
    } else if (e.action == Action::kOom) {
      d.ooms.push_back({e.time_us, e.size, e.device_free});
    }
    if (!changed) continue;
    if (allocated < 0) allocated = 0;  // cannot happen with the start above; kept as a guard
    if (reserved < 0) reserved = 0;
    d.time_us.push_back(e.time_us);
    d.allocated_bytes.push_back(allocated);
    d.reserved_bytes.push_back(reserved);
    for (size_t c = 0; c < static_cast<size_t>(kMemoryCategoryCount); ++c) {
      d.category_bytes[c].push_back(std::max<int64_t>(0, cat[c]));
      const auto [stack, bytes] = cat_stacks[c].Top();
      d.top_stack[c].push_back(stack);
      d.top_stack_bytes[c].push_back(bytes);
    }
    d.min_allocated_bytes = std::min(d.min_allocated_bytes, allocated);
    d.peak_reserved_bytes = std::max(d.peak_reserved_bytes, reserved);
    if (allocated > reserved) {
      exceeded_reserved = true;
      most_over_reserved = std::max(most_over_reserved, allocated - reserved);
    }
    if (allocated > d.peak_allocated_bytes) {
      d.peak_allocated_bytes = allocated;
      d.peak_point = static_cast<int64_t>(d.time_us.size()) - 1;
      d.peak_time_us = e.time_us;
    }
  }
  d.peak_above_start_bytes = d.peak_allocated_bytes - d.initial_allocated_bytes;
  if (exceeded_reserved) {
    d.inconsistent = true;
    d.most_over_reserved_bytes = most_over_reserved;
  }

  // Pass 3: replay to the peak and group what is live there.
  live.clear();
  pre_left = d.initial_allocated_bytes;
  int64_t point = -1;
  for (size_t i = 0; i < events.size() && point < d.peak_point; ++i) {
    const auto& e = events[i];
    if (e.action == Action::kAlloc) {
      live[e.addr] = Live{e.size, e.stack, MemoryCategory::kUnknown};
      ++point;
    } else if (EndsAllocation(e.action, d.frees_from_requested)) {
      if (live.erase(e.addr) == 0) pre_left -= std::min(pre_left, e.size);
      ++point;
    } else if (e.action == Action::kSegmentAlloc || e.action == Action::kSegmentMap ||
               e.action == Action::kSegmentFree || e.action == Action::kSegmentUnmap) {
      ++point;
    }
  }
  GroupLiveAtPeak(snap, live, pre_left, classes, d);
  return d;
}

}  // namespace

SnapshotAnalysis AnalyzeSnapshot(const snapshot::Snapshot& snap) {
  SnapshotAnalysis a;
  std::vector<StackClass> classes;
  classes.reserve(snap.stacks.size());
  for (const auto& s : snap.stacks) classes.push_back(ClassifyStack(s));
  int64_t devices = static_cast<int64_t>(snap.devices.size());
  for (const auto& s : snap.segments) {
    ++a.segments;
    a.segments_reserved_bytes += s.total_size;
    if (s.device >= 0 && s.device < 4096) devices = std::max(devices, s.device + 1);
  }
  for (int dev = 0; dev < devices; ++dev) {
    const snapshot::DeviceTrace* trace = static_cast<size_t>(dev) < snap.devices.size()
                                             ? &snap.devices[static_cast<size_t>(dev)]
                                             : nullptr;
    const bool has_segments =
        std::any_of(snap.segments.begin(), snap.segments.end(),
                    [&](const snapshot::Segment& s) { return s.device == dev; });
    if (!has_segments && (trace == nullptr || trace->events.empty())) continue;
    a.devices.push_back(AnalyzeDevice(snap, dev, trace, classes));
    a.peak_allocated_bytes =
        std::max(a.peak_allocated_bytes, a.devices.back().peak_allocated_bytes);
  }
  for (const auto& [key, value] : snap.allocator_settings)
    if (key == "expandable_segments") a.expandable_segments_setting = value == "True" ? 1 : 0;
  return a;
}

}  // namespace gpuscope::analyze
