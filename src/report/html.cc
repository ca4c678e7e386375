#include "report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/utf8.h"
#include "gpuscope/version.h"

namespace gpuscope::report {
namespace html {

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default:
          // C0 controls (and DEL) are not allowed in HTML text: shown as U+FFFD.
          if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F)
            out += "\xEF\xBF\xBD";
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

const char* Color(int i) {
  // Okabe–Ito palette (colour-blind safe) plus two greys for "other" and "idle".
  static constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
                                             "#D55E00", "#F0E442", "#999999", "#DDDDDD"};
  constexpr int n = static_cast<int>(sizeof kPalette / sizeof kPalette[0]);
  return kPalette[((i % n) + n) % n];
}

std::string PageStart(std::string_view title) {
  std::string out =
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // No script runs and nothing loads from anywhere: the page is data only.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  out += Escape(title);
  out +=
      "</title>\n<style>\n"
      "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1a1a1a;"
      "background:#fff;margin:0 auto;max-width:1120px;padding:16px 24px}\n"
      "h1{font-size:22px;margin:8px 0}h2{font-size:18px;border-bottom:2px solid #0072B2;"
      "padding-bottom:2px;margin-top:28px}h3{font-size:15px;margin:12px 0 4px}\n"
      "nav a{margin-right:12px}code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;"
      "font-size:12.5px}\n"
      "table{border-collapse:collapse;margin:6px 0 12px}th,td{padding:3px 8px;"
      "border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}"
      "th{background:#f4f6f8}td{overflow-wrap:anywhere}td.num,th.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}\n"
      ".verdict{font-size:17px;margin:6px 0}.verdict strong{color:#B03A00}\n"
      ".finding{border-left:5px solid #999;padding:6px 12px;margin:10px 0;background:#fafafa}\n"
      ".finding.critical{border-color:#D55E00}.finding.warning{border-color:#E69F00}"
      ".finding.info{border-color:#56B4E9}\n"
      ".finding h3{margin:2px 0}.saving{font-weight:600}.fix{background:#eef6ee;padding:4px 8px}\n"
      "dl.evidence{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:6px 0}"
      "dl.evidence dt{color:#555}dl.evidence dd{margin:0}\n"
      ".legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;"
      "width:11px;height:11px;margin-right:4px;vertical-align:-1px}\n"
      "svg{display:block;max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;"
      "fill:#333}\n"
      "details{margin:6px 0}summary{cursor:pointer;font-weight:600}.muted{color:#666}\n"
      ".warn{color:#8a5a00}.err{color:#B00020}\n"
      "</style>\n</head>\n<body>\n";
  return out;
}

std::string PageEnd() { return "</body>\n</html>\n"; }

namespace {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Pct(int64_t part, int64_t whole) {
  return whole > 0 ? Fmt("%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole))
                   : "–";
}

}  // namespace

std::string StackedBars(const std::vector<BarRow>& rows, const std::vector<LegendEntry>& legend,
                        std::string_view aria_label) {
  // Geometry in SVG user units (≈ CSS px at 100 % zoom).
  constexpr int kLabelW = 150, kBarW = 760, kNoteW = 110, kRowH = 20, kBarH = 14, kTop = 4;
  const int width = kLabelW + kBarW + kNoteW;
  const int height = kTop * 2 + kRowH * static_cast<int>(std::max<size_t>(rows.size(), 1));
  int64_t max_total = 0;
  for (const BarRow& r : rows) {
    int64_t t = 0;
    for (const Segment& s : r.segments) t += std::max<int64_t>(0, s.value);
    max_total = std::max(max_total, t);
  }
  std::string out = "<div class=\"legend\">";
  for (const LegendEntry& e : legend)
    out += std::string("<span><i style=\"background:") + Color(e.color) + "\"></i>" +
           Escape(e.label) + "</span>";
  out += "</div>\n";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg class=\"bars\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
                "aria-label=\"",
                width, height, width, height);
  out += buf;
  out += Escape(aria_label) + "\">\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const BarRow& r = rows[i];
    const int y = kTop + kRowH * static_cast<int>(i);
    std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", kLabelW - 6,
                  y + kBarH - 3);
    out += buf + Escape(r.label) + "</text>";
    int64_t total = 0;
    for (const Segment& s : r.segments) total += std::max<int64_t>(0, s.value);
    double x = kLabelW;
    for (size_t k = 0; k < r.segments.size(); ++k) {
      const Segment& s = r.segments[k];
      if (s.value <= 0 || max_total <= 0) continue;
      const double w = static_cast<double>(kBarW) * static_cast<double>(s.value) /
                       static_cast<double>(max_total);
      std::snprintf(buf, sizeof buf,
                    "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\">", x, y,
                    std::max(w, 0.5), kBarH, Color(s.color));
      out += buf;
      std::string label;
      for (const LegendEntry& e : legend)
        if (e.color == s.color) label = e.label;
      out += "<title>" + Escape(r.label + " · " + label + ": " + HumanDuration(s.value) + " (" +
                                Pct(s.value, total) + ")") +
             "</title></rect>";
      x += w;
    }
    std::snprintf(buf, sizeof buf, "<text x=\"%.2f\" y=\"%d\">", x + 6, y + kBarH - 3);
    out += buf + Escape(r.note) + "</text>\n";
  }
  out += "</svg>\n";
  return out;
}

