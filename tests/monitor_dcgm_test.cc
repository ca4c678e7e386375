// Monitor logs beyond the headed nvidia-smi CSV — headerless nvidia-smi CSV (with and without
// units), nvidia-smi dmon of several GPUs, dcgmi dmon, dcgm-exporter text — and the verdicts they
// feed: GPU imbalance, periodic stalls, energy per hour. The logs are made here, each in the shape
// the tool prints (docs/monitor.md shows the same).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "advise/monitor_rules.h"
#include "analyze/monitor_stats.h"
#include "ingest/dcgm/dcgm.h"
#include "ingest/nvidia_smi/nvidia_smi.h"
#include "ingest/registry.h"
#include "render/text.h"
#include "report/monitor_document.h"
#include "test_util.h"

namespace gpuscope::monitor {
namespace {

using advise::MonitorFinding;
using testing::RunGpuscope;
using testing::TempPath;
using testing::WriteFile;

constexpr int64_t kSecond = 1'000'000'000;

Recording Parse(const std::string& text, std::string_view fields = {}) {
  auto r = ingest::ParseNvidiaSmiLog(text, "log.csv", fields);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Recording();
}

Recording ParseDcgm(const std::string& text) {
  auto r = ingest::ParseDcgmLog(text, "dcgm.log");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Recording();
}

struct Judged {
  analyze::MonitorStats stats;
  advise::MonitorAdvice advice;
};
Judged Judge(const Recording& r) {
  Judged j{analyze::ComputeMonitorStats(r), {}};
  j.advice = advise::AdviseMonitor(j.stats);
  return j;
}
const MonitorFinding* Find(const Judged& j, const std::string& id) {
  for (const MonitorFinding& f : j.advice.findings)
    if (f.id == id) return &f;
  return nullptr;
}
const render::Value* Evidence(const MonitorFinding& f, const std::string& key) {
  for (const render::Field& e : f.evidence)
    if (e.key == key) return &e.value;
  return nullptr;
}

std::string Clock(int t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "2024/01/15 10:%02d:%02d.000", 23 + t / 60, t % 60);
  return buf;
}

// `nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,memory.used,memory.total,
// power.draw,power.limit --format=csv -l 1` of 2 GPUs for 60 s: GPU 0 at 98 %, GPU 1 at 40 %.
// `units` false: --format=csv,nounits; `header` false: --format=csv,noheader.
std::string ImbalancedLog(bool header, bool units) {
  std::string out;
  if (header)
    out =
        "timestamp, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
        "power.draw [W], power.limit [W]\n";
  const char* pct = units ? " %" : "";
  const char* mib = units ? " MiB" : "";
  const char* w = units ? " W" : "";
  for (int t = 0; t < 60; ++t)
    for (int gpu = 0; gpu < 2; ++gpu)
      out += Clock(t) + ", " + std::to_string(gpu) + ", NVIDIA A100-SXM4-80GB, " +
             (gpu == 0 ? "98" : "40") + pct + ", " + (gpu == 0 ? "30000" : "21000") + mib +
             ", 81920" + mib + ", " + (gpu == 0 ? "300.50" : "150.25") + w + ", 400.00" + w + "\n";
  return out;
}

constexpr const char* kFields =
    "timestamp,index,name,utilization.gpu,memory.used,memory.total,power.draw,power.limit";

void ExpectSameSamples(const Recording& a, const Recording& b) {
  ASSERT_EQ(a.samples.size(), b.samples.size());
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    EXPECT_EQ(a.gpus[i].name, b.gpus[i].name);
    EXPECT_EQ(a.gpus[i].mem_total_bytes, b.gpus[i].mem_total_bytes);
    EXPECT_EQ(a.gpus[i].power_limit_w, b.gpus[i].power_limit_w);
  }
  for (size_t i = 0; i < a.samples.size(); ++i) {
    const Sample& x = a.samples[i];
    const Sample& y = b.samples[i];
    EXPECT_EQ(x.time_ns, y.time_ns);
    ASSERT_EQ(x.gpus.size(), y.gpus.size());
    for (size_t g = 0; g < x.gpus.size(); ++g) {
      EXPECT_EQ(x.gpus[g].index, y.gpus[g].index);
      EXPECT_EQ(x.gpus[g].sm_util_pct, y.gpus[g].sm_util_pct);
      EXPECT_EQ(x.gpus[g].mem_used_bytes, y.gpus[g].mem_used_bytes);
      EXPECT_EQ(x.gpus[g].mem_total_bytes, y.gpus[g].mem_total_bytes);
      EXPECT_EQ(x.gpus[g].power_w, y.gpus[g].power_w);
      EXPECT_EQ(x.gpus[g].power_limit_w, y.gpus[g].power_limit_w);
    }
  }
}

