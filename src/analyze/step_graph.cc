#include "analyze/step_graph.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>

#include "analyze/sync_points.h"

namespace gpuscope::analyze {

const char* NodeKindName(NodeKind k) {
  switch (k) {
    case NodeKind::kMarker:
      return "marker";
    case NodeKind::kHostCompute:
      return "host_compute";
    case NodeKind::kDataWait:
      return "data_wait";
    case NodeKind::kLaunch:
      return "launch";
    case NodeKind::kRuntime:
      return "runtime";
    case NodeKind::kSyncReturn:
      return "sync_return";
    case NodeKind::kKernel:
      return "kernel";
    case NodeKind::kCommunication:
      return "communication";
    case NodeKind::kMemcpy:
      return "memcpy";
    case NodeKind::kMemset:
      return "memset";
    case NodeKind::kCount:
      break;
  }
  return "?";
}

const char* PathCategoryName(PathCategory c) {
  switch (c) {
    case PathCategory::kHostCompute:
      return "host_compute";
    case PathCategory::kLaunchOverhead:
      return "launch_overhead";
    case PathCategory::kDataWait:
      return "data_wait";
    case PathCategory::kSync:
      return "sync";
    case PathCategory::kGpuCompute:
      return "gpu_compute";
    case PathCategory::kCommunication:
      return "communication";
    case PathCategory::kCopy:
      return "copy";
    case PathCategory::kGpuIdle:
      return "gpu_idle";
    case PathCategory::kCount:
      break;
  }
  return "?";
}

PathCategory CategoryOfNode(NodeKind k) {
  switch (k) {
    case NodeKind::kDataWait:
      return PathCategory::kDataWait;
    case NodeKind::kLaunch:
    case NodeKind::kRuntime:
      return PathCategory::kLaunchOverhead;
    case NodeKind::kSyncReturn:
      return PathCategory::kSync;
    case NodeKind::kKernel:
      return PathCategory::kGpuCompute;
    case NodeKind::kCommunication:
      return PathCategory::kCommunication;
    case NodeKind::kMemcpy:
    case NodeKind::kMemset:
      return PathCategory::kCopy;
    default:
      return PathCategory::kHostCompute;
  }
}

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
// A typical lag is the median of at least this many samples; with fewer (a GPU that never waits
// for a launch) the default below.
constexpr size_t kMinLagSamples = 32;
// Launch call's return → kernel start on an idle GPU, ns: 1.8 µs measured in the H200 lab's
// launch-bound MLP (C1: 620 kernels); CUDA's documented launch latency is a few µs.
constexpr int64_t kDefaultLaunchLatencyNs = 2000;
// A launch call longer than this and 10× the median launch waited for room in the launch queue.
constexpr int64_t kBlockedLaunchNs = 50'000;
constexpr size_t kMinBlockedLaunches = 8;
// A GPU node that starts this long after all it waits for in the graph waited for something
// else; another stream's node ending within the window before its start is taken for it (an
// event wait runs the next kernel about 1-3 µs after the event's kernel ends).
constexpr int64_t kCrossStreamWaitNs = 5'000;
constexpr int64_t kCrossStreamWindowNs = 5'000;

// The median of `v` (0 when empty); reorders v.
int64_t Median(std::vector<int64_t>* v) {
  if (v->empty()) return 0;
  auto mid = v->begin() + static_cast<std::ptrdiff_t>(v->size() / 2);
  std::nth_element(v->begin(), mid, v->end());
  return *mid;
}

// Whether the trace's cuda_sync records say which event each wait is for (Kineto ≥ 2.4).
bool RecordsStreamWaits(const Trace& t) {
  for (const SyncWaitInfo& w : t.sync_waits)
    if (w.record_correlation >= 0) return true;
  return false;
}

struct Edge {
  uint32_t to, from;
  EdgeKind kind;
  int64_t floor_ns;  // root edges: the fixed time the node waits for
};

}  // namespace

