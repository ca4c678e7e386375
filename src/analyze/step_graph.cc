#include "analyze/step_graph.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>

#include "analyze/sync_points.h"
#include "base/enum_names.h"

namespace gpuscope::analyze {

constexpr EnumNames<NodeKind, 10> kNodeKindNames(
    {NodeKind::kMarker, "marker"}, {NodeKind::kHostCompute, "host_compute"},
    {NodeKind::kDataWait, "data_wait"}, {NodeKind::kLaunch, "launch"},
    {NodeKind::kRuntime, "runtime"}, {NodeKind::kSyncReturn, "sync_return"},
    {NodeKind::kKernel, "kernel"}, {NodeKind::kCommunication, "communication"},
    {NodeKind::kMemcpy, "memcpy"}, {NodeKind::kMemset, "memset"});

const char* NodeKindName(NodeKind k) { return CNameOf(kNodeKindNames, k); }

constexpr EnumNames<PathCategory, 8> kPathCategoryNames(
    {PathCategory::kHostCompute, "host_compute"},
    {PathCategory::kLaunchOverhead, "launch_overhead"}, {PathCategory::kDataWait, "data_wait"},
    {PathCategory::kSync, "sync"}, {PathCategory::kGpuCompute, "gpu_compute"},
    {PathCategory::kCommunication, "communication"}, {PathCategory::kCopy, "copy"},
    {PathCategory::kGpuIdle, "gpu_idle"});

const char* PathCategoryName(PathCategory c) { return CNameOf(kPathCategoryNames, c); }

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

// Step markers: (time, graph step, 0 = host start / 1 = host end).
struct Marker {
  int64_t ns;
  uint32_t step;
  int end;
};

struct LaunchAt {
  uint32_t node;  // the launch call's node
  uint32_t seq;   // its first GPU node's place in gpu_seq_
};

// Builds the graph of the steady steps' window: the host lane, GPU nodes per stream, their
// edges, then the typical lags and the edges in CSR form.
class StepGraphBuilder {
 public:
  StepGraphBuilder(const Trace& t, const KernelClasses& classes, const StepsResult& steps)
      : t_(t), rt_(t.runtime), gpu_(t.gpu), classes_(classes), steps_(steps) {}

  StepGraph Build() {
    if (!steps_.device_steps || !ChooseWindow()) return std::move(g_);
    IndexCalls();
    IndexSyncRecords();
    MergeLoaderSpans();
    MakeSteps();
    cursor_ = host_begin_;
    for (size_t i = 0; i < calls_.size(); ++i) AddCall(i);
    FillGap(host_end_);
    EmitMarkers(kMax);
    AddStreamEdges();
    AddLaunchQueue();
    MeasureTypicalLags();
    if (!RecordsStreamWaits(t_)) AddUnrecordedCrossStreamWaits();
    ToCsr();
    return std::move(g_);
  }

 private:
  // The steady steps, or the middle kMaxGraphSteps of them: a long trace's steady steps are
  // alike, so the graph and every replay cost the same on a 1 GB trace as on a small one.
  bool ChooseWindow() {
    first_ = steps_.steps.size();
    for (size_t i = 0; i < steps_.steps.size(); ++i) {
      if (!steps_.steps[i].steady_state) continue;
      first_ = std::min(first_, i);
      last_ = i;
    }
    if (first_ >= steps_.steps.size()) return false;
    if (last_ - first_ + 1 > kMaxGraphSteps) {
      first_ += (last_ - first_ + 1 - kMaxGraphSteps) / 2;
      last_ = first_ + kMaxGraphSteps - 1;
    }
    host_begin_ = steps_.steps[first_].host_start_ns;
    host_end_ = steps_.steps[last_].host_end_ns;
    g_.origin_ns = std::min(host_begin_, steps_.steps[first_].start_ns);
    return true;
  }

