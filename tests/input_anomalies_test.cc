// Regression tests for inputs that used to give silent wrong answers (issue 19, items 1, 2 and 5):
// overlapping or duplicated work on one stream (negative per-stream idle), duplicated ProfilerStep
// annotations (zero-length steps, "throughput +100 %"), and lone UTF-16 surrogate escapes in names
// (events dropped, then the profiler settings blamed). Each test writes a small trace to its own
// temporary folder (removed afterwards), runs the CLI and checks the corrected numbers, the
// diagnostics and the exit code; the analysis invariants are checked on the same inputs.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analyze/gpu_time.h"
#include "analyze/invariants.h"
#include "gpuscope/ingest.h"
#include "base/thread_pool.h"
#include "gpuscope/synth.h"
#include "model/dedup.h"
#include "model/merge.h"
#include "report/report.h"
#include "test_util.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

// A trace event as JSON text.
std::string Kernel(int64_t ts_us, int64_t dur_us, const std::string& name = "gemm_kernel",
                   int64_t correlation = -1, int stream = 7) {
  std::string args = "\"device\":0,\"stream\":" + std::to_string(stream);
  if (correlation >= 0) args += ",\"correlation\":" + std::to_string(correlation);
  return "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + name +
         "\",\"pid\":0,\"tid\":" + std::to_string(stream) + ",\"ts\":" + std::to_string(ts_us) +
         ",\"dur\":" + std::to_string(dur_us) + ",\"args\":{" + args + "}}";
}

std::string Launch(int64_t ts_us, int64_t correlation) {
  return "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
         "\"ts\":" +
         std::to_string(ts_us) +
         ",\"dur\":5,\"args\":{\"correlation\":" + std::to_string(correlation) + "}}";
}

std::string Step(int n, int64_t ts_us, int64_t dur_us) {
  return "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" + std::to_string(n) +
         "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(ts_us) +
         ",\"dur\":" + std::to_string(dur_us) + "}";
}

std::string TraceOf(const std::vector<std::string>& events) {
  std::string out = "{\"traceEvents\":[";
  for (size_t i = 0; i < events.size(); ++i) out += (i ? ",\n" : "\n") + events[i];
  return out + "\n]}\n";
}

// Five 1 ms steps, each launching one 900 µs kernel; `copies` writes every ProfilerStep that many
// times (identical events).
std::string FiveSteps(int copies) {
  std::vector<std::string> ev;
  for (int i = 0; i < 5; ++i) {
    const int64_t t0 = 1000 + i * 1000;
    for (int c = 0; c < copies; ++c) ev.push_back(Step(i, t0, 1000));
    ev.push_back(Launch(t0 + 10, i + 1));
    ev.push_back(Kernel(t0 + 20, 900, "gemm_kernel", i + 1));
  }
  return TraceOf(ev);
}

class InputAnomalies : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpuscope_anomalies_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    // RunGpuscope's capture folder.
    fs::remove_all(fs::temp_directory_path() / ("gpuscope_cli_" + std::to_string(getpid())));
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    testing::WriteFile(path, text);
    return path;
  }
  // `gpuscope analyze --json PATH`: exit code 0 and a parsed document.
  simdjson::dom::element AnalyzeJson(const std::string& path) {
    const testing::CommandResult r = testing::RunGpuscope("analyze --json " + path);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json_ = r.out;
    simdjson::dom::element doc;
    EXPECT_EQ(parser_.parse(json_).get(doc), simdjson::SUCCESS) << json_;
    // The first rank section of the document (docs/json-schema.md).
    for (auto [key, section] : doc["sections"].get_object()) return section;
    ADD_FAILURE() << "no rank section";
    return doc;
  }
  // A field of a rank section: sections.GROUP.items.ITEM.fields.FIELD.value.
  static simdjson::dom::element Field(simdjson::dom::element rank, const char* group, const char* item,
                                      const char* field) {
    return rank["sections"][group]["items"][item]["fields"][field]["value"];
  }
  static simdjson::dom::element StreamIdle(simdjson::dom::element rank, int64_t stream) {
    for (simdjson::dom::element s : rank["sections"]["gpu_time"]["items"]["idle_by_stream"]["rows"].get_array()) {
      if (int64_t(s["stream"]) == stream) return s;
    }
    ADD_FAILURE() << "no idle_attribution for stream " << stream;
    return rank;
  }
  static uint64_t DiagCount(simdjson::dom::element rank, const std::string& reason) {
    simdjson::dom::array rows;
    if (rank["sections"]["inputs"]["items"]["diagnostics"]["rows"].get(rows)) return 0;
    for (simdjson::dom::element d : rows) {
      if (std::string_view(d["reason"]) == reason) return uint64_t(d["count"]);
    }
    return 0;
  }
  static std::string Warnings(simdjson::dom::element rank) {
    std::string all;
    for (auto [key, item] : rank["sections"]["inputs"]["items"].get_object()) {
      std::string_view note;
      if (key.substr(0, 8) == "warning_" && !item["note"].get(note)) all += std::string(note) + "\n";
    }
    return all;
  }

  fs::path dir_;
  simdjson::dom::parser parser_;
  std::string json_;
};

