#include "report/summary.h"

#include "analyze/job.h"
#include "report/document.h"

#include <algorithm>
#include <cmath>

namespace gpuscope::report {

RankSummary SummarizeRank(const RankReport& rank, size_t index) {
  RankSummary s;
  s.facts = rank.facts ? *rank.facts : analyze::ExtractRankFacts(rank);
  // The advice is a stage after the facts (ExtractRankFacts leaves the verdict empty): the job
  // summary counts the ranks' verdicts without their sections.
  s.facts.verdict = rank.advice.verdict;
  // The what-if too (whatif runs after the facts): each fix's saving alone, scaled from the
  // replayed window's mean step to the rank's mean steady step, as the findings state it.
  const whatif::WhatIfResults& w = rank.whatif;
  if (w.replayed && w.step_ns > 0) {
    s.facts.replayed_step_ns = w.step_ns;
    const double scale = static_cast<double>(s.facts.mean_step_ns) / static_cast<double>(w.step_ns);
    for (const whatif::FixResult& f : w.fixes)
      s.facts.fixes.push_back(
          {f.id, std::clamp<int64_t>(std::llround(static_cast<double>(f.saving_ns) * scale), 0,
                                     s.facts.mean_step_ns)});
  }
  s.section = BuildRankSection(rank, index);
  return s;
}

Status ParseDetailRanks(const std::string& text, std::vector<int32_t>* out) {
  out->clear();
  if (text.empty()) return Status::Ok();
  if (text == "all") {
    out->push_back(-1);
    return Status::Ok();
  }
  size_t i = 0;
  while (i <= text.size()) {
    const size_t comma = std::min(text.find(',', i), text.size());
    const std::string word = text.substr(i, comma - i);
    int64_t rank = 0;
    bool ok = !word.empty() && word.size() <= 9;
    for (char c : word) {
      if (c < '0' || c > '9') ok = false;
      rank = rank * 10 + (c - '0');
    }
    if (!ok)
      return Status::Error(StatusCode::kUsage,
                           "--ranks \"" + text +
                               "\" is not a list of ranks (hint: --ranks all, or rank ids such as "
                               "--ranks 0,7)");
    out->push_back(static_cast<int32_t>(rank));
    i = comma + 1;
  }
  return Status::Ok();
}

}  // namespace gpuscope::report
