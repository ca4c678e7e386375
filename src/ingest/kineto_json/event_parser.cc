#include "ingest/kineto_json/event_parser.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <string_view>

#include "base/numbers.h"
#include "base/sanitize.h"
#include "base/utf8.h"

namespace gpuscope::ingest {

namespace sj = simdjson;
namespace od = simdjson::ondemand;

namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// Runtime API names may carry a version suffix ("cudaLaunchKernel_v7000" in Nsight exports).
std::string_view StripVersionSuffix(std::string_view name) {
  const size_t pos = name.rfind("_v");
  if (pos == std::string_view::npos || pos + 2 >= name.size()) return name;
  for (size_t i = pos + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, pos);
}

}  // namespace

Category ClassifyCategory(std::string_view cat) {
  struct Entry {
    std::string_view name;
    Category category;
  };
  // 2021 capitalised names and today's names; compared case-insensitively.
  static constexpr Entry kTable[] = {
      {"kernel", Category::kKernel},
      {"gpu_memcpy", Category::kMemcpy},
      {"memcpy", Category::kMemcpy},
      {"gpu_memset", Category::kMemset},
      {"memset", Category::kMemset},
      {"cuda_sync", Category::kCudaSync},
      {"cuda_runtime", Category::kRuntime},
      {"runtime", Category::kRuntime},
      {"hip_runtime", Category::kRuntime},
      {"cuda_driver", Category::kDriver},
      {"hip_driver", Category::kDriver},
      {"cpu_op", Category::kCpuOp},
      {"operator", Category::kCpuOp},
      {"user_annotation", Category::kUserAnnotation},
      {"gpu_user_annotation", Category::kGpuUserAnnotation},
      {"python_function", Category::kPythonFunction},
      {"python_function_", Category::kPythonFunction},
      {"cuda_profiler_range", Category::kProfilerRange},
      {"trace", Category::kTrace},
      {"ac2g", Category::kFlow},
      {"async", Category::kFlow},
      {"async_cpu_to_gpu", Category::kFlow},
      {"fwdbwd", Category::kFlow},
      {"forward_backward", Category::kFlow},
      {"cpu_instant_event", Category::kInstant},
  };
  for (const Entry& e : kTable) {
    if (EqualsIgnoreCase(cat, e.name)) return e.category;
  }
  return Category::kUnknown;
}

RuntimeKind ClassifyRuntime(std::string_view raw_name) {
  const std::string_view name = StripVersionSuffix(raw_name);
  static constexpr std::string_view kKernelLaunch[] = {
      "cudaLaunchKernel",
      "cudaLaunchKernelExC",
      "cuLaunchKernel",
      "cuLaunchKernelEx",
      "hipLaunchKernel",
      "hipExtModuleLaunchKernel",
      "hipModuleLaunchKernel",
      "cudaLaunchCooperativeKernel",
      "cuLaunchCooperativeKernel",
  };
  for (std::string_view n : kKernelLaunch) {
    if (name == n) return RuntimeKind::kKernelLaunch;
  }
  if (name == "cudaGraphLaunch" || name == "hipGraphLaunch" || name == "cuGraphLaunch") {
    return RuntimeKind::kGraphLaunch;
  }
  static constexpr std::string_view kSync[] = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
      "cudaStreamWaitEvent",   "hipDeviceSynchronize",  "hipStreamSynchronize",
      "hipEventSynchronize",   "hipStreamWaitEvent",    "cuCtxSynchronize",
      "cuStreamSynchronize",   "cuEventSynchronize",    "cuStreamWaitEvent",
  };
  for (std::string_view n : kSync) {
    if (name == n) return RuntimeKind::kSync;
  }
  if (StartsWith(name, "cudaMemcpy") || StartsWith(name, "hipMemcpy") ||
      StartsWith(name, "cuMemcpy")) {
    return RuntimeKind::kMemcpy;
  }
  if (StartsWith(name, "cudaMemset") || StartsWith(name, "hipMemset") ||
      StartsWith(name, "cuMemset")) {
    return RuntimeKind::kMemset;
  }
  return RuntimeKind::kOther;
}

namespace {

// Replaces invalid UTF-8 with U+FFFD, escaped UTF-16 surrogates that are not part of a pair with
// the escape of U+FFFD, and raw control characters inside strings with a space, so one bad name
// does not cost the event. Returns what it fixed.
struct SanitizeResult {
  bool fixed_utf8 = false;
  bool fixed_control = false;
  bool fixed_surrogate = false;
};

// The code unit of the \uXXXX escape at in[i] (in[i] == '\\'), or -1 if there is none there.
int32_t UnicodeEscapeAt(std::string_view in, size_t i) {
  if (i + 6 > in.size() || in[i] != '\\' || in[i + 1] != 'u') return -1;
  int32_t v = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    const char c = in[k];
    int32_t d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return -1;
    }
    v = v * 16 + d;
  }
  return v;
}

SanitizeResult Sanitize(std::string_view in, std::string* out) {
  SanitizeResult r;
  out->clear();
  out->reserve(in.size() + 16);
  bool in_string = false, escape = false;
  size_t i = 0;
  while (i < in.size()) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      if (in_string) {
        if (escape) {
          escape = false;
        } else if (const int32_t unit = c == '\\' ? UnicodeEscapeAt(in, i) : -1; unit >= 0) {
          // JSON strings are UTF-16 in their escapes: a high surrogate must be followed by an
          // escaped low one. simdjson rejects the whole event otherwise (a lone \ud800 in a
          // kernel name would drop the kernel), so the lone half becomes U+FFFD.
          const bool high = unit >= 0xD800 && unit <= 0xDBFF;
          const bool low = unit >= 0xDC00 && unit <= 0xDFFF;
          const int32_t next = high ? UnicodeEscapeAt(in, i + 6) : -1;
          if (high && next >= 0xDC00 && next <= 0xDFFF) {
            out->append(in.data() + i, 12);  // a valid pair
            i += 12;
          } else if (high || low) {
            out->append("\\uFFFD");
            r.fixed_surrogate = true;
            i += 6;
          } else {
            out->append(in.data() + i, 6);
            i += 6;
          }
          continue;
        } else if (c == '\\') {
          escape = true;
        } else if (c == '"') {
          in_string = false;
        } else if (c < 0x20) {
          out->push_back(' ');
          r.fixed_control = true;
          ++i;
          continue;
        }
      } else if (c == '"') {
        in_string = true;
      }
      out->push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    // Beyond ASCII: the shared sanitiser (base/sanitize.h): invalid UTF-8 and C1 controls.
    escape = false;
    SanitizeFixes fixes;
    i += AppendSanitizedChar(in, i, out, &fixes);
    r.fixed_utf8 |= fixes.invalid_utf8;
    r.fixed_control |= fixes.control;
  }
  return r;
}

