// `gpuscope plan`: flags → plan::PlanRequest → plan::Plan → text or JSON. No model logic here.
#pragma once

#include "cli/output.h"

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace gpuscope::cli {

struct PlanCliOptions {
  std::string model;
  std::string gpu;
  std::string gpu_spec;
  // Optional so that an absent flag ("plan needs --gpus") differs from a bad one (--gpus 0).
  std::optional<int64_t> gpus, global_batch, seq_len;
  std::string precision, optimizer = "adam", zero, recompute, offload = "none", framework;
  bool fsdp = false, hybrid = false, bf16_grads = false, sp = false, list_models = false,
       list_gpus = false;
  std::string write_configs;  // folder for the snippets as files
  OutputArgs out;             // --json, --html FILE, --verbose, --color, --width
  bool no_flash = false, no_dropout = false;
  std::optional<int64_t> tp, pp, vpp, mbs;
  double efficiency = 0.45, context_gib = 1.0, headroom = 0.10, inter_node_gbps = 50;
  int top = 5;
  std::string from_trace;
  bool exact = false;
  bool no_exact = false;
  std::string impl;
  std::string exact_from;
};

CLI::App* AddPlanCommand(CLI::App& app, PlanCliOptions* opts);
int RunPlanCommand(const PlanCliOptions& opts);

}  // namespace gpuscope::cli
