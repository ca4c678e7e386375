// The canonical trace model: what one rank's trace says, normalised once at import.
//
// Conventions (enforced by the importers, relied on by every analysis):
//  * times are int64 nanoseconds on the trace's own clock (Kineto: µs × 1000, exact digits kept;
//    absolute unix time = base_time_ns + ts_ns when the trace gives baseTimeNanoseconds);
//  * names are interned StringIds into Trace::strings;
//  * one vocabulary of event kinds whatever the source schema (2021 "Kernel" and today's "kernel"
//    land in the same table);
//  * tables are columnar (struct of vectors): analyses sweep one or two columns at a time.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "gpuscope/string_pool.h"

namespace gpuscope {

// Process/thread ids. Kineto writes numbers, or strings in 2021 traces ("stream 7", "CPU
// functions"). A string with a trailing integer keeps that integer ("stream 7" → 7); any other
// string is encoded below kStringTraceIdBase (−2^62) so it cannot collide with a numeric id (which
// may be negative, e.g. −1) and the label stays recoverable via Trace::strings.
using TraceId = int64_t;
inline constexpr TraceId kStringTraceIdBase = -(int64_t{1} << 62);
inline constexpr TraceId TraceIdOfString(StringId id) {
  return kStringTraceIdBase - static_cast<TraceId>(id);
}
inline constexpr bool IsStringTraceId(TraceId id) {
  return id <= kStringTraceIdBase && id > 2 * kStringTraceIdBase;
}
inline constexpr StringId StringOfTraceId(TraceId id) {
  return static_cast<StringId>(kStringTraceIdBase - id);
}

// A column of TraceIds kept as 32-bit indices into the distinct ids it holds. A trace has a few
// processes, threads and streams but millions of rows: 4 bytes a row instead of 8 (pid and tid of
// the three event tables were 16 of a row's ~60 bytes). Read like a vector (operator[], size);
// filled by push_back; rewritten only whole (AppendMapped, KeepRows).
class TraceIdColumn {
 public:
  TraceId operator[](size_t i) const { return values_[index_[i]]; }
  size_t size() const { return index_.size(); }
  bool empty() const { return index_.empty(); }
  void reserve(size_t n) { index_.reserve(n); }
  size_t capacity() const { return index_.capacity(); }
  void push_back(TraceId id) { index_.push_back(IndexOf(id)); }
  // Appends every row of `src`, each id replaced by map(id) (computed once per distinct id).
  template <typename Map>
  void AppendMapped(const TraceIdColumn& src, Map map) {
    std::vector<uint32_t> to(src.values_.size());
    for (size_t v = 0; v < to.size(); ++v) to[v] = IndexOf(map(src.values_[v]));
    // Grown as push_back grows it (an exact reserve per append would copy the column each time).
    const size_t old_size = index_.size();
    if (index_.capacity() < old_size + src.index_.size())
      index_.reserve(std::max(2 * index_.capacity(), old_size + src.index_.size()));
    index_.resize(old_size + src.index_.size());
    uint32_t* out = index_.data() + old_size;
    for (uint32_t i : src.index_) *out++ = to[i];
  }
  // Keeps the rows whose `drop` entry is 0, in order (duplicate removal).
  template <typename Flags>
  void KeepRows(const Flags& drop) {
    size_t out = 0;
    for (size_t i = 0; i < index_.size(); ++i)
      if (!drop[i]) index_[out++] = index_[i];
    index_.resize(out);
  }
  // The distinct ids, in first-seen order (an id stays here after KeepRows drops its rows).
  const std::vector<TraceId>& distinct() const { return values_; }
  // Bytes of its rows and distinct ids (with their lookup), as Trace::TableBytes counts vectors.
  size_t bytes() const {
    return index_.size() * sizeof(uint32_t) +
           values_.size() * (2 * sizeof(TraceId) + sizeof(uint32_t) + 2 * sizeof(void*));
  }
  bool operator==(const TraceIdColumn& o) const {
    if (size() != o.size()) return false;
    for (size_t i = 0; i < size(); ++i)
      if ((*this)[i] != o[i]) return false;
    return true;
  }

 private:
  // Up to this many distinct ids are searched in order (a table's threads, streams and devices
  // are usually fewer); past it a hash map holds them all.
  static constexpr size_t kScannedIds = 16;

