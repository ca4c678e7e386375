// The one report model that every view renders, its builder, and the terminal and JSON renderers.
// JSON is the contract: docs/json-schema.md.
#pragma once

#include <string>
#include <vector>

#include "advise/advise.h"
#include "analyze/copies.h"
#include "analyze/gpu_time.h"
#include "analyze/idle_gaps.h"
#include "analyze/kernels.h"
#include "analyze/launches.h"
#include "analyze/memory.h"
#include "analyze/occupancy.h"
#include "analyze/ranks.h"
#include "analyze/steps.h"
#include "analyze/sync_points.h"
#include "analyze/trace_summary.h"
#include "gpuscope/model.h"
#include "gpuscope/status.h"

namespace gpuscope::report {

inline constexpr int kSchemaVersion = 1;

struct RankReport {
  // The rank's model, for names the analyses refer to by StringId. Not owned: the traces passed to
  // BuildReport must outlive the report's rendering.
  const Trace* trace = nullptr;
  analyze::TraceSummary summary;   // what the reader found
  analyze::GpuTime gpu_time;       // busy/idle, breakdowns, idle attribution, overlap
  analyze::StepsResult steps;      // per-step breakdown (tb_plugin categories)
  analyze::KernelsResult kernels;  // top kernels per class, precision mix
  analyze::LaunchStats launches;   // launch delay, short kernels, CUDA graphs
  analyze::CopyStats copies;       // direction, pageable/pinned, bandwidth, sync
  analyze::SyncStats sync;         // host-blocking synchronisation and its causes
  analyze::MemoryStats memory;     // peak allocated/reserved vs device memory, timeline
  analyze::OccupancyStats occupancy;  // SM efficiency, achieved occupancy, tiny grids (≥ steps)
  analyze::IdleGapStats idle_gaps;    // GPU idle gaps and what the host did (≥ steps, sync)
  advise::Advice advice;           // ranked findings and the verdict
};

struct Report {
  std::vector<RankReport> ranks;
  analyze::RanksResult across_ranks;  // stragglers, arrival order (meaningful with ≥ 2 ranks)
  std::vector<Status> failures;       // inputs that could not be read
};

// Runs every analysis on every rank, ranks in parallel on `threads` cores (0 = all).
Report BuildReport(const std::vector<Trace>& traces, std::vector<Status> failures, int threads = 0);

struct TextStyle {
  bool color = false;
  bool verbose = false;
};

std::string RenderText(const Report& report, const TextStyle& style);
// Breaks lines longer than `width` columns at a space; continuation lines are indented by
// `value_column` spaces. ANSI colour codes take no column.
std::string FitToWidth(const std::string& text, size_t width, size_t value_column);
std::string RenderJson(const Report& report);

// "1,234,567"
std::string GroupDigits(uint64_t n);
// "1.2 MB", "830 KB" (decimal units, as file sizes are shown by ls -h --si)
std::string HumanBytes(uint64_t n);
// ns → "830.494 ms" / "12.3 s" / "45 µs"
std::string HumanDuration(int64_t ns);

}  // namespace gpuscope::report
