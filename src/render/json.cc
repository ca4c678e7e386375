#include "render/json.h"

#include <simdjson.h>

#include <cmath>

#include "base/enum_names.h"
#include "render/json_writer.h"

namespace gpuscope::render {

namespace {

bool IsIntegerUnit(Unit unit) {
  return unit == Unit::kNanos || unit == Unit::kBytes || unit == Unit::kCount ||
         unit == Unit::kTimestamp;
}

void WriteScalar(const Value& v, JsonWriter* w) {
  switch (v.kind) {
    case Value::Kind::kNull:
      w->Null();
      break;
    case Value::Kind::kInt:
      w->Int(v.i);  // beyond 2^53: an exponent with every digit (JsonWriter::Int)
      break;
    case Value::Kind::kDouble:
      w->ShortestDouble(v.d);
      break;
    case Value::Kind::kText:
      w->String(v.text);
      break;
    case Value::Kind::kBool:
      w->Bool(v.i != 0);
      break;
  }
}

// {"label": "...", "value": 1.0, "unit": "ns"[, "precision": 2]}
void WriteField(const Field& f, JsonWriter* w) {
  w->Key(f.key).BeginObject();
  w->Key("label").String(f.label);
  w->Key("value");
  WriteScalar(f.value, w);
  w->Key("unit").String(UnitName(f.value.unit));
  if (f.value.precision >= 0) w->Key("precision").Int(f.value.precision);
  if (f.value.show_sign) w->Key("signed").Bool(true);
  if (f.value.binary) w->Key("binary").Bool(true);
  if (f.detail) w->Key("detail").Bool(true);
  w->EndObject();
}

void WriteFields(const char* key, const std::vector<Field>& fields, JsonWriter* w) {
  w->Key(key).BeginObject();
  for (const Field& f : fields) WriteField(f, w);
  w->EndObject();
}

void WriteItem(const Row& r, JsonWriter* w) {
  w->Key("type").String("row");
  w->Key("label").String(r.label);
  if (!r.note.empty()) w->Key("note").String(r.note);
  if (r.detail) w->Key("detail").Bool(true);
  WriteFields("fields", r.fields, w);
}

void WriteItem(const Table& t, JsonWriter* w) {
  w->Key("type").String("table");
  w->Key("title").String(t.title);
  w->Key("text_rows").Int(t.text_rows);
  w->Key("columns").BeginArray();
  for (size_t c = 0; c < t.columns.size(); ++c) {
    // A column's unit and precision are those of its first non-null cell (AddRow keeps a column
    // uniform); a column of only n/a cells says so.
    Value proto = Value::Na();
    for (const auto& row : t.rows)
      if (c < row.size() && !row[c].is_na()) {
        proto = row[c];
        break;
      }
    if (proto.is_na())
      for (const auto& row : t.rows)
        if (c < row.size()) {
          proto = row[c];
          break;
        }
    w->BeginObject();
    w->Key("key").String(t.columns[c].key);
    w->Key("label").String(t.columns[c].label);
    w->Key("unit").String(UnitName(proto.unit));
    if (proto.precision >= 0) w->Key("precision").Int(proto.precision);
    if (proto.show_sign) w->Key("signed").Bool(true);
    if (proto.binary) w->Key("binary").Bool(true);
    if (t.columns[c].detail) w->Key("detail").Bool(true);
    if (t.columns[c].whole) w->Key("whole").Bool(true);
    w->EndObject();
  }
  w->EndArray();
  w->Key("rows").BeginArray();
  for (const auto& row : t.rows) {
    w->BeginObject();
    for (size_t c = 0; c < t.columns.size() && c < row.size(); ++c) {
      w->Key(t.columns[c].key);
      WriteScalar(row[c], w);
    }
    w->EndObject();
  }
  w->EndArray();
}

constexpr EnumNames<Chart::Kind, 4> kChartKindNames({Chart::Kind::kStackedBars, "stacked_bars"},
                                                    {Chart::Kind::kLines, "lines"},
                                                    {Chart::Kind::kHeatmap, "heatmap"},
                                                    {Chart::Kind::kTimeline, "timeline"});

const char* ChartKindName(Chart::Kind kind) { return CNameOf(kChartKindNames, kind); }

void WriteItem(const Chart& c, JsonWriter* w) {
  w->Key("type").String("chart");
  w->Key("kind").String(ChartKindName(c.kind));
  w->Key("title").String(c.title);
  w->Key("unit").String(UnitName(c.unit));
  w->Key("x_unit").String(UnitName(c.x_unit));
  w->Key("categories").BeginArray();
  for (const std::string& s : c.categories) w->String(s);
  w->EndArray();
  w->Key("x").BeginArray();
  for (double x : c.x) w->ShortestDouble(x);
  w->EndArray();
  w->Key("series").BeginArray();
  for (const Series& s : c.series) {
    w->BeginObject();
    w->Key("key").String(s.key);
    w->Key("label").String(s.label);
    w->Key("values").BeginArray();
    for (double v : s.values) w->ShortestDouble(v);
    w->EndArray();
    if (!s.notes.empty()) {
      w->Key("notes").BeginArray();
      for (const std::string& n : s.notes) w->String(n);
      w->EndArray();
    }
    w->EndObject();
  }
  w->EndArray();
  WriteFields("reference_lines", c.reference_lines, w);
  if (c.x_band.size() == 2) {
    w->Key("x_band").BeginArray(true);
    w->ShortestDouble(c.x_band[0]).ShortestDouble(c.x_band[1]);
    w->EndArray();
  }
  if (c.kind == Chart::Kind::kTimeline) {  // [lane, series, start, end]: compact, there are many
    w->Key("segments").BeginArray();
    // Whole numbers (ns) as integers; anything else as the shortest double.
    auto number = [w](double v) {
      if (v == std::trunc(v) && std::fabs(v) <= static_cast<double>(JsonWriter::kMaxExactInteger))
        w->Int(static_cast<int64_t>(v));
      else
        w->ShortestDouble(v);
    };
    for (const Segment& s : c.segments) {
      w->BeginArray(true);
      w->Int(s.lane).Int(s.series);
      number(s.start);
      number(s.end);
      w->EndArray();
    }
    w->EndArray();
    if (!c.segment_labels.empty()) {
      w->Key("segment_labels").BeginArray();
      for (const std::string& l : c.segment_labels) w->String(l);
      w->EndArray();
    }
  }
}

void WriteItem(const Finding& f, JsonWriter* w) {
  w->Key("type").String("finding");
  w->Key("title").String(f.title);
  w->Key("severity").String(SeverityName(f.severity));
  w->Key("saving_ns");
  WriteScalar(f.saving, w);
  w->Key("saving_share");
  WriteScalar(f.saving_share, w);
  if (!f.saving_alone.is_na()) {
    w->Key("saving_alone_ns");
    WriteScalar(f.saving_alone, w);
  }
  w->Key("saving_assumption").String(f.saving_assumption);
  w->Key("confidence").ShortestDouble(f.confidence);
  WriteFields("evidence", f.evidence, w);
  w->Key("fix").String(f.fix);
}

void WriteItem(const Text& t, JsonWriter* w) {
  w->Key("type").String("text");
  w->Key("text").String(t.text);
  if (t.code) w->Key("code").Bool(true);
}

const char* ViewsName(uint8_t views) {
  switch (views) {
    case kViewText:
      return "text";
    case kViewHtml:
      return "html";
    case 0:
      return "none";
    default:
      return "all";
  }
}

void WriteSection(const Section& s, JsonWriter* w) {
  w->Key(s.key).BeginObject();
  w->Key("title").String(s.title);
  if (s.views != kViewAll) w->Key("views").String(ViewsName(s.views));
  if (s.text_inline) w->Key("text_inline").Bool(true);
  if (s.collapsed) w->Key("collapsed").Bool(true);
  w->Key("items").BeginObject();
  for (const Item& item : s.items) {
    w->Key(ItemKey(item)).BeginObject();
    std::visit([w](const auto& x) { WriteItem(x, w); }, item);
    w->EndObject();
  }
  w->EndObject();
  if (!s.sections.empty()) {
    w->Key("sections").BeginObject();
    for (const Section& child : s.sections) WriteSection(child, w);
    w->EndObject();
  }
  w->EndObject();
}

// ---- reading back -------------------------------------------------------------------------------

using simdjson::dom::element;
using simdjson::dom::object;

struct Reader {
  const std::string& source;
  std::string error;  // first problem found, with its JSON path