// Everything one event says, before it is committed to a table.
struct RawEvent {
  char ph = 0;
  bool ph_valid = false;
  std::string_view ph_text;
  bool has_cat = false;
  std::string_view cat;
  bool has_name = false;
  std::string_view name;
  bool has_ts = false;
  int64_t ts_ns = 0;
  bool has_dur = false;
  int64_t dur_ns = 0;
  // Why a "ts" / "dur" that was there could not be read (Diag::kCount: it was read, or absent).
  Diag ts_problem = Diag::kCount;
  Diag dur_problem = Diag::kCount;
  TraceId pid = 0;
  TraceId tid = 0;
  bool has_id = false;
  int64_t id = 0;
  char scope = 0;
  bool bp_enclosing = false;

  // args
  int64_t device = -1;
  int64_t stream = -1;
  bool has_stream = false;
  int64_t correlation = -1;
  int64_t external_id = -1;
  int64_t registers = -1;
  int64_t shared_memory = -1;
  double blocks_per_sm = -1;
  double warps_per_sm = -1;
  double occupancy = -1;
  std::array<int32_t, 3> grid{0, 0, 0};
  std::array<int32_t, 3> block{0, 0, 0};
  int64_t bytes = -1;
  double bandwidth = -1;
  int64_t cbid = -1;
  bool has_collective = false;
  std::string_view collective;
  int64_t in_nelems = -1, out_nelems = -1, group_size = -1;
  std::string_view dtype, process_group, process_group_desc, process_group_ranks;
  bool has_process_group = false;
  int64_t seq = -1;  // "Seq"
  bool has_seq = false;
  std::string_view sync_kind;
  int64_t wait_on_stream = -1, wait_record_correlation = -1;  // cuda_sync records
  int64_t device_type = -1, device_id = -1, mem_bytes = 0;
  bool has_mem_bytes = false;
  int64_t total_allocated = -1, total_reserved = -1;
  uint64_t addr = 0;
  bool has_arg_name = false;
  std::string_view arg_name, labels;
  int64_t sort_index = 0;
  bool has_sort_index = false;
  std::vector<std::pair<std::string_view, double>>* counter_values = nullptr;
  // record_shapes: JSON text of the arrays, empty when absent.
  std::string_view input_dims, input_types, input_strides, concrete_inputs;
};

// The key of a field without unescaping: Kineto keys never contain escapes, and comparing the raw
// bytes avoids copying every key into simdjson's string buffer. A key that does contain a
// backslash simply matches none of ours.
inline std::string_view RawKey(od::field& field) {
  const char* raw = field.key().raw();
  const char* end = static_cast<const char*>(std::memchr(raw, '"', 1 << 16));
  return end ? std::string_view(raw, static_cast<size_t>(end - raw)) : std::string_view();
}

// Whether the raw key (the bytes after its opening quote) is exactly `lit`: the literal and the
// closing quote, compared as a fixed-size block the compiler turns into a few integer compares.
// Reading len + 1 bytes is safe: a key is followed by its quote, a colon and a value, or padding.
template <size_t N>
inline bool KeyIs(const char* raw, const char (&lit)[N]) {
  return std::memcmp(raw, lit, N - 1) == 0 && raw[N - 1] == '"';
}

// What one batch's events keep asking about the same few hundred names, remembered for the batch
// (its string pool, so its ids, are its own).
class BatchMemo {
 public:
  void Reset() {
    if (used_) {
      slots_.fill(Slot{});
      shape_slots_.fill(Slot{});
      runtime_kind_.clear();
      used_ = false;
    }
  }
  // A direct-mapped cache in front of the pool's hash map: most names are long (kernel
  // signatures), and hashing every occurrence in full cost more than the rest of interning.
  // Keyed by length and the first and last 8 bytes; a hit is confirmed by comparing the bytes.
  StringId Find(std::string_view s, const StringPool& pool) const {
    return FindIn(slots_[SlotOf(s)], s, pool);
  }
  void Remember(std::string_view s, StringId id) { RememberIn(slots_[SlotOf(s)], s, id); }
  // The same for op shapes ("Input Dims" …): short, and alike at both ends ("[[128, 2…], [], []]"),
  // so keyed by a hash of every byte, in slots of their own (they would evict the names).
  StringId FindShape(std::string_view s, const StringPool& pool) const {
    return FindIn(shape_slots_[ShapeSlotOf(s)], s, pool);
  }
  void RememberShape(std::string_view s, StringId id) {
    RememberIn(shape_slots_[ShapeSlotOf(s)], s, id);
  }
  // ClassifyRuntime of the name with batch-local id `id`.
  RuntimeKind Runtime(StringId id, std::string_view name) {
    if (id >= runtime_kind_.size()) runtime_kind_.resize(id + 1, -1);
    if (runtime_kind_[id] < 0) runtime_kind_[id] = static_cast<int8_t>(ClassifyRuntime(name));
    used_ = true;
    return static_cast<RuntimeKind>(runtime_kind_[id]);
  }

 private:
  struct Slot {
    StringId id = StringPool::kNotInterned;
    uint32_t len = 0;
  };
  static StringId FindIn(const Slot& slot, std::string_view s, const StringPool& pool) {
    if (slot.id != StringPool::kNotInterned && slot.len == s.size()) {
      if (s.empty()) return slot.id;  // (an empty view may have no data pointer to compare)
      const std::string_view held = pool.Get(slot.id);
      if (std::memcmp(held.data(), s.data(), s.size()) == 0) return slot.id;
    }
    return StringPool::kNotInterned;
  }
  void RememberIn(Slot& slot, std::string_view s, StringId id) {
    slot.id = id;
    slot.len = static_cast<uint32_t>(s.size());
    used_ = true;
  }
  static constexpr size_t kSlots = 1024;
  static constexpr size_t kShapeSlots = 4096;
  static size_t ShapeSlotOf(std::string_view s) {
    uint64_t h = s.size() * 0x9E3779B97F4A7C15ull;
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = (h ^ w) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 29;
    }
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    return static_cast<size_t>(h >> 52);  // 12 bits: kShapeSlots
  }
  static size_t SlotOf(std::string_view s) {
    if (s.empty()) return 0;
    uint64_t head = 0, tail = 0;
    const size_t n = std::min<size_t>(8, s.size());
    std::memcpy(&head, s.data(), n);
    std::memcpy(&tail, s.data() + s.size() - n, n);
    const uint64_t h = (head ^ (tail * 0x9E3779B97F4A7C15ull) ^ s.size()) * 0xFF51AFD7ED558CCDull;
    return static_cast<size_t>(h >> 54);  // 10 bits: kSlots
  }
  std::array<Slot, kSlots> slots_{};
  std::array<Slot, kShapeSlots> shape_slots_{};
  std::vector<int8_t> runtime_kind_;
  bool used_ = false;
};

