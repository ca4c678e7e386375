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

}  // namespace
}  // namespace gpuscope::analyze
