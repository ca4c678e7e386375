// Planner truth on Hugging Face models (issue 33): exact mode's measured step (the JSON of
// python/gpuscope/exact.py, saved in tests/data/plan so that no torch is needed here) against the
// H200 lab's measured runs (shared/traces/gpu_lab_h200/truth.json: B1 gpt2-medium fp32, B2 bf16
// autocast, batch 8 × 1024, torch AdamW); precisions as math paths (fp32 on CUDA cores, tf32 on
// tensor cores); one GPU is plain PyTorch (no DDP buckets); fp8 only when asked.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "api/plan.h"
#include "hw/gpu_peaks.h"
#include "plan/exact.h"
#include "plan/planner.h"
#include "test_util.h"

namespace gpuscope {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string Measurement(const std::string& name) {
  return std::string(GPUSCOPE_SOURCE_DIR) + "/tests/data/plan/" + name;
}

// The text of a saved measurement.
std::string ReadMeasurement(const std::string& name) {
  std::ifstream in(Measurement(name));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

api::PlanOptions Gpt2Medium(const std::string& precision, const std::string& measurement,
                            int64_t mbs = 8) {
  api::PlanOptions o;
  o.model = testing::RealTrace("gpu_lab_h200/gpt2-medium.config.json");
  o.gpu = "h200";
  o.gpus = 1;
  o.global_batch = mbs;
  o.mbs = mbs;
  o.seq_len = 1024;
  o.precision = precision;
  o.recompute = measurement.find("_full") != std::string::npos ? "full" : "none";
  o.framework = "ddp";
  o.zero = "0";
  o.tp = 1;
  o.pp = 1;
  if (!measurement.empty())
    o.exact_from = Measurement(measurement);
  else
    o.no_exact = true;  // formulas, whatever Python this machine has
  return o;
}

// The bundled Llama-3-8B on 8 GPUs, global batch 64.
api::PlanOptions Llama3_8b(const char* gpu, int64_t seq_len) {
  api::PlanOptions o;
  o.model = "llama-3-8b";
  o.gpu = gpu;
  o.gpus = 8;
  o.global_batch = 64;
  o.seq_len = seq_len;
  return o;
}

// truth.json's case → (max_allocated bytes, median step seconds).
std::pair<double, double> Truth(const char* run) {
  simdjson::dom::parser parser;
  simdjson::dom::element truth;
  EXPECT_EQ(parser.load(testing::RealTrace("gpu_lab_h200/truth.json")).get(truth),
            simdjson::SUCCESS);
  return {double(truth[run]["max_allocated"]), double(truth[run]["median_ms"]) / 1e3};
}

double TruthTotalMemory() {
  simdjson::dom::parser parser;
  simdjson::dom::element truth;
  EXPECT_EQ(parser.load(testing::RealTrace("gpu_lab_h200/truth.json")).get(truth),
            simdjson::SUCCESS);
  return double(truth["gpu"]["total_memory"]);
}

const plan::MemoryTerm* Term(const plan::Evaluation& e, std::string_view prefix) {
  for (const plan::MemoryTerm& t : e.memory.terms)
    if (t.name.rfind(prefix, 0) == 0) return &t;
  return nullptr;
}

// The acceptance of issue 33 on the lab pairs: peak allocated within ±10 %, step within ±20 %.
TEST(PlanExact, LabGpt2MediumWithinTheMeasuredRuns) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/truth.json",
                        "traces/gpu_lab_h200/gpt2-medium.config.json");
  struct Case {
    const char* precision;
    const char* file;
    const char* run;
  };
  for (const Case& c : {Case{"bf16", "exact_gpt2-medium_b8_s1024_bf16.json", "B2_gpt2m_bf16"},
                        Case{"fp32", "exact_gpt2-medium_b8_s1024_fp32.json", "B1_gpt2m_fp32"}}) {
    SCOPED_TRACE(c.run);
    auto planned = api::PlanJob(Gpt2Medium(c.precision, c.file));
    ASSERT_TRUE(planned.ok()) << planned.status().message();
    ASSERT_EQ(planned->report.feasible.size(), 1u);
    const plan::Evaluation& e = planned->report.feasible.front();
    EXPECT_TRUE(e.memory.measured);
    EXPECT_TRUE(e.time.measured);
    const auto [max_allocated, step_s] = Truth(c.run);
    EXPECT_NEAR(e.memory.peak_allocated_bytes / max_allocated, 1.0, 0.10)
        << e.memory.peak_allocated_bytes / kGiB << " GiB predicted, " << max_allocated / kGiB
        << " measured";
    EXPECT_NEAR(e.time.step_s / step_s, 1.0, 0.20)
        << e.time.step_s * 1e3 << " ms predicted, " << step_s * 1e3 << " measured";
    // What the device needs = allocated + the CUDA context (1 GiB by default).
    EXPECT_DOUBLE_EQ(e.memory.peak_bytes - e.memory.peak_allocated_bytes, 1.0 * kGiB);
    // The H200's capacity is what PyTorch measured there (139.80 GiB), not the nominal 141.
    EXPECT_DOUBLE_EQ(e.memory.capacity_bytes, TruthTotalMemory());
    // One GPU: plain PyTorch, no DDP buckets; gradients are freed before the peak.
    EXPECT_EQ(Term(e, "DDP gradient buckets"), nullptr);
    ASSERT_NE(Term(e, "fp32 gradients"), nullptr);
    EXPECT_EQ(Term(e, "fp32 gradients")->bytes, 0);
  }
}

