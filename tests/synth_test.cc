// The generator's output is a valid trace whose reader counts equal the generator's own ground
// truth, deterministic for a seed, and with each planted knob visible in the model.
#include "gpuscope/synth.h"

#include <gtest/gtest.h>

#include "analyze/trace_summary.h"
#include "gpuscope/ingest.h"
#include "test_util.h"

namespace gpuscope {
namespace {

struct Generated {
  SynthTruth truth;
  Trace trace;
};

Generated Generate(const SynthOptions& o, const std::string& name, int rank = 0) {
  const std::string path = testing::TempPath(name);
  auto truth = WriteSynthTrace(o, rank, path);
  EXPECT_TRUE(truth.ok()) << truth.status().message();
  auto trace = LoadTrace(path);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  Generated g;
  if (truth.ok()) g.truth = *truth;
  if (trace.ok()) g.trace = std::move(trace.value());
  return g;
}

void ExpectCountsMatchTruth(const Generated& g) {
  const analyze::TraceSummary s = analyze::SummarizeTrace(g.trace);
  const SynthTruth& t = g.truth;
  EXPECT_EQ(g.trace.info.events_total, t.events);
  EXPECT_EQ(g.trace.info.json_bytes, t.bytes_written);
  EXPECT_EQ(s.counts.kernels, t.kernels);
  EXPECT_EQ(s.counts.nccl_kernels, t.nccl_kernels);
  EXPECT_EQ(s.counts.memcpys, t.memcpys);
  EXPECT_EQ(s.counts.memsets, t.memsets);
  EXPECT_EQ(s.counts.runtime_calls, t.runtime_calls);
  EXPECT_EQ(s.counts.kernel_launches, t.kernel_launches);
  EXPECT_EQ(s.counts.cpu_ops, t.cpu_ops);
  EXPECT_EQ(s.counts.user_annotations, t.user_annotations);
  EXPECT_EQ(s.counts.memory_events, t.memory_events);
  EXPECT_EQ(s.counts.flow_events, t.flow_events);
  EXPECT_EQ(s.steps.size(), static_cast<size_t>(t.steps));
  EXPECT_EQ(g.trace.diagnostics.total(), 0u);
  // Every GPU activity the generator launched is linked to its launch call.
  EXPECT_EQ(g.trace.links.kernels_linked, t.kernels);
  size_t sync_calls = 0;
  for (size_t i = 0; i < g.trace.runtime.size(); ++i) {
    sync_calls += g.trace.Str(g.trace.runtime.name[i]) == "cudaStreamSynchronize";
  }
  EXPECT_EQ(sync_calls, t.sync_calls);
}

TEST(Synth, DefaultTraceMatchesItsTruth) {
  SynthOptions o;
  Generated g = Generate(o, "synth_default.json");
  EXPECT_EQ(g.truth.steps, 8);
  EXPECT_GT(g.truth.kernels, 100u);
  ExpectCountsMatchTruth(g);
  ASSERT_EQ(g.trace.devices.size(), 1u);
  EXPECT_EQ(g.trace.devices[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.trace.info.rank, 0);
}

TEST(Synth, KnobsArePlanted) {
  SynthOptions o;
  o.steps = 4;
  o.dataloader_stall_fraction = 0.3;
  o.sync_points_per_step = 3;
  o.pageable_copies = true;
  o.exposed_comm_fraction = 0.1;
  o.precision = SynthPrecision::kFp32;
  o.integer_timestamps = true;
  o.gzip = true;
  Generated g = Generate(o, "synth_knobs.json.gz");
  ExpectCountsMatchTruth(g);
  EXPECT_TRUE(g.trace.info.gzip);
  EXPECT_EQ(g.truth.sync_calls, 12u);
  EXPECT_GT(g.truth.dataloader_wait_ns_per_step, 0);
  // The planted stall is the stated share of the step.
  EXPECT_NEAR(static_cast<double>(g.truth.dataloader_wait_ns_per_step) / g.truth.step_ns, 0.3,
              0.02);
  EXPECT_NEAR(static_cast<double>(g.truth.exposed_comm_ns_per_step) / g.truth.step_ns, 0.1, 0.02);
  size_t pageable = 0, pinned = 0, fp32_gemm = 0;
  for (size_t i = 0; i < g.trace.gpu.size(); ++i) {
    if (g.trace.gpu.kind[i] == GpuKind::kMemcpy &&
        g.trace.gpu.copy_direction[i] == CopyDirection::kHtoD) {
      pageable += g.trace.gpu.src_kind[i] == MemoryKind::kPageable;
      pinned += g.trace.gpu.src_kind[i] == MemoryKind::kPinned;
    }
    const std::string_view name = g.trace.Str(g.trace.gpu.name[i]);
    fp32_gemm += name.find("sgemm") != std::string_view::npos;
    EXPECT_EQ(name.find("bf16"), std::string_view::npos) << name;
    EXPECT_EQ(g.trace.gpu.start_ns[i] % 1000, 0) << "integer µs timestamps";
  }
  EXPECT_GT(pageable, 0u);
  EXPECT_EQ(pinned, 0u);
  EXPECT_GT(fp32_gemm, 0u);
}

TEST(Synth, DeterministicForASeedAndDifferentAcrossSeeds) {
  SynthOptions o;
  o.steps = 2;
  const std::string a = testing::TempPath("det_a.json"), b = testing::TempPath("det_b.json"),
                    c = testing::TempPath("det_c.json");
  ASSERT_TRUE(WriteSynthTrace(o, 0, a).ok());
  ASSERT_TRUE(WriteSynthTrace(o, 0, b).ok());
  o.seed = 2;
  ASSERT_TRUE(WriteSynthTrace(o, 0, c).ok());
  EXPECT_EQ(testing::ReadFile(a), testing::ReadFile(b));
  EXPECT_NE(testing::ReadFile(a), testing::ReadFile(c));
}

TEST(Synth, RanksAndStraggler) {
  SynthOptions o;
  o.steps = 3;
  o.ranks = 4;
  o.straggler_rank = 2;
  o.straggler_slowdown = 1.5;
  const std::string dir = testing::TempPath("synth_ranks");
  auto truths = WriteSynthTraces(o, dir);
  ASSERT_TRUE(truths.ok()) << truths.status().message();
  ASSERT_EQ(truths->size(), 4u);
  auto loaded = LoadInputs(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->traces.size(), 4u);
  std::vector<int64_t> compute_ns(4, 0);
  for (int r = 0; r < 4; ++r) {
    const Trace& t = loaded->traces[r];
    EXPECT_EQ(t.info.rank, r);
    EXPECT_EQ(t.info.world_size, 4);
    for (size_t i = 0; i < t.gpu.size(); ++i) {
      const std::string_view name = t.Str(t.gpu.name[i]);
      if (t.gpu.kind[i] == GpuKind::kKernel && name.find("nccl") == std::string_view::npos)
        compute_ns[r] += t.gpu.dur_ns[i];
    }
  }
  // The straggler's compute is about 1.5x the others' (jitter is small).
  for (int r : {0, 1, 3}) EXPECT_NEAR(static_cast<double>(compute_ns[2]) / compute_ns[r], 1.5, 0.1);
}

TEST(Synth, TargetSizeGrowsTheTrace) {
  SynthOptions o;
  o.target_bytes = 3 << 20;
  Generated g = Generate(o, "synth_3mb.json");
  EXPECT_GE(g.truth.bytes_written, 3u << 20);
  EXPECT_LT(g.truth.bytes_written, 4u << 20);
  ExpectCountsMatchTruth(g);
}

TEST(Synth, BadOptionsAreUsageErrors) {
  SynthOptions o;
  o.ranks = 0;
  auto r = WriteSynthTrace(o, 0, testing::TempPath("never.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  o = SynthOptions();
  auto w = WriteSynthTrace(o, 0, "/nonexistent-dir/x.json");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("/nonexistent-dir/x.json"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
