#include "tune/results.h"

#include <fcntl.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/output_file.h"
#include "base/sanitize.h"
#include "render/json_writer.h"

namespace gpuscope::tune {

namespace {

constexpr std::string_view kRecordType = "gpuscope.tune.trial";
// Values a record may hold; beyond them a line is refused rather than trusted (a damaged file).
constexpr size_t kMaxSamples = 1'000'000;
constexpr int kMaxRepeat = 1'000'000;

Status Bad(std::string why) { return Status::Error(StatusCode::kInvalidInput, std::move(why)); }

// "\"KEY\" WHAT", appended piece by piece (GCC 12 warns falsely on a chain of + here).
Status BadKey(std::string_view key, std::string_view what) {
  std::string m = "\"";
  m += key;
  m += "\" ";
  m += what;
  return Bad(std::move(m));
}

// The string of `key` (sanitised: the file is input), or an error.
Status GetString(simdjson::dom::object o, std::string_view key, std::string* out, bool required) {
  std::string_view v;
  const auto err = o[key].get_string().get(v);
  if (err == simdjson::NO_SUCH_FIELD && !required) return Status::Ok();
  if (err) return BadKey(key, "is not a string");
  *out = SanitizeText(v);
  return Status::Ok();
}

Status GetNumber(simdjson::dom::object o, std::string_view key, double* out, bool required) {
  simdjson::dom::element e;
  const auto err = o[key].get(e);
  if (err == simdjson::NO_SUCH_FIELD && !required) return Status::Ok();
  if (err || !(e.is_double() || e.is_int64() || e.is_uint64()))
    return BadKey(key, "is not a number");
  *out = e.is_double()  ? e.get_double().value()
         : e.is_int64() ? static_cast<double>(e.get_int64().value())
                        : static_cast<double>(e.get_uint64().value());
  if (!std::isfinite(*out)) return BadKey(key, "is not finite");
  return Status::Ok();
}

// An integer field within [lo, hi].
Status GetInt(simdjson::dom::object o, std::string_view key, int64_t lo, int64_t hi, int64_t* out,
              bool required) {
  simdjson::dom::element e;
  const auto err = o[key].get(e);
  if (err == simdjson::NO_SUCH_FIELD && !required) return Status::Ok();
  int64_t v = 0;
  if (err || e.get_int64().get(v) || v < lo || v > hi)
    return BadKey(key,
                  "is not a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  *out = v;
  return Status::Ok();
}

// Optional number that may be null.
Status GetOptional(simdjson::dom::object o, std::string_view key, std::optional<double>* out) {
  simdjson::dom::element e;
  if (o[key].get(e) || e.is_null()) return Status::Ok();
  double v = 0;
  GPUSCOPE_RETURN_IF_ERROR(GetNumber(o, key, &v, true));
  *out = v;
  return Status::Ok();
}

Status GetOptionalBytes(simdjson::dom::object o, std::string_view key,
                        std::optional<uint64_t>* out) {
  simdjson::dom::element e;
  if (o[key].get(e) || e.is_null()) return Status::Ok();
  uint64_t v = 0;
  // Up to 2^53 (9 PB): written as an integer literal, so a record reads back as written.
  if (e.get_uint64().get(v) || v > render::JsonWriter::kMaxExactInteger)
    return BadKey(key, "is not a byte count");
  *out = v;
  return Status::Ok();
}

}  // namespace

bool HasThroughput(std::string_view outcome) {
  return outcome == kOutcomeOk || outcome == kOutcomeTimeout;
}

// Counts and times are written with ExactInt: this file is read back by gpuscope's own int64
// parser, which an exponent form (JsonWriter::Int beyond 2^53) would not pass.
std::string TrialRecordJson(const TrialRecord& r) {
  render::JsonWriter w(0);  // one line
  w.BeginObject();
  w.Key("type").String(kRecordType);
  w.Key("command").BeginArray();
  for (const std::string& a : r.command) w.String(a);
  w.EndArray();
  w.Key("metric").String(r.metric);
  w.Key("params").BeginObject();
  for (const auto& [k, v] : r.params) w.Key(k).String(v);
  w.EndObject();
  w.Key("repeat").Int(r.repeat);
  w.Key("outcome").String(r.outcome);
  w.Key("exit_code").Int(r.exit_code);
  if (HasThroughput(r.outcome))
    w.Key("throughput").ShortestDouble(r.throughput);
  else
    w.Key("throughput").Null();
  w.Key("unit").String(r.unit);
  w.Key("samples").BeginArray();
  for (double s : r.samples) w.ShortestDouble(s);
  w.EndArray();
  w.Key("values").ExactInt(r.values);
  w.Key("warmup").ExactInt(r.warmup);
  w.Key("duration_s").Double(r.duration_s, 3);
  w.Key("gpu_util_mean_pct");
  r.gpu_util_mean_pct ? w.Double(*r.gpu_util_mean_pct, 1) : w.Null();
  w.Key("gpu_mem_peak_bytes");
  r.gpu_mem_peak_bytes ? w.Uint(*r.gpu_mem_peak_bytes) : w.Null();
  w.Key("gpu_mem_total_bytes");
  r.gpu_mem_total_bytes ? w.Uint(*r.gpu_mem_total_bytes) : w.Null();
  w.Key("tree_cpu_mean_pct");
  r.tree_cpu_mean_pct ? w.Double(*r.tree_cpu_mean_pct, 1) : w.Null();
  w.Key("oom_framework").String(r.oom_framework);
  w.Key("note").String(r.note);
  w.Key("started_unix_ms").ExactInt(r.started_unix_ms);
  w.EndObject();
  return w.str();
}

Result<TrialRecord> ParseTrialRecord(std::string_view line) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(simdjson::padded_string(line)).get(root); err)
    return Bad(std::string("not JSON (") + simdjson::error_message(err) + ")");
  simdjson::dom::object o;
  if (root.get_object().get(o)) return Bad("not a JSON object");
  std::string_view type;
  if (o["type"].get_string().get(type) || type != kRecordType)
    return Bad("not a trial record (\"type\" is not \"" + std::string(kRecordType) + "\")");
  TrialRecord r;
  simdjson::dom::array command;
  if (o["command"].get_array().get(command)) return Bad("\"command\" is not an array");
  for (simdjson::dom::element a : command) {
    std::string_view s;
    if (a.get_string().get(s)) return Bad("\"command\" holds a value that is not a string");
    r.command.push_back(SanitizeText(s));
  }
  if (r.command.empty()) return Bad("\"command\" is empty");
  simdjson::dom::object params;
  if (o["params"].get_object().get(params)) return Bad("\"params\" is not an object");
  for (auto [key, value] : params) {
    std::string_view v;
    if (value.get_string().get(v))
      return Bad("param \"" + SanitizeText(key) + "\" is not a string");
    r.params[SanitizeText(key)] = SanitizeText(v);
  }
  Status s;
  int64_t n = 0;
  auto check = [&](Status st) {
    if (s.ok() && !st.ok()) s = st;
  };
  check(GetString(o, "metric", &r.metric, true));
  check(GetInt(o, "repeat", 0, kMaxRepeat, &n, true));
  r.repeat = static_cast<int>(n);
  check(GetString(o, "outcome", &r.outcome, true));
  if (s.ok() &&
      !(HasThroughput(r.outcome) || r.outcome == kOutcomeOom || r.outcome == kOutcomeFailed ||
        r.outcome == kOutcomeNoMetric || r.outcome == kOutcomeInterrupted))
    return Bad("unknown outcome \"" + r.outcome + "\"");
  n = 0;
  check(GetInt(o, "exit_code", -1, 255 + 128, &n, false));
  r.exit_code = static_cast<int>(n);
  if (s.ok() && HasThroughput(r.outcome)) {
    check(GetNumber(o, "throughput", &r.throughput, true));
    if (s.ok() && r.throughput < 0) s = Bad("\"throughput\" is negative: not a throughput");
  }
  check(GetString(o, "unit", &r.unit, false));
  simdjson::dom::array samples;
  if (o["samples"].get_array().get(samples) == simdjson::SUCCESS) {
    for (simdjson::dom::element e : samples) {
      double v = 0;
      if (e.get_double().get(v)) {
        int64_t i = 0;
        if (e.get_int64().get(i)) return Bad("\"samples\" holds a value that is not a number");
        v = static_cast<double>(i);
      }
      if (!std::isfinite(v)) return Bad("\"samples\" holds a value that is not finite");
      if (v < 0) return Bad("\"samples\" holds a negative value: not a throughput");
      if (r.samples.size() >= kMaxSamples) return Bad("\"samples\" holds too many values");
      r.samples.push_back(v);
    }
  }
  check(GetInt(o, "values", 0, INT64_MAX, &r.values, false));
  check(GetInt(o, "warmup", 0, INT64_MAX, &r.warmup, false));
  check(GetNumber(o, "duration_s", &r.duration_s, false));
  check(GetOptional(o, "gpu_util_mean_pct", &r.gpu_util_mean_pct));
  check(GetOptionalBytes(o, "gpu_mem_peak_bytes", &r.gpu_mem_peak_bytes));
  check(GetOptionalBytes(o, "gpu_mem_total_bytes", &r.gpu_mem_total_bytes));
  check(GetOptional(o, "tree_cpu_mean_pct", &r.tree_cpu_mean_pct));
  check(GetString(o, "oom_framework", &r.oom_framework, false));
  check(GetString(o, "note", &r.note, false));
  check(GetInt(o, "started_unix_ms", INT64_MIN, INT64_MAX, &r.started_unix_ms, false));
  if (!s.ok()) return s;
  return r;
}

