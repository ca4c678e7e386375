// Nsight Systems SQLite exports (src/ingest/nsys_sqlite): the Trace read from the real exports in
// shared/traces/nsys against the tables themselves, queried here with sqlite3; the CLI on them;
// and damaged or foreign SQLite files.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>

#include <map>
#include <string>

#include "analyze/invariants.h"
#include "analyze/trace_summary.h"
#include "gpuscope/ingest.h"
#include "report/report.h"
#include "ingest/registry.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using testing::ReadFile;
using testing::RealTrace;
using testing::RunGpuscope;
using testing::ScopedTempDir;
using testing::WriteFile;

constexpr const char* kH200 = "nsys/fuser_h200_ee4fcf3_report1.sqlite";
constexpr const char* kH100a = "nsys/fuser_8xh100_df8f397_report1.sqlite";
constexpr const char* kH100b = "nsys/fuser_8xh100_df8f397_report2.sqlite";
constexpr const char* kNoKernels = "nsys/weatherbench2_d8be5e4_report1_nokernels.sqlite";

#define REQUIRE_NSYS(f) GPUSCOPE_REQUIRE_REAL(std::string("traces/") + (f))

// A read-only connection for the reference queries.
class Db {
 public:
  explicit Db(const std::string& path) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  int64_t Int(const std::string& sql) {
    int64_t v = -1;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  }
  bool HasTable(const std::string& t) {
    return Int("SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='" + t + "'") == 1;
  }
  int64_t Rows(const std::string& t) { return HasTable(t) ? Int("SELECT COUNT(*) FROM " + t) : 0; }
  // name → (sum of end − start, count)
  std::map<std::string, std::pair<int64_t, int64_t>> Pairs(const std::string& sql) {
    std::map<std::string, std::pair<int64_t, int64_t>> out;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    while (sqlite3_step(s) == SQLITE_ROW)
      out[reinterpret_cast<const char*>(sqlite3_column_text(s, 0))] = {
          sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2)};
    sqlite3_finalize(s);
    return out;
  }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }

 private:
  sqlite3* db_ = nullptr;
};

// A writable copy of a database.
void Copy(const std::string& from, const std::string& to) { WriteFile(to, ReadFile(from)); }
class RwDb {
 public:
  explicit RwDb(const std::string& path) { sqlite3_open(path.c_str(), &db_); }
  ~RwDb() { sqlite3_close(db_); }
  RwDb(const RwDb&) = delete;
  RwDb& operator=(const RwDb&) = delete;
  void Exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }

 private:
  sqlite3* db_ = nullptr;
};

struct Counts {
  int64_t kernels = 0, memcpys = 0, memsets = 0, syncs = 0;
};
Counts CountGpu(const Trace& t) {
  Counts c;
  for (GpuKind k : t.gpu.kind) {
    c.kernels += k == GpuKind::kKernel;
    c.memcpys += k == GpuKind::kMemcpy;
    c.memsets += k == GpuKind::kMemset;
    c.syncs += k == GpuKind::kSync;
  }
  return c;
}

// Every table's rows are in the Trace, and the numbers of COUNTS.tsv hold.
void ExpectCountsMatch(const std::string& path, int64_t kernels, int64_t runtime, int64_t memcpys,
                       int64_t nvtx) {
  SCOPED_TRACE(path);
  auto trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Db db(path);
  const Counts c = CountGpu(*trace);
  EXPECT_EQ(c.kernels, db.Rows("CUPTI_ACTIVITY_KIND_KERNEL"));
  EXPECT_EQ(c.memcpys, db.Rows("CUPTI_ACTIVITY_KIND_MEMCPY"));
  EXPECT_EQ(c.memsets, db.Rows("CUPTI_ACTIVITY_KIND_MEMSET"));
  EXPECT_EQ(c.syncs, db.Rows("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"));
  EXPECT_EQ(static_cast<int64_t>(trace->runtime.size()), db.Rows("CUPTI_ACTIVITY_KIND_RUNTIME"));
  // Every NVTX row of these exports is a closed push/pop range.
  EXPECT_EQ(static_cast<int64_t>(trace->cpu.size()), db.Rows("NVTX_EVENTS"));
  EXPECT_EQ(c.kernels, kernels);
  EXPECT_EQ(static_cast<int64_t>(trace->runtime.size()), runtime);
  EXPECT_EQ(c.memcpys, memcpys);
  EXPECT_EQ(static_cast<int64_t>(trace->cpu.size()), nvtx);
  EXPECT_EQ(trace->info.format, TraceFormat::kNsysSqlite);
  EXPECT_EQ(trace->diagnostics.total(), 0u);
  // Every kernel is linked to its launch by correlation id.
  EXPECT_EQ(trace->links.kernels, static_cast<uint64_t>(kernels));
  EXPECT_EQ(trace->links.kernels_linked, static_cast<uint64_t>(kernels));
  for (size_t i = 0; i < trace->gpu.size(); ++i) {
    if (trace->gpu.kind[i] != GpuKind::kKernel) continue;
    const int32_t l = trace->gpu.launch[i];
    ASSERT_GE(l, 0);
    EXPECT_EQ(trace->runtime.correlation[l], trace->gpu.correlation[i]);
    EXPECT_EQ(trace->runtime.kind[l], RuntimeKind::kKernelLaunch) << trace->Str(trace->runtime.name[l]);
    EXPECT_LE(trace->runtime.start_ns[l], trace->gpu.start_ns[i]);
  }
}

