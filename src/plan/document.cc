// The plan as a render::Document: the request, the search, the best configuration's working (one
// row per memory and time term, with its formula), what was rejected and why, the assumptions, and
// ready snippets. docs/planner.md defines every term.
#include <algorithm>
#include <cmath>
#include <map>

#include "plan/render.h"

namespace gpuscope::plan {

namespace {

using render::Detail;
using render::F;
using render::Row;
using render::Section;
using render::Table;
using render::Unit;
using render::Value;

Value GiB(double bytes) { return Value::BinaryBytes(bytes); }
Value Seconds(double s) { return std::isfinite(s) ? Value::Nanos(std::llround(s * 1e9)) : Value::Na(Unit::kNanos); }
Value Count(double n) { return std::isfinite(n) ? Value::Number(std::round(n), 0, Unit::kCount) : Value::Na(Unit::kCount); }
Value Int(int64_t n) { return Value::Count(n); }
Value Text(std::string s) { return Value::Text(std::move(s)); }

std::string ReasonClass(const std::string& reason) {
  if (reason.rfind("OOM", 0) == 0) return "out of memory";
  if (reason.find("not divisible") != std::string::npos) return "batch not divisible";
  if (reason.find("interleaving") != std::string::npos) return "interleaving needs m % p == 0";
  return reason;
}

std::vector<render::Field> ConfigFields(const ParallelConfig& c) {
  return {F("tp", "tp", Int(c.tp)), F("pp", "pp", Int(c.pp)), F("vpp", "vpp", Int(c.vpp)), F("dp", "dp", Int(c.dp)),
          F("mbs", "mbs", Int(c.mbs)), F("grad_accum", "ga", Int(c.grad_accum)),
          F("sharding", "", Text(std::string(ShardingName(c.sharding)))), F("zero_stage", "ZeRO stage", Int(ZeroStage(c.sharding))),
          F("sp", "sequence parallel", Value::Bool(c.sp)), F("recompute", "recompute", Text(std::string(RecomputeName(c.recompute)))),
          F("precision", "", Text(std::string(hw::PrecisionName(c.precision)))),
          F("optimizer", "", Text(std::string(OptimizerName(c.optimizer)))),
          F("offload", "offload", Text(std::string(OffloadName(c.offload))))};
}

// The working of one configuration: memory terms and time terms, each with its formula.
void AddWorking(const Evaluation& ev, const std::string& key, const std::string& title, render::Document& doc) {
  Section& s = doc.AddSection(key, title);
  Row& cfg = s.AddRow("configuration", "configuration");
  cfg.fields = {F("degrees", "", Text(Degrees(ev.config)))};
  for (render::Field f : ConfigFields(ev.config)) {
    f.detail = true;
    cfg.fields.push_back(std::move(f));
  }
  const MemoryBreakdown& mem = ev.memory;
  Table& terms = s.AddTable("memory_terms", "memory per GPU (most-loaded: pipeline stage 0)",
                            {{"term", "term"}, {"kind", "kind"}, {"bytes", "bytes"}, {"formula", "formula"}, {"counted", "in the peak"}});
  terms.text_rows = 100;
  for (const MemoryTerm& t : mem.terms) {
    if (t.bytes == 0 && t.kind == TermKind::kStatic && t.name.rfind("parameters", 0) == 0) continue;
    terms.rows.push_back({Text(t.name), Text(std::string(TermKindName(t.kind))), GiB(t.bytes), Text(t.formula), Value::Bool(t.counted)});
  }
  s.AddRow("params_on_rank", "P_rank").fields = {F("params_on_rank", "", Count(mem.params_on_rank))};
  s.AddRow("static", "static").fields = {F("static_bytes", "weights + grads + master + optimizer", GiB(mem.static_bytes))};
  s.AddRow("activations", "activations").fields = {F("activation_bytes", "", GiB(mem.activation_bytes))};
  Row& peak = s.AddRow("peak", "peak");
  peak.fields = {F("peak_bytes", "predicted peak allocated (Σ counted terms)", GiB(mem.peak_bytes)),
                 F("budget_bytes", "budget", GiB(mem.budget_bytes)), F("capacity_bytes", "capacity", GiB(mem.capacity_bytes)),
                 F("fits", "fits", Value::Bool(mem.fits))};
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
  Table& time = s.AddTable("time_terms", "step time", {{"term", "term"}, {"time_ns", "time"}, {"formula", "formula"}});
  time.text_rows = 100;
  for (const TimeTerm& t : st.terms) time.rows.push_back({Text(t.name), Seconds(t.seconds), Text(t.formula)});
  s.AddRow("step", "predicted").fields = {
      F("step_time_ns", "step time", Seconds(st.step_s)),
      F("tokens_per_s", "tokens/s", Value::Number(st.tokens_per_s, 0, Unit::kPerSecond)),
      F("tokens_per_gpu_per_s", "per GPU", Value::Number(st.tokens_per_s / static_cast<double>(std::max<int64_t>(1, ev.config.gpus)), 0, Unit::kPerSecond)),
      F("mfu_share", "MFU", Value::Share(st.mfu)), F("hfu_share", "HFU", Value::Share(st.hfu))};
}

void AddRequest(const PlanReport& rep, render::Document& doc) {
  const PlanRequest& r = rep.request;
  Section& s = doc.AddSection("request", "");
  Row& model = s.AddRow("model", "model");
  model.fields = {F("name", "", Text(r.model.name)), F("shape", "", Text(ModelLine(r.model))),
                  Detail("model_type", "type", Text(r.model.model_type)), Detail("layers", "L", Int(r.model.layers)),
                  Detail("hidden", "h", Int(r.model.hidden)), Detail("heads", "a", Int(r.model.heads)),
                  Detail("kv_heads", "g", Int(r.model.kv_heads)), Detail("head_dim", "d_h", Int(r.model.head_dim)),
                  Detail("ffn", "f", Int(r.model.ffn)), Detail("vocab", "V", Int(r.model.vocab)),
                  Detail("tied_embeddings", "tied", Value::Bool(r.model.tied_embeddings)),
                  Detail("gated_mlp", "gated MLP", Value::Bool(r.model.gated_mlp)),
                  Detail("experts", "experts", Int(r.model.experts)), Detail("experts_top_k", "top-k", Int(r.model.experts_top_k))};
  Row& params = s.AddRow("parameters", "parameters");
  params.fields = {F("total", "", Count(rep.params.total))};
  if (r.model.experts > 0) params.fields.push_back(F("active", "active per token", Count(rep.params.active)));
  else params.fields.push_back(Detail("active", "active per token", Count(rep.params.active)));
  s.AddRow("gpu", "gpu").fields = {
      F("name", "", Text(r.gpu.name)), F("count", "×", Int(r.gpus)), F("memory_bytes", "", GiB(r.gpu.memory_gib * 1073741824.0)),
      F("hbm_bytes_per_s", "HBM", Value::Number(r.gpu.hbm_gbps * 1e9, 0, Unit::kBytesPerSecond)),
      F("tflops_bf16", "dense TFLOP/s bf16", Value::Number(r.gpu.tflops_bf16, -1)),
      F("tflops_fp16", "fp16", Value::Number(r.gpu.tflops_fp16, -1)), F("tflops_fp8", "fp8", Value::Number(r.gpu.tflops_fp8, -1)),
      F("tflops_fp32", "fp32", Value::Number(r.gpu.tflops_fp32, -1)),
      F("intra_node_bytes_per_s", "intra-node", Value::Number(r.gpu.intra_node_gbps * 1e9, 0, Unit::kBytesPerSecond)),
      F("source", "source", Text(r.gpu.source)), Detail("description", "", Text(r.gpu.description))};
  s.AddRow("batch", "batch").fields = {F("global_batch", "global batch", Int(r.global_batch)),
                                       F("seq_len", "× tokens", Int(r.seq_len))};
}

void AddCalibration(const PlanRequest& r, const Calibration& cal, render::Document& doc) {
  Section& s = doc.AddSection("calibration", "calibration from " + cal.measured.source);
  s.AddRow("measured", "trace").fields = {F("trace", "", Text(cal.measured.source)), F("ranks", "ranks", Count(static_cast<double>(cal.measured.ranks))),
                                          F("steps", "steady steps", Count(static_cast<double>(cal.measured.steps)))};
  s.AddRow("traced_configuration", "configuration").fields = {F("degrees", "", Text(Degrees(cal.before.config)))};
  Table& t = s.AddTable("comparison", "", {{"what", ""}, {"measured", "measured"}, {"predicted", "predicted"}, {"calibrated", "calibrated"}});
  t.rows.push_back({Text("step time"), Seconds(cal.measured.step_s), Seconds(cal.before.time.step_s), Seconds(cal.after.time.step_s)});
  if (cal.measured.peak_allocated_bytes >= 0) {
    const double ctx = r.assumptions.context_gib * 1073741824.0;
    t.rows.push_back({Text("peak allocated"), GiB(cal.measured.peak_allocated_bytes), GiB(cal.before.memory.peak_bytes - ctx),
                      GiB(cal.after.memory.peak_bytes - ctx)});
  }
  Row& fit = s.AddRow("fit", "fitted");
  fit.fields = {F("efficiency", "η", Value::Number(cal.efficiency, 3)), F("prior_efficiency", "was", Value::Number(cal.prior_efficiency, 3)),
                F("memory_overhead_bytes", "memory overhead", cal.memory_fitted ? GiB(cal.overhead_bytes) : Value::Na(Unit::kBytes)),
                Detail("memory_fitted", "memory fitted", Value::Bool(cal.memory_fitted))};
  for (size_t i = 0; i < cal.notes.size(); ++i) s.AddText("note_" + std::to_string(i), "note: " + cal.notes[i]);
}

}  // namespace

render::Document BuildDocument(const PlanReport& rep, const Calibration* cal) {
  const PlanRequest& r = rep.request;
  render::Document doc;
  doc.schema = "gpuscope.plan";
  doc.title = "gpuscope plan: " + r.model.name + " on " + std::to_string(r.gpus) + " × " + r.gpu.name + ", global batch " +
              std::to_string(r.global_batch) + " × " + std::to_string(r.seq_len) + " tokens";
  AddRequest(rep, doc);
  if (cal) AddCalibration(r, *cal, doc);
  Section& search = doc.AddSection("search", "");
  size_t oom = 0;
  for (const Rejection& x : rep.rejected) oom += x.over_bytes > 0;
  Row& counts = search.AddRow("searched", "searched");
  counts.fields = {F("configurations", "configurations", Count(static_cast<double>(rep.evaluated + (rep.rejected.size() - oom)))),
                   F("feasible", "feasible", Count(static_cast<double>(rep.feasible.size()))),
                   F("rejected", "rejected", Count(static_cast<double>(rep.rejected.size()))),
                   Detail("evaluated", "evaluated", Count(static_cast<double>(rep.evaluated))),
                   Detail("exact", "every degree given", Value::Bool(rep.exact))};
  counts.detail = rep.exact;
  Table& best = search.AddTable("configurations", "best configurations",
                                {{"rank", "rank"}, {"tp", "tp"}, {"pp", "pp"}, {"vpp", "vpp"}, {"dp", "dp"}, {"mbs", "mbs"},
                                 {"grad_accum", "ga"}, {"sharding", "shard"}, {"sp", "sp"}, {"recompute", "recompute"},
                                 {"precision", "prec"}, {"peak_bytes", "peak"}, {"step_time_ns", "step"},
                                 {"tokens_per_s", "tokens/s"}, {"tokens_per_gpu_per_s", "per GPU"}, {"mfu_share", "MFU"}});
  best.text_rows = 100;
  const size_t n = std::min<size_t>(rep.feasible.size(), static_cast<size_t>(std::max(1, r.top)));
  for (size_t i = 0; i < n; ++i) {
    const Evaluation& e = rep.feasible[i];
    const ParallelConfig& c = e.config;
    best.rows.push_back({Int(static_cast<int64_t>(i + 1)), Int(c.tp), Int(c.pp), Int(c.vpp), Int(c.dp), Int(c.mbs), Int(c.grad_accum),
                         Text(std::string(ShardingName(c.sharding))), Value::Bool(c.sp), Text(std::string(RecomputeName(c.recompute))),
                         Text(std::string(hw::PrecisionName(c.precision))), GiB(e.memory.peak_bytes), Seconds(e.time.step_s),
                         Value::Number(e.time.tokens_per_s, 0, Unit::kPerSecond),
                         Value::Number(e.time.tokens_per_s / static_cast<double>(std::max<int64_t>(1, c.gpus)), 0, Unit::kPerSecond),
                         Value::Share(e.time.mfu)});
  }
  if (!rep.feasible.empty())
    AddWorking(rep.feasible.front(), "best", rep.exact ? "configuration" : "best", doc);
  else if (rep.closest)
    AddWorking(*rep.closest, "closest", "no configuration fits; the closest", doc);
  if (!rep.rejected.empty() && !rep.exact) {
    Section& rej = doc.AddSection("rejected", "rejected");
    std::map<std::string, size_t> by_reason;
    for (const Rejection& x : rep.rejected) ++by_reason[ReasonClass(x.reason)];
    Table& reasons = rej.AddTable("reasons", "", {{"reason", "reason"}, {"count", "configurations"}});
    for (const auto& [k, v] : by_reason) reasons.rows.push_back({Text(k), Count(static_cast<double>(v))});
    // The nearest misses first, then other reasons; every rejection is in JSON (at most 50).
    std::vector<const Rejection*> order;
    for (const Rejection& x : rep.rejected) order.push_back(&x);
    std::stable_sort(order.begin(), order.end(), [](const Rejection* a, const Rejection* b) {
      const bool ao = a->over_bytes > 0, bo = b->over_bytes > 0;
      if (ao != bo) return ao;
      return ao && a->over_bytes < b->over_bytes;
    });
    if (order.size() > 50) order.resize(50);
    Table& ex = rej.AddTable("examples", "", {{"config", "configuration"}, {"reason", "reason"}, {"over_bytes", "over by"}});
    ex.text_rows = 5;
    for (const Rejection* x : order)
      ex.rows.push_back({Text(Degrees(x->config)), Text(x->reason), x->over_bytes > 0 ? GiB(x->over_bytes) : Value::Na(Unit::kBytes)});
  }
  if (!rep.suggestions.empty()) {
    Section& sug = doc.AddSection("suggestions", "what would fit");
    for (size_t i = 0; i < rep.suggestions.size(); ++i) sug.AddText("suggestion_" + std::to_string(i), rep.suggestions[i]);
  }
  Section& as = doc.AddSection("assumptions", "assumptions");
  for (size_t i = 0; i < rep.assumptions.size(); ++i) as.AddText("assumption_" + std::to_string(i), "- " + rep.assumptions[i]);
  if (!rep.feasible.empty()) {
    const ParallelConfig& c = rep.feasible.front().config;
    Section& sn = doc.AddSection("snippets", "ready to run");
    sn.AddText("accelerate_title", "Accelerate (accelerate launch --config_file plan.yaml):");
    sn.AddCode("accelerate_yaml", AccelerateYaml(r, c));
    sn.AddText("deepspeed_title", "DeepSpeed (ds_config.json):");
    sn.AddCode("deepspeed_json", DeepSpeedJson(r, c));
    sn.AddText("torchrun_title", "torchrun:");
    sn.AddCode("torchrun", TorchrunCommand(r, c));
  }
  return doc;
}

}  // namespace gpuscope::plan