std::string LineChart(const std::vector<Series>& series, std::string_view x_unit,
                      std::string_view y_unit, std::string_view aria_label) {
  constexpr int kW = 1000, kH = 260, kLeft = 70, kRight = 20, kTop = 12, kBottom = 34;
  double x0 = 0, x1 = 0, y1 = 0;
  bool any = false;
  for (const Series& s : series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!any) x0 = x1 = s.x[i];
      any = true;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y1 = std::max(y1, s.y[i]);
    }
  }
  if (!any) return "<p class=\"muted\">No data.</p>\n";
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= 0) y1 = 1;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto px = [&](double x) { return kLeft + pw * (x - x0) / (x1 - x0); };
  auto py = [&](double y) { return kTop + ph * (1 - y / y1); };
  std::string out = "<div class=\"legend\">";
  for (const Series& s : series)
    out += std::string("<span><i style=\"background:") + Color(s.color) + "\"></i>" +
           Escape(s.label) + "</span>";
  out += "</div>\n";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "<svg class=\"line\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
                "aria-label=\"",
                kW, kH, kW, kH);
  out += buf + Escape(aria_label) + "\">\n";
  // Axes and 5 ticks each.
  for (int t = 0; t <= 4; ++t) {
    const double yv = y1 * t / 4, xv = x0 + (x1 - x0) * t / 4;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>", kLeft,
                  kW - kRight, py(yv), py(yv));
    out += buf;
    std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>",
                  kLeft - 6, py(yv) + 4, yv);
    out += buf;
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.4g</text>",
                  px(xv), kH - kBottom + 16, xv);
    out += buf;
  }
  out += "<text x=\"" + std::to_string(kW - kRight) + "\" y=\"" + std::to_string(kH - 2) +
         "\" text-anchor=\"end\">" + Escape(x_unit) + "</text>";
  out += "<text x=\"4\" y=\"" + std::to_string(kTop + 4) + "\">" + Escape(y_unit) + "</text>\n";
  for (const Series& s : series) {
    std::string pts;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", px(s.x[i]), py(s.y[i]));
      pts += buf;
    }
    out += std::string("<polyline fill=\"none\" stroke-width=\"1.8\" stroke=\"") + Color(s.color) +
           "\" points=\"" + pts + "\"><title>" + Escape(s.label) + "</title></polyline>\n";
  }
  out += "</svg>\n";
  return out;
}

std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows,
                  const std::vector<size_t>& numeric) {
  auto is_num = [&](size_t c) { return std::find(numeric.begin(), numeric.end(), c) != numeric.end(); };
  std::string out = "<table>\n<thead><tr>";
  for (size_t c = 0; c < header.size(); ++c)
    out += std::string(is_num(c) ? "<th class=\"num\">" : "<th>") + Escape(header[c]) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (size_t c = 0; c < row.size(); ++c)
      out += std::string(is_num(c) ? "<td class=\"num\">" : "<td>") + Escape(row[c]) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n";
  return out;
}

}  // namespace html

