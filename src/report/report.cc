#include "report/report.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <thread>

#include "gpuscope/version.h"
#include "render/json_writer.h"

namespace gpuscope::report {

using render::JsonWriter;

std::string GroupDigits(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string HumanBytes(uint64_t n) {
  char buf[32];
  if (n >= 1000000000ull)
    std::snprintf(buf, sizeof buf, "%.2f GB", n / 1e9);
  else if (n >= 1000000ull)
    std::snprintf(buf, sizeof buf, "%.1f MB", n / 1e6);
  else if (n >= 1000ull)
    std::snprintf(buf, sizeof buf, "%.1f KB", n / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", n);
  return buf;
}

std::string HumanDuration(int64_t ns) {
  char buf[32];
  const double a = static_cast<double>(ns < 0 ? -ns : ns);
  if (a >= 1e9)
    std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  else if (a >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  else if (a >= 1e3)
    std::snprintf(buf, sizeof buf, "%.3f µs", ns / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%" PRId64 " ns", ns);
  return buf;
}

namespace {

// The terminal report fits this many columns (the issue's "readable at 100 columns").
constexpr size_t kTextWidth = 100;

const char* RankSourceName(RankSource s) {
  switch (s) {
    case RankSource::kDistributedInfo:
      return "distributedInfo";
    case RankSource::kFileName:
      return "file name";
    case RankSource::kNone:
      break;
  }
  return "none";
}

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "n/a";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f %%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

std::string StepRange(const std::vector<int32_t>& steps) {
  if (steps.empty()) return "none found";
  std::string s = std::to_string(steps.size()) + " ProfilerStep" + (steps.size() == 1 ? "" : "s") +
                  ": #" + std::to_string(steps.front());
  if (steps.size() > 1) {
    const bool contiguous = steps.back() - steps.front() + 1 == static_cast<int32_t>(steps.size());
    s += (contiguous ? "–#" : " … #") + std::to_string(steps.back());
  }
  return s;
}

double Share(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string RenderGpuTimeText(const analyze::GpuTime& g, const TextStyle& style) {
  (void)style;
  std::string out;
  char line[512];
  const analyze::ExclusiveBreakdown& ex = g.exclusive;
  if (ex.span_ns <= 0) return out;
  const char* selection =
      g.selection.step_filtered ? "HTA selection: last step left out" : "all GPU events";
  std::snprintf(line, sizeof line, "  %-11s %s analysed (%s%s)\n", "GPU time",
                HumanDuration(ex.span_ns).c_str(), selection,
                g.selection.rounded ? ", µs-rounded" : "");
  out += line;
  std::snprintf(line, sizeof line,
                "  %-11s compute %.1f %% · exposed comm %.1f %% · exposed copies %.1f %% · other "
                "%.1f %% · idle %.1f %%\n",
                "", Share(ex.compute_ns, ex.span_ns),
                Share(ex.exposed_communication_ns, ex.span_ns),
                Share(ex.exposed_memory_ns, ex.span_ns), Share(ex.other_ns, ex.span_ns),
                Share(ex.idle_ns, ex.span_ns));
  out += line;
  const analyze::TemporalBreakdown& tb = g.temporal;
  std::snprintf(
      line, sizeof line,
      "  %-11s idle %.2f %% · compute %.2f %% · non-compute %.2f %% (HTA temporal breakdown)\n", "",
      Share(tb.idle_ns, tb.span_ns), Share(tb.compute_ns, tb.span_ns),
      Share(tb.non_compute_ns, tb.span_ns));
  out += line;
  if (g.comm_compute_overlap_ratio >= 0) {
    std::snprintf(line, sizeof line, "  %-11s %.1f %% of communication time runs under compute\n",
                  "overlap", 100.0 * g.comm_compute_overlap_ratio);
    out += line;
  }
  bool first = true;
  for (const analyze::StreamIdle& s : g.idle_by_stream) {
    const int64_t total = s.host_wait_ns + s.kernel_wait_ns + s.other_ns;
    if (s.gaps == 0) continue;
    std::snprintf(
        line, sizeof line,
        "  %-11s stream %lld: %s idle · host wait %.0f %% · kernel wait %.0f %% · other %.0f %%\n",
        first ? "idle cause" : "", static_cast<long long>(s.stream), HumanDuration(total).c_str(),
        Share(s.host_wait_ns, total), Share(s.kernel_wait_ns, total), Share(s.other_ns, total));
    out += line;
    first = false;
  }
  return out;
}

void WriteGpuTimeJson(const analyze::GpuTime& g, JsonWriter* w) {
  w->Key("selection").BeginObject();
  w->Key("gpu_events").Uint(g.selection.rows.size());
  w->Key("last_step_dropped").Bool(g.selection.step_filtered);
  w->Key("rounded_to_us").Bool(g.selection.rounded);
  w->EndObject();
  const analyze::TemporalBreakdown& tb = g.temporal;
  w->Key("temporal_breakdown").BeginObject();
  w->Key("span_ns").Int(tb.span_ns);
  w->Key("idle_ns").Int(tb.idle_ns);
  w->Key("compute_ns").Int(tb.compute_ns);
  w->Key("non_compute_ns").Int(tb.non_compute_ns);
  w->EndObject();
  const analyze::ExclusiveBreakdown& ex = g.exclusive;
  w->Key("exclusive_breakdown").BeginObject();
  w->Key("span_ns").Int(ex.span_ns);
  w->Key("compute_ns").Int(ex.compute_ns);
  w->Key("exposed_communication_ns").Int(ex.exposed_communication_ns);
  w->Key("exposed_memory_ns").Int(ex.exposed_memory_ns);
  w->Key("other_ns").Int(ex.other_ns);
  w->Key("idle_ns").Int(ex.idle_ns);
  w->EndObject();
  w->Key("idle_attribution").BeginArray();
  for (const analyze::StreamIdle& s : g.idle_by_stream) {
    w->BeginObject();
    w->Key("stream").Int(s.stream);
    w->Key("host_wait_ns").Int(s.host_wait_ns);
    w->Key("kernel_wait_ns").Int(s.kernel_wait_ns);
    w->Key("other_ns").Int(s.other_ns);
    w->Key("gaps").Uint(s.gaps);
    w->EndObject();
  }
  w->EndArray();
  w->Key("comm_compute_overlap_ratio");
  if (g.comm_compute_overlap_ratio >= 0) {
    w->Double(g.comm_compute_overlap_ratio, 4);
  } else {
    w->Null();
  }
}

std::string RenderStepsText(const analyze::StepsResult& s) {
  std::string out;
  char line[512];
  if (s.steps.empty()) return out;
  const size_t n = s.steady_count;
  const char* which =
      s.whole_span_fallback ? "the whole trace (no ProfilerStep)" : "steady-state steps";
  std::snprintf(line, sizeof line, "  %-11s %s mean over %zu %s\n", "step time",
                HumanDuration(s.mean_steady_step_ns).c_str(), n, which);
  out += line;
  // Two lines of four so the section fits in 100 columns.
  static constexpr const char* kLabels[] = {"kernel",  "memcpy",     "memset",   "communication",
                                            "runtime", "DataLoader", "CPU exec", "other"};
  for (size_t row = 0; row < 2; ++row) {
    std::string parts;
    for (size_t c = row * 4; c < row * 4 + 4; ++c) {
      char part[64];
      std::snprintf(part, sizeof part, "%s%s %.1f %%", parts.empty() ? "" : " · ", kLabels[c],
                    Share(s.mean_steady_ns[c], s.mean_steady_step_ns));
      parts += part;
    }
    out += "              " + parts + "\n";
  }
  return out;
}

void WriteStepCategories(const analyze::StepCategoryArray& a, JsonWriter* w) {
  w->BeginObject();
  for (size_t c = 0; c < analyze::kStepCategoryCount; ++c) {
    w->Key(analyze::StepCategoryName(static_cast<analyze::StepCategory>(c))).Int(a[c]);
  }
  w->EndObject();
}

void WriteStepsJson(const analyze::StepsResult& s, JsonWriter* w) {
  w->Key("steps").BeginArray();
  for (const analyze::StepBreakdown& b : s.steps) {
    w->BeginObject();
    w->Key("name").String(b.name);
    w->Key("step").Int(b.step);
    w->Key("start_ns").Int(b.start_ns);
    w->Key("duration_ns").Int(b.duration_ns);
    w->Key("steady_state").Bool(b.steady_state);
    w->Key("incomplete").Bool(b.incomplete);
    w->Key("breakdown_ns");
    WriteStepCategories(b.category_ns, w);
    w->EndObject();
  }
  w->EndArray();
  w->Key("step_summary").BeginObject();
  w->Key("whole_span_fallback").Bool(s.whole_span_fallback);
  w->Key("steady_steps").Uint(s.steady_count);
  w->Key("mean_step_ns").Int(s.mean_steady_step_ns);
  w->Key("mean_breakdown_ns");
  WriteStepCategories(s.mean_steady_ns, w);
  w->Key("complete_steps").Uint(s.complete_count);
  w->Key("tb_plugin_mean_step_ns").Int(s.mean_complete_step_ns);
  w->Key("tb_plugin_mean_breakdown_ns");
  WriteStepCategories(s.mean_complete_ns, w);
  w->EndObject();
}

std::string RenderRanksText(const Report& report) {
  const analyze::RanksResult& r = report.across_ranks;
  if (r.ranks.size() < 2) return "";
  std::string out = "\nacross ranks: median step " + HumanDuration(r.median_step_ns);
  std::string stragglers;
  for (const analyze::RankRow& row : r.ranks) {
    if (!row.straggler) continue;
    char s[64];
    std::snprintf(s, sizeof s, "%srank %d (+%.0f %%)", stragglers.empty() ? "" : ", ", row.rank,
                  100 * row.slowdown);
    stragglers += s;
  }
  out += stragglers.empty() ? "; no straggler (threshold +10 %)\n"
                            : "; straggler: " + stragglers + "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %6s %12s %9s %10s %15s %8s %s\n", "rank", "step", "vs median",
                "compute %", "exposed comm %", "idle %", "last at collectives");
  out += line;
  for (const analyze::RankRow& row : r.ranks) {
    std::snprintf(line, sizeof line, "  %6d %12s %+8.1f%% %10.1f %15.1f %8.1f %llu of %llu\n",
                  row.rank, HumanDuration(row.step_ns).c_str(), 100 * row.slowdown,
                  Share(row.compute_ns, row.span_ns),
                  Share(row.exposed_communication_ns, row.span_ns), Share(row.idle_ns, row.span_ns),
                  static_cast<unsigned long long>(row.last_arrivals),
                  static_cast<unsigned long long>(r.collectives_compared));
    out += line;
  }
  out += r.clocks_from_base_time
             ? "  (arrival order on unix time from baseTimeNanoseconds; host clock skew not "
               "corrected)\n"
             : "  (arrival order assumes all ranks' timestamps share one clock)\n";
  return out;
}

void WriteRanksJson(const analyze::RanksResult& r, JsonWriter* w) {
  w->Key("across_ranks").BeginObject();
  w->Key("median_step_ns").Int(r.median_step_ns);
  w->Key("straggler_threshold").Double(analyze::kStragglerThreshold, 2);
  w->Key("collectives_compared").Uint(r.collectives_compared);
  w->Key("clock").String(r.clocks_from_base_time ? "unix_from_base_time" : "trace_clock");
  w->Key("ranks").BeginArray();
  for (const analyze::RankRow& row : r.ranks) {
    w->BeginObject();
    w->Key("rank").Int(row.rank);
    w->Key("step_ns").Int(row.step_ns);
    w->Key("slowdown").Double(row.slowdown, 4);
    w->Key("straggler").Bool(row.straggler);
    w->Key("compute_ns").Int(row.compute_ns);
    w->Key("exposed_communication_ns").Int(row.exposed_communication_ns);
    w->Key("idle_ns").Int(row.idle_ns);
    w->Key("span_ns").Int(row.span_ns);
    w->Key("collectives").Uint(row.collectives);
    w->Key("last_arrivals").Uint(row.last_arrivals);
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

std::string RenderKernelsText(const analyze::KernelsResult& k, const TextStyle& style) {
  std::string out;
  char line[512];
  if (k.math_ns > 0) {
    std::string mix;
    for (size_t p = 1; p < analyze::kMathPrecisionCount; ++p) {
      if (k.math_ns_by_precision[p] == 0) continue;
      char part[64];
      std::snprintf(part, sizeof part, "%s%s %.0f %%", mix.empty() ? "" : " · ",
                    analyze::MathPrecisionName(static_cast<analyze::MathPrecision>(p)),
                    Share(k.math_ns_by_precision[p], k.math_ns));
      mix += part;
    }
    std::snprintf(line, sizeof line,
                  "  %-11s %s of GEMM/conv/attention time: %.0f %% on tensor cores (%s)\n",
                  "precision", HumanDuration(k.math_ns).c_str(), Share(k.tensor_core_ns, k.math_ns),
                  mix.c_str());
    out += line;
  }
  const size_t shown = style.verbose ? analyze::kTopKernelsPerClass : 3;
  bool first_line = true;
  for (const analyze::ClassKernels& c : k.classes) {
    if (c.count == 0 || (c.cls != analyze::KernelClass::kCompute &&
                         c.cls != analyze::KernelClass::kCommunication && !style.verbose)) {
      continue;
    }
    bool first = true;
    for (size_t i = 0; i < c.top.size() && i < shown; ++i) {
      const analyze::KernelRow& r = c.top[i];
      std::string name = r.name.size() > 46 ? r.name.substr(0, 45) + "…" : r.name;
      std::snprintf(
          line, sizeof line, "  %-11s %-13s %4.0f %%  %-47s %s × %s\n",
          first_line ? "top kernels" : "", first ? analyze::KernelClassName(c.cls) : "",
          100 * r.share, name.c_str(), GroupDigits(r.count).c_str(),
          HumanDuration(r.total_ns / static_cast<int64_t>(std::max<uint64_t>(1, r.count))).c_str());
      out += line;
      first = false;
      first_line = false;
    }
  }
  return out;
}

void WriteKernelsJson(const analyze::KernelsResult& k, JsonWriter* w) {
  w->Key("kernels").BeginObject();
  w->Key("classes").BeginArray();
  for (const analyze::ClassKernels& c : k.classes) {
    w->BeginObject();
    w->Key("class").String(analyze::KernelClassName(c.cls));
    w->Key("count").Uint(c.count);
    w->Key("total_ns").Int(c.total_ns);
    w->Key("distinct_names").Uint(c.distinct_names);
    w->Key("top").BeginArray();
    for (const analyze::KernelRow& r : c.top) {
      w->BeginObject();
      w->Key("name").String(r.name);
      w->Key("count").Uint(r.count);
      w->Key("total_ns").Int(r.total_ns);
      w->Key("mean_ns").Int(r.total_ns / static_cast<int64_t>(std::max<uint64_t>(1, r.count)));
      w->Key("min_ns").Int(r.min_ns);
      w->Key("max_ns").Int(r.max_ns);
      w->Key("share").Double(r.share, 4);
      w->Key("precision").String(analyze::MathPrecisionName(r.precision));
      w->EndObject();
    }
    w->EndArray();
    w->EndObject();
  }
  w->EndArray();
  w->Key("math_ns").Int(k.math_ns);
  w->Key("tensor_core_ns").Int(k.tensor_core_ns);
  w->Key("dominant_precision").String(analyze::MathPrecisionName(k.dominant_precision));
  w->Key("math_ns_by_precision").BeginObject();
  for (size_t p = 0; p < analyze::kMathPrecisionCount; ++p) {
    if (k.math_ns_by_precision[p] == 0) continue;
    w->Key(analyze::MathPrecisionName(static_cast<analyze::MathPrecision>(p)))
        .Int(k.math_ns_by_precision[p]);
  }
  w->EndObject();
  w->EndObject();
}

std::string RenderOpsText(const RankReport& rr, const Trace* trace) {
  std::string out;
  char line[512];
  const analyze::LaunchSummary& l = rr.launches.all;
  if (l.n > 0) {
    std::snprintf(line, sizeof line,
                  "  %-11s %s launched · launch end → GPU start: median %s, p95 %s\n", "launches",
                  GroupDigits(l.n).c_str(),
                  HumanDuration(static_cast<int64_t>(l.median_launch_delay_ns)).c_str(),
                  HumanDuration(static_cast<int64_t>(l.p95_launch_delay_ns)).c_str());
    out += line;
    std::snprintf(line, sizeof line,
                  "  %-11s %s kernels shorter than their launch call · %s launch calls > 50 µs\n",
                  "", GroupDigits(l.short_kernels).c_str(),
                  GroupDigits(l.runtime_outliers).c_str());
    out += line;
  }
  const analyze::GraphLaunchStats& g = rr.launches.graphs;
  if (g.graph_launches > 0) {
    std::snprintf(line, sizeof line, "  %-11s %s CUDA-graph launches replay %s GPU activities\n",
                  "", GroupDigits(g.graph_launches).c_str(), GroupDigits(g.gpu_activities).c_str());
    out += line;
  }
  bool first = true;
  for (const analyze::DirectionTotals& d : rr.copies.directions) {
    if (d.count == 0) continue;
    std::snprintf(
        line, sizeof line, "  %-11s %s %s × %s (%s pageable) · %s · %.1f GB/s achieved\n",
        first ? "copies" : "", analyze::CopyDirectionName(d.direction),
        GroupDigits(d.count).c_str(),
        HumanBytes(static_cast<uint64_t>(d.count ? d.bytes / static_cast<int64_t>(d.count) : 0))
            .c_str(),
        GroupDigits(d.pageable).c_str(), HumanDuration(d.time_ns).c_str(), d.achieved_gbps);
    out += line;
    first = false;
  }
  if (rr.copies.sync_memcpys + rr.copies.effectively_sync_memcpys > 0) {
    std::snprintf(line, sizeof line,
                  "  %-11s %s synchronous copies, %s asynchronous calls made synchronous by "
                  "pageable memory\n",
                  "", GroupDigits(rr.copies.sync_memcpys).c_str(),
                  GroupDigits(rr.copies.effectively_sync_memcpys).c_str());
    out += line;
  }
  const analyze::SyncStats& sy = rr.sync;
  if (!sy.points.empty()) {
    std::string cause;
    if (!sy.causes.empty() && trace) {
      cause = "; top cause " + std::string(trace->Str(sy.causes.front().name)) + " (" +
              GroupDigits(sy.causes.front().sync_points) + ", " +
              HumanDuration(sy.causes.front().blocked_ns) + ")";
    }
    std::snprintf(line, sizeof line, "  %-11s %s host-blocking sync points, %s blocked%s\n", "sync",
                  GroupDigits(sy.points.size()).c_str(), HumanDuration(sy.blocked_ns).c_str(),
                  cause.c_str());
    out += line;
    if (sy.gpu_idle_after_sync_ns > 0) {
      std::snprintf(line, sizeof line, "  %-11s GPU idle while the host resumes after them: %s\n",
                    "", HumanDuration(sy.gpu_idle_after_sync_ns).c_str());
      out += line;
    }
  }
  if (const analyze::DeviceMemory* d = analyze::RankDevice(rr.memory)) {
    std::string reserved =
        d->peak_reserved_bytes >= 0
            ? ", reserved " + HumanBytes(static_cast<uint64_t>(d->peak_reserved_bytes))
            : "";
    std::string total =
        d->total_bytes > 0 ? " of " + HumanBytes(static_cast<uint64_t>(d->total_bytes)) : "";
    std::string headroom =
        d->headroom_bytes >= 0
            ? " (headroom " + HumanBytes(static_cast<uint64_t>(d->headroom_bytes)) + ")"
            : "";
    std::snprintf(
        line, sizeof line, "  %-11s device %d: peak allocated %s%s%s%s%s\n", "memory", d->device,
        HumanBytes(static_cast<uint64_t>(std::max<int64_t>(0, d->peak_allocated_bytes))).c_str(),
        reserved.c_str(), total.c_str(), headroom.c_str(),
        d->source == analyze::MemoryLevelSource::kDeltas ? " (rebuilt from allocation deltas)"
                                                         : "");
    out += line;
  }
  return out;
}

void WriteLaunchSummary(const analyze::LaunchSummary& l, JsonWriter* w) {
  w->BeginObject();
  w->Key("n").Uint(l.n);
  w->Key("short_kernels").Uint(l.short_kernels);
  w->Key("runtime_outliers").Uint(l.runtime_outliers);
  w->Key("launch_delay_outliers").Uint(l.launch_delay_outliers);
  w->Key("negative_launch_delays").Uint(l.negative_launch_delays);
  w->Key("median_cpu_duration_ns").Double(l.median_cpu_duration_ns, 1);
  w->Key("median_gpu_duration_ns").Double(l.median_gpu_duration_ns, 1);
  w->Key("median_launch_delay_ns").Double(l.median_launch_delay_ns, 1);
  w->Key("p95_launch_delay_ns").Double(l.p95_launch_delay_ns, 1);
  w->Key("median_launch_latency_ns").Double(l.median_launch_latency_ns, 1);
  w->EndObject();
}

void WriteOpsJson(const RankReport& rr, const Trace& t, JsonWriter* w) {
  const analyze::LaunchStats& ls = rr.launches;
  w->Key("launches").BeginObject();
  w->Key("all");
  WriteLaunchSummary(ls.all, w);
  w->Key("hta_apis");
  WriteLaunchSummary(ls.hta, w);
  w->Key("apis").BeginArray();
  for (const analyze::LaunchApiCount& a : ls.apis) {
    w->BeginObject();
    w->Key("name").String(t.Str(a.name));
    w->Key("calls").Uint(a.calls);
    w->Key("gpu_activities").Uint(a.gpu_activities);
    w->Key("total_cpu_duration_ns").Int(a.total_cpu_duration_ns);
    w->EndObject();
  }
  w->EndArray();
  w->Key("graphs").BeginObject();
  w->Key("graph_launches").Uint(ls.graphs.graph_launches);
  w->Key("gpu_activities").Uint(ls.graphs.gpu_activities);
  w->Key("max_activities_per_launch").Uint(ls.graphs.max_activities_per_launch);
  w->EndObject();
  w->Key("gpu_activities_without_launch").Uint(ls.gpu_activities_without_launch);
  w->EndObject();

  const analyze::CopyStats& cs = rr.copies;
  w->Key("copies").BeginObject();
  w->Key("memcpys").Uint(cs.memcpys);
  w->Key("memcpy_bytes").Int(cs.memcpy_bytes);
  w->Key("memcpy_time_ns").Int(cs.memcpy_time_ns);
  w->Key("pageable_memcpys").Uint(cs.pageable_memcpys);
  w->Key("sync_memcpys").Uint(cs.sync_memcpys);
  w->Key("effectively_sync_memcpys").Uint(cs.effectively_sync_memcpys);
  w->Key("sync_memsets").Uint(cs.sync_memsets);
  w->Key("tiny_memcpys").Uint(cs.tiny_memcpys);
  w->Key("tiny_memcpy_time_ns").Int(cs.tiny_memcpy_time_ns);
  w->Key("groups").BeginArray();
  for (const analyze::CopyGroup& g : cs.groups) {
    w->BeginObject();
    w->Key("kind").String(g.kind == GpuKind::kMemset ? "memset" : "memcpy");
    w->Key("direction").String(analyze::CopyDirectionName(g.direction));
    w->Key("src").String(analyze::MemoryKindName(g.src_kind));
    w->Key("dst").String(analyze::MemoryKindName(g.dst_kind));
    w->Key("count").Uint(g.count);
    w->Key("bytes").Int(g.bytes);
    w->Key("time_ns").Int(g.time_ns);
    w->Key("achieved_gbps").Double(g.achieved_gbps, 3);
    w->Key("sync").Uint(g.sync);
    w->Key("async").Uint(g.async);
    w->Key("effectively_sync").Uint(g.effectively_sync);
    w->Key("size_histogram").BeginArray();
    for (uint64_t c : g.size_histogram) w->Uint(c);
    w->EndArray();
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();

  const analyze::SyncStats& sy = rr.sync;
  w->Key("sync").BeginObject();
  w->Key("sync_points").Uint(sy.points.size());
  w->Key("blocking_calls").Uint(sy.blocking_calls);
  w->Key("blocked_ns").Int(sy.blocked_ns);
  w->Key("gpu_idle_after_sync_ns").Int(sy.gpu_idle_after_sync_ns);
  w->Key("gpu_sync_events").Uint(sy.gpu_sync_events);
  w->Key("apis").BeginArray();
  for (const analyze::SyncApiStats& a : sy.apis) {
    w->BeginObject();
    w->Key("name").String(t.Str(a.name));
    w->Key("category").String(analyze::SyncCategoryName(a.category));
    w->Key("calls").Uint(a.calls);
    w->Key("total_ns").Int(a.total_ns);
    w->EndObject();
  }
  w->EndArray();
  w->Key("per_step").BeginArray();
  for (const analyze::StepSyncStats& s : sy.steps) {
    w->BeginObject();
    w->Key("step").Int(s.step);
    w->Key("sync_points").Uint(s.sync_points);
    w->Key("blocked_ns").Int(s.blocked_ns);
    w->Key("gpu_idle_after_sync_ns").Int(s.gpu_idle_after_sync_ns);
    w->EndObject();
  }
  w->EndArray();
  w->Key("causes").BeginArray();
  for (const analyze::SyncCause& c : sy.causes) {
    w->BeginObject();
    w->Key("op").String(t.Str(c.name));
    w->Key("sync_points").Uint(c.sync_points);
    w->Key("blocked_ns").Int(c.blocked_ns);
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();

  const analyze::DeviceMemory* main = analyze::RankDevice(rr.memory);
  w->Key("memory").BeginObject();
  w->Key("peak_allocated_bytes");
  if (main)
    w->Int(main->peak_allocated_bytes);
  else
    w->Null();
  w->Key("peak_reserved_bytes");
  if (main && main->peak_reserved_bytes >= 0)
    w->Int(main->peak_reserved_bytes);
  else
    w->Null();
  w->Key("device_total_bytes");
  if (main && main->total_bytes > 0)
    w->Int(main->total_bytes);
  else
    w->Null();
  w->Key("devices").BeginArray();
  for (const analyze::DeviceMemory& d : rr.memory.devices) {
    w->BeginObject();
    w->Key("device").Int(d.device);
    w->Key("events").Uint(d.events);
    w->Key("source").String(d.source == analyze::MemoryLevelSource::kTotals ? "totals" : "deltas");
    w->Key("peak_allocated_bytes").Int(d.peak_allocated_bytes);
    w->Key("peak_reserved_bytes");
    if (d.peak_reserved_bytes >= 0)
      w->Int(d.peak_reserved_bytes);
    else
      w->Null();
    w->Key("total_bytes");
    if (d.total_bytes > 0)
      w->Int(d.total_bytes);
    else
      w->Null();
    w->Key("headroom_bytes");
    if (d.headroom_bytes >= 0)
      w->Int(d.headroom_bytes);
    else
      w->Null();
    w->Key("timeline").BeginArray();
    for (const analyze::MemoryPoint& p : d.timeline) {
      w->BeginArray();
      w->Int(p.ts_ns);
      w->Int(p.allocated_bytes);
      w->Int(p.reserved_bytes);
      w->EndArray();
    }
    w->EndArray();
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

std::string ShortName(std::string name, size_t max) {
  return name.size() > max ? name.substr(0, max - 1) + "…" : name;
}

std::string RenderOccupancyText(const analyze::OccupancyStats& o, const TextStyle& style) {
  std::string out;
  char line[512];
  if (!o.available && !o.occupancy_available) return out;
  std::string sm = o.sm_efficiency >= 0 ? "est. SM efficiency " : "";
  if (o.sm_efficiency >= 0) {
    std::snprintf(line, sizeof line, "%.3f", o.sm_efficiency);
    sm += line;
  }
  std::string occ;
  if (o.achieved_occupancy_pct >= 0) {
    std::snprintf(line, sizeof line, "%sachieved occupancy %.1f %%", sm.empty() ? "" : " · ",
                  o.achieved_occupancy_pct);
    occ = line;
  }
  std::snprintf(line, sizeof line, "  %-11s %s%s\n", "occupancy", sm.c_str(), occ.c_str());
  out += line;
  if (o.available && o.compute_kernel_ns > 0) {
    std::snprintf(line, sizeof line,
                  "  %-11s tiny grids (fewer blocks than SMs): %.1f %% of compute-kernel time, %s "
                  "launches\n",
                  "", 100 * o.tiny_grid_share, GroupDigits(o.tiny_grid_kernels).c_str());
    out += line;
  }
  const size_t shown = style.verbose ? o.tiny.size() : 0;
  for (size_t i = 0; i < shown; ++i) {
    const analyze::TinyGridKernel& k = o.tiny[i];
    std::snprintf(
        line, sizeof line, "  %-11s %-47s %s × %s · %.2f blocks/SM · occ %s\n", "",
        ShortName(k.name, 46).c_str(), GroupDigits(k.count).c_str(),
        HumanDuration(k.total_ns / static_cast<int64_t>(std::max<uint64_t>(1, k.count))).c_str(),
        k.mean_blocks_per_sm,
        k.mean_occupancy_pct >= 0
            ? (std::to_string(static_cast<int>(k.mean_occupancy_pct + 0.5)) + " %").c_str()
            : "n/a");
    out += line;
  }
  return out;
}

void WriteOccupancyJson(const analyze::OccupancyStats& o, JsonWriter* w) {
  w->Key("occupancy").BeginObject();
  w->Key("available").Bool(o.available);
  w->Key("occupancy_available").Bool(o.occupancy_available);
  w->Key("device").Int(o.device);
  w->Key("range_start_ns").Int(o.range_start_ns);
  w->Key("range_end_ns").Int(o.range_end_ns);
  w->Key("sm_efficiency");
  if (o.sm_efficiency >= 0)
    w->Double(o.sm_efficiency, 6);
  else
    w->Null();
  w->Key("achieved_occupancy_pct");
  if (o.achieved_occupancy_pct >= 0)
    w->Double(o.achieved_occupancy_pct, 4);
  else
    w->Null();
  w->Key("compute_kernel_ns").Int(o.compute_kernel_ns);
  w->Key("tiny_grid_ns").Int(o.tiny_grid_ns);
  w->Key("tiny_grid_kernels").Uint(o.tiny_grid_kernels);
  w->Key("tiny_grid_lost_sm_ns").Int(o.tiny_grid_lost_sm_ns);
  w->Key("tiny_grid_share").Double(o.tiny_grid_share, 4);
  w->Key("tiny_distinct_names").Uint(o.tiny_distinct_names);
  w->Key("tiny").BeginArray();
  for (const analyze::TinyGridKernel& k : o.tiny) {
    w->BeginObject();
    w->Key("name").String(k.name);
    w->Key("count").Uint(k.count);
    w->Key("total_ns").Int(k.total_ns);
    w->Key("mean_blocks_per_sm").Double(k.mean_blocks_per_sm, 4);
    w->Key("mean_occupancy_pct");
    if (k.mean_occupancy_pct >= 0)
      w->Double(k.mean_occupancy_pct, 2);
    else
      w->Null();
    w->Key("lost_sm_ns").Int(k.lost_sm_ns);
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

std::string HostOpsText(const analyze::IdleGap& gap, const Trace* t) {
  if (!t || gap.host_ops.empty()) return "no recorded op (Python between ops)";
  std::string s;
  for (const auto& [name, ns] : gap.host_ops) {
    s += (s.empty() ? "" : ", ") + ShortName(std::string(t->Str(name)), 48) + " " +
         HumanDuration(ns);
  }
  return s;
}

std::string RenderIdleGapsText(const analyze::IdleGapStats& g, const Trace* t,
                               const TextStyle& style) {
  std::string out;
  char line[512];
  if (g.gaps == 0) return out;
  std::snprintf(line, sizeof line, "  %-11s %s gaps, %s idle in the steps; %s ≥ 1 ms (%s)\n",
                "idle gaps", GroupDigits(g.gaps).c_str(), HumanDuration(g.idle_ns).c_str(),
                GroupDigits(g.long_gaps).c_str(), HumanDuration(g.long_gap_ns).c_str());
  out += line;
  if (g.long_gaps > 0) {
    std::snprintf(line, sizeof line,
                  "  %-11s of these %s after a sync · DataLoader covers %s · unexplained %s per "
                  "steady step\n",
                  "", GroupDigits(g.long_gaps_after_sync).c_str(),
                  HumanDuration(g.long_gap_dataloader_ns).c_str(),
                  HumanDuration(g.unexplained_ns_per_steady_step).c_str());
    out += line;
  }
  if (g.nsight_gaps > 0) {
    std::snprintf(line, sizeof line, "  %-11s %s gaps > 500 ms (Nsight gpu_gaps), longest %s\n", "",
                  GroupDigits(g.nsight_gaps).c_str(),
                  HumanDuration(g.nsight_longest_gap_ns).c_str());
    out += line;
  }
  if (!style.verbose) return out;
  static constexpr const char* kBuckets[analyze::kIdleGapBuckets] = {
      "<10µs", "<100µs", "<1ms", "<10ms", "<100ms", "<1s", "≥1s"};
  std::string hist;
  for (size_t b = 0; b < analyze::kIdleGapBuckets; ++b) {
    if (g.histogram_count[b] == 0) continue;
    hist += (hist.empty() ? "" : " · ") + std::string(kBuckets[b]) + " " +
            GroupDigits(g.histogram_count[b]) + " (" + HumanDuration(g.histogram_ns[b]) + ")";
  }
  out += "              " + hist + "\n";
  for (const analyze::IdleGap& gap : g.longest) {
    std::snprintf(line, sizeof line, "  %-11s %s in step %d (%s): %s\n", "",
                  HumanDuration(gap.length()).c_str(), gap.step, analyze::IdleClaimName(gap.claim),
                  HostOpsText(gap, t).c_str());
    out += line;
  }
  return out;
}

void WriteIdleGapsJson(const analyze::IdleGapStats& g, const Trace* t, JsonWriter* w) {
  w->Key("idle_gaps").BeginObject();
  w->Key("range_start_ns").Int(g.range_start_ns);
  w->Key("range_end_ns").Int(g.range_end_ns);
  w->Key("gaps").Uint(g.gaps);
  w->Key("idle_ns").Int(g.idle_ns);
  w->Key("histogram").BeginArray();
  for (size_t b = 0; b < analyze::kIdleGapBuckets; ++b) {
    w->BeginObject();
    w->Key("below_ns");
    if (b < analyze::kIdleGapBucketBoundsNs.size())
      w->Int(analyze::kIdleGapBucketBoundsNs[b]);
    else
      w->Null();
    w->Key("count").Uint(g.histogram_count[b]);
    w->Key("total_ns").Int(g.histogram_ns[b]);
    w->EndObject();
  }
  w->EndArray();
  w->Key("long_gap_threshold_ns").Int(analyze::kLongIdleGapNs);
  w->Key("long_gaps").Uint(g.long_gaps);
  w->Key("long_gap_ns").Int(g.long_gap_ns);
  w->Key("long_gaps_after_sync").Uint(g.long_gaps_after_sync);
  w->Key("long_gap_after_sync_ns").Int(g.long_gap_after_sync_ns);
  w->Key("long_gaps_dataloader").Uint(g.long_gaps_dataloader);
  w->Key("long_gap_dataloader_ns").Int(g.long_gap_dataloader_ns);
  w->Key("unexplained_ns").Int(g.unexplained_ns);
  w->Key("steady_steps").Uint(g.steady_steps);
  w->Key("unexplained_ns_per_steady_step").Int(g.unexplained_ns_per_steady_step);
  w->Key("longest_unexplained_ns").Int(g.longest_unexplained_ns);
  w->Key("nsight_gaps").Uint(g.nsight_gaps);
  w->Key("nsight_longest_gap_ns").Int(g.nsight_longest_gap_ns);
  w->Key("longest").BeginArray();
  for (const analyze::IdleGap& gap : g.longest) {
    w->BeginObject();
    w->Key("start_ns").Int(gap.start_ns);
    w->Key("duration_ns").Int(gap.length());
    w->Key("step").Int(gap.step);
    w->Key("steady").Bool(gap.steady);
    w->Key("claim").String(analyze::IdleClaimName(gap.claim));
    w->Key("dataloader_ns").Int(gap.dataloader_ns);
    w->Key("unexplained_ns").Int(gap.unexplained_ns);
    w->Key("host_ops").BeginArray();
    for (const auto& [name, ns] : gap.host_ops) {
      w->BeginObject();
      w->Key("op").String(t ? t->Str(name) : "");
      w->Key("overlap_ns").Int(ns);
      w->EndObject();
    }
    w->EndArray();
    w->EndObject();
  }
  w->EndArray();
  w->Key("host_ops").BeginArray();
  for (const analyze::IdleHostOp& h : g.host_ops) {
    w->BeginObject();
    w->Key("op").String(t ? t->Str(h.name) : "");
    w->Key("gaps").Uint(h.gaps);
    w->Key("overlap_ns").Int(h.overlap_ns);
    w->EndObject();
  }
  w->EndArray();
  w->Key("per_step").BeginArray();
  for (const analyze::StepIdleGaps& s : g.steps) {
    w->BeginObject();
    w->Key("step").Int(s.step);
    w->Key("steady").Bool(s.steady);
    w->Key("idle_ns").Int(s.idle_ns);
    w->Key("long_gaps").Uint(s.long_gaps);
    w->Key("unexplained_ns").Int(s.unexplained_ns);
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

// Word-wraps `text` to `width` columns (counting UTF-8 code points), the first line indented by
// `indent` spaces and the following ones by indent + 2.
std::string Wrap(const std::string& text, size_t indent, size_t width) {
  auto code_points = [](const std::string& w) {
    size_t n = 0;
    for (unsigned char c : w) n += (c & 0xC0) != 0x80;
    return n;
  };
  // Words; a unit stays with its number ("14.5 ms", "30.0 %;").
  std::vector<std::string> words;
  for (size_t i = 0; i <= text.size();) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string word = text.substr(i, j - i);
    std::string bare = word;
    while (!bare.empty() && (bare.back() == ';' || bare.back() == ',')) bare.pop_back();
    const bool unit = bare == "ms" || bare == "%" || bare == "GB" || bare == "µs" || bare == "s";
    if (unit && !words.empty()) {
      words.back() += " " + word;
    } else {
      words.push_back(std::move(word));
    }
    i = j + 1;
  }
  std::string out, line(indent, ' ');
  size_t len = indent;
  bool empty = true;
  for (const std::string& word : words) {
    const size_t word_len = code_points(word);
    if (!empty && len + 1 + word_len > width) {
      out += line + "\n";
      line = std::string(indent + 2, ' ');
      len = indent + 2;
      empty = true;
    }
    if (!empty) {
      line += ' ';
      ++len;
    }
    line += word;
    len += word_len;
    empty = false;
  }
  return out + line + "\n";
}

std::string RenderAdviceText(const advise::Advice& a, const TextStyle& style) {
  const char* bold = style.color ? "\033[1m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  std::string out = std::string("  ") + bold + "verdict     " + a.verdict + reset + "\n";
  const size_t shown = style.verbose ? a.findings.size() : std::min<size_t>(3, a.findings.size());
  for (size_t i = 0; i < shown; ++i) {
    const advise::Finding& f = a.findings[i];
    char line[512];
    if (f.estimated_saving_ns_per_step > 0) {
      std::snprintf(line, sizeof line, "%d. %s — saves ~%s per step (%.0f %%)",
                    static_cast<int>(i + 1), f.title.c_str(),
                    HumanDuration(f.estimated_saving_ns_per_step).c_str(), f.estimated_saving_pct);
    } else {
      std::snprintf(line, sizeof line, "%d. %s", static_cast<int>(i + 1), f.title.c_str());
    }
    out += Wrap(line, 2, kTextWidth);
    std::snprintf(line, sizeof line, "evidence (confidence %.0f %%):", 100 * f.confidence);
    std::string evidence = line;
    for (const auto& [label, value] : f.evidence) {
      evidence += (evidence.back() == ':' ? " " : "; ") + label + " " + value;
    }
    out += Wrap(evidence, 5, kTextWidth);
    out += Wrap("fix: " + f.fix, 5, kTextWidth);
  }
  if (a.findings.size() > shown) {
    out += "  (" + std::to_string(a.findings.size() - shown) +
           " more findings with --verbose or --json)\n";
  }
  return out + "\n";
}

void WriteAdviceJson(const advise::Advice& a, JsonWriter* w) {
  w->Key("verdict").String(a.verdict);
  w->Key("findings").BeginArray();
  for (const advise::Finding& f : a.findings) {
    w->BeginObject();
    w->Key("id").String(f.id);
    w->Key("title").String(f.title);
    w->Key("severity").String(advise::SeverityName(f.severity));
    w->Key("estimated_saving_ns_per_step").Int(f.estimated_saving_ns_per_step);
    w->Key("estimated_saving_pct").Double(f.estimated_saving_pct, 2);
    w->Key("saving_assumption").String(f.saving_assumption);
    w->Key("evidence").BeginObject();
    for (const auto& [label, value] : f.evidence) w->Key(label).String(value);
    w->EndObject();
    w->Key("fix").String(f.fix);
    w->Key("confidence").Double(f.confidence, 2);
    w->EndObject();
  }
  w->EndArray();
}
}  // namespace

Report BuildReport(const std::vector<Trace>& traces, std::vector<Status> failures, int threads) {
  Report report;
  report.failures = std::move(failures);
  report.ranks.resize(traces.size());
  // Analyses are pure functions of one rank's model: they run in parallel, as (rank, analysis)
  // tasks, so one big rank also uses every core.
  const int cores =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  constexpr size_t kAnalyses = 8;
  const size_t tasks = traces.size() * kAnalyses;
  const int workers = std::max(1, std::min<int>(cores, static_cast<int>(tasks)));
  std::atomic<size_t> next{0};
  auto run = [&](size_t task) {
    const size_t i = task / kAnalyses;
    const Trace& t = traces[i];
    RankReport& r = report.ranks[i];
    switch (task % kAnalyses) {
      case 0:
        r.trace = &t;
        r.summary = analyze::SummarizeTrace(t);
        break;
      case 1:
        r.gpu_time = analyze::AnalyzeGpuTime(t);
        break;
      case 2:
        r.steps = analyze::AnalyzeSteps(t);
        break;
      case 3:
        r.kernels = analyze::AnalyzeKernels(t);
        break;
      case 4: {
        analyze::LaunchOptions launch_options;
        launch_options.keep_rows = false;
        r.launches = analyze::AnalyzeLaunches(t, launch_options);
        break;
      }
      case 5:
        r.copies = analyze::AnalyzeCopies(t);
        break;
      case 6:
        r.sync = analyze::AnalyzeSyncPoints(t);
        break;
      case 7:
        r.memory = analyze::AnalyzeMemory(t);
        break;
    }
  };
  auto work = [&] {
    for (size_t task = next++; task < tasks; task = next++) run(task);
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  // Second phase: analyses that build on the first (the steps' range, the sync points), again as
  // (rank, analysis) tasks.
  constexpr size_t kDependent = 2;
  const size_t tasks2 = traces.size() * kDependent;
  next = 0;
  auto run2 = [&](size_t task) {
    const size_t i = task / kDependent;
    RankReport& r = report.ranks[i];
    if (task % kDependent == 0) {
      r.occupancy = analyze::AnalyzeOccupancy(traces[i], r.steps);
    } else {
      r.idle_gaps = analyze::AnalyzeIdleGaps(traces[i], r.steps, r.sync);
    }
  };
  auto work2 = [&] {
    for (size_t task = next++; task < tasks2; task = next++) run2(task);
  };
  pool.clear();
  for (int w = 1; w < std::min<int>(workers, static_cast<int>(tasks2)); ++w)
    pool.emplace_back(work2);
  work2();
  for (std::thread& th : pool) th.join();
  std::vector<const Trace*> trace_ptrs;
  std::vector<const analyze::GpuTime*> gpu_ptrs;
  std::vector<const analyze::StepsResult*> step_ptrs;
  for (size_t i = 0; i < traces.size(); ++i) {
    trace_ptrs.push_back(&traces[i]);
    gpu_ptrs.push_back(&report.ranks[i].gpu_time);
    step_ptrs.push_back(&report.ranks[i].steps);
  }
  report.across_ranks = analyze::AnalyzeRanks(trace_ptrs, gpu_ptrs, step_ptrs);
  for (RankReport& r : report.ranks) {
    advise::RankInputs in;
    in.summary = &r.summary;
    in.gpu_time = &r.gpu_time;
    in.steps = &r.steps;
    in.kernels = &r.kernels;
    in.launches = &r.launches;
    in.copies = &r.copies;
    in.sync = &r.sync;
    in.memory = &r.memory;
    in.occupancy = &r.occupancy;
    in.idle_gaps = &r.idle_gaps;
    in.trace = r.trace;
    in.across = report.ranks.size() > 1 ? &report.across_ranks : nullptr;
    in.rank = r.summary.rank;
    r.advice = advise::AdviseRank(in);
  }
  return report;
}

// Lines longer than `width` code points (ANSI colour codes not counted) are broken at the last
// space that fits; continuation lines start under the value column (`value_column` spaces: 14 in
// the analyze report, 15 in the diff), so a section stays readable in a 100-column terminal
// whatever the names in it. A word longer than the room is cut.
std::string FitToWidth(const std::string& text, size_t width, size_t value_column) {
  const size_t kValueColumn = value_column;
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    bool first = true;
    while (true) {
      // Byte position of the code point that would be column `width + 1`; escapes are free.
      size_t cols = 0, i = 0, last_space = std::string_view::npos;
      size_t last_sep = std::string_view::npos;  // the space before a " · " separator
      const size_t indent = first ? 0 : kValueColumn;
      while (i < line.size() && cols + indent < width) {
        if (line[i] == '\033') {
          while (i < line.size() && line[i] != 'm') ++i;
          ++i;
          continue;
        }
        if (line[i] == ' ' && i > 0) {
          last_space = i;
          if (line.substr(i, 4) == " \xC2\xB7 ") last_sep = i;
        }
        if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++cols;
        ++i;
        while (i < line.size() && (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) ++i;
      }
      if (!first) out.append(kValueColumn, ' ');
      if (i >= line.size()) {
        out.append(line);
        break;
      }
      // Break at a " · " separator in the second half of the line, else at the last space after
      // the label column, else where the room ends; a separator at a break is dropped.
      size_t cut = i;
      if (last_sep != std::string_view::npos && last_sep > width / 2)
        cut = last_sep;
      else if (last_space != std::string_view::npos && last_space > kValueColumn)
        cut = last_space;
      out.append(line.substr(0, cut));
      out += '\n';
      line.remove_prefix(cut);
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      if (cut == last_sep && line.substr(0, 2) == "\xC2\xB7") {
        line.remove_prefix(2);
        while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      }
      first = false;
      if (line.empty()) break;
    }
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

std::string RenderText(const Report& report, const TextStyle& style) {
  const std::vector<Status>& failures = report.failures;
  const char* bold = style.color ? "\033[1m" : "";
  const char* yellow = style.color ? "\033[33m" : "";
  const char* red = style.color ? "\033[31m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%sgpuscope %s%s · %zu rank%s\n", bold, GPUSCOPE_VERSION, reset,
                report.ranks.size(), report.ranks.size() == 1 ? "" : "s");
  out += line;
  for (const RankReport& rr : report.ranks) {
    const analyze::TraceSummary& r = rr.summary;
    out += "\n";
    std::string rank = r.rank >= 0 ? "rank " + std::to_string(r.rank) : std::string("rank ?");
    if (r.world_size > 0) rank += " of " + std::to_string(r.world_size);
    if (r.rank >= 0) rank += std::string(" (from ") + RankSourceName(r.rank_source) + ")";
    out += std::string(bold) + rank + reset + "  " + r.path + "\n";
    out += RenderAdviceText(rr.advice, style);
    std::snprintf(line, sizeof line, "  %-11s %s%s → %s JSON, %s events%s\n", "input",
                  HumanBytes(r.file_bytes).c_str(), r.gzip ? " gzip" : "",
                  HumanBytes(r.json_bytes).c_str(), GroupDigits(r.events_total).c_str(),
                  r.format == TraceFormat::kBareArray ? " (legacy bare-array form)" : "");
    out += line;
    if (!r.device_name.empty()) {
      std::snprintf(line, sizeof line, "  %-11s %s · %.1f GiB · %d SMs · compute %d.%d%s\n",
                    "device", r.device_name.c_str(), r.device_memory_bytes / 1073741824.0,
                    r.device_sms, r.compute_major, r.compute_minor,
                    r.devices_listed > 1
                        ? (" (" + std::to_string(r.devices_listed) + " devices listed)").c_str()
                        : "");
    } else {
      std::snprintf(line, sizeof line, "  %-11s %s\n", "device",
                    "not recorded (no deviceProperties)");
    }
    out += line;
    const analyze::EventCounts& c = r.counts;
    if (r.counts.kernels + r.counts.memcpys + r.counts.memsets + r.counts.gpu_syncs > 0) {
      std::snprintf(line, sizeof line, "  %-11s %s\n", "GPU span",
                    HumanDuration(r.gpu_end_ns - r.gpu_start_ns).c_str());
      out += line;
    }
    if (r.cpu_end_ns > r.cpu_start_ns) {
      std::snprintf(line, sizeof line, "  %-11s %s\n", "CPU span",
                    HumanDuration(r.cpu_end_ns - r.cpu_start_ns).c_str());
      out += line;
    }
    std::snprintf(line, sizeof line, "  %-11s %s\n", "steps", StepRange(r.steps).c_str());
    out += line;
    std::snprintf(line, sizeof line,
                  "  %-11s %s kernels (%s NCCL) · %s memcpy · %s memset · %s sync\n", "GPU",
                  GroupDigits(c.kernels).c_str(), GroupDigits(c.nccl_kernels).c_str(),
                  GroupDigits(c.memcpys).c_str(), GroupDigits(c.memsets).c_str(),
                  GroupDigits(c.gpu_syncs).c_str());
    out += line;
    std::snprintf(
        line, sizeof line,
        "  %-11s %s runtime calls (%s launches) · %s ops · %s annotations · %s DataLoader\n", "CPU",
        GroupDigits(c.runtime_calls).c_str(), GroupDigits(c.kernel_launches).c_str(),
        GroupDigits(c.cpu_ops).c_str(), GroupDigits(c.user_annotations).c_str(),
        GroupDigits(c.dataloader_ops).c_str());
    out += line;
    if (c.python_functions + c.gpu_user_annotations + c.other_cpu_events > 0 || style.verbose) {
      std::snprintf(line, sizeof line, "  %-11s %s python frames · %s GPU annotations · %s other\n",
                    "", GroupDigits(c.python_functions).c_str(),
                    GroupDigits(c.gpu_user_annotations).c_str(),
                    GroupDigits(c.other_cpu_events).c_str());
      out += line;
    }
    std::snprintf(line, sizeof line,
                  "  %-11s %s [memory] · %s counter samples · %s flow events · %s instants\n",
                  "other", GroupDigits(c.memory_events).c_str(),
                  GroupDigits(c.counter_samples).c_str(), GroupDigits(c.flow_events).c_str(),
                  GroupDigits(c.instant_events).c_str());
    out += line;
    if (r.links.kernels > 0) {
      std::snprintf(line, sizeof line,
                    "  %-11s %s of %s kernels whose launch is in the trace are linked to it (%s)",
                    "links", GroupDigits(r.links.kernels_linked).c_str(),
                    GroupDigits(r.links.kernels_with_launch_in_trace).c_str(),
                    Percent(r.links.kernels_linked, r.links.kernels_with_launch_in_trace).c_str());
      out += line;
      const uint64_t no_launch = r.links.kernels - r.links.kernels_linked;
      if (no_launch > 0)
        out += "; " + GroupDigits(no_launch) + " kernels have no launch in the trace";
      out += "\n";
      if (r.links.linked_by_flow > 0 || style.verbose) {
        std::snprintf(
            line, sizeof line, "  %-11s GPU events linked by correlation %s, by flow %s, of %s\n",
            "", GroupDigits(r.links.linked_by_correlation).c_str(),
            GroupDigits(r.links.linked_by_flow).c_str(), GroupDigits(r.links.gpu_events).c_str());
        out += line;
      }
    }
    bool any_diag = false;
    for (size_t i = 0; i < r.diagnostics.count.size(); ++i) {
      const uint64_t n = r.diagnostics.count[i];
      if (n == 0) continue;
      const Diag d = static_cast<Diag>(i);
      std::string where;
      if (r.diagnostics.first_offset[i] >= 0)
        where = " (first at byte " +
                GroupDigits(static_cast<uint64_t>(r.diagnostics.first_offset[i])) + ")";
      std::snprintf(line, sizeof line, "  %s%-11s %s %s%s%s\n", yellow,
                    any_diag ? "" : "diagnostics", GroupDigits(n).c_str(), DiagDescription(d),
                    where.c_str(), reset);
      out += line;
      any_diag = true;
    }
    if (!any_diag) {
      std::snprintf(line, sizeof line, "  %-11s none: every event was read\n", "diagnostics");
      out += line;
    }
    for (const std::string& w : r.warnings)
      out += std::string("  ") + yellow + "warning     " + w + reset + "\n";
    out += RenderGpuTimeText(rr.gpu_time, style);
    out += RenderStepsText(rr.steps);
    out += RenderKernelsText(rr.kernels, style);
    out += RenderOpsText(rr, rr.trace);
    out += RenderOccupancyText(rr.occupancy, style);
    out += RenderIdleGapsText(rr.idle_gaps, rr.trace, style);
  }
  out += RenderRanksText(report);
  for (const Status& f : failures)
    out += std::string("\n") + red + "error: " + f.message() + reset + "\n";
  return FitToWidth(out, kTextWidth, 14);
}

std::string RenderJson(const Report& report) {
  const std::vector<Status>& failures = report.failures;
  JsonWriter w;
  w.BeginObject();
  w.Key("schema").String("gpuscope.analyze");
  w.Key("schema_version").Int(kSchemaVersion);
  w.Key("gpuscope_version").String(GPUSCOPE_VERSION);
  w.Key("ranks").BeginArray();
  for (const RankReport& rr : report.ranks) {
    const analyze::TraceSummary& r = rr.summary;
    w.BeginObject();
    w.Key("path").String(r.path);
    WriteAdviceJson(rr.advice, &w);
    w.Key("rank").Int(r.rank);
    w.Key("world_size").Int(r.world_size);
    w.Key("rank_source").String(RankSourceName(r.rank_source));
    w.Key("format").String(r.format == TraceFormat::kBareArray ? "bare_array" : "kineto_object");
    w.Key("gzip").Bool(r.gzip);
    w.Key("file_bytes").Uint(r.file_bytes);
    w.Key("json_bytes").Uint(r.json_bytes);
    w.Key("events_total").Uint(r.events_total);
    w.Key("display_time_unit").String(r.display_time_unit);
    w.Key("base_time_ns");
    if (r.base_time_ns)
      w.Int(*r.base_time_ns);
    else
      w.Null();
    w.Key("device").BeginObject();
    w.Key("name").String(r.device_name);
    w.Key("memory_bytes").Int(r.device_memory_bytes);
    w.Key("sms").Int(r.device_sms);
    w.Key("compute_capability")
        .String(r.compute_major >= 0
                    ? std::to_string(r.compute_major) + "." + std::to_string(r.compute_minor)
                    : "");
    w.Key("devices_listed").Uint(r.devices_listed);
    w.EndObject();
    w.Key("gpu_start_ns").Int(r.gpu_start_ns);
    w.Key("gpu_end_ns").Int(r.gpu_end_ns);
    w.Key("gpu_span_ns").Int(r.gpu_end_ns - r.gpu_start_ns);
    w.Key("cpu_start_ns").Int(r.cpu_start_ns);
    w.Key("cpu_end_ns").Int(r.cpu_end_ns);
    w.Key("step_numbers").BeginArray();
    for (int32_t s : r.steps) w.Int(s);
    w.EndArray();
    const analyze::EventCounts& c = r.counts;
    w.Key("counts").BeginObject();
    w.Key("kernels").Uint(c.kernels);
    w.Key("nccl_kernels").Uint(c.nccl_kernels);
    w.Key("memcpy").Uint(c.memcpys);
    w.Key("memset").Uint(c.memsets);
    w.Key("gpu_sync").Uint(c.gpu_syncs);
    w.Key("runtime_calls").Uint(c.runtime_calls);
    w.Key("kernel_launches").Uint(c.kernel_launches);
    w.Key("cpu_ops").Uint(c.cpu_ops);
    w.Key("user_annotations").Uint(c.user_annotations);
    w.Key("gpu_user_annotations").Uint(c.gpu_user_annotations);
    w.Key("python_functions").Uint(c.python_functions);
    w.Key("other_cpu_events").Uint(c.other_cpu_events);
    w.Key("profiler_steps").Uint(c.profiler_steps);
    w.Key("dataloader_ops").Uint(c.dataloader_ops);
    w.Key("memory_events").Uint(c.memory_events);
    w.Key("counter_samples").Uint(c.counter_samples);
    w.Key("flow_events").Uint(c.flow_events);
    w.Key("instant_events").Uint(c.instant_events);
    w.Key("trace_span_events_dropped").Uint(r.trace_span_events_dropped);
    w.EndObject();
    w.Key("links").BeginObject();
    w.Key("gpu_events").Uint(r.links.gpu_events);
    w.Key("with_correlation").Uint(r.links.with_correlation);
    w.Key("linked_by_correlation").Uint(r.links.linked_by_correlation);
    w.Key("linked_by_flow").Uint(r.links.linked_by_flow);
    w.Key("kernels").Uint(r.links.kernels);
    w.Key("kernels_linked").Uint(r.links.kernels_linked);
    w.Key("kernels_with_launch_in_trace").Uint(r.links.kernels_with_launch_in_trace);
    w.EndObject();
    w.Key("diagnostics").BeginArray();
    for (size_t i = 0; i < r.diagnostics.count.size(); ++i) {
      if (r.diagnostics.count[i] == 0) continue;
      w.BeginObject();
      w.Key("reason").String(DiagName(static_cast<Diag>(i)));
      w.Key("description").String(DiagDescription(static_cast<Diag>(i)));
      w.Key("count").Uint(r.diagnostics.count[i]);
      w.Key("first_byte_offset").Int(r.diagnostics.first_offset[i]);
      w.EndObject();
    }
    w.EndArray();
    w.Key("warnings").BeginArray();
    for (const std::string& s : r.warnings) w.String(s);
    w.EndArray();
    WriteGpuTimeJson(rr.gpu_time, &w);
    WriteStepsJson(rr.steps, &w);
    WriteKernelsJson(rr.kernels, &w);
    if (rr.trace) WriteOpsJson(rr, *rr.trace, &w);
    WriteOccupancyJson(rr.occupancy, &w);
    WriteIdleGapsJson(rr.idle_gaps, rr.trace, &w);
    w.EndObject();
  }
  w.EndArray();
  WriteRanksJson(report.across_ranks, &w);
  w.Key("failures").BeginArray();
  for (const Status& f : failures) w.String(f.message());
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace gpuscope::report
