#include "render/html.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/utf8.h"
#include "gpuscope/version.h"
#include "render/format.h"
#include "render/json.h"
#include "render/text.h"

namespace gpuscope::render {

namespace {

const char* Color(size_t i) {
  // Okabe–Ito palette (colour-blind safe) plus greys for "other" and "idle".
  static constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
                                             "#D55E00", "#F0E442", "#999999", "#DDDDDD"};
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

// Text breaks anywhere rather than widen the page (a title holding a long input path, a
// finding naming a kernel); table cells keep their words whole and scroll instead.
const char* kStyle =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1a1a1a;"
    "background:#fff;margin:0 auto;max-width:1120px;padding:16px 24px;overflow-wrap:anywhere}\n"
    "h1{font-size:22px;margin:8px 0}h2{font-size:18px;border-bottom:2px solid #0072B2;"
    "padding-bottom:2px;margin-top:28px}h3{font-size:15px;margin:16px 0 4px}h4{font-size:14px;"
    "margin:12px 0 4px}\n"
    ".scroll{overflow-x:auto}"
    "table{border-collapse:collapse;margin:6px 0 12px}th,td{padding:3px 8px;"
    "border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}"
    "th{background:#f4f6f8}th,td{overflow-wrap:normal;word-break:normal;hyphens:none}"
    "td.num,th.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}"
    "table:not(.kv) "
    "td:not(.num){font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}\n"
    "table.kv th{background:none;color:#555;font-weight:normal;white-space:nowrap}"
    // Rows of fields wrap (a long path or name breaks anywhere) rather than widen the page.
    "table.kv{max-width:100%}table.kv td{overflow-wrap:anywhere}\n"
    ".finding{border-left:5px solid #999;padding:6px 12px;margin:10px 0;background:#fafafa}\n"
    ".finding.critical{border-color:#D55E00}.finding.warning{border-color:#E69F00}"
    ".finding.info{border-color:#56B4E9}\n"
    ".finding h4{margin:2px 0}.saving{font-weight:600}.fix{background:#eef6ee;padding:4px 8px}\n"
    "dl.evidence{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:6px 0}"
    "dl.evidence dt{color:#555}dl.evidence dd{margin:0}\n"
    ".legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;"
    "width:11px;height:11px;margin-right:4px;vertical-align:-1px}\n"
    "svg{display:block;max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;"
    "fill:#333}\n.muted{color:#666}pre{background:#f4f6f8;padding:8px 12px;overflow-x:auto}\n"
    // The table of contents (Nav) and folded sections (SectionOut).
    "nav{background:#f4f6f8;padding:6px 12px;margin:8px 0 12px;font-size:13px}"
    "nav ul{margin:2px 0;padding-left:18px}nav .sub a{margin-right:10px;color:#0b5a8c}"
    "nav .sub{font-size:12px}summary{cursor:pointer}summary h2,summary h3,summary h4{"
    "display:inline}details>summary{margin:14px 0 4px}\n"
    // The zoomable timeline (Timeline): labels beside a scrolling plot widened by the radios.
    ".tl{font-size:12px;margin:4px 0 12px}.tl label{margin:0 8px 0 2px}"
    ".tlbody{display:flex;margin-top:4px}.tllabels{flex:none;width:210px}"
    ".tllabels div{height:20px;line-height:20px;font-size:11px;white-space:nowrap;"
    "overflow:hidden;text-overflow:ellipsis;text-align:right;padding-right:6px}"
    ".tlscroll{flex:1;min-width:0;overflow-x:auto}.tlplot{position:relative;width:100%}"
    ".tlplot svg{width:100%;max-width:none}"
    ".tlaxis{position:relative;height:18px;font-size:11px;color:#333}"
    ".tlaxis span{position:absolute;transform:translateX(-50%);white-space:nowrap}"
    ".tlaxis span:first-child{transform:none}"
    ".tl input:nth-of-type(2):checked~.tlbody .tlplot{width:400%}"
    ".tl input:nth-of-type(3):checked~.tlbody .tlplot{width:1600%}"
    ".tl input:nth-of-type(4):checked~.tlbody .tlplot{width:6400%}\n";

std::string FieldsHtml(const std::vector<Field>& fields, bool verbose) {
  std::string out;
  for (const Field& f : fields) {
    if (f.detail && !verbose) continue;
    if (!out.empty()) out += f.label == "→" || f.label == "–" ? " " : " · ";
    if (!f.label.empty()) out += HtmlEscape(f.label) + " ";
    out += "<b>" + HtmlEscape(FormatValue(f.value)) + "</b>";
  }
  return out;
}

// Axis labels: the tick's value in the chart's unit, at the precision the tick step needs.
std::string TickLabel(double v, Unit unit) {
  switch (unit) {
    case Unit::kBytes:
      return FormatBytes(v);
    case Unit::kNanos:
      return FormatDuration(static_cast<int64_t>(std::llround(v)));
    case Unit::kShare:
      return FormatShare(v, 0);
    case Unit::kPercent:
      return FormatNumber(v, 0) + " %";
    case Unit::kWatts:
      return FormatNumber(v, 0) + " W";
    case Unit::kMegahertz:
      return FormatNumber(v, 0) + " MHz";
    default:
      return fmt::format("{:g}", v);
  }
}

// A chart's number as a value of the chart's unit (durations are whole ns).
Value ChartValue(double v, Unit unit) {
  return unit == Unit::kNanos ? Value::Nanos(static_cast<int64_t>(std::llround(v)))
                              : Value::Number(v, -1, unit);
}

struct Page {
  bool verbose = false;
  std::string id_;  // of the section being written
  std::string out;

