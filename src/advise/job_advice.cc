#include "advise/job_advice.h"

#include <string>
#include <utility>

#include "render/build.h"

namespace gpuscope::advise {

namespace {

using namespace render::build;  // the document-builder vocabulary

render::Severity SeverityOf(double share) {
  if (share >= kCriticalSavingShare) return render::Severity::kCritical;
  if (share >= kWarningSavingShare) return render::Severity::kWarning;
  return render::Severity::kInfo;
}

// The straggler's row of the job's ranks: by its input position when that names the same rank,
// else by rank id (a stale or foreign index finds nothing rather than another rank).
const analyze::RankWait* WaitOf(const analyze::JobAnalysis& job, const analyze::Straggler& s) {
  if (s.input < job.ranks.size() && job.ranks[s.input].rank == s.rank) return &job.ranks[s.input];
  for (const analyze::RankWait& w : job.ranks)
    if (w.rank == s.rank && w.input == s.input) return &w;
  for (const analyze::RankWait& w : job.ranks)
    if (w.rank == s.rank) return &w;
  return nullptr;
}

}  // namespace

std::optional<Finding> AdviseJob(const analyze::JobAnalysis& job, const StragglerRankAdvice& rank) {
  if (!job.straggler || job.straggler->wait_caused_ns_per_step <= 0) return std::nullopt;
  const analyze::Straggler& s = *job.straggler;
  const analyze::RankWait* w = WaitOf(job, s);
  const std::string r = std::to_string(s.rank);
  Finding f;
  f.id = "straggler";
  f.title = "Rank " + r + " arrives last at collectives; the others wait for it";
  f.estimated_saving_ns_per_step = s.wait_caused_ns_per_step;
  f.estimated_saving_share = job.mean_step_ns > 0 ? static_cast<double>(s.wait_caused_ns_per_step) /
                                                        static_cast<double>(job.mean_step_ns)
                                                  : s.share_of_step;
  f.saving_assumption =
      "Had rank " + r +
      " arrived with the second-last rank at each collective it was last at, "
      "those collectives would have started that much earlier; the next-latest rank may then set "
      "the pace, so the saving is at most this.";
  f.severity = SeverityOf(f.estimated_saving_share);
  f.confidence = kStragglerConfidence;
  f.evidence = {
      Detail("rank", "rank", Value::Count(s.rank)),
      F("last_arrival_count", "last at", Count(w ? w->times_last : 0)),
      F("collectives_count", "of its collectives", Count(w ? w->collectives : 0)),
      F("wait_caused_per_step_ns", "others' wait per step", Ns(s.wait_caused_ns_per_step)),
      Detail("job_step_ns", "job step (median over ranks)",
             job.mean_step_ns > 0 ? Ns(job.mean_step_ns) : Value::Na(Unit::kNanos))};
  if (!rank.verdict.empty())
    f.evidence.push_back(F("rank_verdict", "its verdict", Text(rank.verdict)));
  f.fix = "Look at what rank " + r +
          " does before the collectives it is last at: its data loading, compute and host gaps";
  if (!rank.top_finding.empty()) f.fix += " (its largest finding: " + rank.top_finding + ")";
  f.fix +=
      ". If its report shows nothing slower than the others', check its node: GPU clocks and "
      "temperature (nvidia-smi -q -d CLOCK,PERFORMANCE), other GPU processes, data sharding, the "
      "NIC/PCIe link.";
  return f;
}

}  // namespace gpuscope::advise
