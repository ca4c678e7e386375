// The memory snapshot's rules: analyze::SnapshotAnalysis → findings with typed evidence and a fix
// (docs/memory-snapshot.md lists them; SnapshotRulesMarkdown() is that table).
//
// Each rule is one entry of SnapshotRules(): its id, when it fires (spelled from the named
// thresholds), its confidence and severity, the fix, and a small function that appends its
// findings for one device. A snapshot gives no time per step: the saving of every finding is n/a
// and the finding says what fixing it frees.
#pragma once

#include <string>
#include <vector>

#include "analyze/memory_snapshot.h"
#include "render/document.h"

namespace gpuscope::advise {

// Thresholds.
inline constexpr double kFragmentedShare =
    0.2;  // reserved but unallocated at the peak, of reserved
inline constexpr int64_t kFragmentedMinBytes = int64_t{512} << 20;  // … and at least this much
inline constexpr double kActivationsDominate = 0.5;  // activations' share of the peak
inline constexpr double kOptimizerDominates = 0.35;  // optimizer state's share of the peak
inline constexpr double kHeadroomShare = 0.5;        // peak reserved below this share of the device
// A KV cache live at the peak (transformers' cache_utils.py frames) of at least this share of the
// peak allocated: training does not read it, so it is all saving.
inline constexpr double kKvCacheShare = 0.01;

struct SnapshotContext {
  const analyze::SnapshotAnalysis& analysis;
  const analyze::SnapshotDevice& device;
  std::string key_suffix;  // "" with one device, "_device_N" otherwise
};

struct SnapshotRule;
using SnapshotRuleFn = void (*)(const SnapshotContext& ctx, const SnapshotRule& rule,
                                std::vector<render::Finding>* out);

struct SnapshotRule {
  std::string id;
  std::string threshold;
  double confidence = 0.5;
  render::Severity severity = render::Severity::kWarning;
  std::string fix;
  SnapshotRuleFn run = nullptr;
};

const std::vector<SnapshotRule>& SnapshotRules();
std::string SnapshotRulesMarkdown();

// Every rule on every device, in table order.
std::vector<render::Finding> AdviseSnapshot(const analyze::SnapshotAnalysis& analysis);

}  // namespace gpuscope::advise
