// The job level (analyze/job.h, docs/jobs.md): the facts of one rank, ranks grouped into jobs,
// collectives matched across ranks, the rank the others wait for, clock offsets; and synth's
// planted job-level truths (late rank, clock offsets, several runs in one folder).
#include "analyze/job.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include "analyze/run_all.h"
#include "base/thread_pool.h"
#include "gpuscope/ingest.h"
#include "gpuscope/synth.h"
#include "gpuscope/version.h"
#include "report/report.h"
#include "report/summary.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using analyze::AnalyzeJob;
using analyze::GroupJobs;
using analyze::JobAnalysis;
using analyze::JobGroup;
using model::CollectiveRecord;
using model::RankFacts;
using model::StepSpan;

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;
// A unix-time instant (2024-03-01) for hand-built ranks.
constexpr int64_t kT0 = int64_t{1709251200} * 1'000'000'000;

// ---- helpers ------------------------------------------------------------------------------------

std::vector<const RankFacts*> Ptrs(const std::vector<RankFacts>& facts) {
  std::vector<const RankFacts*> p;
  for (const RankFacts& f : facts) p.push_back(&f);
  return p;
}

std::vector<const RankFacts*> Members(const std::vector<RankFacts>& facts, const JobGroup& g) {
  std::vector<const RankFacts*> p;
  for (size_t i : g.members) p.push_back(&facts[i]);
  return p;
}

// A rank of a hand-built job: `steps` steps of 10 ms from kT0, mean step 10 ms.
RankFacts MadeRank(int32_t rank, int32_t world, int steps = 4) {
  RankFacts f;
  f.identity.path = "made/rank" + std::to_string(rank) + ".json";
  f.identity.rank = rank;
  f.identity.world_size = world;
  f.identity.backend = "nccl";
  f.identity.base_time_ns = kT0;
  f.identity.absolute_clock = true;
  f.identity.trace_start_ns = kT0;
  f.identity.trace_end_ns = kT0 + steps * 10 * kMs;
  f.identity.device_name = "NVIDIA H100 80GB HBM3";
  for (int s = 0; s < steps; ++s) {
    f.steps.push_back({s, kT0 + s * 10 * kMs, kT0 + (s + 1) * 10 * kMs, s > 0});
  }
  f.mean_step_ns = 10 * kMs;
  f.steady_steps = steps - 1;
  return f;
}

CollectiveRecord Coll(int64_t seq, int64_t start, int64_t end, int32_t step = -1,
                      const std::string& type = "allreduce", const std::string& group = "0") {
  CollectiveRecord r;
  r.group = group;
  r.group_desc = "default_pg";
  r.seq = seq;
  r.type = type;
  r.start_ns = start;
  r.end_ns = end;
  r.step = step;
  return r;
}

// Ordinals per (group, type) in start order, as ExtractRankFacts sets them.
void SetOrdinals(RankFacts* f) {
  std::map<std::pair<std::string, std::string>, int64_t> next;
  for (CollectiveRecord& r : f->collectives) r.ordinal = next[{r.group, r.type}]++;
}

struct Loaded {
  std::vector<Trace> traces;
  std::vector<RankFacts> facts;
  std::vector<Status> failures;
};

Loaded LoadFacts(const std::string& path) {
  Loaded l;
  auto in = LoadInputs(path);
  EXPECT_TRUE(in.ok()) << in.status().message();
  if (!in.ok()) return l;
  l.traces = std::move(in->traces);
  l.failures = std::move(in->failures);
  ThreadPool pool(2);
  for (const Trace& t : l.traces) {
    const analyze::RankResults r = analyze::RunAll(t, {}, pool);
    l.facts.push_back(analyze::ExtractRankFacts(r));
  }
  return l;
}

// ---- AnalyzeJob on hand-built ranks ------------------------------------------------------------

// Three ranks, three collectives matched by seq; rank 2 arrives last at each, 300 µs after rank 1
// and 500 µs after rank 0. Records are listed in a different order on rank 1 (an extra collective
// of another group first), which must not matter with seq.
TEST(AnalyzeJob, MatchesBySeqAndNamesTheRankTheOthersWaitFor) {
  std::vector<RankFacts> f = {MadeRank(0, 3), MadeRank(1, 3), MadeRank(2, 3)};
  for (int k = 0; k < 3; ++k) {
    const int64_t t = kT0 + (k + 1) * 10 * kMs + 2 * kMs;
    const int64_t end = t + 800 * kUs;
    f[0].collectives.push_back(Coll(100 + k, t, end, k + 1));
    f[1].collectives.push_back(Coll(100 + k, t + 200 * kUs, end, k + 1));
    f[2].collectives.push_back(Coll(100 + k, t + 500 * kUs, end, k + 1));
  }
  f[1].collectives.insert(f[1].collectives.begin(), Coll(7, kT0 + kMs, kT0 + 2 * kMs, 0,
                                                         "allgather", "1"));
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  ASSERT_EQ(a.collectives.size(), 3u);
  EXPECT_EQ(a.unmatched, 1u);  // the allgather of group 1 seen on rank 1 only
  for (size_t k = 0; k < 3; ++k) {
    const analyze::MatchedCollective& c = a.collectives[k];
    EXPECT_TRUE(c.by_seq);
    EXPECT_EQ(c.seq, 100 + static_cast<int64_t>(k));
    EXPECT_EQ(c.last_rank, 2);
    EXPECT_EQ(c.ranks, 3);
    EXPECT_EQ(c.expected_ranks, 3);
    EXPECT_EQ(c.skew_ns, 500 * kUs);
    EXPECT_EQ(c.wait_caused_ns, 300 * kUs);  // last − second-last
    EXPECT_EQ(c.duration_ns, 300 * kUs);     // last arrival → end
    EXPECT_EQ(c.step, static_cast<int32_t>(k) + 1);
  }
  EXPECT_EQ(a.steps, 4);
  EXPECT_EQ(a.mean_step_ns, 10 * kMs);
  ASSERT_EQ(a.ranks.size(), 3u);
  EXPECT_EQ(a.ranks[2].times_last, 3u);
  EXPECT_EQ(a.ranks[2].wait_caused_ns_per_step, 3 * 300 * kUs / 4);
  EXPECT_EQ(a.ranks[0].wait_suffered_ns_per_step, 3 * 500 * kUs / 4);
  EXPECT_EQ(a.ranks[1].wait_suffered_ns_per_step, 3 * 300 * kUs / 4);
  EXPECT_EQ(a.ranks[0].waits_most_for, 2);
  EXPECT_EQ(a.ranks[1].waits_most_for, 2);
  EXPECT_EQ(a.ranks[2].waits_most_for, -1);
  EXPECT_EQ(a.ranks[0].times_last + a.ranks[1].times_last, 0u);
  ASSERT_TRUE(a.straggler.has_value());
  EXPECT_EQ(a.straggler->rank, 2);
  EXPECT_EQ(a.straggler->wait_caused_ns_per_step, 225 * kUs);
  EXPECT_NEAR(a.straggler->share_of_step, 0.0225, 1e-9);
  // Ends agree exactly: every clock offset is 0 and none is applied.
  for (const analyze::ClockOffset& c : a.clocks) {
    EXPECT_EQ(c.offset_ns, 0);
    EXPECT_FALSE(c.applied);
  }
  EXPECT_TRUE(a.clocks_alignable);
}