namespace {

using html::Escape;

double Share(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string Fmt2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string Pct1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", v);
  return buf;
}

// Mangled C++ kernel names can run to 1,000 characters; tables show the first 100 (the JSON block
// has them whole). Cuts on a UTF-8 code point boundary.
std::string Ellipsize(const std::string& name, size_t max_bytes = 100) {
  if (name.size() <= max_bytes) return name;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return name.substr(0, cut) + "…";
}

std::string RankTitle(const RankReport& rr) {
  const analyze::TraceSummary& s = rr.summary;
  std::string t = s.rank >= 0 ? "rank " + std::to_string(s.rank) : std::string("rank ?");
  if (s.world_size > 0) t += " of " + std::to_string(s.world_size);
  return t;
}

// Per-rank blocks fold away when there are many ranks; the first stays open.
std::string OpenRank(const RankReport& rr, size_t index, size_t n) {
  if (n == 1) return "<div class=\"rank\">\n";
  return std::string(index == 0 ? "<details class=\"rank\" open>" : "<details class=\"rank\">") +
         "<summary>" + Escape(RankTitle(rr)) + "</summary>\n";
}
std::string CloseRank(size_t n) { return n == 1 ? "</div>\n" : "</details>\n"; }

const char* SeverityClass(advise::Severity s) {
  switch (s) {
    case advise::Severity::kCritical: return "critical";
    case advise::Severity::kWarning: return "warning";
    default: return "info";
  }
}

std::string VerdictSection(const Report& report) {
  std::string out = "<section id=\"verdict\">\n<h2>Verdict</h2>\n";
  for (const RankReport& rr : report.ranks) {
    const advise::Advice& a = rr.advice;
    out += "<p class=\"verdict\">";
    if (report.ranks.size() > 1) out += Escape(RankTitle(rr)) + ": ";
    out += "<strong>" + Escape(a.verdict) + "</strong>";
    if (!a.findings.empty()) {
      const advise::Finding& f = a.findings.front();
      out += " — " + Escape(f.title);
      if (f.estimated_saving_ns_per_step > 0)
        out += " <span class=\"saving\">(save ≈ " +
               Escape(HumanDuration(f.estimated_saving_ns_per_step)) + " per step, " +
               Escape(Pct1(f.estimated_saving_pct)) + ")</span>";
    }
    out += "</p>\n";
  }
  if (report.ranks.empty()) out += "<p class=\"err\">No trace could be read.</p>\n";
  out += "</section>\n";
  return out;
}

std::string FindingsSection(const Report& report) {
  std::string out = "<section id=\"findings\">\n<h2>Findings</h2>\n";
  const size_t n = report.ranks.size();
  for (size_t i = 0; i < n; ++i) {
    const RankReport& rr = report.ranks[i];
    out += OpenRank(rr, i, n);
    if (rr.advice.findings.empty()) out += "<p class=\"muted\">No finding.</p>\n";
    for (const advise::Finding& f : rr.advice.findings) {
      out += std::string("<article class=\"finding ") + SeverityClass(f.severity) + "\" id=\"" +
             Escape("finding-" + std::to_string(i) + "-" + f.id) + "\">\n";
      out += "<h3>" + Escape(f.title) + " <span class=\"muted mono\">" + Escape(f.id) + " · " +
             advise::SeverityName(f.severity) + "</span></h3>\n";
      out += "<p><span class=\"saving\">Estimated saving: " +
             Escape(f.estimated_saving_ns_per_step > 0
                        ? HumanDuration(f.estimated_saving_ns_per_step) + " per step (" +
                              Pct1(f.estimated_saving_pct) + ")"
                        : std::string("none per step")) +
             "</span>";
      if (!f.saving_assumption.empty()) out += " — " + Escape(f.saving_assumption);
      out += "</p>\n<dl class=\"evidence\">";
      for (const auto& [label, value] : f.evidence)
        out += "<dt>" + Escape(label) + "</dt><dd>" + Escape(value) + "</dd>";
      out += "</dl>\n<p class=\"fix\"><b>Fix:</b> " + Escape(f.fix) + "</p>\n";
      char conf[64];
      std::snprintf(conf, sizeof conf, "confidence %.2f", f.confidence);
      out += std::string("<p class=\"muted\">") + conf + "</p>\n</article>\n";
    }
    out += CloseRank(n);
  }
  out += "</section>\n";
  return out;
}

// Step categories in the order of the tb_plugin view; colours fixed per category.
constexpr int kStepColors[analyze::kStepCategoryCount] = {0, 1, 6, 3, 4, 5, 2, 7};
constexpr const char* kStepLabels[analyze::kStepCategoryCount] = {
    "kernel", "memcpy", "memset", "communication", "runtime", "DataLoader", "CPU exec", "other"};

std::string StepsSection(const Report& report) {
  std::string out = "<section id=\"steps\">\n<h2>Step time breakdown</h2>\n";
  std::vector<html::LegendEntry> legend;
  for (size_t c = 0; c < analyze::kStepCategoryCount; ++c)
    legend.push_back({kStepLabels[c], kStepColors[c]});
  const size_t n = report.ranks.size();
  for (size_t i = 0; i < n; ++i) {
    const RankReport& rr = report.ranks[i];
    const analyze::StepsResult& s = rr.steps;
    out += OpenRank(rr, i, n);
    if (s.steps.empty()) {
      out += "<p class=\"muted\">No steps (no ProfilerStep and no GPU work).</p>\n";
      out += CloseRank(n);
      continue;
    }
    out += "<p>Mean steady-state step <b>" + Escape(HumanDuration(s.mean_steady_step_ns)) +
           "</b> over " + std::to_string(s.steady_count) +
           (s.whole_span_fallback ? " span (no ProfilerStep in the trace)" : " steps") + ": ";
    std::string parts;
    for (size_t c = 0; c < analyze::kStepCategoryCount; ++c) {
      if (!parts.empty()) parts += " · ";
      parts += std::string(kStepLabels[c]) + " " +
               Pct1(Share(s.mean_steady_ns[c], s.mean_steady_step_ns));
    }
    out += Escape(parts) + "</p>\n";
    std::vector<html::BarRow> rows;
    // A chart row per step; very long traces show the first 200 (the table in JSON has them all).
    constexpr size_t kMaxRows = 200;
    for (size_t k = 0; k < s.steps.size() && k < kMaxRows; ++k) {
      const analyze::StepBreakdown& st = s.steps[k];
      html::BarRow row;
      row.label = st.step >= 0 ? "step " + std::to_string(st.step) : st.name;
      if (st.incomplete)
        row.label += " (incomplete)";
      else if (!st.steady_state)
        row.label += " (warm-up)";
      for (size_t c = 0; c < analyze::kStepCategoryCount; ++c)
        row.segments.push_back({st.category_ns[c], kStepColors[c]});
      row.note = HumanDuration(st.duration_ns);
      rows.push_back(std::move(row));
    }
    out += html::StackedBars(rows, legend, "Per-step time by category, " + RankTitle(rr));
    if (s.steps.size() > kMaxRows)
      out += "<p class=\"muted\">First " + std::to_string(kMaxRows) + " of " +
             std::to_string(s.steps.size()) + " steps shown.</p>\n";
    out += CloseRank(n);
  }
  out += "</section>\n";
  return out;
}

std::string RanksSection(const Report& report) {
  std::string out = "<section id=\"ranks\">\n<h2>Ranks</h2>\n";
  const analyze::RanksResult& r = report.across_ranks;
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < report.ranks.size(); ++i) {
    const RankReport& rr = report.ranks[i];
    const analyze::ExclusiveBreakdown& ex = rr.gpu_time.exclusive;
    std::vector<std::string> row = {
        rr.summary.rank >= 0 ? std::to_string(rr.summary.rank) : "?",
        rr.summary.device_name.empty() ? "–" : rr.summary.device_name,
        HumanDuration(rr.steps.mean_steady_step_ns),
        "", Pct1(Share(ex.compute_ns, ex.span_ns)), Pct1(Share(ex.exposed_communication_ns, ex.span_ns)),
        Pct1(Share(ex.idle_ns, ex.span_ns)), "", rr.advice.verdict, rr.summary.path};
    if (i < r.ranks.size() && r.ranks.size() >= 2) {
      const analyze::RankRow& rank_row = r.ranks[i];
      char buf[32];
      std::snprintf(buf, sizeof buf, "%+.1f %%%s", 100 * rank_row.slowdown,
                    rank_row.straggler ? " straggler" : "");
      row[3] = buf;
      row[7] = GroupDigits(rank_row.last_arrivals) + " of " + GroupDigits(r.collectives_compared);
    } else {
      row[3] = row[7] = "–";
    }
    rows.push_back(std::move(row));
  }
  if (r.ranks.size() >= 2)
    out += "<p>Median step " + Escape(HumanDuration(r.median_step_ns)) +
           "; a straggler is a rank more than 10 % slower than the median.</p>\n";
  out += html::Table({"rank", "device", "step", "vs median", "compute", "exposed comm", "idle",
                      "last at collectives", "verdict", "file"},
                     rows, {2, 3, 4, 5, 6, 7});
  // One exclusive-breakdown bar per rank: compute / exposed comm / exposed copies / other / idle.
  std::vector<html::BarRow> bars;
  for (const RankReport& rr : report.ranks) {
    const analyze::ExclusiveBreakdown& ex = rr.gpu_time.exclusive;
    bars.push_back({RankTitle(rr),
                    {{ex.compute_ns, 0}, {ex.exposed_communication_ns, 3},
                     {ex.exposed_memory_ns, 1}, {ex.other_ns, 7}, {ex.idle_ns, 8}},
                    HumanDuration(ex.span_ns)});
  }
  out += "<h3>GPU time, exclusive (sums to the analysed span)</h3>\n";
  out += html::StackedBars(bars,
                           {{"compute", 0}, {"exposed communication", 3}, {"exposed copies", 1},
                            {"other", 7}, {"idle", 8}},
                           "Exclusive GPU time breakdown per rank");
  out += "</section>\n";
  return out;
}

