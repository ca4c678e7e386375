#include <algorithm>

#include "base/enum_names.h"
#include "gpuscope/model.h"
#include "model/columns.h"
#include "model/merge.h"

namespace gpuscope {

constexpr EnumNames<Diag, 23> kDiagNames(
    {Diag::kMalformedEvent, "malformed_event"}, {Diag::kNotAnObject, "not_an_object"},
    {Diag::kMissingPhase, "missing_phase"}, {Diag::kUnknownPhase, "unknown_phase"},
    {Diag::kMissingTimestamp, "missing_timestamp"}, {Diag::kMissingDuration, "missing_duration"},
    {Diag::kNegativeDuration, "negative_duration"}, {Diag::kBadNumber, "bad_number"},
    {Diag::kNumberAsString, "number_as_string"}, {Diag::kIntegerOutOfRange, "integer_out_of_range"},
    {Diag::kInvalidUtf8, "invalid_utf8"}, {Diag::kControlCharacter, "control_character"},
    {Diag::kUnknownCategory, "unknown_category"}, {Diag::kUnmatchedBegin, "unmatched_begin"},
    {Diag::kUnmatchedEnd, "unmatched_end"}, {Diag::kMissingName, "missing_name"},
    {Diag::kDuplicateCorrelation, "duplicate_correlation"},
    {Diag::kMalformedHeader, "malformed_header"}, {Diag::kLoneSurrogate, "lone_surrogate"},
    {Diag::kDuplicateGpuEvent, "duplicate_gpu_event"},
    {Diag::kDuplicateRuntimeCall, "duplicate_runtime_call"},
    {Diag::kDuplicateCpuEvent, "duplicate_cpu_event"},
    {Diag::kWrongColumnType, "wrong_column_type"});

const char* DiagName(Diag d) { return CNameOf(kDiagNames, d); }

const char* DiagDescription(Diag d) {
  switch (d) {
    case Diag::kMalformedEvent:
      return "events skipped: not valid JSON";
    case Diag::kNotAnObject:
      return "traceEvents entries skipped: not a JSON object";
    case Diag::kMissingPhase:
      return "events skipped: no \"ph\"";
    case Diag::kUnknownPhase:
      return "events skipped: unknown phase";
    case Diag::kMissingTimestamp:
      return "events skipped: no \"ts\"";
    case Diag::kMissingDuration:
      return "complete events skipped: no \"dur\"";
    case Diag::kNegativeDuration:
      return "events skipped: negative \"dur\"";
    case Diag::kBadNumber:
      return "fields ignored: not a number where one was expected (the event skipped when it is "
             "its \"ts\", or a complete event's \"dur\")";
    case Diag::kNumberAsString:
      return "numbers sent as strings (parsed)";
    case Diag::kIntegerOutOfRange:
      return "fields ignored: number out of range (beyond int64, or a time beyond ±292 years "
             "in ns; the event skipped when it is its \"ts\", or a complete event's \"dur\")";
    case Diag::kInvalidUtf8:
      return "events with invalid UTF-8 (replaced by U+FFFD)";
    case Diag::kControlCharacter:
      return "events with control characters in strings (replaced by a space)";
    case Diag::kUnknownCategory:
      return "events with an unknown category (kept as other CPU events)";
    case Diag::kUnmatchedBegin:
      return "B events without a matching E (skipped)";
    case Diag::kUnmatchedEnd:
      return "E events without a matching B (skipped)";
    case Diag::kMissingName:
      return "events without \"name\" (kept, unnamed)";
    case Diag::kDuplicateCorrelation:
      return "runtime calls sharing a correlation id (first one linked)";
    case Diag::kMalformedHeader:
      return "top-level members unreadable (ignored)";
    case Diag::kLoneSurrogate:
      return "events with a lone surrogate escape (\\uD800-\\uDFFF) in a string (replaced by "
             "U+FFFD)";
    case Diag::kDuplicateGpuEvent:
      return "identical duplicate GPU events removed";
    case Diag::kDuplicateRuntimeCall:
      return "identical duplicate runtime calls removed";
    case Diag::kDuplicateCpuEvent:
      return "identical duplicate CPU events removed (ProfilerStep ranges, ops, annotations)";
    case Diag::kWrongColumnType:
      return "rows skipped: an integer column holds text or a real number";
    case Diag::kCount:
      break;
  }
  return "unknown";
}

void Diagnostics::Merge(const Diagnostics& other) {
  for (size_t i = 0; i < count.size(); ++i) {
    if (other.count[i] == 0) continue;
    Add(static_cast<Diag>(i), other.first_offset[i], other.count[i]);
  }
}

bool DiagLosesData(Diag d) {
  switch (d) {
    case Diag::kMalformedEvent:
    case Diag::kNotAnObject:
    case Diag::kMissingPhase:
    case Diag::kUnknownPhase:
    case Diag::kMissingTimestamp:
    case Diag::kMissingDuration:
    case Diag::kNegativeDuration:
    case Diag::kBadNumber:
    case Diag::kIntegerOutOfRange:
    case Diag::kUnmatchedBegin:
    case Diag::kUnmatchedEnd:
    case Diag::kMalformedHeader:
    case Diag::kWrongColumnType:
      return true;
    default:
      return false;
  }
}

uint64_t Diagnostics::lost() const {
  uint64_t n = 0;
  for (size_t i = 0; i < count.size(); ++i)
    if (DiagLosesData(static_cast<Diag>(i))) n += count[i];
  return n;
}

uint64_t Diagnostics::total() const {
  uint64_t n = 0;
  for (uint64_t c : count) n += c;
  return n;
}

int32_t ProfilerStepNumber(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix || name.size() == kPrefix.size() ||
      name.size() > kPrefix.size() + 9) {
    return -1;
  }
  int32_t n = 0;
  for (size_t i = kPrefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

constexpr EnumNames<CopyDirection, 6> kCopyDirectionNames({CopyDirection::kUnknown, "unknown"},
                                                          {CopyDirection::kHtoD, "HtoD"},
                                                          {CopyDirection::kDtoH, "DtoH"},
                                                          {CopyDirection::kDtoD, "DtoD"},
                                                          {CopyDirection::kHtoH, "HtoH"},
                                                          {CopyDirection::kPtoP, "PtoP"});

const char* CopyDirectionName(CopyDirection d) { return CNameOf(kCopyDirectionNames, d); }

constexpr EnumNames<MemoryKind, 6> kMemoryKindNames({MemoryKind::kUnknown, "unknown"},
                                                    {MemoryKind::kPageable, "Pageable"},
                                                    {MemoryKind::kPinned, "Pinned"},
                                                    {MemoryKind::kDevice, "Device"},
                                                    {MemoryKind::kManaged, "Managed"},
                                                    {MemoryKind::kArray, "Array"});

const char* MemoryKindName(MemoryKind k) { return CNameOf(kMemoryKindNames, k); }

namespace {

// Rows in use, not capacity: reserved but untouched capacity is not resident memory.
template <typename T>
size_t VecBytes(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}
size_t VecBytes(const TraceIdColumn& c) { return c.bytes(); }

template <typename T>
void Append(std::vector<T>& dst, const std::vector<T>& src) {
  dst.insert(dst.end(), src.begin(), src.end());
}

void AppendIds(std::vector<StringId>& dst, const std::vector<StringId>& src,
               const std::vector<StringId>& remap) {
  // No reserve(size + n) here: an exact reserve per batch defeats geometric growth and made the
  // merge quadratic (measured: a quarter of the load time at 1 GB).
  for (StringId id : src) dst.push_back(remap[id]);
}

// A column that is empty while no row has a value (CpuOpTable's shapes): `src_rows` rows of src
// appended after `dst_rows` rows of dst, the side without the column padded with kEmptyString.
void AppendOptionalIds(std::vector<StringId>& dst, size_t dst_rows,
                       const std::vector<StringId>& src, size_t src_rows,
                       const std::vector<StringId>& remap) {
  if (src.empty() && dst.empty()) return;
  dst.resize(dst_rows, kEmptyString);
  if (src.empty()) {
    dst.resize(dst_rows + src_rows, kEmptyString);
  } else {
    AppendIds(dst, src, remap);
  }
}

// String-encoded pids/tids (see kStringTraceIdBase) must follow their string into the new pool.
TraceId RemapTraceId(TraceId id, const std::vector<StringId>& remap) {
  return IsStringTraceId(id) ? TraceIdOfString(remap[StringOfTraceId(id)]) : id;
}

void AppendTraceIds(std::vector<TraceId>& dst, const std::vector<TraceId>& src,
                    const std::vector<StringId>& remap) {
  for (TraceId id : src) dst.push_back(RemapTraceId(id, remap));
}
// Once per distinct id, not per row.
void AppendTraceIds(TraceIdColumn& dst, const TraceIdColumn& src,
                    const std::vector<StringId>& remap) {
  dst.AppendMapped(src, [&remap](TraceId id) { return RemapTraceId(id, remap); });
}

}  // namespace

size_t Trace::TableBytes() const {
  size_t n = strings.text_bytes() + strings.size() * (sizeof(std::string_view) * 3);
  auto add = [&n](auto column) { n += VecBytes(column.values); };
  model::ForEachColumn(gpu, add);
  model::ForEachColumn(runtime, add);
  model::ForEachColumn(cpu, add);
  model::ForEachColumn(memory, add);
  model::ForEachColumn(counters, add);
  model::ForEachColumn(flows, add);
  model::ForEachColumn(instants, add);
  return n + VecBytes(collectives) + VecBytes(sync_waits);
}

namespace model {

namespace {
template <typename Column>
void ReserveFor(Column& v, double factor) {
  v.reserve(static_cast<size_t>(static_cast<double>(v.size()) * factor) + 16);
}

// Appends src's rows of one table to dst's, each column as its role says.
template <typename Table>
void AppendTable(Table& dst, const Table& src, const std::vector<StringId>& remap) {
  const size_t dst_rows = dst.size(), src_rows = src.size();
  ForEachColumnPair(dst, src, [&](auto to, auto from) {
    if constexpr (decltype(to)::role == ColumnRole::kName) {
      AppendIds(to.values, from.values, remap);
    } else if constexpr (decltype(to)::role == ColumnRole::kTraceId) {
      AppendTraceIds(to.values, from.values, remap);
    } else if constexpr (decltype(to)::role == ColumnRole::kSparseName) {
      AppendOptionalIds(to.values, dst_rows, from.values, src_rows, remap);
    } else {
      Append(to.values, from.values);
    }
  });
}

}  // namespace

void ReserveTables(Trace* t, double factor) {
  // The tables a batch of events fills in proportion to its bytes; counters and instants are few.
  auto reserve = [factor](auto column) {
    // A sparse column stays empty until some row has a value: nothing to reserve for.
    if constexpr (decltype(column)::role != ColumnRole::kSparseName)
      ReserveFor(column.values, factor);
  };
  ForEachColumn(t->gpu, reserve);
  ReserveFor(t->collectives, factor);
  ReserveFor(t->sync_waits, factor);
  ForEachColumn(t->runtime, reserve);
  ForEachColumn(t->cpu, reserve);
  ForEachColumn(t->memory, reserve);
  ForEachColumn(t->flows, reserve);
}

std::vector<StringId> AppendTrace(Trace* dst, Trace&& src) {
  std::vector<StringId> remap(src.strings.size());
  for (size_t i = 0; i < remap.size(); ++i)
    remap[i] = dst->strings.Intern(src.strings.Get(static_cast<StringId>(i)));

  const uint32_t gpu_base = static_cast<uint32_t>(dst->gpu.size());
  AppendTable(dst->gpu, src.gpu, remap);
  for (CollectiveInfo c : src.collectives) {
    c.gpu_index += gpu_base;
    c.collective = remap[c.collective];
    c.dtype = remap[c.dtype];
    c.process_group = remap[c.process_group];
    c.process_group_desc = remap[c.process_group_desc];
    c.process_group_ranks = remap[c.process_group_ranks];
    dst->collectives.push_back(c);
  }
  for (SyncWaitInfo w : src.sync_waits) {
    w.gpu_index += gpu_base;
    dst->sync_waits.push_back(w);
  }
  AppendTable(dst->runtime, src.runtime, remap);
  AppendTable(dst->cpu, src.cpu, remap);
  AppendTable(dst->memory, src.memory, remap);
  AppendTable(dst->counters, src.counters, remap);
  AppendTable(dst->flows, src.flows, remap);
  AppendTable(dst->instants, src.instants, remap);

  ProcessMetadata& md = dst->metadata;
  for (auto& [pid, name] : src.metadata.process_names)
    md.process_names[RemapTraceId(pid, remap)] = name;
  for (auto& [pid, label] : src.metadata.process_labels)
    md.process_labels[RemapTraceId(pid, remap)] = label;
  for (auto& [pid, index] : src.metadata.process_sort_index)
    md.process_sort_index[RemapTraceId(pid, remap)] = index;
  for (auto& [key, name] : src.metadata.thread_names) {
    md.thread_names[{RemapTraceId(key.first, remap), RemapTraceId(key.second, remap)}] = name;
  }
  for (auto& [key, index] : src.metadata.thread_sort_index) {
    md.thread_sort_index[{RemapTraceId(key.first, remap), RemapTraceId(key.second, remap)}] = index;
  }
  dst->diagnostics.Merge(src.diagnostics);
  dst->info.trace_span_events_dropped += src.info.trace_span_events_dropped;
  dst->info.flow_events_dropped += src.info.flow_events_dropped;
  return remap;
}

}  // namespace model
}  // namespace gpuscope
