// The vocabulary of document builders (report/, diff/, plan/, advise/): the item types and short
// constructors for the values they write most, defined once so that every stage types a value the
// same way (a count is clamped the same way, a negative byte count is n/a everywhere).
//
// A builder's .cc pulls the vocabulary in with one line inside its anonymous namespace,
//   using namespace render::build;  // the document-builder vocabulary
// instead of a block of using-declarations and local helpers per file. This namespace exists for
// that line and holds nothing else; headers never pull it in.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "render/document.h"

namespace gpuscope::render::build {

using render::Column;
using render::Detail;
using render::F;
using render::Field;
using render::Row;
using render::Section;
using render::Table;
using render::Unit;
using render::Value;

// A duration in ns. Fractional ns (a mean) are rounded to the nearest ns; one beyond int64 (±292
// years: a computed time gone wrong) is n/a, never a wrapped negative.
template <typename T>
Value Ns(T ns) {
  static_assert(std::is_arithmetic_v<T>);
  if constexpr (std::is_floating_point_v<T>) {
    constexpr double kLimit = 9.2e18;  // just below 2^63
    return std::isfinite(ns) && std::fabs(ns) < kLimit ? Value::Nanos(std::llround(ns))
                                                       : Value::Na(Unit::kNanos);
  } else {
    return Value::Nanos(static_cast<int64_t>(ns));
  }
}

// A count. Unsigned counts beyond INT64_MAX are clamped (no trace holds that many events); a
// fractional count (a parameter count, a product of sizes) is rounded to a whole number and kept
// as a double, so counts beyond 2^63 stay representable; not finite is n/a.
template <typename T>
Value Count(T n) {
  static_assert(std::is_arithmetic_v<T>);
  if constexpr (std::is_floating_point_v<T>) {
    return std::isfinite(n) ? Value::Number(std::round(n), 0, Unit::kCount)
                            : Value::Na(Unit::kCount);
  } else if constexpr (std::is_unsigned_v<T>) {
    return Value::Count(static_cast<int64_t>(
        std::min<uint64_t>(n, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))));
  } else {
    return Value::Count(static_cast<int64_t>(n));
  }
}

// Bytes; a negative count (the analyses' "not known") is n/a.
inline Value Bytes(int64_t b) {
  return b >= 0 ? Value::Bytes(static_cast<uint64_t>(b)) : Value::Na(Unit::kBytes);
}

// part / whole as a share 0–1; n/a when whole ≤ 0.
inline Value ShareOf(double part, double whole, int precision = -1) {
  return Value::ShareOf(part, whole, precision);
}

inline Value Text(std::string s) { return Value::Text(std::move(s)); }

// A reading already on a 0–100 scale (utilisation, CPU % of one core), whole percent by default.
inline Value Percent(double v, int precision = 0) {
  return Value::Number(v, precision, Unit::kPercent);
}

// A byte count from a device or the kernel (unsigned): beyond INT64_MAX (a driver's absurd
// reading) it is the nearest double rather than clamped, so the number shown is the one read.
inline Value UnsignedBytes(uint64_t b) {
  return b > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
             ? Value::Number(static_cast<double>(b), -1, Unit::kBytes)
             : Value::Bytes(b);
}

}  // namespace gpuscope::render::build
