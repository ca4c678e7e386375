#include "whatif/whatif.h"

#include <algorithm>
#include <optional>

#include "analyze/host_work.h"
#include "analyze/memory.h"
#include "analyze/op_costs.h"
#include "hw/gpu_peaks.h"

namespace gpuscope::whatif {

namespace {

using analyze::EdgeKind;
using analyze::GraphChange;
using analyze::NodeKind;
using analyze::StepGraph;

std::vector<uint8_t>& EdgeOff(const StepGraph& g, GraphChange* ch) {
  if (ch->edge_off.empty()) ch->edge_off.assign(g.edge_from.size(), 0);
  return ch->edge_off;
}
std::vector<int64_t>& EdgeLag(const StepGraph& g, GraphChange* ch) {
  if (ch->edge_lag_ns.empty()) ch->edge_lag_ns = g.edge_lag_ns;
  return ch->edge_lag_ns;
}

// Takes edge k away when it is still there; counts the change (as SetDur does for a node).
size_t SetEdgeOff(const StepGraph& g, GraphChange* ch, size_t k) {
  std::vector<uint8_t>& off = EdgeOff(g, ch);
  if (off[k]) return 0;
  off[k] = 1;
  return 1;
}

std::optional<hw::GpuPeaks> PeaksOf(const Context& c) {
  if (c.results.op_costs.peaks) return c.results.op_costs.peaks;
  for (const DeviceProperties& d : c.trace.devices)
    if (auto p = hw::PeaksForDevice(d.name)) return p;
  return std::nullopt;
}

// Sets node n's duration to `dur` when that changes it; counts the change.
size_t SetDur(GraphChange* ch, size_t n, int64_t dur) {
  dur = std::max<int64_t>(dur, 0);
  if (ch->dur_ns[n] == dur) return 0;
  ch->dur_ns[n] = dur;
  return 1;
}

size_t DataWait(const Context& c, GraphChange* ch) {
  size_t changed = 0;
  for (size_t n = 0; n < c.graph.size(); ++n)
    if (c.graph.kind[n] == NodeKind::kDataWait) changed += SetDur(ch, n, 0);
  return changed;
}

size_t SyncsAsync(const Context& c, GraphChange* ch) {
  const StepGraph& g = c.graph;
  size_t changed = 0;
  for (size_t k = 0; k < g.edge_from.size(); ++k) {
    if (g.edge_kind[k] == EdgeKind::kSync) changed += SetEdgeOff(g, ch, k);
  }
  return changed;
}

bool PageableHtoD(const Trace& t, const StepGraph& g, size_t n) {
  if (g.kind[n] != NodeKind::kMemcpy) return false;
  const size_t r = static_cast<size_t>(g.row[n]);
  return t.gpu.copy_direction[r] == CopyDirection::kHtoD &&
         t.gpu.src_kind[r] == MemoryKind::kPageable;
}

size_t PinnedCopies(const Context& c, GraphChange* ch) {
  const StepGraph& g = c.graph;
  const std::optional<hw::GpuPeaks> peaks = PeaksOf(c);
  const double pinned = peaks ? peaks->h2d_pinned_gbps.Roof() : 0;  // B/ns
  size_t changed = 0;
  for (size_t n = 0; n < g.size(); ++n) {
    if (!PageableHtoD(c.trace, g, n)) continue;
    const int64_t bytes = c.trace.gpu.bytes[static_cast<size_t>(g.row[n])];
    const double now = static_cast<double>(ch->dur_ns[n]);
    const double at_pinned = bytes > 0 && pinned > 0 ? static_cast<double>(bytes) / pinned
                                                     : now / kPageableOverPinnedTime;
    changed += SetDur(ch, n, static_cast<int64_t>(std::min(now, at_pinned)));
  }
  // non_blocking: the host no longer waits for them.
  for (size_t k = 0; k < g.edge_from.size(); ++k) {
    if (g.edge_kind[k] == EdgeKind::kSync && PageableHtoD(c.trace, g, g.edge_from[k]))
      changed += SetEdgeOff(g, ch, k);
  }
  return changed;
}

// Rescales the GPU nodes of GEMM/conv/attention groups by `time(group) / group time`; autocast's
// casts (bf16 only) spread over the rescaled nodes by their traced time.
// Without the cost model: fp32 CUDA-core math kernels (by name) at kAssumedTensorCoreSpeedup.
size_t PrecisionByName(const Context& c, GraphChange* ch) {
  const StepGraph& g = c.graph;
  const analyze::KernelClasses& k = c.results.kernel_classes;
  if (k.name_slot.empty()) return 0;
  size_t changed = 0;
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.kind[n] != NodeKind::kKernel) continue;
    const StringId name = c.trace.gpu.name[static_cast<size_t>(g.row[n])];
    if (name >= k.name_slot.size() || k.name_slot[name] == analyze::KernelClasses::kNoSlot)
      continue;
    const analyze::MathKernelInfo& m = k.OfName(name).math;
    if (!m.is_math || m.precision != analyze::MathPrecision::kFp32Simt) continue;
    changed += SetDur(
        ch, n,
        static_cast<int64_t>(static_cast<double>(ch->dur_ns[n]) / kAssumedTensorCoreSpeedup));
  }
  return changed;
}

