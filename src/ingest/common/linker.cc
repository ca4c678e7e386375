#include "ingest/common/linker.h"

#include <tuple>
#include <unordered_map>

#include "base/id_table.h"

namespace gpuscope::ingest {

namespace {

struct EndpointKey {
  TraceId pid;
  TraceId tid;
  int64_t ts;
  bool operator==(const EndpointKey& o) const { return pid == o.pid && tid == o.tid && ts == o.ts; }
};
struct EndpointHash {
  size_t operator()(const EndpointKey& k) const {
    uint64_t h = static_cast<uint64_t>(k.pid) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(k.tid) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(k.ts) + 0x94D049BB133111EBull + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

}  // namespace

void LinkLaunches(Trace* trace) {
  RuntimeCallTable& rt = trace->runtime;
  GpuActivityTable& gpu = trace->gpu;
  LinkStats& stats = trace->links;
  stats = LinkStats();

  IdTable<int32_t> by_correlation(rt.correlation, -1);  // correlation → runtime row
  for (size_t i = 0; i < rt.size(); ++i) {
    if (rt.correlation[i] < 0) continue;
    if (!by_correlation.Insert(rt.correlation[i], static_cast<int32_t>(i)))
      trace->diagnostics.Add(Diag::kDuplicateCorrelation, -1);
  }

  size_t unlinked = 0;
  stats.gpu_events = gpu.size();
  for (size_t i = 0; i < gpu.size(); ++i) {
    gpu.launch[i] = -1;
    const bool is_kernel = gpu.kind[i] == GpuKind::kKernel;
    if (is_kernel) ++stats.kernels;
    if (gpu.correlation[i] >= 0) {
      ++stats.with_correlation;
      const int32_t call = by_correlation.Find(gpu.correlation[i]);
      if (call >= 0) {
        gpu.launch[i] = call;
        ++stats.linked_by_correlation;
        if (is_kernel) ++stats.kernels_with_launch_in_trace;
        continue;
      }
    }
    ++unlinked;
  }

  // Flow fallback, only for GPU activities that still have no launch.
  if (unlinked > 0 && trace->flows.size() > 0) {
    std::unordered_map<EndpointKey, uint32_t, EndpointHash> gpu_at;
    for (size_t i = 0; i < gpu.size(); ++i) {
      if (gpu.launch[i] < 0 && gpu.correlation[i] < 0) {
        gpu_at.emplace(EndpointKey{gpu.pid[i], gpu.tid[i], gpu.start_ns[i]},
                       static_cast<uint32_t>(i));
      }
    }
    if (!gpu_at.empty()) {
      std::unordered_map<EndpointKey, int32_t, EndpointHash> runtime_at;
      runtime_at.reserve(rt.size());
      for (size_t i = 0; i < rt.size(); ++i) {
        runtime_at.emplace(EndpointKey{rt.pid[i], rt.tid[i], rt.start_ns[i]},
                           static_cast<int32_t>(i));
      }
      const FlowTable& f = trace->flows;
      std::unordered_map<int64_t, int32_t> start_runtime;  // flow id → runtime index
      for (size_t i = 0; i < f.size(); ++i) {
        if (f.phase[i] != 's' || f.id[i] < 0) continue;
        auto it = runtime_at.find(EndpointKey{f.pid[i], f.tid[i], f.ts_ns[i]});
        if (it != runtime_at.end()) start_runtime.emplace(f.id[i], it->second);
      }
      for (size_t i = 0; i < f.size(); ++i) {
        if (f.phase[i] != 'f' || f.id[i] < 0) continue;
        auto g = gpu_at.find(EndpointKey{f.pid[i], f.tid[i], f.ts_ns[i]});
        if (g == gpu_at.end() || gpu.launch[g->second] >= 0) continue;
        auto s = start_runtime.find(f.id[i]);
        if (s == start_runtime.end()) continue;
        gpu.launch[g->second] = s->second;
        ++stats.linked_by_flow;
        if (gpu.kind[g->second] == GpuKind::kKernel) ++stats.kernels_with_launch_in_trace;
      }
    }
  }
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (gpu.kind[i] == GpuKind::kKernel && gpu.launch[i] >= 0) ++stats.kernels_linked;
  }
}

}  // namespace gpuscope::ingest