  bool Fail(const std::string& path, const std::string& what) {
    if (error.empty()) error = path + ": " + what;
    return false;
  }

  bool Str(element e, const std::string& path, std::string* out) {
    std::string_view sv;
    if (e.get(sv)) return Fail(path, "expected a string");
    *out = std::string(sv);
    return true;
  }
  bool OptStr(object o, const char* key, const std::string& path, std::string* out) {
    element e;
    if (o[key].get(e)) return true;
    return Str(e, path + "." + key, out);
  }
  bool Num(element e, const std::string& path, double* out) {
    if (e.is_double()) return !e.get(*out);
    int64_t i;
    if (!e.get(i)) {
      *out = static_cast<double>(i);
      return true;
    }
    uint64_t u;
    if (!e.get(u)) {
      *out = static_cast<double>(u);
      return true;
    }
    return Fail(path, "expected a number");
  }

  // A JSON scalar back into a Value of `unit`: integers of integer units stay integers.
  bool Scalar(element e, Unit unit, int precision, const std::string& path, Value* out) {
    if (e.is_null()) {
      *out = Value::Na(unit);
      return true;
    }
    if (e.is_bool()) {
      bool b = false;
      if (e.get(b)) return Fail(path, "expected a boolean");
      *out = Value::Bool(b);
      return true;
    }
    if (e.is_string()) {
      std::string s;
      if (!Str(e, path, &s)) return false;
      *out = Value::Text(std::move(s));
      return true;
    }
    if (e.is_int64() || e.is_uint64()) {
      int64_t i;
      if (e.get(i)) return Fail(path, "integer beyond int64");
      *out = Value::Int(i, unit);
      out->precision = static_cast<int8_t>(precision);
      return true;
    }
    double d;
    if (!Num(e, path, &d)) return false;
    // Integers beyond 2^53 are written as doubles (JsonWriter::Int); in an integer unit such a
    // double comes back as the nearest integer. Below 2^53 a double stays a double (a mean count
    // per step), so its kind round-trips.
    // 9.2e18 itself is what Value::BinaryBytes saturates at: an integer too.
    if (IsIntegerUnit(unit) && std::fabs(d) > static_cast<double>(kMaxExactJsonInteger) &&
        std::fabs(d) <= 9.2e18) {
      *out = Value::Int(static_cast<int64_t>(d), unit);
      out->precision = static_cast<int8_t>(precision);
      return true;
    }
    *out = Value::Number(d, precision, unit);
    return true;
  }

