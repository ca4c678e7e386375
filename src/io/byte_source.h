// Byte sources: a file (plain or gzip, detected from the first bytes, not the name), a pipe or
// standard input, or memory, read sequentially in chunks. Nothing here holds the whole input, and
// an input is read once (a pipe cannot be read twice); a regular file or bytes in memory can be
// read again from the start (Reopen), which a reader uses only where a second pass is rare and
// saves memory on every first one.
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
  // Size of the underlying file in bytes; -1 for a pipe, a socket or standard input.
  virtual int64_t file_size() const { return -1; }
  // Whether Reopen can give the same content again: a regular file opened by its path, or memory.
  virtual bool CanReopen() const { return false; }
  // A new source over the same content from its first byte (decoded the same way); null if it
  // cannot be read again, or if the file's size or modification time changed since it was opened.
  virtual std::unique_ptr<ByteSource> Reopen() const { return nullptr; }
};

// The name an input is called by in messages: "-" (standard input) is "<stdin>".
std::string DisplayName(const std::string& path);

// Opens `path` once; "-" is standard input. Regular files, pipes (`<(zcat t.json.gz)`, a named
// FIFO, /dev/stdin fed by a pipe) and sockets are accepted; directories and devices (/dev/zero, a
// terminal) are refused with a message saying what they are. If the first two bytes are the gzip
// magic (1f 8b), content is inflated on the fly. The bytes read to decide are handed out again.
Result<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path,
                                                   InflateBackend backend = InflateBackend::kAuto);

// A source over bytes in memory (tests, fuzzing); also sniffs gzip.
std::unique_ptr<ByteSource> MemoryByteSource(std::string_view bytes, std::string name,
                                             InflateBackend backend = InflateBackend::kAuto);

// A source that hands out `prefix` (bytes already read from `rest`, e.g. to sniff the format)
// and then the rest of `rest`: how one stream is sniffed and then read from its start.
std::unique_ptr<ByteSource> WithPrefix(std::string prefix, std::unique_ptr<ByteSource> rest);

// Reads up to `max_bytes` from `source` (fewer only at end of input), e.g. to sniff a format.
Result<std::string> ReadHead(ByteSource& source, size_t max_bytes);

// Reads `source` to its end without keeping anything: after a reader gave up on malformed content,
// this tells whether the gzip stream beneath was damaged (its CRC-32 is checked at the end).
// Returns the gzip error, if any.
Status DrainForIntegrity(ByteSource& source);

bool IsalAvailable();

// Size of a file in bytes, or -1.
int64_t FileSize(const std::string& path);

}  // namespace gpuscope::io