  // Runtime calls that start in the window, in start order (all threads: one host chain), and
  // their GPU activities (CSR by position in calls_); each call's cuda_sync row (Kineto ≥ 2.4).
  void IndexCalls() {
    for (size_t c = 0; c < rt_.size(); ++c)
      if (rt_.start_ns[c] >= host_begin_ && rt_.start_ns[c] < host_end_)
        calls_.push_back(static_cast<uint32_t>(c));
    const RuntimeCallTable& rt = rt_;
    std::sort(calls_.begin(), calls_.end(), [&rt](uint32_t a, uint32_t b) {
      if (rt.start_ns[a] != rt.start_ns[b]) return rt.start_ns[a] < rt.start_ns[b];
      return a < b;
    });
    std::vector<int32_t> pos_of_call(rt_.size(), -1);
    for (size_t i = 0; i < calls_.size(); ++i) pos_of_call[calls_[i]] = static_cast<int32_t>(i);
    auto position = [&](size_t r) {
      return gpu_.launch[r] < 0 ? -1 : pos_of_call[static_cast<size_t>(gpu_.launch[r])];
    };
    gpu_first_.assign(calls_.size() + 1, 0);
    sync_row_of_.assign(calls_.size(), -1);
    for (size_t r = 0; r < gpu_.size(); ++r) {
      const int32_t p = position(r);
      if (p < 0) continue;
      if (gpu_.kind[r] == GpuKind::kSync)
        sync_row_of_[static_cast<size_t>(p)] = static_cast<int32_t>(r);
      else
        ++gpu_first_[static_cast<size_t>(p) + 1];
    }
    for (size_t i = 0; i < calls_.size(); ++i) gpu_first_[i + 1] += gpu_first_[i];
    gpu_rows_.resize(gpu_first_.back());
    std::vector<uint32_t> fill(gpu_first_.begin(), gpu_first_.end() - 1);
    for (size_t r = 0; r < gpu_.size(); ++r) {
      const int32_t p = position(r);
      if (p >= 0 && gpu_.kind[r] != GpuKind::kSync)
        gpu_rows_[fill[static_cast<size_t>(p)]++] = static_cast<uint32_t>(r);
    }
  }

  // What each cuda_sync record says it waits for.
  void IndexSyncRecords() {
    for (const SyncWaitInfo& w : t_.sync_waits) {
      wait_of_row_.emplace(w.gpu_index, &w);
      if (w.record_correlation >= 0) record_mark_.emplace(w.record_correlation, UINT32_MAX);
    }
  }

  // DataLoader spans in the window, merged.
  void MergeLoaderSpans() {
    for (size_t i = 0; i < t_.cpu.size(); ++i) {
      if (!t_.cpu.is_dataloader[i]) continue;
      const int64_t s = t_.cpu.start_ns[i], e = s + t_.cpu.dur_ns[i];
      if (e > host_begin_ && s < host_end_) loader_.emplace_back(s, e);
    }
    std::sort(loader_.begin(), loader_.end());
    size_t out = 0;
    for (const auto& span : loader_) {
      if (out > 0 && span.first <= loader_[out - 1].second) {
        loader_[out - 1].second = std::max(loader_[out - 1].second, span.second);
      } else {
        loader_[out++] = span;
      }
    }
    loader_.resize(out);
  }

  // The graph's steps and their markers in time order.
  void MakeSteps() {
    for (size_t i = first_; i <= last_; ++i) {
      const StepBreakdown& s = steps_.steps[i];
      StepGraph::Step gs;
      gs.step = s.step;
      gs.prev_end_ns = i > 0 ? steps_.steps[i - 1].end_ns : s.start_ns;
      gs.observed_ns = s.duration_ns;
      g_.steps.push_back(gs);
      markers_.push_back({s.host_start_ns, static_cast<uint32_t>(g_.steps.size() - 1), 0});
      markers_.push_back({s.host_end_ns, static_cast<uint32_t>(g_.steps.size() - 1), 1});
    }
    std::stable_sort(markers_.begin(), markers_.end(), [](const Marker& a, const Marker& b) {
      if (a.ns != b.ns) return a.ns < b.ns;
      return a.end > b.end;  // a step's end before the next one's start at the same instant
    });
  }

  uint32_t AddNode(NodeKind k, int64_t start, int64_t dur, int32_t row, int32_t step) {
    g_.start_ns.push_back(start);
    g_.dur_ns.push_back(std::max<int64_t>(dur, 0));
    g_.kind.push_back(k);
    g_.row.push_back(row);
    g_.step.push_back(step);
    return static_cast<uint32_t>(g_.start_ns.size() - 1);
  }

