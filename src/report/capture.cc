#include "report/capture.h"

#include <string_view>

#include "render/build.h"

namespace gpuscope::report {

namespace {

using namespace render::build;  // the document-builder vocabulary

bool Nsys(const analyze::TraceSummary& r) { return r.format == TraceFormat::kNsysSqlite; }

// One check: whether the capture holds a kind of evidence. `effect` returns "" when it does.
struct CaptureCheck {
  const char* key;
  const char* what;
  std::string (*effect)(const analyze::TraceSummary& r);
  const char* kineto_hint;
  const char* nsys_hint;
};

std::string LaunchLinks(const analyze::TraceSummary& r) {
  const LinkStats& l = r.links;
  if (l.kernels == 0 || l.kernels_linked == l.kernels) return "";
  return std::to_string(l.kernels - l.kernels_linked) + " of " + std::to_string(l.kernels) +
         " kernels have no launch linked to them: launch overhead, the host side of idle gaps and "
         "the op behind each kernel are measured on the linked ones only";
}
std::string MemoryEvents(const analyze::TraceSummary& r) {
  if (r.counts.memory_events > 0) return "";
  return "no allocator events: allocated and reserved memory, their peak and the batch-size "
         "headroom are not measured";
}
std::string Steps(const analyze::TraceSummary& r) {
  if (!r.steps.empty()) return "";
  return "no ProfilerStep ranges: the whole span is treated as one step, with no steady-state "
         "selection and no per-step figures";
}
std::string Stacks(const analyze::TraceSummary& r) {
  if (Nsys(r))
    return "gpuscope reads no call stacks from Nsight exports: findings name CUDA calls and NVTX "
           "ranges, not the source lines that issued them";
  if (r.counts.python_functions > 0) return "";
  return "no Python stack frames: findings name the ops, not the source lines that issued them";
}
std::string DeviceProperties(const analyze::TraceSummary& r) {
  if (!r.device_name.empty()) return "";
  return "no device properties: the GPU's memory and SM count are unknown, so memory headroom "
         "and occupancy are not estimated";
}
// Only what was lost: characters replaced and identical duplicates removed lose nothing (the
// diagnostics table lists them), and the hint (a complete file) would not fit them.
std::string EveryEventRead(const analyze::TraceSummary& r) {
  const uint64_t lost = r.diagnostics.lost();
  if (lost == 0) return "";
  return std::to_string(lost) +
         " events or fields could not be read and were skipped (the diagnostics table says "
         "which): figures that need them undercount";
}

constexpr CaptureCheck kChecks[] = {
    {"launch_links", "kernel ↔ launch links", LaunchLinks,
     "profile CPU and CUDA together: torch.profiler.profile(activities=[ProfilerActivity.CPU, "
     "ProfilerActivity.CUDA]); launches made before the window opened lose their kernels' link",
     "nsys profile --trace=cuda records the CUDA API calls that carry the correlation ids"},
    {"memory_events", "memory events", MemoryEvents,
     "torch.profiler.profile(profile_memory=True), or a CUDA memory snapshot "
     "(torch.cuda.memory._record_memory_history(), then _dump_snapshot(FILE): gpuscope analyze "
     "reads it)",
     "Nsight Systems records no allocator events: take a CUDA memory snapshot "
     "(torch.cuda.memory._record_memory_history(), then _dump_snapshot(FILE))"},
    {"steps", "steps", Steps,
     "schedule=torch.profiler.schedule(wait=1, warmup=1, active=3) and prof.step() once per "
     "iteration",
     "NVTX ranges named ProfilerStep#N: torch.autograd.profiler.emit_nvtx(), or "
     "torch.cuda.nvtx.range_push(f\"ProfilerStep#{i}\") … range_pop() around each iteration, and "
     "nsys profile --trace=cuda,nvtx"},
    {"python_stacks", "Python stacks", Stacks,
     "torch.profiler.profile(with_stack=True); it costs host time while profiling, so keep the "
     "active window short",
     "a torch.profiler trace of the same steps with with_stack=True"},
    {"device_properties", "device properties", DeviceProperties,
     "PyTorch ≥ 1.10 writes deviceProperties into the trace; an older or hand-made trace lacks "
     "them",
     "the export's TARGET_INFO_GPU table (nsys ≥ 2021)"},
    {"every_event_read", "every event read", EveryEventRead,
     "a complete file: let the profiler finish writing before copying it, and check the copy",
     "a complete, unedited export: let nsys finish, then nsys export --type sqlite again"},
};

}  // namespace

std::vector<CaptureGap> CaptureGaps(const analyze::TraceSummary& r) {
  std::vector<CaptureGap> gaps;
  for (const CaptureCheck& c : kChecks) {
    std::string effect = c.effect(r);
    if (effect.empty()) continue;
    gaps.push_back({c.key, c.what, std::move(effect), Nsys(r) ? c.nsys_hint : c.kineto_hint});
  }
  return gaps;
}

void AddCapture(const analyze::TraceSummary& r, render::Section& s) {
  const std::vector<CaptureGap> gaps = CaptureGaps(r);
  std::string held;
  for (const CaptureCheck& c : kChecks) {
    bool missing = false;
    for (const CaptureGap& g : gaps) missing |= g.key == c.key;
    if (!missing) held += (held.empty() ? "" : ", ") + std::string(c.what);
  }
  Row& row = s.AddRow("capture", "capture");
  row.fields = {Detail("checks", "checks", Count(std::size(kChecks))),
                Detail("gaps", "gaps", Count(gaps.size()))};
  row.note = gaps.empty() ? "holds everything the analyses use: " + held
                          : "holds " + (held.empty() ? std::string("none of the checks") : held) +
                                "; " + std::to_string(gaps.size()) + " gap" +
                                (gaps.size() == 1 ? "" : "s") + " below";
  row.detail = gaps.empty();
  for (const CaptureGap& g : gaps) {
    Row& gap = s.AddRow("gap_" + g.key, "missing");
    gap.fields = {F("what", "", Text(g.what)), Detail("effect", "so", Text(g.effect)),
                  Detail("hint", "hint", Text(g.hint))};
    gap.note = "— " + g.effect + (g.hint.empty() ? "" : " (hint: " + g.hint + ")");
  }
}

}  // namespace gpuscope::report
