// The analyze report as a render::Document: every number of every analysis, typed and keyed, with
// names resolved, so text, JSON and HTML are views of one value (docs/json-schema.md).
#pragma once

#include "render/document.h"
#include "report/report.h"
#include "report/summary.h"

namespace gpuscope::report {

// Builds the document while the report's traces are alive (names are resolved through them); the
// document holds no pointer into them. It is BuildJobDocument of the ranks' summaries
// (SummarizeRank): the job summary first, then the rank sections.
render::Document BuildDocument(const Report& report, const JobOptions& options = {});

// One rank's section (key "rank_<R>", or "input_<i>" without a rank id), self-contained.
render::Section BuildRankSection(const RankReport& rank, size_t index);

}  // namespace gpuscope::report
