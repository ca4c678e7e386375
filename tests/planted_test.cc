// Synthetic traces with planted bottlenecks: each measured within ±2 percentage points of what was
// planted (docs/synth.md defines exactly what each knob plants).
#include <gtest/gtest.h>

#include <cmath>

#include "analyze/gpu_time.h"
#include "analyze/idle_gaps.h"
#include "analyze/occupancy.h"
#include "analyze/steps.h"
#include "analyze/sync_points.h"
#include "gpuscope/ingest.h"
#include "gpuscope/synth.h"
#include "test_util.h"

namespace gpuscope {
namespace {

Trace Generate(const SynthOptions& o, const std::string& name, SynthTruth* truth) {
  const std::string path = testing::TempPath(name);
  auto t = WriteSynthTrace(o, 0, path);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (t.ok()) *truth = *t;
  auto trace = LoadTrace(path);
  EXPECT_TRUE(trace.ok());
  return trace.ok() ? std::move(trace.value()) : Trace();
}

double Share(int64_t part, int64_t whole) { return static_cast<double>(part) / static_cast<double>(whole); }

TEST(Planted, ExposedCommunicationTwentyPercent) {
  SynthOptions o;
  o.steps = 8;
  o.exposed_comm_fraction = 0.2;
  SynthTruth truth;
  const Trace t = Generate(o, "planted_comm.json", &truth);
  // Per step: the tb_plugin communication category is communication time not hidden under kernels
  // (kernels have priority), i.e. the exposed communication of the step.
  const analyze::StepsResult steps = analyze::AnalyzeSteps(t);
  ASSERT_GT(steps.steady_count, 0u);
  const double comm = Share(steps.mean_steady_ns[static_cast<size_t>(analyze::StepCategory::kCommunication)],
                            steps.mean_steady_step_ns);
  EXPECT_NEAR(comm, 0.2, 0.02);
  // Over the whole GPU span, exact ns, every step: the exclusive breakdown's exposed communication.
  analyze::SelectionOptions all;
  all.include_last_step = true;
  all.hta_rounding = false;
  const analyze::GpuTime g = analyze::AnalyzeGpuTime(t, all);
  EXPECT_NEAR(Share(g.exclusive.exposed_communication_ns, g.exclusive.span_ns), 0.2, 0.02);
  EXPECT_NEAR(Share(truth.exposed_comm_ns_per_step, truth.step_ns), 0.2, 0.005);
}

TEST(Planted, DataLoaderStallThirtyPercentIsGpuIdle) {
  SynthOptions o;
  o.steps = 8;
  o.dataloader_stall_fraction = 0.3;
  SynthTruth truth;
  const Trace t = Generate(o, "planted_stall.json", &truth);
  const analyze::StepsResult steps = analyze::AnalyzeSteps(t);
  EXPECT_NEAR(Share(steps.mean_steady_ns[static_cast<size_t>(analyze::StepCategory::kDataLoader)],
                    steps.mean_steady_step_ns),
              0.3, 0.02);
  // The stall is GPU idle time, waiting for the host (host wait on the compute stream).
  analyze::SelectionOptions all;
  all.include_last_step = true;
  all.hta_rounding = false;
  const analyze::GpuTime g = analyze::AnalyzeGpuTime(t, all);
  int64_t host_wait = 0, idle = 0;
  for (const analyze::StreamIdle& s : g.idle_by_stream) {
    if (s.stream == 7) host_wait = s.host_wait_ns, idle = s.host_wait_ns + s.kernel_wait_ns + s.other_ns;
  }
  ASSERT_GT(idle, 0);
  EXPECT_GT(Share(host_wait, idle), 0.9);
  // 7 of 8 stalls are visible between GPU events (the first step's has no earlier GPU event).
  EXPECT_NEAR(Share(g.exclusive.idle_ns, g.exclusive.span_ns), 0.3 * 7.0 / 8.0 / (1 - 0.3 / 8.0), 0.02);
}

// Σ all-streams GPU idle after the syncs / Σ step durations, over steady steps (first and last
// skipped).
double SyncIdleShare(const Trace& t) {
  const analyze::SyncStats s = analyze::AnalyzeSyncPoints(t);
  EXPECT_GE(s.steps.size(), 3u);
  int64_t idle = 0, dur = 0;
  for (size_t i = 1; i + 1 < s.steps.size(); ++i) {
    idle += s.steps[i].gpu_idle_after_sync_ns;
    dur += s.steps[i].step_dur_ns;
  }
  return dur > 0 ? Share(idle, dur) : -1.0;
}

TEST(Planted, SyncStallTenPercent) {
  SynthOptions o;
  o.steps = 8;
  o.sync_points_per_step = 2;
  o.sync_stall_fraction = 0.1;
  SynthTruth truth;
  const Trace t = Generate(o, "planted_sync_stall.json", &truth);
  const double measured = SyncIdleShare(t);
  EXPECT_NEAR(measured, 0.1, 0.02);
  EXPECT_NEAR(Share(truth.sync_stall_ns_per_step, truth.step_ns), 0.1, 0.005);
  // Every point is one .item() and the GPU waits after each of them.
  const analyze::SyncStats s = analyze::AnalyzeSyncPoints(t);
  EXPECT_EQ(s.points.size(), 16u);
  for (const analyze::SyncPoint& p : s.points) EXPECT_GT(p.gpu_idle_after_sync_ns, 0);

  // Without the stall only the natural host-wait gaps (tens of µs) remain.
  o.sync_stall_fraction = 0.0;
  SynthTruth truth0;
  const Trace t0 = Generate(o, "planted_sync_no_stall.json", &truth0);
  const double measured0 = SyncIdleShare(t0);
  EXPECT_GE(measured0, 0.0);
  EXPECT_LT(measured0, 0.01);
  EXPECT_LT(Share(truth0.sync_stall_ns_per_step, truth0.step_ns), 0.01);
}

TEST(Planted, HostGapTwentyPercent) {
  SynthOptions o;
  o.steps = 8;
  o.host_gap_fraction = 0.2;
  SynthTruth truth;
  const Trace t = Generate(o, "planted_host_gap.json", &truth);
  const analyze::StepsResult steps = analyze::AnalyzeSteps(t);
  const analyze::IdleGapStats g = analyze::AnalyzeIdleGaps(t, steps, analyze::AnalyzeSyncPoints(t));
  const double measured = Share(g.unexplained_ns_per_steady_step, steps.mean_steady_step_ns);
  std::printf("host gap: planted 20 %%, truth %.2f %%, measured %.2f %%\n",
              100 * Share(truth.host_gap_ns_per_step, truth.step_ns), 100 * measured);
  EXPECT_NEAR(measured, 0.2, 0.02);
  EXPECT_NEAR(Share(truth.host_gap_ns_per_step, truth.step_ns), 0.2, 0.005);
  // The host op in the gaps is the planted one, and no gap is the DataLoader's or a sync's.
  ASSERT_FALSE(g.host_ops.empty());
  EXPECT_EQ(t.Str(g.host_ops.front().name), "## log_metrics ##");
  EXPECT_EQ(g.long_gaps_after_sync, 0u);
  // Combined with a DataLoader stall, each keeps its own share.
  o.dataloader_stall_fraction = 0.2;
  const Trace t2 = Generate(o, "planted_host_gap_dl.json", &truth);
  const analyze::StepsResult steps2 = analyze::AnalyzeSteps(t2);
  const analyze::IdleGapStats g2 =
      analyze::AnalyzeIdleGaps(t2, steps2, analyze::AnalyzeSyncPoints(t2));
  EXPECT_NEAR(Share(g2.unexplained_ns_per_steady_step, steps2.mean_steady_step_ns), 0.2, 0.02);
  EXPECT_NEAR(Share(steps2.mean_steady_ns[static_cast<size_t>(analyze::StepCategory::kDataLoader)],
                    steps2.mean_steady_step_ns),
              0.2, 0.02);
  // Without the plant: no long gap at all.
  o = SynthOptions();
  o.steps = 8;
  const Trace t0 = Generate(o, "planted_no_host_gap.json", &truth);
  const analyze::IdleGapStats g0 =
      analyze::AnalyzeIdleGaps(t0, analyze::AnalyzeSteps(t0), analyze::AnalyzeSyncPoints(t0));
  EXPECT_EQ(g0.long_gaps, 0u);
  EXPECT_EQ(truth.host_gap_ns_per_step, 0);
}

TEST(Planted, TinyGridsFortyPercent) {
  SynthOptions o;
  o.steps = 6;
  o.tiny_grid_fraction = 0.4;
  SynthTruth truth;
  const Trace t = Generate(o, "planted_tiny_grids.json", &truth);
  const analyze::OccupancyStats occ = analyze::AnalyzeOccupancy(t, analyze::AnalyzeSteps(t));
  std::printf("tiny grids: planted 40 %%, truth %.2f %%, measured %.2f %%\n",
              100 * truth.tiny_grid_share, 100 * occ.tiny_grid_share);
  EXPECT_NEAR(truth.tiny_grid_share, 0.4, 0.01);
  EXPECT_NEAR(occ.tiny_grid_share, truth.tiny_grid_share, 0.01);
  ASSERT_FALSE(occ.tiny.empty());
  bool planted_listed = false;
  for (const analyze::TinyGridKernel& k : occ.tiny) {
    planted_listed |= k.name == "at::native::vectorized_elementwise_kernel" &&
                      std::abs(k.mean_blocks_per_sm - 16.0 / 108.0) < 1e-3;
  }
  EXPECT_TRUE(planted_listed);
  // The NCCL all-reduce (24 blocks) is communication, never a tiny grid.
  for (const analyze::TinyGridKernel& k : occ.tiny)
    EXPECT_EQ(k.name.find("nccl"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
