// Summary files in SQLite (docs/summary-format.md). Every summary is built in an in-memory database
// and serialised (sqlite3_serialize): a file is those bytes written to a temporary file and
// renamed, and MPI sends the same bytes. Reading goes through one function over an open database,
// whether it was opened from a file or deserialised from bytes, so the fuzz target
// (fuzz/summary_fuzz.cc) exercises exactly what reading a file does.
#include "store/summary_file.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/output_file.h"
#include "base/sanitize.h"
#include "gpuscope/version.h"
#include "render/json.h"

namespace gpuscope::store {

namespace {

constexpr char kFormatName[] = "gpuscope.summary";
// The SQLite header's application id ("GPSU"), so `file` and other tools can tell the file apart
// from other SQLite databases; the meta table is what the reader checks.
constexpr int kApplicationId = 0x47505355;
// Small pages keep a summary of a small trace small: every table takes at least one page, and
// the rank's section (tens of KB of JSON) spills into overflow pages either way.
constexpr int kPageSize = 1024;

// Tables a reader of this version needs; each must be a table (not a view: a view in a hostile
// file could run any query).
constexpr const char* kTables[] = {
    "meta", "ranks", "rank_process_groups", "steps", "comm_groups", "collectives", "busy_bins"};
// More fixes than any gpuscope has what-ifs is not a file we wrote.
constexpr size_t kMaxFixesPerRank = 64;
// Added since (format_version stays: adding is not a change a reader can misread; see
// docs/summary-format.md): a file without them, from an older gpuscope, reads as not replayed.
constexpr const char* kOptionalTables[] = {"fixes"};

constexpr char kSchemaSql[] = R"sql(
CREATE TABLE meta(
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE ranks(
  rank_index INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  rank INTEGER NOT NULL,
  rank_source TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  backend TEXT NOT NULL,
  base_time_ns INTEGER,
  absolute_clock INTEGER NOT NULL,
  trace_start_ns INTEGER NOT NULL,
  trace_end_ns INTEGER NOT NULL,
  device_name TEXT NOT NULL,
  hostname TEXT NOT NULL,
  mean_step_ns INTEGER NOT NULL,
  steady_steps INTEGER NOT NULL,
  span_ns INTEGER NOT NULL,
  compute_ns INTEGER NOT NULL,
  exposed_communication_ns INTEGER NOT NULL,
  idle_ns INTEGER NOT NULL,
  verdict TEXT NOT NULL,
  busy_first_bin_start_ns INTEGER NOT NULL,
  busy_bin_ns INTEGER NOT NULL,
  section_json TEXT NOT NULL,
  replayed_step_ns INTEGER NOT NULL
);
CREATE TABLE fixes(
  rank_index INTEGER NOT NULL,
  position INTEGER NOT NULL,
  fix TEXT NOT NULL,
  saving_ns INTEGER NOT NULL,
  PRIMARY KEY(rank_index, position)
) WITHOUT ROWID;
CREATE TABLE rank_process_groups(
  rank_index INTEGER NOT NULL,
  position INTEGER NOT NULL,
  process_group TEXT NOT NULL,
  PRIMARY KEY(rank_index, position)
) WITHOUT ROWID;
CREATE TABLE steps(
  rank_index INTEGER NOT NULL,
  step_index INTEGER NOT NULL,
  step INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  steady INTEGER NOT NULL,
  PRIMARY KEY(rank_index, step_index)
) WITHOUT ROWID;
CREATE TABLE comm_groups(
  rank_index INTEGER NOT NULL,
  group_index INTEGER NOT NULL,
  group_name TEXT NOT NULL,
  group_desc TEXT NOT NULL,
  group_ranks TEXT NOT NULL,
  group_size INTEGER NOT NULL,
  PRIMARY KEY(rank_index, group_index)
) WITHOUT ROWID;
CREATE TABLE collectives(
  rank_index INTEGER NOT NULL,
  collective_index INTEGER NOT NULL,
  group_index INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  ordinal INTEGER NOT NULL,
  type TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  dtype TEXT NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  step INTEGER NOT NULL,
  PRIMARY KEY(rank_index, collective_index)
) WITHOUT ROWID;
CREATE TABLE busy_bins(
  rank_index INTEGER NOT NULL,
  bin INTEGER NOT NULL,
  busy_ns INTEGER NOT NULL,
  PRIMARY KEY(rank_index, bin)
) WITHOUT ROWID;
)sql";

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

bool ParseRankSource(std::string_view text, RankSource* out) {
  for (RankSource s : {RankSource::kNone, RankSource::kDistributedInfo, RankSource::kFileName}) {
    if (text == RankSourceName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ---- writing ----------------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(sqlite3* db) : db_(db) {}

  Status Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      return Internal(msg);
    }
    return Status::Ok();
  }

  Result<StmtPtr> Prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
      return Internal(sqlite3_errmsg(db_));
    return StmtPtr(s);
  }