// The job's what-if: ranks 0 and 1 wait 3 ms a step for rank 2 at their collective, so their own
// work is 7 ms of the 10 ms step and rank 2's all 10 ms. A fix saves the job what it saves on the
// rank that is then slowest: 2 ms on ranks 0 and 1 and 1 ms on rank 2 saves the job 1 ms; 4 ms on
// rank 2 alone saves 3 ms (ranks 0 and 1 then bound it at 7 ms); 1 ms on rank 0 alone, nothing.
TEST(AnalyzeJob, FixesReplayedForTheJobAreBoundByTheSlowestRank) {
  std::vector<RankFacts> f = {MadeRank(0, 3), MadeRank(1, 3), MadeRank(2, 3)};
  for (int k = 0; k < 4; ++k) {
    const int64_t t = kT0 + k * 10 * kMs + 5 * kMs;
    f[0].collectives.push_back(Coll(10 + k, t, t + 3'500 * kUs, k));
    f[1].collectives.push_back(Coll(10 + k, t, t + 3'500 * kUs, k));
    f[2].collectives.push_back(Coll(10 + k, t + 3 * kMs, t + 3'500 * kUs, k));
  }
  for (RankFacts& r : f) {
    SetOrdinals(&r);
    r.replayed_step_ns = 10 * kMs;
  }
  f[0].fixes = {{"data_wait", 2 * kMs}, {"solo", 1 * kMs}};
  f[1].fixes = {{"data_wait", 2 * kMs}};
  f[2].fixes = {{"data_wait", 1 * kMs}, {"bf16", 4 * kMs}};
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  ASSERT_EQ(a.steps, 4);
  EXPECT_EQ(a.ranks[0].wait_suffered_ns_per_step, 3 * kMs);
  EXPECT_EQ(a.own_step_ns, 10 * kMs);
  EXPECT_EQ(a.own_step_rank, 2);
  ASSERT_EQ(a.fixes.size(), 3u);
  EXPECT_EQ(a.fixes[0].fix, "bf16");
  EXPECT_EQ(a.fixes[0].saving_ns, 3 * kMs);
  EXPECT_EQ(a.fixes[0].bound_by_rank, 0);
  EXPECT_EQ(a.fixes[0].rank_saving_min_ns, 0);
  EXPECT_EQ(a.fixes[0].rank_saving_max_ns, 4 * kMs);
  EXPECT_EQ(a.fixes[1].fix, "data_wait");
  EXPECT_EQ(a.fixes[1].saving_ns, 1 * kMs);
  EXPECT_EQ(a.fixes[1].bound_by_rank, 2);
  EXPECT_EQ(a.fixes[1].rank_saving_min_ns, 1 * kMs);
  EXPECT_EQ(a.fixes[1].rank_saving_max_ns, 2 * kMs);
  EXPECT_EQ(a.fixes[2].fix, "solo");
  EXPECT_EQ(a.fixes[2].saving_ns, 0);
  EXPECT_EQ(a.fixes[2].bound_by_rank, 2);
  // One rank without a replay: the job is not replayed.
  f[1].replayed_step_ns = 0;
  EXPECT_TRUE(AnalyzeJob(Ptrs(f)).fixes.empty());
}

// Ranks that captured different steps (0–4 and 1–5): waits can only accrue in the 4 steps both
// profiled, so per-step figures divide by 4, not by one rank's 5.
TEST(AnalyzeJob, PerStepFiguresDivideByTheStepsEveryRankProfiled) {
  std::vector<RankFacts> f = {MadeRank(0, 2, 5), MadeRank(1, 2, 5)};
  for (StepSpan& s : f[1].steps) {
    s.step += 1;
    s.start_ns += 10 * kMs;
    s.end_ns += 10 * kMs;
  }
  for (int step = 1; step <= 4; ++step) {
    const int64_t t = kT0 + step * 10 * kMs + 2 * kMs;
    f[0].collectives.push_back(Coll(50 + step, t, t + 900 * kUs, step));
    f[1].collectives.push_back(Coll(50 + step, t + 400 * kUs, t + 900 * kUs, step));
  }
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  ASSERT_EQ(a.collectives.size(), 4u);
  EXPECT_EQ(a.steps, 4);
  ASSERT_TRUE(a.straggler.has_value());
  EXPECT_EQ(a.straggler->rank, 1);
  EXPECT_EQ(a.straggler->wait_caused_ns_per_step, 400 * kUs);  // 4 × 400 µs over 4 steps
  EXPECT_EQ(a.ranks[0].wait_suffered_ns_per_step, 400 * kUs);
}

// Pipeline sends and receives carry their own seq counter: the same numbers as the group's
// collectives. They are left out, so the all-reduces still match on every rank.
TEST(AnalyzeJob, SendAndRecvAreLeftOutOfTheGroupsMatching) {
  std::vector<RankFacts> f = {MadeRank(0, 2), MadeRank(1, 2)};
  for (int step = 1; step <= 3; ++step) {
    const int64_t t = kT0 + step * 10 * kMs + 2 * kMs;
    f[0].collectives.push_back(Coll(step, t - kMs, t - kMs + 100 * kUs, step, "send"));
    f[1].collectives.push_back(Coll(step, t - kMs + 50 * kUs, t - kMs + 100 * kUs, step, "recv"));
    f[0].collectives.push_back(Coll(step, t, t + 900 * kUs, step));
    f[1].collectives.push_back(Coll(step, t + 300 * kUs, t + 900 * kUs, step));
  }
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  EXPECT_EQ(a.point_to_point, 6u);
  EXPECT_EQ(a.unmatched, 0u);
  ASSERT_EQ(a.collectives.size(), 3u);
  for (const analyze::MatchedCollective& c : a.collectives) {
    EXPECT_EQ(c.type, "allreduce");
    EXPECT_EQ(c.ranks, 2);
    EXPECT_EQ(c.skew_ns, 300 * kUs);
  }
  ASSERT_TRUE(a.straggler.has_value());
  EXPECT_EQ(a.straggler->rank, 1);
}

// Without seq, records match by (group, type, step, position within the step): a collective the
// profiler dropped on one rank in step 1 must not shift the matches of step 2.
TEST(AnalyzeJob, MatchesByPositionWithinTheStepWithoutSeq) {
  std::vector<RankFacts> f = {MadeRank(0, 2), MadeRank(1, 2)};
  auto add = [&](int rank, int step, int64_t at, int64_t late) {
    const int64_t t = kT0 + step * 10 * kMs + at;
    f[static_cast<size_t>(rank)].collectives.push_back(
        Coll(-1, t + late, t + 2 * kMs, step, "allreduce", "stream:20"));
  };
  // Step 1: rank 0 has two all-reduces, rank 1 only the second (the first was dropped).
  add(0, 1, 1 * kMs, 0);
  add(0, 1, 5 * kMs, 0);
  add(1, 1, 5 * kMs, 100 * kUs);
  // Step 2: both have two; rank 1 is 100 µs late at both.
  add(0, 2, 1 * kMs, 0);
  add(1, 2, 1 * kMs, 100 * kUs);
  add(0, 2, 5 * kMs, 0);
  add(1, 2, 5 * kMs, 100 * kUs);
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  // Step 1's first position pairs rank 0's first with rank 1's only one: their ends differ by
  // 4 ms, so they are not one collective; rank 0's second is left alone. Step 2 matches both.
  ASSERT_EQ(a.collectives.size(), 2u);
  EXPECT_EQ(a.unmatched, 3u);
  for (const analyze::MatchedCollective& c : a.collectives) {
    EXPECT_FALSE(c.by_seq);
    EXPECT_EQ(c.group, "stream:20");
    EXPECT_EQ(c.step, 2);
    EXPECT_EQ(c.last_rank, 1);
    EXPECT_EQ(c.skew_ns, 100 * kUs);
  }
  EXPECT_EQ(a.collectives[0].seq, 2);  // rank 0's ordinal of (stream:20, allreduce)
  EXPECT_EQ(a.collectives[1].seq, 3);
  EXPECT_EQ(a.ranks[1].wait_caused_ns_per_step, 2 * 100 * kUs / 4);
}

// A rank missing from a collective of its group: the instance is listed with the ranks that have
// it, its records count as unmatched, and it adds to nobody's waits (the missing rank may have
// been the last).
TEST(AnalyzeJob, ARankMissingFromACollectiveCountsNoWaits) {
  std::vector<RankFacts> f = {MadeRank(0, 3), MadeRank(1, 3), MadeRank(2, 3)};
  const int64_t t = kT0 + 12 * kMs;
  f[0].collectives.push_back(Coll(5, t, t + kMs, 1));
  f[1].collectives.push_back(Coll(5, t + 300 * kUs, t + kMs, 1));
  f[2].collectives.push_back(Coll(6, t + 3 * kMs, t + 4 * kMs, 1));  // its own seq 6: alone
  f[0].collectives.push_back(Coll(6, t + 3 * kMs, t + 4 * kMs, 1));
  f[1].collectives.push_back(Coll(6, t + 3 * kMs + 10 * kUs, t + 4 * kMs, 1));
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  ASSERT_EQ(a.collectives.size(), 2u);
  EXPECT_EQ(a.collectives[0].seq, 5);
  EXPECT_EQ(a.collectives[0].ranks, 2);
  EXPECT_EQ(a.collectives[0].expected_ranks, 3);
  EXPECT_EQ(a.collectives[1].ranks, 3);
  EXPECT_EQ(a.unmatched, 2u);
  EXPECT_EQ(a.ranks[1].times_last, 1u);  // only seq 6 (complete) counts
  EXPECT_EQ(a.ranks[1].wait_caused_ns_per_step, 10 * kUs / 4);
  EXPECT_EQ(a.ranks[0].collectives, 1u);
  EXPECT_FALSE(a.straggler.has_value());  // 2.5 µs per step is far below 1 % of 10 ms
}

// Two files that claim the same rank id, analysed together (a job GroupJobs would have split):
// they stay two members with their own waits and inputs, never merged into one rank.
TEST(AnalyzeJob, DuplicateRankIdsStayTwoMembers) {
  std::vector<RankFacts> f = {MadeRank(0, 2), MadeRank(1, 2), MadeRank(1, 2)};
  f[2].identity.path = "copy/rank1.json";
  for (int k = 0; k < 4; ++k) {
    const int64_t t = kT0 + k * 10 * kMs + 3 * kMs;
    f[0].collectives.push_back(Coll(k, t, t + 2 * kMs, k));
    f[1].collectives.push_back(Coll(k, t + 300 * kUs, t + 2 * kMs, k));
    f[2].collectives.push_back(Coll(k, t + 100 * kUs, t + 2 * kMs, k));
  }
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  ASSERT_EQ(a.ranks.size(), 3u);
  EXPECT_EQ(a.ranks[1].rank, 1);
  EXPECT_EQ(a.ranks[2].rank, 1);
  EXPECT_EQ(a.ranks[1].input, 1u);
  EXPECT_EQ(a.ranks[2].input, 2u);
  EXPECT_EQ(a.ranks[1].times_last, 4u);
  EXPECT_EQ(a.ranks[2].times_last, 0u);
  EXPECT_EQ(a.ranks[2].wait_suffered_ns_per_step, 200 * kUs);
  ASSERT_EQ(a.collectives.size(), 4u);
  EXPECT_EQ(a.collectives[0].ranks, 3);
  ASSERT_TRUE(a.straggler.has_value());
  EXPECT_EQ(a.straggler->input, 1u);  // the first file, not its copy
  EXPECT_EQ(a.straggler->wait_caused_ns_per_step, 200 * kUs);
}

// A rank that waits at every collective (the one with the most exposed communication) is never
// named; the rank it waits for is, with what its lateness costs per step.
TEST(AnalyzeJob, ARankThatOnlyWaitsIsNeverNamed) {
  std::vector<RankFacts> f = {MadeRank(0, 4), MadeRank(1, 4), MadeRank(2, 4), MadeRank(3, 4)};
  f[1].exposed_communication_ns = 4 * kMs;  // waits the most
  for (int k = 0; k < 4; ++k) {
    const int64_t t = kT0 + k * 10 * kMs + 3 * kMs;
    const int64_t end = t + 2 * kMs;
    f[0].collectives.push_back(Coll(k, t + 900 * kUs, end, k));
    f[1].collectives.push_back(Coll(k, t, end, k));  // early every time: waits 1 ms
    f[2].collectives.push_back(Coll(k, t + 800 * kUs, end, k));
    f[3].collectives.push_back(Coll(k, t + 1100 * kUs, end, k));  // last by 200 µs
  }
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  ASSERT_TRUE(a.straggler.has_value());
  EXPECT_EQ(a.straggler->rank, 3);
  EXPECT_EQ(a.straggler->wait_caused_ns_per_step, 200 * kUs);
  EXPECT_EQ(a.ranks[1].wait_suffered_ns_per_step, 1100 * kUs);
  EXPECT_EQ(a.ranks[1].wait_caused_ns_per_step, 0);
  EXPECT_EQ(a.ranks[1].waits_most_for, 3);
}

// Ranks that arrive within microseconds of each other: somebody is last each time, but the waits
// are far below 1 % of the step: no straggler.
TEST(AnalyzeJob, NoStragglerWhenTheWaitsAreNoise) {
  std::vector<RankFacts> f = {MadeRank(0, 2), MadeRank(1, 2)};
  for (int k = 0; k < 4; ++k) {
    const int64_t t = kT0 + k * 10 * kMs + 3 * kMs;
    f[0].collectives.push_back(Coll(k, t + (k % 2) * 2 * kUs, t + 2 * kMs, k));
    f[1].collectives.push_back(Coll(k, t + ((k + 1) % 2) * 3 * kUs, t + 2 * kMs, k));
  }
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  EXPECT_EQ(a.collectives.size(), 4u);
  EXPECT_EQ(a.ranks[0].times_last + a.ranks[1].times_last, 4u);
  EXPECT_FALSE(a.straggler.has_value());
}

// Clock offsets are estimated from matched end times and applied: rank 1's clock is 37 ms ahead,
// rank 2's 12 ms behind; after correction rank 2 is the late one (400 µs at each collective).
TEST(AnalyzeJob, RecoversClockOffsetsFromCollectiveEnds) {
  std::vector<RankFacts> f = {MadeRank(0, 3), MadeRank(1, 3), MadeRank(2, 3)};
  const int64_t off1 = 37 * kMs + 123, off2 = -12 * kMs - 456;  // rank clock − true time
  for (int k = 0; k < 6; ++k) {
    const int64_t t = kT0 + 5 * kMs + k * 7 * kMs;
    const int64_t end = t + 2 * kMs + (k % 3) * kUs;  // ends within a few µs
    f[0].collectives.push_back(Coll(k, t, end, -1));
    f[1].collectives.push_back(Coll(k, t + 10 * kUs + off1, end + off1 + (k % 2) * kUs, -1));
    f[2].collectives.push_back(Coll(k, t + 400 * kUs + off2, end + off2, -1));
  }
  f[1].identity.trace_start_ns += off1;
  f[2].identity.trace_start_ns += off2;
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  EXPECT_TRUE(a.clocks_alignable);
  EXPECT_EQ(a.reference_rank, 0);
  ASSERT_EQ(a.clocks.size(), 3u);
  // The offset to add to a rank's times to put them on the reference clock: −(its offset).
  EXPECT_NEAR(static_cast<double>(a.clocks[1].offset_ns), static_cast<double>(-off1), 1000);
  EXPECT_NEAR(static_cast<double>(a.clocks[2].offset_ns), static_cast<double>(-off2), 1000);
  EXPECT_EQ(a.clocks[1].samples, 6u);
  EXPECT_LE(a.clocks[1].uncertainty_ns, 1000);
  EXPECT_TRUE(a.clocks[1].applied);
  EXPECT_TRUE(a.clocks[2].applied);
  for (const analyze::MatchedCollective& c : a.collectives) {
    EXPECT_EQ(c.last_rank, 2);
    EXPECT_NEAR(static_cast<double>(c.skew_ns), 400.0 * kUs, 2000);
  }
}

// End differences scattered over ±20 ms (each collective's ends a different amount apart): no
// dense cluster, so the clocks are reported as not alignable and nothing is corrected.
TEST(AnalyzeJob, ScatteredEndsAreNotAlignable) {
  std::vector<RankFacts> f = {MadeRank(0, 2), MadeRank(1, 2)};
  const int64_t scatter[8] = {-19, 3, 11, -7, 17, -13, 6, -2};  // ms
  for (int k = 0; k < 8; ++k) {
    const int64_t t = kT0 + 5 * kMs + k * 4 * kMs;
    f[0].collectives.push_back(Coll(k, t, t + kMs, -1));
    f[1].collectives.push_back(Coll(k, t + scatter[k] * kMs, t + kMs + scatter[k] * kMs, -1));
  }
  for (RankFacts& r : f) SetOrdinals(&r);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  EXPECT_FALSE(a.clocks_alignable);
  EXPECT_FALSE(a.clocks[1].applied);
  EXPECT_EQ(a.clocks[1].samples, 8u);
  EXPECT_GT(a.clocks[1].uncertainty_ns, 5 * kMs);
  // Rank 1 looks 6-19 ms late at half the collectives, but that is within the clock spread.
  EXPECT_FALSE(a.straggler.has_value());
}

// nccl-tests' formulas: algbw = S / t; busbw = algbw × 2(n−1)/n (all-reduce), (n−1)/n
// (all-gather, reduce-scatter, all-to-all), 1 (broadcast, send/recv).
TEST(AnalyzeJob, BandwidthFollowsNcclTests) {
  struct Case {
    const char* type;
    double factor;
  };
  for (const Case c : {Case{"allreduce", 1.5}, Case{"allgather", 0.75}, Case{"reducescatter", 0.75},
                       Case{"alltoall", 0.75}, Case{"broadcast", 1.0}, Case{"sendrecv", 1.0}}) {
    SCOPED_TRACE(c.type);
    std::vector<RankFacts> f = {MadeRank(0, 4), MadeRank(1, 4), MadeRank(2, 4), MadeRank(3, 4)};
    for (int r = 0; r < 4; ++r) {
      CollectiveRecord rec = Coll(1, kT0 + kMs + r * kUs, kT0 + kMs + 3 * kUs + 10 * kMs, 0, c.type);
      rec.bytes = 1'000'000'000;  // 1 GB in 10 ms after the last arrival: 100 GB/s
      rec.group_size = 4;
      f[static_cast<size_t>(r)].collectives.push_back(rec);
    }
    for (RankFacts& r : f) SetOrdinals(&r);
    const JobAnalysis a = AnalyzeJob(Ptrs(f));
    ASSERT_EQ(a.collectives.size(), 1u);
    EXPECT_EQ(a.collectives[0].duration_ns, 10 * kMs);
    EXPECT_DOUBLE_EQ(a.collectives[0].algbw_gbps, 100.0);
    EXPECT_DOUBLE_EQ(a.collectives[0].busbw_gbps, 100.0 * c.factor);
  }
}

// ---- GroupJobs -----------------------------------------------------------------------------------

// Two files claim rank 3 of one job (same start): both are kept, in different jobs, and each job
// names both files; a file without a rank id is named too.
TEST(GroupJobs, DuplicateAndUnknownRankIdsAreNamedNeverMerged) {
  std::vector<RankFacts> f = {MadeRank(0, 4), MadeRank(1, 4), MadeRank(2, 4), MadeRank(3, 4),
                              MadeRank(3, 4), MadeRank(-1, 4)};
  f[4].identity.path = "copy/rank3.json";
  f[4].identity.trace_start_ns += 1'000'000'000;  // a second later: the second claim
  f[5].identity.path = "made/unnamed.json";
  const std::vector<JobGroup> g = GroupJobs(Ptrs(f));
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].members, (std::vector<size_t>{0, 1, 2, 3, 5}));
  EXPECT_EQ(g[1].members, (std::vector<size_t>{4}));
  auto has = [](const JobGroup& j, const std::string& text) {
    for (const std::string& n : j.notes) {
      if (n.find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(g[0], "rank 3 is claimed by two files: made/rank3.json (here) and "
                        "copy/rank3.json (job 2); both kept, never merged"));
  EXPECT_TRUE(has(g[1], "rank 3 is claimed by two files: copy/rank3.json (here) and "
                        "made/rank3.json (job 1)"));
  EXPECT_TRUE(has(g[1], "rank 3 taken"));
  EXPECT_TRUE(has(g[0], "no rank id: made/unnamed.json (shown as rank ?)"));
  EXPECT_EQ(g[0].label, "job 1 (world size 4, nccl, started 2024-03-01 00:00:00 UTC)");
}

// Different world sizes, devices or starts more than 2 minutes apart are different jobs.
// Ranks of the world size that the input lacks are named (issue 36 item 4: two writers of one
// summary left 1 rank of 8, and reduce said nothing of the other 7).
TEST(GroupJobs, AbsentRanksOfTheWorldSizeAreNamed) {
  std::vector<RankFacts> f = {MadeRank(0, 8), MadeRank(3, 8)};
  std::vector<JobGroup> g = GroupJobs(Ptrs(f));
  ASSERT_EQ(g.size(), 1u);
  ASSERT_EQ(g[0].notes.size(), 1u);
  EXPECT_EQ(g[0].notes[0], "6 of world size 8 absent: ranks 1, 2, 4–7 (no trace or summary of them "
                           "was given: job figures cover the 2 present)");
  f = {MadeRank(0, 2), MadeRank(1, 2)};
  EXPECT_TRUE(GroupJobs(Ptrs(f))[0].notes.empty());
  // A thousand-rank job with every other rank: at most 16 ranges, then "…".
  f.clear();
  for (int32_t r = 0; r < 1000; r += 2) f.push_back(MadeRank(r, 1000));
  g = GroupJobs(Ptrs(f));
  ASSERT_EQ(g[0].notes.size(), 1u);
  EXPECT_EQ(g[0].notes[0].rfind("500 of world size 1000 absent: ranks 1, 3, 5,", 0), 0u) << g[0].notes[0];
  EXPECT_NE(g[0].notes[0].find("31, …"), std::string::npos) << g[0].notes[0];
}

TEST(GroupJobs, DifferentJobsAreSetApartWithTheReason) {
  std::vector<RankFacts> f = {MadeRank(0, 2), MadeRank(1, 2), MadeRank(0, 2), MadeRank(1, 2),
                              MadeRank(0, 8)};
  for (size_t i : {2u, 3u}) {
    f[i].identity.trace_start_ns += 3 * 60 * int64_t{1'000'000'000};
    f[i].identity.path = "later/rank" + std::to_string(f[i].identity.rank) + ".json";
  }
  f[4].identity.path = "big/rank0.json";
  f[4].identity.trace_start_ns += 1'000'000'000;
  const std::vector<JobGroup> g = GroupJobs(Ptrs(f));
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].members, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(g[1].members, (std::vector<size_t>{4}));
  EXPECT_EQ(g[2].members, (std::vector<size_t>{2, 3}));
  ASSERT_EQ(g[1].notes.size(), 2u);
  EXPECT_EQ(g[1].notes[0], "set apart from the jobs before it (world size 8, not 2): big/rank0.json");
  EXPECT_EQ(g[1].notes[1].rfind("7 of world size 8 absent: ranks 1–7", 0), 0u) << g[1].notes[1];
  EXPECT_EQ(g[2].notes.back(),
            "set apart from the jobs before it (started 3 min 0 s later): later/rank0.json, "
            "later/rank1.json");
}

// The TensorBoard plugin's sample folder: two ResNet-50 runs (num_workers 0 and 4), each profiled
// twice (tb_plugin names a file <worker>.<epoch ms>.pt.trace.json). Two runs, each naming its two
// files as sessions of one process; no collectives, no straggler.
TEST(GroupJobs, TensorBoardFolderIsTwoRunsAndNoStraggler) {
  GPUSCOPE_REQUIRE_SHARED();
  const std::string dir = testing::SharedDir() + "/traces/kineto_tb_plugin";
  const Loaded l = LoadFacts(dir);
  ASSERT_EQ(l.facts.size(), 4u);
  const std::vector<JobGroup> g = GroupJobs(Ptrs(l.facts));
  ASSERT_EQ(g.size(), 2u);
  const std::string nw0 = dir + "/resnet50_num_workers_0.worker0.";
  const std::string nw4 = dir + "/resnet50_num_workers_4.worker0.";
  for (size_t j = 0; j < 2; ++j) {
    SCOPED_TRACE(g[j].label);
    ASSERT_EQ(g[j].members.size(), 2u);
    const std::string& prefix = j == 0 ? nw0 : nw4;
    for (size_t m : g[j].members) {
      EXPECT_EQ(l.facts[m].identity.path.rfind(prefix, 0), 0u) << l.facts[m].identity.path;
    }
    ASSERT_FALSE(g[j].notes.empty());
    EXPECT_NE(g[j].notes[0].find("2 profiling sessions of one process without a rank id"),
              std::string::npos);
    for (size_t m : g[j].members) {
      EXPECT_NE(g[j].notes[0].find(l.facts[m].identity.path), std::string::npos);
    }
    const JobAnalysis a = AnalyzeJob(Members(l.facts, g[j]));
    EXPECT_TRUE(a.collectives.empty());
    EXPECT_FALSE(a.straggler.has_value());
  }
  EXPECT_EQ(g[0].label,
            "run 1 (resnet50_num_workers_0.worker0, 2 profiling sessions, started 2021-06-08 "
            "08:57:03 UTC)");
  EXPECT_EQ(g[1].notes.back().find("set apart from the jobs before it (started 19 h 22 min "
                                   "later)"),
            0u);
  EXPECT_TRUE(g[0].sessions && g[1].sessions);
  // The report compares the sessions side by side and calls them sessions: it said "4 ranks in 2
  // jobs", "· 2 ranks", "(every rank)" beside the note "not ranks of one job", with a straggler,
  // wait, collectives, clocks and a job what-if that only ranks of one job have.
  const testing::CommandResult r = testing::RunGpuscope("analyze " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("gpuscope " GPUSCOPE_VERSION " · 4 profiling sessions in 2 runs\n", 0), 0u)
      << r.out.substr(0, 200);
  EXPECT_NE(r.out.find("\nrun 1 (resnet50_num_workers_0.worker0, 2 profiling sessions, started "
                       "2021-06-08 08:57:03 UTC)\n  verdict     host-bound (every session)\n"),
            std::string::npos);
  const std::string runs = r.out.substr(0, r.out.find("\nrank "));  // before the rank sections
  for (const char* job_only : {"\n  straggler", "\n  waiting", "\n  collectives",
                               "\n  job what-if", "\n  clocks", " ranks\n", "(every rank)"})
    EXPECT_EQ(runs.find(job_only), std::string::npos) << job_only;
  EXPECT_NE(r.out.find("step time   min (input_1) 151.539 ms"), std::string::npos);
}

// ---- Real multi-rank traces ----------------------------------------------------------------------

// HTA's sampled_rank-0/-1: two ranks of a 128-rank job (world size 128, no process-group names,
// no seq, events sampled away). The NCCL kernels are all SendRecv on streams 84 and 203. Matched
// by (stream, type, step, position) and kept where the ends agree, four collectives remain; by
// hand from the traces (kernel start/end, µs since 1682725898000000):
//   stream 84,  step 551: rank 0 295662→307389, rank 1 298964→307334   skew 3302
//   stream 203, step 551: rank 0 585321→627817, rank 1 585405→628149   skew   84
//   stream 84,  step 552: rank 0 1146327→1182485, rank 1 1168655→1182493 skew 22328
//   stream 203, step 552: rank 0 1185890→1249534, rank 1 1187182→1249345 skew 1292
// The other six position pairs end 14-134 ms apart (the profiler kept different kernels on the
// two ranks) and are not matches.
TEST(RealJob, SampledRanksMatchedCollectivesAndSkews) {
  GPUSCOPE_REQUIRE_REAL("traces/hta/sampled_rank-0.json.gz", "traces/hta/sampled_rank-1.json.gz");
  testing::ScopedTempDir dir;
  for (const char* name : {"sampled_rank-0.json.gz", "sampled_rank-1.json.gz"}) {
    std::filesystem::copy_file(testing::RealTrace(std::string("hta/") + name), dir.File(name));
  }
  const Loaded l = LoadFacts(dir.path());
  ASSERT_EQ(l.facts.size(), 2u);
  for (const RankFacts& f : l.facts) {
    EXPECT_EQ(f.identity.world_size, 128);
    EXPECT_EQ(f.collectives.size(), 10u);
    EXPECT_EQ(f.steps.size(), 2u);
  }
  const std::vector<JobGroup> g = GroupJobs(Ptrs(l.facts));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].members, (std::vector<size_t>{0, 1}));
  const JobAnalysis a = AnalyzeJob(Members(l.facts, g[0]));
  ASSERT_EQ(a.collectives.size(), 4u);
  EXPECT_EQ(a.unmatched, 12u);
  constexpr int64_t kBase = int64_t{1682725898000000} * 1000;
  const struct {
    const char* group;
    int32_t step;
    int64_t first_us, skew_us;
  } want[4] = {{"stream:84", 551, 295662, 3302},
               {"stream:203", 551, 585321, 84},
               {"stream:84", 552, 1146327, 22328},
               {"stream:203", 552, 1185890, 1292}};
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const analyze::MatchedCollective& c = a.collectives[i];
    EXPECT_EQ(c.group, want[i].group);
    EXPECT_EQ(c.type, "sendrecv");
    EXPECT_EQ(c.step, want[i].step);
    EXPECT_EQ(c.first_arrival_ns, kBase + want[i].first_us * kUs);
    EXPECT_EQ(c.skew_ns, want[i].skew_us * kUs);
    EXPECT_EQ(c.wait_caused_ns, want[i].skew_us * kUs);
    EXPECT_EQ(c.last_rank, 1);
    EXPECT_EQ(c.bytes, -1);  // no collective args in these traces
  }
  // Same host clock: the matched ends differ by 55, −332, −8, 189 µs (rank 0 − rank 1): offset
  // 23.5 µs ± 98.5 µs, not applied.
  EXPECT_TRUE(a.clocks_alignable);
  EXPECT_EQ(a.clocks[1].samples, 10u);
  EXPECT_EQ(a.clocks[1].offset_ns, 23500);
  EXPECT_EQ(a.clocks[1].uncertainty_ns, 98500);
  EXPECT_FALSE(a.clocks[1].applied);
  // Rank 1 is last at all four: (3302 + 84 + 22328 + 1292) µs over 2 steps.
  EXPECT_EQ(a.ranks[1].times_last, 4u);
  EXPECT_EQ(a.ranks[1].wait_caused_ns_per_step, 13503 * kUs);
  EXPECT_EQ(a.ranks[0].wait_suffered_ns_per_step, 13503 * kUs);
  EXPECT_EQ(a.ranks[0].waits_most_for, 1);
  ASSERT_TRUE(a.straggler.has_value());
  EXPECT_EQ(a.straggler->rank, 1);
}

// ---- ExtractRankFacts and the ingest of collective args -----------------------------------------

// A collective belongs to the step that launched it: step 5 launches an all-gather that starts on
// the GPU while step 4's long GEMM still runs, inside step 4's device span. By the device span it
// would be step 4 on this rank and step 5 on a faster one, and position matching keys on the step.
TEST(ExtractRankFacts, ACollectiveBelongsToTheStepThatLaunchedIt) {
  const std::string json = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 9, "tid": 9, "ts": 1000, "dur": 1000},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 9, "tid": 9, "ts": 2000, "dur": 1000},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 1100, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 1, "tid": 7, "ts": 1200, "dur": 1500, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 2050, "dur": 5, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "pid": 1, "tid": 20, "ts": 2100, "dur": 100,
     "args": {"device": 0, "stream": 20, "correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 2800, "dur": 5, "args": {"correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 1, "tid": 7, "ts": 2850, "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 3}}
  ],
  "baseTimeNanoseconds": 1700000000000000000
})json";
  auto t = LoadTraceFromBytes(json, "made/rank0.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ThreadPool pool(1);
  const RankFacts f = analyze::ExtractRankFacts(analyze::RunAll(*t, {}, pool));
  ASSERT_EQ(f.steps.size(), 2u);
  constexpr int64_t kBase = 1700000000000000000;
  const int64_t gpu_start = kBase + 2100 * kUs;
  // The premise: the all-gather starts inside step 4's device span.
  ASSERT_LE(f.steps[0].start_ns, gpu_start);
  ASSERT_GT(f.steps[0].end_ns, gpu_start);
  ASSERT_EQ(f.collectives.size(), 1u);
  EXPECT_EQ(f.collectives[0].start_ns, gpu_start);
  EXPECT_EQ(f.collectives[0].step, 5);
}

