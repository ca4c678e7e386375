// One steady step in time (issue 35): what each CPU thread and each GPU stream did during the step
// the report draws as its timeline — ops, DataLoader waits, CUDA runtime launches and syncs,
// kernels by class, copies — and when the whole GPU sat idle. The step drawn is the steady step
// of median duration (a typical step, not the slowest), else the longest complete one.
//
// Drawn, not counted: spans shorter than a resolution (the step / kTimelineResolution, coarser
// while over kTimelineMaxSpans) merge with their
// neighbours of the same kind on the same lane, so a launch-bound step of thousands of 3 µs
// kernels stays a few thousand rectangles. The analyses that count (steps, GPU time, idle gaps)
// keep their exact sums.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/kernel_class.h"
#include "analyze/steps.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

enum class TimelineKind : uint8_t {
  kHostOp,         // a CPU op or annotation (outermost on its thread)
  kDataLoader,     // waiting for the next batch (enumerate(DataLoader)…)
  kLaunch,         // CUDA runtime: kernel, graph, copy and set launches
  kSync,           // CUDA runtime: device/stream/event synchronize, stream wait
  kCompute,        // kernels by class (analyze/kernel_class.h)
  kCommunication,  //
  kMemoryKernel,   // memset and memory kernels
  kCopy,           // memcpy
  kGpuIdle,        // no GPU stream busy (one lane for the whole device set)
  kCount
};
inline constexpr size_t kTimelineKindCount = static_cast<size_t>(TimelineKind::kCount);
// "host_op", "dataloader", "launch", "sync", "compute", "communication", "memory", "copy",
// "gpu_idle".
const char* TimelineKindName(TimelineKind k);

struct TimelineSpan {
  uint32_t lane = 0;
  TimelineKind kind = TimelineKind::kHostOp;
  int64_t start_ns = 0;  // from the step's start
  int64_t end_ns = 0;
  StringId name = kEmptyString;  // the op or kernel (the longest one of a merged run)
  uint32_t merged = 1;           // events drawn as this span
};

struct StepTimeline {
  int32_t step = -1;  // N of ProfilerStep#N drawn; -1: none
  std::string step_name;
  int64_t start_ns = 0;  // trace clock
  int64_t end_ns = 0;
  // "CPU thread 123", "CPU thread 123 · CUDA runtime", "GPU 0 stream 7", "GPU idle".
  std::vector<std::string> lanes;
  std::vector<TimelineSpan> spans;  // lane order, then time order
};

// Drawn at 1/kTimelineResolution of the step; at most kTimelineMaxThreads CPU threads (those with
// the most op time in the step) and kTimelineMaxStreams GPU streams (the busiest).
inline constexpr int64_t kTimelineResolution = 2000;
inline constexpr size_t kTimelineMaxThreads = 4;
inline constexpr size_t kTimelineMaxStreams = 12;
// The drawing's size bound (it travels in every rank's summary): coarser resolution until under.
inline constexpr size_t kTimelineMaxSpans = 2500;

StepTimeline BuildStepTimeline(const Trace& trace, const KernelClasses& classes,
                               const StepsResult& steps);

}  // namespace gpuscope::analyze
