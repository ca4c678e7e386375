#include "api/analyze.h"

#include <chrono>
#include <optional>
#include <utility>

#include "base/thread_pool.h"
#include "gpuscope/ingest.h"
#include "ingest/inputs.h"
#include "ingest/registry.h"
#include "report/monitor_document.h"
#include "report/snapshot_document.h"
#include "report/summary.h"

namespace gpuscope::api {

namespace {

Status SkippedLines(const std::string& input, size_t lines) {
  return Status::Error(StatusCode::kInvalidInput,
                       input + ": " + std::to_string(lines) + " malformed lines skipped");
}

}  // namespace

const OptionTable<AnalyzeOptions>& AnalyzeOptionTable() {
  using O = AnalyzeOptions;
  static const OptionTable<O> table = {
      ThreadsOption(&O::threads,
                    "Threads for reading and analysing, one pool for both (default: all cores)"),
      {"batch-mb",
       &O::batch_mb,
       "JSON megabytes per parse batch",
       {},
       std::pair<double, double>{0.01, 1024}},
      {"inflater", &O::inflater, "gzip backend: auto, isal or zlib", {"auto", "isal", "zlib"}},
      {"monitor", &O::monitor_file,
       "A `gpuscope run --record` file (or nvidia-smi log) of the same run: GPU/CPU summary "
       "within the trace's time span, a \"monitor\" section of each rank"},
      {"smi-fields", &O::smi_fields,
       "The --query-gpu field list of an nvidia-smi log written with "
       "--format=csv,noheader[,nounits], e.g. \"timestamp,index,utilization.gpu,memory.used\" "
       "(default: columns recognised from their values; needed with nounits)"},
      {"ranks",
       &O::ranks,
       "Ranks shown in full after the job summary: all, or rank ids (0,7); default: the worst "
       "few",
       {},
       {},
       {},
       "",
       "all|N,M"},
      {"ranks-in-memory",
       &O::ranks_in_memory,
       "Traces of a folder loaded at once (default: one per two cores)",
       {},
       std::pair<double, double>{0, 4096}},
  };
  return table;
}
Result<Analysis> AnalyzeInput(const std::string& input, const AnalyzeOptions& args) {
  report::JobOptions job_options;
  GPUSCOPE_RETURN_IF_ERROR(report::ParseDetailRanks(args.ranks, &job_options.detail_ranks));
  GPUSCOPE_RETURN_IF_ERROR(CheckOptions(AnalyzeOptionTable(), args));
  GPUSCOPE_TRY(kind, ingest::ClassifyPath(input));
  // A folder (of traces, of summaries) or a summary: mapped in parallel, a few ranks in memory at
  // once, and reduced (src/job/); one file or stdin: whatever the registry makes of it.
  const bool many = *kind == ingest::PathKind::kFolder || *kind == ingest::PathKind::kSummary;
  // One pool for the whole run: the reader's parse tasks and the analyses share its threads.
  ThreadPool pool(args.threads);
  job::MapOptions map;
  LoadOptions& options = map.load;
  options.threads = args.threads;
  options.pool = &pool;
  options.batch_bytes = static_cast<size_t>(args.batch_mb * 1024 * 1024);
  options.nvidia_smi_fields = args.smi_fields;
  if (args.inflater == "zlib")
    options.inflater = Inflater::kZlib;
  else if (args.inflater == "isal")
    options.inflater = Inflater::kIsal;
  map.max_ranks_in_memory = args.ranks_in_memory;
  if (args.progress) {
    options.progress = args.progress;
    map.ranks_done = [&args](size_t done, size_t total) { args.progress(done, total); };
  }
  if (args.ranks_done) map.ranks_done = args.ranks_done;

  // The monitor recording is read before the analyses (the section beside each trace is one of
  // them); one that cannot be read is a failure after the report.
  std::optional<Result<monitor::Recording>> beside;
  auto read_monitor = [&] {
    if (args.monitor_file.empty()) return;
    LoadOptions monitor_options;
    monitor_options.nvidia_smi_fields = args.smi_fields;
    beside.emplace(ingest::ReadMonitorInput(args.monitor_file, monitor_options));
    if (beside->ok()) map.run.monitor = &beside->value();
  };

  Analysis out;
  out.folder = many;
  std::vector<report::RankSummary> ranks;
  const auto t0 = std::chrono::steady_clock::now();
  if (many) {
    read_monitor();
    GPUSCOPE_TRY(mapped, job::ReadSummaries({input}, map, pool, args.mapper));
    ranks = std::move(mapped->ranks);
    out.failures = std::move(mapped->failures);
    out.stats = mapped->stats;
    if (!args.monitor_file.empty() && out.stats.traces == 0)
      out.notes.push_back(
          "--monitor applies to traces; summaries were analysed when mapped (hint: "
          "gpuscope map TRACE --monitor " +
          args.monitor_file + " -o DIR/)");
  } else {
    std::optional<monitor::Recording> recording;
    std::optional<snapshot::Snapshot> snap;
    auto loaded = ingest::LoadInputs(input, options, &recording, &snap);
    out.stats.load_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    GPUSCOPE_RETURN_IF_ERROR(loaded.status());
    if (snap) {  // a CUDA memory snapshot: its own document (docs/memory-snapshot.md)
      out.document = report::SnapshotDocument(*snap);
      return out;
    }
    if (recording) {  // a recording or an nvidia-smi log: the monitor's verdict (docs/monitor.md)
      out.document = report::RunDocument(*recording);
      out.monitor_input = true;
      if (recording->malformed_lines > 0)
        out.failures.push_back(SkippedLines(input, recording->malformed_lines));
      return out;
    }
    read_monitor();
    if (args.analysing) args.analysing();
    for (Trace& trace : loaded->traces)
      ranks.push_back(job::SummarizeLoadedTrace(std::move(trace), map, pool, &out.stats));
    out.failures = std::move(loaded->failures);
  }
  out.ranks = ranks.size();
  const auto t1 = std::chrono::steady_clock::now();
  out.document = report::BuildJobDocument(std::move(ranks), out.failures, job_options);
  out.reduce_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  if (beside && !beside->ok())
    out.failures.push_back(beside->status());
  else if (beside && beside->value().malformed_lines > 0)
    out.failures.push_back(SkippedLines(args.monitor_file, beside->value().malformed_lines));
  return out;
}

}  // namespace gpuscope::api