// A made trace with the newest collective args (process group name, description, ranks, "Seq")
// on one NCCL kernel, a 2021-style NCCL kernel without args, and pg_config / host_name in the
// header.
TEST(ExtractRankFacts, CollectivesIdentityAndSteps) {
  const std::string json = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}, {"id": 1, "name": "NVIDIA A100-SXM4-80GB"}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2, "pg_count": 2,
    "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0,1]},
                  {"pg_name": "3", "pg_desc": "TP", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": "[0, 1]"}]},
  "host_name": "node-17",
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 9, "tid": 9, "ts": 1000, "dur": 1000},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 9, "tid": 9, "ts": 2000, "dur": 1000},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 1100, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "pid": 1, "tid": 20, "ts": 1200.5, "dur": 100,
     "args": {"device": 1, "stream": 20, "correlation": 1, "Collective name": "_allgather_base", "In msg nelems": 1024, "Out msg nelems": 2048,
              "Group size": 2, "dtype": "BFloat16", "Process Group Name": "3", "Process Group Description": "TP", "Process Group Ranks": "[0, 1]", "Seq": 17}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 2100, "dur": 5, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "pid": 1, "tid": 24, "ts": 2200, "dur": 50,
     "args": {"device": 1, "stream": 24, "correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 2300, "dur": 5, "args": {"correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "pid": 1, "tid": 24, "ts": 2400, "dur": 50,
     "args": {"device": 1, "stream": 24, "correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 2500, "dur": 5, "args": {"correlation": 4}},
    {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 1, "tid": 7, "ts": 2600, "dur": 300, "args": {"device": 1, "stream": 7, "correlation": 4}}
  ],
  "baseTimeNanoseconds": 1700000000000000000
})json";
  auto t = LoadTraceFromBytes(json, "made/rank1.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->collectives.size(), 1u);
  EXPECT_EQ(t->Str(t->collectives[0].process_group_desc), "TP");
  EXPECT_EQ(t->Str(t->collectives[0].process_group_ranks), "[0, 1]");
  EXPECT_EQ(t->collectives[0].seq, 17);
  EXPECT_EQ(t->info.hostname, "node-17");
  EXPECT_EQ(t->info.process_groups,
            (std::vector<std::string>{"0 default_pg [0, 1]", "3 TP [0, 1]"}));

  ThreadPool pool(1);
  const analyze::RankResults r = analyze::RunAll(*t, {}, pool);
  const RankFacts f = analyze::ExtractRankFacts(r);
  constexpr int64_t kBase = 1700000000000000000;
  EXPECT_EQ(f.identity.rank, 1);
  EXPECT_EQ(f.identity.world_size, 2);
  EXPECT_EQ(f.identity.backend, "nccl");
  EXPECT_EQ(f.identity.hostname, "node-17");
  EXPECT_EQ(f.identity.device_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_TRUE(f.identity.absolute_clock);
  EXPECT_EQ(f.identity.trace_start_ns, kBase + 1000 * kUs);
  EXPECT_EQ(f.identity.trace_end_ns, kBase + 3000 * kUs);
  EXPECT_EQ(f.identity.process_groups,
            (std::vector<std::string>{"0 default_pg [0, 1]", "3 TP [0, 1]"}));
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(f.steps[0].step, 4);
  EXPECT_EQ(f.steps[1].step, 5);
  ASSERT_EQ(f.collectives.size(), 3u);
  const CollectiveRecord& ag = f.collectives[0];
  EXPECT_EQ(ag.type, "allgather");
  EXPECT_EQ(ag.group, "3");
  EXPECT_EQ(ag.group_desc, "TP");
  EXPECT_EQ(ag.group_ranks, "[0, 1]");
  EXPECT_EQ(ag.group_size, 2);
  EXPECT_EQ(ag.seq, 17);
  EXPECT_EQ(ag.ordinal, 0);
  EXPECT_EQ(ag.dtype, "BFloat16");
  EXPECT_EQ(ag.bytes, 2048 * 2);  // nccl-tests' size for all-gather: the output buffer
  EXPECT_EQ(ag.start_ns, kBase + 1200 * kUs + 500);
  EXPECT_EQ(ag.end_ns, kBase + 1300 * kUs + 500);
  EXPECT_EQ(ag.step, 4);
  for (size_t i : {1u, 2u}) {
    const CollectiveRecord& ar = f.collectives[i];
    EXPECT_EQ(ar.type, "allreduce");  // from the kernel name
    EXPECT_EQ(ar.group, "stream:24");
    EXPECT_EQ(ar.seq, -1);
    EXPECT_EQ(ar.ordinal, static_cast<int64_t>(i) - 1);
    EXPECT_EQ(ar.bytes, -1);
    EXPECT_EQ(ar.step, 5);
  }
  // Busy: 100 + 50 + 50 + 300 µs of kernels between 1200.5 and 2900 µs.
  int64_t busy = 0;
  for (int64_t b : f.busy.busy_ns) {
    EXPECT_LE(b, f.busy.bin_ns);
    busy += b;
  }
  EXPECT_EQ(busy, 500 * kUs);
  EXPECT_LE(f.busy.busy_ns.size(), model::kMaxBusyBins);
  EXPECT_EQ(f.busy.first_bin_start_ns, kBase + 1200 * kUs + 500);
  // Headline numbers are the rank's own analyses'.
  EXPECT_EQ(f.span_ns, r.gpu_time.exclusive.span_ns);
  EXPECT_EQ(f.idle_ns, r.gpu_time.exclusive.idle_ns);
}

// ---- synth: planted job-level truths -------------------------------------------------------------

struct SynthJob {
  testing::ScopedTempDir dir;
  std::vector<SynthTruth> truths;
  Loaded loaded;
};

std::unique_ptr<SynthJob> MakeJob(const SynthOptions& o) {
  auto j = std::make_unique<SynthJob>();
  auto t = WriteSynthTraces(o, j->dir.path());
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return j;
  j->truths = std::move(*t);
  j->loaded = LoadFacts(j->dir.path());
  return j;
}

// Checks a job with a planted late rank: it alone is named, with the wait it causes per step
// within ±5 % of what was generated; every other rank waits most for it; the planted clock
// offsets (up to ±50 ms) are recovered within 10 µs.
// `as_planted`: the generated wait equals collectives × late_ns (within 5 %); false where other
// planted shares, solved rank by rank, move the late rank's arrivals (then the truth is what was
// generated, and the analysis must find that).
void ExpectLateRankFound(const SynthOptions& o, const SynthJob& j, bool as_planted = true) {
  const std::vector<RankFacts>& f = j.loaded.facts;
  ASSERT_EQ(f.size(), static_cast<size_t>(o.ranks));
  const std::vector<JobGroup> g = GroupJobs(Ptrs(f));
  ASSERT_EQ(g.size(), 1u);
  const JobAnalysis a = AnalyzeJob(Members(f, g[0]));
  const SynthTruth& late = j.truths[static_cast<size_t>(o.late_rank)];
  ASSERT_TRUE(late.late);
  // What was generated: the late rank is last at every collective, ~late_ns each.
  EXPECT_EQ(late.times_last, late.collectives);
  const double per_step_collectives =
      static_cast<double>(late.collectives) / static_cast<double>(late.steps);
  if (as_planted)
    EXPECT_NEAR(static_cast<double>(late.wait_caused_ns_per_step),
                per_step_collectives * static_cast<double>(o.late_ns),
                0.05 * per_step_collectives * static_cast<double>(o.late_ns));
  else
    EXPECT_GT(late.wait_caused_ns_per_step, 0);
  ASSERT_TRUE(a.straggler.has_value());
  EXPECT_EQ(a.straggler->rank, o.late_rank);
  const double found = static_cast<double>(a.straggler->wait_caused_ns_per_step);
  const double planted = static_cast<double>(late.wait_caused_ns_per_step);
  EXPECT_NEAR(found, planted, 0.05 * planted);
  std::printf("[ measured ] %d ranks: late rank %d, wait caused per step planted %.1f µs, found "
              "%.1f µs (%+.3f %%)\n",
              o.ranks, o.late_rank, planted / 1e3, found / 1e3, 100.0 * (found / planted - 1.0));
  EXPECT_EQ(a.collectives.size(), late.collectives);
  EXPECT_EQ(a.unmatched, 0u);
  for (const analyze::RankWait& w : a.ranks) {
    if (w.rank == o.late_rank) continue;
    EXPECT_EQ(w.waits_most_for, o.late_rank) << w.rank;
    EXPECT_EQ(w.times_last, 0u) << w.rank;
  }
  // Clock offsets: the estimate for rank m is (reference clock − m's clock) = off_0 − off_m.
  EXPECT_TRUE(a.clocks_alignable);
  ASSERT_EQ(a.reference_rank, 0);
  int64_t worst = 0, largest = 0;
  for (size_t m = 0; m < a.clocks.size(); ++m) {
    const int32_t r = a.clocks[m].rank;
    const int64_t planted_off =
        j.truths[0].clock_offset_ns - j.truths[static_cast<size_t>(r)].clock_offset_ns;
    largest = std::max<int64_t>(largest, std::llabs(j.truths[static_cast<size_t>(r)].clock_offset_ns));
    EXPECT_LE(std::llabs(j.truths[static_cast<size_t>(r)].clock_offset_ns), o.clock_offset_max_ns);
    worst = std::max<int64_t>(worst, std::llabs(a.clocks[m].offset_ns - planted_off));
    EXPECT_LE(std::llabs(a.clocks[m].offset_ns - planted_off), 10 * kUs) << "rank " << r;
  }
  std::printf("[ measured ] %d ranks: largest planted clock offset %.3f ms, worst error of the "
              "estimate %lld ns\n",
              o.ranks, static_cast<double>(largest) / 1e6, static_cast<long long>(worst));
}

TEST(SynthJob, EightRanksWithALateRank) {
  SynthOptions o;
  o.ranks = 8;
  o.steps = 4;
  o.layers = 4;
  o.late_rank = 5;
  o.late_ns = 400 * kUs;
  o.clock_offset_max_ns = 50 * kMs;
  const auto j = MakeJob(o);
  ExpectLateRankFound(o, *j);
}

TEST(SynthJob, SixtyFourRanksWithALateRankInAFewSeconds) {
  const auto start = std::chrono::steady_clock::now();
  SynthOptions o;
  o.ranks = 64;
  o.steps = 3;
  o.layers = 2;
  o.late_rank = 37;
  o.late_ns = 300 * kUs;
  o.clock_offset_max_ns = 50 * kMs;
  o.seed = 11;
  const auto j = MakeJob(o);
  ExpectLateRankFound(o, *j);
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ measured ] 64 ranks: synth + load + analyse + job analysis in %.2f s\n", s);
}

