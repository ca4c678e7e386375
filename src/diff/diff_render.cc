// Text and JSON views of a DiffReport. JSON is the contract: docs/diff.md.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "diff/diff.h"
#include "gpuscope/version.h"
#include "render/json_writer.h"

namespace gpuscope::diff {

std::string SignedDuration(double ns) {
  const int64_t v = std::llround(ns);
  if (v == 0) return "±0";
  return (v > 0 ? "+" : "−") + report::HumanDuration(v < 0 ? -v : v);
}

std::string PerStepCount(double c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(c - std::round(c)) < 1e-9 ? "%.0f" : "%.2f", c);
  return buf;
}

namespace {

using report::HumanBytes;
using report::HumanDuration;
using render::JsonWriter;

std::string SignedPct(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%.1f %%", pct > 0 ? "+" : pct < 0 ? "−" : "±",
                std::fabs(pct));
  return buf;
}

std::string SignedBytes(int64_t b) {
  if (b == 0) return "±0";
  return (b > 0 ? "+" : "−") + HumanBytes(static_cast<uint64_t>(b < 0 ? -b : b));
}

// printf's %12s counts bytes; "µs" is two bytes but one column. Pad by code points instead.
size_t Columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
std::string Right(const std::string& s, size_t width) {
  const size_t n = Columns(s);
  return n >= width ? s : std::string(width - n, ' ') + s;
}
std::string Left(const std::string& s, size_t width) {
  const size_t n = Columns(s);
  return n >= width ? s : s + std::string(width - n, ' ');
}

std::string Truncate(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t cut = max - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 safe
  return s.substr(0, cut) + "…";
}

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

// The category whose time per step moved most (the one-line "what changed").
const CategoryDelta* BiggestMove(const std::vector<CategoryDelta>& v) {
  const CategoryDelta* best = nullptr;
  for (const CategoryDelta& c : v)
    if (!best || std::llabs(c.after_ns - c.before_ns) > std::llabs(best->after_ns - best->before_ns))
      best = &c;
  return best;
}

const char* CategoryLabel(const std::string& name) {
  if (name == "dataloader") return "DataLoader";
  if (name == "cpu_exec") return "CPU exec";
  if (name == "exposed_communication") return "exposed comm";
  if (name == "exposed_memory") return "exposed memory";
  return name.c_str();
}

