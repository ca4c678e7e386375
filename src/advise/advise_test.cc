// The advice rule table: every rule has a unique id, a fix, a threshold and a saving model; every
// rule fires on analysis results made here by hand, with typed evidence whose key suffix names its
// unit; the ranking, severity and verdict follow the table; docs/advice.md holds the table the
// code generates.
#include "advise/advise.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace gpuscope::advise {
namespace {

constexpr int64_t kMs = 1'000'000;

// Analysis results of one rank, made by hand so that every GPU-time rule fires with known
// numbers: 4 steps of 100 ms.
struct Planted {
  analyze::TraceSummary summary;
  analyze::GpuTime gpu_time;
  analyze::StepsResult steps;
  analyze::KernelsResult kernels;
  analyze::LaunchStats launches;
  analyze::CopyStats copies;
  analyze::SyncStats sync;
  analyze::MemoryStats memory;
  analyze::OccupancyStats occupancy;
  analyze::IdleGapStats idle_gaps;
  analyze::HostWork host_work;
  analyze::OpCosts op_costs;  // only with AddOpCosts()

  // The per-op cost model's results on an H100, made so that its four rules fire: 4 steps hold
  // 40 ms of cuDNN layout transposes (nchw_layout: 10 ms a step), a GELU chain of 60 ms that
  // fuses to 10 ms (unfused_elementwise: 12.5 ms a step), an aligned bf16 GEMM at 90 % of its
  // roofline and GPT-2's LM head at 12 % (misaligned_gemm), 6 ms a step of 32×256×256 GEMMs
  // (small_gemm), MFU 30 % (roofline_gap).
  void AddOpCosts() {
    analyze::OpCosts& o = op_costs;
    o.shapes = true;
    o.peaks = hw::PeaksForGpu("h100-sxm");
    o.steps = 4;
    o.step_ns = 100 * kMs;
    o.mfu = 0.30;
    o.hfu = 0.32;
    o.mfu_peak_tflops = 989;
    o.model_flops_per_step = 0.30 * 0.1 * 989e12;
    o.layout_ns = 40 * kMs;
    analyze::OpCostGroup conv;
    conv.family = analyze::OpFamily::kConv;
    conv.math = true;
    conv.unpriced = analyze::Unpriced::kPriced;
    conv.path = hw::MathPath::kBf16;
    conv.count = 40;
    conv.time_ns = 80 * kMs;
    conv.layout_ns = 40 * kMs;
    conv.flops = 1e12;
    conv.roofline_ns = 1e12 / 989e3;
    conv.compute_bound = true;
    auto gemm = [](double m, double n, double k, double efficiency) {
      analyze::OpCostGroup g;
      g.family = analyze::OpFamily::kGemm;
      g.math = true;
      g.unpriced = analyze::Unpriced::kPriced;
      g.path = hw::MathPath::kBf16;
      g.gemm_m = m;
      g.gemm_n = n;
      g.gemm_k = k;
      g.count = 4;
      g.flops = 2 * m * n * k;
      g.roofline_ns = g.flops / 989e3;  // ns at 989 TFLOP/s
      g.compute_bound = true;
      g.time_ns = static_cast<int64_t>(g.roofline_ns * 4 / efficiency);
      return g;
    };
    analyze::OpCostGroup small = gemm(32, 256, 256, 0.01);  // C1's MLP: small_gemm, 6 ms a step
    small.count = 4000;
    small.time_ns = 24 * kMs;
    o.groups = {conv, gemm(8192, 4096, 4096, 0.9), gemm(8192, 50257, 1024, 0.12), small};
    o.fusion = {{"aten::mul → aten::pow → aten::mul → aten::add → aten::mul → aten::tanh", 96, 6,
                 60 * kMs, 10.0 * kMs}};
    for (const analyze::OpCostGroup& g : o.groups) o.op_ns += g.time_ns;
    o.priced_ns = o.op_ns;
  }

