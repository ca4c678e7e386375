// "What this capture can and cannot tell": for each kind of evidence the analyses use (kernel ↔
// launch links, memory events, steps, Python stacks, device properties, every event read), whether
// the trace holds it, what is not measured without it, and the capture option that records it.
#pragma once

#include <string>
#include <vector>

#include "analyze/trace_summary.h"
#include "render/document.h"

namespace gpuscope::report {

struct CaptureGap {
  std::string key;     // "memory_events"
  std::string what;    // "memory events"
  std::string effect;  // what cannot be told without it
  std::string hint;    // the capture option that records it
};

// The gaps of this capture, in table order (docs/capture.md); empty when it holds everything.
std::vector<CaptureGap> CaptureGaps(const analyze::TraceSummary& r);

// A `capture` group: one row naming what the capture holds, then a row per gap with its hint.
void AddCapture(const analyze::TraceSummary& r, render::Section& s);

}  // namespace gpuscope::report
