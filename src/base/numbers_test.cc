#include "base/numbers.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpuscope {
namespace {

int64_t Micros(std::string_view s) {
  int64_t ns = 0;
  EXPECT_EQ(ParseMicrosToNanos(s, &ns), NumberError::kOk) << s;
  return ns;
}

TEST(ParseMicrosToNanos, KeepsEveryDigitOfEpochMicroseconds) {
  // 19 significant digits: a double would move this by up to 128 ns.
  EXPECT_EQ(Micros("1712195495505582.988"), 1712195495505582988);
  EXPECT_EQ(Micros("1623143089861.123"), 1623143089861123);
  EXPECT_EQ(Micros("1623142623531625"), 1623142623531625000);
  static_assert(static_cast<int64_t>(1712195495505582.988 * 1000) != 1712195495505582988,
                "the double path really does lose digits");
}

TEST(ParseMicrosToNanos, FractionsAndRounding) {
  EXPECT_EQ(Micros("63.813"), 63813);
  EXPECT_EQ(Micros("63.8"), 63800);
  EXPECT_EQ(Micros("63."), 63000);
  EXPECT_EQ(Micros("0.001"), 1);
  EXPECT_EQ(Micros("63.8134"), 63813);  // 4th decimal rounds down
  EXPECT_EQ(Micros("63.8135"), 63814);  // half rounds away from zero
  EXPECT_EQ(Micros("-2.5"), -2500);
  EXPECT_EQ(Micros("-0.0005"), -1);
  EXPECT_EQ(Micros(" 42 "), 42000);
}

TEST(ParseMicrosToNanos, Exponents) {
  EXPECT_EQ(Micros("1.5e3"), 1500000);
  EXPECT_EQ(Micros("1712195495505582988e-3"), 1712195495505582988);
  EXPECT_EQ(Micros("2E-3"), 2);
}

TEST(ParseMicrosToNanos, RejectsNonNumbersAndOverflow) {
  int64_t ns;
  EXPECT_EQ(ParseMicrosToNanos("", &ns), NumberError::kNotANumber);
  EXPECT_EQ(ParseMicrosToNanos("abc", &ns), NumberError::kNotANumber);
  EXPECT_EQ(ParseMicrosToNanos("12a", &ns), NumberError::kNotANumber);
  EXPECT_EQ(ParseMicrosToNanos("1e", &ns), NumberError::kNotANumber);
  EXPECT_EQ(ParseMicrosToNanos("99999999999999999999", &ns), NumberError::kOutOfRange);
  EXPECT_EQ(ParseMicrosToNanos("9223372036854776", &ns), NumberError::kOutOfRange);
}

TEST(ParseInt64, ExactBeyondDoublePrecision) {
  int64_t v;
  ASSERT_EQ(ParseInt64("9007199254740993", &v), NumberError::kOk);  // 2^53 + 1
  EXPECT_EQ(v, 9007199254740993);
  ASSERT_EQ(ParseInt64("9223372036854775807", &v), NumberError::kOk);
  EXPECT_EQ(v, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ParseInt64("9223372036854775808", &v), NumberError::kOutOfRange);
  ASSERT_EQ(ParseInt64("7.0", &v), NumberError::kOk);
  EXPECT_EQ(v, 7);
  ASSERT_EQ(ParseInt64("-12", &v), NumberError::kOk);
  EXPECT_EQ(v, -12);
  EXPECT_EQ(ParseInt64("x", &v), NumberError::kNotANumber);
}

TEST(ParseDouble, Basics) {
  double d;
  ASSERT_EQ(ParseDouble("0.625", &d), NumberError::kOk);
  EXPECT_DOUBLE_EQ(d, 0.625);
  EXPECT_EQ(ParseDouble("nan", &d), NumberError::kNotANumber);
  EXPECT_EQ(ParseDouble("", &d), NumberError::kNotANumber);
}

}  // namespace
}  // namespace gpuscope