// A late rank beside other planted bottlenecks (a DataLoader stall, exposed communication): synth
// solves those shares rank by rank, so the late rank's longer step moves its arrivals by more or
// less than late_ns (13.2 ms per step generated here for 4 × 5 ms planted). The late rank is still
// the one named, with the wait as generated.
TEST(SynthJob, LateRankBesideOtherBottlenecks) {
  SynthOptions o;
  o.ranks = 4;
  o.steps = 4;
  o.layers = 4;
  o.late_rank = 1;
  o.late_ns = 5 * kMs;
  o.dataloader_stall_fraction = 0.2;
  o.exposed_comm_fraction = 0.1;
  const auto j = MakeJob(o);
  ExpectLateRankFound(o, *j, /*as_planted=*/false);
}

// The job's what-if on a generated job whose rank 1 is 2 ms late to each collective, every rank
// also waiting for its DataLoader: each rank's replay fills its facts (SummarizeRank), and every
// fix's job saving is what the late rank saves (the others' own work is shorter by their waits,
// so the late rank stays the slowest): never more than the late rank's own saving.
TEST(SynthJob, JobWhatIfIsBoundByTheLateRank) {
  SynthOptions o;
  o.ranks = 4;
  o.steps = 6;
  o.layers = 4;
  o.late_rank = 1;
  o.late_ns = 2 * kMs;
  o.dataloader_stall_fraction = 0.2;
  testing::ScopedTempDir dir;
  ASSERT_TRUE(WriteSynthTraces(o, dir.path()).ok());
  auto in = LoadInputs(dir.path());
  ASSERT_TRUE(in.ok()) << in.status().message();
  const report::Report r = report::BuildReport(in->traces, {}, 2);
  std::vector<RankFacts> f;
  for (size_t i = 0; i < r.ranks.size(); ++i) f.push_back(report::SummarizeRank(r.ranks[i], i).facts);
  for (const RankFacts& x : f) {
    EXPECT_GT(x.replayed_step_ns, 0);
    ASSERT_FALSE(x.fixes.empty());
  }
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  ASSERT_TRUE(a.straggler.has_value());
  EXPECT_EQ(a.own_step_rank, 1);
  ASSERT_FALSE(a.fixes.empty());
  const RankFacts& late = f[1];
  ASSERT_EQ(late.identity.rank, 1);
  bool data_wait = false;
  for (const analyze::JobFix& j : a.fixes) {
    int64_t late_saving = 0;
    for (const model::FixSaving& s : late.fixes)
      if (s.fix == j.fix) late_saving = s.saving_ns;
    EXPECT_EQ(j.bound_by_rank, 1) << j.fix;
    EXPECT_EQ(j.saving_ns, late_saving) << j.fix;
    EXPECT_LE(j.saving_ns, j.rank_saving_max_ns) << j.fix;
    EXPECT_GE(j.saving_ns, 0) << j.fix;
    if (j.fix == "data_wait") {
      data_wait = true;
      EXPECT_GT(j.saving_ns, a.own_step_ns / 10);  // the planted stall: 20 % of the step
    }
  }
  EXPECT_TRUE(data_wait);
}

