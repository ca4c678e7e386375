#include "plan/model_config.h"

#include <simdjson.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>

#include "base/sanitize.h"

namespace gpuscope::plan {

namespace {

// model_type → MLP kind. Gated (3 matrices, SiLU/GeLU gate) vs plain (2 matrices).
bool KnownGated(std::string_view t) {
  static const char* kGated[] = {
      "llama", "mistral", "mixtral", "qwen2",  "qwen2_moe", "qwen3",     "gemma", "gemma2",
      "phi3",  "olmo",    "olmo2",   "cohere", "deepseek",  "internlm2", "yi",    "granite"};
  for (const char* g : kGated)
    if (t == g) return true;
  return false;
}
bool KnownPlain(std::string_view t) {
  static const char* kPlain[] = {"gpt2", "gpt_neox", "starcoder2", "gpt_bigcode", "opt",
                                 "gptj", "falcon",   "bloom",      "phi",         "gpt_neo"};
  for (const char* p : kPlain)
    if (t == p) return true;
  return false;
}

// Every size in a config (layers, heads, hidden, vocab, positions, …) is below 2^31: real models
// are far below it, and the planner's products of two sizes stay exact in int64 and double.
constexpr int64_t kMaxSize = (int64_t{1} << 31) - 1;

std::string Num(double d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

class Reader {
 public:
  explicit Reader(simdjson::dom::object root) : root_(root) {}

  // The value under `key`; of duplicate keys the last, as Python's json (and so transformers)
  // reads them. simdjson's own lookup returns the first.
  simdjson::error_code Find(const char* key, simdjson::dom::element* out) const {
    bool found = false;
    for (simdjson::dom::key_value_pair field : root_) {
      if (field.key == key) {
        *out = field.value;
        found = true;
      }
    }
    return found ? simdjson::SUCCESS : simdjson::NO_SUCH_FIELD;
  }

  bool Has(const char* key) {
    simdjson::dom::element e;
    return Find(key, &e) == simdjson::SUCCESS && !e.is_null();
  }

  // The first present, non-null key of `keys`; "" if none.
  const char* FirstPresent(std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (Has(k)) return k;
    return "";
  }

  // A positive integer under `key`. Records an error for non-integers, zero or negatives.
  int64_t PositiveInt(const char* key) {
    simdjson::dom::element e;
    if (Find(key, &e) != simdjson::SUCCESS) return 0;
    int64_t v = 0;
    if (e.is_int64()) {
      v = e.get_int64().value();
    } else if (e.is_uint64()) {
      Bad(key, TooLarge());
      return 0;
    } else if (e.is_double()) {
      const double d = e.get_double().value();
      if (std::floor(d) != d || d <= 0) {
        Bad(key, "must be a positive integer, got " + Num(d));
        return 0;
      }
      // Checked before the cast: a double beyond int64 does not convert (UB).
      if (d > static_cast<double>(kMaxSize)) {
        Bad(key, TooLarge());
        return 0;
      }
      v = static_cast<int64_t>(d);
    } else {
      Bad(key, "must be a positive integer, got a " + TypeName(e));
      return 0;
    }
    if (v <= 0) {
      Bad(key, "must be a positive integer, got " + std::to_string(v));
      return 0;
    }
    if (v > kMaxSize) {
      Bad(key, TooLarge());
      return 0;
    }
    return v;
  }

  std::string String(const char* key) {
    simdjson::dom::element e;
    if (Find(key, &e) != simdjson::SUCCESS) return "";
    std::string_view s;
    if (e.get_string().get(s) != simdjson::SUCCESS) return "";
    // A config's strings reach the terminal and the page: control characters become spaces.
    return SanitizeText(s);
  }

  // -1 absent, 0 false, 1 true; a non-bool records an error.
  int Bool(const char* key) {
    simdjson::dom::element e;
    if (Find(key, &e) != simdjson::SUCCESS || e.is_null()) return -1;
    bool b = false;
    if (e.get_bool().get(b) != simdjson::SUCCESS) {
      Bad(key, "must be true or false, got a " + TypeName(e));
      return -1;
    }
    return b ? 1 : 0;
  }

  double Number(const char* key, double fallback) {
    simdjson::dom::element e;
    if (Find(key, &e) != simdjson::SUCCESS) return fallback;
    double d = 0;
    if (e.get_double().get(d) == simdjson::SUCCESS) return d;
    int64_t i = 0;
    if (e.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
    return fallback;
  }

  const std::vector<std::string>& errors() const { return errors_; }

 private:
  static std::string TooLarge() {
    return "is too large (at most " + std::to_string(kMaxSize) + ")";
  }
  static std::string TypeName(simdjson::dom::element e) {
    switch (e.type()) {
      case simdjson::dom::element_type::STRING:
        return "string";
      case simdjson::dom::element_type::ARRAY:
        return "list";
      case simdjson::dom::element_type::OBJECT:
        return "object";
      case simdjson::dom::element_type::BOOL:
        return "boolean";
      case simdjson::dom::element_type::NULL_VALUE:
        return "null";
      default:
        return "number";
    }
  }
  void Bad(const char* key, const std::string& what) {
    errors_.push_back(std::string("key \"") + key + "\" " + what);
  }

  simdjson::dom::object root_;
  std::vector<std::string> errors_;
};

struct OutOfRangeNumber {
  std::string key;   // the key whose value (or list item) the number is; "" at top level
  std::string text;  // the number as written, shortened
  size_t line = 1;   // 1-based
};

// Whether `t` is a number by JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonNumber(std::string_view t) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < t.size() && t[i] == '.' && (++i, !digits())) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

// simdjson answers NUMBER_ERROR both for malformed numbers and for well-formed ones beyond its
// range (integers past 2^64, doubles past 1.8e308) and does not say where. This scan finds the
// first well-formed number whose value is out of range, with its key, so the message can name
// the key and not call a valid file "not valid JSON".
std::optional<OutOfRangeNumber> FindOutOfRangeNumber(std::string_view json) {
  struct Container {
    bool is_array;
    std::string key;  // the key the container is the value of
  };
  std::vector<Container> stack;
  std::string last_string;  // the most recent string: a key when a ':' follows it
  std::string key;          // the key of the value being read
  size_t line = 1;
  for (size_t i = 0; i < json.size();) {
    const char c = json[i];
    if (c == '"') {
      std::string s;
      for (++i; i < json.size() && json[i] != '"'; ++i) {
        if (json[i] == '\n') ++line;
        if (json[i] == '\\' && i + 1 < json.size()) ++i;  // escapes are kept as their letter
        s.push_back(json[i]);
      }
      ++i;
      last_string = std::move(s);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = i;
      while (end < json.size() && std::strchr("+-0123456789.eE", json[end]) != nullptr) ++end;
      const std::string text(json.substr(i, end - i));
      i = end;
      if (!IsJsonNumber(text)) continue;  // malformed: simdjson's "not valid JSON" says it
      bool out_of_range = false;
      if (text.find_first_of(".eE") == std::string::npos) {
        // An integer: simdjson reads down to −2^63 and up to 2^64 − 1.
        const bool negative = text[0] == '-';
        const std::string_view digits = std::string_view(text).substr(negative ? 1 : 0);
        const std::string_view limit = negative ? "9223372036854775808" : "18446744073709551615";
        out_of_range =
            digits.size() > limit.size() || (digits.size() == limit.size() && digits > limit);
      } else {
        out_of_range = std::isinf(std::strtod(text.c_str(), nullptr));
      }
      if (out_of_range)
        return OutOfRangeNumber{key, text.size() > 40 ? text.substr(0, 40) + "…" : text, line};
    } else {
      switch (c) {
        case '\n':
          ++line;
          break;
        case ':':
          key = last_string;
          break;
        case '{':
        case '[':
          stack.push_back({c == '[', key});
          if (c == '{') key.clear();
          break;
        case '}':
        case ']':
          if (!stack.empty()) stack.pop_back();
          key = stack.empty() ? "" : stack.back().is_array ? stack.back().key : "";
          break;
        case ',':
          key = stack.empty() || !stack.back().is_array ? "" : stack.back().key;
          break;
        default:
          break;
      }
      ++i;
    }
  }
  return std::nullopt;
}

// Attention heads, embeddings, norms, biases and positions, by each family's keys and defaults
// (every default taken is an assumption of m).
void ReadArchitecture(Reader& r, ModelConfig& m) {
  // GQA. Absent → MHA, announced (planner-reference §11).
  if (r.Has("num_key_value_heads")) {
    m.kv_heads = r.PositiveInt("num_key_value_heads");
  } else if (r.Bool("multi_query") == 1) {
    m.kv_heads = 1;
  } else {
    m.kv_heads = m.heads;
    m.assumptions.push_back("num_key_value_heads absent → assuming g = a (MHA)");
  }
  if (r.Has("head_dim")) m.head_dim = r.PositiveInt("head_dim");

  const int tied = r.Bool("tie_word_embeddings");
  if (tied >= 0) {
    m.tied_embeddings = tied == 1;
  } else {
    // Defaults of the HF config classes: PretrainedConfig ties, LlamaConfig & co. do not.
    static const char* kUntiedDefault[] = {"llama",     "mistral",  "mixtral", "qwen2",
                                           "qwen2_moe", "gpt_neox", "phi3",    "olmo"};
    m.tied_embeddings = true;
    for (const char* u : kUntiedDefault)
      if (m.model_type == u) m.tied_embeddings = false;
    m.assumptions.push_back(std::string("tie_word_embeddings absent → ") +
                            (m.tied_embeddings ? "tied" : "untied") + " (default of " +
                            (m.model_type.empty() ? "PretrainedConfig" : m.model_type) + ")");
  }

  m.rms_norm = r.Has("rms_norm_eps") || (!r.Has("layer_norm_epsilon") && !r.Has("layer_norm_eps") &&
                                         !r.Has("norm_epsilon") && m.gated_mlp);
  if (m.model_type == "gpt2" || m.model_type == "gpt_neox" || m.model_type == "gpt_bigcode" ||
      m.model_type == "opt")
    m.linear_biases = true;
  const int use_bias = r.Bool(r.Has("use_bias") ? "use_bias" : "bias");
  if (use_bias >= 0) m.linear_biases = use_bias == 1;
  if (r.Bool("attention_bias") == 1) m.qkv_bias_only = true;
  if (m.model_type == "qwen2" || m.model_type == "qwen2_moe") m.qkv_bias_only = true;
  if (m.model_type == "gpt2" || m.model_type == "gpt_bigcode" || m.model_type == "opt") {
    const char* k_pos = r.FirstPresent({"n_positions", "max_position_embeddings"});
    if (*k_pos) m.learned_positions = r.PositiveInt(k_pos);
  }
  const char* k_maxpos = r.FirstPresent({"max_position_embeddings", "n_positions", "n_ctx"});
  if (*k_maxpos) m.max_positions = r.PositiveInt(k_maxpos);
}

// The head dimension (h/a unless given) and the widths the planner multiplies: each within the
// sizes' bound, heads a multiple of KV heads, top-k within the experts.
Status CheckWidths(ModelConfig& m, const std::string& source) {
  if (m.head_dim == 0) {
    if (m.hidden % m.heads != 0)
      return Status::Error(StatusCode::kInvalidInput,
                           source + ": hidden size " + std::to_string(m.hidden) +
                               " is not divisible by " + std::to_string(m.heads) +
                               " heads and head_dim is absent (hint: add \"head_dim\")");
    m.head_dim = m.hidden / m.heads;
  }
  // Products of two sizes the planner uses as widths: each stays within the same 2^31 − 1 bound
  // as the sizes themselves (4h when n_inner is null, the attention widths a·d_h and g·d_h).
  auto width = [&](const std::string& what, int64_t a, int64_t b) -> Status {
    if (a > kMaxSize / b)
      return Status::Error(StatusCode::kInvalidInput,
                           source + ": " + what + " = " + std::to_string(a) + " × " +
                               std::to_string(b) + " is too large (at most " +
                               std::to_string(kMaxSize) + ") (hint: fix the value in the config)");
    return Status::Ok();
  };
  if (m.ffn > kMaxSize)  // 4h with n_inner null: h ≤ 2^31 − 1 keeps 4h exact in int64
    return Status::Error(StatusCode::kInvalidInput,
                         source + ": FFN size 4·hidden = " + std::to_string(m.ffn) +
                             " is too large (at most " + std::to_string(kMaxSize) +
                             ") (hint: fix the value in the config)");
  GPUSCOPE_RETURN_IF_ERROR(width("attention width heads·head_dim", m.heads, m.head_dim));
  GPUSCOPE_RETURN_IF_ERROR(width("KV width kv_heads·head_dim", m.kv_heads, m.head_dim));
  if (m.heads % m.kv_heads != 0)
    return Status::Error(StatusCode::kInvalidInput,
                         source + ": num_attention_heads " + std::to_string(m.heads) +
                             " is not a multiple of num_key_value_heads " +
                             std::to_string(m.kv_heads));
  if (m.experts > 0 && m.experts_top_k > m.experts)
    return Status::Error(StatusCode::kInvalidInput,
                         source + ": num_experts_per_tok " + std::to_string(m.experts_top_k) +
                             " exceeds the " + std::to_string(m.experts) + " experts");
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> ParseHfConfig(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element root;
  if (auto err = parser.parse(padded).get(root); err != simdjson::SUCCESS) {
    if (err == simdjson::NUMBER_ERROR) {
      if (auto big = FindOutOfRangeNumber(json))
        return Status::Error(StatusCode::kInvalidInput,
                             source + ":" + std::to_string(big->line) + ":" +
                                 (big->key.empty() ? "" : " key \"" + big->key + "\":") +
                                 " the number " + big->text +
                                 " is too large to read (hint: sizes in a config are at most " +
                                 std::to_string(kMaxSize) + "; fix the value in the config)");
    }
    return Status::Error(StatusCode::kInvalidInput,
                         source + ": not valid JSON (" + simdjson::error_message(err) +
                             ") (hint: --model takes a Hugging Face config.json or a bundled "
                             "model name)");
  }
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS)
    return Status::Error(StatusCode::kInvalidInput,
                         source + ": expected a JSON object (a Hugging Face config.json)");
  Reader r(object);
  ModelConfig m;
  m.name = SanitizeText(source);
  m.model_type = r.String("model_type");

  // Each quantity under the names the HF families use (LLaMA-style first, GPT-2 style second).
  const char* k_hidden = r.FirstPresent({"hidden_size", "n_embd", "d_model"});
  const char* k_layers = r.FirstPresent({"num_hidden_layers", "n_layer", "num_layers"});
  const char* k_heads = r.FirstPresent({"num_attention_heads", "n_head", "num_heads"});
  const char* k_vocab = r.FirstPresent({"vocab_size", "padded_vocab_size"});
  std::vector<std::string> missing;
  if (!*k_hidden) missing.push_back("hidden_size (or n_embd)");
  if (!*k_layers) missing.push_back("num_hidden_layers (or n_layer)");
  if (!*k_heads) missing.push_back("num_attention_heads (or n_head)");
  if (!*k_vocab) missing.push_back("vocab_size");
  if (*k_hidden) m.hidden = r.PositiveInt(k_hidden);
  if (*k_layers) m.layers = r.PositiveInt(k_layers);
  if (*k_heads) m.heads = r.PositiveInt(k_heads);
  if (*k_vocab) m.vocab = r.PositiveInt(k_vocab);

  // MLP kind: model_type first, then the activation's name.
  m.activation = r.String("hidden_act");
  if (m.activation.empty()) m.activation = r.String("activation_function");
  if (KnownGated(m.model_type)) {
    m.gated_mlp = true;
  } else if (KnownPlain(m.model_type)) {
    m.gated_mlp = false;
  } else {
    m.gated_mlp = m.activation == "silu" || m.activation == "swiglu" || m.activation == "swish";
    m.assumptions.push_back("model_type \"" + m.model_type + "\" not known → " +
                            (m.gated_mlp ? "gated MLP (hidden_act silu)" : "plain 2-matrix MLP"));
  }

  // What the Hugging Face code keeps (plan --impl hf).
  m.use_cache = r.Bool("use_cache") != 0;  // absent: PretrainedConfig's default, true
  {
    const double gpt2_default = m.model_type == "gpt2" ? 0.1 : 0.0;  // GPT2Config's resid_pdrop
    const double p =
        std::max({r.Number("resid_pdrop", gpt2_default), r.Number("hidden_dropout", 0.0),
                  r.Number("hidden_dropout_prob", 0.0)});
    m.hf_dropout = p > 0;
  }
  m.fused_qkv = m.model_type == "gpt2" || m.model_type == "gpt_neox" ||
                m.model_type == "gpt_bigcode" || m.model_type == "falcon" ||
                m.model_type == "phi3" || m.model_type == "bloom";

  // FFN size. GPT-2's n_inner may be null, which means 4h by definition of the HF GPT-2 config.
  const char* k_ffn =
      r.FirstPresent({"intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"});
  if (*k_ffn) {
    m.ffn = r.PositiveInt(k_ffn);
  } else if (m.model_type == "gpt2" || m.model_type == "gpt_neo") {
    m.ffn = 4 * m.hidden;
    m.assumptions.push_back("n_inner null → f = 4h (GPT-2 definition)");
  } else {
    missing.push_back("intermediate_size");
  }

  // MoE.
  const char* k_experts = r.FirstPresent({"num_local_experts", "num_experts", "n_routed_experts"});
  if (*k_experts) {
    m.experts = r.PositiveInt(k_experts);
    if (r.Has("num_experts_per_tok"))
      m.experts_top_k = r.PositiveInt("num_experts_per_tok");
    else
      missing.push_back("num_experts_per_tok (MoE config with " + std::string(k_experts) + ")");
    if (r.Has("moe_intermediate_size")) m.ffn = r.PositiveInt("moe_intermediate_size");
  }

  if (!missing.empty()) {
    std::string list;
    for (const std::string& k : missing) list += (list.empty() ? "" : ", ") + k;
    return Status::Error(StatusCode::kInvalidInput,
                         source + ": missing key" + (missing.size() > 1 ? "s " : " ") + list +
                             " (hint: pass the model's Hugging Face config.json, or a bundled "
                             "name: gpuscope plan --list-models)");
  }

  ReadArchitecture(r, m);

  if (!r.errors().empty()) {
    std::string list;
    for (const std::string& e : r.errors()) list += (list.empty() ? "" : "; ") + e;
    return Status::Error(StatusCode::kInvalidInput,
                         source + ": " + list + " (hint: fix the value in the config)");
  }
  GPUSCOPE_RETURN_IF_ERROR(CheckWidths(m, source));
  return m;
}

Result<ModelConfig> LoadModelConfig(const std::string& name_or_path) {
  const std::string_view bundled = BundledModelText(name_or_path);
  if (!bundled.empty()) return ParseHfConfig(bundled, name_or_path);
  const int fd = open(name_or_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      return Status::Error(StatusCode::kIoError,
                           name_or_path + ": cannot open: " + std::strerror(errno));
    std::string names;
    for (const std::string& n : BundledModelNames()) names += (names.empty() ? "" : ", ") + n;
    return Status::Error(StatusCode::kNotFound,
                         "--model \"" + name_or_path +
                             "\" is neither a file nor a bundled model (bundled: " + names + ")");
  }
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  const std::string too_large =
      " is too large for a config.json (at most " + std::to_string(kMaxConfigBytes >> 20) +
      " MiB; a Hugging Face config.json is a few KB) (hint: pass the model's config.json, not its "
      "weights or tokenizer)";
  struct stat st;
  if (fstat(fd, &st) != 0)
    return Status::Error(StatusCode::kIoError,
                         name_or_path + ": cannot read: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return Status::Error(StatusCode::kInvalidInput,
                         name_or_path + ": is a folder (hint: pass the config.json inside it)");
  // A regular file is judged by its size before a byte is read; a pipe or device by what it
  // gives, up to one byte past the cap.
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxConfigBytes)
    return Status::Error(StatusCode::kInvalidInput,
                         name_or_path + ": " + std::to_string(st.st_size) + " bytes (" +
                             Num(static_cast<double>(st.st_size) / (1 << 20)) + " MiB)" +
                             too_large);
  std::string text;
  char buf[64 * 1024];
  while (text.size() <= kMaxConfigBytes) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status::Error(StatusCode::kIoError,
                           name_or_path + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  if (text.size() > kMaxConfigBytes)
    return Status::Error(
        StatusCode::kInvalidInput,
        name_or_path + ": more than " + std::to_string(kMaxConfigBytes) + " bytes" + too_large);
  return ParseHfConfig(text, name_or_path);
}

}  // namespace gpuscope::plan
