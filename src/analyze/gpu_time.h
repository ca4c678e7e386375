// Where GPU time goes on one rank: which GPU events count, their busy/idle union, HTA's temporal
// breakdown, our exclusive breakdown, and HTA's idle attribution per stream.
//
// Definitions (docs/metrics.md has the long form, with where and why we differ from HTA):
//  * GPU span: first start → last end of the selected GPU events, all streams.
//  * busy: |union of the selected GPU events|; idle = span − busy.
//  * temporal breakdown (HTA): compute = |union of COMPUTATION events (HTA's name rules)|;
//    non_compute = span − compute − idle (communication or memory hidden under compute is compute).
//  * exclusive breakdown (ours; TraceLens' shape): compute = |∪ compute|; exposed communication =
//    |∪ comm − ∪ compute|; exposed memory = |∪ memcpy/memset − ∪ compute − ∪ comm|; other = the
//    rest of busy (sync events); idle. The five parts sum exactly to the span.
//  * comm–compute overlap (HTA): the share of communication time (union of HTA COMMUNICATION
//  events)
//    that runs while some COMPUTATION event runs.
//  * idle attribution per stream (HTA): each gap before a kernel/memcpy/memset on its stream is
//    host_wait if its launch call started after the previous event ended, else kernel_wait if the
//    gap is shorter than kConsecutiveKernelDelayNs, else other. "The previous event ended" is the
//    running maximum end of the earlier events on the stream, so an event that starts while earlier
//    work on its stream still runs has no gap (it is counted in overlapping_events) and a stream's
//    idle is its span minus the union of its events, never negative. HTA takes the previous row's
//    end and sums negative gaps (StreamGapFrom::kHtaPreviousEnd reproduces that); the two agree
//    whenever no two events on a stream overlap.
#pragma once

#include <cstdint>
#include <vector>

#include "analyze/intervals.h"
#include "analyze/kernel_class.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

// HTA's consecutive_kernel_delay default: 30 µs (its docstring says ns; the code compares µs).
inline constexpr int64_t kConsecutiveKernelDelayNs = 30'000;

struct SelectionOptions {
  // HTA drops the last ProfilerStep (and every GPU event whose launch is not in a kept CPU row)
  // when a trace has ≥ 2 steps; the last step starts at the latest ProfilerStep#N row, its
  // GPU-side copy (gpu_user_annotation) included. true keeps everything up to the end of the last
  // step.
  bool include_last_step = false;
  // HTA rounds float timestamps to whole µs: start up (ceil), end down (floor). On by default so
  // numbers agree with HTA; off keeps our exact ns.
  bool hta_rounding = true;
  bool operator==(const SelectionOptions&) const = default;
};

// The GPU events an analysis looks at, with the times it uses (possibly rounded).
struct GpuSelection {
  std::vector<uint32_t> rows;     // indices into Trace::gpu, sorted by (start, row)
  std::vector<int64_t> start_ns;  // per selected row
  std::vector<int64_t> end_ns;
  bool step_filtered = false;  // HTA's step filter applied (≥ 2 ProfilerStep names)
  bool rounded = false;        // HTA µs rounding applied (trace has sub-µs timestamps)
  int64_t last_step_start_ns = 0;
};

GpuSelection SelectGpuEvents(const Trace& trace, const SelectionOptions& options = {});

// HTA's selection when `hta_selection`, else every GPU activity (all kinds and streams) sorted by
// start with exact times. Analyses that offer both (launches, copies) call this.
GpuSelection SelectGpuEventsOrAll(const Trace& trace, bool hta_selection,
                                  const SelectionOptions& options);

// The selection launches and copies read: `made` (the rank's shared one, when RunAll made it)
// when HTA's selection is asked for, read and not copied; else SelectGpuEventsOrAll, made into
// `*own`. The reference is to one of the two.
const GpuSelection& SharedOrOwnSelection(const Trace& trace, bool hta_selection,
                                         const SelectionOptions& options, const GpuSelection* made,
                                         GpuSelection* own);

// HTA's µs rounding of an event (used when GpuSelection::rounded): start rounded up, end = start +
// dur rounded down, both computed on float64 µs values as pandas holds them.
int64_t HtaRoundedStartNs(int64_t start_ns);
int64_t HtaRoundedEndNs(int64_t start_ns, int64_t dur_ns);

