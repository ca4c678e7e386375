#include "render/text.h"

#include <algorithm>
#include <cctype>

#include "base/sanitize.h"
#include "base/utf8.h"
#include "render/format.h"

namespace gpuscope::render {

namespace {

constexpr size_t kLabelWidth = 11;       // "  label      value": the label column of rows
constexpr size_t kTextCellColumns = 48;  // names in tables are cut here (JSON and HTML have all)

const char* kBold = "\033[1m";
const char* kReset = "\033[0m";

const char* SeverityColor(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return "\033[31m";
    case Severity::kWarning:
      return "\033[33m";
    case Severity::kInfo:
      break;
  }
  return "\033[36m";
}

std::string Pad(std::string_view s, size_t width) {
  std::string out(s);
  const size_t w = DisplayWidth(s);
  if (w < width) out.append(width - w, ' ');
  return out;
}

std::string PadLeft(std::string_view s, size_t width) {
  const size_t w = DisplayWidth(s);
  std::string out;
  if (w < width) out.append(width - w, ' ');
  out += s;
  return out;
}

bool IsConnector(std::string_view label) { return label == "→" || label == "–"; }

std::string FieldsText(const std::vector<Field>& fields, const char* sep, bool verbose) {
  std::string out;
  for (const Field& f : fields) {
    if (f.detail && !verbose) continue;
    // "→" and "–" join a value to the one before it: "175.153 ms → 126.183 ms".
    if (!out.empty()) out += IsConnector(f.label) ? " " : sep;
    if (!f.label.empty()) out += SanitizeForTerminal(f.label) + " ";
    out += SanitizeForTerminal(FormatValue(f.value));
  }
  return out;
}

struct Writer {
  const TextOptions& opt;
  std::string out;

  void Line(const std::string& line, size_t indent_next) {
    if (opt.width > 0)
      out += FitToWidth(line, opt.width, indent_next);
    else
      out += line;
    out += '\n';
  }

  void RowItem(const Row& r, size_t indent) {
    if (r.detail && !opt.verbose) return;
    std::string line(indent, ' ');
    line += Pad(SanitizeForTerminal(r.label), kLabelWidth);
    const std::string fields = FieldsText(r.fields, " · ", opt.verbose);
    if (!fields.empty() || !r.note.empty()) line += ' ';
    line += fields;
    if (!r.note.empty()) {
      if (!fields.empty()) line += ' ';
      line += SanitizeForTerminal(r.note);
    }
    Line(line, indent + kLabelWidth + 1);
  }

