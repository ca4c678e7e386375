// planner-reference.md self-checks, reproduced from the planner's own functions, plus invariants.
#include <gtest/gtest.h>

#include <cmath>

#include "hw/gpu_table.h"
#include "plan/calibrate.h"
#include "plan/frameworks.h"
#include "plan/model_config.h"
#include "plan/planner.h"

namespace gpuscope::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;

// A Megatron/GPT-style shape: MHA, 4h GeLU MLP, LayerNorm.
ModelConfig Gpt(int64_t a, int64_t h, int64_t L, int64_t V = 51200) {
  ModelConfig m;
  m.heads = m.kv_heads = a;
  m.hidden = h;
  m.head_dim = h / a;
  m.layers = L;
  m.ffn = 4 * h;
  m.vocab = V;
  m.gated_mlp = false;
  m.rms_norm = false;
  m.tied_embeddings = true;
  return m;
}

ModelConfig Llama2_7b() {
  ModelConfig m;
  m.hidden = 4096;
  m.layers = 32;
  m.heads = m.kv_heads = 32;
  m.head_dim = 128;
  m.ffn = 11008;
  m.vocab = 32000;
  m.gated_mlp = true;
  m.rms_norm = true;
  m.tied_embeddings = false;
  return m;
}

TEST(PlanSelfCheck, VocabPadding) {
  EXPECT_EQ(PadVocab(50257, 8, 128), 51200);   // §0
  EXPECT_EQ(PadVocab(32000, 2, 128), 32000);   // no padding needed
}

// §1 closed form, (a, h, L) → P at V 51,200, s 2048 (values to 4 significant digits).
TEST(PlanSelfCheck, GptClosedForm) {
  struct Row {
    int64_t a, h, L;
    double billions, tolerance;
  };
  const Row rows[] = {{24, 2304, 24, 1.652, 0.0005},   {32, 3072, 30, 3.562, 0.0005},
                      {32, 4096, 36, 7.468, 0.0005},   {48, 6144, 40, 18.45, 0.005},
                      {64, 6144, 48, 22.07, 0.005},    {96, 12288, 80, 145.6, 0.05},
                      {96, 12288, 96, 174.6, 0.05},    {128, 20480, 105, 529.6, 0.05},
                      {160, 25600, 128, 1008.0, 0.05}};
  for (const Row& r : rows) {
    EXPECT_NEAR(GptClosedFormParams(r.L, r.h, 51200, 2048) / 1e9, r.billions, r.tolerance)
        << "h=" << r.h;
    // The general count (biases + learned positions + LayerNorm) is the closed form + final norm.
    ModelConfig m = Gpt(r.a, r.h, r.L);
    m.linear_biases = true;
    m.learned_positions = 2048;
    EXPECT_NEAR(CountParameters(m, 51200).total,
                GptClosedFormParams(r.L, r.h, 51200, 2048) + 2.0 * r.h, 1.0);
  }
}

TEST(PlanSelfCheck, MegatronParameterCount) {
  EXPECT_EQ(CountParameters(Llama2_7b(), 32000).total, 6738415616.0);  // exact published count
  ModelConfig m;
  m.hidden = 16384;
  m.layers = 126;
  m.heads = 128;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 53248;
  m.vocab = 128256;
  m.gated_mlp = true;
  m.rms_norm = true;
  m.tied_embeddings = false;
  EXPECT_NEAR(CountParameters(m, m.vocab).total / 1e9, 405.85, 0.005);
}

