// One pool of threads for the whole program: ingest (files, parse batches) and the analyses
// (ranks, analyses) submit their tasks to the same workers, so `-j N` means N busy cores however
// the work nests.
//
// Model:
//  * ThreadPool(n) starts n − 1 workers; the n-th thread is whoever waits. A thread waiting on a
//    TaskGroup runs queued tasks meanwhile (its own group's first, then any), so a task may itself
//    submit tasks and wait for them (nested use) without deadlock, and ThreadPool(1) runs every
//    task on the waiting thread, in submission order.
//  * Tasks must not block on anything but a TaskGroup wait (no queue pops, no condition variables
//    of their own): a task parked on something else holds its thread, and with every thread
//    parked nothing runs the task that would wake them.
//  * Tasks must not throw (library code reports failures as Status values): a task writes its
//    outcome into a slot of its own (e.g. results[i]) and the submitter reads the slots after
//    Wait(), in index order, so the reported error does not depend on the thread count.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpuscope {

class TaskGroup;

class ThreadPool {
 public:
  // `threads`: tasks that may run at once, counting the waiting thread; 0 = DefaultThreads().
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();  // every TaskGroup must have been waited for
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  // The machine's hardware threads (at least 1).
  static int DefaultThreads();

 private:
  friend class TaskGroup;
  struct Task {
    std::function<void()> fn;
    TaskGroup* group = nullptr;
  };

  void Push(Task task);
  // Under `lock`: removes and returns a queued task, preferring `group`'s (any group's when
  // `own_only` is false and `group` has none queued). False if there is none.
  bool TakeLocked(TaskGroup* group, bool own_only, Task* out);
  // Runs `task` with the lock released, then marks it finished. `lock` is held on entry and exit.
  void RunLocked(Task& task, std::unique_lock<std::mutex>& lock);
  void WorkerLoop();

  const int threads_;
  std::mutex mutex_;
  std::condition_variable work_;     // a task was queued, or the pool is stopping
  std::condition_variable changed_;  // a task was queued or finished (for waiting threads)
  std::deque<Task> queue_;
  size_t waiting_ = 0;  // threads blocked in a TaskGroup wait (they need `changed_`)
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// A set of tasks to wait for together. Run() may be called from any thread, including from a task
// of this group while another thread waits on it. Not copyable; waits in its destructor.
class TaskGroup {
 public:
  explicit TaskGroup(ThreadPool& pool) : pool_(pool) {}
  ~TaskGroup() { Wait(); }
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  void Run(std::function<void()> task);
  // Until every task run on this group so far (and every task those add) has finished. The
  // calling thread runs queued tasks meanwhile: this group's first, then any other group's.
  void Wait();
  // Until at most `n` of this group's tasks are queued or running (a producer's back-pressure:
  // bounds the memory its queued tasks hold). Runs only this group's queued tasks meanwhile, so
  // a producer is never stalled by unrelated work.
  void WaitUntilPendingAtMost(size_t n);

  ThreadPool& pool() { return pool_; }

 private:
  friend class ThreadPool;
  void WaitFor(size_t n, bool own_only);

  ThreadPool& pool_;
  size_t pending_ = 0;  // queued or running; guarded by pool_.mutex_
};

// body(begin, end) over [0, n) in chunks of at least `grain` indices (about 4 chunks per thread),
// on the pool; returns when all are done. Chunk boundaries depend only on n, grain and the pool's
// size; with a 1-thread pool the chunks run in order on the calling thread.
void ParallelFor(ThreadPool& pool, size_t n, size_t grain,
                 const std::function<void(size_t begin, size_t end)>& body);

}  // namespace gpuscope
