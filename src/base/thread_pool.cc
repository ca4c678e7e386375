#include "base/thread_pool.h"

#include <algorithm>

namespace gpuscope {

int ThreadPool::DefaultThreads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int threads) : threads_(threads > 0 ? threads : DefaultThreads()) {
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Push(Task task) {
  bool wake_waiters;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++task.group->pending_;
    queue_.push_back(std::move(task));
    wake_waiters = waiting_ > 0;
  }
  work_.notify_one();
  // A waiting thread may run it too (and must, with no workers).
  if (wake_waiters) changed_.notify_all();
}

bool ThreadPool::TakeLocked(TaskGroup* group, bool own_only, Task* out) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->group == group) {
      *out = std::move(*it);
      queue_.erase(it);
      return true;
    }
  }
  if (own_only || queue_.empty()) return false;
  *out = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void ThreadPool::RunLocked(Task& task, std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  task.fn();
  task.fn = nullptr;  // captured state is released before the group can be seen as done
  lock.lock();
  --task.group->pending_;
  if (waiting_ > 0) changed_.notify_all();
}

void ThreadPool::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Task task = std::move(queue_.front());
    queue_.pop_front();
    RunLocked(task, lock);
  }
}

void TaskGroup::Run(std::function<void()> task) {
  pool_.Push(ThreadPool::Task{std::move(task), this});
}

void TaskGroup::Wait() { WaitFor(0, false); }

void TaskGroup::WaitUntilPendingAtMost(size_t n) { WaitFor(n, true); }

void TaskGroup::WaitFor(size_t n, bool own_only) {
  std::unique_lock<std::mutex> lock(pool_.mutex_);
  while (pending_ > n) {
    ThreadPool::Task task;
    if (pool_.TakeLocked(this, own_only, &task)) {
      pool_.RunLocked(task, lock);
      continue;
    }
    // This group's remaining tasks run on other threads: sleep until one finishes or new work
    // arrives that this thread may take.
    ++pool_.waiting_;
    pool_.changed_.wait(lock);
    --pool_.waiting_;
  }
}

void ParallelFor(ThreadPool& pool, size_t n, size_t grain,
                 const std::function<void(size_t begin, size_t end)>& body) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  const size_t max_chunks = static_cast<size_t>(pool.threads()) * 4;
  const size_t chunks = std::max<size_t>(1, std::min(max_chunks, n / grain));
  if (chunks == 1) {
    body(0, n);
    return;
  }
  TaskGroup group(pool);
  // Chunk c covers [c·n/chunks, (c+1)·n/chunks): sizes differ by at most one.
  for (size_t c = 0; c < chunks; ++c) {
    const size_t begin = c * n / chunks, end = (c + 1) * n / chunks;
    group.Run([&body, begin, end] { body(begin, end); });
  }
  group.Wait();
}

}  // namespace gpuscope
