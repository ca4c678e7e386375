#include "diff/snapshot_diff.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "advise/snapshot_rules.h"
#include "gpuscope/version.h"
#include "render/build.h"

namespace gpuscope::diff {

namespace {

using namespace render::build;  // the document-builder vocabulary
using analyze::MemoryCategory;

// Stacks live at the peak of each device, by their frames as text (innermost first), summed.
std::map<std::string, int64_t> StackBytes(const SnapshotSide& side) {
  std::map<std::string, int64_t> out;
  for (const auto& d : side.analysis.devices)
    for (const auto& g : d.live_at_peak) {
      std::string key;
      if (g.before_trace) {
        key = "(allocated before the trace)";
      } else if (g.stack < 0 || static_cast<size_t>(g.stack) >= side.snap.stacks.size()) {
        key = "(no frames)";
      } else {
        const auto& frames = side.snap.stacks[static_cast<size_t>(g.stack)];
        for (size_t k = 0; k < frames.size() && k < 6; ++k) {
          const auto& f = frames[k];
          const size_t slash = f.filename.find_last_of("/\\");
          if (k) key.append(" ← ");
          key.append(f.name).append(" (");
          key.append(slash == std::string::npos ? f.filename : f.filename.substr(slash + 1));
          key.append(":").append(std::to_string(f.line)).append(")");
        }
      }
      out[key] += g.bytes;
    }
  return out;
}

std::array<int64_t, analyze::kMemoryCategoryCount> Categories(const SnapshotSide& side) {
  std::array<int64_t, analyze::kMemoryCategoryCount> out{};
  for (const auto& d : side.analysis.devices)
    for (const auto& c : d.categories_at_peak) out[static_cast<size_t>(c.category)] += c.bytes;
  return out;
}

int64_t PeakReserved(const SnapshotSide& side) {
  int64_t r = 0;
  for (const auto& d : side.analysis.devices) r = std::max(r, d.peak_reserved_bytes);
  return r;
}

Value Change(int64_t before, int64_t after) {
  return Value::Signed(Value::Int(after - before, Unit::kBytes));
}

}  // namespace

render::Document BuildSnapshotDiffDocument(const SnapshotSide& before, const SnapshotSide& after) {
  render::Document doc;
  doc.schema = "gpuscope.diff";
  doc.title = "gpuscope " GPUSCOPE_VERSION " diff · CUDA memory snapshots";
  doc.subtitle = before.label + " → " + after.label;
  Section& s = doc.AddSection("memory_snapshot_diff", "memory snapshots");
  {
    Table& t = s.AddTable("totals", "before and after",
                          {{"measure", "measure"},
                           {"before_bytes", "before"},
                           {"after_bytes", "after"},
                           {"change_bytes", "change"},
                           {"change_share", "change %"}});
    auto row = [&](const char* name, int64_t b, int64_t a) {
      t.rows.push_back(
          {Text(name), Bytes(b), Bytes(a), Change(b, a),
           Value::Signed(ShareOf(static_cast<double>(a - b), static_cast<double>(b)))});
    };
    row("peak allocated", before.analysis.peak_allocated_bytes,
        after.analysis.peak_allocated_bytes);
    row("peak reserved", PeakReserved(before), PeakReserved(after));
    row("reserved at the snapshot", before.analysis.segments_reserved_bytes,
        after.analysis.segments_reserved_bytes);
  }
  {
    const auto b = Categories(before), a = Categories(after);
    Table& t = s.AddTable("categories_at_peak", "live at the peak, by category",
                          {{"category", "category"},
                           {"before_bytes", "before"},
                           {"after_bytes", "after"},
                           {"change_bytes", "change"}});
    for (int k = 0; k < analyze::kMemoryCategoryCount; ++k)
      if (b[static_cast<size_t>(k)] || a[static_cast<size_t>(k)])
        t.rows.push_back({Text(analyze::MemoryCategoryName(static_cast<MemoryCategory>(k))),
                          Bytes(b[static_cast<size_t>(k)]), Bytes(a[static_cast<size_t>(k)]),
                          Change(b[static_cast<size_t>(k)], a[static_cast<size_t>(k)])});
  }
  {
    const auto b = StackBytes(before), a = StackBytes(after);
    std::set<std::string> keys;
    for (const auto& [k, v] : b) keys.insert(k);
    for (const auto& [k, v] : a) keys.insert(k);
    struct Line {
      std::string stack;
      int64_t before = 0, after = 0;
    };
    std::vector<Line> lines;
    for (const auto& k : keys) {
      const auto ib = b.find(k), ia = a.find(k);
      Line l{k, ib == b.end() ? 0 : ib->second, ia == a.end() ? 0 : ia->second};
      if (l.before != l.after) lines.push_back(l);
    }
    std::stable_sort(lines.begin(), lines.end(), [](const Line& x, const Line& y) {
      return std::llabs(x.after - x.before) > std::llabs(y.after - y.before);
    });
    Table& t = s.AddTable("stacks_at_peak",
                          "live at the peak, by stack: what changed (largest change first)",
                          {{"change_bytes", "change"},
                           {"before_bytes", "before"},
                           {"after_bytes", "after"},
                           {"stack", "stack (innermost first)"}});
    for (const Line& l : lines)
      t.rows.push_back({Change(l.before, l.after), Bytes(l.before), Bytes(l.after), Text(l.stack)});
  }
  {
    std::set<std::string> fb, fa;
    for (const auto& f : advise::AdviseSnapshot(before.analysis)) fb.insert(f.key);
    for (const auto& f : advise::AdviseSnapshot(after.analysis)) fa.insert(f.key);
    Table& t = s.AddTable("findings", "findings", {{"finding", "finding"}, {"status", "status"}});
    for (const auto& k : fb) t.rows.push_back({Text(k), Text(fa.count(k) ? "still" : "resolved")});
    for (const auto& k : fa)
      if (!fb.count(k)) t.rows.push_back({Text(k), Text("new")});
  }
  return doc;
}

}  // namespace gpuscope::diff
