// nvidia-smi logs in the documented variants (docs/monitor.md), and malformed lines counted.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "ingest/nvidia_smi/nvidia_smi.h"
#include "monitor_test_util.h"

namespace gpuscope::monitor {
namespace {

using ingest::DetectNvidiaSmiLog;
using ingest::NvidiaSmiFormat;
using ingest::ParseNvidiaSmiLog;

Recording Parse(const std::string& text) {
  auto r = ParseNvidiaSmiLog(text, "log.csv");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Recording();
}

// `nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,utilization.memory,memory.used,
//  memory.total,power.draw,power.limit,temperature.gpu,clocks.sm --format=csv -lms 500`, 2 GPUs.
constexpr const char* kCsvWithUnits =
    "timestamp, index, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
    "memory.total [MiB], power.draw [W], power.limit [W], temperature.gpu, clocks.sm [MHz]\n"
    "2024/01/15 10:23:45.123, 0, NVIDIA A100-SXM4-80GB, 43 %, 20 %, 22000 MiB, 81920 MiB, "
    "120.50 W, 400.00 W, 45, 1410 MHz\n"
    "2024/01/15 10:23:45.125, 1, NVIDIA A100-SXM4-80GB, 41 %, 18 %, 21000 MiB, 81920 MiB, "
    "110.00 W, 400.00 W, 44, 1410 MHz\n"
    "2024/01/15 10:23:45.623, 0, NVIDIA A100-SXM4-80GB, 45 %, 22 %, 22100 MiB, 81920 MiB, "
    "125.00 W, 400.00 W, 46, 1410 MHz\n"
    "2024/01/15 10:23:45.625, 1, NVIDIA A100-SXM4-80GB, 47 %, 19 %, 21000 MiB, 81920 MiB, "
    "[N/A], 400.00 W, 44, 1410 MHz\n";

TEST(NvidiaSmiCsv, UnitsInHeaderAndValuesTwoGpus) {
  EXPECT_EQ(DetectNvidiaSmiLog(kCsvWithUnits), NvidiaSmiFormat::kCsvQuery);
  const Recording r = Parse(kCsvWithUnits);
  EXPECT_EQ(r.source, SourceKind::kNvidiaSmiCsv);
  ASSERT_EQ(r.samples.size(), 2u);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(r.gpus[0].mem_total_bytes.value_or(0), 81920ull << 20);
  EXPECT_DOUBLE_EQ(r.gpus[0].power_limit_w.value_or(0), 400);
  const GpuSample& g = r.samples[0].gpus[0];
  EXPECT_DOUBLE_EQ(g.sm_util_pct.value_or(-1), 43);
  EXPECT_DOUBLE_EQ(g.mem_util_pct.value_or(-1), 20);
  EXPECT_EQ(g.mem_used_bytes.value_or(0), 22000ull << 20);
  EXPECT_DOUBLE_EQ(g.power_w.value_or(0), 120.5);
  EXPECT_DOUBLE_EQ(g.temperature_c.value_or(0), 45);
  EXPECT_DOUBLE_EQ(g.sm_clock_mhz.value_or(0), 1410);
  EXPECT_EQ(r.samples[1].time_ns - r.samples[0].time_ns, 500'000'000);  // -lms 500
  EXPECT_FALSE(r.samples[1].gpus[1].power_w.has_value());                // [N/A]
  EXPECT_EQ(r.malformed_lines, 0u);
  EXPECT_TRUE(r.notes.empty());
}

TEST(NvidiaSmiCsv, NounitsSubsetAnyOrderRepeatedHeaderNoIndex) {
  // --format=csv,nounits: units stay in the header only; columns reordered; no timestamp/index,
  // GPUs told apart by pci.bus_id; the header repeats where two logs were appended.
  const char* text =
      "memory.used [MiB], pci.bus_id, utilization.gpu [%]\n"
      "1000, 00000000:07:00.0, 90\n"
      "2000, 00000000:0F:00.0, 80\n"
      "memory.used [MiB], pci.bus_id, utilization.gpu [%]\n"
      "1100, 00000000:07:00.0, 95\n"
      "2100, 00000000:0F:00.0, 85\n";
  const Recording r = Parse(text);
  ASSERT_EQ(r.samples.size(), 2u);
  ASSERT_EQ(r.samples[1].gpus.size(), 2u);
  EXPECT_EQ(r.samples[1].gpus[1].index, 1);
  EXPECT_DOUBLE_EQ(r.samples[1].gpus[1].sm_util_pct.value_or(0), 85);
  EXPECT_EQ(r.samples[0].gpus[0].mem_used_bytes.value_or(0), 1000ull << 20);
  EXPECT_EQ(r.samples[1].time_ns - r.samples[0].time_ns, 1'000'000'000);  // assumed 1 s
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("1 s apart"), std::string::npos);
}

TEST(NvidiaSmiCsv, MalformedLinesAreCountedAndSkipped) {
  const char* text =
      "timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
      "2024/01/15 10:00:00.000, 0, 50 %, 100 MiB\n"
      "2024/01/15 10:00:01.000, 0, 50 %\n"                // too few fields
      "2024/01/15 10:00:02.000, 0, lots, 100 MiB\n"       // not a number
      "yesterday, 0, 50 %, 100 MiB\n"                     // bad timestamp
      "2024/01/15 10:00:04.000, 0, 60 %, 100 MiB, extra\n"  // too many
      "2024/01/15 10:00:05.000, 0, 70 %, 100 MiB\n";
  const Recording r = Parse(text);
  EXPECT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.malformed_lines, 4u);
  ASSERT_EQ(r.malformed_examples.size(), 3u);
  EXPECT_EQ(r.malformed_examples[0], "log.csv:3: expected 4 fields, found 3");
  EXPECT_EQ(r.malformed_examples[1], "log.csv:4: utilization.gpu: \"lots\" is not a number");
  EXPECT_EQ(r.malformed_examples[2],
            "log.csv:5: bad timestamp \"yesterday\" (expected YYYY/MM/DD HH:MM:SS.mmm, years "
            "1970–2200)");
}

// Found by fuzz/monitor_log_fuzz: dates far from now overflowed the int64 ns (UBSan), and huge or
// negative sizes and masks were cast from double out of range. Each is a malformed line now.
TEST(NvidiaSmiCsv, HostileValuesAreMalformedLines) {
  auto r = ParseNvidiaSmiLog(
      "timestamp, index, memory.used [MiB], clocks_throttle_reasons.active\n"
      "2024/01/15 10:00:00.000, 0, 100 MiB, 0x4\n"
      "1010/01/15 10:00:01.000, 0, 100 MiB, 0x4\n"
      "99999/01/15 10:00:01.000, 0, 100 MiB, 0x4\n"
      "2024/01/15 10:00:02.000, 0, 1e300 MiB, 0x4\n"
      "2024/01/15 10:00:03.000, 0, -5 MiB, 0x4\n"
      "2024/01/15 10:00:04.000, 0, 100 MiB, 1e30\n"
      "2024/01/15 10:00:05.000, 0, 100 MiB, -1\n",
      "log.csv");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->samples.size(), 1u);
  EXPECT_EQ(r->malformed_lines, 6u);
  EXPECT_EQ(r->malformed_examples[0],
            "log.csv:3: bad timestamp \"1010/01/15 10:00:01.000\" (expected YYYY/MM/DD "
            "HH:MM:SS.mmm, years 1970–2200)");
  EXPECT_EQ(r->malformed_examples[2],
            "log.csv:5: memory.used: \"1e300 MiB\" is not a memory size (0 to 8 EiB)");
}

