#include "analyze/intervals.h"

#include <algorithm>

namespace gpuscope::analyze {

std::vector<Interval> Merge(std::vector<Interval> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](const Interval& i) { return i.end <= i.start; }),
          v.end());
  // Most lists arrive in time order (events are written as they end or start): checking is O(n).
  const auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  if (!std::is_sorted(v.begin(), v.end(), by_start)) std::sort(v.begin(), v.end(), by_start);
  std::vector<Interval> out;
  out.reserve(v.size());
  for (const Interval& i : v) {
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
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

}  // namespace gpuscope::analyze
