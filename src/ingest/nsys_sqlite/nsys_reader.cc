#include "ingest/nsys_sqlite/nsys_reader.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "base/sanitize.h"
#include "ingest/common/linker.h"
#include "ingest/kineto_json/event_parser.h"
#include "model/dedup.h"

namespace gpuscope::ingest {

namespace {

constexpr const char* kKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr const char* kSyncTable = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr const char* kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kNvtxTable = "NVTX_EVENTS";

// Export schema versions this reader was written against (major * 1000 + minor).
constexpr int kOldestSchema = 2 * 1000 + 9;
constexpr int kNewestSchema = 3 * 1000 + 23;

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

struct StmtCloser {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtCloser>;

Status Fail(const std::string& name, const std::string& what, const std::string& hint) {
  std::string message = name + ": " + what;
  if (!hint.empty()) message += " (hint: " + hint + ")";
  return Status::Error(StatusCode::kInvalidInput, std::move(message));
}

constexpr const char* kExportHint =
    "export the report with `nsys export --type sqlite --output report.sqlite report.nsys-rep`";

Status SqliteFail(const std::string& name, sqlite3* db, const std::string& doing) {
  const int code = db ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
  const int primary = code & 0xFF;
  std::string hint =
      "the file may be cut short or damaged; export it again (" + std::string(kExportHint) + ")";
  if (primary == SQLITE_NOTADB)
    hint = "the bytes after the SQLite header are not a database; " + hint;
  return Fail(name, "cannot read the SQLite database while " + doing + ": " + SanitizeText(msg),
              hint);
}

void Harden(sqlite3* db) {
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
}

// "file:" URI of a path: every byte but unreserved ones and '/' percent-encoded.
std::string FileUri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '/' ||
        c == '-' || c == '_' || c == '.' || c == '~') {
      uri.push_back(static_cast<char>(c));
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + "?mode=ro&immutable=1";
}

Result<DbPtr> OpenPath(const std::string& path, const std::string& name) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(FileUri(path).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) return SqliteFail(name, db.get(), "opening it");
  Harden(db.get());
  return db;
}

// Reads the whole stream into an sqlite3_malloc'd buffer and hands it to SQLite (read-only; SQLite
// frees it on close).
Result<DbPtr> OpenInMemory(io::ByteSource& source, const std::string& name, uint64_t limit) {
  size_t cap = size_t{1} << 20, size = 0;
  auto* buf = static_cast<unsigned char*>(sqlite3_malloc64(cap));
  if (buf == nullptr) return Status::Error(StatusCode::kInternal, name + ": out of memory");
  for (;;) {
    if (size == cap) {
      if (cap >= limit) {
        sqlite3_free(buf);
        return Fail(name,
                    "an SQLite export of more than " + std::to_string(limit >> 20) +
                        " MiB arrived on a pipe or inside gzip; SQLite needs the whole database",
                    "pass the .sqlite file itself (it is opened in place, read-only, whatever "
                    "its size), or gunzip it first");
      }
      const size_t next = static_cast<size_t>(std::min<uint64_t>(uint64_t{cap} * 2, limit));
      auto* grown = static_cast<unsigned char*>(sqlite3_realloc64(buf, next));
      if (grown == nullptr) {
        sqlite3_free(buf);
        return Status::Error(StatusCode::kInternal, name + ": out of memory");
      }
      buf = grown, cap = next;
    }
    auto n = source.Read(reinterpret_cast<char*>(buf) + size, cap - size);
    if (!n.ok()) {
      sqlite3_free(buf);
      return n.status();
    }
    if (*n == 0) break;
    size += *n;
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) {
    sqlite3_free(buf);
    return Status::Error(StatusCode::kInternal, "cannot open an in-memory SQLite database");
  }
  Harden(db.get());
  if (sqlite3_deserialize(
          db.get(), "main", buf, static_cast<sqlite3_int64>(size), static_cast<sqlite3_int64>(cap),
          SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY) != SQLITE_OK)
    return SqliteFail(name, db.get(), "loading it into memory");
  return db;
}

// The input names a regular file of this size: open it in place.
bool IsThisRegularFile(const io::ByteSource& source, const std::string& name) {
  if (source.is_gzip() || source.file_size() < 0 || name.empty() || name == "<stdin>") return false;
  struct stat st;
  if (stat(name.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return st.st_size == source.file_size();
}

class Reader {
 public:
  Reader(sqlite3* db, const std::string& name, Trace* trace) : db_(db), name_(name), t_(*trace) {}

  Status Read();

 private:
  // Statement over `sql`; an SQLite error becomes a message naming the file and what was read.
  Result<StmtPtr> Prepare(const std::string& sql, const std::string& doing) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
      sqlite3_finalize(raw);
      return SqliteFail(name_, db_, doing);
    }
    return StmtPtr(raw);
  }
  // Steps `s`: true on a row, false at the end; an error is kept in status_.
  bool Step(sqlite3_stmt* s, const std::string& doing) {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE && status_.ok()) status_ = SqliteFail(name_, db_, doing);
    return false;
  }

  Status ReadTables();
  Status ReadSchemaVersion();
  std::set<std::string> Columns(const std::string& table);
  Status ReadStrings();
  StringId Intern(std::string_view s);
  StringId StringOf(int64_t id);
  std::string SelectList(const std::string& table, const std::vector<std::string>& wanted,
                         const std::set<std::string>& have);
  Status RequireColumns(const std::string& table, const std::set<std::string>& have,
                        std::initializer_list<const char*> required);
  Status ReadKernels();
  Status ReadCopies(bool memset);
  Status ReadSyncs();
  Status ReadRuntime();
  Status ReadNvtx();
  Status ReadDevices();
  void ReadThreadNames();
  void ReadSessionStart();
  void ScopeCorrelations();
  void Note(std::string note) { t_.info.notes.push_back(std::move(note)); }
  bool Has(const char* table) const { return tables_.count(table) > 0; }
  // Appends one GPU row with every column at its "absent" value; the caller sets the rest.
  size_t AddGpuRow(GpuKind kind, int64_t start, int64_t end, StringId name, int64_t device,
                   int64_t stream, int64_t correlation);

