// The HTML view of any document: one self-contained page (no script, nothing loaded; a CSP says
// so), inline SVG charts, every string escaped, and the document's JSON embedded as a
// non-executable data block so the page carries the data it shows.
#pragma once

#include <string>
#include <string_view>

#include <vector>
#include "render/document.h"

namespace gpuscope::render {

std::string RenderHtml(const Document& doc, const RenderOptions& options = {});

// Text for HTML element content and attribute values: & < > " ' escaped, C0 controls and invalid
// UTF-8 replaced by U+FFFD.
std::string HtmlEscape(std::string_view s);

// "Nice" axis ticks for [0, max]: 0 and multiples of 1, 2 or 5 × 10^k, the last ≥ max.
std::vector<double> NiceTicks(double max, int target_count = 5);

}  // namespace gpuscope::render
