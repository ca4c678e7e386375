// Lines of a text input (nvidia-smi logs, gpuscope recordings) read from a ByteSource in 1 MiB
// chunks: the text is never held whole, and one line may not exceed a cap (kMaxElementBytes by
// default), so memory stays bounded whatever the input (a gzip bomb of one endless line fails
// after the cap, at once, naming where the line starts).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/status.h"
#include "io/byte_source.h"

namespace gpuscope::ingest {

// "64 MiB", "64 KiB", "100 bytes": a cap in messages.
std::string ByteSize(size_t bytes);

class LineReader {
 public:
  LineReader(io::ByteSource& source, std::string name, size_t max_line_bytes);

  // The next line, without its "\n" (or "\r\n"); the view is valid until the next call. Returns
  // false at the end of the input; an error for a read failure or a line longer than the cap.
  Result<bool> Next(std::string_view* line);

  uint64_t line_number() const { return line_number_; }  // 1-based, of the last line read
  uint64_t line_offset() const { return line_offset_; }  // byte offset where it starts
  // False when the last line returned ended without "\n": the input stopped mid-line (a killed
  // writer, a full disk) or the writer left the newline out.
  bool line_terminated() const { return terminated_; }

 private:
  io::ByteSource& source_;
  std::string name_;
  size_t max_line_bytes_;
  // Not a std::vector: growing one zero-fills it, which makes every page of a long line's buffer
  // resident at once; fresh pages of new char[] cost memory only when a read touches them.
  std::unique_ptr<char[]> buf_;
  size_t capacity_ = 0;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
  bool eof_ = false;
  uint64_t consumed_ = 0;  // stream offset of buf_[0]
  uint64_t line_number_ = 0;
  uint64_t line_offset_ = 0;
  bool terminated_ = true;
};

}  // namespace gpuscope::ingest