size_t Precision(const Context& c, GraphChange* ch, bool bf16) {
  const analyze::OpCosts& o = c.results.op_costs;
  const StepGraph& g = c.graph;
  const bool priced = o.shapes && o.peaks && !o.activity_group.empty() &&
                      o.peaks->Of(hw::MathPath::kBf16).Roof() > 0;
  if (!priced) return bf16 ? PrecisionByName(c, ch) : 0;
  std::vector<double> factor(o.groups.size(), 1.0);
  bool any = false;
  for (size_t i = 0; i < o.groups.size(); ++i) {
    const analyze::OpCostGroup& gr = o.groups[i];
    if (!gr.math || gr.time_ns <= 0) continue;
    const double t = bf16 ? analyze::Bf16TimeNs(gr, *o.peaks) : analyze::Tf32TimeNs(gr, *o.peaks);
    factor[i] = t / static_cast<double>(gr.time_ns);
    any = any || factor[i] < 1.0;
  }
  if (!any) return 0;
  double traced = 0;  // the rescaled nodes' traced time in the window
  for (size_t n = 0; n < g.size(); ++n) {
    if (!analyze::IsGpuNode(g.kind[n])) continue;
    const int32_t gr = o.activity_group[static_cast<size_t>(g.row[n])];
    if (gr >= 0 && factor[static_cast<size_t>(gr)] < 1.0)
      traced += static_cast<double>(g.dur_ns[n]);
  }
  const double casts = bf16 && o.peaks->hbm_gbps.Roof() > 0
                           ? o.fp32_forward_math_input_bytes_per_step * kAutocastCastTraffic /
                                 o.peaks->hbm_gbps.Roof() * static_cast<double>(g.steps.size())
                           : 0;
  size_t changed = 0;
  for (size_t n = 0; n < g.size(); ++n) {
    if (!analyze::IsGpuNode(g.kind[n])) continue;
    const int32_t gr = o.activity_group[static_cast<size_t>(g.row[n])];
    if (gr < 0 || !(factor[static_cast<size_t>(gr)] < 1.0)) continue;
    const double d = static_cast<double>(ch->dur_ns[n]);
    const double cast = traced > 0 ? casts * static_cast<double>(g.dur_ns[n]) / traced : 0;
    changed += SetDur(ch, n, static_cast<int64_t>(d * factor[static_cast<size_t>(gr)] + cast));
  }
  return changed;
}
size_t Bf16(const Context& c, GraphChange* ch) { return Precision(c, ch, true); }
size_t Tf32(const Context& c, GraphChange* ch) { return Precision(c, ch, false); }

