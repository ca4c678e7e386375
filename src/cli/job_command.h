// `gpuscope map TRACE... -o FILE|DIR/` (one rank → its summary file) and `gpuscope reduce
// SUMMARY|FOLDER...` (summaries → the report `analyze FOLDER` prints): the job pipeline split so
// that any scheduler (Slurm arrays, xargs -P, Kubernetes jobs) can run the map side.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/output.h"
#include "gpuscope/ingest.h"
#include "gpuscope/status.h"

namespace gpuscope::cli {

struct MapCliOptions {
  std::vector<std::string> inputs;  // trace files or folders of them
  std::string out;                  // FILE (every summary in it) or DIR/ (one file per trace)
  int threads = 0;
  int ranks_in_memory = 0;
  double batch_mb = static_cast<double>(kDefaultBatchBytes >> 20);
  std::string inflater = "auto";
  std::string monitor_file;
};

struct ReduceCliOptions {
  std::vector<std::string> inputs;  // summary files or folders of them (traces are mapped)
  OutputArgs out;
  int threads = 0;
  int ranks_in_memory = 0;
  std::string ranks;  // --ranks all|N,M
};

CLI::App* AddMapCommand(CLI::App& app, MapCliOptions* options);
CLI::App* AddReduceCommand(CLI::App& app, ReduceCliOptions* options);
// Exit codes as for analyze: 0 ok, 1 internal error, 2 bad input (some input could not be read).
int RunMapCommand(const MapCliOptions& options);
int RunReduceCommand(const ReduceCliOptions& options);

// Adds --ranks to a command that prints a job report.
void AddRanksFlag(CLI::App* app, std::string* ranks);

// The summary file `map TRACE -o DIR/` writes for TRACE: DIR/<name>.gpuscope.db, where <name> is
// the file name without .gz, .json and .pt.trace ("rank7.pt.trace.json.gz" → "rank7").
std::string SummaryFileName(const std::string& trace_path);

}  // namespace gpuscope::cli