std::string KernelsSection(const Report& report) {
  std::string out = "<section id=\"kernels\">\n<h2>Top kernels</h2>\n";
  const size_t n = report.ranks.size();
  for (size_t i = 0; i < n; ++i) {
    const RankReport& rr = report.ranks[i];
    const analyze::KernelsResult& k = rr.kernels;
    out += OpenRank(rr, i, n);
    if (k.math_ns > 0) {
      std::string mix;
      for (size_t p = 1; p < analyze::kMathPrecisionCount; ++p) {
        if (k.math_ns_by_precision[p] == 0) continue;
        if (!mix.empty()) mix += " · ";
        mix += std::string(analyze::MathPrecisionName(static_cast<analyze::MathPrecision>(p))) +
               " " + Pct1(Share(k.math_ns_by_precision[p], k.math_ns));
      }
      out += "<p>GEMM/conv/attention time " + Escape(HumanDuration(k.math_ns)) + ", " +
             Escape(Pct1(Share(k.tensor_core_ns, k.math_ns))) + " on tensor cores (" +
             Escape(mix) + ").</p>\n";
    }
    const analyze::OccupancyStats& oc = rr.occupancy;
    if (oc.available) {
      std::string line = "Est. SM efficiency " + Fmt2(oc.sm_efficiency) +
                         " (tb_plugin's definition)";
      if (oc.achieved_occupancy_pct >= 0)
        line += ", est. achieved occupancy " + Pct1(oc.achieved_occupancy_pct);
      line += "; kernels with fewer blocks than SMs take " + Pct1(100 * oc.tiny_grid_share) +
              " of compute-kernel time.";
      out += "<p>" + Escape(line) + "</p>\n";
      std::vector<std::vector<std::string>> tiny;
      for (const analyze::TinyGridKernel& t : oc.tiny)
        tiny.push_back({Ellipsize(t.name), GroupDigits(t.count), HumanDuration(t.total_ns),
                        Fmt2(t.mean_blocks_per_sm),
                        t.mean_occupancy_pct >= 0 ? Pct1(t.mean_occupancy_pct) : "–"});
      if (!tiny.empty())
        out += html::Table({"tiny-grid kernel", "count", "total", "blocks per SM", "occupancy"},
                           tiny, {1, 2, 3, 4});
    }
    std::vector<std::vector<std::string>> rows;
    for (const analyze::ClassKernels& c : k.classes) {
      for (const analyze::KernelRow& r : c.top) {
        rows.push_back({analyze::KernelClassName(c.cls), Ellipsize(r.name), GroupDigits(r.count),
                        HumanDuration(r.total_ns),
                        HumanDuration(r.total_ns / static_cast<int64_t>(std::max<uint64_t>(1, r.count))),
                        Pct1(100 * r.share), analyze::MathPrecisionName(r.precision)});
      }
    }
    if (rows.empty())
      out += "<p class=\"muted\">No kernels.</p>\n";
    else
      out += html::Table({"class", "kernel", "count", "total", "mean", "share of class", "precision"},
                         rows, {2, 3, 4, 5});
    out += CloseRank(n);
  }
  out += "</section>\n";
  return out;
}