TEST(NsysSqlite, CountsEqualTheTablesRows) {
  testing::RealParts parts;
  if (parts.Have({std::string("traces/") + kH200}))
    ExpectCountsMatch(RealTrace(kH200), 18, 990, 3, 13513);
  if (parts.Have({std::string("traces/") + kH100a}))
    ExpectCountsMatch(RealTrace(kH100a), 19, 967, 1, 639);
  if (parts.Have({std::string("traces/") + kH100b}))
    ExpectCountsMatch(RealTrace(kH100b), 19, 975, 1, 1054);
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

// GPU time per kernel name (the demangled name, as Kineto names kernels) is exactly the SQL sum.
TEST(NsysSqlite, GpuTimePerKernelNameEqualsSql) {
  testing::RealParts parts;
  for (const char* f : {kH200, kH100a, kH100b}) {
    if (!parts.Have({std::string("traces/") + f})) continue;
    SCOPED_TRACE(f);
    auto trace = LoadTrace(RealTrace(f));
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    std::map<std::string, std::pair<int64_t, int64_t>> got;
    for (size_t i = 0; i < trace->gpu.size(); ++i) {
      if (trace->gpu.kind[i] != GpuKind::kKernel) continue;
      auto& g = got[std::string(trace->Str(trace->gpu.name[i]))];
      g.first += trace->gpu.dur_ns[i];
      ++g.second;
    }
    Db db(RealTrace(f));
    const auto want = db.Pairs(
        "SELECT s.value, SUM(k.end - k.start), COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value");
    EXPECT_EQ(got, want);
    EXPECT_GE(want.size(), 5u);
    // Exact timestamps: the first kernel starts where the table says, to the ns.
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < trace->gpu.size(); ++i)
      if (trace->gpu.kind[i] == GpuKind::kKernel) first = std::min(first, trace->gpu.start_ns[i]);
    EXPECT_EQ(first, db.Int("SELECT MIN(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  }
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

// Every analysis result on `path` satisfies analyze/invariants.h.
void ExpectInvariants(const std::string& path) {
  SCOPED_TRACE(path);
  auto trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  std::vector<Trace> traces;
  traces.push_back(std::move(*trace));
  const auto report = report::BuildReport(traces, {}, 1);
  ASSERT_EQ(report.ranks.size(), 1u);
  const report::RankReport& r = report.ranks[0];
  EXPECT_EQ(analyze::CheckInvariants(analyze::ViewOf(r)), std::vector<std::string>{});
  EXPECT_GE(r.copies.tiny_memcpy_time_ns, 0);
  EXPECT_GE(r.copies.memcpy_time_ns, 0);
}

TEST(NsysSqlite, AnalysesKeepTheirInvariants) {
  testing::RealParts parts;
  for (const char* f : {kH200, kH100a, kH100b})
    if (parts.Have({std::string("traces/") + f})) ExpectInvariants(RealTrace(f));
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

// The H200's 896 ns memcpy (8,745,862,005 → 8,745,862,901 ns) is −1,000 ns after HTA's µs rounding
// (start up, end down); alone in its group it once made the group's, the direction's and the
// tiny-copy time negative (nsys_sqlite_fuzz). It took no time.
TEST(NsysSqlite, SubMicrosecondCopyTakesNoTimeNotLessThanNone) {
  REQUIRE_NSYS(kH200);
  ScopedTempDir dir;
  const std::string path = dir.File("one_copy.sqlite");
  Copy(RealTrace(kH200), path);
  { RwDb db(path); db.Exec("DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE bytes != 2"); }
  ExpectInvariants(path);
}

TEST(NsysSqlite, H200CopiesKernelsDeviceAndSyncs) {
  REQUIRE_NSYS(kH200);
  auto trace = LoadTrace(RealTrace(kH200));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const Trace& t = *trace;
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(t.devices[0].id, 0);
  EXPECT_EQ(t.devices[0].num_sms, 132);
  EXPECT_EQ(t.devices[0].total_global_mem_bytes, 150121545728);
  EXPECT_EQ(t.devices[0].compute_major, 9);
  EXPECT_EQ(t.devices[0].compute_minor, 0);
  ASSERT_TRUE(t.info.base_time_ns.has_value());
  EXPECT_EQ(*t.info.base_time_ns, 1741793819042497997);
  // The three copies (copyKind 1 = HtoD from srcKind 0 = pageable; 8 = DtoD device → device).
  std::map<int64_t, std::string> copies;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.kind[i] != GpuKind::kMemcpy) continue;
    copies[t.gpu.bytes[i]] = std::string(t.Str(t.gpu.name[i]));
    if (t.gpu.bytes[i] == 394002432) {
      EXPECT_EQ(t.gpu.copy_direction[i], CopyDirection::kHtoD);
      EXPECT_EQ(t.gpu.src_kind[i], MemoryKind::kPageable);
      EXPECT_EQ(t.gpu.dst_kind[i], MemoryKind::kDevice);
      EXPECT_EQ(t.gpu.stream[i], 7);
      EXPECT_EQ(t.gpu.device[i], 0);
    }
  }
  EXPECT_EQ(copies, (std::map<int64_t, std::string>{
                        {2, "Memcpy HtoD (Pageable -> Device)"},
                        {62914560, "Memcpy DtoD (Device -> Device)"},
                        {394002432, "Memcpy HtoD (Pageable -> Device)"}}));
  // Syncs: two stream-wait-event (syncType 2) and one context sync (4) on stream 2^32 − 1.
  int waits = 0, contexts = 0;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.kind[i] != GpuKind::kSync) continue;
    waits += t.gpu.sync_kind[i] == SyncKind::kStreamWaitEvent;
    if (t.gpu.sync_kind[i] == SyncKind::kContextSync) {
      ++contexts;
      EXPECT_EQ(t.gpu.stream[i], 4294967295);
    }
  }
  EXPECT_EQ(waits, 2);
  EXPECT_EQ(contexts, 1);
  // Kernel geometry from the table, for one kernel.
  Db db(RealTrace(kH200));
  const int64_t start = db.Int(
      "SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1");
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.kind[i] != GpuKind::kKernel || t.gpu.start_ns[i] != start) continue;
    const std::string where = " FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start = " +
                              std::to_string(start);
    EXPECT_EQ(t.gpu.grid[i][0], db.Int("SELECT gridX" + where));
    EXPECT_EQ(t.gpu.block[i][0], db.Int("SELECT blockX" + where));
    EXPECT_EQ(t.gpu.registers_per_thread[i], db.Int("SELECT registersPerThread" + where));
    EXPECT_EQ(t.gpu.shared_memory_bytes[i],
              db.Int("SELECT staticSharedMemory + dynamicSharedMemory" + where));
    EXPECT_EQ(t.gpu.correlation[i] & 0xFFFFFFFF, db.Int("SELECT correlationId" + where));
  }
  // Runtime names lose nsys's version suffix, as Kineto writes them.
  int launches = 0;
  for (size_t i = 0; i < t.runtime.size(); ++i)
    launches += t.Str(t.runtime.name[i]) == "cudaLaunchKernel";
  EXPECT_EQ(launches, 9);
  // Two processes made CUDA calls, with overlapping correlation ids (1 and 127): scoped per
  // process, so none is a duplicate.
  EXPECT_EQ(t.diagnostics.count[static_cast<size_t>(Diag::kDuplicateCorrelation)], 0u);
}

