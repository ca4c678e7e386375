#include "diff/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "analyze/gpu_time.h"
#include "analyze/kernel_class.h"
#include "base/enum_names.h"
#include "whatif/whatif.h"

namespace gpuscope::diff {

constexpr EnumNames<CountChange, 5> kCountChangeNames({CountChange::kAdded, "added"},
                                                      {CountChange::kRemoved, "removed"},
                                                      {CountChange::kIncreased, "increased"},
                                                      {CountChange::kDecreased, "decreased"},
                                                      {CountChange::kUnchanged, "unchanged"});

const char* CountChangeName(CountChange c) { return CNameOf(kCountChangeNames, c); }

constexpr EnumNames<TimeChange, 5> kTimeChangeNames({TimeChange::kAdded, "added"},
                                                    {TimeChange::kRemoved, "removed"},
                                                    {TimeChange::kSlower, "slower"},
                                                    {TimeChange::kFaster, "faster"},
                                                    {TimeChange::kUnchanged, "unchanged"});

const char* TimeChangeName(TimeChange c) { return CNameOf(kTimeChangeNames, c); }

constexpr EnumNames<FindingStatus, 3> kFindingStatusNames({FindingStatus::kResolved, "resolved"},
                                                          {FindingStatus::kNew, "new"},
                                                          {FindingStatus::kPersisting,
                                                           "persisting"});

const char* FindingStatusName(FindingStatus s) { return CNameOf(kFindingStatusNames, s); }

namespace {

using report::RankReport;

// ---------------------------------------------------------------------------------------------
// Name tables: count and time per name on one side.

struct NameAgg {
  double count = 0;
  double ns = 0;
  const char* kind = "";
};
using NameMap = std::unordered_map<std::string, NameAgg>;

struct SideTables {
  NameMap gpu, cpu;
  size_t units = 0;        // steps the totals are divided by
  int32_t iteration = -1;  // HTA mode: the ProfilerStep used
  bool whole_trace = false;
};

constexpr EnumNames<GpuKind, 4> kGpuKindNames({GpuKind::kKernel, "kernel"},
                                              {GpuKind::kMemcpy, "memcpy"},
                                              {GpuKind::kMemset, "memset"},
                                              {GpuKind::kSync, "sync"});

const char* GpuKindName(GpuKind k) { return CNameOf(kGpuKindNames, k); }

// The diff's kind column, not the model's names: a profiler range counts as "other" (so this
// table is read one way only).
constexpr EnumNames<CpuKind, 6> kCpuKindNames({CpuKind::kCpuOp, "cpu_op"},
                                              {CpuKind::kUserAnnotation, "annotation"},
                                              {CpuKind::kGpuUserAnnotation, "gpu_annotation"},
                                              {CpuKind::kPythonFunction, "python"},
                                              {CpuKind::kProfilerRange, "other"},
                                              {CpuKind::kOther, "other"});

const char* CpuKindName(CpuKind k) { return CNameOf(kCpuKindNames, k); }

// Half-open time spans [start, end), sorted by start and disjoint (steps do not overlap).
struct Spans {
  std::vector<int64_t> start, end;
  bool Contains(int64_t t) const {
    auto it = std::upper_bound(start.begin(), start.end(), t);
    if (it == start.begin()) return false;
    const size_t i = static_cast<size_t>(it - start.begin()) - 1;
    return t < end[i];
  }
};

// Per-StringId accumulation, turned into names once per distinct id (names are few, events many).
class Accumulator {
 public:
  Accumulator(const Trace& t, NameMode mode, bool gpu_side)
      : t_(t),
        mode_(mode),
        gpu_side_(gpu_side),
        count_(t.strings.size(), 0),
        ns_(t.strings.size(), 0),
        kind_(t.strings.size(), nullptr) {}
  void Add(StringId name, int64_t dur_ns, const char* kind, bool is_kernel) {
    ++count_[name];
    ns_[name] += dur_ns;
    if (!kind_[name]) kind_[name] = kind;
    if (is_kernel) kernel_names_.insert(name);
  }
  void Into(NameMap* out) const {
    for (size_t id = 0; id < count_.size(); ++id) {
      if (count_[id] == 0) continue;
      std::string name(t_.Str(static_cast<StringId>(id)));
      if (mode_ == NameMode::kShort) name = Shorten(static_cast<StringId>(id), std::move(name));
      NameAgg& a = (*out)[name];
      a.count += static_cast<double>(count_[id]);
      a.ns += static_cast<double>(ns_[id]);
      if (!*a.kind) a.kind = kind_[id];
    }
  }