  // Binds `values` (int64_t, std::string, or std::optional<int64_t>) to the statement's
  // parameters in order, runs it and resets it for the next row.
  template <typename... V>
  Status Insert(sqlite3_stmt* s, const V&... values) {
    int i = 0;
    (Bind(s, ++i, values), ...);
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE) return Internal(sqlite3_errmsg(db_));
    return Status::Ok();
  }

 private:
  static void Bind(sqlite3_stmt* s, int i, int64_t v) { sqlite3_bind_int64(s, i, v); }
  static void Bind(sqlite3_stmt* s, int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  static void Bind(sqlite3_stmt* s, int i, const std::optional<int64_t>& v) {
    if (v)
      sqlite3_bind_int64(s, i, *v);
    else
      sqlite3_bind_null(s, i);
  }
  static Status Internal(const std::string& msg) {
    return Status::Error(StatusCode::kInternal, "writing a summary: SQLite: " + msg);
  }

  sqlite3* db_;
};

// The rank's section as a one-section gpuscope.report document, compact JSON.
std::string SectionJson(const render::Section& section) {
  render::Document doc;
  doc.schema = "gpuscope.report";
  doc.sections.push_back(section);
  return render::ToJson(doc, 0);
}

Status FillDatabase(sqlite3* db, const std::vector<report::RankSummary>& ranks) {
  Writer w(db);
  // An in-memory database: no journal to keep, nothing to sync.
  GPUSCOPE_RETURN_IF_ERROR(
      w.Exec("PRAGMA page_size=1024; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"));
  static_assert(kPageSize == 1024, "the PRAGMA above sets kPageSize");
  const std::string header = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                             "; PRAGMA user_version=" + std::to_string(kSummaryFormatVersion) + ";";
  GPUSCOPE_RETURN_IF_ERROR(w.Exec(header.c_str()));
  GPUSCOPE_RETURN_IF_ERROR(w.Exec("BEGIN"));
  GPUSCOPE_RETURN_IF_ERROR(w.Exec(kSchemaSql));

  auto meta = w.Prepare("INSERT INTO meta(key, value) VALUES (?, ?)");
  auto rank_row = w.Prepare(
      "INSERT INTO ranks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
      "?, ?)");
  auto fix = w.Prepare("INSERT INTO fixes VALUES (?, ?, ?, ?)");
  auto pg = w.Prepare("INSERT INTO rank_process_groups VALUES (?, ?, ?)");
  auto step = w.Prepare("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)");
  auto group = w.Prepare("INSERT INTO comm_groups VALUES (?, ?, ?, ?, ?, ?)");
  auto coll = w.Prepare("INSERT INTO collectives VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  auto bin = w.Prepare("INSERT INTO busy_bins VALUES (?, ?, ?)");
  for (auto* r : {&meta, &rank_row, &pg, &step, &group, &coll, &bin, &fix})
    if (!r->ok()) return r->status();

  const std::pair<const char*, std::string> meta_rows[] = {
      {"format", kFormatName},
      {"format_version", std::to_string(kSummaryFormatVersion)},
      {"generator", std::string("gpuscope ") + GPUSCOPE_VERSION},
      {"created", UtcNow()},
      {"ranks", std::to_string(ranks.size())},
      {"section_schema_version", std::to_string(render::kSchemaVersion)},
  };
  for (const auto& [key, value] : meta_rows)
    GPUSCOPE_RETURN_IF_ERROR(w.Insert(meta->get(), std::string(key), value));

  for (size_t i = 0; i < ranks.size(); ++i) {
    const model::RankFacts& f = ranks[i].facts;
    const model::RankIdentity& id = f.identity;
    const int64_t ri = static_cast<int64_t>(i);
    Status s = w.Insert(rank_row->get(), ri, id.path, int64_t{id.rank},
                        std::string(RankSourceName(id.rank_source)), int64_t{id.world_size},
                        id.backend, id.base_time_ns, int64_t{id.absolute_clock}, id.trace_start_ns,
                        id.trace_end_ns, id.device_name, id.hostname, f.mean_step_ns,
                        f.steady_steps, f.span_ns, f.compute_ns, f.exposed_communication_ns,
                        f.idle_ns, f.verdict, f.busy.first_bin_start_ns, f.busy.bin_ns,
                        SectionJson(ranks[i].section), f.replayed_step_ns);
    if (!s.ok()) return s;
    for (size_t k = 0; k < f.fixes.size(); ++k)
      if (s = w.Insert(fix->get(), ri, static_cast<int64_t>(k), f.fixes[k].fix,
                       f.fixes[k].saving_ns);
          !s.ok())
        return s;
    for (size_t p = 0; p < id.process_groups.size(); ++p)
      if (s = w.Insert(pg->get(), ri, static_cast<int64_t>(p), id.process_groups[p]); !s.ok())
        return s;
    for (size_t k = 0; k < f.steps.size(); ++k) {
      const model::StepSpan& st = f.steps[k];
      if (s = w.Insert(step->get(), ri, static_cast<int64_t>(k), int64_t{st.step}, st.start_ns,
                       st.end_ns, int64_t{st.steady});
          !s.ok())
        return s;
    }
    // Process groups are stored once per rank and referred to by index: a group's rank list
    // ("[0, 1, …, 999]") would otherwise repeat on every collective.
    std::map<std::tuple<std::string, std::string, std::string, int32_t>, int64_t> groups;
    for (size_t k = 0; k < f.collectives.size(); ++k) {
      const model::CollectiveRecord& c = f.collectives[k];
      auto [it, added] = groups.try_emplace({c.group, c.group_desc, c.group_ranks, c.group_size},
                                            static_cast<int64_t>(groups.size()));
      if (added) {
        if (s = w.Insert(group->get(), ri, it->second, c.group, c.group_desc, c.group_ranks,
                         int64_t{c.group_size});
            !s.ok())
          return s;
      }
      if (s = w.Insert(coll->get(), ri, static_cast<int64_t>(k), it->second, c.seq, c.ordinal,
                       c.type, c.bytes, c.dtype, c.start_ns, c.end_ns, int64_t{c.step});
          !s.ok())
        return s;
    }
    for (size_t b = 0; b < f.busy.busy_ns.size(); ++b)
      if (s = w.Insert(bin->get(), ri, static_cast<int64_t>(b), f.busy.busy_ns[b]); !s.ok())
        return s;
  }
  return w.Exec("COMMIT");
}

// ---- reading ----------------------------------------------------------------------------------

class Reader {
 public:
  Reader(sqlite3* db, const std::string& name) : db_(db), name_(name) {}

  Result<std::vector<report::RankSummary>> Read() {
    GPUSCOPE_RETURN_IF_ERROR(CheckIdentity());
    std::vector<report::RankSummary> ranks;
    GPUSCOPE_RETURN_IF_ERROR(ReadRanks(&ranks));
    GPUSCOPE_RETURN_IF_ERROR(ReadProcessGroups(&ranks));
    GPUSCOPE_RETURN_IF_ERROR(ReadSteps(&ranks));
    GPUSCOPE_RETURN_IF_ERROR(ReadCollectives(&ranks));
    GPUSCOPE_RETURN_IF_ERROR(ReadBusyBins(&ranks));
    if (has_replay_) GPUSCOPE_RETURN_IF_ERROR(ReadFixes(&ranks));
    return ranks;
  }

 private:
  // A summary that SQLite or our checks find inconsistent.
  Status Damaged(const std::string& what) const {
    return Status::Error(StatusCode::kInvalidInput,
                         name_ + ": damaged gpuscope summary: " + what +
                             " (hint: write it again with `gpuscope map TRACE -o FILE`)");
  }
  Status SqliteError() const {
    const int code = sqlite3_errcode(db_);
    if (code == SQLITE_NOTADB)
      return Status::Error(StatusCode::kInvalidInput,
                           name_ + ": not a gpuscope summary: not an SQLite database (" +
                               sqlite3_errmsg(db_) +
                               ") (hint: pass a file written by `gpuscope map`)");
    if (code == SQLITE_NOMEM)
      return Status::Error(StatusCode::kInternal, name_ + ": out of memory reading the summary");
    // Before `meta` was read the file is only some SQLite database: cut short, it could as well
    // be an Nsight Systems export (one whose schema pages survived is told apart before this).
    if (!identity_known_)
      return Status::Error(StatusCode::kInvalidInput,
                           name_ +
                               ": a damaged SQLite database, unreadable as a gpuscope summary "
                               "or an Nsight Systems export: " +
                               sqlite3_errmsg(db_) +
                               " (hint: the file may be cut short; a summary: write it again with "
                               "`gpuscope map TRACE -o FILE`; an export: nsys export --type sqlite "
                               "again)");
    return Damaged(std::string("SQLite: ") + sqlite3_errmsg(db_));
  }
  Status NotASummary(const std::string& what) const {
    return Status::Error(StatusCode::kInvalidInput,
                         name_ + ": an SQLite database, but not a gpuscope summary: " + what +
                             " (hint: of SQLite files gpuscope reads the summaries `gpuscope map` "
                             "writes and Nsight Systems exports (nsys export --type sqlite))");
  }

  Result<StmtPtr> Prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) {
      sqlite3_finalize(s);
      return SqliteError();
    }
    return StmtPtr(s);
  }