  uint32_t IndexOf(TraceId id) {
    // Rows come in runs of one thread: the last id answers most lookups.
    if (last_ < values_.size() && values_[last_] == id) return last_;
    if (lookup_.empty()) {
      for (uint32_t v = 0; v < values_.size(); ++v)
        if (values_[v] == id) return last_ = v;
      if (values_.size() < kScannedIds) {
        values_.push_back(id);
        return last_ = static_cast<uint32_t>(values_.size() - 1);
      }
      for (uint32_t v = 0; v < values_.size(); ++v) lookup_.emplace(values_[v], v);
    }
    auto [it, added] = lookup_.try_emplace(id, static_cast<uint32_t>(values_.size()));
    if (added) values_.push_back(id);
    return last_ = it->second;
  }

  std::vector<uint32_t> index_;
  std::vector<TraceId> values_;
  std::unordered_map<TraceId, uint32_t> lookup_;
  uint32_t last_ = 0;
};

// Each table lists its columns once, in a static Columns(table) (a tuple of ColumnRefs, const or
// not as the table), and everything that treats a table as a whole walks that list
// (model/columns.h): merging batches and traces, duplicate removal, reserving, byte counts, the
// equal-rows check. A new column is then one line there, not four places to remember. The role
// says what merging two traces must do with a column's values.
enum class ColumnRole : uint8_t {
  kValue,       // copied as is
  kName,        // StringIds: re-interned into the merged trace's pool
  kTraceId,     // TraceIds: a string-encoded id (kStringTraceIdBase) follows its string
  kSparseName,  // StringIds, but empty while no row has a value (CpuOpTable's shapes)
};
template <ColumnRole R, typename V>
struct ColumnRef {
  static constexpr ColumnRole role = R;
  V& values;
};
template <ColumnRole R, typename V>
constexpr ColumnRef<R, V> Col(V& values) {
  return {values};
}

enum class GpuKind : uint8_t { kKernel, kMemcpy, kMemset, kSync };

enum class CopyDirection : uint8_t { kUnknown, kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };
enum class MemoryKind : uint8_t { kUnknown, kPageable, kPinned, kDevice, kManaged, kArray };
const char* CopyDirectionName(CopyDirection d);  // "HtoD", "DtoH", ..., "unknown"
const char* MemoryKindName(MemoryKind k);        // "Pageable", "Pinned", "Device", ..., "unknown"

// N of "ProfilerStep#N" (at most 9 digits), else -1: how readers and analyses number steps. The
// readers number only kCpuOp and kUserAnnotation rows (the CPU steps); analyze/gpu_time.cc also
// numbers kGpuUserAnnotation rows by it (the GPU-side copy of a step's range).
int32_t ProfilerStepNumber(std::string_view name);

// cuda_sync_kind of a GPU-side sync event.
enum class SyncKind : uint8_t {
  kNone,
  kStreamSync,
  kEventSync,
  kContextSync,
  kStreamWaitEvent,
  kOther
};

struct GpuActivityTable {
  std::vector<GpuKind> kind;
  std::vector<int64_t> start_ns;
  std::vector<int64_t> dur_ns;
  std::vector<StringId> name;
  TraceIdColumn pid;            // Kineto: the device
  TraceIdColumn tid;            // Kineto: the stream
  std::vector<int32_t> device;  // args.device, -1 if absent
  std::vector<int64_t> stream;  // args.stream, -1 if absent (Event/Context sync carry -1 or 2^32-1)
  std::vector<int64_t> correlation;  // -1 if absent
  std::vector<int64_t> external_id;  // -1 if absent
  std::vector<int32_t> launch;  // index into RuntimeCallTable, -1 if not linked (set by linker)
  // Kernel launch geometry and resources (0 / -1 where absent or not a kernel).
  std::vector<std::array<int32_t, 3>> grid;
  std::vector<std::array<int32_t, 3>> block;
  std::vector<int32_t> registers_per_thread;
  std::vector<int32_t> shared_memory_bytes;
  std::vector<float> blocks_per_sm;
  std::vector<float> warps_per_sm;
  std::vector<float> est_occupancy_pct;  // -1 if absent
  // Copies and sets.
  std::vector<int64_t> bytes;         // -1 if absent
  std::vector<float> bandwidth_gbps;  // as reported by the trace, -1 if absent
  std::vector<CopyDirection> copy_direction;
  std::vector<MemoryKind> src_kind;
  std::vector<MemoryKind> dst_kind;
  std::vector<SyncKind> sync_kind;

