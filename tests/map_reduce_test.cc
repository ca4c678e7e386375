// The job pipeline (src/job/) and its commands: map holds at most the limit of rank models,
// summaries come in report order, `reduce` of map's files prints exactly what `analyze FOLDER`
// prints, and summaries are read wherever traces are.
#include "job/map_reduce.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gpuscope/synth.h"
#include "ingest/inputs.h"
#include "store/summary_file.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using testing::ReadFile;
using testing::RunGpuscope;
using testing::ScopedTempDir;
using testing::WriteFile;

// `n` small synthetic ranks in `dir` (rank<R>.pt.trace.json), with a straggler so that ranks
// differ.
void WriteRanks(const std::string& dir, int n, int steps = 3) {
  SynthOptions o;
  o.ranks = n;
  o.steps = steps;
  o.layers = 2;
  o.straggler_rank = n - 1;
  auto truths = WriteSynthTraces(o, dir);
  ASSERT_TRUE(truths.ok()) << truths.status().message();
}

std::vector<std::string> Files(const std::string& dir, int n) {
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.push_back(dir + "/rank" + std::to_string(r) + ".pt.trace.json");
  return out;
}

std::vector<std::string> Keys(const std::vector<report::RankSummary>& ranks) {
  std::vector<std::string> keys;
  for (const auto& r : ranks) keys.push_back(r.section.key);
  return keys;
}

// The invariant behind bounded memory: never more rank models alive than the limit, whatever the
// pool's size (a pool of 4 would run 4 traces at once without it).
TEST(MapReduce, MapTracesNeverHoldsMoreRankModelsThanTheLimit) {
  ScopedTempDir dir;
  WriteRanks(dir.path(), 8);
  ThreadPool pool(4);
  for (int limit : {1, 2, 3}) {
    SCOPED_TRACE(limit);
    job::MapOptions options;
    options.max_ranks_in_memory = limit;
    job::ResetRankModelPeak();
    ASSERT_EQ(job::RankModelsAlive().alive, 0);
    const job::Mapped mapped = job::MapTraces(Files(dir.path(), 8), options, pool);
    EXPECT_EQ(mapped.ranks.size(), 8u);
    EXPECT_TRUE(mapped.failures.empty());
    const job::RankModelCount count = job::RankModelsAlive();
    EXPECT_EQ(count.alive, 0);  // every model freed
    EXPECT_GE(count.peak, 1);
    EXPECT_LE(count.peak, limit);
  }
}

TEST(MapReduce, DefaultLimitIsOneRankPerTwoCores) {
  ScopedTempDir dir;
  WriteRanks(dir.path(), 6);
  ThreadPool pool(4);
  job::ResetRankModelPeak();
  const job::Mapped mapped = job::MapTraces(Files(dir.path(), 6), {}, pool);
  EXPECT_EQ(mapped.ranks.size(), 6u);
  EXPECT_LE(job::RankModelsAlive().peak, 2);
}

TEST(MapReduce, SummariesSortedByRankThenPathNotByFileName) {
  ScopedTempDir dir;
  WriteRanks(dir.path(), 12);
  ThreadPool pool(2);
  // Listed by name, rank10 and rank11 come before rank2.
  auto mapped = job::ReadSummaries({dir.path()}, {}, pool);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  ASSERT_EQ(mapped->ranks.size(), 12u);
  for (int r = 0; r < 12; ++r) {
    EXPECT_EQ(mapped->ranks[r].section.key, "rank_" + std::to_string(r));
    EXPECT_EQ(mapped->ranks[r].facts.identity.rank, r);
    EXPECT_EQ(mapped->ranks[r].facts.identity.path, Files(dir.path(), 12)[r]);
  }
  EXPECT_EQ(mapped->stats.traces, 12u);
}

TEST(MapReduce, RanksWithoutIdAreKeyedByTheirPlaceInTheJob) {
  ScopedTempDir dir;
  // Rank ids come from distributedInfo or the file name; these have neither.
  const std::string trace =
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]})";
  WriteFile(dir.File("b.json"), trace);
  WriteFile(dir.File("a.json"), trace);
  WriteRanks(dir.path(), 1);
  ThreadPool pool(2);
  auto mapped = job::ReadSummaries({dir.path()}, {}, pool);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  EXPECT_EQ(Keys(mapped->ranks), (std::vector<std::string>{"rank_0", "input_1", "input_2"}));
  EXPECT_EQ(mapped->ranks[1].facts.identity.path, dir.File("a.json"));
  EXPECT_EQ(mapped->ranks[2].facts.identity.path, dir.File("b.json"));
}