class Context {
 public:
  Context(BatchResult* r, int64_t offset, BatchMemo* memo, bool keep_flows)
      : r_(r), offset_(offset), memo_(memo), keep_flows_(keep_flows) {}
  void Diag(gpuscope::Diag d) { r_->tables.diagnostics.Add(d, offset_); }
  // Strings are sanitised at the border (base/sanitize.h): a JSON escape such as \u001b decodes to
  // a raw ESC that the raw-text Sanitize below never sees, and would reach every renderer.
  StringId Intern(std::string_view s) {
    if (StringId id = memo_->Find(s, r_->tables.strings); id != StringPool::kNotInterned) [[likely]]
      return id;
    bool remember = true;
    const StringId id = InternUncached(s, &remember);
    if (remember) memo_->Remember(s, id);
    return id;
  }
  // An op shape's JSON text: the same, through the memo's shape slots (BatchMemo::FindShape).
  // Shapes are kept in the profiler's own one-line form ("[[768], [788, 768], []]"), whatever
  // the file's whitespace: a pretty-printed or minified trace groups and prints the same, and
  // matches other tools' tables (TraceLens writes that form).
  StringId InternShape(std::string_view s) {
    if (StringId id = memo_->FindShape(s, r_->tables.strings); id != StringPool::kNotInterned)
      return id;
    bool remember = true;
    const StringId id = InternUncached(OneLine(s), &remember);
    if (remember) memo_->RememberShape(s, id);  // by the raw text, which the batch keeps
    return id;
  }
  // JSON text with whitespace only as ", " after commas (outside strings); `s` itself when it is
  // already so.
  std::string_view OneLine(std::string_view s) {
    bool canonical = true;
    for (size_t i = 0; i < s.size() && canonical; ++i) {
      const char c = s[i];
      if (c == '\n' || c == '\r' || c == '\t') canonical = false;
      if (c == ',' && (i + 1 >= s.size() || s[i + 1] != ' ')) canonical = false;
      if (c == ' ' && (i == 0 || s[i - 1] != ',')) canonical = false;
    }
    if (canonical) return s;
    one_line_.clear();
    bool in_string = false;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (in_string) {
        one_line_ += c;
        if (c == '\\' && i + 1 < s.size())
          one_line_ += s[++i];
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
        one_line_ += c;
      } else if (c == ',') {
        one_line_ += ", ";
      } else if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        one_line_ += c;
      }
    }
    return one_line_;
  }
  RuntimeKind RuntimeKindOf(StringId id, std::string_view name) { return memo_->Runtime(id, name); }
  BatchResult* result() { return r_; }
  int64_t offset() const { return offset_; }
  bool keep_flows() const { return keep_flows_; }

 private:
  std::string one_line_;  // OneLine's buffer
  // Names repeat thousands of times: only a string not seen before is checked for control
  // characters (a raw string with them is never in the pool, since its cleaned form is stored,
  // so every occurrence is cleaned and counted; *remember is then false). Checking every
  // occurrence cost ~7 % of ingest.
  StringId InternUncached(std::string_view s, bool* remember) {
    StringPool& pool = r_->tables.strings;
    StringId id = pool.Find(s);
    if (id == StringPool::kNotInterned) {
      if (HasControlCharacter(s)) [[unlikely]] {
        SanitizeText(s, &cleaned_);
        Diag(gpuscope::Diag::kControlCharacter);
        *remember = false;
        return pool.Intern(cleaned_);
      }
      id = pool.Intern(s);
    }
    return id;
  }
  BatchResult* r_;
  int64_t offset_;
  BatchMemo* memo_;
  bool keep_flows_;
  std::string cleaned_;
};

// Reads a numeric field given as a number or as a numeric string. One field, one diagnostic:
// number_as_string only when the string parsed (kept), else why the field is ignored. With
// `problem`, that reason is put there instead of counted: the caller counts it once it knows
// whether the event is skipped for another reason first (Commit).
template <typename T, typename ParseFn>
sj::error_code ReadNumber(od::value& v, Context& ctx, T* out, bool* present, ParseFn parse,
                          Diag* problem = nullptr) {
  auto ignored = [&](Diag d) { problem ? void(*problem = d) : ctx.Diag(d); };
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  std::string_view token;
  bool from_string = false;
  if (type == od::json_type::number) {
    token = v.raw_json_token();
  } else if (type == od::json_type::string) {
    if (auto e = v.get_string().get(token)) return e;
    from_string = true;
  } else if (type == od::json_type::null) {
    return sj::SUCCESS;
  } else {
    ignored(Diag::kBadNumber);
    return sj::SUCCESS;  // the iterator skips the value
  }
  const NumberError ne = parse(token, out);
  if (ne == NumberError::kOk) {
    if (present) *present = true;
    if (from_string) ctx.Diag(Diag::kNumberAsString);
  } else {
    ignored(ne == NumberError::kOutOfRange ? Diag::kIntegerOutOfRange : Diag::kBadNumber);
  }
  return sj::SUCCESS;
}

sj::error_code ReadInt(od::value& v, Context& ctx, int64_t* out, bool* present = nullptr) {
  // Fast path: simdjson's own exact integer parser; anything else (7.0, "7", 2^64-1) goes the slow
  // way.
  int64_t x;
  if (v.get_int64().get(x) == sj::SUCCESS) {
    *out = x;
    if (present) *present = true;
    return sj::SUCCESS;
  }
  return ReadNumber(v, ctx, out, present,
                    [](std::string_view t, int64_t* o) { return ParseInt64(t, o); });
}
sj::error_code ReadDouble(od::value& v, Context& ctx, double* out) {
  double x;
  if (v.get_double().get(x) == sj::SUCCESS) {
    *out = x;
    return sj::SUCCESS;
  }
  return ReadNumber(v, ctx, out, nullptr,
                    [](std::string_view t, double* o) { return ParseDouble(t, o); });
}
// "ts" and "dur": a value that cannot be read is left in `problem` (Commit decides whether the
// event is skipped for it, or only the field ignored).
sj::error_code ReadMicros(od::value& v, Context& ctx, int64_t* out, bool* present, Diag* problem) {
  return ReadNumber(
      v, ctx, out, present, [](std::string_view t, int64_t* o) { return ParseMicrosToNanos(t, o); },
      problem);
}
sj::error_code ReadUint(od::value& v, Context& ctx, uint64_t* out, bool* present = nullptr) {
  return ReadNumber(v, ctx, out, present, [](std::string_view t, uint64_t* o) {
    t = TrimSpace(t);
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
      uint64_t x = 0;
      for (size_t i = 2; i < t.size(); ++i) {
        const char c = t[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0 || i > 17) return NumberError::kNotANumber;
        x = x * 16 + static_cast<uint64_t>(d);
      }
      *o = x;
      return NumberError::kOk;
    }
    return ParseUint64(t, o);
  });
}

// A string field; numbers are taken as their text; objects/arrays are rejected (skipped, counted).
sj::error_code ReadString(od::value& v, Context& ctx, std::string_view* out, bool* present) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::string) {
    // The text between the quotes, in place, when it holds no escape (nearly always): no copy
    // into simdjson's string buffer. Stage 1 validated its UTF-8; its control characters are
    // checked when it is interned, as before.
    const std::string_view token = v.raw_json_token();
    const size_t close = token.rfind('"');
    if (close != std::string_view::npos && close > 0 &&
        std::memchr(token.data() + 1, '\\', close - 1) == nullptr) {
      *out = token.substr(1, close - 1);
    } else if (auto e = v.get_string().get(*out)) {
      return e;
    }
    *present = true;
  } else if (type == od::json_type::number || type == od::json_type::boolean) {
    *out = v.raw_json_token();
    *out = TrimSpace(*out);
    *present = true;
  } else if (type != od::json_type::null) {
    ctx.Diag(Diag::kBadNumber);
  }
  return sj::SUCCESS;
}

