// Strings read from inputs, made safe for every renderer.
//
// Why: a name in a trace, a GPU name in an nvidia-smi log or a process name in a recording is
// printed to the user's terminal. An ESC (0x1b) or C1 CSI (U+009B) in it would start a terminal
// control sequence (colours, cursor moves, OSC 52 clipboard writes, window titles). Readers pass
// every input string through CleanText once, at the border (docs/architecture.md, convention 1),
// so no renderer ever sees a control character or invalid UTF-8.
#pragma once

#include <string>
#include <string_view>

#include "base/utf8.h"

namespace gpuscope {

// C0 controls (0x00-0x1f, tab and newline included: a name is one line) and DEL.
inline bool IsControlByte(unsigned char c) { return c < 0x20 || c == 0x7f; }

struct CleanTextResult {
  bool fixed_control = false;  // a control character became a space
  bool fixed_utf8 = false;     // an invalid UTF-8 byte became U+FFFD
};

// For text already known to be valid UTF-8 (simdjson validated it): any C0, DEL or C1 control?
// One branch-light pass; the JSON readers call it on every string they keep.
inline bool HasControlCharacter(std::string_view s) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  bool found = false;
  for (size_t i = 0; i < n; ++i) found |= p[i] < 0x20 || p[i] == 0x7f || p[i] == 0xC2;
  if (!found) return false;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] < 0x20 || p[i] == 0x7f) return true;
    if (p[i] == 0xC2 && i + 1 < n && p[i + 1] < 0xA0) return true;
  }
  return false;
}

// True when CleanText would change `s` (the common case, false, costs one pass and no copy).
inline bool NeedsCleaning(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (IsControlByte(c)) return true;
      continue;
    }
    const size_t len = Utf8SequenceLength(s, i);
    // C1 controls U+0080-U+009F are encoded C2 80 … C2 9F.
    if (len == 0 || (c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0)) return true;
    i += len - 1;
  }
  return false;
}

// Control characters (C0, DEL, C1) → a space; invalid UTF-8 → U+FFFD. Valid text is unchanged.
inline CleanTextResult CleanText(std::string_view in, std::string* out) {
  CleanTextResult r;
  out->clear();
  out->reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      if (IsControlByte(c)) {
        out->push_back(' ');
        r.fixed_control = true;
      } else {
        out->push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(in, i);
    if (len == 0) {
      out->append("\xEF\xBF\xBD");
      r.fixed_utf8 = true;
      ++i;
    } else if (c == 0xC2 && static_cast<unsigned char>(in[i + 1]) < 0xA0) {
      out->push_back(' ');
      r.fixed_control = true;
      i += len;
    } else {
      out->append(in.data() + i, len);
      i += len;
    }
  }
  return r;
}

inline std::string CleanText(std::string_view in) {
  if (!NeedsCleaning(in)) return std::string(in);
  std::string out;
  CleanText(in, &out);
  return out;
}

}  // namespace gpuscope