 private:
  std::string Shorten(StringId id, std::string name) const {
    if (gpu_side_) {
      // Only kernels: a memcpy's "(Pageable -> Device)" is what changes when copies get pinned.
      return kernel_names_.count(id) ? analyze::ShortKernelName(name) : name;
    }
    // One row for every ProfilerStep, so the step markers of two runs match.
    if (name.rfind("ProfilerStep#", 0) == 0) return "ProfilerStep#*";
    return name;
  }
  const Trace& t_;
  NameMode mode_;
  bool gpu_side_;
  std::vector<uint64_t> count_;
  std::vector<int64_t> ns_;
  std::vector<const char*> kind_;
  std::set<StringId> kernel_names_;
};

// Default selection: the steady steps of the report.
SideTables SteadyTables(const RankReport& rr, NameMode mode) {
  const Trace& t = *rr.trace;
  const analyze::StepsResult& s = rr.steps;
  SideTables out;
  Spans host, device;
  for (const analyze::StepBreakdown& b : s.steps) {
    if (!b.steady_state || s.whole_span_fallback) continue;
    host.start.push_back(b.host_start_ns);
    host.end.push_back(b.host_end_ns);
    device.start.push_back(b.start_ns);
    device.end.push_back(b.end_ns);
  }
  const bool all = host.start.empty();  // no steps: the whole trace is one unit
  out.whole_trace = all;
  out.units = all ? 1 : host.start.size();
  // Analysed spans can touch (a step starts where the previous one's device work ended), so
  // they are sorted but may share an endpoint; Contains() handles that with half-open spans.
  Accumulator cpu(t, mode, false), gpu(t, mode, true);
  for (size_t i = 0; i < t.cpu.size(); ++i) {
    const CpuKind k = t.cpu.kind[i];
    if (k != CpuKind::kCpuOp && k != CpuKind::kUserAnnotation) continue;
    if (all || host.Contains(t.cpu.start_ns[i]))
      cpu.Add(t.cpu.name[i], t.cpu.dur_ns[i], CpuKindName(k), false);
  }
  for (size_t i = 0; i < t.runtime.size(); ++i) {
    if (all || host.Contains(t.runtime.start_ns[i]))
      cpu.Add(t.runtime.name[i], t.runtime.dur_ns[i], "runtime", false);
  }
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    const GpuKind k = t.gpu.kind[i];
    if (k == GpuKind::kSync) continue;  // waits, not work
    bool in = all;
    if (!in) {
      const int32_t launch = t.gpu.launch[i];
      in = launch >= 0 ? host.Contains(t.runtime.start_ns[static_cast<size_t>(launch)])
                       : device.Contains(t.gpu.start_ns[i]);
    }
    if (in) gpu.Add(t.gpu.name[i], t.gpu.dur_ns[i], GpuKindName(k), k == GpuKind::kKernel);
  }
  cpu.Into(&out.cpu);
  gpu.Into(&out.gpu);
  return out;
}

// HTA's TraceDiff selection (hta/trace_diff.py extract_ops + hta/common/trace.py add_iteration):
// the first iteration; CPU rows (no stream) by their start inside that ProfilerStep, GPU rows
// (stream > 0) by their correlated runtime call's start. Times rounded as HTA rounds them.
SideTables HtaTables(const RankReport& rr, NameMode mode) {
  const Trace& t = *rr.trace;
  const bool rounded = rr.gpu_time.selection.rounded;
  auto start_of = [&](int64_t s) { return rounded ? analyze::HtaRoundedStartNs(s) : s; };
  auto end_of = [&](int64_t s, int64_t d) {
    return rounded ? analyze::HtaRoundedEndNs(s, d) : s + d;
  };
  SideTables out;
  out.units = 1;
  int64_t step_row = -1;
  for (size_t i = 0; i < t.cpu.size(); ++i) {
    if (t.cpu.step[i] < 0) continue;
    if (out.iteration < 0 || t.cpu.step[i] < out.iteration) {
      out.iteration = t.cpu.step[i];
      step_row = static_cast<int64_t>(i);
    }
  }
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  if (step_row >= 0) {
    const size_t r = static_cast<size_t>(step_row);
    lo = start_of(t.cpu.start_ns[r]);
    hi = end_of(t.cpu.start_ns[r], t.cpu.dur_ns[r]);
  } else {
    out.whole_trace = true;
  }
  auto in = [&](int64_t s) { return s >= lo && s < hi; };
  auto dur = [&](int64_t s, int64_t d) { return end_of(s, d) - start_of(s); };
  Accumulator cpu(t, mode, false), gpu(t, mode, true);
  for (size_t i = 0; i < t.cpu.size(); ++i) {
    if (in(start_of(t.cpu.start_ns[i])))
      cpu.Add(t.cpu.name[i], dur(t.cpu.start_ns[i], t.cpu.dur_ns[i]), CpuKindName(t.cpu.kind[i]),
              false);
  }
  std::unordered_map<int64_t, size_t> by_correlation;
  for (size_t i = 0; i < t.runtime.size(); ++i) {
    if (in(start_of(t.runtime.start_ns[i])))
      cpu.Add(t.runtime.name[i], dur(t.runtime.start_ns[i], t.runtime.dur_ns[i]), "runtime", false);
    if (t.runtime.correlation[i] >= 0) by_correlation.emplace(t.runtime.correlation[i], i);
  }
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    const int64_t stream = t.gpu.stream[i];
    const int64_t d = dur(t.gpu.start_ns[i], t.gpu.dur_ns[i]);
    const GpuKind k = t.gpu.kind[i];
    if (stream == -1) {  // HTA: no stream → a CPU row, placed by its own start
      if (in(start_of(t.gpu.start_ns[i]))) cpu.Add(t.gpu.name[i], d, GpuKindName(k), false);
      continue;
    }
    if (stream <= 0) continue;  // HTA assigns no iteration to stream 0
    bool keep = step_row < 0;
    if (!keep) {
      auto it = by_correlation.find(t.gpu.correlation[i]);
      keep = t.gpu.correlation[i] >= 0 && it != by_correlation.end() &&
             in(start_of(t.runtime.start_ns[it->second]));
    }
    if (keep) gpu.Add(t.gpu.name[i], d, GpuKindName(k), k == GpuKind::kKernel);
  }
  cpu.Into(&out.cpu);
  gpu.Into(&out.gpu);
  return out;
}

