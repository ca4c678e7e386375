// The entrance: what a path given to any subcommand (or to the Python module) is, decided here
// and nowhere else (docs/architecture.md, "The entrance").
//   ClassifyPath: standard input, a folder of ranks, a `gpuscope map` summary, or one file whose
//     content the registry identifies (a trace, an Nsight Systems export, a recording, an
//     nvidia-smi/DCGM log, a memory snapshot).
//   ListFolderInputs: a folder's traces (*.json, *.json.gz and Nsight Systems exports) and
//     summaries (any other SQLite file), in name order; entries with an input's name that are no
//     regular file are named, never read.
#pragma once

#include <string>
#include <vector>

#include "gpuscope/status.h"

namespace gpuscope::ingest {

enum class PathKind {
  kStdin,    // "-": one input, read once
  kFolder,   // a folder of ranks: ListFolderInputs
  kSummary,  // a regular file that is an SQLite database but no Nsight Systems export
  kFile,     // any other file: the registry reads it by its content
};

// Fails with kNotFound (and a hint) for a missing path, and with kInvalidInput for one that cannot
// be examined (a loop of symbolic links, a permission).
Result<PathKind> ClassifyPath(const std::string& path);

struct FolderInputs {
  std::vector<std::string> traces;     // sorted
  std::vector<std::string> summaries;  // sorted
  std::vector<Status> skipped;         // FIFOs, devices, dangling links with an input's name
};

// Adds the folder's inputs to `out`. Fails when the folder cannot be listed, or holds no input
// and nothing skipped (the error says what gpuscope looks for). Hidden files are left out (a
// running `gpuscope map`'s temporary files among them).
Status ListFolderInputs(const std::string& dir, FolderInputs* out);

// A regular file whose first bytes are an SQLite database's and which is no Nsight Systems export
// (a pipe or stdin is never one: its bytes cannot be read twice).
bool IsSummaryFile(const std::string& path);

}  // namespace gpuscope::ingest
