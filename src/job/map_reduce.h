// The job pipeline: map (one trace → its RankSummary) and reduce (summaries → the document), and
// `analyze FOLDER` as map in parallel + reduce holding at most a few rank models at once.
#pragma once

#include <string>
#include <vector>

#include "analyze/run_all.h"
#include "base/thread_pool.h"
#include "gpuscope/ingest.h"
#include "gpuscope/status.h"
#include "render/document.h"
#include "report/summary.h"

namespace gpuscope::job {

struct MapOptions {
  LoadOptions load;
  analyze::RunOptions run;
  // Rank models alive at once (each is ~0.4× its trace's JSON); 0 = one per two cores, at least 1.
  int max_ranks_in_memory = 0;
};

// Loads, analyses and summarises one trace; the trace is freed before returning.
Result<report::RankSummary> MapTrace(const std::string& path, const MapOptions& options,
                                     ThreadPool& pool);

struct Mapped {
  std::vector<report::RankSummary> ranks;  // sorted by rank, then path
  std::vector<Status> failures;            // inputs that could not be read
};
// Maps every trace of `paths` (files) on the pool, at most options.max_ranks_in_memory at once.
Mapped MapTraces(const std::vector<std::string>& paths, const MapOptions& options,
                 ThreadPool& pool);

// Summary files and folders of them (or of traces, mapped on the way) → summaries.
Result<Mapped> ReadSummaries(const std::vector<std::string>& paths, const MapOptions& options,
                             ThreadPool& pool);

}  // namespace gpuscope::job