  void RowsTable(const std::vector<const Row*>& rows) {
    if (rows.empty()) return;
    out += "<table class=\"kv\">\n";
    for (const Row* r : rows) {
      if (r->detail && !verbose) continue;
      out += "<tr><th>" + HtmlEscape(r->label) + "</th><td>" + FieldsHtml(r->fields, verbose);
      if (!r->note.empty()) out += " <span class=\"muted\">" + HtmlEscape(r->note) + "</span>";
      out += "</td></tr>\n";
    }
    out += "</table>\n";
  }

  void TableItem(const Table& t) {
    if (t.rows.empty()) return;
    if (!t.title.empty()) out += "<h4>" + HtmlEscape(t.title) + "</h4>\n";
    std::vector<bool> numeric(t.columns.size(), true);
    for (const auto& row : t.rows)
      for (size_t c = 0; c < row.size() && c < numeric.size(); ++c)
        if (row[c].kind == Value::Kind::kText) numeric[c] = false;
    out += "<div class=\"scroll\"><table>\n<thead><tr>";
    for (size_t c = 0; c < t.columns.size(); ++c)
      out += std::string(numeric[c] ? "<th class=\"num\">" : "<th>") +
             HtmlEscape(t.columns[c].label) + "</th>";
    out += "</tr></thead>\n<tbody>\n";
    for (const auto& row : t.rows) {
      out += "<tr>";
      for (size_t c = 0; c < t.columns.size(); ++c) {
        const Value v = c < row.size() ? row[c] : Value::Na();
        out += std::string(numeric[c] ? "<td class=\"num\">" : "<td>") +
               HtmlEscape(FormatValue(v)) + "</td>";
      }
      out += "</tr>\n";
    }
    out += "</tbody>\n</table></div>\n";
  }

  // A chart's reference values: drawn when of the chart's unit (a capacity on a bytes chart) and
  // within 1.5× of the data's maximum `*max` (which then grows to hold them), else named under the
  // chart; `positive_only` names those at or below 0 too.
  static void SplitReferences(const Chart& c, bool positive_only, double* max,
                              std::vector<const Field*>* drawn, std::vector<const Field*>* beyond) {
    for (const Field& f : c.reference_lines) {
      if (f.value.is_na()) continue;
      const double v = f.value.AsDouble();
      if (f.value.unit == c.unit && (!positive_only || v > 0) &&
          (v <= std::max(*max, 0.0) * 1.5 || *max <= 0)) {
        drawn->push_back(&f);
        *max = std::max(*max, v);
      } else {
        beyond->push_back(&f);
      }
    }
  }

  void Legend(const std::vector<Series>& series) {
    out += "<div class=\"legend\">";
    for (size_t i = 0; i < series.size(); ++i)
      out += std::string("<span><i style=\"background:") + Color(i) + "\"></i>" +
             HtmlEscape(series[i].label) + "</span>";
    out += "</div>\n";
  }