  bool UnitOf(object o, const std::string& path, Unit* unit, int* precision) {
    std::string name = "number";
    if (!OptStr(o, "unit", path, &name)) return false;
    if (!UnitFromName(name, unit)) return Fail(path + ".unit", "unknown unit '" + name + "'");
    *precision = -1;
    int64_t p;
    if (!o["precision"].get(p)) *precision = static_cast<int>(p);
    return true;
  }

  bool Fields(object parent, const char* key, const std::string& path, std::vector<Field>* out) {
    object o;
    if (parent[key].get(o)) return Fail(path + "." + key, "expected an object");
    for (auto [k, v] : o) {
      const std::string p = path + "." + key + "." + std::string(k);
      object fo;
      if (v.get(fo)) return Fail(p, "expected an object");
      Field f;
      f.key = std::string(k);
      if (!OptStr(fo, "label", p, &f.label)) return false;
      Unit unit;
      int precision;
      if (!UnitOf(fo, p, &unit, &precision)) return false;
      element ve;
      if (fo["value"].get(ve)) return Fail(p, "missing value");
      if (!Scalar(ve, unit, precision, p + ".value", &f.value)) return false;
      bool sign = false;
      if (!fo["signed"].get(sign)) f.value.show_sign = sign;
      bool binary = false;
      if (!fo["binary"].get(binary)) f.value.binary = binary;
      bool detail = false;
      if (!fo["detail"].get(detail)) f.detail = detail;
      out->push_back(std::move(f));
    }
    return true;
  }

  bool ReadRow(object o, const std::string& key, const std::string& path, Item* out) {
    Row r;
    r.key = key;
    if (!OptStr(o, "label", path, &r.label) || !OptStr(o, "note", path, &r.note)) return false;
    if (!Fields(o, "fields", path, &r.fields)) return false;
    bool detail = false;
    if (!o["detail"].get(detail)) r.detail = detail;
    *out = std::move(r);
    return true;
  }