// Coupled ranks with nobody late: ranks arrive within the 1 µs jitter; no straggler, and the
// generated waits say the same.
TEST(SynthJob, NoLateRankNoStraggler) {
  SynthOptions o;
  o.ranks = 8;
  o.steps = 4;
  o.layers = 4;
  o.coupled_collectives = true;
  o.clock_offset_max_ns = 20 * kMs;
  const auto j = MakeJob(o);
  const std::vector<RankFacts>& f = j->loaded.facts;
  ASSERT_EQ(f.size(), 8u);
  const JobAnalysis a = AnalyzeJob(Ptrs(f));
  EXPECT_FALSE(a.straggler.has_value());
  EXPECT_TRUE(a.clocks_alignable);
  EXPECT_EQ(a.unmatched, 0u);
  for (const analyze::MatchedCollective& c : a.collectives) EXPECT_LE(c.skew_ns, 1000);
  for (const SynthTruth& t : j->truths) {
    EXPECT_FALSE(t.late);
    EXPECT_LE(t.wait_caused_ns_per_step, 8 * 1000);
  }
}

// Clock noise of ±20 ms per step: the end differences have no dense cluster; the job reports
// clocks that cannot be aligned, and names no straggler from what is clock error.
TEST(SynthJob, ClockNoiseIsReportedNotAlignable) {
  SynthOptions o;
  o.ranks = 4;
  o.steps = 8;
  o.layers = 2;
  o.clock_noise_ns = 20 * kMs;
  const auto j = MakeJob(o);
  const JobAnalysis a = AnalyzeJob(Ptrs(j->loaded.facts));
  EXPECT_FALSE(a.clocks_alignable);
  for (const analyze::ClockOffset& c : a.clocks) EXPECT_FALSE(c.applied);
  EXPECT_FALSE(a.straggler.has_value());
}

