// Byte sources: a file (plain or gzip, detected from the first bytes, not the name) or memory,
// read sequentially in chunks. Nothing here holds the whole input.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gpuscope/status.h"

namespace gpuscope::io {

enum class InflateBackend : uint8_t { kAuto, kZlib, kIsal };

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `capacity` bytes of content; returns 0 at end of input.
  virtual Result<size_t> Read(char* dst, size_t capacity) = 0;
  // Bytes consumed from the underlying file so far (compressed bytes for gzip).
  virtual uint64_t raw_offset() const = 0;
  virtual bool is_gzip() const { return false; }
  virtual const char* backend() const { return "plain"; }
};

// Opens `path`; if its first two bytes are the gzip magic (1f 8b), content is inflated on the fly.
Result<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path,
                                                   InflateBackend backend = InflateBackend::kAuto);

// A source over bytes in memory (tests, fuzzing); also sniffs gzip.
std::unique_ptr<ByteSource> MemoryByteSource(std::string_view bytes, std::string name,
                                             InflateBackend backend = InflateBackend::kAuto);

bool IsalAvailable();

// Size of a file in bytes, or -1.
int64_t FileSize(const std::string& path);

}  // namespace gpuscope::io
