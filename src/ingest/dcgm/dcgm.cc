#include "ingest/dcgm/dcgm.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "base/sanitize.h"
#include "ingest/common/line_reader.h"
#include "ingest/common/malformed.h"
#include "ingest/common/sample_checks.h"

namespace gpuscope::ingest {

namespace {

constexpr int64_t kDefaultTickNs = 1'000'000'000;  // dcgmi dmon -d 1000; one scrape a second
constexpr double kMiB = 1024.0 * 1024.0;
// Prometheus timestamps and `# timestamp` values above this are unix ms, below unix seconds.
constexpr double kMsThreshold = 1e11;
// Times beyond year 2200 (int64 ns reach 2262) are malformed.
constexpr double kMaxUnixS = 7'258'118'400;

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> SplitSpace(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

// A whole cell as a finite number.
std::optional<double> Number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool IsMissing(const std::string& v) {
  const std::string u = Upper(v);
  return v.empty() || v == "-" || u == "N/A" || u == "NAN";
}

// A metric, whatever its source: what it is and how to scale it into the sample model.
enum class Metric {
  kIgnored,
  kGpuUtil,      // % → sm_util_pct
  kGrActive,     // ratio → sm_util_pct when no kGpuUtil
  kSmActive,     // ratio → %
  kSmOccupancy,  // ratio → %
  kTensor,       // ratio → %
  kDram,         // ratio → %
  kMemCopyUtil,  // % → mem_util_pct
  kFbUsed,       // MiB
  kFbFree,       // MiB
  kFbTotal,      // MiB
  kPower,        // W
  kPowerLimit,   // W
  kEnergy,       // mJ
  kTemperature,  // °C
  kSmClock,      // MHz
};

Metric DmonTag(const std::string& tag) {
  static const std::map<std::string, Metric> kTags = {
      {"GPUTL", Metric::kGpuUtil},     {"GRACT", Metric::kGrActive},
      {"SMACT", Metric::kSmActive},    {"SMOCC", Metric::kSmOccupancy},
      {"TENSO", Metric::kTensor},      {"DRAMA", Metric::kDram},
      {"MCUTL", Metric::kMemCopyUtil}, {"FBUSD", Metric::kFbUsed},
      {"FBFRE", Metric::kFbFree},      {"FBTTL", Metric::kFbTotal},
      {"POWER", Metric::kPower},       {"PMLMT", Metric::kPowerLimit},
      {"TOTEC", Metric::kEnergy},      {"GTEMP", Metric::kTemperature},
      {"SMCLK", Metric::kSmClock},
  };
  auto it = kTags.find(Upper(tag));
  return it == kTags.end() ? Metric::kIgnored : it->second;
}

Metric ExporterName(const std::string& name) {
  static const std::map<std::string, Metric> kNames = {
      {"DCGM_FI_DEV_GPU_UTIL", Metric::kGpuUtil},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", Metric::kGrActive},
      {"DCGM_FI_PROF_SM_ACTIVE", Metric::kSmActive},
      {"DCGM_FI_PROF_SM_OCCUPANCY", Metric::kSmOccupancy},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", Metric::kTensor},
      {"DCGM_FI_PROF_DRAM_ACTIVE", Metric::kDram},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", Metric::kMemCopyUtil},
      {"DCGM_FI_DEV_FB_USED", Metric::kFbUsed},
      {"DCGM_FI_DEV_FB_FREE", Metric::kFbFree},
      {"DCGM_FI_DEV_FB_TOTAL", Metric::kFbTotal},
      {"DCGM_FI_DEV_POWER_USAGE", Metric::kPower},
      {"DCGM_FI_DEV_POWER_MGMT_LIMIT", Metric::kPowerLimit},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Metric::kEnergy},
      {"DCGM_FI_DEV_GPU_TEMP", Metric::kTemperature},
      {"DCGM_FI_DEV_SM_CLOCK", Metric::kSmClock},
  };
  auto it = kNames.find(name);
  return it == kNames.end() ? Metric::kIgnored : it->second;
}

// One GPU at one tick while it is assembled: the sample, and the free memory (for the total).
struct Pending {
  GpuSample gpu;
  std::optional<double> fb_free_mib;
  bool has_gpu_util = false;  // GPUTL / DCGM_FI_DEV_GPU_UTIL seen: GRACT does not override it
};

// Stores `v` of `metric` into `p`; returns why it is out of range, or "".
std::string Store(Metric metric, double v, Pending* p) {
  GpuSample t;  // the one value alone, to check its range
  auto pct = [](double ratio) { return ratio * 100; };
  // Ratios are checked as the ratio DCGM printed, so the message speaks of what is in the file.
  if (metric == Metric::kGrActive || metric == Metric::kSmActive ||
      metric == Metric::kSmOccupancy || metric == Metric::kTensor || metric == Metric::kDram)
    if (std::string why = CheckRange(v, 0, 1, ""); !why.empty()) return why;
  switch (metric) {
    case Metric::kIgnored:
      return "";
    case Metric::kGpuUtil:
      t.sm_util_pct = v;
      break;
    case Metric::kGrActive:
      t.sm_util_pct = pct(v);
      break;
    case Metric::kSmActive:
      t.sm_active_pct = pct(v);
      break;
    case Metric::kSmOccupancy:
      t.sm_occupancy_pct = pct(v);
      break;
    case Metric::kTensor:
      t.tensor_active_pct = pct(v);
      break;
    case Metric::kDram:
      t.dram_active_pct = pct(v);
      break;
    case Metric::kMemCopyUtil:
      t.mem_util_pct = v;
      break;
    case Metric::kFbUsed:
    case Metric::kFbFree:
    case Metric::kFbTotal: {
      const double bytes = v * kMiB;
      if (!(bytes >= 0 && bytes < kMaxBytes)) return "is not a memory size (0 to 8 EiB)";
      if (metric == Metric::kFbUsed) p->gpu.mem_used_bytes = static_cast<uint64_t>(bytes);
      if (metric == Metric::kFbTotal) p->gpu.mem_total_bytes = static_cast<uint64_t>(bytes);
      if (metric == Metric::kFbFree) p->fb_free_mib = v;
      return "";
    }
    case Metric::kPower:
      t.power_w = v;
      break;
    case Metric::kPowerLimit:
      t.power_limit_w = v;
      break;
    case Metric::kEnergy:
      t.energy_j = v / 1000;
      break;
    case Metric::kTemperature:
      t.temperature_c = v;
      break;
    case Metric::kSmClock:
      t.sm_clock_mhz = v;
      break;
  }
  if (std::string why = CheckGpuSample(t); !why.empty())  // "field value is out of range (…)"
    return why.substr(std::min(why.size(), why.find("is out of range")));
  GpuSample& g = p->gpu;
  if (metric == Metric::kGpuUtil) {
    g.sm_util_pct = t.sm_util_pct;
    p->has_gpu_util = true;
  } else if (metric == Metric::kGrActive) {
    if (!p->has_gpu_util) g.sm_util_pct = t.sm_util_pct;
  }
  for (auto [dst, src] :
       {std::pair{&g.sm_active_pct, &t.sm_active_pct},
        std::pair{&g.sm_occupancy_pct, &t.sm_occupancy_pct},
        std::pair{&g.tensor_active_pct, &t.tensor_active_pct},
        std::pair{&g.dram_active_pct, &t.dram_active_pct},
        std::pair{&g.mem_util_pct, &t.mem_util_pct}, std::pair{&g.power_w, &t.power_w},
        std::pair{&g.power_limit_w, &t.power_limit_w}, std::pair{&g.energy_j, &t.energy_j},
        std::pair{&g.temperature_c, &t.temperature_c}, std::pair{&g.sm_clock_mhz, &t.sm_clock_mhz}})
    if (*src) *dst = *src;
  return "";
}

// Ticks of GPU samples, assembled in any order and turned into the Recording at the end.
class Assembler {
 public:
  Assembler(Recording* rec, std::string path) : rec_(rec), malformed_(rec, std::move(path)) {}

