// A transformer's shape for the planner, read from a Hugging Face config.json (or a bundled one).
//
// Gated MLPs (LLaMA, Mistral, Qwen2, Mixtral: SwiGLU, 3 matrices) and plain ones (GPT-2, GPT-NeoX,
// StarCoder2: 2 matrices, GeLU) are told apart by model_type, then by hidden_act. Every default
// taken for an absent key is announced in `assumptions`, so nothing is guessed silently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/status.h"

namespace gpuscope::plan {

struct ModelConfig {
  std::string name;        // file name or bundled name
  std::string model_type;  // HF model_type, "" if absent
  int64_t hidden = 0;      // h
  int64_t layers = 0;      // L
  int64_t heads = 0;       // a
  int64_t kv_heads = 0;    // g (= a without GQA)
  int64_t head_dim = 0;    // d_h (h/a unless the config says)
  int64_t ffn = 0;         // f, intermediate size of a dense MLP (or of one expert)
  int64_t vocab = 0;       // V as in the config (the embedding's rows)
  bool tied_embeddings = false;
  bool gated_mlp = false;         // SwiGLU/GeGLU: 3 matrices, γ = 3/2
  bool rms_norm = false;          // RMSNorm (n = 1) or LayerNorm (n = 2: weight and bias)
  bool linear_biases = false;     // biases on every linear layer (GPT-2, GPT-NeoX, StarCoder2)
  bool qkv_bias_only = false;     // Qwen2: biases on q, k, v only
  int64_t learned_positions = 0;  // rows of a learned position embedding (GPT-2), 0 = rotary
  int64_t experts = 0;            // MoE routed experts E, 0 = dense
  int64_t experts_top_k = 0;      // experts per token
  std::string activation;         // hidden_act
  int64_t max_positions = 0;      // max_position_embeddings / n_positions, 0 unknown
  // What Hugging Face's eager modules keep (docs/planner.md "Implementations"):
  bool use_cache = true;    // use_cache (HF's default true): GPT-2 copies K and V into a cache
  bool hf_dropout = false;  // resid_pdrop / hidden_dropout > 0: 1-byte masks per dropout
  bool fused_qkv = false;   // one QKV projection (GPT-2 c_attn, GPT-NeoX, Falcon, Phi-3)
  std::vector<std::string> assumptions;  // defaults taken for absent keys
};

// Parses config.json text. `source` names the file in errors ("FILE: key K: …"); a number beyond
// what a JSON parser holds (past 2^64, or 1e309) is "too large", naming its key.
Result<ModelConfig> ParseHfConfig(std::string_view json, const std::string& source);

// Hugging Face config.json files are a few KB (a classifier's id2label map takes the largest to
// hundreds of KB); a bigger file is some other file (weights, a tokenizer), refused unread.
inline constexpr uint64_t kMaxConfigBytes = uint64_t{4} << 20;  // 4 MiB

// `--model`: a bundled name (see BundledModelNames) or a path to a config.json (a regular file
// over kMaxConfigBytes is refused by its size; a pipe is read up to the cap). Duplicate keys take
// the last value, as in Python's json.
Result<ModelConfig> LoadModelConfig(const std::string& name_or_path);

// Names of the configs compiled into the binary (models/*.json), sorted.
std::vector<std::string> BundledModelNames();
// The bundled config's text, or "" if there is none by that name.
std::string_view BundledModelText(std::string_view name);

}  // namespace gpuscope::plan
