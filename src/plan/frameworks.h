// Each training framework's rules, as a table of small functions: what it can run (and, when it
// cannot, its own rule quoted), the static memory per parameter it keeps, and the dtype it reduces
// gradients in. Sources per framework in docs/planner.md "Frameworks"; formulas in
// planner-reference.md §2 and §4.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plan/planner.h"

namespace gpuscope::plan {

// One static-memory term: bytes per parameter of P_rank, divided by the shard group when sharded.
// kWeights move to the host only with --offload params; the optimizer step reads kGrads and reads
// and writes kState.
enum class Part { kWeights, kGrads, kState };
struct StaticTerm {
  std::string name;  // "fp32 main gradients (main_grad buffer)"
  double bytes_per_param = 0;
  bool sharded = false;  // ÷ d (the shard group)
  Part part = Part::kState;
};

struct FrameworkRules {
  Framework framework;
  std::string_view title;  // "Megatron-LM"
  // Why the framework cannot run `c`, in its own words with where the rule lives; "" if it can.
  std::string (*refuses)(const ParallelConfig& c);
  std::vector<StaticTerm> (*static_terms)(const ParallelConfig& c);
  // Bytes per element of the gradient reduction over data parallel (reduce-scatter/all-reduce).
  double (*reduce_bytes)(const ParallelConfig& c);
};

const FrameworkRules& RulesFor(Framework f);
std::span<const FrameworkRules> AllFrameworks();

// The shard group d: data parallel, or the GPUs of one node for FSDP HYBRID_SHARD.
int64_t ShardGroup(const ParallelConfig& c, int64_t gpus_per_node);

// The sharding in the framework's own words: "none", "dist-opt" (Megatron), "zero2" (DeepSpeed),
// "full_shard" / "shard_grad_op" / "hybrid_shard" (FSDP).
std::string ShardingLabel(const ParallelConfig& c);

}  // namespace gpuscope::plan