  bool ReadTable(object o, const std::string& key, const std::string& path, Item* out) {
    Table t;
    t.key = key;
    if (!OptStr(o, "title", path, &t.title)) return false;
    int64_t text_rows;
    if (!o["text_rows"].get(text_rows)) t.text_rows = static_cast<int>(text_rows);
    simdjson::dom::array cols, rows;
    if (o["columns"].get(cols)) return Fail(path + ".columns", "expected an array");
    std::vector<std::pair<Unit, int>> units;
    std::vector<bool> signs, binaries;
    for (element c : cols) {
      object co;
      if (c.get(co)) return Fail(path + ".columns", "expected objects");
      Column col;
      if (!OptStr(co, "key", path, &col.key) || !OptStr(co, "label", path, &col.label))
        return false;
      Unit unit;
      int precision;
      if (!UnitOf(co, path + ".columns", &unit, &precision)) return false;
      units.emplace_back(unit, precision);
      bool sign = false;
      if (co["signed"].get(sign)) sign = false;
      signs.push_back(sign);
      bool binary = false;
      if (co["binary"].get(binary)) binary = false;
      binaries.push_back(binary);
      bool detail = false;
      if (!co["detail"].get(detail)) col.detail = detail;
      bool whole = false;
      if (!co["whole"].get(whole)) col.whole = whole;
      t.columns.push_back(std::move(col));
    }
    if (o["rows"].get(rows)) return Fail(path + ".rows", "expected an array");
    for (element r : rows) {
      object ro;
      if (r.get(ro)) return Fail(path + ".rows", "expected objects");
      std::vector<Value> cells;
      for (size_t c = 0; c < t.columns.size(); ++c) {
        element ce;
        Value v = Value::Na(units[c].first);
        if (!ro[t.columns[c].key].get(ce) &&
            !Scalar(ce, units[c].first, units[c].second, path + ".rows", &v))
          return false;
        if (v.kind == Value::Kind::kInt || v.kind == Value::Kind::kDouble) {
          v.show_sign = signs[c];
          v.binary = binaries[c];
        }
        cells.push_back(std::move(v));
      }
      t.rows.push_back(std::move(cells));
    }
    *out = std::move(t);
    return true;
  }

  bool Doubles(object o, const char* key, const std::string& path, std::vector<double>* out) {
    simdjson::dom::array a;
    if (o[key].get(a)) return Fail(path + "." + key, "expected an array");
    for (element e : a) {
      double d = std::nan("");
      if (!e.is_null() && !Num(e, path + "." + key, &d)) return false;
      out->push_back(d);
    }
    return true;
  }

  // An optional array of strings: absent leaves `out` empty; present, it must hold `count`.
  bool OptStrings(object o, const char* key, const std::string& path, size_t count,
                  const char* expected, std::vector<std::string>* out) {
    simdjson::dom::array a;
    if (o[key].get(a)) return true;
    for (element e : a) {
      std::string text;
      if (!Str(e, path + "." + key, &text)) return false;
      out->push_back(std::move(text));
    }
    if (out->size() != count) return Fail(path + "." + key, std::string("expected ") + expected);
    return true;
  }

  bool ReadChart(object o, const std::string& key, const std::string& path, Item* out) {
    Chart c;
    c.key = key;
    std::string kind, unit = "number", x_unit = "number";
    if (!OptStr(o, "kind", path, &kind) || !OptStr(o, "title", path, &c.title) ||
        !OptStr(o, "unit", path, &unit) || !OptStr(o, "x_unit", path, &x_unit))
      return false;
    if (!kind.empty()) {
      const std::optional<Chart::Kind> named = FromName(kChartKindNames, kind);
      if (!named) return Fail(path + ".kind", "unknown chart kind \"" + kind + "\"");
      c.kind = *named;
    }
    if (!UnitFromName(unit, &c.unit) || !UnitFromName(x_unit, &c.x_unit))
      return Fail(path, "unknown unit");
    simdjson::dom::array cats, series;
    if (o["categories"].get(cats)) return Fail(path + ".categories", "expected an array");
    for (element e : cats) {
      std::string s;
      if (!Str(e, path + ".categories", &s)) return false;
      c.categories.push_back(std::move(s));
    }
    if (!Doubles(o, "x", path, &c.x)) return false;
    if (o["series"].get(series)) return Fail(path + ".series", "expected an array");
    for (element e : series) {
      object so;
      if (e.get(so)) return Fail(path + ".series", "expected objects");
      Series s;
      if (!OptStr(so, "key", path, &s.key) || !OptStr(so, "label", path, &s.label) ||
          !Doubles(so, "values", path + ".series", &s.values))
        return false;
      if (!OptStrings(so, "notes", path + ".series", s.values.size(), "one note per value",
                      &s.notes))
        return false;
      c.series.push_back(std::move(s));
    }
    if (!Fields(o, "reference_lines", path, &c.reference_lines)) return false;
    if (o["x_band"].error() == simdjson::SUCCESS && !Doubles(o, "x_band", path, &c.x_band))
      return false;
    if (!c.x_band.empty() && c.x_band.size() != 2)
      return Fail(path + ".x_band", "expected [from, to]");
    simdjson::dom::array segments;
    if (c.kind == Chart::Kind::kTimeline && !o["segments"].get(segments)) {
      for (element e : segments) {
        simdjson::dom::array quad;
        double v[4];
        size_t n = 0;
        if (e.get(quad)) return Fail(path + ".segments", "expected [lane, series, start, end]");
        for (element x : quad) {
          if (n == 4) return Fail(path + ".segments", "expected [lane, series, start, end]");
          if (!Num(x, path + ".segments", &v[n])) return false;
          ++n;
        }
        if (n != 4 || v[0] < 0 || v[1] < 0 || v[0] >= static_cast<double>(c.categories.size()) ||
            v[1] >= static_cast<double>(c.series.size()))
          return Fail(path + ".segments",
                      "expected [lane, series, start, end] of a lane and a series");
        c.segments.push_back(
            {static_cast<uint32_t>(v[0]), static_cast<uint32_t>(v[1]), v[2], v[3]});
      }
      if (!OptStrings(o, "segment_labels", path, c.segments.size(), "one label per segment",
                      &c.segment_labels))
        return false;
    }
    *out = std::move(c);
    return true;
  }

