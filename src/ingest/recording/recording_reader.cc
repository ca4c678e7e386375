#include "ingest/recording/recording_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "base/numbers.h"
#include "base/sanitize.h"
#include "ingest/common/line_reader.h"
#include "ingest/common/malformed.h"
#include "ingest/common/sample_checks.h"

namespace gpuscope::ingest {

using monitor::ProcessSample;

namespace {

constexpr const char* kFormatName = "gpuscope-monitor";  // the JSONL header's "format"
constexpr const char* kCsvHeader = "time_s,unix_ns,source,id,metric,value";
constexpr const char* kChromeProcess = "\"pid\":\"gpuscope monitor\"";
// GPU indices as NVML and nvidia-smi number them; larger is not an index.
constexpr int64_t kMaxGpuIndex = 1'000'000;

// Unix ns up to the year 2200: the verdict subtracts times, which must not overflow int64.
constexpr int64_t kMaxTimeNs = 7'258'118'400LL * 1'000'000'000;
const std::string kTimeRange =
    "expected an integer from 0 to " + std::to_string(kMaxTimeNs) + ", the year 2200";

std::string_view FirstLine(std::string_view head) {
  if (head.size() >= 3 && head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);
  return head.substr(0, head.find('\n'));
}

template <typename T>
void Get(simdjson::dom::object o, const char* key, std::optional<T>* out) {
  simdjson::dom::element e;
  if (o[key].get(e) != simdjson::SUCCESS) return;
  if constexpr (std::is_floating_point_v<T>) {
    double d;
    if (e.get_double().get(d) == simdjson::SUCCESS)
      *out = d;
    else if (int64_t i; e.get_int64().get(i) == simdjson::SUCCESS)
      *out = static_cast<double>(i);
    else if (uint64_t u; e.get_uint64().get(u) == simdjson::SUCCESS)
      *out = static_cast<double>(u);
  } else {
    uint64_t u;
    double d;
    if (e.get_uint64().get(u) == simdjson::SUCCESS) {
      *out = u;
    } else if (e.get_double().get(d) == simdjson::SUCCESS && d >= 0 && d < 0x1p64) {
      // JsonWriter writes integers beyond 2^53 with an exponent (all digits kept); as a double
      // they are off by at most one part in 2^53, nothing for a count of bytes or ns.
      *out = static_cast<uint64_t>(d);
    }
  }
}

int64_t GetInt(simdjson::dom::object o, const char* key) {
  int64_t v = 0;
  if (o[key].get_int64().get(v) != simdjson::SUCCESS) return 0;
  return v;
}

// A time key: absent → 0; present but not a unix ns time in [0, 2200) → nullopt.
std::optional<int64_t> GetTime(simdjson::dom::object o, const char* key) {
  simdjson::dom::element e;
  if (o[key].get(e) != simdjson::SUCCESS) return 0;
  int64_t v = 0;
  if (e.get_int64().get(v) != simdjson::SUCCESS || v < 0 || v > kMaxTimeNs) return std::nullopt;
  return v;
}

std::string GetString(simdjson::dom::object o, const char* key) {
  std::string_view s;
  if (o[key].get_string().get(s) != simdjson::SUCCESS) return "";
  return SanitizeText(s);
}

// What every format fills: the recording, malformed lines with examples, and whether the header
// and end were seen.
class Builder {
 public:
  Builder(const Builder&) = delete;  // malformed_ points into rec
  Builder& operator=(const Builder&) = delete;
  Builder(const std::string& name, SourceKind kind) : malformed_(&rec, name) {
    rec.source = kind;
    rec.source_path = name;
  }

  void Bad(uint64_t line, const std::string& why) { malformed_.Count(line, why); }

