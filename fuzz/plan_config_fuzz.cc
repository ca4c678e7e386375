// Fuzz target: any bytes → a Hugging Face config.json (ParseHfConfig) and optionally a --gpu-spec
// string (ParseGpuSpec) must parse or give a Status, never crash; whatever parses is planned (a
// fixed small request: one exact configuration, or a search over 8 GPUs) and its document rendered
// as text, JSON and HTML, so the arithmetic sees hostile sizes (huge layers, heads not dividing
// hidden, …).
// Layout: byte 0 picks the mode; with bit 0 set the first line is a --gpu-spec string; the rest is
// the config. Seeds: fuzz/run.sh (models/*.json).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "checks.h"
#include "hw/gpu_table.h"
#include "plan/model_config.h"
#include "plan/planner.h"
#include "plan/render.h"
#include "render/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  hw::GpuSpec gpu;
  if (mode & 1) {
    const size_t eol = rest.find('\n');
    auto spec = hw::ParseGpuSpec(rest.substr(0, eol));
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    if (!spec.ok()) {
      if (spec.status().message().empty()) __builtin_trap();
      return 0;
    }
    gpu = *spec;
  } else {
    const auto& known = hw::KnownGpus();
    gpu = known[(mode >> 1) % known.size()];
  }
  auto model = plan::ParseHfConfig(rest, "fuzz/config.json");
  if (!model.ok()) {
    if (model.status().message().empty()) __builtin_trap();
    return 0;
  }
  plan::PlanRequest r;
  r.model = *model;
  r.gpu = gpu;
  r.top = 3;
  if (mode & 0x80) {  // one exact configuration
    r.gpus = 1 + ((mode >> 4) & 1);
    r.global_batch = 4;
    r.seq_len = (mode & 0x40) ? 1 : 4096;
    r.tp = 1;
    r.pp = 1;
    r.mbs = 1 + ((mode >> 5) & 1);
    r.sharding = plan::Sharding::kNone;
    r.recompute = plan::Recompute::kSelective;
    r.precision = gpu.tflops_bf16 > 0 ? hw::Precision::kBf16 : hw::Precision::kFp16;
  } else {  // a small search
    r.gpus = (mode & 0x40) ? 8 : 2;
    r.global_batch = 16;
    r.seq_len = 2048;
    r.suggest = (mode >> 4) & 1;
  }
  auto rep = plan::Plan(r);
  if (!rep.ok()) {
    if (rep.status().message().empty()) __builtin_trap();
    return 0;
  }
  // A config that parsed is a real model: its parameter count must be a positive finite number.
  if (!(rep->params.total > 0) || !std::isfinite(rep->params.total)) __builtin_trap();
  const render::Document document = plan::BuildDocument(*rep);
  render::TextOptions text;
  text.verbose = mode & 0x20;
  if (render::RenderText(document, text).empty()) fuzz::Fail("empty text output");
  fuzz::CheckDocument(document);
  return 0;
}
