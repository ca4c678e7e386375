// Launch ↔ GPU-activity links, resolved once at import.
//
// Primary key: args.correlation, shared by a runtime/driver call and every GPU activity it caused
// (one cudaGraphLaunch can cover thousands of kernels). Where a GPU activity has no correlation, an
// ac2g-style flow pair (s on the launch, f on the GPU event, same id) links them by exact
// (pid, tid, ts) of the flow's endpoints.
#pragma once

#include "gpuscope/model.h"

namespace gpuscope::ingest {

void LinkLaunches(Trace* trace);

}  // namespace gpuscope::ingest
