#include "cli/diff_command.h"

#include <unistd.h>

#include <cstdio>

#include "base/thread_pool.h"
#include "cli/output.h"
#include "diff/diff.h"
#include "gpuscope/ingest.h"
#include "report/report.h"

namespace gpuscope::cli {

namespace {


}  // namespace

CLI::App* AddDiffCommand(CLI::App& app, DiffCliOptions* o) {
  auto* cmd = app.add_subcommand(
      "diff",
      "Compare two runs (BEFORE and AFTER: trace files or folders of rank traces, ranks matched\n"
      "by rank id): step time and its spread, breakdowns, kernels and ops added/removed/slower/\n"
      "faster, findings resolved and new, peak memory. Definitions: docs/diff.md.");
  cmd->add_option("BEFORE", o->before, "Trace file or folder of the run before the change")
      ->required();
  cmd->add_option("AFTER", o->after, "Trace file or folder of the run after the change")
      ->required();
  AddOutputFlags(cmd, &o->out);
  cmd->add_option("-j,--threads", o->threads, "Threads (default: all cores)")
      ->check(CLI::Range(0, 256));
  cmd->add_option("--names", o->names,
                  "Match kernels by short name (templates and arguments stripped; default) or "
                  "raw name")
      ->check(CLI::IsMember({"short", "raw"}));
  cmd->add_flag("--hta", o->hta,
                "Kernels and ops as HTA's trace diff counts them: first iteration only, raw "
                "names (unless --names short)");
  return cmd;
}

int RunDiffCommand(const DiffCliOptions& o) {
  ThreadPool pool(o.threads);  // one pool for both sides' loading and analyses
  LoadOptions lo;
  lo.threads = o.threads;
  lo.pool = &pool;
  // One side after the other: each load already uses every core, and running both at once
  // would only add the two peaks of parse buffers together.
  auto before = LoadInputs(o.before, lo);
  if (!before.ok()) {
    PrintError("before: " + before.status().message());
    return ExitCodeFor(before.status());
  }
  auto after = LoadInputs(o.after, lo);
  if (!after.ok()) {
    PrintError("after: " + after.status().message());
    return ExitCodeFor(after.status());
  }
  const report::Report rb = report::BuildReport(before->traces, before->failures, pool);
  const report::Report ra = report::BuildReport(after->traces, after->failures, pool);
  diff::DiffOptions options;
  if (o.hta) {
    options.selection = diff::Selection::kHtaFirstIteration;
    options.names = diff::NameMode::kRaw;
  }
  // An explicit --names wins over --hta's raw names.
  if (o.names == "raw") options.names = diff::NameMode::kRaw;
  if (o.names == "short") options.names = diff::NameMode::kShort;
  diff::DiffReport d = diff::Diff(rb, ra, options);
  d.before_label = o.before;
  d.after_label = o.after;
  if (const int rc = Emit(diff::BuildDocument(d), o.out); rc != 0) return rc;
  bool failed = false;
  for (const Status& f : before->failures) PrintError("before: " + f.message()), failed = true;
  for (const Status& f : after->failures) PrintError("after: " + f.message()), failed = true;
  return failed ? 2 : 0;
}

}  // namespace gpuscope::cli
