#include "ingest/nvidia_smi/nvidia_smi.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "base/sanitize.h"
#include "ingest/common/line_reader.h"
#include "ingest/common/malformed.h"
#include "ingest/common/sample_checks.h"

namespace gpuscope::ingest {

namespace {

// Ticks without a time column: nvidia-smi -l and dmon both default to 1 s.
constexpr int64_t kDefaultTickNs = 1'000'000'000;
constexpr double kMiB = 1024.0 * 1024.0;

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> SplitComma(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(Trim(cell));
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

std::vector<std::string> SplitSpace(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool IsMissing(const std::string& v) {
  const std::string l = Lower(v);
  return v.empty() || v == "-" || l == "[n/a]" || l == "n/a" || l == "[not supported]" ||
         l == "[unknown error]" || l == "[insufficient permissions]" || l == "[no data]";
}

// "43 %", "22000 MiB", "120.50 W", "1410 MHz", "0x0000000000000004" → number; the unit after the
// value, if any, overrides `unit` from the header. nullopt if it is not a number.
std::optional<double> ParseNumber(const std::string& value, std::string* unit_out) {
  const char* begin = value.c_str();
  char* end = nullptr;
  double v = 0;
  const bool hex = value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X');
  if (hex)
    v = static_cast<double>(std::strtoull(begin, &end, 16));
  else
    v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) return std::nullopt;
  const std::string rest = Trim(end);
  // Hex is a bit mask (clocks_throttle_reasons.active), never a measurement: "0x50 %" is no 80 %.
  if (hex && !rest.empty()) return std::nullopt;
  if (!rest.empty()) {
    for (char c : rest)
      if (!std::isalpha(static_cast<unsigned char>(c)) && c != '%' && c != '/') return std::nullopt;
    *unit_out = rest;
  }
  return v;
}

// Bytes per unit of a memory value.
double MemoryScale(const std::string& unit) {
  const std::string u = Lower(unit);
  if (u == "gib") return kMiB * 1024;
  if (u == "kib") return 1024;
  if (u == "b" || u == "bytes") return 1;
  if (u == "gb") return 1e9;
  return kMiB;  // nvidia-smi's default and dmon's "MB" are MiB
}

// Dates outside these years are read as malformed: unix ns in an int64 reach 2262 only.
constexpr int kMinYear = 1970;
constexpr int kMaxYear = 2200;

// A broken-down local date and time (nvidia-smi prints the machine's local time, no zone) → unix
// seconds, in the zone of the machine reading the log ($TZ): right when the log is analysed where
// (or in the zone where) it was written, which alignment with traces recorded there needs.
// tm_isdst = -1 lets the C library decide whether DST applied at that moment.
int64_t LocalTimeToUnix(std::tm tm) {
  tm.tm_isdst = -1;
  return static_cast<int64_t>(std::mktime(&tm));
}

// "2024/01/15 10:23:45.123" (query CSV) → unix ns, the clock read as local time (see above;
// docs/monitor.md says so).
std::optional<int64_t> ParseCsvTimestamp(const std::string& text) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0;
  double second = 0;
  if (std::sscanf(text.c_str(), "%d/%d/%d %d:%d:%lf", &year, &month, &day, &hour, &minute,
                  &second) != 6 &&
      std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%lf", &year, &month, &day, &hour, &minute,
                  &second) != 6)
    return std::nullopt;
  if (year < kMinYear || year > kMaxYear || month < 1 || month > 12 || day < 1 || day > 31 ||
      hour < 0 || hour > 23 || minute < 0 || minute > 59 || !(second >= 0) || second >= 61)
    return std::nullopt;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = 0;
  const int64_t base = LocalTimeToUnix(tm);
  return base * 1'000'000'000 + static_cast<int64_t>(std::llround(second * 1e9));
}

// dmon -o D / -o T: "20240115" and "10:23:45".
std::optional<int64_t> ParseDmonTime(const std::string& date, const std::string& time) {
  int year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0;
  if (!date.empty() &&
      (date.size() != 8 || std::sscanf(date.c_str(), "%4d%2d%2d", &year, &month, &day) != 3))
    return std::nullopt;
  if (!time.empty() && std::sscanf(time.c_str(), "%d:%d:%d", &hour, &minute, &second) != 3)
    return std::nullopt;
  if (year < kMinYear || year > kMaxYear || month < 1 || month > 12 || day < 1 || day > 31 ||
      hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  // Local time like the CSV timestamp; a time of day without a date has no zone to speak of (it
  // is only ever compared with others on the same day), so it stays plain seconds since midnight.
  if (date.empty()) return static_cast<int64_t>(timegm(&tm)) * 1'000'000'000;
  return LocalTimeToUnix(tm) * 1'000'000'000;
}

enum class Field {
  kIgnored,
  kTimestamp,
  kIndex,
  kBusId,
  kName,
  kUtil,
  kMemUtil,
  kMemUsed,
  kMemTotal,
  kPower,
  kPowerLimit,
  kSmClock,
  kTemperature,
  kThrottle,
  kPcieRx,
  kPcieTx,
  kDate,
  kTime
};

Field CsvField(const std::string& name) {
  static const std::map<std::string, Field> kFields = {
      {"timestamp", Field::kTimestamp},
      {"index", Field::kIndex},
      {"pci.bus_id", Field::kBusId},
      {"gpu_bus_id", Field::kBusId},
      {"uuid", Field::kBusId},
      {"gpu_uuid", Field::kBusId},
      {"name", Field::kName},
      {"gpu_name", Field::kName},
      {"utilization.gpu", Field::kUtil},
      {"utilization.memory", Field::kMemUtil},
      {"memory.used", Field::kMemUsed},
      {"memory.total", Field::kMemTotal},
      {"power.draw", Field::kPower},
      {"power.draw.instant", Field::kPower},
      {"power.draw.average", Field::kPower},
      {"power.limit", Field::kPowerLimit},
      {"enforced.power.limit", Field::kPowerLimit},
      {"clocks.sm", Field::kSmClock},
      {"clocks.current.sm", Field::kSmClock},
      {"temperature.gpu", Field::kTemperature},
      {"clocks_throttle_reasons.active", Field::kThrottle},
      {"clocks_event_reasons.active", Field::kThrottle},
  };
  auto it = kFields.find(Lower(name));
  return it == kFields.end() ? Field::kIgnored : it->second;
}

Field DmonField(const std::string& name) {
  static const std::map<std::string, Field> kFields = {
      {"gpu", Field::kIndex},  {"sm", Field::kUtil},           {"mem", Field::kMemUtil},
      {"pwr", Field::kPower},  {"gtemp", Field::kTemperature}, {"pclk", Field::kSmClock},
      {"fb", Field::kMemUsed}, {"rxpci", Field::kPcieRx},      {"txpci", Field::kPcieTx},
      {"date", Field::kDate},  {"time", Field::kTime},
  };
  auto it = kFields.find(Lower(name));
  return it == kFields.end() ? Field::kIgnored : it->second;
}

struct Column {
  Field field = Field::kIgnored;
  std::string unit;  // from the header, e.g. "MiB"
  std::string name;
};

// Builds samples from rows: a new sample starts when a row names a GPU the current one has.
class SampleBuilder {
 public:
  explicit SampleBuilder(Recording* rec) : rec_(rec) {}

  int32_t GpuFor(const std::optional<int32_t>& index, const std::string& bus_id) {
    if (index) return *index;
    if (bus_id.empty()) return 0;
    auto [it, inserted] = ids_.emplace(bus_id, static_cast<int32_t>(ids_.size()));
    return it->second;
  }

  void Add(GpuSample g, std::optional<int64_t> time_ns, const std::string& name) {
    bool new_sample = rec_->samples.empty();
    if (!new_sample)
      for (const GpuSample& x : rec_->samples.back().gpus)
        if (x.index == g.index) new_sample = true;
    if (new_sample) {
      Sample s;
      if (time_ns) {
        s.time_ns = *time_ns;
        have_time_ = true;
      } else {
        s.time_ns = static_cast<int64_t>(rec_->samples.size()) * kDefaultTickNs;
      }
      rec_->samples.push_back(s);
    }
    bool known = false;
    for (GpuInfo& info : rec_->gpus)
      if (info.index == g.index) {
        known = true;
        if (info.name.empty()) info.name = name;
        if (!info.mem_total_bytes) info.mem_total_bytes = g.mem_total_bytes;
        if (!info.power_limit_w) info.power_limit_w = g.power_limit_w;
      }
    if (!known) rec_->gpus.push_back({g.index, name, g.mem_total_bytes, g.power_limit_w});
    rec_->samples.back().gpus.push_back(g);
  }

  void Finish() {
    if (!rec_->samples.empty()) {
      rec_->start_ns = rec_->samples.front().time_ns;
      rec_->end_ns = rec_->samples.back().time_ns;
    }
    if (!have_time_ && !rec_->samples.empty())
      rec_->notes.push_back("no time column: samples assumed 1 s apart (nvidia-smi's default)");
  }

 private:
  Recording* rec_;
  std::map<std::string, int32_t> ids_;
  bool have_time_ = false;
};

// Stores `value` of `column` into `g`; on a bad value returns why ("is not a number", …), else "".
std::string Store(const Column& column, const std::string& value, GpuSample* g,
                  std::optional<int32_t>* index, std::string* bus_id, std::string* name) {
  if (column.field == Field::kIgnored || column.field == Field::kTimestamp ||
      column.field == Field::kDate || column.field == Field::kTime)
    return "";
  if (column.field == Field::kName) {
    *name = SanitizeText(value);  // printed by the verdict: no control sequences reach a terminal
    return "";
  }
  if (column.field == Field::kBusId) {
    *bus_id = value;
    return "";
  }
  if (IsMissing(value)) return "";
  std::string unit = column.unit;
  const std::optional<double> v = ParseNumber(value, &unit);
  if (!v) return "is not a number";
  switch (column.field) {
    case Field::kIndex:
      if (*v < 0 || *v > 1e6) return "is not a GPU index (0 to 1000000)";
      *index = static_cast<int32_t>(*v);
      break;
    // Out-of-range values are malformed (ingest/common/sample_checks.h has the bounds).
    case Field::kUtil:
    case Field::kMemUtil:
      if (std::string why = CheckRange(*v, 0, kMaxUtilPct, "%"); !why.empty()) return why;
      (column.field == Field::kUtil ? g->sm_util_pct : g->mem_util_pct) = *v;
      break;
    case Field::kMemUsed:
    case Field::kMemTotal: {
      // Below 2^63 B (8 EiB): a larger or negative size is not a reading.
      const double bytes = *v * MemoryScale(unit);
      if (!(bytes >= 0 && bytes < kMaxBytes)) return "is not a memory size (0 to 8 EiB)";
      (column.field == Field::kMemUsed ? g->mem_used_bytes : g->mem_total_bytes) =
          static_cast<uint64_t>(bytes);
      break;
    }
    case Field::kPower:
    case Field::kPowerLimit: {
      const double watts = Lower(unit) == "mw" ? *v / 1000 : *v;
      if (std::string why = CheckRange(watts, 0, kMaxPowerW, "W"); !why.empty()) return why;
      (column.field == Field::kPower ? g->power_w : g->power_limit_w) = watts;
      break;
    }
    case Field::kSmClock:
      if (std::string why = CheckRange(*v, 0, kMaxClockMhz, "MHz"); !why.empty()) return why;
      g->sm_clock_mhz = *v;
      break;
    case Field::kTemperature:
      if (std::string why = CheckRange(*v, kMinTemperatureC, kMaxTemperatureC, "C"); !why.empty())
        return why;
      g->temperature_c = *v;
      break;
    case Field::kThrottle:
      if (!(*v >= 0 && *v < 0x1p64)) return "is not a 64-bit bitmask";
      g->throttle_reasons = static_cast<uint64_t>(*v);
      break;
    case Field::kPcieRx:
    case Field::kPcieTx: {
      const double bytes_per_s = *v * 1e6;  // dmon: MB/s
      if (std::string why = CheckRange(bytes_per_s, 0, kMaxPcieBytesPerS, "B/s"); !why.empty())
        return why;
      (column.field == Field::kPcieRx ? g->pcie_rx_bytes_per_s : g->pcie_tx_bytes_per_s) =
          bytes_per_s;
      break;
    }
    default:
      break;
  }
  return "";
}

bool IsCsvHeader(const std::vector<std::string>& cells) {
  int known = 0;
  for (const std::string& c : cells) {
    const std::string name = Trim(c.substr(0, c.find('[')));
    if (CsvField(name) != Field::kIgnored) ++known;
  }
  return known > 0 && known * 2 >= static_cast<int>(cells.size()) - 1;
}

// A cell as `nvidia-smi --format=csv,noheader` prints it: a timestamp, a value with its unit, a
// missing-value marker, a PCI bus id or a GPU UUID. Bare numbers (nounits) say nothing.
bool LooksLikeNvidiaSmiValue(const std::string& cell) {
  int year, month, day, hour, minute;
  double second;
  if (std::sscanf(cell.c_str(), "%d/%d/%d %d:%d:%lf", &year, &month, &day, &hour, &minute,
                  &second) == 6)
    return true;
  const std::string l = Lower(cell);
  if (l == "[n/a]" || l == "[not supported]" || l.rfind("gpu-", 0) == 0) return true;
  unsigned a, b, c, d;
  if (std::sscanf(l.c_str(), "%x:%x:%x.%x", &a, &b, &c, &d) == 4) return true;  // pci.bus_id
  std::string unit;
  if (!ParseNumber(cell, &unit) || unit.empty()) return false;
  const std::string u = Lower(unit);
  return u == "%" || u == "mib" || u == "w" || u == "mhz";
}

bool IsCsvTimestamp(const std::string& cell) {
  int year, month, day, hour, minute;
  double second;
  return std::sscanf(cell.c_str(), "%d/%d/%d %d:%d:%lf", &year, &month, &day, &hour, &minute,
                     &second) == 6;
}

bool IsBusId(const std::string& cell) {
  unsigned a, b, c, d;
  char tail;
  return std::sscanf(cell.c_str(), "%x:%x:%x.%x%c", &a, &b, &c, &d, &tail) == 4;
}

bool IsUuid(const std::string& cell) { return Lower(cell).rfind("gpu-", 0) == 0; }

// Rows of query values without a header line: half the cells typed (a value with its unit, a
// timestamp, …), or (`nounits`) a timestamp, a PCI bus id or a GPU UUID among bare numbers.
bool IsNoHeaderCsvRow(const std::vector<std::string>& cells) {
  if (cells.size() < 2) return false;
  size_t typed = 0;
  bool anchored = false;
  for (const std::string& c : cells) {
    typed += LooksLikeNvidiaSmiValue(c) ? 1 : 0;
    anchored = anchored || IsCsvTimestamp(c) || IsBusId(c) || IsUuid(c);
  }
  return typed * 2 >= cells.size() || anchored;
}

// What a headerless cell looks like, for recognising its column.
enum class CellKind {
  kMissing,
  kTimestamp,
  kBusId,
  kPercent,
  kMebibytes,
  kWatt,
  kMHz,
  kHex,
  kBareInt,
  kBareNumber,
  kText
};

CellKind KindOf(const std::string& cell) {
  if (IsMissing(cell)) return CellKind::kMissing;
  if (IsCsvTimestamp(cell)) return CellKind::kTimestamp;
  if (IsBusId(cell) || IsUuid(cell)) return CellKind::kBusId;
  if (cell.size() > 2 && cell[0] == '0' && (cell[1] == 'x' || cell[1] == 'X'))
    return CellKind::kHex;
  std::string unit;
  if (!ParseNumber(cell, &unit)) return CellKind::kText;
  const std::string u = Lower(unit);
  if (u.empty()) {
    return cell.find_first_of(".eE") == std::string::npos ? CellKind::kBareInt
                                                          : CellKind::kBareNumber;
  }
  if (u == "%") return CellKind::kPercent;
  if (u == "mib" || u == "gib" || u == "kib") return CellKind::kMebibytes;
  if (u == "w" || u == "mw") return CellKind::kWatt;
  if (u == "mhz") return CellKind::kMHz;
  return CellKind::kText;
}

// One log, line by line. The format is decided by the first non-empty line, as DetectNvidiaSmiLog
// decides it from the head of the file.
class LogParser {
 public:
  LogParser(const std::string& path, Recording* rec, std::string_view fields)
      : path_(path), rec_(rec), malformed_(rec, path), builder_(rec), fields_(fields) {}

  // Returns an error only for a log that cannot be read at all (its first line, or the first
  // rows of a headerless log, show it).
  Status Line(std::string line, uint64_t line_number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (Trim(line).empty()) return Status::Ok();
    if (format_ == NvidiaSmiFormat::kNone) {
      format_ = DetectNvidiaSmiLog(line);
      if (!fields_.empty() && format_ != NvidiaSmiFormat::kDmon) {
        // --smi-fields: the field list stands for the header line the log lacks.
        format_ = NvidiaSmiFormat::kCsvQuery;
        SetColumns(SplitComma(std::string(fields_)));
        rec_->notes.push_back("columns from --smi-fields: " + SanitizeText(std::string(fields_)));
      }
      if (format_ == NvidiaSmiFormat::kNone) return NotALog();
      rec_->source = format_ == NvidiaSmiFormat::kDmon ? SourceKind::kNvidiaSmiDmon
                                                       : SourceKind::kNvidiaSmiCsv;
    }
    if (format_ == NvidiaSmiFormat::kDmon) {
      DmonLine(line, line_number);
    } else if (format_ == NvidiaSmiFormat::kCsvNoHeader) {
      // Rows are held until their columns are recognised from the values.
      pending_.emplace_back(std::move(line), line_number);
      if (pending_.size() >= kInferRows || AllColumnsSeen()) return Infer();
    } else {
      CsvLine(line, line_number);
    }
    return Status::Ok();
  }

  Status NotALog() const {
    return Status::InputError(path_, 0, "not an nvidia-smi log",
                              "expected `nvidia-smi --query-gpu=... --format=csv` output with "
                              "its header, or `nvidia-smi dmon` output");
  }

  // The input's last line ended without a newline (it may be cut mid-way).
  void SetUnterminatedLine(uint64_t line_number) { unterminated_line_ = line_number; }
  // A held headerless row that was cut mid-line and left out (0: none).
  uint64_t cut_line() const { return cut_line_; }

  Status Finish() {
    if (format_ == NvidiaSmiFormat::kCsvNoHeader && !pending_.empty())
      GPUSCOPE_RETURN_IF_ERROR(Infer());
    builder_.Finish();
    return Status::Ok();
  }

 private:
  static constexpr size_t kInferRows = 32;  // headerless rows looked at to recognise the columns
  // The most GPUs one host's nvidia-smi lists (an HGX board 8, a DGX-2 16): a bare integer at or
  // above it is no index (a GPU's temperature, 20-90 °C, is).
  static constexpr double kMaxGpusPerHost = 16;

  // Every column of the first row has had a value in some held row.
  bool AllColumnsSeen() const {
    const std::vector<std::string> first = SplitComma(pending_.front().first);
    std::vector<bool> seen(first.size(), false);
    for (const auto& [text, n] : pending_) {
      const std::vector<std::string> cells = SplitComma(text);
      if (cells.size() != first.size()) continue;
      for (size_t i = 0; i < cells.size(); ++i)
        if (!IsMissing(cells[i])) seen[i] = true;
    }
    return std::all_of(seen.begin(), seen.end(), [](bool b) { return b; });
  }

  // Of the bare-integer columns `ints`, the GPU index: the first whose values are a GPU's index
  // (0 to kMaxGpusPerHost - 1) and, where a bus id or UUID column tells the GPUs apart, the same
  // on every row of one GPU. nvidia-smi prints temperature.gpu as a bare integer too: a single
  // H200's log without index (30-60 °C) was once read as 22 GPUs numbered by their temperature.
  std::optional<size_t> IndexColumn(const std::vector<size_t>& ints,
                                    const std::vector<size_t>& bus_ids) const {
    for (size_t i : ints) {
      bool plausible = true;
      std::map<std::string, std::string> per_gpu;  // bus id → index cell
      for (const auto& [text, number] : pending_) {
        const std::vector<std::string> cells = SplitComma(text);
        if (i >= cells.size() || IsMissing(cells[i])) continue;
        std::string unit;
        const std::optional<double> v = ParseNumber(cells[i], &unit);
        if (!v || *v < 0 || *v >= kMaxGpusPerHost) plausible = false;
        if (!bus_ids.empty() && bus_ids[0] < cells.size()) {
          const auto [it, added] = per_gpu.try_emplace(cells[bus_ids[0]], cells[i]);
          if (!added && it->second != cells[i]) plausible = false;
        }
        if (!plausible) break;
      }
      if (plausible) return i;
    }
    return std::nullopt;
  }

  // Recognises the columns of a headerless log from the held rows (docs/monitor.md lists the
  // rules), then reads the held rows with them. From here on the log reads like one with a header.
  Status Infer() {
    const uint64_t first_line = pending_.front().second;
    const size_t n = SplitComma(pending_.front().first).size();
    std::vector<CellKind> kinds(n, CellKind::kMissing);
    std::vector<double> sums(n, 0);  // of the values, to tell used from total and draw from limit
    for (const auto& [text, number] : pending_) {
      const std::vector<std::string> cells = SplitComma(text);
      if (cells.size() != n) continue;
      for (size_t i = 0; i < n; ++i) {
        const CellKind k = KindOf(cells[i]);
        if (k == CellKind::kMissing) continue;
        if (kinds[i] == CellKind::kMissing) kinds[i] = k;
        std::string unit;
        if (const auto v = ParseNumber(cells[i], &unit)) sums[i] += *v;
      }
    }
    size_t bare_numbers = 0, bare_ints = 0, with_units = 0;
    for (CellKind k : kinds) {
      bare_numbers += k == CellKind::kBareNumber;
      bare_ints += k == CellKind::kBareInt;
      with_units += k == CellKind::kPercent || k == CellKind::kMebibytes || k == CellKind::kWatt ||
                    k == CellKind::kMHz;
    }
    if (with_units == 0 || bare_numbers > 0 || bare_ints > 2) return NoUnits(first_line);
    auto of_kind = [&](CellKind k) {
      std::vector<size_t> out;
      for (size_t i = 0; i < n; ++i)
        if (kinds[i] == k) out.push_back(i);
      return out;
    };
    columns_.assign(n, Column{});
    auto set = [&](size_t i, Field f, const char* name) {
      columns_[i].field = f;
      columns_[i].name = name;
    };
    if (auto v = of_kind(CellKind::kTimestamp); !v.empty())
      set(v[0], Field::kTimestamp, "timestamp");
    if (auto v = of_kind(CellKind::kBusId); !v.empty()) set(v[0], Field::kBusId, "pci.bus_id");
    if (auto v = of_kind(CellKind::kText); !v.empty()) set(v[0], Field::kName, "name");
    if (auto v = of_kind(CellKind::kHex); !v.empty())
      set(v[0], Field::kThrottle, "clocks_event_reasons.active");
    if (auto v = of_kind(CellKind::kMHz); !v.empty()) set(v[0], Field::kSmClock, "clocks.sm");
    if (auto v = of_kind(CellKind::kBareInt); !v.empty()) {
      const std::optional<size_t> index = IndexColumn(v, of_kind(CellKind::kBusId));
      if (index) set(*index, Field::kIndex, "index");
      for (size_t i : v) {
        if (i == index) continue;
        set(i, Field::kTemperature, "temperature.gpu");  // the other bare integer
        break;
      }
    }
    if (auto v = of_kind(CellKind::kPercent); !v.empty()) {
      set(v[0], Field::kUtil, "utilization.gpu");
      if (v.size() > 1) set(v[1], Field::kMemUtil, "utilization.memory");
    }
    // Memory used never exceeds the total: of two MiB columns the larger is the total. Power
    // draw stays at or below the limit: of two W columns the larger is the limit.
    auto larger_smaller = [&](const std::vector<size_t>& v) {
      size_t big = v[0], small = v[0];
      for (size_t i : v) {
        if (sums[i] > sums[big]) big = i;
        if (sums[i] < sums[small]) small = i;
      }
      if (big == small) big = v.back(), small = v.front();  // equal: nvidia-smi's order
      return std::pair{big, small};
    };
    if (auto v = of_kind(CellKind::kMebibytes); v.size() == 1) {
      set(v[0], Field::kMemUsed, "memory.used");
    } else if (v.size() > 1) {
      const auto [big, small] = larger_smaller(v);
      set(big, Field::kMemTotal, "memory.total");
      if (v.size() == 2) set(small, Field::kMemUsed, "memory.used");
    }
    if (auto v = of_kind(CellKind::kWatt); v.size() == 1) {
      set(v[0], Field::kPower, "power.draw");
    } else if (v.size() > 1) {
      const auto [big, small] = larger_smaller(v);
      set(small, Field::kPower, "power.draw");
      if (v.size() == 2) set(big, Field::kPowerLimit, "power.limit");
    }
    std::string words;
    for (size_t i = 0; i < n; ++i)
      words +=
          (i ? ", " : "") + std::to_string(i + 1) + " " +
          (columns_[i].field == Field::kIgnored ? std::string("(not used)") : columns_[i].name);
    rec_->notes.push_back("no header line: columns recognised from their values (" + words +
                          "); if that is wrong, pass the --query-gpu list with --smi-fields");
    format_ = NvidiaSmiFormat::kCsvQuery;
    std::vector<std::pair<std::string, uint64_t>> rows = std::move(pending_);
    pending_.clear();
    for (const auto& [text, number] : rows) {
      const MalformedLines::Mark mark = malformed_.Checkpoint();
      CsvLine(text, number);
      // Cut mid-line, as in the read loop.
      if (number == unterminated_line_ && malformed_.TakeBackCut(mark)) cut_line_ = number;
    }
    return Status::Ok();
  }

  Status NoUnits(uint64_t line_number) const {
    return Status::InputError(
        path_, 0,
        "line " + std::to_string(line_number) +
            " looks like `nvidia-smi --format=csv,noheader,nounits` output: without a header "
            "line or units the columns cannot be told apart (which number is utilisation, which "
            "memory used and which total)",
        "pass the --query-gpu field list: gpuscope analyze LOG --smi-fields "
        "\"timestamp,index,utilization.gpu,memory.used,…\" (the same fields in the same order), "
        "or log with --format=csv");
  }

  void CsvLine(const std::string& line, uint64_t line_number) {
    std::vector<std::string> cells = SplitComma(line);
    if (IsCsvHeader(cells)) {  // the first header, or a repeated one (several -l runs appended)
      SetColumns(cells);
      return;
    }
    DataRow(cells, line_number);
  }

  // The columns from a header line's cells ("memory.used [MiB]"), or from --smi-fields.
  void SetColumns(const std::vector<std::string>& cells) {
    {
      columns_.clear();
      for (const std::string& c : cells) {
        Column col;
        const size_t open = c.find('[');
        col.name = Trim(c.substr(0, open));
        col.field = CsvField(col.name);
        if (open != std::string::npos) {
          const size_t close = c.find(']', open);
          col.unit =
              Trim(c.substr(open + 1, close == std::string::npos ? close : close - open - 1));
          if (col.unit == "%") col.unit.clear();
        }
        columns_.push_back(col);
      }
    }
  }

  // A row of another width than the header's: counted as malformed (the caller skips it).
  bool WrongWidth(size_t found, const char* what, uint64_t line_number) {
    if (found == columns_.size()) return false;
    malformed_.Count(line_number, "expected " + std::to_string(columns_.size()) + " " + what +
                                      ", found " + std::to_string(found));
    return true;
  }

  void DataRow(const std::vector<std::string>& cells, uint64_t line_number) {
    if (columns_.empty()) {
      malformed_.Count(line_number, "data before the header line");
      return;
    }
    // GPU names may hold commas in theory; nvidia-smi does not quote, so a surplus means trouble.
    if (WrongWidth(cells.size(), "fields", line_number)) return;
    GpuSample g;
    std::optional<int32_t> index;
    std::optional<int64_t> time_ns;
    std::string bus_id, name;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (columns_[i].field == Field::kTimestamp) {
        time_ns = ParseCsvTimestamp(cells[i]);
        if (!time_ns) {
          malformed_.Count(line_number,
                           "bad timestamp \"" + SanitizeText(cells[i]) +
                               "\" (expected YYYY/MM/DD HH:MM:SS.mmm, years 1970–2200)");
          return;
        }
      } else if (const std::string why = Store(columns_[i], cells[i], &g, &index, &bus_id, &name);
                 !why.empty()) {
        malformed_.Count(line_number, SanitizeText(columns_[i].name) + ": \"" +
                                          SanitizeText(cells[i]) + "\" " + why);
        return;
      }
    }
    if (g.mem_used_bytes && g.mem_total_bytes && *g.mem_used_bytes > *g.mem_total_bytes) {
      std::string used, total;
      for (size_t i = 0; i < cells.size(); ++i) {
        const std::string named =
            SanitizeText(columns_[i].name) + " \"" + SanitizeText(cells[i]) + "\"";
        if (columns_[i].field == Field::kMemUsed) used = named;
        if (columns_[i].field == Field::kMemTotal) total = named;
      }
      malformed_.Count(line_number, used + " is above " + total);
      return;
    }
    g.index = builder_.GpuFor(index, bus_id);
    builder_.Add(g, time_ns, name);
  }

  void DmonLine(const std::string& line, uint64_t line_number) {
    if (line[0] == '#') {
      std::vector<std::string> words = SplitSpace(line.substr(1));
      if (words.empty()) return;
      // The second header line holds units ("Idx W C …"; with -o DT "YYYYMMDD HH:MM:SS Idx …").
      bool units_line = false;
      for (const std::string& w : words)
        if (w == "Idx") units_line = true;
      if (units_line) {
        if (words.size() == columns_.size())
          for (size_t i = 0; i < words.size(); ++i) columns_[i].unit = words[i];
        return;
      }
      columns_.clear();
      for (const std::string& w : words) {
        Column c;
        c.name = w;
        c.field = DmonField(w);
        columns_.push_back(c);
      }
      return;
    }
    if (columns_.empty()) {
      malformed_.Count(line_number, "data before the \"# gpu …\" header line");
      return;
    }
    std::vector<std::string> words = SplitSpace(line);
    if (WrongWidth(words.size(), "columns", line_number)) return;
    GpuSample g;
    std::optional<int32_t> index;
    std::string bus_id, name, date, time;
    for (size_t i = 0; i < words.size(); ++i) {
      if (columns_[i].field == Field::kDate) date = words[i];
      if (columns_[i].field == Field::kTime) time = words[i];
      if (const std::string why = Store(columns_[i], words[i], &g, &index, &bus_id, &name);
          !why.empty()) {
        malformed_.Count(line_number, SanitizeText(columns_[i].name) + ": \"" +
                                          SanitizeText(words[i]) + "\" " + why);
        return;
      }
    }
    if (!index) {
      malformed_.Count(line_number, "no GPU index");
      return;
    }
    std::optional<int64_t> time_ns;
    if (!date.empty() || !time.empty()) {
      time_ns = ParseDmonTime(date, time);
      if (!time_ns) {
        malformed_.Count(line_number, "bad date/time \"" + SanitizeText(date + " " + time) +
                                          "\" (expected YYYYMMDD HH:MM:SS, years 1970–2200)");
        return;
      }
    }
    g.index = *index;
    builder_.Add(g, time_ns, name);
  }

  const std::string& path_;
  Recording* rec_;
  MalformedLines malformed_;
  SampleBuilder builder_;
  std::string_view fields_;
  NvidiaSmiFormat format_ = NvidiaSmiFormat::kNone;
  std::vector<Column> columns_;
  std::vector<std::pair<std::string, uint64_t>> pending_;  // headerless rows not yet read
  uint64_t unterminated_line_ = 0;
  uint64_t cut_line_ = 0;
};

}  // namespace

