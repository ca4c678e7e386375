#include "render/document.h"

#include "base/enum_names.h"

#include <algorithm>
#include <cmath>

namespace gpuscope::render {

namespace {
struct UnitSpelling {
  Unit unit;
  const char* name;
  const char* suffix;  // required JSON key suffix
};
constexpr UnitSpelling kUnits[] = {
    {Unit::kNone, "number", ""},
    {Unit::kCount, "count", ""},
    {Unit::kNanos, "ns", "_ns"},
    {Unit::kBytes, "bytes", "_bytes"},
    {Unit::kShare, "share", "_share"},
    {Unit::kBytesPerSecond, "bytes_per_s", "_bytes_per_s"},
    {Unit::kPerSecond, "per_s", "_per_s"},
    {Unit::kRatio, "ratio", ""},
    {Unit::kPercent, "percent", "_pct"},
    {Unit::kText, "text", ""},
    {Unit::kBool, "bool", ""},
    {Unit::kWatts, "watts", "_w"},
    {Unit::kMegahertz, "mhz", "_mhz"},
    {Unit::kCelsius, "celsius", "_c"},
    {Unit::kTimestamp, "timestamp_ns", "_ns"},
};

// A document and a section both hold sections: one way to add and find them.
Section& AppendSection(std::deque<Section>& sections, std::string key, std::string title) {
  sections.push_back(Section{std::move(key), std::move(title), kViewAll, false, false, {}, {}});
  return sections.back();
}

const Section* FindSectionIn(const std::deque<Section>& sections, std::string_view key) {
  for (const Section& s : sections)
    if (s.key == key) return &s;
  return nullptr;
}
}  // namespace

const char* UnitName(Unit u) {
  for (const UnitSpelling& s : kUnits)
    if (s.unit == u) return s.name;
  return "number";
}

bool UnitFromName(std::string_view name, Unit* u) {
  for (const UnitSpelling& s : kUnits)
    if (name == s.name) {
      *u = s.unit;
      return true;
    }
  return false;
}

std::string_view RequiredSuffix(Unit u) {
  for (const UnitSpelling& s : kUnits)
    if (s.unit == u) return s.suffix;
  return "";
}

constexpr EnumNames<Severity, 3> kSeverityNames({Severity::kInfo, "info"},
                                                {Severity::kWarning, "warning"},
                                                {Severity::kCritical, "critical"});

const char* SeverityName(Severity s) { return CNameOf(kSeverityNames, s); }

std::optional<Severity> SeverityFromName(std::string_view name) {
  return FromName(kSeverityNames, name);
}

Value Value::Na(Unit unit) {
  Value v;
  v.unit = unit;
  return v;
}

Value Value::Count(int64_t n) { return Int(n, Unit::kCount); }
Value Value::Nanos(int64_t ns) { return Int(ns, Unit::kNanos); }

Value Value::Bytes(uint64_t bytes) {
  // Byte counts beyond int64 do not occur in a trace (8 EB); clamp rather than wrap.
  return Int(bytes > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(bytes),
             Unit::kBytes);
}

Value Value::ShareOf(double part, double whole, int precision) {
  if (!(whole > 0) || !std::isfinite(part) || !std::isfinite(whole)) return Na(Unit::kShare);
  return Share(part / whole, precision);
}

Value Value::Share(double share, int precision) {
  if (!std::isfinite(share)) return Na(Unit::kShare);
  Value v = Number(share, precision, Unit::kShare);
  return v;
}

Value Value::Number(double d, int precision, Unit unit) {
  Value v;
  v.unit = unit;
  if (!std::isfinite(d)) return v;
  v.kind = Kind::kDouble;
  v.d = d;
  v.precision = static_cast<int8_t>(precision);
  return v;
}

Value Value::Int(int64_t n, Unit unit) {
  Value v;
  v.kind = Kind::kInt;
  v.unit = unit;
  v.i = n;
  return v;
}

Value Value::Text(std::string s) {
  Value v;
  v.kind = Kind::kText;
  v.unit = Unit::kText;
  v.text = std::move(s);
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind = Kind::kBool;
  v.unit = Unit::kBool;
  v.i = b ? 1 : 0;
  return v;
}

bool Series::operator==(const Series& o) const {
  if (key != o.key || label != o.label || notes != o.notes || values.size() != o.values.size())
    return false;
  for (size_t i = 0; i < values.size(); ++i)
    if (!(values[i] == o.values[i] || (std::isnan(values[i]) && std::isnan(o.values[i]))))
      return false;
  return true;
}

Value Value::BinaryBytes(double bytes) {
  if (!std::isfinite(bytes)) return Na(Unit::kBytes);
  Value v = Int(std::llround(std::clamp(bytes, -9.2e18, 9.2e18)), Unit::kBytes);
  v.binary = true;
  return v;
}

Value Value::Signed(Value v) {
  v.show_sign = true;
  return v;
}

const std::string& ItemKey(const Item& item) {
  return std::visit([](const auto& x) -> const std::string& { return x.key; }, item);
}

Row& Section::AddRow(std::string row_key, std::string label) {
  items.emplace_back(Row{std::move(row_key), std::move(label), {}, {}});
  return std::get<Row>(items.back());
}

Table& Section::AddTable(std::string table_key, std::string table_title,
                         std::vector<Column> columns) {
  Table t;
  t.key = std::move(table_key);
  t.title = std::move(table_title);
  t.columns = std::move(columns);
  items.emplace_back(std::move(t));
  return std::get<Table>(items.back());
}

Chart& Section::AddChart(std::string chart_key, std::string chart_title, Chart::Kind kind,
                         Unit unit) {
  Chart c;
  c.key = std::move(chart_key);
  c.title = std::move(chart_title);
  c.kind = kind;
  c.unit = unit;
  items.emplace_back(std::move(c));
  return std::get<Chart>(items.back());
}

Finding& Section::AddFinding(std::string finding_key) {
  Finding f;
  f.key = std::move(finding_key);
  items.emplace_back(std::move(f));
  return std::get<Finding>(items.back());
}

void Section::AddText(std::string text_key, std::string text) {
  items.emplace_back(Text{std::move(text_key), std::move(text), false});
}

void Section::AddCode(std::string text_key, std::string text) {
  items.emplace_back(Text{std::move(text_key), std::move(text), true});
}

Section& Section::AddSection(std::string section_key, std::string section_title) {
  return AppendSection(sections, std::move(section_key), std::move(section_title));
}

const Section* Section::FindSection(std::string_view k) const { return FindSectionIn(sections, k); }

const Item* Section::FindItem(std::string_view k) const {
  for (const Item& i : items)
    if (ItemKey(i) == k) return &i;
  return nullptr;
}

Section& Document::AddSection(std::string section_key, std::string section_title) {
  return AppendSection(sections, std::move(section_key), std::move(section_title));
}

const Section* Document::FindSection(std::string_view k) const {
  return FindSectionIn(sections, k);
}

}  // namespace gpuscope::render
