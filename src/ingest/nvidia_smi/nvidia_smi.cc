#include "monitor/nvidia_smi.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace gpuscope::monitor {

namespace {

// Ticks without a time column: nvidia-smi -l and dmon both default to 1 s.
constexpr int64_t kDefaultTickNs = 1'000'000'000;
constexpr size_t kMalformedExamples = 3;
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
  if (value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X'))
    v = static_cast<double>(std::strtoull(begin, &end, 16));
  else
    v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) return std::nullopt;
  const std::string rest = Trim(end);
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
  if (!date.empty() && (date.size() != 8 || std::sscanf(date.c_str(), "%4d%2d%2d", &year, &month,
                                                        &day) != 3))
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
      {"gpu", Field::kIndex},        {"sm", Field::kUtil},          {"mem", Field::kMemUtil},
      {"pwr", Field::kPower},        {"gtemp", Field::kTemperature}, {"pclk", Field::kSmClock},
      {"fb", Field::kMemUsed},       {"rxpci", Field::kPcieRx},     {"txpci", Field::kPcieTx},
      {"date", Field::kDate},        {"time", Field::kTime},
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

void Malformed(Recording* rec, const std::string& path, uint64_t line, const std::string& why) {
  ++rec->malformed_lines;
  if (rec->malformed_examples.size() < kMalformedExamples)
    rec->malformed_examples.push_back(path + ":" + std::to_string(line) + ": " + why);
}

// Stores `value` of `column` into `g`; on a bad value returns why ("is not a number", …), else "".
std::string Store(const Column& column, const std::string& value, GpuSample* g,
           std::optional<int32_t>* index, std::string* bus_id, std::string* name) {
  if (column.field == Field::kIgnored || column.field == Field::kTimestamp ||
      column.field == Field::kDate || column.field == Field::kTime)
    return "";
  if (column.field == Field::kName) {
    *name = value;
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
    case Field::kUtil:
      g->sm_util_pct = *v;
      break;
    case Field::kMemUtil:
      g->mem_util_pct = *v;
      break;
    case Field::kMemUsed:
    case Field::kMemTotal: {
      // Below 2^63 B (8 EiB): a larger or negative size is not a reading.
      const double bytes = *v * MemoryScale(unit);
      if (!(bytes >= 0 && bytes < 0x1p63)) return "is not a memory size (0 to 8 EiB)";
      (column.field == Field::kMemUsed ? g->mem_used_bytes : g->mem_total_bytes) =
          static_cast<uint64_t>(bytes);
      break;
    }
    case Field::kPower:
      g->power_w = Lower(unit) == "mw" ? *v / 1000 : *v;
      break;
    case Field::kPowerLimit:
      g->power_limit_w = Lower(unit) == "mw" ? *v / 1000 : *v;
      break;
    case Field::kSmClock:
      g->sm_clock_mhz = *v;
      break;
    case Field::kTemperature:
      g->temperature_c = *v;
      break;
    case Field::kThrottle:
      if (!(*v >= 0 && *v < 0x1p64)) return "is not a 64-bit bitmask";
      g->throttle_reasons = static_cast<uint64_t>(*v);
      break;
    case Field::kPcieRx:
      g->pcie_rx_bytes_per_s = *v * 1e6;  // dmon: MB/s
      break;
    case Field::kPcieTx:
      g->pcie_tx_bytes_per_s = *v * 1e6;
      break;
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

void ParseCsv(const std::string& text, const std::string& path, Recording* rec) {
  SampleBuilder builder(rec);
  std::vector<Column> columns;
  std::istringstream in(text);
  std::string line;
  uint64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (Trim(line).empty()) continue;
    std::vector<std::string> cells = SplitComma(line);
    if (IsCsvHeader(cells)) {  // the first header, or a repeated one (several -l runs appended)
      columns.clear();
      for (const std::string& c : cells) {
        Column col;
        const size_t open = c.find('[');
        col.name = Trim(c.substr(0, open));
        col.field = CsvField(col.name);
        if (open != std::string::npos) {
          const size_t close = c.find(']', open);
          col.unit = Trim(c.substr(open + 1, close == std::string::npos ? close : close - open - 1));
          if (col.unit == "%") col.unit.clear();
        }
        columns.push_back(col);
      }
      continue;
    }
    if (columns.empty()) {
      Malformed(rec, path, line_number, "data before the header line");
      continue;
    }
    // GPU names may hold commas in theory; nvidia-smi does not quote, so a surplus means trouble.
    if (cells.size() != columns.size()) {
      Malformed(rec, path, line_number,
                "expected " + std::to_string(columns.size()) + " fields, found " +
                    std::to_string(cells.size()));
      continue;
    }
    GpuSample g;
    std::optional<int32_t> index;
    std::optional<int64_t> time_ns;
    std::string bus_id, name;
    bool ok = true;
    for (size_t i = 0; i < cells.size() && ok; ++i) {
      if (columns[i].field == Field::kTimestamp) {
        time_ns = ParseCsvTimestamp(cells[i]);
        if (!time_ns) {
          Malformed(rec, path, line_number,
                    "bad timestamp \"" + cells[i] +
                        "\" (expected YYYY/MM/DD HH:MM:SS.mmm, years 1970–2200)");
          ok = false;
        }
      } else if (const std::string why = Store(columns[i], cells[i], &g, &index, &bus_id, &name);
                 !why.empty()) {
        Malformed(rec, path, line_number, columns[i].name + ": \"" + cells[i] + "\" " + why);
        ok = false;
      }
    }
    if (!ok) continue;
    g.index = builder.GpuFor(index, bus_id);
    builder.Add(g, time_ns, name);
  }
  builder.Finish();
}

void ParseDmon(const std::string& text, const std::string& path, Recording* rec) {
  SampleBuilder builder(rec);
  std::vector<Column> columns;
  std::istringstream in(text);
  std::string line;
  uint64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (Trim(line).empty()) continue;
    if (line[0] == '#') {
      std::vector<std::string> words = SplitSpace(line.substr(1));
      if (words.empty()) continue;
      // The second header line holds units ("Idx W C …"; with -o DT "YYYYMMDD HH:MM:SS Idx …").
      bool units_line = false;
      for (const std::string& w : words)
        if (w == "Idx") units_line = true;
      if (units_line) {
        if (words.size() == columns.size())
          for (size_t i = 0; i < words.size(); ++i) columns[i].unit = words[i];
        continue;
      }
      columns.clear();
      for (const std::string& w : words) {
        Column c;
        c.name = w;
        c.field = DmonField(w);
        columns.push_back(c);
      }
      continue;
    }
    if (columns.empty()) {
      Malformed(rec, path, line_number, "data before the \"# gpu …\" header line");
      continue;
    }
    std::vector<std::string> words = SplitSpace(line);
    if (words.size() != columns.size()) {
      Malformed(rec, path, line_number,
                "expected " + std::to_string(columns.size()) + " columns, found " +
                    std::to_string(words.size()));
      continue;
    }
    GpuSample g;
    std::optional<int32_t> index;
    std::string bus_id, name, date, time;
    bool ok = true;
    for (size_t i = 0; i < words.size() && ok; ++i) {
      if (columns[i].field == Field::kDate) date = words[i];
      if (columns[i].field == Field::kTime) time = words[i];
      if (const std::string why = Store(columns[i], words[i], &g, &index, &bus_id, &name);
          !why.empty()) {
        Malformed(rec, path, line_number, columns[i].name + ": \"" + words[i] + "\" " + why);
        ok = false;
      }
    }
    if (!ok) continue;
    if (!index) {
      Malformed(rec, path, line_number, "no GPU index");
      continue;
    }
    std::optional<int64_t> time_ns;
    if (!date.empty() || !time.empty()) {
      time_ns = ParseDmonTime(date, time);
      if (!time_ns) {
        Malformed(rec, path, line_number,
                  "bad date/time \"" + date + " " + time +
                      "\" (expected YYYYMMDD HH:MM:SS, years 1970–2200)");
        continue;
      }
    }
    g.index = *index;
    builder.Add(g, time_ns, name);
  }
  builder.Finish();
}

}  // namespace

