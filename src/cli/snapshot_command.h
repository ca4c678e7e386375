// `gpuscope analyze SNAPSHOT.pickle`: a CUDA memory snapshot → analyses → rules → the
// "gpuscope.snapshot" document (docs/memory-snapshot.md).
#pragma once

#include "cli/output.h"
#include "model/memory_snapshot.h"
#include "render/document.h"

namespace gpuscope::cli {

int EmitSnapshot(const snapshot::Snapshot& snap, const OutputArgs& out);

}  // namespace gpuscope::cli
