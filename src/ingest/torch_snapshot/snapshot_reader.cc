#include "ingest/torch_snapshot/snapshot_reader.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "base/sanitize.h"
#include "ingest/torch_snapshot/pickle.h"

namespace gpuscope::ingest {

namespace {

using pickle::Kind;

// 256 TiB: above any device's memory; a size beyond it is damage, not a measurement.
constexpr int64_t kMaxPlausibleBytes = int64_t{1} << 48;

class Converter {
 public:
  Converter(const pickle::Value& v, const std::string& name, size_t input_bytes)
      : v_(v),
        name_(name),
        budget_(std::max<uint64_t>(uint64_t{1} << 20, 4 * uint64_t{input_bytes})) {}

  Result<snapshot::Snapshot> Run();

 private:
  Status Shape(const std::string& what) const {
    return Status::InputError(name_, 0, "not a CUDA memory snapshot: " + what,
                              "pass the file torch.cuda.memory._dump_snapshot(\"snapshot.pickle\") "
                              "writes (after torch.cuda.memory._record_memory_history())");
  }
  bool Spend(uint64_t n = 1) {
    if (used_ + n > budget_) return false;
    used_ += n;
    return true;
  }
  int64_t Int(uint32_t dict, std::string_view key, int64_t otherwise) const {
    const int64_t n = v_.Get(dict, key);
    if (n < 0) return otherwise;
    const pickle::Node& node = v_.at(static_cast<uint32_t>(n));
    if ((node.kind == Kind::kInt && !node.big) || node.kind == Kind::kBool) return node.i;
    // A float beyond int64 (or NaN) would be undefined to convert: not a number we can use.
    if (node.kind == Kind::kFloat && std::isfinite(node.f) && std::fabs(node.f) < 9.2e18)
      return static_cast<int64_t>(node.f);
    return otherwise;
  }
  // A size in bytes, 0 ≤ size ≤ kMaxPlausibleBytes; anything else (negative, 2^62 B) is counted
  // and the entry holding it left out, never summed ("allocated 4,611,686 TB in 0 B reserved").
  bool Size(uint32_t dict, std::string_view key, int64_t* out) {
    *out = Int(dict, key, 0);
    if (*out >= 0 && *out <= kMaxPlausibleBytes) return true;
    ++bad_sizes_;
    return false;
  }
  std::string Str(uint32_t dict, std::string_view key) const {
    const int64_t n = v_.Get(dict, key);
    if (n < 0 || !v_.is_str(static_cast<uint32_t>(n))) return {};
    return SanitizeText(v_.str(static_cast<uint32_t>(n)));
  }
  // The items of the list (or tuple) under `key`, or null.
  const std::vector<uint32_t>* List(uint32_t dict, std::string_view key) const {
    const int64_t n = v_.Get(dict, key);
    if (n < 0) return nullptr;
    const pickle::Node& node = v_.at(static_cast<uint32_t>(n));
    return node.kind == Kind::kList || node.kind == Kind::kTuple ? &node.items : nullptr;
  }
  bool IsDict(uint32_t n) const { return v_.at(n).kind == Kind::kDict; }
  Result<int32_t> Stack(uint32_t dict);
  std::string Spell(uint32_t n, int depth) const;

