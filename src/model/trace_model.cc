#include <algorithm>

#include "base/enum_names.h"
#include "gpuscope/model.h"
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
      return "events skipped: no valid \"ts\"";
    case Diag::kMissingDuration:
      return "complete events skipped: no \"dur\"";
    case Diag::kNegativeDuration:
      return "events skipped: negative \"dur\"";
    case Diag::kBadNumber:
      return "fields ignored: not a number where one was expected";
    case Diag::kNumberAsString:
      return "numbers sent as strings (parsed)";
    case Diag::kIntegerOutOfRange:
      return "fields ignored: number out of range (beyond int64, or a time beyond ±292 years "
             "in ns)";
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
size_t VecBytes(const TraceIdColumn& c) { return c.bytes(); }

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
  n += VecBytes(gpu.kind) + VecBytes(gpu.start_ns) + VecBytes(gpu.dur_ns) + VecBytes(gpu.name) +
       VecBytes(gpu.pid) + VecBytes(gpu.tid) + VecBytes(gpu.device) + VecBytes(gpu.stream) +
       VecBytes(gpu.correlation) + VecBytes(gpu.external_id) + VecBytes(gpu.launch) +
       VecBytes(gpu.grid) + VecBytes(gpu.block) + VecBytes(gpu.registers_per_thread) +
       VecBytes(gpu.shared_memory_bytes) + VecBytes(gpu.blocks_per_sm) +
       VecBytes(gpu.warps_per_sm) + VecBytes(gpu.est_occupancy_pct) + VecBytes(gpu.bytes) +
       VecBytes(gpu.bandwidth_gbps) + VecBytes(gpu.copy_direction) + VecBytes(gpu.src_kind) +
       VecBytes(gpu.dst_kind) + VecBytes(gpu.sync_kind) + VecBytes(collectives) +
       VecBytes(sync_waits);
  n += VecBytes(runtime.start_ns) + VecBytes(runtime.dur_ns) + VecBytes(runtime.name) +
       VecBytes(runtime.pid) + VecBytes(runtime.tid) + VecBytes(runtime.correlation) +
       VecBytes(runtime.external_id) + VecBytes(runtime.cbid) + VecBytes(runtime.kind) +
       VecBytes(runtime.is_driver);
  n += VecBytes(cpu.start_ns) + VecBytes(cpu.dur_ns) + VecBytes(cpu.name) + VecBytes(cpu.pid) +
       VecBytes(cpu.tid) + VecBytes(cpu.external_id) + VecBytes(cpu.kind) + VecBytes(cpu.step) +
       VecBytes(cpu.is_dataloader) + VecBytes(cpu.input_dims) + VecBytes(cpu.input_types) +
       VecBytes(cpu.input_strides) + VecBytes(cpu.concrete_inputs);
  n += VecBytes(memory.ts_ns) + VecBytes(memory.device_type) + VecBytes(memory.device_id) +
       VecBytes(memory.bytes_delta) + VecBytes(memory.total_allocated) +
       VecBytes(memory.total_reserved) + VecBytes(memory.addr);
  n += VecBytes(counters.ts_ns) + VecBytes(counters.pid) + VecBytes(counters.name) +
       VecBytes(counters.series) + VecBytes(counters.value);
  n += VecBytes(flows.ts_ns) + VecBytes(flows.pid) + VecBytes(flows.tid) + VecBytes(flows.id) +
       VecBytes(flows.phase) + VecBytes(flows.category) + VecBytes(flows.binds_enclosing);
  n += VecBytes(instants.ts_ns) + VecBytes(instants.pid) + VecBytes(instants.tid) +
       VecBytes(instants.name) + VecBytes(instants.scope);
  return n;
}

