// The job-level finding: the rank the others wait for at collectives (analyze::JobAnalysis's
// straggler). It replaces the per-rank `straggler` rule, which named ranks whose step was 10 % over
// the median: on a real 8-rank DLRM job that rule flagged the ranks with the most exposed
// communication — the ones that wait — and missed the rank they waited for. A rank that only
// waits is never named here (docs/advice.md, "Job-level finding").
#pragma once

#include <optional>
#include <string>

#include "advise/advise.h"
#include "analyze/job.h"

namespace gpuscope::advise {

// How sure the saving is: the waits are measured at matched collectives, but removing the
// lateness may expose the next-latest rank, so less may be saved.
inline constexpr double kStragglerConfidence = 0.7;

// What the report knows of the straggler beyond the job analysis: its own verdict and top finding
// (from its rank section), so the fix points at what to look at first. Both may be empty.
struct StragglerRankAdvice {
  std::string verdict;      // "input-bound", ...
  std::string top_finding;  // the title of its largest finding
};

// The finding for `job`'s straggler (id "straggler"), or none when the job has none. The saving is
// the wait it causes the others per step (Straggler::wait_caused_ns_per_step), its share that of
// the job's mean step; severity follows the share as for every finding.
std::optional<Finding> AdviseJob(const analyze::JobAnalysis& job, const StragglerRankAdvice& rank);

}  // namespace gpuscope::advise
