#include "report/document.h"

#include <algorithm>
#include <numeric>

#include <cctype>
#include <cmath>
#include "render/build.h"
#include "render/format.h"
#include "report/capture.h"
#include "report/monitor_document.h"
#include "report/summary.h"

namespace gpuscope::report {

namespace {

using namespace render::build;  // the document-builder vocabulary

// `steps`: the distinct numbers; `ranges`: the ProfilerStep ranges (more when numbers repeat: two
// profiling windows, or every step given one number; each range is a step).
std::string StepRange(const std::vector<int32_t>& steps, uint64_t ranges) {
  if (steps.empty()) return "none found";
  std::string numbers = "#" + std::to_string(steps.front());
  if (steps.size() > 1) {
    const bool contiguous = steps.back() - steps.front() + 1 == static_cast<int32_t>(steps.size());
    numbers += (contiguous ? "–#" : " … #") + std::to_string(steps.back());
  }
  if (ranges > steps.size())
    return std::to_string(ranges) + " ProfilerStep ranges, numbered " + numbers +
           " (numbers repeat)";
  return std::to_string(steps.size()) + " ProfilerStep" + (steps.size() == 1 ? "" : "s") + ": " +
         numbers;
}

std::string Name(const Trace* t, StringId id) {
  return t ? std::string(t->Str(id)) : std::string();
}

// Where the trace starts (its first CPU or GPU event, trace clock): times in tables count from it,
// as Perfetto's timeline does.
int64_t TraceStartNs(const analyze::TraceSummary& r) {
  if (r.gpu_start_ns > 0 && r.cpu_start_ns > 0) return std::min(r.gpu_start_ns, r.cpu_start_ns);
  return std::max(r.gpu_start_ns, r.cpu_start_ns);
}

void AddInputs(const analyze::TraceSummary& r, Section& s) {
  Row& in = s.AddRow("input", "input");
  in.fields = {F("file_bytes", "", Value::Bytes(r.file_bytes)),
               F("compression", "", Text(r.gzip ? "gzip" : "plain")),
               r.format == TraceFormat::kNsysSqlite  // a database: no JSON text
                   ? Detail("json_bytes", "→ JSON", Value::Bytes(r.json_bytes))
                   : F("json_bytes", "→ JSON", Value::Bytes(r.json_bytes)),
               F("events", "events", Count(r.events_total)),
               Detail("format", "format",
                      Text(r.format == TraceFormat::kBareArray    ? "bare_array"
                           : r.format == TraceFormat::kNsysSqlite ? "nsys_sqlite"
                                                                  : "kineto_object")),
               Detail("display_time_unit", "displayTimeUnit", Text(r.display_time_unit)),
               Detail("base_time_ns", "baseTimeNanoseconds",
                      r.base_time_ns ? Value::Int(*r.base_time_ns, Unit::kCount) : Value::Na())};
  if (r.format == TraceFormat::kBareArray) in.note = "(legacy bare-array form)";
  if (r.format == TraceFormat::kNsysSqlite) in.note = "(Nsight Systems SQLite export)";
  Row& dev = s.AddRow("device", "device");
  if (!r.device_name.empty()) {
    dev.fields = {
        F("name", "", Text(r.device_name)), F("memory_bytes", "", Bytes(r.device_memory_bytes)),
        F("sms", "SMs", r.device_sms >= 0 ? Value::Count(r.device_sms) : Value::Na(Unit::kCount)),
        F("compute_capability", "compute",
          Text(r.compute_major >= 0
                   ? std::to_string(r.compute_major) + "." + std::to_string(r.compute_minor)
                   : "")),
        Detail("devices_listed", "devices listed", Count(r.devices_listed))};
  } else {
    dev.note = "not recorded (no deviceProperties)";
    dev.fields = {Detail("devices_listed", "devices listed", Count(r.devices_listed))};
  }
  const analyze::EventCounts& c = r.counts;
  Row& gpu_span = s.AddRow("gpu_span", "GPU span");
  gpu_span.fields = {F("span_ns", "", Ns(r.gpu_end_ns - r.gpu_start_ns)),
                     Detail("start_ns", "from", Value::Int(r.gpu_start_ns, Unit::kTimestamp)),
                     Detail("end_ns", "to", Value::Int(r.gpu_end_ns, Unit::kTimestamp))};
  gpu_span.detail = c.kernels + c.memcpys + c.memsets + c.gpu_syncs == 0;
  Row& cpu_span = s.AddRow("cpu_span", "CPU span");
  cpu_span.fields = {F("span_ns", "", Ns(r.cpu_end_ns - r.cpu_start_ns)),
                     Detail("start_ns", "from", Value::Int(r.cpu_start_ns, Unit::kTimestamp)),
                     Detail("end_ns", "to", Value::Int(r.cpu_end_ns, Unit::kTimestamp))};
  cpu_span.detail = r.cpu_end_ns <= r.cpu_start_ns;
  Row& steps = s.AddRow("steps", "steps");
  steps.fields = {F("range", "", Text(StepRange(r.steps, r.counts.profiler_steps))),
                  Detail("count", "found", Count(r.steps.size())),
                  Detail("ranges", "ranges", Count(r.counts.profiler_steps)),
                  Detail("first", "first",
                         r.steps.empty() ? Value::Na(Unit::kCount) : Value::Count(r.steps.front())),
                  Detail("last", "last",
                         r.steps.empty() ? Value::Na(Unit::kCount) : Value::Count(r.steps.back()))};
  s.AddRow("gpu_events", "GPU").fields = {
      F("kernels", "kernels", Count(c.kernels)), F("nccl_kernels", "NCCL", Count(c.nccl_kernels)),
      F("memcpy", "memcpy", Count(c.memcpys)), F("memset", "memset", Count(c.memsets)),
      F("gpu_sync", "sync", Count(c.gpu_syncs))};
  s.AddRow("cpu_events", "CPU").fields = {
      F("runtime_calls", "runtime calls", Count(c.runtime_calls)),
      F("kernel_launches", "launches", Count(c.kernel_launches)),
      F("cpu_ops", "ops", Count(c.cpu_ops)),
      F("user_annotations", "annotations", Count(c.user_annotations)),
      F("dataloader_ops", "DataLoader", Count(c.dataloader_ops)),
      Detail("profiler_steps", "ProfilerStep events", Count(c.profiler_steps))};
  Row& more = s.AddRow("cpu_events_more", "");
  more.fields = {
      F("python_functions", "python frames", Count(c.python_functions)),
      F("gpu_user_annotations", "GPU annotations", Count(c.gpu_user_annotations)),
      F("other_cpu_events", "other", Count(c.other_cpu_events)),
      Detail("profiler_ranges", "of them CUPTI range-profiler kernels", Count(c.profiler_ranges))};
  more.detail = c.python_functions + c.gpu_user_annotations + c.other_cpu_events == 0;
  s.AddRow("other_events", "other").fields = {
      F("memory_events", "[memory]", Count(c.memory_events)),
      F("counter_samples", "counter samples", Count(c.counter_samples)),
      F("flow_events", "flow events", Count(c.flow_events)),
      F("instant_events", "instants", Count(c.instant_events)),
      Detail("trace_span_events_dropped", "trace-span events dropped",
             Count(r.trace_span_events_dropped))};
  const LinkStats& l = r.links;
  Row& links = s.AddRow("links", "links");
  links.fields = {F("kernels_linked", "kernels linked to their launch", Count(l.kernels_linked)),
                  F("kernels_with_launch_in_trace", "of", Count(l.kernels_with_launch_in_trace)),
                  F("linked_share", "",
                    ShareOf(static_cast<double>(l.kernels_linked),
                            static_cast<double>(l.kernels_with_launch_in_trace))),
                  F("kernels_without_launch", "without a launch in the trace",
                    Count(l.kernels - l.kernels_linked)),
                  Detail("kernels", "kernels", Count(l.kernels))};
  links.detail = l.kernels == 0;
  Row& by = s.AddRow("link_methods", "");
  by.fields = {F("linked_by_correlation", "GPU events linked by correlation",
                 Count(l.linked_by_correlation)),
               F("linked_by_flow", "by flow", Count(l.linked_by_flow)),
               F("gpu_events", "of", Count(l.gpu_events)),
               Detail("with_correlation", "with a correlation id", Count(l.with_correlation))};
  by.detail = l.linked_by_flow == 0;

  Table& diag = s.AddTable("diagnostics", "diagnostics: events skipped or repaired",
                           {{"reason", "reason"},
                            {"description", "what"},
                            {"count", "events"},
                            {"first_byte_offset", "first at byte"}});
  diag.text_rows = 20;
  for (size_t i = 0; i < r.diagnostics.count.size(); ++i) {
    if (r.diagnostics.count[i] == 0) continue;
    const Diag d = static_cast<Diag>(i);
    diag.rows.push_back({Text(DiagName(d)), Text(DiagDescription(d)), Count(r.diagnostics.count[i]),
                         r.diagnostics.first_offset[i] >= 0
                             ? Value::Count(r.diagnostics.first_offset[i])
                             : Value::Na(Unit::kCount)});
  }
  if (diag.rows.empty())
    s.AddRow("diagnostics_none", "diagnostics").note = "none: every event was read";
  for (size_t i = 0; i < r.warnings.size(); ++i)
    s.AddRow("warning_" + std::to_string(i), "warning").note = r.warnings[i];
}

void AddGpuTime(const analyze::GpuTime& g, Section& s) {
  const analyze::ExclusiveBreakdown& ex = g.exclusive;
  if (ex.span_ns <= 0) return;
  const double span = static_cast<double>(ex.span_ns);
  Row& head = s.AddRow("gpu_time", "GPU time");
  head.fields = {
      F("analysed_ns", "", Ns(ex.span_ns)),
      Detail("selected_gpu_events", "GPU events selected", Count(g.selection.rows.size())),
      Detail("step_filtered", "last step left out", Value::Bool(g.selection.step_filtered)),
      Detail("rounded", "µs-rounded", Value::Bool(g.selection.rounded))};
  head.note = std::string("analysed (") +
              (g.selection.step_filtered ? "HTA selection: last step left out" : "all GPU events") +
              (g.selection.rounded ? ", µs-rounded)" : ")");
  s.AddRow("exclusive", "").fields = {
      F("compute_share", "compute", ShareOf(ex.compute_ns, span)),
      F("exposed_communication_share", "exposed comm", ShareOf(ex.exposed_communication_ns, span)),
      F("exposed_memory_share", "exposed copies", ShareOf(ex.exposed_memory_ns, span)),
      F("other_share", "other", ShareOf(ex.other_ns, span)),
      F("idle_share", "idle", ShareOf(ex.idle_ns, span)),
      Detail("compute_ns", "compute", Ns(ex.compute_ns)),
      Detail("exposed_communication_ns", "exposed comm", Ns(ex.exposed_communication_ns)),
      Detail("exposed_memory_ns", "exposed copies", Ns(ex.exposed_memory_ns)),
      Detail("other_ns", "other", Ns(ex.other_ns)),
      Detail("idle_ns", "idle", Ns(ex.idle_ns)),
      Detail("communication_ns", "all communication", Ns(g.communication_ns))};
  const analyze::TemporalBreakdown& tb = g.temporal;
  const double tspan = static_cast<double>(tb.span_ns);
  Row& t = s.AddRow("temporal", "");
  t.fields = {F("idle_share", "idle", ShareOf(tb.idle_ns, tspan, 2)),
              F("compute_share", "compute", ShareOf(tb.compute_ns, tspan, 2)),
              F("non_compute_share", "non-compute", ShareOf(tb.non_compute_ns, tspan, 2)),
              Detail("span_ns", "span", Ns(tb.span_ns)),
              Detail("idle_ns", "idle", Ns(tb.idle_ns)),
              Detail("compute_ns", "compute", Ns(tb.compute_ns)),
              Detail("non_compute_ns", "non-compute", Ns(tb.non_compute_ns))};
  t.note = "(HTA temporal breakdown)";
  Row& ov = s.AddRow("overlap", "overlap");
  ov.fields = {F("comm_compute_overlap_share", "",
                 g.comm_compute_overlap_ratio >= 0 ? Value::Share(g.comm_compute_overlap_ratio)
                                                   : Value::Na(Unit::kShare))};
  ov.note = "of communication time runs under compute";
  ov.detail = g.comm_compute_overlap_ratio < 0;
  Table& idle = s.AddTable("idle_by_stream", "idle cause per stream",
                           {{"stream", "stream"},
                            {"idle_ns", "idle"},
                            {"host_wait_share", "host wait"},
                            {"kernel_wait_share", "kernel wait"},
                            {"other_share", "other"},
                            {"gaps", "gaps"},
                            {"host_wait_ns", "host wait", true},
                            {"kernel_wait_ns", "kernel wait", true},
                            {"other_ns", "other", true},
                            {"overlapping_events", "overlapping events", true},
                            {"overlap_ns", "overlapped", true},
                            {"pdl_overlaps", "early starts (Hopper PDL)", true},
                            {"pdl_overlap_ns", "overlapped by design", true}});
  idle.text_rows = 4;
  for (const analyze::StreamIdle& st : g.idle_by_stream) {
    const int64_t total = st.host_wait_ns + st.kernel_wait_ns + st.other_ns;
    const double tot = static_cast<double>(total);
    idle.rows.push_back({Value::Count(st.stream), Ns(total), ShareOf(st.host_wait_ns, tot, 0),
                         ShareOf(st.kernel_wait_ns, tot, 0), ShareOf(st.other_ns, tot, 0),
                         Count(st.gaps), Ns(st.host_wait_ns), Ns(st.kernel_wait_ns),
                         Ns(st.other_ns), Count(st.overlapping_events), Ns(st.overlap_ns),
                         Count(st.pdl_overlaps), Ns(st.pdl_overlap_ns)});
  }
  if (idle.rows.empty()) return;
  render::Chart& chart = s.AddChart("idle_by_stream_chart", "idle time per stream, by cause",
                                    render::Chart::Kind::kStackedBars, Unit::kNanos);
  chart.series = {
      {"host_wait", "host wait", {}}, {"kernel_wait", "kernel wait", {}}, {"other", "other", {}}};
  for (const analyze::StreamIdle& st : g.idle_by_stream) {
    if (st.gaps == 0) continue;
    chart.categories.push_back("stream " + std::to_string(st.stream));
    chart.series[0].values.push_back(static_cast<double>(st.host_wait_ns));
    chart.series[1].values.push_back(static_cast<double>(st.kernel_wait_ns));
    chart.series[2].values.push_back(static_cast<double>(st.other_ns));
  }
}

constexpr const char* kStepLabels[] = {"kernel",  "memcpy",     "memset",   "communication",
                                       "runtime", "DataLoader", "CPU exec", "other"};

void AddSteps(const analyze::StepsResult& st, int64_t trace_start_ns, TraceFormat format,
              Section& s) {
  if (st.steps.empty()) return;
  Row& head = s.AddRow("step_time", "step time");
  head.fields = {
      F("mean_step_ns", "", Ns(st.mean_steady_step_ns)),
      F("steady_steps", "mean over", Count(st.steady_count)),
      Detail("whole_span_fallback", "no ProfilerStep", Value::Bool(st.whole_span_fallback))};
  // Without ProfilerStep the step is the span of the CPU ops and annotations (tb_plugin's rule):
  // the whole trace for a Kineto trace, but only the NVTX ranges' part of an Nsight capture
  // (Fuser's H200 export: 857 ms of a 7.3 s capture).
  head.note = !st.whole_span_fallback
                  ? (st.steady_count == 1 ? "steady-state step" : "steady-state steps")
              : format == TraceFormat::kNsysSqlite
                  ? "(no ProfilerStep: the span of the NVTX ranges, not the whole capture; CPU "
                    "span and GPU span above)"
                  : "(the whole trace: no ProfilerStep)";
  const double mean = static_cast<double>(st.mean_steady_step_ns);
  Row& shares = s.AddRow("step_breakdown", "");
  for (size_t c = 0; c < analyze::kStepCategoryCount; ++c) {
    const std::string name = analyze::StepCategoryName(static_cast<analyze::StepCategory>(c));
    shares.fields.push_back(
        F(name + "_share", kStepLabels[c], ShareOf(st.mean_steady_ns[c], mean)));
  }
  for (size_t c = 0; c < analyze::kStepCategoryCount; ++c) {
    const std::string name = analyze::StepCategoryName(static_cast<analyze::StepCategory>(c));
    shares.fields.push_back(Detail(name + "_ns", kStepLabels[c], Ns(st.mean_steady_ns[c])));
  }
  Row& tb = s.AddRow("tb_plugin_steps", "tb_plugin");
  tb.detail = true;
  tb.fields = {F("mean_step_ns", "mean step", Ns(st.mean_complete_step_ns)),
               F("complete_steps", "over complete steps", Count(st.complete_count))};
  for (size_t c = 0; c < analyze::kStepCategoryCount; ++c) {
    const std::string name = analyze::StepCategoryName(static_cast<analyze::StepCategory>(c));
    tb.fields.push_back(F(name + "_ns", kStepLabels[c], Ns(st.mean_complete_ns[c])));
  }
  std::vector<Column> cols = {{"name", "step"},
                              {"step", "#"},
                              {"start_offset_ns", "start (from trace start)"},
                              {"duration_ns", "duration"},
                              {"steady_state", "steady"},
                              {"incomplete", "incomplete"}};
  for (size_t c = 0; c < analyze::kStepCategoryCount; ++c)
    cols.push_back(
        {std::string(analyze::StepCategoryName(static_cast<analyze::StepCategory>(c))) + "_ns",
         kStepLabels[c]});
  Table& table = s.AddTable("per_step", "per step", cols);
  table.text_rows = 0;
  render::Chart& chart = s.AddChart("per_step_chart", "step time by category",
                                    render::Chart::Kind::kStackedBars, Unit::kNanos);
  for (size_t c = 0; c < analyze::kStepCategoryCount; ++c)
    chart.series.push_back(
        {analyze::StepCategoryName(static_cast<analyze::StepCategory>(c)), kStepLabels[c], {}});
  for (const analyze::StepBreakdown& b : st.steps) {
    std::vector<Value> row = {
        Text(b.name),      Value::Count(b.step),        Ns(b.start_ns - trace_start_ns),
        Ns(b.duration_ns), Value::Bool(b.steady_state), Value::Bool(b.incomplete)};
    for (size_t c = 0; c < analyze::kStepCategoryCount; ++c) {
      row.push_back(Ns(b.category_ns[c]));
      chart.series[c].values.push_back(static_cast<double>(b.category_ns[c]));
    }
    table.rows.push_back(std::move(row));
    chart.categories.push_back(b.name + (b.steady_state ? "" : " (not steady)"));
  }
}

void AddKernels(const analyze::KernelsResult& k, Section& s) {
  if (k.math_ns > 0) {
    Row& p = s.AddRow("precision", "precision");
    p.fields = {F("math_ns", "", Ns(k.math_ns)),
                F("tensor_core_share", "of GEMM/conv/attention time on tensor cores",
                  ShareOf(k.tensor_core_ns, k.math_ns, 0)),
                Detail("tensor_core_ns", "tensor cores", Ns(k.tensor_core_ns)),
                Detail("dominant_precision", "dominant",
                       Text(analyze::MathPrecisionName(k.dominant_precision)))};
    for (size_t i = 1; i < analyze::kMathPrecisionCount; ++i) {
      if (k.math_ns_by_precision[i] == 0) continue;
      const std::string name = analyze::MathPrecisionName(static_cast<analyze::MathPrecision>(i));
      p.fields.push_back(
          F(name + "_share", name, ShareOf(k.math_ns_by_precision[i], k.math_ns, 0)));
      p.fields.push_back(Detail(name + "_ns", name, Ns(k.math_ns_by_precision[i])));
    }
  }
  Table& classes = s.AddTable("kernel_classes", "kernel classes",
                              {{"class", "class"},
                               {"count", "kernels"},
                               {"total_ns", "time"},
                               {"distinct_names", "distinct names"}});
  classes.text_rows = 0;
  for (const analyze::ClassKernels& c : k.classes) {
    classes.rows.push_back({Text(analyze::KernelClassName(c.cls)), Count(c.count), Ns(c.total_ns),
                            Count(c.distinct_names)});
    if (c.count == 0) continue;
    const std::string cls = analyze::KernelClassName(c.cls);
    // The memory class holds copies and sets, which are not kernels.
    Table& t = s.AddTable("top_kernels_" + cls,
                          c.cls == analyze::KernelClass::kMemory
                              ? std::string("top memory activities (copies, sets, memory kernels)")
                              : "top " + cls + " kernels",
                          {{"time_share", "share"},
                           {"name", "kernel"},
                           {"count", "count"},
                           {"mean_ns", "mean"},
                           {"total_ns", "total", true},
                           {"min_ns", "min", true},
                           {"max_ns", "max", true},
                           {"precision", "precision", true}});
    const bool headline =
        c.cls == analyze::KernelClass::kCompute || c.cls == analyze::KernelClass::kCommunication;
    t.text_rows = headline ? 3 : 0;
    for (const analyze::KernelRow& r : c.top)
      t.rows.push_back({Value::Share(r.share, 0), Text(r.name), Count(r.count),
                        Ns(r.total_ns / static_cast<int64_t>(std::max<uint64_t>(1, r.count))),
                        Ns(r.total_ns), Ns(r.min_ns), Ns(r.max_ns),
                        Text(analyze::MathPrecisionName(r.precision))});
  }
  // Every kernel (by short name) of every class, for JSON, CSV and Python (the pages keep the
  // top tables): what HTA's and TraceLens's kernel sheets list.
  Section& full = s.AddSection("kernels_all", "");
  full.views = 0;
  Table& all = full.AddTable("kernels", "every kernel",
                             {{"class", "class"},
                              {"name", "kernel"},
                              {"count", "count"},
                              {"total_ns", "total"},
                              {"mean_ns", "mean"},
                              {"min_ns", "min"},
                              {"max_ns", "max"},
                              {"class_share", "of its class"},
                              {"precision", "precision"}});
  all.text_rows = 0;
  for (const analyze::ClassKernels& c : k.classes)
    for (const analyze::KernelRow& r : c.all)
      all.rows.push_back(
          {Text(analyze::KernelClassName(c.cls)), Text(r.name), Count(r.count), Ns(r.total_ns),
           Ns(r.count > 0 ? r.total_ns / static_cast<int64_t>(r.count) : 0), Ns(r.min_ns),
           Ns(r.max_ns), Value::Share(r.share, 1), Text(analyze::MathPrecisionName(r.precision))});
}

std::vector<render::Field> LaunchSummaryFields(const analyze::LaunchSummary& l, bool detail) {
  auto f = [detail](std::string key, std::string label, Value v) {
    return render::Field{std::move(key), std::move(label), std::move(v), detail};
  };
  // A median or percentile of no launches does not exist: null, as HTA's NaN (not 0 ns).
  auto q = [&l](auto ns) { return l.n == 0 ? Value::Na(Unit::kNanos) : Ns(ns); };
  return {
      f("launched", "launched", Count(l.n)),
      f("median_launch_delay_ns", "launch end → GPU start: median", q(l.median_launch_delay_ns)),
      f("p95_launch_delay_ns", "p95", q(l.p95_launch_delay_ns)),
      Detail("short_kernels", "kernels shorter than their launch call", Count(l.short_kernels)),
      Detail("runtime_outliers", "launch calls > 50 µs", Count(l.runtime_outliers)),
      Detail("launch_delay_outliers", "launch delay outliers", Count(l.launch_delay_outliers)),
      Detail("negative_launch_delays", "negative launch delays", Count(l.negative_launch_delays)),
      Detail("median_cpu_duration_ns", "median launch call", q(l.median_cpu_duration_ns)),
      Detail("median_gpu_duration_ns", "median kernel", q(l.median_gpu_duration_ns)),
      Detail(
          "median_launch_latency_ns", "median launch latency",
          l.n > l.started_before_launch ? Ns(l.median_launch_latency_ns) : Value::Na(Unit::kNanos)),
      Detail("started_before_launch", "GPU work starting before its launch call (left out)",
             Count(l.started_before_launch))};
}

void AddLaunches(const RankReport& rr, Section& s) {
  const analyze::LaunchStats& ls = rr.launches;
  Row& all = s.AddRow("launches", "launches");
  all.fields = LaunchSummaryFields(ls.all, false);
  all.detail = ls.all.n == 0;
  Row& shorts = s.AddRow("launch_overhead", "");
  shorts.fields = {
      F("short_kernels", "kernels shorter than their launch call", Count(ls.all.short_kernels)),
      F("runtime_outliers", "launch calls > 50 µs", Count(ls.all.runtime_outliers))};
  shorts.detail = ls.all.n == 0;
  Row& hta = s.AddRow("launches_hta", "HTA launch APIs");
  hta.fields = LaunchSummaryFields(ls.hta, false);
  hta.detail = true;
  Row& graphs = s.AddRow("cuda_graphs", "");
  graphs.fields = {F("graph_launches", "CUDA-graph launches", Count(ls.graphs.graph_launches)),
                   F("gpu_activities", "replay GPU activities", Count(ls.graphs.gpu_activities)),
                   Detail("max_activities_per_launch", "at most per launch",
                          Count(ls.graphs.max_activities_per_launch)),
                   Detail("gpu_activities_without_launch", "GPU activities without a launch",
                          Count(ls.gpu_activities_without_launch))};
  graphs.detail = ls.graphs.graph_launches == 0;
  Table& apis = s.AddTable("launch_apis", "launch APIs",
                           {{"name", "API"},
                            {"calls", "calls"},
                            {"gpu_activities", "GPU activities"},
                            {"total_cpu_duration_ns", "CPU time"}});
  apis.text_rows = 0;
  for (const analyze::LaunchApiCount& a : ls.apis)
    apis.rows.push_back({Text(Name(rr.trace, a.name)), Count(a.calls), Count(a.gpu_activities),
                         Ns(a.total_cpu_duration_ns)});
}

// A copy rate, B/s; n/a where no copy of the row took measurable time (µs-rounded copies of a
// few bytes take 0 ns: their rate is unknown, not 0).
Value AchievedRate(double gbps) {
  return gbps > 0 ? Value::Number(gbps * 1e9, -1, Unit::kBytesPerSecond)
                  : Value::Na(Unit::kBytesPerSecond);
}

void AddCopies(const analyze::CopyStats& cs, Section& s) {
  Table& dirs = s.AddTable("copies", "copies",
                           {{"direction", "direction"},
                            {"count", "count"},
                            {"mean_bytes", "mean size"},
                            {"pageable", "pageable"},
                            {"time_ns", "time"},
                            {"achieved_bytes_per_s", "achieved"},
                            {"total_bytes", "bytes", true},
                            {"pinned", "pinned", true}});
  dirs.text_rows = 6;
  for (const analyze::DirectionTotals& d : cs.directions) {
    if (d.count == 0) continue;
    dirs.rows.push_back({Text(CopyDirectionName(d.direction)), Count(d.count),
                         Value::Bytes(static_cast<uint64_t>(
                             std::max<int64_t>(0, d.bytes / static_cast<int64_t>(d.count)))),
                         Count(d.pageable), Ns(d.time_ns), AchievedRate(d.achieved_gbps),
                         Bytes(d.bytes), Count(d.pinned)});
  }
  Row& sync = s.AddRow("copy_sync", "copies");
  sync.fields = {
      F("sync_memcpys", "synchronous copies", Count(cs.sync_memcpys)),
      F("effectively_sync_memcpys", "asynchronous calls made synchronous by pageable memory",
        Count(cs.effectively_sync_memcpys)),
      Detail("memcpys", "memcpys", Count(cs.memcpys)),
      Detail("memcpy_bytes", "bytes", Bytes(cs.memcpy_bytes)),
      Detail("memcpy_time_ns", "time", Ns(cs.memcpy_time_ns)),
      Detail("pageable_memcpys", "pageable", Count(cs.pageable_memcpys)),
      Detail("sync_memsets", "synchronous memsets", Count(cs.sync_memsets)),
      Detail("tiny_memcpys", "tiny memcpys", Count(cs.tiny_memcpys)),
      Detail("tiny_memcpy_time_ns", "tiny memcpy time", Ns(cs.tiny_memcpy_time_ns))};
  sync.detail = cs.sync_memcpys + cs.effectively_sync_memcpys == 0;
  std::vector<Column> cols = {{"kind", "kind"},
                              {"direction", "direction"},
                              {"src", "src"},
                              {"dst", "dst"},
                              {"count", "count"},
                              {"total_bytes", "bytes"},
                              {"time_ns", "time"},
                              {"achieved_bytes_per_s", "achieved"},
                              {"sync", "sync"},
                              {"async", "async"},
                              {"effectively_sync", "made sync"}};
  for (size_t b = 0; b < analyze::kCopySizeBuckets; ++b)
    cols.push_back({"size_bucket_" + std::to_string(b), "size bucket " + std::to_string(b)});
  Table& groups = s.AddTable("copy_groups", "copies by kind, direction and memory", cols);
  groups.text_rows = 0;
  for (const analyze::CopyGroup& g : cs.groups) {
    std::vector<Value> row = {Text(g.kind == GpuKind::kMemset ? "memset" : "memcpy"),
                              Text(CopyDirectionName(g.direction)),
                              Text(MemoryKindName(g.src_kind)),
                              Text(MemoryKindName(g.dst_kind)),
                              Count(g.count),
                              Bytes(g.bytes),
                              Ns(g.time_ns),
                              AchievedRate(g.achieved_gbps),
                              Count(g.sync),
                              Count(g.async),
                              Count(g.effectively_sync)};
    for (uint64_t c : g.size_histogram) row.push_back(Count(c));
    groups.rows.push_back(std::move(row));
  }
}

void AddSync(const RankReport& rr, Section& s) {
  const analyze::SyncStats& sy = rr.sync;
  Row& head = s.AddRow("sync", "sync");
  head.fields = {F("sync_points", "host-blocking sync points", Count(sy.points.size())),
                 F("blocked_ns", "blocked", Ns(sy.blocked_ns)),
                 Detail("blocking_calls", "blocking calls", Count(sy.blocking_calls)),
                 Detail("gpu_sync_events", "GPU sync events", Count(sy.gpu_sync_events))};
  if (!sy.causes.empty()) {
    head.fields.push_back(
        F("top_cause", "top cause", Text(Name(rr.trace, sy.causes.front().name))));
    head.fields.push_back(F("top_cause_sync_points", "", Count(sy.causes.front().sync_points)));
    head.fields.push_back(F("top_cause_blocked_ns", "", Ns(sy.causes.front().blocked_ns)));
  }
  head.detail = sy.points.empty();
  Row& idle = s.AddRow("sync_idle", "");
  idle.fields = {F("gpu_idle_after_sync_ns", "GPU idle while the host resumes after them",
                   Ns(sy.gpu_idle_after_sync_ns))};
  idle.detail = sy.points.empty() || sy.gpu_idle_after_sync_ns <= 0;
  Table& causes =
      s.AddTable("sync_causes", "sync causes",
                 {{"op", "op"}, {"sync_points", "sync points"}, {"blocked_ns", "blocked"}});
  causes.text_rows = 0;
  for (const analyze::SyncCause& c : sy.causes)
    causes.rows.push_back({Text(Name(rr.trace, c.name)), Count(c.sync_points), Ns(c.blocked_ns)});
  Table& apis = s.AddTable(
      "sync_apis", "sync APIs",
      {{"name", "API"}, {"category", "category"}, {"calls", "calls"}, {"total_ns", "time"}});
  apis.text_rows = 0;
  for (const analyze::SyncApiStats& a : sy.apis)
    apis.rows.push_back({Text(Name(rr.trace, a.name)), Text(analyze::SyncCategoryName(a.category)),
                         Count(a.calls), Ns(a.total_ns)});
  Table& steps = s.AddTable("sync_per_step", "sync per step",
                            {{"step", "step"},
                             {"sync_points", "sync points"},
                             {"blocked_ns", "blocked"},
                             {"gpu_idle_after_sync_ns", "GPU idle after"}});
  steps.text_rows = 0;
  for (const analyze::StepSyncStats& st : sy.steps)
    steps.rows.push_back({Value::Count(st.step), Count(st.sync_points), Ns(st.blocked_ns),
                          Ns(st.gpu_idle_after_sync_ns)});
}

void AddMemory(const analyze::MemoryStats& m, Section& s) {
  if (const analyze::DeviceMemory* d = analyze::RankDevice(m)) {
    Row& row = s.AddRow("memory", "memory");
    row.fields = {F("device", "device", Value::Count(d->device)),
                  F("peak_allocated_bytes", "peak allocated",
                    Bytes(std::max<int64_t>(0, d->peak_allocated_bytes))),
                  F("peak_reserved_bytes", "reserved", Bytes(d->peak_reserved_bytes)),
                  F("device_total_bytes", "of",
                    d->total_bytes > 0 ? Bytes(d->total_bytes) : Value::Na(Unit::kBytes)),
                  F("headroom_bytes", "headroom", Bytes(d->headroom_bytes))};
    if (d->source == analyze::MemoryLevelSource::kDeltas)
      row.note = "(rebuilt from allocation deltas)";
  }
  Table& devs = s.AddTable("memory_devices", "memory per device",
                           {{"device", "device"},
                            {"events", "events"},
                            {"source", "source"},
                            {"peak_allocated_bytes", "peak allocated"},
                            {"peak_reserved_bytes", "peak reserved"},
                            {"total_bytes", "device memory"},
                            {"headroom_bytes", "headroom"}});
  devs.text_rows = 0;
  for (const analyze::DeviceMemory& d : m.devices) {
    devs.rows.push_back(
        {Value::Count(d.device), Count(d.events),
         Text(d.source == analyze::MemoryLevelSource::kTotals ? "totals" : "deltas"),
         Bytes(d.peak_allocated_bytes), Bytes(d.peak_reserved_bytes),
         d.total_bytes > 0 ? Bytes(d.total_bytes) : Value::Na(Unit::kBytes),
         Bytes(d.headroom_bytes)});
    if (d.timeline.empty()) continue;
    render::Chart& c = s.AddChart("memory_timeline_device_" + std::to_string(d.device),
                                  "device " + std::to_string(d.device) + " memory",
                                  render::Chart::Kind::kLines, Unit::kBytes);
    c.x_unit = Unit::kNanos;
    const int64_t t0 = d.timeline.front().ts_ns;
    render::Series alloc{"allocated", "allocated", {}}, reserved{"reserved", "reserved", {}};
    render::Series ts{"ts_ns", "timestamp (ns, trace clock)", {}};
    bool any_reserved = false;
    for (const analyze::MemoryPoint& p : d.timeline) {
      c.x.push_back(static_cast<double>(p.ts_ns - t0));
      alloc.values.push_back(static_cast<double>(p.allocated_bytes));
      reserved.values.push_back(p.reserved_bytes >= 0 ? static_cast<double>(p.reserved_bytes)
                                                      : std::nan(""));
      any_reserved |= p.reserved_bytes >= 0;
    }
    c.series.push_back(std::move(alloc));
    if (any_reserved) c.series.push_back(std::move(reserved));
    c.reference_lines.push_back(F("start_ns", "first sample at", Value::Int(t0, Unit::kTimestamp)));
    if (d.total_bytes > 0)
      c.reference_lines.push_back(F("capacity_bytes", "device memory", Bytes(d.total_bytes)));
  }
}

void AddOccupancy(const analyze::OccupancyStats& o, Section& s) {
  Row& row = s.AddRow("occupancy", "occupancy");
  row.fields = {
      F("sm_efficiency", "est. SM efficiency",
        o.sm_efficiency >= 0 ? Value::Number(o.sm_efficiency, 3) : Value::Na()),
      F("achieved_occupancy_pct", "achieved occupancy",
        o.achieved_occupancy_pct >= 0 ? Value::Number(o.achieved_occupancy_pct, 1, Unit::kPercent)
                                      : Value::Na(Unit::kPercent)),
      Detail("available", "SM efficiency available", Value::Bool(o.available)),
      Detail("occupancy_available", "occupancy available", Value::Bool(o.occupancy_available)),
      // No kernels: no device and no range (n/a, never a sentinel −1 in the JSON).
      Detail("device", "device", o.device >= 0 ? Value::Count(o.device) : Value::Na(Unit::kCount)),
      Detail("range_start_ns", "from",
             o.device >= 0 ? Value::Int(o.range_start_ns, Unit::kTimestamp)
                           : Value::Na(Unit::kTimestamp)),
      Detail("range_end_ns", "to",
             o.device >= 0 ? Value::Int(o.range_end_ns, Unit::kTimestamp)
                           : Value::Na(Unit::kTimestamp))};
  row.detail = !o.available && !o.occupancy_available;
  Row& tiny = s.AddRow("tiny_grids", "");
  tiny.fields = {
      F("tiny_grid_share", "tiny grids (fewer blocks than SMs)", Value::Share(o.tiny_grid_share)),
      F("tiny_grid_kernels", "of compute-kernel time, launches", Count(o.tiny_grid_kernels)),
      Detail("compute_kernel_ns", "compute-kernel time", Ns(o.compute_kernel_ns)),
      Detail("tiny_grid_ns", "tiny-grid time", Ns(o.tiny_grid_ns)),
      Detail("tiny_grid_lost_sm_ns", "SM time left idle", Ns(o.tiny_grid_lost_sm_ns)),
      Detail("tiny_distinct_names", "distinct names", Count(o.tiny_distinct_names))};
  tiny.detail = !(o.available && o.compute_kernel_ns > 0);
  Table& t = s.AddTable("tiny_grid_kernels", "kernels with tiny grids",
                        {{"name", "kernel"},
                         {"count", "count"},
                         {"total_ns", "time"},
                         {"mean_blocks_per_sm", "blocks/SM"},
                         {"mean_occupancy_pct", "occupancy"},
                         {"lost_sm_ns", "SM time left idle"}});
  t.text_rows = 0;
  for (const analyze::TinyGridKernel& k : o.tiny)
    t.rows.push_back(
        {Text(k.name), Count(k.count), Ns(k.total_ns), Value::Number(k.mean_blocks_per_sm, 2),
         k.mean_occupancy_pct >= 0 ? Value::Number(k.mean_occupancy_pct, 0, Unit::kPercent)
                                   : Value::Na(Unit::kPercent),
         Ns(k.lost_sm_ns)});
}

// Ops per input shape (record_shapes=True traces; analyze/op_shapes.h), by host time, in JSON and
// HTML: a row of a table holds an op's name and a list of shapes, wider than a terminal.
void AddOpShapes(const RankReport& rr, Section& s) {
  s.views = render::kViewHtml;
  const analyze::OpShapes& o = rr.op_shapes;
  Row& row = s.AddRow("op_shapes_recorded", "ops");
  row.fields = {
      F("ops", "ATen ops", Count(o.ops)),
      F("ops_with_input_dims", "with input shapes (record_shapes)", Count(o.ops_with_dims)),
      F("distinct_op_shapes", "distinct op × shape", Count(o.groups.size()))};
  row.detail = !o.recorded;
  Table& t = s.AddTable("op_shapes", "ops by input shape",
                        {{"name", "op"},
                         {"input_dims", "input dims"},
                         {"input_types", "input types"},
                         {"count", "count"},
                         {"total_ns", "host time"},
                         {"mean_ns", "mean"},
                         {"max_ns", "max", true}});
  for (const analyze::OpShapeGroup& g : o.groups)
    t.rows.push_back({Text(Name(rr.trace, g.name)), Text(Name(rr.trace, g.input_dims)),
                      Text(Name(rr.trace, g.input_types)), Count(g.count), Ns(g.total_ns),
                      Ns(static_cast<double>(g.total_ns) / static_cast<double>(g.count)),
                      Ns(g.max_ns)});
}

// The kernels of the priced ops, each against its own roofline.
void AddKernelCosts(const RankReport& rr, Section& all) {
  const analyze::OpCosts& o = rr.op_costs;
  auto pct = [](double share) { return Value::Share(share, 1); };
  Table& k = all.AddTable("kernel_costs",
                          "kernels of the priced ops (their ops' FLOPs and bytes split by time)",
                          {{"kernel", "kernel"},
                           {"count", "calls"},
                           {"time_ns", "GPU time"},
                           {"flops", "FLOP"},
                           {"bytes", "bytes"},
                           {"achieved_tflops", "TFLOP/s"},
                           {"achieved_gbps", "GB/s"},
                           {"intensity", "FLOP/byte"},
                           {"bound", "bound"},
                           {"path", "math path"},
                           {"roofline_ns", "roofline"},
                           {"efficiency_share", "of roofline"}});
  for (const analyze::KernelCost& kc : o.kernels) {
    // The kernel's roofline as an op's (analyze/op_costs.h): its path's achievable peak (fp32
    // CUDA cores for a kernel that names none) and HBM, over all its calls.
    double compute = 0, memory = 0;
    if (o.peaks) {
      const double peak = o.peaks->Of(kc.math ? kc.path : hw::MathPath::kFp32Cuda).Roof();
      compute = peak > 0 ? kc.flops / peak * 1e-3 : 0;
      memory = kc.bytes / o.peaks->hbm_gbps.Roof();
    }
    const double roofline = std::max(compute, memory);
    k.rows.push_back({Text(Name(rr.trace, kc.name)), Count(kc.count), Ns(kc.time_ns),
                      Value::Number(kc.flops, 0), Value::Number(kc.bytes, 0),
                      Value::Number(kc.AchievedTflops(), 2), Value::Number(kc.AchievedGbps(), 1),
                      Value::Number(kc.bytes > 0 ? kc.flops / kc.bytes : 0, 2),
                      Text(!o.peaks           ? ""
                           : compute > memory ? "compute"
                                              : "memory"),
                      Text(kc.math ? std::string(hw::MathPathName(kc.path)) : std::string()),
                      o.peaks ? Ns(roofline) : Value::Na(Unit::kNanos),
                      o.peaks && kc.time_ns > 0 ? pct(roofline / static_cast<double>(kc.time_ns))
                                                : Value::Na(Unit::kShare)});
  }
}

// The peaks the ops were priced against: datasheet, used, measured.
void AddPeaksPricedAgainst(const analyze::OpCosts& o, Section& s) {
  if (o.peaks) {
    Table& p = s.AddTable("op_cost_peaks", "peaks priced against",
                          {{"path", "path"},
                           {"datasheet", "datasheet"},
                           {"achievable", "used"},
                           {"measured", "measured"}});
    p.text_rows = 0;
    for (size_t i = 0; i < hw::kMathPathCount; ++i) {
      const hw::Peak& pk = o.peaks->tflops[i];
      p.rows.push_back(
          {Text(std::string(hw::MathPathName(static_cast<hw::MathPath>(i))) + " TFLOP/s"),
           Value::Number(pk.datasheet, 1), Value::Number(pk.Roof(), 1), Value::Bool(pk.measured)});
    }
    // One precision per column: JSON keeps a column's unit and precision once (its first cell's).
    p.rows.push_back({Text("HBM GB/s"), Value::Number(o.peaks->hbm_gbps.datasheet, 1),
                      Value::Number(o.peaks->hbm_gbps.Roof(), 1),
                      Value::Bool(o.peaks->hbm_gbps.measured)});
  }
}

// Every op priced (analyze/op_costs.h): the cost model's summary (GPU and peaks, MFU/HFU with
// their convention, what is unpriced), the per-op table grouped by op and input shapes (text shows
// the top rows), and the peaks it priced against.
// What MFU leaves out: the GEMM/conv/attention time the trace's shapes give no FLOPs for.
std::string UnpricedMathNote(const analyze::OpCosts& o) {
  int64_t priced = 0;
  for (const int64_t ns : o.math_ns) priced += ns;
  const int64_t all = priced + o.unpriced_math_ns;
  if (all <= 0 || o.unpriced_math_ns * 100 < all) return "";
  const std::string share =
      render::FormatShare(static_cast<double>(o.unpriced_math_ns) / static_cast<double>(all), 0);
  return (o.mfu > 0 ? "; a lower bound: " : "; n/a: ") + share +
         " of the GEMM/conv/attention GPU time has no FLOP count (ops table: unpriced)";
}

void AddOpCosts(const RankReport& rr, Section& s) {
  const analyze::OpCosts& o = rr.op_costs;
  auto pct = [](double share) { return Value::Share(share, 1); };
  Row& head = s.AddRow("priced", "priced");
  const std::string gpu = o.peaks ? o.peaks->gpu : std::string("unknown");
  head.fields = {
      F("priced_ns", "GPU time priced", Ns(o.priced_ns)),
      F("priced_share", "of the ops' GPU time",
        pct(o.op_ns > 0 ? static_cast<double>(o.priced_ns) / static_cast<double>(o.op_ns) : 0)),
      F("gpu", "against", Text(gpu)),
      F("above_roofline", "ops above their roofline", Count(o.above_roofline_groups)),
      Detail("op_ns", "GPU time counted for ops", Ns(o.op_ns)),
      Detail("unattributed_ns", "GPU time with no op around its launch", Ns(o.unattributed_ns)),
      Detail("device", "device", Text(o.device)),
      Detail("param_elements", "parameters (AccumulateGrad)", Value::Number(o.param_elements, 0))};
  head.detail = !o.shapes;
  Row& mfu = s.AddRow("mfu", "MFU");
  mfu.fields = {
      F("mfu_share", "MFU", o.mfu > 0 ? pct(o.mfu) : Value::Na(Unit::kShare)),
      F("hfu_share", "HFU", o.hfu > 0 ? pct(o.hfu) : Value::Na(Unit::kShare)),
      F("model_tflop_per_step", "model TFLOP per step",
        Value::Number(o.model_flops_per_step / 1e12, 3)),
      F("convention", "convention",
        Text("GEMM/conv/attention FLOPs of the steady steps ÷ (step time × " +
             (o.mfu_peak_tflops > 0
                  ? "dense " + std::string(hw::MathPathName(o.mfu_peak_path)) + " peak " +
                        render::FormatNumber(o.mfu_peak_tflops, 0) + " TFLOP/s, datasheet"
                  : std::string("the dense bf16 peak: n/a without recorded shapes or for a GPU not "
                                "in the table")) +
             (o.mfu_peak_path == hw::MathPath::kFp16 ? ": this GPU has no bf16" : "") +
             "); causal attention counted half; attention backward 2× forward (HFU 2.5×, and "
             "recomputed forward ops); embeddings, norms and elementwise ops 0" +
             UnpricedMathNote(o))),
      Detail("unpriced_math_ns", "GEMM/conv/attention GPU time without a FLOP count",
             Ns(o.unpriced_math_ns)),
      Detail("hardware_tflop_per_step", "hardware TFLOP per step",
             Value::Number(o.hardware_flops_per_step / 1e12, 3)),
      Detail("recomputed_tflop_per_step", "recomputed TFLOP per step",
             Value::Number(o.recomputed_flops_per_step / 1e12, 3)),
      Detail("step_ns", "mean steady step", Ns(o.step_ns)),
      Detail("steps", "steady steps", Count(o.steps)),
      Detail("mfu_peak_tflops", "MFU peak TFLOP/s", Value::Number(o.mfu_peak_tflops, 1))};
  mfu.detail = !o.shapes || o.steps == 0;
  // The terminal gets the top ops without their shapes (op names and shapes are two cells of up
  // to 48 columns each: they do not fit 100 together); JSON, HTML and CSV get every op with its
  // shapes, in a section of their own.
  Section& text = s.AddSection("op_costs_top", "");
  text.views = render::kViewText;
  text.text_inline = true;
  Table& top = text.AddTable(
      "op_costs_top",
      "ops by GPU time, priced against the roofline (-v: all; shapes in --json, --html, --csv)",
      {{"op", "op"},
       {"count", "calls"},
       {"time_ns", "GPU time"},
       {"achieved_tflops", "TFLOP/s"},
       {"bound", "bound"},
       {"efficiency_share", "of roofline"},
       {"unpriced", "unpriced"}});
  Section& all = s.AddSection("op_costs_all", "every op priced");
  all.views = render::kViewHtml;
  Table& t = all.AddTable("ops", "ops by GPU time, priced against the roofline",
                          {{"op", "op"},
                           {"input_dims", "input dims"},
                           {"input_types", "input types", true},
                           {"concrete_inputs", "concrete inputs", true},
                           {"family", "family", true},
                           {"count", "calls"},
                           {"time_ns", "GPU time"},
                           {"flops", "FLOP/call", true},
                           {"bytes", "bytes/call", true},
                           {"achieved_tflops", "TFLOP/s"},
                           {"achieved_gbps", "GB/s"},
                           {"intensity", "FLOP/byte", true},
                           {"bound", "bound"},
                           {"path", "math path", true},
                           {"roofline_ns", "roofline/call", true},
                           {"efficiency_share", "of roofline"},
                           {"above_roofline", "above roofline", true},
                           {"unpriced", "unpriced", true},
                           {"top_kernel", "longest kernel", true}});
  top.text_rows = 10;
  for (const analyze::OpCostGroup& g : o.groups) {
    const bool priced = g.unpriced == analyze::Unpriced::kPriced;
    auto num = [priced](double v, int precision) {
      return priced ? Value::Number(v, precision) : Value::Na();
    };
    t.rows.push_back(
        {Text(Name(rr.trace, g.name)), Text(Name(rr.trace, g.input_dims)),
         Text(Name(rr.trace, g.input_types)), Text(Name(rr.trace, g.concrete_inputs)),
         Text(g.family == analyze::OpFamily::kCount ? "" : analyze::OpFamilyName(g.family)),
         Count(g.count), Ns(g.time_ns), num(g.flops, 0), num(g.bytes, 0),
         num(g.AchievedTflops(), 2), num(g.AchievedGbps(), 1), num(g.Intensity(), 2),
         Text(!priced || !o.peaks ? ""
              : g.compute_bound   ? "compute"
                                  : "memory"),
         Text(priced && g.math ? std::string(hw::MathPathName(g.path)) : std::string()),
         priced && o.peaks ? Ns(g.roofline_ns) : Value::Na(Unit::kNanos),
         priced && o.peaks ? pct(g.Efficiency()) : Value::Na(Unit::kShare),
         Value::Bool(g.above_roofline), Text(analyze::UnpricedName(g.unpriced)),
         Text(Name(rr.trace, g.top_kernel))});
    top.rows.push_back({Text(Name(rr.trace, g.name)), Count(g.count), Ns(g.time_ns),
                        num(g.AchievedTflops(), 2),
                        Text(!priced || !o.peaks ? ""
                             : g.compute_bound   ? "compute"
                                                 : "memory"),
                        priced && o.peaks ? pct(g.Efficiency()) : Value::Na(Unit::kShare),
                        Text(analyze::UnpricedName(g.unpriced))});
  }
  AddKernelCosts(rr, all);
  AddPeaksPricedAgainst(o, s);
}

void AddIdleGaps(const RankReport& rr, Section& s) {
  const analyze::IdleGapStats& g = rr.idle_gaps;
  Row& head = s.AddRow("idle_gaps", "idle gaps");
  head.fields = {F("gaps", "gaps", Count(g.gaps)),
                 F("idle_ns", "idle in the steps", Ns(g.idle_ns)),
                 F("long_gaps", "≥ 1 ms", Count(g.long_gaps)),
                 F("long_gap_ns", "", Ns(g.long_gap_ns)),
                 Detail("long_gap_threshold_ns", "long-gap threshold", Ns(analyze::kLongIdleGapNs)),
                 Detail("range_start_ns", "from", Value::Int(g.range_start_ns, Unit::kTimestamp)),
                 Detail("range_end_ns", "to", Value::Int(g.range_end_ns, Unit::kTimestamp)),
                 Detail("steady_steps", "steady steps", Count(g.steady_steps))};
  head.detail = g.gaps == 0;
  Row& causes = s.AddRow("idle_gap_causes", "");
  causes.fields = {
      F("long_gaps_after_sync", "of these after a sync", Count(g.long_gaps_after_sync)),
      F("long_gap_dataloader_ns", "DataLoader covers", Ns(g.long_gap_dataloader_ns)),
      F("long_gap_compile_allocator_ns", "compiling or allocating",
        Ns(g.long_gap_compile_allocator_ns)),
      F("unexplained_per_steady_step_ns", "unexplained per steady step",
        Ns(g.unexplained_ns_per_steady_step)),
      Detail("long_gap_after_sync_ns", "after a sync", Ns(g.long_gap_after_sync_ns)),
      Detail("long_gaps_dataloader", "DataLoader gaps", Count(g.long_gaps_dataloader)),
      Detail("unexplained_ns", "unexplained", Ns(g.unexplained_ns)),
      Detail("longest_unexplained_ns", "longest unexplained", Ns(g.longest_unexplained_ns))};
  causes.detail = g.long_gaps == 0;
  Row& nsight = s.AddRow("nsight_gaps", "");
  nsight.fields = {F("nsight_gaps", "gaps > 500 ms (Nsight gpu_gaps)", Count(g.nsight_gaps)),
                   F("nsight_longest_gap_ns", "longest", Ns(g.nsight_longest_gap_ns))};
  nsight.detail = g.nsight_gaps == 0;
  Table& hist = s.AddTable("idle_gap_histogram", "idle gaps by length",
                           {{"below_ns", "shorter than"}, {"count", "gaps"}, {"total_ns", "idle"}});
  hist.text_rows = 0;
  for (size_t b = 0; b < analyze::kIdleGapBuckets; ++b)
    hist.rows.push_back({b < analyze::kIdleGapBucketBoundsNs.size()
                             ? Ns(analyze::kIdleGapBucketBoundsNs[b])
                             : Value::Na(Unit::kNanos),
                         Count(g.histogram_count[b]), Ns(g.histogram_ns[b])});
  Table& longest = s.AddTable("longest_idle_gaps", "longest idle gaps",
                              {{"gap", "#"},
                               {"duration_ns", "idle"},
                               {"step", "step"},
                               {"claim", "explained by"},
                               {"start_offset_ns", "start (from trace start)"},
                               {"steady", "steady"},
                               {"dataloader_ns", "DataLoader"},
                               {"compile_allocator_ns", "compiling or allocating"},
                               {"unexplained_ns", "unexplained"}});
  longest.text_rows = 0;
  Table& gap_ops = s.AddTable(
      "longest_idle_gap_ops", "host ops during the longest idle gaps",
      {{"gap", "gap (# in longest idle gaps)"}, {"op", "op"}, {"overlap_ns", "overlap"}});
  gap_ops.text_rows = 0;
  for (size_t i = 0; i < g.longest.size(); ++i) {
    const analyze::IdleGap& gap = g.longest[i];
    longest.rows.push_back({Count(i), Ns(gap.length()), Value::Count(gap.step),
                            Text(analyze::IdleClaimName(gap.claim)),
                            Ns(gap.start_ns - TraceStartNs(rr.summary)), Value::Bool(gap.steady),
                            Ns(gap.dataloader_ns), Ns(gap.compile_allocator_ns),
                            Ns(gap.unexplained_ns)});
    for (const auto& [name, ns] : gap.host_ops)
      gap_ops.rows.push_back({Count(i), Text(Name(rr.trace, name)), Ns(ns)});
  }
  Table& ops = s.AddTable("idle_gap_host_ops", "host ops during idle gaps",
                          {{"op", "op"}, {"gaps", "gaps"}, {"overlap_ns", "overlap"}});
  ops.text_rows = 0;
  for (const analyze::IdleHostOp& h : g.host_ops)
    ops.rows.push_back({Text(Name(rr.trace, h.name)), Count(h.gaps), Ns(h.overlap_ns)});
  Table& steps = s.AddTable("idle_gaps_per_step", "idle gaps per step",
                            {{"step", "step"},
                             {"steady", "steady"},
                             {"idle_ns", "idle"},
                             {"long_gaps", "≥ 1 ms"},
                             {"unexplained_ns", "unexplained"}});
  steps.text_rows = 0;
  for (const analyze::StepIdleGaps& st : g.steps)
    steps.rows.push_back({Value::Count(st.step), Value::Bool(st.steady), Ns(st.idle_ns),
                          Count(st.long_gaps), Ns(st.unexplained_ns)});
}

// The steady steps' critical path (analyze/step_graph.h) and each fix replayed on their graph
// (whatif/whatif.h): what bounds the step, per step and per category, then what each fix saves
// alone and in the plan.
constexpr const char* kPathLabels[] = {"host",        "launches",      "data wait", "sync",
                                       "GPU compute", "communication", "copies",    "GPU waiting"};
static_assert(std::size(kPathLabels) == analyze::kPathCategoryCount);

// The critical path of each step as a timeline (HTML draws it): at most kTimelineLanes steps,
// each lane from the step's start; stretches shorter than 1/kTimelineResolution of the step are
// merged, runs of them drawn in the category that has most of their time (a launch-bound step
// alternates host and launch every few µs: thousands of slivers no eye tells apart). The
// per-step table keeps the exact sums.
constexpr size_t kTimelineLanes = 8;
constexpr int64_t kTimelineResolution = 500;

void AddCriticalPathTimeline(const analyze::CriticalPath& cp, Section& s) {
  render::Chart& chart = s.AddChart("critical_path_timeline", "critical path of each step, in time",
                                    render::Chart::Kind::kTimeline, Unit::kNanos);
  chart.x_unit = Unit::kNanos;
  for (size_t c = 0; c < analyze::kPathCategoryCount; ++c)
    chart.series.push_back(
        {analyze::PathCategoryName(static_cast<analyze::PathCategory>(c)), kPathLabels[c], {}});
  size_t seg = 0;
  const size_t lanes = std::min(kTimelineLanes, cp.step_start_ns.size());
  for (size_t k = 0; k < lanes; ++k) {
    const int64_t begin = cp.step_start_ns[k], end = cp.step_end_ns[k];
    const uint32_t lane = static_cast<uint32_t>(chart.categories.size());
    chart.categories.push_back("ProfilerStep#" + std::to_string(cp.step_numbers[k]));
    const int64_t res = std::max<int64_t>(1, (end - begin) / kTimelineResolution);
    analyze::PathArray run{};  // a run of short stretches: time per category
    int64_t run_start = 0, run_end = 0;
    auto emit = [&](int64_t a, int64_t b, size_t category) {
      if (!chart.segments.empty() && chart.segments.back().lane == lane &&
          chart.segments.back().series == category &&
          chart.segments.back().end == static_cast<double>(a - begin)) {
        chart.segments.back().end = static_cast<double>(b - begin);
        return;
      }
      chart.segments.push_back({lane, static_cast<uint32_t>(category),
                                static_cast<double>(a - begin), static_cast<double>(b - begin)});
    };
    auto flush = [&] {
      if (run_end <= run_start) return;
      emit(run_start, run_end,
           static_cast<size_t>(std::max_element(run.begin(), run.end()) - run.begin()));
      run.fill(0);
      run_start = run_end;
    };
    while (seg < cp.segments.size() && cp.segments[seg].end_ns <= begin) ++seg;
    for (size_t i = seg; i < cp.segments.size() && cp.segments[i].start_ns < end; ++i) {
      const int64_t a = std::max(cp.segments[i].start_ns, begin),
                    b = std::min(cp.segments[i].end_ns, end);
      if (b <= a) continue;
      const size_t category = static_cast<size_t>(cp.segments[i].category);
      if (b - a >= res) {
        flush();
        emit(a, b, category);
        run_start = run_end = b;
        continue;
      }
      if (run_end <= run_start) run_start = a;
      run[category] += b - a;
      run_end = b;
      if (run_end - run_start >= res) flush();
    }
    flush();
  }
}

void AddCriticalPath(const RankReport& rr, Section& s) {
  const analyze::CriticalPath& cp = rr.critical_path;
  if (!cp.built) return;
  const int64_t total = std::accumulate(cp.total_ns.begin(), cp.total_ns.end(), int64_t{0});
  Row& head = s.AddRow("critical_path", "critical path");
  head.fields.push_back(
      F("bound_by", "bound by", Text(kPathLabels[static_cast<size_t>(cp.bound_by)])));
  for (size_t c = 0; c < analyze::kPathCategoryCount; ++c) {
    const std::string name = analyze::PathCategoryName(static_cast<analyze::PathCategory>(c));
    head.fields.push_back(F(name + "_share", kPathLabels[c], ShareOf(cp.total_ns[c], total)));
  }
  for (size_t c = 0; c < analyze::kPathCategoryCount; ++c) {
    const std::string name = analyze::PathCategoryName(static_cast<analyze::PathCategory>(c));
    head.fields.push_back(Detail(name + "_per_step_ns", kPathLabels[c], Ns(cp.per_step_ns[c])));
  }
  head.fields.push_back(Detail("graph_nodes", "graph nodes", Count(cp.nodes)));
  head.fields.push_back(Detail("graph_edges", "graph edges", Count(cp.edges)));
  head.fields.push_back(Detail("steps", "steps", Count(cp.steps)));
  head.fields.push_back(
      Detail("launch_latency_ns", "launch → start (typical)", Ns(cp.launch_latency_ns)));
  head.fields.push_back(Detail("stream_gap_ns", "kernel → kernel (typical)", Ns(cp.stream_gap_ns)));
  head.fields.push_back(
      Detail("launch_queue_depth", "launch queue depth (0: never full)", Count(cp.queue_depth)));
  head.fields.push_back(
      Detail("recorded_waits", "waits read from cuda_sync records", Count(cp.recorded_waits)));
  head.fields.push_back(Detail("inferred_cross_stream_waits",
                               "cross-stream waits inferred (no records)",
                               Count(cp.cross_stream_edges)));
  head.fields.push_back(
      Detail("replayed_step_ns", "unchanged replay's step", Ns(cp.replayed_step_ns)));
  std::vector<Column> cols = {{"step", "step"}, {"duration_ns", "duration"}};
  for (size_t c = 0; c < analyze::kPathCategoryCount; ++c)
    cols.push_back(
        {std::string(analyze::PathCategoryName(static_cast<analyze::PathCategory>(c))) + "_ns",
         kPathLabels[c]});
  Table& steps = s.AddTable("critical_path_steps", "critical path per step", cols);
  steps.text_rows = 0;
  render::Chart& chart =
      s.AddChart("critical_path_chart", "critical path per step, by what bounds it",
                 render::Chart::Kind::kStackedBars, Unit::kNanos);
  for (size_t c = 0; c < analyze::kPathCategoryCount; ++c)
    chart.series.push_back(
        {analyze::PathCategoryName(static_cast<analyze::PathCategory>(c)), kPathLabels[c], {}});
  for (size_t k = 0; k < cp.step_ns.size(); ++k) {
    const analyze::PathArray& a = cp.step_ns[k];
    std::vector<Value> row = {Value::Count(cp.step_numbers[k]),
                              Ns(std::accumulate(a.begin(), a.end(), int64_t{0}))};
    for (size_t c = 0; c < analyze::kPathCategoryCount; ++c) {
      row.push_back(Ns(a[c]));
      chart.series[c].values.push_back(static_cast<double>(a[c]));
    }
    steps.rows.push_back(std::move(row));
    chart.categories.push_back("ProfilerStep#" + std::to_string(cp.step_numbers[k]));
  }
  AddCriticalPathTimeline(cp, s);

  const whatif::WhatIfResults& w = rr.whatif;
  if (!w.replayed) return;
  Row& plan = s.AddRow("whatif_plan", "what-if");
  plan.fields = {
      F("step_ns", "step", Ns(w.step_ns)),
      F("planned_step_ns", "after the plan", Ns(w.planned_step_ns)),
      F("planned_saving_share", "saves", ShareOf(w.step_ns - w.planned_step_ns, w.step_ns)),
      F("fixes", "fixes", Count(w.plan.size())),
      F("bound_after", "then bound by", Text(kPathLabels[static_cast<size_t>(w.bound_after)]))};
  plan.note = "(replayed on the steps' dependency graph)";
  Table& t = s.AddTable("whatif", "each fix replayed (alone, and in the plan by value)",
                        {{"fix", "fix"},
                         {"change", "change", true},
                         {"saving_alone_ns", "alone"},
                         {"saving_alone_share", "of step"},
                         {"plan_order", "plan #"},
                         {"increment_ns", "in the plan"},
                         {"step_after_ns", "step after"},
                         {"finding", "finding", true},
                         {"assumption", "assumption", true}});
  for (const whatif::FixResult& f : w.fixes) {
    const whatif::WhatIf* wi = whatif::FindWhatIf(f.id);
    const whatif::PlanEntry* p = w.Planned(f.id);
    const int64_t order = p ? (p - w.plan.data()) + 1 : 0;
    t.rows.push_back({Text(f.id), Text(wi->fix), Ns(f.saving_ns), ShareOf(f.saving_ns, w.step_ns),
                      p ? Value::Count(order) : Value::Na(Unit::kCount),
                      p ? Ns(p->increment_ns) : Value::Na(Unit::kNanos),
                      p ? Ns(p->step_after_ns) : Value::Na(Unit::kNanos), Text(wi->rule),
                      Text(wi->assumption)});
  }
  // In plan order first, then the rest by saving alone.
  std::stable_sort(t.rows.begin(), t.rows.end(),
                   [](const std::vector<Value>& a, const std::vector<Value>& b) {
                     const bool pa = !a[4].is_na(), pb = !b[4].is_na();
                     if (pa != pb) return pa;
                     if (pa) return a[4].i < b[4].i;
                     return a[2].i > b[2].i;
                   });
}

// One steady step in time (analyze/step_timeline.h), HTML only: a lane per CPU thread (and its
// CUDA runtime calls) and per GPU stream, spans coloured by kind, named on hover; times from the
// step's start, the step's place in the trace said once.
constexpr const char* kTimelineLabels[] = {"CPU op",        "DataLoader",     "CUDA launch",
                                           "sync",          "compute kernel", "communication",
                                           "memory kernel", "copy",           "GPU idle"};
static_assert(std::size(kTimelineLabels) == analyze::kTimelineKindCount);

// The critical path through the drawn step (analyze/step_graph.h) as the timeline's last lane,
// each stretch in the colour of the work it is (a DataLoader wait as DataLoader, GPU waiting as
// GPU idle); stretches under the timeline's resolution (1/kTimelineResolution of the step) join
// the one before.
void AddCriticalPathLane(const analyze::CriticalPath& cp, const analyze::StepTimeline& tl,
                         render::Chart& chart) {
  using analyze::PathCategory;
  using analyze::TimelineKind;
  if (!cp.built) return;
  auto kind = [](PathCategory c) {
    switch (c) {
      case PathCategory::kHostCompute:
        return TimelineKind::kHostOp;
      case PathCategory::kLaunchOverhead:
        return TimelineKind::kLaunch;
      case PathCategory::kDataWait:
        return TimelineKind::kDataLoader;
      case PathCategory::kSync:
        return TimelineKind::kSync;
      case PathCategory::kGpuCompute:
        return TimelineKind::kCompute;
      case PathCategory::kCommunication:
        return TimelineKind::kCommunication;
      case PathCategory::kCopy:
        return TimelineKind::kCopy;
      default:
        return TimelineKind::kGpuIdle;
    }
  };
  const int64_t res =
      std::max<int64_t>(1, (tl.end_ns - tl.start_ns) / analyze::kTimelineResolution);
  const uint32_t lane = static_cast<uint32_t>(chart.categories.size());
  const size_t first = chart.segments.size();
  for (const analyze::PathSegment& p : cp.segments) {
    const int64_t a = std::max(p.start_ns, tl.start_ns), b = std::min(p.end_ns, tl.end_ns);
    if (b <= a) continue;
    const double from = static_cast<double>(a - tl.start_ns),
                 to = static_cast<double>(b - tl.start_ns);
    const auto series = static_cast<uint32_t>(kind(p.category));
    if (chart.segments.size() > first && (b - a < res || chart.segments.back().series == series)) {
      chart.segments.back().end = to;
      continue;
    }
    chart.segments.push_back({lane, series, from, to});
    chart.segment_labels.push_back(std::string("critical path: ") +
                                   kPathLabels[static_cast<size_t>(p.category)]);
  }
  if (chart.segments.size() > first) chart.categories.push_back("critical path");
}

void AddStepTimeline(const RankReport& rr, Section& s) {
  const analyze::StepTimeline& tl = rr.step_timeline;
  s.views = render::kViewHtml;
  if (tl.lanes.empty()) {
    s.AddText("none", "No step with device or host work to draw.");
    return;
  }
  s.AddText(
      "what",
      tl.step_name + " (the steady step of median duration), " +
          render::FormatDuration(tl.end_ns - tl.start_ns) + ", starting " +
          render::FormatDuration(tl.start_ns - TraceStartNs(rr.summary)) +
          " after the trace's first event; the last lane is the step's critical path. Hover a "
          "span for what it is; zoom "
          "below. The whole trace opens in Perfetto (ui.perfetto.dev, Open trace "
          "file) or chrome://tracing, offline.");
  render::Chart& chart = s.AddChart("timeline", "", render::Chart::Kind::kTimeline, Unit::kNanos);
  chart.x_unit = Unit::kNanos;
  for (size_t k = 0; k < analyze::kTimelineKindCount; ++k)
    chart.series.push_back(
        {analyze::TimelineKindName(static_cast<analyze::TimelineKind>(k)), kTimelineLabels[k], {}});
  chart.categories = tl.lanes;
  for (const analyze::TimelineSpan& sp : tl.spans) {
    chart.segments.push_back({sp.lane, static_cast<uint32_t>(sp.kind),
                              static_cast<double>(sp.start_ns), static_cast<double>(sp.end_ns)});
    std::string label =
        sp.name == kEmptyString ? std::string() : analyze::ShortKernelName(Name(rr.trace, sp.name));
    if (sp.merged > 1)
      label += (label.empty() ? "" : " ") + ("+" + std::to_string(sp.merged - 1) + " more");
    chart.segment_labels.push_back(std::move(label));
  }
  AddCriticalPathLane(rr.critical_path, tl, chart);
}

void AddAdvice(const advise::Advice& a, Section& s) {
  s.AddRow("verdict", "verdict").fields = {F("verdict", "", Text(a.verdict))};
  for (const advise::Finding& f : a.findings) s.items.emplace_back(advise::ToDocumentFinding(f));
}

}  // namespace

render::Section BuildRankSection(const RankReport& rr, size_t index) {
  const analyze::TraceSummary& r = rr.summary;
  std::string title = r.rank >= 0 ? "rank " + std::to_string(r.rank) : std::string("rank ?");
  if (r.world_size > 0) title += " of " + std::to_string(r.world_size);
  if (r.rank >= 0) title += std::string(" (from ") + RankSourceName(r.rank_source) + ")";
  title += "  " + r.path;
  Section s{r.rank >= 0 ? "rank_" + std::to_string(r.rank) : "input_" + std::to_string(index),
            title,
            render::kViewAll,
            false,
            false,
            {},
            {}};
  s.AddRow("identity", "rank").detail = true;
  std::get<Row>(s.items.back()).fields = {
      F("rank", "rank", r.rank >= 0 ? Value::Count(r.rank) : Value::Na(Unit::kCount)),
      F("world_size", "of",
        r.world_size > 0 ? Value::Count(r.world_size) : Value::Na(Unit::kCount)),
      F("rank_source", "from", Text(RankSourceName(r.rank_source))),
      F("path", "file", Text(r.path))};
  // Groups: headed sections in HTML and JSON; in text they read as one rank's lines.
  // Detail groups start collapsed in HTML (the table of contents lists them all).
  auto group = [&s](const char* key, const char* heading, bool collapsed = false) -> Section& {
    Section& g = s.AddSection(key, heading);
    g.text_inline = true;
    g.collapsed = collapsed;
    return g;
  };
  AddAdvice(rr.advice, group("findings", "verdict and findings"));
  AddCriticalPath(rr, group("critical_path", "critical path and what-if"));
  AddInputs(r, group("inputs", "inputs", true));
  AddCapture(r, group("capture", "what this capture can tell", true));
  AddGpuTime(rr.gpu_time, group("gpu_time", "GPU time"));
  AddSteps(rr.steps, TraceStartNs(rr.summary), rr.summary.format, group("steps", "step time"));
  AddStepTimeline(rr, group("timeline", "one step in time"));
  AddKernels(rr.kernels, group("kernels", "kernels"));
  AddLaunches(rr, group("launches", "launches", true));
  AddCopies(rr.copies, group("copies", "copies", true));
  AddSync(rr, group("sync", "synchronisation", true));
  AddMemory(rr.memory, group("memory", "memory", true));
  AddOccupancy(rr.occupancy, group("occupancy", "occupancy", true));
  AddIdleGaps(rr, group("idle_gaps", "idle gaps", true));
  AddOpShapes(rr, group("ops", "ops by input shape", true));
  AddOpCosts(rr, group("op_costs", "every op priced", true));
  // `analyze TRACE --monitor FILE`: the recording's samples within this trace's span.
  if (rr.monitor)
    s.sections.push_back(
        BuildMonitorBesideSection(*rr.monitor, r.path, rr.steps.mean_steady_step_ns));
  return s;
}

render::Document BuildDocument(const Report& report, const JobOptions& options) {
  // One path for every analyze document: the ranks' summaries, then the job document (what
  // `reduce` prints from summary files).
  std::vector<RankSummary> summaries;
  summaries.reserve(report.ranks.size());
  for (size_t i = 0; i < report.ranks.size(); ++i)
    summaries.push_back(SummarizeRank(report.ranks[i], i));
  return BuildJobDocument(summaries, report.failures, options);
}

}  // namespace gpuscope::report
