#include "analyze/kernels.h"

#include <algorithm>
#include <unordered_map>

namespace gpuscope::analyze {

KernelsResult AnalyzeKernels(const Trace& t, size_t top_n) {
  return AnalyzeKernels(t, BuildKernelClasses(t), top_n);
}

KernelsResult AnalyzeKernels(const Trace& t, const KernelClasses& classes, size_t top_n) {
  KernelsResult out;
  for (size_t c = 0; c < kKernelClassCount; ++c) out.classes[c].cls = static_cast<KernelClass>(c);

  // Rows are grouped by short name within their class (a collective-tagged instance of an
  // otherwise-compute name is communication: the row's class, not the name's). First per (class,
  // name id), an integer key, then folded by short name in the order each name first appeared:
  // hashing the short-name string of every row took most of this analysis.
  struct ByName {
    uint32_t first_row = 0;
    StringId name = kEmptyString;
    KernelClass cls = KernelClass::kCompute;
    uint64_t count = 0;
    int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  };
  std::unordered_map<uint64_t, size_t> slot_of;  // (class << 32 | name) → index into by_name
  std::vector<ByName> by_name;
  uint64_t last_key = ~uint64_t{0};
  size_t last_slot = 0;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    const StringId name = t.gpu.name[i];
    const KernelNameInfo& ni = classes.OfName(name);
    const KernelClass cls = classes.row[i];
    const int64_t dur = t.gpu.dur_ns[i];
    ClassKernels& ck = out.classes[static_cast<size_t>(cls)];
    ++ck.count;
    ck.total_ns += dur;
    const uint64_t key = (static_cast<uint64_t>(cls) << 32) | name;
    if (key != last_key) {
      auto [it, added] = slot_of.try_emplace(key, by_name.size());
      if (added) by_name.push_back({static_cast<uint32_t>(i), name, cls, 0, 0, dur, dur});
      last_key = key;
      last_slot = it->second;
    }
    ByName& b = by_name[last_slot];
    ++b.count;
    b.total_ns += dur;
    b.min_ns = std::min(b.min_ns, dur);
    b.max_ns = std::max(b.max_ns, dur);
    if (t.gpu.kind[i] == GpuKind::kKernel && ni.math.is_math) {
      out.math_ns += dur;
      out.math_ns_by_precision[static_cast<size_t>(ni.math.precision)] += dur;
      if (ni.math.tensor_core) out.tensor_core_ns += dur;
    }
  }
  // by_name is in order of first appearance: a short name's precision is that of its first row.
  std::array<std::unordered_map<std::string, KernelRow>, kKernelClassCount> rows;
  for (const ByName& b : by_name) {
    const KernelNameInfo& ni = classes.OfName(b.name);
    KernelRow& row = rows[static_cast<size_t>(b.cls)][ni.short_name];
    if (row.count == 0) {
      row.name = ni.short_name;
      row.min_ns = b.min_ns;
      row.max_ns = b.max_ns;
      row.precision = ni.math.precision;
    }
    row.count += b.count;
    row.total_ns += b.total_ns;
    row.min_ns = std::min(row.min_ns, b.min_ns);
    row.max_ns = std::max(row.max_ns, b.max_ns);
  }
  for (size_t c = 0; c < kKernelClassCount; ++c) {
    ClassKernels& ck = out.classes[c];
    ck.distinct_names = rows[c].size();
    std::vector<KernelRow> all;
    all.reserve(rows[c].size());
    for (auto& [name, row] : rows[c]) all.push_back(std::move(row));
    std::sort(all.begin(), all.end(), [](const KernelRow& a, const KernelRow& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    for (KernelRow& row : all) {
      row.share = ck.total_ns > 0
                      ? static_cast<double>(row.total_ns) / static_cast<double>(ck.total_ns)
                      : 0;
    }
    ck.top.assign(all.begin(),
                  all.begin() + static_cast<std::ptrdiff_t>(std::min(top_n, all.size())));
    ck.all = std::move(all);
  }
  int64_t best = 0;
  for (size_t p = 0; p < kMathPrecisionCount; ++p) {
    if (out.math_ns_by_precision[p] > best) {
      best = out.math_ns_by_precision[p];
      out.dominant_precision = static_cast<MathPrecision>(p);
    }
  }
  return out;
}

}  // namespace gpuscope::analyze