// §2 ZeRO paper (GB = 1e9 B), mixed-precision Adam (2 + 2 + K=12), ZeRO-1 / 2 / 3 per GPU.
TEST(PlanSelfCheck, ZeroTable) {
  struct Row {
    double psi;
    int64_t d;
    double z1, z2, z3;
  };
  const Row rows[] = {{7.5e9, 1, 120, 120, 120},       {7.5e9, 4, 52.5, 41.25, 30},
                      {7.5e9, 16, 35.6, 21.6, 7.5},     {7.5e9, 64, 31.4, 16.6, 1.88},
                      {7.5e9, 256, 30.4, 15.4, 0.47},   {7.5e9, 1024, 30.1, 15.1, 0.12},
                      {128e9, 64, 536, 284, 32},        {1e12, 1024, 4011.7, 2013.7, 15.6}};
  auto gb = [](double psi, Sharding s, int64_t d) {
    return StaticMemory(psi, Precision::kBf16, Optimizer::kAdam, s, d, false).Total() / 1e9;
  };
  for (const Row& r : rows) {
    // Tolerance: half a unit of the last printed digit (the paper rounds).
    auto tol = [](double v) {
      return v >= 1000 ? 0.05 : v >= 100 ? 0.5 : v >= 10 ? 0.05 : v >= 1 ? 0.005 : 0.005;
    };
    EXPECT_NEAR(gb(r.psi, Sharding::kZero1, r.d), r.z1, tol(r.z1) + 1e-9) << r.psi << " d=" << r.d;
    EXPECT_NEAR(gb(r.psi, Sharding::kZero2, r.d), r.z2, tol(r.z2) + 1e-9) << r.psi << " d=" << r.d;
    EXPECT_NEAR(gb(r.psi, Sharding::kZero3, r.d), r.z3, tol(r.z3) + 1e-9) << r.psi << " d=" << r.d;
  }
  // Optimizer variants of the §2 table, unsharded: 16 / 10 / 12 B per parameter; fp32 Adam 16.
  EXPECT_EQ(StaticMemory(1, Precision::kBf16, Optimizer::kAdam, Sharding::kNone, 1, false).Total(), 16);
  EXPECT_EQ(StaticMemory(1, Precision::kBf16, Optimizer::kAdam8bit, Sharding::kNone, 1, false).Total(), 10);
  EXPECT_EQ(StaticMemory(1, Precision::kBf16, Optimizer::kSgd, Sharding::kNone, 1, false).Total(), 12);
  EXPECT_EQ(StaticMemory(1, Precision::kFp32, Optimizer::kAdam, Sharding::kNone, 1, false).Total(), 16);
  // Megatron distributed optimizer, bf16 + fp32 main grads: 6 + 12/d.
  EXPECT_EQ(StaticMemory(1, Precision::kBf16, Optimizer::kAdam, Sharding::kZero1, 4, true).Total(), 9);
}

// §2 Korthikanti Fig. 1 "parameters + optimizer": 18 B × 12Lh²/(t·p).
TEST(PlanSelfCheck, KorthikantiParametersAndOptimizer) {
  struct Row {
    double h, L, t, p, gib;
  };
  const Row rows[] = {{6144, 48, 8, 1, 45.56}, {12288, 96, 8, 8, 45.56},
                      {20480, 105, 8, 35, 31.64}, {25600, 128, 8, 64, 32.96}};
  for (const Row& r : rows) {
    const double params = 12 * r.L * r.h * r.h / (r.t * r.p);
    EXPECT_NEAR(StaticMemory(params, Precision::kBf16, Optimizer::kAdam, Sharding::kNone, 1, true)
                        .Total() / kGiB,
                r.gib, 0.005)
        << r.h;
  }
}

