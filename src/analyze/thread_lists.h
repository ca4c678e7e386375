// Rows of a trace's tables grouped by the CPU thread they ran on.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "gpuscope/model.h"

namespace gpuscope::analyze {

// A CPU thread: (pid, tid).
using ThreadKey = std::pair<TraceId, TraceId>;

// Lists keyed by thread, filled from tables whose rows come in runs of one thread: the run's list
// is looked up once per run, not once per row (a map lookup per op of the trace).
template <typename T>
class ThreadLists {
 public:
  std::vector<T>& Of(TraceId pid, TraceId tid) {
    const ThreadKey key{pid, tid};
    if (last_ == nullptr || key != last_key_) {
      last_ = &lists_[key];  // a std::map node stays where it is while others are added
      last_key_ = key;
    }
    return *last_;
  }
  // The lists. Moving them out ends the filling (Of may not be called afterwards).
  std::map<ThreadKey, std::vector<T>>& lists() { return lists_; }

 private:
  std::map<ThreadKey, std::vector<T>> lists_;
  ThreadKey last_key_{};
  std::vector<T>* last_ = nullptr;
};

}  // namespace gpuscope::analyze