bool SameTrial(const TrialRecord& a, const TrialRecord& b) {
  return a.command == b.command && a.metric == b.metric && a.params == b.params &&
         a.repeat == b.repeat;
}

ResultsFile ReadResults(std::string_view text, const std::string& path) {
  ResultsFile f;
  f.ends_mid_line = !text.empty() && text.back() != '\n';
  size_t start = 0;
  int line_no = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++line_no;
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    auto r = ParseTrialRecord(line);
    if (r.ok()) {
      f.records.push_back(std::move(*r));
    } else {
      const bool last_cut = f.ends_mid_line && end == text.size();
      f.skipped.push_back(
          SanitizeText(path) + ":" + std::to_string(line_no) + ": " + r.status().message() +
          (last_cut ? " (the last line, cut short: a write that was interrupted)" : "") +
          "; skipped");
    }
  }
  return f;
}

namespace {

// The first bytes of every line TrialRecordJson writes: a line that begins so (or is cut within
// them) is one of ours, damaged or from another version — skipped, and the file appended to.
constexpr std::string_view kRecordStart = "{\"type\":\"gpuscope.tune.trial\"";

bool StartsLikeARecord(std::string_view line) {
  return line.substr(0, kRecordStart.size()) == kRecordStart.substr(0, line.size());
}

Status NotOurs(const std::string& path, const std::string& what) {
  return Status::Error(
      StatusCode::kInvalidInput,
      "--results " + SanitizeText(path) + ": not a gpuscope tune results file: " + what +
          "; expected an empty file or JSON lines each with \"type\": \"" +
          std::string(kRecordType) +
          "\" (docs/tune.md) (hint: choose another --results path; tune appends a line per trial "
          "and would damage this file)");
}

}  // namespace