// An array arg: *is_array says whether `v` is one (then `out` is it); another type is counted
// (null is absent) and the arg skipped.
sj::error_code GetArrayArg(od::value& v, Context& ctx, od::array* out, bool* is_array) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  *is_array = type == od::json_type::array;
  if (!*is_array) {
    if (type != od::json_type::null) ctx.Diag(Diag::kBadNumber);
    return sj::SUCCESS;
  }
  return v.get_array().get(*out);
}

// An array arg kept as its JSON text, in place (the op shapes of record_shapes: "Input Dims" …).
sj::error_code ReadArrayText(od::value& v, Context& ctx, std::string_view* out) {
  od::array a;
  bool is_array = false;
  if (auto e = GetArrayArg(v, ctx, &a, &is_array); e || !is_array) return e;
  if (auto e = a.raw_json().get(*out)) return e;
  *out = TrimSpace(*out);
  return sj::SUCCESS;
}

// pid / tid: numbers, or strings ("stream 7" → 7, "CPU functions" → TraceIdOfString(id)).
sj::error_code ReadTraceId(od::value& v, Context& ctx, TraceId* out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::number) {
    int64_t x;
    if (v.get_int64().get(x) == sj::SUCCESS && !IsStringTraceId(x)) {
      *out = x;
      return sj::SUCCESS;
    }
    std::string_view token;
    token = v.raw_json_token();
    NumberError ne = ParseInt64(token, &x);
    if (ne == NumberError::kOk && !IsStringTraceId(x)) {
      *out = x;
    } else if (ne == NumberError::kOk) {
      ctx.Diag(Diag::kIntegerOutOfRange);  // collides with the string-id range; keep the default
    } else {
      uint64_t u;  // e.g. 2^64-1 written unsigned
      if (ParseUint64(token, &u) == NumberError::kOk) {
        *out = static_cast<int64_t>(u);
      } else {
        ctx.Diag(Diag::kBadNumber);
      }
    }
    return sj::SUCCESS;
  }
  if (type == od::json_type::string) {
    std::string_view s;
    if (auto e = v.get_string().get(s)) return e;
    std::string_view trimmed = TrimSpace(s);
    size_t digits_start = trimmed.size();
    while (digits_start > 0 && trimmed[digits_start - 1] >= '0' &&
           trimmed[digits_start - 1] <= '9') {
      --digits_start;
    }
    int64_t x;
    if (digits_start < trimmed.size() && (digits_start == 0 || trimmed[digits_start - 1] == ' ') &&
        ParseInt64(trimmed.substr(digits_start), &x) == NumberError::kOk) {
      *out = x;
    } else {
      *out = TraceIdOfString(ctx.Intern(s));
    }
    return sj::SUCCESS;
  }
  if (type != od::json_type::null) ctx.Diag(Diag::kBadNumber);
  return sj::SUCCESS;
}

sj::error_code ReadTriple(od::value& v, Context& ctx, std::array<int32_t, 3>* out) {
  od::array arr;
  bool is_array = false;
  if (auto e = GetArrayArg(v, ctx, &arr, &is_array); e || !is_array) return e;
  size_t i = 0;
  for (auto item : arr) {
    od::value x;
    if (auto e = std::move(item).get(x)) return e;
    int64_t n = 0;
    if (auto e = ReadInt(x, ctx, &n)) return e;
    if (i < 3) (*out)[i] = static_cast<int32_t>(n);
    ++i;
  }
  return sj::SUCCESS;
}

// One field of args: dispatch on the key's first byte, then whole keys (with their closing
// quote); a key not listed is skipped. This runs for every field of every event's args, so it is
// inlined into ReadArgs' loop.
static inline sj::error_code ReadArg(const char* raw, od::value& val, Context& ctx, RawEvent* ev) {
  sj::error_code e = sj::SUCCESS;
  bool present = false;
  switch (raw[0]) {
    case 'n':
      if (KeyIs(raw, "name")) e = ReadString(val, ctx, &ev->arg_name, &ev->has_arg_name);
      break;
    case 'g':
      if (KeyIs(raw, "grid")) e = ReadTriple(val, ctx, &ev->grid);
      break;
    case 'b':
      if (KeyIs(raw, "bytes"))
        e = ReadInt(val, ctx, &ev->bytes);
      else if (KeyIs(raw, "block"))
        e = ReadTriple(val, ctx, &ev->block);
      else if (KeyIs(raw, "blocks per SM"))
        e = ReadDouble(val, ctx, &ev->blocks_per_sm);
      break;
    case 'B':
      if (KeyIs(raw, "Bytes")) e = ReadInt(val, ctx, &ev->mem_bytes, &ev->has_mem_bytes);
      break;
    case 'd':
      if (KeyIs(raw, "device"))
        e = ReadInt(val, ctx, &ev->device);
      else if (KeyIs(raw, "dtype"))
        e = ReadString(val, ctx, &ev->dtype, &present);
      break;
    case 's':
      if (KeyIs(raw, "stream"))
        e = ReadInt(val, ctx, &ev->stream, &ev->has_stream);
      else if (KeyIs(raw, "sort_index"))
        e = ReadInt(val, ctx, &ev->sort_index, &ev->has_sort_index);
      else if (KeyIs(raw, "shared memory"))
        e = ReadInt(val, ctx, &ev->shared_memory);
      break;
    case 'l':
      if (KeyIs(raw, "labels")) e = ReadString(val, ctx, &ev->labels, &present);
      break;
    case 'G':
      if (KeyIs(raw, "Group size")) e = ReadInt(val, ctx, &ev->group_size);
      break;
    case 'c':
      if (KeyIs(raw, "correlation"))
        e = ReadInt(val, ctx, &ev->correlation);
      else if (KeyIs(raw, "cbid"))
        e = ReadInt(val, ctx, &ev->cbid);
      else if (KeyIs(raw, "cuda_sync_kind"))
        e = ReadString(val, ctx, &ev->sync_kind, &present);
      break;
    case 'E':
      if (KeyIs(raw, "External id")) e = ReadInt(val, ctx, &ev->external_id);
      break;
    case 'e':
      if (KeyIs(raw, "external id"))
        e = ReadInt(val, ctx, &ev->external_id);
      else if (KeyIs(raw, "est. achieved occupancy %"))
        e = ReadDouble(val, ctx, &ev->occupancy);
      break;
    case 'D':
      if (KeyIs(raw, "Device Type"))
        e = ReadInt(val, ctx, &ev->device_type);
      else if (KeyIs(raw, "Device Id"))
        e = ReadInt(val, ctx, &ev->device_id);
      break;
    case 'w':
      if (KeyIs(raw, "warps per SM"))
        e = ReadDouble(val, ctx, &ev->warps_per_sm);
      else if (KeyIs(raw, "wait_on_stream"))
        e = ReadInt(val, ctx, &ev->wait_on_stream);
      else if (KeyIs(raw, "wait_on_cuda_event_record_corr_id"))
        e = ReadInt(val, ctx, &ev->wait_record_correlation);
      break;
    case 'I':
      if (KeyIs(raw, "In msg nelems"))
        e = ReadInt(val, ctx, &ev->in_nelems);
      else if (KeyIs(raw, "Input Dims"))
        e = ReadArrayText(val, ctx, &ev->input_dims);
      else if (KeyIs(raw, "Input type"))
        e = ReadArrayText(val, ctx, &ev->input_types);
      else if (KeyIs(raw, "Input Strides"))
        e = ReadArrayText(val, ctx, &ev->input_strides);
      break;
    case 'O':
      if (KeyIs(raw, "Out msg nelems")) e = ReadInt(val, ctx, &ev->out_nelems);
      break;
    case 'T':
      if (KeyIs(raw, "Total Reserved"))
        e = ReadInt(val, ctx, &ev->total_reserved);
      else if (KeyIs(raw, "Total Allocated"))
        e = ReadInt(val, ctx, &ev->total_allocated);
      break;
    case 'C':
      if (KeyIs(raw, "Collective name"))
        e = ReadString(val, ctx, &ev->collective, &ev->has_collective);
      else if (KeyIs(raw, "Concrete Inputs"))
        e = ReadArrayText(val, ctx, &ev->concrete_inputs);
      break;
    case 'S':
      // The collective's sequence number in its process group (Kineto's kSeqNum, written raw
      // from record_param_comms onto the NCCL kernel). Not "Sequence number": that is
      // autograd's counter on cpu ops.
      if (KeyIs(raw, "Seq")) e = ReadInt(val, ctx, &ev->seq, &ev->has_seq);
      break;
    case 'P':
      // PyTorch ~2.2 wrote the group as a number under "Process Group ID" (ns_resolution_*
      // shows it on record_param_comms); newer versions write "Process Group Name".
      if (KeyIs(raw, "Process Group Name"))
        e = ReadString(val, ctx, &ev->process_group, &ev->has_process_group);
      else if (KeyIs(raw, "Process Group ID") && ev->process_group.empty())
        e = ReadString(val, ctx, &ev->process_group, &ev->has_process_group);
      else if (KeyIs(raw, "Process Group Ranks"))
        e = ReadString(val, ctx, &ev->process_group_ranks, &present);
      else if (KeyIs(raw, "Process Group Description"))
        e = ReadString(val, ctx, &ev->process_group_desc, &present);
      break;
    case 'r':
      if (KeyIs(raw, "registers per thread")) e = ReadInt(val, ctx, &ev->registers);
      break;
    case 'm':
      if (KeyIs(raw, "memory bandwidth (GB/s)")) e = ReadDouble(val, ctx, &ev->bandwidth);
      break;
    case 'A':
      if (KeyIs(raw, "Addr")) e = ReadUint(val, ctx, &ev->addr);
      break;
    default:
      break;
  }
  return e;
}

