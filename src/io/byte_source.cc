#include "io/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "io/inflate.h"

namespace gpuscope::io {

namespace {

class FileSource : public ByteSource {
 public:
  FileSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {
#ifdef POSIX_FADV_SEQUENTIAL
    posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  }
  ~FileSource() override { close(fd_); }
  Result<size_t> Read(char* dst, size_t capacity) override {
    if (!prefix_.empty()) {
      const size_t n = std::min(capacity, prefix_.size() - prefix_pos_);
      std::memcpy(dst, prefix_.data() + prefix_pos_, n);
      prefix_pos_ += n;
      if (prefix_pos_ == prefix_.size()) prefix_.clear();
      return n;
    }
    while (true) {
      const ssize_t n = ::read(fd_, dst, capacity);
      if (n >= 0) {
        offset_ += static_cast<uint64_t>(n);
        return static_cast<size_t>(n);
      }
      if (errno == EINTR) continue;
      return Status::Error(
          StatusCode::kIoError,
          path_ + ": read failed at byte " + std::to_string(offset_) + ": " + std::strerror(errno));
    }
  }
  uint64_t raw_offset() const override { return offset_; }
  // Bytes already read for sniffing are handed out again first.
  void Unread(std::string bytes) {
    prefix_ = std::move(bytes);
    prefix_pos_ = 0;
  }

 private:
  int fd_;
  std::string path_;
  uint64_t offset_ = 0;
  std::string prefix_;
  size_t prefix_pos_ = 0;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  Result<size_t> Read(char* dst, size_t capacity) override {
    const size_t n = std::min(capacity, bytes_.size() - pos_);
    std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  uint64_t raw_offset() const override { return pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

bool LooksGzip(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
         static_cast<unsigned char>(head[1]) == 0x8b;
}

}  // namespace

int64_t FileSize(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_size);
}

Result<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path,
                                                   InflateBackend backend) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Status::Error(
        StatusCode::kNotFound,
        path + ": cannot open: " + std::strerror(errno) +
            " (hint: check the path; gpuscope takes a trace file or a folder of them)");
  }
  if (S_ISDIR(st.st_mode)) {
    return Status::Error(StatusCode::kInvalidInput,
                         path + ": is a directory, expected a trace file");
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::Error(StatusCode::kNotFound, path + ": cannot open: " + std::strerror(errno));
  }
  auto file = std::make_unique<FileSource>(fd, path);
  char head[2];
  size_t got = 0;
  while (got < 2) {
    auto r = file->Read(head + got, 2 - got);
    if (!r.ok()) return r.status();
    if (*r == 0) break;
    got += *r;
  }
  file->Unread(std::string(head, got));
  if (LooksGzip(std::string_view(head, got))) {
    return MakeGzipSource(std::move(file), path, backend);
  }
  return std::unique_ptr<ByteSource>(std::move(file));
}

std::unique_ptr<ByteSource> MemoryByteSource(std::string_view bytes, std::string name,
                                             InflateBackend backend) {
  auto mem = std::make_unique<MemorySource>(bytes);
  if (LooksGzip(bytes)) return MakeGzipSource(std::move(mem), std::move(name), backend);
  return mem;
}

}  // namespace gpuscope::io
