// The one sanitiser for text that comes from an input — names in a trace, process names from
// /proc, GPU names and error strings from NVML, a recording's or a log's fields, arguments and
// paths — on its way to a terminal, a report or a file. A name must never act on the terminal it
// is printed to: ESC starts CSI sequences (ESC[2J clears the screen) and OSC sequences (ESC]0;…
// sets the window title, ESC]52;… writes the clipboard), and 8-bit C1 controls (U+009B is CSI)
// do the same on terminals that honour them.
//
//   * C0 controls (U+0000–U+001F, including TAB and newline: a newline in a name would forge a line
//     of the report), DEL (U+007F) and C1 controls (U+0080–U+009F) become a space;
//   * so do the characters that reorder or break what follows them on screen (Trojan Source,
//     CVE-2021-42574): the bidirectional embeddings, overrides and isolates U+202A–U+202E and
//     U+2066–U+2069, the marks U+200E, U+200F and U+061C, and the line and paragraph separators
//     U+2028 and U+2029;
//   * bytes that are not valid UTF-8 become U+FFFD;
//   * everything else (printable ASCII, valid UTF-8) is kept as it is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/utf8.h"

namespace gpuscope {

// Whether the `len`-byte UTF-8 character at in[i] is one of the layout controls above.
inline bool IsLayoutControl(std::string_view in, size_t i, size_t len) {
  const auto b = [&in, i](size_t k) { return static_cast<unsigned char>(in[i + k]); };
  if (len == 2) return b(0) == 0xD8 && b(1) == 0x9C;  // U+061C
  if (len != 3 || b(0) != 0xE2) return false;
  if (b(1) == 0x80) return b(2) == 0x8E || b(2) == 0x8F || (b(2) >= 0xA8 && b(2) <= 0xAE);
  return b(1) == 0x81 && b(2) >= 0xA6 && b(2) <= 0xA9;  // U+2066–U+2069
}

// What a sanitising pass replaced (the trace reader counts each kind as a diagnostic).
struct SanitizeFixes {
  bool invalid_utf8 = false;
  bool control = false;
};

// Appends the character that starts at in[i], made safe, to *out. Returns the number of input
// bytes it stood for (at least 1). Loops that must treat some characters themselves (the trace
// reader repairing raw JSON text keeps quotes and backslashes) call it for the others.
inline size_t AppendSanitizedChar(std::string_view in, size_t i, std::string* out,
                                  SanitizeFixes* fixes) {
  const unsigned char c = static_cast<unsigned char>(in[i]);
  if (c < 0x80) {
    if (c < 0x20 || c == 0x7F) {
      out->push_back(' ');
      fixes->control = true;
    } else {
      out->push_back(static_cast<char>(c));
    }
    return 1;
  }
  const size_t len = Utf8SequenceLength(in, i);
  if (len == 0) {
    out->append("\xEF\xBF\xBD");
    fixes->invalid_utf8 = true;
    return 1;
  }
  // U+0080–U+009F are encoded C2 80 … C2 9F.
  if ((len == 2 && c == 0xC2 && static_cast<unsigned char>(in[i + 1]) <= 0x9F) ||
      IsLayoutControl(in, i, len)) {
    out->push_back(' ');
    fixes->control = true;
    return len;
  }
  out->append(in.data() + i, len);
  return len;
}

// `in` made safe into *out (replaced, not appended).
inline SanitizeFixes SanitizeText(std::string_view in, std::string* out) {
  SanitizeFixes fixes;
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size();) i += AppendSanitizedChar(in, i, out, &fixes);
  return fixes;
}

inline std::string SanitizeText(std::string_view in) {
  std::string out;
  SanitizeText(in, &out);
  return out;
}

// True when SanitizeText would change `in` (one pass, no copy).
inline bool NeedsSanitizing(std::string_view in) {
  for (size_t i = 0; i < in.size();) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F) return true;
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(in, i);
    if (len == 0 || (len == 2 && c == 0xC2 && static_cast<unsigned char>(in[i + 1]) <= 0x9F) ||
        IsLayoutControl(in, i, len))
      return true;
    i += len;
  }
  return false;
}

// For text already known to be valid UTF-8 (simdjson validated it): any C0, DEL or C1 control,
// or layout control? A branch-light first pass, since the trace reader asks it of every string
// it keeps.
inline bool HasControlCharacter(std::string_view in) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  bool maybe = false;
  for (size_t i = 0; i < n; ++i)
    maybe |= p[i] < 0x20 || p[i] == 0x7F || p[i] == 0xC2 || p[i] == 0xE2 || p[i] == 0xD8;
  if (!maybe) return false;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] < 0x20 || p[i] == 0x7F) return true;
    if (p[i] == 0xC2 && i + 1 < n && p[i + 1] <= 0x9F) return true;
    if ((p[i] == 0xE2 && i + 2 < n && IsLayoutControl(in, i, 3)) ||
        (p[i] == 0xD8 && i + 1 < n && IsLayoutControl(in, i, 2)))
      return true;
  }
  return false;
}

}  // namespace gpuscope