size_t ChannelsLast(const Context& c, GraphChange* ch) {
  const StepGraph& g = c.graph;
  size_t changed = 0;
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.kind[n] != NodeKind::kKernel) continue;
    if (!analyze::IsLayoutTransposeKernel(
            c.trace.Str(c.trace.gpu.name[static_cast<size_t>(g.row[n])])))
      continue;
    changed += SetDur(ch, n, 0);
    for (uint32_t k = g.first_edge[n]; k < g.first_edge[n + 1]; ++k)  // and its launch
      if (g.edge_kind[k] == EdgeKind::kLaunch) changed += SetDur(ch, g.edge_from[k], 0);
  }
  return changed;
}

size_t Fusion(const Context& c, GraphChange* ch) {
  const analyze::OpCosts& o = c.results.op_costs;
  const StepGraph& g = c.graph;
  if (o.activity_fused_scale.empty()) return 0;
  size_t changed = 0;
  for (size_t n = 0; n < g.size(); ++n) {
    if (!analyze::IsGpuNode(g.kind[n])) continue;
    const float scale = o.activity_fused_scale[static_cast<size_t>(g.row[n])];
    if (scale < 1.0f)
      changed += SetDur(ch, n, static_cast<int64_t>(static_cast<double>(ch->dur_ns[n]) * scale));
  }
  return changed;
}

size_t CudaGraphs(const Context& c, GraphChange* ch) {
  const StepGraph& g = c.graph;
  const std::optional<hw::GpuPeaks> peaks = PeaksOf(c);
  const int64_t per_kernel = static_cast<int64_t>(peaks ? peaks->graph_kernel_ns : 1000);
  // The host lane's order (markers skipped): host time is captured only between two calls that
  // a graph replays (launches and other non-blocking runtime calls); the Python around a sync,
  // a blocking copy or the DataLoader (using .item()'s value, fetching the batch) stays.
  const size_t n_nodes = g.size();
  std::vector<uint32_t> prev_host(n_nodes, analyze::kRootNode),
      next_host(n_nodes, analyze::kRootNode);
  for (size_t n = 0; n < n_nodes; ++n)
    for (uint32_t k = g.first_edge[n]; k < g.first_edge[n + 1]; ++k)
      if (g.edge_kind[k] == EdgeKind::kHost) {
        prev_host[n] = g.edge_from[k];
        next_host[g.edge_from[k]] = static_cast<uint32_t>(n);
      }
  auto skip_markers = [&g](const std::vector<uint32_t>& link, uint32_t n) {
    while (n != analyze::kRootNode && g.kind[n] == NodeKind::kMarker) n = link[n];
    return n;
  };
  // A call a graph replays: a launch that is not a blocking copy's issue, or a non-blocking call.
  auto captured_call = [&](uint32_t n) {
    if (n == analyze::kRootNode) return false;
    if (g.dur_ns[n] > analyze::kOneTimeCallNs) return false;  // the driver's one-time work stays
    if (g.kind[n] == NodeKind::kRuntime) return true;
    if (g.kind[n] != NodeKind::kLaunch) return false;
    const uint32_t next = skip_markers(next_host, next_host[n]);
    return next == analyze::kRootNode || g.kind[next] != NodeKind::kSyncReturn;
  };
  // Compilation is not captured: a graph replays compiled kernels, and code that compiles every
  // step (changing shapes) compiles, and captures again, with graphs too. compile_ahead prices it.
  const analyze::Spans& compile = c.results.host_work.compile_spans;
  auto compiling = [&](size_t n) {
    return std::min(ch->dur_ns[n], analyze::OverlapNs(compile, g.start_ns[n], g.end_ns(n)));
  };
  size_t changed = 0;
  for (size_t n = 0; n < n_nodes; ++n) {
    const NodeKind k = g.kind[n];
    if (g.step[n] < 0 && !analyze::IsGpuNode(k)) continue;
    if ((k == NodeKind::kLaunch || k == NodeKind::kRuntime) &&
        g.dur_ns[n] <= analyze::kOneTimeCallNs) {
      changed += SetDur(ch, n, compiling(n));
    } else if (k == NodeKind::kHostCompute) {
      if (captured_call(skip_markers(prev_host, prev_host[n])) &&
          captured_call(skip_markers(next_host, next_host[n]))) {
        changed += SetDur(ch, n, compiling(n));
      }
    } else if (analyze::IsGpuNode(k) && ch->dur_ns[n] < per_kernel) {
      changed += SetDur(ch, n, per_kernel);
    }
  }
  // Back to back on the GPU: no launch latency, no gap between kernels (the per-kernel cost is in
  // the kernels' time above). A wait longer than its edge's typical lag is for something the
  // trace does not record, and a graph does not remove it: only the typical part goes.
  std::vector<int64_t>& lag = EdgeLag(g, ch);
  for (size_t k = 0; k < g.edge_from.size(); ++k) {
    const EdgeKind kind = g.edge_kind[k];
    if (kind == EdgeKind::kQueue)
      changed += SetEdgeOff(g, ch, k);  // one graph launch per step: no queue
    if (kind != EdgeKind::kLaunch && kind != EdgeKind::kStream) continue;
    const int64_t typical = std::max<int64_t>(g.TypicalLag(kind), 0);
    const int64_t now = lag[k] > typical ? lag[k] - typical : std::min<int64_t>(lag[k], 0);
    if (now != lag[k]) {
      lag[k] = now;
      ++changed;
    }
  }
  return changed;
}