  void TableItem(const Table& t, size_t indent) {
    if (t.rows.empty() || (t.text_rows <= 0 && !opt.verbose)) return;
    if (!t.title.empty()) Line(std::string(indent, ' ') + SanitizeForTerminal(t.title), indent + 2);
    const size_t shown =
        opt.verbose ? t.rows.size()
                    : std::min(t.rows.size(), static_cast<size_t>(std::max(0, t.text_rows)));
    std::vector<size_t> shown_columns;
    for (size_t c = 0; c < t.columns.size(); ++c)
      if (!t.columns[c].detail || opt.verbose) shown_columns.push_back(c);
    std::vector<std::vector<std::string>> cells;
    std::vector<size_t> widths(t.columns.size(), 0);
    std::vector<bool> numeric(t.columns.size(), true);
    // Column labels too: a document read from a file (a summary) carries its own.
    std::vector<std::string> labels;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      labels.push_back(SanitizeForTerminal(t.columns[c].label));
      widths[c] = DisplayWidth(labels[c]);
    }
    for (size_t r = 0; r < shown; ++r) {
      std::vector<std::string> row;
      for (size_t c = 0; c < t.columns.size(); ++c) {
        const Value& v = c < t.rows[r].size() ? t.rows[r][c] : Value::Na();
        std::string s = SanitizeForTerminal(FormatValue(v));
        if (v.kind == Value::Kind::kText) {
          numeric[c] = false;
          if (!t.columns[c].whole) s = Ellipsize(s, kTextCellColumns);
        }
        widths[c] = std::max(widths[c], DisplayWidth(s));
        row.push_back(std::move(s));
      }
      cells.push_back(std::move(row));
    }
    // A table wider than the terminal is printed in blocks of columns that fit, each block
    // repeating the first column (the row's name), so columns stay aligned and nothing wraps.
    std::vector<std::vector<size_t>> blocks;
    if (shown_columns.empty()) return;
    const size_t first = shown_columns.front();
    blocks.push_back({first});
    size_t used = indent + 2 + widths[first];
    for (size_t k = 1; k < shown_columns.size(); ++k) {
      const size_t c = shown_columns[k];
      if (opt.width > 0 && used + 2 + widths[c] > opt.width && blocks.back().size() > 1) {
        blocks.push_back({first});
        used = indent + 2 + widths[first];
      }
      blocks.back().push_back(c);
      used += 2 + widths[c];
    }
    for (const std::vector<size_t>& block : blocks) {
      std::string header(indent + 2, ' ');
      for (size_t c : block) {
        if (c != block.front()) header += "  ";
        header += numeric[c] ? PadLeft(labels[c], widths[c]) : Pad(labels[c], widths[c]);
      }
      while (!header.empty() && header.back() == ' ') header.pop_back();
      out += opt.color ? std::string(kBold) + header + kReset : header;
      out += '\n';
      for (const auto& row : cells) {
        std::string line(indent + 2, ' ');
        for (size_t c : block) {
          if (c != block.front()) line += "  ";
          line += numeric[c] ? PadLeft(row[c], widths[c]) : Pad(row[c], widths[c]);
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line;
        out += '\n';
      }
    }
    if (shown < t.rows.size())
      Line(std::string(indent + 2, ' ') + "… " + GroupDigits(t.rows.size() - shown) +
               " more (--verbose, --json or --html show all)",
           indent + 4);
  }

  void FindingItem(const Finding& f, int number, size_t indent) {
    std::string head(indent, ' ');
    head += std::to_string(number) + ". ";
    std::string title = SanitizeForTerminal(f.title);
    if (opt.color) title = std::string(SeverityColor(f.severity)) + title + kReset;
    head += title;
    if (!f.saving.is_na() && f.saving.AsDouble() > 0) {
      head += " — saves ~" + FormatSaving(f.saving) + " per step";
      if (!f.saving_share.is_na()) head += " (" + FormatShare(f.saving_share.AsDouble(), 0) + ")";
      if (const std::string alone = AloneText(f); !alone.empty()) head += " " + alone;
    }
    const size_t body = indent + 3;
    Line(head, body);
    if (!f.evidence.empty()) {
      std::string ev(body, ' ');
      ev += "evidence (confidence " + FormatShare(f.confidence, 0) + "): ";
      ev += FieldsText(f.evidence, "; ", opt.verbose);
      Line(ev, body + 2);
    }
    if (!f.fix.empty())
      Line(std::string(body, ' ') + "fix: " + SanitizeForTerminal(f.fix), body + 2);
  }

  void SectionItems(const Section& s, size_t indent) {
    int finding_number = 0;
    std::string minor;
    for (const Item& item : s.items) {
      if (const Row* r = std::get_if<Row>(&item))
        RowItem(*r, indent);
      else if (const Table* t = std::get_if<Table>(&item))
        TableItem(*t, indent);
      else if (const Finding* f = std::get_if<Finding>(&item)) {
        if (IsMinor(*f) && finding_number > 0)
          minor += (minor.empty() ? "" : "; ") + SanitizeForTerminal(f->title);
        else
          FindingItem(*f, ++finding_number, indent);
      } else if (const Text* x = std::get_if<Text>(&item)) {
        if (x->code) {
          // Preformatted: each line as written (sanitised), never wrapped.
          size_t start = 0;
          while (start < x->text.size()) {
            size_t end = x->text.find('\n', start);
            if (end == std::string::npos) end = x->text.size();
            out += std::string(indent + 2, ' ') +
                   SanitizeForTerminal(x->text.substr(start, end - start)) + "\n";
            start = end + 1;
          }
        } else {
          Line(std::string(indent, ' ') + SanitizeForTerminal(x->text), indent);
        }
      }
      // Charts: the numbers they draw are in rows and tables; a terminal shows those.
    }
    if (!minor.empty())
      Line(std::string(indent, ' ') + "minor (each under 1 % of a step): " + minor, indent + 2);
  }

