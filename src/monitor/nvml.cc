#include "monitor/nvml.h"

#include <dlfcn.h>

#include <cstdlib>

#include "base/sanitize.h"

namespace gpuscope::monitor {

namespace {

// Our own declarations of the NVML types we use (layout as in nvml.h, CUDA 12).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlNotSupported = 3;
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;
// usedGpuMemory when the driver may not tell (no permission, some modes).
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;
constexpr int kNvmlClockSm = 1;         // nvmlClockType_t NVML_CLOCK_SM
constexpr int kNvmlTemperatureGpu = 0;  // nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU
constexpr int kNvmlPcieTxBytes = 0;     // nvmlPcieUtilCounter_t, answers in KB/s
constexpr int kNvmlPcieRxBytes = 1;

struct nvmlUtilization_t {
  unsigned int gpu;     // % of the sample period a kernel was running
  unsigned int memory;  // % of the sample period device memory was read or written
};
struct nvmlMemory_t {
  unsigned long long total, free, used;  // bytes
};
struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes
};
struct nvmlProcessInfo_v2_t {  // used by the _v2 and _v3 entry points
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

template <typename F>
F Sym(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

}  // namespace

struct NvmlSampler::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*get_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*get_handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*get_util)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*get_power)(nvmlDevice_t, unsigned int*) = nullptr;             // mW
  nvmlReturn_t (*get_power_limit)(nvmlDevice_t, unsigned int*) = nullptr;       // mW
  nvmlReturn_t (*get_clock)(nvmlDevice_t, int, unsigned int*) = nullptr;        // MHz
  nvmlReturn_t (*get_temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;  // °C
  nvmlReturn_t (*get_pcie)(nvmlDevice_t, int, unsigned int*) = nullptr;         // KB/s
  nvmlReturn_t (*get_throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*get_procs_v2)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v2_t*) = nullptr;
  nvmlReturn_t (*get_procs_v1)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v1_t*) = nullptr;

  std::string Error(nvmlReturn_t r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return (s ? SanitizeText(s) : std::string("error")) + " (NVML code " + std::to_string(r) + ")";
  }
};

