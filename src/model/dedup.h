// Removal of identical duplicate events, once at import, so that no analysis sees an event twice.
//
// Two rows of the GPU, runtime or CPU table are identical duplicates when every column the model
// keeps is equal (every column the table's Columns() lists): kind, name, start, duration, process
// and thread (device and stream for GPU events), and every argument read (correlation, External
// id, launch geometry, sizes, collective metadata, record_shapes' inputs, ...). A profiler writes
// each activity once (correlation and External ids are unique per launch and per op), so identical
// rows come from a trace concatenated with itself or a tool that re-emitted its events. The first
// row (in file order) is kept.
#pragma once

#include <cstdint>

#include "gpuscope/model.h"

namespace gpuscope {
class ThreadPool;  // base/thread_pool.h
}

namespace gpuscope::model {

struct DuplicateCounts {
  uint64_t gpu = 0;      // GpuActivityTable rows removed
  uint64_t runtime = 0;  // RuntimeCallTable rows removed
  uint64_t cpu = 0;      // CpuOpTable rows removed
};

// Removes identical duplicate rows from trace->gpu (and their CollectiveInfo), trace->runtime and
// trace->cpu, keeping row order. Must run before linking (GpuActivityTable::launch is not
// remapped). Time O(rows); extra memory about 7 bytes per row of a table (32 bits of hash, a
// filter of two bits per hash slot with 8 slots per row, then an exact table for the ~12 % of rows
// that share a slot), freed on return.
// With a pool of ≥ 2 threads the three tables are done as parallel tasks.
DuplicateCounts RemoveDuplicateEvents(Trace* trace, ThreadPool* pool = nullptr);

}  // namespace gpuscope::model