std::string SummaryText(const RankDiff& r, const DiffOptions& o) {
  std::string out;
  char line[768];
  const StepTimeDiff& st = r.step_time;
  if (st.before.n() > 0 && st.after.n() > 0) {
    const char* noise = st.verdict == "slower" || st.verdict == "faster"
                            ? "beyond step noise"
                        : st.verdict == "within noise" ? "within step noise"
                                                       : "too few steps to judge noise";
    char p[48] = "";
    if (st.p_value >= 0) std::snprintf(p, sizeof p, " (Mann-Whitney p = %.3f)", st.p_value);
    std::snprintf(line, sizeof line, "  %-12s median %s → %s (%s), %s%s\n", "step time",
                  HumanDuration(st.before.median_ns).c_str(),
                  HumanDuration(st.after.median_ns).c_str(), SignedPct(st.median_change_pct).c_str(),
                  noise, p);
    out += line;
    std::snprintf(line, sizeof line, "  %-12s before %s – %s over %zu step%s · after %s – %s over %zu step%s\n",
                  "", HumanDuration(st.before.min_ns).c_str(), HumanDuration(st.before.max_ns).c_str(),
                  st.before.n(), st.before.n() == 1 ? "" : "s", HumanDuration(st.after.min_ns).c_str(),
                  HumanDuration(st.after.max_ns).c_str(), st.after.n(), st.after.n() == 1 ? "" : "s");
    out += line;
    if (st.steps_per_s_before > 0 && st.steps_per_s_after > 0) {
      std::snprintf(line, sizeof line, "  %-12s %.2f → %.2f steps/s (%s)\n", "throughput",
                    st.steps_per_s_before, st.steps_per_s_after,
                    SignedPct(100.0 * (st.steps_per_s_after / st.steps_per_s_before - 1)).c_str());
      out += line;
    }
  }
  if (const CategoryDelta* c = BiggestMove(r.step_categories)) {
    std::snprintf(line, sizeof line, "  %-12s %s %.1f %% → %.1f %% of the step (%s per step)\n",
                  "largest move", CategoryLabel(c->name), c->before_pct, c->after_pct,
                  SignedDuration(static_cast<double>(c->after_ns - c->before_ns)).c_str());
    out += line;
  }
  out += "  verdict      " + r.before_verdict + " → " + r.after_verdict + "\n";
  std::string resolved, fresh;
  for (const FindingDelta& f : r.findings) {
    char item[256];
    if (f.status == FindingStatus::kResolved) {
      std::snprintf(item, sizeof item, "%s (was ~%s per step)", f.id.c_str(),
                    HumanDuration(f.before_saving_ns).c_str());
      resolved += (resolved.empty() ? "" : ", ") + std::string(item);
    } else if (f.status == FindingStatus::kNew) {
      std::snprintf(item, sizeof item, "%s (~%s per step)", f.id.c_str(),
                    HumanDuration(f.after_saving_ns).c_str());
      fresh += (fresh.empty() ? "" : ", ") + std::string(item);
    }
  }
  out += "  resolved     " + (resolved.empty() ? std::string("none") : resolved) + "\n";
  out += "  new          " + (fresh.empty() ? std::string("none") : fresh) + "\n";
  const char* unit = o.selection == Selection::kHtaFirstIteration ? "first iteration" : "per step";
  auto names_line = [&](const char* label, const NameTableDiff& t) {
    std::snprintf(line, sizeof line,
                  "  %-12s %s → %s %s · %zu added, %zu removed, %zu slower, %zu faster\n", label,
                  HumanDuration(std::llround(t.before_total_ns)).c_str(),
                  HumanDuration(std::llround(t.after_total_ns)).c_str(), unit, t.added, t.removed,
                  t.slower, t.faster);
    out += line;
  };
  names_line("GPU time", r.kernels);
  names_line("CPU ops", r.ops);
  return out;
}

std::string CategoriesText(const char* title, const std::vector<CategoryDelta>& v, int64_t before_total,
                           int64_t after_total) {
  std::string out = std::string("  ") + title + "\n";
  out += "    " + Left("", 15) + Right("before", 12) + std::string(9, ' ') + Right("after", 14) +
         std::string(9, ' ') + Right("Δ", 16) + "\n";
  for (const CategoryDelta& c : v) {
    char pb[16], pa[16];
    std::snprintf(pb, sizeof pb, "%6.1f %%", c.before_pct);
    std::snprintf(pa, sizeof pa, "%6.1f %%", c.after_pct);
    out += "    " + Left(CategoryLabel(c.name), 15) + Right(HumanDuration(c.before_ns), 12) + " " +
           pb + Right(HumanDuration(c.after_ns), 14) + " " + pa +
           Right(SignedDuration(static_cast<double>(c.after_ns - c.before_ns)), 16) + "\n";
  }
  out += "    " + Left("total", 15) + Right(HumanDuration(before_total), 12) + std::string(9, ' ') +
         Right(HumanDuration(after_total), 14) + std::string(9, ' ') +
         Right(SignedDuration(static_cast<double>(after_total - before_total)), 16) + "\n";
  return out;
}

std::string NamesText(const char* title, const NameTableDiff& t, const DiffOptions& o,
                      bool verbose) {
  std::string out;
  char line[1024];
  const bool hta = o.selection == Selection::kHtaFirstIteration;
  std::snprintf(line, sizeof line,
                "  %s: top movers (%s; by count%s: %zu added, %zu removed, %zu increased, %zu "
                "decreased, %zu unchanged)\n",
                title, hta ? "first iteration" : "per step", hta ? "" : " per step", t.added,
                t.removed, t.increased, t.decreased, t.unchanged);
  out += line;
  out += "    " + Left("change", 10) + Right("Δ time", 13) + Right("before", 14) +
         Right("after", 14) + Right("count", 17) + "  name\n";
  const size_t n = verbose ? t.rows.size() : std::min(o.top_n, t.rows.size());
  size_t shown = 0;
  for (const NameDelta& r : t.rows) {
    if (shown == n) break;
    if (!verbose && r.time_change == TimeChange::kUnchanged && r.count_change == CountChange::kUnchanged)
      continue;  // the summary table is for movers; --verbose lists everything
    ++shown;
    const std::string counts = PerStepCount(r.before_count) + " → " + PerStepCount(r.after_count);
    out += "    " + Left(TimeChangeName(r.time_change), 10) + Right(SignedDuration(r.delta_ns()), 13) +
           Right(HumanDuration(std::llround(r.before_ns)), 14) +
           Right(HumanDuration(std::llround(r.after_ns)), 14) + Right(counts, 17) + "  " +
           (verbose ? r.name : Truncate(r.name, 80)) + "\n";
  }
  if (shown == 0) out += "    (no name moved beyond the thresholds)\n";
  return out;
}

