// The one report model that every view renders, its builder, and the terminal and JSON renderers.
// JSON is the contract: docs/json-schema.md.
#pragma once

#include <string>
#include <vector>

#include "advise/advise.h"
#include "analyze/ranks.h"
#include "analyze/run_all.h"
#include "base/thread_pool.h"
#include "gpuscope/model.h"
#include "gpuscope/status.h"

namespace gpuscope::report {

inline constexpr int kSchemaVersion = 1;

// One rank's analysis results (analyze::RankResults: the trace, summary, GPU time, steps, kernels,
// launches, copies, sync, memory, occupancy, idle gaps, the monitor beside it) and its advice.
struct RankReport : analyze::RankResults {
  advise::Advice advice;  // ranked findings and the verdict
};

struct Report {
  std::vector<RankReport> ranks;
  analyze::RanksResult across_ranks;  // stragglers, arrival order (meaningful with ≥ 2 ranks)
  std::vector<Status> failures;       // inputs that could not be read
};

// Runs every analysis on every rank (analyze::RunAllRanks on `pool`), then the advice. The traces
// must outlive the report.
Report BuildReport(const std::vector<Trace>& traces, std::vector<Status> failures,
                   ThreadPool& pool, const analyze::RunOptions& options = {});
// The same on a pool of `threads` threads made for this call (0 = all cores).
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
