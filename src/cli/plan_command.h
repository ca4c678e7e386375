// `gpuscope plan`: flags → plan::PlanRequest → plan::Plan → text or JSON. No model logic here.
#pragma once

#include "cli/output.h"

#include <CLI/CLI.hpp>
#include <string>

#include "api/plan.h"

namespace gpuscope::cli {

struct PlanCliOptions {
  api::PlanOptions plan;  // the flags of api::PlanOptionTable()
  // The CLI's own: listings, the snippets as files, and the views.
  bool list_models = false, list_gpus = false;
  std::string write_configs;  // folder for the snippets as files
  OutputArgs out;             // --json, --html FILE, --csv DIR, --verbose, --color, --width
};

CLI::App* AddPlanCommand(CLI::App& app, PlanCliOptions* opts);
int RunPlanCommand(const PlanCliOptions& opts);

}  // namespace gpuscope::cli
