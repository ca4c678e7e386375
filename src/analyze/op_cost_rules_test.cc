// The cost model's formulas on shapes as the profiler records them (op_cost_rules.h), and the
// peak table (hw/gpu_peaks.h). The expected figures are TraceLens's own (its perf-report CSVs of
// shared/traces/tracelens: GFLOPS_first and Data Moved (MB)_first, MB = MiB) or worked by hand.
#include "analyze/op_cost_rules.h"

#include <gtest/gtest.h>

#include "hw/gpu_peaks.h"

namespace gpuscope::analyze {
namespace {

OpCost Price(std::string_view name, std::string_view dims, std::string_view types,
             std::string_view concrete, CostContext ctx = {}) {
  OpArgs args;
  EXPECT_TRUE(ParseOpArgs(dims, types, concrete, &args)) << dims;
  const CostRule* r = FindCostRule(name);
  EXPECT_NE(r, nullptr) << name;
  if (!r) return {};
  std::optional<OpCost> c = r->fn(name, args, ctx);
  EXPECT_TRUE(c.has_value()) << name << " " << dims;
  return c.value_or(OpCost{});
}
constexpr double kMiB = 1024.0 * 1024.0;
constexpr const char* kBf16x3 =
    R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])";

TEST(OpCostRules, ParsesTensorsListsTypesAndConcreteInputs) {
  OpArgs a;
  ASSERT_TRUE(ParseOpArgs("[[8, 512], [], [[2, 3], [4]], [0]]",
                          R"(["float", "Scalar", "TensorList", "long int"])",
                          R"(["", "1", "", ""])", &a));
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a.args[0].shape, (std::vector<int64_t>{8, 512}));
  EXPECT_TRUE(a.args[1].shape.empty());
  EXPECT_EQ(a.args[1].concrete, "1");
  EXPECT_TRUE(a.args[2].is_list);
  ASSERT_EQ(a.args[2].list.size(), 2u);
  EXPECT_EQ(a.args[2].list[1], (std::vector<int64_t>{4}));
  EXPECT_EQ(a.args[3].type, "long int");
  EXPECT_TRUE(ParseOpArgs("[]", "", "", &a));
  EXPECT_EQ(a.size(), 0u);
  for (const char* bad : {"", "[", "[[1, 2]", "[[1, x]]", "[[1,, 2]]", "{}", "[[[[1]]]]"})
    EXPECT_FALSE(ParseOpArgs(bad, "", "", &a)) << bad;
  EXPECT_EQ(ElementBytes("float"), 4);
  EXPECT_EQ(ElementBytes("c10::BFloat16"), 2);
  EXPECT_EQ(ElementBytes("c10::Float8_e4m3fn"), 1);
  EXPECT_EQ(ElementBytes("Scalar"), 0);
}

TEST(OpCostRules, GemmMatchesTraceLens) {
  // Falconsai GEMM.csv row 1: aten::addmm M=788 N=768 K=768 bf16: 0.930167808 GFLOP, 3.43505859375
  // MB.
  const OpCost c = Price("aten::addmm", "[[768], [788, 768], [768, 768], [], []]", kBf16x3, "");
  EXPECT_DOUBLE_EQ(c.flops, 930167808);
  EXPECT_DOUBLE_EQ(c.bytes / kMiB, 3.43505859375);
  EXPECT_EQ(c.math_bytes, 2);
  // bert-small: M=141 N=30522 K=512: 4.41119205 GFLOP, 38.211021423339844 MB.
  const OpCost d = Price("aten::addmm", "[[30522], [141, 512], [512, 30522], [], []]", kBf16x3, "");
  EXPECT_NEAR(d.flops, 4.41119205e9, 1);
  EXPECT_NEAR(d.bytes / kMiB, 38.211021423339844, 1e-9);
  // mm, bmm, linear, matmul by hand.
  EXPECT_DOUBLE_EQ(
      Price("aten::mm", "[[8192, 1024], [1024, 4096]]", R"(["float", "float"])", "").flops,
      2.0 * 8192 * 1024 * 4096);
  EXPECT_DOUBLE_EQ(
      Price("aten::bmm", "[[16, 128, 64], [16, 64, 256]]", R"(["float", "float"])", "").flops,
      2.0 * 16 * 128 * 64 * 256);
  const OpCost lin = Price("aten::linear", "[[8, 1024, 1024], [50257, 1024], []]",
                           R"(["float", "float", ""])", "");
  EXPECT_DOUBLE_EQ(lin.flops, 2.0 * 8192 * 1024 * 50257);
  EXPECT_DOUBLE_EQ(lin.bytes, 4.0 * (8192.0 * 1024 + 50257.0 * 1024 + 8192.0 * 50257));
  // matmul [4, 8, 32] x [32, 16]: batch 4, the 2-D right operand read once.
  const OpCost mm = Price("aten::matmul", "[[4, 8, 32], [32, 16]]", R"(["float", "float"])", "");
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 4 * 8 * 16 * 32);
  EXPECT_DOUBLE_EQ(mm.bytes, 4.0 * (4 * 8 * 32 + 32 * 16 + 4 * 8 * 16));
  // Mismatched inner dimensions are not guessed.
  OpArgs bad;
  ASSERT_TRUE(ParseOpArgs("[[8, 3], [4, 5]]", R"(["float", "float"])", "", &bad));
  EXPECT_FALSE(FindCostRule("aten::mm")->fn("aten::mm", bad, {}).has_value());
}

