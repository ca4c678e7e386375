#include "analyze/gpu_time.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "analyze/kernel_class.h"
#include "base/id_table.h"

namespace gpuscope::analyze {

namespace {

// HTA rounds float timestamps to whole µs: ceil for starts, floor for ends. It does so on the
// float64 values pandas parsed, which at epoch-µs magnitudes (~1.7e15) resolve only 0.25 µs, and it
// forms the end as float64(ts) + float64(dur). We reproduce that arithmetic (the double nearest to
// our exact ns value / 1000 is the double pandas parsed from the same decimal text), so rounded
// results match HTA's row for row.
double HtaMicros(int64_t ns) { return static_cast<double>(static_cast<long double>(ns) / 1000.0L); }
int64_t CeilUs(int64_t ns) { return static_cast<int64_t>(std::ceil(HtaMicros(ns))) * 1000; }
int64_t HtaEnd(int64_t start_ns, int64_t dur_ns) {
  return static_cast<int64_t>(std::floor(HtaMicros(start_ns) + HtaMicros(dur_ns))) * 1000;
}

bool HasSubMicrosecondTimes(const Trace& t) {
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.start_ns[i] % 1000 != 0 || t.gpu.dur_ns[i] % 1000 != 0) return true;
  }
  for (size_t i = 0; i < t.runtime.size(); ++i) {
    if (t.runtime.start_ns[i] % 1000 != 0) return true;
  }
  return false;
}

// Sorts (start, row) pairs (checked first: usually already in order) and fills the selection.
template <typename EndOf>
void FillSorted(const Trace& t, std::vector<std::pair<int64_t, uint32_t>> keyed, EndOf end_of,
                GpuSelection* sel) {
  if (!std::is_sorted(keyed.begin(), keyed.end())) std::sort(keyed.begin(), keyed.end());
  sel->rows.reserve(keyed.size());
  sel->start_ns.reserve(keyed.size());
  sel->end_ns.reserve(keyed.size());
  for (const auto& [start, r] : keyed) {
    sel->rows.push_back(r);
    sel->start_ns.push_back(start);
    sel->end_ns.push_back(end_of(t.gpu.start_ns[r], t.gpu.dur_ns[r]));
  }
}

}  // namespace

int64_t HtaRoundedStartNs(int64_t start_ns) { return CeilUs(start_ns); }
int64_t HtaRoundedEndNs(int64_t start_ns, int64_t dur_ns) { return HtaEnd(start_ns, dur_ns); }

