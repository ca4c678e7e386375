// Streaming gzip inflate over another ByteSource: isa-l when built with it (≈ 2-3× zlib's speed),
// zlib otherwise. Concatenated gzip members (as written by pigz or `cat a.gz b.gz`) are read in
// turn.
#pragma once

#include <memory>
#include <string>

#include "io/byte_source.h"

namespace gpuscope::io {

std::unique_ptr<ByteSource> MakeGzipSource(std::unique_ptr<ByteSource> compressed, std::string name,
                                           InflateBackend backend);

}  // namespace gpuscope::io
