#include "model/dedup.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "base/thread_pool.h"
#include "model/columns.h"

namespace gpuscope::model {

namespace {

constexpr uint32_t kEmptySlot = UINT32_MAX;

inline uint64_t Mix(uint64_t h, uint64_t v) {
  // splitmix64's finaliser over h ^ v: cheap, and good enough to spread clustered timestamps.
  uint64_t x = h ^ (v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Marks in `dup` every row equal (per `eq`) to an earlier row. `hash` must be equal for equal
// rows. This runs at the end of the load beside the whole model, the three tables at once on two
// threads, so its memory is kept to about 7 bytes per row (an exact table over every row took 8
// bytes × 2–4 slots per row: 64 MiB for the 1 GB synthetic trace, the load's peak):
//  1. each row's hash, 32 bits of it, is computed once (4 bytes per row);
//  2. a filter of 8 slots per row (two bitmaps, 2 bytes per row) marks the slots two or more rows
//     fall in. Equal rows share their slot; any other row shares one with probability
//     1 − e^(−1/8) ≈ 12 %;
//  3. only the rows of such slots go through the exact table: open addressing over row indices,
//     each slot keeping the hash beside the row so that a probe past another row rarely reads that
//     row's columns. Rows are taken in order, so the earlier of equal rows is kept.
// The filter takes the hash's top bits and the table its low bits, so rows that share a filter
// slot do not also crowd one table slot. The filter is bigger than the cache on big traces: its
// words are prefetched kAhead rows early.
template <typename Hash, typename Eq>
uint64_t MarkDuplicates(size_t n, Hash hash, Eq eq, std::vector<uint8_t>* dup) {
  dup->assign(n, 0);
  if (n < 2) return 0;
  std::vector<uint32_t> h32(n);
  for (size_t i = 0; i < n; ++i) h32[i] = static_cast<uint32_t>(hash(i) >> 32);
  int filter_log2 = 6;
  while ((size_t{1} << filter_log2) < 8 * n && filter_log2 < 32) ++filter_log2;
  const int shift = 32 - filter_log2 + 6;  // hash → filter word
  std::vector<uint64_t> seen(size_t{1} << (filter_log2 - 6), 0);
  std::vector<uint64_t> shared(seen.size(), 0);
  constexpr size_t kAhead = 16;
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      __builtin_prefetch(&seen[h32[i + kAhead] >> shift]);
      __builtin_prefetch(&shared[h32[i + kAhead] >> shift]);
    }
    const uint32_t f = h32[i] >> (32 - filter_log2);
    const uint64_t bit = uint64_t{1} << (f & 63);
    uint64_t& word = seen[f >> 6];
    if (word & bit)
      shared[f >> 6] |= bit;
    else
      word |= bit;
  }
  seen = {};
  std::vector<uint32_t> candidates;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t f = h32[i] >> (32 - filter_log2);
    if ((shared[f >> 6] >> (f & 63)) & 1) candidates.push_back(static_cast<uint32_t>(i));
  }
  shared = {};
  size_t capacity = 16;
  while (capacity < 2 * candidates.size()) capacity <<= 1;
  const size_t mask = capacity - 1;
  constexpr uint64_t kEmpty = ~uint64_t{0};
  std::vector<uint64_t> slots(capacity, kEmpty);
  uint64_t removed = 0;
  for (const uint32_t row : candidates) {
    const uint64_t h = h32[row];
    size_t s = static_cast<size_t>(h) & mask;
    while (true) {
      const uint64_t slot = slots[s];
      if (slot == kEmpty) {
        slots[s] = (h << 32) | row;
        break;
      }
      if ((slot >> 32) == h && eq(static_cast<uint32_t>(slot), row)) {
        (*dup)[row] = 1;
        ++removed;
        break;
      }
      s = (s + 1) & mask;
    }
  }
  return removed;
}

template <typename T>
void Compact(std::vector<T>& v, const std::vector<uint8_t>& dup) {
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!dup[i]) v[out++] = v[i];
  }
  v.resize(out);
}
void Compact(TraceIdColumn& v, const std::vector<uint8_t>& dup) { v.KeepRows(dup); }

// Drops the rows `dup` marks from every column of `table`.
template <typename Table>
void CompactTable(Table& table, const std::vector<uint8_t>& dup) {
  // A sparse column with no values has no rows to drop.
  ForEachColumn(table, [&dup](auto column) {
    if (!column.values.empty()) Compact(column.values, dup);
  });
}