GpuSelection SelectGpuEvents(const Trace& t, const SelectionOptions& options) {
  GpuSelection sel;
  sel.rounded = options.hta_rounding && HasSubMicrosecondTimes(t);
  auto start_of = [&](int64_t s) { return sel.rounded ? CeilUs(s) : s; };
  auto end_of = [&](int64_t s, int64_t d) { return sel.rounded ? HtaEnd(s, d) : s + d; };

  // HTA's step filter: with ≥ 2 distinct ProfilerStep names, CPU rows must start before the last
  // step starts (or end of last step with include_last_step), and GPU rows must share a correlation
  // id with a kept CPU row (here: a kept runtime/driver call; CPU ops carry no correlation).
  // HTA's step rows are all rows named ProfilerStep#N that are not GPU rows (trace.py
  // _filter_irrelevant_gpu_kernels), so they include the GPU-side copies of the annotation
  // (gpu_user_annotation, written by ROCm and recent CUDA traces): those have no stream. The copy
  // of the last step starts when the GPU reaches it, after the CPU-side one, so HTA's cut comes
  // later and keeps the launches made in between (usually the whole last step).
  std::unordered_set<int32_t> step_numbers;
  int64_t last_step_start = INT64_MIN, last_step_end = INT64_MIN;
  for (size_t i = 0; i < t.cpu.size(); ++i) {
    int32_t step = t.cpu.step[i];
    if (step < 0 && t.cpu.kind[i] == CpuKind::kGpuUserAnnotation)
      step = ProfilerStepNumber(t.Str(t.cpu.name[i]));
    if (step < 0) continue;
    step_numbers.insert(step);
    last_step_start = std::max(last_step_start, start_of(t.cpu.start_ns[i]));
    last_step_end = std::max(last_step_end, end_of(t.cpu.start_ns[i], t.cpu.dur_ns[i]));
  }
  sel.step_filtered = step_numbers.size() >= 2;
  sel.last_step_start_ns = sel.step_filtered ? last_step_start : 0;
  // The kept correlation ids (1 = kept; base/id_table.h). Looked up once per GPU row.
  std::optional<IdTable<uint8_t>> kept_correlations;
  if (sel.step_filtered) {
    kept_correlations.emplace(t.runtime.correlation, 0);
    for (size_t i = 0; i < t.runtime.size(); ++i) {
      const int64_t s = start_of(t.runtime.start_ns[i]);
      const bool kept = options.include_last_step ? s <= last_step_end : s < last_step_start;
      if (kept && t.runtime.correlation[i] >= 0)
        kept_correlations->Insert(t.runtime.correlation[i], 1);
    }
  }
  // (start, row) pairs: the sort key computed once per row, not per comparison (the rounding is a
  // long-double division), and no indirection while sorting. GPU rows come nearly in time order,
  // so an already sorted selection is only checked.
  std::vector<std::pair<int64_t, uint32_t>> keyed;
  keyed.reserve(t.gpu.size());
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.stream[i] == -1) continue;  // HTA: a GPU row is one with a stream
    if (sel.step_filtered && t.gpu.correlation[i] >= 0 &&
        kept_correlations->Find(t.gpu.correlation[i]) == 0)
      continue;
    keyed.emplace_back(start_of(t.gpu.start_ns[i]), static_cast<uint32_t>(i));
  }
  FillSorted(t, std::move(keyed), end_of, &sel);
  return sel;
}

GpuSelection SelectGpuEventsOrAll(const Trace& t, bool hta_selection,
                                  const SelectionOptions& options) {
  if (hta_selection) return SelectGpuEvents(t, options);
  GpuSelection sel;
  // Sorted by (start, row): the stable sort by start it always was.
  std::vector<std::pair<int64_t, uint32_t>> keyed;
  keyed.reserve(t.gpu.size());
  for (size_t i = 0; i < t.gpu.size(); ++i)
    keyed.emplace_back(t.gpu.start_ns[i], static_cast<uint32_t>(i));
  FillSorted(
      t, std::move(keyed), [](int64_t s, int64_t d) { return s + d; }, &sel);
  return sel;
}

const GpuSelection& SharedOrOwnSelection(const Trace& t, bool hta_selection,
                                         const SelectionOptions& options, const GpuSelection* made,
                                         GpuSelection* own) {
  if (hta_selection && made != nullptr) return *made;
  *own = SelectGpuEventsOrAll(t, hta_selection, options);
  return *own;
}

GpuTime AnalyzeGpuTime(const Trace& t, const SelectionOptions& options,
                       int64_t consecutive_kernel_delay_ns, StreamGapFrom gap_from) {
  return AnalyzeGpuTime(t, BuildKernelClasses(t), options, consecutive_kernel_delay_ns, gap_from);
}

GpuTime AnalyzeGpuTime(const Trace& t, const KernelClasses& kernel_classes,
                       const SelectionOptions& options, int64_t consecutive_kernel_delay_ns,
                       StreamGapFrom gap_from) {
  return AnalyzeGpuTime(t, kernel_classes, SelectGpuEvents(t, options), consecutive_kernel_delay_ns,
                        gap_from);
}

GpuTime AnalyzeGpuTime(const Trace& t, const KernelClasses& kernel_classes, GpuSelection selection,
                       int64_t consecutive_kernel_delay_ns, StreamGapFrom gap_from) {
  GpuTime out =
      AnalyzeGpuTimeOf(t, kernel_classes, selection, consecutive_kernel_delay_ns, gap_from);
  out.selection = std::move(selection);
  return out;
}