// --- Headerless nvidia-smi CSV -----------------------------------------------------------------

TEST(NvidiaSmiNoHeader, WithUnitsParsesToTheSamplesOfTheHeadedLog) {
  const Recording headed = Parse(ImbalancedLog(true, true));
  ASSERT_EQ(headed.samples.size(), 60u);
  EXPECT_EQ(ingest::DetectNvidiaSmiLog(ImbalancedLog(false, true)),
            ingest::NvidiaSmiFormat::kCsvNoHeader);
  const Recording bare = Parse(ImbalancedLog(false, true));
  ExpectSameSamples(headed, bare);
  EXPECT_EQ(bare.malformed_lines, 0u);
  // The note says which column was taken for what: here every one recognised.
  ASSERT_EQ(bare.notes.size(), 1u);
  EXPECT_NE(bare.notes[0].find("1 timestamp, 2 index, 3 name, 4 utilization.gpu, 5 memory.used, "
                               "6 memory.total, 7 power.draw, 8 power.limit"),
            std::string::npos)
      << bare.notes[0];
  // The values: used 30000 MiB (the smaller MiB column), total 81920 MiB, draw 300.5 W.
  const GpuSample& g = bare.samples[0].gpus[0];
  EXPECT_EQ(g.mem_used_bytes.value_or(0), 30000ull << 20);
  EXPECT_EQ(g.mem_total_bytes.value_or(0), 81920ull << 20);
  EXPECT_DOUBLE_EQ(g.power_w.value_or(0), 300.5);
  EXPECT_DOUBLE_EQ(g.power_limit_w.value_or(0), 400);
}

// A bare integer is the index only when its values are a GPU's index: nvidia-smi prints the
// temperature without a unit too. The H200 lab's own query (timestamp, name, pci.bus_id, …,
// temperature.gpu, clocks.sm; no index) with --format=csv,noheader was read as 22 GPUs numbered
// by their temperature, 37 to 58 °C.
TEST(NvidiaSmiNoHeader, TemperatureIsNotTakenForTheIndex) {
  GPUSCOPE_REQUIRE_REAL("traces/gpu_lab_h200/smi_record.csv");
  const std::string headed = testing::ReadFile(testing::RealTrace("gpu_lab_h200/smi_record.csv"));
  const Recording with_header = Parse(headed);
  const Recording bare = Parse(headed.substr(headed.find('\n') + 1));
  ASSERT_EQ(with_header.gpus.size(), 1u);
  ASSERT_EQ(bare.gpus.size(), 1u);
  ASSERT_EQ(bare.samples.size(), with_header.samples.size());
  for (size_t i = 0; i < bare.samples.size(); ++i) {
    ASSERT_EQ(bare.samples[i].gpus.size(), 1u);
    EXPECT_EQ(bare.samples[i].gpus[0].index, 0);
    EXPECT_EQ(bare.samples[i].gpus[0].temperature_c, with_header.samples[i].gpus[0].temperature_c);
    EXPECT_EQ(bare.samples[i].gpus[0].sm_util_pct, with_header.samples[i].gpus[0].sm_util_pct);
  }
  ASSERT_FALSE(bare.notes.empty());
  EXPECT_NE(bare.notes[0].find("3 pci.bus_id"), std::string::npos) << bare.notes[0];
  EXPECT_NE(bare.notes[0].find("9 temperature.gpu"), std::string::npos) << bare.notes[0];
  EXPECT_EQ(bare.notes[0].find("index"), std::string::npos) << bare.notes[0];
}

