// The diff as a render::Document: one screen of summary per rank pair, then the detail tables.
// docs/diff.md defines every number; docs/json-schema.md the shape.
#include <algorithm>
#include <cmath>

#include "diff/diff.h"
#include "gpuscope/version.h"
#include "render/build.h"
#include "render/format.h"

namespace gpuscope::diff {

namespace {

using namespace render::build;  // the document-builder vocabulary

Value DeltaNs(double ns) { return Value::Signed(Ns(ns)); }
Value PerStep(double c) {
  return Value::Number(c, std::fabs(c - std::round(c)) < 1e-9 ? 0 : 2, Unit::kCount);
}
Value Pct(double pct) { return Value::Share(pct / 100.0); }  // the analysis speaks 0–100

std::string RankTitle(const RankDiff& r) {
  auto name = [](int32_t x) { return x >= 0 ? std::to_string(x) : std::string("?"); };
  std::string s = "rank " + name(r.before_rank);
  if (r.after_rank != r.before_rank) s += " → rank " + name(r.after_rank);
  if (r.before_device == r.after_device) {
    if (!r.before_device.empty()) s += " · " + r.before_device;
  } else {
    s += " · " + (r.before_device.empty() ? std::string("?") : r.before_device) + " → " +
         (r.after_device.empty() ? std::string("?") : r.after_device);
  }
  return s;
}

const char* CategoryLabel(const std::string& name) {
  if (name == "dataloader") return "DataLoader";
  if (name == "cpu_exec") return "CPU exec";
  if (name == "exposed_communication") return "exposed comm";
  if (name == "exposed_memory") return "exposed memory";
  return name.c_str();
}

// The category whose time per step moved most (the one-line "what changed").
const CategoryDelta* BiggestMove(const std::vector<CategoryDelta>& v) {
  const CategoryDelta* best = nullptr;
  for (const CategoryDelta& c : v)
    if (!best ||
        std::llabs(c.after_ns - c.before_ns) > std::llabs(best->after_ns - best->before_ns))
      best = &c;
  return best;
}

void AddSummary(const RankDiff& r, const DiffOptions& o, Section& s) {
  const StepTimeDiff& st = r.step_time;
  if (st.before.n() > 0 && st.after.n() > 0) {
    Row& row = s.AddRow("step_time", "step time");
    row.fields = {
        F("before_median_ns", "median", Ns(st.before.median_ns)),
        F("after_median_ns", "→", Ns(st.after.median_ns)),
        F("median_change_share", "change", Value::Signed(Pct(st.median_change_pct))),
        F("verdict", "",
          Text(st.verdict == "slower" || st.verdict == "faster" ? "beyond step noise"
               : st.verdict == "within noise"                   ? "within step noise"
                                                                : "too few steps to judge noise")),
        F("p_value", "Mann-Whitney p",
          st.p_value >= 0 ? Value::Number(st.p_value, 3) : Value::Na()),
        Detail("change", "change", Text(st.verdict)),
        Detail("beyond_noise", "beyond noise", Value::Bool(st.beyond_noise)),
        Detail("p_after_slower", "P(after step slower)",
               st.p_after_slower >= 0 ? Value::Number(st.p_after_slower, 3) : Value::Na())};
    Row& range = s.AddRow("step_range", "");
    range.fields = {F("before_min_ns", "before", Ns(st.before.min_ns)),
                    F("before_max_ns", "–", Ns(st.before.max_ns)),
                    F("before_steps", "steps", Count(st.before.n())),
                    F("after_min_ns", "after", Ns(st.after.min_ns)),
                    F("after_max_ns", "–", Ns(st.after.max_ns)),
                    F("after_steps", "steps", Count(st.after.n())),
                    Detail("before_mean_ns", "before mean", Ns(st.before.mean_ns)),
                    Detail("after_mean_ns", "after mean", Ns(st.after.mean_ns)),
                    Detail("common_steps", "steps on both sides", Count(st.common_steps.size()))};
    if (st.steps_per_s_before > 0 && st.steps_per_s_after > 0)
      s.AddRow("throughput", "throughput").fields = {
          F("before_steps_per_s", "", Value::Number(st.steps_per_s_before, 2, Unit::kPerSecond)),
          F("after_steps_per_s", "→", Value::Number(st.steps_per_s_after, 2, Unit::kPerSecond)),
          F("change_share", "",
            Value::Signed(Value::Share(st.steps_per_s_after / st.steps_per_s_before - 1)))};
  }
  if (const CategoryDelta* c = BiggestMove(r.step_categories)) {
    s.AddRow("largest_move", "largest move").fields = {
        F("category", "", Text(CategoryLabel(c->name))), F("before_share", "", Pct(c->before_pct)),
        F("after_share", "→", Pct(c->after_pct)),
        F("delta_per_step_ns", "of the step; per step",
          DeltaNs(static_cast<double>(c->after_ns - c->before_ns)))};
  }
  s.AddRow("verdict", "verdict").fields = {F("before", "", Text(r.before_verdict)),
                                           F("after", "→", Text(r.after_verdict))};
  Row& resolved = s.AddRow("resolved", "resolved");
  Row& fresh = s.AddRow("new", "new");
  for (const FindingDelta& f : r.findings) {
    if (f.status == FindingStatus::kResolved)
      resolved.fields.push_back(F(f.id + "_was_ns", f.id + " was", Ns(f.before_saving_ns)));
    else if (f.status == FindingStatus::kNew)
      fresh.fields.push_back(F(f.id + "_ns", f.id, Ns(f.after_saving_ns)));
  }
  if (resolved.fields.empty()) resolved.note = "none";
  if (fresh.fields.empty()) fresh.note = "none";
  // The calibration ledger: what the before trace's replay predicted for what was resolved.
  const Calibration& c = r.calibration;
  if (!c.rows.empty() && c.predicted_step_ns > 0) {
    Row& cal = s.AddRow("calibration", "predicted");
    cal.fields = {F("predicted_step_ns", "step after the fixes applied", Ns(c.predicted_step_ns)),
                  F("measured_step_ns", "measured", Ns(c.after_step_ns)),
                  F("error_share", "error", Value::Signed(Value::Share(c.error()))),
                  Detail("before_step_ns", "before (replayed)", Ns(c.before_step_ns))};
    cal.note = "from the before trace's replay";
    Table& t = s.AddTable("calibration_ledger",
                          "calibration: each fix applied, as the before trace predicted it",
                          {{"finding", "finding"},
                           {"fix", "fix"},
                           {"predicted_alone_ns", "alone"},
                           {"predicted_saving_ns", "as reported"},
                           {"after_alone_ns", "left after"}});
    for (const CalibrationRow& row : c.rows)
      t.rows.push_back({Text(row.finding), Text(row.fix), Ns(row.predicted_alone_ns),
                        Ns(row.predicted_increment_ns), Ns(row.after_alone_ns)});
  }
  const char* unit = o.selection == Selection::kHtaFirstIteration ? "first iteration" : "per step";
  auto names = [&](const char* key, const char* label, const NameTableDiff& t) {
    Row& row = s.AddRow(key, label);
    row.note = std::string("(") + unit + ")";
    row.fields = {F("before_total_ns", "", Ns(t.before_total_ns)),
                  F("after_total_ns", "→", Ns(t.after_total_ns)),
                  F("added", "added", Count(t.added)),
                  F("removed", "removed", Count(t.removed)),
                  F("slower", "slower", Count(t.slower)),
                  F("faster", "faster", Count(t.faster)),
                  Detail("increased", "increased", Count(t.increased)),
                  Detail("decreased", "decreased", Count(t.decreased)),
                  Detail("unchanged", "unchanged", Count(t.unchanged)),
                  Detail("before_units", "before steps", Count(t.before_units)),
                  Detail("after_units", "after steps", Count(t.after_units)),
                  Detail("before_iteration", "before iteration", Value::Count(t.before_iteration)),
                  Detail("after_iteration", "after iteration", Value::Count(t.after_iteration))};
  };
  names("gpu_time", "GPU time", r.kernels);
  names("cpu_ops", "CPU ops", r.ops);
}

constexpr const char* kWhichBreakdown =
    "Which breakdown to read: \"mean of steady steps\" (warm-up and partial steps left out) is "
    "what the change did to a training step; the verdict and the findings use it. \"every "
    "complete step\" (--verbose, HTML, JSON) takes the warm-up in, as the TensorBoard plugin "
    "does, so its numbers can be matched with it. \"GPU time, exclusive\" covers the whole GPU "
    "span, time between steps included: where the GPU's time went, not a step.";

void AddCategories(const char* key, const char* title, const std::vector<CategoryDelta>& v,
                   int64_t before_total, int64_t after_total, bool detail, Section& s) {
  Table& t = s.AddTable(key, title,
                        {{"name", ""},
                         {"before_ns", "before"},
                         {"before_share", ""},
                         {"after_ns", "after"},
                         {"after_share", ""},
                         {"delta_ns", "Δ"}});
  t.text_rows = detail ? 0 : 20;
  for (const CategoryDelta& c : v)
    t.rows.push_back({Text(CategoryLabel(c.name)), Value::Nanos(c.before_ns), Pct(c.before_pct),
                      Value::Nanos(c.after_ns), Pct(c.after_pct),
                      DeltaNs(static_cast<double>(c.after_ns - c.before_ns))});
  t.rows.push_back({Text("total"), Value::Nanos(before_total), Value::Na(Unit::kShare),
                    Value::Nanos(after_total), Value::Na(Unit::kShare),
                    DeltaNs(static_cast<double>(after_total - before_total))});
}

void AddNames(const char* key, const char* title, const NameTableDiff& t, const DiffOptions& o,
              Section& s) {
  Table& table = s.AddTable(key, title,
                            {{"time_change", "change"},
                             {"delta_ns", "Δ time"},
                             {"before_ns", "before"},
                             {"after_ns", "after"},
                             {"before_count", "count"},
                             {"after_count", "→"},
                             {"name", "name"},
                             {"kind", "kind", true},
                             {"count_change", "count change", true}});
  table.text_rows = static_cast<int>(o.top_n);
  // Movers first: rows are sorted by |Δ time|; unchanged names sink below the text's cut.
  std::vector<const NameDelta*> rows;
  for (const NameDelta& r : t.rows) rows.push_back(&r);
  std::stable_partition(rows.begin(), rows.end(), [](const NameDelta* r) {
    return r->time_change != TimeChange::kUnchanged || r->count_change != CountChange::kUnchanged;
  });
  for (const NameDelta* r : rows)
    table.rows.push_back({Text(TimeChangeName(r->time_change)), DeltaNs(r->delta_ns()),
                          Ns(r->before_ns), Ns(r->after_ns), PerStep(r->before_count),
                          PerStep(r->after_count), Text(r->name), Text(r->kind),
                          Text(CountChangeName(r->count_change))});
}

void AddFindings(const RankDiff& r, Section& s) {
  Table& t = s.AddTable("findings", "findings (estimated saving per step)",
                        {{"status", "status"},
                         {"before_saving_ns", "before"},
                         {"after_saving_ns", "after"},
                         {"title", "finding"},
                         {"id", "id", true},
                         {"before_saving_share", "before", true},
                         {"after_saving_share", "after", true}});
  for (const FindingDelta& f : r.findings)
    t.rows.push_back({Text(FindingStatusName(f.status)),
                      f.status == FindingStatus::kNew ? Value::Na(Unit::kNanos)
                                                      : Value::Nanos(f.before_saving_ns),
                      f.status == FindingStatus::kResolved ? Value::Na(Unit::kNanos)
                                                           : Value::Nanos(f.after_saving_ns),
                      Text(f.title), Text(f.id), Pct(f.before_saving_pct),
                      Pct(f.after_saving_pct)});
  if (r.findings.empty()) s.AddRow("findings_none", "findings").note = "none on either side";
}

void AddMemory(const MemoryDelta& m, Section& s) {
  auto bytes = [](bool known, int64_t v) { return known ? Bytes(v) : Value::Na(Unit::kBytes); };
  auto delta = [](bool known, int64_t a, int64_t b) {
    return known && a >= 0 && b >= 0 ? Value::Signed(Value::Int(b - a, Unit::kBytes))
                                     : Value::Na(Unit::kBytes);
  };
  const bool both = m.before_known && m.after_known;
  Row& a = s.AddRow("peak_allocated", "allocated");
  a.fields = {F("before_bytes", "", bytes(m.before_known, m.before_peak_allocated)),
              F("after_bytes", "→", bytes(m.after_known, m.after_peak_allocated)),
              F("delta_bytes", "", delta(both, m.before_peak_allocated, m.after_peak_allocated)),
              Detail("before_device", "before device", Value::Count(m.before_device)),
              Detail("after_device", "after device", Value::Count(m.after_device))};
  if (m.before_from_deltas || m.after_from_deltas) a.note = "[from byte deltas: lower bound]";
  Row& rsv = s.AddRow("peak_reserved", "reserved");
  rsv.fields = {F("before_bytes", "", bytes(m.before_known, m.before_peak_reserved)),
                F("after_bytes", "→", bytes(m.after_known, m.after_peak_reserved)),
                F("delta_bytes", "", delta(true, m.before_peak_reserved, m.after_peak_reserved))};
  if (!m.before_known && !m.after_known) {
    a.detail = rsv.detail = true;
    s.AddRow("memory_none", "memory").note = "no [memory] events on either side";
  }
}

// Two stacked bars, before and after, a series per category (ns).
void AddBeforeAfterChart(Section& s, std::string key, std::string title,
                         const std::vector<CategoryDelta>& categories) {
  render::Chart& c =
      s.AddChart(std::move(key), std::move(title), render::Chart::Kind::kStackedBars, Unit::kNanos);
  c.categories = {"before", "after"};
  for (const CategoryDelta& cat : categories)
    c.series.push_back({cat.name,
                        CategoryLabel(cat.name),
                        {static_cast<double>(cat.before_ns), static_cast<double>(cat.after_ns)}});
}

void AddDistributions(const RankDiff& r, Section& s) {
  Table& t = s.AddTable("step_durations", "step durations",
                        {{"side", "side"}, {"step", "step"}, {"duration_ns", "duration"}});
  t.text_rows = 0;
  for (const auto& [side, d] :
       {std::pair{"before", &r.step_time.before}, std::pair{"after", &r.step_time.after}})
    for (size_t i = 0; i < d->steps.size() && i < d->values_ns.size(); ++i)
      t.rows.push_back({Text(side), Value::Count(d->steps[i]), Value::Nanos(d->values_ns[i])});
  AddBeforeAfterChart(s, "step_chart", "mean step by category, before and after",
                      r.step_categories);
  AddBeforeAfterChart(s, "exclusive_chart", "GPU time (exclusive), before and after", r.exclusive);
}

// A side's events skipped or repaired, as analyze's diagnostics table says them (its columns,
// with the trace's path first: a side may be a folder of ranks), and the count lost; nothing when
// every event was read.
void AddDiagnostics(const std::string& side, const std::vector<TraceDiagnostics>& traces,
                    Section& s) {
  if (traces.empty()) return;
  uint64_t lost = 0;
  Table& t = s.AddTable(side + "_diagnostics", side + ": events skipped or repaired",
                        {{"path", "file"},
                         {"reason", "reason"},
                         {"description", "what"},
                         {"count", "events"},
                         {"first_byte_offset", "first at byte"}});
  for (const TraceDiagnostics& trace : traces) {
    const Diagnostics& g = trace.diagnostics;
    lost += g.lost();
    for (size_t i = 0; i < g.count.size(); ++i) {
      if (g.count[i] == 0) continue;
      const Diag reason = static_cast<Diag>(i);
      t.rows.push_back(
          {Text(trace.path), Text(DiagName(reason)), Text(DiagDescription(reason)),
           Count(g.count[i]),
           g.first_offset[i] >= 0 ? Value::Count(g.first_offset[i]) : Value::Na(Unit::kCount)});
    }
  }
  t.text_rows = 20;
  if (lost > 0) {
    Row& row = s.AddRow(side + "_events_lost", side);
    row.fields = {F("events_lost", "", Count(lost))};
    row.note =
        "events or fields could not be read and were skipped (the table above says which): the "
        "figures of this side that need them undercount";
  }
}

}  // namespace

render::Document BuildDocument(const DiffReport& d) {
  render::Document doc;
  doc.schema = "gpuscope.diff";
  doc.title = "gpuscope diff";

  Section& head = doc.AddSection("inputs", "");
  head.AddRow("before", "before").fields = {F("path", "", Text(d.before_label))};
  head.AddRow("after", "after").fields = {F("path", "", Text(d.after_label))};
  Row& opts = head.AddRow("options", "names");
  opts.fields = {F("names", "", Text(d.options.names == NameMode::kRaw ? "raw" : "short")),
                 F("selection", "selection",
                   Text(d.options.selection == Selection::kHtaFirstIteration ? "hta_first_iteration"
                                                                             : "steady_steps")),
                 Detail("min_time_change_share", "moved when beyond",
                        Value::Share(d.options.min_time_change_share)),
                 Detail("min_time_change_ns", "and", Value::Nanos(d.options.min_time_change_ns))};
  opts.detail =
      d.options.selection != Selection::kHtaFirstIteration && d.options.names != NameMode::kRaw;
  auto ranks = [](const std::vector<int32_t>& v) {
    std::string s;
    for (int32_t r : v) {
      if (!s.empty()) s += ',';
      s += std::to_string(r);  // appended piecewise: GCC 12's false -Wrestrict on "," + string
    }
    return s;
  };
  Row& rk = head.AddRow("ranks", "ranks");
  rk.detail = true;
  rk.fields = {F("before_ranks", "before", Text(ranks(d.before_ranks))),
               F("after_ranks", "after", Text(ranks(d.after_ranks)))};
  for (size_t i = 0; i < d.warnings.size(); ++i)
    head.AddRow("warning_" + std::to_string(i), "warning").note = d.warnings[i];
  AddDiagnostics("before", d.before_diagnostics, head);
  AddDiagnostics("after", d.after_diagnostics, head);
  // One screen first: the summary of every rank pair; then the detail of each.
  for (size_t i = 0; i < d.ranks.size(); ++i) {
    const RankDiff& r = d.ranks[i];
    Section& s = doc.AddSection("pair_" + std::to_string(i), RankTitle(r));
    s.AddRow("paths", "files").detail = true;
    std::get<Row>(s.items.back()).fields = {
        F("before_rank", "before rank", Value::Count(r.before_rank)),
        F("after_rank", "after rank", Value::Count(r.after_rank)),
        F("before_path", "before", Text(r.before_path)),
        F("after_path", "after", Text(r.after_path)),
        F("before_device", "before device", Text(r.before_device)),
        F("after_device", "after device", Text(r.after_device))};
    AddSummary(r, d.options, s);
  }
  for (size_t i = 0; i < d.ranks.size(); ++i) {
    const RankDiff& r = d.ranks[i];
    Section& s = doc.AddSection("detail_" + std::to_string(i), RankTitle(r) + " · detail");
    // Three breakdowns with three totals: say which answers "what did the change do to a step".
    s.AddText("which_breakdown", kWhichBreakdown);
    AddCategories("step_categories", "step breakdown (mean of steady steps)", r.step_categories,
                  r.before_mean_step_ns, r.after_mean_step_ns, false, s);
    AddCategories("step_categories_all_steps", "step breakdown (every complete step, tb_plugin)",
                  r.step_categories_all_steps, r.before_mean_all_steps_ns,
                  r.after_mean_all_steps_ns, true, s);
    AddCategories("exclusive", "GPU time, exclusive (whole GPU span)", r.exclusive,
                  r.before_span_ns, r.after_span_ns, false, s);
    AddNames("kernels", "kernels: top movers", r.kernels, d.options, s);
    AddNames("ops", "CPU ops: top movers", r.ops, d.options, s);
    AddFindings(r, s);
    AddMemory(r.memory, s);
    AddDistributions(r, s);
  }
  return doc;
}

}  // namespace gpuscope::diff