TEST(NsysSqlite, EightH100sAreListed) {
  REQUIRE_NSYS(kH100a);
  auto trace = LoadTrace(RealTrace(kH100a));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->devices.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(trace->devices[i].id, i);
    EXPECT_EQ(trace->devices[i].name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(trace->devices[i].num_sms, 132);
  }
}

TEST(NsysSqlite, NoKernelsIsNoGpuActivityCapturedWithTheFlag) {
  REQUIRE_NSYS(kNoKernels);
  auto trace = LoadTrace(RealTrace(kNoKernels));
  ASSERT_FALSE(trace.ok());
  const std::string& m = trace.status().message();
  EXPECT_NE(m.find("no GPU activity captured"), std::string::npos) << m;
  EXPECT_NE(m.find("no CUPTI_ACTIVITY_KIND_KERNEL table"), std::string::npos) << m;
  EXPECT_NE(m.find("1 memset, 23 CUDA API calls, 0 NVTX ranges"), std::string::npos) << m;
  EXPECT_NE(m.find("--trace=cuda"), std::string::npos) << m;
  const auto r = RunGpuscope("analyze " + RealTrace(kNoKernels));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(RealTrace(kNoKernels) + ": no GPU activity captured"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nsys profile --trace=cuda"), std::string::npos) << r.err;
}

TEST(NsysSqlite, AnalyzeRunsEveryAnalysisTextAndJson) {
  REQUIRE_NSYS(kH200);
  const auto text = RunGpuscope("analyze " + RealTrace(kH200));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* s : {"NVIDIA H200", "kernels 18", "memcpy 3", "runtime calls 990",
                        "annotations 13,513", "kernels linked to their launch 18",
                        "(Nsight Systems SQLite export)", "top compute kernels", "idle gaps",
                        "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN"})
    EXPECT_NE(text.out.find(s), std::string::npos) << s << "\n" << text.out;
  const auto json = RunGpuscope("analyze --json " + RealTrace(kH200));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json.out).get(doc), simdjson::SUCCESS) << json.out.substr(0, 500);
  EXPECT_NE(json.out.find("\"nsys_sqlite\""), std::string::npos);
  EXPECT_NE(json.out.find("\"NVIDIA H200\""), std::string::npos);
  // The export arriving on a pipe is read into memory: the same report.
  const auto piped = RunGpuscope("analyze --json - < " + RealTrace(kH200));
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  for (const std::string* out : {&json.out, &piped.out}) {
    const size_t k = out->find("\"kernels\": {");
    ASSERT_NE(k, std::string::npos);
    EXPECT_NE(out->substr(k, 120).find("\"value\": 18,"), std::string::npos) << out->substr(k, 120);
  }
}

