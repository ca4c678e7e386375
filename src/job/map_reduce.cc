#include "job/map_reduce.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>

#include "ingest/inputs.h"
#include "ingest/registry.h"
#include "render/json.h"
#include "report/report.h"
#include "store/summary_file.h"

namespace gpuscope::job {

namespace {

std::atomic<int> g_models_alive{0};
std::atomic<int> g_models_peak{0};

// Counts one rank model for as long as it lives (the trace and everything analysed from it).
class ModelCounted {
 public:
  ModelCounted() {
    const int now = g_models_alive.fetch_add(1) + 1;
    int peak = g_models_peak.load();
    while (now > peak && !g_models_peak.compare_exchange_weak(peak, now)) {
    }
  }
  ~ModelCounted() { g_models_alive.fetch_sub(1); }
  ModelCounted(const ModelCounted&) = delete;
  ModelCounted& operator=(const ModelCounted&) = delete;
};

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The summary of a loaded trace. `trace` is consumed: it and every result that points into it
// are gone when this returns.
report::RankSummary Summarize(Trace trace, const MapOptions& options, ThreadPool& pool,
                              MapStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  if (stats) {
    stats->traces += 1;
    stats->file_bytes += trace.info.file_bytes;
    stats->json_bytes += trace.info.json_bytes;
    stats->events += trace.info.events_total;
    stats->max_model_bytes = std::max(stats->max_model_bytes, trace.TableBytes());
  }
  report::RankSummary summary;
  {
    std::vector<Trace> traces;
    traces.push_back(std::move(trace));
    // The one-rank report: every analysis, the analysis warnings and the advice, as `analyze
    // TRACE` has always made them.
    const report::Report rep = report::BuildReport(traces, {}, pool, options.run);
    const report::RankReport& rank = rep.ranks.front();
    if (stats)
      for (size_t i = 0; i < rank.cpu_seconds.size(); ++i)
        stats->analysis_cpu_seconds[i] += rank.cpu_seconds[i];
    summary = report::SummarizeRank(rank, 0);
    // ExtractRankFacts fills the identity; should it leave it empty (the contract stub does),
    // take it from the rank's trace summary, which the section's key and title come from, so
    // that sorting and keys agree with the report.
    model::RankIdentity& id = summary.facts.identity;
    if (id.path.empty()) {
      id.path = rank.summary.path;
      id.rank = rank.summary.rank;
      id.rank_source = rank.summary.rank_source;
      id.world_size = rank.summary.world_size;
    }
  }
  // The section as a summary file gives it back (integers beyond 2^53 as JSON reads them), so
  // that `reduce` of map's files and `analyze FOLDER` build the same document.
  render::Document doc;
  doc.sections.push_back(std::move(summary.section));
  doc = render::AsReadBack(std::move(doc));
  summary.section = std::move(doc.sections.front());
  if (stats) stats->analyze_seconds += SecondsSince(t0);
  return summary;
}

// Paths → the traces to map and the summaries to read, as ingest::ClassifyPath says.
Status Classify(const std::string& path, ingest::FolderInputs* out) {
  GPUSCOPE_TRY(kind, ingest::ClassifyPath(path));
  switch (*kind) {
    case ingest::PathKind::kFolder:
      return ingest::ListFolderInputs(path, out);
    case ingest::PathKind::kSummary:
      out->summaries.push_back(path);
      break;
    case ingest::PathKind::kStdin:
    case ingest::PathKind::kFile:
      out->traces.push_back(path);
      break;  // the registry says what
  }
  return Status::Ok();
}

}  // namespace

void MapStats::Add(const MapStats& o) {
  traces += o.traces;
  load_seconds += o.load_seconds;
  analyze_seconds += o.analyze_seconds;
  file_bytes += o.file_bytes;
  json_bytes += o.json_bytes;
  events += o.events;
  max_model_bytes = std::max(max_model_bytes, o.max_model_bytes);
  for (size_t i = 0; i < analysis_cpu_seconds.size(); ++i)
    analysis_cpu_seconds[i] += o.analysis_cpu_seconds[i];
}

RankModelCount RankModelsAlive() { return {g_models_alive.load(), g_models_peak.load()}; }
void ResetRankModelPeak() { g_models_peak.store(g_models_alive.load()); }

Result<report::RankSummary> MapTrace(const std::string& path, const MapOptions& options,
                                     ThreadPool& pool, MapStats* stats) {
  // Counted from before the load: the model grows while it is read.
  ModelCounted counted;
  LoadOptions load = options.load;
  if (load.pool == nullptr) load.pool = &pool;
  const auto t0 = std::chrono::steady_clock::now();
  GPUSCOPE_TRY(trace, LoadTrace(path, load));
  if (stats) stats->load_seconds += SecondsSince(t0);
  return Summarize(std::move(*trace), options, pool, stats);
}

report::RankSummary SummarizeLoadedTrace(Trace trace, const MapOptions& options, ThreadPool& pool,
                                         MapStats* stats) {
  ModelCounted counted;
  return Summarize(std::move(trace), options, pool, stats);
}

void SortSummaries(std::vector<report::RankSummary>* ranks) {
  std::stable_sort(ranks->begin(), ranks->end(),
                   [](const report::RankSummary& a, const report::RankSummary& b) {
                     const model::RankIdentity& x = a.facts.identity;
                     const model::RankIdentity& y = b.facts.identity;
                     const int rx = x.rank < 0 ? INT32_MAX : x.rank;
                     const int ry = y.rank < 0 ? INT32_MAX : y.rank;
                     if (rx != ry) return rx < ry;
                     return x.path < y.path;
                   });
  // Each was mapped on its own (as input 0); its key is its place in the job.
  for (size_t i = 0; i < ranks->size(); ++i) {
    std::string& key = (*ranks)[i].section.key;
    if (key.rfind("input_", 0) == 0) key = "input_" + std::to_string(i);
  }
}

Mapped MapTraces(const std::vector<std::string>& paths, const MapOptions& options,
                 ThreadPool& pool) {
  Mapped out;
  if (paths.empty()) return out;
  const int limit = options.max_ranks_in_memory > 0 ? options.max_ranks_in_memory
                                                    : std::max(1, pool.threads() / 2);
  const int concurrent = std::max(1, std::min<int>(limit, static_cast<int>(paths.size())));
  // Few traces at once: the cores go inside each (parse batches, analyses); the pool is shared,
  // so idle threads help whichever trace has work queued.
  MapOptions per_trace = options;
  const int cores = options.load.threads > 0 ? options.load.threads : pool.threads();
  per_trace.load.threads = std::max(1, cores / concurrent);
  if (paths.size() > 1) per_trace.load.progress = nullptr;

  std::vector<std::optional<Result<report::RankSummary>>> results(paths.size());
  std::vector<MapStats> stats(paths.size());
  std::vector<Status> sink_status(paths.size());
  std::atomic<size_t> next{0};
  size_t done = 0;
  std::mutex mutex;  // serialises the callbacks
  // `concurrent` workers, each mapping one trace after another: at most that many models alive,
  // and no task ever blocks on anything but the pool (base/thread_pool.h). The waiting thread
  // helps with whatever is queued, the parse batches of the traces being read included.
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < paths.size(); i = next.fetch_add(1)) {
      Result<report::RankSummary> r = MapTrace(paths[i], per_trace, pool, &stats[i]);
      std::lock_guard<std::mutex> lock(mutex);
      if (r.ok() && options.sink) {
        sink_status[i] = options.sink(i, std::move(*r));
        results[i].emplace(report::RankSummary{});
      } else {
        results[i].emplace(std::move(r));
      }
      ++done;
      if (options.ranks_done) options.ranks_done(done, paths.size());
    }
  };
  {
    TaskGroup group(pool);
    for (int w = 0; w < concurrent; ++w) group.Run(worker);
    group.Wait();
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    out.stats.Add(stats[i]);
    if (!results[i]->ok())
      out.failures.push_back(results[i]->status());
    else if (!sink_status[i].ok())
      out.failures.push_back(sink_status[i]);
    else if (!options.sink)
      out.ranks.push_back(std::move(results[i]->value()));
  }
  SortSummaries(&out.ranks);
  return out;
}

