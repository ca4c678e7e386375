#include "analyze/intervals.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

#include "base/sort.h"

namespace gpuscope::analyze {

std::vector<Interval> Merge(std::vector<Interval> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](const Interval& i) { return i.end <= i.start; }),
          v.end());
  // Most lists arrive in time order (events are written as they end or start), or as a few
  // ordered runs (threads, streams): SortRuns costs O(n) then, O(n log runs) otherwise.
  SortRuns(v.begin(), v.end(),
           [](const Interval& a, const Interval& b) { return a.start < b.start; });
  // Compacted in place: the merged prefix never overtakes the interval being read.
  size_t w = 0;
  for (size_t r = 0; r < v.size(); ++r) {
    if (w > 0 && v[r].start <= v[w - 1].end) {
      v[w - 1].end = std::max(v[w - 1].end, v[r].end);
    } else {
      v[w++] = v[r];
    }
  }
  v.resize(w);
  return v;
}

std::vector<Interval> IntervalUnion::Take() {
  std::vector<Interval> out = in_order_ ? std::move(set_) : Merge(std::move(set_));
  set_ = {};
  last_start_ = INT64_MIN;
  in_order_ = true;
  return out;
}

int64_t TotalLength(const std::vector<Interval>& merged) {
  int64_t total = 0;
  for (const Interval& i : merged) total += i.end - i.start;
  return total;
}

std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (Interval cur : a) {
    while (j < b.size() && b[j].end <= cur.start) ++j;
    size_t k = j;
    while (k < b.size() && b[k].start < cur.end) {
      if (b[k].start > cur.start) out.push_back({cur.start, b[k].start});
      cur.start = std::max(cur.start, b[k].end);
      if (cur.start >= cur.end) break;
      ++k;
    }
    if (cur.start < cur.end) out.push_back(cur);
  }
  return out;
}

std::vector<Interval> Intersect(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].start, b[j].start);
    const int64_t hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.push_back({lo, hi});
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

int64_t LengthWithin(const std::vector<Interval>& merged, int64_t lo, int64_t hi) {
  auto it = std::lower_bound(merged.begin(), merged.end(), lo,
                             [](const Interval& i, int64_t t) { return i.end <= t; });
  int64_t total = 0;
  for (; it != merged.end() && it->start < hi; ++it) {
    total += std::min(it->end, hi) - std::max(it->start, lo);
  }
  return total;
}

std::vector<int64_t> ExclusiveCoverage(const std::vector<Interval>& windows,
                                       std::span<const std::vector<Interval>> sets) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  const size_t k = sets.size();
  std::vector<int64_t> out(windows.size() * k, 0);
  if (k == 0 || k > 64 || windows.empty()) return out;
  // Windows by start (steps already are).
  std::vector<uint32_t> order(windows.size());
  std::iota(order.begin(), order.end(), 0u);
  const auto by_start = [&](uint32_t a, uint32_t b) { return windows[a].start < windows[b].start; };
  if (!std::is_sorted(order.begin(), order.end(), by_start))
    std::stable_sort(order.begin(), order.end(), by_start);

  // Each set's next boundary: the start of its current interval, or its end once inside it. The
  // sweep takes the earliest one each time (ties one after the other: the time between them is
  // 0), so a step costs a scan of k values, not of every set's state.
  std::vector<size_t> at(k, 0);
  std::vector<int64_t> next(k);
  for (size_t r = 0; r < k; ++r) next[r] = sets[r].empty() ? kNever : sets[r][0].start;
  uint64_t inside = 0;           // bit r: in an interval of set r
  std::vector<uint32_t> active;  // windows containing the current position
  size_t next_window = 0;
  // The next change of the active windows: a window's start or end.
  const auto window_change = [&] {
    int64_t t = next_window < order.size() ? windows[order[next_window]].start : kNever;
    for (uint32_t w : active) t = std::min(t, windows[w].end);
    return t;
  };
  int64_t window_at = window_change();
  int64_t pos = std::numeric_limits<int64_t>::min();
  // [pos, t) belongs to the first set we are inside, in every active window.
  const auto count_until = [&](int64_t t) {
    if (inside == 0 || active.empty()) return;
    const size_t r = static_cast<size_t>(std::countr_zero(inside));
    for (uint32_t w : active) out[w * k + r] += t - pos;
  };
  while (window_at != kNever) {
    size_t first = 0;
    int64_t boundary = next[0];
    for (size_t r = 1; r < k; ++r) {
      if (next[r] < boundary) boundary = next[r], first = r;
    }
    if (boundary >= window_at) {
      count_until(window_at);
      pos = window_at;
      std::erase_if(active, [&](uint32_t w) { return windows[w].end <= pos; });
      while (next_window < order.size() && windows[order[next_window]].start <= pos) {
        const uint32_t w = order[next_window++];
        if (windows[w].end > pos) active.push_back(w);
      }
      window_at = window_change();
      continue;
    }
    count_until(boundary);
    pos = boundary;
    const uint64_t bit = uint64_t{1} << first;
    const std::vector<Interval>& set = sets[first];
    if (inside & bit) {
      inside &= ~bit;
      next[first] = ++at[first] < set.size() ? set[at[first]].start : kNever;
    } else {
      inside |= bit;
      next[first] = set[at[first]].end;
    }
  }
  return out;
}

}  // namespace gpuscope::analyze