template <typename T>
bool SameValue(const T& a, const T& b) {
  return a == b;
}
// Floats compare by their bits: "identical" means the same value as read, NaN included.
bool SameValue(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Rows a and b of `table` hold the same value in every column (a sparse column without values
// holds none in either).
template <typename Table>
bool SameRow(const Table& table, size_t a, size_t b) {
  return AllColumns(table, [a, b](auto column) {
    return column.values.empty() || SameValue(column.values[a], column.values[b]);
  });
}

uint64_t DedupGpu(Trace* t, std::vector<uint8_t>* dup) {
  GpuActivityTable& g = t->gpu;
  // Collective metadata belongs to the row: a kernel with different metadata is not a duplicate.
  std::vector<int32_t> collective_of;
  if (!t->collectives.empty()) {
    collective_of.assign(g.size(), -1);
    for (size_t c = 0; c < t->collectives.size(); ++c) {
      const uint32_t row = t->collectives[c].gpu_index;
      if (row < g.size()) collective_of[row] = static_cast<int32_t>(c);
    }
  }
  auto same_collective = [&](size_t a, size_t b) {
    if (collective_of.empty()) return true;
    const int32_t ca = collective_of[a], cb = collective_of[b];
    if (ca < 0 || cb < 0) return ca == cb;
    const CollectiveInfo& x = t->collectives[static_cast<size_t>(ca)];
    const CollectiveInfo& y = t->collectives[static_cast<size_t>(cb)];
    return x.collective == y.collective && x.in_nelems == y.in_nelems &&
           x.out_nelems == y.out_nelems && x.group_size == y.group_size && x.dtype == y.dtype &&
           x.process_group == y.process_group && x.process_group_desc == y.process_group_desc &&
           x.process_group_ranks == y.process_group_ranks && x.seq == y.seq;
  };
  auto hash = [&g](size_t i) {
    uint64_t h = Mix(0, static_cast<uint64_t>(g.start_ns[i]));
    h = Mix(h, static_cast<uint64_t>(g.dur_ns[i]));
    h = Mix(h, g.name[i]);
    h = Mix(h, static_cast<uint64_t>(g.tid[i]));
    return Mix(h, static_cast<uint64_t>(g.correlation[i]));
  };
  auto eq = [&](size_t a, size_t b) { return SameRow(g, a, b) && same_collective(a, b); };
  const uint64_t removed = MarkDuplicates(g.size(), hash, eq, dup);
  if (removed == 0) return 0;
  // New row index of each kept row, for the collective metadata.
  std::vector<uint32_t> new_index(g.size());
  uint32_t next = 0;
  for (size_t i = 0; i < g.size(); ++i) new_index[i] = (*dup)[i] ? kEmptySlot : next++;
  std::vector<CollectiveInfo> kept;
  kept.reserve(t->collectives.size());
  for (CollectiveInfo c : t->collectives) {
    if (c.gpu_index >= g.size() || (*dup)[c.gpu_index]) continue;
    c.gpu_index = new_index[c.gpu_index];
    kept.push_back(c);
  }
  t->collectives = std::move(kept);
  std::vector<SyncWaitInfo> waits;
  for (SyncWaitInfo w : t->sync_waits) {
    if (w.gpu_index >= g.size() || (*dup)[w.gpu_index]) continue;
    w.gpu_index = new_index[w.gpu_index];
    waits.push_back(w);
  }
  t->sync_waits = std::move(waits);
  CompactTable(g, *dup);
  return removed;
}

uint64_t DedupRuntime(Trace* t, std::vector<uint8_t>* dup) {
  RuntimeCallTable& r = t->runtime;
  auto hash = [&r](size_t i) {
    uint64_t h = Mix(0, static_cast<uint64_t>(r.start_ns[i]));
    h = Mix(h, static_cast<uint64_t>(r.dur_ns[i]));
    h = Mix(h, r.name[i]);
    h = Mix(h, static_cast<uint64_t>(r.tid[i]));
    return Mix(h, static_cast<uint64_t>(r.correlation[i]));
  };
  auto eq = [&r](size_t a, size_t b) { return SameRow(r, a, b); };
  const uint64_t removed = MarkDuplicates(r.size(), hash, eq, dup);
  if (removed == 0) return 0;
  CompactTable(r, *dup);
  return removed;
}

uint64_t DedupCpu(Trace* t, std::vector<uint8_t>* dup) {
  CpuOpTable& c = t->cpu;
  auto hash = [&c](size_t i) {
    uint64_t h = Mix(0, static_cast<uint64_t>(c.start_ns[i]));
    h = Mix(h, static_cast<uint64_t>(c.dur_ns[i]));
    h = Mix(h, c.name[i]);
    h = Mix(h, static_cast<uint64_t>(c.tid[i]));
    return Mix(h, static_cast<uint64_t>(c.external_id[i]));
  };
  auto eq = [&c](size_t a, size_t b) { return SameRow(c, a, b); };
  const uint64_t removed = MarkDuplicates(c.size(), hash, eq, dup);
  if (removed == 0) return 0;
  CompactTable(c, *dup);
  return removed;
}

}  // namespace

DuplicateCounts RemoveDuplicateEvents(Trace* trace, ThreadPool* pool) {
  DuplicateCounts out;
  if (pool == nullptr || pool->threads() < 2) {
    std::vector<uint8_t> dup;  // reused across the tables
    out.gpu = DedupGpu(trace, &dup);
    out.runtime = DedupRuntime(trace, &dup);
    out.cpu = DedupCpu(trace, &dup);
    return out;
  }
  // The three tables share no column (the collective metadata belongs to the GPU table): one task
  // each, so the pass that runs after every parse batch is not one core's work alone.
  std::vector<uint8_t> dup_gpu, dup_runtime, dup_cpu;
  TaskGroup tasks(*pool);
  tasks.Run([&] { out.gpu = DedupGpu(trace, &dup_gpu); });
  tasks.Run([&] { out.runtime = DedupRuntime(trace, &dup_runtime); });
  out.cpu = DedupCpu(trace, &dup_cpu);
  tasks.Wait();
  return out;
}

}  // namespace gpuscope::model
