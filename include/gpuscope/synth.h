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
  // ---- The job level (docs/synth.md "Jobs") -------------------------------------------------
  // Ranks wait for each other at collectives: each rank's NCCL kernel of a collective starts at
  // its own arrival and every rank's ends together, at the last arrival + the transfer time. The
  // ranks are generated as replicas of one another (the same random draws), so they differ only
  // by what is planted: the late rank (or the straggler), each rank's arrival jitter, clock
  // offset, process id and device. NCCL kernels and record_param_comms carry "Seq". Off (the
  // default): each rank is generated on its own, as before (byte for byte). Implied by late_rank,
  // clock_offset_max_ns and clock_noise_ns.
  bool coupled_collectives = false;
  // This rank's forward pass (its stem convolution) runs late_ns longer every step, so it reaches
  // every collective of the step about late_ns after the others, and they wait for it. -1 = none.
  int late_rank = -1;
  int64_t late_ns = 0;
  // Each rank's arrival at each collective is delayed by a seeded 0..arrival_jitter_ns (one rank
  // of each collective gets the maximum), so ranks that are on time do not arrive at once.
  int64_t arrival_jitter_ns = 1000;
  // Each rank's clock is off by a seeded offset in [−max, +max] ns: all its timestamps are shifted
  // by it (SynthTruth::clock_offset_ns).
  int64_t clock_offset_max_ns = 0;
  // On top of the offset, each step a rank's clock is off by a further seeded amount in
  // [−noise, +noise] ns: enough noise makes the clocks impossible to align from collective ends.
  int64_t clock_noise_ns = 0;
  // Files of this many separate runs of the same job in one folder: run j starts j hours after
  // run 0 and draws its own noise; with runs > 1 the files are "run<j>.rank<R>.pt.trace.json".
  int runs = 1;

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

  // Job level (SynthOptions::coupled_collectives; zeros otherwise).
  int run = 0;                  // which run of the folder this file belongs to
  bool late = false;            // the planted late rank (or the straggler, when coupled)
  int64_t clock_offset_ns = 0;  // this rank's clock minus the true time (every timestamp)
  uint64_t collectives = 0;     // collectives this rank took part in (its NCCL kernels)
  // As generated, over the whole trace, divided by `steps` (all ns). Arrival = the rank's NCCL
  // kernel start on the true clock. wait caused: Σ over the collectives this rank reached last of
  // (its arrival − the second-last arrival); wait suffered: Σ (last arrival − its arrival).
  int64_t wait_caused_ns_per_step = 0;
  int64_t wait_suffered_ns_per_step = 0;
  uint64_t times_last = 0;  // collectives it reached strictly last
};

// Writes one rank's trace to `path`. Deterministic for the same options, rank and seed.
Result<SynthTruth> WriteSynthTrace(const SynthOptions& options, int rank, const std::string& path);

// Writes options.ranks files "<dir>/rank<R>.pt.trace.json[.gz]" (creating dir) and returns the
// truths; with runs > 1, options.runs × options.ranks files "<dir>/run<J>.rank<R>.pt.trace.json"
// (truths in that order).
Result<std::vector<SynthTruth>> WriteSynthTraces(const SynthOptions& options,
                                                 const std::string& dir);

}  // namespace gpuscope
