// A PlanReport as a document (the working as tables, plus ready config snippets); text, JSON
// (docs/planner.md "JSON") and HTML are its views. Nothing here computes anything new.
#pragma once

#include <string>

#include "plan/calibrate.h"
#include "plan/planner.h"
#include "render/document.h"

namespace gpuscope::plan {

render::Document BuildDocument(const PlanReport& report, const Calibration* calibration = nullptr);

// "L=80 h=8192 a=64 …": the model's shape on one line.
std::string ModelLine(const ModelConfig& m);

// Ready snippets for the configuration (issue item 6).
std::string AccelerateYaml(const PlanRequest& r, const ParallelConfig& c);
std::string DeepSpeedJson(const PlanRequest& r, const ParallelConfig& c);
std::string TorchrunCommand(const PlanRequest& r, const ParallelConfig& c);

}  // namespace gpuscope::plan