TEST(NvidiaSmiDmon, DatesOutOfRangeAreMalformedLines) {
  auto r = ParseNvidiaSmiLog(
      "#Date       Time        gpu     sm\n"
      " 20240115   10:23:45      0     98\n"
      " 10240115   10:23:46      0     98\n"
      " 20241315   10:23:47      0     98\n"
      " 20240115   -1:23:48      0     98\n",
      "dmon.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->samples.size(), 1u);
  EXPECT_EQ(r->malformed_lines, 3u);
  EXPECT_EQ(r->malformed_examples[0],
            "dmon.log:3: bad date/time \"10240115 10:23:46\" (expected YYYYMMDD HH:MM:SS, "
            "years 1970–2200)");
}

// nvidia-smi prints local time: 2024/01/15 10:23:45 in New York (EST, UTC−5) is 15:23:45 UTC,
// 2024/07/15 10:23:45 (EDT, UTC−4) is 14:23:45 UTC; dmon dates likewise.
TEST(NvidiaSmiCsv, TimestampsAreLocalTime) {
  const char* old_tz = std::getenv("TZ");
  const std::string saved = old_tz ? old_tz : "";
  setenv("TZ", "America/New_York", 1);
  tzset();
  const Recording csv = Parse(
      "timestamp, index, utilization.gpu [%]\n"
      "2024/01/15 10:23:45.500, 0, 50 %\n"
      "2024/07/15 10:23:45.000, 0, 50 %\n");
  const Recording dmon = Parse(
      "#Date       Time        gpu     sm\n"
      " 20240115   10:23:45      0     98\n");
  if (old_tz)
    setenv("TZ", saved.c_str(), 1);
  else
    unsetenv("TZ");
  tzset();
  ASSERT_EQ(csv.samples.size(), 2u);
  EXPECT_EQ(csv.samples[0].time_ns, 1705332225'500'000'000);  // 2024-01-15T15:23:45.5Z
  EXPECT_EQ(csv.samples[1].time_ns, 1721053425'000'000'000);  // 2024-07-15T14:23:45Z
  ASSERT_EQ(dmon.samples.size(), 1u);
  EXPECT_EQ(dmon.samples[0].time_ns, 1705332225'000'000'000);
}

TEST(NvidiaSmiCsv, ThrottleReasonsInHex) {
  const Recording r = Parse(
      "index, clocks_throttle_reasons.active, utilization.gpu [%]\n0, 0x0000000000000040, 99\n");
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].gpus[0].throttle_reasons.value_or(0), kThrottleHwThermal);
}

// Hex is a bit mask, never a measurement: "0x50 %" was read as 80 % (issue 36 item 6).
TEST(NvidiaSmiCsv, HexWithAUnitIsNotANumber) {
  const Recording r = Parse(
      "timestamp, index, utilization.gpu [%], clocks_throttle_reasons.active\n"
      "2024/01/15 10:00:00.000, 0, 0x50 %, 0x4\n"
      "2024/01/15 10:00:01.000, 0, 50 %, 0x4\n");
  EXPECT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.malformed_lines, 1u);
  ASSERT_EQ(r.malformed_examples.size(), 1u);
  EXPECT_EQ(r.malformed_examples[0], "log.csv:2: utilization.gpu: \"0x50 %\" is not a number");
}

TEST(NvidiaSmiCsv, NotALogIsAnError) {
  EXPECT_EQ(DetectNvidiaSmiLog("a,b,c\n1,2,3\n"), NvidiaSmiFormat::kNone);
  EXPECT_EQ(DetectNvidiaSmiLog("{\"traceEvents\": []}"), NvidiaSmiFormat::kNone);
  EXPECT_FALSE(ParseNvidiaSmiLog("hello\n", "x").ok());
  // A header with nothing usable after it.
  auto r = ParseNvidiaSmiLog("index, utilization.gpu [%]\nbroken\n", "x.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1 malformed lines"), std::string::npos);
}

