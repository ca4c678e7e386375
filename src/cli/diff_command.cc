#include "cli/diff_command.h"

#include <cstdio>

#include "api/diff.h"
#include "cli/options.h"
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
  AddOptions(cmd, api::DiffOptionTable(), &o->diff);
  return cmd;
}

int RunDiffCommand(const DiffCliOptions& o) {
  auto diffed = api::DiffInputs(o.before, o.after, o.diff);
  if (!diffed.ok()) {
    PrintError(diffed.status());
    return ExitCodeFor(diffed.status());
  }
  if (const int rc = Emit(diffed->document, o.out); rc != 0) return rc;
  for (const Status& f : diffed->failures) PrintError(f);
  return diffed->failures.empty() ? 0 : 2;
}

}  // namespace gpuscope::cli