  Planted() {
    summary.counts.kernels = 100;
    summary.compute_major = 8;
    summary.compute_minor = 0;
    auto cat = [&](analyze::StepCategory c) -> int64_t& {
      return steps.mean_steady_ns[static_cast<size_t>(c)];
    };
    steps.steps.resize(4);
    steps.complete_count = 4;
    steps.mean_steady_step_ns = 100 * kMs;
    cat(analyze::StepCategory::kDataLoader) = 30 * kMs;     // input_pipeline_stall: 30 %
    cat(analyze::StepCategory::kCommunication) = 10 * kMs;  // exposed_communication: 10 %
    cat(analyze::StepCategory::kKernel) = 30 * kMs;
    cat(analyze::StepCategory::kRuntime) = 20 * kMs;
    cat(analyze::StepCategory::kCpuExec) = 10 * kMs;
    // fp32_math: 80 % of 100 ms of math is fp32 on CUDA cores → 20 ms per step, half saved.
    kernels.math_ns = 100 * kMs;
    kernels.tensor_core_ns = 20 * kMs;
    kernels.math_ns_by_precision[static_cast<size_t>(analyze::MathPrecision::kFp32Simt)] = 80 * kMs;
    gpu_time.comm_compute_overlap_ratio = 0.25;
    gpu_time.exclusive.span_ns = 400 * kMs;  // launch_bound: GPU idle 50 %
    gpu_time.exclusive.idle_ns = 200 * kMs;
    launches.all.n = 100;
    launches.all.short_kernels = 80;
    // pageable_copies: 8 ms over 4 steps; tiny_copies: 20 per step, 1 ms per step.
    analyze::CopyGroup pageable;
    pageable.pageable = true;
    pageable.time_ns = 8 * kMs;
    copies.groups = {pageable};
    copies.pageable_memcpys = 10;
    copies.effectively_sync_memcpys = 10;
    copies.tiny_memcpys = 80;
    copies.tiny_memcpy_time_ns = 4 * kMs;
    // sync_points: 2 points per step, 5 ms of GPU idle after them per step.
    sync.points.resize(8);
    sync.steps.resize(4);
    for (analyze::StepSyncStats& s : sync.steps) s.gpu_idle_after_sync_ns = 5 * kMs;
    sync.blocked_ns = 40 * kMs;
    // near_oom: 76 of 80 GB reserved.
    analyze::DeviceMemory dev;
    dev.device = 0;
    dev.events = 10;
    dev.peak_reserved_bytes = 76'000'000'000;
    dev.total_bytes = 80'000'000'000;
    memory.devices = {dev};
    // low_occupancy: half of compute-kernel time in tiny grids; 40 ms of lost SM time.
    occupancy.available = true;
    occupancy.tiny_grid_share = 0.5;
    occupancy.tiny_grid_ns = 60 * kMs;
    occupancy.tiny_grid_lost_sm_ns = 40 * kMs;
    occupancy.sm_efficiency = 0.4;
    occupancy.achieved_occupancy_pct = 15;
    analyze::TinyGridKernel tiny;
    tiny.name = "elementwise_kernel";
    tiny.count = 10;
    tiny.total_ns = 4 * kMs;
    tiny.mean_blocks_per_sm = 0.25;
    occupancy.tiny = {tiny};
    // idle_gaps: 8 ms unexplained per step, and one gap > 500 ms (critical).
    idle_gaps.long_gaps = 5;
    idle_gaps.long_gaps_after_sync = 1;
    idle_gaps.unexplained_ns_per_steady_step = 8 * kMs;
    idle_gaps.unexplained_ns = 632 * kMs;
    idle_gaps.longest_unexplained_ns = 600 * kMs;
    analyze::IdleGap gap;
    gap.end_ns = 600 * kMs;
    gap.step = 3;
    gap.host_ops = {{kOptimizerName, 600 * kMs}};
    idle_gaps.longest = {gap};
    idle_gaps.host_ops = {{kOptimizerName, 1, 600 * kMs}};
  }

  static constexpr StringId kOptimizerName = 7;

