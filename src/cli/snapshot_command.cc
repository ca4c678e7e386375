#include "cli/snapshot_command.h"

#include "advise/snapshot_rules.h"
#include "analyze/memory_snapshot.h"
#include "report/snapshot_document.h"

namespace gpuscope::cli {

render::Document SnapshotDocument(const snapshot::Snapshot& snap) {
  const analyze::SnapshotAnalysis analysis = analyze::AnalyzeSnapshot(snap);
  return report::BuildSnapshotDocument(snap, analysis, advise::AdviseSnapshot(analysis));
}

int EmitSnapshot(const snapshot::Snapshot& snap, const OutputArgs& out) {
  return Emit(SnapshotDocument(snap), out);
}

}  // namespace gpuscope::cli