TEST(NsysSqlite, GzipAndMemoryReadTheSameTables) {
  REQUIRE_NSYS(kH100a);
  const std::string bytes = ReadFile(RealTrace(kH100a));
  for (const std::string& in : {bytes, testing::Gzip(bytes)}) {
    auto trace = LoadTraceFromBytes(in, "export.sqlite");
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    const Counts c = CountGpu(*trace);
    EXPECT_EQ(c.kernels, 19);
    EXPECT_EQ(trace->runtime.size(), 967u);
    EXPECT_EQ(trace->cpu.size(), 639u);
    EXPECT_EQ(trace->info.gzip, in.size() != bytes.size());
  }
}

TEST(NsysSqlite, SniffedFromTheHeader) {
  auto f = ingest::SniffFormat(std::string("SQLite format 3\0", 16) + std::string(100, '\0'), "x");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->id, ingest::InputFormat::kNsysSqlite);
}

TEST(NsysSqlite, TruncatedExportIsAClearError) {
  REQUIRE_NSYS(kH200);
  const std::string bytes = ReadFile(RealTrace(kH200));
  ScopedTempDir dir;
  for (size_t n : {size_t{100}, size_t{4096}, size_t{65536}, size_t{1} << 20, bytes.size() - 4096}) {
    SCOPED_TRACE(n);
    const std::string path = dir.File("cut_" + std::to_string(n) + ".sqlite");
    WriteFile(path, bytes.substr(0, n));
    auto trace = LoadTrace(path);
    ASSERT_FALSE(trace.ok());
    EXPECT_EQ(trace.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(trace.status().message().rfind(path + ": ", 0), 0u) << trace.status().message();
    auto mem = LoadTraceFromBytes(bytes.substr(0, n), "cut");
    EXPECT_FALSE(mem.ok());
    const auto r = RunGpuscope("analyze " + path);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    // Never called what it is not (issue 36 item 6): a cut export whose schema pages survived is
    // a damaged export; one cut before them is a damaged SQLite database of unknown kind.
    EXPECT_EQ(r.err.find("damaged gpuscope summary"), std::string::npos) << r.err;
    if (n >= 65536) {
      EXPECT_NE(r.err.find("nsys export"), std::string::npos) << r.err;
    }
  }
  const std::string last = dir.File("cut_" + std::to_string(bytes.size() - 4096) + ".sqlite");
  const std::string m = LoadTrace(last).status().message();
  EXPECT_NE(m.find("cannot read the SQLite database while"), std::string::npos) << m;
  EXPECT_NE(m.find("cut short or damaged"), std::string::npos) << m;
}

TEST(NsysSqlite, OtherSqliteDatabasesAreNamed) {
  ScopedTempDir dir;
  const std::string empty = dir.File("empty.sqlite");
  { RwDb db(empty); db.Exec("PRAGMA user_version = 1"); }
  auto r = LoadTrace(empty);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("an empty SQLite database (no tables), not an Nsight "
                                      "Systems export"),
            std::string::npos)
      << r.status().message();
  const std::string other = dir.File("other.db");
  { RwDb db(other); db.Exec("CREATE TABLE t(a); INSERT INTO t VALUES (1)"); }
  r = LoadTrace(other);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not an Nsight Systems export: it has no META_DATA_EXPORT"),
            std::string::npos)
      << r.status().message();
  // A gpuscope summary through the trace readers (diff, plan --from-trace, the API).
  ASSERT_EQ(RunGpuscope("map " + std::string(GPUSCOPE_SOURCE_DIR) +
                        "/examples/train_input_bound.pt.trace.json.gz -o " + dir.path() + "/")
                .exit_code,
            0);
  const std::string summary = dir.File("train_input_bound.gpuscope.db");
  ASSERT_TRUE(std::filesystem::exists(summary));
  r = LoadTrace(summary);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("a gpuscope summary (from `gpuscope map`), not a profiler "
                                      "trace"),
            std::string::npos)
      << r.status().message();
  // ... and `analyze` still reads it as a summary.
  EXPECT_EQ(RunGpuscope("analyze " + summary).exit_code, 0);
  const auto cli = RunGpuscope("diff " + summary + " " + summary);
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.err.find("a gpuscope summary"), std::string::npos) << cli.err;
}

