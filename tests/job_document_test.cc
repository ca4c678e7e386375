// The job document (report/job_document.cc) on hand-made ranks and a hand-made job analysis, so
// what it prints depends on this file alone: 8 ranks where rank 5 arrives 2 ms late at every
// collective, a job where the last arrival rotates (no straggler), two runs in one folder, one
// rank. Goldens: tests/golden/jobs/ (whole documents, JSON and text; GPUSCOPE_REBASELINE=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <filesystem>

#include "advise/job_advice.h"
#include "gpuscope/ingest.h"
#include "gpuscope/synth.h"
#include "report/document.h"
#include "golden.h"
#include "render/json.h"
#include "render/text.h"
#include "report/job_document.h"

namespace gpuscope::report {
namespace {

using render::F;
using render::Value;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kUs = 1'000;
constexpr int64_t kBase = 1'623'143'089'000'000'512;  // unix ns of every rank's first bin (× 1,024)
constexpr int64_t kStepNs = 40 * kMs;
constexpr int kSteps = 10;
constexpr int kCollectivesPerStep = 2;

std::string GoldenPath(const std::string& name) { return testing::GoldenDir() + "/jobs/" + name; }

// One rank as its summary: facts (identity, steps, headline numbers, a busy timeline) and a small
// section with its verdict and largest finding, as BuildRankSection would give it.
RankSummary MakeRank(int32_t rank, int32_t world, const std::string& path, const std::string& verdict,
                     int64_t step_ns, double compute, double exposed_comm, double idle,
                     const std::string& top_finding) {
  RankSummary r;
  model::RankIdentity& id = r.facts.identity;
  id.path = path;
  id.rank = rank;
  id.rank_source = RankSource::kDistributedInfo;
  id.world_size = world;
  id.backend = "nccl";
  id.base_time_ns = kBase;
  id.absolute_clock = true;
  id.trace_start_ns = kBase;
  id.trace_end_ns = kBase + kSteps * step_ns;
  model::RankFacts& f = r.facts;
  f.mean_step_ns = step_ns;
  f.steady_steps = kSteps - 1;
  f.span_ns = kSteps * step_ns;
  f.compute_ns = std::llround(compute * static_cast<double>(f.span_ns));
  f.exposed_communication_ns = std::llround(exposed_comm * static_cast<double>(f.span_ns));
  f.idle_ns = std::llround(idle * static_cast<double>(f.span_ns));
  f.verdict = verdict;
  for (int s = 0; s < kSteps; ++s) {
    // Step 7 takes 6 ms longer on the rank given the longest step, so it is the slowest step.
    const int64_t extra = (s + 1 == 7 && step_ns > kStepNs) ? 6 * kMs : 0;
    f.steps.push_back({s + 1, kBase + s * step_ns, kBase + (s + 1) * step_ns + extra, s > 0});
  }
  // Busy in bins of a tenth of a step: a rank busy `compute` of each bin, idle in each step's last
  // bin (where it waits at the collective) unless it is the one that is late.
  f.busy.first_bin_start_ns = kBase;
  f.busy.bin_ns = step_ns / 10;
  for (int b = 0; b < kSteps * 10; ++b)
    f.busy.busy_ns.push_back(b % 10 == 9 && verdict != "input-bound" ? 0 : std::llround(compute * static_cast<double>(f.busy.bin_ns)));

  r.section.key = "rank_" + std::to_string(rank);
  r.section.title = "rank " + std::to_string(rank) + " of " + std::to_string(world) + " (from distributedInfo)  " + path;
  render::Section& findings = r.section.AddSection("findings", "verdict and findings");
  findings.text_inline = true;
  findings.AddRow("verdict", "verdict").fields = {F("verdict", "", Value::Text(verdict))};
  render::Finding& top = findings.AddFinding("top");
  top.title = top_finding;
  top.saving = Value::Nanos(step_ns / 10);
  top.saving_share = Value::Share(0.1);
  render::Section& gpu = r.section.AddSection("gpu_time", "GPU time");
  gpu.text_inline = true;
  gpu.AddRow("exclusive", "GPU time").fields = {F("compute_share", "compute", Value::Share(compute)),
                                                F("idle_share", "idle", Value::Share(idle))};
  return r;
}

// 8 ranks; rank 5 is input-bound and arrives 2 ms after the others at every collective; rank 2
// has the longest step of those that wait (it waits the longest, so its step is longest: the
// old rule's "straggler").
std::vector<RankSummary> EightRanks(const std::string& prefix = "run/") {
  std::vector<RankSummary> ranks;
  for (int32_t r = 0; r < 8; ++r) {
    const bool late = r == 5;
    ranks.push_back(MakeRank(r, 8, prefix + "rank" + std::to_string(r) + ".pt.trace.json.gz",
                             late ? "input-bound" : "communication-bound",
                             late ? kStepNs - 2 * kMs : kStepNs + r * 100 * kUs, late ? 0.8 : 0.7,
                             late ? 0.02 : 0.12 + 0.01 * r, late ? 0.1 : 0.05,
                             late ? "The GPU waits for the DataLoader" : "Communication is exposed"));
  }
  return ranks;
}

// The job analysis of EightRanks: 20 all-reduces (2 per step); rank r arrives at t + 10 µs · r,
// rank 5 at t + 2 ms; so the skew is 2 ms and rank 5 causes 2 ms − 70 µs (rank 7's arrival) each.
analyze::JobAnalysis RankFiveLate() {
  analyze::JobAnalysis a;
  for (int i = 0; i < kSteps * kCollectivesPerStep; ++i) {
    analyze::MatchedCollective c;
    c.group = "0";
    c.type = "allreduce";
    c.seq = i;
    c.by_seq = true;
    c.bytes = 64 << 20;
    c.ranks = c.expected_ranks = 8;
    c.last_rank = 5;
    c.first_arrival_ns = kBase + (i / 2) * kStepNs + (i % 2 + 1) * 15 * kMs;
    // One collective is later still: the skew table lists it first.
    c.last_arrival_ns = c.first_arrival_ns + 2 * kMs + (i == 13 ? 1 * kMs : 0);
    c.skew_ns = c.last_arrival_ns - c.first_arrival_ns;
    c.wait_caused_ns = c.skew_ns - 70 * kUs;
    c.duration_ns = 1 * kMs;
    c.end_ns = c.last_arrival_ns + c.duration_ns;
    c.algbw_gbps = static_cast<double>(c.bytes) / 1e6;  // bytes per ms → GB/s
    c.busbw_gbps = c.algbw_gbps * 2 * 7 / 8;
    c.step = i / 2 + 1;
    a.collectives.push_back(c);
  }
  int64_t caused = 0;
  for (const analyze::MatchedCollective& c : a.collectives) caused += c.wait_caused_ns;
  for (int32_t r = 0; r < 8; ++r) {
    analyze::RankWait w;
    w.rank = r;
    w.input = static_cast<size_t>(r);
    w.collectives = a.collectives.size();
    w.times_last = r == 5 ? a.collectives.size() : 0;
    w.wait_caused_ns_per_step = r == 5 ? caused / kSteps : 0;
    int64_t suffered = 0;
    for (const analyze::MatchedCollective& c : a.collectives)
      suffered += r == 5 ? 0 : c.last_arrival_ns - (c.first_arrival_ns + r * 10 * kUs);
    w.wait_suffered_ns_per_step = suffered / kSteps;
    w.waits_most_for = r == 5 ? -1 : 5;
    a.ranks.push_back(w);
    analyze::ClockOffset o;
    o.rank = r;
    o.offset_ns = r == 3 ? 12'300 : (r % 2 ? 200 : -150);
    o.uncertainty_ns = r == 3 ? 800 : 500;
    o.samples = a.collectives.size();
    o.applied = r == 3;
    a.clocks.push_back(o);
  }
  a.reference_rank = 0;
  a.mean_step_ns = kStepNs;
  a.steps = kSteps;
  analyze::Straggler s;
  s.rank = 5;
  s.input = 5;
  s.wait_caused_ns_per_step = caused / kSteps;
  s.share_of_step = static_cast<double>(s.wait_caused_ns_per_step) / static_cast<double>(kStepNs);
  a.straggler = s;
  return a;
}

AnalysedJob OneJob(const std::vector<RankSummary>& ranks, analyze::JobAnalysis a, std::string label = "") {
  AnalysedJob j;
  for (size_t i = 0; i < ranks.size(); ++i) j.group.members.push_back(i);
  j.group.label = std::move(label);
  j.analysis = std::move(a);
  return j;
}

render::Document RankFiveDocument(const JobOptions& options = {}) {
  const std::vector<RankSummary> ranks = EightRanks();
  return BuildJobDocument(ranks, {OneJob(ranks, RankFiveLate(), "job 1 (world size 8, nccl, started 2021-06-08 09:04:49 UTC)")},
                          {}, options);
}

std::string Text(const render::Document& doc) { return render::RenderText(doc, {false, false, 100}); }

// The lines before the first rank section's title: the job summary.
std::vector<std::string> SummaryLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    if (line.rfind("rank ", 0) == 0) break;
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

const render::Section& Job(const render::Document& doc, const std::string& key = "job_1") {
  const render::Section* jobs = doc.FindSection("jobs");
  EXPECT_NE(jobs, nullptr);
  const render::Section* job = jobs ? jobs->FindSection(key) : nullptr;
  EXPECT_NE(job, nullptr) << key;
  static const render::Section kNone;
  return job ? *job : kNone;
}

const render::Field* FieldOf(const render::Section& s, const std::string& row, const std::string& key) {
  const render::Item* item = s.FindItem(row);
  if (!item || !std::holds_alternative<render::Row>(*item)) return nullptr;
  for (const render::Field& f : std::get<render::Row>(*item).fields)
    if (f.key == key) return &f;
  return nullptr;
}

std::vector<std::string> TextShownRanks(const render::Document& doc) {
  std::vector<std::string> keys;
  for (const render::Section& s : doc.sections)
    if (s.key != "jobs" && (s.views & render::kViewText)) keys.push_back(s.key);
  return keys;
}

TEST(JobDocument, RankFiveLateAtEveryCollectiveIsTheStragglerWithItsCost) {
  const render::Document doc = RankFiveDocument();
  const render::Section& job = Job(doc);
  // 20 collectives × (2 ms − 70 µs) + 1 ms more at one of them, over 10 steps: 3.960 ms per step.
  EXPECT_EQ(FieldOf(job, "straggler", "rank")->value, Value::Count(5));
  EXPECT_EQ(FieldOf(job, "straggler", "wait_caused_per_step_ns")->value, Value::Nanos(3'960'000));
  EXPECT_NEAR(FieldOf(job, "straggler", "wait_caused_share")->value.d, 0.099, 1e-12);
  EXPECT_EQ(FieldOf(job, "straggler", "last_arrivals")->value, Value::Count(20));
  EXPECT_EQ(FieldOf(job, "verdict", "verdict")->value, Value::Text("straggler"));
  // The ranks that wait are told whom they wait for.
  EXPECT_EQ(FieldOf(job, "waiting", "waits_most_for")->value, Value::Count(5));
  // The spread: rank 5 has the shortest step and rank 7 the longest; the exposed communication
  // is largest on rank 7 (the old rule would have named it).
  EXPECT_EQ(FieldOf(job, "step_time", "min_rank")->value, Value::Count(5));
  EXPECT_EQ(FieldOf(job, "step_time", "min_ns")->value, Value::Nanos(38 * kMs));
  EXPECT_EQ(FieldOf(job, "step_time", "max_rank")->value, Value::Count(7));
  EXPECT_EQ(FieldOf(job, "step_time", "median_ns")->value, Value::Nanos(40'250'000));
  EXPECT_EQ(FieldOf(job, "exposed_communication", "max_rank")->value, Value::Count(7));
  // Step 7 on rank 7 (the longest step, + 6 ms at step 7).
  EXPECT_EQ(FieldOf(job, "slowest_steps", "slowest_1_step")->value, Value::Count(7));
  EXPECT_EQ(FieldOf(job, "slowest_steps", "slowest_1_rank")->value, Value::Count(7));
  EXPECT_EQ(FieldOf(job, "slowest_steps", "slowest_1_ns")->value, Value::Nanos(40'700'000 + 6 * kMs));
  EXPECT_EQ(FieldOf(job, "clocks", "offsets_applied")->value, Value::Count(1));
  EXPECT_EQ(FieldOf(job, "clocks", "largest_offset_ns")->value.i, 12'300);
  EXPECT_EQ(FieldOf(job, "collectives", "skew_max_ns")->value, Value::Nanos(3 * kMs));
  // The finding, with the saving from the analysis and the rank's own largest finding in the fix.
  const render::Section* findings = job.FindSection("findings");
  ASSERT_NE(findings, nullptr);
  const render::Item* item = findings->FindItem("straggler");
  ASSERT_NE(item, nullptr);
  const render::Finding& f = std::get<render::Finding>(*item);
  EXPECT_EQ(f.saving, Value::Nanos(3'960'000));
  EXPECT_EQ(f.severity, render::Severity::kWarning);  // 9.9 % of the step
  EXPECT_NE(f.title.find("Rank 5 arrives last"), std::string::npos);
  EXPECT_NE(f.fix.find("The GPU waits for the DataLoader"), std::string::npos) << f.fix;
  // The skew table: the widest collective (seq 13, 3 ms) first.
  const render::Table& skew = std::get<render::Table>(*job.FindSection("ranks")->FindItem("collective_skew"));
  ASSERT_EQ(skew.rows.size(), kSkewTableRows);
  EXPECT_EQ(skew.rows[0][2], Value::Count(13));
  EXPECT_EQ(skew.rows[0][5], Value::Nanos(3 * kMs));

  testing::ExpectGolden(render::ToJson(doc), GoldenPath("rank5_late.json"));
  testing::ExpectGolden(Text(doc), GoldenPath("rank5_late.txt"));
}

// The job's answer fits one screen: 8 ranks, width 100, ≤ 25 lines before the first rank.
// 8 of a 16-rank job's traces: the rank named is only the latest of those present, and the
// straggler row says so.
TEST(JobDocument, AStragglerAmongSomeRanksSaysTheOthersMayBeLater) {
  std::vector<RankSummary> ranks = EightRanks();
  for (RankSummary& r : ranks) r.facts.identity.world_size = 16;
  const render::Document doc = BuildJobDocument(ranks, {OneJob(ranks, RankFiveLate())}, {}, {});
  const render::Section& job = Job(doc);
  EXPECT_EQ(FieldOf(job, "straggler", "rank")->value, Value::Count(5));
  const auto& row = std::get<render::Row>(*std::find_if(
      job.items.begin(), job.items.end(), [](const render::Item& i) {
        const auto* r = std::get_if<render::Row>(&i);
        return r && r->key == "straggler";
      }));
  EXPECT_EQ(row.note, "(the latest of the 8 of 16 ranks whose traces are here; the other 8 may "
                      "arrive later still)");
  // All 8 of 8: no such note.
  const render::Document all_ranks = RankFiveDocument();  // kept alive: Job() points into it
  const render::Section& whole = Job(all_ranks);
  for (const render::Item& i : whole.items) {
    if (const auto* r = std::get_if<render::Row>(&i); r && r->key == "straggler") {
      EXPECT_EQ(r->note.find("may arrive later"), std::string::npos);
    }
  }
}

TEST(JobDocument, EightRankSummaryFitsOneScreen) {
  const std::vector<std::string> lines = SummaryLines(Text(RankFiveDocument()));
  EXPECT_LE(lines.size(), 25u);
  EXPECT_GE(lines.size(), 12u);
  for (const std::string& l : lines) EXPECT_LE(render::DisplayWidth(l), 100u) << l;
  std::string summary;
  for (const std::string& l : lines) summary += l + "\n";
  EXPECT_NE(summary.find("straggler   rank 5"), std::string::npos) << summary;
  EXPECT_NE(summary.find("1. Rank 5 arrives last at collectives"), std::string::npos) << summary;
}

// Default detail: the worst three — rank 5 (the wait it causes), then the two slowest steps
// (ranks 7 and 6); the others only in JSON and HTML. `--ranks` chooses; `--ranks all` shows all.
TEST(JobDocument, TextShowsTheWorstRanksOrThoseChosenWithRanks) {
  const render::Document doc = RankFiveDocument();
  EXPECT_EQ(TextShownRanks(doc), (std::vector<std::string>{"rank_5", "rank_6", "rank_7"}));
  size_t html = 0;
  for (const render::Section& s : doc.sections) html += s.key != "jobs" && (s.views & render::kViewHtml);
  EXPECT_EQ(html, 8u);
  const std::string text = Text(doc);
  EXPECT_NE(text.find("rank 5, rank 6 and rank 7 in full below"), std::string::npos) << text;
  EXPECT_EQ(text.find("rank 0 of 8"), std::string::npos);
  // JSON carries every rank.
  const std::string json = render::ToJson(doc);
  for (int r = 0; r < 8; ++r) EXPECT_NE(json.find("\"rank_" + std::to_string(r) + "\": {"), std::string::npos) << r;

  EXPECT_EQ(TextShownRanks(RankFiveDocument({{2, 4}})), (std::vector<std::string>{"rank_2", "rank_4"}));
  EXPECT_NE(Text(RankFiveDocument({{2, 4}})).find("rank 2 and rank 4 in full below (--ranks)"), std::string::npos);
  EXPECT_EQ(TextShownRanks(RankFiveDocument({{-1}})).size(), 8u);
  EXPECT_EQ(Text(RankFiveDocument({{-1}})).find("in full below"), std::string::npos);
  EXPECT_TRUE(TextShownRanks(RankFiveDocument({{9}})).empty());
  EXPECT_NE(Text(RankFiveDocument({{9}})).find("no rank of this job in full below"), std::string::npos);
}

// The last arrival rotates over the ranks and no rank causes over 1 % of the step: nobody is
// named, and the ranks are told what they wait for. The verdict is the ranks' common one.
TEST(JobDocument, WithoutAStragglerNoRankIsNamedAndTheWaitIsSaid) {
  const std::vector<RankSummary> ranks = EightRanks();
  analyze::JobAnalysis a = RankFiveLate();
  a.straggler.reset();
  for (size_t i = 0; i < a.collectives.size(); ++i) a.collectives[i].last_rank = static_cast<int32_t>(i % 8);
  for (analyze::RankWait& w : a.ranks) {
    w.times_last = a.collectives.size() / 8 + (w.rank < 4);
    w.wait_caused_ns_per_step = 150 * kUs;
    w.wait_suffered_ns_per_step = 300 * kUs + w.rank * kUs;
    w.waits_most_for = w.rank == 6 ? 7 : 6;
  }
  const render::Document doc = BuildJobDocument(ranks, {OneJob(ranks, a)}, {}, {});
  const render::Section& job = Job(doc);
  EXPECT_TRUE(FieldOf(job, "straggler", "rank")->value.is_na());
  EXPECT_TRUE(FieldOf(job, "straggler", "wait_caused_per_step_ns")->value.is_na());
  EXPECT_EQ(FieldOf(job, "verdict", "verdict")->value, Value::Text("communication-bound"));
  EXPECT_EQ(FieldOf(job, "verdict", "ranks_with_common_verdict")->value, Value::Count(7));
  EXPECT_EQ(FieldOf(job, "waiting", "waits_most_for")->value, Value::Count(6));
  EXPECT_EQ(FieldOf(job, "waiting", "wait_median_per_step_ns")->value, Value::Nanos(303'500));
  EXPECT_TRUE(job.FindSection("findings")->items.empty());
  // Clocks that cannot be aligned are why nobody is named, when that is the reason.
  analyze::JobAnalysis unaligned = a;
  unaligned.clocks_alignable = false;
  EXPECT_NE(Text(BuildJobDocument(ranks, {OneJob(ranks, unaligned)}, {}, {}))
                .find("straggler   none named: the clocks cannot be aligned"),
            std::string::npos);
  const std::string text = Text(doc);
  EXPECT_NE(text.find("straggler   none: no rank causes the others waits over 1 % of the step"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("Rank "), std::string::npos);
  testing::ExpectGolden(text, GoldenPath("no_straggler.txt"));
}

// Two runs in one folder: two jobs, each with its notes naming the files; the rank ids repeat, so
// the second run's sections are keyed by input; the title counts the jobs.
TEST(JobDocument, RunsOfTwoJobsAreSeparateJobsWithTheirNotes) {
  std::vector<RankSummary> ranks;
  for (int run = 0; run < 2; ++run)
    for (int32_t r = 0; r < 2; ++r)
      ranks.push_back(MakeRank(r, 2, "tb/run" + std::to_string(run) + ".worker" + std::to_string(r) + ".pt.trace.json",
                               run == 0 ? "input-bound" : "precision-bound", run == 0 ? 175 * kMs : 133 * kMs, 0.6, 0.0,
                               0.3, "finding"));
  std::vector<AnalysedJob> jobs(2);
  for (int run = 0; run < 2; ++run) {
    jobs[run].group.members = {static_cast<size_t>(2 * run), static_cast<size_t>(2 * run + 1)};
    jobs[run].group.label = "job " + std::to_string(run + 1);
    jobs[run].group.notes = {"a separate run: tb/run" + std::to_string(run) + ".worker0.pt.trace.json, tb/run" +
                             std::to_string(run) + ".worker1.pt.trace.json started apart from the other job's files"};
  }
  const render::Document doc = BuildJobDocument(ranks, jobs, {Status::InputError("bad.json", 0, "not JSON", "")}, {});
  EXPECT_EQ(doc.title.substr(doc.title.find("·")), "· 4 ranks in 2 jobs");
  EXPECT_NE(doc.FindSection("jobs")->FindSection("job_2"), nullptr);
  std::vector<std::string> keys;
  for (const render::Section& s : doc.sections) keys.push_back(s.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"jobs", "rank_0", "rank_1", "input_2", "input_3", "failures"}));
  const render::Table& t = std::get<render::Table>(*Job(doc, "job_2").FindSection("ranks")->FindItem("ranks"));
  EXPECT_EQ(t.rows[0][1], Value::Text("input_2"));
  const std::string text = Text(doc);
  EXPECT_NE(text.find("note        a separate run: tb/run1.worker0.pt.trace.json"), std::string::npos) << text;
  EXPECT_NE(text.find("straggler   none named: no collective was matched across ranks"), std::string::npos);
  testing::ExpectGolden(render::ToJson(doc), GoldenPath("two_runs.json"));
  testing::ExpectGolden(text, GoldenPath("two_runs.txt"));
}

// One rank prints the rank's report exactly: its section and nothing else in text; the job
// section is in JSON only, after the rank.
TEST(JobDocument, OneRankPrintsTheSingleRankReport) {
  const std::vector<RankSummary> one = {EightRanks()[5]};
  const render::Document doc = BuildJobDocument(one, {OneJob(one, analyze::JobAnalysis())}, {}, {{2}});
  render::Document alone;
  alone.schema = "gpuscope.report";
  alone.title = doc.title;
  alone.sections.push_back(one[0].section);
  EXPECT_EQ(render::RenderText(doc, {}), render::RenderText(alone, {}));
  ASSERT_EQ(doc.sections.size(), 2u);
  EXPECT_EQ(doc.sections[0], one[0].section);
  EXPECT_EQ(doc.sections[1].key, "jobs");
  EXPECT_EQ(doc.sections[1].views, 0);
  EXPECT_NE(render::ToJson(doc).find("\"views\": \"none\""), std::string::npos);
}

// Everything the document says reads back from its JSON.
TEST(JobDocument, JsonReadsBackAsWritten) {
  for (const render::Document& doc : {RankFiveDocument(), RankFiveDocument({{-1}})}) {
    Result<render::Document> back = render::FromJson(render::ToJson(doc), "job.json");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, render::AsReadBack(doc));
    EXPECT_EQ(Text(*back), Text(doc));
  }
}

// The heatmap: each rank's bins put on one axis, shifted by the offsets that were applied
// (rank 3 by 12.3 µs); a bin's busy time is spread over the cells it covers; a rank without a
// timeline is a row of cells without data.
TEST(JobDocument, HeatmapPutsEveryRanksBusyOnOneTimeAxis) {
  std::vector<RankSummary> ranks = EightRanks();
  ranks[1].facts.busy = model::BusyTimeline();
  const render::Document doc = BuildJobDocument(ranks, {OneJob(ranks, RankFiveLate())}, {}, {});
  const render::Chart& c = std::get<render::Chart>(*Job(doc).FindSection("ranks")->FindItem("busy_heatmap"));
  EXPECT_EQ(c.kind, render::Chart::Kind::kHeatmap);
  ASSERT_EQ(c.series.size(), 8u);
  // The axis runs from rank 0's first bin to the end of the longest timeline (rank 7: 100 bins
  // of 4.07 ms), in equal cells no finer than the finest bin (rank 5's 3.8 ms): 108, not 120.
  ASSERT_EQ(c.x.size(), 108u);
  EXPECT_EQ(c.reference_lines[0].value.i, kBase);
  // A start that is not a multiple of 1,024 ns moves down to one, so it is exact in JSON.
  std::vector<RankSummary> later = ranks;
  for (RankSummary& r : later) r.facts.busy.first_bin_start_ns += 700;
  const render::Document moved = BuildJobDocument(later, {OneJob(later, RankFiveLate())}, {}, {});
  const render::Chart& m = std::get<render::Chart>(*Job(moved).FindSection("ranks")->FindItem("busy_heatmap"));
  EXPECT_EQ(m.reference_lines[0].value.i, kBase);
  EXPECT_EQ(static_cast<int64_t>(static_cast<double>(kBase)), kBase);
  const int64_t cell = c.reference_lines[1].value.i;
  EXPECT_EQ(cell, (100 * 4'070'000 + 107) / 108);
  EXPECT_EQ(c.x[1], static_cast<double>(cell));
  for (double v : c.series[1].values) EXPECT_TRUE(std::isnan(v));
  // Rank 5 (late, never idle): 0.8 busy throughout its 3.8 ms × 100 bins, then no data.
  const std::vector<double>& late = c.series[5].values;
  EXPECT_NEAR(late[0], 0.8, 1e-9);
  EXPECT_NEAR(late[100], 0.8, 1e-9);
  EXPECT_TRUE(std::isnan(late.back()));
  // Rank 0: 0.7 busy in 9 of 10 bins: a cell inside a busy stretch is 0.7, one that covers a
  // waiting bin less; the mean over its span is 0.63.
  const std::vector<double>& r0 = c.series[0].values;
  EXPECT_NEAR(r0[0], 0.7, 1e-9);
  double sum = 0;
  size_t n = 0;
  for (double v : r0)
    if (!std::isnan(v)) sum += v, ++n;
  EXPECT_NEAR(sum / static_cast<double>(n), 0.63, 0.01);
  // Rank 3 starts 12.3 µs later: its first cell is covered from then on only, at the same share.
  EXPECT_NEAR(c.series[3].values[0], 0.7, 1e-9);
}

// An analysis that does not line up with the group (fewer rows, foreign ranks, indices out of
// range, a rank in two groups) gives a document, never a crash, and names no row it cannot place.
TEST(JobDocument, AnAnalysisThatDoesNotMatchItsGroupIsNotMisread) {
  const std::vector<RankSummary> ranks = EightRanks();
  analyze::JobAnalysis a = RankFiveLate();
  a.ranks.resize(3);  // ranks 0-2 only
  a.clocks.erase(a.clocks.begin());
  AnalysedJob j = OneJob(ranks, a);
  j.group.members.push_back(42);  // out of range
  j.group.members.push_back(2);   // twice
  AnalysedJob k = OneJob(ranks, analyze::JobAnalysis());
  const render::Document doc = BuildJobDocument(ranks, {j, k}, {}, {});
  const render::Table& t = std::get<render::Table>(*Job(doc).FindSection("ranks")->FindItem("ranks"));
  ASSERT_EQ(t.rows.size(), 8u);
  EXPECT_EQ(t.rows[2][7], Value::Count(0));  // rank 2's own row
  EXPECT_TRUE(t.rows[5][7].is_na());         // rank 5 has no row: n/a, not another rank's
  EXPECT_EQ(t.rows[1][12].i, 200);           // clocks found by rank although shifted
  EXPECT_EQ(doc.FindSection("jobs")->FindSection("job_2"), nullptr);  // every rank already placed
  EXPECT_EQ(doc.sections.size(), 9u);
}

// A damaged summary file can hold any numbers: times at the ends of int64, a bin of 1 ns over a
// span of centuries, offsets that overflow. The document is built and renders (UBSan in the
// asan build checks that no arithmetic overflows); the timelines that do not fit are left out.
TEST(JobDocument, ExtremeNumbersFromADamagedSummaryDoNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  std::vector<RankSummary> ranks = EightRanks();
  ranks[0].facts.busy.first_bin_start_ns = kMax - 5;
  ranks[1].facts.busy.first_bin_start_ns = kMin;
  ranks[2].facts.busy.bin_ns = kMax;
  ranks[3].facts.busy.busy_ns = {kMin, kMax};
  ranks[4].facts.steps.push_back({99, kMin, kMax, true});
  ranks[5].facts.mean_step_ns = kMax;
  ranks[6].facts.span_ns = kMin;
  ranks[7].facts.busy.bin_ns = 1;
  analyze::JobAnalysis a = RankFiveLate();
  a.clocks[3].offset_ns = kMin;
  a.clocks[3].applied = false;
  a.clocks[4].offset_ns = kMax;
  a.clocks[4].applied = true;
  a.collectives[0].skew_ns = kMin;
  a.collectives[1].bytes = kMin;
  a.mean_step_ns = 0;
  const render::Document doc = BuildJobDocument(ranks, {OneJob(ranks, a)}, {}, {});
  EXPECT_FALSE(Text(doc).empty());
  EXPECT_FALSE(render::ToJson(doc).empty());
  // Rank 1 starts at INT64_MIN, over 2^63 ns before the others: no heatmap rather than a wrong
  // one (rank 0's end does not fit in int64: left out).
  EXPECT_EQ(Job(doc).FindSection("ranks")->FindItem("busy_heatmap"), nullptr);
  ranks[0].facts.busy.first_bin_start_ns = ranks[1].facts.busy.first_bin_start_ns = kBase;
  const render::Document fixed = BuildJobDocument(ranks, {OneJob(ranks, a)}, {}, {});
  const render::Item* heatmap = Job(fixed).FindSection("ranks")->FindItem("busy_heatmap");
  ASSERT_NE(heatmap, nullptr);
  // Rank 2's bins (INT64_MAX ns each) and rank 4 (its offset overflows) are left out; rank 3's
  // impossible busy values are clamped to its bins.
  EXPECT_TRUE(std::isnan(std::get<render::Chart>(*heatmap).series[2].values[0]));
  EXPECT_TRUE(std::isnan(std::get<render::Chart>(*heatmap).series[4].values[0]));
  EXPECT_FALSE(std::isnan(std::get<render::Chart>(*heatmap).series[3].values[0]));
}

// End to end on generated traces: 8 coupled ranks, rank 5 reaching every collective 2 ms late,
// clocks off by up to ±20 ms. The analyze document names rank 5 with the cost AnalyzeJob measured,
// names no rank that only waits, opens with a summary of at most 25 lines at width 100, shows
// rank 5 in full, and `--ranks` (JobOptions) picks other ranks.
TEST(JobDocument, GeneratedJobWithALateRankEndToEnd) {
  const std::string dir = testing::TempPath("job_late_rank");
  std::filesystem::remove_all(dir);
  SynthOptions o;
  o.ranks = 8;
  o.steps = 5;
  o.layers = 2;
  o.late_rank = 5;
  o.late_ns = 2 * kMs;
  o.clock_offset_max_ns = 20 * kMs;
  ASSERT_TRUE(WriteSynthTraces(o, dir).ok());
  auto loaded = LoadInputs(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Report report = BuildReport(loaded->traces, {});
  std::vector<model::RankFacts> facts;
  for (size_t i = 0; i < report.ranks.size(); ++i) facts.push_back(SummarizeRank(report.ranks[i], i).facts);
  std::vector<const model::RankFacts*> ptrs;
  for (const model::RankFacts& f : facts) ptrs.push_back(&f);
  const analyze::JobAnalysis analysis = analyze::AnalyzeJob(ptrs);
  ASSERT_TRUE(analysis.straggler.has_value());

  const render::Document doc = BuildDocument(report);
  const render::Section& job = Job(doc);
  EXPECT_EQ(FieldOf(job, "straggler", "rank")->value, Value::Count(5));
  EXPECT_EQ(FieldOf(job, "straggler", "wait_caused_per_step_ns")->value,
            Value::Nanos(analysis.straggler->wait_caused_ns_per_step));
  EXPECT_EQ(FieldOf(job, "waiting", "waits_most_for")->value, Value::Count(5));
  const render::Table& ranks = std::get<render::Table>(*job.FindSection("ranks")->FindItem("ranks"));
  ASSERT_EQ(ranks.rows.size(), 8u);
  const std::string text = Text(doc);
  const std::vector<std::string> lines = SummaryLines(text);
  EXPECT_LE(lines.size(), 25u) << text.substr(0, 3000);
  EXPECT_NE(text.find("1. Rank 5 arrives last at collectives"), std::string::npos);
  for (int r = 0; r < 8; ++r) {
    if (r == 5) continue;
    EXPECT_EQ(text.find("Rank " + std::to_string(r) + " arrives last"), std::string::npos) << r;
  }
  const std::vector<std::string> shown = TextShownRanks(doc);
  EXPECT_EQ(shown.size(), kDefaultDetailRanks);
  EXPECT_NE(std::find(shown.begin(), shown.end(), "rank_5"), shown.end());
  EXPECT_EQ(TextShownRanks(BuildDocument(report, {{0, 7}})), (std::vector<std::string>{"rank_0", "rank_7"}));
  // The heatmap has every rank's row, with data.
  const render::Chart& heat = std::get<render::Chart>(*job.FindSection("ranks")->FindItem("busy_heatmap"));
  ASSERT_EQ(heat.series.size(), 8u);
  for (const render::Series& row : heat.series)
    EXPECT_TRUE(std::any_of(row.values.begin(), row.values.end(), [](double v) { return v > 0; })) << row.key;
  std::filesystem::remove_all(dir);
}

TEST(JobAdvice, TheStragglerFindingCarriesTheAnalysisSavingAndTheRanksOwnFinding) {
  const analyze::JobAnalysis a = RankFiveLate();
  const std::optional<advise::Finding> f = advise::AdviseJob(a, {"input-bound", "The GPU waits for the DataLoader"});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->id, "straggler");
  EXPECT_EQ(f->estimated_saving_ns_per_step, 3'960'000);
  EXPECT_DOUBLE_EQ(f->estimated_saving_share, 0.099);
  EXPECT_EQ(f->severity, render::Severity::kWarning);
  EXPECT_DOUBLE_EQ(f->confidence, advise::kStragglerConfidence);
  auto evidence = [&](const std::string& key) {
    for (const render::Field& e : f->evidence)
      if (e.key == key) return e.value;
    return Value::Na();
  };
  EXPECT_EQ(evidence("last_arrival_count"), Value::Count(20));
  EXPECT_EQ(evidence("collectives_count"), Value::Count(20));
  EXPECT_EQ(evidence("rank_verdict"), Value::Text("input-bound"));
  EXPECT_NE(f->fix.find("rank 5 does before the collectives"), std::string::npos);
  EXPECT_NE(f->fix.find("(its largest finding: The GPU waits for the DataLoader)"), std::string::npos);
  analyze::JobAnalysis none = a;
  none.straggler.reset();
  EXPECT_FALSE(advise::AdviseJob(none, {}).has_value());
  // 25 % of the step is critical.
  none = a;
  none.straggler->wait_caused_ns_per_step = 10 * kMs;
  EXPECT_EQ(advise::AdviseJob(none, {})->severity, render::Severity::kCritical);
}

}  // namespace
}  // namespace gpuscope::report
