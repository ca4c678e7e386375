// Kineto / Chrome-trace JSON reader: bytes → Trace, streaming, in bounded memory, on several cores.
//
//   producer (calling thread): read/inflate 1 MiB → Scanner finds event boundaries → cut a batch of
//                              ~batch_bytes at an event boundary → a task on the thread pool (at
//                              most 2 × threads + 1 batches in flight; the producer parses queued
//                              batches itself while it waits for room)
//   tasks (pool threads):      simdjson parse of the batch → batch-local tables
//   merge (in batch order):    append batch tables to the Trace, re-interning strings
// Then: B/E pairing, header members (deviceProperties, distributedInfo, ...), launch linking.
// Flow events are counted, not stored, where `source` can be read again; it is, if linking needs
// them (LoadOptions::keep_flows).
#pragma once

#include <string>

#include "gpuscope/ingest.h"
#include "io/byte_source.h"

namespace gpuscope::ingest {

Result<Trace> ReadKinetoJson(io::ByteSource& source, const std::string& name, uint64_t file_bytes,
                             const LoadOptions& options);

}  // namespace gpuscope::ingest