  sqlite3* db_;
  const std::string& name_;
  Trace& t_;
  Status status_;
  std::set<std::string> tables_;
  std::string schema_ = "unknown";
  bool schema_known_ = false;
  std::unordered_map<int64_t, std::string> raw_strings_;
  std::unordered_map<int64_t, StringId> interned_;
  std::map<int64_t, int32_t> sm_count_;  // CUDA device id → SMs (blocks and warps per SM)
  std::map<int64_t, int32_t> warp_size_;
  std::vector<int64_t> gpu_process_;  // per GPU row: its globalPid (-1 if absent)
};

StringId Reader::Intern(std::string_view s) {
  if (!NeedsSanitizing(s)) return t_.strings.Intern(s);
  std::string clean;
  const SanitizeFixes fixes = SanitizeText(s, &clean);
  if (fixes.control) t_.diagnostics.Add(Diag::kControlCharacter, -1);
  if (fixes.invalid_utf8) t_.diagnostics.Add(Diag::kInvalidUtf8, -1);
  return t_.strings.Intern(clean);
}

StringId Reader::StringOf(int64_t id) {
  if (auto it = interned_.find(id); it != interned_.end()) return it->second;
  auto raw = raw_strings_.find(id);
  const StringId s = raw == raw_strings_.end() ? kEmptyString : Intern(raw->second);
  if (raw == raw_strings_.end()) t_.diagnostics.Add(Diag::kMissingName, -1);
  interned_.emplace(id, s);
  return s;
}

std::string Quote(const std::string& identifier) {
  std::string q = "\"";
  for (char c : identifier) {
    if (c == '"') q.push_back('"');
    q.push_back(c);
  }
  return q + "\"";
}

std::set<std::string> Reader::Columns(const std::string& table) {
  std::set<std::string> cols;
  auto s = Prepare("PRAGMA table_info(" + Quote(table) + ")", "listing the columns of " + table);
  if (!s.ok()) {
    if (status_.ok()) status_ = s.status();
    return cols;
  }
  while (Step(s->get(), "listing the columns of " + table)) {
    const unsigned char* c = sqlite3_column_text(s->get(), 1);
    if (c) cols.insert(reinterpret_cast<const char*>(c));
  }
  return cols;
}

// "a, b, NULL, d": the wanted columns in order, NULL for those the table lacks.
std::string Reader::SelectList(const std::string& table, const std::vector<std::string>& wanted,
                               const std::set<std::string>& have) {
  std::string out;
  for (const std::string& c : wanted) {
    if (!out.empty()) out += ", ";
    out += have.count(c) ? Quote(table) + "." + Quote(c) : std::string("NULL");
  }
  return out;
}

Status Reader::RequireColumns(const std::string& table, const std::set<std::string>& have,
                              std::initializer_list<const char*> required) {
  std::string missing;
  for (const char* c : required)
    if (!have.count(c)) missing += std::string(missing.empty() ? "" : ", ") + c;
  if (missing.empty()) return Status::Ok();
  return Fail(name_,
              "table " + table + " has no column " + missing + " (export schema " + schema_ +
                  (schema_known_ ? ")" : ", which this reader does not know)"),
              "gpuscope reads nsys export schemas 2.9 to 3.23; export the report with an nsys "
              "of that range, or report the schema at the gpuscope issue tracker");
}

Status Reader::ReadTables() {
  GPUSCOPE_TRY(
      s, Prepare("SELECT name FROM sqlite_master WHERE type = 'table'", "listing its tables"));
  while (Step(s->get(), "listing its tables")) {
    const unsigned char* c = sqlite3_column_text(s->get(), 0);
    if (c) tables_.insert(reinterpret_cast<const char*>(c));
  }
  if (!status_.ok()) return status_;
  bool nsys = Has("META_DATA_EXPORT") || Has("EXPORT_META_DATA");
  for (const std::string& table : tables_)
    if (table.rfind("CUPTI_ACTIVITY_KIND_", 0) == 0 || table == kNvtxTable ||
        table == "TARGET_INFO_GPU")
      nsys = true;
  if (nsys) return Status::Ok();
  std::string what =
      "an SQLite database, but not an Nsight Systems export: it has no "
      "META_DATA_EXPORT (or EXPORT_META_DATA) table and no CUPTI_ACTIVITY_KIND_* "
      "table";
  if (tables_.empty()) what = "an empty SQLite database (no tables), not an Nsight Systems export";
  if (Has("meta") && Has("ranks"))
    what = "a gpuscope summary (from `gpuscope map`), not a profiler trace";
  return Fail(name_, what,
              Has("meta") ? "`gpuscope reduce FILE` and `gpuscope analyze FILE` read summaries"
                          : kExportHint);
}

