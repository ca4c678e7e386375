// Host work inside the steady steps that is none of the step's real work: the driver's memory
// calls (the caching allocator going to cudaMalloc / cudaFree every step), JIT compilation
// (TorchInductor / Triton / nvFuser / NVRTC compiling inside the step), and time the host spends
// outside any recorded op (Python the profiler does not record, a warm-up step, a step annotation
// that outlives the work). Each is a finding of its own (advise: allocator_churn, jit_compile,
// unrecorded_host_time) with its own fix, priced by replaying the step without it (whatif).
//
// Definitions (docs/advice.md has them with the rules):
//  * window: a steady step's host span [ProfilerStep start, end] (StepBreakdown::host_*); of a
//    trace with more than kMaxGraphSteps steady steps, the middle kMaxGraphSteps, as the step
//    graph takes them (their per-step figures stand for all; a 1 GB trace costs a small one's).
//  * allocator call: a runtime or driver call that asks the driver for device or pinned memory
//    or gives it back: cudaMalloc, cudaFree, cuMemAlloc(_v2), cuMemFree(_v2), hipMalloc, hipFree,
//    cudaHostAlloc, cudaMallocHost, cudaFreeHost, hipHostMalloc, hipHostFree, cuMemHostAlloc,
//    cuMemFreeHost. Stream-ordered ones (cudaMallocAsync, cudaFreeAsync) are not: they do not go
//    to the driver's heap each time. Counted when it starts in a window. One longer than
//    kDriverInitCallNs is the driver initialising (context creation inside the first cudaFree or
//    cudaMalloc: 2,079 ms on a held-out export, 6.5 s on HTA's AlexNet trace), not the allocator
//    churning: counted apart (driver_init_*), and no allocator setting removes it.
//  * compile span: a CPU op, annotation, Python function or runtime call whose name says it
//    compiles or autotunes code (IsCompileName: "compile", "nvrtc", "autotune", cuModuleLoad*,
//    cuLibraryLoad*, hipModuleLoad*, "Fuser"/"fusion" with "compil"), not the run of compiled code
//    ("Torch-Compiled Region", "CompiledFunction"). Outermost spans, merged across threads,
//    clipped to the windows.
//  * unrecorded span: time in a window that no CPU op, annotation (ProfilerStep itself excluded),
//    Python function or runtime call of any thread covers. With the GPU idle there too this is the
//    step category "other".
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyze/steps.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

inline constexpr int64_t kDriverInitCallNs = 100'000'000;  // 100 ms
// Host time in the steady steps that no recorded op or runtime call covers, of the mean steady
// step: above it the step is mostly a warm-up step or Python the profiler does not see (the
// advice rule unrecorded_host_time fires, and the what-if unrecorded_removed is replayed).
inline constexpr double kUnrecordedShare = 0.30;

// Sorted, disjoint [start, end) spans, ns.
using Spans = std::vector<std::pair<int64_t, int64_t>>;

struct NamedTime {
  std::string name;
  uint64_t count = 0;
  int64_t ns = 0;
};

struct HostWork {
  uint32_t windows = 0;  // steady steps looked at (at most kMaxGraphSteps)

  uint64_t allocator_calls = 0;
  int64_t allocator_ns = 0;                // Σ their durations
  std::vector<NamedTime> allocator_names;  // by time, largest first
  uint64_t driver_init_calls = 0;          // allocator calls longer than kDriverInitCallNs
  int64_t driver_init_ns = 0;

  Spans compile_spans;                   // merged, clipped to the windows
  int64_t compile_ns = 0;                // Σ compile_spans
  std::vector<NamedTime> compile_names;  // outermost compile ops by time, at most 3

  Spans unrecorded_spans;  // in the windows, no recorded host event of any thread
  int64_t unrecorded_ns = 0;
  // The part of it before each window's first kernel launch (the GPU has nothing to do yet:
  // Python preparing the step's input, a tokenizer, a warm-up).
  int64_t unrecorded_before_first_launch_ns = 0;
  int64_t window_ns = 0;  // Σ window lengths

  // torch.compile's marks: "Torch-Compiled Region: F/N" (frame F, its Nth compile) and
  // "TorchDynamo Cache Lookup" anywhere in the trace; recompiles: regions with N > 0.
  bool torch_compile = false;
  uint32_t recompiled_regions = 0;
};

bool IsAllocatorCall(std::string_view name);
bool IsCompileName(std::string_view name);

HostWork AnalyzeHostWork(const Trace& trace, const StepsResult& steps);

// The host time that jit_compile and allocator_churn claim, anywhere in the trace: compile spans
// and allocator calls (those up to kDriverInitCallNs: longer ones are the driver initialising,
// which no allocator setting removes), merged. idle_gaps leaves it out of its unexplained idle,
// so one idle is not counted by two findings.
Spans CompileAndAllocatorSpans(const Trace& trace);

// Σ of the overlap of [start, end) with `spans`.
int64_t OverlapNs(const Spans& spans, int64_t start, int64_t end);

}  // namespace gpuscope::analyze