// Twice the samples per step: kernels rescaled by the cost model (a bf16/fp16 GEMM by the
// measured efficiency curve at twice its FLOPs, any other kernel's time above kKernelFloorNs
// doubled), copies and the DataLoader's work doubled; collectives and optimizer kernels (sized by
// the parameters) and the host's launches unchanged. The step is then per today's batch.
size_t BatchX2(const Context& c, GraphChange* ch) {
  const StepGraph& g = c.graph;
  const analyze::DeviceMemory* m = analyze::RankDevice(c.results.memory);
  if (!m || m->total_bytes <= 0 || m->peak_allocated_bytes <= 0) return 0;  // cannot check it fits
  if (kBatchFactor * static_cast<double>(m->peak_allocated_bytes) >
      kBatchMemoryShare * static_cast<double>(m->total_bytes)) {
    return 0;
  }
  const analyze::OpCosts& o = c.results.op_costs;
  const bool groups = !o.activity_group.empty();
  size_t changed = 0;
  auto grow = [](double t) {  // the time above the floor grows with the work
    const double floor = std::min(t, static_cast<double>(kKernelFloorNs));
    return floor + kBatchFactor * (t - floor);
  };
  for (size_t n = 0; n < g.size(); ++n) {
    const NodeKind k = g.kind[n];
    const double t = static_cast<double>(ch->dur_ns[n]);
    if (k == NodeKind::kDataWait || k == NodeKind::kMemcpy || k == NodeKind::kMemset) {
      changed += SetDur(ch, n, static_cast<int64_t>(t * kBatchFactor));
      continue;
    }
    if (k != NodeKind::kKernel) continue;  // collectives: the gradients do not grow
    const int32_t gi = groups ? o.activity_group[static_cast<size_t>(g.row[n])] : -1;
    double scaled = grow(t);
    if (gi >= 0) {
      const analyze::OpCostGroup& gr = o.groups[static_cast<size_t>(gi)];
      if (gr.family == analyze::OpFamily::kOptimizer) continue;  // the parameters do not grow
      const bool curve = o.peaks && o.peaks->has_curve && gr.flops > 0 &&
                         (gr.path == hw::MathPath::kBf16 || gr.path == hw::MathPath::kFp16) &&
                         (gr.family == analyze::OpFamily::kGemm);
      if (curve) {
        scaled = t * kBatchFactor * o.peaks->Bf16GemmAchievable(gr.flops) /
                 o.peaks->Bf16GemmAchievable(kBatchFactor * gr.flops);
      }
    }
    changed += SetDur(ch, n, static_cast<int64_t>(scaled));
  }
  if (changed > 0) ch->step_scale *= kBatchFactor;
  return changed;
}

size_t CommOverlap(const Context& c, GraphChange* ch) {
  size_t changed = 0;
  for (size_t n = 0; n < c.graph.size(); ++n)
    if (c.graph.kind[n] == NodeKind::kCommunication) changed += SetDur(ch, n, 0);
  return changed;
}