  // The JSON objects of the JSONL lines (the Chrome-trace metadata events carry the same).
  void Header(simdjson::dom::object o, uint64_t line) {
    have_header = true;
    const auto interval = GetTime(o, "interval_ns"), start = GetTime(o, "start_ns");
    if (!interval || !start) {
      Bad(line, std::string(interval ? "start_ns" : "interval_ns") + " is not a time in ns (" +
                    kTimeRange + ")");
      return;
    }
    rec.interval_ns = *interval;
    rec.start_ns = *start;
    rec.root_pid = static_cast<int32_t>(GetInt(o, "root_pid"));
    simdjson::dom::array a;
    if (!o["command"].get_array().get(a))
      for (auto e : a)
        if (std::string_view s; !e.get_string().get(s)) rec.command.push_back(SanitizeText(s));
    if (!o["gpus"].get_array().get(a))
      for (auto e : a) {
        simdjson::dom::object g;
        if (e.get_object().get(g)) continue;
        GpuInfo info;
        info.index = static_cast<int32_t>(GetInt(g, "index"));
        info.name = GetString(g, "name");
        Get(g, "mem_total_bytes", &info.mem_total_bytes);
        Get(g, "power_limit_w", &info.power_limit_w);
        rec.gpus.push_back(info);
      }
    rec.gpu_unavailable = GetString(o, "gpu_unavailable");
  }

  void SampleObject(simdjson::dom::object o, uint64_t line) {
    Sample s;
    const auto t = GetTime(o, "t_ns");
    if (!t) return Bad(line, "t_ns is not a time in ns (" + kTimeRange + ")");
    s.time_ns = *t;
    simdjson::dom::array a;
    if (!o["gpus"].get_array().get(a))
      for (auto e : a) {
        simdjson::dom::object g;
        if (e.get_object().get(g)) continue;
        GpuSample gs;
        const int64_t index = GetInt(g, "index");
        if (index < 0 || index > kMaxGpuIndex)
          return Bad(line, "GPU index " + std::to_string(index) + " is out of range (0 to " +
                               std::to_string(kMaxGpuIndex) + ")");
        gs.index = static_cast<int32_t>(index);
        Get(g, "sm_util_pct", &gs.sm_util_pct);
        Get(g, "mem_util_pct", &gs.mem_util_pct);
        Get(g, "mem_used_bytes", &gs.mem_used_bytes);
        Get(g, "mem_total_bytes", &gs.mem_total_bytes);
        Get(g, "power_w", &gs.power_w);
        Get(g, "power_limit_w", &gs.power_limit_w);
        Get(g, "sm_clock_mhz", &gs.sm_clock_mhz);
        Get(g, "temperature_c", &gs.temperature_c);
        Get(g, "pcie_rx_bytes_per_s", &gs.pcie_rx_bytes_per_s);
        Get(g, "pcie_tx_bytes_per_s", &gs.pcie_tx_bytes_per_s);
        Get(g, "throttle_reasons", &gs.throttle_reasons);
        Get(g, "tree_mem_bytes", &gs.tree_mem_bytes);
        if (std::string why = CheckGpuSample(gs); !why.empty())
          return Bad(line, "GPU " + std::to_string(index) + ": " + why);
        s.gpus.push_back(gs);
      }
    if (!o["procs"].get_array().get(a)) {
      rec.has_process_data = true;
      for (auto e : a) {
        simdjson::dom::object p;
        if (e.get_object().get(p)) continue;
        ProcessSample ps;
        ps.pid = static_cast<int32_t>(GetInt(p, "pid"));
        ps.ppid = static_cast<int32_t>(GetInt(p, "ppid"));
        ps.name = GetString(p, "name");
        std::optional<double> cpu;
        Get(p, "cpu_pct", &cpu);
        ps.cpu_pct = cpu.value_or(0);
        if (std::string why = CheckRange(ps.cpu_pct, 0, kMaxCpuPct, "%"); !why.empty())
          return Bad(line, "process " + std::to_string(ps.pid) + " cpu_pct " + why);
        std::optional<uint64_t> u;
        Get(p, "cpu_time_ns", &u);
        ps.cpu_time_ns = u.value_or(0);
        u.reset();
        Get(p, "rss_bytes", &u);
        ps.rss_bytes = u.value_or(0);
        Get(p, "read_bytes", &ps.read_bytes);
        Get(p, "gpu_bytes", &ps.gpu_bytes);
        cpu.reset();
        Get(p, "reaped_cpu_pct", &cpu);
        ps.reaped_cpu_pct = cpu.value_or(0);
        if (std::string why = CheckRange(ps.reaped_cpu_pct, 0, kMaxCpuPct, "%"); !why.empty())
          return Bad(line, "process " + std::to_string(ps.pid) + " reaped_cpu_pct " + why);
        s.processes.push_back(std::move(ps));
      }
    }
    if (!o["cores_busy_pct"].get_array().get(a)) {
      rec.has_process_data = true;
      for (auto e : a)
        if (double d; !e.get_double().get(d)) {
          if (std::string why = CheckRange(d, 0, kMaxUtilPct, "%"); !why.empty())
            return Bad(line, "core busy % " + why);
          s.core_busy_pct.push_back(d);
        }
    }
    rec.samples.push_back(std::move(s));
  }