// The formulas alone (no measurement, --impl hf by default under DDP): Hugging Face's modules'
// memory within ±10 % and their step (the kernels written out from the shape and priced as
// exact mode's are: plan/hf_ops.h) within ±20 % of the H200's.
TEST(PlanExact, HfFormulasMatchMemoryAndEagerStepTime) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/truth.json",
                        "traces/gpu_lab_h200/gpt2-medium.config.json");
  for (const auto& [precision, run] :
       {std::pair{"bf16", "B2_gpt2m_bf16"}, std::pair{"fp32", "B1_gpt2m_fp32"}}) {
    SCOPED_TRACE(run);
    auto planned = api::PlanJob(Gpt2Medium(precision, ""));
    ASSERT_TRUE(planned.ok()) << planned.status().message();
    const plan::Evaluation& e = planned->report.feasible.front();
    EXPECT_FALSE(e.memory.measured);
    ASSERT_NE(Term(e, "activations of transformer layers in flight (Hugging Face modules)"),
              nullptr);
    const auto [max_allocated, step_s] = Truth(run);
    EXPECT_NEAR(e.memory.peak_allocated_bytes / max_allocated, 1.0, 0.10);
    EXPECT_FALSE(e.time.measured);
    EXPECT_EQ(e.time.terms.front().name, "compute (Hugging Face ops priced, formulas)");
    EXPECT_NEAR(e.time.step_s / step_s, 1.0, 0.20)
        << e.time.step_s * 1e3 << " ms predicted, " << step_s * 1e3 << " measured";
  }
  // Megatron's kernels (--impl megatron) keep far less: the old answer, 38 % under.
  api::PlanOptions o = Gpt2Medium("bf16", "");
  o.impl = "megatron";
  auto megatron = api::PlanJob(o);
  ASSERT_TRUE(megatron.ok()) << megatron.status().message();
  EXPECT_LT(megatron->report.feasible.front().memory.peak_allocated_bytes,
            0.75 * Truth("B2_gpt2m_bf16").first);
}