  Pending& At(int64_t time_ns, int32_t gpu) {
    Pending& p = ticks_[time_ns][gpu];
    p.gpu.index = gpu;
    return p;
  }

  void Name(int32_t gpu, const std::string& name) {
    if (!name.empty() && !names_.count(gpu)) names_[gpu] = SanitizeText(name);
  }

  void Malformed(uint64_t line, const std::string& why) { malformed_.Count(line, why); }

  void Finish() {
    std::map<int32_t, GpuInfo> infos;
    for (auto& [time_ns, gpus] : ticks_) {
      Sample s;
      s.time_ns = time_ns;
      for (auto& [index, p] : gpus) {
        GpuSample& g = p.gpu;
        if (!g.mem_total_bytes && g.mem_used_bytes && p.fb_free_mib)
          g.mem_total_bytes = *g.mem_used_bytes + static_cast<uint64_t>(*p.fb_free_mib * kMiB);
        if (!CheckGpuSample(g).empty()) {  // memory used above the total, of one tick
          ++rec_->malformed_lines;
          g.mem_used_bytes.reset();
        }
        GpuInfo& info = infos[index];
        info.index = index;
        if (auto it = names_.find(index); it != names_.end()) info.name = it->second;
        if (g.mem_total_bytes) info.mem_total_bytes = g.mem_total_bytes;
        if (g.power_limit_w) info.power_limit_w = g.power_limit_w;
        s.gpus.push_back(g);
      }
      rec_->samples.push_back(std::move(s));
    }
    for (auto& [index, info] : infos) rec_->gpus.push_back(info);
    if (!rec_->samples.empty()) {
      rec_->start_ns = rec_->samples.front().time_ns;
      rec_->end_ns = rec_->samples.back().time_ns;
    }
  }

