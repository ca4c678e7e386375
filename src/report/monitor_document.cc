#include "report/monitor_document.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "base/enum_names.h"
#include "render/build.h"

namespace gpuscope::report {

namespace {

using namespace render::build;  // the document-builder vocabulary
using analyze::MonitorCpu;
using analyze::MonitorGpu;
using analyze::MonitorStats;

// A metric the source may lack: shown when present; n/a in JSON (and with --verbose) otherwise,
// so the key is always there and a missing value never reads as 0.
template <typename T>
Field Opt(std::string key, std::string label, const std::optional<T>& v, Unit unit) {
  if (!v) return Detail(std::move(key), std::move(label), Value::Na(unit));
  if constexpr (std::is_floating_point_v<T>)
    return F(std::move(key), std::move(label), Value::Number(*v, 0, unit));
  else
    return F(std::move(key), std::move(label), UnsignedBytes(*v));
}

constexpr EnumNames<monitor::SourceKind, 6> kSourceNames(
    {monitor::SourceKind::kLive, "live"}, {monitor::SourceKind::kRecording, "recording"},
    {monitor::SourceKind::kNvidiaSmiCsv, "nvidia_smi_csv"},
    {monitor::SourceKind::kNvidiaSmiDmon, "nvidia_smi_dmon"},
    {monitor::SourceKind::kDcgmiDmon, "dcgmi_dmon"},
    {monitor::SourceKind::kDcgmExporter, "dcgm_exporter"});

const char* SourceName(monitor::SourceKind s) { return CNameOf(kSourceNames, s); }

void AddRunRows(const MonitorStats& s, Section* out) {
  Row& source = out->AddRow("source", "source");
  source.detail = true;
  source.fields = {F("source", "", Value::Text(SourceName(s.source))),
                   F("path", "file", Value::Text(s.source_path))};
  if (!s.command.empty()) {
    std::string cmd;
    for (const std::string& a : s.command) cmd += (cmd.empty() ? "" : " ") + a;
    Row& row = out->AddRow("command", "command");
    row.fields = {F("command", "", Value::Text(cmd)),
                  s.exit_code ? F("exit_code", "exit code", Value::Int(*s.exit_code))
                              : Detail("exit_code", "exit code", Value::Na())};
  }
  Row& span = out->AddRow("span", "span");
  span.fields = {F("duration_ns", "", Value::Nanos(s.duration_ns)),
                 F("samples", "samples", Count(s.samples)),
                 s.interval_ns > 0 ? F("interval_ns", "every", Value::Nanos(s.interval_ns))
                                   : Detail("interval_ns", "every", Value::Na(Unit::kNanos)),
                 F("warmup_ns", "warm-up", Value::Nanos(s.warmup_ns)),
                 F("steady_ns", "steady", Value::Nanos(s.steady_ns)),
                 s.teardown_ns > 0 ? F("teardown_ns", "teardown", Value::Nanos(s.teardown_ns))
                                   : Detail("teardown_ns", "teardown", Value::Nanos(0)),
                 Detail("start_ns", "start", Value::Int(s.start_ns, Unit::kTimestamp))};
}

// `phases`: the run has a warm-up or a teardown, so the steady utilisation and the whole run's
// differ; `warmup`: it has a warm-up.
void AddGpuRow(const MonitorGpu& g, bool phases, bool warmup, Section* out) {
  Row& row = out->AddRow("gpu_" + std::to_string(g.index), "GPU " + std::to_string(g.index));
  if (!g.name.empty()) row.fields.push_back(F("name", "", Value::Text(g.name)));
  row.fields.push_back(g.util_mean_pct ? F("util_mean_pct", "util", Percent(*g.util_mean_pct))
                                       : F("util_mean_pct", "util", Value::Na(Unit::kPercent)));
  Field run = Opt("util_mean_run_pct", "whole run", g.util_mean_run_pct, Unit::kPercent);
  run.detail = run.detail || !phases;
  row.fields.push_back(std::move(run));
  Field warm = Opt("util_mean_warmup_pct", "warm-up", g.util_mean_warmup_pct, Unit::kPercent);
  warm.detail = warm.detail || !warmup;
  row.fields.push_back(std::move(warm));
  row.fields.push_back(
      Opt("mem_util_mean_pct", "memory util", g.mem_util_mean_pct, Unit::kPercent));
  row.fields.push_back(
      Opt("mem_used_peak_bytes", "memory peak", g.mem_used_peak_bytes, Unit::kBytes));
  // "memory peak 22.00 GB · of 80.00 GB"; without the peak, "memory 80.00 GB".
  row.fields.push_back(Opt("mem_total_bytes", g.mem_used_peak_bytes ? "of" : "memory",
                           g.mem_total_bytes, Unit::kBytes));
  row.fields.push_back(Opt("tree_mem_peak_bytes", "this job", g.tree_mem_peak_bytes, Unit::kBytes));
  row.fields.push_back(Opt("power_mean_w", "power", g.power_mean_w, Unit::kWatts));
  row.fields.push_back(Opt("power_limit_w", g.power_mean_w ? "limit" : "power limit",
                           g.power_limit_w, Unit::kWatts));
  row.fields.push_back(Opt("sm_clock_mean_mhz", "SM", g.sm_clock_mean_mhz, Unit::kMegahertz));
  row.fields.push_back(Opt("temperature_max_c", "max", g.temperature_max_c, Unit::kCelsius));
  row.fields.push_back(
      g.throttled_share
          ? Detail("throttled_share", "slowed down", Value::Share(*g.throttled_share, 0))
          : Detail("throttled_share", "slowed down", Value::Na(Unit::kShare)));
  // DCGM profiling metrics: only DCGM sources have them.
  row.fields.push_back(
      Opt("sm_active_mean_pct", "SM active", g.sm_active_mean_pct, Unit::kPercent));
  row.fields.push_back(
      Opt("sm_occupancy_mean_pct", "SM occupancy", g.sm_occupancy_mean_pct, Unit::kPercent));
  row.fields.push_back(
      Opt("tensor_active_mean_pct", "tensor active", g.tensor_active_mean_pct, Unit::kPercent));
  row.fields.push_back(
      Opt("dram_active_mean_pct", "DRAM active", g.dram_active_mean_pct, Unit::kPercent));
  row.fields.push_back(g.energy_j
                           ? Detail("energy_wh", "energy Wh", Value::Number(*g.energy_j / 3600, 1))
                           : Detail("energy_wh", "energy Wh", Value::Na()));
  row.fields.push_back(Detail("samples", "samples", Count(g.samples)));
}

// The spread between the GPUs, and the energy of all of them.
void AddBalanceAndEnergy(const MonitorStats& s, Section* out) {
  if (s.balance) {
    const analyze::GpuBalance& b = *s.balance;
    out->AddRow("balance", "balance").fields = {
        F("busiest_gpu", "busiest GPU", Count(b.busiest)),
        F("busiest_util_mean_pct", "", Percent(b.busiest_pct)),
        F("least_gpu", "least busy GPU", Count(b.least)),
        F("least_util_mean_pct", "", Percent(b.least_pct)),
        F("spread_pct", "spread", Percent(b.spread_pct))};
  }
  if (s.energy_j) {
    bool counter = false;
    for (const MonitorGpu& g : s.gpus) counter = counter || g.energy_from_counter;
    out->AddRow("energy", "energy").fields = {
        F("energy_wh", "Wh", Value::Number(*s.energy_j / 3600, 1)),
        s.energy_per_hour_wh
            ? F("energy_per_hour_wh", "Wh per hour", Value::Number(*s.energy_per_hour_wh, 1))
            : Detail("energy_per_hour_wh", "Wh per hour", Value::Na()),
        Detail("energy_source", "from", Value::Text(counter ? "energy counter" : "power × time"))};
  }
}

void AddCpuRows(const MonitorCpu& c, Section* out) {
  Row& row = out->AddRow("cpu", "CPU");
  // Below half a percent the ended workers' share rounds to 0 %: detail.
  Field ended = F("workers_ended_cpu_mean_pct", "of it in workers that ended between samples",
                  Percent(c.workers_ended_mean_pct));
  ended.detail = c.workers_ended_mean_pct < advise::kEndedWorkersWorthSayingPct;
  row.fields = {
      F("main_process", "main",
        Value::Text(c.main_name + " (pid " + std::to_string(c.main_pid) + ")")),
      Detail("main_pid", "pid", Count(c.main_pid)),
      F("main_cpu_mean_pct", "CPU", Percent(c.main_mean_pct)),
      F("workers", "workers", Count(c.workers.size())),
      F("workers_cpu_mean_pct", "workers' CPU", Percent(c.workers_mean_pct)), std::move(ended),
      F("tree_cpu_mean_pct", "tree CPU", Percent(c.tree_mean_pct)),
      // CPU-seconds to the 10 ms clock tick /proc counts CPU time in: the total is a whole number
      // of ticks within microseconds, so `run` and its read-back (CPU % kept to 3 decimals) show
      // the same digits, where 0.1 s would round a 0.55 s total either way.
      F("tree_cpu_s", "CPU-s in all", Value::Number(c.tree_cpu_s, 2)),
      c.system_busy_mean_pct
          ? F("system_busy_mean_pct", "system busy", Percent(*c.system_busy_mean_pct))
          : Detail("system_busy_mean_pct", "system busy", Value::Na(Unit::kPercent)),
      c.system_busy_mean_pct ? F("cores", "cores", Count(c.cores))
                             : Detail("cores", "cores", Count(c.cores)),
      F("peak_rss_bytes", "RSS peak", UnsignedBytes(c.peak_rss_bytes)),
      c.read_bytes ? F("read_bytes", "read", UnsignedBytes(*c.read_bytes))
                   : Detail("read_bytes", "read", Value::Na(Unit::kBytes))};
  render::Table& t =
      out->AddTable("workers", "workers of the main process",
                    {{"pid", "pid"}, {"name", "name"}, {"cpu_mean_pct", "CPU (steady mean)"}});
  t.text_rows = 0;
  for (const analyze::MonitorWorker& w : c.workers)
    t.rows.push_back({Count(w.pid), Text(w.name), Percent(w.cpu_mean_pct)});
}

// The charts' series as one table, a row per sample (t_ns from the run's start): what --csv
// writes as samples.csv and JSON carries; text and HTML have the charts. A series the source has
// no value for is left out; a missing value is empty.
void AddSamplesTable(const analyze::MonitorSeries& ts, Section* over_time) {
  std::vector<std::pair<std::string, const std::vector<double>*>> series;
  std::vector<Unit> units;
  auto add = [&](std::string key, const std::vector<double>& v, Unit unit) {
    if (std::none_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); })) return;
    series.emplace_back(std::move(key), &v);
    units.push_back(unit);
  };
  for (const analyze::MonitorSeriesGpu& g : ts.gpus) {
    const std::string gpu = "gpu_" + std::to_string(g.index) + "_";
    add(gpu + "util_pct", g.util_pct, Unit::kPercent);
    add(gpu + "mem_used_bytes", g.mem_used_bytes, Unit::kBytes);
    add(gpu + "power_w", g.power_w, Unit::kWatts);
    add(gpu + "sm_clock_mhz", g.sm_clock_mhz, Unit::kMegahertz);
  }
  add("trainer_cpu_pct", ts.main_cpu_pct, Unit::kPercent);
  add("workers_cpu_pct", ts.workers_cpu_pct, Unit::kPercent);
  if (series.empty()) return;
  Section& sec = over_time->AddSection("samples", "samples");
  sec.views = 0;  // JSON and CSV only
  std::vector<render::Column> columns = {{"t_ns", "time"}};
  for (const auto& [key, v] : series) columns.push_back({key, key});
  render::Table& t = sec.AddTable("samples", "samples", std::move(columns));
  t.text_rows = 0;
  for (size_t i = 0; i < ts.t_ns.size(); ++i) {
    std::vector<Value> row = {Value::Nanos(static_cast<int64_t>(ts.t_ns[i]))};
    for (size_t k = 0; k < series.size(); ++k) {
      const std::vector<double>& v = *series[k].second;
      row.push_back(i < v.size() && std::isfinite(v[i]) ? Value::Number(v[i], -1, units[k])
                                                        : Value::Na(units[k]));
    }
    t.rows.push_back(std::move(row));
  }
}

