#include "ingest/common/line_reader.h"

#include <algorithm>
#include <cstring>

namespace gpuscope::ingest {

namespace {
constexpr size_t kChunk = size_t{1} << 20;  // bytes per read
}  // namespace

std::string ByteSize(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

LineReader::LineReader(io::ByteSource& source, std::string name, size_t max_line_bytes)
    : source_(source),
      name_(std::move(name)),
      max_line_bytes_(max_line_bytes),
      buf_(new char[kChunk]),
      capacity_(kChunk) {}

Result<bool> LineReader::Next(std::string_view* line) {
  size_t scanned = begin_;  // bytes before this hold no '\n'
  while (true) {
    const void* nl = std::memchr(buf_.get() + scanned, '\n', end_ - scanned);
    if (nl != nullptr || (eof_ && end_ > begin_)) {
      const size_t stop =
          nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf_.get()) : end_;
      size_t len = stop - begin_;
      if (len > max_line_bytes_) break;  // reported below
      terminated_ = nl != nullptr;
      line_offset_ = consumed_ + begin_;
      ++line_number_;
      if (len > 0 && buf_[begin_ + len - 1] == '\r') --len;
      *line = std::string_view(buf_.get() + begin_, len);
      begin_ = nl ? stop + 1 : end_;
      return true;
    }
    if (eof_) return false;
    if (end_ - begin_ > max_line_bytes_) break;
    // Room for the next chunk: move the partial line to the front, grow only for a long line.
    scanned = end_;
    if (begin_ > 0) {
      std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
      consumed_ += begin_;
      scanned -= begin_;
      end_ -= begin_;
      begin_ = 0;
    }
    if (capacity_ - end_ < kChunk) {
      // Double, but never past the cap plus two reads (one long line costs at most that), and
      // go straight there when one more doubling would pass it: the old and new buffers coexist
      // while copying, so the last step should start from a small one.
      const size_t limit = max_line_bytes_ + 2 * kChunk;
      size_t size = std::min(capacity_ * 2, limit);
      if (size * 2 > limit) size = limit;
      size = std::max(size, end_ + kChunk);
      std::unique_ptr<char[]> bigger(new char[size]);
      std::memcpy(bigger.get(), buf_.get(), end_);
      buf_ = std::move(bigger);
      capacity_ = size;
    }
    GPUSCOPE_TRY(got, source_.Read(buf_.get() + end_, kChunk));
    if (*got == 0) eof_ = true;
    end_ += *got;
  }
  return Status::InputError(
      name_, consumed_ + begin_,
      "line " + std::to_string(line_number_ + 1) + " (starting here) runs over " +
          ByteSize(max_line_bytes_) + " without a newline",
      "this is not a text log or recording line by line; a line of that size is no log line");
}

}  // namespace gpuscope::ingest