sj::error_code ReadArgs(od::value& v, Context& ctx, RawEvent* ev) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type != od::json_type::object) return sj::SUCCESS;  // skipped by the iterator
  // In place, not copied (see the field loop below).
  auto obj_result = v.get_object();
  if (auto e = obj_result.error()) return e;
  od::object&& obj = std::move(obj_result).value_unsafe();
  // The field and its value are used where the iterator made them, never copied: GCC copies a
  // simdjson iterator (a pointer and a 32-bit depth just stored separately) with one 16-byte
  // load, which cannot be forwarded from those stores — a stall on every field, measured with
  // `perf annotate` at up to half of this loop's time.
  for (auto&& field_result : obj) {
    if (auto e = field_result.error()) return e;
    od::field&& field = std::move(field_result).value_unsafe();
    const char* raw = field.key().raw();
    od::value& val = field.value();
    // Counter series: ph "C" events put every series in args; "args" may come before "ph", so
    // numeric args are kept until the phase is known. type() and raw_json_token() only peek, so the
    // value can still be read below.
    if (ev->counter_values && (ev->ph == 0 || ev->ph == 'C') && ev->counter_values->size() < 256) {
      od::json_type t;
      double x;
      if (val.type().get(t) == sj::SUCCESS && t == od::json_type::number &&
          ParseDouble(val.raw_json_token(), &x) == NumberError::kOk) {
        ev->counter_values->emplace_back(RawKey(field), x);
      }
    }
    if (auto e = ReadArg(raw, val, ctx, ev)) return e;
  }
  return sj::SUCCESS;
}

// Flow ids: integers, or hex strings in some exporters ("0x1a").
sj::error_code ReadFlowId(od::value& val, Context& ctx, RawEvent* ev) {
  uint64_t id = 0;
  bool present = false;
  if (auto e = ReadUint(val, ctx, &id, &present)) return e;
  if (present) {
    ev->has_id = true;
    ev->id = static_cast<int64_t>(id);
  }
  return sj::SUCCESS;
}

sj::error_code ReadEvent(od::object& obj, Context& ctx, RawEvent* ev) {
  // The field and its value are used where the iterator made them, never copied: GCC copies a
  // simdjson iterator (a pointer and a 32-bit depth just stored separately) with one 16-byte
  // load, which cannot be forwarded from those stores — a stall on every field, measured with
  // `perf annotate` at up to half of this loop's time.
  for (auto&& field_result : obj) {
    if (auto e = field_result.error()) return e;
    od::field&& field = std::move(field_result).value_unsafe();
    const char* raw = field.key().raw();
    od::value& val = field.value();
    sj::error_code e = sj::SUCCESS;
    bool present = false;
    // Dispatch on the first byte, then whole keys (with their closing quote): this runs for every
    // field of every event.
    switch (raw[0]) {
      case 's':
        if (KeyIs(raw, "s")) {
          std::string_view scope;
          e = ReadString(val, ctx, &scope, &present);
          if (present && !scope.empty()) ev->scope = scope[0];
        }
        break;
      case 'p':
        if (KeyIs(raw, "ph")) {
          std::string_view ph;
          e = ReadString(val, ctx, &ph, &present);
          if (!e && present) {
            ev->ph_text = ph;
            ev->ph_valid = ph.size() == 1;
            ev->ph = ph.empty() ? 0 : ph[0];
            if (!ev->ph_valid) ev->ph = '?';
          }
        } else if (KeyIs(raw, "pid")) {
          e = ReadTraceId(val, ctx, &ev->pid);
        }
        break;
      case 't':
        if (KeyIs(raw, "ts"))
          e = ReadMicros(val, ctx, &ev->ts_ns, &ev->has_ts, &ev->ts_problem);
        else if (KeyIs(raw, "tid"))
          e = ReadTraceId(val, ctx, &ev->tid);
        break;
      case 'i':
        if (KeyIs(raw, "id")) e = ReadFlowId(val, ctx, ev);
        break;
      case 'b':
        if (KeyIs(raw, "bp")) {
          std::string_view bp;
          e = ReadString(val, ctx, &bp, &present);
          if (present) ev->bp_enclosing = bp == "e";
        }
        break;
      case 'd':
        if (KeyIs(raw, "dur"))
          e = ReadMicros(val, ctx, &ev->dur_ns, &ev->has_dur, &ev->dur_problem);
        break;
      case 'c':
        if (KeyIs(raw, "cat")) e = ReadString(val, ctx, &ev->cat, &ev->has_cat);
        break;
      case 'n':
        if (KeyIs(raw, "name")) e = ReadString(val, ctx, &ev->name, &ev->has_name);
        break;
      case 'a':
        if (KeyIs(raw, "args")) e = ReadArgs(val, ctx, ev);
        break;
      default:
        break;
    }
    if (e) return e;
  }
  return sj::SUCCESS;
}

