#include "api/analyze.h"

#include "report/snapshot_document.h"

#include <filesystem>
#include <optional>
#include <utility>

#include "advise/monitor_rules.h"
#include "analyze/monitor_stats.h"
#include "base/thread_pool.h"
#include "gpuscope/ingest.h"
#include "ingest/registry.h"
#include "job/map_reduce.h"
#include "report/monitor_document.h"
#include "report/snapshot_document.h"
#include "report/summary.h"

namespace gpuscope::api {

namespace {

render::Document MonitorDocument(const monitor::Recording& recording) {
  const analyze::MonitorStats stats = analyze::ComputeMonitorStats(recording);
  return report::BuildRunDocument(stats, advise::AdviseMonitor(stats));
}

}  // namespace

Result<Analysis> AnalyzeInput(const std::string& input, const AnalyzeOptions& args) {
  report::JobOptions job_options;
  if (Status s = report::ParseDetailRanks(args.ranks, &job_options.detail_ranks); !s.ok()) return s;
  if (args.inflater != "auto" && args.inflater != "isal" && args.inflater != "zlib")
    return Status::Error(StatusCode::kUsage,
                         "inflater \"" + args.inflater + "\" is not one of auto, isal, zlib");
  if (!(args.batch_mb >= 0.01 && args.batch_mb <= 1024))
    return Status::Error(StatusCode::kUsage, "batch_mb must be between 0.01 and 1024");
  std::error_code ec;
  const bool many =
      input != "-" && (std::filesystem::is_directory(input, ec) || job::IsSummaryFile(input));
  ThreadPool pool(args.threads);
  job::MapOptions map;
  LoadOptions& options = map.load;
  options.threads = args.threads;
  options.pool = &pool;
  options.batch_bytes = static_cast<size_t>(args.batch_mb * 1024 * 1024);
  if (args.inflater == "zlib")
    options.inflater = Inflater::kZlib;
  else if (args.inflater == "isal")
    options.inflater = Inflater::kIsal;
  map.max_ranks_in_memory = args.ranks_in_memory;
  if (args.progress) {
    options.progress = args.progress;
    map.ranks_done = [&args](size_t done, size_t total) { args.progress(done, total); };
  }

  std::optional<Result<monitor::Recording>> beside;
  auto read_monitor = [&] {
    if (args.monitor_file.empty()) return;
    beside.emplace(ingest::ReadMonitorInput(args.monitor_file));
    if (beside->ok()) map.run.monitor = &beside->value();
  };

  Analysis out;
  std::vector<report::RankSummary> ranks;
  if (many) {
    read_monitor();
    auto mapped = job::ReadSummaries({input}, map, pool);
    if (!mapped.ok()) return mapped.status();
    ranks = std::move(mapped->ranks);
    out.failures = std::move(mapped->failures);
  } else {
    std::optional<monitor::Recording> recording;
    std::optional<snapshot::Snapshot> snap;
    auto loaded = ingest::LoadInputs(input, options, &recording, &snap);
    if (!loaded.ok()) return loaded.status();
    if (snap) {  // a CUDA memory snapshot: its own document (docs/memory-snapshot.md)
      out.document = report::SnapshotDocument(*snap);
      return out;
    }
    if (recording) {
      out.document = MonitorDocument(*recording);
      out.monitor_input = true;
      if (recording->malformed_lines > 0)
        out.failures.push_back(Status::Error(
            StatusCode::kInvalidInput,
            input + ": " + std::to_string(recording->malformed_lines) + " malformed lines skipped"));
      return out;
    }
    read_monitor();
    for (Trace& trace : loaded->traces)
      ranks.push_back(job::SummarizeLoadedTrace(std::move(trace), map, pool));
    out.failures = std::move(loaded->failures);
  }
  out.document = report::BuildJobDocument(std::move(ranks), out.failures, job_options);
  if (beside && !beside->ok()) {
    out.failures.push_back(beside->status());
  } else if (beside && beside->value().malformed_lines > 0) {
    out.failures.push_back(Status::Error(StatusCode::kInvalidInput,
                                         args.monitor_file + ": " +
                                             std::to_string(beside->value().malformed_lines) +
                                             " malformed lines skipped"));
  }
  return out;
}

}  // namespace gpuscope::api
