#include "io/inflate.h"

#include <zlib.h>

#include <cstring>
#include <vector>

#ifdef GPUSCOPE_HAVE_ISAL
#include <isa-l.h>
#endif

namespace gpuscope::io {

bool IsalAvailable() {
#ifdef GPUSCOPE_HAVE_ISAL
  return true;
#else
  return false;
#endif
}

namespace {

constexpr size_t kInputChunk = 1 << 20;  // 1 MiB of compressed input per read

// Shared input buffering and error wording for both backends.
class GzipSourceBase : public ByteSource {
 public:
  GzipSourceBase(std::unique_ptr<ByteSource> in, std::string name, InflateBackend kind)
      : in_(std::move(in)), name_(std::move(name)), kind_(kind), buf_(kInputChunk) {}
  uint64_t raw_offset() const override { return in_->raw_offset(); }
  bool is_gzip() const override { return true; }
  int64_t file_size() const override { return in_->file_size(); }
  bool CanReopen() const override { return in_->CanReopen(); }
  // The same file from its start, through the same backend.
  std::unique_ptr<ByteSource> Reopen() const override {
    auto in = in_->Reopen();
    return in ? MakeGzipSource(std::move(in), name_, kind_) : nullptr;
  }

 protected:
  // Refills the input buffer when empty. Returns false at end of the compressed file.
  Result<bool> Refill() {
    if (avail_ > 0) return true;
    GPUSCOPE_TRY(r, in_->Read(buf_.data(), buf_.size()));
    next_ = buf_.data();
    avail_ = *r;
    consumed_before_ = in_->raw_offset() - *r;
    return *r > 0;
  }
  // Refill for a backend's read loop: false when the file ended between members (done_ set), an
  // error when it ended inside one.
  Result<bool> RefillOrFinish() {
    GPUSCOPE_TRY(more, Refill());
    if (*more) return true;
    if (member_started_) return Truncated();
    done_ = true;
    return false;
  }
  // Makes at least `n` bytes available, keeping the unread ones; false if the input ends first.
  Result<bool> Ensure(size_t n) {
    while (avail_ < n) {
      if (next_ != buf_.data()) {
        if (avail_ > 0) std::memmove(buf_.data(), next_, avail_);
        consumed_before_ += static_cast<uint64_t>(next_ - buf_.data());
        next_ = buf_.data();
      }
      GPUSCOPE_TRY(r, in_->Read(buf_.data() + avail_, buf_.size() - avail_));
      if (*r == 0) return false;
      avail_ += *r;
    }
    return true;
  }
  uint64_t compressed_offset() const { return consumed_before_ + (next_ - buf_.data()); }
  Status Truncated() const {
    return Status::InputError(name_, compressed_offset(),
                              "truncated gzip: the compressed stream ends before its end marker "
                              "(byte offset is in the compressed file)",
                              "the file was cut short; re-copy or re-export it");
  }
  Status Corrupt(const std::string& what) const {
    return Status::InputError(name_, compressed_offset(), "corrupt gzip data: " + what,
                              "the file is damaged; re-copy or re-export it");
  }
  // The data decompressed, but not to what was compressed: one changed byte inside the deflate
  // stream often still decodes, and only the CRC-32 in the member's trailer tells.
  Status ChecksumMismatch() const {
    return Corrupt(
        "the CRC-32 checksum does not match the decompressed data (bytes changed in storage or "
        "transfer; byte offset is in the compressed file)");
  }
  // The CRC matched; the trailer's ISIZE (the length mod 2^32) did not: one of those four bytes
  // changed, or the data was cut and recompressed. Not called a checksum mismatch: the data is
  // what was compressed.
  Status LengthMismatch() const {
    return Corrupt(
        "the length in the gzip trailer (ISIZE) does not match the decompressed length, though "
        "its CRC-32 does (the trailer's last 4 bytes changed; byte offset is in the compressed "
        "file)");
  }
  Status TrailingData() const {
    return Status::InputError(
        name_, compressed_offset(),
        "trailing data after the gzip stream: the compressed data ended (checksum correct) and "
        "the bytes from here on are not another gzip member (byte offset is in the compressed "
        "file)",
        "something was appended to the file; `gzip -dc FILE > trace.json` recovers the data (it "
        "warns \"trailing garbage ignored\")");
  }
  // After a member ends, skips zero padding; returns true if another member (1f 8b) follows, an
  // error if other bytes do.
  Result<bool> AnotherMember() {
    while (true) {
      GPUSCOPE_TRY(more, Refill());
      if (!*more) return false;
      while (avail_ > 0 && *next_ == 0) ++next_, --avail_;
      if (avail_ > 0) break;
    }
    GPUSCOPE_TRY(two, Ensure(2));
    if (*two && static_cast<unsigned char>(next_[0]) == 0x1f &&
        static_cast<unsigned char>(next_[1]) == 0x8b)
      return true;
    return TrailingData();
  }

  std::unique_ptr<ByteSource> in_;
  std::string name_;
  InflateBackend kind_;
  std::vector<char> buf_;
  char* next_ = nullptr;
  size_t avail_ = 0;
  uint64_t consumed_before_ = 0;
  bool done_ = false;
  bool member_started_ = false;  // inside a gzip member: an end of input here is a truncation
};

class ZlibSource : public GzipSourceBase {
 public:
  ZlibSource(std::unique_ptr<ByteSource> in, std::string name)
      : GzipSourceBase(std::move(in), std::move(name), InflateBackend::kZlib) {
    std::memset(&zs_, 0, sizeof zs_);
    inflateInit2(&zs_, 15 + 16);  // 15-bit window, gzip wrapper only
  }
  ~ZlibSource() override { inflateEnd(&zs_); }
  const char* backend() const override { return "zlib"; }

