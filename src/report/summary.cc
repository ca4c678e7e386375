// CONTRACT STUB (job-contract branch): replaced by the job-report branch.
#include "report/summary.h"

#include "analyze/job.h"
#include "render/json.h"
#include "report/document.h"

namespace gpuscope::report {

RankSummary SummarizeRank(const RankReport& rank, size_t index) {
  RankSummary s;
  s.facts = analyze::ExtractRankFacts(rank);
  s.section = BuildRankSection(rank, index);
  return s;
}

render::Document BuildJobDocument(const std::vector<RankSummary>&, const std::vector<Status>&,
                                  const JobOptions&) {
  return {};
}

}  // namespace gpuscope::report