std::string IdleSection(const Report& report) {
  std::string out = "<section id=\"idle\">\n<h2>GPU idle time and its causes</h2>\n";
  out +=
      "<p class=\"muted\">Per stream, each idle gap is attributed as HTA does: host wait (the "
      "next kernel was launched after the gap began), kernel wait (short gaps between queued "
      "kernels), other.</p>\n";
  const size_t n = report.ranks.size();
  for (size_t i = 0; i < n; ++i) {
    const RankReport& rr = report.ranks[i];
    const analyze::GpuTime& g = rr.gpu_time;
    out += OpenRank(rr, i, n);
    const analyze::ExclusiveBreakdown& ex = g.exclusive;
    out += "<p>GPU idle " + Escape(HumanDuration(ex.idle_ns)) + " of " +
           Escape(HumanDuration(ex.span_ns)) + " (" + Escape(Pct1(Share(ex.idle_ns, ex.span_ns))) +
           ")";
    if (g.comm_compute_overlap_ratio >= 0)
      out += "; " + Escape(Pct1(100 * g.comm_compute_overlap_ratio)) +
             " of communication time runs under compute";
    out += ".</p>\n";
    std::vector<html::BarRow> rows;
    for (const analyze::StreamIdle& s : g.idle_by_stream) {
      if (s.gaps == 0) continue;
      rows.push_back({"stream " + std::to_string(s.stream),
                      {{s.host_wait_ns, 5}, {s.kernel_wait_ns, 4}, {s.other_ns, 7}},
                      HumanDuration(s.host_wait_ns + s.kernel_wait_ns + s.other_ns)});
    }
    if (rows.empty())
      out += "<p class=\"muted\">No idle gap on any stream.</p>\n";
    else
      out += html::StackedBars(rows, {{"host wait", 5}, {"kernel wait", 4}, {"other", 7}},
                               "Idle time per stream by cause, " + RankTitle(rr));
    // All-streams gaps of 1 ms or more, and who claims them (docs/metrics.md, idle gaps).
    const analyze::IdleGapStats& ig = rr.idle_gaps;
    if (ig.long_gaps > 0) {
      out += "<h3>Idle gaps of 1 ms or more (all streams)</h3>\n<p>" +
             Escape(GroupDigits(ig.long_gaps)) + " gaps, " + Escape(HumanDuration(ig.long_gap_ns)) +
             ": " + Escape(GroupDigits(ig.long_gaps_after_sync)) + " after a sync (" +
             Escape(HumanDuration(ig.long_gap_after_sync_ns)) + "), DataLoader " +
             Escape(HumanDuration(ig.long_gap_dataloader_ns)) + ", unexplained " +
             Escape(HumanDuration(ig.unexplained_ns)) + " (" +
             Escape(HumanDuration(ig.unexplained_ns_per_steady_step)) +
             " per steady step).</p>\n";
      std::vector<std::vector<std::string>> gaps;
      for (const analyze::IdleGap& gap : ig.longest) {
        std::string host;
        for (const auto& [name, ns] : gap.host_ops) {
          if (!host.empty()) host += "; ";
          host += (rr.trace ? std::string(rr.trace->Str(name)) : "?") + " (" + HumanDuration(ns) + ")";
        }
        gaps.push_back({gap.step >= 0 ? std::to_string(gap.step) : "–",
                        HumanDuration(gap.end_ns - gap.start_ns), analyze::IdleClaimName(gap.claim),
                        host.empty() ? "–" : host});
      }
      out += html::Table({"step", "gap", "claimed by", "host was in"}, gaps, {1});
    }
    out += CloseRank(n);
  }
  out += "</section>\n";
  return out;
}