NvidiaSmiFormat DetectNvidiaSmiLog(std::string_view head) {
  std::istringstream in{std::string(head)};
  std::string line;
  while (std::getline(in, line)) {
    if (Trim(line).empty()) continue;
    if (line[0] == '#') {
      const std::vector<std::string> words = SplitSpace(Lower(line.substr(1)));
      for (const std::string& w : words)
        if (w == "gpu" || w == "idx") return NvidiaSmiFormat::kDmon;
      return NvidiaSmiFormat::kNone;
    }
    if (line.find(',') == std::string::npos) return NvidiaSmiFormat::kNone;
    const std::vector<std::string> cells = SplitComma(line);
    if (IsCsvHeader(cells)) return NvidiaSmiFormat::kCsvQuery;
    if (IsNoHeaderCsvRow(cells)) return NvidiaSmiFormat::kCsvNoHeader;
    return NvidiaSmiFormat::kNone;
  }
  return NvidiaSmiFormat::kNone;
}

Result<Recording> ReadNvidiaSmiLog(io::ByteSource& source, const std::string& path,
                                   size_t max_line_bytes) {
  return ReadNvidiaSmiLogWithFields(source, path, max_line_bytes, {});
}

Result<Recording> ReadNvidiaSmiLogWithFields(io::ByteSource& source, const std::string& path,
                                             size_t max_line_bytes, std::string_view fields) {
  Recording rec;
  rec.source_path = path;
  LogParser parser(path, &rec, fields);
  LineReader lines(source, path, max_line_bytes);
  MalformedLines malformed(&rec, path);
  std::string_view line;
  bool any = false;
  uint64_t cut_line = 0;  // an unterminated last line that did not parse
  while (true) {
    GPUSCOPE_TRY(more, lines.Next(&line));
    if (!*more) break;
    any = true;
    const MalformedLines::Mark mark = malformed.Checkpoint();
    if (!lines.line_terminated()) parser.SetUnterminatedLine(lines.line_number());
    GPUSCOPE_RETURN_IF_ERROR(parser.Line(std::string(line), lines.line_number()));
    // `nvidia-smi -l` killed mid-line: the log was cut, the last line is not malformed data.
    if (!lines.line_terminated() && malformed.TakeBackCut(mark)) cut_line = lines.line_number();
  }
  if (!any) return parser.NotALog();
  GPUSCOPE_RETURN_IF_ERROR(parser.Finish());
  if (cut_line == 0) cut_line = parser.cut_line();
  if (cut_line > 0)
    rec.notes.push_back("the log was cut short: its last line (" + std::to_string(cut_line) +
                        ") is incomplete and was left out");
  if (rec.samples.empty())
    return Status::InputError(path, 0,
                              "no GPU samples in the nvidia-smi log (" +
                                  std::to_string(rec.malformed_lines) + " malformed lines)",
                              rec.malformed_examples.empty() ? "" : rec.malformed_examples[0]);
  return rec;
}

Result<Recording> ParseNvidiaSmiLog(std::string_view text, const std::string& path,
                                    std::string_view fields) {
  auto source = io::MemoryByteSource(text, path);
  return ReadNvidiaSmiLogWithFields(*source, path, kMaxElementBytes, fields);
}

}  // namespace gpuscope::ingest