// Takes the time of `spans` (analyze::HostWork's, sorted and disjoint) out of the host nodes
// that overlap them: host compute, and with `calls` also runtime calls and launches (a compile
// op's own driver calls, cuModuleLoadData). Fixes applied before may have shortened a node
// already: the cut is taken from what is left.
size_t CutHostTime(const Context& c, GraphChange* ch, const analyze::Spans& spans, bool calls) {
  const StepGraph& g = c.graph;
  size_t changed = 0;
  if (spans.empty()) return 0;
  for (size_t n = 0; n < g.size(); ++n) {
    const NodeKind k = g.kind[n];
    if (k != NodeKind::kHostCompute &&
        !(calls && (k == NodeKind::kRuntime || k == NodeKind::kLaunch)))
      continue;
    const int64_t cut = analyze::OverlapNs(spans, g.start_ns[n], g.end_ns(n));
    if (cut > 0) changed += SetDur(ch, n, ch->dur_ns[n] - cut);
  }
  return changed;
}

// The driver's memory calls (cudaMalloc, cudaFree, hipFree, …) cost nothing: the caching
// allocator keeps its blocks. A call longer than analyze::kDriverInitCallNs is the driver
// initialising (context creation), which no allocator setting removes: it stays.
size_t AllocatorCached(const Context& c, GraphChange* ch) {
  const StepGraph& g = c.graph;
  size_t changed = 0;
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.kind[n] != NodeKind::kRuntime && g.kind[n] != NodeKind::kSyncReturn) continue;
    if (g.row[n] < 0 || g.dur_ns[n] > analyze::kDriverInitCallNs) continue;  // initialisation stays
    if (analyze::IsAllocatorCall(c.trace.Str(c.trace.runtime.name[static_cast<size_t>(g.row[n])])))
      changed += SetDur(ch, n, 0);
  }
  return changed;
}

size_t CompileAhead(const Context& c, GraphChange* ch) {
  return CutHostTime(c, ch, c.results.host_work.compile_spans, true);
}

// Only where the unrecorded time is most of the step (analyze::kUnrecordedShare): below, it is
// the Python every step runs between ops, which no change of the user's removes.
size_t UnrecordedRemoved(const Context& c, GraphChange* ch) {
  const analyze::HostWork& h = c.results.host_work;
  const int64_t step = c.results.steps.mean_steady_step_ns;
  if (h.windows == 0 || step <= 0 ||
      !(static_cast<double>(h.unrecorded_ns) / h.windows >
        analyze::kUnrecordedShare * static_cast<double>(step)))
    return 0;
  return CutHostTime(c, ch, h.unrecorded_spans, false);
}

// The host's work in the GPU's unexplained idle gaps (idle_gaps: ≥ 1 ms, after no sync, not the
// DataLoader's, a compile's or the allocator's) leaves the step's critical path.
size_t IdleHostOff(const Context& c, GraphChange* ch) {
  return CutHostTime(c, ch, c.results.idle_gaps.unexplained_spans, false);
}

GraphChange Unchanged(const StepGraph& g) {
  GraphChange ch;
  ch.dur_ns = g.dur_ns;
  return ch;
}

}  // namespace