Status CheckResultsFileIsOurs(std::string_view text, const ResultsFile& parsed,
                              const std::string& path) {
  // Binary at the start (a trace.json.gz, a checkpoint): never a file tune wrote, whatever
  // follows. 64 bytes is enough to tell, and a record's first line holds no control byte.
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f &&
      static_cast<unsigned char>(text[1]) == 0x8b)
    return NotOurs(path, "it starts with gzip bytes (1f 8b at byte 0)");
  for (size_t i = 0; i < std::min<size_t>(text.size(), 64); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "%02x", c);
      return NotOurs(path, "it starts with binary bytes (" + std::string(hex) + " at byte " +
                               std::to_string(i) + ")");
    }
  }
  // One record read makes the file ours: its bad lines are then edits or cut writes, skipped.
  if (!parsed.records.empty()) return Status::Ok();
  // No record: every line must at least begin like one (a write cut by a kill before the first
  // record was whole); the first line that does not tells what the file is.
  size_t start = 0;
  for (int line_no = 1; start < text.size(); ++line_no) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && !StartsLikeARecord(line.substr(first))) {
      auto why = ParseTrialRecord(line);
      return NotOurs(path, "line " + std::to_string(line_no) + " (byte " +
                               std::to_string(start + first) + ") is " +
                               (why.ok() ? std::string("a record") : why.status().message()) +
                               ", and no line is a trial record");
    }
    start = end + 1;
  }
  return Status::Ok();
}

