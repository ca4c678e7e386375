// The report document: what every subcommand produces and every view (text, JSON, HTML) renders.
//
// A document is an ordered tree of sections; a section holds typed items — rows of key/value
// fields, tables, charts, findings and text. Every value is typed (duration in ns, bytes, share
// 0–1, count, rate, ratio, text) and every item and field has a stable key, so the JSON is a
// contract and a renderer chooses the spelling ("14.473 ms", "30.0 %") without knowing which
// analysis produced it. Names are resolved strings: a document holds no ids or pointers into a
// trace, so it can be saved as JSON, read back (FromJson) and rendered exactly as the original.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace gpuscope::render {

inline constexpr int kSchemaVersion = 2;

enum class Unit : uint8_t {
  kNone,            // a plain number ("0.506")
  kCount,           // an integer count ("1,314")
  kNanos,           // a duration in ns ("14.473 ms")
  kBytes,           // bytes, decimal units ("3.40 GB")
  kShare,           // a fraction 0–1, shown as a percentage ("30.0 %")
  kBytesPerSecond,  // "6.4 GB/s"
  kPerSecond,       // events per second ("5.71/s")
  kRatio,           // a multiple ("22.8x")
  kPercent,         // a value already on a 0–100 scale (utilisation as NVML reports it)
  kText,
  kBool,
  kWatts,      // power ("120 W")
  kMegahertz,  // a clock ("1,410 MHz")
  kCelsius,    // a temperature ("65 °C")
  // An instant on the trace's clock, ns (an integer in JSON). Text and HTML never print the
  // epoch number: a Unix-epoch time as its UTC date and time, another clock as seconds on it.
  kTimestamp,
};
const char* UnitName(Unit u);  // "ns", "bytes", "share", … (the JSON spelling)
bool UnitFromName(std::string_view name, Unit* u);

// One typed value. Not available (a division by zero, a metric the input cannot give) is a
// value of its own, rendered "n/a" in text and HTML and null in JSON — one policy everywhere.
struct Value {
  enum class Kind : uint8_t { kNull, kInt, kDouble, kText, kBool };
  Kind kind = Kind::kNull;
  Unit unit = Unit::kNone;
  int8_t precision = -1;   // digits after the point in text/HTML; -1: the unit's default
  bool show_sign = false;  // a change: "+12.000 ms", "−28.0 %", "±0"
  bool binary = false;     // bytes in binary units ("68.70 GiB", as GPU memory is sized)
  int64_t i = 0;
  double d = 0;
  std::string text;

  static Value Na(Unit unit = Unit::kNone);
  static Value Count(int64_t n);
  static Value Nanos(int64_t ns);
  static Value Bytes(uint64_t bytes);
  // part / whole as a share; n/a when whole ≤ 0.
  static Value ShareOf(double part, double whole, int precision = -1);
  static Value Share(double share, int precision = -1);  // n/a when not finite
  static Value Number(double v, int precision = -1, Unit unit = Unit::kNone);
  static Value Int(int64_t v, Unit unit = Unit::kNone);
  static Value Text(std::string s);
  static Value Bool(bool b);
  // The same value shown as a change (+/−/±0).
  static Value Signed(Value v);
  static Value BinaryBytes(double bytes);  // n/a when not finite

  bool is_na() const { return kind == Kind::kNull; }
  double AsDouble() const { return kind == Kind::kInt ? static_cast<double>(i) : d; }
  bool operator==(const Value&) const = default;
};

struct Field {
  std::string key;    // stable; JSON key. Its suffix names the unit: _ns, _bytes, _share, …
  std::string label;  // how text and HTML name it; empty: the value alone
  Value value;
  bool detail = false;  // text and HTML show it only when verbose; JSON always
  bool operator==(const Field&) const = default;
};

// Which views show an item. JSON always carries everything: views only leave detail out.
enum View : uint8_t { kViewText = 1, kViewHtml = 2, kViewAll = 3 };

// One line of key/value fields: "GPU time  compute 64.0 % · idle 27.2 %".
struct Row {
  std::string key;
  std::string label;
  std::vector<Field> fields;
  std::string note;     // a short qualifier shown after the fields: "(HTA temporal breakdown)"
  bool detail = false;  // the whole row only when verbose (text and HTML); JSON always
  bool operator==(const Row&) const = default;
};

struct Column {
  std::string key;
  std::string label;
  bool detail = false;  // text shows it only when verbose; HTML and JSON always
  // Text shows its cells whole instead of cutting them at 48 columns: a formula or a reason is
  // the content, not a name that a prefix identifies.
  bool whole = false;
  bool operator==(const Column&) const = default;
};

struct Table {
  std::string key;
  std::string title;
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;  // rows[i][j] is column j
  // Rows the terminal shows (all in HTML and JSON; all in text with --verbose). 0: the table is
  // detail, shown in text only with --verbose.
  int text_rows = 10;
  bool operator==(const Table&) const = default;
};

// Data for a chart. Text shows none (the tables and rows carry the numbers); HTML draws SVG.
struct Series {
  Series() = default;
  // Notes are rare: a series is made from its key, label and values.
  Series(std::string k, std::string l, std::vector<double> v = {})
      : key(std::move(k)), label(std::move(l)), values(std::move(v)) {}
  std::string key;
  std::string label;
  // One per category (bars) or per x (lines, heatmap cells); NaN: no value (null).
  std::vector<double> values;
  // Bars: what each value is made of, shown on hover (the allocation stack holding most of a
  // snapshot's category); empty, or one per value ("" for none).
  std::vector<std::string> notes;
  bool operator==(const Series& other) const;  // NaN equals NaN: a gap in a line is a gap
};

