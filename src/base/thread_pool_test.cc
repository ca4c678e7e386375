#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpuscope/status.h"

namespace gpuscope {
namespace {

TEST(ThreadPool, OneThreadRunsTasksInSubmissionOrderOnTheWaitingThread) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.threads(), 1);
  std::vector<int> order;
  std::vector<std::thread::id> ran_on;
  TaskGroup group(pool);
  for (int i = 0; i < 100; ++i) {
    group.Run([&, i] {
      order.push_back(i);
      ran_on.push_back(std::this_thread::get_id());
    });
  }
  EXPECT_TRUE(order.empty());  // no worker: nothing runs before the wait
  group.Wait();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  for (std::thread::id id : ran_on) EXPECT_EQ(id, std::this_thread::get_id());
}

TEST(ThreadPool, ZeroThreadsMeansTheMachinesThreads) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.threads(), ThreadPool::DefaultThreads());
  EXPECT_GE(ThreadPool::DefaultThreads(), 1);
}

TEST(ThreadPool, EveryTaskRunsExactlyOnceOnManyThreads) {
  ThreadPool pool(4);
  constexpr int kTasks = 20000;
  std::vector<std::atomic<int>> runs(kTasks);
  TaskGroup group(pool);
  for (int i = 0; i < kTasks; ++i) group.Run([&runs, i] { runs[i].fetch_add(1); });
  group.Wait();
  for (int i = 0; i < kTasks; ++i) ASSERT_EQ(runs[i].load(), 1) << i;
}

TEST(ThreadPool, TasksAddedByTasksAreWaitedFor) {
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    std::atomic<int> done{0};
    TaskGroup group(pool);
    // A chain: each task adds the next one to the same group while the main thread waits.
    std::function<void(int)> step = [&](int left) {
      done.fetch_add(1);
      if (left > 0) group.Run([&step, left] { step(left - 1); });
    };
    group.Run([&step] { step(49); });
    group.Wait();
    EXPECT_EQ(done.load(), 50) << threads << " threads";
  }
}

// Every thread of the pool ends up waiting on an inner group whose tasks are still queued: only
// the waiting threads themselves can run them. Three levels deep, on 1, 2 and 4 threads.
TEST(ThreadPool, NestedWaitsDoNotDeadlock) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    std::atomic<int> leaves{0};
    TaskGroup outer(pool);
    for (int i = 0; i < 8; ++i) {
      outer.Run([&] {
        TaskGroup middle(pool);
        for (int j = 0; j < 8; ++j) {
          middle.Run([&] {
            TaskGroup inner(pool);
            for (int k = 0; k < 4; ++k) inner.Run([&] { leaves.fetch_add(1); });
            inner.Wait();
          });
        }
        middle.Wait();
      });
    }
    outer.Wait();
    EXPECT_EQ(leaves.load(), 8 * 8 * 4) << threads << " threads";
  }
}

// A producer that keeps at most `limit` tasks in flight (the reader's back-pressure) never has
// more, and the producing thread helps: with one thread it runs them all itself.
TEST(ThreadPool, WaitUntilPendingAtMostBoundsTasksInFlight) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    constexpr int kLimit = 3;
    std::atomic<int> in_flight{0}, max_in_flight{0}, done{0};
    TaskGroup group(pool);
    for (int i = 0; i < 200; ++i) {
      group.WaitUntilPendingAtMost(kLimit - 1);
      const int now = in_flight.fetch_add(1) + 1;
      int seen = max_in_flight.load();
      while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
      }
      group.Run([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        in_flight.fetch_sub(1);
        done.fetch_add(1);
      });
    }
    group.Wait();
    EXPECT_EQ(done.load(), 200);
    EXPECT_LE(max_in_flight.load(), kLimit) << threads << " threads";
    EXPECT_GE(max_in_flight.load(), 1);
  }
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnceInContiguousChunks) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    std::vector<int> hits(1001, 0);
    std::atomic<int> chunks{0};
    ParallelFor(pool, hits.size(), 10, [&](size_t begin, size_t end) {
      ASSERT_LT(begin, end);
      chunks.fetch_add(1);
      for (size_t i = begin; i < end; ++i) ++hits[i];
    });
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << i;
    EXPECT_EQ(chunks.load(), 4 * threads);  // about 4 chunks per thread
  }
}