CopyDirection DirectionFromName(std::string_view name) {
  // "Memcpy HtoD (Pageable -> Device)"; ROCm writes the same names.
  const size_t pos = name.find("Memcpy ");
  if (pos == std::string_view::npos || pos + 11 > name.size()) return CopyDirection::kUnknown;
  const std::string_view d = name.substr(pos + 7, 4);
  if (d == "HtoD") return CopyDirection::kHtoD;
  if (d == "DtoH") return CopyDirection::kDtoH;
  if (d == "DtoD") return CopyDirection::kDtoD;
  if (d == "HtoH") return CopyDirection::kHtoH;
  if (d == "PtoP") return CopyDirection::kPtoP;
  return CopyDirection::kUnknown;
}

MemoryKind MemoryKindFromWord(std::string_view w) {
  if (w == "Pageable") return MemoryKind::kPageable;
  if (w == "Pinned") return MemoryKind::kPinned;
  if (w == "Device") return MemoryKind::kDevice;
  if (w == "Managed") return MemoryKind::kManaged;
  if (w == "Array") return MemoryKind::kArray;
  return MemoryKind::kUnknown;
}

void KindsFromName(std::string_view name, MemoryKind* src, MemoryKind* dst) {
  *src = *dst = MemoryKind::kUnknown;
  const size_t open = name.find('(');
  const size_t arrow = name.find(" -> ");
  const size_t close = name.rfind(')');
  if (open == std::string_view::npos || arrow == std::string_view::npos ||
      close == std::string_view::npos || !(open < arrow && arrow < close)) {
    if (name.find("Memset") != std::string_view::npos && open != std::string_view::npos &&
        close != std::string_view::npos && open < close) {
      *dst = MemoryKindFromWord(name.substr(open + 1, close - open - 1));
    }
    return;
  }
  *src = MemoryKindFromWord(name.substr(open + 1, arrow - open - 1));
  *dst = MemoryKindFromWord(name.substr(arrow + 4, close - arrow - 4));
}

SyncKind SyncKindFromText(std::string_view s) {
  if (s.empty()) return SyncKind::kNone;
  if (s == "Stream Sync") return SyncKind::kStreamSync;
  if (s == "Event Sync") return SyncKind::kEventSync;
  if (s == "Context Sync") return SyncKind::kContextSync;
  if (s == "Stream Wait Event") return SyncKind::kStreamWaitEvent;
  return SyncKind::kOther;
}

}  // namespace

bool IsDataLoaderName(std::string_view name) { return StartsWith(name, "enumerate(DataLoader)"); }

CpuKind CpuKindForCategory(Category c) {
  switch (c) {
    case Category::kNone:
    case Category::kCpuOp:
      return CpuKind::kCpuOp;
    case Category::kUserAnnotation:
      return CpuKind::kUserAnnotation;
    case Category::kGpuUserAnnotation:
      return CpuKind::kGpuUserAnnotation;
    case Category::kPythonFunction:
      return CpuKind::kPythonFunction;
    case Category::kProfilerRange:
      return CpuKind::kProfilerRange;
    default:
      return CpuKind::kOther;
  }
}