  void Bars(const Chart& c) {
    constexpr int kLabelW = 200, kBarW = 720, kNoteW = 100, kRowH = 20, kBarH = 14, kTop = 4;
    const int width = kLabelW + kBarW + kNoteW;
    const int height =
        kTop * 2 + kRowH * static_cast<int>(std::max<size_t>(c.categories.size(), 1));
    double max_total = 0;
    std::vector<double> totals(c.categories.size(), 0);
    for (size_t b = 0; b < c.categories.size(); ++b) {
      for (const Series& s : c.series)
        if (b < s.values.size()) totals[b] += std::max(0.0, s.values[b]);
      max_total = std::max(max_total, totals[b]);
    }
    // A reference (a memory budget) is a dashed vertical line; a bar has no length at or below 0.
    std::vector<const Field*> drawn, beyond;
    SplitReferences(c, /*positive_only=*/true, &max_total, &drawn, &beyond);
    Legend(c.series);
    out += fmt::format(
        "<svg class=\"bars\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
        "aria-label=\"{2}\">\n",
        width, height, HtmlEscape(c.title));
    for (size_t b = 0; b < c.categories.size(); ++b) {
      const int y = kTop + kRowH * static_cast<int>(b);
      out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kLabelW - 6,
                         y + kBarH - 3, HtmlEscape(Ellipsize(c.categories[b], 32)));
      double x = kLabelW;
      for (size_t k = 0; k < c.series.size(); ++k) {
        const double v = b < c.series[k].values.size() ? c.series[k].values[b] : 0;
        if (!(v > 0) || max_total <= 0) continue;
        const double w = kBarW * v / max_total;
        out += fmt::format(
            "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
            "fill=\"{}\"><title>{}</title></rect>",
            x, y, std::max(w, 0.5), kBarH, Color(k),
            HtmlEscape(c.categories[b] + " · " + c.series[k].label + ": " +
                       FormatValue(ChartValue(v, c.unit)) + " (" + FormatShare(v / totals[b]) +
                       ")" +
                       (b < c.series[k].notes.size() && !c.series[k].notes[b].empty()
                            ? "\n" + c.series[k].notes[b]
                            : std::string())));
        x += w;
      }
      out += fmt::format("<text x=\"{:.2f}\" y=\"{}\">{}</text>\n", x + 6, y + kBarH - 3,
                         HtmlEscape(FormatValue(ChartValue(totals[b], c.unit))));
    }
    for (const Field* f : drawn) {
      const double x = kLabelW + kBarW * f->value.AsDouble() / max_total;
      out += fmt::format(
          "<line x1=\"{0:.2f}\" x2=\"{0:.2f}\" y1=\"0\" y2=\"{1}\" stroke=\"#B00020\" "
          "stroke-dasharray=\"5 3\"><title>{2}</title></line>\n",
          x, height, HtmlEscape(f->label + " " + FormatValue(f->value)));
    }
    out += "</svg>\n";
    for (const Field* f : drawn)
      out += "<p class=\"muted\">dashed line: " + HtmlEscape(f->label) + " " +
             HtmlEscape(FormatValue(f->value)) + "</p>\n";
    for (const Field* f : beyond)
      out += "<p class=\"muted\">" + HtmlEscape(f->label) + " " +
             HtmlEscape(FormatValue(f->value)) + "</p>\n";
  }

