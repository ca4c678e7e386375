#include "monitor/recorder.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "base/output_file.h"
#include "base/sanitize.h"
#include "render/json_writer.h"

namespace gpuscope::monitor {

namespace {

using render::JsonWriter;

constexpr int64_t kFlushEveryNs = 1'000'000'000;  // 1 s
constexpr const char* kFormatName = "gpuscope-monitor";
constexpr int kFormatVersion = 1;

// Decimals kept in a record, per kind of value (the JSONL writer's and RoundAsRecorded's).
constexpr int kPctDecimals = 2;     // GPU utilisation %
constexpr int kWattDecimals = 3;    // power, power limit
constexpr int kWholeDecimals = 0;   // MHz, °C, bytes/s
constexpr int kCpuPctDecimals = 3;  // process and core CPU %

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
  // The shortest form that reads back as the same double: samples are rounded as recorded
  // (RoundAsRecorded), so this is "12.5", not "12.500000000000001"; byte counts use the integer
  // overload.
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
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

// The JSONL header and end objects; the Chrome-trace format carries the same as metadata events.
std::string HeaderJson(const Recording& meta) {
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
    Opt(w, "power_limit_w", g.power_limit_w, kWattDecimals);
    w.EndObject();
  }
  w.EndArray();
  if (!meta.gpu_unavailable.empty()) w.Key("gpu_unavailable").String(meta.gpu_unavailable);
  w.EndObject();
  return w.str();
}

std::string EndJson(const Recording& meta) {
  JsonWriter w(0);
  w.BeginObject().Key("type").String("end").Key("end_ns").ExactInt(meta.end_ns);
  if (meta.exit_code) w.Key("exit_code").Int(*meta.exit_code);
  w.Key("notes").BeginArray();
  for (const std::string& n : meta.notes) w.String(n);
  w.EndArray().EndObject();
  return w.str();
}

// A metadata event ("ph":"M") of the Chrome-trace format: drawn by no viewer (Perfetto and
// chrome://tracing act only on process_name / thread_name …), read back by gpuscope.
std::string MetadataEvent(const char* name, const std::string& args_json) {
  return std::string(",\n{\"ph\":\"M\",\"pid\":\"gpuscope monitor\",\"name\":\"") + name +
         "\",\"args\":" + args_json + "}";
}

double Rounded(double v, int decimals) {
  if (!std::isfinite(v)) return v;
  const double scale = std::pow(10.0, decimals);
  // k / 10^d is the double nearest the decimal k·10^-d, which %.*f prints back exactly.
  return std::round(v * scale) / scale;
}
void Round(std::optional<double>& v, int decimals) {
  if (v) *v = Rounded(*v, decimals);
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

void RoundAsRecorded(Sample* s) {
  for (GpuSample& g : s->gpus) {
    Round(g.sm_util_pct, kPctDecimals);
    Round(g.mem_util_pct, kPctDecimals);
    Round(g.power_w, kWattDecimals);
    Round(g.power_limit_w, kWattDecimals);
    Round(g.sm_clock_mhz, kWholeDecimals);
    Round(g.temperature_c, kWholeDecimals);
    Round(g.pcie_rx_bytes_per_s, kWholeDecimals);
    Round(g.pcie_tx_bytes_per_s, kWholeDecimals);
  }
  for (ProcessSample& p : s->processes) {
    p.cpu_pct = Rounded(p.cpu_pct, kCpuPctDecimals);
    p.reaped_cpu_pct = Rounded(p.reaped_cpu_pct, kCpuPctDecimals);
  }
  for (double& c : s->core_busy_pct) c = Rounded(c, kCpuPctDecimals);
}

std::string SampleToJsonLine(const Sample& s) {
  JsonWriter w(0);
  w.BeginObject().Key("type").String("sample").Key("t_ns").ExactInt(s.time_ns);
  if (!s.gpus.empty()) {
    w.Key("gpus").BeginArray();
    for (const GpuSample& g : s.gpus) {
      w.BeginObject().Key("index").Int(g.index);
      Opt(w, "sm_util_pct", g.sm_util_pct, kPctDecimals);
      Opt(w, "mem_util_pct", g.mem_util_pct, kPctDecimals);
      Opt(w, "mem_used_bytes", g.mem_used_bytes);
      Opt(w, "mem_total_bytes", g.mem_total_bytes);
      Opt(w, "power_w", g.power_w, kWattDecimals);
      Opt(w, "power_limit_w", g.power_limit_w, kWattDecimals);
      Opt(w, "sm_clock_mhz", g.sm_clock_mhz, kWholeDecimals);
      Opt(w, "temperature_c", g.temperature_c, kWholeDecimals);
      Opt(w, "pcie_rx_bytes_per_s", g.pcie_rx_bytes_per_s, kWholeDecimals);
      Opt(w, "pcie_tx_bytes_per_s", g.pcie_tx_bytes_per_s, kWholeDecimals);
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
          .Double(p.cpu_pct, kCpuPctDecimals)
          .Key("cpu_time_ns")
          .Uint(p.cpu_time_ns)
          .Key("rss_bytes")
          .Uint(p.rss_bytes);
      Opt(w, "read_bytes", p.read_bytes);
      Opt(w, "gpu_bytes", p.gpu_bytes);  // only a process that holds a CUDA context
      // Only when some child ended: files of runs without short-lived processes stay as they were.
      if (p.reaped_cpu_pct > 0) w.Key("reaped_cpu_pct").Double(p.reaped_cpu_pct, kCpuPctDecimals);
      w.EndObject();
    }
    w.EndArray();
  }
  if (!s.core_busy_pct.empty()) {
    w.Key("cores_busy_pct").BeginArray();
    for (double c : s.core_busy_pct) w.Double(c, kCpuPctDecimals);
    w.EndArray();
  }
  w.EndObject();
  return w.str();
}

Result<std::unique_ptr<Recorder>> Recorder::Open(const std::string& path) {
  // O_CLOEXEC (OpenOutputFile's): not inherited by the command.
  GPUSCOPE_TRY(out, OpenOutputFile(path, "--record"));
  std::FILE* f = fdopen(out->fd, "wb");
  if (!f) {
    close(out->fd);
    return Status::Error(StatusCode::kIoError, "cannot write --record file " + SanitizeText(path) +
                                                   ": " + std::strerror(errno));
  }
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
    case RecordFormat::kJsonl:
      Put(HeaderJson(meta) + "\n");
      break;
    case RecordFormat::kCsv: {
      // "run" rows: the header, for reading back (text in `id`, `value` numbers it).
      const std::string prefix = "0.000," + std::to_string(meta.start_ns) + ",run,";
      std::string out = "time_s,unix_ns,source,id,metric,value\n";
      out += prefix + ",start_ns," + std::to_string(meta.start_ns) + "\n";
      out += prefix + ",interval_ns," + std::to_string(meta.interval_ns) + "\n";
      out += prefix + ",root_pid," + std::to_string(meta.root_pid) + "\n";
      for (size_t i = 0; i < meta.command.size(); ++i)
        out += prefix + CsvQuote(meta.command[i]) + ",command_arg," + std::to_string(i) + "\n";
      for (const GpuInfo& g : meta.gpus) {
        const std::string index = std::to_string(g.index);
        out += prefix + CsvQuote(g.name) + ",gpu_name," + index + "\n";
        if (g.mem_total_bytes)
          out += prefix + index + ",gpu_mem_total_bytes," + Number(*g.mem_total_bytes) + "\n";
        if (g.power_limit_w)
          out += prefix + index + ",gpu_power_limit_w," + Number(*g.power_limit_w) + "\n";
      }
      if (!meta.gpu_unavailable.empty())
        out += prefix + CsvQuote(meta.gpu_unavailable) + ",gpu_unavailable,0\n";
      Put(out);
      break;
    }
    case RecordFormat::kChromeTrace: {
      // Process names label the tracks in Perfetto / chrome://tracing.
      Put("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
          "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":\"gpuscope monitor\",\"args\":{\"name\":"
          "\"gpuscope monitor\"}}");
      Put(MetadataEvent("gpuscope_header", HeaderJson(meta)));
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
      const std::string prefix =
          fmt::format("{:.3f},{},", (s.time_ns - start_ns_) / 1e9, s.time_ns);
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
        row("proc", id, "cpu_time_ns", Number(p.cpu_time_ns));
        if (p.read_bytes) row("proc", id, "read_bytes", Number(*p.read_bytes));
        if (p.gpu_bytes) row("proc", id, "gpu_bytes", Number(*p.gpu_bytes));
      }
      for (size_t c = 0; c < s.core_busy_pct.size(); ++c)
        row("core", std::to_string(c), "busy_pct", Number(s.core_busy_pct[c]));
      Put(out);
      break;
    }
    case RecordFormat::kChromeTrace: {
      // Counter events at absolute unix µs: Kineto traces also use unix-based µs (or give
      // baseTimeNanoseconds), so both line up when opened together.
      const std::string ts = fmt::format("{}.{:03}", s.time_ns / 1000, s.time_ns % 1000);
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
          counter(gpu + "PCIe MB/s",
                  "\"rx\":" + Number(g.pcie_rx_bytes_per_s.value_or(0) / 1e6) +
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
      out += MetadataEvent("gpuscope_sample", SampleToJsonLine(s));
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
    case RecordFormat::kJsonl:
      Put(EndJson(meta) + "\n");
      break;
    case RecordFormat::kCsv: {
      const std::string prefix =
          fmt::format("{:.3f},{},run,", (meta.end_ns - start_ns_) / 1e9, meta.end_ns);
      std::string out = prefix + ",end_ns," + std::to_string(meta.end_ns) + "\n";
      if (meta.exit_code) out += prefix + ",exit_code," + std::to_string(*meta.exit_code) + "\n";
      for (size_t i = 0; i < meta.notes.size(); ++i)
        out += prefix + CsvQuote(meta.notes[i]) + ",note," + std::to_string(i) + "\n";
      Put(out);
      break;
    }
    case RecordFormat::kChromeTrace:
      Put(MetadataEvent("gpuscope_end", EndJson(meta)) + "\n]}\n");
      break;
  }
  Flush();
  errno = 0;
  if (std::fclose(file_) != 0) Fail(errno);
  file_ = nullptr;
  if (failed_) return Status::Error(StatusCode::kIoError, error_ + " (the record is incomplete)");
  return Status::Ok();
}

}  // namespace gpuscope::monitor
