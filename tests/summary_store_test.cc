// Summary files (src/store/, docs/summary-format.md): every field comes back as written, the
// section as the JSON reads it back, writes are atomic, and every kind of wrong file is a clear
// error naming it.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gpuscope/synth.h"
#include "job/map_reduce.h"
#include "render/json.h"
#include "store/summary_file.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using testing::ReadFile;
using testing::ScopedTempDir;
using testing::WriteFile;

// A summary with every field set to a value its type's default is not, and integers beyond
// 2^53 (unix ns) in both the facts and the section.
report::RankSummary FullSummary(int32_t rank) {
  report::RankSummary s;
  model::RankFacts& f = s.facts;
  model::RankIdentity& id = f.identity;
  id.path = "traces/rank" + std::to_string(rank) + ".pt.trace.json.gz";
  id.rank = rank;
  id.rank_source = RankSource::kDistributedInfo;
  id.world_size = 8;
  id.backend = "nccl";
  id.process_groups = {"0 default_pg [0, 1, 2, 3, 4, 5, 6, 7]", "1 TP [0, 1]"};
  id.base_time_ns = int64_t{1712195495505582988};
  id.absolute_clock = true;
  id.trace_start_ns = int64_t{1712195495505582988} + rank;
  id.trace_end_ns = id.trace_start_ns + 3'000'000'123;
  id.device_name = "NVIDIA H100 80GB HBM3";
  id.hostname = "node-" + std::to_string(rank / 4);
  f.mean_step_ns = 123'456'789;
  f.steady_steps = 7;
  f.span_ns = 987'654'321;
  f.compute_ns = 600'000'001;
  f.exposed_communication_ns = 50'000'003;
  f.idle_ns = 40'000'005;
  f.verdict = "communication-bound";
  f.replayed_step_ns = 120'000'001;
  f.fixes = {{"comm_overlap", 40'000'003}, {"bf16", 7'000'011}};
  for (int32_t k = 0; k < 3; ++k) {
    const int64_t step_ns = 1'000'000'007;
    f.steps.push_back(
        {10 + k, id.trace_start_ns + k * step_ns, id.trace_start_ns + (k + 1) * step_ns, k > 0});
  }
  const char* types[] = {"allreduce", "allgather", "reducescatter"};
  for (int k = 0; k < 7; ++k) {
    model::CollectiveRecord c;
    c.group = k % 2 ? "1" : "0";
    c.group_desc = k % 2 ? "TP" : "default_pg";
    c.group_ranks = k % 2 ? "[0, 1]" : "[0, 1, 2, 3, 4, 5, 6, 7]";
    c.group_size = k % 2 ? 2 : 8;
    c.seq = k % 3 == 0 ? -1 : 100 + k;
    c.ordinal = k / 2;
    c.type = types[k % 3];
    c.bytes = k == 4 ? -1 : int64_t{1} << (20 + k);
    c.dtype = k % 2 ? "BFloat16" : "";
    c.start_ns = id.trace_start_ns + int64_t{k} * 333'333;
    c.end_ns = c.start_ns + 100'000 + k;
    c.step = k < 5 ? 10 + k / 2 : -1;
    f.collectives.push_back(c);
  }
  f.busy.first_bin_start_ns = id.trace_start_ns;
  f.busy.bin_ns = 5'859'375;
  for (int b = 0; b < 512; ++b) f.busy.busy_ns.push_back((b * 7919) % 5'859'376);

  s.section.key = "rank_" + std::to_string(rank);
  s.section.title = "rank " + std::to_string(rank) + " of 8 (from distributedInfo)  " + id.path;
  s.section.AddRow("identity", "rank").fields = {
      render::F("rank", "rank", render::Value::Count(rank)),
      render::F("base_time_ns", "base", render::Value::Nanos(int64_t{1712195495505582988})),
      render::F("path", "file", render::Value::Text(id.path))};
  render::Section& sub = s.section.AddSection("steps", "step time");
  sub.text_inline = true;
  render::Table& t =
      sub.AddTable("per_step", "per step", {{"step", "step"}, {"start_ns", "start"}});
  t.rows.push_back({render::Value::Count(10), render::Value::Nanos(int64_t{1712195495505582989})});
  return s;
}

