// Model config parsing: both MLP families, GQA, MoE, defaults announced, errors naming keys; the
// bundled configs against the models' published parameter counts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "plan/model_config.h"
#include "plan/planner.h"

namespace gpuscope::plan {
namespace {

// Published totals (Hugging Face model cards / safetensors metadata of the named repositories).
TEST(PlanConfig, BundledParameterCountsMatchPublished) {
  struct Row {
    const char* name;
    double published;
  };
  const Row rows[] = {
      {"gpt2", 124439808},          {"gpt2-xl", 1557611200},     {"llama-2-7b", 6738415616},
      {"llama-3-8b", 8030261248},   {"llama-3-70b", 70553706496}, {"mistral-7b", 7241732096},
      {"mixtral-8x7b", 46702792704}, {"qwen2-7b", 7615616512},   {"gpt-neox-20b", 20554567680},
      {"starcoder2-3b", 3030371328},
  };
  ASSERT_EQ(BundledModelNames().size(), std::size(rows));
  for (const Row& r : rows) {
    auto m = LoadModelConfig(r.name);
    ASSERT_TRUE(m.ok()) << r.name << ": " << m.status().message();
    const double total = CountParameters(*m, m->vocab).total;
    EXPECT_NEAR(total / r.published, 1.0, 0.01) << r.name << " counted " << total;
  }
  // Mixtral: 12.9 B active per token (2 of 8 experts), as published.
  auto mixtral = LoadModelConfig("mixtral-8x7b");
  EXPECT_NEAR(CountParameters(*mixtral, mixtral->vocab).active / 12.9e9, 1.0, 0.01);
}

TEST(PlanConfig, FamiliesAreRecognised) {
  auto llama = LoadModelConfig("llama-3-8b");
  ASSERT_TRUE(llama.ok());
  EXPECT_TRUE(llama->gated_mlp);
  EXPECT_TRUE(llama->rms_norm);
  EXPECT_FALSE(llama->tied_embeddings);
  EXPECT_EQ(llama->kv_heads, 8);
  EXPECT_EQ(llama->head_dim, 128);
  auto gpt2 = LoadModelConfig("gpt2");
  ASSERT_TRUE(gpt2.ok());
  EXPECT_FALSE(gpt2->gated_mlp);
  EXPECT_FALSE(gpt2->rms_norm);
  EXPECT_TRUE(gpt2->tied_embeddings);  // PretrainedConfig default, announced
  EXPECT_TRUE(gpt2->linear_biases);
  EXPECT_EQ(gpt2->ffn, 4 * 768);
  EXPECT_EQ(gpt2->learned_positions, 1024);
  EXPECT_EQ(gpt2->kv_heads, 12);
  bool announced = false;
  for (const std::string& a : gpt2->assumptions)
    announced |= a.find("num_key_value_heads absent") != std::string::npos;
  EXPECT_TRUE(announced);
  auto mixtral = LoadModelConfig("mixtral-8x7b");
  EXPECT_EQ(mixtral->experts, 8);
  EXPECT_EQ(mixtral->experts_top_k, 2);
}

TEST(PlanConfig, MissingKeysAreNamed) {
  auto r = ParseHfConfig(R"({"model_type": "llama", "hidden_size": 4096})", "cfg.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("cfg.json"), std::string::npos);
  EXPECT_NE(msg.find("num_hidden_layers"), std::string::npos);
  EXPECT_NE(msg.find("num_attention_heads"), std::string::npos);
  EXPECT_NE(msg.find("vocab_size"), std::string::npos);
  EXPECT_NE(msg.find("intermediate_size"), std::string::npos);
  EXPECT_EQ(msg.find("hidden_size"), std::string::npos);  // present, so not named
}

TEST(PlanConfig, NonsenseNumbersAreRejected) {
  const std::string base =
      R"("model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "intermediate_size": 11008, "vocab_size": 32000)";
  for (const char* layers : {"12.5", "-4", "0", "\"32\""}) {
    auto r = ParseHfConfig("{" + base + ", \"num_hidden_layers\": " + layers + "}", "c.json");
    ASSERT_FALSE(r.ok()) << layers;
    EXPECT_NE(r.status().message().find("num_hidden_layers"), std::string::npos) << layers;
    EXPECT_NE(r.status().message().find("positive integer"), std::string::npos) << layers;
  }
  auto ok = ParseHfConfig("{" + base + ", \"num_hidden_layers\": 32.0}", "c.json");
  EXPECT_TRUE(ok.ok());  // an integral double is an integer
  auto bad_json = ParseHfConfig("{\"hidden_size\": 4096,", "c.json");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.status().message().find("not valid JSON"), std::string::npos);
  auto gqa = ParseHfConfig("{" + base + ", \"num_hidden_layers\": 32, \"num_key_value_heads\": 5}",
                           "c.json");
  ASSERT_FALSE(gqa.ok());
  EXPECT_NE(gqa.status().message().find("not a multiple of num_key_value_heads"),
            std::string::npos);
}

// Found while writing fuzz/plan_config_fuzz (review of the casts): 1e300 was cast from double to
// int64 (UB), and sizes near 2^63 overflowed the planner's int64 products (heads × head_dim,
// layers × heads × head_dim).
TEST(PlanConfig, HugeSizesAreRejected) {
  const std::string base =
      R"("model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "intermediate_size": 11008, "vocab_size": 32000)";
  for (const char* layers : {"1e300", "-1e300", "9223372036854775807", "18446744073709551615",
                             "2147483648", "4e18"}) {
    auto r = ParseHfConfig("{" + base + ", \"num_hidden_layers\": " + layers + "}", "c.json");
    ASSERT_FALSE(r.ok()) << layers;
    EXPECT_NE(r.status().message().find("c.json: key \"num_hidden_layers\""), std::string::npos)
        << r.status().message();
  }
  auto r = ParseHfConfig("{" + base + ", \"num_hidden_layers\": 32, \"head_dim\": 4e18}", "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"head_dim\" is too large (at most 2147483647)"),
            std::string::npos)
      << r.status().message();
  EXPECT_TRUE(ParseHfConfig("{" + base + ", \"num_hidden_layers\": 2147483647}", "c.json").ok());
}

