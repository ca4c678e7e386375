#include "report/snapshot_document.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "advise/snapshot_rules.h"
#include "gpuscope/version.h"
#include "render/build.h"
#include "render/format.h"

namespace gpuscope::report {

namespace {

using namespace render::build;  // the document-builder vocabulary
using analyze::MemoryCategory;
using analyze::SnapshotDevice;

// Points the chart keeps at most: the timeline is cut into this many buckets and each keeps its
// point of most allocated bytes, so the peak is always drawn.
constexpr size_t kChartPoints = 800;

// "einsum (functional.py:402)": the file without its folders, which a frame's name and line
// already place.
std::string FrameText(const snapshot::Frame& f) {
  const size_t slash = f.filename.find_last_of("/\\");
  std::string out = f.name;
  out.append(" (");
  out.append(slash == std::string::npos ? std::string_view(f.filename)
                                        : std::string_view(f.filename).substr(slash + 1));
  out.append(":").append(std::to_string(f.line)).append(")");
  return out;
}

// Innermost frames first, at most `n`.
std::string StackText(const snapshot::Snapshot& snap, int32_t stack, size_t n) {
  if (stack < 0 || static_cast<size_t>(stack) >= snap.stacks.size()) return "";
  const auto& frames = snap.stacks[static_cast<size_t>(stack)];
  std::string out;
  for (size_t k = 0; k < frames.size() && k < n; ++k)
    out += (k ? " ← " : "") + FrameText(frames[k]);
  if (frames.size() > n) out += " ← …";
  return out;
}

// What a category's bytes at timeline point `i` are mostly: "most from: <stack> (1.2 GiB)".
std::string TopStackNote(const snapshot::Snapshot& snap, const SnapshotDevice& d, size_t category,
                         size_t i) {
  if (i >= d.top_stack_bytes[category].size() || d.top_stack_bytes[category][i] <= 0) return "";
  const int32_t stack = d.top_stack[category][i];
  const std::string where = stack == analyze::kBeforeTraceStack ? "(allocated before the trace)"
                            : stack < 0                         ? "(no frames)"
                                                                : StackText(snap, stack, 4);
  return "most from: " + where + " (" + render::FormatValue(Bytes(d.top_stack_bytes[category][i])) +
         ")";
}

void AddTimeline(const snapshot::Snapshot& snap, const SnapshotDevice& d, Section& s) {
  if (d.time_us.empty()) return;
  render::Chart& c = s.AddChart("allocated_timeline", "allocated and reserved over the trace",
                                render::Chart::Kind::kLines, Unit::kBytes);
  c.x_unit = Unit::kNanos;
  const size_t n = d.time_us.size();
  std::vector<size_t> keep;
  if (n <= kChartPoints) {
    for (size_t i = 0; i < n; ++i) keep.push_back(i);
  } else {
    for (size_t b = 0; b < kChartPoints; ++b) {
      const size_t lo = b * n / kChartPoints, hi = (b + 1) * n / kChartPoints;
      size_t best = lo;
      for (size_t i = lo; i < hi; ++i)
        if (d.allocated_bytes[i] > d.allocated_bytes[best]) best = i;
      keep.push_back(best);
    }
  }
  int64_t t0 = -1;
  for (int64_t t : d.time_us)
    if (t >= 0 && (t0 < 0 || t < t0)) t0 = t;
  render::Series alloc{"allocated", "allocated", {}}, reserved{"reserved", "reserved", {}};
  std::vector<render::Series> cats;
  for (int k = 0; k < analyze::kMemoryCategoryCount; ++k)
    cats.push_back(
        {std::string(analyze::MemoryCategoryName(static_cast<MemoryCategory>(k))),
         std::string("allocated: ") + analyze::MemoryCategoryName(static_cast<MemoryCategory>(k)),
         {}});
  double last_x = 0;  // an event without time_us is drawn at the time of the one before it
  for (size_t i : keep) {
    const int64_t t = d.time_us[i];
    if (t >= 0 && t0 >= 0) last_x = static_cast<double>(t - t0) * 1000.0;
    c.x.push_back(last_x);
    alloc.values.push_back(static_cast<double>(d.allocated_bytes[i]));
    reserved.values.push_back(static_cast<double>(d.reserved_bytes[i]));
    for (size_t k = 0; k < cats.size(); ++k)
      cats[k].values.push_back(static_cast<double>(d.category_bytes[k][i]));
  }
  c.series.push_back(std::move(alloc));
  c.series.push_back(std::move(reserved));
  // The categories that hold anything, when the stacks tell more than "unknown".
  bool known = false;
  for (int k = 0; k < analyze::kMemoryCategoryCount; ++k)
    if (static_cast<MemoryCategory>(k) != MemoryCategory::kUnknown &&
        d.categories_at_peak[static_cast<size_t>(k)].bytes > 0)
      known = true;
  const std::vector<double> xs = c.x;
  c.reference_lines.push_back(
      F("peak_allocated_bytes", "peak allocated", Bytes(d.peak_allocated_bytes)));
  if (!known) return;
  // What the allocated bytes are made of over time: one bar per sampled instant, stacked by
  // category (the same points as the lines; at most kStackBars of them), the peak one of them
  // and marked; hovering a part names the allocation stack holding most of it.
  constexpr size_t kStackBars = 48;
  render::Chart& bars =
      s.AddChart("allocated_by_category", "allocated over the trace, stacked by category",
                 render::Chart::Kind::kStackedBars, Unit::kBytes);
  const size_t points = xs.size();
  std::vector<size_t> pick;  // indexes into keep (and xs)
  for (size_t b = 0; b < std::min(points, kStackBars); ++b)
    pick.push_back(points <= kStackBars ? b : b * (points - 1) / (kStackBars - 1));
  // The peak's point is in keep (its bucket keeps its largest, the first to reach the peak);
  // the nearest pick becomes it.
  const auto peak_at = std::find(keep.begin(), keep.end(), static_cast<size_t>(d.peak_point));
  size_t peak_pick = pick.size();
  if (d.peak_point >= 0 && peak_at != keep.end() && !pick.empty()) {
    const size_t p = static_cast<size_t>(peak_at - keep.begin());
    peak_pick = 0;
    for (size_t b = 1; b < pick.size(); ++b)
      if (std::llabs(static_cast<long long>(pick[b]) - static_cast<long long>(p)) <
          std::llabs(static_cast<long long>(pick[peak_pick]) - static_cast<long long>(p)))
        peak_pick = b;
    pick[peak_pick] = p;
  }
  for (size_t b = 0; b < pick.size(); ++b)
    bars.categories.push_back(render::FormatDurationApprox(xs[pick[b]]) +
                              (b == peak_pick ? " (peak)" : ""));
  for (size_t k = 0; k < cats.size(); ++k) {
    if (d.categories_at_peak[k].bytes <= 0) continue;
    render::Series part{cats[k].key,
                        std::string(analyze::MemoryCategoryName(static_cast<MemoryCategory>(k)))};
    for (size_t i : pick) {
      part.values.push_back(cats[k].values[i]);
      part.notes.push_back(TopStackNote(snap, d, k, keep[i]));
    }
    bars.series.push_back(std::move(part));
    c.series.push_back(std::move(cats[k]));
  }
  bars.reference_lines.push_back(
      F("peak_allocated_bytes", "peak allocated", Bytes(d.peak_allocated_bytes)));
}

void AddDevice(const snapshot::Snapshot& snap, const SnapshotDevice& d, Section& parent) {
  Section& s =
      parent.AddSection("device_" + std::to_string(d.device), "device " + std::to_string(d.device));
  {
    Row& r = s.AddRow("peak", "peak");
    r.fields.push_back(F("peak_allocated_bytes", "allocated", Bytes(d.peak_allocated_bytes)));
    r.fields.push_back(
        F("peak_above_start_bytes", "above the trace's start", Bytes(d.peak_above_start_bytes)));
    r.fields.push_back(F("peak_reserved_bytes", "peak reserved", Bytes(d.peak_reserved_bytes)));
    r.fields.push_back(Detail(
        "peak_time_us", "at (time_us)",
        d.peak_time_us >= 0 ? Value::Int(d.peak_time_us, Unit::kCount) : Value::Na(Unit::kCount)));
  }
  {
    Row& r = s.AddRow("trace_start", "trace start");
    r.fields.push_back(F("initial_allocated_bytes", "allocated", Bytes(d.initial_allocated_bytes)));
    r.fields.push_back(F("initial_reserved_bytes", "reserved", Bytes(d.initial_reserved_bytes)));
    r.fields.push_back(F("starts_mid_run", "mid-run", Value::Bool(d.starts_mid_run)));
    r.fields.push_back(F("min_allocated_bytes", "lowest allocated", Bytes(d.min_allocated_bytes)));
  }
  {
    Row& r = s.AddRow("at_snapshot", "at snapshot");
    r.fields.push_back(F("segments", "segments", Count(d.segments)));
    r.fields.push_back(F("segments_reserved_bytes", "reserved", Bytes(d.segments_reserved_bytes)));
    r.fields.push_back(
        F("segments_allocated_bytes", "allocated", Bytes(d.segments_allocated_bytes)));
    r.fields.push_back(
        Detail("active_allocated_bytes", "active blocks", Bytes(d.active_allocated_bytes)));
    r.fields.push_back(
        F("free_in_segments_bytes", "free in segments", Bytes(d.free_in_segments_bytes)));
    r.fields.push_back(
        F("largest_free_block_bytes", "largest free block", Bytes(d.largest_free_block_bytes)));
    r.fields.push_back(Detail("free_blocks", "free blocks", Count(d.free_blocks)));
    r.fields.push_back(
        Detail("expandable_segments", "expandable segments", Count(d.expandable_segments)));
  }
  {
    Row& r = s.AddRow("events", "events");
    r.fields.push_back(F("events", "events", Count(d.events)));
    for (int a = 0; a < snapshot::kActionCount; ++a) {
      const auto action = static_cast<snapshot::Action>(a);
      const int64_t n = d.action_counts[static_cast<size_t>(a)];
      if (action == snapshot::Action::kOther) {
        r.fields.push_back(Detail("other_events", "other", Count(n)));
        continue;
      }
      Field f = F(std::string(snapshot::ActionName(action)) + "_events",
                  snapshot::ActionName(action), Count(n));
      f.detail = n == 0;
      r.fields.push_back(std::move(f));
    }
  }
  {
    Table& t = s.AddTable("categories_at_peak", "live at the peak, by category",
                          {{"category", "category"},
                           {"live_bytes", "bytes"},
                           {"of_peak_share", "of the peak"},
                           {"allocations", "allocations"}});
    auto sorted = d.categories_at_peak;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& x, const auto& y) { return x.bytes > y.bytes; });
    for (const auto& cb : sorted) {
      if (cb.bytes == 0) continue;
      t.rows.push_back(
          {Text(analyze::MemoryCategoryName(cb.category)), Bytes(cb.bytes),
           ShareOf(static_cast<double>(cb.bytes), static_cast<double>(d.peak_allocated_bytes)),
           Count(cb.count)});
    }
  }
  {
    Table& t = s.AddTable("live_at_peak", "live at the peak, by allocation stack",
                          {{"live_bytes", "bytes"},
                           {"of_peak_share", "of the peak"},
                           {"allocations", "allocations"},
                           {"category", "category"},
                           {"rule", "rule", true},
                           {"stack", "stack (innermost first)"}});
    for (const auto& g : d.live_at_peak)
      t.rows.push_back(
          {Bytes(g.bytes),
           ShareOf(static_cast<double>(g.bytes), static_cast<double>(d.peak_allocated_bytes)),
           g.before_trace ? Value::Na(Unit::kCount) : Count(g.count),
           Text(analyze::MemoryCategoryName(g.category)), Text(g.rule),
           Text(g.before_trace ? "(allocated before the trace)"
                : g.stack < 0  ? "(no frames)"
                               : StackText(snap, g.stack, 4))});
  }
  {
    Table& t = s.AddTable("free_blocks", "free blocks in the segments at the snapshot, by size",
                          {{"size", "size"}, {"blocks", "blocks"}, {"free_bytes", "bytes"}});
    t.text_rows = 0;
    for (const auto& b : d.free_buckets)
      t.rows.push_back({Text(b.label), Count(b.count), Bytes(b.bytes)});
  }
  if (!d.ooms.empty()) {
    Table& t = s.AddTable("ooms", "failed allocations (oom events)",
                          {{"time_us", "time_us"},
                           {"requested_bytes", "requested"},
                           {"device_free_bytes", "free on the device"},
                           {"largest_free_block_bytes", "largest free block (at the snapshot)"}});
    for (const auto& o : d.ooms)
      t.rows.push_back(
          {o.time_us >= 0 ? Value::Int(o.time_us, Unit::kCount) : Value::Na(Unit::kCount),
           Bytes(o.requested_bytes), Bytes(o.device_free_bytes),
           Bytes(d.largest_free_block_bytes)});
  }
  AddTimeline(snap, d, s);
  for (size_t k = 0; k < d.notes.size(); ++k) s.AddText("note_" + std::to_string(k), d.notes[k]);
  // The notes with bytes, formatted as the rows above give them.
  if (d.snapshot_below_trace)
    s.AddText("note_snapshot_below_trace",
              "the blocks allocated at the snapshot (" +
                  render::FormatBytes(static_cast<double>(d.active_allocated_bytes)) +
                  ") are fewer than the trace implies: the start is the least that keeps "
                  "allocated at or above 0");
  if (d.starts_mid_run)
    s.AddText("note_mid_run",
              "the trace starts mid-run: " +
                  render::FormatBytes(static_cast<double>(d.initial_allocated_bytes)) +
                  " were already allocated at its first event (the snapshot's blocks minus the "
                  "trace's net allocations); the timeline starts from there");
  // Said as measured: the cause is not in the file (a guess, "a synthetic snapshot?", was wrong
  // on most real snapshots where this happens).
  if (d.most_over_reserved_bytes > 0)
    s.AddText("note_over_reserved",
              "at some point the trace allocates more than its segment events reserve (by up "
              "to " +
                  render::FormatBytes(static_cast<double>(d.most_over_reserved_bytes)) +
                  "): the segment events do not account for all reserved memory, so the "
                  "reserved line is as recorded, not the device's");
}

}  // namespace

