#include "monitor/recorder.h"

#include <simdjson.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/sanitize.h"
#include "render/json_writer.h"

namespace gpuscope::monitor {

namespace {

using render::JsonWriter;

constexpr int64_t kFlushEveryNs = 1'000'000'000;  // 1 s
constexpr const char* kFormatName = "gpuscope-monitor";
constexpr int kFormatVersion = 1;

template <typename T>
void Opt(JsonWriter& w, const char* key, const std::optional<T>& v, int decimals = 2) {
  if (!v) return;
  w.Key(key);
  if constexpr (std::is_floating_point_v<T>)
    w.Double(*v, decimals);
  else
    w.Uint(*v);
}

std::string Number(double v) {
  char buf[48];
  // %.6g keeps integers exact up to 1e6 and is short; byte counts use the integer overload.
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string Number(uint64_t v) { return std::to_string(v); }

std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

RecordFormat RecordFormatFor(const std::string& path) {
  auto ends = [&](const char* suffix) {
    const size_t n = std::strlen(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
  };
  if (ends(".csv")) return RecordFormat::kCsv;
  if (ends(".json")) return RecordFormat::kChromeTrace;
  return RecordFormat::kJsonl;
}

std::string SampleToJsonLine(const Sample& s) {
  JsonWriter w(0);
  w.BeginObject().Key("type").String("sample").Key("t_ns").ExactInt(s.time_ns);
  if (!s.gpus.empty()) {
    w.Key("gpus").BeginArray();
    for (const GpuSample& g : s.gpus) {
      w.BeginObject().Key("index").Int(g.index);
      Opt(w, "sm_util_pct", g.sm_util_pct);
      Opt(w, "mem_util_pct", g.mem_util_pct);
      Opt(w, "mem_used_bytes", g.mem_used_bytes);
      Opt(w, "mem_total_bytes", g.mem_total_bytes);
      Opt(w, "power_w", g.power_w, 3);
      Opt(w, "power_limit_w", g.power_limit_w, 3);
      Opt(w, "sm_clock_mhz", g.sm_clock_mhz, 0);
      Opt(w, "temperature_c", g.temperature_c, 0);
      Opt(w, "pcie_rx_bytes_per_s", g.pcie_rx_bytes_per_s, 0);
      Opt(w, "pcie_tx_bytes_per_s", g.pcie_tx_bytes_per_s, 0);
      Opt(w, "throttle_reasons", g.throttle_reasons);
      Opt(w, "tree_mem_bytes", g.tree_mem_bytes);
      w.EndObject();
    }
    w.EndArray();
  }
  if (!s.processes.empty()) {
    w.Key("procs").BeginArray();
    for (const ProcessSample& p : s.processes) {
      w.BeginObject()
          .Key("pid")
          .Int(p.pid)
          .Key("ppid")
          .Int(p.ppid)
          .Key("name")
          .String(p.name)
          .Key("cpu_pct")
          .Double(p.cpu_pct, 1)
          .Key("cpu_time_ns")
          .Uint(p.cpu_time_ns)
          .Key("rss_bytes")
          .Uint(p.rss_bytes);
      Opt(w, "read_bytes", p.read_bytes);
      // Only when some child ended: files of runs without short-lived processes stay as they were.
      if (p.reaped_cpu_pct > 0) w.Key("reaped_cpu_pct").Double(p.reaped_cpu_pct, 1);
      w.EndObject();
    }
    w.EndArray();
  }
  if (!s.core_busy_pct.empty()) {
    w.Key("cores_busy_pct").BeginArray();
    for (double c : s.core_busy_pct) w.Double(c, 1);
    w.EndArray();
  }
  w.EndObject();
  return w.str();
}

Result<std::unique_ptr<Recorder>> Recorder::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wbe");  // e: O_CLOEXEC, not inherited by the command
  if (!f)
    return Status::Error(StatusCode::kIoError, "cannot write --record file " + SanitizeText(path) +
                                                   ": " + std::strerror(errno));
  std::unique_ptr<Recorder> r(new Recorder());
  r->path_ = path;
  r->file_ = f;
  r->format_ = RecordFormatFor(path);
  return r;
}

Recorder::~Recorder() {
  if (file_) std::fclose(file_);
}

void Recorder::Fail(int err) {
  if (failed_) return;
  failed_ = true;
  error_ =
      "writing " + SanitizeText(path_) + " failed: " + (err ? std::strerror(err) : "unknown error");
}

void Recorder::Put(const std::string& text) {
  if (!file_ || failed_) return;
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) Fail(errno);
}

void Recorder::Flush() {
  if (!file_ || failed_) return;
  errno = 0;
  // stdio buffers: a full disk shows here, not in fwrite.
  if (std::fflush(file_) != 0) Fail(errno);
}

void Recorder::WriteHeader(const Recording& meta) {
  start_ns_ = meta.start_ns;
  last_flush_ns_ = meta.start_ns;
  switch (format_) {
    case RecordFormat::kJsonl: {
      JsonWriter w(0);
      w.BeginObject()
          .Key("type")
          .String("header")
          .Key("format")
          .String(kFormatName)
          .Key("version")
          .Int(kFormatVersion)
          .Key("command")
          .BeginArray();
      for (const std::string& a : meta.command) w.String(a);
      w.EndArray()
          .Key("interval_ns")
          .Int(meta.interval_ns)
          .Key("start_ns")
          .ExactInt(meta.start_ns)
          .Key("root_pid")
          .Int(meta.root_pid)
          .Key("gpus")
          .BeginArray();
      for (const GpuInfo& g : meta.gpus) {
        w.BeginObject().Key("index").Int(g.index).Key("name").String(g.name);
        Opt(w, "mem_total_bytes", g.mem_total_bytes);
        Opt(w, "power_limit_w", g.power_limit_w, 3);
        w.EndObject();
      }
      w.EndArray();
      if (!meta.gpu_unavailable.empty()) w.Key("gpu_unavailable").String(meta.gpu_unavailable);
      w.EndObject();
      Put(w.str() + "\n");
      break;
    }
    case RecordFormat::kCsv:
      Put("time_s,unix_ns,source,id,metric,value\n");
      break;
    case RecordFormat::kChromeTrace: {
      // Process names label the tracks in Perfetto / chrome://tracing.
      Put("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
          "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":\"gpuscope monitor\",\"args\":{\"name\":"
          "\"gpuscope monitor\"}}");
      first_event_ = false;
      break;
    }
  }
  Flush();
}

void Recorder::WriteSample(const Sample& s) {
  switch (format_) {
    case RecordFormat::kJsonl:
      Put(SampleToJsonLine(s) + "\n");
      break;
    case RecordFormat::kCsv: {
      char prefix[64];
      std::snprintf(prefix, sizeof prefix, "%.3f,%lld,", (s.time_ns - start_ns_) / 1e9,
                    static_cast<long long>(s.time_ns));
      std::string out;
      auto row = [&](const char* source, const std::string& id, const char* metric,
                     const std::string& value) {
        out += prefix;
        out += source;
        out += ',' + id + ',' + metric + ',' + value + '\n';
      };
      for (const GpuSample& g : s.gpus) {
        const std::string id = std::to_string(g.index);
        if (g.sm_util_pct) row("gpu", id, "sm_util_pct", Number(*g.sm_util_pct));
        if (g.mem_util_pct) row("gpu", id, "mem_util_pct", Number(*g.mem_util_pct));
        if (g.mem_used_bytes) row("gpu", id, "mem_used_bytes", Number(*g.mem_used_bytes));
        if (g.mem_total_bytes) row("gpu", id, "mem_total_bytes", Number(*g.mem_total_bytes));
        if (g.power_w) row("gpu", id, "power_w", Number(*g.power_w));
        if (g.power_limit_w) row("gpu", id, "power_limit_w", Number(*g.power_limit_w));
        if (g.sm_clock_mhz) row("gpu", id, "sm_clock_mhz", Number(*g.sm_clock_mhz));
        if (g.temperature_c) row("gpu", id, "temperature_c", Number(*g.temperature_c));
        if (g.pcie_rx_bytes_per_s)
          row("gpu", id, "pcie_rx_bytes_per_s", Number(*g.pcie_rx_bytes_per_s));
        if (g.pcie_tx_bytes_per_s)
          row("gpu", id, "pcie_tx_bytes_per_s", Number(*g.pcie_tx_bytes_per_s));
        if (g.throttle_reasons) row("gpu", id, "throttle_reasons", Number(*g.throttle_reasons));
        if (g.tree_mem_bytes) row("gpu", id, "tree_mem_bytes", Number(*g.tree_mem_bytes));
      }
      for (const ProcessSample& p : s.processes) {
        // id = "PID:name" keeps the CSV one-table while naming the process.
        const std::string id = CsvQuote(std::to_string(p.pid) + ":" + p.name);
        row("proc", id, "ppid", std::to_string(p.ppid));
        row("proc", id, "cpu_pct", Number(p.cpu_pct));
        if (p.reaped_cpu_pct > 0) row("proc", id, "reaped_cpu_pct", Number(p.reaped_cpu_pct));
        row("proc", id, "rss_bytes", Number(p.rss_bytes));
        if (p.read_bytes) row("proc", id, "read_bytes", Number(*p.read_bytes));
      }
      for (size_t c = 0; c < s.core_busy_pct.size(); ++c)
        row("core", std::to_string(c), "busy_pct", Number(s.core_busy_pct[c]));
      Put(out);
      break;
    }
    case RecordFormat::kChromeTrace: {
      // Counter events at absolute unix µs: Kineto traces also use unix-based µs (or give
      // baseTimeNanoseconds), so both line up when opened together.
      char ts[48];
      std::snprintf(ts, sizeof ts, "%lld.%03lld", static_cast<long long>(s.time_ns / 1000),
                    static_cast<long long>(s.time_ns % 1000));
      std::string out;
      auto counter = [&](const std::string& name, const std::string& args) {
        out += ",\n{\"ph\":\"C\",\"pid\":\"gpuscope monitor\",\"name\":";
        JsonWriter::AppendEscaped(&out, name);
        out += ",\"ts\":";
        out += ts;
        out += ",\"args\":{" + args + "}}";
      };
      for (const GpuSample& g : s.gpus) {
        const std::string gpu = "GPU " + std::to_string(g.index) + " ";
        if (g.sm_util_pct)
          counter(gpu + "utilisation %", "\"sm\":" + Number(*g.sm_util_pct) +
                                             ",\"memory\":" + Number(g.mem_util_pct.value_or(0)));
        if (g.mem_used_bytes)
          counter(gpu + "memory used GB", "\"used\":" + Number(*g.mem_used_bytes / 1e9));
        if (g.power_w) counter(gpu + "power W", "\"power\":" + Number(*g.power_w));
        if (g.sm_clock_mhz) counter(gpu + "SM clock MHz", "\"sm\":" + Number(*g.sm_clock_mhz));
        if (g.temperature_c) counter(gpu + "temperature C", "\"gpu\":" + Number(*g.temperature_c));
        if (g.pcie_rx_bytes_per_s || g.pcie_tx_bytes_per_s)
          counter(gpu + "PCIe MB/s", "\"rx\":" + Number(g.pcie_rx_bytes_per_s.value_or(0) / 1e6) +
                                         ",\"tx\":" + Number(g.pcie_tx_bytes_per_s.value_or(0) / 1e6));
      }
      for (const ProcessSample& p : s.processes) {
        std::string key;
        JsonWriter::AppendEscaped(&key, std::to_string(p.pid) + " " + p.name);
        counter("CPU % by process", key + ":" + Number(p.cpu_pct));
        if (p.reaped_cpu_pct > 0) {
          std::string ended;
          JsonWriter::AppendEscaped(&ended,
                                    std::to_string(p.pid) + " " + p.name + " (ended children)");
          counter("CPU % by process", ended + ":" + Number(p.reaped_cpu_pct));
        }
      }
      Put(out);
      break;
    }
  }
  if (s.time_ns - last_flush_ns_ >= kFlushEveryNs) {
    Flush();
    last_flush_ns_ = s.time_ns;
  }
}

Status Recorder::Finish(const Recording& meta) {
  if (!file_) return Status::Ok();
  switch (format_) {
    case RecordFormat::kJsonl: {
      JsonWriter w(0);
      w.BeginObject().Key("type").String("end").Key("end_ns").ExactInt(meta.end_ns);
      if (meta.exit_code) w.Key("exit_code").Int(*meta.exit_code);
      w.Key("notes").BeginArray();
      for (const std::string& n : meta.notes) w.String(n);
      w.EndArray().EndObject();
      Put(w.str() + "\n");
      break;
    }
    case RecordFormat::kCsv:
      break;
    case RecordFormat::kChromeTrace:
      Put("\n]}\n");
      break;
  }
  Flush();
  errno = 0;
  if (std::fclose(file_) != 0) Fail(errno);
  file_ = nullptr;
  if (failed_) return Status::Error(StatusCode::kIoError, error_ + " (the record is incomplete)");
  return Status::Ok();
}

bool LooksLikeJsonlRecording(const std::string& head) {
  const size_t eol = head.find('\n');
  const std::string first = head.substr(0, eol);
  return first.find("\"type\":\"header\"") != std::string::npos &&
         first.find(kFormatName) != std::string::npos;
}

namespace {

template <typename T>
void Get(simdjson::dom::object o, const char* key, std::optional<T>* out) {
  simdjson::dom::element e;
  if (o[key].get(e) != simdjson::SUCCESS) return;
  if constexpr (std::is_floating_point_v<T>) {
    double d;
    if (e.get_double().get(d) == simdjson::SUCCESS) *out = d;
    else if (int64_t i; e.get_int64().get(i) == simdjson::SUCCESS) *out = static_cast<double>(i);
    else if (uint64_t u; e.get_uint64().get(u) == simdjson::SUCCESS) *out = static_cast<double>(u);
  } else {
    uint64_t u;
    if (e.get_uint64().get(u) == simdjson::SUCCESS) *out = u;
  }
}

int64_t GetInt(simdjson::dom::object o, const char* key) {
  int64_t v = 0;
  if (o[key].get_int64().get(v) != simdjson::SUCCESS) return 0;
  return v;
}

// Unix ns up to the year 2200: the verdict subtracts times, which must not overflow int64.
constexpr int64_t kMaxTimeNs = 7'258'118'400LL * 1'000'000'000;

// A time key: absent → 0; present but not a unix ns time in [0, 2200) → nullopt.
std::optional<int64_t> GetTime(simdjson::dom::object o, const char* key) {
  simdjson::dom::element e;
  if (o[key].get(e) != simdjson::SUCCESS) return 0;
  int64_t v = 0;
  if (e.get_int64().get(v) != simdjson::SUCCESS || v < 0 || v > kMaxTimeNs) return std::nullopt;
  return v;
}

}  // namespace

Result<Recording> ReadJsonlRecording(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::Error(StatusCode::kNotFound, "cannot open " + path);
  std::stringstream text;
  text << file.rdbuf();
  return ParseJsonlRecording(text.str(), path);
}

Result<Recording> ParseJsonlRecording(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  Recording rec;
  rec.source = SourceKind::kRecording;
  rec.source_path = path;
  simdjson::dom::parser parser;
  std::string line;
  uint64_t line_number = 0;
  bool have_header = false;
  auto bad = [&](const std::string& why) {
    ++rec.malformed_lines;
    if (rec.malformed_examples.size() < 3)
      rec.malformed_examples.push_back(path + ":" + std::to_string(line_number) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    simdjson::dom::element doc;
    simdjson::dom::object o;
    if (parser.parse(line).get(doc) != simdjson::SUCCESS || doc.get_object().get(o)) {
      // The last line of a killed run may be cut short: count it like any bad line.
      bad("not a JSON object");
      continue;
    }
    std::string_view type;
    if (o["type"].get_string().get(type)) {
      bad("no \"type\"");
      continue;
    }
    if (type == "header") {
      have_header = true;
      const auto interval = GetTime(o, "interval_ns"), start = GetTime(o, "start_ns");
      if (!interval || !start) {
        bad(std::string(interval ? "start_ns" : "interval_ns") +
            " is not a time in ns (expected an integer from 0 to " + std::to_string(kMaxTimeNs) +
            ", the year 2200)");
        continue;
      }
      rec.interval_ns = *interval;
      rec.start_ns = *start;
      rec.root_pid = static_cast<int32_t>(GetInt(o, "root_pid"));
      simdjson::dom::array a;
      if (!o["command"].get_array().get(a))
        for (auto e : a)
          if (std::string_view s; !e.get_string().get(s)) rec.command.emplace_back(s);
      if (!o["gpus"].get_array().get(a))
        for (auto e : a) {
          simdjson::dom::object g;
          if (e.get_object().get(g)) continue;
          GpuInfo info;
          info.index = static_cast<int32_t>(GetInt(g, "index"));
          if (std::string_view s; !g["name"].get_string().get(s)) info.name = s;
          Get(g, "mem_total_bytes", &info.mem_total_bytes);
          Get(g, "power_limit_w", &info.power_limit_w);
          rec.gpus.push_back(info);
        }
      if (std::string_view s; !o["gpu_unavailable"].get_string().get(s)) rec.gpu_unavailable = s;
    } else if (type == "sample") {
      Sample s;
      const auto t = GetTime(o, "t_ns");
      if (!t) {
        bad("t_ns is not a time in ns (expected an integer from 0 to " +
            std::to_string(kMaxTimeNs) + ", the year 2200)");
        continue;
      }
      s.time_ns = *t;
      simdjson::dom::array a;
      if (!o["gpus"].get_array().get(a))
        for (auto e : a) {
          simdjson::dom::object g;
          if (e.get_object().get(g)) continue;
          GpuSample gs;
          gs.index = static_cast<int32_t>(GetInt(g, "index"));
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
          if (std::string_view n; !p["name"].get_string().get(n)) ps.name = n;
          std::optional<double> cpu;
          Get(p, "cpu_pct", &cpu);
          ps.cpu_pct = cpu.value_or(0);
          std::optional<uint64_t> u;
          Get(p, "cpu_time_ns", &u);
          ps.cpu_time_ns = u.value_or(0);
          u.reset();
          Get(p, "rss_bytes", &u);
          ps.rss_bytes = u.value_or(0);
          Get(p, "read_bytes", &ps.read_bytes);
          s.processes.push_back(std::move(ps));
        }
      }
      if (!o["cores_busy_pct"].get_array().get(a)) {
        rec.has_process_data = true;
        for (auto e : a)
          if (double d; !e.get_double().get(d)) s.core_busy_pct.push_back(d);
      }
      rec.samples.push_back(std::move(s));
    } else if (type == "end") {
      const auto end = GetTime(o, "end_ns");
      if (!end) {
        bad("end_ns is not a time in ns (expected an integer from 0 to " +
            std::to_string(kMaxTimeNs) + ", the year 2200)");
        continue;
      }
      rec.end_ns = *end;
      if (int64_t c; !o["exit_code"].get_int64().get(c)) rec.exit_code = static_cast<int>(c);
      simdjson::dom::array a;
      if (!o["notes"].get_array().get(a))
        for (auto e : a)
          if (std::string_view s; !e.get_string().get(s)) rec.notes.emplace_back(s);
    } else {
      bad("unknown type \"" + std::string(type) + "\"");
    }
  }
  if (!have_header)
    return Status::InputError(path, 0, "not a gpuscope monitor recording (no header line)",
                              "record one with `gpuscope run --record FILE.jsonl -- CMD`");
  if (rec.end_ns == 0 && !rec.samples.empty()) rec.end_ns = rec.samples.back().time_ns;
  return rec;
}

}  // namespace gpuscope::monitor