namespace {

// HTA's temporal breakdown and ours (exclusive) over the selection, and the communication's
// overlap with computation.
void AddBreakdowns(const Trace& t, const KernelClasses& kernel_classes, const GpuSelection& sel,
                   GpuTime* result) {
  GpuTime& out = *result;
  // The selection is in start order, so each union is built merged as it goes (no raw lists), and
  // the busy time, of which only the length is used, is summed as it goes: the open interval of
  // the union so far and the length of the closed ones.
  IntervalUnion hta_compute, hta_comm, compute, comm, memory;
  int64_t busy = 0, open_start = 0, open_end = INT64_MIN;
  const std::vector<KernelClass>& classes = kernel_classes.row;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t k = 0; k < sel.rows.size(); ++k) {
    const uint32_t r = sel.rows[k];
    const int64_t start = sel.start_ns[k], end = sel.end_ns[k];
    first = std::min(first, start);
    last = std::max(last, end);
    if (end > start) {
      if (start > open_end) {
        if (open_end > open_start) busy += open_end - open_start;
        open_start = start;
        open_end = end;
      } else {
        open_end = std::max(open_end, end);
      }
    }
    const HtaKernelType hta_type = kernel_classes.OfName(t.gpu.name[r]).hta;
    if (hta_type == HtaKernelType::kComputation) hta_compute.Add(start, end);
    if (hta_type == HtaKernelType::kCommunication) hta_comm.Add(start, end);
    const KernelClass cls = classes[r];
    if (cls == KernelClass::kCompute)
      compute.Add(start, end);
    else if (cls == KernelClass::kCommunication)
      comm.Add(start, end);
    else if (cls == KernelClass::kMemory)
      memory.Add(start, end);
  }
  if (open_end > open_start) busy += open_end - open_start;
  TemporalBreakdown& tb = out.temporal;
  tb.span_ns = last - first;
  tb.idle_ns = tb.span_ns - busy;
  const std::vector<Interval> hta_compute_u = hta_compute.Take();
  tb.compute_ns = TotalLength(hta_compute_u);
  tb.non_compute_ns = tb.span_ns - tb.compute_ns - tb.idle_ns;
  const std::vector<Interval> hta_comm_u = hta_comm.Take();
  const int64_t hta_comm_ns = TotalLength(hta_comm_u);
  if (hta_comm_ns > 0) {
    out.comm_compute_overlap_ratio =
        static_cast<double>(TotalLength(Intersect(hta_compute_u, hta_comm_u))) /
        static_cast<double>(hta_comm_ns);
  }

  ExclusiveBreakdown& ex = out.exclusive;
  const std::vector<Interval> compute_u = compute.Take();
  const std::vector<Interval> comm_u = comm.Take();
  std::vector<Interval> exposed_comm = Subtract(comm_u, compute_u);
  std::vector<Interval> exposed_memory = Subtract(Subtract(memory.Take(), compute_u), comm_u);
  ex.span_ns = tb.span_ns;
  ex.idle_ns = tb.idle_ns;
  ex.compute_ns = TotalLength(compute_u);
  ex.exposed_communication_ns = TotalLength(exposed_comm);
  ex.exposed_memory_ns = TotalLength(exposed_memory);
  ex.other_ns = busy - ex.compute_ns - ex.exposed_communication_ns - ex.exposed_memory_ns;
  out.communication_ns = TotalLength(comm_u);
}