// runs = 2: the folder holds two runs of the same 4-rank job, an hour apart: two jobs, each
// naming its files, each with its own late rank found.
TEST(SynthJob, TwoRunsInOneFolderAreTwoJobs) {
  SynthOptions o;
  o.ranks = 4;
  o.steps = 3;
  o.layers = 2;
  o.runs = 2;
  o.late_rank = 2;
  o.late_ns = 500 * kUs;
  const auto j = MakeJob(o);
  const std::vector<RankFacts>& f = j->loaded.facts;
  ASSERT_EQ(f.size(), 8u);
  ASSERT_EQ(j->truths.size(), 8u);
  EXPECT_EQ(j->truths[4].run, 1);
  const std::vector<JobGroup> g = GroupJobs(Ptrs(f));
  ASSERT_EQ(g.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    SCOPED_TRACE(k);
    ASSERT_EQ(g[k].members.size(), 4u);
    const std::string run = "run" + std::to_string(k) + ".rank";
    for (size_t m : g[k].members) {
      EXPECT_NE(f[m].identity.path.find(run), std::string::npos) << f[m].identity.path;
      EXPECT_NE(g[k].notes.back().find(f[m].identity.path), std::string::npos);
    }
    const JobAnalysis a = AnalyzeJob(Members(f, g[k]));
    ASSERT_TRUE(a.straggler.has_value());
    EXPECT_EQ(a.straggler->rank, 2);
  }
  // Run 1 starts an hour after run 0 (each rank's profiler up to 3 ms before its first step).
  EXPECT_EQ(g[1].notes.back().find("set apart from the jobs before it (started 59 min 59 s later)"),
            0u)
      << g[1].notes.back();
}

