#include "report/summary_report.h"

#include <cinttypes>
#include <cstdio>

#include "gpuscope/version.h"
#include "report/json_writer.h"

namespace gpuscope::report {

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

}  // namespace

std::string RenderSummaryText(const std::vector<analyze::TraceSummary>& ranks,
                              const std::vector<Status>& failures, const TextStyle& style) {
  const char* bold = style.color ? "\033[1m" : "";
  const char* yellow = style.color ? "\033[33m" : "";
  const char* red = style.color ? "\033[31m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%sgpuscope %s%s · trace summary · %zu rank%s\n", bold,
                GPUSCOPE_VERSION, reset, ranks.size(), ranks.size() == 1 ? "" : "s");
  out += line;
  for (const analyze::TraceSummary& r : ranks) {
    out += "\n";
    std::string rank = r.rank >= 0 ? "rank " + std::to_string(r.rank) : std::string("rank ?");
    if (r.world_size > 0) rank += " of " + std::to_string(r.world_size);
    if (r.rank >= 0) rank += std::string(" (from ") + RankSourceName(r.rank_source) + ")";
    out += std::string(bold) + rank + reset + "  " + r.path + "\n";
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
  }
  for (const Status& f : failures)
    out += std::string("\n") + red + "error: " + f.message() + reset + "\n";
  return out;
}

std::string RenderSummaryJson(const std::vector<analyze::TraceSummary>& ranks,
                              const std::vector<Status>& failures) {
  JsonWriter w;
  w.BeginObject();
  w.Key("schema").String("gpuscope.summary");
  w.Key("schema_version").Int(kSummarySchemaVersion);
  w.Key("gpuscope_version").String(GPUSCOPE_VERSION);
  w.Key("ranks").BeginArray();
  for (const analyze::TraceSummary& r : ranks) {
    w.BeginObject();
    w.Key("path").String(r.path);
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
    w.Key("steps").BeginArray();
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
    w.EndObject();
  }
  w.EndArray();
  w.Key("failures").BeginArray();
  for (const Status& f : failures) w.String(f.message());
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace gpuscope::report