Result<Mapped> ReadSummaries(const std::vector<std::string>& paths, const MapOptions& options,
                             ThreadPool& pool, const TraceMapper& map_traces) {
  ingest::FolderInputs inputs;
  for (const std::string& p : paths) GPUSCOPE_RETURN_IF_ERROR(Classify(p, &inputs));

  // Summary files: small, read on the pool.
  std::vector<std::optional<Result<std::vector<report::RankSummary>>>> read(
      inputs.summaries.size());
  {
    TaskGroup group(pool);
    for (size_t i = 0; i < inputs.summaries.size(); ++i)
      group.Run([&, i] { read[i].emplace(store::ReadSummaryFile(inputs.summaries[i])); });
    group.Wait();
  }
  MapOptions no_sink = options;
  no_sink.sink = nullptr;
  Mapped out;
  if (map_traces) {
    GPUSCOPE_TRY(mapped, map_traces(inputs.traces, no_sink, pool));
    out = std::move(*mapped);
  } else {
    out = MapTraces(inputs.traces, no_sink, pool);
  }
  std::vector<Status> failures = std::move(inputs.skipped);
  for (auto& r : read) {
    if (!r->ok()) {
      failures.push_back(r->status());
      continue;
    }
    for (report::RankSummary& s : r->value()) out.ranks.push_back(std::move(s));
  }
  // Summary failures first (in file order), then the traces'.
  failures.insert(failures.end(), out.failures.begin(), out.failures.end());
  out.failures = std::move(failures);
  const size_t inputs_total = inputs.summaries.size() + inputs.traces.size();
  if (out.ranks.empty()) {
    if (out.failures.size() == 1) return out.failures.front();
    if (out.failures.empty())
      return Status::Error(StatusCode::kInvalidInput,
                           (paths.size() == 1 ? paths.front() : std::string("the inputs")) +
                               ": the summaries hold no ranks (hint: map the traces with "
                               "`gpuscope map TRACE... -o DIR`)");
    return Status::Error(StatusCode::kInvalidInput,
                         (paths.size() == 1 ? paths.front() + ": none" : std::string("none")) +
                             " of the " + std::to_string(inputs_total) +
                             (inputs.summaries.empty() ? " trace files" : " inputs") +
                             " could be read; first error: " + out.failures.front().message());
  }
  SortSummaries(&out.ranks);
  return out;
}

}  // namespace gpuscope::job
