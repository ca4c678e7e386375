// Interval sets on the ns timeline: the building block of every busy/idle/overlap metric.
// A set is "merged" when sorted by start with no two intervals touching or overlapping.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace gpuscope::analyze {

struct Interval {
  int64_t start = 0;  // ns, inclusive
  int64_t end = 0;    // ns, exclusive; end <= start means empty
};

// Sorts and merges (touching intervals join); drops empty ones. In place: the result reuses the
// argument's storage (and keeps its capacity).
std::vector<Interval> Merge(std::vector<Interval> intervals);

// A merged set built from intervals given one at a time, for lists too long to hold raw (every
// kernel, call or op of a trace). Trace tables are almost always in start order, and then each
// interval joins the last one or is appended: the memory is that of the result, and no sort. An
// interval out of order starts a new run; Take() merges the runs (a sort of the merged runs, not
// of the raw intervals). Same result as Merge() of all the intervals given.
class IntervalUnion {
 public:
  void Add(int64_t start, int64_t end) {
    if (end <= start) return;
    if (start < last_start_) {
      in_order_ = false;
      set_.push_back({start, end});
    } else if (!set_.empty() && start <= set_.back().end) {
      if (end > set_.back().end) set_.back().end = end;
    } else {
      set_.push_back({start, end});
    }
    last_start_ = start;
  }
  // Room for n merged intervals: where the count of intervals to come is known and few of them
  // join (back-to-back calls, kernels), reserving it spares growing by doubling, which holds the
  // old and the new buffer at once.
  void Reserve(size_t n) { set_.reserve(n); }
  // The merged set; the union is empty afterwards.
  std::vector<Interval> Take();

 private:
  std::vector<Interval> set_;  // merged runs, one after the other
  int64_t last_start_ = INT64_MIN;
  bool in_order_ = true;
};
// Sum of lengths of a merged set.
int64_t TotalLength(const std::vector<Interval>& merged);
// a − b for merged sets (parts of a not covered by b), merged.
std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b);
// a ∩ b for merged sets, merged.
std::vector<Interval> Intersect(const std::vector<Interval>& a, const std::vector<Interval>& b);
// |a ∩ [lo, hi)| for a merged set.
int64_t LengthWithin(const std::vector<Interval>& merged, int64_t lo, int64_t hi);

// Exclusive assignment of time by priority: `sets` are merged sets, highest priority first (at most
// 64); a moment belongs to the first set that contains it. Returns, for each window w and set r,
// out[w × sets.size() + r] = the time within window w that belongs to set r (windows may overlap;
// each counts its own). Time in no set is not counted. One sweep over every interval's ends, no
// intermediate sets: the same as subtracting each set's share from the windows' free time in
// turn (Intersect, Subtract, LengthWithin), which the tests check.
std::vector<int64_t> ExclusiveCoverage(const std::vector<Interval>& windows,
                                       std::span<const std::vector<Interval>> sets);

// Widens [*lo, *hi] (ns) to cover each row of `table` (a model table: start_ns and dur_ns) that
// `keep(row)` accepts; start from lo = INT64_MAX, hi = INT64_MIN, so lo > hi means no row.
template <typename Table, typename Keep>
void WidenToRows(const Table& table, int64_t* lo, int64_t* hi, Keep keep) {
  for (size_t i = 0; i < table.size(); ++i) {
    if (!keep(i)) continue;
    *lo = std::min(*lo, table.start_ns[i]);
    *hi = std::max(*hi, table.start_ns[i] + table.dur_ns[i]);
  }
}

template <typename Table>
void WidenToRows(const Table& table, int64_t* lo, int64_t* hi) {
  WidenToRows(table, lo, hi, [](size_t) { return true; });
}

}  // namespace gpuscope::analyze
