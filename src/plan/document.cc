// The plan as a render::Document: the request, the search, the best configuration's working (one
// row per memory and time term, with its formula), what was rejected and why, the assumptions, and
// ready snippets. docs/planner.md defines every term.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "hw/gpu_peaks.h"
#include "plan/frameworks.h"
#include "plan/render.h"
#include "render/build.h"
#include "render/format.h"

namespace gpuscope::plan {

namespace {

using namespace render::build;  // the document-builder vocabulary

Value GiB(double bytes) { return Value::BinaryBytes(bytes); }
Value Seconds(double s) { return Ns(s * 1e9); }  // n/a when not finite
// TFLOP/s as the GPU table gives them; 0 (no such datapath, e.g. fp8 before Ada/Hopper) is n/a.
Value Tflops(double t) { return t > 0 ? Value::Number(t, 1) : Value::Na(); }

// A snippet as a file holds it, without the blank last line the text view would indent.
std::string Snippet(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// A column that text shows whole (formulas, reasons): see render::Column::whole.
Column Whole(std::string key, std::string label) {
  return Column{std::move(key), std::move(label), false, true};
}

std::string ReasonClass(const std::string& reason) {
  if (reason.rfind("OOM", 0) == 0) return "out of memory";
  if (reason.find("not divisible") != std::string::npos) return "batch not divisible";
  if (reason.find("interleaving") != std::string::npos) return "interleaving needs m % p == 0";
  return reason;
}

std::vector<render::Field> ConfigFields(const ParallelConfig& c) {
  return {F("tp", "tp", Count(c.tp)),
          F("pp", "pp", Count(c.pp)),
          F("vpp", "vpp", Count(c.vpp)),
          F("dp", "dp", Count(c.dp)),
          F("mbs", "mbs", Count(c.mbs)),
          F("grad_accum", "ga", Count(c.grad_accum)),
          F("framework", "framework", Text(std::string(FrameworkName(c.framework)))),
          F("sharding", "", Text(ShardingLabel(c))),
          F("zero_stage", "ZeRO stage", Count(ZeroStage(c.sharding))),
          F("hybrid", "hybrid sharding", Value::Bool(c.hybrid)),
          F("grad_reduce_in_bf16", "bf16 main grads", Value::Bool(c.bf16_grads)),
          F("sp", "sequence parallel", Value::Bool(c.sp)),
          F("recompute", "recompute", Text(std::string(RecomputeName(c.recompute)))),
          F("precision", "", Text(std::string(hw::PrecisionName(c.precision)))),
          F("optimizer", "", Text(std::string(OptimizerName(c.optimizer)))),
          F("offload", "offload", Text(std::string(OffloadName(c.offload))))};
}

// The working of one configuration: memory terms and time terms, each with its formula.
// The section's title names the configuration ("best: tp=1 pp=1 …"); the row carries it typed.
void AddWorking(const Evaluation& ev, const std::string& key, const std::string& title,
                render::Document& doc) {
  Section& s = doc.AddSection(key, title + ": " + Degrees(ev.config));
  Row& cfg = s.AddRow("configuration", "configuration");
  cfg.detail = true;  // text and HTML: the title says it
  cfg.fields = {F("degrees", "", Text(Degrees(ev.config)))};
  for (render::Field f : ConfigFields(ev.config)) cfg.fields.push_back(std::move(f));
  const MemoryBreakdown& mem = ev.memory;
  Table& terms = s.AddTable("memory_terms", "memory per GPU (most-loaded: pipeline stage 0)",
                            {Whole("term", "term"),
                             {"kind", "kind"},
                             {"memory_bytes", "bytes"},
                             {"counted", "in the peak"},
                             Whole("formula", "formula")});
  terms.text_rows = 100;
  for (const MemoryTerm& t : mem.terms) {
    if (t.bytes == 0 && t.kind == TermKind::kStatic && t.name.rfind("parameters", 0) == 0) continue;
    terms.rows.push_back({Text(t.name), Text(std::string(TermKindName(t.kind))), GiB(t.bytes),
                          Value::Bool(t.counted), Text(t.formula)});
  }
  Row& prank = s.AddRow("params_on_rank", "P_rank");
  prank.fields = {F("params_on_rank", "", Count(mem.params_on_rank))};
  // The count's formula is the zero-byte first term, which the table leaves out.
  for (const MemoryTerm& t : mem.terms)
    if (t.bytes == 0 && t.kind == TermKind::kStatic && t.name.rfind("parameters", 0) == 0)
      prank.fields.push_back(Detail("formula", "=", Text(t.formula)));
  prank.note = "parameters on the most-loaded GPU";
  Row& stat = s.AddRow("static", "static");
  stat.fields = {F("static_bytes", "", GiB(mem.static_bytes))};
  stat.note = "(weights + grads + master + optimizer)";
  s.AddRow("activations", "activations").fields = {
      F("activation_bytes", "", GiB(mem.activation_bytes))};
  // Peak = predicted peak allocated + context; the verdict is the row's note so it reads last.
  Row& peak = s.AddRow("peak", "peak");
  peak.fields = {F("peak_bytes", "Σ counted terms", GiB(mem.peak_bytes)),
                 F("peak_allocated_bytes", "allocated", GiB(mem.peak_allocated_bytes)),
                 F("budget_bytes", "budget", GiB(mem.budget_bytes)),
                 F("capacity_bytes", "capacity", GiB(mem.capacity_bytes)),
                 Detail("fits", "fits", Value::Bool(mem.fits))};
  peak.note = mem.fits ? "→ fits" : "→ DOES NOT FIT";
  Row& host = s.AddRow("host_memory", "host memory");
  host.fields = {F("cpu_bytes", "offloaded", GiB(mem.cpu_bytes))};
  host.detail = mem.cpu_bytes <= 0;
  const StepTime& st = ev.time;
  s.AddRow("flops", "FLOPs/step").fields = {
      F("flops_model", "model", Value::Number(st.flops_model)),
      F("flops_hardware", "hardware (with recompute)", Value::Number(st.flops_hardware)),
      Detail("peak_flops", "peak per GPU", Value::Number(st.peak_flops)),
      Detail("efficiency", "η", Value::Number(st.efficiency, 3)),
      Detail("bubble_share", "pipeline bubble", Value::Share(st.bubble_fraction))};
  Table& time = s.AddTable("time_terms", "step time",
                           {{"term", "term"}, {"time_ns", "time"}, Whole("formula", "formula")});
  time.text_rows = 100;
  for (const TimeTerm& t : st.terms)
    time.rows.push_back({Text(t.name), Seconds(t.seconds), Text(t.formula)});
  s.AddRow("step", "predicted").fields = {
      F("step_time_ns", "step time", Seconds(st.step_s)),
      F("tokens_per_s", "tokens/s", Value::Number(st.tokens_per_s, 0, Unit::kPerSecond)),
      F("tokens_per_gpu_per_s", "per GPU",
        Value::Number(st.tokens_per_s / static_cast<double>(std::max<int64_t>(1, ev.config.gpus)),
                      0, Unit::kPerSecond)),
      F("mfu_share", "MFU", Value::Share(st.mfu)), F("hfu_share", "HFU", Value::Share(st.hfu))};
}

void AddRequest(const PlanReport& rep, render::Document& doc) {
  const PlanRequest& r = rep.request;
  Section& s = doc.AddSection("request", "");
  Row& model = s.AddRow("model", "model");
  model.fields = {Detail("name", "", Text(r.model.name)),  // in the title
                  F("shape", "", Text(ModelLine(r.model))),
                  Detail("model_type", "type", Text(r.model.model_type)),
                  Detail("layers", "L", Count(r.model.layers)),
                  Detail("hidden", "h", Count(r.model.hidden)),
                  Detail("heads", "a", Count(r.model.heads)),
                  Detail("kv_heads", "g", Count(r.model.kv_heads)),
                  Detail("head_dim", "d_h", Count(r.model.head_dim)),
                  Detail("ffn", "f", Count(r.model.ffn)),
                  Detail("vocab", "V", Count(r.model.vocab)),
                  Detail("tied_embeddings", "tied", Value::Bool(r.model.tied_embeddings)),
                  Detail("gated_mlp", "gated MLP", Value::Bool(r.model.gated_mlp)),
                  Detail("experts", "experts", Count(r.model.experts)),
                  Detail("experts_top_k", "top-k", Count(r.model.experts_top_k))};
  Row& params = s.AddRow("parameters", "parameters");
  params.fields = {F("total", "", Count(rep.params.total))};
  params.note = "(" + render::FormatNumber(rep.params.total / 1e9, 3) + " B)";
  if (r.model.experts > 0)
    params.fields.push_back(F("active", "active per token", Count(rep.params.active)));
  else
    params.fields.push_back(Detail("active", "active per token", Count(rep.params.active)));
  s.AddRow("gpu", "gpu").fields = {
      F("name", "", Text(r.gpu.name)), F("count", "GPUs", Count(r.gpus)),
      F("memory_bytes", "memory", GiB(r.gpu.memory_gib * 1073741824.0)),
      // "3.35 TB/s", "900 GB/s": the table's digits, no more.
      F("hbm_bytes_per_s", "HBM",
        Value::Number(r.gpu.hbm_gbps * 1e9, r.gpu.hbm_gbps >= 1000 ? 2 : 0, Unit::kBytesPerSecond)),
      F("tflops_bf16", "dense TFLOP/s bf16", Tflops(r.gpu.tflops_bf16)),
      F("tflops_fp16", "fp16", Tflops(r.gpu.tflops_fp16)),
      F("tflops_fp8", "fp8", Tflops(r.gpu.tflops_fp8)),
      F("tflops_tf32", "tf32", Tflops(r.gpu.tflops_fp32)),
      F("tflops_fp32", "fp32 (CUDA cores)",
        Tflops(hw::PlanPeakTflops(r.gpu, hw::Precision::kFp32))),
      F("intra_node_bytes_per_s", "intra-node",
        Value::Number(r.gpu.intra_node_gbps * 1e9, 0, Unit::kBytesPerSecond)),
      F("source", "source", Text(r.gpu.source)),
      Detail("description", "", Text(r.gpu.description))};  // in the title
  s.AddRow("batch", "batch").fields = {
      F("global_batch", "sequences", Count(r.global_batch)),
      F("seq_len", "tokens per sequence", Count(r.seq_len)),
      F("tokens_per_step", "tokens per step",
        Count(static_cast<double>(r.global_batch) * static_cast<double>(r.seq_len)))};
}

void AddCalibration(const PlanRequest& r, const Calibration& cal, render::Document& doc) {
  Section& s = doc.AddSection("calibration", "calibration from " + cal.measured.source);
  // The title names the trace; the row carries it for JSON.
  s.AddRow("measured", cal.measured.memory_only ? "snapshot" : "trace").fields = {
      Detail("trace", "", Text(cal.measured.source)),
      F("ranks", "ranks", Count(static_cast<double>(cal.measured.ranks))),
      F("steps", "steady steps", Count(static_cast<double>(cal.measured.steps)))};
  Row& traced = s.AddRow("traced_configuration", "traced");
  traced.fields = {F("degrees", "", Text(Degrees(cal.before.config)))};
  for (render::Field f : ConfigFields(cal.before.config)) {
    f.detail = true;
    traced.fields.push_back(std::move(f));
  }
  // Measured, predicted before and after the fit: one row per quantity, so each key names its unit.
  s.AddRow("step_time", "step time").fields = {
      // A memory snapshot measures no step: n/a (null).
      F("measured_ns", "measured",
        cal.measured.memory_only ? Seconds(std::nan("")) : Seconds(cal.measured.step_s)),
      F("predicted_ns", "predicted", Seconds(cal.before.time.step_s)),
      F("calibrated_ns", "calibrated", Seconds(cal.after.time.step_s))};
  if (cal.measured.peak_allocated_bytes >= 0) {
    // Peak allocated: the prediction without the context (the allocator does not see it).
    const double ctx = r.assumptions.context_gib * 1073741824.0;
    s.AddRow("peak_allocated", "peak alloc").fields = {
        F("measured_bytes", "measured", GiB(cal.measured.peak_allocated_bytes)),
        F("predicted_bytes", "predicted", GiB(cal.before.memory.peak_bytes - ctx)),
        F("calibrated_bytes", "calibrated", GiB(cal.after.memory.peak_bytes - ctx))};
  }
  Row& fit = s.AddRow("fit", "fitted");
  fit.fields = {F("efficiency", "η", Value::Number(cal.efficiency, 3)),
                F("prior_efficiency", "was", Value::Number(cal.prior_efficiency, 3)),
                F("memory_overhead_bytes", "memory overhead",
                  cal.memory_fitted ? GiB(cal.overhead_bytes) : Value::Na(Unit::kBytes)),
                F("activation_scale", "activations ×", Value::Number(cal.activation_scale, 3)),
                F("other_per_token", "outside GEMM/attention, ns per token",
                  cal.time_split ? Value::Number(cal.other_s_per_token * 1e9, 3) : Value::Na()),
                Detail("memory_fitted", "memory fitted", Value::Bool(cal.memory_fitted))};
  for (size_t i = 0; i < cal.notes.size(); ++i)
    s.AddText("note_" + std::to_string(i), "note: " + cal.notes[i]);
}

// The layout columns of the best configurations and of the rejected examples, and a
// configuration's cells for them, in one place so the two tables cannot drift apart.
std::vector<Column> LayoutColumns() {
  return {{"framework", "framework"},
          {"tp", "tp"},
          {"pp", "pp"},
          {"vpp", "vpp"},
          {"dp", "dp"},
          {"mbs", "mbs"},
          {"grad_accum", "ga"},
          {"sharding", "shard"},
          {"sp", "sp"},
          {"recompute", "recompute"},
          {"precision", "prec"}};
}

std::vector<Value> LayoutCells(const ParallelConfig& c) {
  return {Text(std::string(FrameworkName(c.framework))),
          Count(c.tp),
          Count(c.pp),
          Count(c.vpp),
          Count(c.dp),
          Count(c.mbs),
          Count(c.grad_accum),
          Text(ShardingLabel(c)),
          Value::Bool(c.sp),
          Text(std::string(RecomputeName(c.recompute))),
          Text(std::string(hw::PrecisionName(c.precision)))};
}

// `head`, then `middle`, then `tail`: a table's columns or a row's cells around the layout's.
template <typename T>
std::vector<T> Joined(std::vector<T> head, std::vector<T> middle, std::vector<T> tail) {
  head.insert(head.end(), std::make_move_iterator(middle.begin()),
              std::make_move_iterator(middle.end()));
  head.insert(head.end(), std::make_move_iterator(tail.begin()),
              std::make_move_iterator(tail.end()));
  return head;
}

}  // namespace

// The best configurations side by side (HTML draws them; JSON carries them): memory per GPU by
// kind of term against the budget, and the step by time term (the terms sum to the step).
void AddBestCharts(const PlanReport& rep, size_t n, Section& s) {
  if (n == 0) return;
  std::vector<std::string> labels;
  for (size_t i = 0; i < n; ++i) {
    const ParallelConfig& c = rep.feasible[i].config;
    labels.push_back(fmt::format("#{} {} tp{} pp{} dp{} mbs{}", i + 1, FrameworkName(c.framework),
                                 c.tp, c.pp, c.dp, c.mbs));
  }
  render::Chart& mem = s.AddChart("memory_chart", "memory per GPU by kind of term (counted terms)",
                                  render::Chart::Kind::kStackedBars, Unit::kBytes);
  mem.categories = labels;
  for (TermKind k :
       {TermKind::kStatic, TermKind::kActivation, TermKind::kTransient, TermKind::kOverhead}) {
    render::Series series{std::string(TermKindName(k)), std::string(TermKindName(k)), {}};
    for (size_t i = 0; i < n; ++i) {
      double bytes = 0;
      for (const MemoryTerm& t : rep.feasible[i].memory.terms)
        if (t.counted && t.kind == k) bytes += t.bytes;
      series.values.push_back(bytes);
    }
    mem.series.push_back(std::move(series));
  }
  mem.reference_lines = {
      F("budget_bytes", "budget", GiB(rep.feasible.front().memory.budget_bytes))};
  render::Chart& time = s.AddChart("time_chart", "step time by term",
                                   render::Chart::Kind::kStackedBars, Unit::kNanos);
  time.categories = labels;
  std::vector<std::string> names;  // every term, in order of first appearance
  for (size_t i = 0; i < n; ++i)
    for (const TimeTerm& t : rep.feasible[i].time.terms)
      if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
  for (size_t j = 0; j < names.size(); ++j) {
    render::Series series{"term_" + std::to_string(j), names[j], {}};
    for (size_t i = 0; i < n; ++i) {
      double ns = 0;
      for (const TimeTerm& t : rep.feasible[i].time.terms)
        if (t.name == names[j]) ns += t.seconds * 1e9;
      series.values.push_back(ns);
    }
    time.series.push_back(std::move(series));
  }
}

render::Document BuildDocument(const PlanReport& rep, const Calibration* cal) {
  const PlanRequest& r = rep.request;
  render::Document doc;
  doc.schema = "gpuscope.plan";
  doc.title = "gpuscope plan: " + r.model.name + " on " + std::to_string(r.gpus) + " × " +
              r.gpu.name + (r.gpu.description.empty() ? "" : " (" + r.gpu.description + ")") +
              ", global batch " + std::to_string(r.global_batch) + " × " +
              std::to_string(r.seq_len) + " tokens";
  AddRequest(rep, doc);
  if (cal) AddCalibration(r, *cal, doc);
  Section& search = doc.AddSection("search", "");
  size_t oom = 0;
  for (const Rejection& x : rep.rejected) oom += x.over_bytes > 0;
  Row& counts = search.AddRow("searched", "searched");
  counts.fields = {F("configurations", "configurations",
                     Count(static_cast<double>(rep.evaluated + (rep.rejected.size() - oom)))),
                   F("feasible", "feasible", Count(static_cast<double>(rep.feasible.size()))),
                   F("rejected", "rejected", Count(static_cast<double>(rep.rejected.size()))),
                   Detail("evaluated", "evaluated", Count(static_cast<double>(rep.evaluated))),
                   Detail("not_supported", "skipped: the framework cannot run them",
                          Count(static_cast<double>(rep.not_supported))),
                   Detail("exact", "every degree given", Value::Bool(rep.exact))};
  counts.detail = rep.exact;
  // One configuration given and it does not fit: no search and no table (the working says why).
  if (rep.exact && rep.feasible.empty()) search.views = 0;
  Table& best = search.AddTable("configurations", "best configurations",
                                Joined({{"rank", "rank"}}, LayoutColumns(),
                                       {{"peak_bytes", "peak"},
                                        {"peak_allocated_bytes", "allocated"},
                                        {"step_time_ns", "step"},
                                        {"tokens_per_s", "tokens/s"},
                                        {"tokens_per_gpu_per_s", "per GPU"},
                                        {"mfu_share", "MFU"}}));
  best.text_rows = 100;
  const size_t n = std::min<size_t>(rep.feasible.size(), static_cast<size_t>(std::max(1, r.top)));
  for (size_t i = 0; i < n; ++i) {
    const Evaluation& e = rep.feasible[i];
    const ParallelConfig& c = e.config;
    best.rows.push_back(Joined(
        {Count(static_cast<int64_t>(i + 1))}, LayoutCells(c),
        {GiB(e.memory.peak_bytes), GiB(e.memory.peak_allocated_bytes), Seconds(e.time.step_s),
         Value::Number(e.time.tokens_per_s, 0, Unit::kPerSecond),
         Value::Number(e.time.tokens_per_s / static_cast<double>(std::max<int64_t>(1, c.gpus)), 0,
                       Unit::kPerSecond),
         Value::Share(e.time.mfu)}));
  }
  AddBestCharts(rep, n, search);
  if (!rep.feasible.empty())
    AddWorking(rep.feasible.front(), "best", rep.exact ? "configuration" : "best", doc);
  else if (rep.closest)
    AddWorking(*rep.closest, "closest", "no configuration fits; the closest", doc);
  if (!rep.rejected.empty() && !rep.exact) {
    Section& rej = doc.AddSection("rejected", "rejected");
    rej.collapsed = true;  // HTML: folded; the reasons table groups them
    std::map<std::string, size_t> by_reason;
    for (const Rejection& x : rep.rejected) ++by_reason[ReasonClass(x.reason)];
    Table& reasons =
        rej.AddTable("reasons", "", {{"reason", "reason"}, {"count", "configurations"}});
    for (const auto& [k, v] : by_reason)
      reasons.rows.push_back({Text(k), Count(static_cast<double>(v))});
    // The five text shows: the three nearest misses, then other reasons, so one of each kind is
    // seen; then the rest, nearest first (JSON and HTML: at most 50 in all).
    std::vector<const Rejection*> oom_order, other;
    for (const Rejection& x : rep.rejected) (x.over_bytes > 0 ? oom_order : other).push_back(&x);
    std::stable_sort(
        oom_order.begin(), oom_order.end(),
        [](const Rejection* a, const Rejection* b) { return a->over_bytes < b->over_bytes; });
    constexpr size_t kShown = 5, kNearest = 3;
    std::vector<const Rejection*> order(oom_order.begin(),
                                        oom_order.begin() + std::min(kNearest, oom_order.size()));
    size_t next_other = 0;
    while (order.size() < kShown && next_other < other.size()) order.push_back(other[next_other++]);
    for (size_t i = std::min(kNearest, oom_order.size()); i < oom_order.size(); ++i)
      order.push_back(oom_order[i]);
    for (; next_other < other.size(); ++next_other) order.push_back(other[next_other]);
    if (order.size() > 50) order.resize(50);
    Table& ex = rej.AddTable("examples", "",
                             Joined({}, LayoutColumns(),
                                    {{"config", "configuration", true},
                                     {"over_bytes", "over by"},
                                     Whole("reason", "reason")}));
    ex.text_rows = static_cast<int>(kShown);
    for (const Rejection* x : order) {
      const ParallelConfig& c = x->config;
      ex.rows.push_back(Joined(
          {}, LayoutCells(c),
          {Text(Degrees(c)), x->over_bytes > 0 ? GiB(x->over_bytes) : Value::Na(Unit::kBytes),
           Text(x->reason)}));
    }
  }
  if (!rep.suggestions.empty()) {
    Section& sug = doc.AddSection("suggestions", "what would fit");
    for (size_t i = 0; i < rep.suggestions.size(); ++i)
      sug.AddText("suggestion_" + std::to_string(i), rep.suggestions[i]);
  }
  Section& as = doc.AddSection("assumptions", "assumptions");
  for (size_t i = 0; i < rep.assumptions.size(); ++i)
    as.AddText("assumption_" + std::to_string(i), "- " + rep.assumptions[i]);
  if (!rep.feasible.empty()) {
    const ParallelConfig& c = rep.feasible.front().config;
    Section& sn = doc.AddSection("snippets", "ready to run: " + Degrees(c));
    for (const ConfigSnippet& x : Snippets(r, c)) {
      if (!x.text.empty()) {
        sn.AddText(x.key + "_title", x.title + ":");
        sn.AddCode(x.key, Snippet(x.text));
      } else {
        sn.AddText(x.key + "_not_expressed", x.title + ": not expressed — " + x.not_expressed);
      }
    }
  }
  return doc;
}

}  // namespace gpuscope::plan
