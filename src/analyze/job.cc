// CONTRACT STUB (job-contract branch): replaced by the job-analysis branch.
#include "analyze/job.h"

namespace gpuscope::analyze {

model::RankFacts ExtractRankFacts(const RankResults&) { return {}; }
std::vector<JobGroup> GroupJobs(const std::vector<const model::RankFacts*>& ranks) {
  JobGroup g;
  for (size_t i = 0; i < ranks.size(); ++i) g.members.push_back(i);
  return {g};
}
JobAnalysis AnalyzeJob(const std::vector<const model::RankFacts*>&) { return {}; }

}  // namespace gpuscope::analyze
