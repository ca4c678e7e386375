#include "api/diff.h"

#include "base/thread_pool.h"
#include "diff/diff.h"
#include "gpuscope/ingest.h"
#include "report/report.h"

namespace gpuscope::api {

namespace {
Status Side(const char* side, const Status& s) {
  return Status::Error(s.code(), std::string(side) + ": " + s.message());
}
}  // namespace

Result<Diffed> DiffInputs(const std::string& before_path, const std::string& after_path,
                          const DiffOptions& o) {
  if (!o.names.empty() && o.names != "short" && o.names != "raw")
    return Status::Error(StatusCode::kUsage, "--names: " + o.names + " not in {short, raw}");
  ThreadPool pool(o.threads);  // one pool for both sides' loading and analyses
  LoadOptions lo;
  lo.threads = o.threads;
  lo.pool = &pool;
  // One side after the other: each load already uses every core.
  auto before = LoadInputs(before_path, lo);
  if (!before.ok()) return Side("before", before.status());
  auto after = LoadInputs(after_path, lo);
  if (!after.ok()) return Side("after", after.status());
  const report::Report rb = report::BuildReport(before->traces, before->failures, pool);
  const report::Report ra = report::BuildReport(after->traces, after->failures, pool);
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
  for (const Status& f : before->failures) out.failures.push_back(Side("before", f));
  for (const Status& f : after->failures) out.failures.push_back(Side("after", f));
  return out;
}

}  // namespace gpuscope::api
