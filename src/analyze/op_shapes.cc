#include "analyze/op_shapes.h"

#include <algorithm>
#include <unordered_map>

namespace gpuscope::analyze {

OpShapes AnalyzeOpShapes(const Trace& t) {
  OpShapes out;
  const CpuOpTable& c = t.cpu;
  for (size_t i = 0; i < c.size(); ++i) out.ops += c.kind[i] == CpuKind::kCpuOp;
  if (!c.has_shapes()) return out;
  out.recorded = true;
  const bool types = !c.input_types.empty();
  // Key: the three string ids packed; each is < 2^32 and names and shapes rarely pass 2^21
  // distinct strings, but a map keyed on the full triple keeps it exact.
  struct Key {
    StringId name, dims, types;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return (static_cast<size_t>(k.name) * 0x9E3779B97F4A7C15ull) ^
             (static_cast<size_t>(k.dims) * 0xC2B2AE3D27D4EB4Full) ^ k.types;
    }
  };
  std::unordered_map<Key, size_t, KeyHash> index;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.kind[i] != CpuKind::kCpuOp || c.input_dims[i] == kEmptyString) continue;
    ++out.ops_with_dims;
    const Key k{c.name[i], c.input_dims[i], types ? c.input_types[i] : kEmptyString};
    auto [it, added] = index.try_emplace(k, out.groups.size());
    if (added) out.groups.push_back({k.name, k.dims, k.types, 0, 0, 0});
    OpShapeGroup& g = out.groups[it->second];
    ++g.count;
    g.total_ns += c.dur_ns[i];
    g.max_ns = std::max(g.max_ns, c.dur_ns[i]);
  }
  std::sort(out.groups.begin(), out.groups.end(),
            [&t](const OpShapeGroup& a, const OpShapeGroup& b) {
              if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
              if (a.count != b.count) return a.count > b.count;
              const std::string_view an = t.strings.Get(a.name), bn = t.strings.Get(b.name);
              if (an != bn) return an < bn;
              return t.strings.Get(a.input_dims) < t.strings.Get(b.input_dims);
            });
  return out;
}

}  // namespace gpuscope::analyze
