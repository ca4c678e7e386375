#include "analyze/host_work.h"

#include "analyze/step_graph.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <unordered_map>

namespace gpuscope::analyze {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Sorts and merges overlapping or touching spans in place.
void Merge(Spans* spans) {
  std::sort(spans->begin(), spans->end());
  size_t out = 0;
  for (const auto& s : *spans) {
    if (s.second <= s.first) continue;
    if (out > 0 && s.first <= (*spans)[out - 1].second) {
      (*spans)[out - 1].second = std::max((*spans)[out - 1].second, s.second);
    } else {
      (*spans)[out++] = s;
    }
  }
  spans->resize(out);
}

// `spans` ∩ `windows` (both sorted and disjoint).
Spans Clip(const Spans& spans, const Spans& windows) {
  Spans out;
  size_t w = 0;
  for (const auto& s : spans) {
    while (w < windows.size() && windows[w].second <= s.first) ++w;
    for (size_t k = w; k < windows.size() && windows[k].first < s.second; ++k) {
      const int64_t a = std::max(s.first, windows[k].first),
                    b = std::min(s.second, windows[k].second);
      if (b > a) out.emplace_back(a, b);
    }
  }
  return out;
}

int64_t Total(const Spans& spans) {
  int64_t ns = 0;
  for (const auto& s : spans) ns += s.second - s.first;
  return ns;
}

// `windows` minus `covered` (both sorted and disjoint).
Spans Uncovered(const Spans& windows, const Spans& covered) {
  Spans out;
  size_t c = 0;
  for (const auto& w : windows) {
    int64_t at = w.first;
    while (c < covered.size() && covered[c].second <= at) ++c;
    for (size_t k = c; k < covered.size() && covered[k].first < w.second; ++k) {
      if (covered[k].first > at) out.emplace_back(at, covered[k].first);
      at = std::max(at, covered[k].second);
    }
    if (at < w.second) out.emplace_back(at, w.second);
  }
  return out;
}

std::vector<NamedTime> ByTime(const std::map<std::string, NamedTime>& by_name, size_t keep) {
  std::vector<NamedTime> out;
  for (const auto& [name, t] : by_name) out.push_back(t);
  std::stable_sort(out.begin(), out.end(),
                   [](const NamedTime& a, const NamedTime& b) { return a.ns > b.ns; });
  if (out.size() > keep) out.resize(keep);
  return out;
}

}  // namespace

bool IsAllocatorCall(std::string_view name) {
  static constexpr std::string_view kCalls[] = {
      "cudaMalloc",    "cudaFree",       "cuMemAlloc",    "cuMemAlloc_v2",
      "cuMemFree",     "cuMemFree_v2",   "hipMalloc",     "hipFree",
      "cudaHostAlloc", "cudaMallocHost", "cudaFreeHost",  "hipHostMalloc",
      "hipHostFree",   "cuMemHostAlloc", "cuMemFreeHost", "hipExtMallocWithFlags"};
  return std::find(std::begin(kCalls), std::end(kCalls), name) != std::end(kCalls);
}

bool IsCompileName(std::string_view name) {
  const std::string n = Lower(name);
  auto has = [&n](std::string_view w) { return n.find(w) != std::string::npos; };
  if (has("compiled"))
    return false;  // running compiled code: Torch-Compiled Region, CompiledFunction
  return has("compile") || has("nvrtc") || has("hiprtc") || has("autotun") || has("cumoduleload") ||
         has("culibraryload") || has("hipmoduleload");
}

int64_t OverlapNs(const Spans& spans, int64_t start, int64_t end) {
  if (end <= start || spans.empty()) return 0;
  auto it = std::upper_bound(spans.begin(), spans.end(), std::make_pair(start, INT64_MAX));
  if (it != spans.begin()) --it;
  int64_t ns = 0;
  for (; it != spans.end() && it->first < end; ++it)
    ns += std::max<int64_t>(0, std::min(end, it->second) - std::max(start, it->first));
  return ns;
}