// The run over time (HTML draws the charts; JSON carries them): GPU utilisation, memory, power
// and SM clock per GPU, the trainer's and its workers' CPU, the steady phase shaded. A chart the
// source has no data for is left out.
void AddOverTime(const MonitorStats& s, Section* out) {
  const analyze::MonitorSeries& ts = s.series;
  if (ts.t_ns.size() < 2) return;
  Section& sec = out->AddSection("over_time", "over time");
  const std::vector<double> band = {static_cast<double>(s.warmup_ns),
                                    static_cast<double>(s.warmup_ns + s.steady_ns)};
  auto any = [](const std::vector<double>& v) {
    return std::any_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  auto chart = [&](const char* key, const char* title, Unit unit,
                   std::vector<render::Series> series) {
    std::erase_if(series, [&](const render::Series& x) { return !any(x.values); });
    if (series.empty()) return;
    render::Chart& c = sec.AddChart(key, title, render::Chart::Kind::kLines, unit);
    c.x_unit = Unit::kNanos;
    c.x = ts.t_ns;
    c.series = std::move(series);
    if (s.warmup_ns > 0 || s.teardown_ns > 0) c.x_band = band;
  };
  using Member = std::vector<double> analyze::MonitorSeriesGpu::*;
  auto per_gpu = [&](Member m) {
    std::vector<render::Series> out_series;
    for (const analyze::MonitorSeriesGpu& g : ts.gpus)
      out_series.push_back(
          {"gpu_" + std::to_string(g.index), "GPU " + std::to_string(g.index), g.*m});
    return out_series;
  };
  chart("gpu_util_chart", "GPU utilisation (steady phase shaded)", Unit::kPercent,
        per_gpu(&analyze::MonitorSeriesGpu::util_pct));
  chart("gpu_memory_chart", "GPU memory used", Unit::kBytes,
        per_gpu(&analyze::MonitorSeriesGpu::mem_used_bytes));
  chart("gpu_power_chart", "GPU power", Unit::kWatts, per_gpu(&analyze::MonitorSeriesGpu::power_w));
  chart("gpu_clock_chart", "SM clock", Unit::kMegahertz,
        per_gpu(&analyze::MonitorSeriesGpu::sm_clock_mhz));
  if (!ts.main_cpu_pct.empty())
    chart("cpu_chart", "CPU: the trainer and its workers (% of a core)", Unit::kPercent,
          {{"trainer_pct", "trainer", ts.main_cpu_pct},
           {"workers_pct", "workers", ts.workers_cpu_pct}});
  AddSamplesTable(ts, &sec);
}

void AddNotes(const MonitorStats& s, Section* out) {
  for (size_t i = 0; i < s.notes.size(); ++i)
    out->AddRow("note_" + std::to_string(i), "note").fields = {
        F("note", "", Value::Text(s.notes[i]))};
  if (s.malformed_lines == 0) return;
  out->AddRow("skipped", "skipped").fields = {
      F("malformed_lines", "malformed lines", Count(s.malformed_lines))};
  for (size_t i = 0; i < s.malformed_examples.size(); ++i)
    out->AddRow("malformed_example_" + std::to_string(i), "").fields = {
        F("example", "", Value::Text(s.malformed_examples[i]))};
}

}  // namespace

