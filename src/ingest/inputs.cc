#include "ingest/inputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "ingest/nsys_sqlite/nsys_reader.h"
#include "ingest/registry.h"

namespace gpuscope::ingest {

namespace {

bool StartsAsSqlite(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char head[16];
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return LooksLikeSqlite(std::string_view(head, n));
}

}  // namespace

bool IsSummaryFile(const std::string& path) {
  struct stat st;
  if (path == "-" || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return StartsAsSqlite(path) && !IsNsysExportFile(path);
}

Result<PathKind> ClassifyPath(const std::string& path) {
  if (path == "-") return PathKind::kStdin;
  std::error_code ec;
  // status() follows symbolic links, so a loop of them is told apart from a missing file.
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found)
    return Status::Error(StatusCode::kNotFound,
                         path +
                             ": no such file or folder (hint: pass a trace file, e.g. "
                             "trace.pt.trace.json.gz, an Nsight Systems export, a summary from "
                             "`gpuscope map`, or a folder of them)");
  if (ec)
    return Status::Error(StatusCode::kInvalidInput,
                         path + ": cannot open: " + ec.message() +
                             (ec == std::errc::too_many_symbolic_link_levels
                                  ? " (hint: the symbolic link leads back to itself; check "
                                    "`readlink -f " +
                                        path + "`)"
                                  : ""));
  if (status.type() == std::filesystem::file_type::directory) return PathKind::kFolder;
  return IsSummaryFile(path) ? PathKind::kSummary : PathKind::kFile;
}

Status ListFolderInputs(const std::string& dir, FolderInputs* out) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec)
    return Status::Error(StatusCode::kNotFound, dir + ": cannot list folder: " + ec.message());
  std::vector<std::string> traces, summaries;
  size_t skipped = 0;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    const std::string path = entry.path().string();
    if (!entry.is_regular_file(ec)) {
      // An input's name on a FIFO, a device or a dangling link: said, never read (a FIFO would
      // wait for a writer), never silently dropped. Folders and other names are not inputs.
      if (Status s = NotARegularTraceFile(entry); !s.ok()) {
        out->skipped.push_back(s);
        ++skipped;
      }
      continue;
    }
    if (name.ends_with(".json") || name.ends_with(".json.gz"))
      traces.push_back(path);
    else if (StartsAsSqlite(path))  // an Nsight Systems export is a trace, any other a summary
      (IsNsysExportFile(path) ? traces : summaries).push_back(path);
  }
  if (traces.empty() && summaries.empty() && skipped == 0)
    return Status::Error(
        StatusCode::kInvalidInput,
        dir +
            ": no trace files in this folder (hint: gpuscope looks for *.json and *.json.gz, "
            "e.g. the *.pt.trace.json files torch.profiler writes, for Nsight Systems SQLite "
            "exports and for summaries that `gpuscope map` writes)");
  std::sort(traces.begin(), traces.end());
  std::sort(summaries.begin(), summaries.end());
  out->traces.insert(out->traces.end(), traces.begin(), traces.end());
  out->summaries.insert(out->summaries.end(), summaries.begin(), summaries.end());
  return Status::Ok();
}

}  // namespace gpuscope::ingest