Spans CompileAndAllocatorSpans(const Trace& t) {
  // A name is tested once, not once per event (a 1 GB trace has millions of ops, few names).
  std::unordered_map<StringId, bool> compile_name, allocator_name;
  auto is = [&t](std::unordered_map<StringId, bool>& seen, StringId id,
                 bool (*pred)(std::string_view)) {
    auto [it, added] = seen.try_emplace(id, false);
    if (added) it->second = pred(t.Str(id));
    return it->second;
  };
  Spans out;
  const RuntimeCallTable& rt = t.runtime;
  for (size_t r = 0; r < rt.size(); ++r) {
    const int64_t d = std::max<int64_t>(rt.dur_ns[r], 0);
    if (is(compile_name, rt.name[r], IsCompileName) ||
        (d <= kDriverInitCallNs && is(allocator_name, rt.name[r], IsAllocatorCall)))
      out.emplace_back(rt.start_ns[r], rt.start_ns[r] + d);
  }
  const CpuOpTable& cpu = t.cpu;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const CpuKind k = cpu.kind[i];
    if (k == CpuKind::kGpuUserAnnotation || k == CpuKind::kProfilerRange) continue;
    if (is(compile_name, cpu.name[i], IsCompileName))
      out.emplace_back(cpu.start_ns[i], cpu.start_ns[i] + std::max<int64_t>(cpu.dur_ns[i], 0));
  }
  Merge(&out);
  return out;
}

