#include "cli/snapshot_command.h"

#include "report/snapshot_document.h"

namespace gpuscope::cli {

int EmitSnapshot(const snapshot::Snapshot& snap, const OutputArgs& out) {
  return Emit(report::SnapshotDocument(snap), out);
}

}  // namespace gpuscope::cli
