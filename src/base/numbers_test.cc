#include "base/numbers.h"

#include <gtest/gtest.h>

#include <limits>

#include "test_util.h"

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

// The eight-digits-at-once path against digit-by-digit arithmetic, on every integer length the
// fast path takes (1–18 digits), 0–3 fraction digits, signs, and a non-digit planted anywhere.
TEST(ParseMicrosToNanos, AgreesWithDigitByDigitOnRandomTokens) {
  testing::XorShift next(12345);
  for (int round = 0; round < 20000; ++round) {
    const int int_digits = 1 + static_cast<int>(next() % 18);
    const int frac_digits = static_cast<int>(next() % 4);
    const bool negative = next() % 5 == 0;
    std::string text = negative ? "-" : "";
    int64_t expected = 0;
    for (int k = 0; k < int_digits; ++k) {
      const int d = static_cast<int>(next() % 10);
      text += static_cast<char>('0' + d);
      expected = expected * 10 + d;
    }
    int64_t frac = 0;
    if (frac_digits > 0) text += '.';
    for (int k = 0; k < frac_digits; ++k) {
      const int d = static_cast<int>(next() % 10);
      text += static_cast<char>('0' + d);
      frac = frac * 10 + d;
    }
    for (int k = frac_digits; k < 3; ++k) frac *= 10;
    const bool fits = expected <= 9000000000000000ll;
    int64_t ns = 0;
    if (fits) {
      ASSERT_EQ(ParseMicrosToNanos(text, &ns), NumberError::kOk) << text;
      const int64_t value = expected * 1000 + frac;
      ASSERT_EQ(ns, negative ? -value : value) << text;
    }
    // One byte replaced by a non-digit: never read as a number.
    std::string bad = text;
    const size_t at = (negative ? 1 : 0) + next() % (bad.size() - (negative ? 1 : 0));
    if (bad[at] == '.') continue;
    bad[at] = "x:/ e"[next() % 5];
    if (bad[at] == 'e' || bad[at] == ' ') continue;  // an exponent or a split token: other rules
    EXPECT_NE(ParseMicrosToNanos(bad, &ns), NumberError::kOk) << bad;
  }
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
