// The invariants of analyze/invariants.h, which the fuzz target (fuzz/kineto_reader_fuzz.cc) traps
// on, hold on every real trace in shared/traces: the checks cannot fire on real-shaped input, and
// a regression in an analysis shows here on real data too. Every reader's model of them is aligned
// (model/columns.h), which the fuzz targets trap on as well, and the findings' savings add up to
// at most the step.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analyze/invariants.h"
#include "gpuscope/ingest.h"
#include "model/columns.h"
#include "report/report.h"
#include "test_util.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

TEST(AnalysisInvariants, HoldOnEveryRealTrace) {
  GPUSCOPE_REQUIRE_SHARED();
  size_t checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(testing::SharedDir() + "/traces")) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() ||
        (path.find(".json") == std::string::npos && !path.ends_with(".sqlite")))
      continue;
    auto trace = LoadTrace(path);
    if (!trace.ok()) continue;  // not a trace (memory snapshots, recordings)
    SCOPED_TRACE(path);
    EXPECT_EQ(model::MisalignedColumns(*trace), "");
    std::vector<Trace> traces;
    traces.push_back(std::move(*trace));
    const report::Report rep = report::BuildReport(traces, {}, 1);
    for (const report::RankReport& r : rep.ranks) {
      const std::vector<std::string> v = analyze::CheckInvariants(analyze::ViewOf(r));
      EXPECT_TRUE(v.empty()) << v.size() << " violations, first: " << v.front();
      // The findings' savings add up to at most the step (a standard: HTA's nccl_parser_config
      // trace once summed to all of it, its idle gaps overlapping the CUDA-graph fix).
      int64_t saved = 0;
      for (const advise::Finding& f : r.advice.findings) saved += f.estimated_saving_ns_per_step;
      EXPECT_LE(saved, r.steps.mean_steady_step_ns);
    }
    ++checked;
  }
  EXPECT_GE(checked, 10u);
}

}  // namespace
}  // namespace gpuscope