StepGraph BuildStepGraph(const Trace& t, const KernelClasses& classes, const StepsResult& steps) {
  StepGraph g;
  if (!steps.device_steps) return g;
  size_t first = steps.steps.size(), last = 0;
  for (size_t i = 0; i < steps.steps.size(); ++i) {
    if (!steps.steps[i].steady_state) continue;
    first = std::min(first, i);
    last = i;
  }
  if (first >= steps.steps.size()) return g;
  // A long trace's steady steps are alike: the middle kMaxGraphSteps of them stand for all, so
  // the graph and every replay cost the same on a 1 GB trace as on a small one.
  if (last - first + 1 > kMaxGraphSteps) {
    first += (last - first + 1 - kMaxGraphSteps) / 2;
    last = first + kMaxGraphSteps - 1;
  }
  const int64_t host_begin = steps.steps[first].host_start_ns;
  const int64_t host_end = steps.steps[last].host_end_ns;
  g.origin_ns = std::min(host_begin, steps.steps[first].start_ns);

  // Runtime calls that start in the window, in start order (all threads: one host chain).
  const RuntimeCallTable& rt = t.runtime;
  std::vector<uint32_t> calls;
  for (size_t c = 0; c < rt.size(); ++c)
    if (rt.start_ns[c] >= host_begin && rt.start_ns[c] < host_end)
      calls.push_back(static_cast<uint32_t>(c));
  std::sort(calls.begin(), calls.end(), [&rt](uint32_t a, uint32_t b) {
    if (rt.start_ns[a] != rt.start_ns[b]) return rt.start_ns[a] < rt.start_ns[b];
    return a < b;
  });
  // Their GPU activities (CSR by position in `calls`).
  std::vector<int32_t> pos_of_call(rt.size(), -1);
  for (size_t i = 0; i < calls.size(); ++i) pos_of_call[calls[i]] = static_cast<int32_t>(i);
  const GpuActivityTable& gpu = t.gpu;
  std::vector<uint32_t> gpu_first(calls.size() + 1, 0);
  for (size_t r = 0; r < gpu.size(); ++r) {
    if (gpu.kind[r] == GpuKind::kSync || gpu.launch[r] < 0) continue;
    const int32_t p = pos_of_call[static_cast<size_t>(gpu.launch[r])];
    if (p >= 0) ++gpu_first[static_cast<size_t>(p) + 1];
  }
  for (size_t i = 0; i < calls.size(); ++i) gpu_first[i + 1] += gpu_first[i];
  std::vector<uint32_t> gpu_rows(gpu_first.back());
  {
    std::vector<uint32_t> fill(gpu_first.begin(), gpu_first.end() - 1);
    for (size_t r = 0; r < gpu.size(); ++r) {
      if (gpu.kind[r] == GpuKind::kSync || gpu.launch[r] < 0) continue;
      const int32_t p = pos_of_call[static_cast<size_t>(gpu.launch[r])];
      if (p >= 0) gpu_rows[fill[static_cast<size_t>(p)]++] = static_cast<uint32_t>(r);
    }
  }
  // cuda_sync records (Kineto ≥ 2.4): each call's sync row, and what it says it waits for.
  std::vector<int32_t> sync_row_of(calls.size(), -1);
  for (size_t r = 0; r < gpu.size(); ++r) {
    if (gpu.kind[r] != GpuKind::kSync || gpu.launch[r] < 0) continue;
    const int32_t p = pos_of_call[static_cast<size_t>(gpu.launch[r])];
    if (p >= 0) sync_row_of[static_cast<size_t>(p)] = static_cast<int32_t>(r);
  }
  pos_of_call = {};
  std::unordered_map<uint32_t, const SyncWaitInfo*> wait_of_row;
  std::unordered_map<int64_t, uint32_t> record_mark;  // event record's correlation → g.size() then
  for (const SyncWaitInfo& w : t.sync_waits) {
    wait_of_row.emplace(w.gpu_index, &w);
    if (w.record_correlation >= 0) record_mark.emplace(w.record_correlation, UINT32_MAX);
  }

  // DataLoader spans in the window, merged.
  std::vector<std::pair<int64_t, int64_t>> loader;
  for (size_t i = 0; i < t.cpu.size(); ++i) {
    if (!t.cpu.is_dataloader[i]) continue;
    const int64_t s = t.cpu.start_ns[i], e = s + t.cpu.dur_ns[i];
    if (e > host_begin && s < host_end) loader.emplace_back(s, e);
  }
  std::sort(loader.begin(), loader.end());
  {
    size_t out = 0;
    for (const auto& span : loader) {
      if (out > 0 && span.first <= loader[out - 1].second) {
        loader[out - 1].second = std::max(loader[out - 1].second, span.second);
      } else {
        loader[out++] = span;
      }
    }
    loader.resize(out);
  }

  // Step markers: (time, graph step, 0 = host start / 1 = host end), in time order.
  struct Marker {
    int64_t ns;
    uint32_t step;
    int end;
  };
  std::vector<Marker> markers;
  for (size_t i = first; i <= last; ++i) {
    const StepBreakdown& s = steps.steps[i];
    StepGraph::Step gs;
    gs.step = s.step;
    gs.prev_end_ns = i > 0 ? steps.steps[i - 1].end_ns : s.start_ns;
    gs.observed_ns = s.duration_ns;
    g.steps.push_back(gs);
    markers.push_back({s.host_start_ns, static_cast<uint32_t>(g.steps.size() - 1), 0});
    markers.push_back({s.host_end_ns, static_cast<uint32_t>(g.steps.size() - 1), 1});
  }
  std::stable_sort(markers.begin(), markers.end(), [](const Marker& a, const Marker& b) {
    if (a.ns != b.ns) return a.ns < b.ns;
    return a.end > b.end;  // a step's end before the next one's start at the same instant
  });

  std::vector<Edge> edges;
  auto add_node = [&g](NodeKind k, int64_t start, int64_t dur, int32_t row, int32_t step) {
    g.start_ns.push_back(start);
    g.dur_ns.push_back(std::max<int64_t>(dur, 0));
    g.kind.push_back(k);
    g.row.push_back(row);
    g.step.push_back(step);
    return static_cast<uint32_t>(g.start_ns.size() - 1);
  };

  // Per stream (device pid, stream tid): its GPU nodes in launch order.
  std::unordered_map<uint64_t, uint32_t> stream_index;
  std::vector<std::vector<uint32_t>> stream_nodes;
  auto stream_key = [&gpu](size_t r) {  // (device pid, stream tid) of GPU row r
    return (static_cast<uint64_t>(gpu.pid[r]) * 0x9E3779B97F4A7C15ull) ^
           static_cast<uint64_t>(gpu.tid[r]);
  };
  // The same streams by (args.device, args.stream), as cuda_sync records name them.
  auto number_key = [](int64_t device, int64_t stream) {
    return (static_cast<uint64_t>(device) << 40) ^ static_cast<uint64_t>(stream);
  };
  std::unordered_map<uint64_t, uint32_t> stream_by_number;
  auto stream_of = [&](size_t r) {
    auto [it, added] =
        stream_index.try_emplace(stream_key(r), static_cast<uint32_t>(stream_nodes.size()));
    if (added) stream_nodes.emplace_back();
    if (gpu.stream[r] >= 0)
      stream_by_number.emplace(number_key(gpu.device[r], gpu.stream[r]), it->second);
    return it->second;
  };
  // The last node of stream (device, stream) created before node count `mark`; kRootNode if none.
  auto last_before = [&](int64_t device, int64_t stream, uint32_t mark) {
    auto it = stream_by_number.find(number_key(device, stream));
    if (it == stream_by_number.end()) return kRootNode;
    const std::vector<uint32_t>& sn = stream_nodes[it->second];
    auto at = std::lower_bound(sn.begin(), sn.end(), mark);
    return at == sn.begin() ? kRootNode : *(at - 1);
  };
  // Recorded stream waits not yet met: the waiting stream's next node waits for these.
  std::unordered_map<uint64_t, std::vector<uint32_t>> pending_waits;
  // The host lane: one chain over all threads (the main thread hands the step to the autograd
  // thread and back). `cursor` is where the host's work so far ends. A call that starts before it
  // ran beside the call that set it (another thread): it keeps its own start and waits for the
  // host work that had ended by then, never for the overlapping call, so that removing one
  // thread's long call does not move another thread's work (a lag is never negative).
  int64_t cursor = host_begin;
  std::vector<uint32_t> lane;           // host nodes in the order added
  std::vector<int64_t> lane_max_end;    // the latest end among lane[0..i], ns
  std::vector<uint32_t> lane_max_node;  // the (last added) node that ends there
  int32_t current_step = -1;
  size_t next_marker = 0, next_loader = 0;
  // The host node that ended last by `at` (the last added among equals; kRootNode if none): the
  // lane's latest unless something still ran at `at`; then a bounded scan back (overlaps are
  // rare; past the bound, the best found so far).
  auto waits_for = [&](int64_t at) {
    if (lane.empty()) return kRootNode;
    if (lane_max_end.back() <= at) return lane_max_node.back();
    constexpr size_t kMaxScan = 1024;
    uint32_t best = kRootNode;
    int64_t best_end = std::numeric_limits<int64_t>::min();
    for (size_t i = lane.size(), scanned = 0; i-- > 0 && scanned < kMaxScan; ++scanned) {
      if (lane_max_end[i] <= at) {  // lane[0..i] all ended by `at`: their latest is known
        if (lane_max_end[i] > best_end) best = lane_max_node[i];
        break;
      }
      const int64_t e = g.end_ns(lane[i]);
      if (e <= at && e > best_end) {
        best = lane[i];
        best_end = e;
      }
    }
    return best;
  };
  auto add_host = [&](NodeKind k, int64_t start, int64_t end, int32_t row) {
    const uint32_t from = waits_for(start);
    const uint32_t n = add_node(k, start, end - start, row, current_step);
    edges.push_back({n, from, from == kRootNode ? EdgeKind::kRoot : EdgeKind::kHost, start});
    const bool latest = lane.empty() || g.end_ns(n) >= lane_max_end.back();
    lane_max_end.push_back(latest ? g.end_ns(n) : lane_max_end.back());
    lane_max_node.push_back(latest ? n : lane_max_node.back());
    lane.push_back(n);
    return n;
  };
  // Markers at or before `until`. One at the cursor joins the lane; one a call ran past (or one
  // after the lane's end) is a leaf at its own time off the host work ended by then, so the
  // replay puts it where the trace does.
  auto emit_markers = [&](int64_t until) {
    while (next_marker < markers.size() && markers[next_marker].ns <= until) {
      const Marker& m = markers[next_marker++];
      if (m.end == 0) current_step = static_cast<int32_t>(m.step);
      uint32_t n;
      if (m.ns == cursor) {
        n = add_host(NodeKind::kMarker, cursor, cursor, -1);
      } else {
        const uint32_t from = waits_for(m.ns);
        n = add_node(NodeKind::kMarker, m.ns, 0, -1, current_step);
        edges.push_back({n, from, from == kRootNode ? EdgeKind::kRoot : EdgeKind::kHost, m.ns});
      }
      StepGraph::Step& s = g.steps[m.step];
      (m.end ? s.host_end : s.host_begin) = n;
      if (m.end && current_step == static_cast<int32_t>(m.step)) current_step = -1;
    }
  };
  auto fill_gap = [&](int64_t until) {  // host time from the cursor to `until`
    emit_markers(std::min(cursor, until));
    while (cursor < until) {
      int64_t cut = until;
      if (next_marker < markers.size())
        cut = std::min(cut, std::max(markers[next_marker].ns, cursor));
      while (next_loader < loader.size() && loader[next_loader].second <= cursor) ++next_loader;
      bool waiting = false;
      if (next_loader < loader.size()) {
        if (loader[next_loader].first <= cursor) {
          waiting = true;
          cut = std::min(cut, loader[next_loader].second);
        } else {
          cut = std::min(cut, loader[next_loader].first);
        }
      }
      if (cut > cursor) {
        add_host(waiting ? NodeKind::kDataWait : NodeKind::kHostCompute, cursor, cut, -1);
        cursor = cut;
      }
      emit_markers(cursor);
    }
  };

  auto gpu_kind = [&](size_t r) {
    switch (gpu.kind[r]) {
      case GpuKind::kMemcpy:
        return NodeKind::kMemcpy;
      case GpuKind::kMemset:
        return NodeKind::kMemset;
      default:
        return classes.row[r] == KernelClass::kCommunication ? NodeKind::kCommunication
                                                             : NodeKind::kKernel;
    }
  };

  std::vector<uint32_t> gpu_seq;  // GPU nodes in launch order
  struct LaunchAt {
    uint32_t node;  // the launch call's node
    uint32_t seq;   // its first GPU node's place in gpu_seq
  };
  std::vector<LaunchAt> launch_at;
  size_t call_step = 0;  // the graph step the calls (in start order) have reached
  for (size_t i = 0; i < calls.size(); ++i) {
    const uint32_t c = calls[i];
    const int64_t cs = rt.start_ns[c], ce = cs + rt.dur_ns[c];
    fill_gap(cs);
    const int64_t s = cs, e = ce;  // a call beside the lane keeps its times (waits_for)
    const uint32_t gbegin = gpu_first[i], gend = gpu_first[i + 1];
    const int32_t first_gpu = gbegin < gend ? static_cast<int32_t>(gpu_rows[gbegin]) : -1;
    const std::optional<SyncCategory> sync = SyncCategoryOfCall(t, c, first_gpu);
    const bool blocks = sync && SyncCategoryBlocksHost(*sync);
    const bool issues = gbegin < gend;  // launches GPU work
    // A step's device work: launched by calls inside its host span (steps.h), by the call's own
    // times as steps.cc's merge of calls and steps does, not by the host lane's cursor (a call
    // recorded as running past the step's end moves the cursor past the calls after it, which
    // steps.cc still counts in the step).
    while (call_step < g.steps.size() && cs >= steps.steps[first + call_step].host_end_ns)
      ++call_step;
    int32_t launch_step = -1;
    if (call_step < g.steps.size()) {
      const StepBreakdown& st = steps.steps[first + call_step];
      if (cs >= st.host_start_ns && ce <= st.host_end_ns)
        launch_step = static_cast<int32_t>(call_step);
    }
    // What a cuda_sync record says this call waits for: an event's work (kRootNode: the event
    // was recorded before the window, or on no stream of it), or one stream's last node.
    std::optional<uint32_t> recorded_wait;
    const int32_t sync_row = sync_row_of[i];
    if (sync_row >= 0) {
      const size_t sr = static_cast<size_t>(sync_row);
      auto w = wait_of_row.find(static_cast<uint32_t>(sr));
      if (w != wait_of_row.end() && w->second->record_correlation >= 0 &&
          w->second->wait_on_stream >= 0) {
        auto mark = record_mark.find(w->second->record_correlation);
        recorded_wait = mark == record_mark.end() || mark->second == UINT32_MAX
                            ? kRootNode
                            : last_before(gpu.device[sr], w->second->wait_on_stream, mark->second);
      } else if (gpu.sync_kind[sr] == SyncKind::kStreamSync && gpu.stream[sr] >= 0) {
        recorded_wait =
            last_before(gpu.device[sr], gpu.stream[sr], static_cast<uint32_t>(g.size()));
      }
      if (recorded_wait && gpu.sync_kind[sr] == SyncKind::kStreamWaitEvent && gpu.stream[sr] >= 0) {
        if (*recorded_wait != kRootNode)
          pending_waits[number_key(gpu.device[sr], gpu.stream[sr])].push_back(*recorded_wait);
        recorded_wait.reset();  // a stream waits, not the host
      }
    }
    if (auto mark = record_mark.find(rt.correlation[c]); mark != record_mark.end())
      mark->second = static_cast<uint32_t>(g.size());
    uint32_t issuer = kRootNode;
    if (issues) {
      issuer = add_host(NodeKind::kLaunch, s, blocks ? s : e, static_cast<int32_t>(c));
      if (!blocks) launch_at.push_back({issuer, static_cast<uint32_t>(gpu_seq.size())});
    } else if (!blocks) {
      add_host(NodeKind::kRuntime, s, e, static_cast<int32_t>(c));
    }
    std::vector<uint32_t> waits;
    for (uint32_t k = gbegin; k < gend; ++k) {
      const size_t r = gpu_rows[k];
      const uint32_t n = add_node(gpu_kind(r), gpu.start_ns[r], gpu.dur_ns[r],
                                  static_cast<int32_t>(r), launch_step);
      edges.push_back({n, issuer, EdgeKind::kLaunch, 0});
      stream_nodes[stream_of(r)].push_back(n);
      if (gpu.stream[r] >= 0 && !pending_waits.empty()) {
        auto p = pending_waits.find(number_key(gpu.device[r], gpu.stream[r]));
        if (p != pending_waits.end()) {
          for (uint32_t from : p->second) edges.push_back({n, from, EdgeKind::kCrossStream, 0});
          g.recorded_waits += static_cast<uint32_t>(p->second.size());
          pending_waits.erase(p);
        }
      }
      gpu_seq.push_back(n);
      if (blocks) waits.push_back(n);
    }
    if (blocks) {
      if (!issues && recorded_wait) {  // the event or stream its cuda_sync record names
        if (*recorded_wait != kRootNode) waits.push_back(*recorded_wait);
        ++g.recorded_waits;
      } else if (!issues) {  // a synchronize: every stream's last node launched before it
        for (const std::vector<uint32_t>& sn : stream_nodes)
          if (!sn.empty()) waits.push_back(sn.back());
      }
      int64_t gpu_end = std::numeric_limits<int64_t>::min();
      for (uint32_t w : waits) gpu_end = std::max(gpu_end, g.end_ns(w));
      const int64_t ret = std::clamp(gpu_end, s, e);
      const uint32_t n = add_host(NodeKind::kSyncReturn, ret, e, static_cast<int32_t>(c));
      for (uint32_t w : waits) edges.push_back({n, w, EdgeKind::kSync, 0});
    }
    cursor = std::max(cursor, e);
  }
  fill_gap(host_end);
  emit_markers(kMax);

  // Stream edges, in launch order; a stream's first node waits for its earlier work outside.
  std::vector<int32_t> is_node(gpu.size(), 0);
  for (size_t n = 0; n < g.size(); ++n)
    if (IsGpuNode(g.kind[n])) is_node[static_cast<size_t>(g.row[n])] = 1;
  std::vector<int64_t> first_start(stream_nodes.size(), kMax),
      floor(stream_nodes.size(), std::numeric_limits<int64_t>::min());
  for (size_t s = 0; s < stream_nodes.size(); ++s)
    for (uint32_t n : stream_nodes[s]) first_start[s] = std::min(first_start[s], g.start_ns[n]);
  for (size_t r = 0; r < gpu.size(); ++r) {
    if (gpu.kind[r] == GpuKind::kSync || is_node[r]) continue;
    auto it = stream_index.find(stream_key(r));
    if (it == stream_index.end() || gpu.start_ns[r] >= first_start[it->second]) continue;
    floor[it->second] = std::max(floor[it->second], gpu.start_ns[r] + gpu.dur_ns[r]);
  }
  is_node = {};
  for (size_t s = 0; s < stream_nodes.size(); ++s) {
    const std::vector<uint32_t>& sn = stream_nodes[s];
    if (sn.empty()) continue;
    if (floor[s] > std::numeric_limits<int64_t>::min())
      edges.push_back({sn[0], kRootNode, EdgeKind::kRoot, floor[s]});
    for (size_t k = 1; k < sn.size(); ++k)
      edges.push_back({sn[k], sn[k - 1], EdgeKind::kStream, 0});
  }

  // Typical lags: launch → start where the stream was free before the launch returned; the gap
  // between queued nodes where the launch returned before the predecessor ended.
  // The launch queue: its depth from the launches that blocked (the GPU nodes launched before a
  // blocked launch and not yet finished when it returned), then a queue edge into every launch.
  {
    std::vector<int64_t> launch_dur;
    for (const LaunchAt& l : launch_at) launch_dur.push_back(g.dur_ns[l.node]);
    const int64_t median = Median(&launch_dur);
    const int64_t blocked = std::max(kBlockedLaunchNs, 10 * median);
    std::vector<int64_t> ended_by(gpu_seq.size());  // the latest end among gpu_seq[0..k]
    int64_t latest = std::numeric_limits<int64_t>::min();
    for (size_t k = 0; k < gpu_seq.size(); ++k)
      ended_by[k] = latest = std::max(latest, g.end_ns(gpu_seq[k]));
    std::vector<int64_t> pending;
    for (const LaunchAt& l : launch_at) {
      if (g.dur_ns[l.node] <= blocked || l.seq == 0) continue;
      const int64_t returned = g.end_ns(l.node);
      // Nodes before it that had all ended by its return: a prefix of gpu_seq[0, l.seq).
      const size_t done = static_cast<size_t>(
          std::upper_bound(ended_by.begin(), ended_by.begin() + l.seq, returned) -
          ended_by.begin());
      pending.push_back(static_cast<int64_t>(l.seq - done));
    }
    if (pending.size() >= kMinBlockedLaunches) {
      g.queue_depth = static_cast<uint32_t>(std::max<int64_t>(Median(&pending), 1));
      for (const LaunchAt& l : launch_at) {
        if (l.seq < g.queue_depth + 1) continue;
        edges.push_back({l.node, gpu_seq[l.seq - g.queue_depth - 1], EdgeKind::kQueue, 0});
        if (g.dur_ns[l.node] >
            blocked) {  // the wait is the queue's: the call itself costs the median
          g.start_ns[l.node] = g.end_ns(l.node) - median;
          g.dur_ns[l.node] = median;
        }
      }
    }
  }

  // Per GPU node: when its launch returned and when its stream was free (the previous node's
  // end, or the stream's earlier work outside the window).
  std::vector<int64_t> launched(g.size(), kNone), free(g.size(), kNone);
  for (const Edge& e : edges) {
    if (e.kind == EdgeKind::kLaunch) launched[e.to] = g.end_ns(e.from);
    if (e.kind == EdgeKind::kStream) free[e.to] = g.end_ns(e.from);
    if (e.kind == EdgeKind::kRoot && IsGpuNode(g.kind[e.to])) free[e.to] = e.floor_ns;
  }
  {
    std::vector<int64_t> latency, gap;
    for (size_t n = 0; n < g.size(); ++n)
      if (IsGpuNode(g.kind[n]) && launched[n] != kNone && free[n] <= launched[n])
        latency.push_back(g.start_ns[n] - launched[n]);
    g.launch_latency_ns =
        latency.size() >= kMinLagSamples ? Median(&latency) : kDefaultLaunchLatencyNs;
    const int64_t typical_latency = std::max<int64_t>(g.launch_latency_ns, 0);
    for (size_t n = 0; n < g.size(); ++n)
      if (IsGpuNode(g.kind[n]) && launched[n] != kNone && free[n] != kNone &&
          launched[n] + typical_latency < free[n])
        gap.push_back(g.start_ns[n] - free[n]);
    g.stream_gap_ns = gap.size() >= kMinLagSamples ? Median(&gap) : 0;
  }

  // Cross-stream waits not recorded (a trace without cuda_sync records' wait fields) are found
  // where they show: a GPU node that starts more than kCrossStreamWaitNs after everything it
  // waits for in the graph, within kCrossStreamWindowNs of another stream's node ending, waited
  // for that node. A trace that records its waits is taken at its word.
  if (!RecordsStreamWaits(t)) {
    std::vector<int64_t> ready_by(g.size(), kNone);
    for (const Edge& e : edges) {
      const int64_t r =
          (e.from == kRootNode ? e.floor_ns : g.end_ns(e.from)) + g.TypicalLag(e.kind);
      ready_by[e.to] = std::max(ready_by[e.to], r);
    }
    std::vector<uint32_t> by_end;  // GPU nodes by end time
    for (size_t n = 0; n < g.size(); ++n)
      if (IsGpuNode(g.kind[n])) by_end.push_back(static_cast<uint32_t>(n));
    std::sort(by_end.begin(), by_end.end(),
              [&g](uint32_t a, uint32_t b) { return g.end_ns(a) < g.end_ns(b); });
    std::vector<uint32_t> stream_at(g.size(), UINT32_MAX);
    for (size_t sidx = 0; sidx < stream_nodes.size(); ++sidx)
      for (uint32_t n : stream_nodes[sidx]) stream_at[n] = static_cast<uint32_t>(sidx);
    const size_t before = edges.size();
    for (size_t n = 0; n < g.size(); ++n) {
      if (!IsGpuNode(g.kind[n]) || ready_by[n] == kNone ||
          g.start_ns[n] - ready_by[n] <= kCrossStreamWaitNs)
        continue;
      const int64_t s = g.start_ns[n];
      // The latest node of another stream, launched before n, ending in [s − window, s].
      auto it = std::upper_bound(by_end.begin(), by_end.end(), s,
                                 [&g](int64_t at, uint32_t m) { return at < g.end_ns(m); });
      while (it != by_end.begin()) {
        --it;
        const uint32_t m = *it;
        if (g.end_ns(m) < s - kCrossStreamWindowNs) break;
        if (m < n && stream_at[m] != stream_at[n]) {
          edges.push_back({static_cast<uint32_t>(n), m, EdgeKind::kCrossStream, 0});
          break;
        }
      }
    }
    g.cross_stream_edges = static_cast<uint32_t>(edges.size() - before);
  }

  // CSR by target; lags: each edge its kind's typical lag, the binding one exactly the observed
  // start (so the unchanged graph replays to the trace).
  const size_t n_nodes = g.size();
  g.first_edge.assign(n_nodes + 1, 0);
  for (const Edge& e : edges) ++g.first_edge[e.to + 1];
  for (size_t n = 0; n < n_nodes; ++n) g.first_edge[n + 1] += g.first_edge[n];
  g.edge_from.resize(edges.size());
  g.edge_lag_ns.resize(edges.size());
  g.edge_kind.resize(edges.size());
  std::vector<int64_t> ready(edges.size());  // the predecessor's observed end (root: the floor)
  {
    std::vector<uint32_t> fill(g.first_edge.begin(), g.first_edge.end() - 1);
    for (const Edge& e : edges) {
      const uint32_t k = fill[e.to]++;
      g.edge_from[k] = e.from;
      g.edge_kind[k] = e.kind;
      ready[k] = e.from == kRootNode ? e.floor_ns : g.end_ns(e.from);
    }
  }
  for (size_t n = 0; n < n_nodes; ++n) {
    const uint32_t b = g.first_edge[n], e = g.first_edge[n + 1];
    const int64_t s = g.start_ns[n];
    int64_t best = std::numeric_limits<int64_t>::min();
    uint32_t binding = b;
    for (uint32_t k = b; k < e; ++k) {
      g.edge_lag_ns[k] = g.TypicalLag(g.edge_kind[k]);
      const int64_t r = ready[k] + g.edge_lag_ns[k];
      if (r > s) g.edge_lag_ns[k] = s - ready[k];  // overshoots: binds at the observed start
      if (r > best) {
        best = r;
        binding = k;
      }
    }
    if (b < e && best < s) g.edge_lag_ns[binding] = s - ready[binding];  // waits longer: binds
  }
  // A root edge's lag counts from the origin in the replay: the fixed time it waits for, plus.
  for (size_t k = 0; k < g.edge_from.size(); ++k)
    if (g.edge_from[k] == kRootNode) g.edge_lag_ns[k] += ready[k] - g.origin_ns;
  return g;
}

