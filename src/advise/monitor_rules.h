// The monitor's rules: statistics of a sample series (analyze::MonitorStats) → findings with
// typed evidence and a fix, and the one-line verdict of `gpuscope run`.
//
// Each rule is one entry of MonitorRules(): its id, the statistics it reads, when it fires, its
// saving model, confidence, severity, whether it can be the verdict, and a small function that
// appends its findings. Rules run in table order and see the findings of the rules before them
// (the host rules for an under-used GPU are alternatives: the first that fires explains it).
// docs/monitor.md's rule table is MonitorRulesMarkdown() (a test keeps them equal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/monitor_stats.h"
#include "render/document.h"

namespace gpuscope::advise {

// Thresholds, with units. Percentages are 0–100; CPU % is of one core.
inline constexpr double kLowGpuUtilPct = 70;       // steady mean below → GPU under-used
inline constexpr double kIdleGpuUtilPct = 30;      // steady mean below → GPU mostly idle
inline constexpr double kWellUsedGpuUtilPct = 90;  // steady mean at or above → well used
inline constexpr double kCpuBoundPct = 85;    // main process mean at or above → one core full
inline constexpr double kIdleWorkerPct = 10;  // worker mean below → idle
inline constexpr double kBusyWorkerPct = 80;  // worker mean at or above → saturated
inline constexpr int64_t kHangMinNs = 60'000'000'000;   // 60 s busy at low power in a row
inline constexpr double kMemoryHeadroomFraction = 0.5;  // peak used below this share of total
inline constexpr double kThrottleShareMin = 0.1;        // share of steady samples slowed down
inline constexpr double kCpuSaturatedPct = 90;          // mean busy % of all cores
inline constexpr double kImbalanceSpreadPct = 20;       // busiest − least busy GPU, points
inline constexpr double kNoWorkUtilPct = 5;             // a lagging GPU below this …
inline constexpr double kNoWorkMemBytes = 1.0 * (1ull << 30);  // … holding less: no work on it
inline constexpr double kStallBusyBetweenPct = 30;  // mean util between stalls at least this
// A stall period above this reads as checkpointing/evaluation rather than data loading.
inline constexpr int64_t kStallCheckpointPeriodNs = 60'000'000'000;
// Below half a percent, CPU in workers that ended between samples rounds to 0 %: not worth words.
inline constexpr double kEndedWorkersWorthSayingPct = 0.5;

// The statistics a rule reads (a bit set, for the docs and for skipping rules without them).
enum MonitorInput : uint32_t {
  kMonGpuUtil = 1u << 0,         // steady mean SM utilisation over the GPUs
  kMonBusyAtLowPower = 1u << 1,  // longest busy-at-low-power stretch per GPU
  kMonGpuMemory = 1u << 2,       // peak memory used and total per GPU
  kMonThrottle = 1u << 3,        // share of steady samples with a slowdown reason
  kMonMainCpu = 1u << 4,         // the main process's CPU
  kMonWorkersCpu = 1u << 5,      // its workers' CPU (alive and ended)
  kMonSystemCpu = 1u << 6,       // busy % of all cores
  kMonStorageReads = 1u << 7,    // bytes the tree read from storage
  kMonGpuBalance = 1u << 8,      // steady util of the busiest and the least busy GPU
  kMonPeriodicStall = 1u << 9,   // periodic drops of utilisation to near 0 % per GPU
};
std::string MonitorInputNames(uint32_t inputs);  // "gpu_util, main_cpu"

struct MonitorFinding {
  std::string id;   // the rule's id
  std::string key;  // the document item's key: the id, or "<id>_gpu_<N>" for a per-GPU rule
  std::string title;
  render::Severity severity = render::Severity::kInfo;
  // Typed, under stable keys whose suffix names the unit (_pct, _bytes, _ns, _w, …).
  std::vector<render::Field> evidence;
  // The same evidence as one sentence: the verdict line is "<words> → <title>".
  std::string words;
  std::string fix;
  double confidence = 0.5;  // 0–1
};

struct MonitorAdvice {
  std::vector<MonitorFinding> findings;  // in table order
  std::string verdict;                   // one line
};

// What a rule sees: the statistics, facts derived from them once, and the findings of the rules
// before it in the table.
struct MonitorContext {
  const analyze::MonitorStats& stats;
  const analyze::MonitorCpu* cpu;  // null without process data
  bool main_bound = false;         // main process ≥ kCpuBoundPct
  bool workers_idle = false;       // every worker < kIdleWorkerPct, and the ended ones together
  bool workers_saturated = false;  // at least one worker, every one ≥ kBusyWorkerPct
  bool system_saturated = false;   // cores ≥ kCpuSaturatedPct busy on average
  const std::vector<MonitorFinding>& earlier;
  bool Fired(std::string_view id) const;
};

using MonitorRuleFn = void (*)(const MonitorContext& ctx, std::vector<MonitorFinding>* out);

// One monitor rule: adding a rule adds one entry to MonitorRules().
struct MonitorRule {
  std::string id;
  uint32_t reads = 0;        // MonitorInput bits
  std::string threshold;     // when it fires, spelled from the named constants
  std::string saving_model;  // what fixing it can gain
  double confidence = 0.5;   // 0–1
  render::Severity severity = render::Severity::kWarning;
  bool verdict = true;        // its evidence and title can be the verdict line
  std::string fix;            // the finding's fix; a rule may make it more specific
  std::string evidence_keys;  // the evidence keys it writes, for the docs
  MonitorRuleFn run = nullptr;
};

// Every rule, in the order they run.
const std::vector<MonitorRule>& MonitorRules();
const MonitorRule* FindMonitorRule(std::string_view id);
// docs/monitor.md's rule tables, generated from MonitorRules().
std::string MonitorRulesMarkdown();

// The findings and the verdict of a sample series.
MonitorAdvice AdviseMonitor(const analyze::MonitorStats& stats);

// The finding as a document item. Monitor rules estimate no time per step: the saving is n/a and
// the saving model is the assumption.
render::Finding ToDocumentFinding(const MonitorFinding& f);

}  // namespace gpuscope::advise
