// Opening inputs: one trace file, or a folder of per-rank trace files, into Trace models.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/model.h"
#include "gpuscope/status.h"

namespace gpuscope {

enum class Inflater : uint8_t { kAuto, kZlib, kIsal };

class ThreadPool;  // src/base/thread_pool.h
// The largest single element an input may hold: one traceEvents entry or top-level member of a
// trace, one line of a log or recording. The largest event in the shared real traces is 6.9 KB;
// 64 MiB is ~10,000 times that, and bounds memory on hostile input: an element still open after
// this many bytes (an unterminated string, a gzip bomb of one endless value) is an error naming
// the byte where it starts. Peak memory is the model + this cap + the parse batches.
inline constexpr size_t kMaxElementBytes = size_t{64} << 20;
// JSON bytes per parse batch by default. 2 MiB rather than 4: 3–6 % slower, and 17–33 MB less peak
// RSS (the simdjson parsers and the batches in flight) on the generated 1 and 4 GB traces and a
// 0.5 GB real-derived one, which brings the 1 GB trace under 0.3× its size (bench/RESULTS.md).
inline constexpr size_t kDefaultBatchBytes = size_t{2} << 20;

struct LoadOptions {
  // Parser threads; 0 = all cores (or the pool's size). With 1 the whole load runs on the calling
  // thread.
  int threads = 0;
  // The program's thread pool, shared with the analyses; null: a pool of `threads` is made for the
  // call. Not owned.
  ThreadPool* pool = nullptr;
  // Bytes of JSON text per parse batch. Peak memory above the model is about
  // (2 × threads + 2) × batch_bytes plus the parsers' buffers (simdjson's, about 5 bytes per byte
  // of a batch, one parser per batch parsed at once).
  size_t batch_bytes = kDefaultBatchBytes;
  Inflater inflater = Inflater::kAuto;
  // See kMaxElementBytes (tests lower it).
  size_t max_element_bytes = kMaxElementBytes;
  // The --query-gpu field list of a headerless nvidia-smi CSV log (analyze --smi-fields); empty:
  // its columns are recognised from the values.
  std::string nvidia_smi_fields;
  // Called from the loading thread with (bytes read from the file so far, file size).
  std::function<void(uint64_t, uint64_t)> progress;
  // Flow events ("ph" s/t/f) serve one purpose: linking GPU activities to their launch calls where
  // the correlation id is missing, at the end of the load. No analysis reads them afterwards, and a
  // profiler writes two per launch (17 % of the 1 GB synthetic trace's model), so by default they
  // are only counted (TraceInfo::flow_events_dropped): not stored at all where the input can be
  // read again (a file, bytes in memory) and every GPU activity has its correlation id, else kept
  // until linked (a second read of a file gets them). true keeps Trace::flows.
  bool keep_flows = false;
};

// Loads one Kineto / Chrome-trace JSON file (plain or gzip, detected from content); "-" is standard
// input. The file is read once (pipes work) — twice only if it has GPU activities without a
// correlation id, which its flow events link (see keep_flows) — and its format is sniffed by the
// input registry (src/ingest/registry.h): a gpuscope recording, an nvidia-smi log or a known
// non-trace (a memory-timeline export, an HTML page, a TensorBoard event file) is an error saying
// what it is.
Result<Trace> LoadTrace(const std::string& path, const LoadOptions& options = {});

// Loads a trace held in memory (tests, fuzzing). `name` is used in messages.
Result<Trace> LoadTraceFromBytes(std::string_view bytes, const std::string& name,
                                 const LoadOptions& options = {});

// Trace files in a folder: regular files named *.json or *.json.gz (also *.pt.trace.json*) and
// Nsight Systems SQLite exports, sorted (the folder listing every subcommand uses; a folder of
// only `gpuscope map` summaries is an error that says so).
// An entry with a trace's name that is no regular file (a FIFO, a device, a dangling link) is
// never read (a FIFO would wait for a writer): with `skipped`, each is added to it as an error
// naming it, and a folder holding only such entries lists none without an error.
Result<std::vector<std::string>> ListTraceFiles(const std::string& dir,
                                                std::vector<Status>* skipped = nullptr);

// Rank from a file name ("rank3", "rank-3", "rank_3", "rank3of8" → 3), or -1.
int RankFromFileName(std::string_view file_name);

struct LoadedInputs {
  std::vector<Trace> traces;     // sorted by rank (then path)
  std::vector<Status> failures;  // files that could not be read, with why
};

// `path` is a trace file (or "-") or a folder of them. Files are loaded in parallel on all cores.
// Fails only if nothing could be loaded (missing path, empty folder, every file bad).
Result<LoadedInputs> LoadInputs(const std::string& path, const LoadOptions& options = {});

}  // namespace gpuscope