  void End(simdjson::dom::object o, uint64_t line) {
    const auto end = GetTime(o, "end_ns");
    if (!end) return Bad(line, "end_ns is not a time in ns (" + kTimeRange + ")");
    have_end = true;
    rec.end_ns = *end;
    if (int64_t c; !o["exit_code"].get_int64().get(c) && c >= INT32_MIN && c <= INT32_MAX)
      rec.exit_code = static_cast<int>(c);
    simdjson::dom::array a;
    if (!o["notes"].get_array().get(a))
      for (auto e : a)
        if (std::string_view s; !e.get_string().get(s)) rec.notes.push_back(SanitizeText(s));
  }

  // `what_is_missing` names the end marker of the format ("end line", "]}").
  void NoteCut(const std::string& what_is_missing) {
    std::string note = "cut short: no " + what_is_missing +
                       ", so gpuscope stopped before the command ended (killed, or the disk "
                       "filled); the verdict covers the samples up to where the file stops";
    if (cut_line_ > 0)
      note += "; its last line (" + std::to_string(cut_line_) + ") is incomplete and was left out";
    rec.notes.push_back(std::move(note));
  }

  Recording rec;
  bool have_header = false;
  bool have_end = false;
  uint64_t cut_line_ = 0;

 private:
  MalformedLines malformed_;  // counts into rec (declared before it)
};

// Reads `source` line by line and hands each line to `on_line`. The writer ends every line with
// "\n", so a last line without one is the cut of a killed writer (or a full disk): it is left out
// whole, even where it parses (a number cut short still looks like a number), and remembered.
template <typename OnLine>
Status ForEachLine(io::ByteSource& source, const std::string& name, size_t max_line_bytes,
                   Builder* b, OnLine on_line) {
  LineReader lines(source, name, max_line_bytes);
  std::string_view line;
  while (true) {
    GPUSCOPE_TRY(more, lines.Next(&line));
    if (!*more) return Status::Ok();
    if (!lines.line_terminated() && lines.line_number() > 1) {
      b->cut_line_ = lines.line_number();
      return Status::Ok();
    }
    GPUSCOPE_RETURN_IF_ERROR(on_line(line, lines.line_number()));
  }
}

Result<Recording> NotARecording(const std::string& name, const std::string& what) {
  return Status::InputError(name, 0, "not a gpuscope monitor recording (" + what + ")",
                            "record one with `gpuscope run --record FILE.jsonl -- CMD`");
}

// ---------------------------------------------------------------------------------------------
// CSV: quoted fields ("" escapes a quote) may span lines (a process name holding a newline).

// Splits one CSV record; false while a quoted field is still open (the record goes on).
bool SplitCsv(std::string_view line, std::vector<std::string>* cells) {
  cells->assign(1, "");
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells->back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells->back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells->emplace_back();
    } else {
      cells->back() += c;
    }
  }
  return !quoted;
}

bool ParseFiniteDouble(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(*out);
}

class CsvRecordingParser {
 public:
  explicit CsvRecordingParser(Builder* b) : b_(b) {}

