// The terminal view of any document. It knows items, not analyses: a row is one line of labelled
// values, a table is aligned columns, a finding is a numbered paragraph.
#pragma once

#include <cstddef>
#include <string>

#include "render/document.h"

namespace gpuscope::render {

struct TextOptions {
  bool color = false;    // ANSI colour (a terminal)
  bool verbose = false;  // every table row, not only the first text_rows
  size_t width = 0;      // wrap lines to this many columns; 0: no wrapping (a pipe or file)
};

std::string RenderText(const Document& doc, const TextOptions& options);

// Breaks lines longer than `width` columns at a space (after a " · " separator where there is
// one); continuation lines are indented by `indent` spaces. ANSI colour codes take no column.
std::string FitToWidth(const std::string& text, size_t width, size_t indent);
// Columns a UTF-8 string takes on a terminal (one per code point; ANSI escapes take none).
size_t DisplayWidth(std::string_view s);
// At most `max_columns` columns, cut on a code point and ended with "…" when cut.
std::string Ellipsize(std::string_view s, size_t max_columns);
// Control characters (C0, DEL, C1, ESC sequences) replaced by U+FFFD; invalid UTF-8 likewise.
std::string SanitizeForTerminal(std::string_view s);

}  // namespace gpuscope::render
