// The analyze document of any number of ranks: one summary section per job (the answer first, on
// one screen), then the rank sections — the worst few shown in text, all of them in JSON and HTML.
// Built from RankSummaries alone (facts + the rank's section), so `reduce` of summary files prints
// what `analyze` of the traces prints.
#include "report/job_document.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "advise/advise.h"
#include "advise/job_advice.h"
#include "gpuscope/version.h"
#include "render/build.h"

namespace gpuscope::report {

namespace {

using namespace render::build;  // the document-builder vocabulary

// One rank of a job as the document needs it: its summary, the key of its section in this
// document, and its rows of the job analysis (null when the analysis has none for it).
struct Member {
  size_t input = 0;  // index into the ranks given to BuildJobDocument
  const RankSummary* summary = nullptr;
  std::string key;
  const analyze::RankWait* wait = nullptr;
  const analyze::ClockOffset* clock = nullptr;
  bool shown_in_text = true;

  const model::RankFacts& facts() const { return summary->facts; }
  int32_t rank() const { return summary->facts.identity.rank; }
  // "rank 5"; a rank without an id is named by its section key ("input_3"), which is unique.
  std::string name() const { return rank() >= 0 ? "rank " + std::to_string(rank()) : key; }
};

Value RankValue(int32_t rank) { return rank >= 0 ? Value::Count(rank) : Value::Na(Unit::kCount); }

// The analysis rows of the member at `pos`: analyze::JobAnalysis lists one per member in member
// order; when that does not hold (a different count, another rank at that place) the row is
// found by rank id, and a rank without an id gets none rather than another rank's.
template <typename Row>
const Row* RowOf(const std::vector<Row>& rows, size_t pos, int32_t rank) {
  if (pos < rows.size() && rows[pos].rank == rank) return &rows[pos];
  if (rank < 0) return nullptr;
  for (const Row& r : rows)
    if (r.rank == rank) return &r;
  return nullptr;
}

// b − a, or nothing when it does not fit in int64 (a damaged summary can hold any values).
std::optional<int64_t> Difference(int64_t b, int64_t a) {
  int64_t d = 0;
  if (__builtin_sub_overflow(b, a, &d)) return std::nullopt;
  return d;
}

// |v| without the overflow of std::llabs(INT64_MIN).
uint64_t Magnitude(int64_t v) {
  return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

// The median of `v` (sorted here): the middle value, or the mean of the two middle values.
double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A value in the row's unit: durations in whole ns, shares 0–1.
Value Of(double v, Unit unit) {
  if (!std::isfinite(v)) return Value::Na(unit);
  return unit == Unit::kNanos ? Ns(v) : Value::Share(v);
}

// "min (rank 2) 48.100 ms · median 50.000 ms · max (rank 5) 52.300 ms": the spread of one metric
// across the job's ranks, the rank at each end named (JSON: min_rank, max_rank).
void AddSpread(Section& s, const std::string& key, const std::string& label, Unit unit,
               const std::vector<std::pair<double, const Member*>>& samples) {
  const std::string suffix = unit == Unit::kNanos ? "_ns" : "_share";
  Row& row = s.AddRow(key, label);
  if (samples.empty()) {
    row.note = "not measured on any rank";
    row.fields = {Detail("min" + suffix, "min", Value::Na(unit)),
                  Detail("median" + suffix, "median", Value::Na(unit)),
                  Detail("max" + suffix, "max", Value::Na(unit)),
                  Detail("min_rank", "min at", Value::Na(Unit::kCount)),
                  Detail("max_rank", "max at", Value::Na(Unit::kCount))};
    return;
  }
  std::vector<std::pair<double, const Member*>> sorted = samples;
  // Ties keep member order (ranks ascending), so the rank named at each end is stable.
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<double> values;
  for (const auto& [v, m] : sorted) values.push_back(v);
  const Member& lo = *sorted.front().second;
  const Member& hi = *sorted.back().second;
  row.fields = {F("min" + suffix, "min (" + lo.name() + ")", Of(sorted.front().first, unit)),
                F("median" + suffix, "median", Of(Median(values), unit)),
                F("max" + suffix, "max (" + hi.name() + ")", Of(sorted.back().first, unit)),
                Detail("min_rank", "min at rank", RankValue(lo.rank())),
                Detail("max_rank", "max at rank", RankValue(hi.rank())),
                Detail("ranks", "ranks measured", Count(sorted.size()))};
}

// The verdict of the job: "straggler" when the rank the others wait for costs at least
// advise::kVerdictMinShare of the step (what any finding needs to name the verdict), else the
// verdict most of its ranks share.
void AddVerdict(const analyze::JobAnalysis& a, const std::vector<Member>& members,
                const std::optional<advise::Finding>& straggler, const char* noun, Section& s) {
  std::map<std::string, size_t> tally;
  for (const Member& m : members)
    if (!m.facts().verdict.empty()) ++tally[m.facts().verdict];
  std::string common;
  size_t common_count = 0;
  // The most common; a tie goes to the verdict of the lowest-ranked member among the tied.
  for (const Member& m : members) {
    const auto it = tally.find(m.facts().verdict);
    if (it != tally.end() && it->second > common_count) {
      common = it->first;
      common_count = it->second;
    }
  }
  Row& row = s.AddRow("verdict", "verdict");
  const bool straggles = straggler && straggler->estimated_saving_share >= advise::kVerdictMinShare;
  row.fields = {F("verdict", "",
                  straggles        ? Text("straggler")
                  : common.empty() ? Value::Na(Unit::kText)
                                   : Text(common)),
                Detail("common_verdict", "the most common rank verdict",
                       common.empty() ? Value::Na(Unit::kText) : Text(common)),
                Detail("ranks_with_common_verdict", "ranks with it", Count(common_count)),
                Detail("ranks", "ranks", Count(members.size()))};
  if (straggles)
    row.note = "(rank " + std::to_string(a.straggler->rank) + " keeps the others waiting)";
  else if (!common.empty())
    row.note = common_count == members.size()
                   ? std::string("(every ") + noun + ")"
                   : "(" + std::to_string(common_count) + " of " + std::to_string(members.size()) +
                         " " + noun + "s)";
}

// The rank the others wait for, or why none is named. JSON: `rank` and `wait_caused_per_step_ns`
// (null when there is none).
void AddStraggler(const analyze::JobAnalysis& a, const std::vector<Member>& members, Section& s) {
  Row& row = s.AddRow("straggler", "straggler");
  if (a.straggler) {
    const analyze::Straggler& st = *a.straggler;
    // st.input is the straggler's position among the job's members (AnalyzeJob's input), as is
    // a.ranks' order; a rank id may be shared (duplicates) or absent, so never look it up by id.
    const analyze::RankWait* w = st.input < a.ranks.size() ? &a.ranks[st.input] : nullptr;
    const double share = a.mean_step_ns > 0 ? static_cast<double>(st.wait_caused_ns_per_step) /
                                                  static_cast<double>(a.mean_step_ns)
                                            : st.share_of_step;
    row.fields = {
        F("rank", "rank", RankValue(st.rank)),
        F("wait_caused_per_step_ns", "others wait per step", Ns(st.wait_caused_ns_per_step)),
        F("wait_caused_share", "", Value::Share(share)),
        F("last_arrivals", "last at collectives",
          w ? Count(w->times_last) : Value::Na(Unit::kCount)),
        F("collectives", "of", w ? Count(w->collectives) : Value::Na(Unit::kCount))};
    // Only some ranks' traces: the rank named is the latest of these; a missing one may be later.
    int32_t world = -1;
    for (const Member& m : members) world = std::max(world, m.summary->facts.identity.world_size);
    if (world > 0 && members.size() < static_cast<size_t>(world))
      row.note = "(the latest of the " + std::to_string(members.size()) + " of " +
                 std::to_string(world) + " ranks whose traces are here; the other " +
                 std::to_string(static_cast<size_t>(world) - members.size()) +
                 " may arrive later still)";
    return;
  }
  row.fields = {Detail("rank", "rank", Value::Na(Unit::kCount)),
                Detail("wait_caused_per_step_ns", "others wait per step", Value::Na(Unit::kNanos)),
                Detail("wait_caused_share", "of the step", Value::Na(Unit::kShare)),
                Detail("last_arrivals", "last at collectives", Value::Na(Unit::kCount)),
                Detail("collectives", "of", Value::Na(Unit::kCount))};
  if (members.size() < 2)
    row.note = "none: one rank";
  else if (a.collectives.empty())
    row.note = "none named: no collective was matched across ranks";
  else if (!a.clocks_alignable)
    row.note = "none named: the clocks cannot be aligned, so arrivals cannot be compared";
  else
    row.note = "none: no rank causes the others waits over " +
               std::to_string(static_cast<int>(std::lround(analyze::kStragglerMinShare * 100))) +
               " % of the step";
}

// How long ranks wait at collectives (their arrival to the last arrival), and for whom: what a
// rank that waits is told instead of being called a straggler.
void AddWaiting(const analyze::JobAnalysis& a, const std::vector<Member>& members, Section& s) {
  Row& row = s.AddRow("waiting", "waiting");
  std::vector<double> waits;
  const Member* most = nullptr;
  std::map<int32_t, size_t> waits_for;
  for (const Member& m : members) {
    if (!m.wait) continue;
    waits.push_back(static_cast<double>(m.wait->wait_suffered_ns_per_step));
    if (!most || m.wait->wait_suffered_ns_per_step > most->wait->wait_suffered_ns_per_step)
      most = &m;
    if (m.wait->wait_suffered_ns_per_step > 0 && m.wait->waits_most_for >= 0)
      ++waits_for[m.wait->waits_most_for];
  }
  int32_t for_rank = -1;
  size_t for_count = 0;
  for (const auto& [rank, n] : waits_for)
    if (n > for_count) {
      for_rank = rank;
      for_count = n;
    }
  if (!most || members.size() < 2 || a.collectives.empty()) {
    row.note = members.size() < 2 ? "one rank: nobody waits"
                                  : "not measured: no collective was matched across ranks";
    row.fields = {Detail("wait_median_per_step_ns", "median", Value::Na(Unit::kNanos)),
                  Detail("wait_max_per_step_ns", "max", Value::Na(Unit::kNanos)),
                  Detail("wait_max_rank", "max at rank", Value::Na(Unit::kCount)),
                  Detail("waits_most_for", "mostly for rank", Value::Na(Unit::kCount))};
    return;
  }
  row.fields = {F("wait_median_per_step_ns", "median per step", Ns(Median(waits))),
                F("wait_max_per_step_ns", "max (" + most->name() + ")",
                  Ns(most->wait->wait_suffered_ns_per_step)),
                F("waits_most_for", "mostly for rank", RankValue(for_rank)),
                Detail("wait_max_rank", "max at rank", RankValue(most->rank())),
                Detail("waits_most_for_ranks", "ranks waiting mostly for it", Count(for_count))};
  row.fields[2].detail = for_rank < 0;  // nobody waits
}

void AddCollectives(const analyze::JobAnalysis& a, Section& s) {
  Row& row = s.AddRow("collectives", "collectives");
  std::vector<double> skews, transfers;
  size_t by_seq = 0;
  const analyze::MatchedCollective* widest = nullptr;
  for (const analyze::MatchedCollective& c : a.collectives) {
    skews.push_back(static_cast<double>(c.skew_ns));
    transfers.push_back(static_cast<double>(c.duration_ns));
    by_seq += c.by_seq;
    if (!widest || c.skew_ns > widest->skew_ns) widest = &c;
  }
  row.fields = {
      F("matched", "matched", Count(a.collectives.size())),
      F("unmatched", "unmatched", Count(a.unmatched)),
      F("skew_median_ns", "skew median", widest ? Ns(Median(skews)) : Value::Na(Unit::kNanos)),
      F("skew_max_ns", "max", widest ? Ns(widest->skew_ns) : Value::Na(Unit::kNanos)),
      F("transfer_median_ns", "transfer median",
        widest ? Ns(Median(transfers)) : Value::Na(Unit::kNanos)),
      Detail("matched_by_seq", "matched by sequence number", Count(by_seq))};
  // Unmatched records are worth a word only when there are some.
  row.fields[1].detail = a.unmatched == 0;
  if (!widest) {
    row.note = "none matched across ranks";
    for (Field& f : row.fields) f.detail = true;
  }
}

// The steady steps that took longest on their slowest rank (a synchronous job's step ends when its
// slowest rank's does).
void AddSlowestSteps(const std::vector<Member>& members, Section& s) {
  std::map<int32_t, std::pair<int64_t, const Member*>> worst;
  for (const Member& m : members)
    for (const model::StepSpan& st : m.facts().steps) {
      const std::optional<int64_t> d = Difference(st.end_ns, st.start_ns);
      if (!st.steady || !d) continue;
      auto [it, added] = worst.try_emplace(st.step, *d, &m);
      if (!added && *d > it->second.first) it->second = {*d, &m};
    }
  std::vector<std::pair<int32_t, std::pair<int64_t, const Member*>>> steps(worst.begin(),
                                                                           worst.end());
  std::stable_sort(steps.begin(), steps.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  Row& row = s.AddRow("slowest_steps", "slowest");
  if (steps.empty()) {
    row.note = "steps: none steady";
    return;
  }
  for (size_t i = 0; i < steps.size() && i < 3; ++i) {
    const auto& [step, w] = steps[i];
    const std::string k = "slowest_" + std::to_string(i + 1);
    row.fields.push_back(
        F(k + "_ns", "#" + std::to_string(step) + " (" + w.second->name() + ")", Ns(w.first)));
  }
  for (size_t i = 0; i < steps.size() && i < 3; ++i) {
    const std::string k = "slowest_" + std::to_string(i + 1);
    row.fields.push_back(Detail(k + "_step", "step", Value::Count(steps[i].first)));
    row.fields.push_back(Detail(k + "_rank", "on rank", RankValue(steps[i].second.second->rank())));
  }
}

void AddClocks(const analyze::JobAnalysis& a, const std::vector<Member>& members, Section& s) {
  Row& row = s.AddRow("clocks", "clocks");
  size_t applied = 0, own_clock = 0, estimated = 0;
  const Member* largest = nullptr;
  int64_t uncertainty = 0;
  for (const Member& m : members) {
    own_clock += !m.facts().identity.absolute_clock;
    if (!m.clock) continue;
    estimated += m.clock->samples > 0;
    uncertainty = std::max(uncertainty, m.clock->uncertainty_ns);
    if (!m.clock->applied) continue;
    ++applied;
    if (!largest || Magnitude(m.clock->offset_ns) > Magnitude(largest->clock->offset_ns))
      largest = &m;
  }
  row.fields = {F("offsets_applied", "offsets applied", Count(applied)),
                F("ranks", "ranks", Count(members.size())),
                F("largest_offset_ns", largest ? "largest (" + largest->name() + ")" : "largest",
                  largest ? Value::Signed(Ns(largest->clock->offset_ns)) : Value::Na(Unit::kNanos)),
                F("uncertainty_ns", "uncertainty ≤", Ns(uncertainty)),
                Detail("reference_rank", "reference rank", RankValue(a.reference_rank)),
                Detail("alignable", "alignable", Value::Bool(a.clocks_alignable)),
                Detail("own_clock_ranks", "ranks without baseTimeNanoseconds", Count(own_clock))};
  if (!a.clocks_alignable) {
    for (size_t i = 0; i < 4; ++i) row.fields[i].detail = true;
    row.note =
        "not alignable: matched collectives' end times disagree too widely to estimate "
        "offsets; arrivals are compared on each rank's own clock";
  } else if (members.size() < 2) {
    for (size_t i = 0; i < 4; ++i) row.fields[i].detail = true;
    row.note = "one rank: nothing to align";
  } else if (a.clocks.empty() || estimated == 0) {
    for (size_t i = 0; i < 4; ++i) row.fields[i].detail = true;
    row.note = "no offsets estimated (no matched collectives)";
  } else if (applied == 0) {
    row.fields[2].detail = true;
    row.note = "(every offset within its uncertainty: the clocks agree)";
  }
}

void AddRanksTable(const std::vector<Member>& members, Section& s) {
  Table& t = s.AddTable("ranks", "ranks",
                        {{"rank", "rank"},
                         {"section", "section"},
                         {"verdict", "verdict"},
                         {"step_ns", "step"},
                         {"compute_share", "compute"},
                         {"exposed_communication_share", "exposed comm"},
                         {"idle_share", "idle"},
                         {"last_arrivals", "last at"},
                         {"collectives", "collectives"},
                         {"wait_caused_per_step_ns", "wait caused / step"},
                         {"wait_suffered_per_step_ns", "wait suffered / step"},
                         {"waits_most_for", "waits most for"},
                         {"clock_offset_ns", "clock offset"},
                         {"clock_uncertainty_ns", "±"},
                         {"clock_applied", "offset applied"},
                         {"shown_in_text", "in text"},
                         {"path", "file"}});
  t.text_rows = 0;
  for (const Member& m : members) {
    const model::RankFacts& f = m.facts();
    const double span = static_cast<double>(f.span_ns);
    const analyze::RankWait* w = m.wait;
    const analyze::ClockOffset* c = m.clock;
    t.rows.push_back({RankValue(m.rank()), Text(m.key),
                      f.verdict.empty() ? Value::Na(Unit::kText) : Text(f.verdict),
                      f.mean_step_ns > 0 ? Ns(f.mean_step_ns) : Value::Na(Unit::kNanos),
                      ShareOf(static_cast<double>(f.compute_ns), span),
                      ShareOf(static_cast<double>(f.exposed_communication_ns), span),
                      ShareOf(static_cast<double>(f.idle_ns), span),
                      w ? Count(w->times_last) : Value::Na(Unit::kCount),
                      w ? Count(w->collectives) : Value::Na(Unit::kCount),
                      w ? Ns(w->wait_caused_ns_per_step) : Value::Na(Unit::kNanos),
                      w ? Ns(w->wait_suffered_ns_per_step) : Value::Na(Unit::kNanos),
                      w ? RankValue(w->waits_most_for) : Value::Na(Unit::kCount),
                      c ? Value::Signed(Ns(c->offset_ns)) : Value::Na(Unit::kNanos),
                      c ? Ns(c->uncertainty_ns) : Value::Na(Unit::kNanos),
                      c ? Value::Bool(c->applied) : Value::Na(Unit::kBool),
                      Value::Bool(m.shown_in_text), Text(f.identity.path)});
  }
}

// The job's what-if (analyze::JobFix): each fix on every rank, the job's step the slowest rank's
// own work after it.
void AddJobWhatIf(const analyze::JobAnalysis& a, Section& s) {
  if (a.fixes.empty()) return;
  // One line in text (the job summary stays one screen): the best fix; the table in -v, JSON, HTML.
  const analyze::JobFix& best = a.fixes.front();
  Row& row = s.AddRow("job_whatif", "job what-if");
  row.fields = {F("best_fix", "best fix", Text(best.fix)),
                F("best_saving_ns", "saves the job", Ns(best.saving_ns)),
                F("best_saving_share", "",
                  ShareOf(static_cast<double>(best.saving_ns), static_cast<double>(a.own_step_ns))),
                F("best_bound_by_rank", "then bound by rank", RankValue(best.bound_by_rank)),
                Detail("own_step_ns", "slowest rank's own work", Ns(a.own_step_ns)),
                Detail("own_step_rank", "rank", RankValue(a.own_step_rank))};
  row.note = "(on every rank; the job goes at its slowest rank's own work)";
  Table& t = s.AddTable("job_whatif_fixes", "each fix on every rank, replayed for the job",
                        {{"fix", "fix"},
                         {"saving_ns", "job saves"},
                         {"saving_share", "of step"},
                         {"rank_saving_min_ns", "ranks: least"},
                         {"rank_saving_max_ns", "most"},
                         {"bound_by_rank", "then bound by rank"}});
  t.text_rows = 0;
  for (const analyze::JobFix& f : a.fixes)
    t.rows.push_back({Text(f.fix), Ns(f.saving_ns),
                      ShareOf(static_cast<double>(f.saving_ns), static_cast<double>(a.own_step_ns)),
                      Ns(f.rank_saving_min_ns), Ns(f.rank_saving_max_ns),
                      RankValue(f.bound_by_rank)});
}

void AddSkewTable(const analyze::JobAnalysis& a, Section& s) {
  Table& t = s.AddTable("collective_skew", "collectives with the largest arrival skew",
                        {{"group", "group"},
                         {"type", "type"},
                         {"seq", "seq"},
                         {"matched_by", "matched by"},
                         {"payload_bytes", "bytes"},
                         {"skew_ns", "skew"},
                         {"last_rank", "last rank"},
                         {"wait_caused_ns", "wait caused"},
                         {"duration_ns", "transfer"},
                         {"busbw_bytes_per_s", "bus bandwidth"},
                         {"ranks", "ranks"},
                         {"expected_ranks", "of"},
                         {"step", "step"}});
  t.text_rows = 0;
  std::vector<const analyze::MatchedCollective*> order;
  for (const analyze::MatchedCollective& c : a.collectives) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* x, const auto* y) { return x->skew_ns > y->skew_ns; });
  for (size_t i = 0; i < order.size() && i < kSkewTableRows; ++i) {
    const analyze::MatchedCollective& c = *order[i];
    t.rows.push_back({Text(c.group), Text(c.type), Value::Count(c.seq),
                      Text(c.by_seq ? "seq" : "ordinal"), Bytes(c.bytes), Ns(c.skew_ns),
                      RankValue(c.last_rank), Ns(c.wait_caused_ns), Ns(c.duration_ns),
                      c.busbw_gbps >= 0 && std::isfinite(c.busbw_gbps)
                          ? Value::Number(c.busbw_gbps * 1e9, -1, Unit::kBytesPerSecond)
                          : Value::Na(Unit::kBytesPerSecond),
                      Count(c.ranks), Count(c.expected_ranks),
                      c.step >= 0 ? Value::Count(c.step) : Value::Na(Unit::kCount)});
  }
}

// GPU busy per rank over time, resampled from each rank's busy timeline onto one time axis: each
// cell's share is the busy time of the rank's bins within it over the time they cover (busy is
// taken as spread evenly within a bin). Clock offsets that AnalyzeJob applied shift a rank's
// timeline; when not every rank has an absolute clock, each starts at its own first bin. A
// timeline whose times do not fit (a damaged summary) is left out; so is the chart when the ranks
// span more than 2^62 ns (146 years), which keeps every cell computation within int64.
void AddBusyHeatmap(const analyze::JobAnalysis& a, const std::vector<Member>& members, Section& s) {
  constexpr int64_t kMaxSpanNs = int64_t{1} << 62;
  bool absolute = true;
  for (const Member& m : members) absolute &= m.facts().identity.absolute_clock;
  struct Timeline {
    bool ok = false;
    int64_t start = 0, end = 0;
  };
  std::vector<Timeline> lines(members.size());
  int64_t t0 = 0, t1 = 0, finest = 0;
  bool any = false;
  for (size_t i = 0; i < members.size(); ++i) {
    const model::BusyTimeline& b = members[i].facts().busy;
    if (b.bin_ns <= 0 || b.busy_ns.empty()) continue;
    int64_t start = absolute ? b.first_bin_start_ns : 0, length = 0, end = 0;
    const analyze::ClockOffset* c = members[i].clock;
    if (absolute && c && c->applied && a.clocks_alignable &&
        __builtin_add_overflow(start, c->offset_ns, &start))
      continue;
    if (__builtin_mul_overflow(b.bin_ns, static_cast<int64_t>(b.busy_ns.size()), &length) ||
        __builtin_add_overflow(start, length, &end))
      continue;
    lines[i] = {true, start, end};
    t0 = any ? std::min(t0, start) : start;
    t1 = any ? std::max(t1, end) : end;
    finest = any ? std::min(finest, b.bin_ns) : b.bin_ns;
    any = true;
  }
  // The axis starts at a multiple of 1,024 ns (at most 1.023 µs before the first bin): below 2^63
  // doubles hold such multiples exactly, so its unix-ns start reads back from JSON as written.
  if (any) {
    const int64_t below = ((t0 % 1024) + 1024) % 1024;
    int64_t floored = 0;
    if (!__builtin_sub_overflow(t0, below, &floored)) t0 = floored;
  }
  const std::optional<int64_t> span = any ? Difference(t1, t0) : std::nullopt;
  if (!span || *span <= 0 || *span > kMaxSpanNs) return;
  // No cell finer than the finest bin, at most kHeatmapColumns, and kMaxHeatmapCells in all.
  size_t cols = std::min(
      kHeatmapColumns, std::max<size_t>(1, kMaxHeatmapCells / std::max<size_t>(1, members.size())));
  const int64_t finest_cols = *span / finest + (*span % finest != 0);
  cols = std::min<size_t>(cols, static_cast<size_t>(finest_cols));
  const int64_t ncols = static_cast<int64_t>(cols);
  const int64_t cell = *span / ncols + (*span % ncols != 0);
  render::Chart& chart =
      s.AddChart("busy_heatmap",
                 absolute ? "GPU busy per rank over time"
                          : "GPU busy per rank over time (each rank from its own first "
                            "sample: without baseTimeNanoseconds the clocks are not comparable)",
                 render::Chart::Kind::kHeatmap, Unit::kShare);
  chart.x_unit = Unit::kNanos;
  for (int64_t k = 0; k < ncols; ++k) chart.x.push_back(static_cast<double>(cell * k));
  for (size_t i = 0; i < members.size(); ++i) {
    const model::BusyTimeline& b = members[i].facts().busy;
    std::vector<double> busy(cols, 0), covered(cols, 0);
    if (lines[i].ok) {
      // Within [0, span]: every position below, and (k + 1) · cell ≤ span + cell, fits in int64.
      const int64_t first = lines[i].start - t0;
      for (size_t j = 0; j < b.busy_ns.size(); ++j) {
        const int64_t lo = first + b.bin_ns * static_cast<int64_t>(j);
        const int64_t hi = lo + b.bin_ns;
        const double density = static_cast<double>(std::clamp<int64_t>(b.busy_ns[j], 0, b.bin_ns)) /
                               static_cast<double>(b.bin_ns);
        for (int64_t k = lo / cell; k < ncols && k * cell < hi; ++k) {
          const int64_t overlap = std::min(hi, (k + 1) * cell) - std::max(lo, k * cell);
          if (overlap <= 0) continue;
          covered[k] += static_cast<double>(overlap);
          busy[k] += density * static_cast<double>(overlap);
        }
      }
    }
    render::Series series{members[i].key, members[i].name(), {}};
    for (size_t k = 0; k < cols; ++k)
      series.values.push_back(covered[k] > 0 ? busy[k] / covered[k] : std::nan(""));
    chart.series.push_back(std::move(series));
  }
  chart.reference_lines = {F("start_ns", "first cell at", Value::Int(t0, Unit::kTimestamp)),
                           F("cell_ns", "cell", Ns(cell))};
}

// The title of the rank's largest finding that saves time (findings are ranked by saving; a memory
// finding saves none and says nothing about why the rank is late), from its section.
std::string TopFinding(const render::Section& rank) {
  const render::Section* f = rank.FindSection("findings");
  if (!f) return "";
  for (const render::Item& item : f->items)
    if (const auto* finding = std::get_if<render::Finding>(&item))
      if (!finding->saving.is_na() && finding->saving.AsDouble() > 0) return finding->title;
  return "";
}

// Which members text shows in full: all with `--ranks all` ({-1}), the named rank ids, or the
// kDefaultDetailRanks worst — the largest wait caused, then the slowest step.
void ChooseShown(const JobOptions& options, std::vector<Member>& members) {
  const std::vector<int32_t>& want = options.detail_ranks;
  if (std::find(want.begin(), want.end(), -1) != want.end()) return;
  if (!want.empty()) {
    for (Member& m : members)
      m.shown_in_text =
          m.rank() >= 0 && std::find(want.begin(), want.end(), m.rank()) != want.end();
    return;
  }
  if (members.size() <= kDefaultDetailRanks) return;
  std::vector<Member*> order;
  for (Member& m : members) order.push_back(&m);
  std::stable_sort(order.begin(), order.end(), [](const Member* x, const Member* y) {
    const int64_t wx = x->wait ? x->wait->wait_caused_ns_per_step : 0;
    const int64_t wy = y->wait ? y->wait->wait_caused_ns_per_step : 0;
    if (wx != wy) return wx > wy;
    return x->facts().mean_step_ns > y->facts().mean_step_ns;
  });
  for (size_t i = 0; i < order.size(); ++i) order[i]->shown_in_text = i < kDefaultDetailRanks;
}

std::string NameList(const std::vector<const Member*>& ms) {
  std::string out;
  for (size_t i = 0; i < ms.size(); ++i) {
    if (i > 0) out += i + 1 == ms.size() ? " and " : ", ";
    out += ms[i]->name();
  }
  return out;
}

// The text-only line that says which ranks follow in full and where the others are.
void AddShownNote(const JobOptions& options, const std::vector<Member>& members, Section& job) {
  std::vector<const Member*> shown, hidden;
  for (const Member& m : members) (m.shown_in_text ? shown : hidden).push_back(&m);
  if (hidden.empty()) return;
  // The worst first, as chosen (members are in rank order).
  Section& s = job.AddSection("shown_in_text", "");
  s.views = render::kViewText;
  s.text_inline = true;
  Row& row = s.AddRow("ranks_in_detail", "detail");
  row.fields = {Detail("shown", "ranks shown", Count(shown.size())),
                Detail("hidden", "ranks not shown", Count(hidden.size()))};
  const std::string why = options.detail_ranks.empty()
                              ? " (the largest wait caused, then the slowest step)"
                              : " (--ranks)";
  row.note = (shown.empty() ? std::string("no rank of this job in full below")
                            : NameList(shown) + " in full below" + why) +
             "; the other " + std::to_string(hidden.size()) +
             " in --json and --html, or with --ranks all";
}

void AddJob(const AnalysedJob& job, size_t number, std::vector<Member>& members,
            const JobOptions& options, render::Section& jobs) {
  const analyze::JobAnalysis& a = job.analysis;
  const std::string label =
      job.group.label.empty() ? "job " + std::to_string(number) : job.group.label;
  // Sessions of one process are compared side by side: no rank waits for another in them.
  const bool sessions = job.group.sessions;
  const char* noun = sessions ? "session" : "rank";
  // A sessions group's label counts its sessions already.
  Section& s = jobs.AddSection("job_" + std::to_string(number),
                               sessions ? label
                                        : label + " · " + std::to_string(members.size()) +
                                              (members.size() == 1 ? " rank" : " ranks"));
  ChooseShown(options, members);

  std::optional<advise::Finding> finding;
  if (a.straggler) {
    advise::StragglerRankAdvice rank;
    for (const Member& m : members)
      if (m.rank() == a.straggler->rank) {
        rank.verdict = m.facts().verdict;
        rank.top_finding = TopFinding(m.summary->section);
        break;
      }
    finding = advise::AdviseJob(a, rank);
  }
  AddVerdict(a, members, finding, noun, s);
  if (!sessions) {
    AddStraggler(a, members, s);
    AddWaiting(a, members, s);
    AddCollectives(a, s);
  }
  AddSlowestSteps(members, s);
  std::vector<std::pair<double, const Member*>> step, compute, comm, idle;
  for (const Member& m : members) {
    const model::RankFacts& f = m.facts();
    if (f.mean_step_ns > 0) step.emplace_back(static_cast<double>(f.mean_step_ns), &m);
    if (f.span_ns <= 0) continue;
    const double span = static_cast<double>(f.span_ns);
    compute.emplace_back(static_cast<double>(f.compute_ns) / span, &m);
    comm.emplace_back(static_cast<double>(f.exposed_communication_ns) / span, &m);
    idle.emplace_back(static_cast<double>(f.idle_ns) / span, &m);
  }
  AddSpread(s, "step_time", "step time", Unit::kNanos, step);
  AddSpread(s, "compute", "compute", Unit::kShare, compute);
  AddSpread(s, "exposed_communication", "exposed comm", Unit::kShare, comm);
  AddSpread(s, "idle", "idle", Unit::kShare, idle);
  if (!sessions) {
    AddClocks(a, members, s);
    AddJobWhatIf(a, s);
  }
  for (size_t i = 0; i < job.group.notes.size(); ++i)
    s.AddRow("note_" + std::to_string(i), "note").note = job.group.notes[i];

  Section& findings = s.AddSection("findings", "finding");
  findings.text_inline = true;
  if (finding) findings.items.emplace_back(advise::ToDocumentFinding(*finding));
  AddShownNote(options, members, s);
  Section& detail = s.AddSection("ranks", "ranks and collectives");
  detail.text_inline = true;
  AddBusyHeatmap(a, members, detail);
  AddRanksTable(members, detail);
  AddSkewTable(a, detail);
}

}  // namespace

namespace {

// `owned`: the same vector as `ranks`, whose sections are moved into the document (they are most
// of its memory: a 1,000-rank job's would otherwise be held twice while it is printed); null:
// copied.
render::Document Build(const std::vector<RankSummary>& ranks, std::vector<RankSummary>* owned,
                       const std::vector<AnalysedJob>& jobs, const std::vector<Status>& failures,
                       const JobOptions& options) {
  render::Document doc;
  doc.schema = "gpuscope.report";
  doc.title = "gpuscope " GPUSCOPE_VERSION " · " + std::to_string(ranks.size()) + " rank" +
              (ranks.size() == 1 ? "" : "s");
  // Section keys: the rank's own ("rank_5", "input_3"); a second file claiming a rank id gets its
  // input index, so both sections stay.
  std::vector<std::string> keys(ranks.size());
  std::set<std::string> used;
  for (size_t i = 0; i < ranks.size(); ++i) {
    keys[i] = ranks[i].section.key;
    if (!used.insert(keys[i]).second) keys[i] = "input_" + std::to_string(i);
    used.insert(keys[i]);
  }
  // Jobs and their members, every rank in at most one job; members out of range are ignored.
  std::vector<std::vector<Member>> job_members;
  std::vector<const AnalysedJob*> kept;
  std::vector<bool> placed(ranks.size(), false);
  for (const AnalysedJob& job : jobs) {
    std::vector<Member> members;
    for (size_t pos = 0; pos < job.group.members.size(); ++pos) {
      const size_t i = job.group.members[pos];
      if (i >= ranks.size() || placed[i]) continue;
      placed[i] = true;
      Member m;
      m.input = i;
      m.summary = &ranks[i];
      m.key = keys[i];
      m.wait = RowOf(job.analysis.ranks, pos, m.rank());
      m.clock = RowOf(job.analysis.clocks, pos, m.rank());
      members.push_back(std::move(m));
    }
    if (members.empty()) continue;
    job_members.push_back(std::move(members));
    kept.push_back(&job);
  }
  // Profiling sessions of one process are not ranks: the title counts traces and runs then.
  const bool all_sessions =
      !kept.empty() &&
      std::all_of(kept.begin(), kept.end(), [](const AnalysedJob* j) { return j->group.sessions; });
  const bool some_sessions =
      std::any_of(kept.begin(), kept.end(), [](const AnalysedJob* j) { return j->group.sessions; });
  if (some_sessions)
    doc.title = "gpuscope " GPUSCOPE_VERSION " · " + std::to_string(ranks.size()) +
                (all_sessions ? " profiling sessions" : " traces");
  if (kept.size() > 1)
    doc.title += " in " + std::to_string(kept.size()) +
                 (all_sessions    ? " runs"
                  : some_sessions ? " jobs or runs"
                                  : " jobs");
  // One rank is the single-rank report: its section first and shown, the job section after it in
  // JSON only (where the across-ranks section was).
  const bool single = ranks.size() == 1;
  Section jobs_section{"jobs", "", render::kViewAll, false, false, {}, {}};
  if (single) jobs_section.views = 0;
  for (size_t j = 0; j < kept.size(); ++j)
    AddJob(*kept[j], j + 1, job_members[j], single ? JobOptions{{-1}} : options, jobs_section);
  if (!kept.empty() && !single) doc.sections.push_back(std::move(jobs_section));
  // Rank sections: job by job, in member order; ranks in no job last, shown. A member's identity
  // row names its job's section ("run": "job_2"), so its rows stay apart from another run's
  // same rank in CSV and Python.
  auto add_rank = [&](size_t i, bool shown, const std::string& run) {
    render::Section s = owned ? std::move((*owned)[i].section) : ranks[i].section;
    s.key = keys[i];
    if (!shown) s.views &= static_cast<uint8_t>(~render::kViewText);
    if (!run.empty())
      if (render::Item* item = s.FindItem("identity"))
        if (Row* identity = std::get_if<Row>(item))
          identity->fields.push_back(F("run", "run", Text(run)));
    doc.sections.push_back(std::move(s));
  };
  for (size_t j = 0; j < job_members.size(); ++j)
    for (const Member& m : job_members[j])
      add_rank(m.input, m.shown_in_text, "job_" + std::to_string(j + 1));
  for (size_t i = 0; i < ranks.size(); ++i)
    if (!placed[i]) add_rank(i, true, "");
  if (!kept.empty() && single) {
    // The job section is JSON only here; the ranks its world size has and the input lacks are
    // said in the rank's inputs too, beside its warnings (a summary of rank 0 of 8 is not the job).
    for (const std::string& note : kept.front()->group.notes)
      if (note.find(" absent: rank") != std::string::npos)
        for (render::Section& sec : doc.sections)
          if (sec.key == keys[0])
            for (render::Section& sub : sec.sections)
              if (sub.key == "inputs") sub.AddRow("absent_ranks", "note").note = note;
    doc.sections.push_back(std::move(jobs_section));
  }
  if (!failures.empty()) {
    render::Section& f = doc.AddSection("failures", "inputs that could not be read");
    for (size_t i = 0; i < failures.size(); ++i)
      f.AddText("failure_" + std::to_string(i), "error: " + failures[i].message());
  }
  if (owned) std::vector<RankSummary>().swap(*owned);  // their facts too, before printing
  return doc;
}

std::vector<AnalysedJob> AnalyseJobs(const std::vector<RankSummary>& ranks) {
  std::vector<const model::RankFacts*> facts;
  for (const RankSummary& r : ranks) facts.push_back(&r.facts);
  std::vector<AnalysedJob> jobs;
  for (analyze::JobGroup& g : analyze::GroupJobs(facts)) {
    std::vector<const model::RankFacts*> members;
    for (size_t i : g.members)
      if (i < facts.size()) members.push_back(facts[i]);
    AnalysedJob job;
    job.analysis = analyze::AnalyzeJob(members);
    job.group = std::move(g);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace

render::Document BuildJobDocument(const std::vector<RankSummary>& ranks,
                                  const std::vector<AnalysedJob>& jobs,
                                  const std::vector<Status>& failures, const JobOptions& options) {
  return Build(ranks, nullptr, jobs, failures, options);
}

render::Document BuildJobDocument(const std::vector<RankSummary>& ranks,
                                  const std::vector<Status>& failures, const JobOptions& options) {
  return Build(ranks, nullptr, AnalyseJobs(ranks), failures, options);
}

render::Document BuildJobDocument(std::vector<RankSummary>&& ranks,
                                  const std::vector<Status>& failures, const JobOptions& options) {
  return Build(ranks, &ranks, AnalyseJobs(ranks), failures, options);
}

}  // namespace gpuscope::report