std::string MemorySection(const Report& report) {
  std::string out = "<section id=\"memory\">\n<h2>Memory</h2>\n";
  const size_t n = report.ranks.size();
  for (size_t i = 0; i < n; ++i) {
    const RankReport& rr = report.ranks[i];
    out += OpenRank(rr, i, n);
    const analyze::DeviceMemory* d = analyze::RankDevice(rr.memory);
    if (!d) {
      out += "<p class=\"muted\">No [memory] events (record with profile_memory=True).</p>\n";
      out += CloseRank(n);
      continue;
    }
    std::string line = "Device " + std::to_string(d->device) + ": peak allocated " +
                       HumanBytes(static_cast<uint64_t>(std::max<int64_t>(0, d->peak_allocated_bytes)));
    if (d->peak_reserved_bytes >= 0)
      line += ", peak reserved " + HumanBytes(static_cast<uint64_t>(d->peak_reserved_bytes));
    if (d->total_bytes > 0) line += " of " + HumanBytes(static_cast<uint64_t>(d->total_bytes));
    if (d->headroom_bytes >= 0)
      line += " (headroom " + HumanBytes(static_cast<uint64_t>(d->headroom_bytes)) + ")";
    out += "<p>" + Escape(line) + ".</p>\n";
    constexpr double kGB = 1e9;
    html::Series alloc{"allocated", 0, {}, {}}, reserved{"reserved", 5, {}, {}};
    for (const analyze::MemoryPoint& p : d->timeline) {
      const double t_ms = static_cast<double>(p.ts_ns - d->first_ts_ns) / 1e6;
      alloc.x.push_back(t_ms);
      alloc.y.push_back(static_cast<double>(std::max<int64_t>(0, p.allocated_bytes)) / kGB);
      if (p.reserved_bytes >= 0) {
        reserved.x.push_back(t_ms);
        reserved.y.push_back(static_cast<double>(p.reserved_bytes) / kGB);
      }
    }
    std::vector<html::Series> series = {alloc};
    if (!reserved.x.empty()) series.push_back(reserved);
    if (d->total_bytes > 0 && !alloc.x.empty()) {
      const double total = static_cast<double>(d->total_bytes) / kGB;
      series.push_back({"device memory", 7, {alloc.x.front(), alloc.x.back()}, {total, total}});
    }
    out += html::LineChart(series, "ms since the first memory event", "GB",
                           "Device memory over time, " + RankTitle(rr));
    out += CloseRank(n);
  }
  out += "</section>\n";
  return out;
}

