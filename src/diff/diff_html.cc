// HTML view of a DiffReport: the analyze report's page, charts and tables (report/html.h), with
// before and after side by side. Every string from a trace goes through the shared Escape().
#include <cmath>
#include <cstdio>

#include "diff/diff.h"
#include "report/html.h"

namespace gpuscope::diff {

namespace {

namespace html = report::html;
using html::Escape;
using report::HumanBytes;
using report::HumanDuration;

// Colours as in the analyze report's step chart (tb_plugin category order).
constexpr int kStepColors[analyze::kStepCategoryCount] = {0, 1, 6, 3, 4, 5, 2, 7};
constexpr const char* kStepLabels[analyze::kStepCategoryCount] = {
    "kernel", "memcpy", "memset", "communication", "runtime", "DataLoader", "CPU exec", "other"};

std::string Pct(double v) {
  char b[24];
  std::snprintf(b, sizeof b, "%.1f %%", v);
  return b;
}

std::string Title(const RankDiff& r) {
  auto n = [](int32_t x) { return x >= 0 ? std::to_string(x) : std::string("?"); };
  std::string s = "rank " + n(r.before_rank);
  if (r.after_rank != r.before_rank) s += " → rank " + n(r.after_rank);
  return s;
}

// One column of per-step bars (a side of the side-by-side view).
std::string StepColumn(const char* heading, const Distribution& d, int64_t scale_ns) {
  std::vector<html::BarRow> rows;
  constexpr size_t kMaxRows = 100;
  for (size_t i = 0; i < d.n() && i < kMaxRows; ++i) {
    html::BarRow row;
    row.label = d.steps[i] >= 0 ? "step " + std::to_string(d.steps[i]) : "whole trace";
    row.segments.push_back({d.values_ns[i], 0});
    // Pad every row to the slowest step of both sides so the two columns share one scale.
    row.segments.push_back({0, 7});
    row.note = HumanDuration(d.values_ns[i]);
    rows.push_back(std::move(row));
  }
  if (!rows.empty()) rows.front().segments.back().value = scale_ns - d.values_ns[0];
  std::string out = "<div><h3>" + std::string(heading) + "</h3>\n";
  out += "<p>median <b>" + Escape(HumanDuration(d.median_ns)) + "</b>, range " +
         Escape(HumanDuration(d.min_ns)) + " – " + Escape(HumanDuration(d.max_ns)) + " over " +
         std::to_string(d.n()) + " steady step" + (d.n() == 1 ? "" : "s") + "</p>\n";
  out += rows.empty() ? "<p class=\"muted\">No steady step.</p>\n"
                      : html::StackedBars(rows, {}, std::string("Steady step durations, ") + heading);
  return out + "</div>\n";
}

std::string NamesTable(const NameTableDiff& t, size_t top_n) {
  std::vector<std::vector<std::string>> rows;
  for (const NameDelta& r : t.rows) {
    if (rows.size() == top_n) break;
    if (r.time_change == TimeChange::kUnchanged && r.count_change == CountChange::kUnchanged)
      continue;
    rows.push_back({TimeChangeName(r.time_change), r.name, PerStepCount(r.before_count),
                    PerStepCount(r.after_count), HumanDuration(std::llround(r.before_ns)),
                    HumanDuration(std::llround(r.after_ns)), SignedDuration(r.delta_ns())});
  }
  std::string out = "<p>" + std::to_string(t.added) + " added, " + std::to_string(t.removed) +
                    " removed, " + std::to_string(t.slower) + " slower, " +
                    std::to_string(t.faster) + " faster; by count " + std::to_string(t.increased) +
                    " increased, " + std::to_string(t.decreased) + " decreased, " +
                    std::to_string(t.unchanged) + " unchanged.</p>\n";
  if (rows.empty()) return out + "<p class=\"muted\">No name moved beyond the thresholds.</p>\n";
  return out + html::Table({"change", "name", "count before", "count after", "time before",
                            "time after", "Δ time"},
                           rows, {2, 3, 4, 5, 6});
}

}  // namespace

std::string RenderDiffHtml(const DiffReport& d) {
  std::string out = html::PageStart("gpuscope diff");
  out += "<h1>gpuscope diff</h1>\n<p>before <span class=\"mono\">" + Escape(d.before_label) +
         "</span><br>after <span class=\"mono\">" + Escape(d.after_label) + "</span></p>\n";
  for (const std::string& w : d.warnings) out += "<p class=\"err\">warning: " + Escape(w) + "</p>\n";
  const bool hta = d.options.selection == Selection::kHtaFirstIteration;
  for (const RankDiff& r : d.ranks) {
    out += "<section class=\"rank\">\n<h2>" + Escape(Title(r)) + " · " +
           Escape(r.before_device == r.after_device
                      ? r.before_device
                      : r.before_device + " → " + r.after_device) +
           "</h2>\n";
    const StepTimeDiff& st = r.step_time;
    // Summary first, as in the terminal.
    std::string verdict = st.verdict == "slower" || st.verdict == "faster"
                              ? "beyond step-to-step noise"
                          : st.verdict == "within noise" ? "within step-to-step noise"
                                                         : "too few steps to judge noise";
    char p[48] = "";
    if (st.p_value >= 0) std::snprintf(p, sizeof p, " (Mann-Whitney p = %.3f)", st.p_value);
    char change[32];
    std::snprintf(change, sizeof change, "%+.1f %%", st.median_change_pct);
    out += "<p class=\"verdict\">Step time " + Escape(HumanDuration(st.before.median_ns)) + " → " +
           Escape(HumanDuration(st.after.median_ns)) + " (" + change + "), " + verdict + p +
           "</p>\n";
    out += "<p>Verdict: " + Escape(r.before_verdict) + " → " + Escape(r.after_verdict) + "</p>\n";
    // Side by side: per-step durations on one scale.
    const int64_t scale = std::max(st.before.max_ns, st.after.max_ns);
    out += "<p class=\"muted\">Both columns share one scale: a grey bar pads the first row to "
           "the slowest step of both sides.</p>\n";
    out += "<div style=\"display:grid;grid-template-columns:1fr 1fr;gap:24px\">\n";
    out += StepColumn("Before", st.before, scale);
    out += StepColumn("After", st.after, scale);
    out += "</div>\n";
    // Mean step by category, before over after, one scale.
    std::vector<html::LegendEntry> legend;
    for (size_t c = 0; c < analyze::kStepCategoryCount; ++c)
      legend.push_back({kStepLabels[c], kStepColors[c]});
    std::vector<html::BarRow> bars(2);
    bars[0].label = "before";
    bars[1].label = "after";
    std::vector<std::vector<std::string>> cat_rows;
    for (size_t c = 0; c < r.step_categories.size() && c < analyze::kStepCategoryCount; ++c) {
      const CategoryDelta& cd = r.step_categories[c];
      bars[0].segments.push_back({cd.before_ns, kStepColors[c]});
      bars[1].segments.push_back({cd.after_ns, kStepColors[c]});
      cat_rows.push_back({kStepLabels[c], HumanDuration(cd.before_ns), Pct(cd.before_pct),
                          HumanDuration(cd.after_ns), Pct(cd.after_pct),
                          SignedDuration(static_cast<double>(cd.after_ns - cd.before_ns))});
    }
    bars[0].note = HumanDuration(r.before_mean_step_ns);
    bars[1].note = HumanDuration(r.after_mean_step_ns);
    out += "<h3>Mean steady step by category</h3>\n";
    out += html::StackedBars(bars, legend, "Mean step by category, before and after");
    out += html::Table({"category", "before", "share", "after", "share", "Δ per step"}, cat_rows,
                       {1, 2, 3, 4, 5});
    std::vector<std::vector<std::string>> ex_rows;
    for (const CategoryDelta& cd : r.exclusive)
      ex_rows.push_back({cd.name, HumanDuration(cd.before_ns), Pct(cd.before_pct),
                         HumanDuration(cd.after_ns), Pct(cd.after_pct),
                         SignedDuration(static_cast<double>(cd.after_ns - cd.before_ns))});
    out += "<h3>GPU time, exclusive (whole GPU span)</h3>\n";
    out += html::Table({"part", "before", "share of span", "after", "share of span", "Δ"}, ex_rows,
                       {1, 2, 3, 4, 5});
    const std::string unit = hta ? " (first iteration)" : " (per step)";
    out += "<h3>Kernels: top movers" + Escape(unit) + "</h3>\n" + NamesTable(r.kernels, 25);
    out += "<h3>CPU ops: top movers" + Escape(unit) + "</h3>\n" + NamesTable(r.ops, 25);
    std::vector<std::vector<std::string>> f_rows;
    for (const FindingDelta& f : r.findings)
      f_rows.push_back({FindingStatusName(f.status), f.title, f.id,
                        f.status == FindingStatus::kNew ? "–" : HumanDuration(f.before_saving_ns),
                        f.status == FindingStatus::kResolved ? "–"
                                                             : HumanDuration(f.after_saving_ns)});
    out += "<h3>Findings</h3>\n";
    out += f_rows.empty() ? "<p class=\"muted\">No finding on either side.</p>\n"
                          : html::Table({"status", "finding", "id", "saving before", "saving after"},
                                        f_rows, {3, 4});
    const MemoryDelta& m = r.memory;
    auto bytes = [](bool known, int64_t v) {
      return known && v >= 0 ? HumanBytes(static_cast<uint64_t>(v)) : std::string("unknown");
    };
    out += "<h3>Memory (peak on the rank's device)</h3>\n";
    out += html::Table({"", "before", "after"},
                       {{"allocated", bytes(m.before_known, m.before_peak_allocated),
                         bytes(m.after_known, m.after_peak_allocated)},
                        {"reserved", bytes(m.before_known, m.before_peak_reserved),
                         bytes(m.after_known, m.after_peak_reserved)}},
                       {1, 2});
    out += "</section>\n";
  }
  return out + html::PageEnd();
}

}  // namespace gpuscope::diff