const std::vector<WhatIf>& WhatIfs() {
  static const std::vector<WhatIf> kTable = {
      {"data_wait", "input_pipeline_stall", "DataLoader workers and prefetch",
       "DataLoader workers (num_workers > 0, prefetch) prepare the next batch while the step runs: "
       "the main process no longer waits inside the DataLoader; everything else as traced.",
       DataWait, ""},
      {"syncs_async", "sync_points", "no host-blocking syncs in the step",
       "Every host-blocking call (.item(), .cpu(), print(tensor), torch.cuda.synchronize(), "
       "blocking copies) is made asynchronous or moved out of the step: the host no longer waits "
       "for the GPU there; the GPU's work is unchanged.",
       SyncsAsync, ""},
      {"pinned_copies", "pageable_copies", "pinned, non_blocking host→device copies",
       "Host→device copies from pageable memory come from pinned memory at the GPU's pinned "
       "bandwidth (H200: 55.3 GB/s measured, against 17.2 pageable) with non_blocking=True: the "
       "host does not wait for them.",
       PinnedCopies, ""},
      {"bf16", "fp32_math", "bf16 autocast",
       "Under bf16 autocast each GEMM/conv/attention op on an fp32 path keeps its efficiency at "
       "the bf16 peak (compute-bound) or moves half its bytes (memory-bound); autocast's casts "
       "(3× the fp32 inputs of forward GEMM/conv ops at HBM bandwidth) are added to them; the "
       "host's launches are unchanged. Without recorded shapes or a bf16 peak (V100: fp16), fp32 "
       "CUDA-core math kernels run 2× faster (conservative; peak ratios are 8-16×).",
       Bf16, ""},
      {"tf32", "", "TF32 allowed for fp32 matmuls",
       "With TF32 allowed, compute-bound GEMMs and convolutions on fp32 CUDA cores keep their "
       "efficiency at the TF32 peak; everything else as traced.",
       Tf32, "bf16"},
      {"channels_last", "nchw_layout", "channels_last",
       "channels_last removes cuDNN's NCHW↔NHWC transpose kernels and their launches; the "
       "convolutions themselves run as traced.",
       ChannelsLast, ""},
      {"fusion", "unfused_elementwise", "fused elementwise chains",
       "Each chain of elementwise kernels runs as one fused kernel (the chain's largest op's bytes "
       "at HBM bandwidth); the host's launches are unchanged.",
       Fusion, ""},
      {"cuda_graphs", "launch_bound", "the step captured in a CUDA graph",
       "The step's kernels replay from one CUDA graph: no launch calls and no Python or framework "
       "time between two of them, the kernels back to back, each at least the graph's per-kernel "
       "cost (H200: 0.96 µs measured); data loading, host-blocking syncs and the host time next "
       "to them stay, they cannot be captured.",
       CudaGraphs, ""},
      {"idle_host_off", "idle_gaps", "the host work in the GPU's idle gaps off the step",
       "The host work during the GPU's unexplained idle gaps of 1 ms or more (logging, metrics, "
       "checkpointing, a Python optimizer loop: the ops idle_gaps names) leaves the step's "
       "critical path (every N steps, in a background thread, or fused): the host time those "
       "gaps hold is gone; DataLoader waits, syncs, compiles and the driver's memory calls in "
       "them are other fixes'.",
       IdleHostOff, ""},
      {"batch_x2", "memory_underused", "twice the batch (time per today's batch)",
       "Twice the samples per step, where twice today's peak allocated memory fits in 90 % of the "
       "device: GEMMs at the bf16 efficiency curve's throughput for twice their FLOPs, other "
       "kernels' time above 2 µs doubled, copies and the DataLoader's work doubled, collectives, "
       "optimizer kernels and the host's launches unchanged; the saving is per today's batch "
       "(throughput), and the learning rate schedule needs retuning.",
       BatchX2, ""},
      {"comm_overlap", "exposed_communication", "communication overlapped with compute",
       "Collectives are hidden entirely behind compute (bucketing, overlap with backward): an "
       "upper bound.",
       CommOverlap, ""},
      {"allocator_cached", "allocator_churn", "the caching allocator keeping its memory",
       "The driver's memory calls in the step (cudaMalloc, cudaFree, hipFree, pinned-host "
       "allocations) are gone: the caching allocator reuses its blocks; their host time leaves "
       "the step. cudaFree's implicit device synchronisation is not modelled, so the real saving "
       "can be larger.",
       AllocatorCached, ""},
      {"compile_ahead", "jit_compile", "compilation before the measured steps",
       "The host time of compile and autotune ops in the step (TorchInductor, Triton, nvFuser, "
       "NVRTC, module loads) is gone: compiled once before, shapes kept static, the cache kept; "
       "the compiled code runs as traced.",
       CompileAhead, ""},
      {"unrecorded_removed", "unrecorded_host_time", "the unrecorded host time off the step",
       "The host time in the step that no recorded op or runtime call covers is gone: it is "
       "one-time warm-up (compilation, autotuning, lazy initialisation) that later steps do not "
       "have, or Python that can move off the step. The trace cannot tell which: a condition, "
       "never part of the plan.",
       UnrecordedRemoved, "", true},
  };
  return kTable;
}