namespace {

void CommitGpu(const RawEvent& ev, GpuKind kind, Context& ctx) {
  Trace& t = ctx.result()->tables;
  GpuActivityTable& g = t.gpu;
  const StringId name = ctx.Intern(ev.name);
  g.kind.push_back(kind);
  g.start_ns.push_back(ev.ts_ns);
  g.dur_ns.push_back(ev.dur_ns);
  g.name.push_back(name);
  g.pid.push_back(ev.pid);
  g.tid.push_back(ev.tid);
  g.device.push_back(static_cast<int32_t>(ev.device >= 0 ? ev.device : -1));
  g.stream.push_back(ev.has_stream ? ev.stream : -1);
  g.correlation.push_back(ev.correlation);
  g.external_id.push_back(ev.external_id);
  g.launch.push_back(-1);
  g.grid.push_back(ev.grid);
  g.block.push_back(ev.block);
  g.registers_per_thread.push_back(static_cast<int32_t>(ev.registers));
  g.shared_memory_bytes.push_back(static_cast<int32_t>(ev.shared_memory));
  g.blocks_per_sm.push_back(static_cast<float>(ev.blocks_per_sm));
  g.warps_per_sm.push_back(static_cast<float>(ev.warps_per_sm));
  g.est_occupancy_pct.push_back(static_cast<float>(ev.occupancy));
  g.bytes.push_back(ev.bytes);
  g.bandwidth_gbps.push_back(static_cast<float>(ev.bandwidth));
  MemoryKind src = MemoryKind::kUnknown, dst = MemoryKind::kUnknown;
  CopyDirection dir = CopyDirection::kUnknown;
  if (kind == GpuKind::kMemcpy) {
    dir = DirectionFromName(ev.name);
    KindsFromName(ev.name, &src, &dst);
  } else if (kind == GpuKind::kMemset) {
    KindsFromName(ev.name, &src, &dst);
  }
  g.copy_direction.push_back(dir);
  g.src_kind.push_back(src);
  g.dst_kind.push_back(dst);
  g.sync_kind.push_back(kind == GpuKind::kSync ? SyncKindFromText(ev.sync_kind) : SyncKind::kNone);
  // -1 (and the 2^32−1 some versions write for "none") carry nothing.
  auto known = [](int64_t v) { return v >= 0 && v < 0xFFFFFFFFll; };
  if (kind == GpuKind::kSync && (known(ev.wait_on_stream) || known(ev.wait_record_correlation)))
    t.sync_waits.push_back({static_cast<uint32_t>(g.size() - 1),
                            known(ev.wait_on_stream) ? ev.wait_on_stream : -1,
                            known(ev.wait_record_correlation) ? ev.wait_record_correlation : -1});
  // A kernel is a collective when Kineto copied record_param_comms' metadata onto it: the
  // collective's name, or (when the name was left out) its process group or sequence number.
  if (kind == GpuKind::kKernel && (ev.has_collective || ev.has_process_group || ev.has_seq)) {
    CollectiveInfo c;
    c.gpu_index = static_cast<uint32_t>(g.size() - 1);
    c.collective = ctx.Intern(ev.collective);
    c.in_nelems = ev.in_nelems;
    c.out_nelems = ev.out_nelems;
    c.group_size = static_cast<int32_t>(ev.group_size);
    c.dtype = ctx.Intern(ev.dtype);
    c.process_group = ctx.Intern(ev.process_group);
    c.process_group_desc = ctx.Intern(ev.process_group_desc);
    c.process_group_ranks = ctx.Intern(ev.process_group_ranks);
    c.seq = ev.has_seq ? ev.seq : -1;
    t.collectives.push_back(c);
  }
}

void CommitRuntime(const RawEvent& ev, bool driver, Context& ctx) {
  RuntimeCallTable& r = ctx.result()->tables.runtime;
  r.start_ns.push_back(ev.ts_ns);
  r.dur_ns.push_back(ev.dur_ns);
  const StringId name = ctx.Intern(ev.name);
  r.name.push_back(name);
  r.pid.push_back(ev.pid);
  r.tid.push_back(ev.tid);
  r.correlation.push_back(ev.correlation);
  r.external_id.push_back(ev.external_id);
  r.cbid.push_back(static_cast<int32_t>(ev.cbid));
  r.kind.push_back(ctx.RuntimeKindOf(name, ev.name));
  r.is_driver.push_back(driver ? 1 : 0);
}

void CommitCpu(const RawEvent& ev, CpuKind kind, Context& ctx) {
  CpuOpTable& c = ctx.result()->tables.cpu;
  c.start_ns.push_back(ev.ts_ns);
  c.dur_ns.push_back(ev.dur_ns);
  c.name.push_back(ctx.Intern(ev.name));
  c.pid.push_back(ev.pid);
  c.tid.push_back(ev.tid);
  c.external_id.push_back(ev.external_id);
  c.kind.push_back(kind);
  const bool step_kind = kind == CpuKind::kCpuOp || kind == CpuKind::kUserAnnotation;
  c.step.push_back(step_kind ? ProfilerStepNumber(ev.name) : -1);
  c.is_dataloader.push_back(IsDataLoaderName(ev.name) ? 1 : 0);
  // Shape columns start at the first op that has the arg (padded for the rows before it).
  const size_t row = c.size() - 1;
  auto shape = [&ctx, row](std::vector<StringId>& col, std::string_view text) {
    if (text.empty() && col.empty()) return;
    col.resize(row, kEmptyString);
    col.push_back(text.empty() ? kEmptyString : ctx.InternShape(text));
  };
  shape(c.input_dims, ev.input_dims);
  shape(c.input_types, ev.input_types);
  shape(c.input_strides, ev.input_strides);
  shape(c.concrete_inputs, ev.concrete_inputs);
}

void CommitMetadata(const RawEvent& ev, Context& ctx) {
  ProcessMetadata& m = ctx.result()->tables.metadata;
  if (ev.name == "process_name" && ev.has_arg_name) {
    m.process_names[ev.pid] = std::string(ev.arg_name);
  } else if (ev.name == "process_labels") {
    m.process_labels[ev.pid] = std::string(ev.labels);
  } else if (ev.name == "process_sort_index" && ev.has_sort_index) {
    m.process_sort_index[ev.pid] = ev.sort_index;
  } else if (ev.name == "thread_name" && ev.has_arg_name) {
    m.thread_names[{ev.pid, ev.tid}] = std::string(ev.arg_name);
  } else if (ev.name == "thread_sort_index" && ev.has_sort_index) {
    m.thread_sort_index[{ev.pid, ev.tid}] = ev.sort_index;
  }
}

// Puts one parsed event into the right table (or counts why not).
void Commit(const RawEvent& ev, Context& ctx) {
  Trace& t = ctx.result()->tables;
  if (!ev.has_name) ctx.Diag(Diag::kMissingName);
  if (ev.ph == 0) {
    ctx.Diag(Diag::kMissingPhase);
    return;
  }
  if (!ev.ph_valid) {
    ctx.Diag(Diag::kUnknownPhase);
    return;
  }
  // One bad field, one diagnostic, and one per skipped event: a "ts" or "dur" that was there
  // but could not be read is counted by why (bad_number, integer_out_of_range: the user's fix),
  // whether the event is skipped for it or only the field ignored; missing_timestamp and
  // missing_duration are for the field absent. An event skipped for another reason says that.
  auto field_ignored = [&](Diag problem) {
    if (problem != Diag::kCount) ctx.Diag(problem);
  };
  if (ev.ph == 'M') {
    field_ignored(ev.ts_problem);
    field_ignored(ev.dur_problem);
    CommitMetadata(ev, ctx);
    return;
  }
  if (!ev.has_ts) {
    ctx.Diag(ev.ts_problem != Diag::kCount ? ev.ts_problem : Diag::kMissingTimestamp);
    return;
  }
  if (ev.ph != 'X') field_ignored(ev.dur_problem);
  switch (ev.ph) {
    case 'X': {
      if (!ev.has_dur) {
        ctx.Diag(ev.dur_problem != Diag::kCount ? ev.dur_problem : Diag::kMissingDuration);
        return;
      }
      if (ev.dur_ns < 0) {
        ctx.Diag(Diag::kNegativeDuration);
        return;
      }
      const Category cat = ev.has_cat ? ClassifyCategory(ev.cat) : Category::kNone;
      switch (cat) {
        case Category::kKernel:
          CommitGpu(ev, GpuKind::kKernel, ctx);
          return;
        case Category::kMemcpy:
          CommitGpu(ev, GpuKind::kMemcpy, ctx);
          return;
        case Category::kMemset:
          CommitGpu(ev, GpuKind::kMemset, ctx);
          return;
        case Category::kCudaSync:
          CommitGpu(ev, GpuKind::kSync, ctx);
          return;
        case Category::kRuntime:
          CommitRuntime(ev, false, ctx);
          return;
        case Category::kDriver:
          CommitRuntime(ev, true, ctx);
          return;
        case Category::kNone:
        case Category::kCpuOp:
        case Category::kUserAnnotation:
        case Category::kGpuUserAnnotation:
        case Category::kPythonFunction:
        case Category::kProfilerRange:
          CommitCpu(ev, CpuKindForCategory(cat), ctx);
          return;
        case Category::kTrace:
          ++t.info.trace_span_events_dropped;
          return;
        case Category::kFlow:
        case Category::kInstant:
        case Category::kUnknown:
          ctx.Diag(Diag::kUnknownCategory);
          CommitCpu(ev, CpuKind::kOther, ctx);
          return;
      }
      return;
    }
    case 'B':
    case 'E': {
      BeginEnd be;
      be.phase = ev.ph;
      be.ts_ns = ev.ts_ns;
      be.pid = ev.pid;
      be.tid = ev.tid;
      be.name = ctx.Intern(ev.name);
      be.category = ctx.Intern(ev.cat);
      be.offset = ctx.offset();
      ctx.result()->begin_end.push_back(be);
      return;
    }
    case 'i':
    case 'I': {
      if (ev.name == "[memory]") {
        MemoryEventTable& m = t.memory;
        m.ts_ns.push_back(ev.ts_ns);
        m.device_type.push_back(static_cast<int8_t>(ev.device_type));
        m.device_id.push_back(static_cast<int32_t>(ev.device_id));
        m.bytes_delta.push_back(ev.mem_bytes);
        m.total_allocated.push_back(ev.total_allocated);
        m.total_reserved.push_back(ev.total_reserved);
        m.addr.push_back(ev.addr);
      } else {
        InstantTable& in = t.instants;
        in.ts_ns.push_back(ev.ts_ns);
        in.pid.push_back(ev.pid);
        in.tid.push_back(ev.tid);
        in.name.push_back(ctx.Intern(ev.name));
        in.scope.push_back(ev.scope);
      }
      return;
    }
    case 's':
    case 't':
    case 'f': {
      if (!ctx.keep_flows()) {
        ++t.info.flow_events_dropped;  // read and checked like any event, then only counted
        return;
      }
      FlowTable& f = t.flows;
      f.ts_ns.push_back(ev.ts_ns);
      f.pid.push_back(ev.pid);
      f.tid.push_back(ev.tid);
      f.id.push_back(ev.has_id ? ev.id : -1);
      f.phase.push_back(ev.ph);
      f.category.push_back(ctx.Intern(ev.cat));
      f.binds_enclosing.push_back(ev.bp_enclosing ? 1 : 0);
      return;
    }
    case 'C': {
      if (!ev.counter_values) return;
      const StringId name = ctx.Intern(ev.name);
      for (const auto& [series, value] : *ev.counter_values) {
        CounterTable& c = t.counters;
        c.ts_ns.push_back(ev.ts_ns);
        c.pid.push_back(ev.pid);
        c.name.push_back(name);
        c.series.push_back(ctx.Intern(series));
        c.value.push_back(value);
      }
      return;
    }
    default:
      ctx.Diag(Diag::kUnknownPhase);
      return;
  }
}

}  // namespace

