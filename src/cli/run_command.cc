#include "cli/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/output_file.h"
#include "base/sanitize.h"
#include "cli/output.h"
#include "cli/usage.h"
#include "monitor/session.h"
#include "render/json.h"
#include "report/monitor_document.h"

namespace gpuscope::cli {

CLI::App* AddRunCommand(CLI::App& app, RunCliOptions* o) {
  auto* run = AddCommand(app, "run");
  run->add_option("--interval", o->interval, "Sampling interval, e.g. 100ms (default), 1s");
  run->add_option("--record", o->record,
                  "Record samples: FILE.jsonl (default format), FILE.csv, or FILE.json "
                  "(Chrome-trace counters)");
  run->add_option("--tensorboard", o->tensorboard,
                  "Also write the samples as TensorBoard scalars into this folder");
  run->add_option("--report-json", o->report_json,
                  "Also write the verdict as JSON to this file (the --json document)")
      ->type_name("FILE");
  AddOutputFlags(run, &o->out);
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
                                 "\" is not a duration (hint: e.g. 100ms, 0.5s, 2s, 5m; between "
                                 "10ms and 1h)"));
    return kExitBadInput;
  }
  // Outputs written when the command ends are checked before it starts: an hour's run must not
  // end in "cannot write" (and --report-json used to exit 0 then).
  for (const auto& [path, option] :
       {std::pair{o.report_json, "--report-json"}, std::pair{o.record, "--record"}}) {
    if (path.empty()) continue;
    if (const Status s = CheckOutputFile(path, option); !s.ok()) {
      PrintError(s);
      return ExitCodeFor(s);
    }
  }
  if (const Status s = CheckOutputArgs(o.out); !s.ok()) {
    PrintError(s);
    return ExitCodeFor(s);
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
  const render::Document doc = report::RunDocument(outcome->recording);
  OutputArgs out = o.out;
  out.text_to_stderr = true;  // the command's stdout stays its own
  // A report that could not be written is said; the exit code is the command's when it failed,
  // else 2 (a lost report is never an exit 0).
  int lost = Emit(doc, out);
  if (!o.report_json.empty()) {
    if (const Status s = WriteOutputFile(o.report_json, render::ToJson(doc), "--report-json");
        !s.ok()) {
      PrintError(s);
      lost = ExitCodeFor(s);
    }
  }
  // After a failed write the verdict's notes say what happened; "recorded" would be a lie.
  if (!o.record.empty() && !outcome->record_failed)
    std::fprintf(stderr, "recorded    %s\n", SanitizeText(o.record).c_str());
  return outcome->exit_code != 0 ? outcome->exit_code : lost;
}

}  // namespace gpuscope::cli
