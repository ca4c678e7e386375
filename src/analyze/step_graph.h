// The steady-state steps as a dependency graph, its replay and its critical path: what bounds
// each step, and the engine every what-if (src/whatif) recomputes the step with.
//
// Definitions (times ns; docs/metrics.md "Critical path" has the worked example):
//  * Window: the steady-state steps of steps.h, from the first one's host start to the last one's
//    host end, as one graph (a step's work that runs into the next step stays connected to it);
//    the middle kMaxGraphSteps of them when there are more (steady steps are alike; the graph
//    and every replay then cost the same on a 1 GB trace as on a small one).
//  * Host lane: every runtime/driver call that starts in the window, all threads, in start order
//    (PyTorch's forward and its autograd thread take turns: the host is one chain). The time
//    between two calls is a host node: data wait inside a DataLoader op (is_dataloader), else host
//    compute (Python and ATen CPU work). Calls: launch (kernel, copy, set, graph launch), other
//    runtime calls, and host-blocking calls (sync_points.h categories), which end in a sync-return
//    node that waits for the GPU work it blocks on.
//  * GPU lanes: each stream's kernels, copies and sets launched from the window (launch → node),
//    in order on the stream. A stream's first node waits for the stream's earlier work (fixed).
//  * Cross-stream waits, read where the trace records them: a cuda_sync "Stream Wait Event" record
//    (Kineto ≥ 2.4) names the cudaEventRecord call (by correlation) and the stream it recorded on;
//    the waiting stream's next node waits for that stream's last node launched before the record.
//    A trace without them: a GPU node that starts more than 5 µs after all it waits for in the
//    graph, within 5 µs of another stream's node ending, is taken to wait for that node (an NCCL
//    kernel for its gradients, the optimizer for the all-reduce).
//  * Waits: an event synchronize whose record names its event waits for that event's node; a
//    stream synchronize whose record names its stream, for that stream's last node; any other
//    synchronize, for each stream's last node launched before it; a blocking copy or set waits
//    for its own activity.
//  * Launch queue: a launch call returns only when CUDA's queue has room; a host far ahead of
//    the GPU sits in launch calls (B1 in the H200 lab: 1 ms each). Where launches block (longer
//    than kBlockedLaunchNs and 10× the median launch), the queue's depth is measured (the median
//    number of GPU nodes still pending when a blocked launch returns) and every launch waits for
//    the GPU node that many launches before it; a blocked launch costs the median launch.
//  * Edge lags: a node starts at max over its edges of (predecessor's end + the edge's lag). Each
//    edge has its kind's typical lag (host 0; launch: the median launch→start latency of kernels
//    the GPU was idle for; stream: the median gap between queued kernels, negative when Hopper's
//    programmatic dependent launch starts a kernel before its predecessor ends); the edge that
//    binds takes exactly the observed start. So the unchanged graph replays to the trace's times
//    to the ns, and a node whose binding predecessor changes gets its typical lag.
//  * Replay: node ends recomputed in topological order with changed durations and edges removed,
//    O(V + E). Step k's replayed time: from max(previous step's end, its host start) to
//    max(its host end, the end of the GPU work launched inside its host span) — steps.h's
//    definition, so the unchanged replay reproduces steps.h's steady steps.
//  * Critical path: from the window's end, back along each node's binding edge. Each instant of
//    the window goes to one category (the later node where two overlap), so the parts sum to the
//    window; a step's parts sum to the step.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/kernel_class.h"
#include "analyze/steps.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

inline constexpr size_t kMaxGraphSteps = 16;
// A runtime call longer than this (launches cost µs; a launch blocked by a full queue is modelled
// by the queue) is the driver's one-time work: context creation (cudaDeviceGetStreamPriorityRange
// 29.9 s on a real A100 trace), lazy module loading (a 3 s first cudaLaunchKernel), memory from
// the OS (cudaMalloc, cudaFree). On the critical path it is host time, not launch overhead, and a
// CUDA graph does not remove it.
inline constexpr int64_t kOneTimeCallNs = 1'000'000;

enum class NodeKind : uint8_t {
  kMarker,       // zero length: a steady step's host start or host end
  kHostCompute,  // host time between runtime calls
  kDataWait,     // host time inside a DataLoader op
  kLaunch,       // a launch call (kernel, copy, set, graph), or a blocking copy's issue
  kRuntime,      // any other runtime call that does not block the host
  kSyncReturn,   // the return of a host-blocking call, after the GPU work it waits on
  kKernel,
  kCommunication,  // NCCL / RCCL kernels
  kMemcpy,
  kMemset,
  kCount
};
const char* NodeKindName(NodeKind k);
inline bool IsGpuNode(NodeKind k) { return k >= NodeKind::kKernel && k < NodeKind::kCount; }

// kQueue: a launch that found CUDA's launch queue full returns when the GPU has finished the work
// queued `queue_depth` launches before it.
// kCrossStream: a node waits for another stream's node (see Cross-stream waits above).
enum class EdgeKind : uint8_t { kRoot, kHost, kLaunch, kStream, kSync, kQueue, kCrossStream };