std::string FindingsText(const RankDiff& r) {
  if (r.findings.empty()) return "  findings: none on either side\n";
  std::string out = "  findings (estimated saving per step, before → after)\n";
  for (const FindingDelta& f : r.findings) {
    const std::string b = f.status == FindingStatus::kNew ? "–" : HumanDuration(f.before_saving_ns);
    const std::string a =
        f.status == FindingStatus::kResolved ? "–" : HumanDuration(f.after_saving_ns);
    out += "    " + Left(FindingStatusName(f.status), 11) + Right(b, 11) + " → " + Left(a, 11) +
           "  " + f.title + "\n";
  }
  return out;
}

std::string MemoryText(const MemoryDelta& m) {
  if (!m.before_known && !m.after_known) return "  memory: no [memory] events on either side\n";
  std::string out = "  memory (peak on the rank's device)\n";
  char line[256];
  auto bytes = [](bool known, int64_t v) { return known && v >= 0 ? HumanBytes(static_cast<uint64_t>(v)) : std::string("unknown"); };
  std::snprintf(line, sizeof line, "    allocated  %s → %s", bytes(m.before_known, m.before_peak_allocated).c_str(),
                bytes(m.after_known, m.after_peak_allocated).c_str());
  out += line;
  if (m.before_known && m.after_known)
    out += " (" + SignedBytes(m.after_peak_allocated - m.before_peak_allocated) + ")";
  if (m.before_from_deltas || m.after_from_deltas)
    out += "  [from byte deltas: lower bound]";
  out += "\n";
  std::snprintf(line, sizeof line, "    reserved   %s → %s",
                bytes(m.before_known, m.before_peak_reserved).c_str(),
                bytes(m.after_known, m.after_peak_reserved).c_str());
  out += line;
  if (m.before_peak_reserved >= 0 && m.after_peak_reserved >= 0)
    out += " (" + SignedBytes(m.after_peak_reserved - m.before_peak_reserved) + ")";
  return out + "\n";
}

}  // namespace

std::string RenderDiffText(const DiffReport& d, const report::TextStyle& style) {
  const char* bold = style.color ? "\033[1m" : "";
  const char* yellow = style.color ? "\033[33m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  std::string out;
  out.append(bold).append("gpuscope diff").append(reset).append("\n");
  out.append("  before  ").append(d.before_label).append("\n");
  out.append("  after   ").append(d.after_label).append("\n");
  if (d.options.selection == Selection::kHtaFirstIteration || d.options.names == NameMode::kRaw) {
    out += std::string("  names   ") +
           (d.options.names == NameMode::kRaw ? "raw names" : "short names") + ", " +
           (d.options.selection == Selection::kHtaFirstIteration
                ? "HTA's first-iteration selection"
                : "steady steps") +
           "\n";
  }
  std::string summary;
  for (const std::string& w : d.warnings)
    summary.append(yellow).append("warning: ").append(w).append(reset).append("\n");
  // One screen first: the summary of every rank pair, fitted to 100 columns (values start at
  // column 15).
  for (const RankDiff& r : d.ranks) {
    summary.append("\n").append(bold).append(RankTitle(r)).append(reset).append("\n");
    summary += SummaryText(r, d.options);
  }
  out += report::FitToWidth(summary, 100, 15);
  // Then the detail.
  for (const RankDiff& r : d.ranks) {
    out.append("\n").append(bold).append(RankTitle(r)).append(" · detail").append(reset).append("\n");
    out += CategoriesText("step breakdown (mean of steady steps)", r.step_categories,
                          r.before_mean_step_ns, r.after_mean_step_ns);
    out += CategoriesText("GPU time, exclusive (whole GPU span)", r.exclusive, r.before_span_ns,
                          r.after_span_ns);
    out += NamesText("kernels", r.kernels, d.options, style.verbose);
    out += NamesText("CPU ops", r.ops, d.options, style.verbose);
    out += FindingsText(r);
    out += MemoryText(r.memory);
  }
  if (!style.verbose) out += "\n(every row with --verbose or --json)\n";
  return out;
}

