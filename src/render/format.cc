#include "render/format.h"

#include <ctime>

#include <fmt/format.h>
#include <cmath>

namespace gpuscope::render {

std::string GroupDigits(uint64_t n) {
  const std::string digits = fmt::format("{}", n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string FormatCount(int64_t n) {
  if (n >= 0) return GroupDigits(static_cast<uint64_t>(n));
  // -(INT64_MIN) overflows int64 but not uint64.
  std::string out = "-";
  out += GroupDigits(0 - static_cast<uint64_t>(n));
  return out;
}

std::string FormatBytes(double n) {
  if (!std::isfinite(n)) return std::string(kNotAvailable);
  const double a = std::fabs(n);
  if (a >= 1e12) return fmt::format("{:.2f} TB", n / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} GB", n / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f} MB", n / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} KB", n / 1e3);
  return fmt::format("{:.0f} B", n);
}

std::string FormatBinaryBytes(double n) {
  if (!std::isfinite(n)) return std::string(kNotAvailable);
  const double a = std::fabs(n);
  if (a >= 1073741824.0) return fmt::format("{:.2f} GiB", n / 1073741824.0);
  if (a >= 1048576.0) {
    const double mib = std::round(n / 1048576.0 * 10) / 10;
    const double whole = std::trunc(mib);
    // One fmt::format, not "-" + string: GCC 12 reports a false -Wrestrict there (bug 105329).
    return fmt::format("{}{}.{:d} MiB", mib < 0 ? "-" : "",
                       GroupDigits(static_cast<uint64_t>(std::fabs(whole))),
                       static_cast<int>(std::llround(std::fabs(mib - whole) * 10)) % 10);
  }
  if (a >= 1024.0) return fmt::format("{:.1f} KiB", n / 1024.0);
  return fmt::format("{:.0f} B", n);
}

std::string FormatDuration(int64_t ns) {
  // |INT64_MIN| does not fit int64: take the magnitude as a double.
  const double a = std::fabs(static_cast<double>(ns));
  if (a >= 1e9) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
  if (a >= 1e6) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
  if (a >= 1e3) return fmt::format("{:.3f} µs", static_cast<double>(ns) / 1e3);
  return fmt::format("{} ns", ns);
}

std::string FormatShare(double share, int precision) {
  if (!std::isfinite(share)) return std::string(kNotAvailable);
  if (precision < 0) precision = 1;
  return fmt::format("{:.{}f} %", 100.0 * share, precision);
}

std::string FormatNumber(double v, int precision) {
  if (!std::isfinite(v)) return std::string(kNotAvailable);
  // Beyond a quadrillion, digits stop being readable: four significant ones and an exponent.
  if (std::fabs(v) >= 1e15) return fmt::format("{:.4g}", v);
  if (precision == 0 && std::fabs(v) >= 1000)
    return FormatCount(static_cast<int64_t>(std::llround(v)));
  if (precision < 0) {
    // Default: three significant digits for small values, whole numbers (grouped) for large.
    const double a = std::fabs(v);
    if (a >= 1000) return FormatCount(static_cast<int64_t>(std::llround(v)));
    precision = a >= 100 ? 1 : a >= 10 ? 2 : 3;
  }
  return fmt::format("{:.{}f}", v, precision);
}

std::string FormatSignificant(double v, int digits) {
  if (!std::isfinite(v)) return std::string(kNotAvailable);
  return fmt::format("{:.{}g}", v, digits);
}

std::string FormatRate(double per_second, Unit unit, int precision) {
  if (!std::isfinite(per_second)) return std::string(kNotAvailable);
  if (unit == Unit::kBytesPerSecond) {
    const int p = precision < 0 ? 1 : precision;
    const double a = std::fabs(per_second);
    if (a >= 1e12) return fmt::format("{:.{}f} TB/s", per_second / 1e12, p);
    if (a >= 1e9) return fmt::format("{:.{}f} GB/s", per_second / 1e9, p);
    if (a >= 1e6) return fmt::format("{:.{}f} MB/s", per_second / 1e6, p);
    if (a >= 1e3) return fmt::format("{:.{}f} KB/s", per_second / 1e3, p);
    return fmt::format("{:.{}f} B/s", per_second, p);
  }
  return FormatNumber(per_second, precision < 0 ? 2 : precision) + "/s";
}

std::string FormatTimestamp(int64_t ns) {
  constexpr int64_t k2000 = 946684800LL * 1000000000, k2100 = 4102444800LL * 1000000000;
  if (ns >= k2000 && ns < k2100) {
    const time_t secs = static_cast<time_t>(ns / 1000000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06} UTC", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                       ns % 1000000000 / 1000);
  }
  return fmt::format("at {:.6f} s on the trace clock", static_cast<double>(ns) / 1e9);
}

std::string FormatValue(const Value& v) {
  if (v.show_sign && (v.kind == Value::Kind::kInt || v.kind == Value::Kind::kDouble)) {
    Value magnitude = v;
    magnitude.show_sign = false;
    const double d = v.AsDouble();
    if (v.kind == Value::Kind::kInt)
      magnitude.i = v.i < 0 ? -v.i : v.i;
    else
      magnitude.d = std::fabs(v.d);
    const std::string text = FormatValue(magnitude);
    // Zero, or a change that rounds to zero where it is shown: "±0".
    if (d == 0 || text.find_first_of("123456789") == std::string::npos) return "±" + text;
    return (d > 0 ? "+" : "−") + text;
  }
  if (v.kind == Value::Kind::kNull) return std::string(kNotAvailable);
  if (v.kind == Value::Kind::kText) return v.text;
  if (v.kind == Value::Kind::kBool) return v.i ? "yes" : "no";
  const double d = v.AsDouble();
  switch (v.unit) {
    case Unit::kCount:
      return v.kind == Value::Kind::kInt ? FormatCount(v.i) : FormatNumber(d, v.precision);
    case Unit::kNanos:
      return FormatDuration(v.kind == Value::Kind::kInt ? v.i
                                                        : static_cast<int64_t>(std::llround(d)));
    case Unit::kBytes:
      return v.binary ? FormatBinaryBytes(d) : FormatBytes(d);
    case Unit::kShare:
      return FormatShare(d, v.precision);
    case Unit::kBytesPerSecond:
    case Unit::kPerSecond:
      return FormatRate(d, v.unit, v.precision);
    case Unit::kRatio:
      return FormatNumber(d, v.precision < 0 ? 1 : v.precision) + "x";
    case Unit::kPercent:
      return FormatNumber(d, v.precision < 0 ? 0 : v.precision) + " %";
    case Unit::kWatts:
      return FormatNumber(d, v.precision < 0 ? 0 : v.precision) + " W";
    case Unit::kMegahertz:
      return FormatNumber(d, v.precision < 0 ? 0 : v.precision) + " MHz";
    case Unit::kTimestamp:
      return FormatTimestamp(v.kind == Value::Kind::kInt ? v.i
                                                         : static_cast<int64_t>(std::llround(d)));
    case Unit::kCelsius:
      return FormatNumber(d, v.precision < 0 ? 0 : v.precision) + " °C";
    case Unit::kNone:
    case Unit::kText:
    case Unit::kBool:
      break;
  }
  if (v.kind == Value::Kind::kInt) return FormatCount(v.i);
  return FormatNumber(d, v.precision);
}

std::string FormatDurationApprox(double ns) {
  if (!std::isfinite(ns)) return std::string(kNotAvailable);
  const double a = std::fabs(ns);
  double scale = 1;
  const char* unit = "ns";
  if (a >= 1e9)
    scale = 1e9, unit = "s";
  else if (a >= 1e6)
    scale = 1e6, unit = "ms";
  else if (a >= 1e3)
    scale = 1e3, unit = "µs";
  const double v = ns / scale;
  const double av = std::fabs(v);
  const int precision = scale == 1 ? 0 : av >= 100 ? 0 : av >= 10 ? 1 : 2;
  return fmt::format("{:.{}f} {}", v, precision, unit);
}

std::string FormatSaving(const Value& v) {
  if (v.unit == Unit::kNanos && !v.is_na()) return FormatDurationApprox(v.AsDouble());
  return FormatValue(v);
}

std::string AloneText(const Finding& f) {
  if (f.saving_alone.is_na() || f.saving.is_na()) return "";
  const std::string alone = FormatSaving(f.saving_alone);
  return alone == FormatSaving(f.saving) ? "" : "with the other fixes, ~" + alone + " alone";
}

bool IsMinor(const Finding& f) {
  return !f.saving_share.is_na() && f.saving_share.AsDouble() < kMinorFindingShare;
}

}  // namespace gpuscope::render
