#include "analyze/launches.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

namespace gpuscope::analyze {

namespace {

// The numbers of the launch rows a summary needs, one column each (ns). The columns are
// reordered by the quantiles.
struct LaunchSamples {
  std::vector<int64_t> cpu, gpu, delay, latency;  // delay: raw (may be negative)
  void Reserve(size_t n) {
    cpu.reserve(n);
    gpu.reserve(n);
    delay.reserve(n);
    latency.reserve(n);
  }
  void Add(int64_t cpu_ns, int64_t gpu_ns, int64_t delay_ns, int64_t latency_ns) {
    cpu.push_back(cpu_ns);
    gpu.push_back(gpu_ns);
    delay.push_back(delay_ns);
    latency.push_back(latency_ns);
  }
  size_t size() const { return cpu.size(); }
};

// pandas-style linear interpolation between order statistics (numpy/pandas default), found with
// nth_element (O(n)) rather than a full sort: this runs on millions of launches. `from` is a
// position below which every element is known to be no greater than the rest (0, or an earlier
// quantile's lower index), so a second quantile of the same column selects in what is left.
// Reorders *v.
double Quantile(std::vector<int64_t>* v, double q, size_t from = 0) {
  if (v->empty()) return 0;
  const double pos = q * static_cast<double>(v->size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v->size() - 1);
  from = std::min(from, lo);
  std::nth_element(v->begin() + static_cast<std::ptrdiff_t>(from),
                   v->begin() + static_cast<std::ptrdiff_t>(lo), v->end());
  const double lo_value = static_cast<double>((*v)[lo]);
  double hi_value = lo_value;
  if (hi != lo)
    hi_value = static_cast<double>(
        *std::min_element(v->begin() + static_cast<std::ptrdiff_t>(hi), v->end()));
  return lo_value + (hi_value - lo_value) * (pos - static_cast<double>(lo));
}

bool IsHtaLaunchApi(std::string_view name) {
  return name == "cudaLaunchKernel" || name == "cudaLaunchKernelExC" || name == "cudaMemcpyAsync" ||
         name == "cudaMemsetAsync";
}

LaunchSummary Summarize(LaunchSamples s, const LaunchOptions& o) {
  LaunchSummary out;
  out.n = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t cpu = s.cpu[i];
    if (cpu <= o.runtime_cutoff_ns && s.gpu[i] < cpu) ++out.short_kernels;
    if (cpu > o.runtime_cutoff_ns) ++out.runtime_outliers;
    if (s.delay[i] < 0) ++out.negative_launch_delays;
    s.delay[i] = std::max<int64_t>(0, s.delay[i]);  // clipped, as HTA does
    if (s.delay[i] > o.launch_delay_cutoff_ns) ++out.launch_delay_outliers;
    out.total_cpu_duration_ns += cpu;
  }
  out.median_cpu_duration_ns = Quantile(&s.cpu, 0.5);
  out.median_gpu_duration_ns = Quantile(&s.gpu, 0.5);
  out.median_launch_delay_ns = Quantile(&s.delay, 0.5);
  // Everything from the median's position on is ≥ it: the 95th percentile is among those.
  const size_t median_lo = s.delay.empty() ? 0 : (s.delay.size() - 1) / 2;
  out.p95_launch_delay_ns = Quantile(&s.delay, 0.95, median_lo);
  const auto impossible =
      std::remove_if(s.latency.begin(), s.latency.end(), [](int64_t v) { return v < 0; });
  out.started_before_launch = static_cast<uint64_t>(s.latency.end() - impossible);
  s.latency.erase(impossible, s.latency.end());
  out.median_launch_latency_ns = Quantile(&s.latency, 0.5);
  return out;
}

}  // namespace