// Two GPUs told apart by their bus ids, with index and temperature: the column constant per bus
// id and below 16 is the index wherever it stands; without bus ids, the column below 16 is.
TEST(NvidiaSmiNoHeader, IndexIsTheColumnConstantPerGpu) {
  std::string log, no_bus;
  for (int t = 0; t < 4; ++t)
    for (int gpu = 0; gpu < 2; ++gpu) {
      const std::string temp = std::to_string(40 + t + 5 * gpu), index = std::to_string(gpu);
      log += Clock(t) + ", " + temp + ", 00000000:0" + std::to_string(7 + gpu) + ":00.0, " + index +
             ", 90 %, 20000 MiB\n";
      no_bus += Clock(t) + ", " + temp + ", " + index + ", 90 %, 20000 MiB\n";
    }
  for (const std::string* text : {&log, &no_bus}) {
    const Recording r = Parse(*text);
    ASSERT_EQ(r.samples.size(), 4u);
    ASSERT_EQ(r.samples[3].gpus.size(), 2u);
    EXPECT_EQ(r.samples[3].gpus[1].index, 1);
    EXPECT_EQ(r.samples[3].gpus[1].temperature_c, 48.0);
    ASSERT_FALSE(r.notes.empty());
    EXPECT_NE(r.notes[0].find("2 temperature.gpu"), std::string::npos) << r.notes[0];
  }
}

TEST(NvidiaSmiNoHeader, WithoutUnitsNeedsTheFieldListAndThenMatchesTheHeadedLog) {
  const std::string nounits = ImbalancedLog(false, false);
  auto refused = ingest::ParseNvidiaSmiLog(nounits, "bare.csv");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--format=csv,noheader,nounits"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("--smi-fields"), std::string::npos);
  const Recording headed = Parse(ImbalancedLog(true, true));
  const Recording with_fields = Parse(nounits, kFields);
  ExpectSameSamples(headed, with_fields);
  // The field list also reads the headerless log with units.
  ExpectSameSamples(headed, Parse(ImbalancedLog(false, true), kFields));
}

TEST(NvidiaSmiNoHeader, ColumnCountChangingMidFileIsCountedWithItsLineNumber) {
  // Rows 1–4 have 4 fields; line 5 on have 3 (the query changed when a new -l run was appended
  // without a header): each such line is counted and skipped, the first ones named.
  std::string log;
  for (int t = 0; t < 4; ++t) log += Clock(t) + ", 0, 90 %, 20000 MiB\n";
  for (int t = 4; t < 7; ++t) log += Clock(t) + ", 0, 90 %\n";
  const Recording r = Parse(log);
  EXPECT_EQ(r.samples.size(), 4u);
  EXPECT_EQ(r.malformed_lines, 3u);
  ASSERT_FALSE(r.malformed_examples.empty());
  EXPECT_EQ(r.malformed_examples[0], "log.csv:5: expected 4 fields, found 3");
  // From the command line: the report says so and the exit code is 2 (the project's rule for
  // skipped input).
  const std::string path = TempPath("changing.csv");
  WriteFile(path, log);
  const auto cli = RunGpuscope("analyze " + path);
  EXPECT_EQ(cli.exit_code, 2) << cli.err;
  EXPECT_NE(cli.out.find("malformed lines 3"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("changing.csv:5: expected 4 fields, found 3"), std::string::npos)
      << cli.out;
}

TEST(NvidiaSmiNoHeader, ALastLineCutMidWayIsNotedNotCounted) {
  // A few rows with [N/A] power, so the columns are still being recognised when the log ends in
  // a line cut after its memory value (nvidia-smi -l killed mid-write).
  std::string log;
  for (int t = 0; t < 3; ++t) log += Clock(t) + ", 0, 90 %, 20000 MiB, [N/A]\n";
  log += Clock(3) + ", 0, 90 %, 200";
  const Recording r = Parse(log);
  EXPECT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.malformed_lines, 0u);
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[1].find("its last line (4) is incomplete"), std::string::npos) << r.notes[1];
  EXPECT_NE(r.notes[0].find("5 (not used)"), std::string::npos) << r.notes[0];
}