bool NearlyEqual(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(a));
}

NameTableDiff CompareNames(const NameMap& before, size_t before_units, const NameMap& after,
                           size_t after_units, const DiffOptions& o) {
  NameTableDiff d;
  d.before_units = before_units;
  d.after_units = after_units;
  const double bu = static_cast<double>(std::max<size_t>(1, before_units));
  const double au = static_cast<double>(std::max<size_t>(1, after_units));
  std::map<std::string, NameDelta> rows;
  for (const auto& [name, a] : before) {
    NameDelta& r = rows[name];
    r.name = name;
    r.kind = a.kind;
    r.before_count = a.count / bu;
    r.before_ns = a.ns / bu;
  }
  for (const auto& [name, a] : after) {
    NameDelta& r = rows[name];
    r.name = name;
    if (r.kind.empty()) r.kind = a.kind;
    r.after_count = a.count / au;
    r.after_ns = a.ns / au;
  }
  for (auto& [name, r] : rows) {
    d.before_total_ns += r.before_ns;
    d.after_total_ns += r.after_ns;
    if (r.before_count == 0) {
      r.count_change = CountChange::kAdded;
      r.time_change = TimeChange::kAdded;
      ++d.added;
    } else if (r.after_count == 0) {
      r.count_change = CountChange::kRemoved;
      r.time_change = TimeChange::kRemoved;
      ++d.removed;
    } else {
      if (NearlyEqual(r.before_count, r.after_count)) {
        r.count_change = CountChange::kUnchanged;
        ++d.unchanged;
      } else if (r.after_count > r.before_count) {
        r.count_change = CountChange::kIncreased;
        ++d.increased;
      } else {
        r.count_change = CountChange::kDecreased;
        ++d.decreased;
      }
      const double delta = r.delta_ns();
      const double mag = std::fabs(delta);
      if (mag > static_cast<double>(o.min_time_change_ns) &&
          mag > o.min_time_change_share * r.before_ns) {
        r.time_change = delta > 0 ? TimeChange::kSlower : TimeChange::kFaster;
        ++(delta > 0 ? d.slower : d.faster);
      }
    }
    d.rows.push_back(std::move(r));
  }
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const NameDelta& a, const NameDelta& b) {
    return std::fabs(a.delta_ns()) > std::fabs(b.delta_ns());
  });
  return d;
}

