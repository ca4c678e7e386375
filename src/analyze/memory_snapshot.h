// Analyses of a PyTorch CUDA memory snapshot (model/memory_snapshot.h), per device: allocated and
// reserved bytes over the recorded trace, the peak and what is live at it (by allocation stack and
// by category), the free space the segments hold at the snapshot (fragmentation), failed
// allocations, and the allocator settings. Pure functions; docs/memory-snapshot.md defines every
// number.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/memory_snapshot.h"

namespace gpuscope::analyze {

// What an allocation is for, from its stack's frame names (ClassifyStack).
enum class MemoryCategory : uint8_t {
  kParameters,
  kGradients,
  kOptimizerState,
  kActivations,
  kWorkspace,
  kUnknown,
};
inline constexpr int kMemoryCategoryCount = 6;
const char* MemoryCategoryName(MemoryCategory c);  // "parameters", "optimizer_state", …

struct StackClass {
  MemoryCategory category = MemoryCategory::kUnknown;
  std::string rule;  // which rule matched, naming the frame; "no rule matched" for unknown
};
// The first rule (in docs/memory-snapshot.md's order) that a frame of the stack matches.
StackClass ClassifyStack(const std::vector<snapshot::Frame>& stack);
// A frame of the stack is in transformers' cache_utils.py (DynamicCache.update and the other
// Cache classes): the allocation holds past keys and values. Returns that frame, or null.
const snapshot::Frame* KvCacheFrame(const std::vector<snapshot::Frame>& stack);

// The stack of the bytes allocated before the trace (their stacks are not in it).
inline constexpr int32_t kBeforeTraceStack = -2;

// Allocations live at the peak with the same stack, together.
struct LiveGroup {
  int32_t stack = snapshot::kNoStack;  // kNoStack: no frames, or allocated before the trace
  bool before_trace = false;           // the bytes already allocated at the trace's first event
  int64_t bytes = 0;
  int64_t count = 0;
  MemoryCategory category = MemoryCategory::kUnknown;
  std::string rule;
};

struct CategoryBytes {
  MemoryCategory category = MemoryCategory::kUnknown;
  int64_t bytes = 0;
  int64_t count = 0;
};

struct FreeBlockBucket {
  const char* label = "";
  int64_t min_bytes = 0;  // blocks of at least this size, below the next bucket's
  int64_t count = 0;
  int64_t bytes = 0;
};

struct OomEvent {
  int64_t time_us = -1;
  int64_t requested_bytes = 0;
  int64_t device_free_bytes = -1;  // what the driver reported free; -1 when absent
};

struct SnapshotDevice {
  int device = 0;
  // At the snapshot, from `segments` on this device.
  int64_t segments = 0;
  int64_t segments_reserved_bytes = 0;   // Σ total_size
  int64_t segments_allocated_bytes = 0;  // Σ allocated_size
  int64_t active_allocated_bytes = 0;  // Σ size of blocks active_allocated or active_pending_free
  int64_t free_in_segments_bytes = 0;  // reserved − allocated (Σ total_size − Σ allocated_size)
  int64_t free_blocks = 0;             // inactive blocks
  int64_t largest_free_block_bytes = 0;
  std::vector<FreeBlockBucket> free_buckets;
  int64_t expandable_segments = 0;  // segments with is_expandable

  // The trace.
  int64_t events = 0;
  std::array<int64_t, snapshot::kActionCount> action_counts{};
  std::vector<std::pair<std::string, int64_t>> other_actions;
  bool frees_from_requested = false;    // no free_completed: free_requested ends an allocation
  int64_t initial_allocated_bytes = 0;  // allocated at the first event
  int64_t initial_reserved_bytes = 0;
  bool starts_mid_run = false;
  int64_t frees_before_trace = 0;  // frees of blocks the trace never allocated
  bool inconsistent = false;       // the segments and the trace disagree (see notes)
  // The blocks allocated at the snapshot are fewer than the trace implies (the start is then the
  // least that keeps allocated ≥ 0); the report's note gives the bytes.
  bool snapshot_below_trace = false;
  // The most the trace's allocated exceeds its segment events' reserved at one point (0: never);
  // the report's note gives it.
  int64_t most_over_reserved_bytes = 0;
  // Timeline: one point per event that changes allocated or reserved, after it.
  std::vector<int64_t> time_us;
  std::vector<int64_t> allocated_bytes;
  std::vector<int64_t> reserved_bytes;
  // Per category, the allocated bytes after each timeline point (stacked chart), same length.
  std::array<std::vector<int64_t>, kMemoryCategoryCount> category_bytes;
  // Per category, after each timeline point: the allocation stack holding the most of the
  // category's bytes (kNoStack: allocations without frames; kBeforeTraceStack: bytes allocated
  // before the trace), and those bytes; 0 bytes when the category holds nothing. The chart's
  // hover names what an instant's memory is.
  std::array<std::vector<int32_t>, kMemoryCategoryCount> top_stack;
  std::array<std::vector<int64_t>, kMemoryCategoryCount> top_stack_bytes;

  int64_t peak_allocated_bytes = 0;    // the largest allocated, initial state included
  int64_t peak_above_start_bytes = 0;  // peak − initial: what the trace's own events add
  int64_t peak_reserved_bytes = 0;
  int64_t peak_point = -1;  // index into the timeline; -1: at the start
  int64_t peak_time_us = -1;
  int64_t min_allocated_bytes = 0;      // never negative (a note says when it would be)
  std::vector<LiveGroup> live_at_peak;  // largest first
  std::array<CategoryBytes, kMemoryCategoryCount> categories_at_peak{};
  // Live at the peak from a stack through transformers' cache_utils.py (IsKvCacheStack): a KV
  // cache, which training does not need (use_cache left on).
  int64_t kv_cache_at_peak_bytes = 0;
  int64_t kv_cache_at_peak_count = 0;
  std::string kv_cache_frame;  // "update (…/transformers/cache_utils.py:123)", the first one seen
  std::vector<OomEvent> ooms;
  // Notes without numbers; those with bytes (mid-run start, snapshot_below_trace,
  // most_over_reserved_bytes) are the report's, which formats bytes.
  std::vector<std::string> notes;
};

struct SnapshotAnalysis {
  std::vector<SnapshotDevice> devices;
  int64_t segments = 0;
  int64_t segments_reserved_bytes = 0;  // Σ total_size over every segment
  int64_t peak_allocated_bytes = 0;     // the largest device peak
  // allocator_settings.expandable_segments: 1 true, 0 false, -1 not in the snapshot.
  int expandable_segments_setting = -1;
  // A snapshot does not record the device's memory: -1 (the headroom needs it).
  int64_t device_total_bytes = -1;
};

SnapshotAnalysis AnalyzeSnapshot(const snapshot::Snapshot& snap);

}  // namespace gpuscope::analyze