  // Streams: (device pid, stream tid) of GPU row r, and (args.device, args.stream) as cuda_sync
  // records name them.
  uint64_t StreamKey(size_t r) const {
    return (static_cast<uint64_t>(gpu_.pid[r]) * 0x9E3779B97F4A7C15ull) ^
           static_cast<uint64_t>(gpu_.tid[r]);
  }
  static uint64_t NumberKey(int64_t device, int64_t stream) {
    return (static_cast<uint64_t>(device) << 40) ^ static_cast<uint64_t>(stream);
  }
  uint32_t StreamOf(size_t r) {
    auto [it, added] =
        stream_index_.try_emplace(StreamKey(r), static_cast<uint32_t>(stream_nodes_.size()));
    if (added) stream_nodes_.emplace_back();
    if (gpu_.stream[r] >= 0)
      stream_by_number_.emplace(NumberKey(gpu_.device[r], gpu_.stream[r]), it->second);
    return it->second;
  }
  // The last node of stream (device, stream) created before node count `mark`; kRootNode if none.
  uint32_t LastBefore(int64_t device, int64_t stream, uint32_t mark) const {
    auto it = stream_by_number_.find(NumberKey(device, stream));
    if (it == stream_by_number_.end()) return kRootNode;
    const std::vector<uint32_t>& sn = stream_nodes_[it->second];
    auto at = std::lower_bound(sn.begin(), sn.end(), mark);
    return at == sn.begin() ? kRootNode : *(at - 1);
  }

  // The host lane: one chain over all threads (the main thread hands the step to the autograd
  // thread and back). `cursor_` is where the host's work so far ends. A call that starts before it
  // ran beside the call that set it (another thread): it keeps its own start and waits for the
  // host work that had ended by then, never for the overlapping call, so that removing one
  // thread's long call does not move another thread's work (a lag is never negative).
  //
  // The host node that ended last by `at` (the last added among equals; kRootNode if none): the
  // lane's latest unless something still ran at `at`; then a bounded scan back (overlaps are
  // rare; past the bound, the best found so far).
  uint32_t WaitsFor(int64_t at) const {
    if (lane_.empty()) return kRootNode;
    if (lane_max_end_.back() <= at) return lane_max_node_.back();
    constexpr size_t kMaxScan = 1024;
    uint32_t best = kRootNode;
    int64_t best_end = std::numeric_limits<int64_t>::min();
    for (size_t i = lane_.size(), scanned = 0; i-- > 0 && scanned < kMaxScan; ++scanned) {
      if (lane_max_end_[i] <= at) {  // lane[0..i] all ended by `at`: their latest is known
        if (lane_max_end_[i] > best_end) best = lane_max_node_[i];
        break;
      }
      const int64_t e = g_.end_ns(lane_[i]);
      if (e <= at && e > best_end) {
        best = lane_[i];
        best_end = e;
      }
    }
    return best;
  }

  uint32_t AddHost(NodeKind k, int64_t start, int64_t end, int32_t row) {
    const uint32_t from = WaitsFor(start);
    const uint32_t n = AddNode(k, start, end - start, row, current_step_);
    edges_.push_back({n, from, from == kRootNode ? EdgeKind::kRoot : EdgeKind::kHost, start});
    const bool latest = lane_.empty() || g_.end_ns(n) >= lane_max_end_.back();
    lane_max_end_.push_back(latest ? g_.end_ns(n) : lane_max_end_.back());
    lane_max_node_.push_back(latest ? n : lane_max_node_.back());
    lane_.push_back(n);
    return n;
  }

  // Markers at or before `until`. One at the cursor joins the lane; one a call ran past (or one
  // after the lane's end) is a leaf at its own time off the host work ended by then, so the
  // replay puts it where the trace does.
  void EmitMarkers(int64_t until) {
    while (next_marker_ < markers_.size() && markers_[next_marker_].ns <= until) {
      const Marker& m = markers_[next_marker_++];
      if (m.end == 0) current_step_ = static_cast<int32_t>(m.step);
      uint32_t n;
      if (m.ns == cursor_) {
        n = AddHost(NodeKind::kMarker, cursor_, cursor_, -1);
      } else {
        const uint32_t from = WaitsFor(m.ns);
        n = AddNode(NodeKind::kMarker, m.ns, 0, -1, current_step_);
        edges_.push_back({n, from, from == kRootNode ? EdgeKind::kRoot : EdgeKind::kHost, m.ns});
      }
      StepGraph::Step& s = g_.steps[m.step];
      (m.end ? s.host_end : s.host_begin) = n;
      if (m.end && current_step_ == static_cast<int32_t>(m.step)) current_step_ = -1;
    }
  }