// ---------------------------------------------------------------------------------------------
// Step time.

Distribution StepDistribution(const analyze::StepsResult& s) {
  Distribution d;
  d.whole_trace = s.whole_span_fallback;
  for (const analyze::StepBreakdown& b : s.steps) {
    if (!b.steady_state) continue;
    d.steps.push_back(b.step);
    d.values_ns.push_back(b.duration_ns);
  }
  if (d.values_ns.empty()) return d;
  std::vector<int64_t> v = d.values_ns;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  d.median_ns = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  d.min_ns = v.front();
  d.max_ns = v.back();
  long double sum = 0;
  for (int64_t x : v) sum += x;
  d.mean_ns = static_cast<int64_t>(sum / n);
  return d;
}

}  // namespace

// Two-sided p-value of the Mann-Whitney U test for sample sizes n1, n2 and observed U (ties
// count ½; no tie correction: step durations are ns and rarely tie). Exact null distribution
// (the number of orderings with each U, by the usual recurrence) up to 50 steps a side, the
// normal approximation with continuity correction beyond.
double MannWhitneyP(size_t n1, size_t n2, double u) {
  const double mean = static_cast<double>(n1 * n2) / 2;
  const double dev = std::fabs(u - mean);
  if (n1 > 50 || n2 > 50) {
    const double sd = std::sqrt(static_cast<double>(n1 * n2 * (n1 + n2 + 1)) / 12.0);
    const double z = std::max(0.0, dev - 0.5) / sd;
    return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  }
  // count[i][j][k]: orderings of i after- and j before-values with U = k, folded over j.
  std::vector<std::vector<double>> prev(n2 + 1), cur(n2 + 1);
  for (size_t j = 0; j <= n2; ++j) prev[j] = {1.0};  // i = 0: one ordering, U = 0
  for (size_t i = 1; i <= n1; ++i) {
    cur[0] = {1.0};
    for (size_t j = 1; j <= n2; ++j) {
      // The largest value is an after-value (beats all j before-values) or a before-value.
      std::vector<double> c(i * j + 1, 0.0);
      for (size_t k = 0; k < prev[j].size(); ++k) c[k + j] += prev[j][k];
      for (size_t k = 0; k < cur[j - 1].size(); ++k) c[k] += cur[j - 1][k];
      cur[j] = std::move(c);
    }
    std::swap(prev, cur);
  }
  const std::vector<double>& dist = prev[n2];
  double total = 0, tail = 0;
  for (size_t k = 0; k < dist.size(); ++k) {
    total += dist[k];
    if (std::fabs(static_cast<double>(k) - mean) >= dev - 1e-9) tail += dist[k];
  }
  return std::min(1.0, tail / total);
}