TEST(NvidiaSmiNoHeader, CommandLineReadsBothForms) {
  const std::string units = TempPath("noheader.csv"), bare = TempPath("nounits.csv");
  WriteFile(units, ImbalancedLog(false, true));
  WriteFile(bare, ImbalancedLog(false, false));
  auto a = RunGpuscope("analyze " + units);
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("GPU 1 lags behind GPU 0"), std::string::npos) << a.out;
  auto b = RunGpuscope("analyze " + bare);
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("--smi-fields"), std::string::npos) << b.err;
  auto c = RunGpuscope("analyze " + bare + " --smi-fields " + kFields);
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("GPU 1 lags behind GPU 0"), std::string::npos) << c.out;
}

// --- nvidia-smi dmon, dcgmi dmon, dcgm-exporter -------------------------------------------------

TEST(NvidiaSmiDmon, TwoGpusWithDateAndTime) {
  // `nvidia-smi dmon -o DT` (driver 535 columns), 2 GPUs, 2 ticks.
  const char* log =
      "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa"
      "   mclk   pclk\n"
      "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %      %      %"
      "    MHz    MHz\n"
      " 20240115   10:23:45      0    301     61     70     97     40      0      0      0      0"
      "   1593   1410\n"
      " 20240115   10:23:45      1    150     50     60     41     20      0      0      0      0"
      "   1593   1410\n"
      " 20240115   10:23:46      0    305     62     70     99     42      0      0      0      0"
      "   1593   1410\n"
      " 20240115   10:23:46      1    148     50     60     39     18      -      -      0      0"
      "   1593   1410\n";
  const Recording r = Parse(log);
  EXPECT_EQ(r.source, SourceKind::kNvidiaSmiDmon);
  ASSERT_EQ(r.samples.size(), 2u);
  ASSERT_EQ(r.samples[1].gpus.size(), 2u);
  EXPECT_EQ(r.samples[1].time_ns - r.samples[0].time_ns, kSecond);
  EXPECT_EQ(r.samples[1].gpus[1].index, 1);
  EXPECT_DOUBLE_EQ(r.samples[1].gpus[1].sm_util_pct.value_or(-1), 39);
  EXPECT_DOUBLE_EQ(r.samples[0].gpus[0].power_w.value_or(-1), 301);
  EXPECT_DOUBLE_EQ(r.samples[0].gpus[0].sm_clock_mhz.value_or(-1), 1410);
  EXPECT_EQ(r.malformed_lines, 0u);
  const Judged j = Judge(r);
  ASSERT_TRUE(j.stats.balance.has_value());
  EXPECT_EQ(j.stats.balance->least, 1);
  EXPECT_DOUBLE_EQ(j.stats.balance->spread_pct, 98 - 40);
}

constexpr const char* kDcgmiDmon =
    "#Entity   SMACT        SMOCC        TENSO        DRAMA        GPUTL  POWER    TOTEC\n"
    "ID\n"
    "GPU 0     0.512        0.301        0.250        0.400        97     300.5    1000000\n"
    "GPU 1     0.210        0.120        N/A          0.150        40     150.0    2000000\n"
    "GPU-I 3   0.100        0.100        0.100        0.100        N/A    N/A      N/A\n"
    "GPU 0     0.520        0.310        0.260        0.410        98     301.5    1300000\n"
    "GPU 1     0.200        0.110        0.010        0.140        41     151.0    2150000\n";