  // Host time from the cursor to `until`: compute, or a wait where a DataLoader span covers it.
  void FillGap(int64_t until) {
    EmitMarkers(std::min(cursor_, until));
    while (cursor_ < until) {
      int64_t cut = until;
      if (next_marker_ < markers_.size())
        cut = std::min(cut, std::max(markers_[next_marker_].ns, cursor_));
      while (next_loader_ < loader_.size() && loader_[next_loader_].second <= cursor_)
        ++next_loader_;
      bool waiting = false;
      if (next_loader_ < loader_.size()) {
        if (loader_[next_loader_].first <= cursor_) {
          waiting = true;
          cut = std::min(cut, loader_[next_loader_].second);
        } else {
          cut = std::min(cut, loader_[next_loader_].first);
        }
      }
      if (cut > cursor_) {
        AddHost(waiting ? NodeKind::kDataWait : NodeKind::kHostCompute, cursor_, cut, -1);
        cursor_ = cut;
      }
      EmitMarkers(cursor_);
    }
  }

  NodeKind GpuKindOf(size_t r) const {
    switch (gpu_.kind[r]) {
      case GpuKind::kMemcpy:
        return NodeKind::kMemcpy;
      case GpuKind::kMemset:
        return NodeKind::kMemset;
      default:
        return classes_.row[r] == KernelClass::kCommunication ? NodeKind::kCommunication
                                                              : NodeKind::kKernel;
    }
  }

  // A step's device work: launched by calls inside its host span (steps.h), by the call's own
  // times as steps.cc's merge of calls and steps does, not by the host lane's cursor (a call
  // recorded as running past the step's end moves the cursor past the calls after it, which
  // steps.cc still counts in the step). Calls come in start order.
  int32_t LaunchStep(int64_t cs, int64_t ce) {
    while (call_step_ < g_.steps.size() && cs >= steps_.steps[first_ + call_step_].host_end_ns)
      ++call_step_;
    if (call_step_ >= g_.steps.size()) return -1;
    const StepBreakdown& st = steps_.steps[first_ + call_step_];
    return cs >= st.host_start_ns && ce <= st.host_end_ns ? static_cast<int32_t>(call_step_) : -1;
  }

  // What call i's cuda_sync record says the host waits for: an event's work (kRootNode: the
  // event was recorded before the window, or on no stream of it), or one stream's last node. A
  // stream waiting for an event is kept in pending_waits_ for that stream's next node instead.
  std::optional<uint32_t> RecordedWait(size_t i) {
    std::optional<uint32_t> recorded_wait;
    const int32_t sync_row = sync_row_of_[i];
    if (sync_row < 0) return recorded_wait;
    const size_t sr = static_cast<size_t>(sync_row);
    auto w = wait_of_row_.find(static_cast<uint32_t>(sr));
    if (w != wait_of_row_.end() && w->second->record_correlation >= 0 &&
        w->second->wait_on_stream >= 0) {
      auto mark = record_mark_.find(w->second->record_correlation);
      recorded_wait = mark == record_mark_.end() || mark->second == UINT32_MAX
                          ? kRootNode
                          : LastBefore(gpu_.device[sr], w->second->wait_on_stream, mark->second);
    } else if (gpu_.sync_kind[sr] == SyncKind::kStreamSync && gpu_.stream[sr] >= 0) {
      recorded_wait =
          LastBefore(gpu_.device[sr], gpu_.stream[sr], static_cast<uint32_t>(g_.size()));
    }
    if (recorded_wait && gpu_.sync_kind[sr] == SyncKind::kStreamWaitEvent && gpu_.stream[sr] >= 0) {
      if (*recorded_wait != kRootNode)
        pending_waits_[NumberKey(gpu_.device[sr], gpu_.stream[sr])].push_back(*recorded_wait);
      recorded_wait.reset();  // a stream waits, not the host
    }
    return recorded_wait;
  }

