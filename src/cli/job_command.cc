#include "cli/job_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "api/options.h"
#include "base/output_file.h"
#include "base/sanitize.h"
#include "base/thread_pool.h"
#include "cli/output.h"
#include "cli/usage.h"
#include "gpuscope/ingest.h"
#include "ingest/inputs.h"
#include "ingest/registry.h"
#include "job/map_reduce.h"
#include "render/format.h"
#include "report/summary.h"
#include "store/summary_file.h"

namespace gpuscope::cli {

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t SizeOf(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

std::string Share(uint64_t part, uint64_t whole) {
  if (whole == 0) return "n/a";
  return render::FormatShare(static_cast<double>(part) / static_cast<double>(whole), 2);
}

// A folder's summaries carried into map's output as they are: read (and so checked), then written
// to the folder `out_path` under their own names (one already there, the same file, is left
// alone), or added to the ranks of the one output file `out_path` (which, if it is among them,
// is replaced, not carried into itself: mapping a folder into a file of it twice adds nothing).
struct Carried {
  std::vector<report::RankSummary> ranks;  // for the one output file
  std::vector<Status> failures;
  size_t files = 0;  // carried
};

Carried CarrySummaries(const std::vector<std::string>& paths, bool to_folder,
                       const std::string& out_path) {
  Carried out;
  for (const std::string& path : paths) {
    std::error_code ec;
    const std::string target =
        to_folder
            ? (std::filesystem::path(out_path) / std::filesystem::path(path).filename()).string()
            : out_path;
    const bool same = std::filesystem::equivalent(path, target, ec);
    if (same && !to_folder) continue;
    auto ranks = store::ReadSummaryFile(path);
    if (!ranks.ok()) {
      out.failures.push_back(ranks.status());
      continue;
    }
    ++out.files;
    if (!to_folder) {
      for (report::RankSummary& r : *ranks) out.ranks.push_back(std::move(r));
      continue;
    }
    if (same) continue;
    if (Status s = store::WriteSummaryFile(target, *ranks); !s.ok()) {
      out.failures.push_back(s);
      continue;
    }
    std::printf("wrote %s (%s, carried from %s)\n", SanitizeText(target).c_str(),
                render::FormatBytes(static_cast<double>(SizeOf(target))).c_str(),
                SanitizeText(path).c_str());
  }
  return out;
}

}  // namespace

std::string SummaryFileName(const std::string& trace_path) {
  std::string name =
      trace_path == "-" ? "stdin" : std::filesystem::path(trace_path).filename().string();
  for (std::string_view suffix : {".gz", ".json", ".pt.trace"})
    if (EndsWith(name, suffix) && name.size() > suffix.size())
      name.resize(name.size() - suffix.size());
  return name + ".gpuscope.db";
}

void AddRanksFlag(CLI::App* app, std::string* ranks) {
  app->add_option("--ranks", *ranks,
                  "Ranks shown in full after the job summary: all, or rank ids (0,7); default: "
                  "the worst few")
      ->type_name("all|N,M");
}

// -j,--threads (bounded as api's ThreadsOption bounds it for the other subcommands) and
// --ranks-in-memory, as map and reduce both take them.
void AddParallelismFlags(CLI::App* cmd, int* threads, int* ranks_in_memory,
                         const char* ranks_help) {
  cmd->add_option("-j,--threads", *threads, "Threads (default: all cores)")
      ->check(CLI::Range(0, api::kMaxThreads));
  cmd->add_option("--ranks-in-memory", *ranks_in_memory, ranks_help)->check(CLI::Range(0, 4096));
}

CLI::App* AddMapCommand(CLI::App& app, MapCliOptions* o) {
  auto* cmd = AddCommand(app, "map");
  cmd->add_option("TRACE", o->inputs,
                  "Trace files and Nsight Systems exports, or folders of them (a folder's gpuscope "
                  "summaries are carried into the output as they are); - for stdin")
      ->required();
  cmd->add_option("-o,--out", o->out,
                  "DIR/ (ends with / or is a folder): one summary per trace, "
                  "DIR/<name>.gpuscope.db; FILE: every summary in one file")
      ->required();
  AddParallelismFlags(cmd, &o->threads, &o->ranks_in_memory,
                      "Traces loaded at once (default: one per two cores)");
  cmd->add_option("--batch-mb", o->batch_mb, "JSON megabytes per parse batch (default 2)")
      ->check(CLI::Range(0.01, 1024.0));
  cmd->add_option("--inflater", o->inflater, "gzip backend: auto, isal or zlib")
      ->check(CLI::IsMember({"auto", "isal", "zlib"}));
  cmd->add_option("--monitor", o->monitor_file,
                  "A `gpuscope run --record` file (or nvidia-smi log) of the same run: a "
                  "\"monitor\" section in each rank's summary");
  return cmd;
}

namespace {

// What map reads: the traces (files as given, folders listed as `analyze FOLDER` lists them,
// ingest/inputs.h), a folder's summaries to carry into the output as they are (so that `reduce` of
// the output sees every rank `analyze FOLDER` does), and what a folder held that is neither (said
// at the end).
struct MapInputs {
  std::vector<std::string> traces, carried;
  std::vector<Status> skipped;
};

Status ListMapInputs(const std::vector<std::string>& inputs, MapInputs* out) {
  for (const std::string& in : inputs) {
    GPUSCOPE_TRY(kind, ingest::ClassifyPath(in));
    if (*kind == ingest::PathKind::kFolder) {
      ingest::FolderInputs listed;
      GPUSCOPE_RETURN_IF_ERROR(ingest::ListFolderInputs(in, &listed));
      out->traces.insert(out->traces.end(), listed.traces.begin(), listed.traces.end());
      out->carried.insert(out->carried.end(), listed.summaries.begin(), listed.summaries.end());
      out->skipped.insert(out->skipped.end(), listed.skipped.begin(), listed.skipped.end());
    } else if (*kind == ingest::PathKind::kSummary) {
      // Every SQLite file that is no Nsight Systems export is classified so; only one the summary
      // reader reads is "already a summary". Any other gets the reader's own words, as analyze
      // and reduce say them (not a gpuscope summary, what it holds instead, a hint).
      if (auto read = store::ReadSummaryFile(in); !read.ok()) return read.status();
      return Status::Error(StatusCode::kInvalidInput,
                           in +
                               ": is already a gpuscope summary (hint: combine summaries with "
                               "`gpuscope reduce " +
                               in + " ...`)");
    } else {
      out->traces.push_back(in);
    }
  }
  return Status::Ok();
}

// -o FOLDER/: one summary file per trace, named after it, and the carried summaries beside them;
// two inputs that would be written to one file are refused before any work.
Status NameFolderOutputs(const std::string& folder, const MapInputs& in,
                         std::vector<std::string>* outputs) {
  std::map<std::string, std::string> taken;
  for (const std::string& t : in.traces) {
    std::string out = (std::filesystem::path(folder) / SummaryFileName(t)).string();
    auto [it, added] = taken.emplace(out, t);
    if (!added)
      return Status::Error(
          StatusCode::kInvalidInput,
          t + " and " + it->second + " would both be summarised to " + out +
              " (hint: map them into separate folders, or all into one file: -o job.gpuscope.db)");
    outputs->push_back(std::move(out));
  }
  for (const std::string& c : in.carried) {
    const std::string out =
        (std::filesystem::path(folder) / std::filesystem::path(c).filename()).string();
    if (auto [it, added] = taken.emplace(out, c); !added)
      return Status::Error(StatusCode::kInvalidInput,
                           c + " and " + it->second + " would both be written to " + out +
                               " (hint: map them into separate folders)");
  }
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec)
    return Status::Error(StatusCode::kInvalidInput,
                         folder + ": cannot create the folder: " + ec.message());
  return Status::Ok();
}

}  // namespace