namespace {

StepTimeDiff CompareStepTimes(const analyze::StepsResult& b, const analyze::StepsResult& a) {
  StepTimeDiff st;
  st.before = StepDistribution(b);
  st.after = StepDistribution(a);
  if (st.before.median_ns > 0) {
    st.median_change_pct = 100.0 * static_cast<double>(st.after.median_ns - st.before.median_ns) /
                           static_cast<double>(st.before.median_ns);
    st.steps_per_s_before = 1e9 / static_cast<double>(st.before.median_ns);
  }
  if (st.after.median_ns > 0) st.steps_per_s_after = 1e9 / static_cast<double>(st.after.median_ns);
  std::set<int32_t> before_steps;
  for (const analyze::StepBreakdown& s : b.steps)
    if (s.step >= 0) before_steps.insert(s.step);
  for (const analyze::StepBreakdown& s : a.steps)
    if (s.step >= 0 && before_steps.count(s.step)) st.common_steps.push_back(s.step);
  if (st.before.n() == 0 || st.after.n() == 0) return st;
  // Mann-Whitney's U / (n1 n2): the probability that a random after-step is slower than a random
  // before-step (ties count ½). 0 or 1 means the ranges do not overlap.
  double u = 0;
  for (int64_t x : st.after.values_ns)
    for (int64_t y : st.before.values_ns) u += x > y ? 1.0 : x == y ? 0.5 : 0.0;
  const size_t n1 = st.after.n(), n2 = st.before.n();
  st.p_after_slower = u / static_cast<double>(n1 * n2);
  if (st.before.whole_trace || st.after.whole_trace) return st;  // verdict stays "unknown"
  st.p_value = MannWhitneyP(n1, n2, u);
  // With very few steps no ordering is unlikely enough by chance (3 vs 3: p ≥ 0.1); say so
  // rather than call a real change noise.
  if (MannWhitneyP(n1, n2, 0) >= kNoiseAlpha) return st;
  st.beyond_noise = st.p_value < kNoiseAlpha;
  st.verdict = !st.beyond_noise                       ? "within noise"
               : u > static_cast<double>(n1 * n2) / 2 ? "slower"
                                                      : "faster";
  return st;
}

double Pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string RangeText(const std::vector<int32_t>& v) {
  if (v.empty()) return "none";
  std::string s = "#" + std::to_string(v.front());
  if (v.size() > 1) s += "–#" + std::to_string(v.back());
  return s;
}

std::vector<int32_t> StepNumbers(const analyze::StepsResult& s) {
  std::vector<int32_t> v;
  for (const analyze::StepBreakdown& b : s.steps)
    if (b.step >= 0) v.push_back(b.step);
  std::sort(v.begin(), v.end());
  return v;
}

std::string RankName(int32_t r) { return r >= 0 ? std::to_string(r) : std::string("?"); }

// Findings of the two sides by id: resolved, new, persisting, each by saving.
std::vector<FindingDelta> CompareFindings(const RankReport& b, const RankReport& a) {
  std::vector<FindingDelta> out;
  std::map<std::string, const advise::Finding*> fb, fa;
  for (const advise::Finding& f : b.advice.findings) fb.emplace(f.id, &f);
  for (const advise::Finding& f : a.advice.findings) fa.emplace(f.id, &f);
  std::vector<FindingDelta> resolved, fresh, persisting;
  for (const auto& [id, f] : fb) {
    FindingDelta fd;
    fd.id = id;
    fd.title = f->title;
    fd.before_saving_ns = f->estimated_saving_ns_per_step;
    fd.before_saving_pct = 100.0 * f->estimated_saving_share;
    auto it = fa.find(id);
    if (it == fa.end()) {
      fd.status = FindingStatus::kResolved;
      resolved.push_back(fd);
    } else {
      fd.status = FindingStatus::kPersisting;
      fd.title = it->second->title;
      fd.after_saving_ns = it->second->estimated_saving_ns_per_step;
      fd.after_saving_pct = 100.0 * it->second->estimated_saving_share;
      persisting.push_back(fd);
    }
  }
  for (const auto& [id, f] : fa) {
    if (fb.count(id)) continue;
    FindingDelta fd;
    fd.id = id;
    fd.title = f->title;
    fd.status = FindingStatus::kNew;
    fd.after_saving_ns = f->estimated_saving_ns_per_step;
    fd.after_saving_pct = 100.0 * f->estimated_saving_share;
    fresh.push_back(fd);
  }
  auto by_saving = [](const FindingDelta& x, const FindingDelta& y) {
    return std::max(x.before_saving_ns, x.after_saving_ns) >
           std::max(y.before_saving_ns, y.after_saving_ns);
  };
  for (auto* v : {&resolved, &fresh, &persisting}) {
    std::stable_sort(v->begin(), v->end(), by_saving);
    out.insert(out.end(), v->begin(), v->end());
  }
  return out;
}

// The calibration ledger: the fixes the after trace applied (their cause gone: the after
// trace's own replay of the fix saves at most kAppliedResidualShare of what the before trace's
// did), replayed together on the before trace. A finding that merely fell under its threshold
// is not a fix applied.
void AddCalibration(const RankReport& b, const RankReport& a, RankDiff& d) {
  if (b.whatif.replayed && b.trace != nullptr) {
    std::vector<std::string> fixes;
    for (const FindingDelta& f : d.findings) {
      if (f.status == FindingStatus::kNew) continue;
      const whatif::WhatIf* w = whatif::WhatIfForRule(f.id);
      const whatif::FixResult* before_fix = w ? b.whatif.Fix(w->id) : nullptr;
      if (!before_fix || before_fix->saving_ns <= 0) continue;
      const whatif::FixResult* after_fix = a.whatif.replayed ? a.whatif.Fix(w->id) : nullptr;
      const int64_t residual = after_fix ? after_fix->saving_ns : 0;
      if (static_cast<double>(residual) >
          kAppliedResidualShare * static_cast<double>(before_fix->saving_ns))
        continue;
      d.calibration.rows.push_back(
          {f.id, w->id, before_fix->saving_ns, f.before_saving_ns, residual});
      fixes.push_back(w->id);
    }
    if (!fixes.empty()) {
      d.calibration.before_step_ns = b.whatif.step_ns;
      d.calibration.predicted_step_ns = whatif::PredictStep(*b.trace, b, fixes);
      d.calibration.after_step_ns = a.steps.mean_steady_step_ns;
    }
  }
}

RankDiff CompareRank(const RankReport& b, const RankReport& a, const DiffOptions& o,
                     const std::string& prefix, std::vector<std::string>* warnings) {
  RankDiff d;
  d.before_rank = b.summary.rank;
  d.after_rank = a.summary.rank;
  d.before_path = b.summary.path;
  d.after_path = a.summary.path;
  d.before_device = b.summary.device_name;
  d.after_device = a.summary.device_name;
  if (d.before_device != d.after_device) {
    warnings->push_back(prefix + "different GPUs: before ran on " +
                        (d.before_device.empty() ? "an unrecorded device" : d.before_device) +
                        ", after on " +
                        (d.after_device.empty() ? "an unrecorded device" : d.after_device) +
                        "; kernel times and names compare two devices, not one change");
  }
  // Steps.
  d.step_time = CompareStepTimes(b.steps, a.steps);
  const bool b_steps = !b.steps.whole_span_fallback && !b.steps.steps.empty();
  const bool a_steps = !a.steps.whole_span_fallback && !a.steps.steps.empty();
  if (!b_steps || !a_steps) {
    const std::string which = !b_steps && !a_steps ? "neither side has a ProfilerStep: each"
                              : !b_steps           ? "before has no ProfilerStep: its"
                                                   : "after has no ProfilerStep: its";
    warnings->push_back(prefix + which +
                        " \"step\" is the whole trace, so step time and per-step numbers compare "
                        "a whole trace with " +
                        (b_steps || a_steps ? "one step" : "a whole trace"));
  } else if (d.step_time.common_steps.empty()) {
    warnings->push_back(prefix + "no common step numbers (before " +
                        RangeText(StepNumbers(b.steps)) + ", after " +
                        RangeText(StepNumbers(a.steps)) +
                        "): steps are compared as distributions and per-step means, not step by "
                        "step");
  }
  // Per-step categories.
  d.before_mean_step_ns = b.steps.mean_steady_step_ns;
  d.after_mean_step_ns = a.steps.mean_steady_step_ns;
  for (size_t c = 0; c < analyze::kStepCategoryCount; ++c) {
    CategoryDelta cd;
    cd.name = analyze::StepCategoryName(static_cast<analyze::StepCategory>(c));
    cd.before_ns = b.steps.mean_steady_ns[c];
    cd.after_ns = a.steps.mean_steady_ns[c];
    cd.before_pct = Pct(cd.before_ns, d.before_mean_step_ns);
    cd.after_pct = Pct(cd.after_ns, d.after_mean_step_ns);
    d.step_categories.push_back(cd);
  }
  d.before_mean_all_steps_ns = b.steps.mean_complete_step_ns;
  d.after_mean_all_steps_ns = a.steps.mean_complete_step_ns;
  for (size_t c = 0; c < analyze::kStepCategoryCount; ++c) {
    CategoryDelta cd;
    cd.name = analyze::StepCategoryName(static_cast<analyze::StepCategory>(c));
    cd.before_ns = b.steps.mean_complete_ns[c];
    cd.after_ns = a.steps.mean_complete_ns[c];
    cd.before_pct = Pct(cd.before_ns, d.before_mean_all_steps_ns);
    cd.after_pct = Pct(cd.after_ns, d.after_mean_all_steps_ns);
    d.step_categories_all_steps.push_back(cd);
  }
  // Exclusive GPU breakdown.
  const analyze::ExclusiveBreakdown& eb = b.gpu_time.exclusive;
  const analyze::ExclusiveBreakdown& ea = a.gpu_time.exclusive;
  d.before_span_ns = eb.span_ns;
  d.after_span_ns = ea.span_ns;
  const std::pair<const char*, int64_t analyze::ExclusiveBreakdown::*> parts[] = {
      {"compute", &analyze::ExclusiveBreakdown::compute_ns},
      {"exposed_communication", &analyze::ExclusiveBreakdown::exposed_communication_ns},
      {"exposed_memory", &analyze::ExclusiveBreakdown::exposed_memory_ns},
      {"other", &analyze::ExclusiveBreakdown::other_ns},
      {"idle", &analyze::ExclusiveBreakdown::idle_ns}};
  for (const auto& [name, member] : parts) {
    CategoryDelta cd;
    cd.name = name;
    cd.before_ns = eb.*member;
    cd.after_ns = ea.*member;
    cd.before_pct = Pct(cd.before_ns, eb.span_ns);
    cd.after_pct = Pct(cd.after_ns, ea.span_ns);
    d.exclusive.push_back(cd);
  }
  // Names.
  const bool hta = o.selection == Selection::kHtaFirstIteration;
  const SideTables tb = hta ? HtaTables(b, o.names) : SteadyTables(b, o.names);
  const SideTables ta = hta ? HtaTables(a, o.names) : SteadyTables(a, o.names);
  if (hta && (tb.iteration < 0 || ta.iteration < 0)) {
    warnings->push_back(prefix + (tb.iteration < 0 ? "before" : "after") +
                        " has no ProfilerStep, so HTA's first-iteration selection takes its whole "
                        "trace");
  }
  d.kernels = CompareNames(tb.gpu, tb.units, ta.gpu, ta.units, o);
  d.ops = CompareNames(tb.cpu, tb.units, ta.cpu, ta.units, o);
  d.kernels.before_iteration = d.ops.before_iteration = tb.iteration;
  d.kernels.after_iteration = d.ops.after_iteration = ta.iteration;
  // Findings.
  d.before_verdict = b.advice.verdict;
  d.after_verdict = a.advice.verdict;
  d.findings = CompareFindings(b, a);
  AddCalibration(b, a, d);
  // Memory.
  if (const analyze::DeviceMemory* m = analyze::RankDevice(b.memory)) {
    d.memory.before_known = true;
    d.memory.before_device = m->device;
    d.memory.before_peak_allocated = m->peak_allocated_bytes;
    d.memory.before_peak_reserved = m->peak_reserved_bytes;
    d.memory.before_from_deltas = m->source == analyze::MemoryLevelSource::kDeltas;
  }
  if (const analyze::DeviceMemory* m = analyze::RankDevice(a.memory)) {
    d.memory.after_known = true;
    d.memory.after_device = m->device;
    d.memory.after_peak_allocated = m->peak_allocated_bytes;
    d.memory.after_peak_reserved = m->peak_reserved_bytes;
    d.memory.after_from_deltas = m->source == analyze::MemoryLevelSource::kDeltas;
  }
  return d;
}

std::string RankList(const std::vector<int32_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + RankName(v[i]);
  return s + "}";
}

}  // namespace