TEST(MapReduce, BadTraceIsCollectedAndTheOthersMapped) {
  ScopedTempDir dir;
  WriteRanks(dir.path(), 3);
  WriteFile(dir.File("rank9.pt.trace.json"), "{\"traceEvents\": [");
  ThreadPool pool(2);
  auto mapped = job::ReadSummaries({dir.path()}, {}, pool);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  EXPECT_EQ(mapped->ranks.size(), 3u);
  ASSERT_EQ(mapped->failures.size(), 1u);
  EXPECT_EQ(mapped->failures[0].message().rfind(dir.File("rank9.pt.trace.json") + ": ", 0), 0u)
      << mapped->failures[0].message();
  // Nothing readable at all: the error itself.
  ScopedTempDir bad;
  WriteFile(bad.File("x.json"), "{");
  WriteFile(bad.File("y.json"), "[");
  auto none = job::ReadSummaries({bad.path()}, {}, pool);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(
                bad.path() +
                ": none of the 2 trace files could be read; first error: " + bad.File("x.json")),
            std::string::npos)
      << none.status().message();
}

TEST(MapReduce, SummaryFilesReadBackAsMapped) {
  ScopedTempDir dir, out;
  WriteRanks(dir.path(), 3);
  ThreadPool pool(2);
  const job::Mapped mapped = job::MapTraces(Files(dir.path(), 3), {}, pool);
  ASSERT_EQ(mapped.ranks.size(), 3u);
  // One file per rank in a folder, and one file holding them all: both read back equal.
  for (size_t r = 0; r < 3; ++r)
    ASSERT_TRUE(
        store::WriteSummaryFile(out.File("r" + std::to_string(r) + ".db"), {mapped.ranks[2 - r]})
            .ok());
  ASSERT_TRUE(store::WriteSummaryFile(dir.File("all.gpuscope.db"), mapped.ranks).ok());
  auto folder = job::ReadSummaries({out.path()}, {}, pool);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  EXPECT_EQ(folder->ranks, mapped.ranks);
  EXPECT_EQ(folder->stats.traces, 0u);  // nothing mapped
  auto file = job::ReadSummaries({dir.File("all.gpuscope.db")}, {}, pool);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->ranks, mapped.ranks);
  EXPECT_TRUE(ingest::IsSummaryFile(dir.File("all.gpuscope.db")));
  EXPECT_FALSE(ingest::IsSummaryFile(dir.File("rank0.pt.trace.json")));
  EXPECT_FALSE(ingest::IsSummaryFile(dir.path()));
}

