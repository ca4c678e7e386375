#include "cli/tune_command.h"

#include <cstdio>

#include "cli/usage.h"
#include "monitor/session.h"
#include "tune/tune.h"

namespace gpuscope::cli {

CLI::App* AddTuneCommand(CLI::App& app, TuneCliOptions* o) {
  auto* tune = AddCommand(app, "tune");
  tune->add_option("--param", o->params,
                   "NAME=V1,V2,… (tried in this order) or NAME=pow2:LO..HI (a batch size); "
                   "repeatable")
      ->type_name("SPEC")
      ->required();
  tune->add_option("--metric", o->metric,
                   "Throughput: a regex whose first group is the number on the command's "
                   "stdout/stderr, e.g. '([0-9.]+) samples/s' (mean after the warm-up)")
      ->type_name("REGEX");
  tune->add_option("--step", o->step,
                   "Throughput: a regex matching one line per step; steps/s, × the pow2 param "
                   "(samples/s) when there is one")
      ->type_name("REGEX");
  tune->add_flag("--traces", o->traces,
                 "Throughput: steps/s of the torch.profiler traces each trial writes into "
                 "{TRACE_DIR} ($GPUSCOPE_TRACE_DIR), × the pow2 param when there is one");
  tune->add_option("--traces-dir", o->traces_dir,
                   "Where the trials' trace folders go (default: the results file + .traces)")
      ->type_name("DIR");
  tune->add_option("--warmup", o->warmup,
                   "Left out of each trial: the first N values / step lines (default 2), or "
                   "those in the first X seconds, e.g. 20s");
  tune->add_option("--trial-time", o->trial_time,
                   "Each trial ends at this time (SIGTERM, 5 s grace, SIGKILL to its process "
                   "tree), e.g. 90s, 5m (default 60s)");
  tune->add_option("--budget", o->budget,
                   "No trial starts once less than one trial time is left of this, e.g. 1h "
                   "(default 20m)");
  tune->add_option("--repeat", o->repeat, "Trials per setting, for the noise (default 1)")
      ->check(CLI::Range(1, 1000));
  tune->add_option("--plateau", o->plateau,
                   "A larger value must beat the best by more than this to replace it "
                   "(default 5%)");
  tune->add_option("--results", o->results,
                   "The results file (JSONL, a line per trial; a rerun resumes from it; "
                   "default gpuscope-tune.jsonl)")
      ->type_name("FILE");
  tune->add_option("--interval", o->interval, "The monitor's sampling interval (default 100ms)");
  tune->add_option("--nvml", o->nvml_library,
                   "NVML library to load (default: $GPUSCOPE_NVML_LIBRARY or libnvidia-ml.so.1)");
  tune->add_flag("-q,--quiet", o->quiet, "Do not show the trials' own output");
  AddOutputFlags(tune, &o->out);
  tune->add_option("command", o->command, "The command and its arguments, after --")->required();
  return tune;
}

int RunTuneCommand(const TuneCliOptions& o) {
  tune::TuneOptions options;
  options.command = o.command;
  for (const std::string& text : o.params) {
    auto p = tune::ParseParam(text);
    if (!p.ok()) {
      PrintError(p.status());
      return kExitBadInput;
    }
    options.params.push_back(std::move(*p));
  }
  const int sources = (o.metric.empty() ? 0 : 1) + (o.step.empty() ? 0 : 1) + (o.traces ? 1 : 0);
  if (sources != 1) {
    PrintError(Status::Error(
        StatusCode::kUsage,
        std::string(sources == 0 ? "no throughput to measure" : "one throughput at a time") +
            ": give exactly one of --metric REGEX, --step REGEX or --traces (hint: e.g. "
            "--metric '([0-9.]+) samples/s'; docs/tune.md)"));
    return kExitBadInput;
  }
  options.metric.kind = o.traces          ? tune::MetricKind::kTraces
                        : !o.step.empty() ? tune::MetricKind::kStep
                                          : tune::MetricKind::kRegex;
  options.metric.pattern = o.traces ? "" : !o.step.empty() ? o.step : o.metric;
  auto warmup = tune::ParseWarmup(o.warmup);
  auto trial_time = tune::ParseTuneDuration(o.trial_time, "--trial-time");
  auto budget = tune::ParseTuneDuration(o.budget, "--budget");
  auto plateau = tune::ParsePercent(o.plateau, "--plateau");
  for (const Status& s : {warmup.status(), trial_time.status(), budget.status(), plateau.status()})
    if (!s.ok()) {
      PrintError(s);
      return kExitBadInput;
    }
  const auto interval = monitor::ParseInterval(o.interval);
  if (!interval) {
    PrintError("--interval \"" + o.interval +
               "\" is not a duration (hint: e.g. 100ms, 0.5s, 2s, 5m; between 10ms and 1h)");
    return kExitBadInput;
  }
  options.metric.warmup = *warmup;
  options.trial_time_ns = *trial_time;
  options.budget_ns = *budget;
  options.plateau = *plateau;
  options.repeat = o.repeat;
  options.results_path = o.results;
  options.traces_root = o.traces_dir;
  options.interval_ns = *interval;
  options.nvml_library = o.nvml_library;
  options.show_output = !o.quiet;
  // The report's files are written after the last trial: checked before the first.
  if (const Status s = CheckOutputArgs(o.out); !s.ok()) {
    PrintError(s);
    return ExitCodeFor(s);
  }
  auto result = tune::RunTune(options);
  if (!result.ok()) {
    PrintError(result.status());
    return result.status().code() == StatusCode::kNotFound ? 127 : ExitCodeFor(result.status());
  }
  const int rc = Emit(tune::BuildTuneDocument(*result), o.out);
  if (result->stop_signal != 0) return 128 + result->stop_signal;
  if (rc != 0) return rc;
  if (!result->search.have_best) {
    PrintError(
        "no trial gave a throughput: see the trials' outcomes and notes above (hint: "
        "check --metric/--step against the command's output; docs/tune.md, pitfalls)");
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace gpuscope::cli