DiffReport Diff(const report::Report& before, const report::Report& after,
                const DiffOptions& options) {
  DiffReport out;
  out.options = options;
  for (const RankReport& r : before.ranks) out.before_ranks.push_back(r.summary.rank);
  for (const RankReport& r : after.ranks) out.after_ranks.push_back(r.summary.rank);
  for (const auto& [side, into] :
       {std::pair{&before, &out.before_diagnostics}, std::pair{&after, &out.after_diagnostics}})
    for (const RankReport& r : side->ranks)
      if (r.summary.diagnostics.total() > 0)
        into->push_back({r.summary.path, r.summary.diagnostics});
  // Pairs of (before index, after index).
  std::vector<std::pair<size_t, size_t>> pairs;
  // Rank ids pair ranks only when each side's ids are known and distinct.
  auto ids_usable = [](const std::vector<int32_t>& ids) {
    std::vector<int32_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    return (sorted.empty() || sorted.front() >= 0) &&
           std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  };
  if (before.ranks.size() == 1 && after.ranks.size() == 1) {
    pairs.emplace_back(0, 0);
    if (out.before_ranks[0] != out.after_ranks[0]) {
      out.warnings.push_back("different ranks: comparing before rank " +
                             RankName(out.before_ranks[0]) + " with after rank " +
                             RankName(out.after_ranks[0]) + " (the only rank on each side)");
    }
  } else if (!ids_usable(out.before_ranks) || !ids_usable(out.after_ranks)) {
    // Unknown (-1) or repeated ids cannot say which rank is which: pair by position (the loader's
    // order, by file name) and say so rather than pairing several ranks with one.
    const size_t n = std::min(before.ranks.size(), after.ranks.size());
    for (size_t i = 0; i < n; ++i) pairs.emplace_back(i, i);
    out.warnings.push_back(
        "rank ids unknown or repeated (before " + RankList(out.before_ranks) + "; after " +
        RankList(out.after_ranks) + "): ranks paired by position in file-name order" +
        (before.ranks.size() != after.ranks.size()
             ? ", " + std::to_string(std::max(before.ranks.size(), after.ranks.size()) - n) +
                   " left unpaired"
             : std::string()));
  } else {
    std::vector<int32_t> only_before, only_after;
    for (size_t i = 0; i < before.ranks.size(); ++i) {
      const int32_t id = out.before_ranks[i];
      auto it = std::find(out.after_ranks.begin(), out.after_ranks.end(), id);
      if (it == out.after_ranks.end())
        only_before.push_back(id);
      else
        pairs.emplace_back(i, static_cast<size_t>(it - out.after_ranks.begin()));
    }
    for (int32_t id : out.after_ranks)
      if (std::find(out.before_ranks.begin(), out.before_ranks.end(), id) == out.before_ranks.end())
        only_after.push_back(id);
    if (pairs.empty()) {
      // Nothing in common: pair by position rather than compare nothing, and say so.
      const size_t n = std::min(before.ranks.size(), after.ranks.size());
      for (size_t i = 0; i < n; ++i) pairs.emplace_back(i, i);
      out.warnings.push_back("no rank id in common (before " + RankList(out.before_ranks) +
                             ", after " + RankList(out.after_ranks) +
                             "): ranks are paired by position");
    } else if (!only_before.empty() || !only_after.empty()) {
      std::string w = "rank sets differ (before " + RankList(out.before_ranks) + ", after " +
                      RankList(out.after_ranks) + "): ";
      if (!only_before.empty()) w += "only before " + RankList(only_before);
      if (!only_before.empty() && !only_after.empty()) w += ", ";
      if (!only_after.empty()) w += "only after " + RankList(only_after);
      w += " not compared";
      out.warnings.push_back(w);
    }
  }
  for (const auto& [bi, ai] : pairs) {
    const RankReport& b = before.ranks[bi];
    const RankReport& a = after.ranks[ai];
    const std::string prefix =
        pairs.size() > 1 ? "rank " + RankName(b.summary.rank) + ": " : std::string();
    out.ranks.push_back(CompareRank(b, a, options, prefix, &out.warnings));
  }
  return out;
}

}  // namespace gpuscope::diff
