// The monitor recording of the same run beside a trace (`gpuscope analyze TRACE --monitor FILE`):
// the trace's wall-clock span, and the recording's samples within it, summarised.
//
// Definitions:
//  * the trace's span: first start → last end of its GPU activities and CPU ops, in unix ns: the
//    trace's own times plus baseTimeNanoseconds when the trace gives it (without it, Kineto
//    timestamps are unix µs already).
//  * lined up: the span starts after 2001-01-01 (else the trace's clock is not wall time, e.g. a
//    steady-clock or CUPTI-relative trace) and at least one sample falls inside it.
#pragma once

#include <cstdint>

#include "analyze/monitor_stats.h"
#include "gpuscope/model.h"
#include "model/monitor_samples.h"

namespace gpuscope::analyze {

// Unix ns of 2001-01-01: earlier span starts are not wall-clock time.
inline constexpr int64_t kWallClockEpochNs = 978'307'200LL * 1'000'000'000;

struct TraceWallSpan {
  bool has_events = false;  // false: no GPU activity or CPU op (start/end are 0)
  int64_t start_ns = 0;     // unix ns (if the trace's clock is wall time)
  int64_t end_ns = 0;
};

TraceWallSpan WallSpanOf(const Trace& trace);

enum class MonitorAlignment : uint8_t {
  kAligned,       // samples within the span: `stats` summarises them
  kNoEvents,      // the trace has no events: nothing to line up
  kNotWallClock,  // the span starts before 2001: the trace's clock is not wall time
  kNoOverlap,     // no sample within the span (a different run?)
};

struct MonitorBeside {
  MonitorAlignment alignment = MonitorAlignment::kNoEvents;
  TraceWallSpan span;
  int64_t samples_start_ns = 0;  // the recording's first and last sample, unix ns (0 if none)
  int64_t samples_end_ns = 0;
  // Of the samples within the span (kAligned); otherwise only the recording's source, path,
  // notes and skipped lines.
  MonitorStats stats;
};

MonitorBeside AnalyzeMonitorBeside(const Trace& trace, const monitor::Recording& recording);

}  // namespace gpuscope::analyze
