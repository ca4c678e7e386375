#include "ingest/registry.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "ingest/dcgm/dcgm.h"
#include "ingest/kineto_json/kineto_reader.h"
#include "ingest/nsys_sqlite/nsys_reader.h"
#include "ingest/nvidia_smi/nvidia_smi.h"
#include "ingest/recording/recording_reader.h"
#include "ingest/torch_snapshot/snapshot_reader.h"

namespace gpuscope::ingest {

namespace {

io::InflateBackend Backend(Inflater i) {
  switch (i) {
    case Inflater::kZlib:
      return io::InflateBackend::kZlib;
    case Inflater::kIsal:
      return io::InflateBackend::kIsal;
    case Inflater::kAuto:
      break;
  }
  return io::InflateBackend::kAuto;
}

// The head without a UTF-8 byte-order mark and leading whitespace.
std::string_view Content(std::string_view head) {
  if (head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);
  while (!head.empty() && (head[0] == ' ' || head[0] == '\n' || head[0] == '\r' || head[0] == '\t'))
    head.remove_prefix(1);
  return head;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

// ---- Sniffers of the formats read.

int SniffKineto(std::string_view head) {
  const std::string_view c = Content(head);
  if (c.empty() || (c[0] != '{' && c[0] != '[')) return 1;  // fallback: its error names the byte
  if (c[0] == '[') return 50;                               // legacy bare array of events
  return head.find("\"traceEvents\"") != std::string_view::npos ? 80 : 50;
}
int SniffJsonlRecording(std::string_view head) { return LooksLikeJsonlRecording(head) ? 100 : 0; }
int SniffCsvRecording(std::string_view head) { return LooksLikeCsvRecording(head) ? 100 : 0; }
int SniffChromeRecording(std::string_view head) {
  return LooksLikeChromeTraceRecording(head) ? 100 : 0;  // above the Kineto reader's 80
}
int SniffNsysSqlite(std::string_view head) { return LooksLikeSqlite(head) ? 100 : 0; }
int SniffNvidiaSmi(std::string_view head) {
  return DetectNvidiaSmiLog(head) != NvidiaSmiFormat::kNone ? 90 : 0;
}
int SniffDcgmiDmon(std::string_view head) { return LooksLikeDcgmiDmon(head) ? 95 : 0; }
int SniffDcgmExporter(std::string_view head) { return LooksLikeDcgmExporter(head) ? 95 : 0; }

int SniffTorchSnapshot(std::string_view head) { return LooksLikePickle(head) ? 100 : 0; }

// ---- Readers, adapted to one signature.

void ApplyRankFallback(Trace* trace) {
  if (trace->info.rank >= 0) return;
  const std::string file = std::filesystem::path(trace->info.path).filename().string();
  const int rank = RankFromFileName(file);
  if (rank >= 0) {
    trace->info.rank = rank;
    trace->info.rank_source = RankSource::kFileName;
  }
}

// A trace reader as an Input reader: the rank from the file name when the trace does not say it.
template <InputFormat kFormat,
          Result<Trace> (*kRead)(io::ByteSource&, const std::string&, uint64_t, const LoadOptions&)>
Result<Input> ReadTrace(io::ByteSource& source, const std::string& name, uint64_t file_bytes,
                        const LoadOptions& options) {
  GPUSCOPE_TRY(trace, kRead(source, name, file_bytes, options));
  ApplyRankFallback(&*trace);
  Input in;
  in.format = kFormat;
  in.kind = ModelKind::kTrace;
  in.trace = std::move(*trace);
  return in;
}

template <InputFormat kFormat,
          Result<monitor::Recording> (*kRead)(io::ByteSource&, const std::string&, size_t)>
Result<Input> ReadMonitor(io::ByteSource& source, const std::string& name, uint64_t,
                          const LoadOptions& options) {
  GPUSCOPE_TRY(rec, kRead(source, name, options.max_element_bytes));
  Input in;
  in.format = kFormat;
  in.kind = ModelKind::kMonitor;
  in.recording = std::move(*rec);
  return in;
}

Result<Input> ReadNvidiaSmi(io::ByteSource& source, const std::string& name, uint64_t,
                            const LoadOptions& options) {
  auto rec = ReadNvidiaSmiLogWithFields(source, name, options.max_element_bytes,
                                        options.nvidia_smi_fields);
  GPUSCOPE_RETURN_IF_ERROR(rec.status());
  Input in;
  in.format = InputFormat::kNvidiaSmiLog;
  in.kind = ModelKind::kMonitor;
  in.recording = std::move(*rec);
  return in;
}

Result<Input> ReadSnapshot(io::ByteSource& source, const std::string& name, uint64_t file_bytes,
                           const LoadOptions& options) {
  GPUSCOPE_TRY(snap, ReadTorchSnapshot(source, name, file_bytes, options.max_element_bytes));
  Input in;
  in.format = InputFormat::kTorchMemorySnapshot;
  in.kind = ModelKind::kSnapshot;
  in.snapshot = std::move(*snap);
  return in;
}

// ---- Known files that are not inputs.

bool IsMemoryTimeline(std::string_view head) {
  // export_memory_timeline writes [times, sizes] = "[[t0, t1, …], [[…], …]]"; the raw form
  // (…raw.json.gz) is "[[time, action, bytes, category], …]". A trace array starts "[{".
  std::string_view c = Content(head);
  if (c.empty() || c[0] != '[') return false;
  c = Content(c.substr(1));
  if (c.empty() || c[0] != '[') return false;
  c = Content(c.substr(1));
  return !c.empty() && (c[0] == '-' || c[0] == ']' || (c[0] >= '0' && c[0] <= '9'));
}

bool IsHtml(std::string_view head) {
  const std::string_view c = Content(head);
  if (c.empty() || c[0] != '<') return false;
  const std::string_view start = c.substr(0, 1024);
  for (size_t i = 0; i < start.size(); ++i)
    if (StartsWithNoCase(start.substr(i), "<html") ||
        StartsWithNoCase(start.substr(i), "<!doctype html"))
      return true;
  return false;
}

bool IsTensorBoardEvents(std::string_view head) {
  // TFRecord framing (u64 length, u32 masked CRC) around an Event whose first record carries
  // file_version "brain.Event:2".
  return head.size() >= 16 && head.substr(0, 64).find("brain.Event:") != std::string_view::npos;
}

bool IsZip(std::string_view head) { return head.substr(0, 4) == "PK\x03\x04"; }

// gpuscope tune's --results file: one JSON object per trial, each {"type":"gpuscope.tune.trial"
// (a json.dumps copy may put a space after the colon).
bool IsTuneResults(std::string_view head) {
  std::string_view c = Content(head);
  if (c.empty() || c[0] != '{') return false;
  c = Content(c.substr(1));
  if (!c.starts_with("\"type\"")) return false;
  c = Content(c.substr(6));
  if (c.empty() || c[0] != ':') return false;
  return Content(c.substr(1)).starts_with("\"gpuscope.tune.trial\"");
}

}  // namespace

const std::vector<FormatEntry>& InputFormats() {
  static const std::vector<FormatEntry> kFormats = {
      {InputFormat::kKinetoJson, "PyTorch profiler (Kineto) trace", ModelKind::kTrace, SniffKineto,
       ReadTrace<InputFormat::kKinetoJson, ReadKinetoJson>},
      {InputFormat::kRecordingJsonl, "gpuscope run recording (JSONL)", ModelKind::kMonitor,
       SniffJsonlRecording, ReadMonitor<InputFormat::kRecordingJsonl, ReadJsonlRecording>},
      {InputFormat::kRecordingCsv, "gpuscope run recording (CSV)", ModelKind::kMonitor,
       SniffCsvRecording, ReadMonitor<InputFormat::kRecordingCsv, ReadCsvRecording>},
      {InputFormat::kRecordingChromeTrace, "gpuscope run recording (Chrome-trace JSON)",
       ModelKind::kMonitor, SniffChromeRecording,
       ReadMonitor<InputFormat::kRecordingChromeTrace, ReadChromeTraceRecording>},
      {InputFormat::kNsysSqlite, "Nsight Systems SQLite export", ModelKind::kTrace, SniffNsysSqlite,
       ReadTrace<InputFormat::kNsysSqlite, ReadNsysSqlite>},
      {InputFormat::kNvidiaSmiLog, "nvidia-smi log", ModelKind::kMonitor, SniffNvidiaSmi,
       ReadNvidiaSmi},
      {InputFormat::kDcgmiDmon, "dcgmi dmon log", ModelKind::kMonitor, SniffDcgmiDmon,
       ReadMonitor<InputFormat::kDcgmiDmon, ReadDcgmiDmon>},
      {InputFormat::kDcgmExporter, "dcgm-exporter metrics (Prometheus text)", ModelKind::kMonitor,
       SniffDcgmExporter, ReadMonitor<InputFormat::kDcgmExporter, ReadDcgmExporter>},
      {InputFormat::kTorchMemorySnapshot, "PyTorch CUDA memory snapshot (pickle)",
       ModelKind::kSnapshot, SniffTorchSnapshot, ReadSnapshot},
  };
  return kFormats;
}

const std::vector<NonInputEntry>& KnownNonInputs() {
  static const std::vector<NonInputEntry> kNonInputs = {
      {"a PyTorch memory-timeline export (profiler.export_memory_timeline: [times, sizes] or raw "
       "[time, action, bytes, category] rows), not a profiler trace",
       IsMemoryTimeline,
       "pass the profiler trace itself: prof.export_chrome_trace(\"trace.json\") or the "
       "*.pt.trace.json that tensorboard_trace_handler writes; with profile_memory=True it holds "
       "the same memory events"},
      {"an HTML page, not a trace", IsHtml,
       "HTML is an output (gpuscope analyze --html, the memory timeline's .html, a saved web "
       "page); pass the trace or recording it was made from"},
      {"a TensorBoard event file (TFRecord of summaries), not a trace", IsTensorBoardEvents,
       "the profiler's TensorBoard plugin keeps its traces as *.pt.trace.json(.gz) beside the "
       "event files: pass one of those, or their folder"},
      {"a zip archive (e.g. a torch.save checkpoint), not a trace", IsZip,
       "if it holds traces, unzip it and pass the trace files or their folder"},
      {"gpuscope tune's results file (one trial per line), not a trace or recording", IsTuneResults,
       "give it back to the same search, gpuscope tune … --results FILE -- COMMAND: its trials "
       "are reused and the report printed again"},
  };
  return kNonInputs;
}

const char* FormatName(InputFormat format) {
  for (const FormatEntry& f : InputFormats())
    if (f.id == format) return f.name;
  return "unknown format";
}

Result<const FormatEntry*> SniffFormat(std::string_view head, const std::string& name) {
  for (const NonInputEntry& n : KnownNonInputs())
    if (n.sniff(head)) return Status::InputError(name, 0, "this is " + std::string(n.what), n.hint);
  const FormatEntry* best = nullptr;
  int best_score = 0;
  for (const FormatEntry& f : InputFormats()) {
    const int score = f.sniff(head);
    if (score > best_score) best = &f, best_score = score;
  }
  GPUSCOPE_CHECK(best != nullptr);  // the Kineto reader claims everything with at least 1
  // Nsight Systems' own report format is not documented: named by its extension, only when the
  // bytes are no input gpuscope knows (the Kineto reader's catch-all score of 1).
  if (best_score <= 1 && (name.ends_with(".nsys-rep") || name.ends_with(".qdrep")))
    return Status::InputError(
        name, 0, "this is an Nsight Systems report, whose format gpuscope does not read",
        "export it first: nsys export --type sqlite --output report.sqlite " + name +
            ", then gpuscope analyze report.sqlite");
  return best;
}

Result<Input> ReadInputFromSource(std::unique_ptr<io::ByteSource> source, const std::string& name,
                                  const LoadOptions& options) {
  const int64_t size = source->file_size();
  GPUSCOPE_TRY(head, io::ReadHead(*source, kSniffBytes));
  if (head->empty()) {
    if (source->is_gzip())
      return Status::InputError(name, 0, "empty: the gzip stream holds no data",
                                "the profiler did not write this trace; re-export it");
    if (size < 0)
      return Status::InputError(name, 0, "empty input: nothing arrived on the pipe",
                                "check the command that feeds it");
    return Status::InputError(name, 0, "empty file",
                              "the profiler did not write this trace; re-export it");
  }
  GPUSCOPE_TRY(format, SniffFormat(*head, name));
  auto stream = io::WithPrefix(std::move(*head), std::move(source));
  return (*format)->read(*stream, name, static_cast<uint64_t>(std::max<int64_t>(0, size)), options);
}

Result<Input> ReadInput(const std::string& path, const LoadOptions& options) {
  GPUSCOPE_TRY(source, io::OpenByteSource(path, Backend(options.inflater)));
  return ReadInputFromSource(std::move(*source), io::DisplayName(path), options);
}

Result<Input> ReadInputFromBytes(std::string_view bytes, const std::string& name,
                                 const LoadOptions& options) {
  return ReadInputFromSource(io::MemoryByteSource(bytes, name, Backend(options.inflater)), name,
                             options);
}

Result<monitor::Recording> ReadMonitorInput(const std::string& path, const LoadOptions& options) {
  GPUSCOPE_TRY(in, ReadInput(path, options));
  if (in->kind != ModelKind::kMonitor)
    return Status::Error(StatusCode::kInvalidInput,
                         io::DisplayName(path) + ": is a " + FormatName(in->format) +
                             ", not a monitor recording (hint: give a file from `gpuscope run "
                             "--record FILE -- CMD`, or an nvidia-smi log)");
  return std::move(*in->recording);
}

}  // namespace gpuscope::ingest
