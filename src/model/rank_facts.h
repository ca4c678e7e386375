// What the job level needs to know of one rank, without its trace: who it is, its steps, every
// collective it took part in, and a few headline numbers. Built per rank by the map side
// (analyze::ExtractRankFacts), stored in a summary file (src/store/), read back by the reduce side
// (analyze::AnalyzeJob). Plain values: no StringIds, no pointers into a Trace.
//
// Times are int64 ns. `*_ns` instants are on the rank's own clock, made absolute (unix ns) when the
// trace gives baseTimeNanoseconds (RankIdentity::base_time_ns), else relative to the trace's own
// origin (RankIdentity::absolute_clock false: such ranks cannot be compared in time with others).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuscope/model.h"

namespace gpuscope::model {

// One collective as one rank saw it: the communication kernel (NCCL/RCCL) and what the profiler
// recorded about it.
struct CollectiveRecord {
  // Process group name ("0", "1", ...); when the trace lacks it, "stream:<id>" (NCCL runs each
  // communicator on a stream of its own, created in the same order on every rank).
  std::string group;
  std::string group_desc;   // "default_pg", "TP", ... or ""
  std::string group_ranks;  // as the trace gives it ("[0, 1, 2, 3]"), or ""
  int32_t group_size = -1;  // ranks in the group, -1 unknown
  // The collective's sequence number within its group when the trace records one
  // (record_param_comms / NCCL kernel args "Seq", "seq_num", ...), else -1.
  int64_t seq = -1;
  // Index of this record among the rank's collectives of the same (group, type), in start order:
  // the key used to match ranks when seq is absent (every rank of a group issues its collectives in
  // the same order).
  int64_t ordinal = -1;
  std::string type;  // normalised: "allreduce", "allgather", "reducescatter", "broadcast",
                     // "reduce", "alltoall", "sendrecv", "send", "recv", "barrier", or as given
  // nccl-tests' size S: max(In, Out msg nelems) × element size (the buffer for all-reduce and
  // broadcast, all-gather's output, reduce-scatter's input), -1 unknown.
  int64_t bytes = -1;
  std::string dtype;     // "BFloat16", "Float", ... or ""
  int64_t start_ns = 0;  // kernel start: the rank's arrival at the collective
  int64_t end_ns = 0;    // kernel end: ranks of one collective end nearly together
  int32_t step = -1;     // ProfilerStep#N whose host span launched it (else whose device span
                         // holds start_ns), -1 outside steps
  bool operator==(const CollectiveRecord&) const = default;
};

struct StepSpan {
  int32_t step = -1;  // N of ProfilerStep#N
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool steady = false;  // counted in the rank's mean step (not warm-up, not incomplete)
  bool operator==(const StepSpan&) const = default;
};

// Who a rank is, from its trace and file. Ranks of one job share world_size, backend, process
// groups and a trace start within minutes; see analyze::GroupJobs.
struct RankIdentity {
  std::string path;  // the file as given on the command line (or inside the folder)
  int32_t rank = -1;
  RankSource rank_source = RankSource::kNone;
  int32_t world_size = -1;
  std::string backend;  // distributedInfo.backend ("nccl")
  // distributedInfo.pg_config / the process groups seen on collectives: "name desc [ranks]" each.
  std::vector<std::string> process_groups;
  std::optional<int64_t> base_time_ns;  // baseTimeNanoseconds
  bool absolute_clock = false;          // base_time_ns present: *_ns below are unix ns
  int64_t trace_start_ns = 0;           // first event
  int64_t trace_end_ns = 0;             // last event end
  std::string device_name;              // deviceProperties[0].name, or ""
  std::string hostname;                 // when the trace records one, or ""
  bool operator==(const RankIdentity&) const = default;
};

// GPU busy (any kernel, copy or set on any stream; union over streams) per time bin of one rank,
// for the job heatmap: bins of bin_ns from first_bin_start_ns, busy_ns[i] ≤ bin_ns.
struct BusyTimeline {
  int64_t first_bin_start_ns = 0;
  int64_t bin_ns = 0;
  std::vector<int64_t> busy_ns;  // at most kMaxBusyBins
  bool operator==(const BusyTimeline&) const = default;
};
inline constexpr size_t kMaxBusyBins = 512;

// One fix replayed on the rank's steps (whatif/whatif.h), for the job's what-if: what the fix
// alone saves per mean steady step of this rank.
struct FixSaving {
  std::string fix;  // the what-if's id ("bf16", "data_wait", …)
  int64_t saving_ns = 0;
  bool operator==(const FixSaving&) const = default;
};

struct RankFacts {
  RankIdentity identity;
  // Headline numbers (the same values as the rank's section), for the job summary and the spread
  // across ranks.
  int64_t mean_step_ns = 0;  // mean steady step (GPU span without steps)
  int64_t steady_steps = 0;
  int64_t span_ns = 0;  // analysed span
  int64_t compute_ns = 0;
  int64_t exposed_communication_ns = 0;
  int64_t idle_ns = 0;
  std::string verdict;  // advise verdict id ("input-bound", ...)
  // The replay (set by the report stage, like the verdict): the unchanged replay's mean step, 0
  // when the rank has no steady steps with GPU work to replay; and every fix replayed on it.
  int64_t replayed_step_ns = 0;
  std::vector<FixSaving> fixes;
  std::vector<StepSpan> steps;
  std::vector<CollectiveRecord> collectives;  // in start order
  BusyTimeline busy;
  bool operator==(const RankFacts&) const = default;
};

}  // namespace gpuscope::model