std::string CopiesSection(const Report& report) {
  std::string out = "<section id=\"copies\">\n<h2>Copies</h2>\n";
  const size_t n = report.ranks.size();
  for (size_t i = 0; i < n; ++i) {
    const RankReport& rr = report.ranks[i];
    const analyze::CopyStats& c = rr.copies;
    out += OpenRank(rr, i, n);
    std::vector<std::vector<std::string>> rows;
    for (const analyze::DirectionTotals& d : c.directions) {
      if (d.count == 0) continue;
      rows.push_back({analyze::CopyDirectionName(d.direction), GroupDigits(d.count),
                      HumanBytes(static_cast<uint64_t>(std::max<int64_t>(0, d.bytes))),
                      HumanDuration(d.time_ns), Fmt2(d.achieved_gbps), GroupDigits(d.pageable),
                      GroupDigits(d.pinned)});
    }
    if (c.memsets.count > 0)
      rows.push_back({"memset", GroupDigits(c.memsets.count),
                      HumanBytes(static_cast<uint64_t>(std::max<int64_t>(0, c.memsets.bytes))),
                      HumanDuration(c.memsets.time_ns), Fmt2(c.memsets.achieved_gbps), "–", "–"});
    if (rows.empty()) {
      out += "<p class=\"muted\">No copies.</p>\n";
    } else {
      out += html::Table({"direction", "count", "bytes", "GPU time", "GB/s achieved", "pageable",
                          "pinned"},
                         rows, {1, 2, 3, 4, 5, 6});
      out += "<p>" + Escape(GroupDigits(c.sync_memcpys)) + " synchronous copies, " +
             Escape(GroupDigits(c.effectively_sync_memcpys)) +
             " asynchronous calls made synchronous by pageable memory, " +
             Escape(GroupDigits(c.tiny_memcpys)) + " copies under 64 KiB.</p>\n";
    }
    out += CloseRank(n);
  }
  out += "</section>\n";
  return out;
}

std::string LaunchesSection(const Report& report) {
  std::string out = "<section id=\"launches\">\n<h2>Launches and synchronisation</h2>\n";
  const size_t n = report.ranks.size();
  for (size_t i = 0; i < n; ++i) {
    const RankReport& rr = report.ranks[i];
    const analyze::LaunchSummary& l = rr.launches.all;
    out += OpenRank(rr, i, n);
    if (l.n == 0) {
      out += "<p class=\"muted\">No launch linked to GPU work.</p>\n";
    } else {
      out += html::Table(
          {"launches", "median CPU call", "median kernel", "median launch → start",
           "p95 launch → start", "kernels shorter than their launch", "calls > 50 µs"},
          {{GroupDigits(l.n), HumanDuration(static_cast<int64_t>(l.median_cpu_duration_ns)),
            HumanDuration(static_cast<int64_t>(l.median_gpu_duration_ns)),
            HumanDuration(static_cast<int64_t>(l.median_launch_delay_ns)),
            HumanDuration(static_cast<int64_t>(l.p95_launch_delay_ns)),
            GroupDigits(l.short_kernels), GroupDigits(l.runtime_outliers)}},
          {0, 1, 2, 3, 4, 5, 6});
      std::vector<std::vector<std::string>> apis;
      for (const analyze::LaunchApiCount& a : rr.launches.apis)
        apis.push_back({rr.trace ? std::string(rr.trace->Str(a.name)) : "?",
                        GroupDigits(a.calls), GroupDigits(a.gpu_activities),
                        HumanDuration(a.total_cpu_duration_ns)});
      if (!apis.empty())
        out += html::Table({"launch API", "calls", "GPU activities", "CPU time"}, apis, {1, 2, 3});
    }
    const analyze::SyncStats& sy = rr.sync;
    if (!sy.points.empty()) {
      out += "<p>" + Escape(GroupDigits(sy.points.size())) + " host-blocking sync points, " +
             Escape(HumanDuration(sy.blocked_ns)) + " blocked; GPU idle while the host resumes " +
             Escape(HumanDuration(sy.gpu_idle_after_sync_ns)) + ".</p>\n";
      std::vector<std::vector<std::string>> causes;
      for (size_t k = 0; k < sy.causes.size() && k < 10; ++k)
        causes.push_back({rr.trace ? std::string(rr.trace->Str(sy.causes[k].name)) : "?",
                          GroupDigits(sy.causes[k].sync_points),
                          HumanDuration(sy.causes[k].blocked_ns)});
      out += html::Table({"cause", "sync points", "blocked"}, causes, {1, 2});
    }
    out += CloseRank(n);
  }
  out += "</section>\n";
  return out;
}

