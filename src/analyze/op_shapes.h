// The ATen ops of a trace recorded with record_shapes=True, grouped by (name, input dims, input
// types): how often each shape of each op ran and the host time it took. The input of the per-op
// cost model (issue "every op priced"); on its own, the table TraceLens's per-op sheets give.
//
// Definitions:
//  * rows: cpu_op events (CpuKind::kCpuOp) with "Input Dims", over the whole trace (every step,
//    warm-up included: the shapes of a step do not change from one step to the next);
//  * host time: the op's duration on its thread (inclusive of the ops it calls), in ns;
//  * groups are sorted by total host time, then count, then name (ties are rare but must be
//    stable for the report).
#pragma once

#include <cstdint>
#include <vector>

#include "gpuscope/model.h"

namespace gpuscope::analyze {

struct OpShapeGroup {
  StringId name = kEmptyString;
  StringId input_dims = kEmptyString;   // JSON text as recorded, e.g. [[8, 512], [512, 4]]
  StringId input_types = kEmptyString;  // e.g. ["float", "float"]; kEmptyString when not recorded
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t max_ns = 0;
};

struct OpShapes {
  bool recorded = false;       // the trace has "Input Dims" on at least one op
  uint64_t ops = 0;            // cpu_op rows
  uint64_t ops_with_dims = 0;  // … of which carry input dims
  std::vector<OpShapeGroup> groups;
};

OpShapes AnalyzeOpShapes(const Trace& t);

}  // namespace gpuscope::analyze