Status Reader::ReadSchemaVersion() {
  const char* table = Has("META_DATA_EXPORT")   ? "META_DATA_EXPORT"
                      : Has("EXPORT_META_DATA") ? "EXPORT_META_DATA"
                                                : nullptr;
  std::string version;
  if (table != nullptr) {
    const std::set<std::string> cols = Columns(table);
    if (cols.count("name") && cols.count("value")) {
      GPUSCOPE_TRY(
          s, Prepare(std::string("SELECT name, value FROM ") + table, "reading its metadata"));
      while (Step(s->get(), "reading its metadata")) {
        const unsigned char* k = sqlite3_column_text(s->get(), 0);
        const unsigned char* v = sqlite3_column_text(s->get(), 1);
        if (k && v && std::string_view(reinterpret_cast<const char*>(k)) == "EXPORT_SCHEMA_VERSION")
          version = SanitizeText(reinterpret_cast<const char*>(v)).substr(0, 40);
      }
      if (!status_.ok()) return status_;
    }
  }
  int major = -1, minor = -1;
  if (!version.empty()) {
    schema_ = version;
    if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) major = minor = -1;
  }
  const int v = major * 1000 + minor;
  schema_known_ =
      major >= 0 && minor >= 0 && minor < 1000 && v >= kOldestSchema && v <= kNewestSchema;
  t_.info.trace_name = "nsys export schema " + schema_;
  if (!schema_known_)
    Note("nsys export schema " + schema_ +
         " is not one this reader knows (2.9 to 3.23): the tables and columns it recognises "
         "were read, the rest left out");
  return Status::Ok();
}

Status Reader::ReadStrings() {
  if (!Has("StringIds")) return Status::Ok();
  const std::set<std::string> cols = Columns("StringIds");
  if (!status_.ok()) return status_;
  if (!cols.count("id") || !cols.count("value")) return Status::Ok();
  GPUSCOPE_TRY(s, Prepare("SELECT id, value FROM StringIds", "reading StringIds"));
  while (Step(s->get(), "reading StringIds")) {
    const unsigned char* v = sqlite3_column_text(s->get(), 1);
    const int n = sqlite3_column_bytes(s->get(), 1);
    raw_strings_[sqlite3_column_int64(s->get(), 0)] =
        v ? std::string(reinterpret_cast<const char*>(v), static_cast<size_t>(n)) : std::string();
  }
  return status_;
}

size_t Reader::AddGpuRow(GpuKind kind, int64_t start, int64_t end, StringId name, int64_t device,
                         int64_t stream, int64_t correlation) {
  GpuActivityTable& g = t_.gpu;
  g.kind.push_back(kind);
  g.start_ns.push_back(start);
  g.dur_ns.push_back(end - start);
  g.name.push_back(name);
  g.pid.push_back(device);
  g.tid.push_back(stream);
  g.device.push_back(static_cast<int32_t>(device));
  g.stream.push_back(stream);
  g.correlation.push_back(correlation);
  g.external_id.push_back(-1);
  g.launch.push_back(-1);
  g.grid.push_back({0, 0, 0});
  g.block.push_back({0, 0, 0});
  g.registers_per_thread.push_back(0);
  g.shared_memory_bytes.push_back(0);
  g.blocks_per_sm.push_back(0);
  g.warps_per_sm.push_back(0);
  g.est_occupancy_pct.push_back(-1);
  g.bytes.push_back(-1);
  g.bandwidth_gbps.push_back(-1);
  g.copy_direction.push_back(CopyDirection::kUnknown);
  g.src_kind.push_back(MemoryKind::kUnknown);
  g.dst_kind.push_back(MemoryKind::kUnknown);
  g.sync_kind.push_back(SyncKind::kNone);
  return g.size() - 1;
}

// Every column of an event row but `text_col` holds an integer (times, ids, sizes, StringIds):
// SQLite keeps whatever a column is given, and a TEXT or REAL where an integer belongs would read
// as 0 (or a truncated number). Such a row is malformed: counted, and skipped.
bool WellTyped(sqlite3_stmt* s, Diagnostics* d, int text_col = -1) {
  const int n = sqlite3_column_count(s);
  for (int c = 0; c < n; ++c) {
    if (c == text_col) continue;
    const int type = sqlite3_column_type(s, c);
    if (type != SQLITE_INTEGER && type != SQLITE_NULL) {
      d->Add(Diag::kWrongColumnType, -1);
      return false;
    }
  }
  return true;
}

// NULL → fallback.
int64_t Int(sqlite3_stmt* s, int col, int64_t fallback) {
  return sqlite3_column_type(s, col) == SQLITE_NULL ? fallback : sqlite3_column_int64(s, col);
}

// Start/end of a row; false (and the row counted as skipped) when unusable.
bool Times(sqlite3_stmt* s, Diagnostics* d, int64_t* start, int64_t* end) {
  if (sqlite3_column_type(s, 0) == SQLITE_NULL) {
    d->Add(Diag::kMissingTimestamp, -1);
    return false;
  }
  if (sqlite3_column_type(s, 1) == SQLITE_NULL) {
    d->Add(Diag::kMissingDuration, -1);
    return false;
  }
  *start = sqlite3_column_int64(s, 0);
  *end = sqlite3_column_int64(s, 1);
  // ±2^61 ns is ±73 years from the session start: beyond it a time is damage, and the sums the
  // analyses take over durations stay far from overflowing.
  constexpr int64_t kLimit = int64_t{1} << 61;
  if (*start < -kLimit || *start > kLimit || *end < -kLimit || *end > kLimit) {
    d->Add(Diag::kIntegerOutOfRange, -1);
    return false;
  }
  if (*end < *start) {
    d->Add(Diag::kNegativeDuration, -1);
    return false;
  }
  return true;
}

int32_t Clamp32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
}
// A size or count: negative values (damage) are 0.
int32_t Size32(int64_t v) { return static_cast<int32_t>(std::clamp<int64_t>(v, 0, INT32_MAX)); }

