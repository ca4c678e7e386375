// Sorting what is almost sorted: trace tables are written in time order except where threads,
// streams or buffers meet, so a list to be ordered by time is usually a handful of ordered runs.
#pragma once

#include <algorithm>
#include <iterator>
#include <vector>

namespace gpuscope {

// Stable sort by `less` that costs O(n) for a list already in order and O(n log r) for r ordered
// runs (a natural merge sort: adjacent runs merged pairwise, left before right on ties), where
// std::sort and std::stable_sort cost O(n log n) whatever the order. Same result as
// std::stable_sort.
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
      std::inplace_merge(bounds[i], bounds[i + 1], bounds[i + 2], less);
      merged.push_back(bounds[i + 2]);
    }
    if (bounds.size() % 2 == 0) merged.push_back(bounds.back());  // an odd run out: kept as is
    bounds = std::move(merged);
  }
}

}  // namespace gpuscope