TEST(MapReduce, SinkGetsEverySummaryAndMappedKeepsNone) {
  ScopedTempDir dir;
  WriteRanks(dir.path(), 4);
  ThreadPool pool(2);
  job::MapOptions options;
  std::vector<int> seen(4, 0);
  options.sink = [&](size_t i, report::RankSummary&& s) {
    ++seen[i];
    return s.facts.identity.rank == 2 ? Status::Error(StatusCode::kIoError, "disk full")
                                      : Status::Ok();
  };
  size_t last_done = 0;
  options.ranks_done = [&](size_t done, size_t total) {
    EXPECT_EQ(done, last_done + 1);
    EXPECT_EQ(total, 4u);
    last_done = done;
  };
  const job::Mapped mapped = job::MapTraces(Files(dir.path(), 4), options, pool);
  EXPECT_EQ(seen, (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(last_done, 4u);
  EXPECT_TRUE(mapped.ranks.empty());
  ASSERT_EQ(mapped.failures.size(), 1u);
  EXPECT_EQ(mapped.failures[0].message(), "disk full");
}

// ---- the commands --------------------------------------------------------------------------

void ExpectSameOutput(const std::string& analyze_args, const std::string& reduce_args) {
  const auto a = RunGpuscope(analyze_args);
  const auto r = RunGpuscope(reduce_args);
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_TRUE(a.out == r.out) << "`gpuscope " << analyze_args << "` and `gpuscope " << reduce_args
                              << "` differ";
}

TEST(JobCli, ReduceOfMapOutputsIsAnalyzeOfTheFolderOnFourSyntheticRanks) {
  ScopedTempDir dir, out;
  WriteRanks(dir.path(), 4, 5);
  auto m = RunGpuscope("map " + dir.path() + " -o " + out.path() + "/");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(std::filesystem::exists(out.File("rank" + std::to_string(r) + ".gpuscope.db")))
        << m.out;
  EXPECT_NE(m.out.find("mapped 4 of 4 traces"), std::string::npos) << m.out;
  ExpectSameOutput("analyze --json " + dir.path(), "reduce --json " + out.path());
  ExpectSameOutput("analyze --color never -v " + dir.path(),
                   "reduce --color never -v " + out.path());
  // Map's files one by one (a Slurm array's outputs), and analyze of the summary folder.
  std::string files;
  for (int r = 3; r >= 0; --r) files += " " + out.File("rank" + std::to_string(r) + ".gpuscope.db");
  ExpectSameOutput("analyze --json " + dir.path(), "reduce --json" + files);
  ExpectSameOutput("analyze --json " + dir.path(), "analyze --json " + out.path());
  // All in one file.
  ASSERT_EQ(RunGpuscope("map " + dir.path() + " -o " + out.File("job.db")).exit_code, 0);
  ExpectSameOutput("analyze --json " + dir.path(), "reduce --json " + out.File("job.db"));
}

TEST(JobCli, ReduceOfMapOutputsIsAnalyzeOfTheFolderOnTbPluginTraces) {
  if (!testing::HaveShared())
    GTEST_SKIP() << "shared traces not found at " << testing::SharedDir()
                 << " (set GPUSCOPE_SHARED_DIR to a shared/ folder to run this test)";
  const std::string traces = testing::SharedDir() + "/traces/kineto_tb_plugin";
  ScopedTempDir out;
  auto m = RunGpuscope("map " + traces + " -o " + out.path() + "/");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.out.find("mapped 4 of 4 traces"), std::string::npos) << m.out;
  ExpectSameOutput("analyze --json " + traces, "reduce --json " + out.path());
  ExpectSameOutput("analyze --color never " + traces, "reduce --color never " + out.path());
}

// `--monitor` applies to each rank of a folder, and a map with it reduces to the same report.
// A summary file is an input: the labels of its section (column labels included) reach the
// terminal only through the sanitiser, never as ESC, OSC or BEL (issue 36 item 5).
TEST(JobCli, ReducePrintsNoControlSequenceFromASummary) {
  testing::ScopedTempDir out;
  const std::string db = out.File("s.db");
  ASSERT_EQ(RunGpuscope("map " + std::string(GPUSCOPE_SOURCE_DIR) +
                        "/examples/train_input_bound.pt.trace.json.gz -o " + db)
                .exit_code,
            0);
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  // The JSON text \u001b]0;owned\u0007 in a column label and a row label.
  const char* sql =
      "UPDATE ranks SET section_json = replace(replace(section_json, '\"label\":\"count\"', "
      "'\"label\":\"co\\u001b]0;owned\\u0007\\u202eunt\"'), '\"label\":\"verdict\"', "
      "'\"label\":\"\\u001b[2Jverdict\"');";
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_close(h);
  const auto r = RunGpuscope("reduce -v " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("co\xEF\xBF\xBD]0;owned\xEF\xBF\xBD\xEF\xBF\xBDunt"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find('\x07'), std::string::npos);
  EXPECT_EQ(r.out.find("\xE2\x80\xAE"), std::string::npos);
}

TEST(JobCli, MonitorBesideEveryRankOfAFolderAndThroughMapReduce) {
  ScopedTempDir dir, out;
  WriteRanks(dir.path(), 2);
  const std::string recording =
      std::string(GPUSCOPE_SOURCE_DIR) + "/fuzz/seeds/monitor/recording.jsonl";
  const auto a = RunGpuscope("analyze --json " + dir.path() + " --monitor " + recording);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(a.out).get(doc), simdjson::SUCCESS);
  for (const char* rank : {"rank_0", "rank_1"}) {
    simdjson::dom::element monitor;
    EXPECT_EQ(doc["sections"][rank]["sections"]["monitor"].get(monitor), simdjson::SUCCESS) << rank;
  }
  ASSERT_EQ(RunGpuscope("map " + dir.path() + " --monitor " + recording + " -o " + out.path() + "/")
                .exit_code,
            0);
  const auto r = RunGpuscope("reduce --json " + out.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(a.out == r.out);
  // Summaries were analysed when mapped: a monitor given to their reduce is said to do nothing.
  const auto again = RunGpuscope("analyze --json " + out.path() + " --monitor " + recording);
  EXPECT_NE(again.err.find("note: --monitor applies to traces"), std::string::npos) << again.err;
}

TEST(JobCli, MapNamesEachSummaryAfterItsTrace) {
  ScopedTempDir dir, out;
  WriteRanks(dir.path(), 1);
  std::filesystem::rename(dir.File("rank0.pt.trace.json"), dir.File("rank7.json"));
  auto m = RunGpuscope("map " + dir.File("rank7.json") + " -o " + out.File("sub") + "/");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_TRUE(std::filesystem::exists(out.File("sub/rank7.gpuscope.db"))) << m.out;
  EXPECT_NE(m.out.find("wrote " + out.File("sub/rank7.gpuscope.db")), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("summary: "), std::string::npos) << m.out;
  // An existing folder needs no slash.
  ASSERT_EQ(RunGpuscope("map " + dir.File("rank7.json") + " -o " + out.path()).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(out.File("rank7.gpuscope.db")));
}

TEST(JobCli, MapRefusesTwoTracesOfOneNameAndSummariesAsInput) {
  ScopedTempDir a, b, out;
  WriteRanks(a.path(), 1);
  WriteRanks(b.path(), 1);
  auto m = RunGpuscope("map " + a.File("rank0.pt.trace.json") + " " +
                       b.File("rank0.pt.trace.json") + " -o " + out.path() + "/");
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("would both be summarised to " + out.File("rank0.gpuscope.db")),
            std::string::npos)
      << m.err;
  EXPECT_FALSE(std::filesystem::exists(out.File("rank0.gpuscope.db")));
  ASSERT_EQ(
      RunGpuscope("map " + a.File("rank0.pt.trace.json") + " -o " + out.File("s.db")).exit_code, 0);
  m = RunGpuscope("map " + out.File("s.db") + " -o " + out.File("t.db"));
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("is already a gpuscope summary"), std::string::npos) << m.err;
}