Status Reader::ReadKernels() {
  if (!Has(kKernelTable)) return Status::Ok();
  const std::set<std::string> have = Columns(kKernelTable);
  if (!status_.ok()) return status_;
  GPUSCOPE_RETURN_IF_ERROR(RequireColumns(kKernelTable, have, {"start", "end"}));
  const std::vector<std::string> cols = {"start",
                                         "end",
                                         "deviceId",
                                         "streamId",
                                         "correlationId",
                                         "demangledName",
                                         "shortName",
                                         "mangledName",
                                         "registersPerThread",
                                         "gridX",
                                         "gridY",
                                         "gridZ",
                                         "blockX",
                                         "blockY",
                                         "blockZ",
                                         "staticSharedMemory",
                                         "dynamicSharedMemory",
                                         "globalPid"};
  auto s = Prepare(
      "SELECT " + SelectList(kKernelTable, cols, have) + " FROM " + kKernelTable + " ORDER BY 1",
      "reading kernels");
  GPUSCOPE_RETURN_IF_ERROR(s.status());
  sqlite3_stmt* q = s->get();
  while (Step(q, "reading kernels")) {
    if (!WellTyped(q, &t_.diagnostics)) continue;
    int64_t start = 0, end = 0;
    if (!Times(q, &t_.diagnostics, &start, &end)) continue;
    StringId name = kEmptyString;
    for (int c : {5, 6, 7})
      if (sqlite3_column_type(q, c) != SQLITE_NULL) {
        name = StringOf(sqlite3_column_int64(q, c));
        break;
      }
    if (name == kEmptyString) t_.diagnostics.Add(Diag::kMissingName, -1);
    const int64_t device = Int(q, 2, -1);
    const size_t i =
        AddGpuRow(GpuKind::kKernel, start, end, name, device, Int(q, 3, -1), Int(q, 4, -1));
    gpu_process_.push_back(Int(q, 17, -1));
    GpuActivityTable& g = t_.gpu;
    g.registers_per_thread[i] = Size32(Int(q, 8, 0));
    g.grid[i] = {Size32(Int(q, 9, 0)), Size32(Int(q, 10, 0)), Size32(Int(q, 11, 0))};
    g.block[i] = {Size32(Int(q, 12, 0)), Size32(Int(q, 13, 0)), Size32(Int(q, 14, 0))};
    g.shared_memory_bytes[i] =
        Size32(std::min<int64_t>(Size32(Int(q, 15, 0)), INT32_MAX) + Size32(Int(q, 16, 0)));
    // As Kineto computes them: blocks per SM and warps per SM from the grid and the SM count.
    if (auto sm = sm_count_.find(device); sm != sm_count_.end() && sm->second > 0) {
      const double blocks =
          static_cast<double>(g.grid[i][0]) * g.grid[i][1] * static_cast<double>(g.grid[i][2]);
      const double threads =
          static_cast<double>(g.block[i][0]) * g.block[i][1] * static_cast<double>(g.block[i][2]);
      const auto ws = warp_size_.find(device);
      const double warp = ws != warp_size_.end() && ws->second > 0 ? ws->second : 32;
      g.blocks_per_sm[i] = static_cast<float>(blocks / sm->second);
      g.warps_per_sm[i] = static_cast<float>(blocks * std::ceil(threads / warp) / sm->second);
    }
  }
  return status_;
}

CopyDirection DirectionOf(int64_t copy_kind) {
  switch (copy_kind) {  // ENUM_CUDA_MEMCPY_OPER
    case 1:             // HTOD
    case 3:             // HTOA
    case 11:            // UVM_HTOD
      return CopyDirection::kHtoD;
    case 2:   // DTOH
    case 4:   // ATOH
    case 12:  // UVM_DTOH
      return CopyDirection::kDtoH;
    case 5:   // ATOA
    case 6:   // ATOD
    case 7:   // DTOA
    case 8:   // DTOD
    case 13:  // UVM_DTOD
      return CopyDirection::kDtoD;
    case 9:
      return CopyDirection::kHtoH;
    case 10:
      return CopyDirection::kPtoP;
    default:
      return CopyDirection::kUnknown;
  }
}

MemoryKind MemoryOf(int64_t kind) {
  switch (kind) {  // ENUM_CUDA_MEM_KIND
    case 0:
      return MemoryKind::kPageable;
    case 1:
      return MemoryKind::kPinned;
    case 2:
    case 5:  // device static
      return MemoryKind::kDevice;
    case 3:
      return MemoryKind::kArray;
    case 4:
    case 6:  // managed static
      return MemoryKind::kManaged;
    default:
      return MemoryKind::kUnknown;
  }
}

// The names Kineto's memcpy events carry ("Memcpy HtoD (Pageable -> Device)"): the model's, with
// the unknown kinds spelled "Unknown".
const char* DirectionText(CopyDirection d) {
  return d == CopyDirection::kUnknown ? "Unknown" : CopyDirectionName(d);
}
const char* MemoryText(MemoryKind k) {
  return k == MemoryKind::kUnknown ? "Unknown" : MemoryKindName(k);
}