// What synth writes for coupled ranks: "Seq" on every NCCL kernel, the same on every rank for one
// collective, and every rank's kernel of that collective ending at the same true time (its
// recorded end minus its planted clock offset).
TEST(SynthJob, CoupledRanksEndTogetherAndCarrySeq) {
  SynthOptions o;
  o.ranks = 3;
  o.steps = 2;
  o.layers = 3;
  o.late_rank = 1;
  o.late_ns = 200 * kUs;
  o.clock_offset_max_ns = 5 * kMs;
  const auto j = MakeJob(o);
  const std::vector<RankFacts>& f = j->loaded.facts;
  ASSERT_EQ(f.size(), 3u);
  ASSERT_EQ(f[0].collectives.size(), f[1].collectives.size());
  ASSERT_FALSE(f[0].collectives.empty());
  for (size_t k = 0; k < f[0].collectives.size(); ++k) {
    const int64_t true_end = f[0].collectives[k].end_ns - j->truths[0].clock_offset_ns;
    for (size_t r = 0; r < 3; ++r) {
      const CollectiveRecord& c = f[r].collectives[k];
      EXPECT_GE(c.seq, 0);
      EXPECT_EQ(c.seq, f[0].collectives[k].seq);
      EXPECT_EQ(c.group, "0");
      EXPECT_EQ(c.end_ns - j->truths[r].clock_offset_ns, true_end);
    }
    // The late rank arrives last, 200 µs (± the 1 µs jitter) after the others.
    const int64_t late_arrival = f[1].collectives[k].start_ns - j->truths[1].clock_offset_ns;
    for (size_t r : {0u, 2u}) {
      const int64_t arrival = f[r].collectives[k].start_ns - j->truths[r].clock_offset_ns;
      EXPECT_NEAR(static_cast<double>(late_arrival - arrival), 200.0 * kUs, 1000.0);
    }
  }
}

TEST(SynthJob, BadJobOptionsAreUsageErrors) {
  const std::string path = testing::TempPath("never.json");
  auto expect_usage = [&](const SynthOptions& o, const std::string& text) {
    auto r = WriteSynthTrace(o, 0, path);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kUsage);
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().message();
  };
  SynthOptions o;
  o.ranks = 4;
  o.late_rank = 4;
  expect_usage(o, "late_rank must be -1 (none) or a rank in [0, 4)");
  o = SynthOptions();
  o.ranks = 4;
  o.late_rank = 1;
  o.straggler_rank = 2;
  expect_usage(o, "late_rank and straggler_rank must be the same rank");
  o = SynthOptions();
  o.ranks = 2;
  o.late_rank = 1;
  o.late_ns = 10;
  o.sync_stall_fraction = 0.1;
  expect_usage(o, "sync_stall_fraction cannot be planted together");
  o = SynthOptions();
  o.runs = 0;
  expect_usage(o, "runs must be in [1, 1000]");
  o = SynthOptions();
  o.clock_offset_max_ns = -1;
  expect_usage(o, "clock_offset_max_ns must be in [0, 1 h]");
}

}  // namespace
}  // namespace gpuscope