  // Whether a terminal shows anything of the section: charts alone ("over time" of a recording)
  // are drawn only in HTML, and a heading over nothing is noise.
  bool ShowsText(const Section& s) const {
    if (!(s.views & kViewText)) return false;
    for (const Item& item : s.items) {
      const Table* t = std::get_if<Table>(&item);
      if (t ? !t->rows.empty() && (t->text_rows > 0 || opt.verbose)
            : !std::holds_alternative<Chart>(item))
        return true;
    }
    return std::any_of(s.sections.begin(), s.sections.end(),
                       [this](const Section& c) { return ShowsText(c); });
  }

  void SectionOut(const Section& s, size_t depth) {
    if (!ShowsText(s)) return;
    if (s.text_inline) {
      SectionItems(s, depth * 2);
      for (const Section& child : s.sections) SectionOut(child, depth);
      return;
    }
    const size_t indent = depth * 2;
    if (!s.title.empty()) {
      std::string title(indent, ' ');
      title += SanitizeForTerminal(s.title);
      Line(opt.color ? std::string(kBold) + title + kReset : title, indent + 2);
    }
    SectionItems(s, s.title.empty() ? indent : indent + 2);
    for (const Section& child : s.sections)
      SectionOut(child, s.title.empty() || child.text_inline ? depth + (s.title.empty() ? 0 : 1)
                                                             : depth + 1);
  }
};

}  // namespace

size_t DisplayWidth(std::string_view s) {
  size_t w = 0;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0x1B) {  // ESC [ … final byte: a colour code
      ++i;
      if (i < s.size() && s[i] == '[') {
        ++i;
        while (i < s.size() && !(s[i] >= 0x40 && s[i] <= 0x7E)) ++i;
        ++i;
      }
      continue;
    }
    const size_t len = c < 0x80 ? 1 : Utf8SequenceLength(s, i);
    i += len == 0 ? 1 : len;
    ++w;
  }
  return w;
}

std::string Ellipsize(std::string_view s, size_t max_columns) {
  if (DisplayWidth(s) <= max_columns || max_columns == 0) return std::string(s);
  std::string out;
  size_t w = 0;
  for (size_t i = 0; i < s.size() && w + 1 < max_columns;) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : Utf8SequenceLength(s, i);
    if (len == 0) len = 1;
    out.append(s.substr(i, len));
    i += len;
    ++w;
  }
  return out + "…";
}

std::string SanitizeForTerminal(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  AppendUtf8Escaped(
      s, &out, kUtf8Replacement,
      [](unsigned char c, std::string* o) {
        if (c < 0x20 || c == 0x7F)
          o->append(kUtf8Replacement);
        else
          o->push_back(static_cast<char>(c));
      },
      [](std::string_view seq, std::string* o) {
        // C1 controls (U+0080–U+009F, UTF-8 C2 80–C2 9F) act as escapes on some terminals;
        // bidirectional overrides and line separators reorder or break what follows.
        const bool c1 = seq.size() == 2 && static_cast<unsigned char>(seq[0]) == 0xC2 &&
                        static_cast<unsigned char>(seq[1]) < 0xA0;
        o->append(c1 || IsLayoutControl(seq, 0, seq.size()) ? kUtf8Replacement : seq);
      });
  return out;
}