TEST(DcgmiDmon, FieldsOfTwoGpus) {
  // `dcgmi dmon -e 1002,1003,1004,1005,203,155,156` (SMACT SMOCC TENSO DRAMA GPUTL POWER TOTEC).
  EXPECT_TRUE(ingest::LooksLikeDcgmiDmon(kDcgmiDmon));
  auto sniffed = ingest::SniffFormat(kDcgmiDmon, "dcgmi.log");
  ASSERT_TRUE(sniffed.ok());
  EXPECT_EQ((*sniffed)->id, ingest::InputFormat::kDcgmiDmon);
  const Recording r = ParseDcgm(kDcgmiDmon);
  EXPECT_EQ(r.source, SourceKind::kDcgmiDmon);
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[1].time_ns - r.samples[0].time_ns, kSecond);  // assumed, noted
  const GpuSample& g0 = r.samples[0].gpus[0];
  EXPECT_DOUBLE_EQ(g0.sm_active_pct.value_or(-1), 51.2);
  EXPECT_DOUBLE_EQ(g0.sm_occupancy_pct.value_or(-1), 30.1);
  EXPECT_DOUBLE_EQ(g0.tensor_active_pct.value_or(-1), 25);
  EXPECT_DOUBLE_EQ(g0.dram_active_pct.value_or(-1), 40);
  EXPECT_DOUBLE_EQ(g0.sm_util_pct.value_or(-1), 97);
  EXPECT_DOUBLE_EQ(g0.power_w.value_or(-1), 300.5);
  EXPECT_DOUBLE_EQ(g0.energy_j.value_or(-1), 1000);                  // 1,000,000 mJ
  EXPECT_FALSE(r.samples[0].gpus[1].tensor_active_pct.has_value());  // N/A
  EXPECT_EQ(r.malformed_lines, 0u);
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[1].find("1 rows of other entities"), std::string::npos) << r.notes[1];
  // Energy from the counter: GPU 0 used 300 J and GPU 1 150 J in the 1 s between the rows.
  const Judged j = Judge(r);
  EXPECT_DOUBLE_EQ(j.stats.gpus[0].energy_j.value_or(-1), 300);
  EXPECT_TRUE(j.stats.gpus[0].energy_from_counter);
  EXPECT_DOUBLE_EQ(j.stats.energy_j.value_or(-1), 450);
  EXPECT_NEAR(j.stats.energy_per_hour_wh.value_or(-1), 450, 1e-9);  // 450 J/s = 450 Wh per hour
  EXPECT_NEAR(j.stats.gpus[0].sm_active_mean_pct.value_or(-1), 51.6, 1e-9);
}

TEST(DcgmiDmon, BadValueIsCountedWithItsLine) {
  const std::string log = std::string(kDcgmiDmon) + "GPU 0  1.700  0.1  0.1  0.1  50  100  1\n" +
                          "GPU 1  abc  0.1  0.1  0.1  50  100  1\n";
  const Recording r = ParseDcgm(log);
  EXPECT_EQ(r.malformed_lines, 2u);
  ASSERT_EQ(r.malformed_examples.size(), 2u);
  EXPECT_EQ(r.malformed_examples[0], "dcgm.log:8: SMACT: \"1.700\" is out of range (0 to 1)");
  EXPECT_EQ(r.malformed_examples[1], "dcgm.log:9: SMACT: \"abc\" is not a number");
}