  // The GPU node of row r, launched by `issuer`: on its stream, after what that stream waits for.
  uint32_t AddGpuNode(size_t r, uint32_t issuer, int32_t launch_step) {
    const uint32_t n = AddNode(GpuKindOf(r), gpu_.start_ns[r], gpu_.dur_ns[r],
                               static_cast<int32_t>(r), launch_step);
    edges_.push_back({n, issuer, EdgeKind::kLaunch, 0});
    stream_nodes_[StreamOf(r)].push_back(n);
    if (gpu_.stream[r] >= 0 && !pending_waits_.empty()) {
      auto p = pending_waits_.find(NumberKey(gpu_.device[r], gpu_.stream[r]));
      if (p != pending_waits_.end()) {
        for (uint32_t from : p->second) edges_.push_back({n, from, EdgeKind::kCrossStream, 0});
        g_.recorded_waits += static_cast<uint32_t>(p->second.size());
        pending_waits_.erase(p);
      }
    }
    gpu_seq_.push_back(n);
    return n;
  }

  // Runtime call i (in start order): its host node, its GPU nodes, and where it blocks the host,
  // the sync return that waits for them.
  void AddCall(size_t i) {
    const uint32_t c = calls_[i];
    const int64_t s = rt_.start_ns[c], e = s + rt_.dur_ns[c];
    FillGap(s);  // a call beside the lane keeps its times (WaitsFor)
    const uint32_t gbegin = gpu_first_[i], gend = gpu_first_[i + 1];
    const int32_t first_gpu = gbegin < gend ? static_cast<int32_t>(gpu_rows_[gbegin]) : -1;
    const std::optional<SyncCategory> sync = SyncCategoryOfCall(t_, c, first_gpu);
    const bool blocks = sync && SyncCategoryBlocksHost(*sync);
    const bool issues = gbegin < gend;  // launches GPU work
    const int32_t launch_step = LaunchStep(s, e);
    const std::optional<uint32_t> recorded_wait = RecordedWait(i);
    if (auto mark = record_mark_.find(rt_.correlation[c]); mark != record_mark_.end())
      mark->second = static_cast<uint32_t>(g_.size());
    uint32_t issuer = kRootNode;
    if (issues) {
      issuer = AddHost(NodeKind::kLaunch, s, blocks ? s : e, static_cast<int32_t>(c));
      if (!blocks) launch_at_.push_back({issuer, static_cast<uint32_t>(gpu_seq_.size())});
    } else if (!blocks) {
      AddHost(NodeKind::kRuntime, s, e, static_cast<int32_t>(c));
    }
    std::vector<uint32_t> waits;
    for (uint32_t k = gbegin; k < gend; ++k) {
      const uint32_t n = AddGpuNode(gpu_rows_[k], issuer, launch_step);
      if (blocks) waits.push_back(n);
    }
    if (blocks) {
      if (!issues && recorded_wait) {  // the event or stream its cuda_sync record names
        if (*recorded_wait != kRootNode) waits.push_back(*recorded_wait);
        ++g_.recorded_waits;
      } else if (!issues) {  // a synchronize: every stream's last node launched before it
        for (const std::vector<uint32_t>& sn : stream_nodes_)
          if (!sn.empty()) waits.push_back(sn.back());
      }
      int64_t gpu_end = std::numeric_limits<int64_t>::min();
      for (uint32_t w : waits) gpu_end = std::max(gpu_end, g_.end_ns(w));
      const int64_t ret = std::clamp(gpu_end, s, e);
      const uint32_t n = AddHost(NodeKind::kSyncReturn, ret, e, static_cast<int32_t>(c));
      for (uint32_t w : waits) edges_.push_back({n, w, EdgeKind::kSync, 0});
    }
    cursor_ = std::max(cursor_, e);
  }

  // Stream edges, in launch order; a stream's first node waits for its earlier work outside.
  void AddStreamEdges() {
    std::vector<int32_t> is_node(gpu_.size(), 0);
    for (size_t n = 0; n < g_.size(); ++n)
      if (IsGpuNode(g_.kind[n])) is_node[static_cast<size_t>(g_.row[n])] = 1;
    std::vector<int64_t> first_start(stream_nodes_.size(), kMax),
        floor(stream_nodes_.size(), std::numeric_limits<int64_t>::min());
    for (size_t s = 0; s < stream_nodes_.size(); ++s)
      for (uint32_t n : stream_nodes_[s]) first_start[s] = std::min(first_start[s], g_.start_ns[n]);
    for (size_t r = 0; r < gpu_.size(); ++r) {
      if (gpu_.kind[r] == GpuKind::kSync || is_node[r]) continue;
      auto it = stream_index_.find(StreamKey(r));
      if (it == stream_index_.end() || gpu_.start_ns[r] >= first_start[it->second]) continue;
      floor[it->second] = std::max(floor[it->second], gpu_.start_ns[r] + gpu_.dur_ns[r]);
    }
    for (size_t s = 0; s < stream_nodes_.size(); ++s) {
      const std::vector<uint32_t>& sn = stream_nodes_[s];
      if (sn.empty()) continue;
      if (floor[s] > std::numeric_limits<int64_t>::min())
        edges_.push_back({sn[0], kRootNode, EdgeKind::kRoot, floor[s]});
      for (size_t k = 1; k < sn.size(); ++k)
        edges_.push_back({sn[k], sn[k - 1], EdgeKind::kStream, 0});
    }
  }

