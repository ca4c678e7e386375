// "What this capture can tell" (report/capture.h, docs/capture.md): each gap on a trace made to lack
// it, none of them on a trace that has everything, and the real captures' gaps.
#include <gtest/gtest.h>

#include <algorithm>

#include "analyze/trace_summary.h"
#include "gpuscope/ingest.h"
#include "report/capture.h"
#include "test_util.h"

namespace gpuscope::report {
namespace {

using testing::RealTrace;

std::vector<std::string> GapKeys(const std::string& json) {
  auto t = LoadTraceFromBytes(json, "made.json");
  EXPECT_TRUE(t.ok()) << t.status().message();
  std::vector<std::string> keys;
  if (!t.ok()) return keys;
  for (const CaptureGap& g : CaptureGaps(analyze::SummarizeTrace(*t))) {
    EXPECT_FALSE(g.effect.empty()) << g.key;
    EXPECT_FALSE(g.hint.empty()) << g.key;
    keys.push_back(g.key);
  }
  return keys;
}

// One step with a launch and its kernel, a memory event, a Python frame and the device.
std::string Complete(const std::string& drop = "") {
  std::string events[] = {
      R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":1000,"dur":1000})",
      R"({"ph":"X","cat":"python_function","name":"train.py(12): step","pid":1,"tid":1,"ts":1001,"dur":900})",
      R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1100,"dur":10,"args":{"correlation":1}})",
      R"({"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":1500,"dur":100,"args":{"device":0,"stream":7,"correlation":1}})",
      R"({"ph":"i","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":1200,"s":"t","args":{"Device Type":1,"Device Id":0,"Addr":1,"Bytes":512,"Total Allocated":512,"Total Reserved":2097152}})"};
  std::string json = R"({"deviceProperties":[{"id":0,"name":"NVIDIA A100-SXM4-80GB","totalGlobalMem":85899345920,"numSms":108}],"traceEvents":[)";
  bool first = true;
  for (const std::string& e : events) {
    if (!drop.empty() && e.find(drop) != std::string::npos) continue;
    json += (first ? "" : ",") + e;
    first = false;
  }
  return json + "]}";
}

TEST(Capture, ACompleteTraceHasNoGaps) { EXPECT_TRUE(GapKeys(Complete()).empty()); }

TEST(Capture, EachMissingKindOfEvidenceIsAGap) {
  EXPECT_EQ(GapKeys(Complete("[memory]")), std::vector<std::string>{"memory_events"});
  EXPECT_EQ(GapKeys(Complete("ProfilerStep")), std::vector<std::string>{"steps"});
  EXPECT_EQ(GapKeys(Complete("python_function")), std::vector<std::string>{"python_stacks"});
  EXPECT_EQ(GapKeys(Complete("cudaLaunchKernel")), std::vector<std::string>{"launch_links"});
  std::string no_device = Complete();
  no_device.replace(no_device.find("\"deviceProperties\""), no_device.find("\"traceEvents\"") -
                                                                no_device.find("\"deviceProperties\""), "");
  EXPECT_EQ(GapKeys(no_device), std::vector<std::string>{"device_properties"});
  // A bad event: skipped, counted, and said.
  std::string bad = Complete();
  bad.insert(bad.rfind(']'), R"(,{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":"later","dur":1})");
  const std::vector<std::string> keys = GapKeys(bad);
  EXPECT_NE(std::find(keys.begin(), keys.end(), "every_event_read"), keys.end());
}

// Repairs lose nothing: an identical duplicate removed, a control character replaced, a number
// sent as a string are listed in the diagnostics, but no capture is incomplete for them (the
// hint "let the profiler finish writing" fitted none; issue 36 item 6).
TEST(Capture, RepairsAreNotAnIncompleteCapture) {
  std::string repaired = Complete();
  repaired.insert(repaired.rfind(']'),
                  R"(,{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":1500,"dur":100,"args":{"device":0,"stream":7,"correlation":1}})"
                  R"(,{"ph":"X","cat":"cpu_op","name":"opx","pid":1,"tid":1,"ts":"1300","dur":5})");
  auto t = LoadTraceFromBytes(repaired, "made.json");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->diagnostics.count[static_cast<size_t>(Diag::kDuplicateGpuEvent)], 1u);
  EXPECT_EQ(t->diagnostics.count[static_cast<size_t>(Diag::kControlCharacter)], 1u);
  EXPECT_EQ(t->diagnostics.count[static_cast<size_t>(Diag::kNumberAsString)], 1u);
  EXPECT_EQ(t->diagnostics.lost(), 0u);
  EXPECT_TRUE(GapKeys(repaired).empty());
}

TEST(Capture, RealCaptures) {
  // The bundled example: everything but Python stacks.
  auto example = LoadTrace(std::string(GPUSCOPE_SOURCE_DIR) + "/examples/train_input_bound.pt.trace.json.gz");
  ASSERT_TRUE(example.ok()) << example.status().message();
  std::vector<std::string> keys;
  for (const CaptureGap& g : CaptureGaps(analyze::SummarizeTrace(*example))) keys.push_back(g.key);
  EXPECT_EQ(keys, std::vector<std::string>{"python_stacks"});
  // An Nsight Systems export: no allocator events, no ProfilerStep ranges, no stacks read, each
  // with the nsys option.
  GPUSCOPE_REQUIRE_REAL("traces/nsys/fuser_h200_ee4fcf3_report1.sqlite");
  auto nsys = LoadTrace(RealTrace("nsys/fuser_h200_ee4fcf3_report1.sqlite"));
  ASSERT_TRUE(nsys.ok()) << nsys.status().message();
  keys.clear();
  for (const CaptureGap& g : CaptureGaps(analyze::SummarizeTrace(*nsys))) {
    keys.push_back(g.key);
    if (g.key == "steps") {
      EXPECT_NE(g.hint.find("nsys profile --trace=cuda,nvtx"), std::string::npos);
    }
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"memory_events", "steps", "python_stacks"}));
}

}  // namespace
}  // namespace gpuscope::report
