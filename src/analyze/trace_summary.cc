#include "analyze/trace_summary.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace gpuscope::analyze {

namespace {

bool ContainsNccl(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    char a = name[i] | 0x20, b = name[i + 1] | 0x20, c = name[i + 2] | 0x20, d = name[i + 3] | 0x20;
    if ((a == 'n' || a == 'r') && b == 'c' && c == 'c' && d == 'l') return true;
  }
  return false;
}

// GPU events by kind and the GPU span; the events per device (the rank's device is the busiest).
std::map<int32_t, uint64_t> CountGpuEvents(const Trace& t, TraceSummary& s) {
  EventCounts& c = s.counts;
  std::map<int32_t, uint64_t> events_per_device;
  int64_t gpu_start = std::numeric_limits<int64_t>::max(),
          gpu_end = std::numeric_limits<int64_t>::min();
  std::vector<bool> name_is_nccl(t.strings.size(), false);
  std::vector<bool> name_checked(t.strings.size(), false);
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    // Synchronisation records are no GPU work: an event sync on no stream (CUPTI's 2^32−1) ends
    // whenever the host stops waiting, and stretched an Nsight export's GPU span 5.3 → 28.8 ms.
    if (t.gpu.kind[i] != GpuKind::kSync) {
      gpu_start = std::min(gpu_start, t.gpu.start_ns[i]);
      gpu_end = std::max(gpu_end, t.gpu.start_ns[i] + t.gpu.dur_ns[i]);
    }
    const int32_t device =
        t.gpu.device[i] >= 0 ? t.gpu.device[i] : static_cast<int32_t>(t.gpu.pid[i]);
    ++events_per_device[device];
    switch (t.gpu.kind[i]) {
      case GpuKind::kKernel: {
        ++c.kernels;
        const StringId n = t.gpu.name[i];
        if (!name_checked[n]) {
          name_checked[n] = true;
          name_is_nccl[n] = ContainsNccl(t.Str(n));
        }
        if (name_is_nccl[n]) ++c.nccl_kernels;
        break;
      }
      case GpuKind::kMemcpy:
        ++c.memcpys;
        break;
      case GpuKind::kMemset:
        ++c.memsets;
        break;
      case GpuKind::kSync:
        ++c.gpu_syncs;
        break;
    }
  }
  if (gpu_start <= gpu_end) {
    s.gpu_start_ns = gpu_start;
    s.gpu_end_ns = gpu_end;
  }
  return events_per_device;
}

// Runtime calls, CPU events by kind, the CPU span and the profiler steps.
void CountCpuEvents(const Trace& t, TraceSummary& s) {
  EventCounts& c = s.counts;
  c.runtime_calls = t.runtime.size();
  for (RuntimeKind k : t.runtime.kind) {
    if (k == RuntimeKind::kKernelLaunch || k == RuntimeKind::kGraphLaunch) ++c.kernel_launches;
  }
  int64_t cpu_start = std::numeric_limits<int64_t>::max(),
          cpu_end = std::numeric_limits<int64_t>::min();
  std::set<int32_t> steps;
  for (size_t i = 0; i < t.cpu.size(); ++i) {
    cpu_start = std::min(cpu_start, t.cpu.start_ns[i]);
    cpu_end = std::max(cpu_end, t.cpu.start_ns[i] + t.cpu.dur_ns[i]);
    switch (t.cpu.kind[i]) {
      case CpuKind::kCpuOp:
        ++c.cpu_ops;
        break;
      case CpuKind::kUserAnnotation:
        ++c.user_annotations;
        break;
      case CpuKind::kGpuUserAnnotation:
        ++c.gpu_user_annotations;
        break;
      case CpuKind::kPythonFunction:
        ++c.python_functions;
        break;
      case CpuKind::kProfilerRange:
        ++c.profiler_ranges;
        ++c.other_cpu_events;
        break;
      case CpuKind::kOther:
        ++c.other_cpu_events;
        break;
    }
    if (t.cpu.step[i] >= 0) {
      ++c.profiler_steps;
      steps.insert(t.cpu.step[i]);
    }
    if (t.cpu.is_dataloader[i]) ++c.dataloader_ops;
  }
  for (size_t i = 0; i < t.runtime.size(); ++i) {
    cpu_start = std::min(cpu_start, t.runtime.start_ns[i]);
    cpu_end = std::max(cpu_end, t.runtime.start_ns[i] + t.runtime.dur_ns[i]);
  }
  if (cpu_start <= cpu_end) {
    s.cpu_start_ns = cpu_start;
    s.cpu_end_ns = cpu_end;
  }
  s.steps.assign(steps.begin(), steps.end());
  c.memory_events = t.memory.size();
  c.counter_samples = t.counters.size();
  c.flow_events = t.flows.size() + t.info.flow_events_dropped;
  c.instant_events = t.instants.size();
}