  // Column `c` of the current row as an integer: stored integers only (a text or real there means
  // the file was not written by us).
  bool Int(sqlite3_stmt* s, int c, int64_t* out) {
    if (sqlite3_column_type(s, c) != SQLITE_INTEGER) return false;
    *out = sqlite3_column_int64(s, c);
    return true;
  }
  bool Int32(sqlite3_stmt* s, int c, int32_t* out) {
    int64_t v = 0;
    if (!Int(s, c, &v) || v < INT32_MIN || v > INT32_MAX) return false;
    *out = static_cast<int32_t>(v);
    return true;
  }
  bool Bool(sqlite3_stmt* s, int c, bool* out) {
    int64_t v = 0;
    if (!Int(s, c, &v) || (v != 0 && v != 1)) return false;
    *out = v == 1;
    return true;
  }
  // Text as it is stored (the section's JSON, which the JSON reader checks itself).
  bool RawText(sqlite3_stmt* s, int c, std::string* out) {
    if (sqlite3_column_type(s, c) != SQLITE_TEXT) return false;
    const unsigned char* p = sqlite3_column_text(s, c);
    const int n = sqlite3_column_bytes(s, c);
    out->assign(p ? reinterpret_cast<const char*>(p) : "", static_cast<size_t>(n));
    return true;
  }
  // Text made safe at the border, as the trace reader does: no control characters, valid UTF-8.
  bool Text(sqlite3_stmt* s, int c, std::string* out) {
    std::string raw;
    if (!RawText(s, c, &raw)) return false;
    SanitizeText(raw, out);
    return true;
  }

