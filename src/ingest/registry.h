// The input registry: which reader handles which bytes. Every input of every subcommand comes
// through here (analyze, diff, plan --from-trace, analyze --monitor), as in Perfetto's importers:
// the first bytes (after gzip is undone) are sniffed, never the file name, and the reader that is
// most sure of them reads the stream.
//
//   open once ("-" = stdin; pipes and FIFOs too) → inflate if gzip → read the first 64 KiB →
//   known non-input? → error naming it, with a hint → else the format with the highest
//   confidence reads the whole stream (the 64 KiB are handed to it again) → a Trace or a Recording
//
// Adding a format is one entry in InputFormats() (registry.cc) plus its folder under src/ingest/.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/ingest.h"
#include "gpuscope/status.h"
#include "io/byte_source.h"
#include "model/memory_snapshot.h"
#include "model/monitor_samples.h"

namespace gpuscope::ingest {

// Bytes sniffed to choose a reader (after decompression).
inline constexpr size_t kSniffBytes = size_t{64} << 10;

enum class InputFormat : uint8_t {
  kKinetoJson,            // PyTorch profiler (Kineto) / Chrome-trace JSON → Trace
  kRecordingJsonl,        // gpuscope run --record FILE.jsonl → Recording
  kRecordingCsv,          // gpuscope run --record FILE.csv → Recording
  kRecordingChromeTrace,  // gpuscope run --record FILE.json → Recording
  kNvidiaSmiLog,  // nvidia-smi --query-gpu … --format=csv[,noheader], or nvidia-smi dmon →
                  // Recording
  kDcgmiDmon,     // dcgmi dmon -e FIELDS → Recording
  kDcgmExporter,  // dcgm-exporter Prometheus text (scrapes appended) → Recording
  kTorchMemorySnapshot,  // torch.cuda.memory._dump_snapshot pickle → snapshot::Snapshot
  kNsysSqlite,           // nsys export --type sqlite → Trace
};

// The kind of model a format produces: a profiler trace, a monitor sample series, or a CUDA
// memory snapshot.
enum class ModelKind : uint8_t { kTrace, kMonitor, kSnapshot };

// One input, read: exactly one of the models is set, per `kind`.
struct Input {
  InputFormat format = InputFormat::kKinetoJson;
  ModelKind kind = ModelKind::kTrace;
  std::optional<Trace> trace;
  std::optional<monitor::Recording> recording;
  std::optional<snapshot::Snapshot> snapshot;
};

struct FormatEntry {
  InputFormat id;
  const char* name;  // what the format is called in messages
  ModelKind kind;
  // How sure the first bytes make this reader: 0 (not this format) to 100 (certain).
  int (*sniff)(std::string_view head);
  // Reads the whole stream from its first byte. `file_bytes` is the file's size (0 if unknown).
  Result<Input> (*read)(io::ByteSource& source, const std::string& name, uint64_t file_bytes,
                        const LoadOptions& options);
};

// Files people pass that are not inputs: refused by what they are, with a hint to the input
// they meant (a torch memory-timeline export instead of the trace, an HTML page, a TensorBoard
// event file, …).
struct NonInputEntry {
  const char* what;  // "a PyTorch memory-timeline export (profiler.export_memory_timeline)"
  bool (*sniff)(std::string_view head);
  const char* hint;
};

const std::vector<FormatEntry>& InputFormats();
const std::vector<NonInputEntry>& KnownNonInputs();

// The reader for these first bytes, or an error naming a known non-input. Never fails otherwise:
// the Kineto reader takes anything unrecognised and says at which byte it stops making sense.
Result<const FormatEntry*> SniffFormat(std::string_view head, const std::string& name);

// Opens `path` ("-" is standard input) once, sniffs and reads it.
Result<Input> ReadInput(const std::string& path, const LoadOptions& options = {});
// The same over bytes in memory (tests, fuzzing); `name` labels messages.
Result<Input> ReadInputFromBytes(std::string_view bytes, const std::string& name,
                                 const LoadOptions& options = {});
// The same over an opened stream (positioned at its first byte, gzip already undone).
Result<Input> ReadInputFromSource(std::unique_ptr<io::ByteSource> source, const std::string& name,
                                  const LoadOptions& options);

// For callers that take only monitor data (analyze --monitor FILE, tests): a trace is an error
// saying so.
Result<monitor::Recording> ReadMonitorInput(const std::string& path,
                                            const LoadOptions& options = {});

// LoadInputs (gpuscope/ingest.h) for `gpuscope analyze`: a folder of rank traces, or one file of
// any format; when that file is a monitor input (a recording, an nvidia-smi log) it is moved to
// `*recording` and no trace is returned. With `recording` null a monitor input is an error. A
// memory snapshot is moved to `*snapshot` the same way (with `snapshot` null it is an error).
Result<LoadedInputs> LoadInputs(const std::string& path, const LoadOptions& options,
                                std::optional<monitor::Recording>* recording,
                                std::optional<snapshot::Snapshot>* snapshot = nullptr);

// A folder's entry that is not a regular file: an error naming it and what it is when its name is
// a trace's (*.json, *.json.gz, *.sqlite, *.db), else Ok (a folder, or a file of another name, is
// no input). ListTraceFiles and the job's folder listing use it.
Status NotARegularTraceFile(const std::filesystem::directory_entry& entry);

// Human name of a format ("gpuscope run recording (JSONL)").
const char* FormatName(InputFormat format);

}  // namespace gpuscope::ingest