TEST(OpCostRules, AttentionMatchesTraceLensAndCountsCausalHalf) {
  // Falconsai SDPA_fwd.csv: B=4 N=197 H=12 d=64, not causal: 0.476884992 GFLOP, 4.6171875 MB.
  const char* dims = "[[4, 12, 197, 64], [4, 12, 197, 64], [4, 12, 197, 64], [], [], [], []]";
  const char* types =
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", "Scalar"])";
  const OpCost c = Price("aten::_scaled_dot_product_flash_attention", dims, types,
                         R"(["", "", "", "0.", "False", "False", "0.125"])");
  EXPECT_DOUBLE_EQ(c.flops, 476884992);
  EXPECT_DOUBLE_EQ(c.bytes / kMiB, 4.6171875);
  const OpCost causal = Price("aten::_scaled_dot_product_flash_attention", dims, types,
                              R"(["", "", "", "0.", "True", "False", "0.125"])");
  EXPECT_DOUBLE_EQ(causal.flops, c.flops / 2);
  // GPT-2 medium's efficient-attention backward (gpu_lab_h200 B1): causal, 2.5x forward executed,
  // 2x counted as model FLOPs.
  const OpCost bwd = Price(
      "aten::_scaled_dot_product_efficient_attention_backward",
      "[[8, 16, 1024, 64], [8, 16, 1024, 64], [8, 16, 1024, 64], [8, 16, 1024, 64], [], [8, 16, "
      "1024, 64], "
      "[8, 16, 1024], [], [], [], [], [], []]",
      R"(["float", "float", "float", "float", "", "float", "float", "long int", "long int", "Scalar", "ScalarList", "Scalar", "Scalar"])",
      R"(["", "", "", "", "", "", "", "", "", "0.1", "[True, True, True, False]", "True", "0.125"])");
  const double fwd = 2.0 * 8 * 16 * 1024 * 1024 * 128 * 0.5;
  EXPECT_DOUBLE_EQ(bwd.flops, 2.5 * fwd);
  EXPECT_DOUBLE_EQ(bwd.model_flops, 2 * fwd);
}

