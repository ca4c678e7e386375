// `gpuscope tune -- CMD`: runs the experiments the optimisation guides prescribe around any
// training command, measures each under the monitor, and keeps the best setting (docs/tune.md).
//
// Each trial is `gpuscope run` of the command with {NAME} replaced by the trial's values (and
// GPUSCOPE_<NAME> in its environment): GPU through NVML where present, CPU of the process tree,
// exit code, signals; ended (SIGTERM, grace, SIGKILL to the whole job) at --trial-time. Its
// output lines give the throughput (metric.h) and out-of-memory messages (oom.h). The search
// (search.h) picks what to run; each trial is appended to the results file as it ends
// (results.h), and a rerun with the same file resumes. SIGINT/SIGTERM end the current trial and
// its process tree, mark it "interrupted", and the best so far is reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuscope/status.h"
#include "render/document.h"
#include "tune/metric.h"
#include "tune/params.h"
#include "tune/results.h"
#include "tune/search.h"

namespace gpuscope::tune {

struct TuneOptions {
  std::vector<std::string> command;  // the template
  std::vector<Param> params;
  MetricSpec metric;
  int64_t trial_time_ns = 60'000'000'000;     // 60 s
  int64_t budget_ns = 20 * 60'000'000'000LL;  // 20 min of this invocation's wall time
  int repeat = 1;
  double plateau = 0.05;
  std::string results_path = "gpuscope-tune.jsonl";
  std::string traces_root;            // --traces: trial N writes into traces_root/trial-N/
  int64_t interval_ns = 100'000'000;  // the monitor's sampling interval
  std::string nvml_library;
  bool show_output = true;  // the trials' stdout and stderr copied to our stderr
  bool progress = true;     // a line per trial on stderr
};

// One setting's trials, combined.
struct SettingSummary {
  Setting setting;
  std::vector<size_t> trials;  // indexes into TuneResult::trials
  std::string outcome;         // the first trial's that was not ok, else "ok"
  bool has_throughput = false;
  double throughput = 0;        // mean over its trials
  std::vector<double> samples;  // pooled
  double spread = 0;            // standard deviation of the samples
};

struct TuneResult {
  TuneOptions options;
  std::string unit;                 // of the throughput
  std::vector<TrialRecord> trials;  // in the order they belong to this search (resumed ones too)
  std::vector<bool> resumed;        // trials[i] came from the results file
  std::vector<SettingSummary> settings;
  SearchResult search;
  std::string stop_reason;                 // "", "budget spent", "interrupted (SIGINT)", …
  int stop_signal = 0;                     // SIGINT / SIGTERM received: the exit code is 128 + it
  std::vector<std::string> skipped_lines;  // of the results file
  std::vector<std::string> notes;          // "no GPU metrics (…)", …
  int64_t elapsed_ns = 0;
  // Best vs first (the first setting), Mann-Whitney U over their samples (diff::MannWhitneyP).
  double gain_share = 0;
  double p_value = -1;  // -1: not computed (the best is the first, or no samples)
  bool significant = false;
  bool enough_samples = false;  // even a perfect separation could reach p < alpha
};

// Checks the options (params, placeholders, metric) before anything runs: kUsage with the reason.
Status CheckOptions(const TuneOptions& options);

// Runs the search. Fails before the first trial (results file unreadable or unwritable, command
// not executable: kNotFound); afterwards problems are trial outcomes.
Result<TuneResult> RunTune(const TuneOptions& options);

// Setting summaries and the significance from the trials (RunTune calls it; tests too).
void Summarise(TuneResult* result);

// "gpuscope.tune": the search, the trials table, the boundaries, the best setting and the change
// to make; text, JSON and HTML are its views.
render::Document BuildTuneDocument(const TuneResult& result);

}  // namespace gpuscope::tune