// §3 Table 3 configs: activation GiB = Table 2 row × L × interleave factor; Fig. 7 percentages.
TEST(PlanSelfCheck, KorthikantiActivations) {
  struct Row {
    int64_t a, h, L, t, p, b, v;
    double tp_gib, sp_sel_gib;
    double pct_sp, pct_sel, pct_sp_sel, pct_full;  // Fig. 7, < 0 = not given
  };
  const Row rows[] = {
      {64, 6144, 48, 8, 1, 4, 1, 59.25, 9.56, 66.84, 49.42, 16.18, 7.64},
      {96, 12288, 96, 8, 8, 1, 3, 66.84, 12.35, 62.04, 56.53, 18.49, 8.71},
      {128, 20480, 105, 8, 35, 1, 3, 114.02, 23.08, 58.31, 62.04, 20.27, 9.42},
      {160, 25600, 128, 8, 64, 1, 1, 131.25, 26.56, -1, -1, -1, -1},
  };
  const double s = 2048;
  for (const Row& r : rows) {
    const ModelConfig m = Gpt(r.a, r.h, r.L);
    // m ≥ p micro-batches in flight (a training step), so 1F1B holds L layers' worth.
    const double layers = LayersInFlight(r.L, r.p, r.v, 1000 * r.p);
    auto act = [&](bool sp, Recompute rc) {
      return ActivationBytesPerLayer(m, s, static_cast<double>(r.b), r.t, sp, rc,
                                     /*flash=*/false, /*dropout=*/true);
    };
    const double tp_row = act(false, Recompute::kNone);
    EXPECT_NEAR(tp_row * layers / kGiB, r.tp_gib, 0.005) << r.h;
    EXPECT_NEAR(act(true, Recompute::kSelective) * layers / kGiB, r.sp_sel_gib, 0.005) << r.h;
    if (r.pct_sp < 0) continue;
    // "Pure Table 2 ratios agree within 0.15 points."
    EXPECT_NEAR(100 * act(true, Recompute::kNone) / tp_row, r.pct_sp, 0.15) << r.h;
    EXPECT_NEAR(100 * act(false, Recompute::kSelective) / tp_row, r.pct_sel, 0.15) << r.h;
    EXPECT_NEAR(100 * act(true, Recompute::kSelective) / tp_row, r.pct_sp_sel, 0.15) << r.h;
    EXPECT_NEAR(100 * act(false, Recompute::kFull) / tp_row, r.pct_full, 0.15) << r.h;
  }
  // Without parallelism the row is sbh(34 + 5as/h): the general layer formula's "check".
  const ModelConfig m = Gpt(64, 6144, 48);
  const double sbh = 2048.0 * 1 * 6144;
  EXPECT_DOUBLE_EQ(ActivationBytesPerLayer(m, 2048, 1, 1, false, Recompute::kNone, false, true),
                   sbh * (34 + 5.0 * 64 * 2048 / 6144));
}

// §11 worked example: Llama-2-7B shape, 8 × H100, TP 2, DP 4, SP, selective, distributed optimizer.
TEST(PlanSelfCheck, WorkedExampleLlama2) {
  ModelConfig m = Llama2_7b();
  // Megatron's s·b·h·(18 + 4f/h)/t per layer (c = 4), then the SwiGLU correction +2·s·b·f/t.
  ModelConfig plain = m;
  plain.gated_mlp = false;
  const double megatron =
      ActivationBytesPerLayer(plain, 4096, 1, 2, true, Recompute::kSelective, true, true);
  EXPECT_NEAR(megatron / kMiB, 230.0, 0.05);
  const double gated =
      ActivationBytesPerLayer(m, 4096, 1, 2, true, Recompute::kSelective, true, true);
  EXPECT_NEAR((gated - megatron) / kMiB, 43.0, 0.05);

  auto gpu = hw::FindGpu("h100-sxm");
  ASSERT_TRUE(gpu.ok());
  ParallelConfig c;
  c.gpus = 8;
  c.tp = 2;
  c.dp = 4;
  c.sp = true;
  c.mbs = 1;
  c.grad_accum = 16;
  c.sharding = Sharding::kZero1;
  c.recompute = Recompute::kSelective;
  c.framework = Framework::kMegatron;  // bf16 weights + fp32 main grads, distributed optimizer
  PlanAssumptions as;
  const Evaluation ev = Evaluate(m, *gpu, c, 4096, as);
  EXPECT_EQ(ev.memory.params_on_rank, 3369340928.0);
  EXPECT_NEAR(ev.memory.static_bytes / kMiB, 28919.3, 0.05);
  // 37,593.3 + 1,376.0 SwiGLU correction = 38,969.3 MiB.
  EXPECT_NEAR(ev.memory.peak_bytes / kMiB, 38969.3, 0.05);
  EXPECT_NEAR(ev.time.flops_model, 1.124e16, 0.0005e16);  // 42.86 GFLOP/token × 262,144 tokens
}