  size_t size() const { return start_ns.size(); }
  template <typename Self>
  static auto Columns(Self& t) {
    using enum ColumnRole;
    return std::tuple(
        Col<kValue>(t.kind), Col<kValue>(t.start_ns), Col<kValue>(t.dur_ns), Col<kName>(t.name),
        Col<kTraceId>(t.pid), Col<kTraceId>(t.tid), Col<kValue>(t.device), Col<kValue>(t.stream),
        Col<kValue>(t.correlation), Col<kValue>(t.external_id), Col<kValue>(t.launch),
        Col<kValue>(t.grid), Col<kValue>(t.block), Col<kValue>(t.registers_per_thread),
        Col<kValue>(t.shared_memory_bytes), Col<kValue>(t.blocks_per_sm),
        Col<kValue>(t.warps_per_sm), Col<kValue>(t.est_occupancy_pct), Col<kValue>(t.bytes),
        Col<kValue>(t.bandwidth_gbps), Col<kValue>(t.copy_direction), Col<kValue>(t.src_kind),
        Col<kValue>(t.dst_kind), Col<kValue>(t.sync_kind));
  }
};

// Collective metadata that NCCL-aware traces attach to communication kernels.
struct CollectiveInfo {
  uint32_t gpu_index = 0;              // row in GpuActivityTable
  StringId collective = kEmptyString;  // "allreduce", ...
  int64_t in_nelems = -1;
  int64_t out_nelems = -1;
  int32_t group_size = -1;
  StringId dtype = kEmptyString;
  StringId process_group = kEmptyString;  // "Process Group Name" ("0", "1", ...; older: "Process
                                          // Group ID", a number)
  StringId process_group_desc = kEmptyString;   // "Process Group Description": "default_pg", ...
  StringId process_group_ranks = kEmptyString;  // "Process Group Ranks" as written: "[0, 1]"
  // "Seq": the collective's sequence number within its process group (c10d's per-group counter,
  // the same on every rank of the group), written by newer PyTorch/Kineto; -1 when absent.
  int64_t seq = -1;
};

// What a cuda_sync record says it waits for (Kineto ≥ 2.4 writes it on "Stream Wait Event" and
// "Event Sync" records): the event recorded by the cudaEventRecord call of correlation
// `record_correlation` on stream `wait_on_stream`, i.e. that stream's work launched before that
// call. A "Stream Sync" record names its stream in GpuActivityTable::stream. One entry per sync
// row that carries either field.
struct SyncWaitInfo {
  uint32_t gpu_index = 0;           // row in GpuActivityTable (a kSync row)
  int64_t wait_on_stream = -1;      // args.wait_on_stream; -1 absent
  int64_t record_correlation = -1;  // args.wait_on_cuda_event_record_corr_id; -1 absent
};

enum class RuntimeKind : uint8_t {
  kKernelLaunch,  // cudaLaunchKernel(ExC), cuLaunchKernel(Ex), hipLaunchKernel,
                  // hipExtModuleLaunchKernel
  kGraphLaunch,   // cudaGraphLaunch, hipGraphLaunch
  kMemcpy,
  kMemset,
  kSync,  // cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, cudaStreamWaitEvent
  kOther,
};

struct RuntimeCallTable {
  std::vector<int64_t> start_ns;
  std::vector<int64_t> dur_ns;
  std::vector<StringId> name;
  TraceIdColumn pid;
  TraceIdColumn tid;
  std::vector<int64_t> correlation;  // -1 if absent
  std::vector<int64_t> external_id;  // -1 if absent
  std::vector<int32_t> cbid;         // -1 if absent
  std::vector<RuntimeKind> kind;
  std::vector<uint8_t> is_driver;  // 1 for cuda_driver (cuLaunchKernel from Triton, ...)

