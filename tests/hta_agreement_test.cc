// Our GPU-time analyses against Holistic Trace Analysis' own outputs for the same real traces
// (reference/hta in tests/data or shared/, produced with HTA's defaults). Acceptance: within 1.0
// percentage point under the same event selection; in practice most agree to the µs.
#include <gtest/gtest.h>

#include <map>

#include "analyze/gpu_time.h"
#include "gpuscope/ingest.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using Case = testing::HtaCase;
const std::vector<Case>& Cases() { return testing::HtaReferenceCases(); }

using testing::ReadCsv;

double Pct(int64_t part, int64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

TEST(HtaAgreement, TemporalBreakdownAndIdleAttribution) {
  testing::RealParts parts;
  for (const Case& c : Cases()) {
    if (!parts.Have(c.Files())) continue;
    SCOPED_TRACE(c.folder);
    const std::string ref = testing::RealReference("hta/" + c.folder);
    std::map<int, analyze::GpuTime> ours, hta_gaps;
    bool ns_trace = false;
    for (const std::string& file : c.traces) {
      auto trace = LoadTrace(testing::RealTrace(file));
      ASSERT_TRUE(trace.ok()) << trace.status().message();
      const int rank = trace->info.rank < 0 ? 0 : trace->info.rank;
      ours[rank] = analyze::AnalyzeGpuTime(*trace);
      hta_gaps[rank] = analyze::AnalyzeGpuTime(*trace, {}, analyze::kConsecutiveKernelDelayNs,
                                               analyze::StreamGapFrom::kHtaPreviousEnd);
      ns_trace = ns_trace || ours[rank].selection.rounded;
    }
    // temporal_breakdown.csv:
    // rank,idle_time(us),compute_time(us),non_compute_time(us),kernel_time(us),pctgs
    const auto temporal = ReadCsv(ref + "/temporal_breakdown.csv");
    ASSERT_GE(temporal.size(), 2u);
    for (size_t i = 1; i < temporal.size(); ++i) {
      const auto& row = temporal[i];
      const int rank = std::stoi(row[0]);
      ASSERT_TRUE(ours.count(rank)) << "rank " << rank;
      const analyze::TemporalBreakdown& tb = ours[rank].temporal;
      const double idle_us = std::stod(row[1]), compute_us = std::stod(row[2]),
                   span_us = std::stod(row[4]);
      EXPECT_NEAR(Pct(tb.idle_ns, tb.span_ns), std::stod(row[5]), 1.0);
      EXPECT_NEAR(Pct(tb.compute_ns, tb.span_ns), std::stod(row[6]), 1.0);
      EXPECT_NEAR(Pct(tb.non_compute_ns, tb.span_ns), std::stod(row[7]), 1.0);
      // Report the absolute difference too (most traces agree to the µs).
      RecordProperty(c.folder + "_span_diff_us", std::to_string(tb.span_ns / 1000.0 - span_us));
      // To the µs on every trace (the ns trace included: HTA's float64 rounding is reproduced).
      EXPECT_EQ(tb.span_ns / 1000.0, span_us);
      EXPECT_EQ(tb.idle_ns / 1000.0, idle_us);
      EXPECT_EQ(tb.compute_ns / 1000.0, compute_us);
      // Invariants of our exclusive breakdown.
      const analyze::ExclusiveBreakdown& ex = ours[rank].exclusive;
      EXPECT_EQ(ex.compute_ns + ex.exposed_communication_ns + ex.exposed_memory_ns + ex.other_ns +
                    ex.idle_ns,
                ex.span_ns);
      EXPECT_GE(ex.other_ns, 0);
      EXPECT_GE(ex.exposed_communication_ns, 0);
    }
    // comm_comp_overlap.csv: rank,comp_comm_overlap_pctg (empty when the rank has no communication)
    const auto overlap = ReadCsv(ref + "/comm_comp_overlap.csv");
    for (size_t i = 1; i < overlap.size(); ++i) {
      const int rank = std::stoi(overlap[i][0]);
      const double ours_ratio = ours[rank].comm_compute_overlap_ratio;
      if (overlap[i].size() < 2 || overlap[i][1].empty() || overlap[i][1] == "nan" ||
          overlap[i][1] == "NaN") {
        EXPECT_EQ(ours_ratio, -1.0) << "HTA: no communication on rank " << rank;
      } else {
        EXPECT_NEAR(100.0 * ours_ratio, std::stod(overlap[i][1]), 1.0) << "rank " << rank;
      }
    }
    // idle_time_breakdown.csv: rank,stream,idle_category,idle_time,idle_time_ratio
    const auto idle = ReadCsv(ref + "/idle_time_breakdown.csv");
    std::map<std::pair<int, int64_t>, std::map<std::string, double>> ref_idle;
    for (size_t i = 1; i < idle.size(); ++i) {
      ref_idle[{std::stoi(idle[i][0]), std::stoll(idle[i][1])}][idle[i][2]] = std::stod(idle[i][3]);
    }
    for (const auto& [stream_key, stream_cats] : ref_idle) {
      // Copies: clang 14 cannot capture structured bindings in lambdas.
      const std::pair<int, int64_t> key = stream_key;
      const std::map<std::string, double>& cats = stream_cats;
      SCOPED_TRACE("rank " + std::to_string(key.first) + " stream " + std::to_string(key.second));
      const auto& streams = ours[key.first].idle_by_stream;
      auto it = std::find_if(streams.begin(), streams.end(),
                             [&](const analyze::StreamIdle& s) { return s.stream == key.second; });
      ASSERT_NE(it, streams.end());
      auto ref_of = [&cats = cats](const char* category) {
        auto found = cats.find(category);
        return found == cats.end() ? 0.0 : found->second;
      };
      const double total_ref = ref_of("host_wait") + ref_of("kernel_wait") + ref_of("other");
      const double total =
          static_cast<double>(it->host_wait_ns + it->kernel_wait_ns + it->other_ns);
      if (total_ref <= 0) continue;
      EXPECT_NEAR(100.0 * it->host_wait_ns / total, 100.0 * ref_of("host_wait") / total_ref, 1.0);
      EXPECT_NEAR(100.0 * it->kernel_wait_ns / total, 100.0 * ref_of("kernel_wait") / total_ref,
                  1.0);
      EXPECT_NEAR(100.0 * it->other_ns / total, 100.0 * ref_of("other") / total_ref, 1.0);
      // Absolute host wait: equal on µs traces; on the ns trace (HTA rounds to µs) ties in the
      // rounded start times are ordered differently by pandas' unstable sort than by our file
      // order, which moves ~2 % of the stream's idle time between categories (ns_resolution: 1,926
      // vs 1,709 µs of 10,113 µs).
      EXPECT_NEAR(it->host_wait_ns / 1000.0, ref_of("host_wait"), std::max(2.0, total_ref * 0.03));

      // HTA's own gap arithmetic (from the previous row's end, negative gaps summed) reproduces its
      // numbers to the µs on every µs trace, overlapping events included.
      const auto& hta_streams = hta_gaps[key.first].idle_by_stream;
      auto h = std::find_if(hta_streams.begin(), hta_streams.end(),
                            [&](const analyze::StreamIdle& s) { return s.stream == key.second; });
      ASSERT_NE(h, hta_streams.end());
      if (!ns_trace) {
        EXPECT_EQ(h->host_wait_ns / 1000.0, ref_of("host_wait"));
        EXPECT_EQ(h->kernel_wait_ns / 1000.0, ref_of("kernel_wait"));
        EXPECT_EQ(h->other_ns / 1000.0, ref_of("other"));
      }
      // Ours (from the running maximum end) equals HTA's arithmetic on every stream without
      // overlapping events; where events overlap (30 on stream 7 of trace_diff_test_V100, one on
      // stream 27 of negative_queue_length) ours is HTA's total plus the overlapped time HTA
      // subtracted as negative gaps, and never negative.
      EXPECT_EQ(h->overlapping_events, it->overlapping_events);
      if (it->overlapping_events == 0) {
        EXPECT_EQ(it->host_wait_ns, h->host_wait_ns);
        EXPECT_EQ(it->kernel_wait_ns, h->kernel_wait_ns);
        EXPECT_EQ(it->other_ns, h->other_ns);
        EXPECT_EQ(it->gaps, h->gaps);
      } else {
        RecordProperty(c.folder + "_stream_" + std::to_string(key.second) + "_overlap_us",
                       std::to_string(it->overlap_ns / 1000.0));
        EXPECT_GE(it->host_wait_ns, 0);
        EXPECT_GE(it->kernel_wait_ns, 0);
        EXPECT_GE(it->other_ns, 0);
        EXPECT_GE(it->host_wait_ns + it->kernel_wait_ns + it->other_ns,
                  h->host_wait_ns + h->kernel_wait_ns + h->other_ns);
      }
    }
  }
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

}  // namespace
}  // namespace gpuscope