 private:
  Recording* rec_;
  MalformedLines malformed_;
  std::map<int64_t, std::map<int32_t, Pending>> ticks_;
  std::map<int32_t, std::string> names_;
};

// ---- dcgmi dmon ----

class DmonParser {
 public:
  DmonParser(Recording* rec, const std::string& path) : asm_(rec, path), rec_(rec) {}

  void Line(std::string_view raw, uint64_t line_number) {
    std::string line = Trim(raw);
    if (line.empty()) return;
    if (line[0] == '#') {
      std::vector<std::string> words = SplitSpace(line.substr(1));
      if (words.empty() || Upper(words[0]) != "ENTITY") return;
      tags_.clear();
      for (size_t i = 1; i < words.size(); ++i) tags_.push_back(words[i]);
      return;
    }
    std::vector<std::string> words = SplitSpace(line);
    if (words.size() == 1 && Upper(words[0]) == "ID") return;  // the units line
    if (tags_.empty()) return asm_.Malformed(line_number, "data before the \"#Entity …\" header");
    if (words.size() != tags_.size() + 2)
      return asm_.Malformed(line_number, "expected " + std::to_string(tags_.size() + 2) +
                                             " columns (entity, id, " +
                                             std::to_string(tags_.size()) + " fields), found " +
                                             std::to_string(words.size()));
    if (Upper(words[0]) != "GPU") {
      ++other_entities_;
      return;
    }
    const std::optional<double> id = Number(words[1]);
    if (!id || *id < 0 || *id > 1e6 || *id != std::floor(*id))
      return asm_.Malformed(line_number,
                            "GPU id \"" + SanitizeText(words[1]) + "\" is not 0 to 1000000");
    const int32_t gpu = static_cast<int32_t>(*id);
    if (seen_.count(gpu)) ++tick_, seen_.clear();
    Pending p;
    p.gpu.index = gpu;
    for (size_t i = 0; i < tags_.size(); ++i) {
      const std::string& v = words[i + 2];
      if (IsMissing(v)) continue;
      const std::optional<double> x = Number(v);
      const std::string why = x ? Store(DmonTag(tags_[i]), *x, &p) : "is not a number";
      if (!why.empty())
        return asm_.Malformed(line_number,
                              SanitizeText(tags_[i]) + ": \"" + SanitizeText(v) + "\" " + why);
    }
    seen_.insert(gpu);
    asm_.At(tick_ * kDefaultTickNs, gpu) = p;
    any_ = true;
  }

  void Finish() {
    asm_.Finish();
    if (any_)
      rec_->notes.push_back(
          "dcgmi dmon prints no time: rows assumed 1 s apart (its default -d 1000)");
    if (other_entities_ > 0)
      rec_->notes.push_back(std::to_string(other_entities_) +
                            " rows of other entities than whole GPUs (GPU-I, GPU-CI, …) left out");
  }

