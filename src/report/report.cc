#include "report/report.h"

#include <string>

#include "render/format.h"

namespace gpuscope::report {

namespace {

// Warnings about what the analyses found wrong with the input (shown with the diagnostics): GPU
// events overlapping earlier work on their stream, and overlapping ProfilerStep ranges.
void AddAnalysisWarnings(RankReport* r) {
  uint64_t events = 0;
  int64_t overlap_ns = 0;
  std::string streams;
  size_t listed = 0, with_overlap = 0;
  for (const analyze::StreamIdle& s : r->gpu_time.idle_by_stream) {
    if (s.overlapping_events == 0) continue;
    events += s.overlapping_events;
    overlap_ns += s.overlap_ns;
    ++with_overlap;
    if (listed++ < 3) streams += (streams.empty() ? "" : ", ") + std::to_string(s.stream);
  }
  if (events > 0) {
    if (with_overlap > listed) streams += ", ...";
    r->summary.warnings.push_back(
        render::GroupDigits(events) +
        " GPU events start before earlier work on their stream ended (" +
        (with_overlap == 1 ? "stream " : "streams ") + streams + "; " +
        render::FormatDuration(overlap_ns) +
        " overlapped): a stream runs its work in order, so these records are duplicated or "
        "mis-timed; per-stream idle counts only time when none of them runs");
  }
  const analyze::StepsResult& st = r->steps;
  if (st.repeated_step_numbers > 0 || st.windows > 1) {
    const size_t ranges = r->summary.counts.profiler_steps;
    if (r->summary.steps.size() == 1)
      r->summary.warnings.push_back(
          "every one of the " + render::GroupDigits(ranges) + " ProfilerStep ranges is numbered #" +
          std::to_string(r->summary.steps.front()) +
          ": each range is taken as a step, in time order (a loop that names every step alike?)");
    else
      r->summary.warnings.push_back(
          "ProfilerStep numbers repeat: " + render::GroupDigits(ranges) + " ranges in " +
          render::GroupDigits(st.windows) + " profiling windows (the first #" +
          std::to_string(st.first_window.first) + "–#" + std::to_string(st.first_window.second) +
          "; the second starts " +
          render::FormatDuration(std::max<int64_t>(0, st.first_window_gap_ns)) +
          " after it ends): each range is a step, in time order, and the time between windows "
          "is in no step");
  }
  if (st.overlapping_steps > 0) {
    r->summary.warnings.push_back(
        render::GroupDigits(st.overlapping_steps) +
        " ProfilerStep ranges overlap an earlier one (first: ProfilerStep#" +
        std::to_string(st.first_overlap.second) + " starts inside ProfilerStep#" +
        std::to_string(st.first_overlap.first) +
        "): step times and their means are unreliable; was the trace merged from two "
        "recordings or threads?");
  }
}
}  // namespace

Report BuildReport(const std::vector<Trace>& traces, std::vector<Status> failures, int threads) {
  ThreadPool pool(threads);
  return BuildReport(traces, std::move(failures), pool);
}

Report BuildReport(const std::vector<Trace>& traces, std::vector<Status> failures, ThreadPool& pool,
                   const analyze::RunOptions& options) {
  Report report;
  report.failures = std::move(failures);
  analyze::JobResults job = analyze::RunAllRanks(traces, options, pool);
  report.ranks.resize(job.ranks.size());
  // The shared kernel classes stay with the results: the rank's facts (ExtractRankFacts) find its
  // communication kernels by them, and would otherwise classify every GPU event again.
  for (size_t i = 0; i < job.ranks.size(); ++i)
    static_cast<analyze::RankResults&>(report.ranks[i]) = std::move(job.ranks[i]);
  for (RankReport& r : report.ranks) AddAnalysisWarnings(&r);
  {
    TaskGroup group(pool);
    for (RankReport& r : report.ranks)
      group.Run([&r] { r.whatif = whatif::RunWhatIfs(*r.trace, r); });
    group.Wait();
  }
  for (RankReport& r : report.ranks) {
    advise::RankInputs in;
    in.summary = &r.summary;
    in.gpu_time = &r.gpu_time;
    in.steps = &r.steps;
    in.kernels = &r.kernels;
    in.launches = &r.launches;
    in.copies = &r.copies;
    in.sync = &r.sync;
    in.memory = &r.memory;
    in.occupancy = &r.occupancy;
    in.idle_gaps = &r.idle_gaps;
    in.op_costs = &r.op_costs;
    in.host_work = &r.host_work;
    in.critical_path = &r.critical_path;
    in.whatif = &r.whatif;
    in.name = [t = r.trace](StringId id) { return t->Str(id); };
    r.advice = advise::AdviseRank(in);
  }
  return report;
}

}  // namespace gpuscope::report
