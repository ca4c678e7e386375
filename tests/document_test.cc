// The analyze report as a document: a value that saves to JSON and reads back into the same
// document, rendering the same text and HTML; every view of the bundled example.
#include <gtest/gtest.h>

#include "gpuscope/ingest.h"
#include "render/document.h"
#include "render/html.h"
#include "render/json.h"
#include "render/text.h"
#include "report/document.h"
#include "report/report.h"
#include "test_util.h"

namespace gpuscope {
namespace {

render::Document ExampleDocument() {
  LoadOptions options;
  auto trace = LoadTrace(std::string(GPUSCOPE_SOURCE_DIR) + "/examples/train_input_bound.pt.trace.json.gz", options);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  std::vector<Trace> traces;
  traces.push_back(std::move(trace.value()));
  const report::Report rep = report::BuildReport(traces, {}, 1);
  return report::BuildDocument(rep);
}

TEST(AnalyzeDocument, ReadBackFromJsonRendersExactlyAsTheOriginal) {
  const render::Document doc = ExampleDocument();
  const std::string json = render::ToJson(doc);
  auto back = render::FromJson(json, "example.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(*back == doc);
  EXPECT_EQ(render::ToJson(*back), json);
  for (bool verbose : {false, true}) {
    EXPECT_EQ(render::RenderText(*back, {false, verbose, 100}), render::RenderText(doc, {false, verbose, 100}));
    EXPECT_EQ(render::RenderHtml(*back, {verbose}), render::RenderHtml(doc, {verbose}));
  }
}

TEST(AnalyzeDocument, VerdictAndFindingsOfTheExample) {
  const render::Document doc = ExampleDocument();
  const render::Section* rank = doc.FindSection("rank_0");
  ASSERT_NE(rank, nullptr);
  const render::Section* findings = rank->FindSection("findings");
  ASSERT_NE(findings, nullptr);
  const auto* verdict = std::get_if<render::Row>(findings->FindItem("verdict"));
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->fields.at(0).value.text, "input-bound");
  const auto* stall = std::get_if<render::Finding>(findings->FindItem("input_pipeline_stall"));
  ASSERT_NE(stall, nullptr);
  // The planted 30 % DataLoader stall (14.473 ms of a 48.311 ms step); the replay without the
  // DataLoader wait saves 14.454 ms of it.
  EXPECT_NEAR(stall->saving_share.AsDouble(), 0.30, 0.005);
  EXPECT_EQ(stall->saving.unit, render::Unit::kNanos);
  EXPECT_NEAR(stall->saving.AsDouble(), 14.473e6, 0.05e6);
}

// Some line of `text` is `content` after its indent.
bool HasLine(const std::string& text, const std::string& content) {
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const size_t first = text.find_first_not_of(' ', start);
    if (first < end && text.compare(first, end - first, content) == 0) return true;
    start = end + 1;
  }
  return false;
}

TEST(AnalyzeDocument, TextOfTheExample) {
  const std::string text = render::RenderText(ExampleDocument(), {false, false, 100});
  EXPECT_NE(text.find("  verdict     input-bound\n"), std::string::npos) << text;
  EXPECT_NE(text.find("1. The GPU waits for the input pipeline — saves ~14.5 ms per step (30 %)"), std::string::npos);
  EXPECT_NE(text.find("DataLoader 30.0 %"), std::string::npos);
  // Detail (raw timestamps, per-step tables) only with --verbose: a "per step" table title is a
  // line of its own (evidence may also wrap after "… per step").
  EXPECT_FALSE(HasLine(text, "per step")) << text;
  const std::string verbose = render::RenderText(ExampleDocument(), {false, true, 100});
  EXPECT_TRUE(HasLine(verbose, "per step"));
  EXPECT_GT(verbose.size(), text.size() * 2);
}

// Found by plan_config_fuzz: a byte count past int64 saturates at 9.2e18 (Value::BinaryBytes),
// which JSON writes as a double; the reader took exactly 9.2e18 for a non-integer and the
// document did not read back as written (a plan of a model with h = 81,928,192).
TEST(AnalyzeDocument, SaturatedByteCountsReadBackAsIntegers) {
  render::Document doc;
  doc.schema = "gpuscope.test";
  doc.title = "t";
  render::Section& s = doc.AddSection("static", "static");
  render::Row& row = s.AddRow("static", "static");
  row.fields.push_back({"static_bytes", "", render::Value::BinaryBytes(1.4e19)});
  row.fields.push_back({"big_bytes", "", render::Value::BinaryBytes(9.0e18)});
  auto back = render::FromJson(render::ToJson(doc), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(*back == render::AsReadBack(doc));  // failed: 9.2e18 came back a double
}

}  // namespace
}  // namespace gpuscope
