// Loading traces: one file through the input registry (ingest/registry.h), or a folder of ranks
// in parallel.
#include <algorithm>
#include <filesystem>
#include <memory>

#include "base/thread_pool.h"
#include "gpuscope/ingest.h"
#include "ingest/inputs.h"
#include "ingest/registry.h"
#include "io/byte_source.h"

namespace gpuscope {

namespace {

// A trace is what these callers (LoadInputs, diff, plan --from-trace) need; a recording or log
// read fine is still the wrong input for them.
Result<Trace> TraceOnly(Result<ingest::Input> in, const std::string& name) {
  GPUSCOPE_RETURN_IF_ERROR(in.status());
  if (in->kind != ingest::ModelKind::kTrace)
    return Status::Error(StatusCode::kInvalidInput,
                         name + ": is a " + ingest::FormatName(in->format) +
                             ", not a profiler trace (hint: `gpuscope analyze " + name +
                             "` gives its verdict on its own; this takes PyTorch profiler traces)");
  return std::move(*in->trace);
}

}  // namespace

Result<Trace> LoadTrace(const std::string& path, const LoadOptions& options) {
  return TraceOnly(ingest::ReadInput(path, options), io::DisplayName(path));
}

Result<Trace> LoadTraceFromBytes(std::string_view bytes, const std::string& name,
                                 const LoadOptions& options) {
  return TraceOnly(ingest::ReadInputFromBytes(bytes, name, options), name);
}

int RankFromFileName(std::string_view file) {
  // Accept "rank3", "rank-3", "rank_3", "rank3of8", case-insensitive "Rank".
  for (size_t pos = 0; pos + 4 < file.size(); ++pos) {
    std::string_view w = file.substr(pos, 4);
    if (!(w == "rank" || w == "Rank" || w == "RANK")) continue;
    size_t i = pos + 4;
    if (i < file.size() && (file[i] == '-' || file[i] == '_')) ++i;
    size_t start = i;
    int rank = 0;
    while (i < file.size() && file[i] >= '0' && file[i] <= '9' && i - start < 9) {
      rank = rank * 10 + (file[i] - '0');
      ++i;
    }
    if (i > start) return rank;
  }
  return -1;
}

Status ingest::NotARegularTraceFile(const std::filesystem::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  const bool trace_name = name.ends_with(".json") || name.ends_with(".json.gz") ||
                          name.ends_with(".sqlite") || name.ends_with(".db");
  std::error_code ec;
  const std::filesystem::file_status st = entry.status(ec);  // follows links
  if (!trace_name || st.type() == std::filesystem::file_type::directory) return Status::Ok();
  const char* what = st.type() == std::filesystem::file_type::not_found ? "a dangling symbolic link"
                     : st.type() == std::filesystem::file_type::fifo    ? "a FIFO"
                     : st.type() == std::filesystem::file_type::character ? "a character device"
                     : st.type() == std::filesystem::file_type::block     ? "a block device"
                     : st.type() == std::filesystem::file_type::socket    ? "a socket"
                                                                          : "not a regular file";
  return Status::Error(
      StatusCode::kInvalidInput,
      entry.path().string() + ": " + what +
          ", not a trace file; skipped (hint: a folder of ranks is read file "
          "by file; pass a FIFO or a pipe on its own, e.g. gpuscope analyze FIFO)");
}

Result<std::vector<std::string>> ListTraceFiles(const std::string& dir,
                                                std::vector<Status>* skipped) {
  ingest::FolderInputs listed;
  GPUSCOPE_RETURN_IF_ERROR(ingest::ListFolderInputs(dir, &listed));
  if (skipped) skipped->insert(skipped->end(), listed.skipped.begin(), listed.skipped.end());
  if (listed.traces.empty() && !listed.skipped.empty() && skipped) return listed.traces;  // said
  if (listed.traces.empty())
    return Status::Error(StatusCode::kInvalidInput,
                         dir + ": no trace files in this folder, only " +
                             std::to_string(listed.summaries.size()) +
                             " gpuscope summaries (hint: `gpuscope analyze " + dir +
                             "` or `gpuscope reduce " + dir + "` reads them)");
  return listed.traces;
}

Result<LoadedInputs> LoadInputs(const std::string& path, const LoadOptions& options) {
  return ingest::LoadInputs(path, options, nullptr);
}

Result<LoadedInputs> ingest::LoadInputs(const std::string& path, const LoadOptions& options,
                                        std::optional<monitor::Recording>* recording,
                                        std::optional<snapshot::Snapshot>* snapshot) {
  GPUSCOPE_TRY(kind, ingest::ClassifyPath(path));
  std::vector<std::string> files;
  std::vector<Status> skipped;  // a folder's FIFOs, devices and dangling links, named
  if (*kind == ingest::PathKind::kFolder) {
    GPUSCOPE_TRY(listed, ListTraceFiles(path, &skipped));
    files = std::move(*listed);
  } else if (recording != nullptr || snapshot != nullptr) {
    // One file, read once: whatever the registry makes of it, a monitor input or a snapshot
    // included where the caller takes it.
    GPUSCOPE_TRY(in, ReadInput(path, options));
    LoadedInputs out;
    if (in->kind == ModelKind::kMonitor && recording != nullptr)
      *recording = std::move(*in->recording);
    else if (in->kind == ModelKind::kSnapshot && snapshot != nullptr)
      *snapshot = std::move(*in->snapshot);
    else if (auto trace = TraceOnly(std::move(in), io::DisplayName(path)); trace.ok())
      out.traces.push_back(std::move(*trace));
    else
      return trace.status();
    return out;
  } else {
    files.push_back(path);
  }

  const int cores = options.threads > 0
                        ? options.threads
                        : (options.pool ? options.pool->threads() : ThreadPool::DefaultThreads());
  // Many files: one core each, several files at once. Few files: the cores go inside each file.
  const int concurrent = std::max(1, std::min<int>(cores, static_cast<int>(files.size())));
  LoadOptions per_file = options;
  per_file.threads = std::max(1, cores / concurrent);
  if (concurrent > 1) per_file.progress = nullptr;

  std::vector<std::optional<Result<Trace>>> results(files.size());
  std::unique_ptr<ThreadPool> own_pool;
  if (per_file.pool == nullptr && cores > 1) {
    own_pool = std::make_unique<ThreadPool>(cores);
    per_file.pool = own_pool.get();
  }
  if (files.size() == 1 || per_file.pool == nullptr) {
    for (size_t i = 0; i < files.size(); ++i) results[i].emplace(LoadTrace(files[i], per_file));
  } else {
    TaskGroup group(*per_file.pool);
    for (size_t i = 0; i < files.size(); ++i)
      group.Run([&, i] { results[i].emplace(LoadTrace(files[i], per_file)); });
    group.Wait();
  }

  LoadedInputs out;
  const size_t inputs = files.size() + skipped.size();
  out.failures = std::move(skipped);
  for (auto& r : results) {
    if (r->ok()) {
      out.traces.push_back(std::move(r->value()));
    } else {
      out.failures.push_back(r->status());
    }
  }
  if (out.traces.empty()) {
    if (out.failures.size() == 1) return out.failures.front();
    return Status::Error(
        StatusCode::kInvalidInput,
        path + ": none of the " + std::to_string(inputs) +
            " trace files could be read; first error: " + out.failures.front().message());
  }
  std::stable_sort(out.traces.begin(), out.traces.end(), [](const Trace& a, const Trace& b) {
    const int ra = a.info.rank < 0 ? INT32_MAX : a.info.rank;
    const int rb = b.info.rank < 0 ? INT32_MAX : b.info.rank;
    if (ra != rb) return ra < rb;
    return a.info.path < b.info.path;
  });
  return out;
}

}  // namespace gpuscope
