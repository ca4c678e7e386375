// The NVML path against the fake libnvidia-ml.so (tests/fake_nvml): scripted values come back
// with their units converted, NOT_SUPPORTED skips a metric, a mid-run error disables only that
// metric, and `gpuscope run` records the values and uses them in its verdict.
#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/registry.h"
#include "monitor/nvml.h"
#include "monitor/recorder.h"
#include "monitor_test_util.h"

namespace gpuscope::monitor {
namespace {

using testing::ReadFile;
using testing::TempPath;
using testing::WriteFile;

constexpr const char* kScript = R"(# two GPUs; GPU 1 has no temperature sensor and loses power after 2 reads
gpus 2
name 0 NVIDIA A100-SXM4-80GB
util 0 43 20
memory 0 22000000000 80000000000
power 0 120500 400000
clock 0 1410
temperature 0 61
pcie 0 1000 2000
throttle 0 4
procmem 0 1073741824
name 1 NVIDIA A100-SXM4-80GB
util 1 97 5
memory 1 1000000000 80000000000
power 1 90000 400000
temperature 1 not_supported
fail 1 power 2 15
)";

class ScriptedNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ = TempPath("fake_nvml_" +
                       std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    WriteFile(script_, kScript);
    setenv("GPUSCOPE_FAKE_NVML_SCRIPT", script_.c_str(), 1);
  }
  void TearDown() override { unsetenv("GPUSCOPE_FAKE_NVML_SCRIPT"); }
  std::string script_;
};

