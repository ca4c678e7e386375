// One rank's self-contained result: its facts for the job level and its whole report section.
// What the map side produces and a summary file stores; the reduce side needs nothing else.
#pragma once

#include <vector>

#include "gpuscope/status.h"
#include "model/rank_facts.h"
#include "render/document.h"
#include "report/report.h"

namespace gpuscope::report {

struct RankSummary {
  model::RankFacts facts;
  render::Section
      section;  // BuildRankSection of the rank, as JSON reads it back (render::AsReadBack)
  bool operator==(const RankSummary&) const = default;
};

// The summary of rank `index` of a built report (facts with the verdict, and its section).
RankSummary SummarizeRank(const RankReport& rank, size_t index);

struct JobOptions {
  // Ranks shown in full after the job summary: empty = the worst few (kDefaultDetailRanks);
  // {-1} = all.
  std::vector<int32_t> detail_ranks;
};
inline constexpr size_t kDefaultDetailRanks = 3;
// `--ranks`: "" → {} (the worst few), "all" → {-1}, "0,7" → {0, 7}; anything else is a usage error.
Status ParseDetailRanks(const std::string& text, std::vector<int32_t>* out);

// The analyze document of any number of ranks from their summaries: ranks grouped into jobs
// (analyze::GroupJobs), each job's collectives matched (analyze::AnalyzeJob), a job summary first,
// then the rank sections. One rank gives the single-rank report.
render::Document BuildJobDocument(const std::vector<RankSummary>& ranks,
                                  const std::vector<Status>& failures,
                                  const JobOptions& options = {});
// The same, the rank sections moved into the document instead of copied (`analyze`, `reduce`).
render::Document BuildJobDocument(std::vector<RankSummary>&& ranks,
                                  const std::vector<Status>& failures,
                                  const JobOptions& options = {});

}  // namespace gpuscope::report