  bool ReadFinding(object o, const std::string& key, const std::string& path, Item* out) {
    Finding f;
    f.key = key;
    std::string severity;
    if (!OptStr(o, "title", path, &f.title) || !OptStr(o, "severity", path, &severity) ||
        !OptStr(o, "saving_assumption", path, &f.saving_assumption) ||
        !OptStr(o, "fix", path, &f.fix))
      return false;
    if (!severity.empty()) {
      const std::optional<Severity> named = SeverityFromName(severity);
      if (!named) return Fail(path + ".severity", "unknown severity \"" + severity + "\"");
      f.severity = *named;
    }
    element e;
    if (!o["saving_ns"].get(e) && !Scalar(e, Unit::kNanos, -1, path + ".saving_ns", &f.saving))
      return false;
    if (!o["saving_share"].get(e) &&
        !Scalar(e, Unit::kShare, -1, path + ".saving_share", &f.saving_share))
      return false;
    if (!o["saving_alone_ns"].get(e) &&
        !Scalar(e, Unit::kNanos, -1, path + ".saving_alone_ns", &f.saving_alone))
      return false;
    if (!o["confidence"].get(e) && !Num(e, path + ".confidence", &f.confidence)) return false;
    if (!Fields(o, "evidence", path, &f.evidence)) return false;
    *out = std::move(f);
    return true;
  }

