// A fake libnvidia-ml.so for tests: the entry points gpuscope uses, answering scripted values.
// The script is the file named by $GPUSCOPE_FAKE_NVML_SCRIPT, one directive per line:
//   gpus N                      number of GPUs (default 1)
//   name G TEXT                 device name
//   util G SM MEM               utilisation %, SM and memory
//   memory G USED TOTAL         bytes
//   power G MW LIMIT_MW         milliwatts
//   clock G MHZ                 SM clock
//   temperature G C
//   pcie G RX_KBPS TX_KBPS
//   throttle G BITS
//   procmem G BYTES             reported for every child process of the caller (the watched
//                               command is gpuscope's child), so the tree's memory is known
//   procname NAME               instead: for every descendant of the caller named NAME
//                               (/proc/PID/comm), like a trainer under a shell or launcher
//   METRIC G not_supported      METRIC ∈ util memory power clock temperature pcie throttle
//                               procmem → NVML_ERROR_NOT_SUPPORTED (3)
//   fail G METRIC AFTER CODE    after AFTER successful calls, METRIC returns CODE (mid-run error)
//   init_fail CODE              nvmlInit returns CODE
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Metric {
  std::vector<unsigned long long> values;
  bool not_supported = false;
  long fail_after = -1;  // successful calls before failing
  int fail_code = 0;
  long calls = 0;
};

struct Gpu {
  std::string name = "Fake GPU";
  std::map<std::string, Metric> metrics;
};

std::vector<Gpu> g_gpus;
int g_init_fail = 0;
std::string g_procname;  // empty: the caller's children hold the contexts

void Load() {
  g_gpus.assign(1, Gpu());
  g_init_fail = 0;
  g_procname.clear();
  const char* path = std::getenv("GPUSCOPE_FAKE_NVML_SCRIPT");
  if (!path) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string cmd;
    if (!(words >> cmd) || cmd[0] == '#') continue;
    if (cmd == "gpus") {
      size_t n = 1;
      words >> n;
      g_gpus.resize(n);
      continue;
    }
    if (cmd == "init_fail") {
      words >> g_init_fail;
      continue;
    }
    if (cmd == "procname") {
      words >> g_procname;
      continue;
    }
    size_t gpu = 0;
    words >> gpu;
    if (gpu >= g_gpus.size()) g_gpus.resize(gpu + 1);
    if (cmd == "name") {
      std::getline(words >> std::ws, g_gpus[gpu].name);
      continue;
    }
    if (cmd == "fail") {
      std::string metric;
      Metric& m = g_gpus[gpu].metrics[(words >> metric, metric)];
      words >> m.fail_after >> m.fail_code;
      continue;
    }
    Metric& m = g_gpus[gpu].metrics[cmd];
    std::string word;
    while (words >> word) {
      if (word == "not_supported")
        m.not_supported = true;
      else
        m.values.push_back(std::strtoull(word.c_str(), nullptr, 0));
    }
  }
}

// 0 and fills `out` (values of the metric), or an NVML error code.
int Get(void* device, const char* metric, std::vector<unsigned long long>* out) {
  const size_t gpu = reinterpret_cast<size_t>(device) - 1;
  if (gpu >= g_gpus.size()) return 2;  // INVALID_ARGUMENT
  auto it = g_gpus[gpu].metrics.find(metric);
  if (it == g_gpus[gpu].metrics.end()) return 3;  // not scripted: NOT_SUPPORTED
  Metric& m = it->second;
  if (m.not_supported) return 3;
  if (m.fail_after >= 0 && m.calls >= m.fail_after) return m.fail_code;
  ++m.calls;
  *out = m.values;
  out->resize(4, 0);
  return 0;
}

std::vector<unsigned int> ChildrenOf(unsigned int parent) {
  std::vector<unsigned int> out;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%u/task", parent);
  DIR* dir = opendir(path);
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string(path) + "/" + e->d_name + "/children");
    unsigned int pid;
    while (in >> pid) out.push_back(pid);
  }
  closedir(dir);
  return out;
}

