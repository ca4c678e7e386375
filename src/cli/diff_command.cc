#include "cli/diff_command.h"

#include <cstdio>

#include "api/diff.h"
#include "cli/output.h"

namespace gpuscope::cli {

CLI::App* AddDiffCommand(CLI::App& app, DiffCliOptions* o) {
  auto* cmd = app.add_subcommand(
      "diff",
      "Compare two runs (BEFORE and AFTER: trace files or folders of rank traces, ranks matched\n"
      "by rank id): step time and its spread, breakdowns, kernels and ops added/removed/slower/\n"
      "faster, findings resolved and new, peak memory. Definitions: docs/diff.md. Two CUDA memory\n"
      "snapshots (torch.cuda.memory._dump_snapshot pickles) are compared too: peak, categories "
      "and\n"
      "allocation stacks at the peak (docs/memory-snapshot.md).");
  cmd->add_option("BEFORE", o->before,
                  "Trace file or folder of the run before the change (or a memory snapshot)")
      ->required();
  cmd->add_option("AFTER", o->after,
                  "Trace file or folder of the run after the change (or a memory snapshot)")
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
  api::DiffOptions options;
  options.threads = o.threads;
  options.hta = o.hta;
  options.names = o.names;
  auto diffed = api::DiffInputs(o.before, o.after, options);
  if (!diffed.ok()) {
    PrintError(diffed.status());
    return ExitCodeFor(diffed.status());
  }
  if (const int rc = Emit(diffed->document, o.out); rc != 0) return rc;
  for (const Status& f : diffed->failures) PrintError(f);
  return diffed->failures.empty() ? 0 : 2;
}

}  // namespace gpuscope::cli