// The HF formulas are the measured step's terms, op by op: each block's saved bytes equal exact
// mode's measurement of gpt2-medium (bf16 autocast and fp32) to 0.1 %.
TEST(PlanExact, HfLayerFormulaIsWhatExactModeMeasures) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/gpt2-medium.config.json");
  auto config = plan::LoadModelConfig(testing::RealTrace("gpu_lab_h200/gpt2-medium.config.json"));
  ASSERT_TRUE(config.ok());
  for (const auto& [p, file] :
       {std::pair{hw::Precision::kBf16, "exact_gpt2-medium_b8_s1024_bf16.json"},
        std::pair{hw::Precision::kFp32, "exact_gpt2-medium_b8_s1024_fp32.json"}}) {
    auto m = plan::ParseMeasuredStep(ReadMeasurement(file), file);
    ASSERT_TRUE(m.ok());
    const double formula =
        plan::HfActivationBytesPerLayer(*config, 1024, 8, p, true, plan::Recompute::kNone);
    EXPECT_NEAR(formula / m->MeanSavedPerLayer(), 1.0, 1e-3) << file;
  }
}

// Activations scale with the micro-batch's tokens; static memory and the autocast cache do not.
TEST(PlanExact, MeasuredTermsScaleWithTokens) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/gpt2-medium.config.json");
  auto b8 = api::PlanJob(Gpt2Medium("bf16", "exact_gpt2-medium_b8_s1024_bf16.json", 8));
  auto b16 = api::PlanJob(Gpt2Medium("bf16", "exact_gpt2-medium_b8_s1024_bf16.json", 16));
  ASSERT_TRUE(b8.ok() && b16.ok());
  const plan::Evaluation& x = b8->report.feasible.front();
  const plan::Evaluation& y = b16->report.feasible.front();
  EXPECT_NEAR(y.memory.activation_bytes, 2 * x.memory.activation_bytes, 1);
  EXPECT_DOUBLE_EQ(y.memory.static_bytes, x.memory.static_bytes);
  EXPECT_DOUBLE_EQ(Term(y, "autocast weight cache")->bytes,
                   Term(x, "autocast weight cache")->bytes);
  // Twice the tokens: GEMMs get no slower per FLOP, so the step at most doubles (+ the optimizer).
  EXPECT_GT(y.time.step_s, 1.8 * x.time.step_s - 0.02);
  EXPECT_LT(y.time.step_s, 2.0 * x.time.step_s);
}

// A measurement of another precision (or recompute) does not apply: formulas, and the plan says
// which.
TEST(PlanExact, AnotherPrecisionOrRecomputeIsFormulas) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/gpt2-medium.config.json");
  api::PlanOptions o = Gpt2Medium("fp32", "exact_gpt2-medium_b8_s1024_bf16.json");
  auto planned = api::PlanJob(o);
  ASSERT_TRUE(planned.ok());
  EXPECT_FALSE(planned->report.feasible.front().memory.measured);
  // Plain PyTorch was measured: FSDP (16-bit weights) keeps the formulas.
  o = Gpt2Medium("bf16", "exact_gpt2-medium_b8_s1024_bf16.json");
  o.framework = "fsdp";
  o.zero = "3";
  planned = api::PlanJob(o);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_FALSE(planned->report.feasible.front().memory.measured);
  o = Gpt2Medium("bf16", "exact_gpt2-medium_b8_s1024_bf16_full.json");
  planned = api::PlanJob(o);
  ASSERT_TRUE(planned.ok());
  const plan::Evaluation& full = planned->report.feasible.front();
  EXPECT_TRUE(full.memory.measured);
  EXPECT_EQ(full.config.recompute, plan::Recompute::kFull);
  auto none = api::PlanJob(Gpt2Medium("bf16", "exact_gpt2-medium_b8_s1024_bf16.json"));
  ASSERT_TRUE(none.ok());
  // Checkpointing keeps each block's input only: far less at the peak.
  EXPECT_LT(full.memory.peak_allocated_bytes,
            0.5 * none->report.feasible.front().memory.peak_allocated_bytes);
  bool said = false;
  for (const std::string& a : planned->report.assumptions)
    said |= a.find("exact mode: one training step") != std::string::npos &&
            a.find("recompute full") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(PlanExact, BadMeasurementsAreClearErrors) {
  auto garbage = plan::ParseMeasuredStep("not json", "m.json");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("m.json"), std::string::npos);
  auto error = plan::ParseMeasuredStep(
      R"({"schema": "gpuscope.exact/1", "error": "exact mode needs torch >= 2"})", "python3");
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.status().message().find("needs torch"), std::string::npos);
  auto schema = plan::ParseMeasuredStep(R"({"schema": "other"})", "m.json");
  ASSERT_FALSE(schema.ok());
  EXPECT_NE(schema.status().message().find("gpuscope.exact/1"), std::string::npos);
  auto missing = plan::ParseMeasuredStep(R"({"schema": "gpuscope.exact/1", "batch": 8})", "m.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidInput);
  // Every field, then one op with a negative byte count.
  const std::string text = ReadMeasurement("exact_gpt2-medium_b8_s1024_bf16.json");
  auto good = plan::ParseMeasuredStep(text, "m.json");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->batch, 8);
  EXPECT_EQ(good->layers, 24);
  EXPECT_EQ(good->saved_per_layer_bytes.size(), 24u);
  EXPECT_GT(good->ops.size(), 20u);
  std::string bad = text;
  const size_t at = bad.find("\"bytes\":");  // the saved files are minified
  ASSERT_NE(at, std::string::npos);
  bad.insert(at + 8, "-");
  EXPECT_FALSE(plan::ParseMeasuredStep(bad, "m.json").ok());
  // Found by exact_step_fuzz: a block that saved 7.6e86 bytes planned a memory term the JSON could
  // not hold exactly. Beyond 2^50 B a number is no measurement: an error naming the field.
  std::string huge = text;
  const size_t layer = huge.find("\"saved_per_layer_bytes\":[");
  ASSERT_NE(layer, std::string::npos);
  huge.insert(layer + 25, "7.5563e+86,");
  auto refused = plan::ParseMeasuredStep(huge, "m.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("saved_per_layer_bytes outside [0, 2^50]"),
            std::string::npos)
      << refused.status().message();
}

