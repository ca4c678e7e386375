#pragma once

#include "gpuscope/model.h"

namespace gpuscope::model {

// Appends every table of `src` to `dst`, re-interning src's strings into dst's pool.
// Returns the StringId remap (src id → dst id) for callers that hold src ids elsewhere.
std::vector<StringId> AppendTrace(Trace* dst, Trace&& src);

// Reserves every table for `factor` times its current rows. Reserved but untouched memory is not
// resident, so over-estimating costs address space, not RSS; it saves the reallocation copies and
// the transient old+new buffers of geometric growth.
void ReserveTables(Trace* trace, double factor);

}  // namespace gpuscope::model