Status Reader::ReadCopies(bool memset) {
  const char* table = memset ? kMemsetTable : kMemcpyTable;
  if (!Has(table)) return Status::Ok();
  const std::set<std::string> have = Columns(table);
  if (!status_.ok()) return status_;
  GPUSCOPE_RETURN_IF_ERROR(RequireColumns(table, have, {"start", "end"}));
  const std::vector<std::string> cols =
      memset
          ? std::vector<std::string>{"start", "end",     "deviceId", "streamId", "correlationId",
                                     "bytes", "memKind", "memKind",  "memKind",  "globalPid"}
          : std::vector<std::string>{"start", "end",      "deviceId", "streamId", "correlationId",
                                     "bytes", "copyKind", "srcKind",  "dstKind",  "globalPid"};
  auto s = Prepare("SELECT " + SelectList(table, cols, have) + " FROM " + table + " ORDER BY 1",
                   memset ? "reading memsets" : "reading memcpys");
  GPUSCOPE_RETURN_IF_ERROR(s.status());
  sqlite3_stmt* q = s->get();
  while (Step(q, "reading copies")) {
    if (!WellTyped(q, &t_.diagnostics)) continue;
    int64_t start = 0, end = 0;
    if (!Times(q, &t_.diagnostics, &start, &end)) continue;
    // Named as Kineto names them: "Memcpy HtoD (Pageable -> Device)", "Memset (Device)".
    const CopyDirection dir = memset ? CopyDirection::kUnknown : DirectionOf(Int(q, 6, 0));
    const MemoryKind src = MemoryOf(Int(q, 7, 7)), dst = MemoryOf(Int(q, 8, 7));
    const std::string label = memset ? std::string("Memset (") + MemoryText(dst) + ")"
                                     : std::string("Memcpy ") + DirectionText(dir) + " (" +
                                           MemoryText(src) + " -> " + MemoryText(dst) + ")";
    const size_t i =
        AddGpuRow(memset ? GpuKind::kMemset : GpuKind::kMemcpy, start, end,
                  t_.strings.Intern(label), Int(q, 2, -1), Int(q, 3, -1), Int(q, 4, -1));
    gpu_process_.push_back(Int(q, 9, -1));
    GpuActivityTable& g = t_.gpu;
    g.bytes[i] = std::max<int64_t>(-1, Int(q, 5, -1));
    if (g.bytes[i] >= 0 && end > start)  // bytes per ns = GB/s, as Kineto reports it
      g.bandwidth_gbps[i] = static_cast<float>(static_cast<double>(g.bytes[i]) / (end - start));
    g.copy_direction[i] = dir;
    g.src_kind[i] = memset ? MemoryKind::kUnknown : src;
    g.dst_kind[i] = dst;
  }
  return status_;
}

Status Reader::ReadSyncs() {
  if (!Has(kSyncTable)) return Status::Ok();
  const std::set<std::string> have = Columns(kSyncTable);
  if (!status_.ok()) return status_;
  GPUSCOPE_RETURN_IF_ERROR(RequireColumns(kSyncTable, have, {"start", "end"}));
  const std::vector<std::string> cols = {
      "start",         "end",      "deviceId",           "streamId",
      "correlationId", "syncType", "deprecatedSyncType", "globalPid"};
  auto s = Prepare(
      "SELECT " + SelectList(kSyncTable, cols, have) + " FROM " + kSyncTable + " ORDER BY 1",
      "reading synchronisations");
  GPUSCOPE_RETURN_IF_ERROR(s.status());
  sqlite3_stmt* q = s->get();
  while (Step(q, "reading synchronisations")) {
    if (!WellTyped(q, &t_.diagnostics)) continue;
    int64_t start = 0, end = 0;
    if (!Times(q, &t_.diagnostics, &start, &end)) continue;
    SyncKind kind = SyncKind::kOther;
    const char* label = "Unknown Sync";
    switch (Int(q, 5, Int(q, 6, 0))) {  // ENUM_CUPTI_SYNC_TYPE
      case 1:
        kind = SyncKind::kEventSync, label = "Event Sync";
        break;
      case 2:
        kind = SyncKind::kStreamWaitEvent, label = "Stream Wait Event";
        break;
      case 3:
        kind = SyncKind::kStreamSync, label = "Stream Sync";
        break;
      case 4:
        kind = SyncKind::kContextSync, label = "Context Sync";
        break;
      default:
        break;
    }
    const size_t i = AddGpuRow(GpuKind::kSync, start, end, t_.strings.Intern(label), Int(q, 2, -1),
                               Int(q, 3, -1), Int(q, 4, -1));
    gpu_process_.push_back(Int(q, 7, -1));
    t_.gpu.sync_kind[i] = kind;
  }
  return status_;
}