  // Runs `s` row by row; `row` returns false on a bad value (named by `table`).
  template <typename F>
  Status ForEachRow(sqlite3_stmt* s, const char* table, F row) {
    for (;;) {
      const int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return SqliteError();
      std::string why;
      if (!row(&why)) return Damaged(std::string("table ") + table + ": " + why);
    }
  }

  Status CheckIdentity() {
    // The first read of the file: a file that is not SQLite at all fails here.
    GPUSCOPE_TRY(tables, Prepare("SELECT name, type FROM sqlite_schema"));
    std::map<std::string, std::string> types;
    Status s = ForEachRow(tables->get(), "sqlite_schema", [&](std::string*) {
      std::string name, type;
      RawText(tables->get(), 0, &name);
      RawText(tables->get(), 1, &type);
      types[name] = type;
      return true;
    });
    if (!s.ok()) return s;
    if (!types.count("meta")) {
      if (types.empty()) return NotASummary("it holds no tables");
      return NotASummary("it has no table `meta` (its tables: " + FirstNames(types) + ")");
    }
    if (types["meta"] != "table") return NotASummary("`meta` is a " + types["meta"]);
    // The meta table decides what the file is before anything else is read.
    auto meta = Prepare("SELECT key, value FROM meta");
    if (!meta.ok())
      return NotASummary(std::string("its `meta` table cannot be read: ") + sqlite3_errmsg(db_));
    std::map<std::string, std::string> values;
    s = ForEachRow(meta->get(), "meta", [&](std::string*) {
      std::string key, value;
      if (!RawText(meta->get(), 0, &key) || !RawText(meta->get(), 1, &value)) return true;
      values[key] = value;
      return true;
    });
    if (!s.ok()) return s;
    const std::string format = values["format"];
    if (format != kFormatName) {
      std::string shown;
      SanitizeText(format.substr(0, 64), &shown);
      return NotASummary(format.empty() ? "its `meta` table names no format"
                                        : "its `meta` table names format \"" + shown + "\"");
    }
    const std::string& version_text = values["format_version"];
    int64_t version = 0;
    size_t digits = 0;
    for (char c : version_text) {
      if (c < '0' || c > '9' || ++digits > 9)
        return Damaged("format_version \"" + Shown(version_text) + "\" is not a number");
      version = version * 10 + (c - '0');
    }
    if (digits == 0 || version < 1)
      return Damaged("format_version \"" + Shown(version_text) + "\" is not a version");
    if (version > kSummaryFormatVersion) {
      std::string generator =
          values.count("generator") ? Shown(values["generator"]) : "a newer gpuscope";
      return Status::Error(StatusCode::kInvalidInput,
                           name_ + ": gpuscope summary format version " + std::to_string(version) +
                               " (written by " + generator +
                               "); this gpuscope " GPUSCOPE_VERSION " reads versions up to " +
                               std::to_string(kSummaryFormatVersion) +
                               " (hint: reduce with the gpuscope that wrote it, or map the trace "
                               "again with this one)");
    }
    std::vector<const char*> needed(std::begin(kTables), std::end(kTables));
    for (const char* table : kOptionalTables)
      if (types.count(table)) needed.push_back(table);
    has_replay_ = types.count("fixes") > 0;
    identity_known_ = true;
    for (const char* table : needed) {
      auto it = types.find(table);
      if (it == types.end()) return Damaged(std::string("table `") + table + "` is missing");
      if (it->second != "table")
        return Damaged(std::string("`") + table + "` is a " + Shown(it->second) + ", not a table");
    }
    return Status::Ok();
  }

