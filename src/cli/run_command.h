// `gpuscope run [options] -- CMD ARGS…` and the monitor's hooks into `gpuscope analyze`:
// flags → src/monitor calls → renderers. No logic here beyond wiring.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/output.h"
#include "model/monitor_samples.h"

namespace gpuscope::cli {

struct RunCliOptions {
  std::vector<std::string> command;
  std::string interval = "100ms";
  std::string record;
  std::string tensorboard;
  std::string report_json;  // write the verdict as JSON to this file
  std::string nvml_library;
  std::string live = "auto";  // auto (stderr is a terminal), always, never
  OutputArgs out;             // the verdict's views: text on stderr, --json on stdout, --html FILE
};

CLI::App* AddRunCommand(CLI::App& app, RunCliOptions* options);
int RunRunCommand(const RunCliOptions& options);

}  // namespace gpuscope::cli