  // The launch queue: its depth from the launches that blocked (the GPU nodes launched before a
  // blocked launch and not yet finished when it returned), then a queue edge into every launch.
  void AddLaunchQueue() {
    std::vector<int64_t> launch_dur;
    for (const LaunchAt& l : launch_at_) launch_dur.push_back(g_.dur_ns[l.node]);
    const int64_t median = Median(&launch_dur);
    const int64_t blocked = std::max(kBlockedLaunchNs, 10 * median);
    std::vector<int64_t> ended_by(gpu_seq_.size());  // the latest end among gpu_seq_[0..k]
    int64_t latest = std::numeric_limits<int64_t>::min();
    for (size_t k = 0; k < gpu_seq_.size(); ++k)
      ended_by[k] = latest = std::max(latest, g_.end_ns(gpu_seq_[k]));
    std::vector<int64_t> pending;
    for (const LaunchAt& l : launch_at_) {
      if (g_.dur_ns[l.node] <= blocked || l.seq == 0) continue;
      const int64_t returned = g_.end_ns(l.node);
      // Nodes before it that had all ended by its return: a prefix of gpu_seq_[0, l.seq).
      const size_t done = static_cast<size_t>(
          std::upper_bound(ended_by.begin(), ended_by.begin() + l.seq, returned) -
          ended_by.begin());
      pending.push_back(static_cast<int64_t>(l.seq - done));
    }
    if (pending.size() < kMinBlockedLaunches) return;
    g_.queue_depth = static_cast<uint32_t>(std::max<int64_t>(Median(&pending), 1));
    for (const LaunchAt& l : launch_at_) {
      if (l.seq < g_.queue_depth + 1) continue;
      edges_.push_back({l.node, gpu_seq_[l.seq - g_.queue_depth - 1], EdgeKind::kQueue, 0});
      if (g_.dur_ns[l.node] > blocked) {  // the wait is the queue's: the call costs the median
        g_.start_ns[l.node] = g_.end_ns(l.node) - median;
        g_.dur_ns[l.node] = median;
      }
    }
  }

  // Typical lags: launch → start where the stream was free before the launch returned; the gap
  // between queued nodes where the launch returned before the predecessor ended. Per GPU node:
  // when its launch returned and when its stream was free (the previous node's end, or the
  // stream's earlier work outside the window).
  void MeasureTypicalLags() {
    std::vector<int64_t> launched(g_.size(), kNone), free(g_.size(), kNone);
    for (const Edge& e : edges_) {
      if (e.kind == EdgeKind::kLaunch) launched[e.to] = g_.end_ns(e.from);
      if (e.kind == EdgeKind::kStream) free[e.to] = g_.end_ns(e.from);
      if (e.kind == EdgeKind::kRoot && IsGpuNode(g_.kind[e.to])) free[e.to] = e.floor_ns;
    }
    std::vector<int64_t> latency, gap;
    for (size_t n = 0; n < g_.size(); ++n)
      if (IsGpuNode(g_.kind[n]) && launched[n] != kNone && free[n] <= launched[n])
        latency.push_back(g_.start_ns[n] - launched[n]);
    g_.launch_latency_ns =
        latency.size() >= kMinLagSamples ? Median(&latency) : kDefaultLaunchLatencyNs;
    const int64_t typical_latency = std::max<int64_t>(g_.launch_latency_ns, 0);
    for (size_t n = 0; n < g_.size(); ++n)
      if (IsGpuNode(g_.kind[n]) && launched[n] != kNone && free[n] != kNone &&
          launched[n] + typical_latency < free[n])
        gap.push_back(g_.start_ns[n] - free[n]);
    g_.stream_gap_ns = gap.size() >= kMinLagSamples ? Median(&gap) : 0;
  }

