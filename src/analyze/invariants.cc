#include "analyze/invariants.h"

#include <cmath>

namespace gpuscope::analyze {

namespace {

class Checker {
 public:
  explicit Checker(std::vector<std::string>* out) : out_(out) {}

  // A length of time or a count of bytes: never negative.
  void NonNegative(const std::string& what, int64_t v) {
    if (v < 0) out_->push_back(what + " = " + std::to_string(v) + " < 0");
  }
  void NonNegative(const std::string& what, double v) {
    if (!(v >= 0)) out_->push_back(what + " = " + std::to_string(v) + " is not ≥ 0");
  }
  // A share of a whole: in [0, 1] (allowing float rounding).
  void Share(const std::string& what, double v) {
    if (!(v >= 0 && v <= 1 + 1e-9)) out_->push_back(what + " = " + std::to_string(v) + " ∉ [0, 1]");
  }
  // A share that may be absent (-1).
  void ShareOrAbsent(const std::string& what, double v) {
    if (v != -1) Share(what, v);
  }
  void Equal(const std::string& what, int64_t a, int64_t b) {
    if (a != b) out_->push_back(what + ": " + std::to_string(a) + " ≠ " + std::to_string(b));
  }
  void AtMost(const std::string& what, int64_t part, int64_t whole) {
    if (part > whole)
      out_->push_back(what + ": " + std::to_string(part) + " > " + std::to_string(whole));
  }

