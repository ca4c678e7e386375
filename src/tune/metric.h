// A trial's throughput, from what the training command prints or the traces it writes:
//  * --metric REGEX: the first capture group of each matching line, as a number (e.g.
//    "([0-9.]+) samples/s"); the trial's throughput is the mean of the values after the warm-up,
//    and each value is one sample for the significance test.
//  * --step REGEX: one matching line per step; the rate of those lines after the warm-up, in
//    steps/s: (lines − 1) / (time of the last − time of the first). Samples: the rates over
//    consecutive windows of about a tenth of the lines.
//  * --traces: torch.profiler traces; steps/s = steady steps / their summed duration (gpuscope's
//    own step analysis); samples: each step's 1 s / duration.
// Warm-up (params.h): the first N values / lines / steps, or those in the first X seconds of the
// trial (of the first step, for traces).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/status.h"
#include "tune/params.h"

namespace gpuscope::tune {

enum class MetricKind : uint8_t { kRegex, kStep, kTraces };

struct MetricSpec {
  MetricKind kind = MetricKind::kRegex;
  std::string pattern;  // kRegex, kStep (ECMAScript syntax, std::regex)
  Warmup warmup;
};

// Only the first this-many bytes of a line are matched: std::regex recurses per character on some
// patterns, and a 64 KiB line of a progress bar must not exhaust the stack.
inline constexpr size_t kMaxMatchedBytes = 4096;

struct TimedValue {
  int64_t t_ns = 0;  // since the trial started
  double value = 0;
};

struct Measurement {
  bool ok = false;   // enough after the warm-up: 1 value, 2 step lines, 1 steady step
  double value = 0;  // the throughput (the metric's unit; steps/s for --step and --traces)
  std::vector<double> samples;  // for the significance test, in the same unit
  size_t seen = 0;              // values, lines or steps in all
  size_t warmup = 0;            // of them left out as warm-up
  void Scale(double factor);    // steps/s × batch = samples/s
};

// The mean of throughputs (finite, ≥ 0) as a running mean: a sum of huge finite values (1e308)
// would overflow to inf, and an inf trial would win. 0 for none.
double MeanOf(const std::vector<double>& v);

Measurement MeasureValues(const std::vector<TimedValue>& values, const Warmup& warmup);
Measurement MeasureSteps(const std::vector<int64_t>& times_ns, const Warmup& warmup);
// Profiler steps (start on the trace's clock, duration), in time order.
struct StepSpan {
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
};
Measurement MeasureStepSpans(const std::vector<StepSpan>& steps, const Warmup& warmup);

// Reads the trial's output lines for --metric or --step.
class LineMeter {
 public:
  // kUsage for a pattern that is not a regex, or a --metric without a capture group.
  static Result<LineMeter> Make(const MetricSpec& spec);
  void OnLine(std::string_view line, int64_t t_ns);
  Measurement Measure() const;
  size_t unparsed() const { return unparsed_; }  // --metric: groups that were not a number

 private:
  MetricSpec spec_;
  std::regex re_;
  std::vector<TimedValue> values_;
  std::vector<int64_t> step_times_;
  size_t unparsed_ = 0;
};

}  // namespace gpuscope::tune