const WhatIf* FindWhatIf(std::string_view id) {
  for (const WhatIf& w : WhatIfs())
    if (w.id == id) return &w;
  return nullptr;
}

const WhatIf* WhatIfForRule(std::string_view rule) {
  if (rule.empty()) return nullptr;
  for (const WhatIf& w : WhatIfs())
    if (w.rule == rule) return &w;
  return nullptr;
}

const FixResult* WhatIfResults::Fix(std::string_view id) const {
  for (const FixResult& f : fixes)
    if (f.id == id) return &f;
  return nullptr;
}

const PlanEntry* WhatIfResults::Planned(std::string_view id) const {
  for (const PlanEntry& p : plan)
    if (p.id == id) return &p;
  return nullptr;
}

WhatIfResults RunWhatIfs(const Trace& trace, const analyze::RankResults& results) {
  WhatIfResults out;
  const StepGraph& g = results.step_graph;
  if (g.empty()) return out;
  const Context ctx{trace, results, g};
  out.replayed = true;
  analyze::ReplayResult last = analyze::Replay(g);  // the unchanged step; then the plan's latest
  out.step_ns = last.mean_step_ns;
  for (const WhatIf& w : WhatIfs()) {
    GraphChange ch = Unchanged(g);
    const size_t changed = w.apply(ctx, &ch);
    if (changed == 0) continue;
    const int64_t step = analyze::Replay(g, ch).mean_step_ns;
    out.fixes.push_back({w.id, changed, step, out.step_ns - step});
  }
  // The plan: by saving alone, each applied on top of those before it.
  std::vector<const FixResult*> order;
  const double min_saving = kMinPlanShare * static_cast<double>(out.step_ns);
  auto candidate = [&](const FixResult& f) {
    return static_cast<double>(f.saving_ns) > min_saving;
  };
  for (const FixResult& f : out.fixes) {
    if (!candidate(f) || FindWhatIf(f.id)->conditional) continue;
    const std::string& other = FindWhatIf(f.id)->alternative_of;
    const FixResult* preferred = other.empty() ? nullptr : out.Fix(other);
    if (preferred && candidate(*preferred)) continue;
    order.push_back(&f);
  }
  std::stable_sort(order.begin(), order.end(), [](const FixResult* a, const FixResult* b) {
    return a->saving_ns > b->saving_ns;
  });
  GraphChange plan = Unchanged(g);
  int64_t step = out.step_ns;
  for (const FixResult* f : order) {
    GraphChange before = plan;
    FindWhatIf(f->id)->apply(ctx, &plan);
    analyze::ReplayResult r = analyze::Replay(g, plan);
    if (r.mean_step_ns >= step) {  // adds nothing once the fixes before it are in
      plan = std::move(before);
      continue;
    }
    out.plan.push_back({f->id, r.mean_step_ns, step - r.mean_step_ns});
    step = r.mean_step_ns;
    last = std::move(r);
  }
  out.planned_step_ns = step;
  const analyze::CriticalPath after = analyze::FindCriticalPath(g, last, plan);
  out.bound_after = after.bound_by;
  out.path_after_per_step_ns = after.per_step_ns;
  return out;
}

int64_t PredictStep(const Trace& trace, const analyze::RankResults& results,
                    const std::vector<std::string>& ids) {
  const StepGraph& g = results.step_graph;
  if (g.empty()) return 0;
  const Context ctx{trace, results, g};
  GraphChange ch = Unchanged(g);
  for (const std::string& id : ids)
    if (const WhatIf* w = FindWhatIf(id)) w->apply(ctx, &ch);
  return analyze::Replay(g, ch).mean_step_ns;
}

}  // namespace gpuscope::whatif
