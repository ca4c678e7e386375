// What each fix saves, by replaying the step without the cause: the steady steps' dependency
// graph (analyze/step_graph.h) with the costs the fix changes, dependencies kept.
//
//  * One what-if per fix, each a small function with its assumption in one sentence (WhatIfs()).
//  * A fix's saving alone = the replayed step − the replayed step with that fix alone (the
//    unchanged replay reproduces steps.h's steady step).
//  * The plan: the fixes whose saving alone exceeds kMinPlanShare of the step, by that saving,
//    applied cumulatively; each one's increment is what it adds to those before it, so the
//    increments sum to at most the step, and the predicted step after all of them is one replay.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/run_all.h"
#include "analyze/step_graph.h"

namespace gpuscope::whatif {

// A fix enters the plan when it saves more than this share of the step alone.
inline constexpr double kMinPlanShare = 0.005;
// bf16 autocast casts each fp32 input of a forward GEMM/conv to bf16 (read 4 B, write 2 B per
// element) and casts its gradient back in backward (the same again): 3× the fp32 input bytes.
inline constexpr double kAutocastCastTraffic = 3.0;
// Where the cost model cannot price the math (no recorded shapes, or a GPU with no bf16 peak in
// the table, such as a V100's fp16 tensor cores), fp32 CUDA-core GEMM/conv kernels are assumed to
// run at least this much faster on tensor cores (conservative; the peak ratios are 8-16×).
inline constexpr double kAssumedTensorCoreSpeedup = 2.0;
// A larger batch: this many samples per step, when twice the peak allocated memory fits in this
// share of the device (activations grow with the batch; weights, gradients and optimizer states
// do not, so doubling all of it is conservative).
inline constexpr double kBatchFactor = 2.0;
inline constexpr double kBatchMemoryShare = 0.9;
// A kernel's time that does not grow with its work, ns: the shortest kernels of the H200 lab's
// launch-bound MLP (C1, batch 32) take 2-3 µs whatever they compute.
inline constexpr int64_t kKernelFloorNs = 2000;
// Pageable host→device copies over pinned ones where the GPU has no measured pinned rate and the
// trace no pinned copy: measured on the H200 at 17.2 vs 55.3 GB/s (microbench_h200.json).
inline constexpr double kPageableOverPinnedTime = 55.3 / 17.2;

// What a what-if reads.
struct Context {
  const Trace& trace;
  const analyze::RankResults& results;
  const analyze::StepGraph& graph;
};

// Changes `change` (the costs so far: the observed ones, or those of the fixes applied before it)
// and returns how many nodes and edges it changed (0: nothing in this step to fix).
using WhatIfFn = size_t (*)(const Context& ctx, analyze::GraphChange* change);

struct WhatIf {
  std::string id;          // "data_wait", "syncs_async", …
  std::string rule;        // the advice rule whose saving it prices (advise.h)
  std::string fix;         // the change, in a few words
  std::string assumption;  // one sentence
  WhatIfFn apply = nullptr;
  // Another fix this one is a lesser alternative to (TF32 to bf16): it enters the plan only when
  // that one does not.
  std::string alternative_of;
  // A fix whose premise the trace cannot confirm (the host time no op records is removable):
  // replayed alone and shown, never part of the plan; its finding saves at most what the plan
  // leaves.
  bool conditional = false;
};
const std::vector<WhatIf>& WhatIfs();
const WhatIf* FindWhatIf(std::string_view id);
const WhatIf* WhatIfForRule(std::string_view rule);

struct FixResult {
  std::string id;
  size_t changed = 0;     // nodes and edges changed (0: does not apply)
  int64_t step_ns = 0;    // predicted mean step with this fix alone
  int64_t saving_ns = 0;  // the replayed step − step_ns
};

struct PlanEntry {
  std::string id;
  int64_t step_after_ns = 0;  // with it and every fix before it
  int64_t increment_ns = 0;   // the step before it − step_after_ns
};

struct WhatIfResults {
  bool replayed = false;         // the rank has a step graph
  int64_t step_ns = 0;           // the unchanged replay's mean step
  std::vector<FixResult> fixes;  // in WhatIfs() order, those that apply
  std::vector<PlanEntry> plan;   // by saving alone, cumulative
  int64_t planned_step_ns = 0;   // after the whole plan
  // The critical path after the whole plan: what bounds the step then.
  analyze::PathCategory bound_after = analyze::PathCategory::kHostCompute;
  // Its time per step by category (ns; they add up to about planned_step_ns): what a finding
  // the replay does not price can still remove lies on this path.
  analyze::PathArray path_after_per_step_ns{};

  const FixResult* Fix(std::string_view id) const;
  const PlanEntry* Planned(std::string_view id) const;
};

WhatIfResults RunWhatIfs(const Trace& trace, const analyze::RankResults& results);

// The mean step with the given fixes (WhatIfs() ids, unknown ones ignored) applied together, in
// the order given; the unchanged replay's step when none applies, 0 without a step graph. For a
// fixed run measured against the trace it was predicted from (diff, tests).
int64_t PredictStep(const Trace& trace, const analyze::RankResults& results,
                    const std::vector<std::string>& ids);

}  // namespace gpuscope::whatif
