// Formula mode's Hugging Face step: the kernels one training step of HF's eager modules launches,
// written from the model's shape, so that the plan prices them exactly as it prices exact mode's
// measured op list (PriceMeasuredOps) when no torch is there to measure. GEMMs and attention are
// written out op by op; the memory-bound ops (casts, norms, activation chains, residual adds,
// RoPE, dropout, loss) are bytes per token by module kind, counted from exact mode's op lists of
// transformers' modules (docs/planner.md "Formula mode's Hugging Face step").
#pragma once

#include <cstdint>

#include "hw/gpu_table.h"
#include "plan/exact.h"
#include "plan/model_config.h"

namespace gpuscope::plan {

enum class Recompute;
enum class Optimizer;

// How the step's memory-bound ops run, which sets their bytes.
enum class HfRegime {
  kAutocast16,  // plain PyTorch: fp32 weights and residual, autocast to bf16/fp16 (DDP, 1 GPU)
  kFp32,        // fp32 or tf32 throughout
  kPure16,      // 16-bit weights and activations (DeepSpeed, FSDP mixed precision)
};

// The op list of one micro-batch of `batch` × `seq_len` tokens through `m` under HF's eager
// modules, its backward (with `recompute` full: the blocks' forward again) and the optimizer step
// over `parameters`, in exact mode's schema (MeasuredStep::ops; peak fields left at 0).
MeasuredStep HfFormulaStep(const ModelConfig& m, int64_t batch, int64_t seq_len,
                           hw::Precision precision, HfRegime regime, Recompute recompute,
                           Optimizer optimizer, double parameters);

}  // namespace gpuscope::plan
