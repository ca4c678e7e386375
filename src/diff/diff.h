// Diff: what a change did to a training step. Two analysed runs (report::Report, one per side)
// → one model of differences, rendered as text or JSON. A pure function of the two reports and
// the traces they point to; docs/diff.md has the definitions and the matching rules in full.
//
// Per matched rank (ranks matched by rank id):
//  * step time: the steady-state step durations of each side as a distribution (median, min,
//    max, mean), the median change, and whether it exceeds step-to-step noise. Noise rule: a
//    two-sided Mann-Whitney U test on the two sets of step durations, beyond noise when
//    p < kNoiseAlpha; "unknown" when a side has so few steps that even a perfect separation
//    could not reach that (fewer than 4 vs 4). We also give P(after > before) over all step
//    pairs (U / n1·n2): 0 or 1 means the two ranges do not overlap.
//  * breakdowns: per-step categories (tb_plugin's eight, mean over steady steps) and the exclusive
//    GPU breakdown (share of the GPU span), before vs after, in ns and %.
//  * kernels and CPU ops by name: count and total time per step, matched by name (short names by
//    default; raw names, or HTA's exact trace-diff selection, on request).
//  * findings: resolved / new / persisting (by Finding::id), with the saving before and after.
//  * memory: peak allocated / reserved of the rank's device.
// Anything that makes the comparison questionable (different GPUs, rank sets, no common step
// numbers, a side without steps) becomes a warning; nothing is compared silently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "render/document.h"
#include "report/report.h"

