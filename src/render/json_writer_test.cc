#include "render/json_writer.h"

#include <gtest/gtest.h>
#include <simdjson.h>

namespace gpuscope::render {
namespace {

TEST(JsonWriter, EscapesAnyBytesIntoValidJson) {
  const char kNasty[] = "a\"b\\c\n\x01<script>\xff\xc3\x28 ok \xe2\x82\xac";
  const std::string nasty(kNasty, sizeof kNasty - 1);
  JsonWriter w;
  w.BeginObject()
      .Key("name")
      .String(nasty)
      .Key("n")
      .Int(-3)
      .Key("list")
      .BeginArray()
      .Uint(1)
      .Double(0.5, 2)
      .EndArray()
      .EndObject();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(w.str()).get(doc), simdjson::SUCCESS) << w.str();
  std::string_view name;
  ASSERT_EQ(doc["name"].get_string().get(name), simdjson::SUCCESS);
  // Invalid bytes became U+FFFD, valid UTF-8 (the euro sign) is kept, '<' survives as a character.
  EXPECT_EQ(std::string(name), "a\"b\\c\n\x01<script>\xEF\xBF\xBD\xEF\xBF\xBD( ok \xe2\x82\xac");
  EXPECT_EQ(w.str().find("<script>"), std::string::npos)
      << "'<' must be escaped for HTML embedding";
  int64_t n;
  ASSERT_EQ(doc["n"].get_int64().get(n), simdjson::SUCCESS);
  EXPECT_EQ(n, -3);
}

TEST(JsonWriter, EmptyContainers) {
  JsonWriter w(0);
  w.BeginObject().Key("a").BeginArray().EndArray().Key("b").BeginObject().EndObject().EndObject();
  EXPECT_EQ(w.str(), "{\"a\":[],\"b\":{}}");
}

}  // namespace
}  // namespace gpuscope::render
