// Library entry points that do what a subcommand does up to its document, without printing or
// flags: the only implementation of `gpuscope analyze`, which the CLI (cli/main.cc) and the
// Python module (python/gpuscope) are thin shells over.
//   AnalyzeInput: `gpuscope analyze INPUT` — a trace, a folder of traces or summaries, a summary,
//   or a monitor input (a `gpuscope run --record` file, an nvidia-smi log) → its document.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "api/options.h"
#include "gpuscope/ingest.h"
#include "gpuscope/status.h"
#include "job/map_reduce.h"
#include "render/document.h"

namespace gpuscope::api {

struct AnalyzeOptions {
  int threads = 0;  // one pool for reading and analysing; 0: all cores
  double batch_mb = static_cast<double>(kDefaultBatchBytes >> 20);  // JSON MiB per parse batch
  std::string inflater = "auto";                                    // auto, isal or zlib
  std::string monitor_file;  // --monitor: a recording or nvidia-smi log of the same run
  std::string smi_fields;    // --smi-fields: the --query-gpu list of a headerless log
  std::string ranks;         // --ranks: "" (the worst few), "all", or "0,7"
  int ranks_in_memory = 0;   // traces of a folder loaded at once; 0: one per two cores
  // Optional progress: (bytes read, bytes in all) of one file; (ranks mapped, ranks) of a folder.
  std::function<void(uint64_t, uint64_t)> progress;
  // Optional: (ranks mapped, ranks) of a folder, when the caller tells it from `progress`.
  std::function<void(size_t, size_t)> ranks_done;
  // Called once the input is read, before the analyses (the CLI's progress bar says so).
  std::function<void()> analysing;
  // How a folder's traces are mapped: MapTraces when empty; under `analyze --mpi`, MapTracesMpi
  // (a share on each process, gathered on process 0).
  job::TraceMapper mapper;
};

struct Analysis {
  render::Document document;
  // Inputs (files of a folder, the --monitor file) that could not be read or were read in part,
  // each with the message the CLI prints after the report; the CLI exits 2 when there are any.
  std::vector<Status> failures;
  bool monitor_input = false;  // INPUT was a monitor recording: `document` is a gpuscope.run one
  bool folder = false;         // INPUT was a folder or summaries: mapped and reduced (src/job/)
  size_t ranks = 0;            // ranks in the report
  job::MapStats stats;         // what reading and analysing took (`--stats`)
  double reduce_seconds = 0;   // building the job document from the ranks' summaries, s
  std::vector<std::string> notes;  // said on stderr after the report, without failing
};

// Fails (with the CLI's message and code) when nothing could be read: a missing path, an empty
// folder, every file bad, a bad `ranks` or option value.
Result<Analysis> AnalyzeInput(const std::string& input, const AnalyzeOptions& options = {});

// analyze's options (the CLI's flags and Python's keywords; defaults are AnalyzeOptions's):
// checked by AnalyzeInput (api/options.h).
const OptionTable<AnalyzeOptions>& AnalyzeOptionTable();

}  // namespace gpuscope::api