NvidiaSmiFormat DetectNvidiaSmiLog(const std::string& head) {
  std::istringstream in(head);
  std::string line;
  while (std::getline(in, line)) {
    if (Trim(line).empty()) continue;
    if (line[0] == '#') {
      const std::vector<std::string> words = SplitSpace(Lower(line.substr(1)));
      for (const std::string& w : words)
        if (w == "gpu" || w == "idx") return NvidiaSmiFormat::kDmon;
      return NvidiaSmiFormat::kNone;
    }
    if (line.find(',') != std::string::npos && IsCsvHeader(SplitComma(line)))
      return NvidiaSmiFormat::kCsvQuery;
    return NvidiaSmiFormat::kNone;
  }
  return NvidiaSmiFormat::kNone;
}

Result<Recording> ParseNvidiaSmiLog(const std::string& text, const std::string& path) {
  Recording rec;
  rec.source_path = path;
  switch (DetectNvidiaSmiLog(text.substr(0, 64 * 1024))) {
    case NvidiaSmiFormat::kCsvQuery:
      rec.source = SourceKind::kNvidiaSmiCsv;
      ParseCsv(text, path, &rec);
      break;
    case NvidiaSmiFormat::kDmon:
      rec.source = SourceKind::kNvidiaSmiDmon;
      ParseDmon(text, path, &rec);
      break;
    case NvidiaSmiFormat::kNone:
      return Status::InputError(path, 0, "not an nvidia-smi log",
                                "expected `nvidia-smi --query-gpu=... --format=csv` output with "
                                "its header, or `nvidia-smi dmon` output");
  }
  if (rec.samples.empty())
    return Status::InputError(path, 0,
                              "no GPU samples in the nvidia-smi log (" +
                                  std::to_string(rec.malformed_lines) + " malformed lines)",
                              rec.malformed_examples.empty() ? "" : rec.malformed_examples[0]);
  return rec;
}

Result<Recording> ReadNvidiaSmiLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(StatusCode::kNotFound, "cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseNvidiaSmiLog(ss.str(), path);
}

}  // namespace gpuscope::monitor
