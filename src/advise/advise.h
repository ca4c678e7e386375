// Advice: analysis results → ranked findings, each with evidence, an estimated saving and a fix.
//
// Rules read analysis results only (no files, flags or printing). A saving is bounded by what the
// evidence shows: removing a stall saves at most the step time during which nothing but the stall
// runs (the exclusive step category), and each finding states its assumption in one sentence.
// Findings are ranked by saving per step; the first one is the verdict. Each rule is one entry in
// Rules(): its id, the results it reads, its threshold, saving model, confidence and verdict.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/copies.h"
#include "analyze/gpu_time.h"
#include "analyze/host_work.h"
#include "analyze/idle_gaps.h"
#include "analyze/kernels.h"
#include "analyze/launches.h"
#include "analyze/memory.h"
#include "analyze/occupancy.h"
#include "analyze/op_costs.h"
#include "analyze/step_graph.h"
#include "analyze/steps.h"
#include "analyze/sync_points.h"
#include "analyze/trace_summary.h"
#include "render/document.h"
#include "whatif/whatif.h"

namespace gpuscope::advise {

// Thresholds (named defaults; units in the name).
inline constexpr double kInputStallShare = 0.05;  // tb_plugin's DataLoader rule: > 5 % of the step
// tb_plugin recommends at > 10 % of the step; we report from 2 % (a bounded saving, ranked and
// graded by its size like every finding), so a job whose bottleneck is elsewhere still hears
// what its collectives cost.
inline constexpr double kExposedCommShare = 0.02;
inline constexpr double kFp32MathShare = 0.20;  // fp32 CUDA-core share of GEMM/conv time
// Only where neither shapes nor the GPU's peaks are known; otherwise the cost model decides.
inline constexpr double kAssumedTensorCoreSpeedup = whatif::kAssumedTensorCoreSpeedup;
// bf16 autocast casts each fp32 input of a forward GEMM/conv to bf16 (read 4 B, write 2 B per
// element) and casts its gradient back in backward (the same again): 3× the fp32 input bytes.
inline constexpr double kAutocastCastTraffic = 3.0;
// cuDNN layout transposes (NCHW↔NHWC) above this share of the step: channels_last.
inline constexpr double kLayoutShare = 0.01;
// Chains of elementwise kernels whose fusion saves more than this share of the step.
inline constexpr double kFusionShare = 0.02;
// A GEMM whose efficiency is below this share of its path's achievable peak while the trace's
// aligned GEMMs on the same path reach more; and a dimension not a multiple of this many
// elements for 16-bit types (8: 16 bytes, cuBLAS's tensor-core alignment; 4 for fp32).
inline constexpr double kMisalignedEfficiency = 0.5;
inline constexpr int kTensorCoreAlignBytes = 16;
inline constexpr double kMisalignedShare = 0.01;
// A GEMM smaller than this many FLOPs per call (2·1024³: where the H200's measured bf16 GEMM
// reaches 102 of 780 TFLOP/s, gpu_peaks' curve) below this share of its roofline is small work;
// such GEMMs above this share of the step fire small_gemm.
inline constexpr double kSmallGemmFlops = 2.0 * 1024 * 1024 * 1024;
inline constexpr double kSmallGemmEfficiency = 0.25;
inline constexpr double kSmallGemmShare = 0.05;
inline constexpr double kSyncIdleShare = 0.01;      // GPU idle after syncs, of the step
inline constexpr double kShortKernelShare = 0.5;    // kernels shorter than their launch call
inline constexpr double kLaunchIdleShare = 0.20;    // GPU idle share for a launch-bound verdict
inline constexpr double kMemoryUnusedShare = 0.50;  // peak reserved below half the device
inline constexpr double kNearOomShare = 0.90;       // peak reserved above 90 % (tb_plugin rule 7)
inline constexpr double kPinnedOverPageableSpeedup = 3.0;  // measured here 6.5 → 23 GB/s, said 3x
inline constexpr double kTinyCopiesPerStep = 10;  // memcpys under kTinyCopyBytes (64 KiB) per step
// GPU idle in gaps ≥ analyze::kLongIdleGapNs (1 ms) that no sync point or DataLoader explains, of
// the steady step (as tb_plugin's DataLoader rule: > 5 %). A single such gap longer than
// analyze::kNsightGpuGapNs (500 ms, Nsight's gpu_gaps) fires it as critical whatever the share.
inline constexpr double kIdleGapShare = 0.05;
// The driver's memory calls (cudaMalloc, cudaFree, …) or JIT compilation inside the steady steps,
// of the step: one such call per step already costs tens of µs to ms of host time, and cudaFree
// synchronises the device.
inline constexpr double kHostChurnShare = 0.01;
inline constexpr double kUnrecordedShare = analyze::kUnrecordedShare;  // (host_work.h)
// Kernels with fewer thread blocks than SMs, of compute-kernel time. Measured: 5.7-5.8 % on the
// ResNet-50 samples, 19.2 % on trace_diff_control, 23.9 % on the default synthetic trace (a
// 32-CTA GEMM on 108 SMs); 30 % keeps the finding for traces where small grids dominate.
inline constexpr double kTinyGridKernelShare = 0.30;
// Duration-weighted est. achieved occupancy below this (%, 0-100).
inline constexpr double kLowAchievedOccupancyPct = 20.0;
// Severity follows the saving share of the step; a verdict needs at least kVerdictMinShare
// (memory findings, which save no time, name it whatever their saving).
// A fix the replayed plan holds whose rule did not fire (its heuristic threshold missed what the
// replay measures) gets a finding of its own when its plan increment reaches this share of the
// step: the findings then hold every fix the plan counts on.
inline constexpr double kReplayedFindingShare = 0.01;
inline constexpr double kCriticalSavingShare = 0.20;
inline constexpr double kWarningSavingShare = 0.05;
inline constexpr double kVerdictMinShare = 0.05;

// One finding. Evidence is typed (render::Value: ns, bytes, shares 0-1, counts, ratios, names)
// under stable snake_case keys whose suffix names the unit; the views format it.
struct Finding {
  std::string id;  // the rule's id: "input_pipeline_stall", "exposed_communication", ...
  std::string title;
  render::Severity severity = render::Severity::kInfo;
  int64_t estimated_saving_ns_per_step = 0;
  double estimated_saving_share = 0;  // of the mean steady step, 0-1
  std::string saving_assumption;      // one sentence
  std::vector<render::Field> evidence;
  std::string fix;
  double confidence = 0.5;  // 0-1
  // Its saving comes from the replay (whatif.h): 0 then means "saves nothing", not "no estimate".
  bool replayed = false;
  // Its fix replayed alone on today's step (ns per step; -1: not replayed). A plan fix's saving is
  // what it adds to the plan's fixes before it: applied on its own it saves this (ResNet-50
  // without workers: the DataLoader fix adds 11.5 ms after CUDA graphs, 57.0 ms alone, measured
  // 42.7 ms).
  int64_t saving_alone_ns_per_step = -1;
  // The severity its rule set whatever the saving (idle_gaps: a gap > 500 ms is critical); the
  // replay's saving never lowers it.
  render::Severity min_severity = render::Severity::kInfo;
};

// Resolves an interned name (idle-gap host ops) to its text; the report passes the trace's
// string pool. Without one, evidence says "no recorded op" and the fix names no op.
using NameResolver = std::function<std::string_view(StringId)>;

// What the rules read for one rank (pointers into a report). summary and steps are required;
// a rule whose other inputs are null does not run (see Rule::reads).
struct RankInputs {
  const analyze::TraceSummary* summary = nullptr;
  const analyze::GpuTime* gpu_time = nullptr;
  const analyze::StepsResult* steps = nullptr;
  const analyze::KernelsResult* kernels = nullptr;
  const analyze::LaunchStats* launches = nullptr;
  const analyze::CopyStats* copies = nullptr;
  const analyze::SyncStats* sync = nullptr;
  const analyze::MemoryStats* memory = nullptr;
  const analyze::OccupancyStats* occupancy = nullptr;
  const analyze::IdleGapStats* idle_gaps = nullptr;
  // The per-op cost model; optional: rules that can use it (precision) fall back without it or
  // when the trace recorded no shapes.
  const analyze::OpCosts* op_costs = nullptr;
  const analyze::HostWork* host_work = nullptr;
  // The steady steps' critical path and each fix replayed on their graph (whatif.h). With them a
  // finding whose rule a what-if prices saves its increment in the replayed plan (so the savings
  // add up to at most the step), any other finding's saving is capped at what the plan leaves,
  // and the verdict names what bounds the critical path.
  const analyze::CriticalPath* critical_path = nullptr;
  const whatif::WhatIfResults* whatif = nullptr;
  NameResolver name;  // may be empty
};

struct Advice {
  std::vector<Finding> findings;  // by estimated saving, largest first
  // The verdict of the largest finding whose rule names one (Rule::verdict) when its saving
  // reaches Rule::verdict_min_share; "compute-bound — look at the kernels" otherwise (also when
  // low_occupancy, an upper bound of low confidence, is the top finding); "no GPU work".
  std::string verdict;
};

// The analysis results a rule reads (a bit set). A rule runs only when all are present.
enum Input : uint32_t {
  kInSummary = 1u << 0,
  kInGpuTime = 1u << 1,
  kInSteps = 1u << 2,
  kInKernels = 1u << 3,
  kInLaunches = 1u << 4,
  kInCopies = 1u << 5,
  kInSync = 1u << 6,
  kInMemory = 1u << 7,
  kInOccupancy = 1u << 8,
  kInIdleGaps = 1u << 9,
  kInOpCosts = 1u << 10,
  kInHostWork = 1u << 11,
};
std::string InputNames(uint32_t inputs);  // "steps, gpu_time"

// What a rule sees: the inputs, the step it saves against, and the findings of the rules before
// it in the table (launch_bound leaves out the host time idle_gaps already claims).
struct RuleContext {
  const RankInputs& in;
  int64_t step_ns;     // mean steady step (> 0)
  int64_t step_count;  // steps in the trace (≥ 1): whole-trace sums are divided over them
  int64_t copy_steps;  // the same for copy statistics, which leave the last step out (HTA)
  const std::vector<Finding>& earlier;
};

// A rule appends zero or more findings (title, saving, assumption, evidence; the engine fills
// id, confidence, fix when empty, saving share and severity).
using RuleFn = void (*)(const RuleContext& ctx, std::vector<Finding>* out);

// One advice rule: adding a rule adds one entry to Rules(). docs/advice.md's table is
// RulesMarkdown() (a test keeps them equal).
struct Rule {
  std::string id;
  uint32_t reads = 0;        // Input bits
  std::string threshold;     // when it fires, spelled from the named constants
  std::string saving_model;  // its estimated saving per step
  double confidence = 0.5;   // 0-1
  std::string verdict;       // empty: never the verdict
  double verdict_min_share = 0;
  std::string fix;  // the finding's fix; a rule may make it more specific from its evidence
  std::string evidence_keys;  // the evidence keys it writes, for the docs ("gap_N_ns": N = 1, 2, …)
  RuleFn run = nullptr;
  // Its saving shortens the GPU's work (kernels, copies, collectives), not host time or a wait:
  // without a replay of its own it is capped by the GPU's part of the path the plan leaves.
  bool gpu_work = false;
};

// Every rule, in the order they run (ties in saving keep this order).
const std::vector<Rule>& Rules();
const Rule* FindRule(std::string_view id);
// docs/advice.md's rule tables (reads, threshold, saving, confidence, verdict; then evidence keys
// and fixes), generated from Rules().
std::string RulesMarkdown();

// The finding as a report document item: saving n/a when the rule estimates none.
render::Finding ToDocumentFinding(const Finding& f);

Advice AdviseRank(const RankInputs& in);

}  // namespace gpuscope::advise
