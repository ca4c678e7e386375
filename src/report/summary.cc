#include "report/summary.h"

#include "analyze/job.h"
#include "report/document.h"

namespace gpuscope::report {

RankSummary SummarizeRank(const RankReport& rank, size_t index) {
  RankSummary s;
  s.facts = analyze::ExtractRankFacts(rank);
  // The advice is a stage after the facts (ExtractRankFacts leaves the verdict empty): the job
  // summary counts the ranks' verdicts without their sections.
  s.facts.verdict = rank.advice.verdict;
  s.section = BuildRankSection(rank, index);
  return s;
}

}  // namespace gpuscope::report