TEST(DcgmExporter, ScrapesWithTimestampCommentsAndSampleTimestamps) {
  // Two scrapes of `curl -s localhost:9400/metrics` (dcgm-exporter 3.x, trimmed), the first after
  // a `# timestamp` line in seconds, the second with Prometheus sample timestamps (ms).
  const std::string labels0 =
      "{gpu=\"0\",UUID=\"GPU-8f2a\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
      "Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"535.129.03\"}";
  const std::string labels1 =
      "{gpu=\"1\",UUID=\"GPU-77c1\",device=\"nvidia1\",modelName=\"NVIDIA H100 80GB HBM3\","
      "Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"535.129.03\"}";
  std::string text =
      "# timestamp 1705314225.5\n"
      "# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.\n"
      "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n";
  text += "DCGM_FI_PROF_SM_ACTIVE" + labels0 + " 0.51\n";
  text += "DCGM_FI_PROF_SM_ACTIVE" + labels1 + " 0.2\n";
  text += "DCGM_FI_PROF_SM_OCCUPANCY" + labels0 + " 0.3\n";
  text += "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" + labels0 + " 0.25\n";
  text += "DCGM_FI_PROF_DRAM_ACTIVE" + labels0 + " 0.4\n";
  text += "DCGM_FI_DEV_GPU_UTIL" + labels0 + " 97\n";
  text += "DCGM_FI_DEV_GPU_UTIL" + labels1 + " 40\n";
  text += "DCGM_FI_DEV_FB_USED" + labels0 + " 30000\n";
  text += "DCGM_FI_DEV_FB_FREE" + labels0 + " 51000\n";
  text += "DCGM_FI_DEV_POWER_USAGE" + labels0 + " 500.5\n";
  text += "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + labels0 + " 1000000\n";
  text += "DCGM_FI_DEV_SM_CLOCK" + labels0 + " 1980\n";
  text += "DCGM_FI_DEV_XID_ERRORS" + labels0 + " 0\n";  // not used
  text += "DCGM_FI_DEV_GPU_UTIL" + labels0 + " 99 1705314227500\n";
  text += "DCGM_FI_DEV_GPU_UTIL" + labels1 + " 42 1705314227500\n";
  text += "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + labels0 + " 2000000 1705314227500\n";
  EXPECT_TRUE(ingest::LooksLikeDcgmExporter(text));
  auto sniffed = ingest::SniffFormat(text, "metrics.prom");
  ASSERT_TRUE(sniffed.ok());
  EXPECT_EQ((*sniffed)->id, ingest::InputFormat::kDcgmExporter);
  const Recording r = ParseDcgm(text);
  EXPECT_EQ(r.source, SourceKind::kDcgmExporter);
  EXPECT_EQ(r.malformed_lines, 0u);
  EXPECT_TRUE(r.notes.empty());
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[0].time_ns, 1'705'314'225'500'000'000);
  EXPECT_EQ(r.samples[1].time_ns - r.samples[0].time_ns, 2 * kSecond);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].name, "NVIDIA H100 80GB HBM3");
  const GpuSample& g = r.samples[0].gpus[0];
  EXPECT_DOUBLE_EQ(g.sm_active_pct.value_or(-1), 51);
  EXPECT_DOUBLE_EQ(g.sm_occupancy_pct.value_or(-1), 30);
  EXPECT_DOUBLE_EQ(g.tensor_active_pct.value_or(-1), 25);
  EXPECT_DOUBLE_EQ(g.dram_active_pct.value_or(-1), 40);
  EXPECT_DOUBLE_EQ(g.sm_util_pct.value_or(-1), 97);
  EXPECT_EQ(g.mem_used_bytes.value_or(0), 30000ull << 20);
  EXPECT_EQ(g.mem_total_bytes.value_or(0), 81000ull << 20);  // used + free
  EXPECT_DOUBLE_EQ(g.power_w.value_or(-1), 500.5);
  EXPECT_DOUBLE_EQ(g.sm_clock_mhz.value_or(-1), 1980);
  EXPECT_DOUBLE_EQ(r.samples[1].gpus[1].sm_util_pct.value_or(-1), 42);
  // 1,000 J over 2 s: 500 W, 500 Wh per hour.
  const Judged j = Judge(r);
  EXPECT_DOUBLE_EQ(j.stats.gpus[0].energy_j.value_or(-1), 1000);
  EXPECT_NEAR(j.stats.energy_per_hour_wh.value_or(-1), 500, 1e-9);
  EXPECT_EQ(Find(j, "gpu_imbalance") != nullptr, true);
}

