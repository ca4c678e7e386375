// GPU sampling through NVML, loaded at run time with dlopen so gpuscope builds and runs on
// machines without the NVIDIA driver (like most laptops that read traces).
//
// We declare the few NVML entry points we call ourselves (types and constants as in nvml.h of
// CUDA 12) instead of needing the CUDA toolkit's header at build time. Entry points used:
//   nvmlInit_v2, nvmlShutdown, nvmlErrorString, nvmlDeviceGetCount_v2,
//   nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetName, nvmlDeviceGetUtilizationRates,
//   nvmlDeviceGetMemoryInfo, nvmlDeviceGetPowerUsage, nvmlDeviceGetEnforcedPowerLimit,
//   nvmlDeviceGetClockInfo, nvmlDeviceGetTemperature, nvmlDeviceGetPcieThroughput,
//   nvmlDeviceGetCurrentClocksThrottleReasons,
//   nvmlDeviceGetComputeRunningProcesses(_v3 | _v2 | v1).
// A metric whose entry point is missing or answers NOT_SUPPORTED is skipped for that GPU; a
// metric that fails mid-run with another error is disabled for that GPU with a note, so one
// broken counter never stops the run.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gpuscope/status.h"
#include "model/monitor_samples.h"

namespace gpuscope::monitor {

// Default library name (the driver installs it); GPUSCOPE_NVML_LIBRARY overrides it.
inline constexpr const char* kNvmlLibraryName = "libnvidia-ml.so.1";
inline constexpr const char* kNvmlLibraryEnv = "GPUSCOPE_NVML_LIBRARY";

class NvmlSampler {
 public:
  // Opens `library_path` (empty → $GPUSCOPE_NVML_LIBRARY, else libnvidia-ml.so.1), initialises
  // NVML and lists the GPUs. An error means "no GPU metrics" (no driver, no GPU, init failed).
  static Result<std::unique_ptr<NvmlSampler>> Open(const std::string& library_path);
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  const std::vector<GpuInfo>& gpus() const { return gpus_; }
  // One sample per GPU. `tree_pids` selects whose GPU memory counts as the watched tree's; each of
  // them that holds a compute context on some GPU gets its bytes (summed over GPUs) in
  // `*on_gpu` (0 when NVML does not know the amount).
  std::vector<GpuSample> Sample(const std::set<int32_t>& tree_pids,
                                std::map<int32_t, uint64_t>* on_gpu = nullptr);
  // Metrics disabled after a mid-run error, one line each ("GPU 0 power: GPU is lost"); taken.
  std::vector<std::string> TakeNotes();

  struct Api;

 private:
  NvmlSampler() = default;
  enum Metric : int {
    kUtil,
    kMemory,
    kPower,
    kPowerLimit,
    kClock,
    kTemperature,
    kPcieRx,
    kPcieTx,
    kThrottle,
    kProcesses,
    kMetricCount
  };
  // Calls a metric's entry point result code: true when a value was produced. Skips the metric
  // from now on for NOT_SUPPORTED (silently) or any other error (with a note).
  bool Check(size_t gpu, Metric metric, int nvml_return);

  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  std::vector<void*> devices_;
  std::vector<GpuInfo> gpus_;
  std::vector<std::vector<bool>> disabled_;  // [gpu][metric]
  std::vector<std::string> notes_;
};

}  // namespace gpuscope::monitor