  size_t size() const { return start_ns.size(); }
  template <typename Self>
  static auto Columns(Self& t) {
    using enum ColumnRole;
    return std::tuple(Col<kValue>(t.start_ns), Col<kValue>(t.dur_ns), Col<kName>(t.name),
                      Col<kTraceId>(t.pid), Col<kTraceId>(t.tid), Col<kValue>(t.correlation),
                      Col<kValue>(t.external_id), Col<kValue>(t.cbid), Col<kValue>(t.kind),
                      Col<kValue>(t.is_driver));
  }
};

enum class CpuKind : uint8_t {
  kCpuOp,              // ATen operators: "Operator" (2021), "cpu_op"; legacy bare-array events
  kUserAnnotation,     // record_function ranges: ProfilerStep#N, DataLoader, nccl:*
  kGpuUserAnnotation,  // annotations projected onto a GPU stream (HTA counts them as CPU)
  kPythonFunction,
  kProfilerRange,  // cuda_profiler_range (CUPTI counters)
  kOther,          // any other category (kept, and counted in the diagnostics)
};

struct CpuOpTable {
  std::vector<int64_t> start_ns;
  std::vector<int64_t> dur_ns;
  std::vector<StringId> name;
  TraceIdColumn pid;
  TraceIdColumn tid;
  std::vector<int64_t> external_id;  // -1 if absent
  std::vector<CpuKind> kind;
  std::vector<int32_t> step;           // N of "ProfilerStep#N", else -1
  std::vector<uint8_t> is_dataloader;  // "enumerate(DataLoader)…"
  // record_shapes=True: the op's "Input Dims", "Input type", "Input Strides" and "Concrete Inputs"
  // as the profiler wrote them (their JSON text, interned; kEmptyString where an op has none).
  // Each column is empty while no op of the trace has that arg, so a trace without shapes stores
  // nothing; once one op has it, the column has a row for every op.
  std::vector<StringId> input_dims;
  std::vector<StringId> input_types;
  std::vector<StringId> input_strides;
  std::vector<StringId> concrete_inputs;

  size_t size() const { return start_ns.size(); }
  template <typename Self>
  static auto Columns(Self& t) {
    using enum ColumnRole;
    return std::tuple(Col<kValue>(t.start_ns), Col<kValue>(t.dur_ns), Col<kName>(t.name),
                      Col<kTraceId>(t.pid), Col<kTraceId>(t.tid), Col<kValue>(t.external_id),
                      Col<kValue>(t.kind), Col<kValue>(t.step), Col<kValue>(t.is_dataloader),
                      Col<kSparseName>(t.input_dims), Col<kSparseName>(t.input_types),
                      Col<kSparseName>(t.input_strides), Col<kSparseName>(t.concrete_inputs));
  }
  bool has_shapes() const { return !input_dims.empty(); }
};

// Allocator events ("[memory]" instants). Totals are after the event; -1 when the trace predates
// them.
struct MemoryEventTable {
  std::vector<int64_t> ts_ns;
  std::vector<int8_t> device_type;  // 0 CPU, 1 CUDA (other values kept as given)
  std::vector<int32_t> device_id;   // -1 for CPU
  std::vector<int64_t> bytes_delta;
  std::vector<int64_t> total_allocated;
  std::vector<int64_t> total_reserved;
  std::vector<uint64_t> addr;

  size_t size() const { return ts_ns.size(); }
  template <typename Self>
  static auto Columns(Self& t) {
    using enum ColumnRole;
    return std::tuple(Col<kValue>(t.ts_ns), Col<kValue>(t.device_type), Col<kValue>(t.device_id),
                      Col<kValue>(t.bytes_delta), Col<kValue>(t.total_allocated),
                      Col<kValue>(t.total_reserved), Col<kValue>(t.addr));
  }
};

struct CounterTable {  // ph "C": one row per series value
  std::vector<int64_t> ts_ns;
  std::vector<TraceId> pid;
  std::vector<StringId> name;
  std::vector<StringId> series;
  std::vector<double> value;

  size_t size() const { return ts_ns.size(); }
  template <typename Self>
  static auto Columns(Self& t) {
    using enum ColumnRole;
    return std::tuple(Col<kValue>(t.ts_ns), Col<kTraceId>(t.pid), Col<kName>(t.name),
                      Col<kName>(t.series), Col<kValue>(t.value));
  }
};

struct FlowTable {  // ph s / t / f
  std::vector<int64_t> ts_ns;
  std::vector<TraceId> pid;
  std::vector<TraceId> tid;
  std::vector<int64_t> id;
  std::vector<char> phase;               // 's', 't' or 'f'
  std::vector<StringId> category;        // "ac2g", "async", "async_cpu_to_gpu", "fwdbwd", ...
  std::vector<uint8_t> binds_enclosing;  // bp == "e"

