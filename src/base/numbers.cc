#include "base/numbers.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace gpuscope {

std::string_view TrimSpace(std::string_view s) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

namespace {

// Decimal split into sign, integer digits, fraction digits and exponent, without conversion.
struct Decimal {
  bool negative = false;
  std::string_view int_digits;
  std::string_view frac_digits;
  int64_t exponent = 0;
};

bool SplitDecimal(std::string_view s, Decimal* d) {
  s = TrimSpace(s);
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    d->negative = s[i] == '-';
    ++i;
  }
  size_t start = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  d->int_digits = s.substr(start, i - start);
  if (i < s.size() && s[i] == '.') {
    ++i;
    start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    d->frac_digits = s.substr(start, i - start);
  }
  if (d->int_digits.empty() && d->frac_digits.empty()) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) exp_negative = s[i++] == '-';
    start = i;
    int64_t e = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (e < 100000) e = e * 10 + (s[i] - '0');
      ++i;
    }
    if (i == start) return false;
    d->exponent = exp_negative ? -e : e;
  }
  return i == s.size();
}

// value = digits × 10^shift, rounded half away from zero, into int64. Works on the decimal digits
// directly so no precision is lost for any value that fits.
NumberError ScaleToInt64(const Decimal& d, int64_t shift, int64_t* out) {
  // The decimal point sits after int_digits; the combined digit string is int_digits + frac_digits
  // and the point moves right by (shift + exponent).
  const int64_t point = static_cast<int64_t>(d.int_digits.size()) + shift + d.exponent;
  const int64_t total = static_cast<int64_t>(d.int_digits.size() + d.frac_digits.size());
  auto digit_at = [&](int64_t k) -> int {
    if (k < 0 || k >= total) return 0;
    const size_t uk = static_cast<size_t>(k);
    return uk < d.int_digits.size() ? d.int_digits[uk] - '0'
                                    : d.frac_digits[uk - d.int_digits.size()] - '0';
  };
  // 128 bits so that magnitude * 10 + 9 cannot wrap before the limit check; __extension__ tells
  // -Wpedantic that the non-ISO type is deliberate.
  __extension__ typedef unsigned __int128 Uint128;
  Uint128 magnitude = 0;
  const Uint128 kLimit = static_cast<Uint128>(std::numeric_limits<int64_t>::max()) + 1;
  for (int64_t k = 0; k < point; ++k) {
    magnitude = magnitude * 10 + static_cast<unsigned>(digit_at(k));
    if (magnitude > kLimit) return NumberError::kOutOfRange;
  }
  if (digit_at(point) >= 5) magnitude += 1;  // round half away from zero on the first dropped digit
  if (d.negative) {
    if (magnitude > kLimit) return NumberError::kOutOfRange;
    *out = magnitude == kLimit ? std::numeric_limits<int64_t>::min()
                               : -static_cast<int64_t>(magnitude);
  } else {
    if (magnitude >= kLimit) return NumberError::kOutOfRange;
    *out = static_cast<int64_t>(magnitude);
  }
  return NumberError::kOk;
}

}  // namespace

NumberError ParseMicrosToNanos(std::string_view token, int64_t* nanos) {
  // Fast path: plain digits with an optional '.' and up to 3 fraction digits (every Kineto trace).
  std::string_view s = TrimSpace(token);
  size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) i = 1;
  uint64_t int_part = 0;
  size_t int_start = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - int_start < 18) {
    int_part = int_part * 10 + static_cast<uint64_t>(s[i] - '0');
    ++i;
  }
  if (i > int_start && (i == s.size() || s[i] == '.')) {
    uint64_t frac = 0;
    int frac_digits = 0;
    bool fast = true;
    if (i < s.size()) {
      ++i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9' && frac_digits < 3) {
        frac = frac * 10 + static_cast<uint64_t>(s[i] - '0');
        ++frac_digits, ++i;
      }
      fast = i == s.size();
    }
    if (fast && int_part <= 9000000000000000ull) {  // × 1000 still fits in int64
      for (int k = frac_digits; k < 3; ++k) frac *= 10;
      const int64_t v = static_cast<int64_t>(int_part * 1000 + frac);
      *nanos = negative ? -v : v;
      return NumberError::kOk;
    }
  }
  Decimal d;
  if (!SplitDecimal(token, &d)) return NumberError::kNotANumber;
  return ScaleToInt64(d, 3, nanos);
}

NumberError ParseInt64(std::string_view token, int64_t* value) {
  std::string_view s = TrimSpace(token);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  if (ec == std::errc() && ptr == s.data() + s.size()) return NumberError::kOk;
  if (ec == std::errc::result_out_of_range) return NumberError::kOutOfRange;
  Decimal d;
  if (!SplitDecimal(s, &d)) return NumberError::kNotANumber;
  return ScaleToInt64(d, 0, value);
}

NumberError ParseUint64(std::string_view token, uint64_t* value) {
  std::string_view s = TrimSpace(token);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  if (ec == std::errc::result_out_of_range) return NumberError::kOutOfRange;
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    int64_t signed_value;
    NumberError e = ParseInt64(s, &signed_value);
    if (e != NumberError::kOk) return e;
    *value = static_cast<uint64_t>(signed_value);
  }
  return NumberError::kOk;
}

NumberError ParseDouble(std::string_view token, double* value) {
  std::string_view s = TrimSpace(token);
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  if (ec == std::errc::result_out_of_range) return NumberError::kOutOfRange;
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return NumberError::kNotANumber;
  if (!std::isfinite(*value)) return NumberError::kNotANumber;
  return NumberError::kOk;
}

NumberError ParseDurationNs(std::string_view text, int64_t* nanos) {
  const std::string_view t = TrimSpace(text);
  // The unit: the letters at the end (µ is two bytes of UTF-8, 0xC2 0xB5).
  size_t at = t.size();
  while (at > 0 && (std::isalpha(static_cast<unsigned char>(t[at - 1])) || t[at - 1] == '\xC2' ||
                    t[at - 1] == '\xB5'))
    --at;
  const std::string_view unit = t.substr(at);
  double scale = 0;  // ns per unit
  if (unit == "ns")
    scale = 1;
  else if (unit == "us" || unit == "\u00b5s")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "m" || unit == "min")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  else
    return NumberError::kNotANumber;
  double value = 0;
  if (const NumberError e = ParseDouble(t.substr(0, at), &value); e != NumberError::kOk) return e;
  const double ns = value * scale;
  // 9.2e18: the largest int64 a double holds below 2^63.
  if (!(ns >= 0) || ns > 9.2e18) return NumberError::kOutOfRange;
  *nanos = static_cast<int64_t>(std::llround(ns));
  return NumberError::kOk;
}

}  // namespace gpuscope