TEST_F(ScriptedNvml, SamplesScriptedValuesWithUnits) {
  auto nvml = NvmlSampler::Open(GPUSCOPE_FAKE_NVML);
  ASSERT_TRUE(nvml.ok()) << nvml.status().message();
  NvmlSampler& s = **nvml;
  ASSERT_EQ(s.gpus().size(), 2u);
  EXPECT_EQ(s.gpus()[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(s.gpus()[0].mem_total_bytes.value_or(0), 80000000000ull);
  EXPECT_DOUBLE_EQ(s.gpus()[0].power_limit_w.value_or(0), 400.0);

  const auto gpus = s.Sample({});
  ASSERT_EQ(gpus.size(), 2u);
  const GpuSample& g = gpus[0];
  EXPECT_DOUBLE_EQ(g.sm_util_pct.value_or(-1), 43);
  EXPECT_DOUBLE_EQ(g.mem_util_pct.value_or(-1), 20);
  EXPECT_EQ(g.mem_used_bytes.value_or(0), 22000000000ull);
  EXPECT_DOUBLE_EQ(g.power_w.value_or(0), 120.5);  // mW → W
  EXPECT_DOUBLE_EQ(g.sm_clock_mhz.value_or(0), 1410);
  EXPECT_DOUBLE_EQ(g.temperature_c.value_or(0), 61);
  EXPECT_DOUBLE_EQ(g.pcie_rx_bytes_per_s.value_or(0), 1000 * 1024.0);  // KB/s → B/s
  EXPECT_DOUBLE_EQ(g.pcie_tx_bytes_per_s.value_or(0), 2000 * 1024.0);
  EXPECT_EQ(g.throttle_reasons.value_or(0), kThrottleSwPowerCap);
  // No process of the (empty) tree on the GPU: 0 bytes, but the metric exists.
  EXPECT_EQ(g.tree_mem_bytes.value_or(99), 0u);
  // GPU 1: temperature NOT_SUPPORTED → skipped without a note; clock not scripted → skipped.
  EXPECT_FALSE(gpus[1].temperature_c.has_value());
  EXPECT_FALSE(gpus[1].sm_clock_mhz.has_value());
  EXPECT_TRUE(s.TakeNotes().empty());
}

TEST_F(ScriptedNvml, MidRunErrorDisablesOnlyThatMetric) {
  auto nvml = NvmlSampler::Open(GPUSCOPE_FAKE_NVML);
  ASSERT_TRUE(nvml.ok());
  NvmlSampler& s = **nvml;
  EXPECT_TRUE(s.Sample({})[1].power_w.has_value());
  EXPECT_TRUE(s.Sample({})[1].power_w.has_value());
  const auto third = s.Sample({});  // the script fails power on GPU 1 from the 3rd call
  EXPECT_FALSE(third[1].power_w.has_value());
  EXPECT_TRUE(third[1].sm_util_pct.has_value());
  EXPECT_TRUE(third[0].power_w.has_value());
  const auto notes = s.TakeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("GPU 1 power"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("GPU is lost"), std::string::npos) << notes[0];
  EXPECT_FALSE(s.Sample({})[1].power_w.has_value());  // stays off, no second note
  EXPECT_TRUE(s.TakeNotes().empty());
}

TEST_F(ScriptedNvml, InitFailureMeansNoGpu) {
  WriteFile(script_, "init_fail 9\n");
  auto nvml = NvmlSampler::Open(GPUSCOPE_FAKE_NVML);
  ASSERT_FALSE(nvml.ok());
  EXPECT_NE(nvml.status().message().find("init failed"), std::string::npos);
}

TEST(Nvml, MissingLibraryIsAnErrorNotACrash) {
  auto nvml = NvmlSampler::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_NE(nvml.status().message().find("cannot load NVML"), std::string::npos);
}

TEST_F(ScriptedNvml, RunRecordsScriptedGpuValuesAndVerdictUsesThem) {
  const std::string record = TempPath("fake_run.jsonl");
  const std::string report = TempPath("fake_run_report.json");
  auto r = testing::RunGpuscopeArgs(
      {"run", "--interval", "50ms", "--record", record, "--report-json", report, "--", "sh", "-c",
       "sleep 1; exit 5"},
      {{"GPUSCOPE_NVML_LIBRARY", GPUSCOPE_FAKE_NVML}, {"GPUSCOPE_FAKE_NVML_SCRIPT", script_}});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  auto rec = ingest::ReadMonitorInput(record);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_GE(rec->samples.size(), 2u);
  ASSERT_EQ(rec->gpus.size(), 2u);
  EXPECT_EQ(rec->gpus[0].name, "NVIDIA A100-SXM4-80GB");
  const Sample& s = rec->samples.back();
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(s.gpus[0].sm_util_pct.value_or(-1), 43);
  EXPECT_EQ(s.gpus[0].mem_used_bytes.value_or(0), 22000000000ull);
  EXPECT_DOUBLE_EQ(s.gpus[0].power_w.value_or(0), 120.5);
  // The fake reports 1 GiB for each child of gpuscope: the watched command is one of them.
  EXPECT_EQ(s.gpus[0].tree_mem_bytes.value_or(0), 1073741824ull);
  EXPECT_FALSE(s.gpus[1].temperature_c.has_value());
  EXPECT_FALSE(s.gpus[1].power_w.has_value());  // failed after 2 reads
  EXPECT_EQ(rec->exit_code.value_or(-1), 5);
  ASSERT_FALSE(rec->notes.empty());
  EXPECT_NE(rec->notes[0].find("GPU 1 power"), std::string::npos);
  // The verdict carries the scripted values: 43 % and 97 % → 70 % mean; 22 of 80 GB.
  EXPECT_NE(r.err.find("util 43 %"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("memory peak 22.00 GB · of 80.00 GB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GPU 0 memory mostly unused"), std::string::npos) << r.err;
  const std::string json = ReadFile(report);
  EXPECT_DOUBLE_EQ(testing::JsonNumber(json, "util_mean_pct"), 43) << json;
  EXPECT_NE(json.find("\"memory_headroom_gpu_0\": {\n"), std::string::npos) << json;
  EXPECT_EQ(r.err.find("no GPU metrics"), std::string::npos) << r.err;
}

// Issue 12 item 7: `analyze` reads back every format `run --record` writes, with the verdict (and
// the whole report: GPUs, CPU split, notes, exit code) that `run` printed. Before, a .json record
// was read as a Kineto trace ("no GPU work") and a .csv one was "not a JSON trace".
TEST_F(ScriptedNvml, AllThreeRecordFormatsReadBackWithTheReportRunPrinted) {
  const std::string dir = TempPath("formats_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (const char* ext : {"jsonl", "csv", "json"}) {
    const std::string record = dir + "/run." + ext;
    // 1 busy thread and 2 idle workers for 1 s; GPU 1 loses its power reading (a note).
    auto run = testing::RunGpuscopeArgs(
        {"run", "--interval", "50ms", "--record", record, "--", GPUSCOPE_BURNER, "1", "2", "1"},
        {{"GPUSCOPE_NVML_LIBRARY", GPUSCOPE_FAKE_NVML}, {"GPUSCOPE_FAKE_NVML_SCRIPT", script_}});
    ASSERT_EQ(run.exit_code, 0) << ext << run.err;
    auto analyzed = testing::RunGpuscopeArgs({"analyze", record});
    EXPECT_EQ(analyzed.exit_code, 0) << ext << analyzed.err;
    // The report below its first line ("gpuscope monitor · run" / "· recording FILE"); on
    // stderr `run` printed its NVML note before it.
    auto body = [](const std::string& text) {
      const size_t from = text.find('\n', text.find("gpuscope monitor \xC2\xB7"));
      const size_t to = text.find("\nrecorded ");  // `run`'s last line, after the document
      if (from == std::string::npos) return text;
      return text.substr(from, to == std::string::npos ? to : to + 1 - from);
    };
    EXPECT_EQ(body(analyzed.out), body(run.err)) << ext;
    EXPECT_NE(analyzed.out.find("recording " + record), std::string::npos) << analyzed.out;
    EXPECT_NE(analyzed.out.find("verdict"), std::string::npos) << analyzed.out;
    EXPECT_NE(analyzed.out.find("GPU 1 power"), std::string::npos) << analyzed.out;
    EXPECT_NE(analyzed.out.find("workers 2"), std::string::npos) << analyzed.out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuscope::monitor
