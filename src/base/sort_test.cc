#include "base/sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace gpuscope {
namespace {

// (key, position): equal keys tell whether the order among them is std::stable_sort's.
using Item = std::pair<int, int>;
bool ByKey(const Item& a, const Item& b) { return a.first < b.first; }

TEST(SortRuns, EqualsStableSortOnRunsAndOnNoise) {
  std::mt19937 rng(5);
  for (int round = 0; round < 400; ++round) {
    const int n = static_cast<int>(rng() % 200);
    std::vector<Item> v;
    // Ordered runs of random lengths (the shape of a trace's tables), few distinct keys so that
    // ties are common; every fifth round plain noise.
    int key = 0;
    for (int i = 0; i < n; ++i) {
      if (round % 5 == 0 || rng() % 16 == 0) key = static_cast<int>(rng() % 40);
      key += static_cast<int>(rng() % 3);
      v.emplace_back(key, i);
    }
    std::vector<Item> expected = v;
    std::stable_sort(expected.begin(), expected.end(), ByKey);
    SortRuns(v.begin(), v.end(), ByKey);
    EXPECT_EQ(v, expected) << "round " << round;
  }
  // In order but for a few late elements, each a short way from its place (where a trace's
  // threads or buffers meet): the runs overlap in short windows only.
  for (int round = 0; round < 200; ++round) {
    const int n = 1 + static_cast<int>(rng() % 500);
    std::vector<Item> v;
    for (int i = 0; i < n; ++i) v.emplace_back(i / 3, i);
    for (int late = static_cast<int>(rng() % 8); late > 0; --late) {
      const size_t from = rng() % v.size();
      const size_t to = std::min(v.size() - 1, from + rng() % 6);
      std::rotate(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(from) + 1,
                  v.begin() + static_cast<long>(to) + 1);
    }
    std::vector<Item> expected = v;
    std::stable_sort(expected.begin(), expected.end(), ByKey);
    SortRuns(v.begin(), v.end(), ByKey);
    EXPECT_EQ(v, expected) << "late round " << round;
  }
  std::vector<Item> none;
  SortRuns(none.begin(), none.end(), ByKey);
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace gpuscope