// An SQLite database that is neither a summary nor an Nsight Systems export was called "already a
// gpuscope summary" by map (with a hint to reduce it); map now says what analyze and reduce say.
TEST(JobCli, MapOfAnUnrelatedSqliteDatabaseSaysWhatAnalyzeAndReduceSay) {
  ScopedTempDir dir;
  const std::string db = dir.File("unrelated.sqlite");
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(h, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(h);
  const std::string want = "gpuscope: error: " + db +
                           ": an SQLite database, but not a gpuscope summary: it has no table "
                           "`meta` (its tables: t) (hint: of SQLite files gpuscope reads the "
                           "summaries `gpuscope map` writes and Nsight Systems exports (nsys "
                           "export --type sqlite))\n";
  for (const std::string& args :
       {"map " + db + " -o " + dir.File("out") + "/", "analyze " + db, "reduce " + db}) {
    const auto r = RunGpuscope(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err, want) << args;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("out")));
}

TEST(JobCli, MapOfABadTraceExitsTwoAndWritesTheOthers) {
  ScopedTempDir dir, out;
  WriteRanks(dir.path(), 2);
  WriteFile(dir.File("rank5.json"), "{\"traceEvents\": [");
  auto m = RunGpuscope("map " + dir.path() + " -o " + out.path() + "/");
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("gpuscope: error: " + dir.File("rank5.json")), std::string::npos) << m.err;
  EXPECT_NE(m.out.find("mapped 2 of 3 traces"), std::string::npos) << m.out;
  EXPECT_TRUE(std::filesystem::exists(out.File("rank0.gpuscope.db")));
  EXPECT_TRUE(std::filesystem::exists(out.File("rank1.gpuscope.db")));
  EXPECT_FALSE(std::filesystem::exists(out.File("rank5.gpuscope.db")));
}

TEST(JobCli, ReduceOfWrongFilesIsExitTwoNamingThem) {
  ScopedTempDir dir;
  WriteFile(dir.File("empty.db"), "");
  auto r = RunGpuscope("reduce " + dir.File("empty.db"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gpuscope: error: " + dir.File("empty.db")), std::string::npos) << r.err;
  auto bytes = store::SerializeSummaries({});
  ASSERT_TRUE(bytes.ok());
  WriteFile(dir.File("half.db"), bytes->substr(0, bytes->size() / 2) + std::string(100, 'x'));
  r = RunGpuscope("reduce " + dir.File("half.db"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gpuscope: error: " + dir.File("half.db") + ": "), std::string::npos)
      << r.err;
  r = RunGpuscope("reduce " + dir.File("nothing"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such file or folder"), std::string::npos) << r.err;
  r = RunGpuscope("reduce --ranks 1,x " + dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ranks \"1,x\" is not a list of ranks"), std::string::npos) << r.err;
}

TEST(JobCli, ReduceWithOneBadSummaryReportsItAndTheRest) {
  ScopedTempDir dir, out;
  WriteRanks(dir.path(), 2);
  ASSERT_EQ(RunGpuscope("map " + dir.path() + " -o " + out.path() + "/").exit_code, 0);
  WriteFile(out.File("rank9.gpuscope.db"),
            std::string("SQLite format 3\0", 16) + std::string(2000, '\1'));
  auto r = RunGpuscope("reduce --json " + out.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.out.find("\"rank_1\""), std::string::npos);
  EXPECT_NE(r.out.find("\"failures\""), std::string::npos);
  EXPECT_NE(r.err.find(out.File("rank9.gpuscope.db") + ": "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuscope
