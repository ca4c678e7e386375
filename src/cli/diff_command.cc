#include "cli/diff_command.h"

#include <cstdio>

#include "api/diff.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/usage.h"

namespace gpuscope::cli {

CLI::App* AddDiffCommand(CLI::App& app, DiffCliOptions* o) {
  auto* cmd = AddCommand(app, "diff");
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
