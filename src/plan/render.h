// Renderers of a PlanReport: terminal text (the working as tables, plus ready config snippets) and
// JSON (docs/planner.md "JSON"). Both render the same report; neither computes anything new.
#pragma once

#include <string>

#include "plan/calibrate.h"
#include "plan/planner.h"

namespace gpuscope::plan {

inline constexpr int kPlanSchemaVersion = 1;

std::string RenderPlanText(const PlanReport& report, const Calibration* calibration = nullptr);
std::string RenderPlanJson(const PlanReport& report, const Calibration* calibration = nullptr);

// Ready snippets for the configuration (issue item 6).
std::string AccelerateYaml(const PlanRequest& r, const ParallelConfig& c);
std::string DeepSpeedJson(const PlanRequest& r, const ParallelConfig& c);
std::string TorchrunCommand(const PlanRequest& r, const ParallelConfig& c);

}  // namespace gpuscope::plan