namespace model {

namespace {
template <typename Column>
void ReserveFor(Column& v, double factor) {
  v.reserve(static_cast<size_t>(static_cast<double>(v.size()) * factor) + 16);
}
}  // namespace

void ReserveTables(Trace* t, double factor) {
  GpuActivityTable& g = t->gpu;
  for (auto* v : {&g.start_ns, &g.dur_ns, &g.stream, &g.correlation, &g.external_id, &g.bytes})
    ReserveFor(*v, factor);
  for (auto* v : {&g.pid, &g.tid}) ReserveFor(*v, factor);
  ReserveFor(g.kind, factor);
  ReserveFor(g.name, factor);
  for (auto* v : {&g.device, &g.launch, &g.registers_per_thread, &g.shared_memory_bytes})
    ReserveFor(*v, factor);
  ReserveFor(g.grid, factor);
  ReserveFor(g.block, factor);
  for (auto* v : {&g.blocks_per_sm, &g.warps_per_sm, &g.est_occupancy_pct, &g.bandwidth_gbps})
    ReserveFor(*v, factor);
  ReserveFor(g.copy_direction, factor);
  ReserveFor(g.src_kind, factor);
  ReserveFor(g.dst_kind, factor);
  ReserveFor(g.sync_kind, factor);
  ReserveFor(t->collectives, factor);
  ReserveFor(t->sync_waits, factor);
  RuntimeCallTable& r = t->runtime;
  for (auto* v : {&r.start_ns, &r.dur_ns, &r.correlation, &r.external_id}) ReserveFor(*v, factor);
  for (auto* v : {&r.pid, &r.tid}) ReserveFor(*v, factor);
  ReserveFor(r.name, factor);
  ReserveFor(r.cbid, factor);
  ReserveFor(r.kind, factor);
  ReserveFor(r.is_driver, factor);
  CpuOpTable& c = t->cpu;
  for (auto* v : {&c.start_ns, &c.dur_ns, &c.external_id}) ReserveFor(*v, factor);
  for (auto* v : {&c.pid, &c.tid}) ReserveFor(*v, factor);
  ReserveFor(c.name, factor);
  ReserveFor(c.kind, factor);
  ReserveFor(c.step, factor);
  ReserveFor(c.is_dataloader, factor);
  MemoryEventTable& m = t->memory;
  for (auto* v : {&m.ts_ns, &m.bytes_delta, &m.total_allocated, &m.total_reserved})
    ReserveFor(*v, factor);
  ReserveFor(m.device_type, factor);
  ReserveFor(m.device_id, factor);
  ReserveFor(m.addr, factor);
  FlowTable& f = t->flows;
  for (auto* v : {&f.ts_ns, &f.id}) ReserveFor(*v, factor);
  for (auto* v : {&f.pid, &f.tid}) ReserveFor(*v, factor);
  ReserveFor(f.phase, factor);
  ReserveFor(f.category, factor);
  ReserveFor(f.binds_enclosing, factor);
}

std::vector<StringId> AppendTrace(Trace* dst, Trace&& src) {
  std::vector<StringId> remap(src.strings.size());
  for (size_t i = 0; i < remap.size(); ++i)
    remap[i] = dst->strings.Intern(src.strings.Get(static_cast<StringId>(i)));

  GpuActivityTable& g = dst->gpu;
  const GpuActivityTable& s = src.gpu;
  const uint32_t gpu_base = static_cast<uint32_t>(g.size());
  Append(g.kind, s.kind);
  Append(g.start_ns, s.start_ns);
  Append(g.dur_ns, s.dur_ns);
  AppendIds(g.name, s.name, remap);
  AppendTraceIds(g.pid, s.pid, remap);
  AppendTraceIds(g.tid, s.tid, remap);
  Append(g.device, s.device);
  Append(g.stream, s.stream);
  Append(g.correlation, s.correlation);
  Append(g.external_id, s.external_id);
  Append(g.launch, s.launch);
  Append(g.grid, s.grid);
  Append(g.block, s.block);
  Append(g.registers_per_thread, s.registers_per_thread);
  Append(g.shared_memory_bytes, s.shared_memory_bytes);
  Append(g.blocks_per_sm, s.blocks_per_sm);
  Append(g.warps_per_sm, s.warps_per_sm);
  Append(g.est_occupancy_pct, s.est_occupancy_pct);
  Append(g.bytes, s.bytes);
  Append(g.bandwidth_gbps, s.bandwidth_gbps);
  Append(g.copy_direction, s.copy_direction);
  Append(g.src_kind, s.src_kind);
  Append(g.dst_kind, s.dst_kind);
  Append(g.sync_kind, s.sync_kind);
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

  RuntimeCallTable& r = dst->runtime;
  const RuntimeCallTable& sr = src.runtime;
  Append(r.start_ns, sr.start_ns);
  Append(r.dur_ns, sr.dur_ns);
  AppendIds(r.name, sr.name, remap);
  AppendTraceIds(r.pid, sr.pid, remap);
  AppendTraceIds(r.tid, sr.tid, remap);
  Append(r.correlation, sr.correlation);
  Append(r.external_id, sr.external_id);
  Append(r.cbid, sr.cbid);
  Append(r.kind, sr.kind);
  Append(r.is_driver, sr.is_driver);

  CpuOpTable& c = dst->cpu;
  const CpuOpTable& sc = src.cpu;
  const size_t cpu_rows = c.size();
  AppendOptionalIds(c.input_dims, cpu_rows, sc.input_dims, sc.size(), remap);
  AppendOptionalIds(c.input_types, cpu_rows, sc.input_types, sc.size(), remap);
  AppendOptionalIds(c.input_strides, cpu_rows, sc.input_strides, sc.size(), remap);
  AppendOptionalIds(c.concrete_inputs, cpu_rows, sc.concrete_inputs, sc.size(), remap);
  Append(c.start_ns, sc.start_ns);
  Append(c.dur_ns, sc.dur_ns);
  AppendIds(c.name, sc.name, remap);
  AppendTraceIds(c.pid, sc.pid, remap);
  AppendTraceIds(c.tid, sc.tid, remap);
  Append(c.external_id, sc.external_id);
  Append(c.kind, sc.kind);
  Append(c.step, sc.step);
  Append(c.is_dataloader, sc.is_dataloader);

  MemoryEventTable& m = dst->memory;
  const MemoryEventTable& sm = src.memory;
  Append(m.ts_ns, sm.ts_ns);
  Append(m.device_type, sm.device_type);
  Append(m.device_id, sm.device_id);
  Append(m.bytes_delta, sm.bytes_delta);
  Append(m.total_allocated, sm.total_allocated);
  Append(m.total_reserved, sm.total_reserved);
  Append(m.addr, sm.addr);

  CounterTable& k = dst->counters;
  const CounterTable& sk = src.counters;
  Append(k.ts_ns, sk.ts_ns);
  AppendTraceIds(k.pid, sk.pid, remap);
  AppendIds(k.name, sk.name, remap);
  AppendIds(k.series, sk.series, remap);
  Append(k.value, sk.value);

  FlowTable& f = dst->flows;
  const FlowTable& sf = src.flows;
  Append(f.ts_ns, sf.ts_ns);
  AppendTraceIds(f.pid, sf.pid, remap);
  AppendTraceIds(f.tid, sf.tid, remap);
  Append(f.id, sf.id);
  Append(f.phase, sf.phase);
  AppendIds(f.category, sf.category, remap);
  Append(f.binds_enclosing, sf.binds_enclosing);

  InstantTable& in = dst->instants;
  const InstantTable& si = src.instants;
  Append(in.ts_ns, si.ts_ns);
  AppendTraceIds(in.pid, si.pid, remap);
  AppendTraceIds(in.tid, si.tid, remap);
  AppendIds(in.name, si.name, remap);
  Append(in.scope, si.scope);

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
