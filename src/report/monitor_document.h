// The monitor's results as render::Document items: `gpuscope run` and `gpuscope analyze
// RECORDING|NVIDIA_SMI_LOG` print a "gpuscope.run" document; `gpuscope analyze TRACE --monitor
// FILE` adds a "monitor" section to each rank of the report. The same section in both
// (docs/json-schema.md lists its items), so text, JSON and HTML show one thing three ways.
#pragma once

#include <string>

#include "advise/monitor_rules.h"
#include "analyze/monitor_beside.h"
#include "analyze/monitor_stats.h"
#include "render/document.h"

namespace gpuscope::report {

// "gpuscope monitor · run", "… · recording FILE", "… · nvidia-smi CSV log FILE".
std::string MonitorTitle(const analyze::MonitorStats& stats);

// The monitor section's items: command, span, one row per GPU, the CPU split, the verdict, the
// findings, notes and skipped lines (all typed; key suffixes name the units).
void AddMonitorItems(const analyze::MonitorStats& stats, const advise::MonitorAdvice& advice,
                     render::Section* section);

// The document of `gpuscope run` and of `gpuscope analyze` of a recording or nvidia-smi log:
// schema "gpuscope.run", one section "monitor".
render::Document BuildRunDocument(const analyze::MonitorStats& stats,
                                  const advise::MonitorAdvice& advice);
// The same from the samples: statistics → rules → document (`run`, and `analyze` of a recording).
render::Document RunDocument(const monitor::Recording& recording);

// A rank's "monitor" section for the recording beside its trace: how the two lined up, and when
// they did, the monitor items of the samples within the trace's span (its rules run here).
// `step_ns` (the trace's mean steady step, 0 if none) adds the GPUs' energy per step: their mean
// power over the span × the step time.
render::Section BuildMonitorBesideSection(const analyze::MonitorBeside& beside,
                                          const std::string& trace_path, int64_t step_ns = 0);

}  // namespace gpuscope::report