// Two profiling windows that reuse step numbers (#0–#2 twice, 1 s apart) were read as 3 steps over
// 1 s with a 972 ms gap "in step 2"; all steps named #5 gave "1 step" beside "mean over 4 steps".
// Now: every range is a step, the windows are said, and the time between them is in no step
// (issue 36 item 4).
TEST_F(InputAnomalies, RepeatedStepNumbersAreWindowsNotOneLongStep) {
  std::vector<std::string> ev;
  for (int64_t base : {int64_t{0}, int64_t{1'000'000}})
    for (int n = 0; n < 3; ++n) {
      ev.push_back(Step(n, base + n * 10'000, 9'000));
      ev.push_back(Kernel(base + n * 10'000 + 200, 8'000));
    }
  const simdjson::dom::element rank = AnalyzeJson(Write("windows.json", TraceOf(ev)));
  EXPECT_NE(Warnings(rank).find("ProfilerStep numbers repeat: 6 ranges in 2 profiling windows (the "
                                "first #0–#2; the second starts 971.000 ms after it ends)"),
            std::string::npos)
      << Warnings(rank);
  EXPECT_EQ(std::string_view(Field(rank, "inputs", "steps", "range")),
            "6 ProfilerStep ranges, numbered #0–#2 (numbers repeat)");
  // The 972 ms between the windows is no idle gap of the steps.
  EXPECT_LT(int64_t(Field(rank, "idle_gaps", "idle_gaps", "idle_ns")), 20'000'000);

  std::vector<std::string> same;
  for (int n = 0; n < 5; ++n) {
    same.push_back(Step(5, n * 10'000, 9'000));
    same.push_back(Kernel(n * 10'000 + 200, 8'000));
  }
  const simdjson::dom::element one = AnalyzeJson(Write("same.json", TraceOf(same)));
  EXPECT_NE(Warnings(one).find("every one of the 5 ProfilerStep ranges is numbered #5"), std::string::npos)
      << Warnings(one);
  EXPECT_EQ(std::string_view(Field(one, "inputs", "steps", "range")),
            "5 ProfilerStep ranges, numbered #5 (numbers repeat)");
}