std::string MonitorTitle(const MonitorStats& s) {
  std::string head = "gpuscope monitor · ";
  switch (s.source) {
    case monitor::SourceKind::kLive:
      return head + "run";
    case monitor::SourceKind::kRecording:
      return head + "recording " + s.source_path;
    case monitor::SourceKind::kNvidiaSmiCsv:
      return head + "nvidia-smi CSV log " + s.source_path;
    case monitor::SourceKind::kNvidiaSmiDmon:
      return head + "nvidia-smi dmon log " + s.source_path;
    case monitor::SourceKind::kDcgmiDmon:
      return head + "dcgmi dmon log " + s.source_path;
    case monitor::SourceKind::kDcgmExporter:
      return head + "dcgm-exporter metrics " + s.source_path;
  }
  return head;
}

void AddMonitorItems(const MonitorStats& s, const advise::MonitorAdvice& advice, Section* out) {
  AddRunRows(s, out);
  if (!s.has_gpu)
    out->AddRow("gpu_none", "GPU").fields = {
        F("gpu_unavailable", "none —",
          Value::Text(s.gpu_unavailable.empty() ? "no GPU samples" : s.gpu_unavailable))};
  for (const MonitorGpu& g : s.gpus)
    AddGpuRow(g, s.warmup_ns > 0 || s.teardown_ns > 0, s.warmup_ns > 0, out);
  AddBalanceAndEnergy(s, out);
  if (s.cpu) AddCpuRows(*s.cpu, out);
  Row& verdict = out->AddRow("verdict", "verdict");
  verdict.fields = {
      F("verdict", "", Value::Text(advice.verdict)),
      Detail("gpu_util_mean_pct", "steady GPU util over the GPUs",
             s.util_mean_pct ? Percent(*s.util_mean_pct) : Value::Na(Unit::kPercent))};
  for (const advise::MonitorFinding& f : advice.findings)
    out->items.emplace_back(advise::ToDocumentFinding(f));
  AddNotes(s, out);
  AddOverTime(s, out);
}