// --exact without a Python that has torch: a clear error naming the interpreter and the hint.
TEST(PlanExact, NoPythonIsAClearError) {
  plan::ExactRequest r;
  r.config_path = "x.json";
  r.batch = 1;
  r.seq_len = 8;
  r.precision = "bf16";
  r.recompute = "none";
  r.optimizer = "adam";
  r.python = "/nonexistent/python3";
  auto m = plan::MeasureStep(r);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/nonexistent/python3"), std::string::npos);
  EXPECT_NE(m.status().message().find("GPUSCOPE_PYTHON"), std::string::npos);
}

// Pricing: GEMMs on their path's roof, misaligned 16-bit GEMMs at 15 %, memory-bound ops at HBM.
TEST(PlanExact, PricingFollowsThePeaksTable) {
  const auto peaks = hw::PeaksForGpu("h200");
  ASSERT_TRUE(peaks.has_value());
  plan::MeasuredStep m;
  m.batch = 1;
  m.seq_len = 1;
  m.parameters = 1;
  const double flops = 2.0 * 8192 * 8192 * 8192;  // on the curve's flat end
  m.ops = {{"mm", "gemm", "bf16", flops, 0, 8192, 8192, 8192, 1},
           {"mm", "gemm", "bf16", flops, 0, 8192, 8191, 8192, 1},
           {"mm", "gemm", "fp32_cuda", flops, 0, 8192, 8192, 8192, 1},
           {"add", "memory", "", 0, 4363e9 * 0.9 * 1e-3, 0, 0, 0, 1}};
  plan::OpEfficiency e;
  const plan::PricedStep p = plan::PriceMeasuredOps(m, *peaks, e, 1, 1);
  const double bf16 = flops / (peaks->Of(hw::MathPath::kBf16).Roof() * 1e12);
  const double fp32 = flops / (peaks->Of(hw::MathPath::kFp32Cuda).Roof() * 1e12);
  EXPECT_NEAR(p.gemm_s, bf16 + bf16 / e.misaligned_gemm + fp32, 1e-9);
  EXPECT_NEAR(p.memory_s, 1e-3, 1e-9);
  EXPECT_EQ(p.kernels, 4);
  EXPECT_NEAR(p.host_s, 4 * e.host_per_op_s, 1e-12);
}

