// Sorting what is almost sorted: trace tables are written in time order except where threads,
// streams or buffers meet, so a list to be ordered by time is usually a handful of ordered runs.
#pragma once

#include <algorithm>
#include <iterator>
#include <vector>

namespace gpuscope {

// Stable sort by `less` that costs O(n) for a list already in order, O(n + moved) for one whose
// runs meet in short overlaps, and at most O(n log r) for r ordered runs (a natural merge sort:
// adjacent runs merged pairwise, left before right on ties), where std::sort and std::stable_sort
// cost O(n log n) whatever the order. Same result as std::stable_sort.
template <typename It, typename Less>
void SortRuns(It first, It last, Less less) {
  if (last - first < 2) return;
  // Run boundaries: positions where an element is less than the one before it.
  std::vector<It> bounds{first};
  for (It it = std::next(first); it != last; ++it) {
    if (less(*it, *std::prev(it))) bounds.push_back(it);
  }
  if (bounds.size() == 1) return;
  bounds.push_back(last);
  while (bounds.size() > 2) {
    std::vector<It> merged{bounds.front()};
    for (size_t i = 0; i + 2 < bounds.size(); i += 2) {
      // Only the window where the two runs interleave moves: the left run's elements not after
      // the right run's first stay in front, the right run's not before the left run's last stay
      // behind (ties keep left before right either way). A trace's runs usually meet where a few
      // events came late, so the window is a handful of elements, not the runs' whole length.
      const It mid = bounds[i + 1];
      const It lo = std::upper_bound(bounds[i], mid, *mid, less);
      const It hi = std::lower_bound(mid, bounds[i + 2], *std::prev(mid), less);
      std::inplace_merge(lo, mid, hi, less);
      merged.push_back(bounds[i + 2]);
    }
    if (bounds.size() % 2 == 0) merged.push_back(bounds.back());  // an odd run out: kept as is
    bounds = std::move(merged);
  }
}

}  // namespace gpuscope
