#include "analyze/intervals.h"

#include <gtest/gtest.h>

#include <random>

namespace gpuscope::analyze {
namespace {

// Slow, obvious oracle: a bitmap over a small timeline.
std::vector<bool> Bitmap(const std::vector<Interval>& v, int64_t horizon) {
  std::vector<bool> bits(static_cast<size_t>(horizon), false);
  for (const Interval& i : v) {
    for (int64_t t = std::max<int64_t>(0, i.start); t < std::min(i.end, horizon); ++t)
      bits[static_cast<size_t>(t)] = true;
  }
  return bits;
}

int64_t Count(const std::vector<bool>& bits) { return std::count(bits.begin(), bits.end(), true); }

TEST(Intervals, MergeSubtractIntersectAgreeWithABitmap) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    auto random_set = [&] {
      std::vector<Interval> v;
      const int n = static_cast<int>(rng() % 12);
      for (int k = 0; k < n; ++k) {
        const int64_t s = static_cast<int64_t>(rng() % 100);
        v.push_back({s, s + static_cast<int64_t>(rng() % 20) - 2});  // some empty/negative
      }
      return v;
    };
    const auto a_raw = random_set(), b_raw = random_set();
    const auto a = Merge(a_raw), b = Merge(b_raw);
    const auto bits_a = Bitmap(a_raw, 130), bits_b = Bitmap(b_raw, 130);
    EXPECT_EQ(TotalLength(a), Count(bits_a));
    for (size_t k = 1; k < a.size(); ++k) EXPECT_LT(a[k - 1].end, a[k].start);
    std::vector<bool> minus(130), both(130);
    for (size_t t = 0; t < 130; ++t)
      minus[t] = bits_a[t] && !bits_b[t], both[t] = bits_a[t] && bits_b[t];
    EXPECT_EQ(Bitmap(Subtract(a, b), 130), minus);
    EXPECT_EQ(Bitmap(Intersect(a, b), 130), both);
    EXPECT_EQ(LengthWithin(a, 20, 60), Count(Bitmap(Intersect(a, {{20, 60}}), 130)));
  }
}

// Random intervals on [0, 100), some empty or negative; when `sorted`, in start order but for at
// most one pair swapped.
std::vector<Interval> RandomIntervals(std::mt19937_64& rng, int max_n, bool sorted) {
  std::vector<Interval> v;
  const int n = static_cast<int>(rng() % static_cast<uint64_t>(max_n + 1));
  for (int k = 0; k < n; ++k) {
    const int64_t s = static_cast<int64_t>(rng() % 100);
    v.push_back({s, s + static_cast<int64_t>(rng() % 20) - 2});
  }
  if (sorted) {
    std::sort(v.begin(), v.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start; });
    // A few out of place, as a trace's tables have at thread or buffer boundaries.
    if (v.size() > 3 && rng() % 2 == 0) std::swap(v[rng() % v.size()], v[rng() % v.size()]);
  }
  return v;
}

bool Same(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].start != b[i].start || a[i].end != b[i].end) return false;
  return true;
}

TEST(Intervals, UnionGivenOneAtATimeEqualsMerge) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 500; ++round) {
    const auto raw = RandomIntervals(rng, 30, round % 3 != 0);
    IntervalUnion u;
    for (const Interval& i : raw) u.Add(i.start, i.end);
    const auto got = u.Take();
    EXPECT_TRUE(Same(got, Merge(raw))) << "round " << round;
    // Reusable after Take().
    EXPECT_TRUE(u.Take().empty());
  }
  // Touching intervals join, as in Merge.
  IntervalUnion u;
  u.Add(0, 5);
  u.Add(5, 7);
  u.Add(9, 9);  // empty: dropped
  u.Add(8, 10);
  const auto v = u.Take();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].start, 0);
  EXPECT_EQ(v[0].end, 7);
  EXPECT_EQ(v[1].start, 8);
  EXPECT_EQ(v[1].end, 10);
}

// The obvious version ExclusiveCoverage replaces: each set in turn takes its share of the free
// time (the union of the windows), which is then removed.
std::vector<int64_t> CoverageBySubtraction(const std::vector<Interval>& windows,
                                           const std::vector<std::vector<Interval>>& sets) {
  std::vector<int64_t> out(windows.size() * sets.size(), 0);
  std::vector<Interval> free_time = Merge(windows);
  for (size_t r = 0; r < sets.size(); ++r) {
    const std::vector<Interval> cost = Intersect(free_time, sets[r]);
    for (size_t w = 0; w < windows.size(); ++w)
      out[w * sets.size() + r] = LengthWithin(cost, windows[w].start, windows[w].end);
    free_time = Subtract(free_time, cost);
  }
  return out;
}

TEST(Intervals, ExclusiveCoverageEqualsSubtractingEachSetInTurn) {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 500; ++round) {
    const size_t k = 1 + rng() % 7;
    std::vector<std::vector<Interval>> sets;
    for (size_t r = 0; r < k; ++r) sets.push_back(Merge(RandomIntervals(rng, 10, false)));
    // Windows: back to back (steps that follow the GPU), or overlapping and out of order.
    std::vector<Interval> windows;
    if (round % 2 == 0) {
      int64_t t = static_cast<int64_t>(rng() % 10);
      for (int w = 0; w < 5; ++w) {
        const int64_t len = static_cast<int64_t>(rng() % 30);
        windows.push_back({t, t + len});
        t += len + static_cast<int64_t>(rng() % 3);
      }
    } else {
      for (const Interval& i : RandomIntervals(rng, 6, false))
        windows.push_back({i.start, std::max(i.start, i.end)});
    }
    const auto got = ExclusiveCoverage(windows, sets);
    EXPECT_EQ(got, CoverageBySubtraction(windows, sets)) << "round " << round;
    // And against a bitmap: each window's shares sum to its time covered by any set.
    for (size_t w = 0; w < windows.size(); ++w) {
      std::vector<Interval> all;
      for (const auto& set : sets) all.insert(all.end(), set.begin(), set.end());
      int64_t sum = 0;
      for (size_t r = 0; r < k; ++r) sum += got[w * k + r];
      EXPECT_EQ(sum, LengthWithin(Merge(all), windows[w].start, windows[w].end));
    }
  }
  EXPECT_TRUE(ExclusiveCoverage({}, std::vector<std::vector<Interval>>(3)).empty());
}

}  // namespace
}  // namespace gpuscope::analyze
