// The job level: which ranks form a job, collectives matched across its ranks, the rank the others
// wait for, and the ranks' clock offsets. Pure functions of model::RankFacts (no traces), so the
// reduce side needs only the per-rank summaries. Definitions: docs/jobs.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyze/run_all.h"
#include "model/rank_facts.h"

namespace gpuscope::analyze {

// Map side: the facts of one analysed rank (identity, steps, collectives, headline numbers, busy
// timeline). RankFacts::verdict is left empty (the advice is a later stage).
model::RankFacts ExtractRankFacts(const RankResults& rank);

// ---- Job identity ----------------------------------------------------------------------------

struct JobGroup {
  std::vector<size_t> members;  // indices into the input, sorted by rank then path
  std::string label;            // "job 1 (world size 8, nccl, started 2021-06-08 09:04:49 UTC)"
  // Why these ranks were set apart from the others, or problems within the job, naming files:
  // "rank 3 appears twice: a/rank3.json, b/rank3.json (both kept, as ranks 3 and 3′)", "no rank
  // id".
  std::vector<std::string> notes;
  // Profiling sessions of one process without a rank id (a TensorBoard log folder of one
  // worker), not ranks of one job: compared side by side, with no straggler, wait or job what-if.
  bool sessions = false;
};

// Groups ranks into jobs: same world size, backend and process groups, trace starts within
// kSameJobStartWindowNs of each other, rank ids distinct. Files of different runs (a TensorBoard
// log folder) become separate jobs. Order: by earliest trace start.
inline constexpr int64_t kSameJobStartWindowNs = int64_t{120} * 1'000'000'000;  // 2 min
// A job whose ranks do not cover its world size gets a note naming the absent ones (at most this
// many ranges of consecutive ranks, then "…").
inline constexpr int32_t kMaxAbsentRanges = 16;
std::vector<JobGroup> GroupJobs(const std::vector<const model::RankFacts*>& ranks);

// ---- Collectives across ranks ----------------------------------------------------------------

// One collective instance matched across the ranks of its group by (group, seq) or, without seq,
// (group, type, ordinal). Arrivals are kernel starts after clock correction.
struct MatchedCollective {
  std::string group;
  std::string type;
  int64_t seq = -1;     // or the ordinal when the trace has no seq
  bool by_seq = false;  // matched by recorded sequence numbers
  int64_t bytes = -1;
  int32_t ranks = 0;           // ranks that recorded it
  int32_t expected_ranks = 0;  // group size
  int32_t last_rank = -1;      // the rank that arrived last
  int64_t first_arrival_ns = 0;
  int64_t last_arrival_ns = 0;
  int64_t skew_ns = 0;  // last − first arrival
  // What the job would save had the last rank arrived with the second-last: last − second-last
  // arrival. Attributed to last_rank as wait caused.
  int64_t wait_caused_ns = 0;
  int64_t end_ns = 0;       // latest end
  int64_t duration_ns = 0;  // last arrival → latest end: the transfer once all are present
  double algbw_gbps = -1;   // bytes / duration (nccl-tests), -1 unknown
  double busbw_gbps = -1;   // algbw × the nccl-tests factor of the type and group size
  int32_t step = -1;        // of the last arriver
};

struct RankWait {
  int32_t rank = -1;
  size_t input = 0;                       // index into the input
  uint64_t collectives = 0;               // matched collectives it took part in
  uint64_t times_last = 0;                // at which it arrived last
  int64_t wait_caused_ns_per_step = 0;    // Σ wait_caused_ns where last / steps
  int64_t wait_suffered_ns_per_step = 0;  // Σ (last arrival − its arrival) / steps
  int32_t waits_most_for = -1;            // the rank whose lateness it waited on longest
};

struct ClockOffset {
  int32_t rank = -1;
  int64_t offset_ns = 0;       // add to this rank's times to put them on the reference clock
  int64_t uncertainty_ns = 0;  // spread of the estimate (median absolute deviation of end diffs)
  uint64_t samples = 0;        // matched collective ends used
  bool applied = false;        // |offset| > uncertainty: arrivals were corrected by it
};

struct Straggler {
  int32_t rank = -1;
  size_t input = 0;
  int64_t wait_caused_ns_per_step = 0;  // the saving per step if it arrived with the others
  double share_of_step = 0;             // of the job's mean step
};

// A straggler is named only when the waits it causes exceed both this share of the job's mean
// step and the clock uncertainty.
inline constexpr double kStragglerMinShare = 0.01;

// A fix applied on every rank (the same code runs on each), replayed for the job. Ranks meet at
// every collective, so a step of the job lasts as long as its slowest rank's own work: each rank's
// mean step less the time it waited at collectives for a later rank (RankWait's
// wait_suffered_ns_per_step). A fix shortens each rank's own work by what its replay saves there
// (RankFacts::fixes), and the job's step after it is the longest of those. A rank that only waits
// gains nothing until the rank it waits for does. Per step, not per collective: where ranks take
// turns at being last, the job's gain is overstated (the waits in between are not replayed).
struct JobFix {
  std::string fix;                 // the what-if id
  int64_t saving_ns = 0;           // per job step: own work now − own work after, slowest ranks
  int64_t rank_saving_min_ns = 0;  // the fix alone on the ranks, their least …
  int64_t rank_saving_max_ns = 0;  // … and most
  int32_t bound_by_rank = -1;      // the rank whose own work is longest after it
};

struct JobAnalysis {
  std::vector<MatchedCollective> collectives;  // in first-arrival order
  uint64_t unmatched = 0;                      // records seen on fewer ranks than their group
  uint64_t point_to_point = 0;                 // send/recv records: pairwise, left unmatched
  std::vector<RankWait> ranks;                 // one per member, in member order
  std::vector<ClockOffset> clocks;             // one per member; reference = lowest rank
  bool clocks_alignable = true;  // false: end-time spreads too wide to estimate offsets
  int32_t reference_rank = -1;
  int64_t mean_step_ns = 0;  // median over ranks of their mean steady step
  int64_t steps = 0;         // steps the per-step figures divide by: those every member profiled
  std::optional<Straggler> straggler;  // the rank the others wait for, or none
  // The job's what-if (JobFix): empty unless every member was replayed.
  int64_t own_step_ns = 0;  // the longest own work of a rank per step (the job's step as modelled)
  int32_t own_step_rank = -1;
  std::vector<JobFix> fixes;  // by job saving, largest first
};

// `ranks` are the members of one JobGroup.
JobAnalysis AnalyzeJob(const std::vector<const model::RankFacts*>& ranks);

}  // namespace gpuscope::analyze