int RunMapCommand(const MapCliOptions& o) {
  ThreadPool pool(o.threads);
  job::MapOptions options;
  options.load.threads = o.threads;
  options.load.pool = &pool;
  options.load.batch_bytes = static_cast<size_t>(o.batch_mb * 1024 * 1024);
  if (o.inflater == "zlib") options.load.inflater = Inflater::kZlib;
  if (o.inflater == "isal") options.load.inflater = Inflater::kIsal;
  options.max_ranks_in_memory = o.ranks_in_memory;

  MapInputs in;
  if (Status s = ListMapInputs(o.inputs, &in); !s.ok()) {
    PrintError(s);
    return ExitCodeFor(s);
  }
  const std::vector<std::string>& traces = in.traces;

  const bool to_folder = EndsWith(o.out, "/") || std::filesystem::is_directory(o.out);
  FileStamp out_before;  // what -o held when this map started
  if (!to_folder) {      // refused before the work, not after it
    if (auto target = CheckReplaceablePath(o.out, "-o", nullptr); !target.ok()) {
      PrintError(target.status());
      return ExitCodeFor(target.status());
    }
    out_before = StampOf(o.out);
  }
  std::vector<std::string> outputs;
  if (to_folder) {
    if (Status s = NameFolderOutputs(o.out, in, &outputs); !s.ok()) {
      PrintError(s);
      return ExitCodeFor(s);
    }
  }

  std::optional<Result<monitor::Recording>> beside;
  if (!o.monitor_file.empty()) {
    beside.emplace(ingest::ReadMonitorInput(o.monitor_file));
    if (!beside->ok()) {
      PrintError(beside->status().message());
      return ExitCodeFor(beside->status());
    }
    options.run.monitor = &beside->value();
  }

  uint64_t summary_bytes = 0;
  if (to_folder) {
    options.sink = [&](size_t i, report::RankSummary&& summary) -> Status {
      const std::vector<report::RankSummary> one{std::move(summary)};
      GPUSCOPE_RETURN_IF_ERROR(store::WriteSummaryFile(outputs[i], one));
      const int64_t bytes = SizeOf(outputs[i]);
      summary_bytes += static_cast<uint64_t>(bytes);
      std::printf("wrote %s (%s)\n", outputs[i].c_str(),
                  render::FormatBytes(static_cast<double>(bytes)).c_str());
      return Status::Ok();
    };
  }
  job::Mapped mapped = job::MapTraces(traces, options, pool);
  Carried kept = CarrySummaries(in.carried, to_folder, o.out);
  for (report::RankSummary& r : kept.ranks) mapped.ranks.push_back(std::move(r));
  if (!kept.ranks.empty()) job::SortSummaries(&mapped.ranks);
  int rc = 0;
  if (!to_folder && !mapped.ranks.empty()) {
    std::string note;
    // Another process wrote -o while this one mapped (two map jobs given one file): replacing it
    // would lose its ranks, silently. This summary goes beside it instead, and that is said.
    std::string target = o.out;
    if (!(StampOf(o.out) == out_before)) {
      target = o.out + "." + std::to_string(getpid());
      PrintError(SanitizeText(o.out) +
                 " was written by another process while this map ran; this "
                 "summary goes to " +
                 SanitizeText(target) +
                 " instead, so neither is lost (hint: "
                 "reduce both; give each map its own file, or one folder: -o DIR/)");
      rc = 2;
    }
    if (Status s = store::WriteSummaryFile(target, mapped.ranks, &note); !s.ok()) {
      PrintError(s.message());
      rc = ExitCodeFor(s);
    } else {
      summary_bytes = static_cast<uint64_t>(SizeOf(target));
      std::printf("wrote %s%s (%zu rank%s, %s)\n", SanitizeText(target).c_str(), note.c_str(),
                  mapped.ranks.size(), mapped.ranks.size() == 1 ? "" : "s",
                  render::FormatBytes(static_cast<double>(summary_bytes)).c_str());
    }
  }
  const size_t ok = traces.size() - mapped.failures.size();
  const std::string json = render::FormatBytes(static_cast<double>(mapped.stats.json_bytes));
  if (traces.empty())
    ;  // only summaries: nothing was mapped
  else if (traces.size() > 1 || !mapped.failures.empty())
    std::printf("mapped %zu of %zu traces: %s of JSON, %s of summaries (%s)\n", ok, traces.size(),
                json.c_str(), render::FormatBytes(static_cast<double>(summary_bytes)).c_str(),
                Share(summary_bytes, mapped.stats.json_bytes).c_str());
  else
    std::printf("summary: %s of the trace's %s of JSON\n",
                Share(summary_bytes, mapped.stats.json_bytes).c_str(), json.c_str());
  if (kept.files > 0)
    std::printf("carried %zu summar%s of the folder as %s\n", kept.files,
                kept.files == 1 ? "y" : "ies", kept.files == 1 ? "it was" : "they were");
  mapped.failures.insert(mapped.failures.end(), kept.failures.begin(), kept.failures.end());
  for (const Status& f : mapped.failures) {
    PrintError(f.message());
    rc = std::max(rc, ExitCodeFor(f));
  }
  for (const Status& f : in.skipped) {
    PrintError(f.message());
    rc = std::max(rc, ExitCodeFor(f));
  }
  if (beside && beside->value().malformed_lines > 0) rc = std::max(rc, 2);
  return rc;
}