 private:
  Assembler asm_;
  Recording* rec_;
  std::vector<std::string> tags_;
  std::set<int32_t> seen_;
  int64_t tick_ = 0;
  uint64_t other_entities_ = 0;
  bool any_ = false;
};

// ---- dcgm-exporter (Prometheus text) ----

// `name{k="v",…} value [timestamp]` → its parts; false when the line is not of that shape.
struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
  std::string timestamp;
};

bool ParsePromLine(const std::string& line, PromSample* out, std::string* why) {
  size_t i = 0;
  while (i < line.size() &&
         (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == ':'))
    ++i;
  out->name = line.substr(0, i);
  if (out->name.empty()) return *why = "no metric name", false;
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const size_t k = i;
      while (i < line.size() && line[i] != '=' && line[i] != '}') ++i;
      if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
        return *why = "a label is not key=\"value\"", false;
      const std::string key = Trim(std::string_view(line).substr(k, i - k));
      i += 2;
      std::string value;
      bool closed = false;
      for (; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) {
          const char e = line[++i];
          value += e == 'n' ? '\n' : e;
        } else if (line[i] == '"') {
          closed = true;
          ++i;
          break;
        } else {
          value += line[i];
        }
      }
      if (!closed) return *why = "a label value does not end", false;
      out->labels[key] = value;
    }
  }
  const std::vector<std::string> rest = SplitSpace(std::string_view(line).substr(i));
  if (rest.empty() || rest.size() > 2)
    return *why = "expected a value and an optional timestamp", false;
  out->value = rest[0];
  out->timestamp = rest.size() == 2 ? rest[1] : "";
  return true;
}

// Unix seconds or ms (see kMsThreshold) → ns; nullopt outside 1970–2200.
std::optional<int64_t> UnixTime(const std::string& text) {
  std::optional<double> v = Number(text);
  if (!v) return std::nullopt;
  double s = *v > kMsThreshold ? *v / 1000 : *v;
  if (!(s >= 0 && s <= kMaxUnixS)) return std::nullopt;
  return static_cast<int64_t>(std::llround(s * 1e9));
}

class ExporterParser {
 public:
  ExporterParser(Recording* rec, const std::string& path) : asm_(rec, path), rec_(rec) {}

  void Line(std::string_view raw, uint64_t line_number) {
    const std::string line = Trim(raw);
    if (line.empty()) return;
    if (line[0] == '#') {
      const std::vector<std::string> words = SplitSpace(line.substr(1));
      if (words.size() == 2 && words[0] == "timestamp") {
        const std::optional<int64_t> t = UnixTime(words[1]);
        if (!t)
          return asm_.Malformed(line_number, "# timestamp \"" + SanitizeText(words[1]) +
                                                 "\" is not unix seconds or ms (1970–2200)");
        comment_time_ = t;
        seen_.clear();
      }
      return;  // # HELP, # TYPE
    }
    PromSample p;
    std::string why;
    if (!ParsePromLine(line, &p, &why)) return asm_.Malformed(line_number, why);
    const Metric metric = ExporterName(p.name);
    if (metric == Metric::kIgnored) return;
    auto gpu_label = p.labels.find("gpu");
    const std::optional<double> id =
        gpu_label == p.labels.end() ? std::nullopt : Number(gpu_label->second);
    if (!id || *id < 0 || *id > 1e6 || *id != std::floor(*id))
      return asm_.Malformed(line_number, SanitizeText(p.name) + ": no gpu=\"N\" label");
    const int32_t gpu = static_cast<int32_t>(*id);
    int64_t time_ns = 0;
    if (!p.timestamp.empty()) {
      const std::optional<int64_t> t = UnixTime(p.timestamp);
      if (!t)
        return asm_.Malformed(line_number, "timestamp \"" + SanitizeText(p.timestamp) +
                                               "\" is not unix ms (1970–2200)");
      time_ns = *t;
      timed_ = true;
    } else if (comment_time_) {
      time_ns = *comment_time_;
      timed_ = true;
    } else {
      // No time: a metric of a GPU seen again starts the next scrape.
      if (!seen_.insert({p.name, gpu}).second) {
        ++tick_;
        seen_.clear();
        seen_.insert({p.name, gpu});
      }
      time_ns = tick_ * kDefaultTickNs;
      untimed_ = true;
    }
    if (IsMissing(p.value)) return;
    const std::optional<double> v = Number(p.value);
    if (!v)
      return asm_.Malformed(line_number, SanitizeText(p.name) + ": \"" + SanitizeText(p.value) +
                                             "\" is not a number");
    Pending& slot = asm_.At(time_ns, gpu);
    if (std::string bad = Store(metric, *v, &slot); !bad.empty())
      return asm_.Malformed(line_number,
                            SanitizeText(p.name) + ": \"" + SanitizeText(p.value) + "\" " + bad);
    if (auto model = p.labels.find("modelName"); model != p.labels.end())
      asm_.Name(gpu, model->second);
    if (auto host = p.labels.find("Hostname"); host != p.labels.end()) hosts_.insert(host->second);
  }