std::string Plural(uint64_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// Serialized GlobalId of a thread: pid in bits 24–47, tid in bits 0–23.
TraceId PidOf(int64_t global_tid) { return (global_tid >> 24) & 0xFFFFFF; }
TraceId TidOf(int64_t global_tid) { return global_tid & 0xFFFFFF; }

// "cudaLaunchKernel_v7000" → "cudaLaunchKernel" (Kineto names calls without the version).
std::string_view WithoutVersion(std::string_view name) {
  const size_t pos = name.rfind("_v");
  if (pos == std::string_view::npos || pos + 2 >= name.size()) return name;
  for (size_t i = pos + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, pos);
}

Status Reader::ReadRuntime() {
  if (!Has(kRuntimeTable)) return Status::Ok();
  const std::set<std::string> have = Columns(kRuntimeTable);
  if (!status_.ok()) return status_;
  GPUSCOPE_RETURN_IF_ERROR(RequireColumns(kRuntimeTable, have, {"start", "end"}));
  const std::vector<std::string> cols = {"start", "end", "globalTid", "correlationId", "nameId"};
  auto s = Prepare(
      "SELECT " + SelectList(kRuntimeTable, cols, have) + " FROM " + kRuntimeTable + " ORDER BY 1",
      "reading CUDA API calls");
  GPUSCOPE_RETURN_IF_ERROR(s.status());
  sqlite3_stmt* q = s->get();
  std::unordered_map<int64_t, std::pair<StringId, bool>> names;  // nameId → name, is driver
  RuntimeCallTable& r = t_.runtime;
  while (Step(q, "reading CUDA API calls")) {
    if (!WellTyped(q, &t_.diagnostics)) continue;
    int64_t start = 0, end = 0;
    if (!Times(q, &t_.diagnostics, &start, &end)) continue;
    const int64_t name_id = Int(q, 4, -1);
    auto it = names.find(name_id);
    if (it == names.end()) {
      const StringId raw = name_id >= 0 ? StringOf(name_id) : kEmptyString;
      const std::string_view full = t_.Str(raw);
      const std::string_view bare = WithoutVersion(full);
      const bool driver =
          bare.size() > 2 && bare.substr(0, 2) == "cu" && bare.substr(0, 4) != "cuda";
      it = names.emplace(name_id, std::make_pair(t_.strings.Intern(bare), driver)).first;
    }
    const int64_t gtid = Int(q, 2, -1);
    r.start_ns.push_back(start);
    r.dur_ns.push_back(end - start);
    r.name.push_back(it->second.first);
    r.pid.push_back(gtid >= 0 ? PidOf(gtid) : -1);
    r.tid.push_back(gtid >= 0 ? TidOf(gtid) : -1);
    r.correlation.push_back(Int(q, 3, -1));
    r.external_id.push_back(-1);
    r.cbid.push_back(-1);
    r.kind.push_back(ClassifyRuntime(t_.Str(it->second.first)));
    r.is_driver.push_back(it->second.second ? 1 : 0);
  }
  return status_;
}

Status Reader::ReadNvtx() {
  if (!Has(kNvtxTable)) return Status::Ok();
  const std::set<std::string> have = Columns(kNvtxTable);
  if (!status_.ok()) return status_;
  GPUSCOPE_RETURN_IF_ERROR(RequireColumns(kNvtxTable, have, {"start"}));
  const std::vector<std::string> cols = {"start", "end",    "globalTid",
                                         "text",  "textId", "eventType"};
  auto s = Prepare(
      "SELECT " + SelectList(kNvtxTable, cols, have) + " FROM " + kNvtxTable + " ORDER BY 1",
      "reading NVTX ranges");
  GPUSCOPE_RETURN_IF_ERROR(s.status());
  sqlite3_stmt* q = s->get();
  CpuOpTable& c = t_.cpu;
  uint64_t open_ranges = 0;
  while (Step(q, "reading NVTX ranges")) {
    if (!WellTyped(q, &t_.diagnostics, /*text_col=*/3)) continue;
    // Ranges only (ENUM_NSYS_EVENT_TYPE): push/pop and start/end, of NVTX and NVTXT; marks and
    // domain or thread naming events are not ranges.
    const int64_t type = Int(q, 5, 59);
    if (type != 59 && type != 60 && type != 70 && type != 71) continue;
    if (sqlite3_column_type(q, 1) == SQLITE_NULL) {  // a range never closed
      ++open_ranges;
      t_.diagnostics.Add(Diag::kUnmatchedBegin, -1);
      continue;
    }
    int64_t start = 0, end = 0;
    if (!Times(q, &t_.diagnostics, &start, &end)) continue;
    StringId name = kEmptyString;
    if (sqlite3_column_type(q, 3) != SQLITE_NULL) {
      const unsigned char* text = sqlite3_column_text(q, 3);
      const int n = sqlite3_column_bytes(q, 3);
      name = Intern(std::string_view(reinterpret_cast<const char*>(text), static_cast<size_t>(n)));
    } else if (sqlite3_column_type(q, 4) != SQLITE_NULL) {
      name = StringOf(sqlite3_column_int64(q, 4));
    } else {
      t_.diagnostics.Add(Diag::kMissingName, -1);
    }
    const int64_t gtid = Int(q, 2, -1);
    const std::string_view text = t_.Str(name);
    c.start_ns.push_back(start);
    c.dur_ns.push_back(end - start);
    c.name.push_back(name);
    c.pid.push_back(gtid >= 0 ? PidOf(gtid) : -1);
    c.tid.push_back(gtid >= 0 ? TidOf(gtid) : -1);
    c.external_id.push_back(-1);
    c.kind.push_back(CpuKind::kUserAnnotation);
    c.step.push_back(ProfilerStepNumber(text));
    c.is_dataloader.push_back(IsDataLoaderName(text) ? 1 : 0);
  }
  if (open_ranges > 0)
    Note(std::to_string(open_ranges) +
         " NVTX ranges were still open when the capture ended (no end time); left out");
  return status_;
}

Status Reader::ReadDevices() {
  // CUDA device ids by nsys GPU id, per process (TARGET_INFO_CUDA_DEVICE; the GPU rows name the
  // CUDA device the process saw, which CUDA_VISIBLE_DEVICES renumbers).
  std::map<int64_t, int64_t> cuda_id;
  if (Has("TARGET_INFO_CUDA_DEVICE")) {
    const std::set<std::string> have = Columns("TARGET_INFO_CUDA_DEVICE");
    if (have.count("gpuId") && have.count("cudaId")) {
      GPUSCOPE_TRY(s, Prepare("SELECT gpuId, cudaId FROM TARGET_INFO_CUDA_DEVICE", "reading GPUs"));
      while (Step(s->get(), "reading GPUs"))
        if (sqlite3_column_type(s->get(), 0) != SQLITE_NULL)
          cuda_id.emplace(sqlite3_column_int64(s->get(), 0), sqlite3_column_int64(s->get(), 1));
      if (!status_.ok()) return status_;
    }
  }
  if (!Has("TARGET_INFO_GPU")) {
    Note("no TARGET_INFO_GPU table: the GPU's name, memory and SM count were not recorded");
    return Status::Ok();
  }
  const std::set<std::string> have = Columns("TARGET_INFO_GPU");
  if (!status_.ok()) return status_;
  const std::vector<std::string> cols = {"id",
                                         "name",
                                         "totalMemory",
                                         "smCount",
                                         "computeMajor",
                                         "computeMinor",
                                         "cuDevice",
                                         "threadsPerWarp",
                                         "maxWarpsPerSm",
                                         "maxThreadsPerBlock",
                                         "maxRegistersPerSm",
                                         "maxShmemPerSm"};
  auto s = Prepare(
      "SELECT " + SelectList("TARGET_INFO_GPU", cols, have) + " FROM TARGET_INFO_GPU ORDER BY 1",
      "reading GPUs");
  GPUSCOPE_RETURN_IF_ERROR(s.status());
  sqlite3_stmt* q = s->get();
  while (Step(q, "reading GPUs")) {
    DeviceProperties d;
    const int64_t gpu_id = Int(q, 0, -1);
    int64_t id = Int(q, 6, gpu_id);
    if (auto it = cuda_id.find(gpu_id); it != cuda_id.end()) id = it->second;
    d.id = Clamp32(id);
    if (const unsigned char* n = sqlite3_column_text(q, 1))
      d.name = SanitizeText(reinterpret_cast<const char*>(n));
    d.total_global_mem_bytes = Int(q, 2, -1);
    d.num_sms = Clamp32(Int(q, 3, -1));
    d.compute_major = Clamp32(Int(q, 4, -1));
    d.compute_minor = Clamp32(Int(q, 5, -1));
    d.warp_size = Clamp32(Int(q, 7, -1));
    const int64_t warps = Size32(Int(q, 8, -1));
    if (warps > 0 && d.warp_size > 0) d.max_threads_per_sm = Clamp32(warps * d.warp_size);
    d.max_threads_per_block = Clamp32(Int(q, 9, -1));
    d.regs_per_sm = Int(q, 10, -1);
    d.shared_mem_per_sm_bytes = Int(q, 11, -1);
    // One entry per CUDA device id (several nsys GPUs can map to CUDA device 0 of different
    // processes; the first is kept).
    bool seen = false;
    for (const DeviceProperties& e : t_.devices) seen = seen || e.id == d.id;
    if (seen) continue;
    if (d.num_sms > 0) sm_count_[d.id] = d.num_sms;
    if (d.warp_size > 0) warp_size_[d.id] = d.warp_size;
    t_.devices.push_back(std::move(d));
  }
  return status_;
}

void Reader::ReadThreadNames() {
  if (!Has("ThreadNames")) return;
  const std::set<std::string> have = Columns("ThreadNames");
  if (!have.count("nameId") || !have.count("globalTid")) return;
  auto s = Prepare("SELECT globalTid, nameId FROM ThreadNames", "reading thread names");
  if (!s.ok()) return;
  while (Step(s->get(), "reading thread names")) {
    if (sqlite3_column_type(s->get(), 0) == SQLITE_NULL) continue;
    const int64_t gtid = sqlite3_column_int64(s->get(), 0);
    t_.metadata.thread_names[{PidOf(gtid), TidOf(gtid)}] =
        std::string(t_.Str(StringOf(sqlite3_column_int64(s->get(), 1))));
  }
}

void Reader::ReadSessionStart() {
  if (!Has("TARGET_INFO_SESSION_START_TIME")) return;
  if (!Columns("TARGET_INFO_SESSION_START_TIME").count("utcEpochNs")) return;
  auto s = Prepare("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1",
                   "reading the session start");
  if (!s.ok()) return;
  if (Step(s->get(), "reading the session start") &&
      sqlite3_column_type(s->get(), 0) != SQLITE_NULL)
    t_.info.base_time_ns = sqlite3_column_int64(s->get(), 0);
}

// CUPTI correlation ids count per process: in an export of several processes (a launcher, a
// compile worker, the training process) the same id names different calls. There, every id becomes
// (pid << 32 | id) on both sides, so a kernel links to its own process's launch only.
void Reader::ScopeCorrelations() {
  const std::vector<TraceId>& pids = t_.runtime.pid.distinct();
  std::set<TraceId> processes(pids.begin(), pids.end());
  if (processes.size() <= 1) return;
  auto scoped = [](int64_t pid, int64_t corr) {
    return corr < 0 || pid < 0 ? corr : (pid << 32) | (corr & 0xFFFFFFFF);
  };
  for (size_t i = 0; i < t_.runtime.size(); ++i)
    t_.runtime.correlation[i] = scoped(t_.runtime.pid[i], t_.runtime.correlation[i]);
  for (size_t i = 0; i < t_.gpu.size(); ++i) {
    const int64_t gpid = i < gpu_process_.size() ? gpu_process_[i] : -1;
    t_.gpu.correlation[i] = scoped(gpid >= 0 ? PidOf(gpid) : -1, t_.gpu.correlation[i]);
  }
}

Status Reader::Read() {
  GPUSCOPE_RETURN_IF_ERROR(ReadTables());
  GPUSCOPE_RETURN_IF_ERROR(ReadSchemaVersion());
  GPUSCOPE_RETURN_IF_ERROR(ReadStrings());
  GPUSCOPE_RETURN_IF_ERROR(ReadDevices());
  for (auto read :
       {&Reader::ReadKernels, &Reader::ReadSyncs, &Reader::ReadRuntime, &Reader::ReadNvtx})
    GPUSCOPE_RETURN_IF_ERROR((this->*read)());
  GPUSCOPE_RETURN_IF_ERROR(ReadCopies(false));
  GPUSCOPE_RETURN_IF_ERROR(ReadCopies(true));
  // Optional extras: an error here leaves them out, and is no reason to fail the read.
  ReadThreadNames();
  ReadSessionStart();
  status_ = Status::Ok();

  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  for (GpuKind k : t_.gpu.kind) {
    kernels += k == GpuKind::kKernel;
    memcpys += k == GpuKind::kMemcpy;
    memsets += k == GpuKind::kMemset;
  }
  if (kernels + memcpys == 0) {
    const std::string what =
        Has(kKernelTable) ? "its CUPTI_ACTIVITY_KIND_KERNEL table has no rows"
                          : "it has no CUPTI_ACTIVITY_KIND_KERNEL table (no kernel was recorded)";
    return Fail(name_,
                "no GPU activity captured: " + what + " and no memory copies (it holds " +
                    Plural(memsets, "memset") + ", " + Plural(t_.runtime.size(), "CUDA API call") +
                    ", " + Plural(t_.cpu.size(), "NVTX range") + "); there is nothing to analyse",
                "profile with `nsys profile --trace=cuda,nvtx ...` and let the run reach its GPU "
                "work: a run that stops early, or a --capture-range that closes before the "
                "kernels, records none; then `nsys export --type sqlite`");
  }
  if (!Has(kKernelTable))
    Note(
        "no CUPTI_ACTIVITY_KIND_KERNEL table: kernels were not captured (nsys profile "
        "--trace=cuda)");
  if (!Has(kRuntimeTable))
    Note(
        "no CUPTI_ACTIVITY_KIND_RUNTIME table: CUDA API calls were not captured, so launches, "
        "launch latency and host syncs are empty (nsys profile --trace=cuda)");
  if (!Has(kNvtxTable))
    Note(
        "no NVTX_EVENTS table: NVTX ranges were not captured, so there are no ProfilerStep#N "
        "steps (nsys profile --trace=cuda,nvtx, with torch.profiler's steps or "
        "torch.cuda.nvtx.range_push(\"ProfilerStep#N\") per step)");
  ScopeCorrelations();
  t_.info.events_total = t_.gpu.size() + t_.runtime.size() + t_.cpu.size();
  // Identical rows (every column equal: an export merged twice, a table written twice) are
  // removed and counted as the Kineto reader does, after the correlations are scoped and before
  // linking, so no analysis sees a kernel twice.
  const model::DuplicateCounts dups = model::RemoveDuplicateEvents(&t_);
  if (dups.gpu > 0) t_.diagnostics.Add(Diag::kDuplicateGpuEvent, -1, dups.gpu);
  if (dups.runtime > 0) t_.diagnostics.Add(Diag::kDuplicateRuntimeCall, -1, dups.runtime);
  if (dups.cpu > 0) t_.diagnostics.Add(Diag::kDuplicateCpuEvent, -1, dups.cpu);
  LinkLaunches(&t_);
  return Status::Ok();
}

}  // namespace

