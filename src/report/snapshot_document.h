// The document of `gpuscope analyze SNAPSHOT.pickle`: schema "gpuscope.snapshot", one section
// "memory_snapshot" (totals, findings, one sub-section per device: the peak, the state at the
// trace's start and at the snapshot, events per action, what is live at the peak by category and by
// stack, free blocks, failed allocations, the allocated timeline) and one "allocator_settings".
// docs/memory-snapshot.md defines every number.
#pragma once

#include <vector>

#include "analyze/memory_snapshot.h"
#include "model/memory_snapshot.h"
#include "render/document.h"

namespace gpuscope::report {

render::Document BuildSnapshotDocument(const snapshot::Snapshot& snap,
                                       const analyze::SnapshotAnalysis& analysis,
                                       const std::vector<render::Finding>& findings);

// The whole path: analyses, findings (advise/snapshot_rules.h) and the document.
render::Document SnapshotDocument(const snapshot::Snapshot& snap);

}  // namespace gpuscope::report
