// A PlanReport as a document (the working as tables, plus ready config snippets); text, JSON
// (docs/planner.md "JSON") and HTML are its views. Nothing here computes anything new.
#pragma once

#include <string>
#include <vector>

#include "plan/calibrate.h"
#include "plan/planner.h"
#include "render/document.h"

namespace gpuscope::plan {

render::Document BuildDocument(const PlanReport& report, const Calibration* calibration = nullptr);

// "L=80 h=8192 a=64 …": the model's shape on one line.
std::string ModelLine(const ModelConfig& m);

// One configuration file or command for the plan's configuration, in one framework's or
// launcher's terms. Every snippet says the same configuration; one that cannot (a layout the HF
// Trainer cannot run, a setting Accelerate's config has no key for) has no text and says why.
struct ConfigSnippet {
  std::string key;    // "megatron_args", "deepspeed_json", "accelerate_yaml", "trainer_command"
  std::string title;  // how to use it
  std::string file;   // its file name under --write-configs
  std::string text;   // the snippet; "" when not expressed
  std::string not_expressed;  // why not, when text is ""
};
std::vector<ConfigSnippet> Snippets(const PlanRequest& r, const ParallelConfig& c);

}  // namespace gpuscope::plan