// A timeline's stretch: [start, end) of lane `lane` (an index into Chart::categories), coloured
// as series `series` (an index into Chart::series), in the chart's x_unit.
struct Segment {
  uint32_t lane = 0;
  uint32_t series = 0;
  double start = 0;
  double end = 0;
  bool operator==(const Segment&) const = default;
};

struct Chart {
  // kHeatmap: one row of cells per series, one column per x (the start of the cell's interval);
  // the colour is the value, from 0 to the largest value (1 for shares). A NaN cell has no data.
  // kTimeline: one lane per category, each a run of segments coloured by their series (the
  // series carry the legend; their values are empty). x counts from each lane's own start.
  enum class Kind : uint8_t { kStackedBars, kLines, kHeatmap, kTimeline };
  std::string key;
  std::string title;
  Kind kind = Kind::kStackedBars;
  Unit unit = Unit::kNone;              // of the series values
  Unit x_unit = Unit::kNone;            // lines: of x
  std::vector<std::string> categories;  // bars: one label per bar
  std::vector<double> x;                // lines, heatmap: shared x values
  std::vector<Series> series;
  std::vector<Field> reference_lines;  // e.g. device capacity, drawn as a dashed line
  std::vector<double> x_band;          // lines: [from, to] of x shaded (a run's steady phase)
  std::vector<Segment> segments;       // timeline: in lane order, then time order
  // Timeline: what each segment is (a kernel's or op's name), shown on hover; empty, or one per
  // segment.
  std::vector<std::string> segment_labels;
  bool operator==(const Chart&) const = default;
};

enum class Severity : uint8_t { kInfo, kWarning, kCritical };
const char* SeverityName(Severity s);
std::optional<Severity> SeverityFromName(std::string_view name);  // nullopt: not a severity

struct Finding {
  std::string key;  // the rule id: "input_pipeline_stall"
  std::string title;
  Severity severity = Severity::kInfo;
  Value saving;        // ns per step, or n/a when the rule gives no saving
  Value saving_share;  // of the mean steady step
  // The fix applied on its own (ns per step), where `saving` is what it adds to other fixes (the
  // replay's plan); n/a otherwise.
  Value saving_alone = Value::Na(Unit::kNanos);
  std::string saving_assumption;
  double confidence = 0.5;
  std::vector<Field> evidence;
  std::string fix;
  bool operator==(const Finding&) const = default;
};

struct Text {
  std::string key;
  std::string text;
  bool code = false;  // preformatted lines (a config file, a command): kept as written
  bool operator==(const Text&) const = default;
};

using Item = std::variant<Row, Table, Chart, Finding, Text>;
const std::string& ItemKey(const Item& item);

struct Section {
  std::string key;
  std::string title;
  uint8_t views = kViewAll;
  // Text shows the items without a title line, at the parent's indentation (a grouping that
  // HTML and JSON keep); e.g. a rank's "GPU time" rows read as part of the rank.
  bool text_inline = false;
  // HTML: closed until clicked (a long detail section); the table of contents still lists it.
  bool collapsed = false;
  // Deques: a reference returned by Add* stays valid while more items and sections are added.
  std::deque<Item> items;
  std::deque<Section> sections;
  bool operator==(const Section&) const = default;

  // Parameters are not named after the members (key, title): -Wshadow.
  Row& AddRow(std::string row_key, std::string label);
  Table& AddTable(std::string table_key, std::string table_title, std::vector<Column> columns);
  Chart& AddChart(std::string chart_key, std::string chart_title, Chart::Kind kind, Unit unit);
  Finding& AddFinding(std::string finding_key);
  void AddText(std::string text_key, std::string text);
  void AddCode(std::string text_key, std::string text);
  Section& AddSection(std::string section_key, std::string section_title);
  const Section* FindSection(std::string_view key) const;
  const Item* FindItem(std::string_view key) const;
  Item* FindItem(std::string_view item_key) {
    return const_cast<Item*>(std::as_const(*this).FindItem(item_key));
  }
};

struct RenderOptions {
  bool verbose = false;  // detail fields, rows and tables too
};

struct Document {
  std::string schema;  // "gpuscope.report", "gpuscope.diff", "gpuscope.plan", "gpuscope.run"
  int schema_version = kSchemaVersion;
  std::string title;     // first line of the text view, <title> of the page
  std::string subtitle;  // generator, inputs
  std::deque<Section> sections;
  bool operator==(const Document&) const = default;

  Section& AddSection(std::string section_key, std::string section_title);
  const Section* FindSection(std::string_view key) const;
};

// Row builder helpers: row.fields.push_back(F("idle_share", "idle", Value::Share(x))).
inline Field F(std::string key, std::string label, Value v) {
  return Field{std::move(key), std::move(label), std::move(v), false};
}
// A field JSON carries and text/HTML show only when verbose (raw timestamps, secondary counts).
inline Field Detail(std::string key, std::string label, Value v) {
  return Field{std::move(key), std::move(label), std::move(v), true};
}

// The JSON key suffix a unit requires ("_ns" for kNanos); empty when any key will do.
std::string_view RequiredSuffix(Unit u);

}  // namespace gpuscope::render
