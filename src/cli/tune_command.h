// `gpuscope tune [options] -- CMD ARGS…`: flags → src/tune → the "gpuscope.tune" document.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/output.h"

namespace gpuscope::cli {

struct TuneCliOptions {
  std::vector<std::string> command;
  std::vector<std::string> params;  // --param, as typed
  std::string metric;
  std::string step;
  bool traces = false;
  std::string traces_dir;
  std::string warmup = "2";
  std::string trial_time = "60s";
  std::string budget = "20m";
  int repeat = 1;
  std::string plateau = "5%";
  std::string results = "gpuscope-tune.jsonl";
  std::string interval = "100ms";
  std::string nvml_library;
  bool quiet = false;
  OutputArgs out;  // text on stdout, --json on stdout, --html FILE
};

CLI::App* AddTuneCommand(CLI::App& app, TuneCliOptions* options);
int RunTuneCommand(const TuneCliOptions& options);

}  // namespace gpuscope::cli