  Status Line(std::string_view line, uint64_t line_number) {
    if (!saw_header_) {
      if (FirstLine(line) != kCsvHeader)
        return Status::InputError(b_->rec.source_path, 0,
                                  "not a gpuscope CSV recording: the first line is not \"" +
                                      std::string(kCsvHeader) + "\"",
                                  "record one with `gpuscope run --record FILE.csv -- CMD`");
      saw_header_ = true;
      return Status::Ok();
    }
    if (pending_.empty()) pending_line_ = line_number;
    if (!pending_.empty()) pending_ += '\n';
    pending_.append(line);
    if (pending_.size() > kMaxElementBytes) {
      b_->Bad(pending_line_, "a quoted field is never closed");
      pending_.clear();
      return Status::Ok();
    }
    if (!SplitCsv(pending_, &cells_)) return Status::Ok();  // a quoted field goes on
    pending_.clear();
    if (cells_.size() == 1 && cells_[0].empty()) return Status::Ok();
    Row(pending_line_);
    return Status::Ok();
  }

  // A quoted field still open at the end: the file stopped inside it.
  bool open_record() const { return !pending_.empty(); }

  void Finish() {
    if (!saw_cpu_time_ && b_->rec.has_process_data) EstimateCpuTime();
    if (!b_->rec.samples.empty() && b_->rec.start_ns == 0)
      b_->rec.start_ns = first_start_ns_.value_or(b_->rec.samples.front().time_ns);
    b_->have_header = saw_header_;
  }
  bool saw_run_rows() const { return saw_run_rows_; }