  void Finish() {
    asm_.Finish();
    if (untimed_)
      rec_->notes.push_back(
          std::string(timed_ ? "some scrapes" : "scrapes") +
          " without a timestamp: assumed 1 s apart (add a `# timestamp $(date +%s.%N)` line "
          "before each scrape, or Prometheus sample timestamps)");
    if (hosts_.size() > 1)
      rec_->notes.push_back(std::to_string(hosts_.size()) +
                            " hosts (Hostname labels) in one file: their GPUs with the same "
                            "index were read as one GPU");
  }

 private:
  Assembler asm_;
  Recording* rec_;
  std::optional<int64_t> comment_time_;
  std::set<std::pair<std::string, int32_t>> seen_;
  std::set<std::string> hosts_;
  int64_t tick_ = 0;
  bool timed_ = false, untimed_ = false;
};

std::string FirstLine(std::string_view head, bool skip_comments) {
  std::istringstream in{std::string(head.substr(0, 4096))};
  std::string line;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty()) continue;
    if (skip_comments && line[0] == '#') continue;
    return line;
  }
  return "";
}

template <typename Parser>
Result<Recording> Read(io::ByteSource& source, const std::string& path, size_t max_line_bytes,
                       SourceKind kind, const char* what) {
  Recording rec;
  rec.source = kind;
  rec.source_path = path;
  Parser parser(&rec, path);
  LineReader lines(source, path, max_line_bytes);
  MalformedLines malformed(&rec, path);
  std::string_view line;
  uint64_t cut_line = 0;
  while (true) {
    GPUSCOPE_TRY(more, lines.Next(&line));
    if (!*more) break;
    const MalformedLines::Mark mark = malformed.Checkpoint();
    parser.Line(line, lines.line_number());
    if (!lines.line_terminated() && malformed.TakeBackCut(mark)) cut_line = lines.line_number();
  }
  parser.Finish();
  if (cut_line > 0)
    rec.notes.push_back("the log was cut short: its last line (" + std::to_string(cut_line) +
                        ") is incomplete and was left out");
  if (rec.samples.empty())
    return Status::InputError(path, 0,
                              std::string("no GPU samples in the ") + what + " (" +
                                  std::to_string(rec.malformed_lines) + " malformed lines)",
                              rec.malformed_examples.empty() ? "" : rec.malformed_examples[0]);
  return rec;
}

}  // namespace

bool LooksLikeDcgmiDmon(std::string_view head) {
  const std::string line = FirstLine(head, false);
  if (line.empty() || line[0] != '#') return false;
  const std::vector<std::string> words = SplitSpace(std::string_view(line).substr(1));
  return !words.empty() && Upper(words[0]) == "ENTITY";
}

bool LooksLikeDcgmExporter(std::string_view head) {
  std::istringstream in{std::string(head.substr(0, 8192))};
  std::string line;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty()) continue;
    if (line.rfind("# HELP DCGM_", 0) == 0 || line.rfind("# TYPE DCGM_", 0) == 0 ||
        line.rfind("DCGM_", 0) == 0)
      return true;
    if (line[0] != '#') return false;  // a sample of another exporter first: not dcgm-exporter
  }
  return false;
}

Result<Recording> ReadDcgmiDmon(io::ByteSource& source, const std::string& name,
                                size_t max_line_bytes) {
  return Read<DmonParser>(source, name, max_line_bytes, SourceKind::kDcgmiDmon, "dcgmi dmon log");
}

Result<Recording> ReadDcgmExporter(io::ByteSource& source, const std::string& name,
                                   size_t max_line_bytes) {
  return Read<ExporterParser>(source, name, max_line_bytes, SourceKind::kDcgmExporter,
                              "dcgm-exporter text");
}

Result<Recording> ParseDcgmLog(std::string_view text, const std::string& name) {
  auto source = io::MemoryByteSource(text, name);
  if (LooksLikeDcgmiDmon(text)) return ReadDcgmiDmon(*source, name);
  return ReadDcgmExporter(*source, name);
}

}  // namespace gpuscope::ingest