  void Lines(const Chart& c) {
    constexpr int kW = 1000, kH = 260, kLeft = 80, kRight = 20, kTop = 12, kBottom = 34;
    if (c.x.empty() || c.series.empty()) {
      out += "<p class=\"muted\">No data.</p>\n";
      return;
    }
    double x0 = c.x.front(), x1 = c.x.front(), y_max = 0;
    for (double x : c.x) {
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
    }
    for (const Series& s : c.series)
      for (double v : s.values)
        if (std::isfinite(v)) y_max = std::max(y_max, v);
    // The axis fits the data; a reference line (a capacity) is drawn across it.
    std::vector<const Field*> drawn, beyond;
    SplitReferences(c, /*positive_only=*/false, &y_max, &drawn, &beyond);
    const std::vector<double> ticks = NiceTicks(y_max > 0 ? y_max : 1);
    const double y1 = ticks.back();
    if (x1 <= x0) x1 = x0 + 1;
    const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
    auto px = [&](double x) { return kLeft + pw * (x - x0) / (x1 - x0); };
    auto py = [&](double y) { return kTop + ph * (1 - y / y1); };
    Legend(c.series);
    out += fmt::format(
        "<svg class=\"line\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
        "aria-label=\"{2}\">\n",
        kW, kH, HtmlEscape(c.title));
    if (c.x_band.size() == 2 && c.x_band[1] > c.x_band[0])  // the steady phase, behind the lines
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#eef6ee\">"
          "<title>steady phase</title></rect>",
          px(std::max(c.x_band[0], x0)), kTop,
          std::max(0.0, px(std::min(c.x_band[1], x1)) - px(std::max(c.x_band[0], x0))), ph);
    for (double t : ticks) {
      out +=
          fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>",
                      kLeft, kW - kRight, py(t), py(t));
      out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLeft - 6,
                         py(t) + 4, HtmlEscape(TickLabel(t, c.unit)));
    }
    const std::vector<double> xticks = NiceTicks(x1 - x0);
    for (double t : xticks) {
      if (x0 + t > x1 * 1.0001) break;
      out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>", px(x0 + t),
                         kH - kBottom + 16, HtmlEscape(TickLabel(t, c.x_unit)));
    }
    for (size_t k = 0; k < c.series.size(); ++k) {
      std::string pts;
      const Series& s = c.series[k];
      for (size_t i = 0; i < c.x.size() && i < s.values.size(); ++i)
        if (std::isfinite(s.values[i]))
          pts += fmt::format("{:.1f},{:.1f} ", px(c.x[i]), py(s.values[i]));
      out += std::string("<polyline fill=\"none\" stroke-width=\"1.8\" stroke=\"") + Color(k) +
             "\" points=\"" + pts + "\"><title>" + HtmlEscape(s.label) + "</title></polyline>\n";
    }
    for (const Field* f : drawn)
      out += fmt::format(
          "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#B00020\" "
          "stroke-dasharray=\"6 4\"><title>{}</title></line><text x=\"{}\" y=\"{:.1f}\" "
          "text-anchor=\"end\">{}</text>\n",
          kLeft, kW - kRight, py(f->value.AsDouble()), py(f->value.AsDouble()),
          HtmlEscape(f->label + " " + FormatValue(f->value)), kW - kRight - 4,
          py(f->value.AsDouble()) - 4, HtmlEscape(f->label + " " + FormatValue(f->value)));
    out += "</svg>\n";
    for (const Field* f : beyond)
      out += "<p class=\"muted\">" + HtmlEscape(f->label) + " " +
             HtmlEscape(FormatValue(f->value)) + " (above the chart)</p>\n";
  }

  // Rows of cells, one row per series and one column per x; the colour runs from white (0) to
  // the palette's blue at the largest value (1 for shares, so 100 % busy is full blue whatever
  // the data). A cell without data (NaN) is grey. Labels and per-cell tooltips are left out when
  // the rows or cells are too many to read (a 1,000-rank job still fits one page).
  void Heatmap(const Chart& c) {
    constexpr int kLabelW = 120, kPlotW = 880, kRight = 20, kTop = 4, kAxisH = 22;
    constexpr size_t kMaxTooltipCells = 4096;
    const size_t rows = c.series.size(), cols = c.x.size();
    if (rows == 0 || cols == 0) {
      out += "<p class=\"muted\">No data.</p>\n";
      return;
    }
    double v_max = c.unit == Unit::kShare ? 1.0 : 0.0;
    for (const Series& s : c.series)
      for (double v : s.values)
        if (std::isfinite(v)) v_max = std::max(v_max, v);
    if (!(v_max > 0)) v_max = 1;
    const double row_h = std::clamp(640.0 / static_cast<double>(rows), 2.0, 16.0);
    const double col_w = static_cast<double>(kPlotW) / static_cast<double>(cols);
    const bool labels = row_h >= 10;
    const bool tooltips = rows * cols <= kMaxTooltipCells;
    const int height =
        kTop + static_cast<int>(std::ceil(row_h * static_cast<double>(rows))) + kAxisH;
    const int width = kLabelW + kPlotW + kRight;
    // The cell width in the x unit: the step between the first two x values (one cell without).
    const double cell = cols > 1 ? c.x[1] - c.x[0] : 0;
    out +=
        "<div class=\"legend\"><span><i style=\"background:#ffffff;border:1px solid #ccc\"></i>" +
        HtmlEscape(FormatValue(ChartValue(0, c.unit))) +
        "</span><span><i style=\"background:" + Color(0) + "\"></i>" +
        HtmlEscape(FormatValue(ChartValue(v_max, c.unit))) +
        "</span><span><i style=\"background:#bbbbbb\"></i>no data</span></div>\n";
    out += fmt::format(
        "<svg class=\"heatmap\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
        "aria-label=\"{2}\">\n",
        width, height, HtmlEscape(c.title));
    for (size_t r = 0; r < rows; ++r) {
      const Series& s = c.series[r];
      const double y = kTop + row_h * static_cast<double>(r);
      if (labels)
        out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLabelW - 6,
                           y + row_h - 4, HtmlEscape(Ellipsize(s.label, 18)));
      for (size_t k = 0; k < cols; ++k) {
        const double v = k < s.values.size() ? s.values[k] : std::nan("");
        std::string fill = "#bbbbbb";
        if (std::isfinite(v)) {
          // White → #0072B2 (Color(0)), linear in the value.
          const double t = std::clamp(v / v_max, 0.0, 1.0);
          fill = fmt::format("#{:02x}{:02x}{:02x}", static_cast<int>(std::lround(255 - 255 * t)),
                             static_cast<int>(std::lround(255 - (255 - 114) * t)),
                             static_cast<int>(std::lround(255 - (255 - 178) * t)));
        }
        out += fmt::format(
            "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"",
            kLabelW + col_w * static_cast<double>(k), y, col_w + 0.05, row_h, fill);
        if (tooltips)
          out += "><title>" +
                 HtmlEscape(s.label + " · " + TickLabel(c.x[k], c.x_unit) + ": " +
                            (std::isfinite(v) ? FormatValue(ChartValue(v, c.unit))
                                              : std::string("no data"))) +
                 "</title></rect>";
        else
          out += "/>";
      }
      out += "\n";
    }
    // The x axis: ticks over the cells' span, labelled with x.
    const double x0 = c.x.front(), span = c.x.back() + cell - x0;
    if (span > 0) {
      const double y = kTop + row_h * static_cast<double>(rows) + 15;
      for (double t : NiceTicks(span)) {
        if (t > span * 1.0001) break;
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
                           kLabelW + kPlotW * t / span, y, HtmlEscape(TickLabel(x0 + t, c.x_unit)));
      }
    }
    out += "</svg>\n";
  }

  // One lane per category on a shared x axis (from 0 to the longest lane's end), its segments
  // coloured by series; each says what it is and how long on hover. Zoom without a script (the
  // page runs none): radio buttons widen the plot inside a scrolling box, the SVG stretches
  // horizontally only (preserveAspectRatio none), and the lane labels and time ticks are HTML
  // outside it, so no text is stretched.
  void Timeline(const Chart& c, const std::string& chart_id) {
    constexpr int kRowH = 20, kBarH = 14, kPlotUnits = 1000;
    double span = 0;
    for (const Segment& s : c.segments) span = std::max(span, s.end);
    if (c.categories.empty() || c.segments.empty() || !(span > 0)) {
      out += "<p class=\"muted\">No data.</p>\n";
      return;
    }
    Legend(c.series);
    const std::string id = HtmlEscape(chart_id);
    const int height = kRowH * static_cast<int>(c.categories.size());
    out += "<div class=\"tl\" id=\"" + id + "\">zoom";
    int zoom_index = 0;
    for (const char* zoom : {"1", "4", "16", "64"}) {
      const std::string rid = id + "-zoom" + zoom;
      out += "<input type=\"radio\" name=\"" + id + "-zoom\" id=\"" + rid + "\"" +
             (zoom_index++ == 0 ? " checked" : "") + "><label for=\"" + rid + "\">" + zoom +
             "×</label>";
    }
    out += "\n<div class=\"tlbody\"><div class=\"tllabels\">";
    for (const std::string& lane : c.categories)
      out += "<div title=\"" + HtmlEscape(lane) + "\">" + HtmlEscape(lane) + "</div>";
    out += "</div><div class=\"tlscroll\"><div class=\"tlplot\">\n";
    out += fmt::format(
        "<svg viewBox=\"0 0 {0} {1}\" preserveAspectRatio=\"none\" style=\"height:{1}px\" "
        "role=\"img\" aria-label=\"{2}\">\n",
        kPlotUnits, height, HtmlEscape(c.title.empty() ? c.key : c.title));
    for (size_t k = 0; k < c.segments.size(); ++k) {
      const Segment& s = c.segments[k];
      if (s.lane >= c.categories.size() || s.series >= c.series.size() || !(s.end > s.start))
        continue;
      const double x = kPlotUnits * s.start / span, w = kPlotUnits * (s.end - s.start) / span;
      std::string what = c.categories[s.lane] + " · " + c.series[s.series].label;
      if (k < c.segment_labels.size() && !c.segment_labels[k].empty())
        what += ": " + c.segment_labels[k];
      out += fmt::format(
          "<rect x=\"{:.3f}\" y=\"{}\" width=\"{:.3f}\" height=\"{}\" fill=\"{}\"><title>{}"
          "</title></rect>",
          x, kRowH * static_cast<int>(s.lane) + (kRowH - kBarH) / 2, std::max(w, 0.05), kBarH,
          Color(s.series),
          HtmlEscape(what + " · " + TickLabel(s.start, c.x_unit) + " → " +
                     TickLabel(s.end, c.x_unit) + " (" +
                     FormatValue(ChartValue(s.end - s.start, c.x_unit)) + ")"));
    }
    out += "</svg>\n<div class=\"tlaxis\">";
    for (double t : NiceTicks(span, 8)) {
      if (t > span * 1.0001) break;
      out += fmt::format("<span style=\"left:{:.3f}%\">{}</span>", 100 * t / span,
                         HtmlEscape(TickLabel(t, c.x_unit)));
    }
    out += "</div></div></div></div></div>\n";
  }

  void FindingItem(const Finding& f, int number) {
    out += std::string("<div class=\"finding ") + SeverityName(f.severity) + "\" id=\"" +
           HtmlEscape(id_ + "-" + f.key) + "\">\n<h4>" + std::to_string(number) + ". " +
           HtmlEscape(f.title) + "</h4>\n";
    if (!f.saving.is_na() && f.saving.AsDouble() > 0) {
      out += "<p><span class=\"saving\">saves ~" + HtmlEscape(FormatSaving(f.saving)) + " per step";
      if (!f.saving_share.is_na())
        out += " (" + HtmlEscape(FormatShare(f.saving_share.AsDouble(), 0)) + ")";
      if (const std::string alone = AloneText(f); !alone.empty()) out += " " + HtmlEscape(alone);
      out += "</span>";
      if (!f.saving_assumption.empty())
        out += " <span class=\"muted\">" + HtmlEscape(f.saving_assumption) + "</span>";
      out += "</p>\n";
    }
    out += "<dl class=\"evidence\"><dt>confidence</dt><dd>" +
           HtmlEscape(FormatShare(f.confidence, 0)) + "</dd>";
    for (const Field& e : f.evidence)
      if (!e.detail || verbose)
        out +=
            "<dt>" + HtmlEscape(e.label) + "</dt><dd>" + HtmlEscape(FormatValue(e.value)) + "</dd>";
    out += "</dl>\n";
    if (!f.fix.empty()) out += "<p class=\"fix\">" + HtmlEscape(f.fix) + "</p>\n";
    out += "</div>\n";
  }

  void Items(const Section& s) {
    std::vector<const Row*> rows;
    std::vector<const Finding*> minor;
    int finding_number = 0;
    auto flush_rows = [&] {
      RowsTable(rows);
      rows.clear();
    };
    for (const Item& item : s.items) {
      if (const Row* r = std::get_if<Row>(&item)) {
        rows.push_back(r);
        continue;
      }
      flush_rows();
      if (const Table* t = std::get_if<Table>(&item))
        TableItem(*t);
      else if (const Chart* c = std::get_if<Chart>(&item)) {
        if (!c->title.empty()) out += "<h4>" + HtmlEscape(c->title) + "</h4>\n";
        if (c->kind == Chart::Kind::kLines)
          Lines(*c);
        else if (c->kind == Chart::Kind::kHeatmap)
          Heatmap(*c);
        else if (c->kind == Chart::Kind::kTimeline)
          Timeline(*c, id_ + "-" + c->key);
        else
          Bars(*c);
      } else if (const Finding* f = std::get_if<Finding>(&item)) {
        if (IsMinor(*f) && finding_number > 0)
          minor.push_back(f);
        else
          FindingItem(*f, ++finding_number);
      } else if (const Text* x = std::get_if<Text>(&item)) {
        out += x->code ? "<pre>" + HtmlEscape(x->text) + "</pre>\n"
                       : "<p>" + HtmlEscape(x->text) + "</p>\n";
      }
    }
    flush_rows();
    if (!minor.empty()) {
      std::string names;
      for (const Finding* f : minor) names += (names.empty() ? "" : "; ") + f->title;
      out += "<p class=\"muted\">minor (each under 1 % of a step): " + HtmlEscape(names) + "</p>\n";
    }
  }

  // A titled section below the top is a <details> (open unless the document marks it collapsed),
  // so a long page folds to its headings; the table of contents links every one.
  void SectionOut(const Section& s, int depth, const std::string& parent_id) {
    if (!(s.views & kViewHtml)) return;
    const int h = std::min(depth + 2, 4);
    // Ids are the key path ("rank_0-gpu_time"): unique on the page, stable across runs.
    const std::string id = parent_id.empty() ? s.key : parent_id + "-" + s.key;
    id_ = id;
    out += "<section id=\"" + HtmlEscape(id) + "\">\n";
    const bool fold = !s.title.empty() && (depth > 0 || s.collapsed);
    if (fold)
      out += fmt::format("<details{}><summary><h{}>{}</h{}></summary>\n",
                         s.collapsed ? "" : " open", h, HtmlEscape(s.title), h);
    else if (!s.title.empty())
      out += fmt::format("<h{0}>{1}</h{0}>\n", h, HtmlEscape(s.title));
    Items(s);
    for (const Section& child : s.sections) SectionOut(child, depth + 1, id);
    if (fold) out += "</details>\n";
    out += "</section>\n";
  }

  // The table of contents: each top section and the titled sections one level below it.
  void Nav(const Document& doc) {
    std::string items;
    for (const Section& top : doc.sections) {
      if (!(top.views & kViewHtml) || top.title.empty()) continue;
      items += "<li><a href=\"#" + HtmlEscape(top.key) + "\">" +
               HtmlEscape(Ellipsize(top.title, 90)) + "</a>";
      std::string sub;
      for (const Section& child : top.sections)
        if ((child.views & kViewHtml) && !child.title.empty())
          sub += "<a href=\"#" + HtmlEscape(top.key + "-" + child.key) + "\">" +
                 HtmlEscape(child.title) + "</a> ";
      if (!sub.empty()) items += "<div class=\"sub\">" + sub + "</div>";
      items += "</li>\n";
    }
    if (!items.empty()) out += "<nav><b>contents</b><ul>\n" + items + "</ul></nav>\n";
  }
};

}  // namespace