  // Host work of 4 steady steps of 100 ms: 8 ms of cudaFree/cudaMalloc, 5 ms of compiling and
  // 40 ms outside any recorded op per step, and one 2 s driver initialisation.
  void AddHostWork() {
    host_work.windows = 4;
    host_work.allocator_calls = 12;
    host_work.allocator_ns = 32 * kMs;
    host_work.allocator_names = {{"cudaFree", 8, 24 * kMs}, {"cudaMalloc", 4, 8 * kMs}};
    host_work.driver_init_calls = 1;
    host_work.driver_init_ns = 2000 * kMs;
    host_work.compile_ns = 20 * kMs;
    host_work.compile_names = {{"FusionExecutor::compileFusion", 4, 20 * kMs}};
    host_work.recompiled_regions = 2;
    host_work.unrecorded_ns = 160 * kMs;
    host_work.torch_compile = true;
  }

  RankInputs Inputs() const {
    RankInputs in;
    in.summary = &summary;
    in.gpu_time = &gpu_time;
    in.steps = &steps;
    in.kernels = &kernels;
    in.launches = &launches;
    in.copies = &copies;
    in.sync = &sync;
    in.memory = &memory;
    in.occupancy = &occupancy;
    in.idle_gaps = &idle_gaps;
    if (host_work.windows > 0) in.host_work = &host_work;
    if (op_costs.shapes) in.op_costs = &op_costs;
    in.name = [](StringId id) -> std::string_view {
      return id == kOptimizerName ? "Optimizer.step#AdamW.step" : "?";
    };
    return in;
  }
};

const Finding* Find(const Advice& a, const std::string& id) {
  for (const Finding& f : a.findings)
    if (f.id == id) return &f;
  return nullptr;
}

const render::Field* Evidence(const Finding& f, const std::string& key) {
  for (const render::Field& e : f.evidence)
    if (e.key == key) return &e;
  return nullptr;
}

// "gap_12_ns" → "gap_N_ns": a numbered key as the table documents it.
std::string NumbersAsN(const std::string& key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(key[i])) && i > 0 && key[i - 1] == '_') {
      while (i + 1 < key.size() && std::isdigit(static_cast<unsigned char>(key[i + 1]))) ++i;
      out += 'N';
    } else {
      out += key[i];
    }
  }
  return out;
}

// `key` appears in `list` as a whole word ("a_ns, b_share (when known)").
bool ListsKey(const std::string& list, const std::string& key) {
  for (size_t at = list.find(key); at != std::string::npos; at = list.find(key, at + 1)) {
    const size_t end = at + key.size();
    const bool starts =
        at == 0 || std::string_view(" ,(").find(list[at - 1]) != std::string_view::npos;
    const bool ends =
        end == list.size() || std::string_view(" ,)").find(list[end]) != std::string_view::npos;
    if (starts && ends) return true;
  }
  return false;
}

