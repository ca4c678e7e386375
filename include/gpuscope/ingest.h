// Opening inputs: one trace file, or a folder of per-rank trace files, into Trace models.
#pragma once

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

struct LoadOptions {
  // Parser threads; 0 = all cores (or the pool's size). With 1 the whole load runs on the calling
  // thread.
  int threads = 0;
  // The program's thread pool, shared with the analyses; null: a pool of `threads` is made for the
  // call. Not owned.
  ThreadPool* pool = nullptr;
  // Bytes of JSON text per parse batch. Peak memory above the model is about
  // (2 × threads + 2) × batch_bytes plus the parsers' buffers.
  size_t batch_bytes = size_t{4} << 20;
  Inflater inflater = Inflater::kAuto;
  // Called from the loading thread with (bytes read from the file so far, file size).
  std::function<void(uint64_t, uint64_t)> progress;
};

// Loads one Kineto / Chrome-trace JSON file (plain or gzip, detected from content).
Result<Trace> LoadTrace(const std::string& path, const LoadOptions& options = {});

// Loads a trace held in memory (tests, fuzzing). `name` is used in messages.
Result<Trace> LoadTraceFromBytes(std::string_view bytes, const std::string& name,
                                 const LoadOptions& options = {});

// Trace files in a folder: regular files named *.json or *.json.gz (also *.pt.trace.json*), sorted.
Result<std::vector<std::string>> ListTraceFiles(const std::string& dir);

// Rank from a file name ("rank3", "rank-3", "rank_3", "rank3of8" → 3), or -1.
int RankFromFileName(std::string_view file_name);

struct LoadedInputs {
  std::vector<Trace> traces;     // sorted by rank (then path)
  std::vector<Status> failures;  // files that could not be read, with why
};

// `path` is a trace file or a folder of them. Files are loaded in parallel on all cores.
// Fails only if nothing could be loaded (missing path, empty folder, every file bad).
Result<LoadedInputs> LoadInputs(const std::string& path, const LoadOptions& options = {});

}  // namespace gpuscope
