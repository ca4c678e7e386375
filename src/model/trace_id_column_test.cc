#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "gpuscope/model.h"

namespace gpuscope {
namespace {

// The column reads back exactly what a plain vector holds, whatever the mix of ids: runs of one
// thread, interleaved threads, string-encoded ids, and more distinct ids than are scanned in order
// (the hash map takes over past 16).
TEST(TraceIdColumn, ReadsBackLikeAVectorPastTheScannedIds) {
  std::mt19937 rng(3);
  for (const int distinct : {1, 3, 16, 17, 40, 5000}) {
    std::vector<TraceId> expected;
    TraceIdColumn column;
    for (int i = 0; i < 20000; ++i) {
      TraceId id = static_cast<TraceId>(rng() % static_cast<unsigned>(distinct));
      if (id % 7 == 3) id = TraceIdOfString(static_cast<StringId>(id));
      if (id % 5 == 1) id = -id;
      const int run = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < run; ++k) {
        expected.push_back(id);
        column.push_back(id);
      }
    }
    ASSERT_EQ(column.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(column[i], expected[i]) << i;
    EXPECT_LE(column.distinct().size(), static_cast<size_t>(distinct));
  }
}

TEST(TraceIdColumn, AppendMappedAndKeepRows) {
  TraceIdColumn a, b;
  for (TraceId id : {7, 7, 8, 9}) a.push_back(id);
  for (TraceId id : {9, 10, 7, 10}) b.push_back(id);
  a.AppendMapped(b, [](TraceId id) { return id == 10 ? TraceId{100} : id; });
  const std::vector<TraceId> appended = {7, 7, 8, 9, 9, 100, 7, 100};
  ASSERT_EQ(a.size(), appended.size());
  for (size_t i = 0; i < appended.size(); ++i) EXPECT_EQ(a[i], appended[i]) << i;
  EXPECT_EQ(a.distinct(), (std::vector<TraceId>{7, 8, 9, 100}));  // one entry per id

  a.KeepRows(std::vector<uint8_t>{0, 1, 0, 0, 1, 0, 1, 0});
  const std::vector<TraceId> kept = {7, 8, 9, 100, 100};
  ASSERT_EQ(a.size(), kept.size());
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(a[i], kept[i]) << i;

  TraceIdColumn same;
  for (TraceId id : kept) same.push_back(id);
  EXPECT_TRUE(a == same);  // equal rows, whatever the order ids were first seen in
  same.push_back(1);
  EXPECT_FALSE(a == same);
}

}  // namespace
}  // namespace gpuscope