// `s` as a summary file gives it back: the section as JSON reads it back.
report::RankSummary AsRead(report::RankSummary s) {
  render::Document doc;
  doc.sections.push_back(std::move(s.section));
  s.section = render::AsReadBack(std::move(doc)).sections.front();
  return s;
}

TEST(SummaryFile, EveryFieldComesBackAsWritten) {
  ScopedTempDir dir;
  const std::vector<report::RankSummary> ranks = {FullSummary(3), FullSummary(0)};
  const std::string path = dir.File("job.gpuscope.db");
  ASSERT_TRUE(store::WriteSummaryFile(path, ranks).ok());
  auto back = store::ReadSummaryFile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 2u);
  // In the order written (sorting is the reduce side's job).
  EXPECT_EQ((*back)[0], AsRead(ranks[0]));
  EXPECT_EQ((*back)[1], AsRead(ranks[1]));
  // The unix-ns integers of the facts are exact (SQLite integers, not JSON doubles).
  EXPECT_EQ((*back)[0].facts.identity.base_time_ns, int64_t{1712195495505582988});
  EXPECT_EQ((*back)[0].facts.collectives[3].start_ns, ranks[0].facts.collectives[3].start_ns);
  // The section's do not survive JSON beyond 2^53: read back as JSON reads them.
  EXPECT_NE((*back)[0].section, ranks[0].section);
}

TEST(SummaryFile, SerializedBytesRoundTripAndAreAFile) {
  const std::vector<report::RankSummary> ranks = {FullSummary(1)};
  auto bytes = store::SerializeSummaries(ranks);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_TRUE(store::LooksLikeSummaryFile(*bytes));
  auto back = store::DeserializeSummaries(*bytes, "bytes");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->front(), AsRead(ranks[0]));
  // The same bytes on disk are a summary file.
  ScopedTempDir dir;
  WriteFile(dir.File("x.db"), *bytes);
  auto file = store::ReadSummaryFile(dir.File("x.db"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->front(), back->front());
}

TEST(SummaryFile, NoRanksIsAValidEmptyFile) {
  auto bytes = store::SerializeSummaries({});
  ASSERT_TRUE(bytes.ok());
  auto back = store::DeserializeSummaries(*bytes, "empty");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->empty());
}

TEST(SummaryFile, MetaNamesFormatVersionAndGenerator) {
  ScopedTempDir dir;
  const std::string path = dir.File("s.db");
  ASSERT_TRUE(store::WriteSummaryFile(path, {FullSummary(2)}).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto value = [&](const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::string out = "<error>";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return out;
  };
  EXPECT_EQ(value("SELECT value FROM meta WHERE key='format'"), "gpuscope.summary");
  EXPECT_EQ(value("SELECT value FROM meta WHERE key='format_version'"), "1");
  EXPECT_EQ(value("SELECT value FROM meta WHERE key='generator'").rfind("gpuscope ", 0), 0u);
  EXPECT_EQ(value("SELECT value FROM meta WHERE key='created'").size(),
            20u);  // 2026-11-24T11:52:38Z
  EXPECT_EQ(value("PRAGMA user_version"), "1");
  EXPECT_EQ(value("SELECT saving_ns FROM fixes WHERE fix = 'bf16'"), "7000011");
  EXPECT_EQ(value("PRAGMA application_id"), std::to_string(0x47505355));
  // What a standard tool sees: one row per rank, one per collective, groups stored once.
  EXPECT_EQ(value("SELECT count(*) FROM ranks"), "1");
  EXPECT_EQ(value("SELECT count(*) FROM collectives"), "7");
  EXPECT_EQ(value("SELECT count(*) FROM comm_groups"), "2");
  EXPECT_EQ(value("SELECT count(*) FROM busy_bins"), "512");
  EXPECT_EQ(
      value("SELECT sum(c.size_bytes) FROM collectives c JOIN comm_groups g USING (rank_index, "
            "group_index) WHERE g.group_desc = 'TP'"),
      std::to_string((int64_t{1} << 21) + (int64_t{1} << 23) + (int64_t{1} << 25)));
  EXPECT_EQ(value("SELECT mean_step_ns FROM ranks"), "123456789");
  sqlite3_close(db);
}

TEST(SummaryFile, WriteReplacesAtomicallyAndLeavesNoTemporaryFile) {
  ScopedTempDir dir;
  const std::string path = dir.File("s.gpuscope.db");
  ASSERT_TRUE(store::WriteSummaryFile(path, {FullSummary(1)}).ok());
  ASSERT_TRUE(store::WriteSummaryFile(path, {FullSummary(2), FullSummary(5)}).ok());
  auto back = store::ReadSummaryFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->size(), 2u);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "s.gpuscope.db");
  }
  EXPECT_EQ(files, 1u);
}