TEST(NsysSqlite, UnknownSchemaReadsWhatItCanOrSaysWhatIsMissing) {
  REQUIRE_NSYS(kH100a);
  ScopedTempDir dir;
  const std::string path = dir.File("future.sqlite");
  Copy(RealTrace(kH100a), path);
  { RwDb db(path); db.Exec("UPDATE META_DATA_EXPORT SET value = '9.1.0' WHERE name = 'EXPORT_SCHEMA_VERSION'"); }
  auto trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(CountGpu(*trace).kernels, 19);
  ASSERT_FALSE(trace->info.notes.empty());
  EXPECT_NE(trace->info.notes[0].find("nsys export schema 9.1.0 is not one this reader knows"),
            std::string::npos)
      << trace->info.notes[0];
  auto r = RunGpuscope("analyze " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("schema 9.1.0 is not one this reader knows"), std::string::npos) << r.out;
  // A renamed column the reader needs: an error naming table, column and schema.
  { RwDb db(path); db.Exec("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN start TO begin"); }
  r = RunGpuscope("analyze " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ": table CUPTI_ACTIVITY_KIND_KERNEL has no column start (export "
                              "schema 9.1.0, which this reader does not know)"),
            std::string::npos)
      << r.err;
}

// SQLite keeps what a column is given: TEXT in a kernel's integer column read as 0 before, and the
// report said every event was read. Such a row is malformed: counted and skipped, and the report
// says so (issue 36 item 4).
TEST(NsysSqlite, TextInAnIntegerColumnIsAMalformedRow) {
  REQUIRE_NSYS(kH100a);
  ScopedTempDir dir;
  const std::string path = dir.File("typed.sqlite");
  Copy(RealTrace(kH100a), path);
  {
    RwDb db(path);
    db.Exec("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 'seven' WHERE rowid = "
            "(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)");
    db.Exec("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 1.5 WHERE rowid = "
            "(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME)");
  }
  auto trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(CountGpu(*trace).kernels, 18);  // of 19
  EXPECT_EQ(trace->diagnostics.count[static_cast<size_t>(Diag::kWrongColumnType)], 2u);
  auto r = RunGpuscope("analyze " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;  // counted and skipped, as a bad trace event
  EXPECT_NE(r.out.find("wrong_column_type  rows skipped: an integer column holds text"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 events or fields could not be read"), std::string::npos) << r.out;
}

// Synchronisation rows are no GPU work: the GPU span runs from the first kernel, copy or set to the
// last one's end, whatever event syncs on CUPTI's invalid stream (2^32−1) do (issue 32 item 5).
TEST(NsysSqlite, GpuSpanLeavesSynchronisationRowsOut) {
  REQUIRE_NSYS(kH200);
  const std::string path = RealTrace(kH200);
  Db db(path);
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    if (!db.HasTable(table) || db.Rows(table) == 0) continue;
    lo = std::min(lo, db.Int(std::string("SELECT min(start) FROM ") + table));
    hi = std::max(hi, db.Int(std::string("SELECT max(end) FROM ") + table));
  }
  ASSERT_GT(db.Int("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE streamId = 4294967295"), 0);
  auto trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok());
  const analyze::TraceSummary s = analyze::SummarizeTrace(*trace);
  EXPECT_EQ(s.gpu_end_ns - s.gpu_start_ns, hi - lo);
}

// Kernel rows written twice (every column equal) are removed and counted, as the Kineto reader
// removes identical events (issue 36 item 6): before, each kernel counted twice.
TEST(NsysSqlite, IdenticalDuplicateRowsAreRemoved) {
  REQUIRE_NSYS(kH100a);
  ScopedTempDir dir;
  const std::string path = dir.File("twice.sqlite");
  Copy(RealTrace(kH100a), path);
  { RwDb db(path); db.Exec("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL"); }
  auto trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(CountGpu(*trace).kernels, 19);
  EXPECT_EQ(trace->diagnostics.count[static_cast<size_t>(Diag::kDuplicateGpuEvent)], 19u);
}

// Schema 2.x kept its metadata in EXPORT_META_DATA: a known schema, read without a note.
TEST(NsysSqlite, OldMetadataTableIsKnown) {
  REQUIRE_NSYS(kH100a);
  ScopedTempDir dir;
  const std::string path = dir.File("schema29.sqlite");
  Copy(RealTrace(kH100a), path);
  {
    RwDb db(path);
    db.Exec("ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA");
    db.Exec("UPDATE EXPORT_META_DATA SET value = '2.9.0' WHERE name = 'EXPORT_SCHEMA_VERSION'");
  }
  auto trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->info.trace_name, "nsys export schema 2.9.0");
  EXPECT_TRUE(trace->info.notes.empty()) << trace->info.notes[0];
  EXPECT_EQ(CountGpu(*trace).kernels, 19);
}