namespace gpuscope::diff {

// Significance level of the step-time noise test (two-sided Mann-Whitney U).
inline constexpr double kNoiseAlpha = 0.05;

enum class NameMode : uint8_t {
  kShort,  // kernels: ShortKernelName (templates, arguments, return type stripped); CPU ops: raw
           // name except "ProfilerStep#N" → "ProfilerStep#*"
  kRaw,    // the names as written in the trace (HTA's compare_traces default, use_short_name=False)
};

enum class Selection : uint8_t {
  // Events of the steady-state steps (report's StepsResult), averaged per step. GPU events belong
  // to the step whose CPU span holds their launch call.
  kSteadySteps,
  // HTA's TraceDiff.compare_traces / ops_diff with its defaults: the first iteration (lowest
  // ProfilerStep number) only, CPU rows = events without a stream (stream == -1; runtime calls
  // included) whose start lies in that ProfilerStep, GPU rows = events with stream > 0 whose
  // correlated runtime call does; totals, not per-step means; µs-rounded durations when the trace
  // has sub-µs timestamps.
  kHtaFirstIteration,
};

struct DiffOptions {
  NameMode names = NameMode::kShort;
  Selection selection = Selection::kSteadySteps;
  // A name is "slower"/"faster" when its time per step moves by more than both thresholds.
  double min_time_change_share = 0.05;  // of its before time
  // 20 µs per step: below it, CPU-side jitter of µs-long ops (seen between two runs of the same
  // loop) would fill the table; no step of milliseconds moves measurably by that much.
  int64_t min_time_change_ns = 20000;
  size_t top_n = 10;  // rows per table in text (JSON has every row)
};

// Steady step durations of one side.
struct Distribution {
  std::vector<int32_t> steps;      // ProfilerStep numbers (-1 for the whole-trace pseudo-step)
  std::vector<int64_t> values_ns;  // durations, same order
  int64_t median_ns = 0;           // mean of the two middle values for an even count
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  int64_t mean_ns = 0;
  bool whole_trace = false;  // no ProfilerStep: one pseudo-step over the trace
  size_t n() const { return values_ns.size(); }
};

struct StepTimeDiff {
  Distribution before, after;
  double median_change_pct = 0;  // (after − before) / before × 100
  // "slower", "faster", "within noise", or "unknown" (too few steady steps to tell, or a side
  // without ProfilerSteps).
  std::string verdict = "unknown";
  bool beyond_noise = false;
  double p_value = -1;            // two-sided Mann-Whitney U; -1 when not computed
  double p_after_slower = -1;     // P(after step > before step) over all pairs, ties ½; -1 n/a
  double steps_per_s_before = 0;  // throughput: 1 s / median step
  double steps_per_s_after = 0;
  std::vector<int32_t> common_steps;  // ProfilerStep numbers present on both sides
};

struct CategoryDelta {
  std::string name;  // "kernel", ..., "idle"
  int64_t before_ns = 0;
  int64_t after_ns = 0;
  double before_pct = 0;  // of the mean step (categories) or of the GPU span (exclusive)
  double after_pct = 0;
};

enum class CountChange : uint8_t { kAdded, kRemoved, kIncreased, kDecreased, kUnchanged };
enum class TimeChange : uint8_t { kAdded, kRemoved, kSlower, kFaster, kUnchanged };
const char* CountChangeName(CountChange c);  // "added", "removed", "increased", ...
const char* TimeChangeName(TimeChange c);    // "added", "removed", "slower", "faster", ...

struct NameDelta {
  std::string name;
  std::string kind;  // kernel, memcpy, memset, sync, cpu_op, annotation, runtime, python, other
  // Per step (kSteadySteps) or totals (kHtaFirstIteration). Times are the events' own durations
  // summed (CPU ops: inclusive of their children).
  double before_count = 0;
  double after_count = 0;
  double before_ns = 0;
  double after_ns = 0;
  CountChange count_change = CountChange::kUnchanged;
  TimeChange time_change = TimeChange::kUnchanged;
  double delta_ns() const { return after_ns - before_ns; }
};

struct NameTableDiff {
  std::vector<NameDelta> rows;  // by |Δ time| descending (top movers first), then name
  size_t added = 0, removed = 0, increased = 0, decreased = 0, unchanged = 0;  // by count
  size_t slower = 0, faster = 0;                                               // by time
  double before_total_ns = 0, after_total_ns = 0;
  size_t before_units = 0, after_units = 0;  // steps averaged over (1 for HTA's first iteration)
  int32_t before_iteration = -1, after_iteration = -1;  // kHtaFirstIteration: the step used
};

enum class FindingStatus : uint8_t { kResolved, kNew, kPersisting };
const char* FindingStatusName(FindingStatus s);  // "resolved", "new", "persisting"

struct FindingDelta {
  std::string id;
  std::string title;  // after's title when present (its numbers are the current ones)
  FindingStatus status = FindingStatus::kPersisting;
  int64_t before_saving_ns = 0;  // per step; 0 when absent on that side
  int64_t after_saving_ns = 0;
  double before_saving_pct = 0;
  double after_saving_pct = 0;
};

// The calibration ledger: for the fixes the after trace applied, what the before trace's replay
// (whatif.h) predicted beside what the after trace measured.
// A fix counts as applied when the after trace's replay of it saves at most this share of what the
// before trace's did.
inline constexpr double kAppliedResidualShare = 0.25;

struct CalibrationRow {
  std::string finding;                 // the before report's finding whose fix was applied
  std::string fix;                     // its what-if's id
  int64_t predicted_alone_ns = 0;      // the before trace replayed with that fix alone
  int64_t predicted_increment_ns = 0;  // its saving in the before report (the plan's increment)
  int64_t after_alone_ns = 0;          // the same fix replayed on the after trace (what is left)
};
struct Calibration {
  std::vector<CalibrationRow> rows;  // empty: no fix the replay prices was applied
  int64_t before_step_ns = 0;        // the before trace's replayed (= traced) mean steady step
  int64_t predicted_step_ns = 0;     // the same replayed with every fix of `rows` together
  int64_t after_step_ns = 0;         // the after trace's measured mean steady step
  // predicted_step ÷ after_step − 1: both traced under the profiler, so its host overhead is on
  // both sides (0 when not known).
  double error() const {
    if (after_step_ns <= 0 || predicted_step_ns <= 0) return 0;
    return static_cast<double>(predicted_step_ns) / static_cast<double>(after_step_ns) - 1.0;
  }
};

struct MemoryDelta {
  bool before_known = false, after_known = false;  // the side has [memory] events
  int32_t before_device = -1, after_device = -1;
  int64_t before_peak_allocated = 0, after_peak_allocated = 0;  // bytes
  int64_t before_peak_reserved = -1, after_peak_reserved = -1;  // bytes, -1 unknown
  bool before_from_deltas = false, after_from_deltas = false;   // lower bounds (2021 traces)
};

struct RankDiff {
  int32_t before_rank = -1, after_rank = -1;
  std::string before_path, after_path;
  std::string before_device, after_device;
  StepTimeDiff step_time;
  std::vector<CategoryDelta> step_categories;  // 8, tb_plugin order; ns are per-step means
  int64_t before_mean_step_ns = 0, after_mean_step_ns = 0;
  // The same over every complete step, warm-up included: tb_plugin's "avg step breakdown", the
  // numbers its DataLoader recommendation quotes (JSON only).
  std::vector<CategoryDelta> step_categories_all_steps;
  int64_t before_mean_all_steps_ns = 0, after_mean_all_steps_ns = 0;
  std::vector<CategoryDelta> exclusive;  // compute, exposed comm, exposed memory, other, idle
  int64_t before_span_ns = 0, after_span_ns = 0;
  NameTableDiff kernels;  // GPU activities
  NameTableDiff ops;      // CPU side: ops, annotations, runtime calls
  std::string before_verdict, after_verdict;
  std::vector<FindingDelta> findings;  // resolved, new, persisting; by |saving| within each
  Calibration calibration;
  MemoryDelta memory;
};

// What the reader skipped or repaired in one trace (analyze's diagnostics table), so that a diff
// says it as analyze does: a side read in part compares less than it seems to.
struct TraceDiagnostics {
  std::string path;
  Diagnostics diagnostics;
};

struct DiffReport {
  DiffOptions options;
  std::string before_label, after_label;  // set by the caller (the paths given)
  std::vector<RankDiff> ranks;
  std::vector<int32_t> before_ranks, after_ranks;  // every rank id per side
  // Per side, the traces whose reader skipped or repaired events (none: every event read).
  std::vector<TraceDiagnostics> before_diagnostics, after_diagnostics;
  std::vector<std::string> warnings;  // mismatches; shown first in text, warnings[] in JSON
};

// Two-sided p-value of the Mann-Whitney U test for sample sizes n1, n2 and observed U (the count
// of pairs in which the first sample's value is larger, ties ½). Exact up to 50 values a side, the
// normal approximation beyond. The one significance test of gpuscope: diff's step-time verdict
// and tune's best-versus-first comparison (src/tune/) both call it.
double MannWhitneyP(size_t n1, size_t n2, double u);

DiffReport Diff(const report::Report& before, const report::Report& after,
                const DiffOptions& options = {});

// The diff as a document: text, JSON (schema gpuscope.diff) and HTML are its views (cli/output.h).
render::Document BuildDocument(const DiffReport& diff);

}  // namespace gpuscope::diff
