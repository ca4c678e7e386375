// Parses batches of traceEvents elements (cut by the Scanner) into a batch-local Trace.
//
// Each worker thread owns one EventParser (and so one simdjson parser and its buffers). A batch is
// first parsed as one JSON array (fast path); if simdjson rejects it — invalid UTF-8, a control
// character, one malformed event — the batch is parsed again event by event so that only the bad
// events are repaired or skipped, and each is counted in the diagnostics with its byte offset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpuscope/model.h"
#include "ingest/kineto_json/scanner.h"

namespace gpuscope::ingest {

// A "B" or "E" event waiting to be paired (pairing needs file order, so it happens after merging).
struct BeginEnd {
  char phase = 'B';
  int64_t ts_ns = 0;
  TraceId pid = 0;
  TraceId tid = 0;
  StringId name = kEmptyString;
  StringId category = kEmptyString;
  int64_t offset = 0;
};

struct BatchResult {
  Trace tables;  // batch-local tables and string pool
  std::vector<BeginEnd> begin_end;
  uint64_t events = 0;  // elements seen (objects or not)
  uint64_t fallback_batches = 0;
  uint64_t text_bytes = 0;  // JSON bytes of the batch (for sizing the final tables)
};

// A batch: text[first.begin - 1] is writable and text[last.end] too (the reader guarantees it), so
// the elements can be wrapped as one JSON array in place. `padding` readable bytes follow `size`.
struct Batch {
  char* text = nullptr;
  size_t size = 0;
  size_t capacity = 0;        // readable bytes from text (>= size + simdjson padding)
  int64_t stream_offset = 0;  // absolute stream offset of text[0] (-1 for the first batch)
  std::vector<ScannedElement> elements;
  // false: flow events are counted (TraceInfo::flow_events_dropped), not stored.
  bool keep_flows = true;
};

class EventParser {
 public:
  EventParser();
  ~EventParser();
  EventParser(const EventParser&) = delete;
  EventParser& operator=(const EventParser&) = delete;

  void ParseBatch(Batch& batch, BatchResult* result);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Classifies a category string (case-insensitive). Exposed for tests.
enum class Category : uint8_t {
  kNone,  // no "cat" (legacy bare-array events)
  kKernel,
  kMemcpy,
  kMemset,
  kCudaSync,
  kRuntime,
  kDriver,
  kCpuOp,
  kUserAnnotation,
  kGpuUserAnnotation,
  kPythonFunction,
  kProfilerRange,
  kTrace,    // the capture span; dropped
  kFlow,     // ac2g, async, async_cpu_to_gpu, fwdbwd
  kInstant,  // cpu_instant_event
  kUnknown,
};
Category ClassifyCategory(std::string_view cat);
RuntimeKind ClassifyRuntime(std::string_view name);
// The CPU table kind of a complete event of category `c` (kCpuOp for cpu_op/Operator and no cat).
CpuKind CpuKindForCategory(Category c);
// "enumerate(DataLoader)…" ops.
bool IsDataLoaderName(std::string_view name);

}  // namespace gpuscope::ingest
