// Synthetic Kineto traces of a training loop with planted, known bottlenecks.
//
// The generator writes what a PyTorch profiler would record for a simple data-parallel training
// loop (ProfilerStep#N, DataLoader __next__, forward/backward aten ops launching
// cuDNN/cuBLAS/cutlass/ elementwise kernels, H2D input copies, an NCCL all-reduce on a second
// stream, [memory] events), and records the ground truth it planted so tests can check the analyses
// against it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuscope/status.h"

namespace gpuscope {

enum class SynthPrecision : uint8_t { kBf16, kFp32 };

struct SynthOptions {
  uint64_t seed = 1;
  int ranks = 1;              // number of rank files written
  int steps = 8;              // ProfilerSteps per rank (ignored if target_bytes > 0)
  uint64_t target_bytes = 0;  // grow steps until each rank file's JSON is at least this big
  int layers = 12;            // transformer-ish blocks per step; kernels per step scale with it
  double dataloader_stall_fraction =
      0.0;                       // share of each step the GPU idles waiting for the next batch
  int sync_points_per_step = 0;  // .item()-style cudaStreamSynchronize calls per step
  // Share of each step all streams idle after the .item() syncs while Python uses the value
  // (docs/synth.md "sync stall"). [0, 0.9); with no sync points and a fraction > 0, one sync point
  // per step is used.
  double sync_stall_fraction = 0.0;
  bool pageable_copies = false;  // H2D input copies from pageable (true) or pinned (false) memory
  double exposed_comm_fraction =
      0.0;  // share of each step the all-reduce runs with no compute beside it
  // Share of each step the GPU idles before the first copy while the host runs a non-DataLoader,
  // non-sync op ("## log_metrics ##"): GPU idle not covered by the DataLoader (docs/synth.md).
  double host_gap_fraction = 0.0;
  // Share of compute-kernel time in kernels with fewer thread blocks than SMs: a per-parameter
  // loop of 16-block element-wise kernels after the optimizer (docs/synth.md).
  double tiny_grid_fraction = 0.0;
  SynthPrecision precision = SynthPrecision::kBf16;
  int straggler_rank = -1;  // this rank's compute runs slower by straggler_slowdown
  double straggler_slowdown = 1.3;
  // Kernels whose name contains slow_kernel (case-sensitive, full CUPTI name) run
  // slow_kernel_factor × longer, every instance on every rank; nothing else changes (same seed →
  // same durations elsewhere), so a diff must show exactly this kernel moving. Empty = none.
  std::string slow_kernel;
  double slow_kernel_factor = 1.0;
  bool gzip = false;                // write .gz (content is gzip whatever the file name)
  bool integer_timestamps = false;  // 2021 style integer µs instead of µs with 3 decimals
  std::string device_name = "NVIDIA A100-SXM4-80GB";
  int64_t device_memory_bytes = 85899345920;  // 80 GiB
};

// What was planted, per rank, so tests can compare analyses against ground truth.
struct SynthTruth {
  int rank = 0;
  int steps = 0;
  uint64_t events = 0;   // entries of traceEvents written
  uint64_t kernels = 0;  // GPU kernels (nccl kernels included)
  uint64_t nccl_kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t runtime_calls = 0;     // cuda_runtime events (launches, memcpy, sync calls, ...)
  uint64_t kernel_launches = 0;   // cudaLaunchKernel calls
  uint64_t cpu_ops = 0;           // cpu_op events
  uint64_t user_annotations = 0;  // user_annotation events (ProfilerStep#N, DataLoader, nccl:*)
  uint64_t memory_events = 0;     // [memory] instants
  uint64_t flow_events = 0;       // ac2g s + f
  uint64_t sync_calls = 0;        // cudaStreamSynchronize calls
  uint64_t bytes_written = 0;     // uncompressed JSON bytes
  int64_t step_ns = 0;            // mean planted step duration
  int64_t dataloader_wait_ns_per_step = 0;
  int64_t exposed_comm_ns_per_step = 0;
  // Mean over steps of S_i = Σ over the step's sync points of the all-streams GPU idle gap that
  // contains the end of the point's cudaStreamSynchronize (natural host-wait gap + planted stall).
  int64_t sync_stall_ns_per_step = 0;
  // Mean over steps of the GPU idle before the step's first copy not covered by the DataLoader.
  int64_t host_gap_ns_per_step = 0;
  // Σ compute-kernel time (NCCL excluded) of kernels with fewer blocks than SMs / Σ compute-kernel
  // time, over the whole trace.
  double tiny_grid_share = 0;
};

// Writes one rank's trace to `path`. Deterministic for the same options, rank and seed.
Result<SynthTruth> WriteSynthTrace(const SynthOptions& options, int rank, const std::string& path);

// Writes options.ranks files "<dir>/rank<R>.pt.trace.json[.gz]" (creating dir) and returns the
// truths.
Result<std::vector<SynthTruth>> WriteSynthTraces(const SynthOptions& options,
                                                 const std::string& dir);

}  // namespace gpuscope
