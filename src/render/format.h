// One formatting policy for every view: durations, bytes, shares, counts and rates, one rounding
// rule per unit, and one spelling of "not available". Built on libfmt.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "render/document.h"

namespace gpuscope::render {

inline constexpr std::string_view kNotAvailable = "n/a";

std::string GroupDigits(uint64_t n);          // "1,234,567"
std::string FormatCount(int64_t n);           // "-1,234"
std::string FormatBytes(double bytes);        // "830 B", "1.2 MB", "3.40 GB" (decimal units)
std::string FormatBinaryBytes(double bytes);  // "512 B", "6,426.5 MiB", "68.70 GiB"
std::string FormatDuration(int64_t ns);       // "45 ns", "12.300 µs", "830.494 ms", "12.300 s"
std::string FormatShare(double share, int precision = 1);  // 0.3 → "30.0 %"
std::string FormatNumber(double v, int precision);         // fixed, no grouping
std::string FormatSignificant(double v, int digits);       // 4: "0.4167", "1.124e+16" (printf's %g)
std::string FormatRate(double per_second, Unit unit, int precision = -1);  // "6.4 GB/s", "5.71/s"
// An instant on a trace clock: "2021-06-08 22:17:03.460172 UTC" when it is a Unix-epoch time
// (2000–2100), else "at 1,234.567890 s on the trace clock".
std::string FormatTimestamp(int64_t ns);
// The text of any value, as text and HTML show it.
std::string FormatValue(const Value& v);
// An estimate at the precision it deserves: three significant digits ("14.5 ms", "262 µs").
std::string FormatDurationApprox(double ns);
// A finding's saving: approximate durations, other units as FormatValue.
std::string FormatSaving(const Value& v);
// "with the other fixes, ~57.0 ms alone" where a finding's fix on its own saves another amount than
// its `saving` (at FormatSaving's precision); empty when they read the same or it has no alone
// figure.
std::string AloneText(const Finding& f);

// Findings below this share of a step are listed together on one "minor" line (every view).
inline constexpr double kMinorFindingShare = 0.01;
bool IsMinor(const Finding& f);

}  // namespace gpuscope::render