bool IsSnakeCase(const std::string& key) {
  if (key.empty() || !std::islower(static_cast<unsigned char>(key[0]))) return false;
  for (char ch : key) {
    if (!std::islower(static_cast<unsigned char>(ch)) &&
        !std::isdigit(static_cast<unsigned char>(ch)) && ch != '_')
      return false;
  }
  return key.find("__") == std::string::npos && key.back() != '_';
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The unit a key's suffix names (the longest matching suffix), or kNone when it names none.
render::Unit UnitOfSuffix(const std::string& key) {
  render::Unit best = render::Unit::kNone;
  size_t best_len = 0;
  for (render::Unit u :
       {render::Unit::kNanos, render::Unit::kBytes, render::Unit::kShare,
        render::Unit::kBytesPerSecond, render::Unit::kPerSecond, render::Unit::kPercent}) {
    const std::string_view s = render::RequiredSuffix(u);
    if (!s.empty() && EndsWith(key, s) && s.size() > best_len) {
      best = u;
      best_len = s.size();
    }
  }
  return best;
}

// Every finding's evidence: unique snake_case keys whose suffix matches the unit both ways (a
// duration key ends _ns, and a key ending _ns holds a duration).
void ExpectTypedEvidence(const Finding& f) {
  SCOPED_TRACE(f.id);
  EXPECT_FALSE(f.evidence.empty());
  std::set<std::string> keys;
  for (const render::Field& e : f.evidence) {
    EXPECT_TRUE(IsSnakeCase(e.key)) << e.key;
    EXPECT_TRUE(keys.insert(e.key).second) << "duplicate key " << e.key;
    EXPECT_FALSE(e.label.empty()) << e.key;
    EXPECT_TRUE(EndsWith(e.key, render::RequiredSuffix(e.value.unit))) << e.key;
    const render::Unit named = UnitOfSuffix(e.key);
    if (named != render::Unit::kNone) {
      EXPECT_EQ(named, e.value.unit) << e.key;
    }
    if (EndsWith(e.key, "_count")) {
      EXPECT_EQ(e.value.unit, render::Unit::kCount) << e.key;
    }
    if (e.value.kind == render::Value::Kind::kText) {
      EXPECT_EQ(e.value.unit, render::Unit::kText) << e.key;
      EXPECT_FALSE(e.value.text.empty()) << e.key;
    }
  }
}

TEST(AdviseRules, TableHasUniqueIdsAFixAThresholdAndASavingModelPerRule) {
  std::set<std::string> ids;
  ASSERT_GE(Rules().size(), 11u);
  for (const Rule& r : Rules()) {
    SCOPED_TRACE(r.id);
    EXPECT_TRUE(IsSnakeCase(r.id));
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id";
    EXPECT_FALSE(r.fix.empty());
    EXPECT_FALSE(r.threshold.empty());
    EXPECT_FALSE(r.saving_model.empty());
    EXPECT_NE(r.reads, 0u);
    EXPECT_NE(r.run, nullptr);
    EXPECT_GT(r.confidence, 0);
    EXPECT_LE(r.confidence, 1);
    EXPECT_EQ(FindRule(r.id), &r);
  }
  EXPECT_EQ(FindRule("no_such_rule"), nullptr);
  // Thresholds are spelled from the named constants.
  EXPECT_NE(FindRule("input_pipeline_stall")->threshold.find("> 5 %"), std::string::npos);
  EXPECT_NE(FindRule("idle_gaps")->threshold.find("500 ms"), std::string::npos);
}

TEST(AdviseRules, EveryRuleFiresOnPlantedResultsWithTypedEvidence) {
  std::set<std::string> fired;
  Planted full;
  const Advice a = AdviseRank(full.Inputs());
  Planted roomy;  // 10 of 80 GB reserved: memory_underused instead of near_oom
  roomy.memory.devices[0].peak_reserved_bytes = 10'000'000'000;
  const Advice b = AdviseRank(roomy.Inputs());
  Planted costed;  // with the per-op cost model's results
  costed.AddOpCosts();
  const Advice c = AdviseRank(costed.Inputs());
  Planted hosted;  // with host work: driver memory calls, compiling, unrecorded time
  hosted.AddHostWork();
  const Advice d = AdviseRank(hosted.Inputs());
  for (const Advice* advice : {&a, &b, &c, &d}) {
    for (const Finding& f : advice->findings) {
      fired.insert(f.id);
      const Rule* rule = FindRule(f.id);
      ASSERT_NE(rule, nullptr) << f.id;
      EXPECT_FALSE(f.fix.empty()) << f.id;
      EXPECT_FALSE(f.title.empty()) << f.id;
      EXPECT_FALSE(f.saving_assumption.empty()) << f.id;
      EXPECT_EQ(f.confidence, rule->confidence) << f.id;
      EXPECT_GE(f.estimated_saving_share, 0) << f.id;
      EXPECT_LE(f.estimated_saving_share, 1) << f.id;
      ExpectTypedEvidence(f);
      // Every key it writes is documented in its table entry (numbers as N).
      for (const render::Field& e : f.evidence) {
        const std::string key = NumbersAsN(e.key);
        EXPECT_TRUE(ListsKey(rule->evidence_keys, key))
            << f.id << ": " << key << " not in " << rule->evidence_keys;
      }
    }
  }
  for (const Rule& r : Rules()) EXPECT_TRUE(fired.count(r.id)) << r.id << " never fired";
  // The cost model's savings, from the planted numbers.
  const Finding* layout = nullptr;
  const Finding* fusion = nullptr;
  const Finding* gemm = nullptr;
  for (const Finding& f : c.findings) {
    if (f.id == "nchw_layout") layout = &f;
    if (f.id == "unfused_elementwise") fusion = &f;
    if (f.id == "misaligned_gemm") gemm = &f;
  }
  ASSERT_TRUE(layout && fusion && gemm);
  EXPECT_EQ(layout->estimated_saving_ns_per_step, 10 * kMs);
  EXPECT_EQ(fusion->estimated_saving_ns_per_step, static_cast<int64_t>(12.5 * kMs));
  // The LM head at 12 % reaches the aligned GEMM's 90 %: time × (1 − 0.12 / 0.9), per step.
  const analyze::OpCostGroup& head = costed.op_costs.groups[2];
  EXPECT_NEAR(static_cast<double>(gemm->estimated_saving_ns_per_step),
              static_cast<double>(head.time_ns) * (1 - 0.12 / 0.9) / 4, 0.01 * kMs);
}

TEST(AdviseRules, PlantedSavingsRankingSeverityAndVerdict) {
  Planted p;
  const Advice a = AdviseRank(p.Inputs());
  // Savings per step (ms): input 30, launch_bound 11 (half of 30 − idle_gaps' 8),
  // then three at 10 in table order, idle_gaps 8, sync 5, pageable 2 × 2/3, tiny 1, near_oom 0.
  std::vector<std::string> order;
  for (const Finding& f : a.findings) order.push_back(f.id);
  EXPECT_EQ(order, (std::vector<std::string>{"input_pipeline_stall", "launch_bound",
                                             "exposed_communication", "fp32_math", "low_occupancy",
                                             "idle_gaps", "sync_points", "pageable_copies",
                                             "tiny_copies", "near_oom"}));
  const std::map<std::string, int64_t> saving = {{"input_pipeline_stall", 30 * kMs},
                                                 {"launch_bound", 11 * kMs},
                                                 {"exposed_communication", 10 * kMs},
                                                 {"fp32_math", 10 * kMs},
                                                 {"low_occupancy", 10 * kMs},
                                                 {"idle_gaps", 8 * kMs},
                                                 {"sync_points", 5 * kMs},
                                                 {"pageable_copies", 1'333'333},
                                                 {"tiny_copies", 1 * kMs},
                                                 {"near_oom", 0}};
  for (const Finding& f : a.findings) {
    EXPECT_EQ(f.estimated_saving_ns_per_step, saving.at(f.id)) << f.id;
    EXPECT_DOUBLE_EQ(f.estimated_saving_share,
                     static_cast<double>(saving.at(f.id)) / static_cast<double>(100 * kMs))
        << f.id;
  }
  EXPECT_EQ(a.verdict, "input-bound");
  // No rank-level straggler rule: the straggler is the job's (advise/job_advice.h).
  EXPECT_EQ(FindRule("straggler"), nullptr);
  EXPECT_EQ(Find(a, "input_pipeline_stall")->severity, render::Severity::kCritical);  // 30 %
  EXPECT_EQ(Find(a, "exposed_communication")->severity, render::Severity::kWarning);  // 10 %
  EXPECT_EQ(Find(a, "tiny_copies")->severity, render::Severity::kInfo);               // 1 %
  // 8 % would be a warning; the 600 ms gap (> 500 ms) makes it critical.
  EXPECT_EQ(Find(a, "idle_gaps")->severity, render::Severity::kCritical);

  // Typed values, not text: the views format them.
  const Finding& input = *Find(a, "input_pipeline_stall");
  EXPECT_EQ(Evidence(input, "dataloader_share")->value, render::Value::Share(0.3));
  EXPECT_EQ(Evidence(input, "dataloader_per_step_ns")->value, render::Value::Nanos(30 * kMs));
  EXPECT_EQ(Evidence(*Find(a, "near_oom"), "peak_reserved_bytes")->value,
            render::Value::Bytes(76'000'000'000));
  EXPECT_EQ(Evidence(*Find(a, "pageable_copies"), "pageable_memcpy_count")->value,
            render::Value::Count(10));
  EXPECT_EQ(Evidence(*Find(a, "launch_bound"), "runtime_cpu_exec_per_step_ns")->value,
            render::Value::Nanos(22 * kMs));
  // Names come through the resolver, into the evidence and the fix.
  const Finding& gaps = *Find(a, "idle_gaps");
  EXPECT_EQ(Evidence(gaps, "gap_1_host_op")->value,
            render::Value::Text("Optimizer.step#AdamW.step"));
  EXPECT_EQ(Evidence(gaps, "gap_1_step")->value, render::Value::Int(3));
  EXPECT_NE(gaps.fix.find("Optimizer.step#AdamW.step (600 ms)"), std::string::npos) << gaps.fix;
  EXPECT_NE(gaps.fix.find("fused=True"), std::string::npos) << gaps.fix;
  EXPECT_NE(gaps.fix.find(FindRule("idle_gaps")->fix), std::string::npos);
  // Compute 8.0: bf16 (the table's fix); 7.0: float16 + GradScaler.
  EXPECT_EQ(Find(a, "fp32_math")->fix, FindRule("fp32_math")->fix);
  p.summary.compute_major = 7;
  EXPECT_NE(Find(AdviseRank(p.Inputs()), "fp32_math")->fix.find("GradScaler"), std::string::npos);
}

// With a replay, a finding its what-if prices saves its plan increment and every other finding
// at most what the whole plan leaves: a plan entry whose rule did not fire (channels_last here,
// as on HTA's nccl_parser_config trace) counts too, and a finding that removes host time saves
// at most the host part of the path left, one that shortens GPU work its GPU part. So the
// savings never add up to more than the step (they added up to all of it there).
TEST(AdviseRules, SavingsAddUpToAtMostTheStepTheReplayedPlanLeaves) {
  Planted p;
  RankInputs in = p.Inputs();
  whatif::WhatIfResults w;
  w.replayed = true;
  w.step_ns = 100 * kMs;
  w.fixes = {{"cuda_graphs", 10, 40 * kMs, 60 * kMs}, {"channels_last", 4, 95 * kMs, 5 * kMs}};
  w.plan = {{"cuda_graphs", 40 * kMs, 60 * kMs}, {"channels_last", 35 * kMs, 5 * kMs}};
  w.planned_step_ns = 35 * kMs;
  // The path the plan leaves: 20 ms of host time, 15 ms of GPU compute per step.
  w.path_after_per_step_ns[static_cast<size_t>(analyze::PathCategory::kHostCompute)] = 20 * kMs;
  w.path_after_per_step_ns[static_cast<size_t>(analyze::PathCategory::kGpuCompute)] = 15 * kMs;
  in.whatif = &w;
  const Advice a = AdviseRank(in);
  // nchw_layout's rule does not fire (no op costs), but the plan holds channels_last at 5 % of
  // the step: a finding of its own, priced by the replay.
  const Finding* layout = Find(a, "nchw_layout");
  ASSERT_NE(layout, nullptr);
  EXPECT_TRUE(layout->replayed);
  EXPECT_EQ(layout->estimated_saving_ns_per_step, 5 * kMs);
  EXPECT_EQ(layout->title, "Replayed: channels_last");
  EXPECT_EQ(layout->fix, FindRule("nchw_layout")->fix);
  const Finding* launch = Find(a, "launch_bound");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->estimated_saving_ns_per_step, 60 * kMs);
  EXPECT_TRUE(launch->replayed);
  int64_t others = 0;
  for (const Finding& f : a.findings)
    if (!f.replayed) others += f.estimated_saving_ns_per_step;
  EXPECT_EQ(others, 35 * kMs);
  // Host-side findings share the 20 ms of host time, GPU-side ones the 15 ms of GPU work, by
  // their own estimates: the input stall (30) gets 20, exposed communication (10) 10, fp32 math
  // (10) the 5 left; idle gaps (8, host) nothing.
  EXPECT_EQ(Find(a, "input_pipeline_stall")->estimated_saving_ns_per_step, 20 * kMs);
  EXPECT_EQ(Find(a, "exposed_communication")->estimated_saving_ns_per_step, 10 * kMs);
  EXPECT_EQ(Find(a, "fp32_math")->estimated_saving_ns_per_step, 5 * kMs);
  EXPECT_EQ(Find(a, "idle_gaps")->estimated_saving_ns_per_step, 0);
  EXPECT_NE(Find(a, "input_pipeline_stall")
                ->saving_assumption.find("Capped at the host time and waits on the path"),
            std::string::npos);
  EXPECT_NE(Find(a, "fp32_math")->saving_assumption.find("Capped at the GPU work on the path"),
            std::string::npos);
}

TEST(AdviseRules, WithoutANameResolverGapsSayNoRecordedOp) {
  Planted p;
  RankInputs in = p.Inputs();
  in.name = nullptr;
  const Advice advice = AdviseRank(in);
  const Finding* gaps = Find(advice, "idle_gaps");
  ASSERT_NE(gaps, nullptr);
  EXPECT_EQ(Evidence(*gaps, "gap_1_host_op")->value, render::Value::Text("no recorded op"));
  EXPECT_NE(gaps->fix.find("outside any recorded op"), std::string::npos);
}

TEST(AdviseRules, RulesWithoutTheirInputsDoNotRunAndLaunchBoundThenClaimsAllHostTime) {
  Planted p;
  RankInputs in = p.Inputs();
  in.idle_gaps = nullptr;
  in.occupancy = nullptr;
  const Advice a = AdviseRank(in);
  EXPECT_EQ(Find(a, "idle_gaps"), nullptr);
  EXPECT_EQ(Find(a, "low_occupancy"), nullptr);
  // No idle_gaps finding: launch_bound claims half of all 30 ms.
  EXPECT_EQ(Find(a, "launch_bound")->estimated_saving_ns_per_step, 15 * kMs);
  EXPECT_EQ(a.verdict, "input-bound");
}

TEST(AdviseRules, VerdictNeedsFivePercentExceptForMemory) {
  // Only 3 % exposed communication: a finding (threshold 2 %) but too small for a verdict.
  Planted p;
  p.steps.mean_steady_ns = {};
  p.steps.mean_steady_ns[static_cast<size_t>(analyze::StepCategory::kCommunication)] = 3 * kMs;
  RankInputs in;
  in.summary = &p.summary;
  in.steps = &p.steps;
  in.gpu_time = &p.gpu_time;
  Advice a = AdviseRank(in);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].id, "exposed_communication");
  EXPECT_EQ(a.verdict, "compute-bound — look at the kernels");
  // Unused memory ranks below it (no saving): the largest verdict-naming finding decides.
  p.memory.devices[0].peak_reserved_bytes = 10'000'000'000;
  in.memory = &p.memory;
  a = AdviseRank(in);
  ASSERT_EQ(a.findings.size(), 2u);
  EXPECT_EQ(a.verdict, "compute-bound — look at the kernels");
  // Without the communication, memory names the verdict whatever its (zero) saving.
  p.steps.mean_steady_ns = {};
  a = AdviseRank(in);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.verdict, "memory-underused");
  const render::Finding d = ToDocumentFinding(a.findings[0]);
  EXPECT_TRUE(d.saving.is_na());  // no time saving: n/a, not "0 ns"
  EXPECT_TRUE(d.saving_share.is_na());
  EXPECT_EQ(d.key, "memory_underused");
  EXPECT_EQ(d.evidence, a.findings[0].evidence);
  p.summary.counts.kernels = 0;
  EXPECT_EQ(AdviseRank(in).verdict, "no GPU work");
}

TEST(AdviseRules, DocsRuleTableIsTheCodesTable) {
  std::ifstream file(std::string(GPUSCOPE_SOURCE_DIR) + "/docs/advice.md");
  ASSERT_TRUE(file.good());
  std::stringstream doc;
  doc << file.rdbuf();
  const std::string table = RulesMarkdown();
  EXPECT_NE(doc.str().find(table), std::string::npos)
      << "docs/advice.md must hold this table (regenerate it from advise::RulesMarkdown()):\n"
      << table;
}

}  // namespace
}  // namespace gpuscope::advise