// The processes holding a "CUDA context": the caller's children, or (procname) its descendants
// of that name.
std::vector<unsigned int> ContextHolders() {
  std::vector<unsigned int> children = ChildrenOf(static_cast<unsigned int>(getpid()));
  if (g_procname.empty()) return children;
  std::vector<unsigned int> out;
  for (size_t i = 0; i < children.size(); ++i) {  // grows as it goes: breadth first
    const unsigned int pid = children[i];
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == g_procname) out.push_back(pid);
    for (unsigned int c : ChildrenOf(pid)) children.push_back(c);
  }
  return out;
}

struct Utilization {
  unsigned int gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};

}  // namespace

extern "C" {

int nvmlInit_v2() {
  Load();
  return g_init_fail;
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int code) {
  switch (code) {
    case 3:
      return "Not Supported";
    case 15:
      return "GPU is lost";
    case 999:
      return "Unknown Error";
    default:
      return "Fake Error";
  }
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = static_cast<unsigned int>(g_gpus.size());
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= g_gpus.size()) return 2;
  *device = reinterpret_cast<void*>(static_cast<size_t>(index) + 1);
  return 0;
}
int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  const size_t gpu = reinterpret_cast<size_t>(device) - 1;
  std::snprintf(name, length, "%s", g_gpus[gpu].name.c_str());
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* device, Utilization* u) {
  std::vector<unsigned long long> v;
  if (int r = Get(device, "util", &v)) return r;
  u->gpu = static_cast<unsigned int>(v[0]);
  u->memory = static_cast<unsigned int>(v[1]);
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, Memory* m) {
  std::vector<unsigned long long> v;
  if (int r = Get(device, "memory", &v)) return r;
  m->used = v[0];
  m->total = v[1];
  m->free = v[1] - v[0];
  return 0;
}
int nvmlDeviceGetPowerUsage(void* device, unsigned int* mw) {
  std::vector<unsigned long long> v;
  if (int r = Get(device, "power", &v)) return r;
  *mw = static_cast<unsigned int>(v[0]);
  return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void* device, unsigned int* mw) {
  const size_t gpu = reinterpret_cast<size_t>(device) - 1;
  auto it = g_gpus[gpu].metrics.find("power");
  if (it == g_gpus[gpu].metrics.end() || it->second.not_supported || it->second.values.size() < 2)
    return 3;
  *mw = static_cast<unsigned int>(it->second.values[1]);
  return 0;
}
int nvmlDeviceGetClockInfo(void* device, int type, unsigned int* mhz) {
  if (type != 1) return 3;  // only the SM clock is scripted
  std::vector<unsigned long long> v;
  if (int r = Get(device, "clock", &v)) return r;
  *mhz = static_cast<unsigned int>(v[0]);
  return 0;
}
int nvmlDeviceGetTemperature(void* device, int, unsigned int* c) {
  std::vector<unsigned long long> v;
  if (int r = Get(device, "temperature", &v)) return r;
  *c = static_cast<unsigned int>(v[0]);
  return 0;
}
int nvmlDeviceGetPcieThroughput(void* device, int counter, unsigned int* kbps) {
  std::vector<unsigned long long> v;
  if (int r = Get(device, "pcie", &v)) return r;
  *kbps = static_cast<unsigned int>(counter == 1 ? v[0] : v[1]);  // 1 = RX, 0 = TX
  return 0;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(void* device, unsigned long long* bits) {
  std::vector<unsigned long long> v;
  if (int r = Get(device, "throttle", &v)) return r;
  *bits = v[0];
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned int* count, ProcessInfo* infos) {
  std::vector<unsigned long long> v;
  if (int r = Get(device, "procmem", &v)) return r;
  const std::vector<unsigned int> pids = ContextHolders();
  if (pids.size() > *count) {
    *count = static_cast<unsigned int>(pids.size());
    return 7;  // INSUFFICIENT_SIZE
  }
  *count = static_cast<unsigned int>(pids.size());
  for (size_t i = 0; i < pids.size(); ++i) infos[i] = {pids[i], v[0], 0, 0};
  return 0;
}

}  // extern "C"
