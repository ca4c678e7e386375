// `gpuscope plan` up to its document, without flags or printing (see analyze.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "api/options.h"
#include "gpuscope/status.h"
#include "plan/calibrate.h"
#include "plan/planner.h"
#include "render/document.h"

namespace gpuscope::api {

// The plan flags' values, as `gpuscope plan` reads them (empty / unset: the flag not given).
struct PlanOptions {
  std::string model;     // config.json path or bundled name
  std::string gpu;       // GPU name or alias
  std::string gpu_spec;  // NAME:MEM_GIB:BF16_TFLOPS:HBM_GBPS[:INTRA_NODE_GBPS[:FP8_TFLOPS]]
  std::optional<int64_t> gpus, global_batch, seq_len;
  std::string precision, optimizer = "adam", zero, recompute, offload = "none", framework;
  bool fsdp = false, hybrid = false, bf16_grads = false, sp = false;
  bool no_flash = false, no_dropout = false;
  std::optional<int64_t> tp, pp, vpp, mbs;
  double efficiency = 0.45, context_gib = 1.0, headroom = 0.10, inter_node_gbps = 50;
  int top = 5;
  std::string from_trace;
  // Exact mode: measure the step on fake tensors with a Python that has torch and transformers
  // (`exact`), or read such a measurement (exact.py's JSON) from a file (`exact_from`).
  // Neither: auto — a config.json planned for Hugging Face code (not --framework megatron) is
  // measured when a Python with torch and transformers is found, else formulas (and a note).
  bool exact = false;
  bool no_exact = false;
  // megatron | te | hf; "": Megatron's kernels under --framework megatron, HF's modules otherwise.
  std::string impl;
  std::string exact_from;
};

struct Planned {
  render::Document document;
  plan::PlanRequest request;  // as planned (after calibration, the layout searched afresh)
  plan::PlanReport report;
  // Not ok when nothing fits: the message `gpuscope plan` prints after the document (exit 2).
  Status fits;
};

// The plan subcommand's options (name, help, type, allowed values, member; defaults are the
// struct's above): the CLI's flags, Python's keywords and the checks PlanJob makes.
const OptionTable<PlanOptions>& PlanOptionTable();

// Fails with the CLI's message when a required value is missing or a value is bad.
Result<Planned> PlanJob(const PlanOptions& options);

}  // namespace gpuscope::api