// Where critical-path time goes (what bounds the step).
enum class PathCategory : uint8_t {
  kHostCompute,     // Python and framework CPU work between runtime calls
  kLaunchOverhead,  // runtime calls (launches and the rest) and the launch → GPU start latency
  kDataWait,        // the host inside a DataLoader op
  kSync,            // a blocking call's own return time
  kGpuCompute,      // kernels
  kCommunication,   // collectives
  kCopy,            // memcpy and memset
  kGpuIdle,         // a GPU node waiting longer than its edge's typical lag: a cause the trace
                    // does not record (another stream's event, clocks), or kernel-to-kernel gaps
  kCount
};
inline constexpr size_t kPathCategoryCount = static_cast<size_t>(PathCategory::kCount);
const char* PathCategoryName(PathCategory c);  // "host_compute", "launch_overhead", …
using PathArray = std::array<int64_t, kPathCategoryCount>;
PathCategory CategoryOfNode(NodeKind k);

inline constexpr uint32_t kRootNode = UINT32_MAX;

struct StepGraph {
  // Nodes in topological order: every edge runs from a lower index to a higher one.
  std::vector<int64_t> start_ns;  // observed
  std::vector<int64_t> dur_ns;    // observed cost (a sync return: after the GPU finished)
  std::vector<NodeKind> kind;
  std::vector<int32_t> row;   // GPU nodes: Trace::gpu row; calls: Trace::runtime row; else -1
  std::vector<int32_t> step;  // index into `steps` whose host span launched it; -1 none
  // Incoming edges, CSR: node n's edges are [first_edge[n], first_edge[n + 1]).
  std::vector<uint32_t> first_edge;
  std::vector<uint32_t> edge_from;  // kRootNode: the window's origin
  std::vector<int64_t> edge_lag_ns;
  std::vector<EdgeKind> edge_kind;
  int64_t origin_ns = 0;  // the window's start (first steady step's start)

  struct Step {
    int32_t step = -1;                      // N of ProfilerStep#N
    uint32_t host_begin = 0, host_end = 0;  // marker nodes
    int64_t prev_end_ns = 0;                // the previous step's observed end (fixed)
    int64_t observed_ns = 0;                // steps.h's duration
  };
  std::vector<Step> steps;
  // The typical lags of non-binding edges.
  int64_t launch_latency_ns = 0;
  int64_t stream_gap_ns = 0;
  uint32_t queue_depth = 0;         // 0: no launch found the queue full
  uint32_t cross_stream_edges = 0;  // inferred (a trace without cuda_sync wait records)
  uint32_t recorded_waits = 0;      // waits read from cuda_sync records

  size_t size() const { return start_ns.size(); }
  bool empty() const { return steps.empty(); }
  // The lag an edge of this kind gets when it does not bind: launch latency, the gap between
  // queued kernels, 0 for the rest.
  int64_t TypicalLag(EdgeKind k) const {
    return k == EdgeKind::kLaunch ? launch_latency_ns : k == EdgeKind::kStream ? stream_gap_ns : 0;
  }
  int64_t end_ns(size_t n) const { return start_ns[n] + dur_ns[n]; }
};

StepGraph BuildStepGraph(const Trace& trace, const KernelClasses& classes,
                         const StepsResult& steps);

// A what-if: new costs, and edges taken away. Empty vectors keep the observed ones.
struct GraphChange {
  std::vector<int64_t> dur_ns;       // per node
  std::vector<uint8_t> edge_off;     // per edge: 1 removes it
  std::vector<int64_t> edge_lag_ns;  // per edge
  // Samples per step relative to the trace's: a what-if that grows the batch replays steps of
  // this many of today's batches, and the mean step is divided by it (time per today's batch).
  double step_scale = 1.0;
};

struct ReplayResult {
  std::vector<int64_t> end_ns;         // per node
  std::vector<int64_t> step_start_ns;  // per graph step
  std::vector<int64_t> step_end_ns;
  int64_t mean_step_ns = 0;  // mean of the steps' durations ÷ GraphChange::step_scale
};

// Recomputes every node's end with the change applied, O(V + E).
ReplayResult Replay(const StepGraph& g, const GraphChange& change = {});

// One stretch of the critical path.
struct PathSegment {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  PathCategory category = PathCategory::kHostCompute;
};

struct CriticalPath {
  bool built = false;           // the trace has steady steps with GPU work
  size_t nodes = 0, edges = 0;  // of the graph
  size_t steps = 0;
  int64_t window_ns = 0;  // the window's replayed length (= the observed one)
  // Replaying the unchanged graph: its mean step against steps.h's (they must agree).
  int64_t replayed_step_ns = 0;
  int64_t observed_step_ns = 0;
  PathArray total_ns{};                             // per category, the window
  PathArray per_step_ns{};                          // the same divided over the steps
  std::vector<int32_t> step_numbers;                // N of each ProfilerStep#N of the window
  std::vector<PathArray> step_ns;                   // per step, per category (sums to the step)
  std::vector<int64_t> step_start_ns, step_end_ns;  // per step, replayed (trace clock)
  std::vector<PathSegment> segments;  // in time order, adjacent ones of one category merged
  int64_t launch_latency_ns = 0;
  int64_t stream_gap_ns = 0;
  uint32_t queue_depth = 0;
  uint32_t cross_stream_edges = 0;
  uint32_t recorded_waits = 0;
  PathCategory bound_by = PathCategory::kHostCompute;  // its largest category
};

// The critical path of the replayed graph (`replay` from Replay(g) or a changed one).
CriticalPath FindCriticalPath(const StepGraph& g, const ReplayResult& replay,
                              const GraphChange& change = {});

}  // namespace gpuscope::analyze