// diff works on two exports as on two Kineto traces: the node's two runs, same 19 kernels.
TEST(NsysSqlite, DiffOfTwoExports) {
  REQUIRE_NSYS(kH100a);
  REQUIRE_NSYS(kH100b);
  const auto r = RunGpuscope("diff " + RealTrace(kH100a) + " " + RealTrace(kH100b));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVIDIA H100 80GB HBM3"), std::string::npos) << r.out;
}

TEST(NsysSqlite, MissingTablesAreNamedWithTheirFlag) {
  REQUIRE_NSYS(kH100a);
  ScopedTempDir dir;
  const std::string path = dir.File("no_nvtx.sqlite");
  Copy(RealTrace(kH100a), path);
  { RwDb db(path); db.Exec("DROP TABLE NVTX_EVENTS; DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME"); }
  auto trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(CountGpu(*trace).kernels, 19);
  EXPECT_EQ(trace->runtime.size(), 0u);
  ASSERT_EQ(trace->info.notes.size(), 2u);
  EXPECT_NE(trace->info.notes[0].find("no CUPTI_ACTIVITY_KIND_RUNTIME table"), std::string::npos);
  EXPECT_NE(trace->info.notes[0].find("--trace=cuda"), std::string::npos);
  EXPECT_NE(trace->info.notes[1].find("no NVTX_EVENTS table"), std::string::npos);
  EXPECT_NE(trace->info.notes[1].find("--trace=cuda,nvtx"), std::string::npos);
  const auto r = RunGpuscope("analyze " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no NVTX_EVENTS table"), std::string::npos) << r.out;
}

// A folder of exports (the node's two runs, as rank files) is analysed as a job of ranks.
TEST(NsysSqlite, FolderOfExportsIsAJob) {
  REQUIRE_NSYS(kH100a);
  REQUIRE_NSYS(kH100b);
  ScopedTempDir dir;
  Copy(RealTrace(kH100a), dir.File("rank0.sqlite"));
  Copy(RealTrace(kH100b), dir.File("rank1.sqlite"));
  const auto r = RunGpuscope("analyze --json " + dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"rank_0\""), std::string::npos);
  EXPECT_NE(r.out.find("\"rank_1\""), std::string::npos);
  EXPECT_NE(r.out.find(dir.File("rank1.sqlite")), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