struct EventParser::Impl {
  od::parser parser;
  BatchMemo memo;
  std::vector<std::pair<std::string_view, double>> counter_scratch;
  std::string sanitized;
  bool keep_flows = true;  // the batch's Batch::keep_flows

  // Parses one object value and commits it. Returns a simdjson error if the JSON is bad.
  sj::error_code ParseObject(od::value& element, BatchResult* result, int64_t offset) {
    od::json_type type;
    if (auto e = element.type().get(type)) return e;
    if (type != od::json_type::object) return sj::SUCCESS;  // counted by the scanner
    auto obj_result = element.get_object();                 // in place, not copied (see ReadEvent)
    if (auto e = obj_result.error()) return e;
    od::object&& obj = std::move(obj_result).value_unsafe();
    RawEvent ev;
    counter_scratch.clear();
    ev.counter_values = &counter_scratch;
    Context ctx(result, offset, &memo, keep_flows);
    if (auto e = ReadEvent(obj, ctx, &ev)) return e;
    Commit(ev, ctx);
    return sj::SUCCESS;
  }

  bool FastPath(Batch& batch, BatchResult* result) {
    const ScannedElement& first = batch.elements.front();
    const ScannedElement& last = batch.elements.back();
    char* begin = batch.text + first.begin - 1;
    const size_t len = last.end + 1 - (first.begin - 1);
    *begin = '[';
    batch.text[last.end] = ']';
    od::document doc;
    if (parser.iterate(begin, len, batch.capacity - (first.begin - 1)).get(doc)) return false;
    od::array arr;
    if (doc.get_array().get(arr)) return false;
    size_t i = 0;
    for (auto&& item : arr) {  // each element in place, not copied (see ReadEvent)
      if (item.error()) return false;
      od::value&& element = std::move(item).value_unsafe();
      if (i >= batch.elements.size()) return false;
      const int64_t offset = batch.stream_offset + static_cast<int64_t>(batch.elements[i].begin);
      if (ParseObject(element, result, offset)) return false;
      ++i;
    }
    return i == batch.elements.size();
  }

  void SlowPath(Batch& batch, BatchResult* result) {
    for (const ScannedElement& el : batch.elements) {
      if (!el.is_object) continue;
      const int64_t offset = batch.stream_offset + static_cast<int64_t>(el.begin);
      const char* text = batch.text + el.begin;
      const size_t len = el.end - el.begin;
      if (ParseOne(text, len, batch.capacity - el.begin, result, offset) == sj::SUCCESS) continue;
      // Repair what can be repaired (bad UTF-8, raw control characters) and try once more.
      const SanitizeResult fixed = Sanitize(std::string_view(text, len), &sanitized);
      if (fixed.fixed_utf8 || fixed.fixed_control || fixed.fixed_surrogate) {
        const size_t n = sanitized.size();
        sanitized.append(sj::SIMDJSON_PADDING, ' ');
        if (ParseOne(sanitized.data(), n, sanitized.size(), result, offset) == sj::SUCCESS) {
          if (fixed.fixed_utf8) result->tables.diagnostics.Add(Diag::kInvalidUtf8, offset);
          if (fixed.fixed_control) result->tables.diagnostics.Add(Diag::kControlCharacter, offset);
          if (fixed.fixed_surrogate) result->tables.diagnostics.Add(Diag::kLoneSurrogate, offset);
          continue;
        }
      }
      result->tables.diagnostics.Add(Diag::kMalformedEvent, offset);
    }
  }

  // Parses one event as its own document. Commits only when the whole event parsed.
  sj::error_code ParseOne(const char* text, size_t len, size_t capacity, BatchResult* result,
                          int64_t offset) {
    od::document doc;
    if (auto e = parser.iterate(text, len, capacity).get(doc)) return e;
    od::object obj;
    if (auto e = doc.get_object().get(obj)) return e;
    RawEvent ev;
    counter_scratch.clear();
    ev.counter_values = &counter_scratch;
    // Diagnostics raised while reading go to a scratch result so a failed parse leaves no trace.
    Diagnostics before = result->tables.diagnostics;
    Context ctx(result, offset, &memo, keep_flows);
    if (auto e = ReadEvent(obj, ctx, &ev)) {
      result->tables.diagnostics = before;
      return e;
    }
    Commit(ev, ctx);
    return sj::SUCCESS;
  }
};

EventParser::EventParser() : impl_(std::make_unique<Impl>()) {}
EventParser::~EventParser() = default;

void EventParser::ParseBatch(Batch& batch, BatchResult* result) {
  result->events = batch.elements.size();
  result->text_bytes =
      batch.elements.empty() ? 0 : batch.elements.back().end - batch.elements.front().begin;
  for (const ScannedElement& el : batch.elements) {
    if (!el.is_object) {
      result->tables.diagnostics.Add(Diag::kNotAnObject,
                                     batch.stream_offset + static_cast<int64_t>(el.begin));
    }
  }
  if (batch.elements.empty()) return;
  impl_->memo.Reset();
  impl_->keep_flows = batch.keep_flows;
  Diagnostics not_objects = result->tables.diagnostics;
  if (impl_->FastPath(batch, result)) return;
  // Start over for this batch: discard what the fast path committed.
  const uint64_t text_bytes = result->text_bytes;
  *result = BatchResult();
  result->events = batch.elements.size();
  result->text_bytes = text_bytes;
  result->tables.diagnostics = not_objects;
  result->fallback_batches = 1;
  impl_->memo.Reset();  // the fast path's pool is gone
  impl_->SlowPath(batch, result);
}

}  // namespace gpuscope::ingest
