#include "ingest/kineto_json/scanner.h"

#include <gtest/gtest.h>

namespace gpuscope::ingest {
namespace {

// Feeds `json` one byte at a time (the worst case for resuming mid-string) and returns the elements.
std::vector<std::string> Elements(const std::string& json, Scanner* scanner) {
  std::string buffer = " ";  // byte 0 is reserved by the reader's layout
  std::vector<ScannedElement> found;
  for (char c : json) {
    buffer.push_back(c);
    EXPECT_TRUE(scanner->Scan(buffer.data(), buffer.size(), &found).ok());
  }
  std::vector<std::string> out;
  for (const ScannedElement& e : found) out.push_back(buffer.substr(e.begin, e.end - e.begin));
  return out;
}

TEST(Scanner, FindsEventsAndHeaderMembersByteByByte) {
  const std::string json =
      R"({"a": 1, "deviceProperties": [{"name": "x]}"}], "traceEvents": [ {"name": "e1 \"}\" ["}, 7 ,{"b": [{}]} ], "z": "tail", "n": null})";
  Scanner scanner("t.json");
  const std::vector<std::string> elements = Elements(json, &scanner);
  ASSERT_EQ(elements.size(), 3u);
  EXPECT_EQ(elements[0], R"({"name": "e1 \"}\" ["})");
  EXPECT_EQ(elements[1], "7");
  EXPECT_EQ(elements[2], R"({"b": [{}]})");
  EXPECT_TRUE(scanner.Finish().ok());
  ASSERT_EQ(scanner.header_members().size(), 4u);
  EXPECT_EQ(scanner.header_members()[0], R"("a": 1)");
  EXPECT_EQ(scanner.header_members()[1], R"("deviceProperties": [{"name": "x]}"}])");
  EXPECT_EQ(scanner.header_members()[2], R"("z": "tail")");
  EXPECT_EQ(scanner.header_members()[3], R"("n": null)");
  EXPECT_FALSE(scanner.is_bare_array());
}

TEST(Scanner, BareArrayAndByteOrderMark) {
  Scanner scanner("t.json");
  const std::vector<std::string> elements = Elements("\xEF\xBB\xBF [{\"x\": 1}, {\"y\": \"]\"}]\n", &scanner);
  ASSERT_EQ(elements.size(), 2u);
  EXPECT_TRUE(scanner.is_bare_array());
  EXPECT_TRUE(scanner.Finish().ok());
}

TEST(Scanner, TruncationInsideAStringIsReported) {
  Scanner scanner("t.json");
  Elements(R"({"traceEvents": [{"name": "abc)", &scanner);
  const Status s = scanner.Finish();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("truncated JSON: the input ends inside traceEvents after 0 complete events, inside a string"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace gpuscope::ingest
