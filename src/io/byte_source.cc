#include "io/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "io/inflate.h"

namespace gpuscope::io {

namespace {

class FileSource : public ByteSource {
 public:
  // `path`: where it was opened from, to open it again; empty for standard input. `st`: the
  // fd's fstat, which the opener has already made.
  FileSource(int fd, bool owns_fd, std::string path, std::string name, const struct stat& st)
      : fd_(fd),
        owns_fd_(owns_fd),
        path_(std::move(path)),
        name_(std::move(name)),
        size_(S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : -1),
        mtime_(st.st_mtim) {
#ifdef POSIX_FADV_SEQUENTIAL
    if (size_ >= 0) posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  }
  ~FileSource() override {
    if (owns_fd_) close(fd_);
  }
  Result<size_t> Read(char* dst, size_t capacity) override {
    while (true) {
      const ssize_t n = ::read(fd_, dst, capacity);
      if (n >= 0) {
        offset_ += static_cast<uint64_t>(n);
        return static_cast<size_t>(n);
      }
      if (errno == EINTR) continue;
      return Status::Error(
          StatusCode::kIoError,
          name_ + ": read failed at byte " + std::to_string(offset_) + ": " + std::strerror(errno));
    }
  }
  uint64_t raw_offset() const override { return offset_; }
  int64_t file_size() const override { return size_; }
  bool CanReopen() const override { return !path_.empty() && size_ >= 0; }
  std::unique_ptr<ByteSource> Reopen() const override {
    if (!CanReopen()) return nullptr;
    const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat st;
    // The same file as read the first time, as far as its size and modification time tell.
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != size_ ||
        st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec) {
      close(fd);
      return nullptr;
    }
    return std::make_unique<FileSource>(fd, /*owns_fd=*/true, path_, name_, st);
  }

 private:
  int fd_;
  bool owns_fd_;
  std::string path_;
  std::string name_;
  int64_t size_;
  struct timespec mtime_;
  uint64_t offset_ = 0;
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
  int64_t file_size() const override { return static_cast<int64_t>(bytes_.size()); }
  bool CanReopen() const override { return true; }
  std::unique_ptr<ByteSource> Reopen() const override {
    return std::make_unique<MemorySource>(bytes_);
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

class PrefixSource : public ByteSource {
 public:
  PrefixSource(std::string prefix, std::unique_ptr<ByteSource> rest)
      : prefix_(std::move(prefix)), rest_(std::move(rest)) {}
  Result<size_t> Read(char* dst, size_t capacity) override {
    if (pos_ < prefix_.size()) {
      const size_t n = std::min(capacity, prefix_.size() - pos_);
      std::memcpy(dst, prefix_.data() + pos_, n);
      pos_ += n;
      if (pos_ == prefix_.size()) std::string().swap(prefix_), pos_ = SIZE_MAX;
      return n;
    }
    return rest_->Read(dst, capacity);
  }
  uint64_t raw_offset() const override { return rest_->raw_offset(); }
  bool is_gzip() const override { return rest_->is_gzip(); }
  const char* backend() const override { return rest_->backend(); }
  int64_t file_size() const override { return rest_->file_size(); }
  // The prefix was read from the start of `rest`, which reopens from its first byte.
  bool CanReopen() const override { return rest_->CanReopen(); }
  std::unique_ptr<ByteSource> Reopen() const override { return rest_->Reopen(); }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  std::unique_ptr<ByteSource> rest_;
};

bool LooksGzip(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
         static_cast<unsigned char>(head[1]) == 0x8b;
}

const char* FileTypeName(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a file gpuscope can read";
}

// Regular files, pipes and sockets have an end; devices (/dev/zero, /dev/urandom, a terminal)
// may not, and a directory is read with LoadInputs.
bool Readable(mode_t mode) { return S_ISREG(mode) || S_ISFIFO(mode) || S_ISSOCK(mode); }

Status NotReadable(const std::string& name, mode_t mode, bool is_stdin) {
  if (is_stdin && S_ISCHR(mode) && isatty(STDIN_FILENO)) {
    return Status::Error(StatusCode::kInvalidInput,
                         name +
                             ": standard input is a terminal, not a file (hint: pipe a trace "
                             "in, e.g. `zcat trace.json.gz | gpuscope analyze -`)");
  }
  if (S_ISDIR(mode)) {
    return Status::Error(StatusCode::kInvalidInput, name + ": is a directory, expected a file");
  }
  return Status::Error(StatusCode::kInvalidInput,
                       name + ": not a regular file: " + FileTypeName(mode) +
                           " (hint: gpuscope reads a file, a pipe, or `-` for standard input; "
                           "a device such as /dev/zero has no end)");
}

}  // namespace

std::string DisplayName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

int64_t FileSize(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_size);
}

Result<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path,
                                                   InflateBackend backend) {
  const bool is_stdin = path == "-";
  const std::string name = DisplayName(path);
  int fd = STDIN_FILENO;
  struct stat st;
  if (!is_stdin) {
    // stat() first: a device is refused without opening it (opening some has side effects).
    if (stat(path.c_str(), &st) != 0) {
      const int err = errno;
      return Status::Error(
          err == ENOENT ? StatusCode::kNotFound : StatusCode::kInvalidInput,
          name + ": cannot open: " + std::strerror(err) +
              (err == ELOOP
                   ? " (hint: the symbolic link leads back to itself; check `readlink -f " + path +
                         "`)"
                   : " (hint: check the path; gpuscope takes a trace file or a folder "
                     "of them)"));
    }
    if (!Readable(st.st_mode)) return NotReadable(name, st.st_mode, false);
    // A named FIFO blocks here until a writer opens it, as `cat` would.
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return Status::Error(StatusCode::kNotFound, name + ": cannot open: " + std::strerror(errno));
    }
  }
  if (fstat(fd, &st) != 0 || !Readable(st.st_mode)) {
    const mode_t mode = st.st_mode;
    if (!is_stdin) close(fd);
    return NotReadable(name, mode, is_stdin);
  }
  std::unique_ptr<ByteSource> file =
      std::make_unique<FileSource>(fd, /*owns_fd=*/!is_stdin, is_stdin ? "" : path, name, st);
  GPUSCOPE_TRY(head, ReadHead(*file, 2));
  const bool gzip = LooksGzip(*head);
  file = WithPrefix(std::move(*head), std::move(file));
  if (gzip) return MakeGzipSource(std::move(file), name, backend);
  return file;
}

std::unique_ptr<ByteSource> MemoryByteSource(std::string_view bytes, std::string name,
                                             InflateBackend backend) {
  auto mem = std::make_unique<MemorySource>(bytes);
  if (LooksGzip(bytes)) return MakeGzipSource(std::move(mem), std::move(name), backend);
  return mem;
}

std::unique_ptr<ByteSource> WithPrefix(std::string prefix, std::unique_ptr<ByteSource> rest) {
  if (prefix.empty()) return rest;
  return std::make_unique<PrefixSource>(std::move(prefix), std::move(rest));
}

Result<std::string> ReadHead(ByteSource& source, size_t max_bytes) {
  std::string head(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    GPUSCOPE_TRY(r, source.Read(head.data() + got, max_bytes - got));
    if (*r == 0) break;
    got += *r;
  }
  head.resize(got);
  return head;
}

Status DrainForIntegrity(ByteSource& source) {
  if (!source.is_gzip()) return Status::Ok();
  std::vector<char> sink(size_t{1} << 20);
  while (true) {
    GPUSCOPE_TRY(r, source.Read(sink.data(), sink.size()));
    if (*r == 0) return Status::Ok();
  }
}

}  // namespace gpuscope::io