  size_t size() const { return ts_ns.size(); }
  template <typename Self>
  static auto Columns(Self& t) {
    using enum ColumnRole;
    return std::tuple(Col<kValue>(t.ts_ns), Col<kTraceId>(t.pid), Col<kTraceId>(t.tid),
                      Col<kValue>(t.id), Col<kValue>(t.phase), Col<kName>(t.category),
                      Col<kValue>(t.binds_enclosing));
  }
};

struct InstantTable {  // ph i / I other than [memory]
  std::vector<int64_t> ts_ns;
  std::vector<TraceId> pid;
  std::vector<TraceId> tid;
  std::vector<StringId> name;
  std::vector<char> scope;  // 't', 'p', 'g' or 0

  size_t size() const { return ts_ns.size(); }
  template <typename Self>
  static auto Columns(Self& t) {
    using enum ColumnRole;
    return std::tuple(Col<kValue>(t.ts_ns), Col<kTraceId>(t.pid), Col<kTraceId>(t.tid),
                      Col<kName>(t.name), Col<kValue>(t.scope));
  }
};

struct DeviceProperties {
  int32_t id = -1;
  std::string name;
  int64_t total_global_mem_bytes = -1;
  int32_t compute_major = -1;
  int32_t compute_minor = -1;
  int32_t num_sms = -1;
  int32_t max_threads_per_sm = -1;
  int32_t max_threads_per_block = -1;
  int32_t warp_size = -1;
  int64_t regs_per_sm = -1;
  int64_t shared_mem_per_sm_bytes = -1;
};

struct ProcessMetadata {
  std::map<TraceId, std::string> process_names;
  std::map<TraceId, std::string> process_labels;
  std::map<TraceId, int64_t> process_sort_index;
  std::map<std::pair<TraceId, TraceId>, std::string> thread_names;
  std::map<std::pair<TraceId, TraceId>, int64_t> thread_sort_index;
};

// Why an event was skipped or repaired. Each reason is counted, never fatal.
enum class Diag : uint8_t {
  kMalformedEvent,        // JSON of one event could not be parsed; skipped
  kNotAnObject,           // a traceEvents element that is not an object; skipped
  kMissingPhase,          // no "ph"; skipped
  kUnknownPhase,          // ph not in X B E i I s t f M C; skipped
  kMissingTimestamp,      // no "ts"; skipped (an unreadable one is kBadNumber / kIntegerOutOfRange)
  kMissingDuration,       // X event without "dur"; skipped (as HTA does)
  kNegativeDuration,      // dur < 0; skipped
  kBadNumber,             // a numeric field that is not a number; field treated as absent (the
                          // event skipped when it is its "ts" or an X event's "dur")
  kNumberAsString,        // a numeric field sent as a string; parsed (kept)
  kIntegerOutOfRange,     // a number beyond int64 (a time: ±292 years in ns); as kBadNumber
  kInvalidUtf8,           // invalid UTF-8 in a string; replaced by U+FFFD (kept)
  kControlCharacter,      // raw control character inside a string; replaced by a space (kept)
  kUnknownCategory,       // X event with a category we do not know; kept as CpuKind::kOther
  kUnmatchedBegin,        // B without E; skipped
  kUnmatchedEnd,          // E without B; skipped
  kMissingName,           // event without "name"; kept with an empty name
  kDuplicateCorrelation,  // two runtime calls with one correlation id; the first one is used
  kMalformedHeader,  // a top-level member (deviceProperties, distributedInfo, ...) is unreadable
  kLoneSurrogate,    // an escaped UTF-16 surrogate (D800-DFFF) not in a pair; U+FFFD (kept)
  // Identical duplicates (model/dedup.h): every modelled column equal to an earlier row; removed.
  kDuplicateGpuEvent,
  kDuplicateRuntimeCall,
  kDuplicateCpuEvent,
  // Nsight Systems exports: a row whose integer column holds TEXT or a REAL; skipped.
  kWrongColumnType,
  kCount
};
const char* DiagName(Diag d);         // stable snake_case id, used in JSON
const char* DiagDescription(Diag d);  // human sentence
bool DiagLosesData(Diag d);           // see Diagnostics::lost

struct Diagnostics {
  std::array<uint64_t, static_cast<size_t>(Diag::kCount)> count{};
  // Byte offset (in the uncompressed JSON) of the first event with each problem; -1 if none.
  std::array<int64_t, static_cast<size_t>(Diag::kCount)> first_offset;
  Diagnostics() { first_offset.fill(-1); }
  void Add(Diag d, int64_t offset, uint64_t n = 1) {
    const size_t i = static_cast<size_t>(d);
    count[i] += n;
    if (first_offset[i] < 0 || (offset >= 0 && offset < first_offset[i])) first_offset[i] = offset;
  }
  void Merge(const Diagnostics& other);
  uint64_t total() const;
  // Events or fields lost (skipped, or a field ignored) — not those repaired or removed as
  // identical duplicates, which lose nothing.
  uint64_t lost() const;
};

struct LinkStats {
  uint64_t gpu_events = 0;
  uint64_t with_correlation = 0;
  uint64_t linked_by_correlation = 0;
  uint64_t linked_by_flow = 0;
  uint64_t kernels = 0;
  uint64_t kernels_linked = 0;
  // Kernels whose correlation id matches some runtime/driver call in the trace (the denominator of
  // link coverage: a kernel whose launch was not captured cannot be linked).
  uint64_t kernels_with_launch_in_trace = 0;
};

enum class TraceFormat : uint8_t { kKinetoObject, kBareArray, kNsysSqlite };
enum class RankSource : uint8_t { kNone, kDistributedInfo, kFileName };
// Its name in reports and summary files: "distributedInfo", "file name", "none".
inline const char* RankSourceName(RankSource s) {
  switch (s) {
    case RankSource::kDistributedInfo:
      return "distributedInfo";
    case RankSource::kFileName:
      return "file name";
    case RankSource::kNone:
      break;
  }
  return "none";
}

struct TraceInfo {
  std::string path;
  TraceFormat format = TraceFormat::kKinetoObject;
  bool gzip = false;
  uint64_t file_bytes = 0;    // as stored on disk
  uint64_t json_bytes = 0;    // after decompression
  uint64_t events_total = 0;  // entries of traceEvents
  int64_t schema_version = -1;
  std::string display_time_unit;
  std::optional<int64_t> base_time_ns;
  std::string trace_name;
  uint64_t trace_span_events_dropped =
      0;  // cat "Trace" events (the capture span), dropped as HTA does
  // Flow events read, used for linking and then dropped (LoadOptions::keep_flows false): the
  // trace had flows.size() + this many.
  uint64_t flow_events_dropped = 0;
  // Rank / world size.
  int32_t rank = -1;
  int32_t world_size = -1;
  RankSource rank_source = RankSource::kNone;
  std::string distributed_backend;
  // distributedInfo.pg_config, one entry per process group: "name desc [ranks]" (name = pg_name,
  // desc = pg_desc or "-", ranks as written). Empty when the trace does not record it.
  std::vector<std::string> process_groups;
  std::string hostname;  // top-level "host_name" / "hostname" when the trace has one, else ""
  // What the reader could not read and why, as sentences for the report (an Nsight Systems export
  // without the tables of a trace option, with the flag that captures them).
  std::vector<std::string> notes;
};

struct Trace {
  TraceInfo info;
  StringPool strings;
  GpuActivityTable gpu;
  std::vector<CollectiveInfo> collectives;
  std::vector<SyncWaitInfo> sync_waits;
  RuntimeCallTable runtime;
  CpuOpTable cpu;
  MemoryEventTable memory;
  CounterTable counters;
  FlowTable flows;  // empty after loading unless LoadOptions::keep_flows
  InstantTable instants;
  ProcessMetadata metadata;
  std::vector<DeviceProperties> devices;
  Diagnostics diagnostics;
  LinkStats links;

  std::string_view Str(StringId id) const { return strings.Get(id); }
  // Approximate heap bytes of the tables (for benchmarks and memory accounting).
  size_t TableBytes() const;
};

}  // namespace gpuscope
