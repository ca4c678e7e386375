// Every JSON gpuscope prints parses with simdjson and holds only numbers every reader keeps
// exactly: integer literals up to 2^53, anything larger as a double with an exponent (issue 19
// item 10: `plan --json` for Llama-3-70B on 2,048 GPUs printed "flops_model":
// 30147658855571521536, beyond 2^64, which simdjson rejects).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "monitor_test_util.h"

namespace gpuscope::testing {
namespace {

constexpr uint64_t kTwoTo53 = uint64_t{1} << 53;

struct NumberCensus {
  size_t numbers = 0;
  size_t big_doubles = 0;            // |value| > 2^53, written with an exponent
  std::vector<std::string> offenders;  // integer literals beyond 2^53, with their JSON path
};

void Walk(simdjson::dom::element e, const std::string& path, NumberCensus* census) {
  switch (e.type()) {
    case simdjson::dom::element_type::OBJECT:
      for (simdjson::dom::key_value_pair f : simdjson::dom::object(e))
        Walk(f.value, path + "." + std::string(f.key), census);
      break;
    case simdjson::dom::element_type::ARRAY: {
      size_t i = 0;
      for (simdjson::dom::element x : simdjson::dom::array(e))
        Walk(x, path + "[" + std::to_string(i++) + "]", census);
      break;
    }
    case simdjson::dom::element_type::INT64: {
      ++census->numbers;
      const int64_t v = int64_t(e);
      const uint64_t magnitude = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : uint64_t(v);
      if (magnitude > kTwoTo53) census->offenders.push_back(path + " = " + std::to_string(v));
      break;
    }
    case simdjson::dom::element_type::UINT64: {
      ++census->numbers;
      const uint64_t v = uint64_t(e);
      if (v > kTwoTo53) census->offenders.push_back(path + " = " + std::to_string(v));
      break;
    }
    case simdjson::dom::element_type::DOUBLE:
      ++census->numbers;
      if (std::fabs(double(e)) > static_cast<double>(kTwoTo53)) ++census->big_doubles;
      break;
    default:
      break;
  }
}

// Parses `json` (one document) and checks its numbers; returns the census for further checks.
NumberCensus ExpectRepresentable(const std::string& json, const std::string& what) {
  SCOPED_TRACE(what);
  NumberCensus census;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const auto err = parser.parse(json).get(doc);
  EXPECT_EQ(err, simdjson::SUCCESS) << simdjson::error_message(err) << "\n"
                                    << json.substr(0, 2000);
  if (err != simdjson::SUCCESS) return census;
  Walk(doc, "$", &census);
  EXPECT_GT(census.numbers, 0u);
  for (const std::string& o : census.offenders)
    ADD_FAILURE() << "integer literal beyond 2^53: " << o;
  return census;
}

std::string Example() {
  return std::string(GPUSCOPE_SOURCE_DIR) + "/examples/train_input_bound.pt.trace.json.gz";
}

TEST(JsonNumbers, AnalyzeOfTheExampleAndOfASynthTrace) {
  auto r = RunGpuscope("analyze --json " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const NumberCensus example = ExpectRepresentable(r.out, "analyze example");
  // baseTimeNanoseconds is 1731295583000000000 (> 2^53): an exact double in exponent form.
  EXPECT_NE(r.out.find("\"value\": 1.731295583e+18"), std::string::npos);
  EXPECT_GE(example.big_doubles, 1u);

  const std::string synth = TempPath("json_numbers_synth.json");
  r = RunGpuscope("synth --steps 4 --layers 2 --sync-per-step 2 -o " + synth);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunGpuscope("analyze --json " + synth);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectRepresentable(r.out, "analyze synth");

  r = RunGpuscope("diff --json " + Example() + " " + synth);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectRepresentable(r.out, "diff");
  std::filesystem::remove(synth);
}

TEST(JsonNumbers, PlanOfLlama70BOn2048Gpus) {
  // 6 · 70.6e9 params · 8192 × 8192 tokens ≈ 3.0e19 FLOPs per step: beyond 2^64.
  auto r = RunGpuscope(
      "plan --model llama-3-70b --gpu h100-sxm --gpus 2048 --global-batch 8192 --seq-len 8192 "
      "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const NumberCensus c = ExpectRepresentable(r.out, "plan 70B / 2048 GPUs");
  EXPECT_GE(c.big_doubles, 2u);  // flops_model and flops_hardware at least
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS);
  double flops = 0;
  ASSERT_EQ(doc["sections"]["best"]["items"]["flops"]["fields"]["flops_model"]["value"].get_double().get(flops),
            simdjson::SUCCESS);
  EXPECT_GT(flops, 18446744073709551615.0);
  EXPECT_NEAR(flops / 3.0147658855571522e19, 1.0, 1e-9);

  r = RunGpuscope(
      "plan --model llama-2-7b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len 4096 --tp 2 "
      "--pp 1 --sp --zero 1 --recompute selective --mbs 1 --precision bf16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectRepresentable(r.out, "plan exact 7B");
}

TEST(JsonNumbers, AnalyzeOfAnNvidiaSmiLogWithAbsurdValues) {
  // A utilisation of 1e62 % came out as a 63-digit integer literal. Such a value is now a
  // malformed line (issue 19 item 4: utilisation is 0–100 %), so the largest numbers a log can
  // still carry are memory sizes up to 8 EiB: 8e12 MiB = 8,388,608,000,000,000,000 B > 2^53.
  const std::string log = TempPath("json_numbers_smi.csv");
  WriteFile(log,
            "timestamp, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
            "power.draw [W]\n"
            "2024/01/15 10:23:45.123, 0, NVIDIA A100, 50 %, 8000000000000 MiB, 8000000000000 MiB, "
            "120 W\n"
            "2024/01/15 10:23:45.623, 0, NVIDIA A100, 1e62 %, 22000 MiB, 81920 MiB, 120 W\n");
  auto r = RunGpuscope("analyze --json " + log);
  ASSERT_EQ(r.exit_code, 2) << r.err;  // the 1e62 % line is malformed
  const NumberCensus c = ExpectRepresentable(r.out, "analyze nvidia-smi log");
  EXPECT_EQ(r.out.find("e+62"), std::string::npos) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "mem_used_peak_bytes"), 8.388608e18) << r.out;
  EXPECT_NE(r.out.find("\"value\": 8.388608e+18"), std::string::npos) << r.out;
  EXPECT_GE(c.big_doubles, 1u);
  std::filesystem::remove(log);
}

TEST(JsonNumbers, RunWithFakeNvmlReportAndRecording) {
  // Memory near 2^64 bytes and a start time in unix ns (always > 2^53).
  const std::string script = TempPath("json_numbers_nvml");
  WriteFile(script,
            "gpus 1\nname 0 NVIDIA H100\nutil 0 50 10\n"
            "memory 0 18446744073709551000 18446744073709551615\npower 0 300000 700000\n");
  const std::string report = TempPath("json_numbers_report.json");
  const std::string record = TempPath("json_numbers_run.jsonl");
  auto r = RunGpuscopeArgs({"run", "--interval", "50ms", "--record", record, "--report-json",
                            report, "--json", "--", "sleep", "0.3"},
                           {{"GPUSCOPE_NVML_LIBRARY", GPUSCOPE_FAKE_NVML},
                            {"GPUSCOPE_FAKE_NVML_SCRIPT", script}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = ReadFile(report);
  const NumberCensus c = ExpectRepresentable(json, "run --report-json");
  EXPECT_GE(c.big_doubles, 3u) << json;  // start_ns, mem_used_peak_bytes, mem_total_bytes
  // 2^64 − 1 bytes: the nearest double, not clamped to int64.
  EXPECT_EQ(JsonNumber(json, "mem_total_bytes"), 18446744073709551615.0) << json;
  // `run --json` prints the same document on stdout (`sleep` prints nothing of its own).
  EXPECT_EQ(r.out, json);

  // The recording is read back by gpuscope itself: its unix-ns times stay exact integers (the
  // one exception, JsonWriter::ExactInt), everything else follows the rule.
  std::istringstream lines(ReadFile(record));
  std::string line;
  size_t n = 0;
  simdjson::dom::parser parser;
  while (std::getline(lines, line)) {
    SCOPED_TRACE(line);
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(line).get(doc), simdjson::SUCCESS);
    for (const char* key : {"start_ns", "t_ns", "end_ns"}) {
      simdjson::dom::element t;
      if (doc[key].get(t) != simdjson::SUCCESS) continue;
      int64_t ns = 0;
      ASSERT_EQ(t.get_int64().get(ns), simdjson::SUCCESS) << key;
      EXPECT_GT(ns, int64_t{1} << 53) << key;
      ++n;
    }
    simdjson::dom::element gpus;
    if (doc["gpus"].get(gpus) == simdjson::SUCCESS) {
      NumberCensus census;
      Walk(gpus, "$.gpus", &census);
      EXPECT_TRUE(census.offenders.empty()) << census.offenders.front();
    }
  }
  EXPECT_GE(n, 3u);  // header, samples, end
  for (const std::string& f : {script, report, record}) std::filesystem::remove(f);
}

}  // namespace
}  // namespace gpuscope::testing