TEST(OpCostRules, ConvolutionMatchesTraceLensAndHandlesBackwardAndTransposed) {
  // Falconsai CONV_fwd.csv: (4,3,224,224) * (768,3,16,16), stride 16: 0.924844032 GFLOP, 3.421875
  // MB.
  const OpCost c = Price(
      "aten::convolution", "[[4, 3, 224, 224], [768, 3, 16, 16], [], [], [], [], [], [], []]",
      R"(["c10::BFloat16", "c10::BFloat16", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"])",
      R"(["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"])");
  EXPECT_DOUBLE_EQ(c.flops, 924844032);
  EXPECT_DOUBLE_EQ(c.bytes / kMiB, 3.421875);
  // ResNet 3x3, stride 1, pad 1, 64 -> 64 on 56x56, batch 2: 2*2*64*56*56*64*9.
  const char* types =
      R"(["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"])";
  const OpCost r =
      Price("aten::convolution", "[[2, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], [], [], []]",
            types, R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])");
  EXPECT_DOUBLE_EQ(r.flops, 2.0 * 2 * 64 * 56 * 56 * 64 * 9);
  // Depthwise (groups = 64): Cin/groups = 1.
  const OpCost dw =
      Price("aten::convolution", "[[2, 64, 56, 56], [64, 1, 3, 3], [], [], [], [], [], [], []]",
            types, R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "64"])");
  EXPECT_DOUBLE_EQ(dw.flops, 2.0 * 2 * 64 * 56 * 56 * 1 * 9);
  // Transposed, stride 2: 28 -> 56; weight [Cin=64, Cout=32, 2, 2]; FLOPs over the input.
  const OpCost tr =
      Price("aten::convolution", "[[2, 64, 28, 28], [64, 32, 2, 2], [], [], [], [], [], [], []]",
            types, R"(["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"])");
  EXPECT_DOUBLE_EQ(tr.flops, 2.0 * 2 * 64 * 28 * 28 * 32 * 4);
  EXPECT_DOUBLE_EQ(tr.bytes, 4.0 * (2 * 64 * 28 * 28 + 64 * 32 * 4 + 2 * 32 * 56 * 56));
  // A trace without Concrete Inputs (PyTorch < 2.1: the 2021 tb_plugin ResNet) has no stride or
  // padding: the output size is unknown, so the op is unpriced rather than guessed at stride 1.
  OpArgs old;
  ASSERT_TRUE(
      ParseOpArgs("[[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]", "", "", &old));
  EXPECT_FALSE(FindCostRule("aten::convolution")->fn("aten::convolution", old, {}).has_value());
  // Backward with both gradients costs two forwards; with the input gradient only, one.
  const char* bdims =
      "[[2, 64, 56, 56], [2, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], [], [], [], []]";
  const char* btypes =
      R"(["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar", "ScalarList"])";
  EXPECT_DOUBLE_EQ(
      Price(
          "aten::convolution_backward", bdims, btypes,
          R"(["", "", "", "[64]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"])")
          .flops,
      2 * r.flops);
  EXPECT_DOUBLE_EQ(
      Price(
          "aten::convolution_backward", bdims, btypes,
          R"(["", "", "", "[64]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[False, True, False]"])")
          .flops,
      r.flops);
}

TEST(OpCostRules, MemoryBoundFamilies) {
  // BinaryElementwise.csv: aten::add (4,197,768) bf16 + same: 605,184 FLOP, 3.462890625 MB.
  const OpCost add = Price("aten::add", "[[4, 197, 768], [4, 197, 768], []]",
                           R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])", "");
  EXPECT_DOUBLE_EQ(add.flops, 605184);
  EXPECT_DOUBLE_EQ(add.bytes / kMiB, 3.462890625);
  // In place: self read and written back, other read.
  EXPECT_DOUBLE_EQ(
      Price("aten::add_", "[[1024], [1024], []]", R"(["float", "float", "Scalar"])", "").bytes,
      3 * 4096.0);
  // A cast to bf16 (ScalarType 15): read 4 B, write 2 B per element.
  EXPECT_DOUBLE_EQ(Price("aten::_to_copy", "[[1024], [], [], [], [], [], []]",
                         R"(["float", "Scalar", "", "", "", "Scalar", ""])",
                         R"(["", "15", "", "", "", "False", ""])")
                       .bytes,
                   6 * 1024.0);
  // Softmax with half_to_float writes fp32.
  EXPECT_DOUBLE_EQ(Price("aten::_softmax", "[[4, 1024], [], []]",
                         R"(["c10::Half", "Scalar", "Scalar"])", R"(["", "-1", "True"])")
                       .bytes,
                   4096.0 * (2 + 4));
  // sum over dim 0 of [8192, 1024]: reads all, writes 1024.
  EXPECT_DOUBLE_EQ(Price("aten::sum", "[[8192, 1024], [], [], []]",
                         R"(["float", "ScalarList", "Scalar", ""])", R"(["", "[0]", "True", ""])")
                       .bytes,
                   4.0 * (8192 * 1024 + 1024));
  // embedding [50257, 1024] gathered by [8, 1024] indices.
  EXPECT_DOUBLE_EQ(Price("aten::embedding", "[[50257, 1024], [8, 1024], [], [], []]",
                         R"(["float", "long int", "Scalar", "Scalar", "Scalar"])", "")
                       .bytes,
                   8192.0 * 8 + 2 * 8192.0 * 1024 * 4);
  // Optimizer lists priced from the parameters, as a lower bound of passes.
  CostContext ctx;
  ctx.param_elements = 1e6;
  EXPECT_DOUBLE_EQ(Price("aten::_foreach_addcdiv_", "[[], [], [], []]",
                         R"(["TensorList", "TensorList", "TensorList", ""])", "", ctx)
                       .bytes,
                   3 * 4e6);
  EXPECT_DOUBLE_EQ(
      Price(
          "aten::_fused_adamw_", "[[], [], [], [], [], []]",
          R"(["TensorList", "TensorList", "TensorList", "TensorList", "TensorList", "TensorList"])",
          "", ctx)
          .bytes,
      7 * 4e6);
  EXPECT_EQ(FindCostRule("aten::_foreach_sqrt")->family, OpFamily::kOptimizer);
  EXPECT_EQ(FindCostRule("aten::nonexistent"), nullptr);
  EXPECT_EQ(FindCostRule("aten::cudnn_convolution"), nullptr);  // priced by aten::convolution
}

