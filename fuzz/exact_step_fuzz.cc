// Fuzz target: any bytes → exact mode's measured step (ParseMeasuredStep, the JSON of
// python/gpuscope/exact.py that `plan --exact-from FILE` reads) must parse or give a Status, never
// crash; whatever parses prices its ops on an H200 and plans a small model with it (one
// configuration and a search), and the document renders, so the arithmetic sees hostile counts,
// FLOPs and bytes. Byte 0: bit 0 the precision (bf16 / fp32), bit 1 full recompute, bit 2 a search
// instead of one configuration. Seeds: fuzz/run.sh (tests/data/plan/exact_*.json).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "checks.h"
#include "hw/gpu_peaks.h"
#include "plan/exact.h"
#include "plan/model_config.h"
#include "plan/planner.h"
#include "plan/render.h"
#include "render/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view json(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto step = plan::ParseMeasuredStep(json, "fuzz/exact.json");
  if (!step.ok()) {
    if (step.status().message().empty()) __builtin_trap();
    return 0;
  }
  const auto peaks = hw::PeaksForGpu("h200");
  if (!peaks) fuzz::Fail("no h200 peaks");
  const plan::PricedStep priced = plan::PriceMeasuredOps(*step, *peaks, plan::OpEfficiency{}, 1, 1);
  if (!(priced.gpu_s >= 0) || !(priced.host_s >= 0) ||
      priced.optimizer_s > priced.gpu_s * (1 + 1e-9) + 1e-300)
    fuzz::Fail("priced step out of range: gpu %g host %g optimizer %g", priced.gpu_s, priced.host_s,
               priced.optimizer_s);
  auto model = plan::LoadModelConfig("gpt2");
  auto gpu = hw::FindGpu("h200");
  if (!model.ok() || !gpu.ok()) fuzz::Fail("bundled gpt2 or h200 missing");
  plan::PlanRequest r;
  r.model = *model;
  r.gpu = *gpu;
  r.gpus = 1;
  r.global_batch = 8;
  r.seq_len = 1024;
  r.top = 3;
  r.precision = (mode & 1) ? hw::Precision::kFp32 : hw::Precision::kBf16;
  r.recompute = (mode & 2) ? plan::Recompute::kFull : plan::Recompute::kNone;
  if (!(mode & 4)) {
    r.tp = 1;
    r.pp = 1;
    r.mbs = 8;
    r.sharding = plan::Sharding::kNone;
    r.framework = plan::Framework::kDdp;
  }
  r.assumptions.measured = std::make_shared<const plan::MeasuredStep>(std::move(*step));
  auto rep = plan::Plan(r);
  if (!rep.ok()) {
    if (rep.status().message().empty()) __builtin_trap();
    return 0;
  }
  const render::Document document = plan::BuildDocument(*rep);
  if (render::RenderText(document, render::TextOptions{}).empty()) fuzz::Fail("empty text output");
  fuzz::CheckDocument(document);
  return 0;
}