struct TemporalBreakdown {  // HTA get_temporal_breakdown
  int64_t span_ns = 0;      // HTA's kernel_time
  int64_t idle_ns = 0;
  int64_t compute_ns = 0;
  int64_t non_compute_ns = 0;
};

struct ExclusiveBreakdown {  // sums exactly to span_ns
  int64_t span_ns = 0;
  int64_t compute_ns = 0;
  int64_t exposed_communication_ns = 0;
  int64_t exposed_memory_ns = 0;
  int64_t other_ns = 0;
  int64_t idle_ns = 0;
};

struct StreamIdle {
  int64_t stream = -1;
  // Each ≥ 0; their sum = the stream's span − |∪ its events| (with kHtaPreviousEnd: HTA's signed
  // sums).
  int64_t host_wait_ns = 0;
  int64_t kernel_wait_ns = 0;
  int64_t other_ns = 0;
  // Events that start at or after the end of all earlier work on the stream (with
  // kHtaPreviousEnd: every event but the first, as HTA).
  uint64_t gaps = 0;
  // Events that start before earlier work on their stream has ended (duplicated or overlapping
  // records: a stream runs its work in order, so a real trace has none), and the time they overlap
  // that earlier work (ns, each instant counted once per overlapping event).
  uint64_t overlapping_events = 0;
  int64_t overlap_ns = 0;
  // Hopper's programmatic dependent launch (sm_90+): a kernel may start up to a few µs before the
  // kernel before it on its stream ends, by design. Such overlaps (a kernel after a kernel, within
  // kPdlMaxOverlapNs, on a device of compute capability 9 or more) are counted here, not above.
  uint64_t pdl_overlaps = 0;
  int64_t pdl_overlap_ns = 0;
};
inline constexpr int64_t kPdlMaxOverlapNs = 5'000;

struct GpuTime {
  GpuSelection selection;
  TemporalBreakdown temporal;
  ExclusiveBreakdown exclusive;
  std::vector<StreamIdle> idle_by_stream;  // ascending stream id
  // HTA's comp_comm_overlap: |∪ COMPUTATION ∩ ∪ COMMUNICATION| / |∪ COMMUNICATION| (HTA name
  // rules), the share of communication hidden under compute; -1 when the rank has no communication.
  double comm_compute_overlap_ratio = -1;
  int64_t communication_ns = 0;  // |∪ communication| by our classification
};

// Where a gap on a stream starts (idle attribution per stream).
enum class StreamGapFrom : uint8_t {
  // The running maximum end of the earlier events on the stream: idle = span − |∪ events| ≥ 0.
  kRunningMaxEnd,
  // HTA's arithmetic, for cross-checks only: the previous event's end, with the negative gaps of
  // overlapping events summed as they are (a category can then be negative).
  kHtaPreviousEnd,
};

// `classes`: BuildKernelClasses(trace), shared with the other analyses of the rank.
GpuTime AnalyzeGpuTime(const Trace& trace, const KernelClasses& classes,
                       const SelectionOptions& options = {},
                       int64_t consecutive_kernel_delay_ns = kConsecutiveKernelDelayNs,
                       StreamGapFrom gap_from = StreamGapFrom::kRunningMaxEnd);
// The same with the selection already made (`SelectGpuEvents(trace, options)`), so it is not made
// again; it becomes the result's `selection`.
GpuTime AnalyzeGpuTime(const Trace& trace, const KernelClasses& classes, GpuSelection selection,
                       int64_t consecutive_kernel_delay_ns = kConsecutiveKernelDelayNs,
                       StreamGapFrom gap_from = StreamGapFrom::kRunningMaxEnd);
// The same on a selection the caller keeps (RunAll's, shared by the rank's analyses): the result's
// `selection` is left empty, for the caller to move the selection into once every analysis
// reading it is done (no copy of a selection of millions of rows).
GpuTime AnalyzeGpuTimeOf(const Trace& trace, const KernelClasses& classes,
                         const GpuSelection& selection,
                         int64_t consecutive_kernel_delay_ns = kConsecutiveKernelDelayNs,
                         StreamGapFrom gap_from = StreamGapFrom::kRunningMaxEnd);
// The same, classifying the trace's kernels itself (one-off callers and tests).
GpuTime AnalyzeGpuTime(const Trace& trace, const SelectionOptions& options = {},
                       int64_t consecutive_kernel_delay_ns = kConsecutiveKernelDelayNs,
                       StreamGapFrom gap_from = StreamGapFrom::kRunningMaxEnd);

}  // namespace gpuscope::analyze