CLI::App* AddReduceCommand(CLI::App& app, ReduceCliOptions* o) {
  auto* cmd = AddCommand(app, "reduce");
  cmd->add_option("SUMMARY", o->inputs,
                  "Summary files or folders of them (traces among them are mapped on the way)")
      ->required();
  AddOutputFlags(cmd, &o->out);
  AddRanksFlag(cmd, &o->ranks);
  AddParallelismFlags(cmd, &o->threads, &o->ranks_in_memory,
                      "Traces among the inputs loaded at once (default: one per two cores)");
  return cmd;
}

int RunReduceCommand(const ReduceCliOptions& o) {
  report::JobOptions job_options;
  if (Status s = report::ParseDetailRanks(o.ranks, &job_options.detail_ranks); !s.ok()) {
    PrintError(s.message());
    return 2;
  }
  ThreadPool pool(o.threads);
  job::MapOptions options;
  options.load.threads = o.threads;
  options.load.pool = &pool;
  options.max_ranks_in_memory = o.ranks_in_memory;
  auto mapped = job::ReadSummaries(o.inputs, options, pool);
  if (!mapped.ok()) {
    PrintError(mapped.status().message());
    return ExitCodeFor(mapped.status());
  }
  const render::Document doc =
      report::BuildJobDocument(std::move(mapped->ranks), mapped->failures, job_options);
  if (const int rc = Emit(doc, o.out); rc != 0) return rc;
  int rc = 0;
  for (const Status& f : mapped->failures) {
    PrintError(f.message());
    rc = std::max(rc, ExitCodeFor(f));
  }
  return rc;
}

}  // namespace gpuscope::cli
