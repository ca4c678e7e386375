// `gpuscope diff A.pickle B.pickle`: two CUDA memory snapshots compared (docs/memory-snapshot.md,
// "Comparing two snapshots"): reserved and peak allocated, what is live at the peak by category and
// by allocation stack (matched by their frames), and the findings resolved and new. Pure.
#pragma once

#include <string>

#include "analyze/memory_snapshot.h"
#include "model/memory_snapshot.h"
#include "render/document.h"

namespace gpuscope::diff {

struct SnapshotSide {
  const snapshot::Snapshot& snap;
  const analyze::SnapshotAnalysis& analysis;
  std::string label;
};

// A "gpuscope.diff" document with one section, `memory_snapshot_diff`.
render::Document BuildSnapshotDiffDocument(const SnapshotSide& before, const SnapshotSide& after);

}  // namespace gpuscope::diff