 private:
  std::vector<std::string>* out_;
};

void CheckGpuTime(const GpuTime& g, Checker& c) {
  const TemporalBreakdown& tb = g.temporal;
  c.NonNegative("gpu_time.temporal.span_ns", tb.span_ns);
  c.NonNegative("gpu_time.temporal.idle_ns", tb.idle_ns);
  c.NonNegative("gpu_time.temporal.compute_ns", tb.compute_ns);
  c.NonNegative("gpu_time.temporal.non_compute_ns", tb.non_compute_ns);
  c.AtMost("gpu_time.temporal idle ≤ span", tb.idle_ns, tb.span_ns);
  const ExclusiveBreakdown& ex = g.exclusive;
  c.NonNegative("gpu_time.exclusive.compute_ns", ex.compute_ns);
  c.NonNegative("gpu_time.exclusive.exposed_communication_ns", ex.exposed_communication_ns);
  c.NonNegative("gpu_time.exclusive.exposed_memory_ns", ex.exposed_memory_ns);
  c.NonNegative("gpu_time.exclusive.other_ns", ex.other_ns);
  c.NonNegative("gpu_time.exclusive.idle_ns", ex.idle_ns);
  c.Equal(
      "gpu_time.exclusive parts sum to span",
      ex.compute_ns + ex.exposed_communication_ns + ex.exposed_memory_ns + ex.other_ns + ex.idle_ns,
      ex.span_ns);
  for (const StreamIdle& s : g.idle_by_stream) {
    const std::string p = "gpu_time.idle_by_stream[" + std::to_string(s.stream) + "].";
    c.NonNegative(p + "host_wait_ns", s.host_wait_ns);
    c.NonNegative(p + "kernel_wait_ns", s.kernel_wait_ns);
    c.NonNegative(p + "other_ns", s.other_ns);
    c.NonNegative(p + "overlap_ns", s.overlap_ns);
  }
  c.ShareOrAbsent("gpu_time.comm_compute_overlap_ratio", g.comm_compute_overlap_ratio);
  c.NonNegative("gpu_time.communication_ns", g.communication_ns);
}

void CheckSteps(const StepsResult& st, Checker& c) {
  for (size_t i = 0; i < st.steps.size(); ++i) {
    const StepBreakdown& s = st.steps[i];
    const std::string p = "steps[" + std::to_string(i) + "] (" + s.name + ").";
    c.NonNegative(p + "duration_ns", s.duration_ns);
    c.Equal(p + "duration = end − start", s.duration_ns, s.end_ns - s.start_ns);
    int64_t sum = 0;
    for (size_t k = 0; k < kStepCategoryCount; ++k) {
      c.NonNegative(p + StepCategoryName(static_cast<StepCategory>(k)) + "_ns", s.category_ns[k]);
      sum += s.category_ns[k];
    }
    c.Equal(p + "categories sum to the duration", sum, s.duration_ns);
  }
  c.NonNegative("steps.mean_steady_step_ns", st.mean_steady_step_ns);
  c.NonNegative("steps.mean_complete_step_ns", st.mean_complete_step_ns);
  for (size_t k = 0; k < kStepCategoryCount; ++k) {
    const std::string name = StepCategoryName(static_cast<StepCategory>(k));
    c.NonNegative("steps.mean_steady_ns." + name, st.mean_steady_ns[k]);
    c.NonNegative("steps.mean_complete_ns." + name, st.mean_complete_ns[k]);
  }
}

void CheckKernels(const KernelsResult& k, Checker& c) {
  for (const ClassKernels& cls : k.classes) {
    const std::string p = std::string("kernels.") + KernelClassName(cls.cls) + ".";
    c.NonNegative(p + "total_ns", cls.total_ns);
    for (const KernelRow& row : cls.top) {
      c.NonNegative(p + row.name + ".total_ns", row.total_ns);
      c.NonNegative(p + row.name + ".min_ns", row.min_ns);
      c.Share(p + row.name + ".share", row.share);
    }
  }
  c.NonNegative("kernels.math_ns", k.math_ns);
  c.NonNegative("kernels.tensor_core_ns", k.tensor_core_ns);
  c.AtMost("kernels tensor_core_ns ≤ math_ns", k.tensor_core_ns, k.math_ns);
}

void CheckLaunchSummary(const std::string& p, const LaunchSummary& s, Checker& c) {
  c.NonNegative(p + "median_cpu_duration_ns", s.median_cpu_duration_ns);
  c.NonNegative(p + "median_gpu_duration_ns", s.median_gpu_duration_ns);
  c.NonNegative(p + "median_launch_delay_ns", s.median_launch_delay_ns);
  c.NonNegative(p + "p95_launch_delay_ns", s.p95_launch_delay_ns);
  c.NonNegative(p + "total_cpu_duration_ns", s.total_cpu_duration_ns);
}

void CheckLaunches(const LaunchStats& l, Checker& c) {
  CheckLaunchSummary("launches.all.", l.all, c);
  CheckLaunchSummary("launches.hta.", l.hta, c);
  for (const LaunchRow& row : l.rows) {
    c.NonNegative("launches.rows.cpu_duration_ns", row.cpu_duration_ns);
    c.NonNegative("launches.rows.gpu_duration_ns", row.gpu_duration_ns);
  }
  c.NonNegative("launches.graphs.total_cpu_duration_ns", l.graphs.total_cpu_duration_ns);
  c.NonNegative("launches.graphs.total_gpu_duration_ns", l.graphs.total_gpu_duration_ns);
}

void CheckCopies(const CopyStats& s, Checker& c) {
  for (const CopyGroup& g : s.groups) {
    c.NonNegative("copies.groups.time_ns", g.time_ns);
    c.NonNegative("copies.groups.bytes", g.bytes);
    c.NonNegative("copies.groups.achieved_gbps", g.achieved_gbps);
  }
  for (const DirectionTotals& d : s.directions) {
    c.NonNegative("copies.directions.time_ns", d.time_ns);
    c.NonNegative("copies.directions.achieved_gbps", d.achieved_gbps);
  }
  c.NonNegative("copies.memcpy_time_ns", s.memcpy_time_ns);
  c.NonNegative("copies.tiny_memcpy_time_ns", s.tiny_memcpy_time_ns);
}

void CheckSync(const SyncStats& s, Checker& c) {
  for (const SyncPoint& p : s.points) {
    c.NonNegative("sync.points.blocked_ns", p.blocked_ns);
    c.NonNegative("sync.points.gpu_idle_after_sync_ns", p.gpu_idle_after_sync_ns);
    c.NonNegative("sync.points end − start", p.end_ns - p.start_ns);
  }
  for (const StepSyncStats& st : s.steps) {
    c.NonNegative("sync.steps.blocked_ns", st.blocked_ns);
    c.NonNegative("sync.steps.gpu_idle_after_sync_ns", st.gpu_idle_after_sync_ns);
  }
  for (const SyncApiStats& a : s.apis) {
    c.NonNegative("sync.apis.total_ns", a.total_ns);
    c.NonNegative("sync.apis.max_ns", a.max_ns);
  }
  for (const SyncCause& cause : s.causes) c.NonNegative("sync.causes.blocked_ns", cause.blocked_ns);
  c.NonNegative("sync.blocked_ns", s.blocked_ns);
  c.NonNegative("sync.gpu_idle_after_sync_ns", s.gpu_idle_after_sync_ns);
  c.NonNegative("sync.blocked_ns_outside_steps", s.blocked_ns_outside_steps);
}

void CheckOccupancy(const OccupancyStats& o, Checker& c) {
  c.ShareOrAbsent("occupancy.sm_efficiency", o.sm_efficiency);
  c.Share("occupancy.tiny_grid_share", o.tiny_grid_share);
  c.NonNegative("occupancy.compute_kernel_ns", o.compute_kernel_ns);
  c.NonNegative("occupancy.tiny_grid_ns", o.tiny_grid_ns);
  c.NonNegative("occupancy.tiny_grid_lost_sm_ns", o.tiny_grid_lost_sm_ns);
  c.AtMost("occupancy tiny_grid_ns ≤ compute_kernel_ns", o.tiny_grid_ns, o.compute_kernel_ns);
  for (const TinyGridKernel& k : o.tiny) {
    c.NonNegative("occupancy.tiny." + k.name + ".total_ns", k.total_ns);
    c.NonNegative("occupancy.tiny." + k.name + ".lost_sm_ns", k.lost_sm_ns);
  }
}

void CheckIdleGaps(const IdleGapStats& g, Checker& c) {
  c.NonNegative("idle_gaps.idle_ns", g.idle_ns);
  c.NonNegative("idle_gaps range end − start", g.range_end_ns - g.range_start_ns);
  int64_t histogram = 0;
  for (size_t b = 0; b < kIdleGapBuckets; ++b) {
    c.NonNegative("idle_gaps.histogram_ns[" + std::to_string(b) + "]", g.histogram_ns[b]);
    histogram += g.histogram_ns[b];
  }
  c.Equal("idle_gaps histogram sums to idle_ns", histogram, g.idle_ns);
  c.NonNegative("idle_gaps.long_gap_ns", g.long_gap_ns);
  c.AtMost("idle_gaps long_gap_ns ≤ idle_ns", g.long_gap_ns, g.idle_ns);
  c.NonNegative("idle_gaps.long_gap_after_sync_ns", g.long_gap_after_sync_ns);
  c.NonNegative("idle_gaps.long_gap_dataloader_ns", g.long_gap_dataloader_ns);
  c.NonNegative("idle_gaps.long_gap_compile_allocator_ns", g.long_gap_compile_allocator_ns);
  c.NonNegative("idle_gaps.unexplained_ns", g.unexplained_ns);
  c.NonNegative("idle_gaps.unexplained_ns_per_steady_step", g.unexplained_ns_per_steady_step);
  c.NonNegative("idle_gaps.longest_unexplained_ns", g.longest_unexplained_ns);
  c.NonNegative("idle_gaps.nsight_longest_gap_ns", g.nsight_longest_gap_ns);
  for (const IdleGap& gap : g.longest) {
    c.NonNegative("idle_gaps.longest.length", gap.length());
    c.NonNegative("idle_gaps.longest.unexplained_ns", gap.unexplained_ns);
    c.AtMost("idle_gaps.longest dataloader_ns ≤ length", gap.dataloader_ns, gap.length());
    c.AtMost("idle_gaps.longest compile_allocator_ns ≤ length", gap.compile_allocator_ns,
             gap.length());
    c.AtMost("idle_gaps.longest unexplained_ns ≤ length − dataloader_ns", gap.unexplained_ns,
             gap.length() - gap.dataloader_ns);
    for (const auto& [name, ns] : gap.host_ops) c.NonNegative("idle_gaps.longest.host_op_ns", ns);
  }
  for (const IdleHostOp& h : g.host_ops)
    c.NonNegative("idle_gaps.host_ops.overlap_ns", h.overlap_ns);
  for (const StepIdleGaps& s : g.steps) {
    c.NonNegative("idle_gaps.steps.idle_ns", s.idle_ns);
    c.NonNegative("idle_gaps.steps.unexplained_ns", s.unexplained_ns);
  }
}

// Every op priced: times are lengths, FLOPs and bytes are not negative, the priced time is part
// of the ops' time, MFU ≤ HFU (the model FLOPs are part of the executed ones).
void CheckOpCosts(const OpCosts& o, Checker& c) {
  c.NonNegative("op_costs.op_ns", o.op_ns);
  c.NonNegative("op_costs.unattributed_ns", o.unattributed_ns);
  c.AtMost("op_costs priced_ns ≤ op_ns", o.priced_ns, o.op_ns);
  c.NonNegative("op_costs.mfu", o.mfu);
  c.NonNegative("op_costs.hfu − mfu", o.hfu - o.mfu + 1e-12);
  int64_t sum = 0;
  for (const OpCostGroup& g : o.groups) {
    c.NonNegative("op_costs.group.time_ns", g.time_ns);
    c.NonNegative("op_costs.group.flops", g.flops);
    c.NonNegative("op_costs.group.bytes", g.bytes);
    c.NonNegative("op_costs.group.roofline_ns", g.roofline_ns);
    sum += g.time_ns;
  }
  c.Equal("op_costs groups sum to op_ns", sum, o.op_ns);
}

// The step graph: the unchanged replay reproduces the steps it covers, and the critical path's
// parts sum to each of them (step_graph.h).
void CheckCriticalPath(const CriticalPath& cp, Checker& c) {
  if (!cp.built) return;
  c.Equal("critical_path replayed step = observed step", cp.replayed_step_ns, cp.observed_step_ns);
  int64_t total = 0;
  for (size_t k = 0; k < kPathCategoryCount; ++k) {
    c.NonNegative("critical_path.total_ns", cp.total_ns[k]);
    total += cp.total_ns[k];
  }
  int64_t steps = 0;
  for (const PathArray& a : cp.step_ns)
    for (int64_t v : a) steps += v;
  c.Equal("critical_path steps sum to its total", steps, total);
  for (size_t i = 0; i < cp.segments.size(); ++i) {
    c.NonNegative("critical_path.segment length", cp.segments[i].end_ns - cp.segments[i].start_ns);
    if (i > 0)
      c.AtMost("critical_path segments in time order", cp.segments[i - 1].end_ns,
               cp.segments[i].start_ns);
  }
}

}  // namespace

AnalysesView ViewOf(const RankResults& r) {
  AnalysesView v;
  v.gpu_time = &r.gpu_time;
  v.steps = &r.steps;
  v.kernels = &r.kernels;
  v.launches = &r.launches;
  v.copies = &r.copies;
  v.sync = &r.sync;
  v.occupancy = &r.occupancy;
  v.idle_gaps = &r.idle_gaps;
  v.op_costs = &r.op_costs;
  v.critical_path = &r.critical_path;
  return v;
}

std::vector<std::string> CheckInvariants(const AnalysesView& a) {
  std::vector<std::string> out;
  Checker c(&out);
  if (a.gpu_time) CheckGpuTime(*a.gpu_time, c);
  if (a.steps) CheckSteps(*a.steps, c);
  if (a.kernels) CheckKernels(*a.kernels, c);
  if (a.launches) CheckLaunches(*a.launches, c);
  if (a.copies) CheckCopies(*a.copies, c);
  if (a.sync) CheckSync(*a.sync, c);
  if (a.occupancy) CheckOccupancy(*a.occupancy, c);
  if (a.idle_gaps) CheckIdleGaps(*a.idle_gaps, c);
  if (a.op_costs) CheckOpCosts(*a.op_costs, c);
  if (a.critical_path) CheckCriticalPath(*a.critical_path, c);
  return out;
}

}  // namespace gpuscope::analyze