Result<ResultsFile> LoadResults(const std::string& path) {
  // A folder: nothing to read; opening it for appending refuses it with the output paths' words.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return ResultsFile{};
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return ResultsFile{};
    return Status::Error(StatusCode::kIoError, "cannot read " + path + ": " + std::strerror(errno));
  }
  // The head first: a file tune did not write (a multi-GB trace) is refused from its first
  // 64 KiB, not read whole. A results file has a record there; 64 KiB of other lines before the
  // first record is not an edit but another file.
  constexpr size_t kHeadBytes = 64 * 1024;
  std::string bytes(kHeadBytes, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(kHeadBytes));
  bytes.resize(static_cast<size_t>(in.gcount()));
  if (in.bad())
    return Status::Error(StatusCode::kIoError, "cannot read " + path + ": " + std::strerror(errno));
  ResultsFile head = ReadResults(bytes, path);
  GPUSCOPE_RETURN_IF_ERROR(CheckResultsFileIsOurs(bytes, head, path));
  if (bytes.size() < kHeadBytes) return head;  // the head is the whole file, read once
  std::ostringstream rest;
  rest << in.rdbuf();
  if (in.bad())
    return Status::Error(StatusCode::kIoError, "cannot read " + path + ": " + std::strerror(errno));
  bytes += rest.str();
  ResultsFile file = ReadResults(bytes, path);
  GPUSCOPE_RETURN_IF_ERROR(CheckResultsFileIsOurs(bytes, file, path));
  return file;
}

ResultsWriter::~ResultsWriter() {
  if (fd_ >= 0) close(fd_);
}

Result<std::unique_ptr<ResultsWriter>> ResultsWriter::Open(const std::string& path,
                                                           bool starts_mid_line) {
  auto w = std::make_unique<ResultsWriter>();
  w->path_ = path;
  GPUSCOPE_TRY(out, OpenOutputFile(path, "--results", OutputOpen::kAppend));
  w->fd_ = out->fd;
  if (starts_mid_line && write(w->fd_, "\n", 1) != 1)
    return Status::Error(StatusCode::kIoError,
                         "cannot write the results file " + path + ": " + std::strerror(errno));
  return w;
}

Status ResultsWriter::Append(const TrialRecord& record) {
  const std::string line = TrialRecordJson(record) + "\n";
  // One write(): with O_APPEND the line lands whole at the end (a partial write can only be a
  // full disk or a kill mid-call; the reader skips what it left).
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Status::Error(StatusCode::kIoError,
                           "cannot write the results file " + path_ + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (fdatasync(fd_) != 0 && errno != EINVAL)  // EINVAL: a pipe or special file
    return Status::Error(StatusCode::kIoError,
                         "cannot flush the results file " + path_ + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace gpuscope::tune
