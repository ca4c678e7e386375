// The "gpuscope.tune" document: what was searched, every trial, the out-of-memory boundaries, and
// the best setting with its gain over the first, its significance and the change to make.
#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <string>

#include "render/build.h"
#include "tune/oom.h"
#include "tune/tune.h"

namespace gpuscope::tune {

namespace {

using namespace render::build;  // the document-builder vocabulary

std::string Join(const std::vector<std::string>& words, const char* sep = " ") {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

std::string ParamSpec(const Param& p) {
  return p.kind == ParamKind::kPow2 ? fmt::format("pow2:{}..{}", p.lo, p.hi) : Join(p.values, ",");
}

Value Throughput(double v) { return Value::Number(v, 2); }

double StdDev(const std::vector<double>& v) {
  if (v.size() < 2) return NAN;
  const double mean = MeanOf(v);
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  return std::sqrt(var / static_cast<double>(v.size() - 1));
}

std::string MetricText(const MetricSpec& m) {
  switch (m.kind) {
    case MetricKind::kRegex:
      return "--metric '" + m.pattern + "' (mean of the first group's values)";
    case MetricKind::kStep:
      return "--step '" + m.pattern + "' (rate of matching lines)";
    case MetricKind::kTraces:
      return "--traces (steady steps of the trial's torch.profiler traces)";
  }
  return "";
}

void AddSearchSection(const TuneResult& r, render::Document* doc) {
  const TuneOptions& o = r.options;
  Section& s = doc->AddSection("search", "search");
  s.AddRow("command", "command").fields = {F("command", "", Text(Join(o.command)))};
  Row& params = s.AddRow("params", "params");
  for (const Param& p : o.params) params.fields.push_back(F(p.name, p.name, Text(ParamSpec(p))));
  const bool time_warmup = o.metric.warmup.ns > 0;
  s.AddRow("metric", "metric").fields = {
      F("metric", "", Text(MetricText(o.metric))),
      F("unit", "unit", Text(r.unit.empty() ? "as printed" : r.unit)),
      o.metric.kind == MetricKind::kTraces ? F("warmup", "warm-up", Text("the first profiler step"))
      : time_warmup ? F("warmup_ns", "warm-up", Value::Nanos(o.metric.warmup.ns))
                    : F("warmup_values", "warm-up values", Count(o.metric.warmup.count))};
  s.AddRow("limits", "limits").fields = {
      F("trial_time_ns", "trial time", Value::Nanos(o.trial_time_ns)),
      F("budget_ns", "budget", Value::Nanos(o.budget_ns)), F("repeat", "repeat", Count(o.repeat)),
      F("plateau_share", "plateau", Value::Share(o.plateau, 0))};
  size_t resumed = 0;
  for (bool b : r.resumed) resumed += b ? 1 : 0;
  s.AddRow("results", "results").fields = {F("results_file", "", Text(o.results_path)),
                                           F("trials", "trials", Count(r.trials.size())),
                                           F("resumed", "of them from the file", Count(resumed)),
                                           F("elapsed_ns", "time", Value::Nanos(r.elapsed_ns))};
  if (!r.stop_reason.empty()) {
    Row& stop = s.AddRow("stopped", "stopped");
    stop.fields = {F("reason", "", Text(r.stop_reason))};
    if (r.search.stopped)
      stop.fields.push_back(
          F("next_setting", "before", Text(SettingText(r.search.stopped_at, o.params))));
    if (!r.search.not_reached.empty())
      stop.fields.push_back(
          F("not_reached", "never tried", Text(Join(r.search.not_reached, ", "))));
  }
  for (size_t i = 0; i < r.notes.size(); ++i)
    s.AddRow("note_" + std::to_string(i), "note").fields = {F("note", "", Text(r.notes[i]))};
  for (size_t i = 0; i < r.skipped_lines.size(); ++i)
    s.AddRow("skipped_" + std::to_string(i), "skipped").fields = {
        F("line", "", Text(r.skipped_lines[i]))};
  if (!r.search.log.empty()) s.AddCode("log", Join(r.search.log, "\n"));
}

void AddTrialsSection(const TuneResult& r, render::Document* doc) {
  const TuneOptions& o = r.options;
  Section& s = doc->AddSection("trials", "trials");
  std::vector<Column> columns = {{"trial", "#"}};
  for (const Param& p : o.params) columns.push_back({"param_" + p.name, p.name});
  columns.push_back({"repeat", "repeat", o.repeat == 1});
  columns.push_back({"throughput", r.unit.empty() ? "throughput" : r.unit});
  columns.push_back({"spread", "± sd"});
  columns.push_back({"gpu_util_mean_pct", "GPU util"});
  columns.push_back({"gpu_mem_peak_bytes", "GPU mem peak"});
  columns.push_back({"tree_cpu_mean_pct", "CPU"});
  columns.push_back({"duration_ns", "time"});
  columns.push_back({"outcome", "outcome"});
  columns.push_back({"note", "note", true});
  columns.push_back({"resumed", "from file", true});
  Table& t = s.AddTable("trials", "", std::move(columns));
  t.text_rows = 1 << 20;  // every trial: the table is the result
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const TrialRecord& tr = r.trials[i];
    std::vector<Value> row = {Count(i + 1)};
    for (const Param& p : o.params) {
      const auto it = tr.params.find(p.name);
      row.push_back(Text(it != tr.params.end() ? it->second : ""));
    }
    row.push_back(Count(tr.repeat + 1));
    const bool has = HasThroughput(tr.outcome);
    row.push_back(has ? Throughput(tr.throughput) : Value::Na());
    const double sd = StdDev(tr.samples);
    row.push_back(has && std::isfinite(sd) ? Throughput(sd) : Value::Na());
    row.push_back(tr.gpu_util_mean_pct ? Percent(*tr.gpu_util_mean_pct)
                                       : Value::Na(Unit::kPercent));
    row.push_back(tr.gpu_mem_peak_bytes ? UnsignedBytes(*tr.gpu_mem_peak_bytes)
                                        : Value::Na(Unit::kBytes));
    row.push_back(tr.tree_cpu_mean_pct ? Percent(*tr.tree_cpu_mean_pct)
                                       : Value::Na(Unit::kPercent));
    row.push_back(Ns(tr.duration_s * 1e9));
    std::string outcome = tr.outcome;
    if (tr.outcome == kOutcomeFailed) outcome += fmt::format(" (exit {})", tr.exit_code);
    if (tr.outcome == kOutcomeOom && !tr.oom_framework.empty())
      outcome += " (" + tr.oom_framework + ")";
    row.push_back(Text(outcome));
    row.push_back(Text(tr.note));
    row.push_back(Value::Bool(i < r.resumed.size() && r.resumed[i]));
    t.rows.push_back(std::move(row));
  }
}

void AddBoundaries(const TuneResult& r, render::Document* doc) {
  if (r.search.boundaries.empty()) return;
  Section& s = doc->AddSection("boundaries", "out-of-memory boundaries");
  for (const Boundary& b : r.search.boundaries) {
    Row& row = s.AddRow("boundary_" + b.param, b.param);
    row.fields = {F("largest_fit", "largest that ran",
                    b.largest_fit > 0 ? Count(b.largest_fit) : Value::Na()),
                  F("first_oom", "smallest out of memory",
                    b.first_oom > 0 ? Count(b.first_oom) : Value::Na()),
                  F("exact", "exact", Value::Bool(b.exact()))};
    if (b.first_oom == 0) row.note = "(no size ran out of memory)";
    // The first size out of memory hit this process's cap, not the GPU's memory: say so.
    for (const TrialRecord& t : r.trials) {
      const auto v = t.params.find(b.param);
      if (t.outcome != kOutcomeOom || v == t.params.end() ||
          v->second != std::to_string(b.first_oom))
        continue;
      if (const std::optional<double> cap = PerProcessCapGib(t.note)) {
        row.note = fmt::format(
            "({} hit this process's cap, {:.2f} GiB allowed by "
            "torch.cuda.set_per_process_memory_fraction, not the GPU's memory)",
            b.first_oom, *cap);
      }
      break;
    }
  }
}

const SettingSummary* Find(const TuneResult& r, const Setting& s) {
  for (const SettingSummary& x : r.settings)
    if (x.setting == s) return &x;
  return nullptr;
}

void AddBest(const TuneResult& r, render::Document* doc) {
  const TuneOptions& o = r.options;
  Section& s = doc->AddSection("best", "best");
  const SettingSummary* best = r.search.have_best ? Find(r, r.search.best) : nullptr;
  const SettingSummary* first = Find(r, r.search.first);
  if (best == nullptr) {
    std::string why = "no setting gave a throughput";
    if (first != nullptr) why += ": the first setting's outcome was " + first->outcome;
    if (first != nullptr && !first->trials.empty() && !r.trials[first->trials.back()].note.empty())
      why += " — " + r.trials[first->trials.back()].note;
    s.AddText("none", why);
    return;
  }
  Row& params = s.AddRow("params", "set");
  for (const Param& p : o.params)
    params.fields.push_back(F(p.name, p.name, Text(r.search.best.at(p.name))));
  size_t samples = best->samples.size();
  s.AddRow("throughput", "throughput").fields = {
      F("throughput", "", Throughput(best->throughput)),
      F("unit", "", Text(r.unit.empty() ? "(as printed)" : r.unit)),
      best->samples.size() >= 2 ? F("spread", "± sd", Throughput(best->spread))
                                : Detail("spread", "± sd", Value::Na()),
      F("trials", "trials", Count(best->trials.size())),
      Detail("samples", "samples", Count(samples))};
  Row& gain = s.AddRow("gain", "over the first");
  gain.fields = {F("first", "", Text(SettingText(r.search.first, o.params))),
                 F("first_throughput", "at", Throughput(first->throughput)),
                 F("gain_share", "gain", Value::Signed(Value::Share(r.gain_share, 1)))};
  std::string verdict;
  if (r.search.best == r.search.first)
    verdict = "the first setting is the best: nothing to change";
  else if (r.p_value < 0)
    verdict = "not tested (no samples)";
  else if (!r.enough_samples)
    verdict = fmt::format("too few samples to tell ({} vs {}; --repeat or a longer --trial-time)",
                          samples, first->samples.size());
  else
    verdict = fmt::format("{} (Mann-Whitney U, {} vs {} samples)",
                          r.significant ? "significant" : "not significant: within noise", samples,
                          first->samples.size());
  gain.fields.push_back(
      F("p_value", "p", r.p_value >= 0 ? Value::Number(r.p_value, 3) : Value::Na()));
  gain.fields.push_back(F("significance", "", Text(verdict)));
  if (r.search.best != r.search.first) {
    std::vector<std::string> changes;
    for (const Param& p : o.params)
      if (r.search.best.at(p.name) != r.search.first.at(p.name))
        changes.push_back(p.name + " " + r.search.first.at(p.name) + " → " +
                          r.search.best.at(p.name));
    s.AddRow("change", "change").fields = {
        F("change", "", Text(Join(changes, ", "))),
        F("command", "run", Text(Join(Substitute(o.command, r.search.best, ""))))};
  }
}

}  // namespace

render::Document BuildTuneDocument(const TuneResult& r) {
  render::Document doc;
  doc.schema = "gpuscope.tune";
  doc.title = "gpuscope tune · " + Join(r.options.command);
  AddSearchSection(r, &doc);
  AddTrialsSection(r, &doc);
  AddBoundaries(r, &doc);
  AddBest(r, &doc);
  return doc;
}

}  // namespace gpuscope::tune
