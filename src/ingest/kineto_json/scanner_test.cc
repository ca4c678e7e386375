#include "ingest/kineto_json/scanner.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace gpuscope::ingest {
namespace {

// Feeds `json` one byte at a time (the worst case for resuming mid-string) and returns the
// elements.
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
  const std::vector<std::string> elements =
      Elements("\xEF\xBB\xBF [{\"x\": 1}, {\"y\": \"]\"}]\n", &scanner);
  ASSERT_EQ(elements.size(), 2u);
  EXPECT_TRUE(scanner.is_bare_array());
  EXPECT_TRUE(scanner.Finish().ok());
}

TEST(Scanner, TruncationInsideAStringIsReported) {
  Scanner scanner("t.json");
  Elements(R"({"traceEvents": [{"name": "abc)", &scanner);
  const Status s = scanner.Finish();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("truncated JSON: the input ends inside traceEvents after 0 complete "
                             "events, inside a string"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace gpuscope::ingest

namespace gpuscope::ingest {
namespace {

// Feeds `json` in chunks of the given sizes; returns elements as text plus the header members.
std::vector<std::string> ScanInChunks(const std::string& json, bool fast, uint64_t seed,
                                      Status* status) {
  Scanner scanner("t.json");
  scanner.set_fast_path(fast);
  std::string buffer = " ";
  std::vector<ScannedElement> found;
  size_t i = 0;
  uint64_t x = seed;
  while (i < json.size()) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const size_t n = std::min(json.size() - i, static_cast<size_t>(1 + (x >> 33) % 300));
    buffer.append(json, i, n);
    i += n;
    *status = scanner.Scan(buffer.data(), buffer.size(), &found);
    if (!status->ok()) return {};
  }
  *status = scanner.Finish();
  std::vector<std::string> out;
  for (const ScannedElement& e : found)
    out.push_back((e.is_object ? "O:" : "S:") + buffer.substr(e.begin, e.end - e.begin));
  for (const std::string& h : scanner.header_members()) out.push_back("H:" + h);
  return out;
}

// The 64-byte bitmask path must find exactly what the byte-at-a-time path finds, on text dense with
// backslash runs, escaped quotes, braces inside strings and stray non-object elements.
// Once with the widest block classifier this CPU has (AVX-512BW here), once with SSE2.
class ScannerIsa : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { AllowAvx512Scan(GetParam()); }
  void TearDown() override { AllowAvx512Scan(true); }
};
INSTANTIATE_TEST_SUITE_P(Widest, ScannerIsa, ::testing::Values(true));
INSTANTIATE_TEST_SUITE_P(Sse2, ScannerIsa, ::testing::Values(false));

TEST_P(ScannerIsa, FastPathAgreesWithBytePath) {
  const char* pieces[] = {"\\\\", "\\\"", "{",        "}", "[",   "]",
                          "a",    " ",    "\\\\\\\"", ",", "\\n", "\\u0041"};
  testing::XorShift next(42);
  for (int round = 0; round < 40; ++round) {
    std::string json = "{\"a\": \"h}\\\\\", \"traceEvents\": [";
    const int events = 50 + static_cast<int>(next() % 100);
    for (int e = 0; e < events; ++e) {
      if (e) json += (next() % 3 == 0) ? " ,\n  " : ",";
      if (next() % 29 == 0) {
        json += (next() % 2) ? "17" : "\"stray ] {\\\" string\"";
        continue;
      }
      json += "{\"name\": \"";
      const int len = static_cast<int>(next() % 40);
      for (int k = 0; k < len; ++k) json += pieces[next() % (sizeof pieces / sizeof *pieces)];
      json += "\", \"args\": {\"grid\": [1, 2, [3]], \"s\": \"}\"}}";
    }
    json += "], \"z\": {\"k\": \"]\\\\\"}}";
    Status fast_status, slow_status;
    const auto fast = ScanInChunks(json, true, static_cast<uint64_t>(round), &fast_status);
    const auto slow = ScanInChunks(json, false, static_cast<uint64_t>(round) + 7, &slow_status);
    ASSERT_TRUE(slow_status.ok()) << slow_status.message() << "\n" << json;
    ASSERT_TRUE(fast_status.ok()) << fast_status.message();
    for (size_t i = 0; i < std::min(fast.size(), slow.size()); ++i) {
      ASSERT_EQ(fast[i], slow[i]) << "round " << round << " item " << i;
    }
    ASSERT_EQ(fast.size(), slow.size()) << "round " << round;
    ASSERT_GE(slow.size(), static_cast<size_t>(events) + 2);
  }
}

}  // namespace
}  // namespace gpuscope::ingest
