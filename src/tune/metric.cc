// GCC 12 warns falsely inside libstdc++'s <regex> (std::function members of its NFA states
// "may be used uninitialized": a false positive) when optimising with ASan; this file is the
// only one that compiles a std::regex.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "tune/metric.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/numbers.h"

namespace gpuscope::tune {

namespace {

// Index of the first element that is not warm-up: `count` elements, or those before `ns`.
template <typename T, typename TimeOf>
size_t WarmupEnd(const std::vector<T>& v, const Warmup& w, TimeOf time_of) {
  if (w.ns <= 0) return std::min<size_t>(v.size(), static_cast<size_t>(w.count));
  size_t i = 0;
  while (i < v.size() && time_of(v[i]) < w.ns) ++i;
  return i;
}

}  // namespace

void Measurement::Scale(double factor) {
  value *= factor;
  for (double& s : samples) s *= factor;
}

double MeanOf(const std::vector<double>& v) {
  double mean = 0;
  for (size_t k = 0; k < v.size(); ++k) mean += (v[k] - mean) / static_cast<double>(k + 1);
  return mean;
}

Measurement MeasureValues(const std::vector<TimedValue>& values, const Warmup& warmup) {
  Measurement m;
  m.seen = values.size();
  const size_t from = WarmupEnd(values, warmup, [](const TimedValue& v) { return v.t_ns; });
  m.warmup = from;
  if (from >= values.size()) return m;
  for (size_t i = from; i < values.size(); ++i) m.samples.push_back(values[i].value);
  m.value = MeanOf(m.samples);
  m.ok = true;
  return m;
}

Measurement MeasureSteps(const std::vector<int64_t>& times_ns, const Warmup& warmup) {
  Measurement m;
  m.seen = times_ns.size();
  const size_t from = WarmupEnd(times_ns, warmup, [](int64_t t) { return t; });
  m.warmup = from;
  // A rate needs two lines after the warm-up, and time between them.
  if (times_ns.size() < from + 2 || times_ns.back() <= times_ns[from]) return m;
  const size_t gaps = times_ns.size() - 1 - from;
  m.value = static_cast<double>(gaps) * 1e9 / static_cast<double>(times_ns.back() - times_ns[from]);
  // About ten windows of whole gaps each: one gap alone is as noisy as the clock of a buffered
  // pipe makes it.
  const size_t per = std::max<size_t>(1, gaps / 10);
  for (size_t i = from; i + per < times_ns.size(); i += per) {
    const int64_t dt = times_ns[i + per] - times_ns[i];
    if (dt > 0) m.samples.push_back(static_cast<double>(per) * 1e9 / static_cast<double>(dt));
  }
  m.ok = true;
  return m;
}

Measurement MeasureStepSpans(const std::vector<StepSpan>& steps, const Warmup& warmup) {
  Measurement m;
  m.seen = steps.size();
  const int64_t first = steps.empty() ? 0 : steps.front().start_ns;
  const size_t from =
      WarmupEnd(steps, warmup, [first](const StepSpan& s) { return s.start_ns - first; });
  m.warmup = from;
  int64_t total = 0;
  for (size_t i = from; i < steps.size(); ++i) {
    if (steps[i].duration_ns <= 0) continue;
    total += steps[i].duration_ns;
    m.samples.push_back(1e9 / static_cast<double>(steps[i].duration_ns));
  }
  if (m.samples.empty() || total <= 0) return m;
  m.value = static_cast<double>(m.samples.size()) * 1e9 / static_cast<double>(total);
  m.ok = true;
  return m;
}

Result<LineMeter> LineMeter::Make(const MetricSpec& spec) {
  LineMeter meter;
  meter.spec_ = spec;
  const char* flag = spec.kind == MetricKind::kStep ? "--step" : "--metric";
  try {
    meter.re_ = std::regex(spec.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Status::Error(StatusCode::kUsage, std::string(flag) + " \"" + spec.pattern +
                                                 "\" is not a regular expression (" + e.what() +
                                                 ")");
  }
  if (spec.kind == MetricKind::kRegex && meter.re_.mark_count() == 0)
    return Status::Error(StatusCode::kUsage,
                         "--metric \"" + spec.pattern +
                             "\" has no capture group: the first group is the number (hint: "
                             "e.g. --metric '([0-9.]+) samples/s')");
  return meter;
}

void LineMeter::OnLine(std::string_view line, int64_t t_ns) {
  const std::string_view head = line.substr(0, kMaxMatchedBytes);
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(head.begin(), head.end(), match, re_)) return;
  if (spec_.kind == MetricKind::kStep) {
    step_times_.push_back(t_ns);
    return;
  }
  double v = 0;
  const std::string_view group =
      match[1].matched ? head.substr(static_cast<size_t>(match[1].first - head.begin()),
                                     static_cast<size_t>(match[1].length()))
                       : std::string_view();
  // A throughput is a finite number ≥ 0: a negative one is not a throughput (counted, left out).
  if (group.empty() || ParseDouble(group, &v) != NumberError::kOk || !std::isfinite(v) || v < 0) {
    ++unparsed_;
    return;
  }
  values_.push_back({t_ns, v});
}

Measurement LineMeter::Measure() const {
  return spec_.kind == MetricKind::kStep ? MeasureSteps(step_times_, spec_.warmup)
                                         : MeasureValues(values_, spec_.warmup);
}

}  // namespace gpuscope::tune
