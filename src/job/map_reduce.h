// The job pipeline: map (one trace → its RankSummary) and reduce (summaries → the document), and
// `analyze FOLDER` as map in parallel + reduce holding at most a few rank models at once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analyze/run_all.h"
#include "base/thread_pool.h"
#include "gpuscope/ingest.h"
#include "gpuscope/status.h"
#include "render/document.h"
#include "report/summary.h"

namespace gpuscope::job {

// What mapping took, summed over the traces mapped (for `--stats` and the benchmark).
struct MapStats {
  uint64_t traces = 0;
  double load_seconds = 0;     // Σ per trace: read, inflate, parse, build the model (wall)
  double analyze_seconds = 0;  // Σ per trace: analyses, advice, summary (wall)
  uint64_t file_bytes = 0;
  uint64_t json_bytes = 0;
  uint64_t events = 0;
  size_t max_model_bytes = 0;                       // the largest rank model (Trace::TableBytes)
  analyze::AnalysisSeconds analysis_cpu_seconds{};  // Σ per trace: thread CPU of each analysis
  void Add(const MapStats& other);
};

struct MapOptions {
  LoadOptions load;
  analyze::RunOptions run;
  // Rank models alive at once (each is ~0.4× its trace's JSON); 0 = one per two cores, at least 1.
  int max_ranks_in_memory = 0;
  // Called after each trace of MapTraces is done, with (traces done, traces in all); from a pool
  // thread, one call at a time.
  std::function<void(size_t, size_t)> ranks_done;
  // When set, MapTraces hands each summary to it as soon as it is made (one call at a time, from
  // a pool thread; `index` into `paths`) instead of keeping it in Mapped::ranks, so that mapping
  // many traces to files holds no summaries. A failure it returns is collected with the others.
  std::function<Status(size_t index, report::RankSummary&& summary)> sink;
};

struct Mapped;
// How ReadSummaries maps the traces it finds: MapTraces when empty; MapTracesMpi (job/mpi.h)
// under `analyze --mpi`, which maps a share on each process and gathers on process 0.
using TraceMapper = std::function<Result<Mapped>(const std::vector<std::string>& traces,
                                                 const MapOptions& options, ThreadPool& pool)>;

// Loads, analyses and summarises one trace; the trace is freed before returning. The section is
// as the JSON reads it back (render::AsReadBack), so that a summary read from a file equals it.
Result<report::RankSummary> MapTrace(const std::string& path, const MapOptions& options,
                                     ThreadPool& pool, MapStats* stats = nullptr);
// The same for a trace the caller has loaded (the CLI reads a single input through the registry,
// which may turn out to be a monitor recording instead); the trace is freed before returning.
report::RankSummary SummarizeLoadedTrace(Trace trace, const MapOptions& options, ThreadPool& pool,
                                         MapStats* stats = nullptr);

struct Mapped {
  std::vector<report::RankSummary> ranks;  // sorted by rank, then path
  std::vector<Status> failures;            // inputs that could not be read
  MapStats stats;
};
// Maps every trace of `paths` (files) on the pool, at most options.max_ranks_in_memory at once.
Mapped MapTraces(const std::vector<std::string>& paths, const MapOptions& options,
                 ThreadPool& pool);

// Summary files and folders of them (or of traces, mapped on the way) → summaries; what each path
// is, and what a folder holds, is ingest::ClassifyPath's and ingest::ListFolderInputs' to say.
// Fails only when nothing could be read.
Result<Mapped> ReadSummaries(const std::vector<std::string>& paths, const MapOptions& options,
                             ThreadPool& pool, const TraceMapper& map_traces = {});

// Puts summaries in report order: by rank id (none last), then path; a rank without an id gets
// the key "input_<position>", as the report of a folder of traces has always keyed it.
void SortSummaries(std::vector<report::RankSummary>* ranks);

// For tests of the memory bound: rank models (traces being loaded, analysed or summarised) alive
// now, and the most alive at once since ResetRankModelPeak().
struct RankModelCount {
  int alive = 0;
  int peak = 0;
};
RankModelCount RankModelsAlive();
void ResetRankModelPeak();

}  // namespace gpuscope::job