bool LooksLikeSqlite(std::string_view head) {
  return head.substr(0, 16) == std::string_view("SQLite format 3\0", 16);
}

Result<Trace> ReadNsysSqlite(io::ByteSource& source, const std::string& name, uint64_t file_bytes,
                             const LoadOptions&) {
  Result<DbPtr> db = IsThisRegularFile(source, name)
                         ? OpenPath(name, name)
                         : OpenInMemory(source, name, kMaxNsysBytesInMemory);
  GPUSCOPE_RETURN_IF_ERROR(db.status());
  Trace trace;
  trace.info.path = name;
  trace.info.format = TraceFormat::kNsysSqlite;
  trace.info.gzip = source.is_gzip();
  trace.info.file_bytes = file_bytes;
  trace.info.json_bytes = 0;
  Reader reader(db->get(), name, &trace);
  GPUSCOPE_RETURN_IF_ERROR(reader.Read());
  return trace;
}

bool IsNsysExportFile(const std::string& path) {
  struct stat st;
  if (path == "-" || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  char head[16];
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (!LooksLikeSqlite(std::string_view(head, n))) return false;
  auto db = OpenPath(path, path);
  sqlite3_stmt* raw = nullptr;
  if (db.ok() &&
      sqlite3_prepare_v2(db->get(),
                         "SELECT 1 FROM sqlite_master WHERE type = 'table' AND (name IN "
                         "('META_DATA_EXPORT', 'EXPORT_META_DATA', 'NVTX_EVENTS', "
                         "'TARGET_INFO_GPU') OR name LIKE 'CUPTI_ACTIVITY_KIND_%') LIMIT 1",
                         -1, &raw, nullptr) == SQLITE_OK) {
    StmtPtr s(raw);
    const int rc = sqlite3_step(s.get());
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) return rc == SQLITE_ROW;
  } else {
    sqlite3_finalize(raw);
  }
  // SQLite cannot read its schema (a cut-short or damaged file): the schema's text is still in
  // the first pages. An export names its CUPTI tables there; a gpuscope summary never does. So a
  // damaged export is called one, not "a damaged gpuscope summary".
  std::FILE* raw_file = std::fopen(path.c_str(), "rb");
  if (raw_file == nullptr) return false;
  std::string bytes(size_t{1} << 20, '\0');
  bytes.resize(std::fread(bytes.data(), 1, bytes.size(), raw_file));
  std::fclose(raw_file);
  return bytes.find("CUPTI_ACTIVITY_KIND_") != std::string::npos ||
         bytes.find("TARGET_INFO_GPU") != std::string::npos;
}

}  // namespace gpuscope::ingest