// Hopper's programmatic dependent launch starts a kernel a few µs before its predecessor on the
// stream ends, by design: on sm_90 such overlaps are counted apart and raise no "duplicated or
// mis-timed" warning; on sm_80, or overlapping by more than 5 µs, they still do (issue 32 item 3).
TEST_F(InputAnomalies, HopperEarlyStartsAreNotDuplicates) {
  auto trace_for = [&](int major, int64_t early_us) {
    std::vector<std::string> ev = {Kernel(1000, 100), Kernel(1100 - early_us, 100), Kernel(1300, 100)};
    std::string json = TraceOf(ev);
    json.insert(1, "\"deviceProperties\": [{\"id\": 0, \"name\": \"GPU\", \"computeMajor\": " +
                       std::to_string(major) + ", \"computeMinor\": 0, \"numSms\": 132}],");
    return json;
  };
  const simdjson::dom::element h200 = AnalyzeJson(Write("h200.json", trace_for(9, 2)));
  const simdjson::dom::element s = StreamIdle(h200, 7);
  EXPECT_EQ(uint64_t(s["pdl_overlaps"]), 1u);
  EXPECT_EQ(int64_t(s["pdl_overlap_ns"]), 2'000);
  EXPECT_EQ(uint64_t(s["overlapping_events"]), 0u);
  EXPECT_EQ(Warnings(h200).find("duplicated or mis-timed"), std::string::npos) << Warnings(h200);
  const simdjson::dom::element a100 = AnalyzeJson(Write("a100.json", trace_for(8, 2)));
  EXPECT_EQ(uint64_t(StreamIdle(a100, 7)["overlapping_events"]), 1u);
  EXPECT_NE(Warnings(a100).find("duplicated or mis-timed"), std::string::npos);
  const simdjson::dom::element far = AnalyzeJson(Write("far.json", trace_for(9, 50)));
  EXPECT_EQ(uint64_t(StreamIdle(far, 7)["overlapping_events"]), 1u);
  EXPECT_EQ(uint64_t(StreamIdle(far, 7)["pdl_overlaps"]), 0u);
}

// Every duration 0 ("step time 0 ns" with no word of why): a warning says no time can be measured
// (issue 36 item 6).
TEST_F(InputAnomalies, AllZeroDurationsAreSaid) {
  const std::string path = Write("zero.json", TraceOf({Step(1, 1000, 0), Kernel(1000, 0), Step(2, 2000, 0),
                                                       Kernel(2000, 0, "gemm_kernel", -1, 7)}));
  const simdjson::dom::element rank = AnalyzeJson(path);
  EXPECT_NE(Warnings(rank).find("every one of the 4 events has a duration of 0"), std::string::npos)
      << Warnings(rank);
  const std::string ok = Write("nonzero.json", TraceOf({Step(1, 1000, 5), Kernel(1000, 0)}));
  EXPECT_EQ(Warnings(AnalyzeJson(ok)).find("duration of 0"), std::string::npos);
}

// Issue 19 item 1: a kernel written 1,000 times at the same ts (identical events) gave "stream 7:
// −499.500 ms idle". The copies are removed at import and counted; the stream's idle is the one
// real 500 µs gap.
TEST_F(InputAnomalies, IdenticalRepeatedKernelIsRemovedAndIdleIsTheRealGap) {
  std::vector<std::string> ev(1000, Kernel(1000, 500));
  ev.push_back(Kernel(2000, 500));
  const std::string path = Write("repeated.json", TraceOf(ev));
  const simdjson::dom::element rank = AnalyzeJson(path);
  EXPECT_EQ(DiagCount(rank, "duplicate_gpu_event"), 999u);
  EXPECT_EQ(uint64_t(Field(rank, "inputs", "gpu_events", "kernels")), 2u);
  const simdjson::dom::element s = StreamIdle(rank, 7);
  EXPECT_EQ(int64_t(s["host_wait_ns"]) + int64_t(s["kernel_wait_ns"]) + int64_t(s["other_ns"]),
            500'000);
  EXPECT_EQ(uint64_t(s["overlapping_events"]), 0u);

  const testing::CommandResult text = testing::RunGpuscope("analyze " + path);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("500.000 µs"), std::string::npos) << text.out;  // stream 7's idle
  EXPECT_NE(text.out.find("identical duplicate GPU events removed"), std::string::npos)
      << text.out;
  EXPECT_EQ(DiagCount(rank, "duplicate_gpu_event"), 999u);
  EXPECT_EQ(text.out.find("-499"), std::string::npos) << text.out;
}

// The same kernel 1,000 times at one ts but with distinct correlation ids (not identical, so
// kept): each copy overlaps the first, is counted, and adds no gap; idle stays the 500 µs gap.
TEST_F(InputAnomalies, OverlappingCopiesOnOneStreamAreCountedNotNegativeIdle) {
  std::vector<std::string> ev;
  for (int i = 0; i < 1000; ++i) ev.push_back(Kernel(1000, 500, "gemm_kernel", i + 1));
  ev.push_back(Kernel(2000, 500, "gemm_kernel", 5000));
  const simdjson::dom::element rank = AnalyzeJson(Write("copies.json", TraceOf(ev)));
  EXPECT_EQ(DiagCount(rank, "duplicate_gpu_event"), 0u);
  const simdjson::dom::element s = StreamIdle(rank, 7);
  EXPECT_EQ(int64_t(s["host_wait_ns"]), 0);
  EXPECT_EQ(int64_t(s["kernel_wait_ns"]), 0);
  EXPECT_EQ(int64_t(s["other_ns"]), 500'000);
  EXPECT_EQ(uint64_t(s["gaps"]), 1u);
  EXPECT_EQ(uint64_t(s["overlapping_events"]), 999u);
  EXPECT_EQ(int64_t(s["overlap_ns"]), 999 * int64_t{500'000});
  EXPECT_NE(Warnings(rank).find("999 GPU events start before earlier work on their stream ended "
                                "(stream 7; 499.500 ms overlapped)"),
            std::string::npos)
      << Warnings(rank);
  // All-stream idle agrees: span 1.5 ms − busy 1 ms.
  EXPECT_EQ(int64_t(Field(rank, "gpu_time", "temporal", "idle_ns")), 500'000);
}

// Issue 19 item 1, second shape: 5 ms kernels launched 1 ms apart on one stream. The stream is
// never idle between the first start and the last end; 9 events overlap 4 ms each.
TEST_F(InputAnomalies, KernelsLongerThanTheirSpacingLeaveNoStreamIdle) {
  std::vector<std::string> ev;
  for (int i = 0; i < 10; ++i) ev.push_back(Kernel(1000 + i * 1000, 5000, "gemm_kernel", i + 1));
  const std::string path = Write("overlap.json", TraceOf(ev));
  const simdjson::dom::element rank = AnalyzeJson(path);
  const simdjson::dom::element s = StreamIdle(rank, 7);
  EXPECT_EQ(int64_t(s["host_wait_ns"]) + int64_t(s["kernel_wait_ns"]) + int64_t(s["other_ns"]), 0);
  EXPECT_EQ(uint64_t(s["overlapping_events"]), 9u);
  EXPECT_EQ(int64_t(s["overlap_ns"]), 9 * int64_t{4'000'000});
  EXPECT_EQ(int64_t(Field(rank, "gpu_time", "temporal", "idle_ns")), 0);
  const testing::CommandResult text = testing::RunGpuscope("analyze " + path);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_EQ(text.out.find("-36.000 ms"), std::string::npos) << text.out;  // the old answer
  EXPECT_NE(text.out.find("9 GPU events start before earlier work"), std::string::npos) << text.out;
}

// HTA's arithmetic (previous row's end, negative gaps summed) is kept for cross-checks: on the
// same input it gives the old negative number, which the default no longer does.
TEST_F(InputAnomalies, HtaGapArithmeticIsNegativeOnOverlapDefaultIsNot) {
  std::vector<std::string> ev;
  for (int i = 0; i < 10; ++i) ev.push_back(Kernel(1000 + i * 1000, 5000, "gemm_kernel", i + 1));
  auto trace = LoadTraceFromBytes(TraceOf(ev), "overlap.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const analyze::GpuTime ours = analyze::AnalyzeGpuTime(*trace);
  const analyze::GpuTime hta = analyze::AnalyzeGpuTime(
      *trace, {}, analyze::kConsecutiveKernelDelayNs, analyze::StreamGapFrom::kHtaPreviousEnd);
  ASSERT_EQ(ours.idle_by_stream.size(), 1u);
  ASSERT_EQ(hta.idle_by_stream.size(), 1u);
  EXPECT_EQ(ours.idle_by_stream[0].kernel_wait_ns, 0);
  EXPECT_EQ(hta.idle_by_stream[0].kernel_wait_ns, -36'000'000);  // 9 gaps of −4 ms
  EXPECT_TRUE(analyze::CheckInvariants({.gpu_time = &ours}).empty());
  // The checker does catch the negative number.
  const std::vector<std::string> v = analyze::CheckInvariants({.gpu_time = &hta});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], "gpu_time.idle_by_stream[7].kernel_wait_ns = -36000000 < 0");
}

// Issue 19 item 2: every ProfilerStep written twice made zero-length steps (mean 1 ms → 500 µs)
// and `diff` against the original claimed "throughput +100 %". The copies are removed and counted.
TEST_F(InputAnomalies, DuplicatedProfilerStepsAreRemovedAndStepTimeIsUnchanged) {
  const std::string once = Write("once.json", FiveSteps(1));
  const std::string twice = Write("twice.json", FiveSteps(2));
  const simdjson::dom::element rank = AnalyzeJson(twice);
  EXPECT_EQ(DiagCount(rank, "duplicate_cpu_event"), 5u);
  EXPECT_EQ(int64_t(Field(rank, "steps", "step_time", "mean_step_ns")), 1'000'000);
  EXPECT_EQ(uint64_t(Field(rank, "steps", "step_time", "steady_steps")), 4u);
  EXPECT_EQ(rank["sections"]["steps"]["items"]["per_step"]["rows"].get_array().size(), 5u);

  const testing::CommandResult text = testing::RunGpuscope("analyze " + twice);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("step time   1.000 ms · mean over 4 steady-state steps"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("identical duplicate CPU events removed"), std::string::npos)
      << text.out;

  const testing::CommandResult d = testing::RunGpuscope("diff --json " + once + " " + twice);
  EXPECT_EQ(d.exit_code, 0) << d.err;
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(d.out).get(doc), simdjson::SUCCESS) << d.out;
  simdjson::dom::element pair = doc["sections"]["pair_0"]["items"];
  EXPECT_EQ(double(pair["step_time"]["fields"]["median_change_share"]["value"]), 0.0);
  EXPECT_EQ(double(pair["throughput"]["fields"]["before_steps_per_s"]["value"]), 1000.0);
  EXPECT_EQ(double(pair["throughput"]["fields"]["after_steps_per_s"]["value"]), 1000.0);
  const testing::CommandResult dt = testing::RunGpuscope("diff " + once + " " + twice);
  EXPECT_EQ(dt.exit_code, 0);
  EXPECT_NE(dt.out.find("throughput  1000.00/s → 1000.00/s · ±0.0 %"), std::string::npos)
      << dt.out;
}

// Overlapping ProfilerStep ranges that are not identical (here #2 starts 400 µs before #1 ends)
// are kept, counted and warned about in the text and the JSON.
TEST_F(InputAnomalies, OverlappingProfilerStepsAreDiagnosed) {
  std::vector<std::string> ev;
  for (int i = 0; i < 4; ++i) {
    const int64_t t0 = 1000 + i * 1000;
    ev.push_back(Step(i, i == 2 ? t0 - 400 : t0, 1000));
    ev.push_back(Launch(t0 + 10, i + 1));
    ev.push_back(Kernel(t0 + 20, 500, "gemm_kernel", i + 1));
  }
  const std::string path = Write("overlapping_steps.json", TraceOf(ev));
  const simdjson::dom::element rank = AnalyzeJson(path);
  EXPECT_EQ(DiagCount(rank, "duplicate_cpu_event"), 0u);
  const std::string expected =
      "1 ProfilerStep ranges overlap an earlier one (first: ProfilerStep#2 starts inside "
      "ProfilerStep#1)";
  EXPECT_NE(Warnings(rank).find(expected), std::string::npos) << Warnings(rank);
  const testing::CommandResult text = testing::RunGpuscope("analyze " + path);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("warning     1 ProfilerStep ranges overlap an earlier one"),
            std::string::npos)
      << text.out;
}

// Issue 19 item 5: a lone surrogate escape in a kernel name made simdjson reject the event; the
// kernel was dropped and the report said the trace was recorded without CUDA activities. It is
// now replaced by U+FFFD, counted, and the kernel kept; a valid surrogate pair is left alone.
TEST_F(InputAnomalies, LoneSurrogateEscapeIsReplacedAndTheEventKept) {
  const std::string path =
      Write("surrogate.json",
            TraceOf({Kernel(1000, 10, "bad\\ud800name", 1), Kernel(2000, 10, "low\\udc00only", 2),
                     Kernel(3000, 10, "pair\\ud83d\\ude00ok", 3)}));
  const simdjson::dom::element rank = AnalyzeJson(path);
  EXPECT_EQ(uint64_t(Field(rank, "inputs", "gpu_events", "kernels")), 3u);
  EXPECT_EQ(DiagCount(rank, "lone_surrogate"), 2u);
  EXPECT_EQ(DiagCount(rank, "malformed_event"), 0u);
  EXPECT_EQ(Warnings(rank).find("recorded without CUDA activities"), std::string::npos);
  // Names as read: U+FFFD for the lone halves, the pair decoded (U+1F600).
  EXPECT_NE(json_.find("bad\xEF\xBF\xBDname"), std::string::npos);
  EXPECT_NE(json_.find("low\xEF\xBF\xBDonly"), std::string::npos);
  EXPECT_NE(json_.find("pair\xF0\x9F\x98\x80ok"), std::string::npos);
  const testing::CommandResult text = testing::RunGpuscope("analyze " + path);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("lone surrogate escape"), std::string::npos) << text.out;
  EXPECT_EQ(DiagCount(rank, "lone_surrogate"), 2u);
}

// When the only GPU events were skipped as malformed, the warning points at the diagnostics, not
// at the profiler settings.
TEST_F(InputAnomalies, SkippedEventsAreNotBlamedOnTheProfilerSettings) {
  const std::string path =
      Write("skipped.json", TraceOf({"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,"
                                     "\"dur\":\"x\"y}",
                                     Step(0, 0, 10)}));
  const simdjson::dom::element rank = AnalyzeJson(path);
  EXPECT_EQ(DiagCount(rank, "malformed_event"), 1u);
  const std::string w = Warnings(rank);
  EXPECT_NE(w.find("no GPU events were read, and 1 events were skipped (see diagnostics)"),
            std::string::npos)
      << w;
  EXPECT_EQ(w.find("recorded without CUDA activities"), std::string::npos) << w;
}

// Duplicate removal keeps the first row of each group, in order, and the collective metadata of
// the kernels it keeps (re-indexed).
TEST_F(InputAnomalies, DuplicateRemovalKeepsOrderAndCollectiveMetadata) {
  const std::string nccl =
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\","
      "\"pid\":0,\"tid\":20,\"ts\":3000,\"dur\":100,\"args\":{\"device\":0,\"stream\":20,"
      "\"correlation\":9,\"Collective name\":\"allreduce\",\"In msg nelems\":1024,"
      "\"Out msg nelems\":1024,\"Group size\":8,\"dtype\":\"Float\"}}";
  auto trace = LoadTraceFromBytes(
      TraceOf({Kernel(1000, 10, "a", 1), Kernel(2000, 10, "b", 2), Kernel(1000, 10, "a", 1), nccl,
               nccl, Kernel(2000, 10, "b", 2), Kernel(2000, 10, "b", 3)}),
      "dups.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->diagnostics.count[static_cast<size_t>(Diag::kDuplicateGpuEvent)], 3u);
  ASSERT_EQ(trace->gpu.size(), 4u);
  EXPECT_EQ(trace->Str(trace->gpu.name[0]), "a");
  EXPECT_EQ(trace->Str(trace->gpu.name[1]), "b");
  EXPECT_EQ(trace->Str(trace->gpu.name[2]), "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(trace->gpu.correlation[3], 3);  // same name and time, other correlation: kept
  ASSERT_EQ(trace->collectives.size(), 1u);
  EXPECT_EQ(trace->collectives[0].gpu_index, 2u);
  EXPECT_EQ(trace->collectives[0].group_size, 8);
  // Idempotent: nothing left to remove.
  const model::DuplicateCounts again = model::RemoveDuplicateEvents(&*trace);
  EXPECT_EQ(again.gpu + again.runtime + again.cpu, 0u);
}

// The three tables are deduplicated as parallel tasks when a pool is given; the result must be
// the serial one. A synthetic trace appended to itself (every GPU, runtime and CPU row twice)
// loses exactly the appended copy; the trace alone loses nothing, though about one row in eight
// shares a slot of the dedup's filter with another and goes through its exact comparison.
TEST_F(InputAnomalies, DuplicateRemovalOnAPoolEqualsTheSerialPass) {
  SynthOptions o;
  o.steps = 3;
  o.layers = 2;
  const std::string path = Write("self.json", "");
  ASSERT_TRUE(WriteSynthTrace(o, 0, path).ok());
  auto doubled = [&] {
    Trace t = std::move(LoadTrace(path).value());
    model::AppendTrace(&t, std::move(LoadTrace(path).value()));
    return t;
  };
  Trace serial = doubled(), pooled = doubled();
  const Trace once = std::move(LoadTrace(path).value());
  ASSERT_GT(once.gpu.size(), 64u);
  ThreadPool pool(2);
  const model::DuplicateCounts a = model::RemoveDuplicateEvents(&serial);
  const model::DuplicateCounts b = model::RemoveDuplicateEvents(&pooled, &pool);
  EXPECT_EQ(a.gpu, once.gpu.size());
  EXPECT_EQ(a.runtime, once.runtime.size());
  EXPECT_EQ(a.cpu, once.cpu.size());
  EXPECT_EQ(b.gpu, a.gpu);
  EXPECT_EQ(b.runtime, a.runtime);
  EXPECT_EQ(b.cpu, a.cpu);
  EXPECT_EQ(pooled.gpu.start_ns, once.gpu.start_ns);
  EXPECT_EQ(pooled.gpu.correlation, once.gpu.correlation);
  EXPECT_EQ(pooled.runtime.correlation, once.runtime.correlation);
  EXPECT_EQ(pooled.cpu.start_ns, once.cpu.start_ns);
  EXPECT_EQ(serial.cpu.external_id, pooled.cpu.external_id);
  EXPECT_EQ(pooled.collectives.size(), once.collectives.size());
  Trace alone = std::move(LoadTrace(path).value());
  const model::DuplicateCounts none = model::RemoveDuplicateEvents(&alone, &pool);
  EXPECT_EQ(none.gpu + none.runtime + none.cpu, 0u);
  EXPECT_EQ(alone.cpu.start_ns, once.cpu.start_ns);
}

// Found by the fuzz target's invariant checks: a ProfilerStep wholly after every GPU op made the
// idle-gap range negative (range_end_ns < range_start_ns). The range is now empty.
TEST_F(InputAnomalies, StepOutsideTheGpuOpsGivesAnEmptyIdleGapRange) {
  const simdjson::dom::element rank = AnalyzeJson(Write(
      "late_step.json", TraceOf({Kernel(1000, 10), Kernel(1100, 10), Step(0, 900'000, 1000)})));
  EXPECT_EQ(int64_t(Field(rank, "idle_gaps", "idle_gaps", "range_start_ns")), 900'000'000);
  EXPECT_EQ(int64_t(Field(rank, "idle_gaps", "idle_gaps", "range_end_ns")), 900'000'000);
  EXPECT_EQ(int64_t(Field(rank, "idle_gaps", "idle_gaps", "idle_ns")), 0);
  EXPECT_EQ(uint64_t(Field(rank, "idle_gaps", "idle_gaps", "gaps")), 0u);
}

// The invariants the fuzz target enforces hold on every adversarial input above (and on every
// real trace: tests/invariants_corpus_test.cc).
TEST_F(InputAnomalies, InvariantsHoldOnTheAdversarialInputs) {
  std::vector<std::string> repeated(1000, Kernel(1000, 500));
  std::vector<std::string> overlap;
  for (int i = 0; i < 10; ++i) overlap.push_back(Kernel(1000 + i * 1000, 5000, "k", i + 1));
  for (const std::string& text :
       {TraceOf(repeated), TraceOf(overlap), FiveSteps(2), FiveSteps(3)}) {
    auto trace = LoadTraceFromBytes(text, "adversarial.json");
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    std::vector<Trace> traces;
    traces.push_back(std::move(*trace));
    const report::Report rep = report::BuildReport(traces, {}, 1);
    for (const report::RankReport& r : rep.ranks) {
      const std::vector<std::string> v = analyze::CheckInvariants(analyze::ViewOf(r));
      EXPECT_TRUE(v.empty()) << v.front();
    }
  }
}

}  // namespace
}  // namespace gpuscope
