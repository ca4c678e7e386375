// The job document's seam: BuildJobDocument (summary.h) groups the ranks into jobs
// (analyze::GroupJobs) and analyses each (analyze::AnalyzeJob); this overload takes the groups and
// their analyses as given, so a test (or a caller that analysed already) controls them.
#pragma once

#include <vector>

#include "analyze/job.h"
#include "report/summary.h"

namespace gpuscope::report {

struct AnalysedJob {
  analyze::JobGroup group;        // members: indices into the ranks given to BuildJobDocument
  analyze::JobAnalysis analysis;  // of the members' facts, in member order
};

// Every job's summary section (under "jobs"), then the rank sections (the worst few shown in
// text, all in JSON and HTML), then the failures. See docs/json-schema.md.
render::Document BuildJobDocument(const std::vector<RankSummary>& ranks,
                                  const std::vector<AnalysedJob>& jobs,
                                  const std::vector<Status>& failures, const JobOptions& options);

// Cells of the busy heatmap: at most this many time columns per job, and at most
// kMaxHeatmapCells cells in all (a 1,000-rank job gets fewer, wider columns).
inline constexpr size_t kHeatmapColumns = 120;
inline constexpr size_t kMaxHeatmapCells = 24000;
// Collectives listed in the skew table, the largest skews first.
inline constexpr size_t kSkewTableRows = 20;

}  // namespace gpuscope::report
