// CONTRACT STUB (job-contract branch): facts come from analyze::ExtractRankFacts (job-analysis branch);
// the verdict is filled here by the job-report branch.
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

}  // namespace gpuscope::report
