// The MPI map plan (src/job/mpi.h): every process computes the same plan from the file sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "job/mpi.h"

namespace gpuscope::job {
namespace {

TEST(MpiPlan, LargestFilesFirstEachToTheLeastLoadedProcess) {
  // Sizes 9, 1, 5, 5, 2 over two processes: 9 → p0; 5 (index 2) → p1; 5 (index 3) → p1 (5 < 9);
  // 2 → p0 (9 < 10); 1 → p1 (10 < 11). Indices sorted within each process.
  const auto plan = PlanMap({9, 1, 5, 5, 2}, 2);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], (std::vector<size_t>{0, 4}));
  EXPECT_EQ(plan[1], (std::vector<size_t>{1, 2, 3}));
}

TEST(MpiPlan, EveryFileOnceWhateverTheProcessCount) {
  std::vector<uint64_t> sizes;
  for (uint64_t i = 0; i < 37; ++i) sizes.push_back((i * 7919) % 101);
  for (int processes : {1, 2, 3, 8, 64}) {
    const auto plan = PlanMap(sizes, processes);
    ASSERT_EQ(plan.size(), static_cast<size_t>(processes));
    std::vector<size_t> all;
    for (const auto& files : plan) all.insert(all.end(), files.begin(), files.end());
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), sizes.size()) << processes;
    for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], i);
  }
  // More processes than files: the extra processes map nothing.
  const auto plan = PlanMap({3, 4}, 4);
  EXPECT_EQ(plan[0], (std::vector<size_t>{1}));
  EXPECT_EQ(plan[1], (std::vector<size_t>{0}));
  EXPECT_TRUE(plan[2].empty());
  EXPECT_TRUE(plan[3].empty());
}

}  // namespace
}  // namespace gpuscope::job
