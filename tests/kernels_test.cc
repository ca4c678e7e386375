// Top kernels and the precision mix: real ResNet-50 fp32 traces and synthetic bf16/fp32 traces.
#include "analyze/kernels.h"

#include <gtest/gtest.h>

#include "gpuscope/ingest.h"
#include "gpuscope/synth.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using analyze::KernelClass;
using analyze::MathPrecision;

void ExpectInvariants(const analyze::KernelsResult& k, const Trace& t) {
  uint64_t count = 0;
  for (const analyze::ClassKernels& c : k.classes) {
    count += c.count;
    double share = 0;
    for (size_t i = 0; i < c.top.size(); ++i) {
      EXPECT_GE(c.top[i].share, 0.0);
      EXPECT_LE(c.top[i].share, 1.0);
      EXPECT_LE(c.top[i].min_ns, c.top[i].max_ns);
      if (i > 0) {
        EXPECT_GE(c.top[i - 1].total_ns, c.top[i].total_ns);
      }
      share += c.top[i].share;
    }
    EXPECT_LE(share, 1.0 + 1e-9);
  }
  EXPECT_EQ(count, t.gpu.size());
  int64_t by_precision = 0;
  for (int64_t ns : k.math_ns_by_precision) by_precision += ns;
  EXPECT_EQ(by_precision, k.math_ns);
  EXPECT_LE(k.tensor_core_ns, k.math_ns);
}

TEST(Kernels, ResNet50SamplesAreFp32WithoutTensorCores) {
  testing::RealParts parts;
  for (const char* file : {"resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz",
                           "resnet50_num_workers_4.worker0.1623212756351.pt.trace.json.gz"}) {
    if (!parts.Have({"traces/kineto_tb_plugin/" + std::string(file)})) continue;
    SCOPED_TRACE(file);
    auto t = LoadTrace(testing::RealTrace("kineto_tb_plugin/" + std::string(file)));
    ASSERT_TRUE(t.ok());
    const analyze::KernelsResult k = analyze::AnalyzeKernels(*t);
    ExpectInvariants(k, *t);
    EXPECT_EQ(k.dominant_precision, MathPrecision::kFp32Simt);
    EXPECT_EQ(k.tensor_core_ns, 0);  // tb_plugin: tc_used_ratio 0.0 on these samples
    EXPECT_GT(k.math_ns, 0);
    const analyze::ClassKernels& compute = k.classes[static_cast<size_t>(KernelClass::kCompute)];
    ASSERT_FALSE(compute.top.empty());
    EXPECT_EQ(compute.distinct_names > compute.top.size(), true);
  }
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

TEST(Kernels, EveryRealTraceKeepsTheInvariants) {
  for (const auto& entry : std::filesystem::directory_iterator(testing::RealTraceFolder("hta"))) {
    const std::string path = entry.path().string();
    // Traces only: not the memory-timeline export in shared/, nor the notes in tests/data.
    if (path.find(".json") == std::string::npos) continue;
    SCOPED_TRACE(path);
    auto t = LoadTrace(path);
    ASSERT_TRUE(t.ok());
    ExpectInvariants(analyze::AnalyzeKernels(*t), *t);
  }
}

TEST(Kernels, SyntheticPrecisionIsWhatWasPlanted) {
  for (SynthPrecision p : {SynthPrecision::kBf16, SynthPrecision::kFp32}) {
    SynthOptions o;
    o.steps = 3;
    o.precision = p;
    const std::string path =
        testing::TempPath(p == SynthPrecision::kBf16 ? "prec_bf16.json" : "prec_fp32.json");
    ASSERT_TRUE(WriteSynthTrace(o, 0, path).ok());
    auto t = LoadTrace(path);
    ASSERT_TRUE(t.ok());
    const analyze::KernelsResult k = analyze::AnalyzeKernels(*t);
    ExpectInvariants(k, *t);
    if (p == SynthPrecision::kBf16) {
      EXPECT_EQ(k.dominant_precision, MathPrecision::kBf16TensorCore);
      EXPECT_GT(k.tensor_core_ns * 10, k.math_ns * 8);  // most math on tensor cores
    } else {
      EXPECT_NE(k.dominant_precision, MathPrecision::kBf16TensorCore);
      EXPECT_EQ(k.math_ns_by_precision[static_cast<size_t>(MathPrecision::kBf16TensorCore)], 0);
    }
    const analyze::ClassKernels& comm = k.classes[static_cast<size_t>(KernelClass::kCommunication)];
    EXPECT_GT(comm.count, 0u);  // the DDP all-reduce
    EXPECT_NE(comm.top.front().name.find("nccl"), std::string::npos);
  }
}

}  // namespace
}  // namespace gpuscope