 private:
  void Row(uint64_t line) {
    if (cells_.size() != 6)
      return b_->Bad(line, "expected 6 fields, found " + std::to_string(cells_.size()));
    const std::string &source = cells_[2], &id = cells_[3], &metric = cells_[4], &text = cells_[5];
    int64_t unix_ns = 0;
    if (ParseInt64(cells_[1], &unix_ns) != NumberError::kOk || unix_ns < 0 || unix_ns > kMaxTimeNs)
      return b_->Bad(line,
                     "unix_ns \"" + cells_[1] + "\" is not a time in ns (" + kTimeRange + ")");
    double value = 0;
    if (!ParseFiniteDouble(text, &value))
      return b_->Bad(line, metric + ": \"" + text + "\" is not a number");
    if (double time_s;
        !first_start_ns_ && ParseFiniteDouble(cells_[0], &time_s) && std::fabs(time_s) < 1e9)
      first_start_ns_ = unix_ns - std::llround(time_s * 1e9);
    if (source == "run") return RunRow(line, unix_ns, id, metric, text, value);
    Sample& s = SampleAt(unix_ns);
    if (source == "gpu") return GpuRow(line, s, id, metric, text, value);
    if (source == "proc") return ProcRow(line, s, id, metric, text, value);
    if (source == "core") {
      int64_t core = 0;
      if (ParseInt64(id, &core) != NumberError::kOk || core < 0 || core >= 65'536)
        return b_->Bad(line, "core \"" + id + "\" is not a core number (0 to 65535)");
      if (metric != "busy_pct") return b_->Bad(line, "unknown core metric \"" + metric + "\"");
      if (std::string why = CheckRange(value, 0, kMaxUtilPct, "%"); !why.empty())
        return b_->Bad(line, "busy_pct " + text + " " + why);
      b_->rec.has_process_data = true;
      if (s.core_busy_pct.size() <= static_cast<size_t>(core))
        s.core_busy_pct.resize(static_cast<size_t>(core) + 1, 0.0);
      s.core_busy_pct[static_cast<size_t>(core)] = value;
      return;
    }
    b_->Bad(line, "unknown source \"" + source + "\" (expected gpu, proc, core or run)");
  }

  // Rows of one sample share its unix_ns and come together (recorder.cc writes them so).
  Sample& SampleAt(int64_t unix_ns) {
    if (b_->rec.samples.empty() || b_->rec.samples.back().time_ns != unix_ns) {
      b_->rec.samples.emplace_back();
      b_->rec.samples.back().time_ns = unix_ns;
      gpu_at_.clear();
      proc_at_.clear();
    }
    return b_->rec.samples.back();
  }

  static bool Integral(double v, uint64_t* out) {
    if (!(v >= 0 && v < kMaxBytes) || v != std::floor(v)) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }

  void GpuRow(uint64_t line, Sample& s, const std::string& id, const std::string& metric,
              const std::string& text, double value) {
    int64_t index = 0;
    if (ParseInt64(id, &index) != NumberError::kOk || index < 0 || index > kMaxGpuIndex)
      return b_->Bad(line, "GPU \"" + id + "\" is not a GPU index");
    auto [it, added] = gpu_at_.emplace(index, s.gpus.size());
    if (added) {
      s.gpus.emplace_back();
      s.gpus.back().index = static_cast<int32_t>(index);
    }
    GpuSample g = s.gpus[it->second];
    uint64_t u = 0;
    const bool integral = Integral(value, &u) && ParseUint64(text, &u) == NumberError::kOk;
    if (metric == "sm_util_pct")
      g.sm_util_pct = value;
    else if (metric == "mem_util_pct")
      g.mem_util_pct = value;
    else if (metric == "power_w")
      g.power_w = value;
    else if (metric == "power_limit_w")
      g.power_limit_w = value;
    else if (metric == "sm_clock_mhz")
      g.sm_clock_mhz = value;
    else if (metric == "temperature_c")
      g.temperature_c = value;
    else if (metric == "pcie_rx_bytes_per_s")
      g.pcie_rx_bytes_per_s = value;
    else if (metric == "pcie_tx_bytes_per_s")
      g.pcie_tx_bytes_per_s = value;
    else if (metric == "mem_used_bytes" || metric == "mem_total_bytes" ||
             metric == "throttle_reasons" || metric == "tree_mem_bytes") {
      if (!integral) return b_->Bad(line, metric + ": \"" + text + "\" is not a count in bytes");
      (metric == "mem_used_bytes"     ? g.mem_used_bytes
       : metric == "mem_total_bytes"  ? g.mem_total_bytes
       : metric == "throttle_reasons" ? g.throttle_reasons
                                      : g.tree_mem_bytes) = u;
    } else {
      return b_->Bad(line, "unknown GPU metric \"" + metric + "\"");
    }
    if (std::string why = CheckGpuSample(g); !why.empty())
      return b_->Bad(line, "GPU " + id + ": " + why);
    s.gpus[it->second] = g;
  }

  void ProcRow(uint64_t line, Sample& s, const std::string& id, const std::string& metric,
               const std::string& text, double value) {
    // id = "PID:name"; the name may hold ':' itself.
    const size_t colon = id.find(':');
    int64_t pid = 0;
    if (colon == std::string::npos ||
        ParseInt64(std::string_view(id).substr(0, colon), &pid) != NumberError::kOk || pid < 0 ||
        pid > INT32_MAX)
      return b_->Bad(line, "process \"" + id + "\" is not PID:name");
    b_->rec.has_process_data = true;
    auto [it, added] = proc_at_.emplace(pid, s.processes.size());
    if (added) {
      s.processes.emplace_back();
      s.processes.back().pid = static_cast<int32_t>(pid);
      s.processes.back().name = SanitizeText(id.substr(colon + 1));
    }
    ProcessSample& p = s.processes[it->second];
    uint64_t u = 0;
    const bool integral = Integral(value, &u) && ParseUint64(text, &u) == NumberError::kOk;
    if (metric == "cpu_pct" || metric == "reaped_cpu_pct") {
      if (std::string why = CheckRange(value, 0, kMaxCpuPct, "%"); !why.empty())
        return b_->Bad(line, metric + " " + text + " " + why);
      (metric == "cpu_pct" ? p.cpu_pct : p.reaped_cpu_pct) = value;
    } else if (metric == "ppid") {
      if (!integral || u > INT32_MAX) return b_->Bad(line, "ppid \"" + text + "\" is not a pid");
      p.ppid = static_cast<int32_t>(u);
    } else if (metric == "rss_bytes" || metric == "read_bytes" || metric == "cpu_time_ns" ||
               metric == "gpu_bytes") {
      if (!integral) return b_->Bad(line, metric + ": \"" + text + "\" is not a count");
      if (metric == "rss_bytes")
        p.rss_bytes = u;
      else if (metric == "read_bytes")
        p.read_bytes = u;
      else if (metric == "gpu_bytes")
        p.gpu_bytes = u;
      else
        p.cpu_time_ns = u, saw_cpu_time_ = true;
    } else {
      b_->Bad(line, "unknown process metric \"" + metric + "\"");
    }
  }

  void RunRow(uint64_t line, int64_t unix_ns, const std::string& id, const std::string& metric,
              const std::string& text, double value) {
    saw_run_rows_ = true;
    Recording& r = b_->rec;
    uint64_t u = 0;
    const bool integral = Integral(value, &u) && ParseUint64(text, &u) == NumberError::kOk;
    auto gpu = [&]() -> GpuInfo* {
      int64_t index = 0;
      const std::string_view key = metric == "gpu_name" ? std::string_view(text) : id;
      if (ParseInt64(key, &index) != NumberError::kOk || index < 0 || index > kMaxGpuIndex)
        return nullptr;
      for (GpuInfo& g : r.gpus)
        if (g.index == index) return &g;
      r.gpus.push_back({static_cast<int32_t>(index), "", std::nullopt, std::nullopt});
      return &r.gpus.back();
    };
    if (metric == "start_ns" || metric == "end_ns" || metric == "interval_ns") {
      if (!integral || u > static_cast<uint64_t>(kMaxTimeNs))
        return b_->Bad(line, metric + " is not a time in ns (" + kTimeRange + ")");
      if (metric == "start_ns") r.start_ns = static_cast<int64_t>(u);
      if (metric == "interval_ns") r.interval_ns = static_cast<int64_t>(u);
      if (metric == "end_ns") r.end_ns = static_cast<int64_t>(u), b_->have_end = true;
    } else if (metric == "root_pid") {
      if (!integral || u > INT32_MAX) return b_->Bad(line, "root_pid is not a pid");
      r.root_pid = static_cast<int32_t>(u);
    } else if (metric == "exit_code") {
      if (value != std::floor(value) || value < INT32_MIN || value > INT32_MAX)
        return b_->Bad(line, "exit_code is not an exit code");
      r.exit_code = static_cast<int>(value);
    } else if (metric == "command_arg") {
      r.command.push_back(SanitizeText(id));
    } else if (metric == "note") {
      r.notes.push_back(SanitizeText(id));
    } else if (metric == "gpu_unavailable") {
      r.gpu_unavailable = SanitizeText(id);
    } else if (metric == "gpu_name") {
      GpuInfo* g = gpu();
      if (!g) return b_->Bad(line, "gpu_name: \"" + text + "\" is not a GPU index");
      g->name = SanitizeText(id);
    } else if (metric == "gpu_mem_total_bytes" || metric == "gpu_power_limit_w") {
      GpuInfo* g = gpu();
      if (!g) return b_->Bad(line, metric + ": \"" + id + "\" is not a GPU index");
      if (metric == "gpu_power_limit_w") {
        if (std::string why = CheckRange(value, 0, kMaxPowerW, "W"); !why.empty())
          return b_->Bad(line, metric + " " + text + " " + why);
        g->power_limit_w = value;
      } else {
        if (!integral) return b_->Bad(line, metric + ": \"" + text + "\" is not a count");
        g->mem_total_bytes = u;
      }
    } else {
      b_->Bad(line, "unknown run metric \"" + metric + "\"");
    }
    (void)unix_ns;
  }

  // CSVs written before the cpu_time_ns rows: the main process is picked by CPU time, so it is
  // estimated from cpu_pct × the time between samples (exact to the sampling, not to the ns).
  void EstimateCpuTime() {
    std::map<int32_t, double> total_ns;
    int64_t previous = b_->rec.start_ns ? b_->rec.start_ns : b_->rec.samples.front().time_ns;
    for (Sample& s : b_->rec.samples) {
      const double dt = static_cast<double>(std::max<int64_t>(0, s.time_ns - previous));
      previous = s.time_ns;
      for (ProcessSample& p : s.processes) {
        total_ns[p.pid] += p.cpu_pct / 100.0 * dt;
        // Saturated at 2^63 ns (292 years): damaged sample times must not overflow the cast.
        p.cpu_time_ns = static_cast<uint64_t>(std::min(total_ns[p.pid], 9.2e18));
      }
    }
    b_->rec.notes.push_back(
        "no cpu_time_ns rows (a CSV from an older gpuscope): CPU time estimated from cpu_pct");
  }

  Builder* b_;
  bool saw_header_ = false;
  bool saw_cpu_time_ = false;
  bool saw_run_rows_ = false;
  std::optional<int64_t> first_start_ns_;
  std::string pending_;
  uint64_t pending_line_ = 0;
  std::vector<std::string> cells_;
  std::map<int64_t, size_t> gpu_at_, proc_at_;  // index/pid → position in the current sample
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Sniffers.

// Whether `line` has "key": "value", with any whitespace around the colon (a recording that
// Python's json.dumps wrote again has "type": "header").
static bool HasStringMember(std::string_view line, std::string_view key, std::string_view value) {
  // append, not "\"" + string: GCC 12 reports a false -Wrestrict there (bug 105329).
  const std::string quoted_key = std::string("\"").append(key).append("\"");
  const std::string quoted_value = std::string("\"").append(value).append("\"");
  for (size_t at = line.find(quoted_key); at != std::string_view::npos;
       at = line.find(quoted_key, at + 1)) {
    size_t p = at + quoted_key.size();
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
    if (p >= line.size() || line[p] != ':') continue;
    ++p;
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
    if (line.substr(p, quoted_value.size()) == quoted_value) return true;
  }
  return false;
}

bool LooksLikeJsonlRecording(std::string_view head) {
  const std::string_view first = FirstLine(head);
  return HasStringMember(first, "type", "header") && HasStringMember(first, "format", kFormatName);
}

bool LooksLikeCsvRecording(std::string_view head) {
  std::string_view first = FirstLine(head);
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  return first == kCsvHeader;
}

bool LooksLikeChromeTraceRecording(std::string_view head) {
  // recorder.cc starts every Chrome-trace recording with these two lines.
  const std::string_view first = FirstLine(head);
  if (first.rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 0) != 0) return false;
  const size_t second_end = head.find('\n', first.size() + 1);
  return head.substr(0, second_end).find(kChromeProcess) != std::string_view::npos;
}

// ---------------------------------------------------------------------------------------------
// Readers.

Result<Recording> ReadJsonlRecording(io::ByteSource& source, const std::string& name,
                                     size_t max_line_bytes) {
  Builder b(name, SourceKind::kRecording);
  simdjson::dom::parser parser;
  Status s = ForEachLine(source, name, max_line_bytes, &b, [&](std::string_view line, uint64_t n) {
    if (line.empty()) return Status::Ok();
    simdjson::dom::element doc;
    simdjson::dom::object o;
    if (parser.parse(line.data(), line.size()).get(doc) != simdjson::SUCCESS ||
        doc.get_object().get(o)) {
      b.Bad(n, "not a JSON object");
      return Status::Ok();
    }
    std::string_view type;
    if (o["type"].get_string().get(type)) {
      b.Bad(n, "no \"type\"");
    } else if (type == "header") {
      b.Header(o, n);
    } else if (type == "sample") {
      b.SampleObject(o, n);
    } else if (type == "end") {
      b.End(o, n);
    } else {
      b.Bad(n, "unknown type \"" + std::string(type) + "\"");
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (!b.have_header) return NotARecording(name, "no header line");
  if (!b.have_end) b.NoteCut("end line");
  if (b.rec.end_ns == 0 && !b.rec.samples.empty()) b.rec.end_ns = b.rec.samples.back().time_ns;
  return std::move(b.rec);
}

Result<Recording> ParseJsonlRecording(std::string_view text, const std::string& name) {
  auto source = io::MemoryByteSource(text, name);
  return ReadJsonlRecording(*source, name);
}

Result<Recording> ReadCsvRecording(io::ByteSource& source, const std::string& name,
                                   size_t max_line_bytes) {
  Builder b(name, SourceKind::kRecording);
  CsvRecordingParser parser(&b);
  Status s = ForEachLine(source, name, max_line_bytes, &b,
                         [&](std::string_view line, uint64_t n) { return parser.Line(line, n); });
  if (!s.ok()) return s;
  parser.Finish();
  if (!b.have_header) return NotARecording(name, "empty, no CSV header line");
  if (parser.open_record()) b.cut_line_ = std::max<uint64_t>(b.cut_line_, 1);
  if (!parser.saw_run_rows()) {
    b.rec.notes.push_back(
        "no \"run\" rows (a CSV from an older gpuscope): command, GPU names and the end of the "
        "run are not known");
  } else if (!b.have_end) {
    b.NoteCut("end_ns row");
  }
  if (b.rec.end_ns == 0 && !b.rec.samples.empty()) b.rec.end_ns = b.rec.samples.back().time_ns;
  return std::move(b.rec);
}

Result<Recording> ReadChromeTraceRecording(io::ByteSource& source, const std::string& name,
                                           size_t max_line_bytes) {
  Builder b(name, SourceKind::kRecording);
  simdjson::dom::parser parser;
  bool first = true, closed = false, counters = false;
  Status s = ForEachLine(source, name, max_line_bytes, &b, [&](std::string_view line, uint64_t n) {
    if (first) {
      first = false;
      if (FirstLine(line).rfind("{\"displayTimeUnit\"", 0) != 0)
        return Status::InputError(name, 0,
                                  "not a gpuscope Chrome-trace recording: it does not start "
                                  "with {\"displayTimeUnit\"",
                                  "record one with `gpuscope run --record FILE.json -- CMD`");
      return Status::Ok();
    }
    // One event per line, as recorder.cc writes them: "{...}," … "{...}" then "]}".
    while (!line.empty() && (line.back() == ' ' || line.back() == ',')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty()) return Status::Ok();
    if (line == "]}") {
      closed = true;
      return Status::Ok();
    }
    simdjson::dom::element doc;
    simdjson::dom::object o;
    if (parser.parse(line.data(), line.size()).get(doc) != simdjson::SUCCESS ||
        doc.get_object().get(o)) {
      b.Bad(n, "not a JSON event on one line");
      return Status::Ok();
    }
    std::string_view ph, event;
    if (o["ph"].get_string().get(ph) || o["name"].get_string().get(event)) {
      b.Bad(n, "an event without \"ph\" or \"name\"");
      return Status::Ok();
    }
    if (ph == "C") counters = true;
    if (ph != "M") return Status::Ok();  // counters: the viewers' copy of the samples
    simdjson::dom::object args;
    if (event == "gpuscope_header" || event == "gpuscope_sample" || event == "gpuscope_end") {
      if (o["args"].get_object().get(args)) {
        b.Bad(n, std::string(event) + " without an \"args\" object");
        return Status::Ok();
      }
      if (event == "gpuscope_header") b.Header(args, n);
      if (event == "gpuscope_sample") b.SampleObject(args, n);
      if (event == "gpuscope_end") b.End(args, n);
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (!b.have_header) {
    if (counters)
      return Status::InputError(
          name, 0,
          "a Chrome-trace recording from an older gpuscope: it holds counter tracks for viewers "
          "only, not the samples the verdict needs",
          "record again with this gpuscope, or with --record FILE.jsonl");
    return NotARecording(name, "no gpuscope_header event");
  }
  if (!closed || !b.have_end) b.NoteCut(closed ? "gpuscope_end event" : "closing ]}");
  if (b.rec.end_ns == 0 && !b.rec.samples.empty()) b.rec.end_ns = b.rec.samples.back().time_ns;
  return std::move(b.rec);
}

}  // namespace gpuscope::ingest