LaunchStats AnalyzeLaunches(const Trace& t, const LaunchOptions& o) {
  LaunchStats out;

  // The GPU activities looked at, with the times used.
  GpuSelection own;
  const GpuSelection& sel =
      SharedOrOwnSelection(t, o.hta_selection, o.selection, o.made_selection, &own);
  out.step_filtered = sel.step_filtered;
  out.rounded = sel.rounded;

  // Per runtime name: is it one of HTA's four launch APIs?
  std::vector<int8_t> hta_name(t.strings.size(), -1);
  auto is_hta = [&](StringId n) {
    if (hta_name[n] < 0) hta_name[n] = IsHtaLaunchApi(t.Str(n)) ? 1 : 0;
    return hta_name[n] == 1;
  };

  std::vector<LaunchRow> launch_rows;
  if (o.keep_rows) launch_rows.reserve(sel.rows.size());
  LaunchSamples all, hta;
  all.Reserve(sel.rows.size());
  std::vector<uint8_t> hta_row;  // per sample: the call is one of HTA's four APIs
  hta_row.reserve(sel.rows.size());
  for (size_t k = 0; k < sel.rows.size(); ++k) {
    const uint32_t r = sel.rows[k];
    if (t.gpu.kind[r] == GpuKind::kSync) continue;
    const int32_t call = t.gpu.launch[r];
    if (call < 0) {
      ++out.gpu_activities_without_launch;
      continue;
    }
    const size_t c = static_cast<size_t>(call);
    const RuntimeKind rk = t.runtime.kind[c];
    if (rk == RuntimeKind::kGraphLaunch || rk == RuntimeKind::kSync) continue;
    int64_t call_start = t.runtime.start_ns[c];
    int64_t call_end = call_start + t.runtime.dur_ns[c];
    if (out.rounded) {
      call_end = HtaRoundedEndNs(call_start, t.runtime.dur_ns[c]);
      call_start = HtaRoundedStartNs(call_start);
    }
    const int64_t cpu_ns = call_end - call_start, gpu_ns = sel.end_ns[k] - sel.start_ns[k];
    const int64_t delay_ns = sel.start_ns[k] - call_end, latency_ns = sel.start_ns[k] - call_start;
    const bool is_hta_api = is_hta(t.runtime.name[c]);
    all.Add(cpu_ns, gpu_ns, delay_ns, latency_ns);
    hta_row.push_back(is_hta_api ? 1 : 0);
    if (o.keep_rows) {
      LaunchRow row;
      row.gpu_row = r;
      row.runtime_row = call;
      row.cpu_duration_ns = cpu_ns;
      row.gpu_duration_ns = gpu_ns;
      row.launch_delay_ns = delay_ns;
      row.launch_latency_ns = latency_ns;
      row.hta_api = is_hta_api;
      launch_rows.push_back(row);
    }
  }
  // HTA's subset: usually every row (PyTorch launches through those four APIs), and then its
  // summary is the same one.
  const size_t n_hta = static_cast<size_t>(std::count(hta_row.begin(), hta_row.end(), 1));
  if (n_hta < all.size()) {
    hta.Reserve(n_hta);
    for (size_t i = 0; i < all.size(); ++i) {
      if (hta_row[i]) hta.Add(all.cpu[i], all.gpu[i], all.delay[i], all.latency[i]);
    }
  }
  hta_row = {};
  out.all = Summarize(std::move(all), o);
  out.hta = n_hta < out.all.n ? Summarize(std::move(hta), o) : out.all;
  if (o.keep_rows) out.rows = std::move(launch_rows);

  // Launch APIs and graph replays over the whole trace.
  std::vector<uint32_t> activities_per_call(t.runtime.size(), 0);
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.kind[i] == GpuKind::kSync || t.gpu.launch[i] < 0) continue;
    const size_t c = static_cast<size_t>(t.gpu.launch[i]);
    ++activities_per_call[c];
    if (t.runtime.kind[c] == RuntimeKind::kGraphLaunch) {
      GraphLaunchStats& g = out.graphs;
      ++g.gpu_activities;
      g.total_gpu_duration_ns += t.gpu.dur_ns[i];
      if (t.gpu.kind[i] == GpuKind::kKernel)
        ++g.kernels;
      else if (t.gpu.kind[i] == GpuKind::kMemcpy)
        ++g.memcpys;
      else if (t.gpu.kind[i] == GpuKind::kMemset)
        ++g.memsets;
    }
  }
  std::unordered_map<StringId, size_t> api_index;
  for (size_t c = 0; c < t.runtime.size(); ++c) {
    const RuntimeKind rk = t.runtime.kind[c];
    if (rk != RuntimeKind::kKernelLaunch && rk != RuntimeKind::kGraphLaunch) continue;
    auto [it, inserted] = api_index.emplace(t.runtime.name[c], out.apis.size());
    if (inserted) {
      LaunchApiCount a;
      a.name = t.runtime.name[c];
      a.kind = rk;
      a.is_driver = t.runtime.is_driver[c] != 0;
      out.apis.push_back(a);
    }
    LaunchApiCount& a = out.apis[it->second];
    ++a.calls;
    a.total_cpu_duration_ns += t.runtime.dur_ns[c];
    a.gpu_activities += activities_per_call[c];
    if (activities_per_call[c] > 0) ++a.calls_with_gpu_activity;
    if (rk == RuntimeKind::kGraphLaunch) {
      GraphLaunchStats& g = out.graphs;
      ++g.graph_launches;
      g.total_cpu_duration_ns += t.runtime.dur_ns[c];
      if (activities_per_call[c] > 0) ++g.graph_launches_replayed;
      g.max_activities_per_launch =
          std::max<uint64_t>(g.max_activities_per_launch, activities_per_call[c]);
    }
  }
  std::sort(out.apis.begin(), out.apis.end(),
            [&](const LaunchApiCount& a, const LaunchApiCount& b) {
              if (a.calls != b.calls) return a.calls > b.calls;
              return t.Str(a.name) < t.Str(b.name);
            });
  return out;
}

}  // namespace gpuscope::analyze
