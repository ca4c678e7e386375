// The document model and its three views: formatting policy, JSON round trip, escaping.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "base/utf8.h"
#include "render/document.h"
#include "render/format.h"
#include "render/html.h"
#include "render/json.h"
#include "render/text.h"

namespace gpuscope::render {
namespace {

// A report with nothing in it yet, for a test to add the one thing it looks at.
Document EmptyReport() {
  Document doc;
  doc.schema = "gpuscope.report";
  return doc;
}

Document SampleDocument() {
  Document doc;
  doc.schema = "gpuscope.test";
  doc.title = "title <b>";
  doc.subtitle = "sub";
  Section& s = doc.AddSection("rank_0", "rank 0");
  Row& r = s.AddRow("gpu_time", "GPU time");
  r.fields.push_back(F("compute_share", "compute", Value::Share(0.64)));
  r.fields.push_back(F("idle_share", "idle", Value::ShareOf(1, 0)));
  r.fields.push_back(F("span_ns", "", Value::Nanos(275168000)));
  r.fields.push_back(F("huge_bytes", "huge", Value::Int(int64_t{1} << 60, Unit::kBytes)));
  r.fields.push_back(F("ratio", "ratio", Value::Number(3.0, -1, Unit::kRatio)));
  r.note = "(note)";
  Table& t = s.AddTable("kernels", "top kernels", {{"name", "kernel"}, {"time_ns", "time"}});
  t.rows.push_back({Value::Text("gemm\x1b[2J"), Value::Nanos(1000)});
  t.rows.push_back({Value::Text("b"), Value::Na(Unit::kNanos)});
  Chart& c = s.AddChart("memory", "memory", Chart::Kind::kLines, Unit::kBytes);
  c.x = {0, 1, 2};
  c.series.push_back({"allocated", "allocated", {1e9, 2e9, 1.5e9}});
  c.reference_lines.push_back(F("capacity_bytes", "capacity", Value::Bytes(80000000000)));
  Finding& f = s.AddFinding("input_pipeline_stall");
  f.title = "The GPU waits";
  f.severity = Severity::kCritical;
  f.saving = Value::Nanos(14473000);
  f.saving_share = Value::Share(0.3);
  f.confidence = 0.8;
  f.evidence.push_back(F("dataloader_share", "DataLoader share", Value::Share(0.3)));
  f.fix = "num_workers";
  f.saving_alone = Value::Nanos(14490000);  // reads as the saving: not shown
  Finding& planned = s.AddFinding("fp32_math");
  planned.title = "fp32 math";
  planned.saving = Value::Nanos(30745800);  // its plan increment, after other fixes
  planned.saving_share = Value::Share(0.175);
  planned.saving_alone = Value::Nanos(3301800);
  Finding& minor = s.AddFinding("tiny");
  minor.title = "tiny thing";
  minor.saving = Value::Nanos(1000);
  minor.saving_share = Value::Share(0.001);
  s.AddSection("child", "child").AddText("t", "hello");
  return doc;
}

TEST(Format, UnitsAndNotAvailable) {
  EXPECT_EQ(FormatDuration(14473000), "14.473 ms");
  EXPECT_EQ(FormatDuration(45), "45 ns");
  EXPECT_EQ(FormatDuration(INT64_MIN).substr(0, 1), "-");
  EXPECT_EQ(FormatBytes(3.4e9), "3.40 GB");
  EXPECT_EQ(FormatCount(-1234567), "-1,234,567");
  EXPECT_EQ(FormatCount(INT64_MIN), "-9,223,372,036,854,775,808");
  EXPECT_EQ(FormatValue(Value::ShareOf(1, 0)), "n/a");
  EXPECT_EQ(FormatValue(Value::Share(0.3)), "30.0 %");
  EXPECT_EQ(FormatValue(Value::Share(0.12345, 2)), "12.35 %");
  EXPECT_EQ(FormatValue(Value::Number(22.8, -1, Unit::kRatio)), "22.8x");
  EXPECT_EQ(FormatRate(6.4e9, Unit::kBytesPerSecond), "6.4 GB/s");
  EXPECT_EQ(FormatDurationApprox(14473000), "14.5 ms");
  EXPECT_EQ(FormatDurationApprox(262100), "262 µs");
}

TEST(Document, JsonRoundTripRendersTheSame) {
  const Document doc = SampleDocument();
  const std::string json = ToJson(doc);
  Result<Document> back = FromJson(json, "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, doc);
  EXPECT_EQ(RenderText(*back, {}), RenderText(doc, {}));
  EXPECT_EQ(RenderHtml(*back), RenderHtml(doc));
  EXPECT_EQ(ToJson(*back), json);
}

TEST(Document, IntegersBeyond2To53AreDoubles) {
  const std::string json = ToJson(SampleDocument());
  EXPECT_NE(json.find("\"value\": 1.152921504606846976e+18"), std::string::npos) << json;
  EXPECT_EQ(json.find("1152921504606846976"), std::string::npos);
}

TEST(Document, IntegersBeyond2To53ReadBackAsTheNearestDouble) {
  Document doc = EmptyReport();
  Row& row = doc.AddSection("s", "S").AddRow("r", "r");
  // A unix-ns timestamp: 19 digits, more than a double holds.
  row.fields = {F("start_ns", "from", Value::Int(1707417525512145988, Unit::kCount)),
                F("small_ns", "small", Value::Int(kMaxExactJsonInteger, Unit::kNanos))};
  auto back = FromJson(ToJson(doc), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_FALSE(*back == doc);
  EXPECT_EQ(*back, AsReadBack(doc));
  EXPECT_EQ(std::get<Row>(back->sections[0].items[0]).fields[0].value.i, 1707417525512145920);
  EXPECT_EQ(std::get<Row>(back->sections[0].items[0]).fields[1].value.i, kMaxExactJsonInteger);
  // A finding's alone saving too (kineto_reader_fuzz: a trace whose replay saved > 2^53 ns).
  Finding& f = doc.sections[0].AddFinding("launch_bound");
  f.saving = Value::Nanos(1707417525512145988);
  f.saving_share = Value::Share(0.5);
  f.saving_alone = Value::Nanos(1707417525512145988);
  auto again = FromJson(ToJson(doc), "t.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, AsReadBack(doc));
}

// A mean count per step (a double in an integer unit) stays a double; only doubles beyond 2^53
// in an integer unit are integers written with an exponent.
TEST(Document, DoublesInIntegerUnitsKeepTheirKind) {
  Document doc = EmptyReport();
  Row& row = doc.AddSection("s", "S").AddRow("r", "r");
  row.fields = {F("params", "params", Value::Number(1557611200, 0, Unit::kCount)),
                F("per_step", "per step", Value::Number(12.0, 0, Unit::kCount)),
                F("big", "big", Value::Number(3e17, -1, Unit::kCount))};
  auto back = FromJson(ToJson(doc), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, AsReadBack(doc));
  const Row& r = std::get<Row>(back->sections[0].items[0]);
  EXPECT_EQ(r.fields[0].value.kind, Value::Kind::kDouble);
  EXPECT_EQ(r.fields[1].value.kind, Value::Kind::kDouble);
  EXPECT_EQ(r.fields[2].value.kind, Value::Kind::kInt);
  EXPECT_EQ(r.fields[2].value.i, 300'000'000'000'000'000);
}

// Enumerations read back through their name tables: a name the writer never writes is an error
// naming the field, never a silent default (a misspelt severity was read as "info").
TEST(Document, FromJsonRejectsUnknownSeverityAndChartKind) {
  const std::string json = ToJson(SampleDocument());
  for (const auto& [from, to, where] : {std::tuple<std::string, std::string, std::string>{
                                            "\"critical\"", "\"critcal\"", ".severity"},
                                        {"\"lines\"", "\"line\"", ".kind"}}) {
    const size_t at = json.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    std::string bad = json;
    bad.replace(at, from.size(), to);
    Result<Document> back = FromJson(bad, "bad.json");
    ASSERT_FALSE(back.ok()) << to;
    EXPECT_NE(back.status().message().find(where), std::string::npos) << back.status().message();
    EXPECT_NE(back.status().message().find(to), std::string::npos) << back.status().message();
  }
  EXPECT_EQ(SeverityFromName("warning"), Severity::kWarning);
  EXPECT_EQ(SeverityName(*SeverityFromName("critical")), std::string("critical"));
}

TEST(Document, FromJsonRejectsOtherFiles) {
  EXPECT_FALSE(FromJson("{\"traceEvents\": []}", "t.json").ok());
  EXPECT_FALSE(FromJson("not json", "x").ok());
  Result<Document> old =
      FromJson("{\"schema\": \"gpuscope.report\", \"schema_version\": 1}", "v1.json");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("schema_version 1"), std::string::npos);
}

TEST(Text, RowsTablesFindingsAndNoControlBytes) {
  const std::string text = RenderText(SampleDocument(), {});
  EXPECT_NE(text.find("  GPU time    compute 64.0 % · idle n/a · 275.168 ms"), std::string::npos)
      << text;
  EXPECT_NE(text.find("1. The GPU waits — saves ~14.5 ms per step (30 %)"), std::string::npos)
      << text;
  // A plan fix that saves another amount alone says both; one whose figures read the same, one.
  EXPECT_NE(
      text.find(
          "2. fp32 math — saves ~30.7 ms per step (18 %) with the other fixes, ~3.30 ms alone"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("14.5 ms alone"), std::string::npos) << text;
  EXPECT_NE(RenderHtml(SampleDocument()).find("with the other fixes, ~3.30 ms alone"),
            std::string::npos);
  EXPECT_NE(ToJson(SampleDocument()).find("\"saving_alone_ns\": 3301800"), std::string::npos);
  EXPECT_NE(text.find("minor (each under 1 % of a step): tiny thing"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("gemm\xEF\xBF\xBD[2J"), std::string::npos);
}

// A section of charts only (a recording's "over time") has nothing a terminal shows: no heading
// either (the lab's run_A1.jsonl report ended with a bare "over time").
TEST(Text, ASectionOfChartsOnlyHasNoHeading) {
  Document doc;
  Section& top = doc.AddSection("run", "");
  top.AddRow("verdict", "verdict").fields.push_back(F("v", "", Value::Text("busy")));
  Section& over_time = top.AddSection("over_time", "over time");
  Chart& c = over_time.AddChart("util", "utilisation", Chart::Kind::kLines, Unit::kShare);
  c.x = {0, 1};
  c.series.push_back({"gpu0", "GPU 0", {0.5, 0.6}});
  EXPECT_EQ(RenderText(doc, {}).find("over time"), std::string::npos) << RenderText(doc, {});
  EXPECT_NE(RenderHtml(doc).find("over time"), std::string::npos);
  over_time.AddText("note", "sampled every 1 s");
  EXPECT_NE(RenderText(doc, {}).find("over time"), std::string::npos);
}

TEST(Text, WrapsOnlyWhenAWidthIsGiven) {
  Document doc;
  Section& s = doc.AddSection("s", "");
  Row& r = s.AddRow("r", "label");
  // append, not "f" + std::to_string(i): GCC 12 reports a false -Wrestrict there (bug 105329).
  for (int i = 0; i < 30; ++i)
    r.fields.push_back(F(std::string("f").append(std::to_string(i)), "field", Value::Count(i)));
  const std::string wide = RenderText(doc, {});
  EXPECT_EQ(std::count(wide.begin(), wide.end(), '\n'), 1);
  const std::string narrow = RenderText(doc, {false, false, 100});
  EXPECT_GT(std::count(narrow.begin(), narrow.end(), '\n'), 2);
  size_t start = 0;
  while (start < narrow.size()) {
    const size_t end = narrow.find('\n', start);
    EXPECT_LE(DisplayWidth(narrow.substr(start, end - start)), 100u);
    start = end + 1;
  }
}

TEST(Html, EscapesAndEmbedsJson) {
  const std::string html = RenderHtml(SampleDocument());
  EXPECT_EQ(html.find("title <b>"), std::string::npos);
  EXPECT_NE(html.find("title &lt;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("application/json"), std::string::npos);
  // One script element only: the data block.
  EXPECT_EQ(html.find("<script", html.find("<script") + 1), std::string::npos);
  // The capacity (80 GB) is far above the data (2 GB): named below the chart, axis fits data.
  EXPECT_NE(html.find("capacity 80.00 GB (above the chart)"), std::string::npos);
  EXPECT_NE(html.find(">2.00 GB<"), std::string::npos);
}

// A heatmap: one row per series, one cell per x; it reads back as written, and the page draws
// one rect per cell, full blue at 100 %, white at 0, grey where a row has no data (NaN), with the
// labels escaped.
TEST(Html, HeatmapDrawsOneCellPerValueAndRoundTrips) {
  Document doc = EmptyReport();
  Chart& c = doc.AddSection("job", "job")
                 .AddChart("busy", "GPU busy", Chart::Kind::kHeatmap, Unit::kShare);
  c.x_unit = Unit::kNanos;
  c.x = {0, 1e6, 2e6};
  c.series.push_back({"rank_0", "rank 0", {1.0, 0.0, 0.5}});
  c.series.push_back({"rank_1", "rank <1>", std::vector<double>{std::nan(""), 0.25, 1.0}});
  const std::string json = ToJson(doc);
  EXPECT_NE(json.find("\"kind\": \"heatmap\""), std::string::npos);
  Result<Document> back = FromJson(json, "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, doc);
  const std::string html = RenderHtml(doc);
  const size_t svg = html.find("<svg class=\"heatmap\"");
  ASSERT_NE(svg, std::string::npos);
  const std::string body = html.substr(svg, html.find("</svg>", svg) - svg);
  size_t rects = 0;
  for (size_t at = body.find("<rect "); at != std::string::npos; at = body.find("<rect ", at + 1))
    ++rects;
  EXPECT_EQ(rects, 6u);
  EXPECT_NE(body.find("fill=\"#0072b2\"><title>rank 0 · 0 ns: 100.0 %</title>"), std::string::npos)
      << body;
  EXPECT_NE(body.find("fill=\"#ffffff\"><title>rank 0 · 1.000 ms: 0.0 %</title>"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("fill=\"#bbbbbb\"><title>rank &lt;1&gt; · 0 ns: no data</title>"),
            std::string::npos);
  EXPECT_EQ(body.find("rank <1>"), std::string::npos);
  // Text shows no chart.
  EXPECT_EQ(RenderText(doc, {}).find("rank 0"), std::string::npos);
}

// A timeline: lanes of segments coloured by series; it reads back as written, the page draws one
// rect per segment in its series' colour on a shared axis, and a segment naming no lane or series
// is refused when read.
TEST(Html, TimelineDrawsOneRectPerSegmentAndRoundTrips) {
  Document doc = EmptyReport();
  Chart& c = doc.AddSection("cp", "cp")
                 .AddChart("path", "critical path", Chart::Kind::kTimeline, Unit::kNanos);
  c.x_unit = Unit::kNanos;
  c.categories = {"ProfilerStep#1", "ProfilerStep#<2>"};
  c.series = {{"host_compute", "host", {}}, {"gpu_compute", "GPU compute", {}}};
  c.segments = {{0, 0, 0, 2e6}, {0, 1, 2e6, 10e6}, {1, 1, 0, 9e6}};
  const std::string json = ToJson(doc);
  EXPECT_NE(json.find("\"kind\": \"timeline\""), std::string::npos);
  EXPECT_NE(json.find("\"segments\": [\n            [0, 0, 0, 2000000],\n            [0, 1, "
                      "2000000, 10000000],\n"
                      "            [1, 1, 0, 9000000]\n          ]"),
            std::string::npos)
      << json;
  Result<Document> back = FromJson(json, "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, doc);
  const std::string html = RenderHtml(doc);
  const size_t svg = html.find("<svg viewBox=\"0 0 1000 40\" preserveAspectRatio=\"none\"");
  ASSERT_NE(svg, std::string::npos) << html;
  const std::string body = html.substr(svg, html.find("</svg>", svg) - svg);
  size_t rects = 0;
  for (size_t at = body.find("<rect "); at != std::string::npos; at = body.find("<rect ", at + 1))
    ++rects;
  EXPECT_EQ(rects, 3u);
  // The longest lane spans the plot (1000 units): the 2 ms host stretch of 10 ms is 200.
  EXPECT_NE(body.find("<rect x=\"0.000\" y=\"3\" width=\"200.000\" height=\"14\" fill=\"#0072B2\">"
                      "<title>ProfilerStep#1 · host · 0 ns → 2.000 ms (2.000 ms)</title>"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("fill=\"#E69F00\"><title>ProfilerStep#&lt;2&gt; · GPU compute"),
            std::string::npos)
      << body;
  EXPECT_EQ(html.find("ProfilerStep#<2>"), std::string::npos);
  // Lane labels and ticks are HTML beside the plot; zoom is radio buttons (no script).
  EXPECT_NE(html.find("<div title=\"ProfilerStep#&lt;2&gt;\">ProfilerStep#&lt;2&gt;</div>"),
            std::string::npos);
  EXPECT_NE(html.find("type=\"radio\""), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  // Segment labels name each span on hover, and round-trip through JSON.
  c.segment_labels = {"a", "b<c", ""};
  const std::string labelled = RenderHtml(doc);
  EXPECT_NE(labelled.find("ProfilerStep#1 · GPU compute: b&lt;c · 2.000 ms"), std::string::npos)
      << labelled;
  Result<Document> back2 = FromJson(ToJson(doc), "mem");
  ASSERT_TRUE(back2.ok()) << back2.status().message();
  EXPECT_EQ(*back2, doc);
  c.segment_labels.clear();
  // A segment of a lane that does not exist.
  std::string bad = json;
  bad.replace(bad.find("[1, 1, 0, 9000000]"), 18, "[7, 1, 0, 9000000]");
  EXPECT_NE(bad.find("[7, 1, 0, 9000000]"), std::string::npos);
  EXPECT_FALSE(FromJson(bad, "mem").ok());
}

// A bar part's note (what it is mostly made of) follows its value on hover, escaped; notes
// round-trip through JSON, and a series with a note count other than its value count is refused.
TEST(Html, BarNotesShowOnHoverAndRoundTrip) {
  Document doc;
  doc.schema = "gpuscope.snapshot";
  Chart& c = doc.AddSection("mem", "mem")
                 .AddChart("by_category", "allocated", Chart::Kind::kStackedBars, Unit::kBytes);
  c.categories = {"1 ms", "2 ms (peak)"};
  Series act{"activations", "activations", {100, 300}};
  act.notes = {"most from: relu<x> (functional.py:1) (60 B)", ""};
  c.series.push_back(act);
  c.series.push_back({"unknown", "unknown", {100, 100}});
  const std::string html = RenderHtml(doc);
  EXPECT_NE(html.find("<title>1 ms · activations: 100 B (50.0 %)\nmost from: relu&lt;x&gt; "
                      "(functional.py:1) (60 B)</title>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<title>2 ms (peak) · activations: 300 B (75.0 %)</title>"),
            std::string::npos);
  const std::string json = ToJson(doc);
  EXPECT_NE(json.find("\"notes\": ["), std::string::npos);
  EXPECT_EQ(json.find("\"notes\"", json.find("\"unknown\"")), std::string::npos);
  Result<Document> back = FromJson(json, "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, doc);
  std::string bad = json;  // one note for two values
  const size_t notes = bad.find("[", bad.find("\"notes\""));
  bad.replace(notes, bad.find("]", notes) + 1 - notes, "[\"one\"]");
  const Result<Document> refused = FromJson(bad, "mem");
  ASSERT_FALSE(refused.ok()) << bad;
  EXPECT_NE(refused.status().message().find("expected one note per value"), std::string::npos)
      << refused.status().message();
}

// A number keeps its unit: "share of the step 15.0 %" broke after "15.0" when the line was full
// there (an idle-gaps finding on HTA's nccl_parser_config trace); words ending in a unit's letters
// ("5 steps") still break.
TEST(Text, ANumberAndItsUnitStayOnOneLine) {
  EXPECT_EQ(FitToWidth("evidence: unexplained idle 45.185 ms; share of the step 15.0 %", 61, 2),
            "evidence: unexplained idle 45.185 ms; share of the step\n  15.0 %");
  EXPECT_EQ(FitToWidth("a gap of 3.87 ms in step 4", 16, 2), "a gap of\n  3.87 ms in\n  step 4");
  EXPECT_EQ(FitToWidth("over 5 steps here", 8, 0), "over 5\nsteps here");
}

// A line wider than the terminal breaks at a space, else between a path's parts (after a '/'),
// never inside a name; every line fits.
TEST(Text, LongPathsBreakBetweenTheirParts) {
  const std::string path =
      "/data/a_very_long_directory_name_for_runs/another_long_subdirectory_name/"
      "rank0_profile_trace_with_long_name.pt.trace.json.gz";
  const std::string out = FitToWidth("  " + path, 60, 2);
  std::vector<std::string> lines;
  for (size_t at = 0; at <= out.size();) {
    const size_t nl = out.find('\n', at);
    lines.push_back(out.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[0], "  /data/a_very_long_directory_name_for_runs/");
  EXPECT_EQ(lines[1], "  another_long_subdirectory_name/");
  EXPECT_EQ(lines[2], "  rank0_profile_trace_with_long_name.pt.trace.json.gz");
  // Joined again, the path is whole.
  std::string joined;
  for (const std::string& l : lines) joined += l.substr(2);
  EXPECT_EQ(joined, path);
}

TEST(Html, NiceTicksAreRound) {
  EXPECT_EQ(NiceTicks(3.4e9), (std::vector<double>{0, 1e9, 2e9, 3e9, 4e9}));
  EXPECT_EQ(NiceTicks(100), (std::vector<double>{0, 25, 50, 75, 100}));
  EXPECT_EQ(NiceTicks(0).size(), 2u);
}

// Found by kineto_reader_fuzz: a tiny-grid kernel name cut at 60 bytes ended inside a character,
// and the JSON read back another name. Cuts fall on character boundaries.
TEST(Utf8, PrefixNeverCutsACharacter) {
  const std::string name = "vectoriz\xE2\x82\xAC\xE2\x82\xAC";  // "vectoriz€€", € is 3 bytes
  EXPECT_EQ(Utf8Prefix(name, 100), name);
  EXPECT_EQ(Utf8Prefix(name, 14), "vectoriz\xE2\x82\xAC\xE2\x82\xAC");
  EXPECT_EQ(Utf8Prefix(name, 13), "vectoriz\xE2\x82\xAC");
  EXPECT_EQ(Utf8Prefix(name, 11), "vectoriz\xE2\x82\xAC");
  EXPECT_EQ(Utf8Prefix(name, 10), "vectoriz");
  EXPECT_EQ(Utf8Prefix(name, 0), "");
}

}  // namespace
}  // namespace gpuscope::render