// --gpu-spec is user text: "inf" and 1e300 passed the "positive" check and made every plan fit.
TEST(PlanConfig, GpuSpecRejectsInfiniteAndHugeNumbers) {
  EXPECT_TRUE(hw::ParseGpuSpec("h800:80:989:3350:200:1979").ok());
  for (const char* spec : {"x:inf:989:3350", "x:80:1e300:3350", "x:80:989:nan", "x:80:989:3350:0",
                           "x:80:989", ":80:989:3350", "x:80:989:3350:200:1979:7", "x:80::3350"}) {
    auto r = hw::ParseGpuSpec(spec);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_NE(r.status().message().find("hint: --gpu-spec NAME:MEM_GIB"), std::string::npos)
        << r.status().message();
  }
  EXPECT_NE(hw::ParseGpuSpec("x:inf:989:3350").status().message().find(
                "field 2 \"inf\" is not a positive number up to 1e9"),
            std::string::npos);
}

// Found by plan_config_fuzz: a --gpu-spec name of invalid UTF-8 reached the document raw (the
// JSON then read back another name); an ESC would reach the terminal. Names are cleaned.
TEST(PlanConfig, GpuSpecNameIsSanitised) {
  auto r = hw::ParseGpuSpec("\xf5\xf5gpu\x1b]52;c;x\x07:80:989:3350");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->name, "\xEF\xBF\xBD\xEF\xBF\xBDgpu ]52;c;x ");
}

