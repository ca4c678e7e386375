// Streaming structural scanner for Chrome-trace JSON.
//
// Why: a trace can be many GB, so the text is never held whole. The scanner walks the bytes as they
// arrive (tracking only string/escape state and nesting depth, ≈ 1 byte per cycle) and reports
// where each element of "traceEvents" begins and ends. The reader cuts batches at those boundaries
// — never inside a string — and parses each batch with simdjson on another core. Top-level members
// other than traceEvents (deviceProperties, distributedInfo, ...) are captured as text, in any
// order, before or after the events, and parsed once at the end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuscope/status.h"

namespace gpuscope::ingest {

struct ScannedElement {
  size_t begin = 0;  // offset of '{' (or of the first byte of a non-object element) in the buffer
  size_t end = 0;    // one past '}' (or past the element's last byte)
  bool is_object = true;
};

// The fast path classifies 64-byte blocks with AVX-512BW where the CPU has it, else with SSE2.
// false forces SSE2 (tests run both and compare them with the byte-at-a-time path).
void AllowAvx512Scan(bool allow);

class Scanner {
 public:
  explicit Scanner(std::string file) : file_(std::move(file)) {}

  // Tests turn the 64-byte bitmask path off to use the byte-at-a-time path as its oracle.
  void set_fast_path(bool enabled) { fast_path_ = enabled; }

  // Scans buffer[pos(), size). `buffer` may have been reallocated or grown since the last call; it
  // is the same logical stream. Completed traceEvents elements are appended to `out`.
  Status Scan(const char* buffer, size_t size, std::vector<ScannedElement>* out);

  // The caller moved the bytes [cut, size) of the buffer to offset `new_begin` of a fresh buffer.
  void Rebase(size_t cut, size_t new_begin);

  // Call at end of input; reports truncation and non-trace JSON. `ends_closed`: the input's last
  // non-space byte is '}' or ']', as a complete trace's is — then an element still open is not a
  // cut-short file but an unbalanced '"' or brace inside that element, and the error says so,
  // naming the byte where the element starts.
  Status Finish(bool ends_closed = false);

  // Buffer offset where the innermost unit still open starts: a traceEvents element, or a
  // top-level member outside traceEvents; SIZE_MAX when none is open. Bytes from there on cannot
  // be released until it closes, so the reader caps their size (kMaxElementBytes).
  size_t open_start() const;
  // Buffer offset from which the reader must keep bytes: the open element inside traceEvents
  // (SIZE_MAX between elements), else everything outside traceEvents so far (the header before
  // it, or what follows it); SIZE_MAX once the document is complete.
  size_t held_start() const;
  // The error for an open unit, or for the bytes held outside traceEvents, past `cap_bytes`.
  Status TooLarge(size_t cap_bytes) const;
  // The error for a complete element (or top-level member) of `bytes` starting at buffer offset
  // `begin`, over `cap_bytes`.
  Status TooLong(size_t begin, size_t bytes, size_t cap_bytes) const;

  size_t pos() const { return pos_; }
  // True when inside the traceEvents array (the only place batches may be cut).
  bool in_events() const { return events_depth_ >= 0; }
  // True between two traceEvents elements: nothing before pos() is needed any more.
  bool between_elements() const {
    return events_depth_ >= 0 && depth_ == events_depth_ && element_start_ == SIZE_MAX &&
           !in_string_;
  }
  bool is_bare_array() const { return bare_array_; }
  // Absolute offset in the (uncompressed) stream of buffer offset `p`.
  int64_t Absolute(size_t p) const { return stream_base_ + static_cast<int64_t>(p); }
  // `"key":value` texts of top-level members other than traceEvents, in input order.
  const std::vector<std::string>& header_members() const { return header_members_; }
  uint64_t elements() const { return elements_; }

 private:
  Status Fail(size_t p, const std::string& what, const std::string& hint) const;
  // The byte path, one step at p: each returns the next position, or kStop where Scan must
  // return (pos_ set; failure_ the error, or Ok to wait for more bytes).
  static constexpr size_t kStop = SIZE_MAX;
  size_t Stop(size_t p, Status failure);
  size_t InString(const char* b, size_t p, size_t size);
  size_t Structural(const char* b, size_t p, size_t size, std::vector<ScannedElement>* out);
  size_t DocumentStart(const char* b, size_t p, size_t size);
  size_t BetweenElements(size_t p, char c, std::vector<ScannedElement>* out);
  size_t InElement(size_t p, char c, std::vector<ScannedElement>* out);
  size_t TopLevelMember(size_t p, char c);
  size_t MemberValueStart(size_t p, char c);
  void StartString(size_t p);
  void EndDocument();
  std::string ShowBytesHint(size_t p) const;
  void EndElement(size_t end, std::vector<ScannedElement>* out);
  // An element closed by the other kind of bracket ('{' … ']'): remembered (absolute offsets),
  // so that the error it causes later names the element, not the end of the file.
  void NoteMismatch(size_t close);
  // Inside traceEvents: 64 bytes at a time with bitmasks (strings and escapes resolved without
  // branches, as in simdjson's stage 1); only braces and brackets outside strings are visited.
  // Returns where it stopped: near the end of the buffer, or where the byte-at-a-time path must
  // take over (a non-object element, the end of traceEvents).
  size_t FastScan(const char* b, size_t p, size_t size, std::vector<ScannedElement>* out);
  // FastScan's loop, with the block classifier of one instruction set (scanner.cc).
  template <typename Classify, typename PrefixXor>
  size_t FastScanWith(const char* b, size_t p, size_t size, std::vector<ScannedElement>* out);
#if defined(__x86_64__)
  size_t FastScanAvx512(const char* b, size_t p, size_t size, std::vector<ScannedElement>* out);
#endif
  bool fast_path_ = true;

  std::string file_;
  // Absolute stream offset of buffer offset 0. The reader keeps byte 0 of every buffer free (to
  // wrap a batch in '[' in place), so the stream's first byte sits at buffer offset 1.
  int64_t stream_base_ = -1;
  size_t pos_ = 1;  // see stream_base_
  char top_ = 0;    // 0 not started, 'o' object form, 'a' bare-array form, 'x' finished
  bool bare_array_ = false;
  int64_t depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  size_t string_start_ = 0;
  // traceEvents: the depth of the array's interior, -1 when outside it.
  int64_t events_depth_ = -1;
  bool saw_trace_events_ = false;
  size_t events_end_ = 0;  // buffer offset just past traceEvents' closing ']'

  // Element in progress: its start offset, or SIZE_MAX.
  size_t element_start_ = SIZE_MAX;
  bool element_is_object_ = false;
  uint64_t elements_ = 0;
  int64_t mismatch_start_ = -1, mismatch_close_ = -1;
  // Object form, depth 1 members.
  enum class Member : uint8_t {
    kExpectKey,
    kInKey,
    kExpectColon,
    kExpectValue,
    kInValue,
    kAfterValue
  };
  Member member_ = Member::kExpectKey;
  size_t member_start_ = 0;
  std::string key_;
  size_t value_last_ = 0;  // last non-space byte of a scalar member value
  std::vector<std::string> header_members_;
  const char* buffer_ = nullptr;
  Status failure_;  // what a step that returned kStop failed on
};

}  // namespace gpuscope::ingest
