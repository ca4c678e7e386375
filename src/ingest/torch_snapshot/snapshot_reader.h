// PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot, a pickle) → snapshot::Snapshot.
// The pickle is read by the safe plain-data reader (pickle.h): nothing in it is ever executed.
#pragma once

#include <string>
#include <string_view>

#include "gpuscope/ingest.h"
#include "gpuscope/status.h"
#include "io/byte_source.h"
#include "model/memory_snapshot.h"

namespace gpuscope::ingest {

// A whole snapshot file is read into memory (they are MBs to a few hundred MB); larger is refused.
inline constexpr uint64_t kMaxSnapshotBytes = uint64_t{4} << 30;

// Whether the first bytes are a pickle (PROTO 2–5, or a FRAME after it).
bool LooksLikePickle(std::string_view head);

// Reads the whole stream. `max_string_bytes` caps one string of the pickle.
Result<snapshot::Snapshot> ReadTorchSnapshot(io::ByteSource& source, const std::string& name,
                                             uint64_t file_bytes, size_t max_string_bytes);
// The same over bytes in memory.
Result<snapshot::Snapshot> ParseTorchSnapshot(std::string_view bytes, const std::string& name,
                                              size_t max_string_bytes = kMaxElementBytes);

}  // namespace gpuscope::ingest
