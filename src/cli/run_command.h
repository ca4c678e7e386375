// `gpuscope run [options] -- CMD ARGS…` and the monitor's hooks into `gpuscope analyze`:
// flags → src/monitor calls → renderers. No logic here beyond wiring.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpuscope/model.h"
#include "gpuscope/status.h"
#include "model/monitor_samples.h"
#include "report/report.h"

namespace gpuscope::cli {

struct RunCliOptions {
  std::vector<std::string> command;
  std::string interval = "100ms";
  std::string record;
  std::string tensorboard;
  std::string report_json;  // write the verdict as JSON to this file
  std::string nvml_library;
  std::string live = "auto";  // auto (stderr is a terminal), always, never
};

CLI::App* AddRunCommand(CLI::App& app, RunCliOptions* options);
int RunRunCommand(const RunCliOptions& options);

// `gpuscope analyze FILE` where the input registry read FILE as a monitor input (a `gpuscope run
// --record` file in any of its formats, or an nvidia-smi log): prints the monitor verdict and
// returns the exit code.
int PrintMonitorVerdict(const monitor::Recording& recording, bool json);

// `gpuscope analyze TRACE --monitor FILE`: each rank's monitor section (analyze::MonitorBeside,
// computed with the report), or the error reading FILE; text to stdout, or JSON to stderr when
// the trace report is JSON on stdout. Returns the exit code.
int PrintMonitorSections(const report::Report& report, const std::string& monitor_path,
                         const Result<monitor::Recording>& recording, bool json);

}  // namespace gpuscope::cli