TEST(GpuPeaks, MeasuredBesideDatasheetAndDeviceNames) {
  const std::optional<hw::GpuPeaks> h200 = hw::PeaksForDevice("NVIDIA H200");
  ASSERT_TRUE(h200.has_value());
  EXPECT_EQ(h200->gpu, "h200-sxm");
  EXPECT_DOUBLE_EQ(h200->Of(hw::MathPath::kFp32Cuda).datasheet, 67);
  EXPECT_DOUBLE_EQ(h200->Of(hw::MathPath::kFp32Cuda).Roof(), 51.2);
  EXPECT_DOUBLE_EQ(h200->Of(hw::MathPath::kBf16).datasheet, 989);
  EXPECT_DOUBLE_EQ(h200->Of(hw::MathPath::kBf16).Roof(), 780.2);
  EXPECT_TRUE(h200->Of(hw::MathPath::kBf16).measured);
  EXPECT_DOUBLE_EQ(h200->Of(hw::MathPath::kTf32x3).Roof(), 410.9 / 3);
  EXPECT_DOUBLE_EQ(h200->hbm_gbps.datasheet, 4800);
  EXPECT_DOUBLE_EQ(h200->hbm_gbps.Roof(), 4363);
  // The small-shape curve: 1024³ reaches 102 TFLOP/s, 8192³ 780.2; between points log-linear.
  EXPECT_DOUBLE_EQ(h200->Bf16GemmAchievable(2.0 * 1024 * 1024 * 1024), 102.0);
  EXPECT_DOUBLE_EQ(h200->Bf16GemmAchievable(2.0 * 8192 * 8192 * 8192), 780.2);
  const double mid = h200->Bf16GemmAchievable(2.0 * 3000 * 3000 * 3000);
  EXPECT_GT(mid, 662.8);
  EXPECT_LT(mid, 773.5);
  const struct {
    const char* device;
    const char* gpu;
  } names[] = {{"NVIDIA H100 80GB HBM3", "h100-sxm"},
               {"NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"},
               {"NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"},
               {"NVIDIA A10G", "a10"},
               {"NVIDIA L4", "l4"},
               {"NVIDIA B200", "b200"},
               {"AMD Instinct MI300X", "mi300x"},
               {"NVIDIA GH200 480GB", "gh200"}};
  for (const auto& n : names) {
    const std::optional<hw::GpuPeaks> p = hw::PeaksForDevice(n.device);
    ASSERT_TRUE(p.has_value()) << n.device;
    EXPECT_EQ(p->gpu, n.gpu) << n.device;
    EXPECT_GT(p->Of(hw::MathPath::kFp32Cuda).datasheet, 0) << n.device;
    EXPECT_FALSE(p->Of(hw::MathPath::kBf16).measured) << n.device;  // only the H200 was measured
  }
  EXPECT_FALSE(hw::PeaksForDevice("Some Future GPU").has_value());
}

}  // namespace
}  // namespace gpuscope::analyze