void DescribeDevice(const Trace& t, const std::map<int32_t, uint64_t>& events_per_device,
                    TraceSummary& s) {
  // The rank's device: the one most GPU events ran on; else the first listed.
  s.devices_listed = t.devices.size();
  int32_t device_id = -1;
  uint64_t best = 0;
  for (auto [id, n] : events_per_device) {
    if (n > best) best = n, device_id = id;
  }
  const DeviceProperties* dev = nullptr;
  for (const DeviceProperties& d : t.devices) {
    if (d.id == device_id) dev = &d;
  }
  if (!dev && !t.devices.empty() && device_id < 0) dev = &t.devices.front();
  if (dev) {
    s.device_name = dev->name;
    s.device_memory_bytes = dev->total_global_mem_bytes;
    s.device_sms = dev->num_sms;
    s.compute_major = dev->compute_major;
    s.compute_minor = dev->compute_minor;
  }
}

// What the reader could not read, and what the trace lacks for the analyses.
void AddWarnings(const Trace& t, TraceSummary& s) {
  // Events the reader had to skip: GPU events may be among them, so with any of these the missing
  // GPU events are not blamed on the profiler settings.
  uint64_t skipped = 0;
  for (Diag d : {Diag::kMalformedEvent, Diag::kNotAnObject, Diag::kMissingPhase,
                 Diag::kUnknownPhase, Diag::kMissingTimestamp, Diag::kMissingDuration,
                 Diag::kNegativeDuration, Diag::kUnmatchedBegin, Diag::kUnmatchedEnd}) {
    skipped += t.diagnostics.count[static_cast<size_t>(d)];
  }
  s.warnings = t.info.notes;
  if (t.gpu.size() == 0 && skipped > 0) {
    s.warnings.push_back("no GPU events were read, and " + std::to_string(skipped) +
                         " events were skipped (see diagnostics): the GPU events may be among "
                         "them; GPU analyses are empty");
  } else if (const uint64_t ranges = s.counts.profiler_ranges; t.gpu.size() == 0 && ranges > 0) {
    // CUPTI's range profiler (torch.profiler's experimental_config profiler_metrics, HTA's
    // cupti_profiler_counters trace) records each kernel as a cuda_profiler_range with hardware
    // counters instead of a kernel activity, replaying it to count them.
    s.warnings.push_back(
        "no GPU timeline in this trace: it was recorded with CUPTI's range profiler "
        "(torch.profiler experimental_config=_ExperimentalConfig(profiler_metrics=[...])), "
        "which records each of its " +
        std::to_string(ranges) +
        " kernels as a cuda_profiler_range event with hardware counters, replayed one at a "
        "time to count them: their times are not the job's, and GPU analyses need a trace "
        "recorded with ProfilerActivity.CUDA and without profiler_metrics");
  } else if (t.gpu.size() == 0) {
    s.warnings.push_back(
        "no GPU events in this trace: it was recorded without CUDA activities (e.g. "
        "torch.profiler with activities=[ProfilerActivity.CPU] only) or on a CPU-only run; "
        "GPU analyses need ProfilerActivity.CUDA");
  }
  // Every duration 0: nothing can be timed, and "step time 0 ns" would read as a measurement.
  {
    const auto any = [](const std::vector<int64_t>& d) {
      return std::any_of(d.begin(), d.end(), [](int64_t v) { return v != 0; });
    };
    const size_t events = t.gpu.size() + t.cpu.size() + t.runtime.size();
    if (events > 0 && !any(t.gpu.dur_ns) && !any(t.cpu.dur_ns) && !any(t.runtime.dur_ns))
      s.warnings.push_back("every one of the " + std::to_string(events) +
                           " events has a duration of 0: no time can be measured, and every "
                           "duration below reads 0 (a trace written without \"dur\", or rounded "
                           "to 0; record it again with torch.profiler)");
  }
  if (s.steps.empty() && t.gpu.size() > 0) {
    s.warnings.push_back(
        "no ProfilerStep#N annotations: per-step results will use the whole span "
        "(call prof.step() once per training step)");
  }
}

}  // namespace

TraceSummary SummarizeTrace(const Trace& t) {
  TraceSummary s;
  s.path = t.info.path;
  s.rank = t.info.rank;
  s.world_size = t.info.world_size;
  s.rank_source = t.info.rank_source;
  s.format = t.info.format;
  s.gzip = t.info.gzip;
  s.file_bytes = t.info.file_bytes;
  s.json_bytes = t.info.json_bytes;
  s.events_total = t.info.events_total;
  s.display_time_unit = t.info.display_time_unit;
  s.base_time_ns = t.info.base_time_ns;
  s.links = t.links;
  s.diagnostics = t.diagnostics;
  s.trace_span_events_dropped = t.info.trace_span_events_dropped;

  const std::map<int32_t, uint64_t> events_per_device = CountGpuEvents(t, s);
  CountCpuEvents(t, s);
  DescribeDevice(t, events_per_device, s);
  AddWarnings(t, s);
  return s;
}

}  // namespace gpuscope::analyze