HostWork AnalyzeHostWork(const Trace& t, const StepsResult& steps) {
  HostWork out;
  // The steady steps; of a long trace the middle kMaxGraphSteps, as the step graph takes them:
  // its steady steps are alike, and a 1 GB trace then costs what a small one does (only the
  // events inside the span are sorted).
  std::vector<const StepBreakdown*> steady;
  for (const StepBreakdown& s : steps.steps)
    if (s.steady_state && s.host_end_ns > s.host_start_ns) steady.push_back(&s);
  if (steady.size() > kMaxGraphSteps) {
    const size_t first = (steady.size() - kMaxGraphSteps) / 2;
    steady = std::vector<const StepBreakdown*>(
        steady.begin() + static_cast<std::ptrdiff_t>(first),
        steady.begin() + static_cast<std::ptrdiff_t>(first + kMaxGraphSteps));
  }
  Spans windows;
  for (const StepBreakdown* s : steady) windows.emplace_back(s->host_start_ns, s->host_end_ns);
  out.windows = static_cast<uint32_t>(windows.size());
  Merge(&windows);
  const int64_t span_start = windows.empty() ? 0 : windows.front().first;
  const int64_t span_end = windows.empty() ? 0 : windows.back().second;
  auto in_span = [&](int64_t s, int64_t e) { return e > span_start && s < span_end; };
  out.window_ns = Total(windows);
  auto in_window = [&windows](int64_t ns) {
    auto it = std::upper_bound(windows.begin(), windows.end(), std::make_pair(ns, INT64_MAX));
    return it != windows.begin() && ns < std::prev(it)->second;
  };

  Spans covered, compile;
  std::map<std::string, NamedTime> alloc_names;
  std::vector<std::pair<std::pair<int64_t, int64_t>, StringId>> compile_ops;
  const RuntimeCallTable& rt = t.runtime;
  for (size_t r = 0; r < rt.size(); ++r) {
    const int64_t s = rt.start_ns[r], e = s + std::max<int64_t>(rt.dur_ns[r], 0);
    if (!in_span(s, e)) continue;
    covered.emplace_back(s, e);
    const std::string_view name = t.Str(rt.name[r]);
    if (IsCompileName(name)) compile_ops.push_back({{s, e}, rt.name[r]});
    if (!IsAllocatorCall(name) || !in_window(s)) continue;
    if (e - s > kDriverInitCallNs) {
      ++out.driver_init_calls;
      out.driver_init_ns += e - s;
      continue;
    }
    ++out.allocator_calls;
    out.allocator_ns += e - s;
    NamedTime& n = alloc_names[std::string(name)];
    n.name = name;
    ++n.count;
    n.ns += e - s;
  }
  const CpuOpTable& cpu = t.cpu;
  std::set<StringId> recompiled;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const CpuKind k = cpu.kind[i];
    const std::string_view name = t.Str(cpu.name[i]);
    if (k == CpuKind::kUserAnnotation || k == CpuKind::kCpuOp) {
      if (name.starts_with("Torch-Compiled Region") || name == "TorchDynamo Cache Lookup") {
        out.torch_compile = true;
        // "Torch-Compiled Region: F/N": N > 0 is a recompile of frame F; each such region once.
        const size_t slash = name.rfind('/');
        if (slash != std::string_view::npos && slash + 1 < name.size() &&
            name.substr(slash + 1) != "0")
          recompiled.insert(cpu.name[i]);
      }
    }
    if (k == CpuKind::kGpuUserAnnotation || k == CpuKind::kProfilerRange) continue;
    const int64_t s = cpu.start_ns[i], e = s + std::max<int64_t>(cpu.dur_ns[i], 0);
    if (!in_span(s, e)) continue;
    if (IsCompileName(name)) compile_ops.push_back({{s, e}, cpu.name[i]});
    // The step's own range covers all of it; Python functions (with_stack) cover the script's
    // whole life. Neither says what the host did.
    if (k == CpuKind::kPythonFunction || cpu.step[i] >= 0) continue;
    covered.emplace_back(s, e);
  }
  out.recompiled_regions = static_cast<uint32_t>(recompiled.size());
  Merge(&covered);
  out.unrecorded_spans = Uncovered(windows, covered);
  out.unrecorded_ns = Total(out.unrecorded_spans);
  // Each window's first kernel launch (INT64_MAX: none).
  std::vector<int64_t> first_launch(windows.size(), INT64_MAX);
  for (size_t r = 0; r < rt.size(); ++r) {
    if (rt.kind[r] != RuntimeKind::kKernelLaunch && rt.kind[r] != RuntimeKind::kGraphLaunch)
      continue;
    const int64_t s = rt.start_ns[r];
    auto it = std::upper_bound(windows.begin(), windows.end(), std::make_pair(s, INT64_MAX));
    if (it == windows.begin() || s >= std::prev(it)->second) continue;
    const size_t w = static_cast<size_t>(std::prev(it) - windows.begin());
    first_launch[w] = std::min(first_launch[w], s);
  }
  for (size_t w = 0; w < windows.size(); ++w)
    out.unrecorded_before_first_launch_ns += OverlapNs(
        out.unrecorded_spans, windows[w].first, std::min(first_launch[w], windows[w].second));

  // Outermost compile ops: sorted by start, longest first on a tie; an op inside the previous
  // outermost one is part of it.
  std::sort(compile_ops.begin(), compile_ops.end(), [](const auto& a, const auto& b) {
    if (a.first.first != b.first.first) return a.first.first < b.first.first;
    return a.first.second > b.first.second;
  });
  std::map<std::string, NamedTime> compile_names;
  int64_t outer_end = INT64_MIN;
  for (const auto& [span, name] : compile_ops) {
    compile.push_back(span);
    if (span.first < outer_end) continue;
    outer_end = span.second;
    const Spans one = Clip({span}, windows);
    const int64_t ns = Total(one);
    if (ns <= 0) continue;
    NamedTime& n = compile_names[std::string(t.Str(name))];
    n.name = t.Str(name);
    ++n.count;
    n.ns += ns;
  }
  Merge(&compile);
  out.compile_spans = Clip(compile, windows);
  out.compile_ns = Total(out.compile_spans);
  out.compile_names = ByTime(compile_names, 3);
  out.allocator_names = ByTime(alloc_names, 4);
  return out;
}

}  // namespace gpuscope::analyze