namespace {

// A space between a number and its unit ("15.0 %", "3.87 ms"): a line never breaks there.
bool NumberUnitSpace(std::string_view s, size_t space) {
  if (space == 0 || !std::isdigit(static_cast<unsigned char>(s[space - 1]))) return false;
  static constexpr std::string_view kUnits[] = {
      "%",   "ns",  "µs",  "ms",  "s", "min", "h",   "B",  "kB",      "KB",   "MB",   "GB",  "TB",
      "KiB", "MiB", "GiB", "TiB", "W", "MHz", "GHz", "°C", "TFLOP/s", "GB/s", "MB/s", "TB/s"};
  const std::string_view after = s.substr(space + 1);
  for (std::string_view u : kUnits) {
    if (!after.starts_with(u)) continue;
    const std::string_view tail = after.substr(u.size());
    if (tail.empty() || tail[0] == ' ' || tail[0] == ';' || tail[0] == ',' || tail[0] == ')' ||
        tail[0] == '.')
      return true;
  }
  return false;
}

}  // namespace

std::string FitToWidth(const std::string& text, size_t width, size_t indent) {
  if (width == 0 || DisplayWidth(text) <= width) return text;
  std::string out;
  std::string_view rest(text);
  size_t line_indent = 0;
  while (true) {
    const size_t avail = width > line_indent + 10 ? width - line_indent : 10;
    if (DisplayWidth(rest) <= avail) {
      out += rest;
      break;
    }
    // Byte offset of the column limit.
    size_t cols = 0, limit = 0;
    for (size_t i = 0; i < rest.size() && cols <= avail;) {
      const unsigned char c = static_cast<unsigned char>(rest[i]);
      size_t len = c < 0x80 ? 1 : Utf8SequenceLength(rest, i);
      if (len == 0) len = 1;
      limit = i;
      i += len;
      ++cols;
    }
    // Prefer a break after " · ", else at the last space, else after the last '/' (a path breaks
    // between its parts, never inside a name), else a hard cut.
    size_t cut = std::string_view::npos;
    const size_t dot = rest.substr(0, limit).rfind(" · ");
    size_t space = rest.substr(0, limit).rfind(' ');
    while (space != std::string_view::npos && space > 0 && NumberUnitSpace(rest, space))
      space = rest.substr(0, space).rfind(' ');
    const size_t slash = rest.substr(0, limit).rfind('/');
    // Not inside the line's leading indentation.
    const size_t lead = std::max(line_indent, std::min(rest.find_first_not_of(' '), limit));
    if (dot != std::string_view::npos && dot > limit / 2)
      cut = dot + std::string_view(" · ").size() - 1;
    else if (space != std::string_view::npos && space > lead)
      cut = space;
    else if (slash != std::string_view::npos && slash + 1 > lead && slash + 1 < rest.size())
      cut = slash + 1;
    if (cut == std::string_view::npos || cut == 0) cut = limit;
    std::string_view head = rest.substr(0, cut);
    while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
    out += head;
    out += '\n';
    out.append(indent, ' ');
    rest = rest.substr(cut);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    line_indent = indent;
    if (rest.empty()) break;
  }
  return out;
}

std::string RenderText(const Document& doc, const TextOptions& options) {
  Writer w{options, {}};
  if (!doc.title.empty()) {
    const std::string t = SanitizeForTerminal(doc.title);
    w.Line(options.color ? std::string(kBold) + t + kReset : t, 2);
  }
  if (!doc.subtitle.empty()) w.Line(SanitizeForTerminal(doc.subtitle), 2);
  // A blank line between sections that print something (a section may be hidden from text, or
  // hold only detail).
  for (const Section& s : doc.sections) {
    std::string before = std::move(w.out);
    w.out.clear();
    w.SectionOut(s, 0);
    if (!w.out.empty() && !before.empty()) before += '\n';
    w.out = before + w.out;
  }
  return w.out;
}

}  // namespace gpuscope::render
