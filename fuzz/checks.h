// Checks every fuzz target applies to what it renders, so a silent wrong answer or an unsafe
// output is a crash the fuzzer keeps (issue 19): no raw control byte reaches a terminal, every
// JSON output parses with simdjson (our own parser, the strictest consumer we ship) and reads back
// into the same document, and an HTML page carries no <script> element but its JSON data block.
#pragma once

#include <simdjson.h>

#include <cstdarg>
#include <cstdio>
#include <string>

#include "render/document.h"
#include "render/html.h"
#include "render/json.h"
#include "render/text.h"

namespace gpuscope::fuzz {

// Says which check failed (a bare trap leaves only a stack of inlined frames), then traps.
[[noreturn]] __attribute__((format(printf, 1, 2))) inline void Fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  __builtin_trap();
}

// Text for a terminal without colour: newlines only, no C0 control, DEL or ESC.
inline void CheckTerminalText(const std::string& text) {
  for (char c : text)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7F)
      Fail("control byte 0x%02x in the text output", static_cast<unsigned char>(c));
}

inline void CheckJsonParses(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element element;
  if (const auto error = parser.parse(json).get(element); error != simdjson::SUCCESS)
    Fail("the JSON output does not parse: %s", simdjson::error_message(error));
}

// The page's only <script> is the JSON data block: every name from the input is escaped.
inline void CheckHtmlPage(const std::string& page) {
  const size_t first = page.find("<script");
  if (first == std::string::npos || page.find("<script", first + 1) != std::string::npos)
    Fail("the HTML page does not have exactly one <script> element");
}

// Every view of a document: text (terse and verbose, no colour), JSON (parses, reads back into
// the same document) and HTML.
inline void CheckDocument(const render::Document& doc) {
  for (bool verbose : {false, true}) {
    const std::string text = render::RenderText(doc, {false, verbose, 100});
    if (text.empty()) Fail("empty text output");
    CheckTerminalText(text);
  }
  const std::string json = render::ToJson(doc);
  CheckJsonParses(json);
  auto back = render::FromJson(json, "fuzz.json");
  if (!back.ok()) Fail("the JSON does not read back: %s", back.status().message().c_str());
  if (!(*back == render::AsReadBack(doc))) Fail("the JSON reads back into a different document");
  CheckHtmlPage(render::RenderHtml(doc));
}

}  // namespace gpuscope::fuzz
