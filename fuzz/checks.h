// Checks every fuzz target applies to what it renders, so a silent wrong answer or an unsafe
// output is a crash the fuzzer keeps (issue 19): no raw control byte reaches a terminal, every
// JSON output parses with simdjson (our own parser, the strictest consumer we ship) and reads back
// into the same document, and an HTML page carries no <script> element but its JSON data block.
#pragma once

#include <simdjson.h>

#include <cstdarg>
#include <cstdio>
#include <deque>
#include <string>
#include <variant>

#include "analyze/invariants.h"
#include "model/columns.h"
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

// Every analysis invariant (analyze/invariants.h) holds on one rank's results; traps naming each
// one violated.
inline void CheckInvariantsHold(const analyze::RankResults& rank) {
  const std::vector<std::string> violations = analyze::CheckInvariants(analyze::ViewOf(rank));
  for (const std::string& v : violations)
    std::fprintf(stderr, "invariant violated: %s\n", v.c_str());
  if (!violations.empty()) Fail("%zu invariant(s) violated", violations.size());
}

// What a reader gives: every column of a table as long as the table, every collective and sync
// wait naming a GPU row (model/columns.h).
inline void CheckColumnsAligned(const Trace& trace) {
  const std::string problem = model::MisalignedColumns(trace);
  if (!problem.empty()) Fail("misaligned trace model: %s", problem.c_str());
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

// Where two documents first differ, as a path of section and item keys, down to the field, cell
// or attribute: what a failed round trip prints.
inline std::string ItemDifference(const render::Item& a, const render::Item& b) {
  if (a.index() != b.index()) return "item type";
  if (const auto* ra = std::get_if<render::Row>(&a)) {
    const auto& rb = std::get<render::Row>(b);
    for (size_t i = 0; i < ra->fields.size() && i < rb.fields.size(); ++i)
      if (!(ra->fields[i] == rb.fields[i])) return "field " + ra->fields[i].key;
    return "row attributes";
  }
  if (const auto* ta = std::get_if<render::Table>(&a)) {
    const auto& tb = std::get<render::Table>(b);
    if (!(ta->columns == tb.columns)) return "columns";
    for (size_t i = 0; i < ta->rows.size() && i < tb.rows.size(); ++i)
      for (size_t j = 0; j < ta->rows[i].size() && j < tb.rows[i].size(); ++j)
        if (!(ta->rows[i][j] == tb.rows[i][j]))
          return "row " + std::to_string(i) + " column " +
                 (j < ta->columns.size() ? ta->columns[j].key : std::to_string(j));
    return "table attributes or row count";
  }
  if (const auto* fa = std::get_if<render::Finding>(&a)) {
    const auto& fb = std::get<render::Finding>(b);
    for (size_t i = 0; i < fa->evidence.size() && i < fb.evidence.size(); ++i)
      if (!(fa->evidence[i] == fb.evidence[i])) return "evidence " + fa->evidence[i].key;
    return "finding attributes";
  }
  return "content";
}

inline std::string SectionDifference(const std::deque<render::Section>& a,
                                     const std::deque<render::Section>& b) {
  if (a.size() != b.size()) return "section count";
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    const std::string at = a[i].key + "/";
    if (a[i].items.size() != b[i].items.size()) return at + "item count";
    for (size_t k = 0; k < a[i].items.size(); ++k)
      if (!(a[i].items[k] == b[i].items[k]))
        return at + render::ItemKey(a[i].items[k]) + ": " +
               ItemDifference(a[i].items[k], b[i].items[k]);
    if (!(a[i].sections == b[i].sections))
      return at + SectionDifference(a[i].sections, b[i].sections);
    return at + "section attributes";
  }
  return "document attributes";
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
  const render::Document expected = render::AsReadBack(doc);
  if (!(*back == expected))
    Fail("the JSON reads back into a different document at %s",
         SectionDifference(expected.sections, back->sections).c_str());
  CheckHtmlPage(render::RenderHtml(doc));
}

}  // namespace gpuscope::fuzz