TEST(ThreadPool, ParallelForBelowOneGrainRunsInlineOnTheCaller) {
  ThreadPool pool(4);
  std::thread::id ran_on;
  int calls = 0;
  ParallelFor(pool, 5, 100, [&](size_t begin, size_t end) {
    EXPECT_EQ(begin, 0u);
    EXPECT_EQ(end, 5u);
    ran_on = std::this_thread::get_id();
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  ParallelFor(pool, 0, 1, [&](size_t, size_t) { ++calls; });
  EXPECT_EQ(calls, 1);
}

// Per-chunk partial sums combined in chunk order: the floating-point result is bit-identical on
// 1 and N threads, because chunk boundaries depend on the pool's size only through the chunk
// count, and here each pool gets the same count (n / grain < 4 × threads).
TEST(ThreadPool, OneThreadAndManyThreadsGiveIdenticalResults) {
  std::vector<double> values(100000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(static_cast<double>(i)) * 1e-3;
  auto reduce = [&](int threads) {
    ThreadPool pool(threads);
    const size_t grain = values.size() / 3;  // 3 chunks on every pool below
    std::map<size_t, double> partial;        // by chunk start
    std::mutex m;
    ParallelFor(pool, values.size(), grain, [&](size_t begin, size_t end) {
      double s = 0;
      for (size_t i = begin; i < end; ++i) s += values[i];
      std::lock_guard<std::mutex> lock(m);
      partial[begin] = s;
    });
    EXPECT_EQ(partial.size(), 3u);
    double total = 0;
    for (const auto& [begin, p] : partial) total += p;
    return total;
  };
  const double one = reduce(1);
  EXPECT_EQ(one, reduce(2));
  EXPECT_EQ(one, reduce(4));
}

// Tasks report failures as values in their own slots (no exceptions); read in index order, the
// first failure is the same whatever the thread count.
TEST(ThreadPool, FailuresComeBackAsValuesInIndexOrder) {
  for (int threads : {1, 4}) {
    ThreadPool pool(threads);
    std::vector<Status> results(500);
    ParallelFor(pool, results.size(), 1, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        if (i == 137 || i == 411)
          results[i] = Status::Error(StatusCode::kInvalidInput, "item " + std::to_string(i));
      }
    });
    const Status* first = nullptr;
    size_t failed = 0;
    for (const Status& s : results) {
      if (s.ok()) continue;
      ++failed;
      if (first == nullptr) first = &s;
    }
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->message(), "item 137") << threads << " threads";
    EXPECT_EQ(failed, 2u);
  }
}

TEST(ThreadPool, GroupsOnOnePoolAreIndependent) {
  ThreadPool pool(3);
  std::atomic<int> a{0}, b{0};
  TaskGroup ga(pool), gb(pool);
  for (int i = 0; i < 100; ++i) {
    ga.Run([&] { a.fetch_add(1); });
    gb.Run([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      b.fetch_add(1);
    });
  }
  ga.Wait();
  EXPECT_EQ(a.load(), 100);  // whatever gb's state
  gb.Wait();
  EXPECT_EQ(b.load(), 100);
}

TEST(ThreadPool, ManyPoolsStartAndStopCleanly) {
  for (int i = 0; i < 50; ++i) {
    ThreadPool pool(1 + i % 4);
    std::atomic<int> n{0};
    {
      TaskGroup g(pool);
      for (int k = 0; k < i; ++k) g.Run([&] { n.fetch_add(1); });
    }  // the group's destructor waits
    EXPECT_EQ(n.load(), i);
  }
}

}  // namespace
}  // namespace gpuscope
