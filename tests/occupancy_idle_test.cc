// Occupancy against tb_plugin's GPU metrics on the eight traces it was run on (those present in
// tests/data or shared/), and the idle-gap analysis on real traces (claims, host ops, invariants).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "analyze/idle_gaps.h"
#include "analyze/occupancy.h"
#include "analyze/steps.h"
#include "analyze/sync_points.h"
#include "gpuscope/ingest.h"
#include "test_util.h"

namespace gpuscope::analyze {
namespace {

Trace Load(const std::string& rel) {
  auto t = LoadTrace(testing::RealTrace(rel));
  EXPECT_TRUE(t.ok()) << rel;
  return t.ok() ? std::move(t.value()) : Trace();
}

// "GPU0: util=0.5551 est_sm_eff=0.546790410706937 est_occupancy=49.128004909286396 ..."
double RefValue(const std::string& text, const std::string& key) {
  const size_t at = text.find(key + "=");
  EXPECT_NE(at, std::string::npos) << key;
  return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + key.size() + 1, nullptr);
}

struct Case {
  const char* reference;  // reference/tb_plugin/<name>.txt
  const char* trace;      // under traces/

  std::vector<std::string> Files() const {
    return {"reference/tb_plugin/" + std::string(reference) + ".txt",
            "traces/" + std::string(trace)};
  }
};
constexpr Case kCases[] = {
    {"resnet50_num_workers_0.worker0.1623143089861.pt.trace",
     "kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz"},
    {"resnet50_num_workers_0.worker0.1623143566756.pt.trace",
     "kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143566756.pt.trace.json.gz"},
    {"resnet50_num_workers_4.worker0.1623212756351.pt.trace",
     "kineto_tb_plugin/resnet50_num_workers_4.worker0.1623212756351.pt.trace.json.gz"},
    {"resnet50_num_workers_4.worker0.1623213129365.pt.trace",
     "kineto_tb_plugin/resnet50_num_workers_4.worker0.1623213129365.pt.trace.json.gz"},
    {"trace_diff_control_A100_rank3of8", "hta/trace_diff_control_A100_rank3of8.json.gz"},
    {"negative_queue_length_A100-80GB_rank0of16",
     "hta/negative_queue_length_A100-80GB_rank0of16.json.gz"},
    {"nccl_parser_config_A100_rank0of2", "hta/nccl_parser_config_A100_rank0of2.json.gz"},
    {"df_index_resolver_V100_rank1of2_memevents",
     "hta/df_index_resolver_V100_rank1of2_memevents.json.gz"},
};

// A zero-length kernel inside a running one changes nothing: 0.5 blocks/SM for 100 µs stays 0.5.
// (Found in review: its end sorted before its start reset the running kernel's value.)
TEST(Occupancy, ZeroLengthKernelInsideAnotherIsIgnored) {
  const std::string json =
      R"({"deviceProperties":[{"id":0,"name":"GPU","numSms":108,"computeMajor":8}],"traceEvents":[)"
      R"({"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":1000,"dur":100,)"
      R"("args":{"device":0,"stream":7,"blocks per SM":0.5}},)"
      R"({"ph":"X","cat":"kernel","name":"b","pid":0,"tid":8,"ts":1050,"dur":0,)"
      R"("args":{"device":0,"stream":8,"blocks per SM":4.0}}]})";
  auto t = LoadTraceFromBytes(json, "zero.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const OccupancyStats o = AnalyzeOccupancy(*t, AnalyzeSteps(*t));
  ASSERT_TRUE(o.available);
  EXPECT_NEAR(o.sm_efficiency, 0.5, 1e-9);
}

// tb_plugin's definition reproduced: agreement to 1e-5 (SM efficiency, 0-1) and 1e-3 percentage
// points (occupancy). What is left is float32 storage of `blocks per SM` and float µs in Python.
TEST(OccupancyTbPlugin, SmEfficiencyAndOccupancyAgree) {
  testing::RealParts parts;
  for (const Case& c : kCases) {
    if (!parts.Have(c.Files())) continue;
    const std::string ref =
        testing::ReadFile(testing::RealReference("tb_plugin/" + std::string(c.reference) + ".txt"));
    const Trace t = Load(c.trace);
    const StepsResult steps = AnalyzeSteps(t);
    const OccupancyStats o = AnalyzeOccupancy(t, steps);
    ASSERT_TRUE(o.available) << c.trace;
    ASSERT_TRUE(o.occupancy_available) << c.trace;
    const double sm = RefValue(ref, "est_sm_eff");
    const double occ = RefValue(ref, "est_occupancy");
    std::printf("%-45.45s SM eff %.6f (tb_plugin %.6f) occupancy %.4f %% (%.4f %%) tiny %.1f %%\n",
                c.reference, o.sm_efficiency, sm, o.achieved_occupancy_pct, occ,
                100 * o.tiny_grid_share);
    EXPECT_NEAR(o.sm_efficiency, sm, 1e-5) << c.trace;
    EXPECT_NEAR(o.achieved_occupancy_pct, occ, 1e-3) << c.trace;
    // Tiny-grid time is part of compute-kernel time; the listed groups are part of it.
    EXPECT_LE(o.tiny_grid_ns, o.compute_kernel_ns);
    int64_t listed = 0;
    for (const TinyGridKernel& k : o.tiny) {
      listed += k.total_ns;
      EXPECT_GT(k.mean_blocks_per_sm, 0.0);
      EXPECT_LT(k.mean_blocks_per_sm, 1.0);
    }
    EXPECT_LE(listed, o.tiny_grid_ns);
  }
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

TEST(Occupancy, NotAvailableWithoutTheArgs) {
  GPUSCOPE_REQUIRE_REAL("traces/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  // ROCm traces carry no `blocks per SM`.
  const Trace t = Load("hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  const OccupancyStats o = AnalyzeOccupancy(t, AnalyzeSteps(t));
  EXPECT_FALSE(o.available);
  EXPECT_LT(o.sm_efficiency, 0);
  EXPECT_EQ(o.tiny_grid_kernels, 0u);
}

TEST(IdleGaps, InvariantsAndClaimsOnRealTraces) {
  testing::RealParts parts;
  for (const Case& c : kCases) {
    if (!parts.Have({"traces/" + std::string(c.trace)})) continue;
    const Trace t = Load(c.trace);
    const StepsResult steps = AnalyzeSteps(t);
    const IdleGapStats g = AnalyzeIdleGaps(t, steps, AnalyzeSyncPoints(t));
    uint64_t n = 0;
    int64_t ns = 0;
    for (size_t b = 0; b < kIdleGapBuckets; ++b) n += g.histogram_count[b], ns += g.histogram_ns[b];
    EXPECT_EQ(n, g.gaps) << c.trace;
    EXPECT_EQ(ns, g.idle_ns) << c.trace;
    EXPECT_LE(g.long_gap_ns, g.idle_ns);
    EXPECT_LE(g.unexplained_ns + g.long_gap_after_sync_ns + g.long_gap_dataloader_ns,
              g.long_gap_ns);
    EXPECT_LE(g.idle_ns, g.range_end_ns - g.range_start_ns);
    for (const IdleGap& gap : g.longest) {
      EXPECT_GE(gap.length(), kLongIdleGapNs);
      EXPECT_LE(gap.unexplained_ns, gap.length());
    }
  }
  // ResNet-50 without workers: the long gaps are the DataLoader's (input_pipeline_stall).
  if (parts.Have({"traces/" + std::string(kCases[0].trace)})) {
    const Trace nw0 = Load(kCases[0].trace);
    const IdleGapStats g0 = AnalyzeIdleGaps(nw0, AnalyzeSteps(nw0), AnalyzeSyncPoints(nw0));
    EXPECT_GE(g0.long_gaps_dataloader, 5u);
    ASSERT_FALSE(g0.longest.empty());
    EXPECT_EQ(g0.longest.front().claim, IdleClaim::kDataLoader);
    ASSERT_FALSE(g0.longest.front().host_ops.empty());
    EXPECT_EQ(nw0.Str(g0.longest.front().host_ops.front().first).rfind("enumerate(DataLoader)", 0),
              0u);
  }
  // negative_queue_length: 64 ms gaps while the host sits in cudaDeviceSynchronize are sync's,
  // not host work.
  if (parts.Have({"traces/" + std::string(kCases[5].trace)})) {
    const Trace nq = Load(kCases[5].trace);
    const IdleGapStats gq = AnalyzeIdleGaps(nq, AnalyzeSteps(nq), AnalyzeSyncPoints(nq));
    EXPECT_GE(gq.long_gaps_after_sync, 6u);
    ASSERT_FALSE(gq.longest.empty());
    EXPECT_EQ(gq.longest.front().claim, IdleClaim::kSync);
  }
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

TEST(IdleGaps, NsightStarvationOnAlexNet) {
  GPUSCOPE_REQUIRE_REAL("traces/hta/critical_path_alexnet_A100_cuda_sync.json.gz");
  // The AlexNet benchmark trace pauses for seconds between runs: Nsight's gpu_gaps (> 500 ms).
  const Trace t = Load("hta/critical_path_alexnet_A100_cuda_sync.json.gz");
  const IdleGapStats g = AnalyzeIdleGaps(t, AnalyzeSteps(t), AnalyzeSyncPoints(t));
  EXPECT_GE(g.nsight_gaps, 1u);
  EXPECT_GT(g.nsight_longest_gap_ns, kNsightGpuGapNs);
}

}  // namespace
}  // namespace gpuscope::analyze
