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
  // otherwise-compute name is communication: the row's class, not the name's).
  std::array<std::unordered_map<std::string, KernelRow>, kKernelClassCount> rows;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    const KernelNameInfo& ni = classes.OfName(t.gpu.name[i]);
    const KernelClass cls = classes.row[i];
    const int64_t dur = t.gpu.dur_ns[i];
    ClassKernels& ck = out.classes[static_cast<size_t>(cls)];
    ++ck.count;
    ck.total_ns += dur;
    KernelRow& row = rows[static_cast<size_t>(cls)][ni.short_name];
    if (row.count == 0) {
      row.name = ni.short_name;
      row.min_ns = dur;
      row.max_ns = dur;
      row.precision = ni.math.precision;
    }
    ++row.count;
    row.total_ns += dur;
    row.min_ns = std::min(row.min_ns, dur);
    row.max_ns = std::max(row.max_ns, dur);
    if (t.gpu.kind[i] == GpuKind::kKernel && ni.math.is_math) {
      out.math_ns += dur;
      out.math_ns_by_precision[static_cast<size_t>(ni.math.precision)] += dur;
      if (ni.math.tensor_core) out.tensor_core_ns += dur;
    }
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
    if (all.size() > top_n) all.resize(top_n);
    for (KernelRow& row : all) {
      row.share = ck.total_ns > 0
                      ? static_cast<double>(row.total_ns) / static_cast<double>(ck.total_ns)
                      : 0;
    }
    ck.top = std::move(all);
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