  static std::string Shown(const std::string& s) {
    std::string out;
    SanitizeText(s.substr(0, 64), &out);
    return out;
  }
  static std::string FirstNames(const std::map<std::string, std::string>& types) {
    std::string out;
    size_t n = 0;
    for (const auto& [name, type] : types) {
      if (type != "table" || name.rfind("sqlite_", 0) == 0) continue;
      if (n++ == 5) {
        out += ", …";
        break;
      }
      out += (out.empty() ? "" : ", ") + Shown(name);
    }
    return out.empty() ? "none" : out;
  }

  Status ReadRanks(std::vector<report::RankSummary>* ranks) {
    const std::string sql =
        "SELECT rank_index, path, rank, rank_source, world_size, backend, base_time_ns, "
        "absolute_clock, trace_start_ns, trace_end_ns, device_name, hostname, mean_step_ns, "
        "steady_steps, span_ns, compute_ns, exposed_communication_ns, idle_ns, verdict, "
        "busy_first_bin_start_ns, busy_bin_ns, section_json, " +
        std::string(has_replay_ ? "replayed_step_ns" : "0") + " FROM ranks ORDER BY rank_index";
    GPUSCOPE_TRY(st, Prepare(sql.c_str()));
    sqlite3_stmt* s = st->get();
    return ForEachRow(s, "ranks", [&](std::string* why) {
      int64_t index = -1;
      if (!Int(s, 0, &index) || index != static_cast<int64_t>(ranks->size())) {
        *why = "rank_index not 0, 1, 2, …";
        return false;
      }
      report::RankSummary r;
      model::RankFacts& f = r.facts;
      model::RankIdentity& id = f.identity;
      std::string source, json;
      int64_t base = 0;
      const bool has_base = sqlite3_column_type(s, 6) != SQLITE_NULL;
      if (!Text(s, 1, &id.path) || !Int32(s, 2, &id.rank) || !Text(s, 3, &source) ||
          !ParseRankSource(source, &id.rank_source) || !Int32(s, 4, &id.world_size) ||
          !Text(s, 5, &id.backend) || (has_base && !Int(s, 6, &base)) ||
          !Bool(s, 7, &id.absolute_clock) || !Int(s, 8, &id.trace_start_ns) ||
          !Int(s, 9, &id.trace_end_ns) || !Text(s, 10, &id.device_name) ||
          !Text(s, 11, &id.hostname) || !Int(s, 12, &f.mean_step_ns) ||
          !Int(s, 13, &f.steady_steps) || !Int(s, 14, &f.span_ns) || !Int(s, 15, &f.compute_ns) ||
          !Int(s, 16, &f.exposed_communication_ns) || !Int(s, 17, &f.idle_ns) ||
          !Text(s, 18, &f.verdict) || !Int(s, 19, &f.busy.first_bin_start_ns) ||
          !Int(s, 20, &f.busy.bin_ns) || !RawText(s, 21, &json) ||
          !Int(s, 22, &f.replayed_step_ns) || f.replayed_step_ns < 0 || !PlausibleFacts(f)) {
        *why =
            "rank_index " + std::to_string(index) + ": a value of the wrong type or out of range";
        return false;
      }
      if (has_base) id.base_time_ns = base;
      const std::string where = name_ + " (rank_index " + std::to_string(index) + ")";
      auto doc = render::FromJson(json, where);
      if (!doc.ok()) {
        *why = "section_json: " + doc.status().message();
        return false;
      }
      if (doc->schema != "gpuscope.report" || doc->sections.size() != 1) {
        *why = "rank_index " + std::to_string(index) +
               ": section_json is not one section of a gpuscope.report document";
        return false;
      }
      // Once more through the writer and the reader: the JSON reader takes documents a little
      // looser than the writer prints them (a finding without "saving_ns" reads as a null of no
      // unit, which is written back as a null in ns), so a section is normalised to what writing
      // gives, and a summary reads back the same however often it is written and read again.
      auto normal = render::FromJson(render::ToJson(*doc, 0), where);
      if (!normal.ok()) {
        *why = "section_json: " + normal.status().message();
        return false;
      }
      r.section = std::move(normal->sections.front());
      if (const std::string bad = ImplausibleValue(r.section); !bad.empty()) {
        *why = "rank_index " + std::to_string(index) + ": section_json: " + bad;
        return false;
      }
      ranks->push_back(std::move(r));
      return true;
    });
  }

  // Child rows come ordered by (rank_index, position); positions must run 0, 1, 2, … per rank.
  bool Position(sqlite3_stmt* s, const std::vector<report::RankSummary>& ranks, size_t current,
                size_t* rank, std::string* why) {
    int64_t ri = -1, pos = -1;
    if (!Int(s, 0, &ri) || !Int(s, 1, &pos) || ri < 0 ||
        static_cast<uint64_t>(ri) >= ranks.size()) {
      *why = "a row of no rank (rank_index " + std::to_string(ri) + ")";
      return false;
    }
    *rank = static_cast<size_t>(ri);
    if (pos != static_cast<int64_t>(current)) {
      *why = "rank_index " + std::to_string(ri) + ": positions not 0, 1, 2, … (found " +
             std::to_string(pos) + " where " + std::to_string(current) + " was due)";
      return false;
    }
    return true;
  }