ReplayResult Replay(const StepGraph& g, const GraphChange& change) {
  ReplayResult out;
  const size_t n_nodes = g.size();
  out.end_ns.resize(n_nodes);
  const int64_t* dur = change.dur_ns.empty() ? g.dur_ns.data() : change.dur_ns.data();
  const int64_t* lag =
      change.edge_lag_ns.empty() ? g.edge_lag_ns.data() : change.edge_lag_ns.data();
  const uint8_t* off = change.edge_off.empty() ? nullptr : change.edge_off.data();
  int64_t* end = out.end_ns.data();
  const uint32_t* from = g.edge_from.data();
  for (size_t n = 0; n < n_nodes; ++n) {
    int64_t start = std::numeric_limits<int64_t>::min();
    for (uint32_t k = g.first_edge[n], e = g.first_edge[n + 1]; k < e; ++k) {
      if (off && off[k]) continue;
      const int64_t r = (from[k] == kRootNode ? g.origin_ns : end[from[k]]) + lag[k];
      start = std::max(start, r);
    }
    if (start == std::numeric_limits<int64_t>::min()) start = g.start_ns[n];
    end[n] = start + dur[n];
  }
  // Per step: from max(previous end, host start) to max(host end, its GPU work's end).
  const size_t n_steps = g.steps.size();
  out.step_start_ns.resize(n_steps);
  out.step_end_ns.resize(n_steps);
  std::vector<int64_t> gpu_end(n_steps, std::numeric_limits<int64_t>::min());
  for (size_t n = 0; n < n_nodes; ++n)
    if (g.step[n] >= 0 && IsGpuNode(g.kind[n]))
      gpu_end[static_cast<size_t>(g.step[n])] =
          std::max(gpu_end[static_cast<size_t>(g.step[n])], end[n]);
  int64_t total = 0;
  for (size_t k = 0; k < n_steps; ++k) {
    const StepGraph::Step& s = g.steps[k];
    const int64_t prev_end = k == 0 ? s.prev_end_ns : out.step_end_ns[k - 1];
    out.step_start_ns[k] = std::max(prev_end, end[s.host_begin]);
    out.step_end_ns[k] = std::max(end[s.host_end], gpu_end[k]);
    total += out.step_end_ns[k] - out.step_start_ns[k];
  }
  // Integer unless a what-if scaled the batch (a double holds 53 bits: a fuzzed trace's step of
  // 1.7e18 ns would change).
  out.mean_step_ns = n_steps > 0 ? total / static_cast<int64_t>(n_steps) : 0;
  if (change.step_scale != 1.0)
    out.mean_step_ns =
        static_cast<int64_t>(static_cast<double>(out.mean_step_ns) / change.step_scale);
  return out;
}