// §6 FLOPs, GPT-3 shape (L 96, h 12288, s 2048, V 51,200), one sequence.
TEST(PlanSelfCheck, Flops) {
  const double L = 96, h = 12288, s = 2048, V = 51200;
  EXPECT_NEAR(FlopsKorthikantiModel(1, L, s, h, V) / 1e15, 2.2046, 0.00005);
  EXPECT_NEAR(FlopsKorthikantiSelective(1, L, s, h, V) / 1e15, 2.2639, 0.00005);
  EXPECT_NEAR(FlopsNarayananFull(1, L, s, h, V) / 1e15, 2.9368, 0.00005);
  const ModelConfig gpt3 = Gpt(96, 12288, 96);
  EXPECT_NEAR(FlopsMegatron(gpt3, s, s * s, 51200) / 1e15, 2.1749, 0.00005);
  const double n = GptClosedFormParams(96, 12288, 51200, 2048);
  EXPECT_NEAR(6 * n * s / 1e15, 2.1457, 0.00005);
  EXPECT_NEAR(FlopsPalm(gpt3, n, s, s) / 1e15, 2.2051, 0.00005);
  EXPECT_NEAR(FlopsKorthikantiSelective(1, L, s, h, V) / FlopsKorthikantiModel(1, L, s, h, V),
              1.027, 0.0005);
  EXPECT_NEAR(FlopsNarayananFull(1, L, s, h, V) / FlopsKorthikantiModel(1, L, s, h, V), 1.332,
              0.0005);
  // MT-NLG shape: eq. 8 / eq. 7 = 1.016.
  EXPECT_NEAR(FlopsKorthikantiSelective(1, 105, 2048, 20480, V) /
                  FlopsKorthikantiModel(1, 105, 2048, 20480, V),
              1.016, 0.0005);
  // Llama-2-7B, s 4096, Megatron: 42.86 GFLOP/token (39.64 token-linear + 3.22 attention).
  const ModelConfig l2 = Llama2_7b();
  const double per_token = FlopsMegatron(l2, 4096, 4096.0 * 4096, 32000) / 4096;
  EXPECT_NEAR(per_token / 1e9, 42.86, 0.005);
  EXPECT_NEAR(FlopsMegatron(l2, 4096, 0, 32000) / 4096 / 1e9, 39.64, 0.005);
}

// §10 peak = clock × FLOPs per clock per unit × units, against the table's bf16 peak.
TEST(PlanSelfCheck, GpuPeaks) {
  struct Row {
    const char* name;
    double mhz, flops_per_clock, units;
  };
  const Row rows[] = {{"h100-sxm", 1830, 512 * 2, 528}, {"a100-80gb-sxm", 1410, 256 * 2, 432},
                      {"mi300x", 2100, 256 * 2, 1216}};
  for (const Row& r : rows) {
    auto g = hw::FindGpu(r.name);
    ASSERT_TRUE(g.ok());
    EXPECT_NEAR(r.mhz * 1e6 * r.flops_per_clock * r.units / 1e12, g->tflops_bf16,
                0.005 * g->tflops_bf16)
        << r.name;
  }
  EXPECT_EQ(hw::FindGpu("V100")->tflops_bf16, 0);  // no bf16 on V100/T4
  EXPECT_EQ(hw::FindGpu("a100")->tflops_fp8, 0);   // no fp8 before Ada/Hopper
  EXPECT_EQ(hw::FindGpu("rtx-4090")->tflops_bf16, 165.2);  // FP32-accumulate rate
}

ParallelConfig Dp(int64_t gpus, Sharding s) {
  ParallelConfig c;
  c.gpus = gpus;
  c.dp = gpus;
  c.sharding = s;
  c.mbs = 1;
  c.grad_accum = 1;
  c.framework = Framework::kDeepSpeed;  // the one framework with every ZeRO stage
  return c;
}

