// Values by a non-negative integer id (a correlation id): a flat array over the ids' range where
// they are dense, a hash map where they are not.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace gpuscope {

// CUPTI numbers a process's correlations consecutively from wherever its count stood when
// profiling began (824,968 in one of HTA's A100 traces), so the ids' range, not the largest id,
// decides: dense when the range has at most 4 slots per id (and a floor for small tables). A flat
// array costs sizeof(V) per slot, where a hash map costs ~40 bytes per entry and a probe.
template <typename V>
class IdTable {
 public:
  // Sized for the non-negative values of `ids` (negative ones mean "no id"). `absent` is what Find
  // returns for an id not inserted; it is not a value to insert.
  IdTable(const std::vector<int64_t>& ids, V absent) : absent_(absent) {
    int64_t lo = INT64_MAX, hi = -1;
    size_t n = 0;
    for (const int64_t id : ids) {
      if (id < 0) continue;
      lo = std::min(lo, id);
      hi = std::max(hi, id);
      ++n;
    }
    dense_ = n > 0 && static_cast<uint64_t>(hi - lo) < 4 * static_cast<uint64_t>(n) + 4096;
    if (dense_) {
      base_ = lo;
      flat_.assign(static_cast<size_t>(hi - lo) + 1, absent);
    } else {
      sparse_.reserve(n);
    }
  }
  // `id` must be one of the ids the table was sized for. False when it is there already (the
  // first value is kept).
  bool Insert(int64_t id, V value) {
    if (!dense_) return sparse_.emplace(id, value).second;
    V& slot = flat_[static_cast<size_t>(id - base_)];
    if (slot != absent_) return false;
    slot = value;
    return true;
  }
  // The value of `id`, or `absent`.
  V Find(int64_t id) const {
    if (!dense_) {
      auto it = sparse_.find(id);
      return it == sparse_.end() ? absent_ : it->second;
    }
    if (id < base_ || static_cast<uint64_t>(id - base_) >= flat_.size()) return absent_;
    return flat_[static_cast<size_t>(id - base_)];
  }

 private:
  V absent_;
  bool dense_ = false;
  int64_t base_ = 0;
  std::vector<V> flat_;
  std::unordered_map<int64_t, V> sparse_;
};

}  // namespace gpuscope