  // Position of a child row (steps, collectives, …) of the rank in column 0, whose children so
  // far number count(facts): the rank (`*rank`) and that count (`*due`), or why not.
  template <typename Count>
  bool ChildPosition(sqlite3_stmt* s, const std::vector<report::RankSummary>& ranks, Count count,
                     size_t* rank, size_t* due, std::string* why) {
    const int64_t ri = sqlite3_column_int64(s, 0);
    *due = ri >= 0 && static_cast<uint64_t>(ri) < ranks.size()
               ? count(ranks[static_cast<size_t>(ri)].facts)
               : 0;
    return Position(s, ranks, *due, rank, why);
  }

  Status ReadProcessGroups(std::vector<report::RankSummary>* ranks) {
    auto st = Prepare(
        "SELECT rank_index, position, process_group FROM rank_process_groups "
        "ORDER BY rank_index, position");
    GPUSCOPE_RETURN_IF_ERROR(st.status());
    sqlite3_stmt* s = st->get();
    return ForEachRow(s, "rank_process_groups", [&](std::string* why) {
      size_t r = 0, due = 0;
      if (!ChildPosition(
              s, *ranks, [](const model::RankFacts& f) { return f.identity.process_groups.size(); },
              &r, &due, why))
        return false;
      std::string pg;
      if (!Text(s, 2, &pg)) return (*why = "process_group is not text", false);
      (*ranks)[r].facts.identity.process_groups.push_back(std::move(pg));
      return true;
    });
  }

  Status ReadSteps(std::vector<report::RankSummary>* ranks) {
    auto st = Prepare(
        "SELECT rank_index, step_index, step, start_ns, end_ns, steady FROM steps "
        "ORDER BY rank_index, step_index");
    GPUSCOPE_RETURN_IF_ERROR(st.status());
    sqlite3_stmt* s = st->get();
    return ForEachRow(s, "steps", [&](std::string* why) {
      size_t r = 0, due = 0;
      if (!ChildPosition(
              s, *ranks, [](const model::RankFacts& f) { return f.steps.size(); }, &r, &due, why))
        return false;
      model::StepSpan step;
      if (!Int32(s, 2, &step.step) || !Int(s, 3, &step.start_ns) || !Int(s, 4, &step.end_ns) ||
          !Bool(s, 5, &step.steady) || step.end_ns < step.start_ns)
        return (*why = "rank_index " + std::to_string(r) + ": a step with bad values", false);
      (*ranks)[r].facts.steps.push_back(step);
      return true;
    });
  }

  Status ReadCollectives(std::vector<report::RankSummary>* ranks) {
    // The groups first, per rank.
    std::vector<std::vector<model::CollectiveRecord>> groups(ranks->size());
    {
      auto st = Prepare(
          "SELECT rank_index, group_index, group_name, group_desc, group_ranks, group_size "
          "FROM comm_groups ORDER BY rank_index, group_index");
      GPUSCOPE_RETURN_IF_ERROR(st.status());
      sqlite3_stmt* s = st->get();
      Status status = ForEachRow(s, "comm_groups", [&](std::string* why) {
        const int64_t ri = sqlite3_column_int64(s, 0);
        const size_t due = ri >= 0 && static_cast<uint64_t>(ri) < groups.size()
                               ? groups[static_cast<size_t>(ri)].size()
                               : 0;
        size_t r = 0;
        if (!Position(s, *ranks, due, &r, why)) return false;
        model::CollectiveRecord g;
        if (!Text(s, 2, &g.group) || !Text(s, 3, &g.group_desc) || !Text(s, 4, &g.group_ranks) ||
            !Int32(s, 5, &g.group_size))
          return (*why = "rank_index " + std::to_string(r) + ": a group with bad values", false);
        groups[r].push_back(std::move(g));
        return true;
      });
      if (!status.ok()) return status;
    }
    auto st = Prepare(
        "SELECT rank_index, collective_index, group_index, seq, ordinal, type, size_bytes, dtype, "
        "start_ns, end_ns, step FROM collectives ORDER BY rank_index, collective_index");
    GPUSCOPE_RETURN_IF_ERROR(st.status());
    sqlite3_stmt* s = st->get();
    return ForEachRow(s, "collectives", [&](std::string* why) {
      size_t r = 0, due = 0;
      if (!ChildPosition(
              s, *ranks, [](const model::RankFacts& f) { return f.collectives.size(); }, &r, &due,
              why))
        return false;
      int64_t gi = -1;
      if (!Int(s, 2, &gi) || gi < 0 || static_cast<uint64_t>(gi) >= groups[r].size())
        return (*why = "rank_index " + std::to_string(r) + ": a collective of no group", false);
      model::CollectiveRecord c = groups[r][static_cast<size_t>(gi)];
      if (!Int(s, 3, &c.seq) || !Int(s, 4, &c.ordinal) || !Text(s, 5, &c.type) ||
          !Int(s, 6, &c.bytes) || !Text(s, 7, &c.dtype) || !Int(s, 8, &c.start_ns) ||
          !Int(s, 9, &c.end_ns) || !Int32(s, 10, &c.step) || c.end_ns < c.start_ns)
        return (*why = "rank_index " + std::to_string(r) + ": a collective with bad values", false);
      (*ranks)[r].facts.collectives.push_back(std::move(c));
      return true;
    });
  }

