// Exact number parsing from raw JSON tokens.
//
// Kineto timestamps are epoch µs with up to 3 decimals, e.g. 1712195495505582.988: 19 significant
// digits, more than a double holds (≈15.9). Parsing through a double would move that value by up to
// ±128 ns, so timestamps are parsed digit by digit straight into int64 nanoseconds.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpuscope {

enum class NumberError : uint8_t { kOk, kNotANumber, kOutOfRange };

// "1623143089861" → 1623143089861000; "1623143089861.123" → 1623143089861123; "63.8135" → 63814
// (digits beyond the ns are rounded half away from zero); "1.5e3" → 1500000. Leading/trailing
// whitespace is allowed; anything else is kNotANumber.
NumberError ParseMicrosToNanos(std::string_view token, int64_t* nanos);

// Exact int64. Accepts a fraction of zeros ("7.0") and an exponent that keeps it integral ("1e3").
NumberError ParseInt64(std::string_view token, int64_t* value);

// uint64 (addresses). Accepts decimal only.
NumberError ParseUint64(std::string_view token, uint64_t* value);

NumberError ParseDouble(std::string_view token, double* value);

// A duration with its unit → int64 ns, the one parser of every duration flag (run/tune
// --interval, tune --trial-time/--budget/--warmup, synth --late …): "250ns", "500us" (or "µs"),
// "100ms", "1.5s", "5m" (or "min"), "1.5h". A unit is required; a negative value, or one beyond
// int64 ns (~292 years), is kOutOfRange. Each caller keeps its own range ("between 10ms and 1h").
NumberError ParseDurationNs(std::string_view text, int64_t* nanos);

std::string_view TrimSpace(std::string_view s);

}  // namespace gpuscope