// The characters HTML text and attribute values cannot carry as themselves.
constexpr ByteEscape kHtmlEntities[] = {
    {'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}};

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  AppendUtf8Escaped(
      s, &out, kUtf8Replacement,
      [](unsigned char c, std::string* o) {
        if (AppendListedEscape(kHtmlEntities, c, o)) return;
        // C0 controls (and DEL) are not allowed in HTML text: shown as U+FFFD.
        if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F)
          o->append(kUtf8Replacement);
        else
          o->push_back(static_cast<char>(c));
      },
      [](std::string_view seq, std::string* o) { o->append(seq); });
  return out;
}

std::vector<double> NiceTicks(double max, int target_count) {
  if (!(max > 0) || !std::isfinite(max)) return {0, 1};
  const double raw = max / std::max(1, target_count - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    const double t = step * i;
    ticks.push_back(t);
    if (t >= max * (1 - 1e-9) || i > 50) break;
  }
  return ticks;
}

std::string RenderHtml(const Document& doc, const RenderOptions& options) {
  Page p;
  p.verbose = options.verbose;
  p.out =
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // No script runs and nothing loads from anywhere: the page is data only.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  p.out += HtmlEscape(doc.title) + "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n";
  p.out += "<h1>" + HtmlEscape(doc.title) + "</h1>\n";
  if (!doc.subtitle.empty()) p.out += "<p class=\"muted\">" + HtmlEscape(doc.subtitle) + "</p>\n";
  p.Nav(doc);
  for (const Section& s : doc.sections) p.SectionOut(s, 0, "");
  // The same JSON as --json, as data: a JSON script block is never executed, and "</" is escaped
  // so no string can end the block.
  std::string json = ToJson(doc, 0);
  std::string safe;
  safe.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<')
      safe += "\\u003c";
    else
      safe += json[i];
  }
  p.out += "<script type=\"application/json\" id=\"gpuscope-report\">" + safe + "</script>\n";
  p.out += "<p class=\"muted\">gpuscope " GPUSCOPE_VERSION "</p>\n</body>\n</html>\n";
  return p.out;
}

}  // namespace gpuscope::render
