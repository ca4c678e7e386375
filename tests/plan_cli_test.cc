// `gpuscope plan` end to end: JSON contract (the plan document, docs/planner.md "JSON"), every
// memory term in text and JSON, the HTML page, bad input → exit 2 with a clear message,
// calibration from a real trace.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "api/plan.h"
#include "test_util.h"

namespace gpuscope::testing {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;

// doc.sections.<section>.items.<item>
element Item(element doc, const char* section, const char* item) {
  return doc["sections"][section]["items"][item];
}

// A number as a double, whether JSON wrote it as an integer or not.
double Num(element e) {
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS) return d;
  int64_t i = 0;  // stays 0 (and the expectation fails) when e is no number
  EXPECT_EQ(e.get_int64().get(i), simdjson::SUCCESS) << simdjson::to_string(e);
  return static_cast<double>(i);
}

// A row item's field value.
element FieldValue(element doc, const char* section, const char* item, const char* field) {
  return Item(doc, section, item)["fields"][field]["value"];
}


const char kBase[] = "plan --model llama-2-7b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len 4096";
const char kExact[] =
    " --tp 2 --pp 1 --sp --zero 1 --recompute selective --mbs 1 --precision bf16 --framework megatron";

TEST(PlanCli, ExactConfigurationJson) {
  const CommandResult r = RunGpuscope(std::string(kBase) + kExact + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  EXPECT_EQ(std::string_view(doc["schema"]), "gpuscope.plan");
  EXPECT_EQ(int64_t(doc["schema_version"]), 2);
  EXPECT_EQ(Num(FieldValue(doc, "request", "parameters", "total")), 6738415616.0);
  EXPECT_TRUE(bool(FieldValue(doc, "search", "searched", "exact")));
  array configs = Item(doc, "search", "configurations")["rows"];
  ASSERT_EQ(configs.size(), 1u);
  element row = configs.at(0);
  EXPECT_EQ(int64_t(row["tp"]), 2);
  EXPECT_EQ(int64_t(row["dp"]), 4);
  EXPECT_EQ(int64_t(row["grad_accum"]), 16);
  // The working of that configuration ("configuration" section key "best").
  EXPECT_EQ(int64_t(FieldValue(doc, "best", "configuration", "tp")), 2);
  EXPECT_EQ(int64_t(FieldValue(doc, "best", "configuration", "dp")), 4);
  EXPECT_EQ(int64_t(FieldValue(doc, "best", "configuration", "grad_accum")), 16);
  const double mib = 1024.0 * 1024;
  const double peak = Num(FieldValue(doc, "best", "peak", "peak_bytes"));
  EXPECT_NEAR(Num(FieldValue(doc, "best", "static", "static_bytes")) / mib, 28919.3, 0.05);
  EXPECT_NEAR(peak / mib, 38969.3, 0.05);
  EXPECT_EQ(Num(row["peak_bytes"]), peak);
  int64_t sum = 0;
  size_t terms = 0;
  for (element t : array(Item(doc, "best", "memory_terms")["rows"])) {
    ++terms;
    EXPECT_FALSE(std::string_view(t["formula"]).empty());
    if (bool(t["counted"])) sum += int64_t(t["memory_bytes"]);
  }
  EXPECT_GE(terms, 8u);
  EXPECT_NEAR(double(sum), peak, double(terms));
  const double step_ns = Num(FieldValue(doc, "best", "step", "step_time_ns"));
  EXPECT_GT(step_ns, 0);
  EXPECT_EQ(Num(row["step_time_ns"]), step_ns);
  // The time terms (ns) add up to the step.
  double time_sum = 0;
  for (element t : array(Item(doc, "best", "time_terms")["rows"])) time_sum += Num(t["time_ns"]);
  EXPECT_NEAR(time_sum, step_ns, 8.0);
  EXPECT_GT(Num(FieldValue(doc, "best", "step", "tokens_per_s")), 0);
  const double mfu = Num(FieldValue(doc, "best", "step", "mfu_share"));
  EXPECT_GT(mfu, 0);
  EXPECT_LT(mfu, 1);
}

TEST(PlanCli, EveryMemoryTermInTextAndJson) {
  const std::string flags = std::string(kBase) + kExact;
  const CommandResult text = RunGpuscope(flags);
  const CommandResult json = RunGpuscope(flags + " --json");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  ASSERT_EQ(json.exit_code, 0) << json.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json.out).get(doc), simdjson::SUCCESS);
  size_t terms = 0;
  for (element t : array(Item(doc, "best", "memory_terms")["rows"])) {
    ++terms;
    const std::string name{std::string_view(t["term"])};
    const std::string formula{std::string_view(t["formula"])};
    // Whole in text, not cut at the table's 48 columns.
    EXPECT_NE(text.out.find("    " + name + "  "), std::string::npos) << name;
    EXPECT_NE(text.out.find("  " + formula + "\n"), std::string::npos) << formula;
  }
  EXPECT_GE(terms, 8u);
  // The zero-byte "parameters on most-loaded GPU" term is the P_rank row: its count in text, its
  // formula in JSON.
  EXPECT_NE(text.out.find("\n  P_rank      3,369,340,928 parameters on the most-loaded GPU\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(std::string_view(FieldValue(doc, "best", "params_on_rank", "formula")).find("params (0 B"),
            std::string_view::npos);
  for (element t : array(Item(doc, "best", "time_terms")["rows"])) {
    EXPECT_NE(text.out.find(std::string(std::string_view(t["term"]))), std::string::npos);
    EXPECT_NE(text.out.find(std::string(std::string_view(t["formula"])) + "\n"), std::string::npos);
  }
  for (const char* s : {"Accelerate", "DeepSpeed", "torchrun", "\nassumptions\n", "MFU"})
    EXPECT_NE(text.out.find(s), std::string::npos) << s;
}

TEST(PlanCli, SearchFindsRankedConfigurations) {
  const CommandResult r =
      RunGpuscope("plan --model llama-3-8b --gpu a100 --gpus 64 --global-batch 512 --seq-len 4096 "
                  "--top 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS);
  array configs = Item(doc, "search", "configurations")["rows"];
  ASSERT_EQ(configs.size(), 3u);
  double prev = 1e300;
  int64_t rank = 0;
  for (element c : configs) {
    EXPECT_EQ(int64_t(c["rank"]), ++rank);
    EXPECT_LE(Num(c["tokens_per_s"]), prev);
    prev = Num(c["tokens_per_s"]);
    EXPECT_EQ(int64_t(c["tp"]) * int64_t(c["pp"]) * int64_t(c["dp"]), 64);
  }
  EXPECT_GT(Num(FieldValue(doc, "search", "searched", "rejected")), 0);
  // The reasons add up to the rejections; every example row carries its reason.
  double by_reason = 0;
  for (element row : array(Item(doc, "rejected", "reasons")["rows"])) by_reason += Num(row["count"]);
  EXPECT_EQ(by_reason, Num(FieldValue(doc, "search", "searched", "rejected")));
  for (element row : array(Item(doc, "rejected", "examples")["rows"]))
    EXPECT_FALSE(std::string_view(row["reason"]).empty());
}

void ExpectBadInput(const std::string& args, const std::vector<std::string>& needles) {
  const CommandResult r = RunGpuscope(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  for (const std::string& n : needles)
    EXPECT_NE(r.err.find(n), std::string::npos) << args << "\nmissing \"" << n << "\" in:\n" << r.err;
}

// Sizes past the planner's limits are refused by name (issue 36: --seq-len 1e9 printed a step of
// −9,223,372,036 s); at the limit the plan runs and every time it prints is positive or n/a.
TEST(PlanCli, HugeSequenceOrBatchIsRefusedNeverWrapped) {
  ExpectBadInput("plan --model llama-2-7b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len 1000000000",
                 {"--seq-len 1000000000 is above the planner's limit of 16777216 tokens"});
  ExpectBadInput("plan --model llama-2-7b --gpu h100-sxm --gpus 8 --global-batch 99999999999 --seq-len 4096",
                 {"--global-batch 99999999999 is above the planner's limit of 16777216 sequences"});
  // At the limits nothing fits (exit 2, said), and the step, 1.4e12 s, is beyond int64 ns: n/a.
  const CommandResult r = RunGpuscope(
      "plan --model llama-2-7b --gpu h100-sxm --gpus 8 --global-batch 16777216 --seq-len 16777216");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no configuration fits"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("step time n/a"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("-9223372036"), std::string::npos) << r.out;
}

TEST(PlanCli, UnknownGpu) {
  ExpectBadInput("plan --model llama-2-7b --gpu h800-pcie --gpus 8 --global-batch 64 --seq-len 4096",
                 {"unknown GPU \"h800-pcie\"", "known: a100-40gb-sxm", "h100-sxm", "--gpu-spec"});
  // A custom GPU works.
  const CommandResult r = RunGpuscope(
      "plan --model llama-2-7b --gpu-spec h800:80:989:3350:200 --gpus 8 --global-batch 64 "
      "--seq-len 4096");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(PlanCli, ConfigMissingKeys) {
  const std::string path = TempPath("missing.json");
  WriteFile(path, R"({"model_type": "llama", "hidden_size": 4096, "vocab_size": 32000})");
  ExpectBadInput("plan --model " + path + " --gpu h100 --gpus 8 --global-batch 64 --seq-len 4096",
                 {path, "missing keys", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size"});
}

TEST(PlanCli, ConfigNonsenseNumbers) {
  const std::string path = TempPath("nonsense.json");
  WriteFile(path, R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 31.5,
                      "num_attention_heads": -32, "intermediate_size": 0, "vocab_size": 32000})");
  ExpectBadInput("plan --model " + path + " --gpu h100 --gpus 8 --global-batch 64 --seq-len 4096",
                 {path, "\"num_hidden_layers\" must be a positive integer, got 31.5",
                  "\"num_attention_heads\" must be a positive integer, got -32",
                  "\"intermediate_size\" must be a positive integer, got 0"});
}

TEST(PlanCli, ConfigTooLargeOrWithHugeNumberExitsTwo) {
  const std::string flags = " --gpu h100 --gpus 8 --global-batch 64 --seq-len 4096";
  const std::string big = TempPath("sparse_1gib.json");
  WriteFile(big, "{");
  std::filesystem::resize_file(big, uint64_t{1} << 30);
  ExpectBadInput("plan --model " + big + flags,
                 {big + ": 1073741824 bytes (1024 MiB) is too large for a config.json",
                  "hint: pass the model's config.json"});
  const std::string huge_number = TempPath("huge_number.json");
  WriteFile(huge_number, R"({"model_type": "llama", "hidden_size": 18446744073709551616})");
  ExpectBadInput("plan --model " + huge_number + flags,
                 {huge_number + ":1: key \"hidden_size\": the number 18446744073709551616 is too "
                                "large to read"});
  std::filesystem::remove(big);
  std::filesystem::remove(huge_number);
}

TEST(PlanCli, NonsenseFlags) {
  ExpectBadInput(std::string("plan --model llama-2-7b --gpu h100 --gpus 0 --global-batch 64 "
                             "--seq-len 4096"),
                 {"--gpus must be a positive integer"});
  ExpectBadInput(std::string("plan --model llama-2-7b --gpu h100 --gpus -8 --global-batch 64 "
                             "--seq-len 4096"),
                 {"--gpus must be a positive integer"});
  ExpectBadInput(std::string("plan --model llama-2-7b --gpu h100 --gpus 8 --global-batch 64 "
                             "--seq-len 0"),
                 {"--seq-len"});
  ExpectBadInput(std::string(kBase) + " --tp 3", {"--tp 3 does not divide the 32 attention heads"});
  ExpectBadInput(std::string(kBase) + " --pp 5", {"--pp 5 does not divide the 32 layers"});
  ExpectBadInput(std::string(kBase) + " --efficiency 1.5", {"--efficiency must be in (0, 1]"});
  ExpectBadInput("plan --model llama-2-7b --gpu a100 --gpus 8 --global-batch 64 --seq-len 4096 "
                 "--precision fp8",
                 {"a100-80gb-sxm", "has no fp8 support"});
  ExpectBadInput("plan --model llama-2-7b --gpu v100 --gpus 8 --global-batch 64 --seq-len 4096 "
                 "--precision bf16",
                 {"v100-sxm2", "has no bf16 support"});
  ExpectBadInput("plan --model llama-2-7b --gpu h100", {"plan needs", "--gpus", "--global-batch"});
}

TEST(PlanCli, ImpossibleRequestSaysWhatWouldFit) {
  // 8B on 8 × 80 GB with DeepSpeed ZeRO-0: 20 B/param (16-bit weights and grads, fp32 grads,
  // master and Adam) = 150 GiB of static memory; ZeRO-3 fits.
  const char kNoFit[] =
      "plan --model llama-3-8b --gpu h100 --gpus 8 --global-batch 64 --seq-len 4096 --tp 1 --pp 1 "
      "--zero 0 --recompute full --mbs 1 --precision bf16 --framework deepspeed";
  const CommandResult r = RunGpuscope(kNoFit);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the configuration does not fit in h100-sxm memory"), std::string::npos)
      << r.err;
  // The suggestions spell a configuration as the working's title and the tables do (Degrees).
  EXPECT_NE(r.err.find("closest: deepspeed tp=1 pp=1 dp=8 mbs=1 ga=8 zero0 recompute=full bf16 adam "
                       "is over the budget by 85.68 GiB"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("ZeRO-3 fits: deepspeed tp=1 pp=1 dp=8 mbs=1 ga=8 zero3 recompute=full bf16 adam"),
            std::string::npos)
      << r.err;
  // The working is still shown, with the verdict.
  EXPECT_NE(r.out.find("\nno configuration fits; the closest: deepspeed tp=1 pp=1 dp=8 mbs=1 ga=8 zero0 "
                       "recompute=full bf16 adam\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  peak        Σ counted terms 157.36 GiB · allocated 156.36 GiB · budget 71.68 GiB · "
                       "capacity 79.65 GiB → DOES NOT FIT\n"),
            std::string::npos)
      << r.out;
  // One configuration given: no search and no table of one in text, but JSON has the working.
  EXPECT_EQ(r.out.find("searched"), std::string::npos) << r.out;
  const CommandResult json = RunGpuscope(std::string(kNoFit) + " --json");
  EXPECT_EQ(json.exit_code, 2) << json.err;
  simdjson::dom::parser parser;
  element doc;
  ASSERT_EQ(parser.parse(json.out).get(doc), simdjson::SUCCESS) << json.out;
  EXPECT_FALSE(bool(FieldValue(doc, "closest", "peak", "fits")));
  EXPECT_EQ(array(Item(doc, "search", "configurations")["rows"]).size(), 0u);
  EXPECT_NE(std::string_view(Item(doc, "suggestions", "suggestion_1")["text"]).find("ZeRO-3 fits"),
            std::string_view::npos);
  // Nothing fits at all on 1 GPU: more GPUs are suggested.
  const CommandResult big = RunGpuscope(
      "plan --model llama-3-70b --gpu a100 --gpus 1 --global-batch 64 --seq-len 4096");
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("no configuration fits"), std::string::npos) << big.err;
  EXPECT_NE(big.err.find("GPUs fits"), std::string::npos) << big.err;
}

TEST(PlanCli, CalibrationFromTrace) {
  GPUSCOPE_REQUIRE_REAL("traces/hta/trace_diff_control_A100_rank3of8.json.gz");
  const std::string trace = RealTrace("hta/trace_diff_control_A100_rank3of8.json.gz");
  const CommandResult r = RunGpuscope(
      "plan --from-trace " + trace +
      " --model gpt2 --gpu a100 --gpus 8 --global-batch 64 --seq-len 1024 --mbs 8 --zero 0 "
      "--recompute none --precision bf16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS);
  const double measured = Num(FieldValue(doc, "calibration", "step_time", "measured_ns"));
  EXPECT_GT(measured, 0);
  const double eta = Num(FieldValue(doc, "calibration", "fit", "efficiency"));
  EXPECT_GT(eta, 0);
  EXPECT_LE(eta, 1);
  // Unless η was clamped, the calibrated prediction reproduces the measured step time.
  if (eta > 0.01 && eta < 1) {
    EXPECT_NEAR(Num(FieldValue(doc, "calibration", "step_time", "calibrated_ns")), measured, 1e-4 * measured);
  }
  const CommandResult text = RunGpuscope(
      "plan --from-trace " + trace +
      " --model gpt2 --gpu a100 --gpus 8 --global-batch 64 --seq-len 1024 --mbs 8");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\ncalibration from " + trace + "\n  trace       ranks 1 · steady steps 5\n"
                          "  traced      ddp tp=1 pp=1 dp=8 mbs=8 ga=1 none recompute=none bf16 adam\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("\n  step time   measured 77.871 ms · predicted 50.074 ms · calibrated 77.871 ms\n"),
            std::string::npos)
      << text.out;
  // The trace is not of GPT-2: its GEMM/attention time (16.8 % of the ops') is shorter than GPT-2's
  // FLOPs allow even at the peak, so η clamps to 1 and the rest of the step is time per token.
  EXPECT_NE(text.out.find("\n  fitted      η 1.000 · was 0.450 · memory overhead n/a · activations × 1.000 · "
                          "outside GEMM/attention, ns per token 6616.194\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("note: η clamped"), std::string::npos) << text.out;
}

// Regression (review): with --pp 2/4 the calibrated step missed the measured one (0.1835 s and
// 0.1850 s for 0.1755 s) because η was fitted on the compute term alone.
TEST(PlanCli, CalibrationWithPipelineReproducesMeasuredStep) {
  GPUSCOPE_REQUIRE_REAL(
      "traces/kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
  const std::string trace =
      RealTrace("kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
  for (const char* pp : {"2", "4"}) {
    const CommandResult r = RunGpuscope(
        "plan --model gpt2-xl --gpu a100 --gpus 4 --mbs 1 --global-batch 8 --seq-len 512 "
        "--from-trace " + trace + " --pp " + pp + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS);
    const double measured = Num(FieldValue(doc, "calibration", "step_time", "measured_ns"));
    ASSERT_GT(measured, 0);
    EXPECT_NEAR(Num(FieldValue(doc, "calibration", "step_time", "calibrated_ns")), measured, 1e-3 * measured)
        << "pp " << pp;
  }
}

TEST(PlanCli, CalibrationFitsMemoryOverhead) {
  GPUSCOPE_REQUIRE_REAL("traces/hta/df_index_resolver_V100_rank1of2_memevents.json.gz");
  const std::string trace = RealTrace("hta/df_index_resolver_V100_rank1of2_memevents.json.gz");
  const CommandResult r = RunGpuscope("plan --from-trace " + trace +
                                      " --model gpt2 --gpu v100 --gpus 2 --global-batch 16 "
                                      "--seq-len 1024 --mbs 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS);
  EXPECT_TRUE(bool(FieldValue(doc, "calibration", "fit", "memory_fitted")));
  EXPECT_GT(int64_t(FieldValue(doc, "calibration", "peak_allocated", "measured_bytes")), 0);
  // The calibrated traced configuration reproduces the measured peak allocated.
  EXPECT_NEAR(Num(FieldValue(doc, "calibration", "peak_allocated", "calibrated_bytes")),
              Num(FieldValue(doc, "calibration", "peak_allocated", "measured_bytes")), 2);
  // The fit scales the activations (so another batch scales with it), or, when no scale fits,
  // the re-plan carries a constant overhead as a memory term of its own.
  const double scale = Num(FieldValue(doc, "calibration", "fit", "activation_scale"));
  bool found = false;
  for (element t : array(Item(doc, "best", "memory_terms")["rows"])) {
    const std::string_view term = t["term"], formula = t["formula"];
    if (scale != 1 && std::string_view(t["kind"]) == "activation") {
      found = true;
      EXPECT_NE(formula.find("(calibrated, --from-trace)"), std::string_view::npos) << formula;
    }
    if (scale == 1 && term.find("calibrated overhead") != std::string_view::npos) {
      found = true;
      EXPECT_EQ(int64_t(t["memory_bytes"]), int64_t(FieldValue(doc, "calibration", "fit", "memory_overhead_bytes")));
    }
  }
  EXPECT_TRUE(found);
}

// A CUDA memory snapshot of the run calibrates memory (its peak allocated), not time (it has no
// steps): issue 33's "snapshots as calibration input". The snapshot is made here by python3: one
// 20 GiB allocation live at the peak beside 2 GiB freed before it.
TEST(PlanCli, CalibrationFromAMemorySnapshotFitsMemoryOnly) {
  const std::string script = TempPath("snap.py"), snap = TempPath("snap.pickle");
  WriteFile(script,
            "import pickle, sys\nG = 1 << 30\nt = [{'action': 'alloc', 'addr': 0, 'size': 2 * G, "
            "'stream': 0, 'time_us': 1, 'frames': []}, {'action': 'free_completed', 'addr': 0, "
            "'size': 2 * G, 'stream': 0, 'time_us': 2, 'frames': []}, {'action': 'alloc', "
            "'addr': 4 * G, 'size': 20 * G, 'stream': 0, 'time_us': 3, 'frames': []}]\n"
            "sys.stdout.buffer.write(pickle.dumps({'segments': [], 'device_traces': [t]}))\n");
  if (std::system(("python3 " + script + " > " + snap + " 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "python3 not found: it makes this test's snapshot";
  const std::string model = std::string(GPUSCOPE_SOURCE_DIR) + "/tests/data/plan/gpt2-medium.config.json";
  const std::string flags = " --model " + model +
                            " --gpu h200 --gpus 1 --global-batch 8 --mbs 8 --seq-len 1024 "
                            "--precision bf16 --framework ddp --no-exact --json";
  const CommandResult plain = RunGpuscope("plan" + flags);
  const CommandResult r = RunGpuscope("plan --from-trace " + snap + flags);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser p1, p2;
  simdjson::dom::element before, doc;
  ASSERT_EQ(p1.parse(plain.out).get(before), simdjson::SUCCESS);
  ASSERT_EQ(p2.parse(r.out).get(doc), simdjson::SUCCESS);
  EXPECT_TRUE(bool(FieldValue(doc, "calibration", "fit", "memory_fitted")));
  EXPECT_EQ(int64_t(FieldValue(doc, "calibration", "peak_allocated", "measured_bytes")),
            int64_t{20} << 30);
  EXPECT_NEAR(Num(FieldValue(doc, "calibration", "peak_allocated", "calibrated_bytes")),
              20.0 * (1 << 30), 2);
  // No step in a snapshot: the measured step is null and the time model is the uncalibrated one
  // (Hugging Face's ops priced), so the best plan's step is the plain plan's.
  EXPECT_TRUE(FieldValue(doc, "calibration", "step_time", "measured_ns").is_null());
  EXPECT_EQ(int64_t(FieldValue(doc, "best", "step", "step_time_ns")),
            int64_t(FieldValue(before, "best", "step", "step_time_ns")));
  EXPECT_NE(r.out.find("a memory snapshot has no step time"), std::string::npos);
  // The activations are scaled to the snapshot's peak: the re-plan's peak allocated falls from
  // the formulas' 26.7 GiB to the measured 20 GiB.
  EXPECT_NEAR(Num(FieldValue(doc, "best", "peak", "peak_allocated_bytes")), 20.0 * (1 << 30),
              0.01 * (1 << 30));
  // A monitor recording is refused with what --from-trace takes.
  const std::string rec = TempPath("run.jsonl");
  WriteFile(rec, "{\"schema\":\"gpuscope.recording/1\"}\n");
  const CommandResult bad = RunGpuscope("plan --from-trace " + rec + flags);
  EXPECT_EQ(bad.exit_code, 2);
}

// Regression (review): --gpus 1000000000 hung (O(N) divisors, re-plans at up to 64×N) and
// --gpus 2^62 overflowed N × 64 in the suggestions. Both are now a usage error naming the limit.
TEST(PlanCli, GpusAboveTheLimit) {
  const std::string rest = " --model llama-3-70b --gpu a100 --global-batch 64 --seq-len 4096";
  ExpectBadInput("plan --gpus 1000000000" + rest,
                 {"--gpus 1000000000 is above the planner's limit of 1048576 GPUs"});
  ExpectBadInput("plan --gpus 4611686018427387904" + rest, {"limit of 1048576 GPUs"});
  ExpectBadInput("plan --gpus 8 --tp 4611686018427387904 --pp 4" + rest, {"--tp", "exceeds --gpus 8"});
  ExpectBadInput("plan --gpus 8 --tp 8 --pp 4611686018427387904" + rest, {"--pp", "exceeds --gpus 8"});
  // At the limit, with nothing fitting on 1 GPU: the search and the "more GPUs" suggestions finish
  // (the suggestions stop at the limit instead of overflowing).
  const CommandResult at =
      RunGpuscope("plan --gpus 1048576 --model llama-3-8b --gpu a100 --global-batch 1048576 "
                  "--seq-len 4096");
  EXPECT_EQ(at.exit_code, 0) << at.err;
  const CommandResult none = RunGpuscope(
      "plan --gpus 1048575 --model llama-3-70b --gpu t4 --global-batch 1048575 --seq-len 131072 "
      "--mbs 1 --tp 1 --pp 1 --zero 0 --recompute none");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("1048576"), std::string::npos) << none.err;
}

// Regression: config.json sizes are bounded one by one (fuzz commit 8c7dd1d); their products used
// as widths (heads × head_dim, 4 × hidden) are bounded too.
TEST(PlanCli, ConfigWidthProductsBounded) {
  const std::string path = TempPath("wide.json");
  WriteFile(path, R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
                      "num_attention_heads": 65536, "head_dim": 65536, "num_key_value_heads": 8,
                      "intermediate_size": 11008, "vocab_size": 32000})");
  ExpectBadInput("plan --model " + path + " --gpu h100 --gpus 8 --global-batch 64 --seq-len 4096",
                 {path, "attention width heads·head_dim = 65536 × 65536 is too large"});
  const std::string gpt = TempPath("wide_gpt2.json");
  WriteFile(gpt, R"({"model_type": "gpt2", "n_embd": 2000000000, "n_layer": 2, "n_head": 1,
                     "n_inner": null, "vocab_size": 50257})");
  ExpectBadInput("plan --model " + gpt + " --gpu h100 --gpus 8 --global-batch 64 --seq-len 1024",
                 {gpt, "FFN size 4·hidden = 8000000000 is too large"});
}

// Regression: with --no-dropout the code counts 4·a·s²·b/t for the explicit attention core, but the
// printed formula said 5·a·s²·b/t.
TEST(PlanCli, AttentionCoreFormulaFollowsDropout) {
  const std::string base =
      "plan --model gpt2 --gpu a100 --gpus 1 --global-batch 8 --seq-len 1024 --tp 1 --pp 1 "
      "--mbs 8 --zero 0 --recompute none --precision bf16 --no-flash --framework megatron";
  const CommandResult with = RunGpuscope(base);
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_NE(with.out.find("+ 5·a·s²·b/t"), std::string::npos) << with.out;
  const CommandResult without = RunGpuscope(base + " --no-dropout");
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_NE(without.out.find("+ 4·a·s²·b/t"), std::string::npos) << without.out;
  EXPECT_EQ(without.out.find("5·a·s²·b/t"), std::string::npos) << without.out;
}

// plan --html FILE: the page names the best configuration and holds the snippets, HTML-escaped
// (the DeepSpeed JSON's quotes, the reasons' ">"), and embeds the same document.
TEST(PlanCli, HtmlHasBestConfigurationAndEscapedSnippets) {
  const std::string dir = TempPath("plan_html");
  std::filesystem::create_directories(dir);
  const std::string page = dir + "/plan.html";
  const CommandResult r = RunGpuscope(
      "plan --model llama-3-8b --gpu h100 --gpus 8 --global-batch 64 --seq-len 4096 --framework "
      "deepspeed --html " + page);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadFile(page);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u) << html.substr(0, 100);
  EXPECT_NE(html.find("<h2>best: deepspeed tp=1 pp=1 dp=8 mbs=1 ga=8 zero2 recompute=none bf16 adam</h2>"),
            std::string::npos);
  EXPECT_NE(html.find("<pre>compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"),
            std::string::npos);
  EXPECT_NE(html.find("<pre>{\n  &quot;train_batch_size&quot;: 64,\n"), std::string::npos);
  EXPECT_NE(html.find("--optim adamw_torch --deepspeed ds_config.json &quot;$@&quot;</pre>"),
            std::string::npos);
  EXPECT_NE(html.find("(peak 72.10 GiB &gt; budget 71.68 GiB)</td>"), std::string::npos);
  // Nothing unescaped outside the embedded JSON (where quotes are \" and > is \u003e).
  EXPECT_EQ(html.find("\"train_batch_size\": 64"), std::string::npos);
  EXPECT_EQ(html.find("GiB > budget"), std::string::npos);
  EXPECT_NE(html.find("<script type=\"application/json\" id=\"gpuscope-report\">{\"schema\":\"gpuscope.plan\""),
            std::string::npos);
}

TEST(PlanCli, CalibrationBadTrace) {
  ExpectBadInput("plan --from-trace /nonexistent/trace.json --model gpt2 --gpu a100 --gpus 8 "
                 "--global-batch 64 --seq-len 1024 --mbs 8",
                 {"/nonexistent/trace.json"});
}

// plan's options table refuses in api (what Python calls) with the words the CLI uses; that it
// makes the flags is Cli.OptionsTablesMakeTheFlags.
TEST(PlanCli, OptionsTableChecksInApiAsInTheCli) {
  api::PlanOptions o;
  o.model = "llama-2-7b";
  o.gpu = "h100-sxm";
  o.gpus = 8;
  o.global_batch = 64;
  o.seq_len = 4096;
  o.top = 1;
  ASSERT_TRUE(api::PlanJob(o).ok());
  auto refused = [&](auto change) {
    api::PlanOptions bad = o;
    change(bad);
    auto r = api::PlanJob(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kUsage);
    return r.ok() ? std::string("(accepted)") : r.status().message();
  };
  EXPECT_EQ(refused([](auto& b) { b.optimizer = "lion"; }),
            "--optimizer: lion not in {adam, adam8bit, sgd}");
  EXPECT_EQ(refused([](auto& b) { b.precision = "int4"; }),
            "--precision: int4 not in {fp32, tf32, bf16, fp16, fp8}");
  EXPECT_EQ(refused([](auto& b) { b.top = 0; }), "--top: value not in range 1 to 1000");
  EXPECT_EQ(refused([](auto& b) {
              b.fsdp = true;
              b.zero = "2";
            }),
            "--fsdp excludes --zero");
  EXPECT_EQ(refused([](auto& b) {
              b.exact_from = "m.json";
              b.no_exact = true;
            }),
            "--exact-from excludes --no-exact");
  const CommandResult cli = RunGpuscope(std::string(kBase) + " --optimizer lion");
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.err.find("lion not in {adam,adam8bit,sgd}"), std::string::npos) << cli.err;
}

// Each enum's one name table reads both ways: every name parses back to its value, and an unknown
// name to none.
TEST(PlanCli, EnumNameTablesReadBothWays) {
  for (const auto& e : plan::kFrameworkNames)
    EXPECT_EQ(FromName(plan::kFrameworkNames, e.name), e.value);
  for (const auto& e : hw::kPrecisionNames) {
    EXPECT_EQ(FromName(hw::kPrecisionNames, e.name), e.value);
    EXPECT_EQ(hw::PrecisionName(e.value), e.name);
  }
  EXPECT_EQ(plan::OffloadName(plan::Offload::kParams), "params");
  EXPECT_EQ(FromName(plan::kRecomputeNames, "sometimes"), std::nullopt);
  EXPECT_EQ(NameOf(plan::kImplNames, static_cast<plan::Impl>(7)), "?");
  EXPECT_EQ(NamesOf(plan::kOptimizerNames), (std::vector<std::string>{"adam", "adam8bit", "sgd"}));
}

}  // namespace
}  // namespace gpuscope::testing