render::Document BuildRunDocument(const MonitorStats& stats, const advise::MonitorAdvice& advice) {
  render::Document doc;
  doc.schema = "gpuscope.run";
  doc.title = MonitorTitle(stats);
  Section& s = doc.AddSection("monitor", "");
  AddMonitorItems(stats, advice, &s);
  return doc;
}

render::Document RunDocument(const monitor::Recording& recording) {
  const analyze::MonitorStats stats = analyze::ComputeMonitorStats(recording);
  return BuildRunDocument(stats, advise::AdviseMonitor(stats));
}

render::Section BuildMonitorBesideSection(const analyze::MonitorBeside& m,
                                          const std::string& trace_path, int64_t step_ns) {
  Section s{"monitor",
            "monitor " + m.stats.source_path + " within " + trace_path,
            render::kViewAll,
            false,
            false,
            {},
            {}};
  const char* const kAlignment[] = {"aligned", "no_events", "not_wall_clock", "no_overlap"};
  Row& row = s.AddRow("alignment", "lined up");
  row.detail = true;
  row.fields = {F("alignment", "", Value::Text(kAlignment[static_cast<int>(m.alignment)])),
                F("trace_start_ns", "trace", Value::Int(m.span.start_ns, Unit::kTimestamp)),
                F("trace_end_ns", "–", Value::Int(m.span.end_ns, Unit::kTimestamp)),
                F("samples_start_ns", "samples", Value::Int(m.samples_start_ns, Unit::kTimestamp)),
                F("samples_end_ns", "–", Value::Int(m.samples_end_ns, Unit::kTimestamp))};
  switch (m.alignment) {
    case analyze::MonitorAlignment::kNoEvents:
      s.AddText("no_events", "no events in the trace: nothing to line up");
      break;
    case analyze::MonitorAlignment::kNotWallClock:
      s.AddText("not_wall_clock", "the trace's timestamps are not wall-clock time: cannot line up");
      break;
    case analyze::MonitorAlignment::kNoOverlap:
      s.AddText("no_overlap",
                fmt::format("no monitor sample within the trace's span (trace {:.3f}–{:.3f} s, "
                            "monitor {:.3f}–{:.3f} s, unix time): a different run?",
                            m.span.start_ns / 1e9, m.span.end_ns / 1e9, m.samples_start_ns / 1e9,
                            m.samples_end_ns / 1e9));
      break;
    case analyze::MonitorAlignment::kAligned:
      // The monitor rules run here rather than with the trace's advice: the section is all the
      // report holds of them (report::BuildReport keeps the trace's findings only).
      AddMonitorItems(m.stats, advise::AdviseMonitor(m.stats), &s);
      // Wh per hour is the mean power in W: × the step in seconds gives joules per step.
      if (m.stats.energy_per_hour_wh && step_ns > 0)
        s.AddRow("energy_step", "energy per step").fields = {
            F("energy_per_step_j", "J",
              Value::Number(*m.stats.energy_per_hour_wh * static_cast<double>(step_ns) / 1e9, 1)),
            F("step_ns", "mean step", Value::Nanos(step_ns))};
      return s;
  }
  AddNotes(m.stats, &s);
  return s;
}

}  // namespace gpuscope::report