Result<std::unique_ptr<NvmlSampler>> NvmlSampler::Open(const std::string& library_path) {
  std::string path = library_path;
  if (path.empty()) {
    const char* env = std::getenv(kNvmlLibraryEnv);
    path = env && *env ? env : kNvmlLibraryName;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return Status::Error(StatusCode::kNotFound, "cannot load NVML (" + SanitizeText(path) +
                                                    "): " + SanitizeText(why ? why : "unknown") +
                                                    " — no NVIDIA driver on this machine?");
  }
  std::unique_ptr<NvmlSampler> s(new NvmlSampler());
  s->handle_ = handle;
  s->api_ = std::make_unique<Api>();
  Api& a = *s->api_;
  using R = nvmlReturn_t;
  a.init = Sym<R (*)()>(handle, "nvmlInit_v2");
  if (!a.init) a.init = Sym<R (*)()>(handle, "nvmlInit");
  a.shutdown = Sym<R (*)()>(handle, "nvmlShutdown");
  a.error_string = Sym<const char* (*)(R)>(handle, "nvmlErrorString");
  a.get_count = Sym<R (*)(unsigned int*)>(handle, "nvmlDeviceGetCount_v2");
  if (!a.get_count) a.get_count = Sym<R (*)(unsigned int*)>(handle, "nvmlDeviceGetCount");
  a.get_handle = Sym<R (*)(unsigned int, nvmlDevice_t*)>(handle, "nvmlDeviceGetHandleByIndex_v2");
  if (!a.get_handle)
    a.get_handle = Sym<R (*)(unsigned int, nvmlDevice_t*)>(handle, "nvmlDeviceGetHandleByIndex");
  a.get_name = Sym<R (*)(nvmlDevice_t, char*, unsigned int)>(handle, "nvmlDeviceGetName");
  a.get_util =
      Sym<R (*)(nvmlDevice_t, nvmlUtilization_t*)>(handle, "nvmlDeviceGetUtilizationRates");
  a.get_memory = Sym<R (*)(nvmlDevice_t, nvmlMemory_t*)>(handle, "nvmlDeviceGetMemoryInfo");
  a.get_power = Sym<R (*)(nvmlDevice_t, unsigned int*)>(handle, "nvmlDeviceGetPowerUsage");
  a.get_power_limit =
      Sym<R (*)(nvmlDevice_t, unsigned int*)>(handle, "nvmlDeviceGetEnforcedPowerLimit");
  a.get_clock = Sym<R (*)(nvmlDevice_t, int, unsigned int*)>(handle, "nvmlDeviceGetClockInfo");
  a.get_temperature =
      Sym<R (*)(nvmlDevice_t, int, unsigned int*)>(handle, "nvmlDeviceGetTemperature");
  a.get_pcie = Sym<R (*)(nvmlDevice_t, int, unsigned int*)>(handle, "nvmlDeviceGetPcieThroughput");
  a.get_throttle = Sym<R (*)(nvmlDevice_t, unsigned long long*)>(
      handle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  using ProcsV2 = R (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v2_t*);
  a.get_procs_v2 = Sym<ProcsV2>(handle, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!a.get_procs_v2)
    a.get_procs_v2 = Sym<ProcsV2>(handle, "nvmlDeviceGetComputeRunningProcesses_v2");
  if (!a.get_procs_v2)
    a.get_procs_v1 = Sym<R (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v1_t*)>(
        handle, "nvmlDeviceGetComputeRunningProcesses");

  if (!a.init || !a.get_count || !a.get_handle)
    return Status::Error(StatusCode::kNotFound,
                         SanitizeText(path) +
                             " does not export nvmlInit/nvmlDeviceGetCount/"
                             "nvmlDeviceGetHandleByIndex: not an NVML library");
  if (R r = a.init(); r != kNvmlSuccess) {
    a.shutdown = nullptr;  // nothing to shut down
    return Status::Error(StatusCode::kNotFound, "NVML init failed: " + a.Error(r));
  }
  unsigned int count = 0;
  if (R r = a.get_count(&count); r != kNvmlSuccess)
    return Status::Error(StatusCode::kNotFound, "NVML cannot count GPUs: " + a.Error(r));
  if (count == 0) return Status::Error(StatusCode::kNotFound, "NVML sees no GPU");
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (R r = a.get_handle(i, &device); r != kNvmlSuccess) {
      s->notes_.push_back("GPU " + std::to_string(i) + " skipped: " + a.Error(r));
      continue;
    }
    GpuInfo info;
    info.index = static_cast<int32_t>(i);
    char name[96] = {0};
    // The driver's text, printed and recorded: through the shared sanitiser like every name.
    if (a.get_name && a.get_name(device, name, sizeof name - 1) == kNvmlSuccess)
      info.name = SanitizeText(name);
    nvmlMemory_t memory{};
    if (a.get_memory && a.get_memory(device, &memory) == kNvmlSuccess)
      info.mem_total_bytes = memory.total;
    unsigned int limit_mw = 0;
    if (a.get_power_limit && a.get_power_limit(device, &limit_mw) == kNvmlSuccess)
      info.power_limit_w = limit_mw / 1000.0;
    s->devices_.push_back(device);
    s->gpus_.push_back(info);
  }
  if (s->devices_.empty()) return Status::Error(StatusCode::kNotFound, "NVML: no usable GPU");
  s->disabled_.assign(s->devices_.size(), std::vector<bool>(kMetricCount, false));
  // Entry points absent from this driver: skip those metrics everywhere.
  const bool missing[kMetricCount] = {!a.get_util,     !a.get_memory,
                                      !a.get_power,    !a.get_power_limit,
                                      !a.get_clock,    !a.get_temperature,
                                      !a.get_pcie,     !a.get_pcie,
                                      !a.get_throttle, !a.get_procs_v2 && !a.get_procs_v1};
  for (auto& row : s->disabled_)
    for (int m = 0; m < kMetricCount; ++m) row[m] = missing[m];
  return s;
}

NvmlSampler::~NvmlSampler() {
  if (api_ && api_->shutdown) api_->shutdown();
  if (handle_) dlclose(handle_);
}

std::vector<std::string> NvmlSampler::TakeNotes() {
  std::vector<std::string> out;
  out.swap(notes_);
  return out;
}

