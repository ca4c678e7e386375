// The analyze report as a value: every analysis result and the advice, per rank. Its views are
// report::BuildDocument (report/document.h) rendered by the generic render/ views.
#pragma once

#include <string>
#include <vector>

#include "advise/advise.h"
#include "analyze/run_all.h"
#include "base/thread_pool.h"
#include "gpuscope/model.h"
#include "gpuscope/status.h"
#include "whatif/whatif.h"

namespace gpuscope::report {

// One rank's analysis results (analyze::RankResults: the trace, summary, GPU time, steps, kernels,
// launches, copies, sync, memory, occupancy, idle gaps, the monitor beside it) and its advice.
struct RankReport : analyze::RankResults {
  whatif::WhatIfResults whatif;  // each fix replayed on the step graph, and the plan
  advise::Advice advice;         // ranked findings and the verdict
};

struct Report {
  std::vector<RankReport> ranks;
  std::vector<Status> failures;  // inputs that could not be read
};

// Runs every analysis on every rank (analyze::RunAllRanks on `pool`), then the advice. The traces
// must outlive the report.
Report BuildReport(const std::vector<Trace>& traces, std::vector<Status> failures, ThreadPool& pool,
                   const analyze::RunOptions& options = {});
// The same on a pool of `threads` threads made for this call (0 = all cores).
Report BuildReport(const std::vector<Trace>& traces, std::vector<Status> failures, int threads = 0);

}  // namespace gpuscope::report
