#include "ingest/kineto_json/scanner.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "ingest/common/line_reader.h"  // ByteSize

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gpuscope::ingest {

namespace {

inline bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// First offset in [p, end) holding '"' or '\\' (the only bytes that matter inside a string).
inline size_t FindStringSpecial(const char* b, size_t p, size_t end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  while (p + 16 <= end) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + p));
    const int mask =
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    if (mask != 0) return p + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    p += 16;
  }
#endif
  while (p < end && b[p] != '"' && b[p] != '\\') ++p;
  return p;
}

// First offset in [p, end) holding a byte that changes nesting or starts a string.
inline size_t FindStructural(const char* b, size_t p, size_t end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i open_brace = _mm_set1_epi8('{');
  const __m128i close_brace = _mm_set1_epi8('}');
  const __m128i open_bracket = _mm_set1_epi8('[');
  const __m128i close_bracket = _mm_set1_epi8(']');
  while (p + 16 <= end) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + p));
    __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, open_brace));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, close_brace));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, open_bracket));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, close_bracket));
    const int mask = _mm_movemask_epi8(m);
    if (mask != 0) return p + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    p += 16;
  }
#endif
  while (p < end) {
    const char c = b[p];
    if (c == '"' || c == '{' || c == '}' || c == '[' || c == ']') break;
    ++p;
  }
  return p;
}

std::string ByteForMessage(unsigned char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  return fmt::format("0x{:02x}", c);
}

}  // namespace

Status Scanner::Fail(size_t p, const std::string& what, const std::string& hint) const {
  return Status::InputError(file_, static_cast<uint64_t>(std::max<int64_t>(0, Absolute(p))), what,
                            hint);
}

void Scanner::NoteMismatch(size_t close) {
  if (mismatch_start_ >= 0) return;  // the first one is the cause
  mismatch_start_ = std::max<int64_t>(0, Absolute(element_start_));
  mismatch_close_ = std::max<int64_t>(0, Absolute(close));
}

void Scanner::EndElement(size_t end, std::vector<ScannedElement>* out) {
  out->push_back({element_start_, end, element_is_object_});
  element_start_ = SIZE_MAX;
  ++elements_;
}

void Scanner::Rebase(size_t cut, size_t new_begin) {
  // Offsets >= cut move by (new_begin - cut); the stream offset of buffer position 0 moves
  // likewise.
  pos_ = pos_ - cut + new_begin;
  stream_base_ = stream_base_ + static_cast<int64_t>(cut) - static_cast<int64_t>(new_begin);
  if (element_start_ != SIZE_MAX) {
    element_start_ = element_start_ - cut + new_begin;
    if (value_last_ >= cut) value_last_ = value_last_ - cut + new_begin;
  }
  if (in_string_) string_start_ = string_start_ - cut + new_begin;
}

namespace {

// The four 64-bit masks the fast path needs from one 64-byte block, in one pass over it.
// '{' (0x7B) and '[' (0x5B) differ only in bit 0x20, as do '}' and ']': OR-ing 0x20 folds each pair
// into one compare.
struct BlockMasks {
  uint64_t backslash, quote, open, close;
};

inline BlockMasks ClassifyBlock(const char* block) {
  BlockMasks m{0, 0, 0, 0};
#if defined(__SSE2__)
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  const __m128i bit20 = _mm_set1_epi8(0x20);
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * k));
    const __m128i folded = _mm_or_si128(v, bit20);
    const int shift = 16 * k;
    m.backslash |= static_cast<uint64_t>(
                       static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash))))
                   << shift;
    m.quote |=
        static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote))))
        << shift;
    m.open |= static_cast<uint64_t>(
                  static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, open))))
              << shift;
    m.close |= static_cast<uint64_t>(
                   static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, close))))
               << shift;
  }
#else
  for (int i = 0; i < 64; ++i) {
    const char c = block[i];
    const char folded = static_cast<char>(c | 0x20);
    m.backslash |= static_cast<uint64_t>(c == '\\') << i;
    m.quote |= static_cast<uint64_t>(c == '"') << i;
    m.open |= static_cast<uint64_t>(folded == '{') << i;
    m.close |= static_cast<uint64_t>(folded == '}') << i;
  }