// Idle time per stream by what it waited for.
std::vector<StreamIdle> IdleByStream(const Trace& t, const GpuSelection& sel,
                                     int64_t consecutive_kernel_delay_ns, StreamGapFrom gap_from) {
  // Idle attribution per stream: kernels, memcpys and memsets only (HTA leaves cuda_sync out). One
  // pass over the selection in its order, each stream's state in a slot (a trace has a few
  // streams): a pass per stream would read the whole selection once per stream.
  struct StreamState {
    StreamIdle idle;
    int64_t max_end = 0;
    int64_t prev_end = 0;  // the previous event's end (HTA's gap start)
    bool seen = false;
    bool max_end_kernel = false;  // the event that ends last so far is a kernel
  };
  // Compute capability major per device id (programmatic dependent launch needs sm_90).
  std::map<int32_t, int32_t> major_of;
  for (const DeviceProperties& d : t.devices) major_of[d.id] = d.compute_major;
  const auto pdl_capable = [&](size_t row) {
    auto it = major_of.find(t.gpu.device[row]);
    return it != major_of.end() && it->second >= 9;
  };
  std::map<int64_t, size_t> slot_of;  // stream → index into `streams` (streams in id order below)
  std::vector<StreamState> streams;
  int64_t last_stream = 0;
  size_t last_slot = SIZE_MAX;
  const bool rounded = sel.rounded;
  const bool hta_gaps = gap_from == StreamGapFrom::kHtaPreviousEnd;
  for (size_t k = 0; k < sel.rows.size(); ++k) {
    const uint32_t row = sel.rows[k];
    if (t.gpu.kind[row] == GpuKind::kSync) continue;
    const int64_t stream = t.gpu.stream[row];
    if (last_slot == SIZE_MAX || stream != last_stream) {
      auto [it, added] = slot_of.try_emplace(stream, streams.size());
      if (added) streams.emplace_back().idle.stream = stream;
      last_stream = stream;
      last_slot = it->second;
    }
    StreamState& st = streams[last_slot];
    const int64_t start = sel.start_ns[k], end = sel.end_ns[k];
    const bool kernel = t.gpu.kind[row] == GpuKind::kKernel;
    if (!st.seen) {
      st.seen = true;
      st.max_end = st.prev_end = end;
      st.max_end_kernel = kernel;
      continue;
    }
    StreamIdle& si = st.idle;
    // A stream is drained only when every earlier event on it has ended, so the gap before an
    // event starts at the running maximum end of the earlier ones. HTA takes the previous row's
    // end: the same whenever no two events on the stream overlap, but duplicated or overlapping
    // events then give negative gaps (a kernel recorded 1,000 times: −499.5 ms of "idle").
    const bool overlaps = start < st.max_end;
    if (overlaps) {
      // Starts while earlier work on its stream still runs (ns of that overlap).
      const int64_t overlap = std::max<int64_t>(0, std::min(end, st.max_end) - start);
      if (kernel && st.max_end_kernel && st.max_end - start <= kPdlMaxOverlapNs &&
          pdl_capable(row)) {
        ++si.pdl_overlaps;
        si.pdl_overlap_ns += overlap;
      } else {
        ++si.overlapping_events;
        si.overlap_ns += overlap;
      }
    }
    const int64_t prev_end = hta_gaps ? st.prev_end : st.max_end;
    if (end > st.max_end) st.max_end_kernel = kernel;
    st.max_end = std::max(st.max_end, end);
    st.prev_end = end;
    if (overlaps && !hta_gaps) continue;  // no gap before it
    const int64_t gap = start - prev_end;
    const int32_t launch = t.gpu.launch[row];
    int64_t launch_start = INT64_MIN;
    if (launch >= 0) {
      launch_start = t.runtime.start_ns[static_cast<size_t>(launch)];
      if (rounded) launch_start = CeilUs(launch_start);
    }
    ++si.gaps;
    if (launch >= 0 && launch_start > prev_end) {
      si.host_wait_ns += gap;
    } else if (gap < consecutive_kernel_delay_ns) {
      si.kernel_wait_ns += gap;
    } else {
      si.other_ns += gap;
    }
  }
  std::vector<StreamIdle> out;
  out.reserve(streams.size());
  for (const auto& [stream, slot] : slot_of) out.push_back(streams[slot].idle);
  return out;
}

}  // namespace

GpuTime AnalyzeGpuTimeOf(const Trace& t, const KernelClasses& kernel_classes,
                         const GpuSelection& sel, int64_t consecutive_kernel_delay_ns,
                         StreamGapFrom gap_from) {
  GpuTime out;
  if (sel.rows.empty()) return out;
  AddBreakdowns(t, kernel_classes, sel, &out);
  out.idle_by_stream = IdleByStream(t, sel, consecutive_kernel_delay_ns, gap_from);
  return out;
}

}  // namespace gpuscope::analyze
