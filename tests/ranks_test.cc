// Stragglers and collective arrival order on synthetic multi-rank traces with a planted slow rank.
#include "analyze/ranks.h"

#include <gtest/gtest.h>

#include "gpuscope/ingest.h"
#include "gpuscope/synth.h"
#include "test_util.h"

namespace gpuscope {
namespace {

struct Analysed {
  std::vector<Trace> traces;
  std::vector<analyze::GpuTime> gpu;
  std::vector<analyze::StepsResult> steps;
  analyze::RanksResult ranks;
};

Analysed AnalyseSynthRanks(const SynthOptions& o, const std::string& name) {
  Analysed a;
  const std::string dir = testing::TempPath(name);
  auto truths = WriteSynthTraces(o, dir);
  EXPECT_TRUE(truths.ok()) << truths.status().message();
  auto loaded = LoadInputs(dir);
  EXPECT_TRUE(loaded.ok());
  if (!loaded.ok()) return a;
  a.traces = std::move(loaded->traces);
  std::vector<const Trace*> t;
  std::vector<const analyze::GpuTime*> g;
  std::vector<const analyze::StepsResult*> s;
  for (const Trace& trace : a.traces) {
    a.gpu.push_back(analyze::AnalyzeGpuTime(trace));
    a.steps.push_back(analyze::AnalyzeSteps(trace));
  }
  for (size_t i = 0; i < a.traces.size(); ++i) {
    t.push_back(&a.traces[i]);
    g.push_back(&a.gpu[i]);
    s.push_back(&a.steps[i]);
  }
  a.ranks = analyze::AnalyzeRanks(t, g, s);
  return a;
}

TEST(Ranks, PlantedStragglerIsFoundWithItsSlowdown) {
  SynthOptions o;
  o.ranks = 4;
  o.steps = 6;
  o.straggler_rank = 2;
  o.straggler_slowdown = 1.25;
  const Analysed a = AnalyseSynthRanks(o, "straggler_ranks");
  ASSERT_EQ(a.ranks.ranks.size(), 4u);
  for (const analyze::RankRow& row : a.ranks.ranks) {
    SCOPED_TRACE("rank " + std::to_string(row.rank));
    if (row.rank == 2) {
      EXPECT_TRUE(row.straggler);
      // The straggler's compute is 25 % slower; its step time grows by the same share (±2 pp).
      EXPECT_NEAR(row.slowdown, 0.25, 0.02);
    } else {
      EXPECT_FALSE(row.straggler);
      EXPECT_LT(std::abs(row.slowdown), 0.02);
    }
  }
  EXPECT_TRUE(a.ranks.clocks_from_base_time);
  EXPECT_GT(a.ranks.collectives_compared, 0u);
  // The slow rank reaches most collectives last.
  const analyze::RankRow& slow = a.ranks.ranks[2];
  EXPECT_GT(slow.last_arrivals * 2, a.ranks.collectives_compared);
}

TEST(Ranks, NoStragglerWhenRanksAreAlike) {
  SynthOptions o;
  o.ranks = 3;
  o.steps = 5;
  const Analysed a = AnalyseSynthRanks(o, "even_ranks");
  ASSERT_EQ(a.ranks.ranks.size(), 3u);
  for (const analyze::RankRow& row : a.ranks.ranks) EXPECT_FALSE(row.straggler) << row.rank;
}

}  // namespace
}  // namespace gpuscope