TEST(SummaryFile, WriteIntoMissingFolderNamesThePath) {
  ScopedTempDir dir;
  const std::string path = dir.File("no/such/folder/s.db");
  const Status s = store::WriteSummaryFile(path, {FullSummary(1)});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file or directory"), std::string::npos) << s.message();
}

// ---- files that are not (good) summaries ------------------------------------------------------

void ExpectReadError(const std::string& path, const std::string& part) {
  auto r = store::ReadSummaryFile(path);
  ASSERT_FALSE(r.ok()) << path;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << r.status().message();
  EXPECT_EQ(r.status().message().rfind(path, 0), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
}

// Runs `sql` on the summary file at `path` (the way a user or a broken tool might change it).
void Alter(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_close(db);
}

TEST(SummaryFile, NotSqliteIsNamed) {
  ScopedTempDir dir;
  WriteFile(dir.File("trace.json"), "{\"traceEvents\": []}");
  ExpectReadError(dir.File("trace.json"), "not a gpuscope summary: not an SQLite database");
  WriteFile(dir.File("empty.db"), "");
  ExpectReadError(dir.File("empty.db"), "empty file");
  auto missing = store::ReadSummaryFile(dir.File("missing.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto bytes = store::DeserializeSummaries("{\"traceEvents\": []}", "sent");
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("sent: at byte 0: not a gpuscope summary"),
            std::string::npos);
}

TEST(SummaryFile, OtherSqliteDatabaseIsNotASummary) {
  ScopedTempDir dir;
  const std::string path = dir.File("report1.sqlite");
  Alter(path,
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER); "
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2);");
  ExpectReadError(path,
                  "an SQLite database, but not a gpuscope summary: it has no table `meta` "
                  "(its tables: CUPTI_ACTIVITY_KIND_KERNEL)");
  // A meta table of some other program.
  Alter(path,
        "CREATE TABLE meta(key TEXT, value TEXT); INSERT INTO meta VALUES ('format', 'x.y');");
  ExpectReadError(path, "its `meta` table names format \"x.y\"");
}

TEST(SummaryFile, NewerFormatVersionIsRefusedNamingBoth) {
  ScopedTempDir dir;
  const std::string path = dir.File("new.db");
  ASSERT_TRUE(store::WriteSummaryFile(path, {FullSummary(1)}).ok());
  Alter(path,
        "UPDATE meta SET value='2' WHERE key='format_version'; "
        "UPDATE meta SET value='gpuscope 9.0.0' WHERE key='generator';");
  ExpectReadError(path,
                  "gpuscope summary format version 2 (written by gpuscope 9.0.0); this gpuscope");
  ExpectReadError(path, "reads versions up to 1");
}

// A summary written before the replay was stored (no table `fixes`, no column
// `replayed_step_ns`) still reads: its ranks read as not replayed, with no fixes.
TEST(SummaryFile, OlderFileReadsWithoutTheReplay) {
  ScopedTempDir dir;
  const std::string path = dir.File("v1.db");
  ASSERT_TRUE(store::WriteSummaryFile(path, {FullSummary(1)}).ok());
  Alter(path,
        "DROP TABLE fixes; ALTER TABLE ranks DROP COLUMN replayed_step_ns;");
  auto back = store::ReadSummaryFile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  report::RankSummary want = AsRead(FullSummary(1));
  want.facts.replayed_step_ns = 0;
  want.facts.fixes.clear();
  EXPECT_EQ(back->at(0).facts, want.facts);
  // The table, but a view: refused by kind, as every table.
  ASSERT_TRUE(store::WriteSummaryFile(path, {FullSummary(1)}).ok());
  Alter(path, "DROP TABLE fixes; CREATE VIEW fixes AS SELECT 0 AS rank_index;");
  ExpectReadError(path, "`fixes` is a view, not a table");
  // A saving larger than the rank's step is not one we wrote.
  ASSERT_TRUE(store::WriteSummaryFile(path, {FullSummary(1)}).ok());
  Alter(path, "UPDATE fixes SET saving_ns = 999999999999 WHERE fix = 'bf16';");
  ExpectReadError(path, "table fixes: rank_index 0: a fix with bad values");
}

TEST(SummaryFile, MissingTableOrViewInsteadIsDamaged) {
  ScopedTempDir dir;
  const std::string path = dir.File("s.db");
  ASSERT_TRUE(store::WriteSummaryFile(path, {FullSummary(1)}).ok());
  Alter(path, "DROP TABLE busy_bins;");
  ExpectReadError(path, "damaged gpuscope summary: table `busy_bins` is missing");
  // A view could run any query: refused by kind.
  Alter(path, "CREATE VIEW busy_bins AS SELECT 0 AS rank_index, 0 AS bin, 5 AS busy_ns;");
  ExpectReadError(path, "`busy_bins` is a view, not a table");
}

// Numbers no analysis gives are refused at the border (issue 36 item 5): a span's part larger than
// the span (a job share of 10^16 %), or a share of 1e14 in the section.
TEST(SummaryFile, ImplausibleNumbersAreDamaged) {
  ScopedTempDir dir;
  const std::string path = dir.File("s.db");
  report::RankSummary one = FullSummary(1);
  one.section.AddRow("gpu_time", "GPU time").fields = {
      render::F("compute_share", "compute", render::Value::Share(0.64))};
  ASSERT_TRUE(store::WriteSummaryFile(path, {one}).ok());
  ASSERT_TRUE(store::ReadSummaryFile(path).ok());
  Alter(path, "UPDATE ranks SET compute_ns = span_ns * 1000;");
  ExpectReadError(path, "rank_index 0: a value of the wrong type or out of range");
  ASSERT_TRUE(store::WriteSummaryFile(path, {one}).ok());
  Alter(path, "UPDATE ranks SET section_json = replace(section_json, '\"value\":0.64', '\"value\":1e14');");
  ExpectReadError(path, "rank_index 0: section_json: row gpu_time: compute_share is out of range");
}

TEST(SummaryFile, InconsistentRowsAreDamaged) {
  ScopedTempDir dir;
  const std::string path = dir.File("s.db");
  const struct {
    const char* sql;
    const char* message;
  } cases[] = {
      {"UPDATE collectives SET group_index = 9 WHERE collective_index = 2;",
       "a collective of no group"},
      {"UPDATE collectives SET end_ns = start_ns - 1 WHERE collective_index = 0;",
       "a collective with bad values"},
      {"DELETE FROM steps WHERE step_index = 1;", "positions not 0, 1, 2"},
      {"UPDATE steps SET steady = 2;", "a step with bad values"},
      {"UPDATE ranks SET rank_source = 'guess';", "a value of the wrong type"},
      {"UPDATE ranks SET mean_step_ns = 'fast';", "a value of the wrong type"},
      {"UPDATE busy_bins SET rank_index = 4 WHERE bin = 511;", "a row of no rank"},
      {"UPDATE ranks SET section_json = '{\"schema\": \"gpuscope.report\"';", "section_json: "},
      {"UPDATE meta SET value = 'one' WHERE key = 'format_version';",
       "format_version \"one\" is not a number"},
  };
  for (const auto& c : cases) {
    ASSERT_TRUE(store::WriteSummaryFile(path, {FullSummary(1)}).ok());
    Alter(path, c.sql);
    SCOPED_TRACE(c.sql);
    ExpectReadError(path, std::string("damaged gpuscope summary: "));
    ExpectReadError(path, c.message);
  }
}

// Every truncation and a burst of damaged bytes at every 512-byte offset: an error or a summary
// that reads, never a crash (the fuzz target goes further: fuzz/summary_fuzz.cc).
TEST(SummaryFile, DamagedBytesGiveAnErrorNotACrash) {
  auto good = store::SerializeSummaries({FullSummary(1), FullSummary(2)});
  ASSERT_TRUE(good.ok());
  size_t errors = 0, cases = 0;
  for (size_t at = 0; at < good->size(); at += 512) {
    std::string cut = good->substr(0, at);
    std::string flipped = *good;
    for (size_t k = at; k < std::min(flipped.size(), at + 24); ++k)
      flipped[k] = static_cast<char>(flipped[k] ^ 0x5A);
    for (const std::string* bytes : {&cut, &flipped}) {
      ++cases;
      auto r = store::DeserializeSummaries(*bytes, "damaged.db");
      if (!r.ok()) {
        ++errors;
        EXPECT_EQ(r.status().message().rfind("damaged.db: ", 0), 0u) << r.status().message();
      }
    }
  }
  // Every truncation loses pages: at least those fail.
  EXPECT_GE(errors, cases / 2);
}

// Found by fuzz/summary_fuzz.cc: the JSON reader takes a finding without "saving_ns" (a null of
// no unit) that the writer prints back as a null in ns; a summary must read back the same however
// often it is written and read.
TEST(SummaryFile, LooseSectionJsonIsReadAsTheWriterWouldWriteIt) {
  ScopedTempDir dir;
  const std::string path = dir.File("s.db");
  report::RankSummary summary = FullSummary(1);
  render::Finding& finding = summary.section.AddFinding("memory_underused");
  finding.title = "Most of the GPU's memory is unused";
  finding.saving = render::Value::Na(render::Unit::kNanos);
  finding.saving_share = render::Value::Na(render::Unit::kShare);
  ASSERT_TRUE(store::WriteSummaryFile(path, {summary}).ok());
  Alter(path, "UPDATE ranks SET section_json = replace(section_json, '\"saving_ns\":null,', '');");
  auto once = store::ReadSummaryFile(path);
  ASSERT_TRUE(once.ok()) << once.status().message();
  EXPECT_EQ(once->front(), AsRead(summary));
  auto bytes = store::SerializeSummaries(*once);
  ASSERT_TRUE(bytes.ok());
  auto twice = store::DeserializeSummaries(*bytes, "again");
  ASSERT_TRUE(twice.ok()) << twice.status().message();
  EXPECT_EQ(*twice, *once);
}

TEST(SummaryFile, LooksLikeSummaryFileIsTheSqliteHeader) {
  EXPECT_TRUE(store::LooksLikeSummaryFile(std::string_view("SQLite format 3\0rest", 20)));
  EXPECT_FALSE(store::LooksLikeSummaryFile("SQLite format 3"));  // no NUL: a text file
  EXPECT_FALSE(store::LooksLikeSummaryFile("{\"traceEvents\": []}"));
  EXPECT_FALSE(store::LooksLikeSummaryFile(""));
}

// The acceptance bound: a summary is at most 2 % of its trace's JSON (a synthetic 20 MB rank).
TEST(SummaryFile, SummaryOfA20MBRankIsUnderTwoPercentOfItsJson) {
  ScopedTempDir dir;
  SynthOptions o;
  o.target_bytes = 20'000'000;
  o.ranks = 2;
  auto truths = WriteSynthTraces(o, dir.path());
  ASSERT_TRUE(truths.ok()) << truths.status().message();
  ThreadPool pool(2);
  job::MapOptions options;
  const std::string trace = dir.File("rank1.pt.trace.json");
  auto summary = job::MapTrace(trace, options, pool);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  ASSERT_TRUE(store::WriteSummaryFile(dir.File("rank1.gpuscope.db"), {*summary}).ok());
  const double json = static_cast<double>(std::filesystem::file_size(trace));
  const double db = static_cast<double>(std::filesystem::file_size(dir.File("rank1.gpuscope.db")));
  EXPECT_GE(json, 20e6);
  EXPECT_LE(db, 0.02 * json) << db << " bytes of summary for " << json << " bytes of JSON";
  // And it reads back as mapped.
  auto back = store::ReadSummaryFile(dir.File("rank1.gpuscope.db"));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->front(), *summary);
}

}  // namespace
}  // namespace gpuscope