TEST(DcgmExporter, WithoutTimestampsARepeatedMetricStartsTheNextScrape) {
  const std::string text =
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 90\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 91\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 92\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 93\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 94\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",label=\"unterminated} 95\n"
      "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\"} 95\n";
  const Recording r = ParseDcgm(text);
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.samples[2].time_ns, 2 * kSecond);
  EXPECT_DOUBLE_EQ(r.samples[1].gpus[1].sm_util_pct.value_or(-1), 93);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("assumed 1 s apart"), std::string::npos);
  EXPECT_EQ(r.malformed_lines, 2u);
  ASSERT_EQ(r.malformed_examples.size(), 2u);
  EXPECT_EQ(r.malformed_examples[0], "dcgm.log:6: a label value does not end");
  EXPECT_EQ(r.malformed_examples[1], "dcgm.log:7: DCGM_FI_DEV_GPU_UTIL: no gpu=\"N\" label");
}

// --- Verdicts ---------------------------------------------------------------------------------

TEST(MonitorVerdicts, ImbalanceNamesTheLaggingGpu) {
  const Judged j = Judge(Parse(ImbalancedLog(true, true)));
  const MonitorFinding* f = Find(j, "gpu_imbalance");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "GPU 1 lags behind GPU 0");
  EXPECT_EQ(*Evidence(*f, "lagging_gpu"), render::Value::Count(1));
  EXPECT_EQ(*Evidence(*f, "busiest_gpu"), render::Value::Count(0));
  EXPECT_DOUBLE_EQ(Evidence(*f, "spread_pct")->d, 58);
  EXPECT_DOUBLE_EQ(Evidence(*f, "lagging_util_mean_pct")->d, 40);
  // It is the verdict (before: "GPU busy 69 % on average", no finding).
  EXPECT_EQ(j.advice.verdict.rfind("GPU 0 busy 98 %, GPU 1 40 % (spread 58 points)", 0), 0u)
      << j.advice.verdict;
  EXPECT_NE(j.advice.verdict.find("→ GPU 1 lags behind GPU 0"), std::string::npos);
}

TEST(MonitorVerdicts, AGpuWithoutKernelsOrMemoryHasNoWork) {
  std::string log = "index, utilization.gpu [%], memory.used [MiB]\n";
  for (int t = 0; t < 20; ++t) log += "0, 97 %, 60000 MiB\n1, 0 %, 3 MiB\n";
  const Judged j = Judge(Parse(log));
  const MonitorFinding* f = Find(j, "gpu_imbalance");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "GPU 1 has no work");
  EXPECT_NE(f->fix.find("--nproc_per_node"), std::string::npos);
}

TEST(MonitorVerdicts, BalancedGpusHaveNoImbalanceFinding) {
  std::string log = "index, utilization.gpu [%]\n";
  for (int t = 0; t < 20; ++t) log += "0, 97 %\n1, 85 %\n";
  const Judged j = Judge(Parse(log));
  ASSERT_TRUE(j.stats.balance.has_value());
  EXPECT_DOUBLE_EQ(j.stats.balance->spread_pct, 12);
  EXPECT_EQ(Find(j, "gpu_imbalance"), nullptr);
}

// 0 % for 3 s of every 10 s, 95 % otherwise, 1 s samples over `seconds`.
std::string StallLog(int seconds, int offset = 0) {
  std::string log = "timestamp, index, utilization.gpu [%], power.draw [W]\n";
  for (int t = 0; t < seconds; ++t)
    log += Clock(t) + ", 0, " + ((t + offset) % 10 >= 7 ? "0" : "95") + " %, 250.00 W\n";
  return log;
}