// fp32 is PyTorch's default: CUDA cores (67 TFLOP/s on an H200), not TF32 (494.5).
TEST(PlanPrecision, Fp32IsCudaCoresTf32IsTensorCores) {
  auto h200 = hw::FindGpu("h200");
  ASSERT_TRUE(h200.ok());
  EXPECT_DOUBLE_EQ(hw::PlanPeakTflops(*h200, hw::Precision::kFp32), 67);
  EXPECT_DOUBLE_EQ(hw::PlanPeakTflops(*h200, hw::Precision::kTf32), 494.5);
  auto custom = hw::ParseGpuSpec("x:80:800:3000");
  ASSERT_TRUE(custom.ok());
  bool assumed = false;
  EXPECT_DOUBLE_EQ(hw::PlanPeakTflops(*custom, hw::Precision::kFp32, &assumed), 400.0 / 8);
  EXPECT_TRUE(assumed);
  api::PlanOptions o = Llama3_8b("h200", 2048);
  o.framework = "fsdp";
  o.zero = "3";
  o.mbs = 1;
  o.tp = 1;
  o.pp = 1;
  o.recompute = "full";
  o.precision = "fp32";
  o.impl = "megatron";  // the η formula: compute ∝ 1 / the path's peak
  auto fp32 = api::PlanJob(o);
  o.precision = "tf32";
  auto tf32 = api::PlanJob(o);
  ASSERT_TRUE(fp32.ok() && tf32.ok()) << fp32.status().message() << tf32.status().message();
  const plan::StepTime& a = fp32->report.feasible.front().time;
  const plan::StepTime& b = tf32->report.feasible.front().time;
  EXPECT_NEAR(a.terms.front().seconds / b.terms.front().seconds, 494.5 / 67, 1e-9);
  // Both keep fp32 weights: the same memory.
  EXPECT_DOUBLE_EQ(fp32->report.feasible.front().memory.peak_bytes,
                   tf32->report.feasible.front().memory.peak_bytes);
}

TEST(PlanPrecision, Fp8OnlyWhenAsked) {
  api::PlanOptions o = Llama3_8b("h100", 4096);
  o.top = 1000;
  auto searched = api::PlanJob(o);
  ASSERT_TRUE(searched.ok());
  ASSERT_FALSE(searched->report.feasible.empty());
  for (const plan::Evaluation& e : searched->report.feasible)
    EXPECT_NE(e.config.precision, hw::Precision::kFp8);
  o.precision = "fp8";
  auto asked = api::PlanJob(o);
  ASSERT_TRUE(asked.ok());
  ASSERT_FALSE(asked->report.feasible.empty());
  EXPECT_EQ(asked->report.feasible.front().config.precision, hw::Precision::kFp8);
}

TEST(PlanDdp, BucketsOnlyWithMoreThanOneGpu) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/gpt2-medium.config.json");
  api::PlanOptions o = Gpt2Medium("bf16", "");
  auto one = api::PlanJob(o);
  o.gpus = 2;
  o.global_batch = 16;
  auto two = api::PlanJob(o);
  ASSERT_TRUE(one.ok() && two.ok()) << two.status().message();
  EXPECT_EQ(Term(one->report.feasible.front(), "DDP gradient buckets"), nullptr);
  ASSERT_NE(Term(two->report.feasible.front(), "DDP gradient buckets"), nullptr);
  EXPECT_DOUBLE_EQ(Term(two->report.feasible.front(), "DDP gradient buckets")->bytes,
                   4.0 * two->report.feasible.front().memory.params_on_rank);
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

