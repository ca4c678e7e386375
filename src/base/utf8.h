// UTF-8 validation shared by the reader (repairing names) and the views (escaping them for JSON,
// HTML and the terminal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace gpuscope {

// Length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 if the bytes there are not
// valid UTF-8: a bad lead byte, a missing continuation byte, an overlong form, a surrogate or a
// code point beyond U+10FFFF.
inline size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t len = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

// The longest prefix of valid UTF-8 `s` of at most `max_bytes` that does not end inside a
// character: a cut name stays valid UTF-8 (a byte cut made JSON read back another name).
inline std::string_view Utf8Prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// U+FFFD, what a view shows for bytes that are not valid UTF-8 or characters it cannot show.
inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";

// A medium's escape for each byte it cannot carry as itself: (byte, what stands for it).
using ByteEscape = std::pair<char, std::string_view>;

// RFC 8259's two-character escapes that JSON text needs (other controls: \u00XX, each writer's).
inline constexpr ByteEscape kJsonShortEscapes[] = {
    {'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"}, {'\r', "\\r"}, {'\t', "\\t"}};

// Appends the escape `escapes` lists for byte `c`, if it lists one: true when it did.
template <size_t N>
bool AppendListedEscape(const ByteEscape (&escapes)[N], unsigned char c, std::string* out) {
  for (const auto& [byte, text] : escapes)
    if (c == static_cast<unsigned char>(byte)) {
      out->append(text);
      return true;
    }
  return false;
}

// Appends `s` to *out character by character: each ASCII byte goes through `ascii(c, out)`, each
// valid multi-byte sequence through `sequence(seq, out)`, and each byte that starts no valid
// sequence becomes `invalid`. The escapers of the JSON, HTML and terminal views are this walk
// with their own rules for the characters their medium cannot carry.
template <typename AsciiFn, typename SequenceFn>
void AppendUtf8Escaped(std::string_view s, std::string* out, std::string_view invalid,
                       AsciiFn ascii, SequenceFn sequence) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ascii(c, out);
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      out->append(invalid);
      ++i;
    } else {
      sequence(s.substr(i, len), out);
      i += len;
    }
  }
}

}  // namespace gpuscope