std::string InputsSection(const Report& report) {
  std::string out = "<section id=\"inputs\">\n<h2>Inputs and diagnostics</h2>\n";
  std::vector<std::vector<std::string>> rows;
  for (const RankReport& rr : report.ranks) {
    const analyze::TraceSummary& s = rr.summary;
    uint64_t skipped = 0;
    for (uint64_t c : s.diagnostics.count) skipped += c;
    rows.push_back({RankTitle(rr), s.path, HumanBytes(s.file_bytes) + (s.gzip ? " gzip" : ""),
                    GroupDigits(s.events_total), GroupDigits(skipped)});
  }
  out += html::Table({"rank", "file", "size", "events", "diagnostics"}, rows, {2, 3, 4});
  for (const RankReport& rr : report.ranks) {
    const analyze::TraceSummary& s = rr.summary;
    for (size_t i = 0; i < s.diagnostics.count.size(); ++i) {
      if (s.diagnostics.count[i] == 0) continue;
      out += "<p class=\"warn\">" + Escape(RankTitle(rr)) + ": " +
             Escape(GroupDigits(s.diagnostics.count[i])) + " " +
             Escape(DiagDescription(static_cast<Diag>(i))) + "</p>\n";
    }
    for (const std::string& w : s.warnings)
      out += "<p class=\"warn\">" + Escape(RankTitle(rr)) + ": " + Escape(w) + "</p>\n";
  }
  for (const Status& f : report.failures)
    out += "<p class=\"err\">error: " + Escape(f.message()) + "</p>\n";
  out += "</section>\n";
  return out;
}

}  // namespace

std::string RenderHtml(const Report& report) {
  const size_t n = report.ranks.size();
  std::string title = "gpuscope report";
  if (n == 1) title += " · " + report.ranks.front().summary.path;
  if (n > 1) title += " · " + std::to_string(n) + " ranks";
  std::string out = html::PageStart(title);
  out += "<header><h1>gpuscope report</h1><p class=\"muted\">gpuscope " +
         Escape(GPUSCOPE_VERSION) + " · " + std::to_string(n) + (n == 1 ? " rank" : " ranks") +
         "</p>\n<nav><a href=\"#verdict\">verdict</a><a href=\"#findings\">findings</a>"
         "<a href=\"#steps\">steps</a><a href=\"#ranks\">ranks</a><a href=\"#kernels\">kernels</a>"
         "<a href=\"#idle\">idle</a><a href=\"#memory\">memory</a><a href=\"#copies\">copies</a>"
         "<a href=\"#launches\">launches</a><a href=\"#inputs\">inputs</a></nav></header>\n<main>\n";
  out += VerdictSection(report);
  out += FindingsSection(report);
  out += StepsSection(report);
  out += RanksSection(report);
  out += KernelsSection(report);
  out += IdleSection(report);
  out += MemorySection(report);
  out += CopiesSection(report);
  out += LaunchesSection(report);
  out += InputsSection(report);
  out += "</main>\n";
  // The JSON report, for tools: a data block the browser never executes. The JSON writer escapes
  // '<' as \u003c, so no name can close this element early.
  out += "<script type=\"application/json\" id=\"gpuscope-report\">\n";
  out += RenderJson(report);
  out += "</script>\n";
  out += html::PageEnd();
  return out;
}

}  // namespace gpuscope::report
