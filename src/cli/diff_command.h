// `gpuscope diff BEFORE AFTER`: load both runs, analyse each, and print what changed.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "api/diff.h"
#include "cli/output.h"

namespace gpuscope::cli {

struct DiffCliOptions {
  std::string before, after;  // trace files or folders of rank traces
  OutputArgs out;             // --json, --html FILE, --csv DIR, --verbose, --color, --width
  api::DiffOptions diff;      // the flags of api::DiffOptionTable()
};

CLI::App* AddDiffCommand(CLI::App& app, DiffCliOptions* options);
// Exit codes as for analyze: 0 ok, 1 internal error, 2 bad input.
int RunDiffCommand(const DiffCliOptions& options);

}  // namespace gpuscope::cli
