#include "cli/diff_command.h"

#include <unistd.h>

#include <cstdio>

#include <fstream>

#include "advise/snapshot_rules.h"
#include "analyze/memory_snapshot.h"
#include "api/diff.h"
#include "base/thread_pool.h"
#include "diff/snapshot_diff.h"
#include "ingest/registry.h"
#include "ingest/torch_snapshot/snapshot_reader.h"
#include "cli/output.h"

namespace gpuscope::cli {

namespace {

// Whether `path` is a file that starts like a pickle (a memory snapshot); stdin and folders are not
// looked at (they are read once, as traces).
bool IsPickleFile(const std::string& path) {
  if (path == "-") return false;
  std::ifstream in(path, std::ios::binary);
  char head[2] = {0, 0};
  if (!in.read(head, 2)) return false;
  return ingest::LooksLikePickle(std::string_view(head, 2));
}

// Two CUDA memory snapshots (docs/memory-snapshot.md).
int DiffSnapshots(const DiffCliOptions& o) {
  std::optional<snapshot::Snapshot> snaps[2];
  const std::string* paths[2] = {&o.before, &o.after};
  for (int k = 0; k < 2; ++k) {
    auto in = ingest::ReadInput(*paths[k]);
    const char* side = k == 0 ? "before: " : "after: ";
    if (!in.ok()) {
      PrintError(side + in.status().message());
      return ExitCodeFor(in.status());
    }
    if (in->kind != ingest::ModelKind::kSnapshot) {
      PrintError(std::string(side) + *paths[k] + ": is a " + ingest::FormatName(in->format) +
                 ", not a memory snapshot (hint: diff compares two traces or two snapshots)");
      return kExitBadInput;
    }
    snaps[k] = std::move(*in->snapshot);
  }
  const analyze::SnapshotAnalysis a = analyze::AnalyzeSnapshot(*snaps[0]);
  const analyze::SnapshotAnalysis b = analyze::AnalyzeSnapshot(*snaps[1]);
  return Emit(diff::BuildSnapshotDiffDocument({*snaps[0], a, o.before}, {*snaps[1], b, o.after}),
              o.out);
}

}  // namespace

CLI::App* AddDiffCommand(CLI::App& app, DiffCliOptions* o) {
  auto* cmd = app.add_subcommand(
      "diff",
      "Compare two runs (BEFORE and AFTER: trace files or folders of rank traces, ranks matched\n"
      "by rank id): step time and its spread, breakdowns, kernels and ops added/removed/slower/\n"
      "faster, findings resolved and new, peak memory. Definitions: docs/diff.md. Two CUDA memory\n"
      "snapshots (torch.cuda.memory._dump_snapshot pickles) are compared too: peak, categories and\n"
      "allocation stacks at the peak (docs/memory-snapshot.md).");
  cmd->add_option("BEFORE", o->before, "Trace file or folder of the run before the change (or a memory snapshot)")
      ->required();
  cmd->add_option("AFTER", o->after, "Trace file or folder of the run after the change (or a memory snapshot)")
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
  if (IsPickleFile(o.before) || IsPickleFile(o.after)) return DiffSnapshots(o);
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
