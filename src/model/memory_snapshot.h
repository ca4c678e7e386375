// The PyTorch CUDA memory snapshot model (torch.cuda.memory._dump_snapshot): the allocator's
// segments and blocks at the moment of the snapshot, and the recorded trace of allocator events
// per device (docs/memory-snapshot.md). Only the plain data the analyses read is kept; stacks are
// stored once each and referred to by index.
//
// Units: bytes are bytes, times are the snapshot's own microseconds (time_us, unix epoch).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope::snapshot {

struct Frame {
  std::string name;
  std::string filename;
  int64_t line = 0;
  bool operator==(const Frame&) const = default;
};

// The trace actions the CUDA caching allocator records (c10/cuda/CUDACachingAllocator.h).
enum class Action : uint8_t {
  kAlloc,          // a tensor's block handed out
  kFreeRequested,  // the tensor released it (the block may wait for its streams)
  kFreeCompleted,  // the block is back in the cache
  kSegmentAlloc,   // cudaMalloc of a segment
  kSegmentFree,    // cudaFree of a segment
  kSegmentMap,     // expandable segment grown
  kSegmentUnmap,   // expandable segment shrunk
  kOom,            // an allocation failed (size: the request; device_free: what the driver had)
  kSnapshot,       // a snapshot was taken
  kOther,          // an action this reader does not know (counted under its name)
};
inline constexpr int kActionCount = 10;
const char* ActionName(Action a);  // "alloc", "free_requested", …
// The action PyTorch's snapshot names `name`; kOther for one this version does not know.
Action ActionFromName(std::string_view name);

inline constexpr int32_t kNoStack = -1;

struct TraceEvent {
  Action action = Action::kOther;
  int64_t addr = 0;
  int64_t size = 0;
  int64_t stream = 0;
  int64_t time_us = -1;      // -1: not recorded
  int64_t device_free = -1;  // oom only: bytes free on the device; -1 when absent
  int32_t stack = kNoStack;  // index into Snapshot::stacks; kNoStack: no frames
};

struct Block {
  int64_t address = 0;
  int64_t size = 0;
  int64_t requested_size = 0;
  bool active_allocated = false;     // state "active_allocated"
  bool active_pending_free = false;  // state "active_pending_free"
  int32_t stack = kNoStack;
};

struct Segment {
  int64_t device = 0;
  int64_t address = 0;
  int64_t total_size = 0;
  int64_t allocated_size = 0;
  int64_t active_size = 0;
  int64_t requested_size = 0;
  int64_t stream = 0;
  std::string segment_type;  // "large" or "small"
  bool is_expandable = false;
  std::vector<Block> blocks;
};

struct DeviceTrace {
  int device = 0;
  std::vector<TraceEvent> events;
  // Events with an action this reader does not know, by name.
  std::vector<std::pair<std::string, int64_t>> other_actions;
};

struct Snapshot {
  std::string path;
  uint64_t file_bytes = 0;
  std::vector<Segment> segments;
  std::vector<DeviceTrace> devices;        // one per entry of device_traces, in order
  std::vector<std::vector<Frame>> stacks;  // innermost frame first, as torch records them
  bool has_allocator_settings = false;
  // allocator_settings as (key, value spelled as text) pairs, in file order.
  std::vector<std::pair<std::string, std::string>> allocator_settings;
  int64_t external_annotations = 0;
  std::vector<std::string> notes;  // what the reader left out or could not use
};

}  // namespace gpuscope::snapshot