  Status ReadBusyBins(std::vector<report::RankSummary>* ranks) {
    GPUSCOPE_TRY(
        st, Prepare("SELECT rank_index, bin, busy_ns FROM busy_bins ORDER BY rank_index, bin"));
    sqlite3_stmt* s = st->get();
    return ForEachRow(s, "busy_bins", [&](std::string* why) {
      size_t r = 0, due = 0;
      if (!ChildPosition(
              s, *ranks, [](const model::RankFacts& f) { return f.busy.busy_ns.size(); }, &r, &due,
              why))
        return false;
      int64_t busy = 0;
      if (due >= model::kMaxBusyBins)
        return (*why = "rank_index " + std::to_string(r) + ": more than " +
                       std::to_string(model::kMaxBusyBins) + " busy bins",
                false);
      if (!Int(s, 2, &busy) || busy < 0)
        return (*why = "rank_index " + std::to_string(r) + ": a busy bin with a bad value", false);
      (*ranks)[r].facts.busy.busy_ns.push_back(busy);
      return true;
    });
  }

  // The headline numbers as a trace gives them: durations ≥ 0, the span's parts within the span
  // (a job's shares are parts over the span: 1e14 would print as a share of 10^16 %).
  static bool PlausibleFacts(const model::RankFacts& f) {
    return f.mean_step_ns >= 0 && f.steady_steps >= 0 && f.span_ns >= 0 && f.compute_ns >= 0 &&
           f.exposed_communication_ns >= 0 && f.idle_ns >= 0 && f.compute_ns <= f.span_ns &&
           f.exposed_communication_ns <= f.span_ns && f.idle_ns <= f.span_ns && f.busy.bin_ns >= 0;
  }
  // A share or a percentage no analysis gives (beyond ±1,000, i.e. 100,000 %), anywhere in the
  // section: named, or "" when every one is in range.
  static std::string ImplausibleValue(const render::Section& s) {
    constexpr double kMaxShare = 1e3;
    auto bad = [&](const render::Value& v) {
      if (v.kind != render::Value::Kind::kDouble && v.kind != render::Value::Kind::kInt)
        return false;
      const double x = v.AsDouble();
      return (v.unit == render::Unit::kShare && std::fabs(x) > kMaxShare) ||
             (v.unit == render::Unit::kPercent && std::fabs(x) > 100 * kMaxShare);
    };
    for (const render::Item& item : s.items) {
      if (const auto* row = std::get_if<render::Row>(&item)) {
        for (const render::Field& f : row->fields)
          if (bad(f.value)) return "row " + row->key + ": " + f.key + " is out of range";
      } else if (const auto* t = std::get_if<render::Table>(&item)) {
        for (const auto& cells : t->rows)
          for (size_t c = 0; c < cells.size(); ++c)
            if (bad(cells[c]))
              return "table " + t->key + ": " + (c < t->columns.size() ? t->columns[c].key : "?") +
                     " is out of range";
      } else if (const auto* f = std::get_if<render::Finding>(&item)) {
        if (bad(f->saving_share)) return "finding " + f->key + ": saving_share is out of range";
      }
    }
    for (const render::Section& sub : s.sections)
      if (std::string b = ImplausibleValue(sub); !b.empty()) return b;
    return "";
  }

  Status ReadFixes(std::vector<report::RankSummary>* ranks) {
    auto st = Prepare(
        "SELECT rank_index, position, fix, saving_ns FROM fixes ORDER BY rank_index, position");
    GPUSCOPE_RETURN_IF_ERROR(st.status());
    sqlite3_stmt* s = st->get();
    return ForEachRow(s, "fixes", [&](std::string* why) {
      size_t r = 0, due = 0;
      if (!ChildPosition(
              s, *ranks, [](const model::RankFacts& f) { return f.fixes.size(); }, &r, &due, why))
        return false;
      model::FixSaving f;
      // A saving is at most the rank's step: a larger one is not ours.
      if (due >= kMaxFixesPerRank || !Text(s, 2, &f.fix) || f.fix.empty() ||
          !Int(s, 3, &f.saving_ns) || f.saving_ns < 0 ||
          f.saving_ns > (*ranks)[r].facts.mean_step_ns)
        return (*why = "rank_index " + std::to_string(r) + ": a fix with bad values", false);
      (*ranks)[r].facts.fixes.push_back(std::move(f));
      return true;
    });
  }