  // Cross-stream waits not recorded (a trace without cuda_sync records' wait fields) are found
  // where they show: a GPU node that starts more than kCrossStreamWaitNs after everything it
  // waits for in the graph, within kCrossStreamWindowNs of another stream's node ending, waited
  // for that node. A trace that records its waits is taken at its word.
  void AddUnrecordedCrossStreamWaits() {
    const StepGraph& g = g_;
    std::vector<int64_t> ready_by(g.size(), kNone);
    for (const Edge& e : edges_) {
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
    for (size_t sidx = 0; sidx < stream_nodes_.size(); ++sidx)
      for (uint32_t n : stream_nodes_[sidx]) stream_at[n] = static_cast<uint32_t>(sidx);
    const size_t before = edges_.size();
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
          edges_.push_back({static_cast<uint32_t>(n), m, EdgeKind::kCrossStream, 0});
          break;
        }
      }
    }
    g_.cross_stream_edges = static_cast<uint32_t>(edges_.size() - before);
  }

  // CSR by target; lags: each edge its kind's typical lag, the binding one exactly the observed
  // start (so the unchanged graph replays to the trace).
  void ToCsr() {
    StepGraph& g = g_;
    const size_t n_nodes = g.size();
    g.first_edge.assign(n_nodes + 1, 0);
    for (const Edge& e : edges_) ++g.first_edge[e.to + 1];
    for (size_t n = 0; n < n_nodes; ++n) g.first_edge[n + 1] += g.first_edge[n];
    g.edge_from.resize(edges_.size());
    g.edge_lag_ns.resize(edges_.size());
    g.edge_kind.resize(edges_.size());
    std::vector<int64_t> ready(edges_.size());  // the predecessor's observed end (root: the floor)
    std::vector<uint32_t> fill(g.first_edge.begin(), g.first_edge.end() - 1);
    for (const Edge& e : edges_) {
      const uint32_t k = fill[e.to]++;
      g.edge_from[k] = e.from;
      g.edge_kind[k] = e.kind;
      ready[k] = e.from == kRootNode ? e.floor_ns : g.end_ns(e.from);
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
  }

  const Trace& t_;
  const RuntimeCallTable& rt_;
  const GpuActivityTable& gpu_;
  const KernelClasses& classes_;
  const StepsResult& steps_;
  StepGraph g_;
  std::vector<Edge> edges_;

  size_t first_ = 0, last_ = 0;  // the window's steps in steps_.steps
  int64_t host_begin_ = 0, host_end_ = 0;
  std::vector<uint32_t> calls_;       // runtime rows in the window, in start order
  std::vector<uint32_t> gpu_first_;   // per call (position in calls_): first in gpu_rows_
  std::vector<uint32_t> gpu_rows_;    // GPU rows by launching call
  std::vector<int32_t> sync_row_of_;  // per call: its cuda_sync row, -1 none
  std::unordered_map<uint32_t, const SyncWaitInfo*> wait_of_row_;
  std::unordered_map<int64_t, uint32_t>
      record_mark_;  // event record's correlation → g_.size() then
  std::vector<std::pair<int64_t, int64_t>> loader_;  // DataLoader spans, merged
  std::vector<Marker> markers_;

  // Per stream (device pid, stream tid): its GPU nodes in launch order.
  std::unordered_map<uint64_t, uint32_t> stream_index_;
  std::vector<std::vector<uint32_t>> stream_nodes_;
  std::unordered_map<uint64_t, uint32_t> stream_by_number_;
  // Recorded stream waits not yet met: the waiting stream's next node waits for these.
  std::unordered_map<uint64_t, std::vector<uint32_t>> pending_waits_;

  int64_t cursor_ = 0;
  std::vector<uint32_t> lane_;           // host nodes in the order added
  std::vector<int64_t> lane_max_end_;    // the latest end among lane_[0..i], ns
  std::vector<uint32_t> lane_max_node_;  // the (last added) node that ends there
  int32_t current_step_ = -1;
  size_t next_marker_ = 0, next_loader_ = 0;
  size_t call_step_ = 0;           // the graph step the calls (in start order) have reached
  std::vector<uint32_t> gpu_seq_;  // GPU nodes in launch order
  std::vector<LaunchAt> launch_at_;
};

}  // namespace

StepGraph BuildStepGraph(const Trace& t, const KernelClasses& classes, const StepsResult& steps) {
  return StepGraphBuilder(t, classes, steps).Build();
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