CriticalPath FindCriticalPath(const StepGraph& g, const ReplayResult& replay,
                              const GraphChange& change) {
  CriticalPath cp;
  if (g.empty()) return cp;
  cp.built = true;
  cp.nodes = g.size();
  cp.edges = g.edge_from.size();
  cp.steps = g.steps.size();
  cp.launch_latency_ns = g.launch_latency_ns;
  cp.stream_gap_ns = g.stream_gap_ns;
  cp.queue_depth = g.queue_depth;
  cp.cross_stream_edges = g.cross_stream_edges;
  cp.recorded_waits = g.recorded_waits;
  cp.replayed_step_ns = replay.mean_step_ns;
  int64_t observed = 0;
  for (const StepGraph::Step& s : g.steps) observed += s.observed_ns;
  cp.observed_step_ns = observed / static_cast<int64_t>(g.steps.size());
  const int64_t* dur = change.dur_ns.empty() ? g.dur_ns.data() : change.dur_ns.data();
  const int64_t* lag =
      change.edge_lag_ns.empty() ? g.edge_lag_ns.data() : change.edge_lag_ns.data();
  const uint8_t* off = change.edge_off.empty() ? nullptr : change.edge_off.data();
  const std::vector<int64_t>& end = replay.end_ns;
  const int64_t window_start = replay.step_start_ns.front();
  const int64_t window_end = replay.step_end_ns.back();
  cp.window_ns = window_end - window_start;

  // The node that ends the window: the last step's host end or its latest GPU node.
  const size_t last = g.steps.size() - 1;
  uint32_t n = g.steps[last].host_end;
  for (size_t k = 0; k < g.size(); ++k)
    if (g.step[k] == static_cast<int32_t>(last) && IsGpuNode(g.kind[k]) && end[k] > end[n])
      n = static_cast<uint32_t>(k);

  std::vector<PathSegment> rev;  // latest first
  auto add = [&rev, window_start](int64_t s, int64_t e, PathCategory c) {
    s = std::max(s, window_start);
    if (e <= s) return;
    if (!rev.empty() && rev.back().category == c && rev.back().start_ns == e) {
      rev.back().start_ns = s;
    } else {
      rev.push_back({s, e, c});
    }
  };
  int64_t cursor = end[n];
  while (cursor > window_start) {
    const int64_t start = end[n] - dur[n];
    // A call that long is the driver's one-time work, not launch overhead (see kOneTimeCallNs).
    const bool one_time = (g.kind[n] == NodeKind::kLaunch || g.kind[n] == NodeKind::kRuntime) &&
                          dur[n] > kOneTimeCallNs;
    add(start, std::min(end[n], cursor),
        one_time ? PathCategory::kHostCompute : CategoryOfNode(g.kind[n]));
    cursor = std::min(cursor, start);
    // The binding edge: the latest-ready one (the first of equals).
    uint32_t binding = UINT32_MAX;
    int64_t best = std::numeric_limits<int64_t>::min();
    for (uint32_t k = g.first_edge[n], e = g.first_edge[n + 1]; k < e; ++k) {
      if (off && off[k]) continue;
      const int64_t r = (g.edge_from[k] == kRootNode ? g.origin_ns : end[g.edge_from[k]]) + lag[k];
      if (r > best) {
        best = r;
        binding = k;
      }
    }
    if (binding == UINT32_MAX) break;
    const uint32_t from = g.edge_from[binding];
    const int64_t ready = from == kRootNode ? g.origin_ns : end[from];
    // The edge's own stretch: [ready, start) below the cursor.
    if (cursor > ready) {
      const EdgeKind ek = g.edge_kind[binding];
      if (ek == EdgeKind::kLaunch) {
        const int64_t typical = std::max<int64_t>(g.TypicalLag(EdgeKind::kLaunch), 0);
        const int64_t split = std::min(cursor, ready + typical);
        add(split, cursor, PathCategory::kGpuIdle);
        add(ready, split, PathCategory::kLaunchOverhead);
      } else if (ek == EdgeKind::kSync) {
        add(ready, cursor, PathCategory::kSync);
      } else if (ek == EdgeKind::kRoot) {
        // Work of the steps before the window still running on the stream.
        add(ready, cursor,
            IsGpuNode(g.kind[n]) ? PathCategory::kGpuCompute : PathCategory::kHostCompute);
      } else if (ek == EdgeKind::kCrossStream) {
        add(ready, cursor, PathCategory::kGpuIdle);
      } else if (ek == EdgeKind::kQueue) {
        add(ready, cursor, PathCategory::kLaunchOverhead);
      } else if (ek == EdgeKind::kStream) {
        add(ready, cursor, PathCategory::kGpuIdle);
      } else {
        add(ready, cursor, PathCategory::kHostCompute);
      }
      cursor = ready;
    }
    if (from == kRootNode) break;
    n = from;
  }
  // Time order; each step's parts (steps tile the window when each starts where the last ended).
  cp.segments.assign(rev.rbegin(), rev.rend());
  cp.step_ns.assign(g.steps.size(), PathArray{});
  for (const StepGraph::Step& st : g.steps) cp.step_numbers.push_back(st.step);
  cp.step_start_ns = replay.step_start_ns;
  cp.step_end_ns = replay.step_end_ns;
  size_t step = 0;
  for (const PathSegment& s : cp.segments) {
    for (int64_t a = s.start_ns; a < s.end_ns;) {
      while (step < g.steps.size() && replay.step_end_ns[step] <= a) ++step;
      if (step >= g.steps.size()) break;
      const int64_t b = std::min(s.end_ns, replay.step_end_ns[step]);
      const int64_t from = std::max(a, replay.step_start_ns[step]);
      if (b > from) {
        cp.total_ns[static_cast<size_t>(s.category)] += b - from;
        cp.step_ns[step][static_cast<size_t>(s.category)] += b - from;
      }
      a = b;
    }
  }
  for (size_t c = 0; c < kPathCategoryCount; ++c) {
    cp.per_step_ns[c] = cp.total_ns[c] / static_cast<int64_t>(g.steps.size());
    if (cp.total_ns[c] > cp.total_ns[static_cast<size_t>(cp.bound_by)])
      cp.bound_by = static_cast<PathCategory>(c);
  }
  return cp;
}

}  // namespace gpuscope::analyze
