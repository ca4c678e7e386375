// Renderers of the per-rank trace summary: terminal text and JSON (the contract, docs/json.md).
#pragma once

#include <string>
#include <vector>

#include "analyze/trace_summary.h"
#include "gpuscope/status.h"

namespace gpuscope::report {

inline constexpr int kSummarySchemaVersion = 1;

struct TextStyle {
  bool color = false;
  bool verbose = false;
};

std::string RenderSummaryText(const std::vector<analyze::TraceSummary>& ranks,
                              const std::vector<Status>& failures, const TextStyle& style);

std::string RenderSummaryJson(const std::vector<analyze::TraceSummary>& ranks,
                              const std::vector<Status>& failures);

// "1,234,567"
std::string GroupDigits(uint64_t n);
// "1.2 MB", "830 KB" (decimal units, as file sizes are shown by ls -h --si)
std::string HumanBytes(uint64_t n);
// ns → "830.494 ms" / "12.3 s" / "45 µs"
std::string HumanDuration(int64_t ns);

}  // namespace gpuscope::report
