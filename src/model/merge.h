#pragma once

#include "gpuscope/model.h"

namespace gpuscope::model {

// Appends every table of `src` to `dst`, re-interning src's strings into dst's pool.
// Returns the StringId remap (src id → dst id) for callers that hold src ids elsewhere.
std::vector<StringId> AppendTrace(Trace* dst, Trace&& src);

}  // namespace gpuscope::model
