#include "analyze/monitor_beside.h"

#include <algorithm>

#include "analyze/intervals.h"

namespace gpuscope::analyze {

TraceWallSpan WallSpanOf(const Trace& t) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  WidenToRows(t.gpu, &lo, &hi);
  WidenToRows(t.cpu, &lo, &hi);
  TraceWallSpan span;
  if (lo > hi) return span;
  const int64_t base = t.info.base_time_ns.value_or(0);
  span.has_events = true;
  span.start_ns = lo + base;
  span.end_ns = hi + base;
  return span;
}

MonitorBeside AnalyzeMonitorBeside(const Trace& t, const monitor::Recording& recording) {
  MonitorBeside out;
  out.stats.source = recording.source;
  out.stats.source_path = recording.source_path;
  out.stats.command = recording.command;
  out.stats.notes = recording.notes;
  out.stats.malformed_lines = recording.malformed_lines;
  out.stats.malformed_examples = recording.malformed_examples;
  out.span = WallSpanOf(t);
  if (!recording.samples.empty()) {
    out.samples_start_ns = recording.samples.front().time_ns;
    out.samples_end_ns = recording.samples.back().time_ns;
  }
  if (!out.span.has_events) {
    out.alignment = MonitorAlignment::kNoEvents;
    return out;
  }
  if (out.span.start_ns < kWallClockEpochNs) {
    out.alignment = MonitorAlignment::kNotWallClock;
    return out;
  }
  const monitor::Recording slice = SliceRecording(recording, out.span.start_ns, out.span.end_ns);
  if (slice.samples.empty()) {
    out.alignment = MonitorAlignment::kNoOverlap;
    return out;
  }
  out.alignment = MonitorAlignment::kAligned;
  out.stats = ComputeMonitorStats(slice);
  return out;
}

}  // namespace gpuscope::analyze