bool NvmlSampler::Check(size_t gpu, Metric metric, int nvml_return) {
  if (nvml_return == kNvmlSuccess) return true;
  disabled_[gpu][metric] = true;
  if (nvml_return != kNvmlNotSupported) {
    static const char* const kNames[kMetricCount] = {
        "utilisation", "memory",  "power",   "power limit",      "SM clock",
        "temperature", "PCIe rx", "PCIe tx", "throttle reasons", "per-process memory"};
    notes_.push_back("GPU " + std::to_string(gpus_[gpu].index) + " " + kNames[metric] +
                     ": stopped sampling after NVML error " + api_->Error(nvml_return));
  }
  return false;
}

std::vector<GpuSample> NvmlSampler::Sample(const std::set<int32_t>& tree_pids,
                                           std::map<int32_t, uint64_t>* on_gpu) {
  const Api& a = *api_;
  std::vector<GpuSample> out;
  out.reserve(devices_.size());
  for (size_t g = 0; g < devices_.size(); ++g) {
    nvmlDevice_t d = devices_[g];
    const std::vector<bool>& off = disabled_[g];
    GpuSample s;
    s.index = gpus_[g].index;
    if (!off[kUtil]) {
      nvmlUtilization_t u{};
      if (Check(g, kUtil, a.get_util(d, &u))) s.sm_util_pct = u.gpu, s.mem_util_pct = u.memory;
    }
    if (!off[kMemory]) {
      nvmlMemory_t m{};
      if (Check(g, kMemory, a.get_memory(d, &m)))
        s.mem_used_bytes = m.used, s.mem_total_bytes = m.total;
    }
    unsigned int v = 0;
    if (!off[kPower] && Check(g, kPower, a.get_power(d, &v))) s.power_w = v / 1000.0;
    if (!off[kPowerLimit] && Check(g, kPowerLimit, a.get_power_limit(d, &v)))
      s.power_limit_w = v / 1000.0;
    if (!off[kClock] && Check(g, kClock, a.get_clock(d, kNvmlClockSm, &v))) s.sm_clock_mhz = v;
    if (!off[kTemperature] && Check(g, kTemperature, a.get_temperature(d, kNvmlTemperatureGpu, &v)))
      s.temperature_c = v;
    // NVML answers PCIe throughput in KB/s (1 KB = 1024 bytes in nvml.h's wording).
    if (!off[kPcieRx] && Check(g, kPcieRx, a.get_pcie(d, kNvmlPcieRxBytes, &v)))
      s.pcie_rx_bytes_per_s = v * 1024.0;
    if (!off[kPcieTx] && Check(g, kPcieTx, a.get_pcie(d, kNvmlPcieTxBytes, &v)))
      s.pcie_tx_bytes_per_s = v * 1024.0;
    unsigned long long reasons = 0;
    if (!off[kThrottle] && Check(g, kThrottle, a.get_throttle(d, &reasons)))
      s.throttle_reasons = reasons;
    if (!off[kProcesses]) {
      // Ask with room for 64 processes; INSUFFICIENT_SIZE means more than that: ask again bigger.
      unsigned int n = 64;
      uint64_t tree_bytes = 0;
      std::map<int32_t, uint64_t> listed;  // this GPU's tree processes; kept on success only
      auto take = [&](uint32_t pid, unsigned long long used) {
        const int32_t p = static_cast<int32_t>(pid);
        if (!tree_pids.count(p)) return;
        const uint64_t bytes = used != kNvmlValueNotAvailable ? used : 0;
        tree_bytes += bytes;
        listed[p] += bytes;
      };
      nvmlReturn_t r = kNvmlSuccess;
      for (int attempt = 0; attempt < 2; ++attempt) {
        listed.clear();
        tree_bytes = 0;
        if (a.get_procs_v2) {
          std::vector<nvmlProcessInfo_v2_t> infos(n);
          r = a.get_procs_v2(d, &n, infos.data());
          if (r == kNvmlSuccess)
            for (unsigned int i = 0; i < n; ++i) take(infos[i].pid, infos[i].usedGpuMemory);
        } else {
          std::vector<nvmlProcessInfo_v1_t> infos(n);
          r = a.get_procs_v1(d, &n, infos.data());
          if (r == kNvmlSuccess)
            for (unsigned int i = 0; i < n; ++i) take(infos[i].pid, infos[i].usedGpuMemory);
        }
        if (r != kNvmlInsufficientSize) break;
        n += 16;
      }
      if (Check(g, kProcesses, r)) {
        s.tree_mem_bytes = tree_bytes;
        if (on_gpu)
          for (const auto& [pid, bytes] : listed) (*on_gpu)[pid] += bytes;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpuscope::monitor