render::Document BuildSnapshotDocument(const snapshot::Snapshot& snap,
                                       const analyze::SnapshotAnalysis& a,
                                       const std::vector<render::Finding>& findings) {
  render::Document doc;
  doc.schema = "gpuscope.snapshot";
  doc.title = "gpuscope " GPUSCOPE_VERSION " · CUDA memory snapshot";
  doc.subtitle = snap.path;
  Section& s = doc.AddSection("memory_snapshot", "memory snapshot");
  {
    Row& r = s.AddRow("summary", "snapshot");
    r.fields.push_back(F("segments_reserved_bytes", "reserved", Bytes(a.segments_reserved_bytes)));
    r.fields.push_back(F("peak_allocated_bytes", "peak allocated", Bytes(a.peak_allocated_bytes)));
    r.fields.push_back(F("segments", "segments", Count(a.segments)));
    r.fields.push_back(F("devices", "devices", Count(a.devices.size())));
    r.fields.push_back(Detail("file_bytes", "file", Bytes(static_cast<int64_t>(snap.file_bytes))));
    r.fields.push_back(Detail("stacks", "distinct stacks", Count(snap.stacks.size())));
    r.fields.push_back(
        Detail("external_annotations", "annotations", Count(snap.external_annotations)));
    r.fields.push_back(F("device_total_bytes", "device memory", Value::Na(Unit::kBytes)));
    r.note = "(a snapshot does not record the device's memory)";
  }
  for (const render::Finding& f : findings) s.items.push_back(f);
  for (const SnapshotDevice& d : a.devices) AddDevice(snap, d, s);
  for (size_t k = 0; k < snap.notes.size(); ++k)
    s.AddText("reader_note_" + std::to_string(k), snap.notes[k]);

  Section& set = doc.AddSection("allocator_settings", "allocator settings");
  if (!snap.has_allocator_settings) {
    set.AddText(
        "absent",
        "the snapshot has no allocator_settings (older PyTorch versions do not write them)");
  } else {
    Table& t = set.AddTable("settings", "allocator_settings",
                            {{"setting", "setting"}, {"value", "value", false, true}});
    t.text_rows = 20;
    for (const auto& [k, v] : snap.allocator_settings) t.rows.push_back({Text(k), Text(v)});
  }
  return doc;
}

render::Document SnapshotDocument(const snapshot::Snapshot& snap) {
  const analyze::SnapshotAnalysis analysis = analyze::AnalyzeSnapshot(snap);
  return BuildSnapshotDocument(snap, analysis, advise::AdviseSnapshot(analysis));
}

}  // namespace gpuscope::report