TEST(PlanInvariant, PeakIsSumOfCountedTerms) {
  auto gpu = hw::FindGpu("h100");
  ASSERT_TRUE(gpu.ok());
  const ModelConfig m = Llama2_7b();
  int evaluated = 0;
  for (const FrameworkRules& fw : AllFrameworks())
  for (Sharding s : {Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3})
  for (bool hybrid : {false, true})
    for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      ParallelConfig c = Dp(16, s);
      c.framework = fw.framework;
      c.hybrid = hybrid;
      c.grad_accum = 2;
      c.recompute = r;
      if (!fw.refuses(c).empty()) continue;
      ++evaluated;
      const Evaluation ev = Evaluate(m, *gpu, c, 4096, {});
      double sum = 0, statics = 0;
      for (const MemoryTerm& t : ev.memory.terms) {
        if (t.counted) sum += t.bytes;
        if (t.kind == TermKind::kStatic) statics += t.bytes;
        EXPECT_FALSE(t.formula.empty()) << t.name;
      }
      EXPECT_DOUBLE_EQ(sum, ev.memory.peak_bytes);
      EXPECT_DOUBLE_EQ(statics, ev.memory.static_bytes);
      double seconds = 0;
      for (const TimeTerm& t : ev.time.terms) seconds += t.seconds;
      EXPECT_DOUBLE_EQ(seconds, ev.time.step_s);
      EXPECT_GT(ev.time.mfu, 0);
      EXPECT_LT(ev.time.mfu, 1);
    }
  // Megatron 2 stages (none, dist-opt) × 3 recomputes; DeepSpeed 4 × 2 (none, full); FSDP
  // FULL_SHARD (and hybrid) and SHARD_GRAD_OP × 2; DDP 1 × 2.
  EXPECT_EQ(evaluated, 6 + 8 + 6 + 2);
}

TEST(PlanInvariant, MoreGpusWithZero3MeansLessStaticMemory) {
  auto gpu = hw::FindGpu("h100");
  const ModelConfig m = Llama2_7b();
  double prev = 1e30;
  for (int64_t n : {8, 16, 64, 256, 1024}) {
    const Evaluation ev = Evaluate(m, *gpu, Dp(n, Sharding::kZero3), 4096, {});
    EXPECT_LT(ev.memory.static_bytes, prev) << n;
    prev = ev.memory.static_bytes;
  }
  // ZeRO stages order static memory: 0 > 1 > 2 > 3.
  double last = 1e30;
  for (Sharding s : {Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}) {
    const double bytes = Evaluate(m, *gpu, Dp(8, s), 4096, {}).memory.static_bytes;
    EXPECT_LT(bytes, last);
    last = bytes;
  }
}

TEST(PlanInvariant, RecomputeOrdersActivationsAndFlops) {
  auto gpu = hw::FindGpu("h100");
  const ModelConfig m = Llama2_7b();
  ParallelConfig c = Dp(8, Sharding::kZero1);
  PlanAssumptions a;
  a.impl = Impl::kMegatron;  // selective recompute is Megatron's
  c.recompute = Recompute::kNone;
  const Evaluation none = Evaluate(m, *gpu, c, 4096, a);
  c.recompute = Recompute::kSelective;
  const Evaluation sel = Evaluate(m, *gpu, c, 4096, a);
  c.recompute = Recompute::kFull;
  const Evaluation full = Evaluate(m, *gpu, c, 4096, a);
  EXPECT_GT(none.memory.activation_bytes, sel.memory.activation_bytes);
  EXPECT_GT(sel.memory.activation_bytes, full.memory.activation_bytes);
  EXPECT_EQ(none.time.flops_model, full.time.flops_model);
  EXPECT_LT(none.time.flops_hardware, sel.time.flops_hardware);
  EXPECT_LT(sel.time.flops_hardware, full.time.flops_hardware);
}

TEST(PlanSearch, RanksByThroughputAndExplainsRejections) {
  PlanRequest r;
  r.model = Llama2_7b();
  r.gpu = *hw::FindGpu("a100-80gb");
  r.gpus = 16;
  r.global_batch = 96;
  r.seq_len = 4096;
  auto rep = Plan(r);
  ASSERT_TRUE(rep.ok());
  ASSERT_FALSE(rep->feasible.empty());
  for (size_t i = 1; i < rep->feasible.size(); ++i)
    EXPECT_GE(rep->feasible[i - 1].time.tokens_per_s, rep->feasible[i].time.tokens_per_s);
  for (const Evaluation& e : rep->feasible) {
    EXPECT_TRUE(e.memory.fits);
    EXPECT_EQ(e.config.mbs * e.config.grad_accum * e.config.dp, 96);
    EXPECT_EQ(e.config.tp * e.config.pp * e.config.dp, 16);
  }
  bool oom = false, divisible = false;
  for (const Rejection& x : rep->rejected) {
    EXPECT_FALSE(x.reason.empty());
    oom |= x.reason.rfind("OOM by", 0) == 0;
    divisible |= x.reason.find("not divisible by mbs·dp") != std::string::npos;
  }
  EXPECT_TRUE(oom);
  EXPECT_TRUE(divisible);
}