namespace {

void WriteDistribution(const Distribution& x, JsonWriter* w) {
  w->BeginObject();
  w->Key("steps").BeginArray();
  for (int32_t s : x.steps) w->Int(s);
  w->EndArray();
  w->Key("durations_ns").BeginArray();
  for (int64_t v : x.values_ns) w->Int(v);
  w->EndArray();
  w->Key("median_ns").Int(x.median_ns);
  w->Key("min_ns").Int(x.min_ns);
  w->Key("max_ns").Int(x.max_ns);
  w->Key("mean_ns").Int(x.mean_ns);
  w->Key("whole_trace").Bool(x.whole_trace);
  w->EndObject();
}

void WriteCategories(const std::vector<CategoryDelta>& v, JsonWriter* w) {
  w->BeginArray();
  for (const CategoryDelta& c : v) {
    w->BeginObject();
    w->Key("name").String(c.name);
    w->Key("before_ns").Int(c.before_ns);
    w->Key("after_ns").Int(c.after_ns);
    w->Key("delta_ns").Int(c.after_ns - c.before_ns);
    w->Key("before_pct").Double(c.before_pct, 3);
    w->Key("after_pct").Double(c.after_pct, 3);
    w->EndObject();
  }
  w->EndArray();
}

void WriteNames(const NameTableDiff& t, JsonWriter* w) {
  w->BeginObject();
  w->Key("before_units").Uint(t.before_units);
  w->Key("after_units").Uint(t.after_units);
  w->Key("before_iteration").Int(t.before_iteration);
  w->Key("after_iteration").Int(t.after_iteration);
  w->Key("before_total_ns").Double(t.before_total_ns, 1);
  w->Key("after_total_ns").Double(t.after_total_ns, 1);
  w->Key("summary").BeginObject();
  w->Key("added").Uint(t.added);
  w->Key("removed").Uint(t.removed);
  w->Key("increased").Uint(t.increased);
  w->Key("decreased").Uint(t.decreased);
  w->Key("unchanged").Uint(t.unchanged);
  w->Key("slower").Uint(t.slower);
  w->Key("faster").Uint(t.faster);
  w->EndObject();
  w->Key("rows").BeginArray();
  for (const NameDelta& r : t.rows) {
    w->BeginObject();
    w->Key("name").String(r.name);
    w->Key("kind").String(r.kind);
    w->Key("before_count").Double(r.before_count, 4);
    w->Key("after_count").Double(r.after_count, 4);
    w->Key("before_ns").Double(r.before_ns, 1);
    w->Key("after_ns").Double(r.after_ns, 1);
    w->Key("delta_ns").Double(r.delta_ns(), 1);
    w->Key("count_change").String(CountChangeName(r.count_change));
    w->Key("time_change").String(TimeChangeName(r.time_change));
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

}  // namespace

std::string RenderDiffJson(const DiffReport& d) {
  JsonWriter w;
  w.BeginObject();
  w.Key("schema").String("gpuscope.diff");
  w.Key("schema_version").Int(kDiffSchemaVersion);
  w.Key("gpuscope_version").String(GPUSCOPE_VERSION);
  w.Key("before").String(d.before_label);
  w.Key("after").String(d.after_label);
  w.Key("options").BeginObject();
  w.Key("names").String(d.options.names == NameMode::kRaw ? "raw" : "short");
  w.Key("selection")
      .String(d.options.selection == Selection::kHtaFirstIteration ? "hta_first_iteration"
                                                                   : "steady_steps");
  w.Key("min_time_change_share").Double(d.options.min_time_change_share, 4);
  w.Key("min_time_change_ns").Int(d.options.min_time_change_ns);
  w.EndObject();
  w.Key("warnings").BeginArray();
  for (const std::string& s : d.warnings) w.String(s);
  w.EndArray();
  w.Key("before_ranks").BeginArray();
  for (int32_t r : d.before_ranks) w.Int(r);
  w.EndArray();
  w.Key("after_ranks").BeginArray();
  for (int32_t r : d.after_ranks) w.Int(r);
  w.EndArray();
  w.Key("ranks").BeginArray();
  for (const RankDiff& r : d.ranks) {
    w.BeginObject();
    w.Key("before_rank").Int(r.before_rank);
    w.Key("after_rank").Int(r.after_rank);
    w.Key("before_path").String(r.before_path);
    w.Key("after_path").String(r.after_path);
    w.Key("before_device").String(r.before_device);
    w.Key("after_device").String(r.after_device);
    const StepTimeDiff& st = r.step_time;
    w.Key("step_time").BeginObject();
    w.Key("before");
    WriteDistribution(st.before, &w);
    w.Key("after");
    WriteDistribution(st.after, &w);
    w.Key("median_change_pct").Double(st.median_change_pct, 3);
    w.Key("verdict").String(st.verdict);
    w.Key("beyond_noise").Bool(st.beyond_noise);
    w.Key("p_after_slower").Double(st.p_after_slower, 4);
    w.Key("p_value").Double(st.p_value, 6);
    w.Key("steps_per_s_before").Double(st.steps_per_s_before, 4);
    w.Key("steps_per_s_after").Double(st.steps_per_s_after, 4);
    w.Key("common_steps").BeginArray();
    for (int32_t s : st.common_steps) w.Int(s);
    w.EndArray();
    w.EndObject();
    w.Key("before_mean_step_ns").Int(r.before_mean_step_ns);
    w.Key("after_mean_step_ns").Int(r.after_mean_step_ns);
    w.Key("step_categories");
    WriteCategories(r.step_categories, &w);
    w.Key("before_mean_all_steps_ns").Int(r.before_mean_all_steps_ns);
    w.Key("after_mean_all_steps_ns").Int(r.after_mean_all_steps_ns);
    w.Key("step_categories_all_steps");
    WriteCategories(r.step_categories_all_steps, &w);
    w.Key("before_span_ns").Int(r.before_span_ns);
    w.Key("after_span_ns").Int(r.after_span_ns);
    w.Key("exclusive");
    WriteCategories(r.exclusive, &w);
    w.Key("kernels");
    WriteNames(r.kernels, &w);
    w.Key("ops");
    WriteNames(r.ops, &w);
    w.Key("before_verdict").String(r.before_verdict);
    w.Key("after_verdict").String(r.after_verdict);
    w.Key("findings").BeginArray();
    for (const FindingDelta& f : r.findings) {
      w.BeginObject();
      w.Key("id").String(f.id);
      w.Key("title").String(f.title);
      w.Key("status").String(FindingStatusName(f.status));
      w.Key("before_saving_ns_per_step").Int(f.before_saving_ns);
      w.Key("after_saving_ns_per_step").Int(f.after_saving_ns);
      w.Key("before_saving_pct").Double(f.before_saving_pct, 2);
      w.Key("after_saving_pct").Double(f.after_saving_pct, 2);
      w.EndObject();
    }
    w.EndArray();
    const MemoryDelta& m = r.memory;
    w.Key("memory").BeginObject();
    auto side = [&](const char* key, bool known, int32_t dev, int64_t alloc, int64_t reserved,
                    bool deltas) {
      w.Key(key);
      if (!known) {
        w.Null();
        return;
      }
      w.BeginObject();
      w.Key("device").Int(dev);
      w.Key("peak_allocated_bytes").Int(alloc);
      w.Key("peak_reserved_bytes").Int(reserved);
      w.Key("from_deltas").Bool(deltas);
      w.EndObject();
    };
    side("before", m.before_known, m.before_device, m.before_peak_allocated,
         m.before_peak_reserved, m.before_from_deltas);
    side("after", m.after_known, m.after_device, m.after_peak_allocated, m.after_peak_reserved,
         m.after_from_deltas);
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str() + "\n";
}

}  // namespace gpuscope::diff
