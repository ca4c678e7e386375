#include "analyze/launches.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

namespace gpuscope::analyze {

namespace {

// HTA's µs rounding (as in gpu_time.cc): starts up, ends down, to whole µs.

// Linear interpolation between order statistics (numpy/pandas default). Sorts `v`.
// pandas-style linear interpolation between order statistics, found with nth_element (O(n)) rather
// than a full sort: this runs on millions of launches. Reorders *v.
double Quantile(std::vector<double>* v, double q) {
  if (v->empty()) return 0;
  const double pos = q * static_cast<double>(v->size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v->size() - 1);
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(lo), v->end());
  const double lo_value = (*v)[lo];
  double hi_value = lo_value;
  if (hi != lo)
    hi_value = *std::min_element(v->begin() + static_cast<std::ptrdiff_t>(hi), v->end());
  return lo_value + (hi_value - lo_value) * (pos - static_cast<double>(lo));
}

bool IsHtaLaunchApi(std::string_view name) {
  return name == "cudaLaunchKernel" || name == "cudaLaunchKernelExC" || name == "cudaMemcpyAsync" ||
         name == "cudaMemsetAsync";
}

LaunchSummary Summarize(const std::vector<LaunchRow>& rows, bool hta_only, const LaunchOptions& o) {
  LaunchSummary s;
  std::vector<double> cpu, gpu, delay, latency;
  for (const LaunchRow& r : rows) {
    if (hta_only && !r.hta_api) continue;
    ++s.n;
    const int64_t clipped = std::max<int64_t>(0, r.launch_delay_ns);
    if (r.cpu_duration_ns <= o.runtime_cutoff_ns && r.gpu_duration_ns < r.cpu_duration_ns)
      ++s.short_kernels;
    if (r.cpu_duration_ns > o.runtime_cutoff_ns) ++s.runtime_outliers;
    if (clipped > o.launch_delay_cutoff_ns) ++s.launch_delay_outliers;
    if (r.launch_delay_ns < 0) ++s.negative_launch_delays;
    s.total_cpu_duration_ns += r.cpu_duration_ns;
    cpu.push_back(static_cast<double>(r.cpu_duration_ns));
    gpu.push_back(static_cast<double>(r.gpu_duration_ns));
    delay.push_back(static_cast<double>(clipped));
    latency.push_back(static_cast<double>(r.launch_latency_ns));
  }
  s.median_cpu_duration_ns = Quantile(&cpu, 0.5);
  s.median_gpu_duration_ns = Quantile(&gpu, 0.5);
  s.median_launch_delay_ns = Quantile(&delay, 0.5);
  s.p95_launch_delay_ns = Quantile(&delay, 0.95);
  s.median_launch_latency_ns = Quantile(&latency, 0.5);
  return s;
}

}  // namespace

LaunchStats AnalyzeLaunches(const Trace& t, const LaunchOptions& o) {
  LaunchStats out;

  // The GPU activities looked at, with the times used.
  // The rank's shared selection when RunAll made one (read, not copied), else our own.
  GpuSelection own;
  const bool shared = o.hta_selection && o.made_selection != nullptr;
  if (!shared) own = SelectGpuEventsOrAll(t, o.hta_selection, o.selection);
  const GpuSelection& sel = shared ? *o.made_selection : own;
  out.step_filtered = sel.step_filtered;
  out.rounded = sel.rounded;
  const std::vector<uint32_t>& rows = sel.rows;
  const std::vector<int64_t>& starts = sel.start_ns;
  const std::vector<int64_t>& ends = sel.end_ns;

  // Per runtime name: is it one of HTA's four launch APIs?
  std::vector<int8_t> hta_name(t.strings.size(), -1);
  auto is_hta = [&](StringId n) {
    if (hta_name[n] < 0) hta_name[n] = IsHtaLaunchApi(t.Str(n)) ? 1 : 0;
    return hta_name[n] == 1;
  };

  std::vector<LaunchRow> launch_rows;
  launch_rows.reserve(rows.size());
  for (size_t k = 0; k < rows.size(); ++k) {
    const uint32_t r = rows[k];
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
    LaunchRow row;
    row.gpu_row = r;
    row.runtime_row = call;
    row.cpu_duration_ns = call_end - call_start;
    row.gpu_duration_ns = ends[k] - starts[k];
    row.launch_delay_ns = starts[k] - call_end;
    row.launch_latency_ns = starts[k] - call_start;
    row.hta_api = is_hta(t.runtime.name[c]);
    launch_rows.push_back(row);
  }
  out.all = Summarize(launch_rows, false, o);
  out.hta = Summarize(launch_rows, true, o);
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