// --from-trace fits what scales with tokens (an activation scale, time per token outside
// GEMM/attention), so the lab's B2 trace at batch 8 predicts batch 16 by scaling, not by adding a
// constant: the traced batch is reproduced exactly, twice the batch doubles the activations and
// the time outside GEMM/attention.
TEST(PlanCalibration, FitsPerTokenTermsThatExtrapolate) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/truth.json",
                        "traces/gpu_lab_h200/gpt2-medium.config.json",
                        "traces/gpu_lab_h200/B2_gpt2m_bf16.1795883130099329806.pt.trace.json.gz");
  api::PlanOptions o = Gpt2Medium("bf16", "");
  o.no_exact = false;  // --from-trace fits the formulas (exact mode does not run with it)
  o.from_trace =
      testing::RealTrace("gpu_lab_h200/B2_gpt2m_bf16.1795883130099329806.pt.trace.json.gz");
  auto planned = api::PlanJob(o);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const plan::PlanAssumptions& a = planned->request.assumptions;
  EXPECT_NEAR(a.activation_scale, 1.0, 0.1);  // the HF formulas are within 10 % already
  EXPECT_GT(a.other_s_per_token, 0);
  EXPECT_EQ(a.overhead_bytes, 0);
  const auto [max_allocated, step_s] = Truth("B2_gpt2m_bf16");
  (void)step_s;
  plan::ParallelConfig c;
  c.framework = plan::Framework::kDdp;
  c.precision = hw::Precision::kBf16;
  c.mbs = 8;
  const plan::Evaluation b8 =
      plan::Evaluate(planned->request.model, planned->request.gpu, c, 1024, a);
  EXPECT_NEAR(b8.memory.peak_allocated_bytes / max_allocated, 1.0, 1e-6);
  c.mbs = 16;
  const plan::Evaluation b16 =
      plan::Evaluate(planned->request.model, planned->request.gpu, c, 1024, a);
  EXPECT_NEAR(b16.memory.activation_bytes, 2 * b8.memory.activation_bytes, 1);
  EXPECT_DOUBLE_EQ(b16.memory.static_bytes, b8.memory.static_bytes);
  auto other = [](const plan::Evaluation& e) {
    for (const plan::TimeTerm& t : e.time.terms)
      if (t.name.rfind("outside GEMM/attention", 0) == 0) return t.seconds;
    return -1.0;
  };
  ASSERT_GT(other(b8), 0);
  EXPECT_NEAR(other(b16), 2 * other(b8), 1e-12);
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

// Auto mode: a config file planned for Hugging Face code, without a Python that has torch, is
// formulas with a note saying why; --no-exact is formulas without one; never an error.
TEST(PlanExact, AutoModeWithoutTorchIsFormulasAndSaysWhy) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/gpt2-medium.config.json");
  api::PlanOptions o = Gpt2Medium("bf16", "");
  o.no_exact = false;
  const char* before = std::getenv("GPUSCOPE_PYTHON");
  const std::string saved = before ? before : "";
  setenv("GPUSCOPE_PYTHON", "/nonexistent/python-for-this-test", 1);
  auto planned = api::PlanJob(o);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_FALSE(planned->report.feasible.front().memory.measured);
  bool said = false;
  for (const std::string& a : planned->report.assumptions)
    said |= a.find("exact mode: no torch and transformers in /nonexistent/python-for-this-test") !=
            std::string::npos;
  EXPECT_TRUE(said);
  o.no_exact = true;
  planned = api::PlanJob(o);
  ASSERT_TRUE(planned.ok());
  for (const std::string& a : planned->report.assumptions)
    EXPECT_EQ(a.find("exact mode"), std::string::npos) << a;
  // Megatron plans Megatron's kernels: no measurement of the Hugging Face code, no note.
  o.no_exact = false;
  o.framework = "megatron";
  planned = api::PlanJob(o);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  for (const std::string& a : planned->report.assumptions)
    EXPECT_EQ(a.find("exact mode"), std::string::npos) << a;
  if (before)
    setenv("GPUSCOPE_PYTHON", saved.c_str(), 1);
  else
    unsetenv("GPUSCOPE_PYTHON");
}

}  // namespace
}  // namespace gpuscope
