// Self-contained HTML view of the report model: one file, no script, no network, no external asset.
// Charts are inline SVG drawn here. Every string that can come from a trace (paths, device, kernel
// and op names, and the findings that quote them) goes through Escape(), so a kernel named
// "<script>…" renders as text. The JSON report is embedded as a non-executable data block.
//
// The building blocks are public so that other reports (the diff) draw with the same look.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace gpuscope::report {

// The whole page for `report`.
std::string RenderHtml(const Report& report);

namespace html {

// Text → HTML text or attribute value: & < > " ' escaped; bytes that are not valid UTF-8 become
// U+FFFD so the page stays valid UTF-8; control characters other than \t \n become U+FFFD too.
std::string Escape(std::string_view text);

// <!doctype html> … <body>, with the shared style sheet; `title` is escaped here.
std::string PageStart(std::string_view title);
std::string PageEnd();

// A segment of a stacked bar: value in any unit (ns here), colour as CSS, label for the tooltip.
struct Segment {
  int64_t value = 0;
  int color = 0;  // index into the palette (Color())
};
struct BarRow {
  std::string label;  // left of the bar (escaped when drawn)
  std::vector<Segment> segments;
  std::string note;  // right of the bar, e.g. "175.5 ms" (escaped when drawn)
};
struct LegendEntry {
  std::string label;
  int color = 0;
};

// Palette colour `i` (cycled), chosen to be told apart also in grey scale.
const char* Color(int i);

// Horizontal stacked bars, all on one scale (the largest row total spans the width).
// `tooltip_unit_ns`: segment values are ns and tooltips show durations.
std::string StackedBars(const std::vector<BarRow>& rows, const std::vector<LegendEntry>& legend,
                        std::string_view aria_label);

// Line chart of up to a few series over a shared x axis; y from 0 to the largest value.
struct Series {
  std::string label;
  int color = 0;
  std::vector<double> x;  // ascending
  std::vector<double> y;
};
std::string LineChart(const std::vector<Series>& series, std::string_view x_unit,
                      std::string_view y_unit, std::string_view aria_label);

// A table: header cells and rows of cells (all escaped). Columns listed in `numeric` align right.
std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows,
                  const std::vector<size_t>& numeric = {});

}  // namespace html
}  // namespace gpuscope::report
