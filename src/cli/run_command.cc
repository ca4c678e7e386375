#include "cli/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "base/sanitize.h"
#include "ingest/registry.h"
#include "monitor/session.h"
#include "monitor/verdict.h"

namespace gpuscope::cli {

namespace {

constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

int ExitCodeFor(const Status& s) {
  return s.code() == StatusCode::kInternal ? kExitInternal : kExitBadInput;
}

// Messages name paths, commands and flag values as typed: through the shared sanitiser too.
void PrintError(const Status& s) {
  std::fprintf(stderr, "gpuscope: error: %s\n", SanitizeText(s.message()).c_str());
}

}  // namespace

CLI::App* AddRunCommand(CLI::App& app, RunCliOptions* o) {
  auto* run = app.add_subcommand(
      "run",
      "Run a command and watch it: GPU (NVML) and CPU of its process tree (/proc), a live line,\n"
      "an optional record, and a verdict at the end (on stderr). Exits with the command's code.\n"
      "Example: gpuscope run --record run.jsonl -- python train.py");
  run->add_option("--interval", o->interval, "Sampling interval, e.g. 100ms (default), 1s");
  run->add_option("--record", o->record,
                  "Record samples: FILE.jsonl (default format), FILE.csv, or FILE.json "
                  "(Chrome-trace counters)");
  run->add_option("--tensorboard", o->tensorboard,
                  "Also write the samples as TensorBoard scalars into this folder");
  run->add_option("--report-json", o->report_json, "Write the verdict as JSON to this file");
  run->add_option("--nvml", o->nvml_library,
                  "NVML library to load (default: $GPUSCOPE_NVML_LIBRARY or libnvidia-ml.so.1)");
  run->add_option("--live", o->live, "Live line on stderr: auto (when a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  run->add_option("command", o->command, "The command and its arguments, after --")->required();
  return run;
}

int RunRunCommand(const RunCliOptions& o) {
  const auto interval = monitor::ParseInterval(o.interval);
  if (!interval) {
    PrintError(Status::Error(StatusCode::kUsage,
                             "--interval \"" + o.interval +
                                 "\" is not a duration (hint: e.g. 100ms, 0.5s, 2s; between 10ms "
                                 "and 1h)"));
    return kExitBadInput;
  }
  monitor::RunOptions options;
  options.command = o.command;
  options.interval_ns = *interval;
  options.record_path = o.record;
  options.tensorboard_dir = o.tensorboard;
  options.nvml_library = o.nvml_library;
  options.live = o.live == "always" || (o.live == "auto" && isatty(STDERR_FILENO));
  auto outcome = monitor::RunAndMonitor(options);
  if (!outcome.ok()) {
    PrintError(outcome.status());
    // A command that cannot be executed gets the shell's code for it.
    return outcome.status().code() == StatusCode::kNotFound ? 127 : ExitCodeFor(outcome.status());
  }
  const monitor::MonitorReport report = monitor::BuildMonitorReport(outcome->recording);
  std::fputs(monitor::RenderMonitorText(report).c_str(), stderr);
  if (!o.report_json.empty()) {
    std::ofstream out(o.report_json, std::ios::binary);
    out << monitor::RenderMonitorJson(report);
    if (!out)
      std::fprintf(stderr, "gpuscope: error: cannot write %s\n",
                   SanitizeText(o.report_json).c_str());
  }
  // After a failed write the verdict's notes say what happened; "recorded" would be a lie.
  if (!o.record.empty() && !outcome->record_failed)
    std::fprintf(stderr, "  recorded    %s\n", SanitizeText(o.record).c_str());
  return outcome->exit_code;
}

int PrintMonitorVerdict(const monitor::Recording& rec, bool json) {
  const monitor::MonitorReport report = monitor::BuildMonitorReport(rec);
  std::fputs(json ? monitor::RenderMonitorJson(report).c_str()
                  : monitor::RenderMonitorText(report).c_str(),
             stdout);
  // Like the trace reader: skipped lines are reported and make the exit code 2.
  return rec.malformed_lines > 0 ? kExitBadInput : 0;
}

int PrintMonitorSections(const report::Report& report, const std::string& monitor_path,
                         const Result<monitor::Recording>& recording, bool json) {
  if (!recording.ok()) {
    PrintError(recording.status());
    return ExitCodeFor(recording.status());
  }
  std::FILE* out = json ? stderr : stdout;
  for (const report::RankReport& r : report.ranks) {
    if (!r.monitor) continue;
    const analyze::MonitorBeside& m = *r.monitor;
    std::fprintf(out, "\nmonitor %s within %s\n", monitor_path.c_str(), r.trace->info.path.c_str());
    switch (m.alignment) {
      case analyze::MonitorAlignment::kNoEvents:
        std::fprintf(out, "  no events in the trace: nothing to line up\n");
        break;
      case analyze::MonitorAlignment::kNotWallClock:
        std::fprintf(out, "  the trace's timestamps are not wall-clock time: cannot line up\n");
        break;
      case analyze::MonitorAlignment::kNoOverlap:
        std::fprintf(out,
                     "  no monitor sample within the trace's span (trace %.3f–%.3f s, monitor "
                     "%.3f–%.3f s, unix time): a different run?\n",
                     m.span.start_ns / 1e9, m.span.end_ns / 1e9, m.samples_start_ns / 1e9,
                     m.samples_end_ns / 1e9);
        break;
      case analyze::MonitorAlignment::kAligned:
        std::fputs(json ? monitor::RenderMonitorJson(m.report).c_str()
                        : monitor::RenderMonitorText(m.report).c_str(),
                   out);
        break;
    }
  }
  return recording.value().malformed_lines > 0 ? kExitBadInput : 0;
}

}  // namespace gpuscope::cli