#endif
  return m;
}

// The same masks with AVX-512BW: one 64-byte load, four compares straight into mask registers
// (the SSE version needs four loads and sixteen compares and movemasks). Chosen at run time.
#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw"))) inline BlockMasks ClassifyBlock512(const char* block) {
  const __m512i v = _mm512_loadu_si512(block);
  const __m512i folded = _mm512_or_si512(v, _mm512_set1_epi8(0x20));
  return {_mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\\')),
          _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('"')),
          _mm512_cmpeq_epi8_mask(folded, _mm512_set1_epi8('{')),
          _mm512_cmpeq_epi8_mask(folded, _mm512_set1_epi8('}'))};
}

// Inside-string mask from quote positions: a carry-less multiply by all ones (simdjson's way).
__attribute__((target("pclmul"))) inline uint64_t PrefixXorClmul(uint64_t x) {
  const __m128i product =
      _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<int64_t>(x)), _mm_set1_epi8(-1), 0);
  return static_cast<uint64_t>(_mm_cvtsi128_si64(product));
}

std::atomic<bool> g_allow_avx512{true};

bool HaveAvx512() {
  static const bool have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return have && g_allow_avx512.load(std::memory_order_relaxed);
}
#endif

// Bit i = XOR of bits 0..i: turns quote positions into an "inside a string" mask.
inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

struct ClassifySse {
  BlockMasks operator()(const char* block) const { return ClassifyBlock(block); }
};
struct PrefixXorShifts {
  uint64_t operator()(uint64_t x) const { return PrefixXor(x); }
};
#if defined(__x86_64__)
struct Classify512 {
  __attribute__((target("avx512f,avx512bw"))) BlockMasks operator()(const char* block) const {
    return ClassifyBlock512(block);
  }
};
struct PrefixXorPclmul {
  __attribute__((target("pclmul"))) uint64_t operator()(uint64_t x) const {
    return PrefixXorClmul(x);
  }
};
#endif

}  // namespace

// Both instantiations are inlined into their callers, so each loop runs with its own classifier
// inlined (a call per 64-byte block would cost what the wider compares save).
template <typename Classify, typename PrefixXorFn>
__attribute__((always_inline)) inline size_t Scanner::FastScanWith(
    const char* b, size_t p, size_t size, std::vector<ScannedElement>* out) {
  constexpr uint64_t kOddBits = 0xAAAAAAAAAAAAAAAAull;
  uint64_t next_is_escaped = escape_ ? 1 : 0;
  uint64_t in_string_carry = in_string_ ? ~0ull : 0;
  // Start of the current gap between elements (only meaningful when no element is open).
  size_t gap_from = p;
  while (p + 64 <= size) {
    const char* block = b + p;
    // Escapes (simdjson's algorithm): a character is escaped if an odd run of backslashes precedes
    // it.
    const BlockMasks masks = Classify()(block);
    const uint64_t backslash = masks.backslash;
    uint64_t escaped;
    if (backslash == 0) {
      escaped = next_is_escaped;
      next_is_escaped = 0;
    } else {
      const uint64_t potential_escape = backslash & ~next_is_escaped;
      const uint64_t maybe_escaped = potential_escape << 1;
      const uint64_t codes = ((maybe_escaped | kOddBits) - potential_escape) ^ kOddBits;
      escaped = codes ^ (backslash | next_is_escaped);
      next_is_escaped = (codes & backslash) >> 63;
    }
    const uint64_t quotes = masks.quote & ~escaped;
    const uint64_t in_string = PrefixXorFn()(quotes) ^ in_string_carry;
    const uint64_t opens = masks.open;
    const uint64_t closes = masks.close;
    uint64_t structural = (opens | closes) & ~in_string;
    while (structural != 0) {
      const int bit = __builtin_ctzll(structural);
      structural &= structural - 1;
      const size_t pos = p + static_cast<size_t>(bit);
      const bool is_open = (opens >> bit) & 1;
      if (depth_ == events_depth_) {
        // Between elements: only whitespace and commas may precede the next object.
        bool clean = is_open && block[bit] == '{';
        for (size_t k = gap_from; clean && k < pos; ++k) clean = IsSpace(b[k]) || b[k] == ',';
        if (!clean) {
          // Hand over to the byte-at-a-time path at the gap, outside any string.
          in_string_ = false;
          escape_ = false;
          return gap_from;
        }
        element_start_ = pos;
        element_is_object_ = true;
        ++depth_;
        continue;
      }
      if (is_open) {
        ++depth_;
      } else {
        --depth_;
        if (depth_ == events_depth_) {
          if (block[bit] != '}') NoteMismatch(pos);  // fast path: object elements only
          EndElement(pos + 1, out);
          gap_from = pos + 1;
        }
      }
    }
    in_string_carry = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
    p += 64;
  }
  if (depth_ == events_depth_) {
    // Stopping inside a gap: its bytes were not checked yet (no '{' followed them in this call).
    for (size_t k = gap_from; k < p; ++k) {
      if (!IsSpace(b[k]) && b[k] != ',') {
        in_string_ = false;
        escape_ = false;
        return gap_from;
      }
    }
  }
  in_string_ = in_string_carry != 0;
  escape_ = next_is_escaped != 0;
  if (in_string_) string_start_ = p;  // only used for top-level keys; any value is fine here
  return p;
}

