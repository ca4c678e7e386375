#include "api/diff.h"

#include <optional>

#include "analyze/memory_snapshot.h"
#include "base/thread_pool.h"
#include "diff/diff.h"
#include "diff/snapshot_diff.h"
#include "gpuscope/ingest.h"
#include "ingest/inputs.h"
#include "ingest/registry.h"
#include "report/report.h"
#include "store/summary_file.h"

namespace gpuscope::api {

namespace {
Status Side(const char* side, const Status& s) {
  return Status::Error(s.code(), std::string(side) + ": " + s.message());
}
}  // namespace

namespace {

// One side, read once: a folder of ranks, a trace, or a memory snapshot. (A side read twice —
// sniffed, then read — would find a pipe or a FIFO empty the second time, or wait on it.)
struct SideInputs {
  LoadedInputs loaded;
  std::optional<snapshot::Snapshot> snapshot;
};

Result<SideInputs> LoadSide(const char* side, const std::string& path, const LoadOptions& lo) {
  SideInputs out;
  // A recording or a log is refused by name (the reader's "is a …, not a profiler trace").
  auto loaded = ingest::LoadInputs(path, lo, nullptr, &out.snapshot);
  if (!loaded.ok()) return Side(side, loaded.status());
  out.loaded = std::move(*loaded);
  // A folder's SQLite files that are no Nsight Systems export: analyze reads them as summaries
  // and names those it cannot read. diff compares traces, so each is named here, never dropped
  // silently: the summary reader's error, or why a good summary is left out.
  if (auto kind = ingest::ClassifyPath(path); kind.ok() && *kind == ingest::PathKind::kFolder) {
    ingest::FolderInputs listed;
    if (ingest::ListFolderInputs(path, &listed).ok())
      for (const std::string& summary : listed.summaries) {
        auto read = store::ReadSummaryFile(summary);
        out.loaded.failures.push_back(
            !read.ok()
                ? read.status()
                : Status::Error(StatusCode::kInvalidInput,
                                summary + ": a gpuscope summary; diff compares traces, so it is "
                                          "left out (hint: diff the traces it was mapped from)"));
      }
  }
  return out;
}

}  // namespace

const OptionTable<DiffOptions>& DiffOptionTable() {
  using O = DiffOptions;
  static const OptionTable<O> table = {
      ThreadsOption(&O::threads, "Threads (default: all cores)"),
      {"names",
       &O::names,
       "Match kernels by short name (templates and arguments stripped; default) or raw name",
       {"short", "raw"}},
      {"hta", &O::hta,
       "Kernels and ops as HTA's trace diff counts them: first iteration only, raw names (unless "
       "--names short)"},
  };
  return table;
}
Result<Diffed> DiffInputs(const std::string& before_path, const std::string& after_path,
                          const DiffOptions& o) {
  GPUSCOPE_RETURN_IF_ERROR(CheckOptions(DiffOptionTable(), o));
  ThreadPool pool(o.threads);  // one pool for both sides' loading and analyses
  LoadOptions lo;
  lo.threads = o.threads;
  lo.pool = &pool;
  // One side after the other: each load already uses every core.
  GPUSCOPE_TRY(before, LoadSide("before", before_path, lo));
  GPUSCOPE_TRY(after, LoadSide("after", after_path, lo));
  if (before->snapshot.has_value() != after->snapshot.has_value()) {
    const bool first = before->snapshot.has_value();
    return Status::Error(StatusCode::kInvalidInput,
                         std::string(first ? "after: " : "before: ") +
                             (first ? after_path : before_path) +
                             ": is a trace, not a memory snapshot (hint: diff compares two "
                             "traces or two snapshots)");
  }
  if (before->snapshot) {  // two CUDA memory snapshots (docs/memory-snapshot.md)
    const analyze::SnapshotAnalysis a = analyze::AnalyzeSnapshot(*before->snapshot);
    const analyze::SnapshotAnalysis b = analyze::AnalyzeSnapshot(*after->snapshot);
    Diffed out;
    out.document = diff::BuildSnapshotDiffDocument({*before->snapshot, a, before_path},
                                                   {*after->snapshot, b, after_path});
    return out;
  }
  LoadedInputs& bl = before->loaded;
  LoadedInputs& al = after->loaded;
  const report::Report rb = report::BuildReport(bl.traces, bl.failures, pool);
  const report::Report ra = report::BuildReport(al.traces, al.failures, pool);
  diff::DiffOptions options;
  if (o.hta) {
    options.selection = diff::Selection::kHtaFirstIteration;
    options.names = diff::NameMode::kRaw;
  }
  if (o.names == "raw") options.names = diff::NameMode::kRaw;
  if (o.names == "short") options.names = diff::NameMode::kShort;
  diff::DiffReport d = diff::Diff(rb, ra, options);
  d.before_label = before_path;
  d.after_label = after_path;
  Diffed out;
  out.document = diff::BuildDocument(d);
  for (const Status& f : bl.failures) out.failures.push_back(Side("before", f));
  for (const Status& f : al.failures) out.failures.push_back(Side("after", f));
  return out;
}

}  // namespace gpuscope::api