TEST(MonitorVerdicts, PeriodicStallOfThreeSecondsInTen) {
  for (int offset : {0, 4}) {
    SCOPED_TRACE(offset);
    const Judged j = Judge(Parse(StallLog(60, offset)));
    const analyze::PeriodicStall& p = j.stats.gpus.at(0).periodic_stall;
    EXPECT_GE(p.stalls, 4u);
    EXPECT_NEAR(static_cast<double>(p.period_ns), 10.0 * kSecond, 1.0 * kSecond);  // ± 1 sample
    EXPECT_NEAR(p.duty, 0.3, 0.1);                                                 // ± 1 sample
    EXPECT_DOUBLE_EQ(p.busy_between_pct, 95);
    const MonitorFinding* f = Find(j, "periodic_stall");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->title, "GPU utilisation drops to ~0 % for 3.0 s of every 10.0 s");
    EXPECT_EQ(f->words.rfind("3.0 s of every 10.0 s (30 %) near 0 % on GPU 0", 0), 0u) << f->words;
    EXPECT_NE(f->words.find("data loading"), std::string::npos);
  }
}

TEST(MonitorVerdicts, IrregularDipsAreNotPeriodic) {
  // Dips at 5, 9, 30, 33, 51 s: gaps 4, 21, 3, 18 s — no period.
  std::string log = "timestamp, index, utilization.gpu [%]\n";
  for (int t = 0; t < 60; ++t) {
    const bool dip = t == 5 || t == 9 || t == 30 || t == 33 || t == 51;
    log += Clock(t) + ", 0, " + (dip ? "0" : "95") + " %\n";
  }
  const Judged j = Judge(Parse(log));
  EXPECT_EQ(j.stats.gpus.at(0).periodic_stall.stalls, 0u);
  EXPECT_EQ(Find(j, "periodic_stall"), nullptr);
}

TEST(MonitorVerdicts, EnergyPerHourFromConstantPower) {
  // 400 W for 100 s (101 samples, 1 s apart): 40,000 J = 11.1 Wh, 400 Wh per hour.
  std::string log = "timestamp, index, utilization.gpu [%], power.draw [W]\n";
  for (int t = 0; t <= 100; ++t) log += Clock(t) + ", 0, 90 %, 400.00 W\n";
  const Judged j = Judge(Parse(log));
  EXPECT_DOUBLE_EQ(j.stats.gpus.at(0).energy_j.value_or(-1), 40'000);
  EXPECT_FALSE(j.stats.gpus.at(0).energy_from_counter);
  EXPECT_DOUBLE_EQ(j.stats.energy_per_hour_wh.value_or(-1), 400);
  const std::string text = render::RenderText(report::BuildRunDocument(j.stats, j.advice), {});
  EXPECT_NE(text.find("energy      Wh 11.1 · Wh per hour 400.0"), std::string::npos) << text;
}

TEST(MonitorVerdicts, EnergyPerStepBesideATrace) {
  // The bundled example trace spans 1734973733.079–1734973733.369 s (unix), mean steady step
  // 48.311 ms. dcgm-exporter scrapes with sample timestamps every 50 ms at 400 W: 400 J/s ×
  // 0.048311 s = 19.3 J per step.
  std::string text;
  for (int64_t ms = 1734973733000; ms <= 1734973733450; ms += 50)
    text += "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 400 " + std::to_string(ms) + "\n" +
            "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 70 " + std::to_string(ms) + "\n";
  const std::string path = TempPath("beside.prom");
  WriteFile(path, text);
  const auto r = RunGpuscope("analyze " + std::string(GPUSCOPE_SOURCE_DIR) +
                             "/examples/train_input_bound.pt.trace.json.gz --monitor " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("energy per step J 19.3 · mean step 48.311 ms"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpuscope::monitor