// Regression: η also scales the pipeline bubble and the exposed data-parallel time, so fitting it
// on the compute term alone missed the measured step with pp > 1 (0.1835 s for 0.1755 s measured).
TEST(PlanCalibrate, ReproducesMeasuredStepWithPipeline) {
  const ModelConfig m = Gpt(25, 1600, 48, 50257);  // gpt2-xl
  const hw::GpuSpec gpu = *hw::FindGpu("a100");
  for (int64_t pp : {2, 4}) {
    ParallelConfig c;
    c.gpus = 4;
    c.pp = pp;
    c.dp = 4 / pp;
    c.mbs = 1;
    c.grad_accum = 8 / c.dp;
    PlanAssumptions a;
    for (double measured_s : {0.1755, 0.5, 2.0}) {
      TraceMeasurement t;
      t.source = "synthetic";
      t.step_s = measured_s;
      auto cal = Calibrate(m, gpu, c, 512, a, t);
      ASSERT_TRUE(cal.ok());
      EXPECT_GT(cal->efficiency, 0.01);
      EXPECT_LT(cal->efficiency, 1);
      EXPECT_NEAR(cal->after.time.step_s, measured_s, 1e-3 * measured_s)
          << "pp " << pp << " η " << cal->efficiency;
      EXPECT_TRUE(cal->notes.size() == 1) << cal->notes.size();  // only "no memory events"
    }
    // Faster than η = 1 allows: clamped and reported as unreachable.
    TraceMeasurement fast;
    fast.source = "synthetic";
    fast.step_s = 1e-6;
    auto cal = Calibrate(m, gpu, c, 512, a, fast);
    ASSERT_TRUE(cal.ok());
    EXPECT_EQ(cal->efficiency, 1);
    ASSERT_FALSE(cal->notes.empty());
    EXPECT_NE(cal->notes.front().find("unreachable"), std::string::npos) << cal->notes.front();
    // Far slower than η = 0.01 predicts: clamped to 0.01.
    TraceMeasurement slow = fast;
    slow.step_s = 1e6;
    cal = Calibrate(m, gpu, c, 512, a, slow);
    ASSERT_TRUE(cal.ok());
    EXPECT_EQ(cal->efficiency, 0.01);
  }
}

// Regression (review): memory was vendor GB read as 1e9 B (A100 80GB → 74.5 GiB), 7 % below what
// the CUDA runtime reports (totalGlobalMem).
TEST(PlanGpuTable, MemoryIsTheDeviceReportedCapacity) {
  EXPECT_DOUBLE_EQ(hw::FindGpu("a100")->memory_gib * kGiB, 85899345920.0);  // 80 GiB
  EXPECT_DOUBLE_EQ(hw::FindGpu("a100-40gb")->memory_gib * kGiB, 42505273344.0);
  EXPECT_DOUBLE_EQ(hw::FindGpu("h100")->memory_gib * kGiB, 85520809984.0);
  EXPECT_DOUBLE_EQ(hw::FindGpu("v100")->memory_gib * kGiB, 34089730048.0);
  for (const hw::GpuSpec& g : hw::KnownGpus()) {
    EXPECT_NE(g.source.find("memory:"), std::string::npos) << g.name << ": no memory source";
    EXPECT_GT(g.memory_gib, 10) << g.name;
  }
}

}  // namespace
// Each framework's static bytes per parameter of P_rank (docs/planner.md "Frameworks"), bf16 Adam,
// shard group d = 4: Megatron 2 + 4 + 12/d with the distributed optimizer (the fp32 main-gradient
// buffer stays whole; 2 + 2 + 12/d with --grad-reduce-in-bf16), 18 without; DeepSpeed ZeRO-0 20,
// ZeRO-1 4 + 16/d, ZeRO-2 2 + 18/d, ZeRO-3 18/d; FSDP FULL_SHARD 16/d, SHARD_GRAD_OP 16/d + 2;
// DDP 4 + 4 + 4 (buckets) + 8.
TEST(PlanFrameworks, StaticBytesPerParameter) {
  auto gpu = hw::FindGpu("h100");
  ASSERT_TRUE(gpu.ok());
  const ModelConfig m = Llama2_7b();
  struct Case {
    Framework fw;
    Sharding s;
    bool bf16_grads;
    double bytes_per_param;
  };
  const Case cases[] = {
      {Framework::kMegatron, Sharding::kZero1, false, 2 + 4 + 12.0 / 4},
      {Framework::kMegatron, Sharding::kZero1, true, 2 + 2 + 12.0 / 4},
      {Framework::kMegatron, Sharding::kNone, false, 18},
      {Framework::kDeepSpeed, Sharding::kNone, false, 20},
      {Framework::kDeepSpeed, Sharding::kZero1, false, 4 + 16.0 / 4},
      {Framework::kDeepSpeed, Sharding::kZero2, false, 2 + 18.0 / 4},
      {Framework::kDeepSpeed, Sharding::kZero3, false, 18.0 / 4},
      {Framework::kFsdp, Sharding::kZero3, false, 16.0 / 4},
      {Framework::kFsdp, Sharding::kZero2, false, 16.0 / 4 + 2},
      {Framework::kDdp, Sharding::kNone, false, 20},
  };
  for (const Case& k : cases) {
    ParallelConfig c = Dp(4, k.s);
    c.framework = k.fw;
    c.bf16_grads = k.bf16_grads;
    ASSERT_EQ(RulesFor(k.fw).refuses(c), "") << Degrees(c);
    const Evaluation ev = Evaluate(m, *gpu, c, 4096, {});
    EXPECT_NEAR(ev.memory.static_bytes / ev.memory.params_on_rank, k.bytes_per_param, 1e-9) << Degrees(c);
  }
}