// `nvidia-smi dmon` (default -s puc), 2 GPUs, header repeated.
constexpr const char* kDmon =
    "# gpu   pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk\n"
    "# Idx     W      C      C      %      %      %      %      %      %    MHz    MHz\n"
    "    0    63     33      -     43     20      0      0      0      0   1593   1410\n"
    "    1    61     32      -     41     18      0      0      0      0   1593   1410\n"
    "    0    64     33      -     45     21      0      0      0      0   1593   1410\n"
    "    1    60     32      -      -     19      0      0      0      0   1593   1410\n"
    "# gpu   pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk\n"
    "# Idx     W      C      C      %      %      %      %      %      %    MHz    MHz\n"
    "    0    65     34      -     47     22      0      0      0      0   1593   1410\n"
    "    1    62     32      -     40     18      0      0      0      0   1593   1410\n";

TEST(NvidiaSmiDmon, DefaultColumnsRepeatedHeader) {
  EXPECT_EQ(DetectNvidiaSmiLog(kDmon), NvidiaSmiFormat::kDmon);
  const Recording r = Parse(kDmon);
  EXPECT_EQ(r.source, SourceKind::kNvidiaSmiDmon);
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.gpus.size(), 2u);
  const GpuSample& g = r.samples[2].gpus[0];
  EXPECT_DOUBLE_EQ(g.power_w.value_or(0), 65);
  EXPECT_DOUBLE_EQ(g.temperature_c.value_or(0), 34);
  EXPECT_DOUBLE_EQ(g.sm_util_pct.value_or(0), 47);
  EXPECT_DOUBLE_EQ(g.mem_util_pct.value_or(0), 22);
  EXPECT_DOUBLE_EQ(g.sm_clock_mhz.value_or(0), 1410);
  EXPECT_FALSE(r.samples[1].gpus[1].sm_util_pct.has_value());  // "-"
  EXPECT_EQ(r.malformed_lines, 0u);
}