// issue 19 item 11: a value beyond what a JSON parser holds read as "not valid JSON".
TEST(PlanConfig, NumberTooLargeToReadNamesItsKey) {
  const std::string base =
      R"("model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
         "intermediate_size": 11008, "vocab_size": 32000)";
  struct Case {
    std::string json;
    std::string expected;
  };
  const Case cases[] = {
      {"{" + base + ",\n \"hidden_size\": 18446744073709551616}",
       "c.json:3: key \"hidden_size\": the number 18446744073709551616 is too large to read"},
      {"{" + base + ", \"hidden_size\": 4096, \"rope_scaling\": {\"factor\": 1e400}}",
       "c.json:2: key \"factor\": the number 1e400 is too large to read"},
      {"{" + base + ", \"hidden_size\": 4096, \"ids\": [1, 2, -9223372036854775809]}",
       "key \"ids\": the number -9223372036854775809 is too large"},
      {"[123456789012345678901234567890]", "c.json:1: the number 1234567890"},
  };
  for (const Case& c : cases) {
    auto r = ParseHfConfig(c.json, "c.json");
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find("not valid JSON"), std::string::npos);
  }
  // 2^64 − 1 is still read, and rejected as a size by the usual check.
  auto r = ParseHfConfig("{" + base + ", \"hidden_size\": 18446744073709551615}", "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"hidden_size\" is too large (at most 2147483647)"),
            std::string::npos)
      << r.status().message();
  // A malformed number is still "not valid JSON".
  r = ParseHfConfig("{" + base + ", \"hidden_size\": 01}", "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not valid JSON"), std::string::npos);
}

// Python's json (and so transformers' from_pretrained) keeps the last of duplicate keys;
// simdjson's lookup returns the first.
TEST(PlanConfig, DuplicateKeysTakeTheLastValue) {
  const std::string base =
      R"("model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
         "intermediate_size": 11008, "vocab_size": 32000)";
  auto r = ParseHfConfig("{" + base + R"(, "hidden_size": 1024, "hidden_size": 4096})", "c.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->hidden, 4096);
  r = ParseHfConfig("{" + base + R"(, "hidden_size": 4096, "hidden_size": 1024})", "c.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->hidden, 1024);
  // Also for a bad first value that the last one replaces, and the other way round.
  r = ParseHfConfig("{" + base + R"(, "hidden_size": -1, "hidden_size": 2048})", "c.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->hidden, 2048);
  r = ParseHfConfig("{" + base + R"(, "hidden_size": 2048, "hidden_size": null})", "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing key hidden_size"), std::string::npos)
      << r.status().message();
}

// issue 19 item 8: a 1 GiB file given as --model was read whole (4.1 GB, 40 s).
TEST(PlanConfig, FilesOverTheCapAreRefusedUnread) {
  const std::string dir = ::testing::TempDir() + "gpuscope_plan_cap_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  // A sparse 1 GiB file: refused by its size, so this takes no time and no memory.
  const std::string huge = dir + "/huge.json";
  { std::ofstream(huge) << "{"; }
  std::filesystem::resize_file(huge, uint64_t{1} << 30);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = LoadModelConfig(huge);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find(huge + ": 1073741824 bytes (1024 MiB) is too large for a "
                                             "config.json (at most 4 MiB"),
            std::string::npos)
      << r.status().message();
  EXPECT_LT(seconds, 0.5);

  // At the cap a config (padded with spaces) is read; one byte more is refused.
  const std::string config = R"({"model_type": "llama", "hidden_size": 4096,
      "num_attention_heads": 32, "num_hidden_layers": 32, "intermediate_size": 11008,
      "vocab_size": 32000})";
  const std::string at_cap = dir + "/at_cap.json";
  { std::ofstream(at_cap) << config << std::string(kMaxConfigBytes - config.size(), ' '); }
  ASSERT_EQ(std::filesystem::file_size(at_cap), kMaxConfigBytes);
  r = LoadModelConfig(at_cap);
  EXPECT_TRUE(r.ok()) << r.status().message();
  { std::ofstream(at_cap, std::ios::app) << ' '; }
  r = LoadModelConfig(at_cap);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is too large for a config.json"), std::string::npos);

  // Not a regular file: read up to the cap and no further (/dev/zero never ends).
  r = LoadModelConfig("/dev/zero");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/dev/zero: more than 4194304 bytes is too large"),
            std::string::npos)
      << r.status().message();
  // A folder says so.
  r = LoadModelConfig(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is a folder (hint: pass the config.json inside it)"),
            std::string::npos)
      << r.status().message();
  std::filesystem::remove_all(dir);
}

TEST(PlanConfig, UnknownModelNameListsBundled) {
  auto r = LoadModelConfig("no-such-model");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("llama-3-8b"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::plan