  const pickle::Value& v_;
  const std::string& name_;
  uint64_t budget_;
  uint64_t used_ = 0;
  snapshot::Snapshot snap_;
  std::unordered_map<std::string, int32_t> stack_ids_;
  uint64_t bad_sizes_ = 0;
};

Status OverBudget(const std::string& name) {
  return Status::InputError(name, 0,
                            "the snapshot refers to the same lists over and over: more entries "
                            "than its size allows",
                            "refusing a pickle that expands (memo references) beyond its bytes");
}

Result<int32_t> Converter::Stack(uint32_t dict) {
  const std::vector<uint32_t>* frames = List(dict, "frames");
  if (frames == nullptr || frames->empty()) return snapshot::kNoStack;
  if (!Spend(frames->size())) return OverBudget(name_);
  std::vector<snapshot::Frame> stack;
  std::string key;
  for (uint32_t f : *frames) {
    if (!IsDict(f)) continue;
    snapshot::Frame fr{Str(f, "name"), Str(f, "filename"), Int(f, "line", 0)};
    key += fr.name;
    key += '\0';
    key += fr.filename;
    key += '\0';
    key += std::to_string(fr.line);
    key += '\1';
    stack.push_back(std::move(fr));
  }
  if (stack.empty()) return snapshot::kNoStack;
  auto [it, added] =
      stack_ids_.try_emplace(std::move(key), static_cast<int32_t>(snap_.stacks.size()));
  if (added) snap_.stacks.push_back(std::move(stack));
  return it->second;
}

// A setting's value as text: "True", "-1", "0.0", "''", a dict as "{k: v, …}".
std::string Converter::Spell(uint32_t n, int depth) const {
  const pickle::Node& node = v_.at(n);
  switch (node.kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return node.i ? "True" : "False";
    case Kind::kInt:
      return node.big ? std::to_string(node.f) : std::to_string(node.i);
    case Kind::kFloat: {
      std::string s = std::to_string(node.f);
      while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
      return s;
    }
    case Kind::kStr:
      return std::string("'").append(SanitizeText(v_.str(n))).append("'");
    case Kind::kBytes:
      return std::string("<").append(std::to_string(v_.str(n).size())).append(" bytes>");
    default:
      break;
  }
  if (depth > 2) return "…";
  std::string out = node.kind == Kind::kDict ? "{" : "[";
  const size_t step = node.kind == Kind::kDict ? 2 : 1;
  for (size_t k = 0; k < node.items.size() && k < 64; k += step) {
    if (k) out += ", ";
    out += Spell(node.items[k], depth + 1);
    if (step == 2 && k + 1 < node.items.size()) out += ": " + Spell(node.items[k + 1], depth + 1);
  }
  return out + (node.kind == Kind::kDict ? "}" : "]");
}

Result<snapshot::Snapshot> Converter::Run() {
  const uint32_t root = v_.root;
  if (v_.at(root).kind == Kind::kList)
    return Shape(
        "the pickle holds a list, not the snapshot's dict (torch.cuda.memory_snapshot() "
        "returns only segments; _dump_snapshot writes the dict with device_traces)");
  if (!IsDict(root)) return Shape("the pickle holds no dict");
  std::string keys;
  const auto& top = v_.at(root).items;
  for (size_t k = 0; k + 1 < top.size(); k += 2)
    if (v_.is_str(top[k]))
      keys.append(keys.empty() ? "" : ", ").append(SanitizeText(v_.str(top[k])));
  for (const char* required : {"segments", "device_traces"})
    if (List(root, required) == nullptr)
      return Shape(std::string("its top-level dict has no list '") + required +
                   "' (keys: " + (keys.empty() ? "none" : keys) + ")");

  for (uint32_t s : *List(root, "segments")) {
    if (!IsDict(s)) continue;
    if (!Spend()) return OverBudget(name_);
    snapshot::Segment seg;
    seg.device = Int(s, "device", 0);
    seg.address = Int(s, "address", 0);
    if (!Size(s, "total_size", &seg.total_size) ||
        !Size(s, "allocated_size", &seg.allocated_size) ||
        !Size(s, "active_size", &seg.active_size) ||
        !Size(s, "requested_size", &seg.requested_size))
      continue;
    seg.stream = Int(s, "stream", 0);
    seg.segment_type = Str(s, "segment_type");
    seg.is_expandable = Int(s, "is_expandable", 0) != 0;
    if (const auto* blocks = List(s, "blocks")) {
      for (uint32_t b : *blocks) {
        if (!IsDict(b)) continue;
        if (!Spend()) return OverBudget(name_);
        snapshot::Block block;
        block.address = Int(b, "address", 0);
        if (!Size(b, "size", &block.size) || !Size(b, "requested_size", &block.requested_size))
          continue;
        const std::string state = Str(b, "state");
        block.active_allocated = state == "active_allocated";
        block.active_pending_free = state == "active_pending_free";
        GPUSCOPE_TRY(stack, Stack(b));
        block.stack = *stack;
        seg.blocks.push_back(block);
      }
    }
    snap_.segments.push_back(std::move(seg));
  }

  int device = 0;
  for (uint32_t d : *List(root, "device_traces")) {
    snapshot::DeviceTrace trace;
    trace.device = device++;
    const pickle::Node& list = v_.at(d);
    if (list.kind != Kind::kList && list.kind != Kind::kTuple) {
      snap_.notes.push_back(std::string("device_traces[")
                                .append(std::to_string(trace.device))
                                .append("] is not a list: left out"));
      snap_.devices.push_back(std::move(trace));
      continue;
    }
    for (uint32_t e : list.items) {
      if (!IsDict(e)) continue;
      if (!Spend()) return OverBudget(name_);
      snapshot::TraceEvent ev;
      const std::string action = Str(e, "action");
      ev.action = snapshot::ActionFromName(action);
      if (ev.action == snapshot::Action::kOther) {
        auto it = std::find_if(trace.other_actions.begin(), trace.other_actions.end(),
                               [&](const auto& p) { return p.first == action; });
        if (it == trace.other_actions.end())
          trace.other_actions.emplace_back(action, 1);
        else
          ++it->second;
      }
      ev.addr = Int(e, "addr", 0);
      if (!Size(e, "size", &ev.size)) continue;
      ev.stream = Int(e, "stream", 0);
      ev.time_us = Int(e, "time_us", -1);
      ev.device_free = Int(e, "device_free", -1);
      GPUSCOPE_TRY(stack, Stack(e));
      ev.stack = *stack;
      trace.events.push_back(ev);
    }
    snap_.devices.push_back(std::move(trace));
  }

  const int64_t settings = v_.Get(root, "allocator_settings");
  if (settings >= 0 && IsDict(static_cast<uint32_t>(settings))) {
    snap_.has_allocator_settings = true;
    const auto& items = v_.at(static_cast<uint32_t>(settings)).items;
    for (size_t k = 0; k + 1 < items.size() && k < 512; k += 2)
      if (v_.is_str(items[k]))
        snap_.allocator_settings.emplace_back(SanitizeText(v_.str(items[k])),
                                              Spell(items[k + 1], 0));
  }
  if (const auto* ann = List(root, "external_annotations"))
    snap_.external_annotations = static_cast<int64_t>(ann->size());
  if (bad_sizes_ > 0)
    snap_.notes.push_back(
        std::to_string(bad_sizes_) +
        " segment, block or event sizes below 0 or above 256 TiB: those entries "
        "were left out (a damaged or edited snapshot; no device holds that much)");
  return std::move(snap_);
}

}  // namespace

bool LooksLikePickle(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 &&
         static_cast<unsigned char>(head[1]) >= 2 && static_cast<unsigned char>(head[1]) <= 5;
}

Result<snapshot::Snapshot> ParseTorchSnapshot(std::string_view bytes, const std::string& name,
                                              size_t max_string_bytes) {
  GPUSCOPE_TRY(value, pickle::Unpickle(bytes, name, max_string_bytes));
  GPUSCOPE_TRY(snap, Converter(*value, name, bytes.size()).Run());
  snap->path = name;
  snap->file_bytes = bytes.size();
  return snap;
}

Result<snapshot::Snapshot> ReadTorchSnapshot(io::ByteSource& source, const std::string& name,
                                             uint64_t file_bytes, size_t max_string_bytes) {
  std::string bytes;
  if (file_bytes > 0 && file_bytes <= kMaxSnapshotBytes) bytes.reserve(file_bytes);
  std::string chunk(size_t{1} << 20, '\0');
  while (true) {
    GPUSCOPE_TRY(n, source.Read(chunk.data(), chunk.size()));
    if (*n == 0) break;
    if (bytes.size() + *n > kMaxSnapshotBytes)
      return Status::InputError(name, bytes.size(),
                                std::string("a memory snapshot over ")
                                    .append(std::to_string(kMaxSnapshotBytes >> 30))
                                    .append(" GiB"),
                                "record fewer entries: _record_memory_history(max_entries=…)");
    bytes.append(chunk.data(), *n);
  }
  auto snap = ParseTorchSnapshot(bytes, name, max_string_bytes);
  if (snap.ok() && file_bytes > 0) snap->file_bytes = file_bytes;
  return snap;
}

}  // namespace gpuscope::ingest
