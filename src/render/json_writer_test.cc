#include "render/json_writer.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

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

TEST(JsonWriter, OneLineArraysInsideIndentedOnes) {
  JsonWriter w;
  w.BeginArray().BeginArray(true).Int(0).Int(4).EndArray().BeginArray(true).EndArray().EndArray();
  EXPECT_EQ(w.str(), "[\n  [0, 4],\n  []\n]");
  JsonWriter compact(0);
  compact.BeginArray(true).Int(1).Int(2).EndArray();
  EXPECT_EQ(compact.str(), "[1,2]");
}

TEST(JsonWriter, EmptyContainers) {
  JsonWriter w(0);
  w.BeginObject().Key("a").BeginArray().EndArray().Key("b").BeginObject().EndObject().EndObject();
  EXPECT_EQ(w.str(), "{\"a\":[],\"b\":{}}");
}

// Integer literals beyond 2^53 are rounded by double-based readers (JavaScript), fail int64
// readers beyond 2^63 and simdjson beyond 2^64: beyond 2^53 they carry an exponent, all digits
// kept.
TEST(JsonWriter, IntegersBeyondTwoToThe53GetAnExponentWithEveryDigit) {
  const auto one = [](auto write) {
    JsonWriter w(0);
    write(w);
    return w.str();
  };
  constexpr int64_t k53 = int64_t{1} << 53;
  EXPECT_EQ(one([](JsonWriter& w) { w.Int(k53); }), "9007199254740992");
  EXPECT_EQ(one([](JsonWriter& w) { w.Int(-k53); }), "-9007199254740992");
  EXPECT_EQ(one([](JsonWriter& w) { w.Int(k53 + 1); }), "9.007199254740993e+15");
  EXPECT_EQ(one([](JsonWriter& w) { w.Int(1731295583000000000); }), "1.731295583e+18");
  EXPECT_EQ(one([](JsonWriter& w) { w.Int(INT64_MIN); }), "-9.223372036854775808e+18");
  EXPECT_EQ(one([](JsonWriter& w) { w.Uint(uint64_t{1} << 53); }), "9007199254740992");
  EXPECT_EQ(one([](JsonWriter& w) { w.Uint(UINT64_MAX); }), "1.8446744073709551615e+19");
  EXPECT_EQ(one([](JsonWriter& w) { w.Uint(uint64_t{1} << 60); }), "1.152921504606846976e+18");
  // The recording's unix-ns times, read back by gpuscope with an int64 parser.
  EXPECT_EQ(one([](JsonWriter& w) { w.ExactInt(1734973732123456789); }), "1734973732123456789");
  // Each form parses, to the nearest double.
  simdjson::dom::parser parser;
  for (const char* text :
       {"9.007199254740993e+15", "-9.223372036854775808e+18", "1.8446744073709551615e+19"}) {
    double d = 0;
    ASSERT_EQ(parser.parse(std::string(text)).get_double().get(d), simdjson::SUCCESS) << text;
    EXPECT_EQ(d, std::strtod(text, nullptr)) << text;
  }
}

TEST(JsonWriter, HugeDoublesGetTheShortestExponentForm) {
  const auto one = [](double v, int decimals) {
    JsonWriter w(0);
    w.Double(v, decimals);
    return w.str();
  };
  // issue 19: `plan --json` printed "flops_model": 30147658855571521536.
  EXPECT_EQ(one(30147658855571521536.0, 0), "3.014765885557152e+19");
  EXPECT_EQ(one(1e62, 2), "1e+62");
  EXPECT_EQ(one(-1e300, 6), "-1e+300");
  EXPECT_EQ(one(9007199254740992.0, 0), "9007199254740992");  // 2^53 itself stays fixed
  EXPECT_EQ(one(43.0, 2), "43.00");
  EXPECT_EQ(one(0.123456789, 4), "0.1235");
  EXPECT_EQ(one(std::nan(""), 2), "null");
  EXPECT_EQ(one(HUGE_VAL, 2), "null");
  double d = 0;
  simdjson::dom::parser parser;
  ASSERT_EQ(parser.parse(one(30147658855571521536.0, 0)).get_double().get(d), simdjson::SUCCESS);
  EXPECT_EQ(d, 30147658855571521536.0);  // shortest form, yet the same double
}

}  // namespace
}  // namespace gpuscope::render
