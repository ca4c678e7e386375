// Interval sets on the ns timeline: the building block of every busy/idle/overlap metric.
// A set is "merged" when sorted by start with no two intervals touching or overlapping.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuscope::analyze {

struct Interval {
  int64_t start = 0;  // ns, inclusive
  int64_t end = 0;    // ns, exclusive; end <= start means empty
};

// Sorts and merges (touching intervals join); drops empty ones.
std::vector<Interval> Merge(std::vector<Interval> intervals);
// Sum of lengths of a merged set.
int64_t TotalLength(const std::vector<Interval>& merged);
// a − b for merged sets (parts of a not covered by b), merged.
std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b);
// a ∩ b for merged sets, merged.
std::vector<Interval> Intersect(const std::vector<Interval>& a, const std::vector<Interval>& b);
// |a ∩ [lo, hi)| for a merged set.
int64_t LengthWithin(const std::vector<Interval>& merged, int64_t lo, int64_t hi);

}  // namespace gpuscope::analyze