void AllowAvx512Scan(bool allow) {
#if defined(__x86_64__)
  g_allow_avx512.store(allow);
#else
  (void)allow;
#endif
}

size_t Scanner::FastScan(const char* b, size_t p, size_t size, std::vector<ScannedElement>* out) {
#if defined(__x86_64__)
  if (HaveAvx512()) return FastScanAvx512(b, p, size, out);
#endif
  return FastScanWith<ClassifySse, PrefixXorShifts>(b, p, size, out);
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw,pclmul"))) size_t Scanner::FastScanAvx512(
    const char* b, size_t p, size_t size, std::vector<ScannedElement>* out) {
  return FastScanWith<Classify512, PrefixXorPclmul>(b, p, size, out);
}
#endif

Status Scanner::Scan(const char* b, size_t size, std::vector<ScannedElement>* out) {
  buffer_ = b;
  size_t p = pos_;
  while (p < size) {
    if (fast_path_ && events_depth_ >= 0 && (element_start_ == SIZE_MAX || element_is_object_) &&
        p + 64 <= size) {
      const size_t stopped = FastScan(b, p, size, out);
      if (stopped != p) {
        p = stopped;
        continue;
      }
      // No progress (a non-object element right here): one step of the byte path below.
    }
    const size_t next = in_string_ ? InString(b, p, size) : Structural(b, p, size, out);
    if (next == kStop) return std::exchange(failure_, Status::Ok());
    p = next;
  }
  pos_ = p;
  return Status::Ok();
}

size_t Scanner::Stop(size_t p, Status failure) {
  pos_ = p;
  failure_ = std::move(failure);
  return kStop;
}

size_t Scanner::InString(const char* b, size_t p, size_t size) {
  if (escape_) {
    escape_ = false;
    return p + 1;
  }
  p = FindStringSpecial(b, p, size);
  if (p >= size) return p;
  if (b[p] == '\\') {
    escape_ = true;
    return p + 1;
  }
  // Closing quote.
  in_string_ = false;
  if (top_ == 'o' && depth_ == 1 && member_ == Member::kInKey) {
    key_.assign(b + string_start_ + 1, p - string_start_ - 1);
    member_ = Member::kExpectColon;
  } else if (top_ == 'o' && depth_ == 1 && member_ == Member::kInValue) {
    value_last_ = p;
    member_ = Member::kAfterValue;
    header_members_.emplace_back(b + member_start_, p + 1 - member_start_);
  } else if (events_depth_ >= 0 && depth_ == events_depth_ && element_start_ != SIZE_MAX &&
             !element_is_object_) {
    value_last_ = p;
  }
  return p + 1;
}