  bool ReadSection(std::string_view key, element e, const std::string& path, Section* out) {
    object o;
    if (e.get(o)) return Fail(path, "expected an object");
    out->key = std::string(key);
    if (!OptStr(o, "title", path, &out->title)) return false;
    std::string views = "all";
    if (!OptStr(o, "views", path, &views)) return false;
    out->views = views == "text"   ? kViewText
                 : views == "html" ? kViewHtml
                 : views == "none" ? 0
                                   : kViewAll;
    bool text_inline = false;
    if (!o["text_inline"].get(text_inline)) out->text_inline = text_inline;
    bool collapsed = false;
    if (!o["collapsed"].get(collapsed)) out->collapsed = collapsed;
    object items;
    if (o["items"].get(items)) return Fail(path + ".items", "expected an object");
    for (auto [k, v] : items) {
      const std::string p = path + ".items." + std::string(k);
      object io;
      if (v.get(io)) return Fail(p, "expected an object");
      std::string type;
      if (!OptStr(io, "type", p, &type)) return false;
      Item item;
      bool ok = false;
      if (type == "row")
        ok = ReadRow(io, std::string(k), p, &item);
      else if (type == "table")
        ok = ReadTable(io, std::string(k), p, &item);
      else if (type == "chart")
        ok = ReadChart(io, std::string(k), p, &item);
      else if (type == "finding")
        ok = ReadFinding(io, std::string(k), p, &item);
      else if (type == "text") {
        Text t{std::string(k), {}, false};
        ok = OptStr(io, "text", p, &t.text);
        bool code = false;
        if (!io["code"].get(code)) t.code = code;
        item = std::move(t);
      } else {
        return Fail(p + ".type", "unknown item type '" + type + "'");
      }
      if (!ok) return false;
      out->items.push_back(std::move(item));
    }
    object children;
    if (!o["sections"].get(children)) {
      for (auto [k, v] : children) {
        Section child;
        if (!ReadSection(k, v, path + ".sections." + std::string(k), &child)) return false;
        out->sections.push_back(std::move(child));
      }
    }
    return true;
  }
};

}  // namespace

std::string ToJson(const Document& doc, int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  w.Key("schema").String(doc.schema);
  w.Key("schema_version").Int(doc.schema_version);
  w.Key("title").String(doc.title);
  w.Key("subtitle").String(doc.subtitle);
  w.Key("sections").BeginObject();
  for (const Section& s : doc.sections) WriteSection(s, &w);
  w.EndObject();
  w.EndObject();
  std::string out = w.str();
  out.push_back('\n');
  return out;
}

Result<Document> FromJson(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  element root;
  if (auto err = parser.parse(padded).get(root))
    return Status::InputError(source, 0,
                              std::string("not valid JSON: ") + simdjson::error_message(err),
                              "pass a file written by gpuscope --json");
  Reader r{source, {}};
  Document doc;
  object o;
  std::string_view schema;
  if (root.get(o) || o["schema"].get(schema) || schema.substr(0, 9) != "gpuscope.")
    return Status::InputError(source, 0,
                              "not a gpuscope JSON document (no \"schema\": \"gpuscope.…\")",
                              "pass a file written by gpuscope --json");
  doc.schema = std::string(schema);
  int64_t version = 0;
  if (o["schema_version"].get(version) || version != kSchemaVersion)
    return Status::InputError(source, 0,
                              "gpuscope JSON schema_version " + std::to_string(version) +
                                  ", this build reads " + std::to_string(kSchemaVersion),
                              "re-run the analysis with this gpuscope");
  doc.schema_version = static_cast<int>(version);
  object sections;
  bool ok = r.OptStr(o, "title", "$", &doc.title) && r.OptStr(o, "subtitle", "$", &doc.subtitle);
  if (ok && o["sections"].get(sections)) ok = r.Fail("$.sections", "expected an object");
  if (ok) {
    for (auto [k, v] : sections) {
      Section s;
      if (!r.ReadSection(k, v, "$.sections." + std::string(k), &s)) {
        ok = false;
        break;
      }
      doc.sections.push_back(std::move(s));
    }
  }
  if (!ok)
    return Status::InputError(source, 0, "malformed gpuscope JSON document: " + r.error,
                              "pass a file written by gpuscope --json, unmodified");
  return doc;
}

namespace {

// What Scalar() makes of the value's JSON.
void RoundValue(Value* v) {
  if (v->kind == Value::Kind::kInt && (v->i > kMaxExactJsonInteger || v->i < -kMaxExactJsonInteger))
    v->i = static_cast<int64_t>(static_cast<double>(v->i));
  if (v->kind == Value::Kind::kDouble && IsIntegerUnit(v->unit) &&
      std::fabs(v->d) > static_cast<double>(kMaxExactJsonInteger) && std::fabs(v->d) <= 9.2e18) {
    v->kind = Value::Kind::kInt;
    v->i = static_cast<int64_t>(v->d);
    v->d = 0;
  }
}

void RoundFields(std::vector<Field>* fields) {
  for (Field& f : *fields) RoundValue(&f.value);
}

void RoundSection(Section* s) {
  for (Item& item : s->items) {
    if (auto* row = std::get_if<Row>(&item)) RoundFields(&row->fields);
    if (auto* table = std::get_if<Table>(&item))
      for (auto& cells : table->rows)
        for (Value& v : cells) RoundValue(&v);
    if (auto* chart = std::get_if<Chart>(&item)) RoundFields(&chart->reference_lines);
    if (auto* finding = std::get_if<Finding>(&item)) {
      RoundValue(&finding->saving);
      RoundValue(&finding->saving_share);
      RoundValue(&finding->saving_alone);
      RoundFields(&finding->evidence);
    }
  }
  for (Section& sub : s->sections) RoundSection(&sub);
}

}  // namespace

Document AsReadBack(Document doc) {
  for (Section& s : doc.sections) RoundSection(&s);
  return doc;
}

}  // namespace gpuscope::render