// A framework refuses what it cannot run, in its own words; the search never proposes it.
TEST(PlanFrameworks, RefusalsQuoteTheFrameworksRule) {
  ParallelConfig c = Dp(8, Sharding::kZero2);
  c.pp = 2;
  c.dp = 4;
  EXPECT_NE(RulesFor(Framework::kDeepSpeed).refuses(c).find("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"),
            std::string::npos);
  c.framework = Framework::kMegatron;
  EXPECT_NE(RulesFor(Framework::kMegatron).refuses(c).find("shards only the optimizer"), std::string::npos);
  ParallelConfig f = Dp(8, Sharding::kZero3);
  f.framework = Framework::kFsdp;
  f.offload = Offload::kOptimizer;
  EXPECT_NE(RulesFor(Framework::kFsdp).refuses(f).find("cannot offload only the optimizer"), std::string::npos);
  f.offload = Offload::kNone;
  f.recompute = Recompute::kSelective;
  EXPECT_NE(RulesFor(Framework::kFsdp).refuses(f).find("selective recompute"), std::string::npos);

  PlanRequest r;
  r.model = Llama2_7b();
  r.gpu = *hw::FindGpu("h100");
  r.gpus = 16;
  r.global_batch = 128;
  r.seq_len = 4096;
  auto rep = Plan(r);
  ASSERT_TRUE(rep.ok());
  ASSERT_FALSE(rep->feasible.empty());
  EXPECT_GT(rep->not_supported, 0u);
  for (const Evaluation& e : rep->feasible)
    EXPECT_EQ(RulesFor(e.config.framework).refuses(e.config), "") << Degrees(e.config);
  // Forced: the named framework's rule is the error.
  r.framework = Framework::kDeepSpeed;
  r.pp = 2;
  r.sharding = Sharding::kZero2;
  auto refused = Plan(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUsage);
  EXPECT_NE(refused.status().message().find("--framework deepspeed cannot run this: DeepSpeed's pipeline engine"),
            std::string::npos)
      << refused.status().message();
  // Unforced framework: the error names every framework's rule.
  r.framework.reset();
  r.sharding = Sharding::kZero3;
  auto none = Plan(r);
  ASSERT_FALSE(none.ok());
  for (const char* fw : {"megatron: ", "deepspeed: ", "fsdp: ", "ddp: "})
    EXPECT_NE(none.status().message().find(fw), std::string::npos) << none.status().message();
}

}  // namespace gpuscope::plan