  Result<size_t> Read(char* dst, size_t capacity) override {
    if (done_ || capacity == 0) return size_t{0};
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(capacity, 1u << 30));
    while (zs_.avail_out > 0) {
      GPUSCOPE_TRY(more, RefillOrFinish());
      if (!*more) break;
      zs_.next_in = reinterpret_cast<Bytef*>(next_);
      zs_.avail_in = static_cast<uInt>(avail_);
      member_started_ = true;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      const size_t used = avail_ - zs_.avail_in;
      next_ += used;
      avail_ -= used;
      if (rc == Z_STREAM_END) {
        member_started_ = false;
        GPUSCOPE_TRY(another, AnotherMember());
        if (!*another) {
          done_ = true;
          break;
        }
        inflateReset(&zs_);
        continue;
      }
      if (rc == Z_BUF_ERROR && used == 0 && zs_.avail_out > 0) continue;  // needs more input
      if (rc == Z_DATA_ERROR && zs_.msg && std::strcmp(zs_.msg, "incorrect length check") == 0)
        return LengthMismatch();  // zlib checks the CRC first: it matched
      if (rc == Z_DATA_ERROR && zs_.msg && std::strcmp(zs_.msg, "incorrect data check") == 0)
        return ChecksumMismatch();
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Corrupt(zs_.msg ? zs_.msg : "inflate error " + std::to_string(rc));
      }
    }
    return static_cast<size_t>(capacity - zs_.avail_out);
  }

 private:
  z_stream zs_;
};

#ifdef GPUSCOPE_HAVE_ISAL
class IsalSource : public GzipSourceBase {
 public:
  IsalSource(std::unique_ptr<ByteSource> in, std::string name)
      : GzipSourceBase(std::move(in), std::move(name), InflateBackend::kIsal) {
    Reset();
  }
  const char* backend() const override { return "isa-l"; }

  Result<size_t> Read(char* dst, size_t capacity) override {
    if (done_ || capacity == 0) return size_t{0};
    state_.next_out = reinterpret_cast<uint8_t*>(dst);
    state_.avail_out = static_cast<uint32_t>(std::min<size_t>(capacity, 1u << 30));
    const uint32_t want = state_.avail_out;
    while (state_.avail_out > 0) {
      if (state_.block_state == ISAL_BLOCK_FINISH) {
        member_started_ = false;
        GPUSCOPE_TRY(another, AnotherMember());
        if (!*another) {
          done_ = true;
          break;
        }
        // isal_inflate_init clears the output cursor too; keep ours.
        uint8_t* next_out = state_.next_out;
        const uint32_t avail_out = state_.avail_out;
        Reset();
        state_.next_out = next_out;
        state_.avail_out = avail_out;
      }
      GPUSCOPE_TRY(more, RefillOrFinish());
      if (!*more) break;
      state_.next_in = reinterpret_cast<uint8_t*>(next_);
      state_.avail_in = static_cast<uint32_t>(avail_);
      member_started_ = true;
      const uint32_t out_before = state_.avail_out;
      const int rc = isal_inflate(&state_);
      // isa-l 2.30 can wrap avail_in below zero on a damaged gzip header (found by registry_fuzz:
      // a header whose FNAME runs into the deflate data); it never consumes more than it was given.
      if (state_.avail_in > avail_) return Corrupt("invalid gzip header");
      const size_t used = avail_ - state_.avail_in;
      next_ += used;
      avail_ -= used;
      if (rc < 0) {
        if (rc == ISAL_INCORRECT_CHECKSUM) {
          // isa-l reports the CRC and the length alike: the trailer it just read tells which.
          if (next_ - buf_.data() >= 8) {
            const auto le32 = [](const char* p) {
              uint32_t v = 0;
              for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(p[k]);
              return v;
            };
            if (le32(next_ - 8) == state_.crc &&
                le32(next_ - 4) != static_cast<uint32_t>(state_.total_out))
              return LengthMismatch();
          }
          return ChecksumMismatch();
        }
        return Corrupt("invalid deflate data (isa-l code " + std::to_string(rc) + ")");
      }
      if (used == 0 && out_before == state_.avail_out && state_.block_state != ISAL_BLOCK_FINISH) {
        // No progress with input available: isa-l keeps a partial symbol internally; feed more.
        if (avail_ > 0) return Corrupt("inflate made no progress");
      }
    }
    return static_cast<size_t>(want - state_.avail_out);
  }

 private:
  void Reset() {
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;
  }
  inflate_state state_;
};
#endif

}  // namespace

std::unique_ptr<ByteSource> MakeGzipSource(std::unique_ptr<ByteSource> compressed, std::string name,
                                           InflateBackend backend) {
#ifdef GPUSCOPE_HAVE_ISAL
  if (backend != InflateBackend::kZlib) {
    return std::make_unique<IsalSource>(std::move(compressed), std::move(name));
  }
#endif
  (void)backend;
  return std::make_unique<ZlibSource>(std::move(compressed), std::move(name));
}

}  // namespace gpuscope::io