size_t Scanner::Structural(const char* b, size_t p, size_t size, std::vector<ScannedElement>* out) {
  // Inside an element of traceEvents: only nesting and strings matter; skip the rest fast.
  if (events_depth_ >= 0 && depth_ > events_depth_) {
    p = FindStructural(b, p, size);
    if (p >= size) return p;
  }
  const char c = b[p];
  if (top_ == 0) return DocumentStart(b, p, size);
  if (top_ == 'x') {
    if (!IsSpace(c) && c != '\0') {
      return Stop(p, Fail(p,
                          "unexpected " + ByteForMessage(static_cast<unsigned char>(c)) +
                              " after the end of the JSON document",
                          "the file may hold two documents or trailing garbage"));
    }
    return p + 1;
  }
  if (events_depth_ >= 0 && depth_ == events_depth_) return BetweenElements(p, c, out);
  if (events_depth_ >= 0) return InElement(p, c, out);
  if (depth_ == 1) return TopLevelMember(p, c);
  // Object form, inside a composite header value (depth >= 2).
  if (c == '"') {
    StartString(p);
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if (c == '}' || c == ']') {
    --depth_;
    if (depth_ == 1) {
      header_members_.emplace_back(b + member_start_, p + 1 - member_start_);
      member_ = Member::kAfterValue;
    }
  }
  return p + 1;
}

void Scanner::StartString(size_t p) {
  in_string_ = true;
  string_start_ = p;
}

size_t Scanner::DocumentStart(const char* b, size_t p, size_t size) {
  const char c = b[p];
  if (IsSpace(c)) return p + 1;
  if (Absolute(p) == 0 && static_cast<unsigned char>(c) == 0xEF) {
    if (p + 3 > size) return Stop(p, Status::Ok());  // wait for the rest of a byte-order mark
    if (static_cast<unsigned char>(b[p + 1]) == 0xBB &&
        static_cast<unsigned char>(b[p + 2]) == 0xBF) {
      return p + 3;  // UTF-8 byte-order mark
    }
  }
  if (c == '{') {
    top_ = 'o';
    depth_ = 1;
    member_ = Member::kExpectKey;
  } else if (c == '[') {
    top_ = 'a';
    bare_array_ = true;
    depth_ = 1;
    events_depth_ = 1;
    saw_trace_events_ = true;
  } else {
    return Stop(p, Fail(p,
                        "not a JSON trace: expected '{' or '[' but found " +
                            ByteForMessage(static_cast<unsigned char>(c)),
                        "gpuscope reads PyTorch profiler (Kineto) Chrome-trace JSON (plain or "
                        "gzip), Nsight Systems SQLite exports (nsys export --type sqlite), CUDA "
                        "memory snapshots (torch.cuda.memory._dump_snapshot), gpuscope run "
                        "recordings and summaries, and nvidia-smi and DCGM logs with their "
                        "header line"));
  }
  return p + 1;
}

size_t Scanner::BetweenElements(size_t p, char c, std::vector<ScannedElement>* out) {
  if (element_start_ != SIZE_MAX && !element_is_object_) {
    // A scalar element in progress ends at ',' or ']'.
    if (c == ',' || c == ']') {
      EndElement(value_last_ + 1, out);
    } else if (c == '"') {
      StartString(p);
      return p + 1;
    } else if (c == '{' || c == '[') {
      ++depth_;  // nested value inside a malformed element; keep balance
      return p + 1;
    } else {
      if (!IsSpace(c)) value_last_ = p;
      return p + 1;
    }
  }
  if (IsSpace(c) || c == ',') return p + 1;
  if (c == '{' || c == '[') {
    element_start_ = p;
    element_is_object_ = c == '{';
    ++depth_;
    return p + 1;
  }
  if (c == ']') {
    // End of traceEvents.
    events_depth_ = -1;
    events_end_ = p + 1;
    --depth_;
    if (top_ == 'a') {
      top_ = 'x';
    } else {
      member_ = Member::kAfterValue;
    }
    return p + 1;
  }
  if (c == '}') {
    // A brace missing inside an element makes every later element part of it, until the
    // array's ']' closes it: that element is where the brace is missing, not here.
    if (mismatch_start_ >= 0)
      return Stop(p, Status::InputError(
                         file_, static_cast<uint64_t>(mismatch_start_),
                         "the traceEvents element starting here is closed by the ']' at byte " +
                             std::to_string(mismatch_close_) +
                             ": a '}' is missing inside it, and the elements after it ran into it",
                         "look for the missing '}' in the first event from here (`tail -c +" +
                             std::to_string(mismatch_start_ + 1) + " FILE | head -c 400`)"));
    return Stop(p, Fail(p, "unbalanced '}' inside traceEvents", "the JSON is malformed"));
  }
  // Start of a scalar (non-object) element.
  element_start_ = p;
  element_is_object_ = false;
  value_last_ = p;
  if (c == '"') StartString(p);
  return p + 1;
}

// Inside an element, at depth > events_depth_ (p points at a structural byte).
size_t Scanner::InElement(size_t p, char c, std::vector<ScannedElement>* out) {
  if (c == '"') {
    StartString(p);
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else {  // '}' or ']'
    --depth_;
    if (depth_ == events_depth_) {
      if ((c == '}') != element_is_object_) NoteMismatch(p);
      EndElement(p + 1, out);
    }
  }
  return p + 1;
}

// Object form, outside traceEvents, at depth 1: the top-level members.
size_t Scanner::TopLevelMember(size_t p, char c) {
  const bool space = IsSpace(c);
  switch (member_) {
    case Member::kExpectKey:
      if (space || c == ',') break;
      if (c == '"') {
        member_ = Member::kInKey;
        member_start_ = p;
        StartString(p);
        break;
      }
      if (c == '}') {
        EndDocument();
        break;
      }
      return Stop(p, Fail(p,
                          "expected a key string in the top-level object but found " +
                              ByteForMessage(static_cast<unsigned char>(c)),
                          "the JSON is malformed"));
    case Member::kExpectColon:
      if (space) break;
      if (c != ':')
        return Stop(p, Fail(p, "expected ':' after key \"" + key_ + "\"", "the JSON is malformed"));
      member_ = Member::kExpectValue;
      break;
    case Member::kExpectValue:
      if (!space) return MemberValueStart(p, c);
      break;
    case Member::kInValue:
      // A scalar value (number, true, false, null) runs to ',' or '}'.
      if (c == ',' || c == '}') {
        header_members_.emplace_back(buffer_ + member_start_, value_last_ + 1 - member_start_);
        member_ = Member::kExpectKey;
        if (c == '}') EndDocument();
      } else if (!space) {
        value_last_ = p;
      }
      break;
    case Member::kAfterValue:
      if (space) break;
      if (c == ',') {
        member_ = Member::kExpectKey;
        break;
      }
      if (c == '}') {
        EndDocument();
        break;
      }
      return Stop(p, Fail(p,
                          "expected ',' or '}' after a top-level member but found " +
                              ByteForMessage(static_cast<unsigned char>(c)),
                          "the JSON is malformed"));
    case Member::kInKey:
      break;  // unreachable: keys are strings
  }
  return p + 1;
}

void Scanner::EndDocument() {
  depth_ = 0;
  top_ = 'x';
}

// The first byte of a top-level member's value: traceEvents' array, or a header value.
size_t Scanner::MemberValueStart(size_t p, char c) {
  if (key_ == "traceEvents") {
    if (c != '[')
      return Stop(p, Fail(p, "\"traceEvents\" is not an array",
                          "a Kineto trace holds its events in a JSON array"));
    saw_trace_events_ = true;
    depth_ = 2;
    events_depth_ = 2;
    return p + 1;
  }
  member_ = Member::kInValue;
  value_last_ = p;
  if (c == '"') {
    StartString(p);
  } else if (c == '{' || c == '[') {
    ++depth_;
  }
  return p + 1;
}

size_t Scanner::open_start() const {
  if (events_depth_ >= 0) return element_start_;
  if (top_ == 'o' && (depth_ > 1 || member_ == Member::kInKey || member_ == Member::kExpectColon ||
                      member_ == Member::kExpectValue || member_ == Member::kInValue))
    return member_start_;
  return SIZE_MAX;
}

size_t Scanner::held_start() const {
  if (events_depth_ >= 0) return element_start_;
  if (top_ == 'x') return SIZE_MAX;
  // Outside traceEvents nothing is released: the header so far, or what followed the events.
  return saw_trace_events_ ? events_end_ : 1;
}

Status Scanner::TooLong(size_t begin, size_t bytes, size_t cap_bytes) const {
  return Fail(begin,
              "the traceEvents element starting here is " + std::to_string(bytes) +
                  " bytes long, over the " + ByteSize(cap_bytes) +
                  " cap on one element (real events are a few KB)",
              "this is not a profiler trace gpuscope can read in bounded memory");
}

std::string Scanner::ShowBytesHint(size_t p) const {
  // tail -c +N counts from 1.
  return "`tail -c +" + std::to_string(std::max<int64_t>(0, Absolute(p)) + 1) +
         " FILE | head -c 300` shows the bytes from there (after zcat for a gzip file: the offset "
         "counts decompressed bytes)";
}

Status Scanner::TooLarge(size_t cap_bytes) const {
  const size_t start = open_start();
  const std::string cap = ByteSize(cap_bytes);
  // Which of the two it is cannot be told before the element ends, so both are said: a valid
  // element larger than the cap is no profiler event either.
  const std::string why =
      " (the cap on one element; real events are a few KB): either one element that large, "
      "which no profiler writes, or an unterminated string (a missing '\"') or a missing '}' "
      "that makes the rest of the file look like one element";
  const std::string hint = ShowBytesHint(start);
  if (events_depth_ >= 0)
    return Fail(start, "the traceEvents element starting here is still open after " + cap + why,
                hint);
  if (start != SIZE_MAX)
    return Fail(start, "the top-level member starting here is still open after " + cap + why, hint);
  return Fail(pos_, "more than " + cap + " of JSON outside traceEvents",
              "a Kineto trace holds a few KB besides its events; this is not one");
}

Status Scanner::Finish(bool ends_closed) {
  const size_t p = pos_;
  if (top_ == 0) {
    return Fail(p, "empty input: no JSON found", "the file is empty or holds only whitespace");
  }
  if (top_ != 'x') {
    const size_t open = open_start();
    if (ends_closed && open != SIZE_MAX) {
      // The file ends like a complete trace, yet an element never closed: it is malformed.
      return Fail(open,
                  std::string(in_events() ? "the traceEvents element" : "the top-level member") +
                      " starting here never closes: the input ends " +
                      (in_string_ ? "inside a string " : "") + "after " +
                      std::to_string(elements_) +
                      " complete events, yet it ends with '}' or ']' as a complete trace does, so "
                      "it was not cut short: this element has an unbalanced '\"' or brace",
                  ShowBytesHint(open));
    }
    std::string where =
        in_events() ? "inside traceEvents after " + std::to_string(elements_) + " complete events"
                    : "inside the top-level JSON value";
    if (in_string_) where += ", inside a string";
    if (open != SIZE_MAX && in_events())
      where += "; the unfinished element starts at byte " +
               std::to_string(std::max<int64_t>(0, Absolute(open)));
    return Fail(p, "truncated JSON: the input ends " + where,
                "the file was cut short (interrupted copy or profiler crash); re-export the trace");
  }
  if (!saw_trace_events_) {
    return Fail(0, "not a trace: the JSON object has no \"traceEvents\" array",
                "expected a PyTorch profiler (Kineto) Chrome trace");
  }
  return Status::Ok();
}

}  // namespace gpuscope::ingest