  sqlite3* db_;
  const std::string& name_;
  bool has_replay_ = false;      // written by a gpuscope that stores the replay (table `fixes`)
  bool identity_known_ = false;  // `meta` says it is a summary
};

// A connection that refuses what a hostile file could ask of it: no writes through the schema,
// no extension loading.
void Harden(sqlite3* db) {
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
}

std::string Errno() { return std::strerror(errno); }

}  // namespace

bool LooksLikeSummaryFile(std::string_view first_bytes) {
  return first_bytes.substr(0, 16) == std::string_view("SQLite format 3\0", 16);
}

Result<std::string> SerializeSummaries(const std::vector<report::RankSummary>& ranks) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK)
    return Status::Error(StatusCode::kInternal,
                         std::string("cannot open an in-memory SQLite database: ") +
                             (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  GPUSCOPE_RETURN_IF_ERROR(FillDatabase(db.get(), ranks));
  sqlite3_int64 size = 0;
  unsigned char* bytes = sqlite3_serialize(db.get(), "main", &size, 0);
  if (bytes == nullptr)
    return Status::Error(StatusCode::kInternal, "cannot serialise the summary database");
  std::string out(reinterpret_cast<const char*>(bytes), static_cast<size_t>(size));
  sqlite3_free(bytes);
  return out;
}

Result<std::vector<report::RankSummary>> DeserializeSummaries(const std::string& bytes,
                                                              const std::string& name) {
  if (!LooksLikeSummaryFile(bytes))
    return Status::InputError(name, 0, "not a gpuscope summary: not an SQLite database",
                              "pass a file written by `gpuscope map`");
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK)
    return Status::Error(StatusCode::kInternal, "cannot open an in-memory SQLite database");
  Harden(db.get());
  // SQLite owns the copy (freed on close) and never writes to it.
  auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(bytes.size()));
  if (copy == nullptr) return Status::Error(StatusCode::kInternal, name + ": out of memory");
  std::memcpy(copy, bytes.data(), bytes.size());
  const auto size = static_cast<sqlite3_int64>(bytes.size());
  if (sqlite3_deserialize(db.get(), "main", copy, size, size,
                          SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY) !=
      SQLITE_OK)
    return Status::InputError(name, 0, "not a gpuscope summary: SQLite cannot open it",
                              "pass a file written by `gpuscope map`");
  return Reader(db.get(), name).Read();
}

Result<std::vector<report::RankSummary>> ReadSummaryFile(const std::string& path) {
  // Our own look at the first bytes first: a missing file, a folder or a file that is not SQLite
  // at all gets a plain message before SQLite sees it.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return Status::Error(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                         path + ": cannot open: " + Errno());
  char head[16];
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (!LooksLikeSummaryFile(std::string_view(head, n)))
    return Status::InputError(path, 0,
                              n == 0 ? "not a gpuscope summary: empty file"
                                     : "not a gpuscope summary: not an SQLite database",
                              "pass a file written by `gpuscope map`");
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK)
    return Status::Error(
        StatusCode::kInvalidInput,
        path + ": cannot open as SQLite: " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  Harden(db.get());
  return Reader(db.get(), path).Read();
}

Status WriteSummaryFile(const std::string& named, const std::vector<report::RankSummary>& ranks,
                        std::string* note) {
  GPUSCOPE_TRY(bytes, SerializeSummaries(ranks));
  GPUSCOPE_TRY(target, CheckReplaceablePath(named, "-o", note));
  const std::string& path = *target;
  // A temporary file beside the target, renamed over it once complete: a reader (or a job that
  // crashed half-way) never sees half a summary. The name is unique per process and call.
  static std::atomic<uint64_t> counter{0};
  // Hidden (".NAME.tmp.PID.N"), so that a reduce listing the folder meanwhile skips it.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string temp = dir + "." + base + ".tmp." + std::to_string(getpid()) + "." +
                           std::to_string(counter.fetch_add(1));
  auto fail = [&](const std::string& what) {
    const std::string why = Errno();
    unlink(temp.c_str());
    return Status::Error(StatusCode::kIoError,
                         path + ": cannot write the summary: " + what + ": " + why +
                             " (hint: check the folder exists and is writable)");
  };
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const std::string why = Errno();
    return Status::Error(StatusCode::kIoError, path + ": cannot write the summary: " + why +
                                                   " (hint: check the folder exists and is "
                                                   "writable)");
  }
  size_t done = 0;
  while (done < bytes->size()) {
    const ssize_t w = write(fd, bytes->data() + done, bytes->size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return fail("write");
    }
    done += static_cast<size_t>(w);
  }
  if (fsync(fd) != 0) {
    close(fd);
    return fail("fsync");
  }
  if (close(fd) != 0) return fail("close");
  if (rename(temp.c_str(), path.c_str()) != 0) return fail("rename");
  return Status::Ok();
}

}  // namespace gpuscope::store
