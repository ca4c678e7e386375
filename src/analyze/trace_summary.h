// What a loaded trace holds, per rank: device, span, steps, event counts by kind, link coverage,
// and the reader's diagnostics. A pure function of the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuscope/model.h"

namespace gpuscope::analyze {

struct EventCounts {
  uint64_t kernels = 0;
  uint64_t nccl_kernels = 0;  // kernel name contains "nccl" or "rccl" (case-insensitive)
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t gpu_syncs = 0;        // cuda_sync events
  uint64_t runtime_calls = 0;    // runtime + driver API calls
  uint64_t kernel_launches = 0;  // kernel-launch and graph-launch API calls
  uint64_t cpu_ops = 0;          // CpuKind::kCpuOp
  uint64_t user_annotations = 0;
  uint64_t gpu_user_annotations = 0;
  uint64_t python_functions = 0;
  uint64_t other_cpu_events = 0;  // profiler ranges and unknown categories
  uint64_t profiler_ranges = 0;   // of those, CUPTI range-profiler kernels (cuda_profiler_range)
  uint64_t profiler_steps = 0;
  uint64_t dataloader_ops = 0;
  uint64_t memory_events = 0;
  uint64_t counter_samples = 0;
  uint64_t flow_events = 0;
  uint64_t instant_events = 0;
};

struct TraceSummary {
  std::string path;
  int32_t rank = -1;
  int32_t world_size = -1;
  RankSource rank_source = RankSource::kNone;
  TraceFormat format = TraceFormat::kKinetoObject;
  bool gzip = false;
  uint64_t file_bytes = 0;
  uint64_t json_bytes = 0;
  uint64_t events_total = 0;
  std::string display_time_unit;
  std::optional<int64_t> base_time_ns;
  // The device this rank ran on: the device GPU events name (or the first listed).
  std::string device_name;
  int64_t device_memory_bytes = -1;
  int32_t device_sms = -1;
  int32_t compute_major = -1;
  int32_t compute_minor = -1;
  size_t devices_listed = 0;
  // GPU span: first GPU activity start → last GPU activity end, ns on the trace clock.
  int64_t gpu_start_ns = 0;
  int64_t gpu_end_ns = 0;
  int64_t cpu_start_ns = 0;
  int64_t cpu_end_ns = 0;
  std::vector<int32_t> steps;  // ProfilerStep numbers found, ascending
  EventCounts counts;
  LinkStats links;
  Diagnostics diagnostics;
  uint64_t trace_span_events_dropped = 0;
  std::vector<std::string> warnings;
};

TraceSummary SummarizeTrace(const Trace& trace);

}  // namespace gpuscope::analyze