TEST(NvidiaSmiDmon, DateTimeColumnsMemoryAndPcie) {
  // nvidia-smi dmon -s um -o DT, plus -s t (PCIe MB/s) and a malformed line.
  const char* text =
      "#Date       Time        gpu     sm    mem    enc    dec     fb   bar1  rxpci  txpci\n"
      "#YYYYMMDD   HH:MM:SS    Idx      %      %      %      %     MB     MB   MB/s   MB/s\n"
      " 20240115   10:23:45      0     98     40      0      0  22000      5    120     30\n"
      " 20240115   10:23:46      0     99     41      0      0  22010      5    121     31\n"
      " 20240115   10:23:47      0     oops   41      0      0  22010      5    121     31\n"
      " 20240115   10:23:48      0     97     41\n"
      " 20240115   10:23:49      0     96     41      0      0  22010      5    121     31\n";
  const Recording r = Parse(text);
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.samples[1].time_ns - r.samples[0].time_ns, 1'000'000'000);
  EXPECT_EQ(r.samples[2].time_ns - r.samples[0].time_ns, 4'000'000'000);
  EXPECT_EQ(r.samples[0].gpus[0].mem_used_bytes.value_or(0), 22000ull << 20);
  EXPECT_DOUBLE_EQ(r.samples[0].gpus[0].pcie_rx_bytes_per_s.value_or(0), 120e6);
  EXPECT_EQ(r.malformed_lines, 2u);
  EXPECT_TRUE(r.notes.empty());
}

TEST(NvidiaSmiCli, AnalyzeGivesTheVerdictAndCountsMalformedLines) {
  const std::string path = testing::TempPath("smi.csv");
  testing::WriteFile(path, std::string(kCsvWithUnits) + "garbage line\n");
  auto r = testing::RunGpuscopeArgs({"analyze", path});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // malformed lines make it 2, like skipped trace events
  EXPECT_NE(r.out.find("nvidia-smi CSV log"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("util 44 %"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("malformed lines 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(path + ":6:"), std::string::npos) << r.out;

  const std::string dmon = testing::TempPath("smi.dmon");
  testing::WriteFile(dmon, kDmon);
  r = testing::RunGpuscopeArgs({"analyze", "--json", dmon});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  std::string_view schema, source;
  ASSERT_EQ(doc["schema"].get(schema), simdjson::SUCCESS);
  EXPECT_EQ(schema, "gpuscope.run");
  const auto items = doc["sections"]["monitor"]["items"];
  ASSERT_EQ(items["source"]["fields"]["source"]["value"].get(source), simdjson::SUCCESS) << r.out;
  EXPECT_EQ(source, "nvidia_smi_dmon");
  double util = 0;
  ASSERT_EQ(items["gpu_0"]["fields"]["util_mean_pct"]["value"].get(util), simdjson::SUCCESS);
  EXPECT_NEAR(util, 45, 1e-9);  // GPU 0: 43, 45, 47 %
}

}  // namespace
}  // namespace gpuscope::monitor
