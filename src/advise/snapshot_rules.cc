#include "advise/snapshot_rules.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "render/build.h"
#include "render/format.h"

namespace gpuscope::advise {

namespace {

using namespace render::build;  // the document-builder vocabulary
using analyze::MemoryCategory;
using analyze::SnapshotDevice;

int64_t CategoryAtPeak(const SnapshotDevice& d, MemoryCategory c) {
  return d.categories_at_peak[static_cast<size_t>(c)].bytes;
}

render::Finding Start(const SnapshotContext& c, const SnapshotRule& rule, std::string title) {
  render::Finding f;
  f.key = rule.id + c.key_suffix;
  f.title = std::move(title);
  f.severity = rule.severity;
  f.saving = Value::Na(Unit::kNanos);
  f.saving_share = Value::Na(Unit::kShare);
  f.saving_assumption = "a snapshot has no step time: the saving is memory, not time";
  f.confidence = rule.confidence;
  f.fix = rule.fix;
  f.evidence.push_back(F("device", "device", Count(c.device.device)));
  return f;
}

// Reserved but not allocated at the peak (the allocator's cache split into pieces it cannot use),
// or a failed allocation smaller than the free space the segments held.
void Fragmentation(const SnapshotContext& c, const SnapshotRule& rule,
                   std::vector<render::Finding>* out) {
  const SnapshotDevice& d = c.device;
  const int64_t reserved_at_peak = d.peak_point >= 0
                                       ? d.reserved_bytes[static_cast<size_t>(d.peak_point)]
                                       : d.initial_reserved_bytes;
  const int64_t gap = reserved_at_peak - d.peak_allocated_bytes;
  const bool gap_fires =
      reserved_at_peak > 0 && gap >= kFragmentedMinBytes &&
      static_cast<double>(gap) >= kFragmentedShare * static_cast<double>(reserved_at_peak);
  const analyze::OomEvent* oom = nullptr;
  for (const auto& o : d.ooms)
    if (o.requested_bytes <= d.free_in_segments_bytes &&
        o.requested_bytes > d.largest_free_block_bytes)
      oom = &o;
  if (!gap_fires && oom == nullptr) return;
  render::Finding f =
      Start(c, rule,
            oom ? "An allocation failed although the segments held enough free memory "
                  "in pieces"
                : "The allocator reserves much more than is allocated at the peak");
  f.evidence.push_back(
      F("reserved_at_peak_bytes", "reserved at the peak", Bytes(reserved_at_peak)));
  f.evidence.push_back(F("peak_allocated_bytes", "peak allocated", Bytes(d.peak_allocated_bytes)));
  f.evidence.push_back(F("unused_reserved_share", "reserved but unallocated",
                         ShareOf(static_cast<double>(std::max<int64_t>(0, gap)),
                                 static_cast<double>(reserved_at_peak))));
  f.evidence.push_back(F("largest_free_block_bytes", "largest free block at the snapshot",
                         Bytes(d.largest_free_block_bytes)));
  if (oom)
    f.evidence.push_back(F("oom_requested_bytes", "failed request", Bytes(oom->requested_bytes)));
  if (c.analysis.expandable_segments_setting == 1)
    f.fix =
        "expandable_segments is already on: free large tensors earlier, or call "
        "torch.cuda.empty_cache() between phases of different shapes.";
  out->push_back(std::move(f));
}

// An allocation failed while the driver reported more free memory than it asked for: the device
// was not full, so a limit of the process stopped it (torch.cuda.set_per_process_memory_fraction
// makes the caching allocator refuse before cudaMalloc; "16.78 GiB allowed" with 131 GB free).
void ProcessCap(const SnapshotContext& c, const SnapshotRule& rule,
                std::vector<render::Finding>* out) {
  const SnapshotDevice& d = c.device;
  const analyze::OomEvent* oom = nullptr;
  for (const auto& o : d.ooms)
    if (o.device_free_bytes >= 0 && o.device_free_bytes > o.requested_bytes) oom = &o;
  if (oom == nullptr) return;
  render::Finding f = Start(c, rule,
                            "An allocation failed while the device had more memory free than it "
                            "asked for: a limit of the process, not the device, was hit");
  f.evidence.push_back(F("oom_requested_bytes", "failed request", Bytes(oom->requested_bytes)));
  f.evidence.push_back(
      F("device_free_bytes", "free on the device then", Bytes(oom->device_free_bytes)));
  f.evidence.push_back(F("peak_reserved_bytes", "peak reserved", Bytes(d.peak_reserved_bytes)));
  out->push_back(std::move(f));
}

// A KV cache live at the peak: transformers builds one in every forward while use_cache is on,
// which training never reads.
void KvCache(const SnapshotContext& c, const SnapshotRule& rule,
             std::vector<render::Finding>* out) {
  const SnapshotDevice& d = c.device;
  if (d.kv_cache_at_peak_bytes <= 0 || d.peak_allocated_bytes <= 0 ||
      static_cast<double>(d.kv_cache_at_peak_bytes) <
          kKvCacheShare * static_cast<double>(d.peak_allocated_bytes))
    return;
  render::Finding f = Start(c, rule, "A KV cache is built during training and held at the peak");
  f.evidence.push_back(
      F("kv_cache_bytes", "KV cache at the peak", Bytes(d.kv_cache_at_peak_bytes)));
  f.evidence.push_back(F("kv_cache_share", "of the peak",
                         ShareOf(static_cast<double>(d.kv_cache_at_peak_bytes),
                                 static_cast<double>(d.peak_allocated_bytes))));
  f.evidence.push_back(F("kv_cache_allocations", "allocations", Count(d.kv_cache_at_peak_count)));
  f.evidence.push_back(F("kv_cache_frame", "allocated in", Value::Text(d.kv_cache_frame)));
  out->push_back(std::move(f));
}

// A memory category that holds at least `share` of the peak allocated: the finding, with the
// category's bytes at the peak and its share as evidence (keys `<key>_bytes`, `<key>_share`);
// nullopt below the share.
std::optional<render::Finding> CategoryShare(const SnapshotContext& c, const SnapshotRule& rule,
                                             MemoryCategory category, double share,
                                             const std::string& key, std::string title) {
  const SnapshotDevice& d = c.device;
  const int64_t bytes = CategoryAtPeak(d, category);
  const double peak = static_cast<double>(d.peak_allocated_bytes);
  if (d.peak_allocated_bytes <= 0 || static_cast<double>(bytes) < share * peak) return std::nullopt;
  std::string label = key + " at the peak";
  std::replace(label.begin(), label.end(), '_', ' ');
  render::Finding f = Start(c, rule, std::move(title));
  f.evidence.push_back(F(key + "_bytes", label, Bytes(bytes)));
  f.evidence.push_back(F(key + "_share", "of the peak", ShareOf(static_cast<double>(bytes), peak)));
  return f;
}

void Activations(const SnapshotContext& c, const SnapshotRule& rule,
                 std::vector<render::Finding>* out) {
  std::optional<render::Finding> f =
      CategoryShare(c, rule, MemoryCategory::kActivations, kActivationsDominate, "activations",
                    "Activations fill most of the memory at the peak");
  if (!f) return;
  f->evidence.push_back(
      F("peak_allocated_bytes", "peak allocated", Bytes(c.device.peak_allocated_bytes)));
  out->push_back(std::move(*f));
}

void Optimizer(const SnapshotContext& c, const SnapshotRule& rule,
               std::vector<render::Finding>* out) {
  std::optional<render::Finding> f = CategoryShare(
      c, rule, MemoryCategory::kOptimizerState, kOptimizerDominates, "optimizer_state",
      "Optimizer state is a large share of the memory at the peak");
  if (f) out->push_back(std::move(*f));
}

void Headroom(const SnapshotContext& c, const SnapshotRule& rule,
              std::vector<render::Finding>* out) {
  const SnapshotDevice& d = c.device;
  const int64_t total = c.analysis.device_total_bytes;
  if (total <= 0 || d.peak_reserved_bytes <= 0 ||
      static_cast<double>(d.peak_reserved_bytes) >= kHeadroomShare * static_cast<double>(total))
    return;
  const int64_t act = CategoryAtPeak(d, MemoryCategory::kActivations);
  render::Finding f = Start(c, rule, "Most of the GPU's memory is unused");
  f.evidence.push_back(F("peak_reserved_bytes", "peak reserved", Bytes(d.peak_reserved_bytes)));
  f.evidence.push_back(F("device_total_bytes", "device memory", Bytes(total)));
  // Activations scale with the batch; the rest does not.
  f.evidence.push_back(
      F("batch_growth_ratio", "batch could grow up to",
        act > 0 ? Value::Number(static_cast<double>(total - (d.peak_allocated_bytes - act)) /
                                    static_cast<double>(act),
                                1, Unit::kRatio)
                : Value::Na(Unit::kRatio)));
  out->push_back(std::move(f));
}

}  // namespace

const std::vector<SnapshotRule>& SnapshotRules() {
  static const std::vector<SnapshotRule> kRules = {
      {"snapshot_fragmentation",
       "reserved − allocated at the peak ≥ 20 % of reserved and ≥ 512 MiB, or an oom event whose "
       "request is at most the free bytes in segments but above the largest free block",
       0.6, render::Severity::kWarning,
       "Let the allocator grow segments instead of splitting them: "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (set before the first CUDA allocation).",
       Fragmentation},
      {"snapshot_process_cap",
       "an oom event whose request is smaller than the memory the driver reported free on the "
       "device at that moment",
       0.8, render::Severity::kCritical,
       "The process's own limit was hit: raise or remove "
       "torch.cuda.set_per_process_memory_fraction(...) (PyTorch's message says \"… GiB "
       "allowed\"), "
       "or check what else caps this process's memory (another framework's memory fraction, a MIG "
       "slice); the device itself had room.",
       ProcessCap},
      {"snapshot_kv_cache",
       "allocations live at the peak whose stack passes through transformers' cache_utils.py "
       "(DynamicCache.update) ≥ 1 % of the peak allocated",
       0.8, render::Severity::kWarning,
       "Training does not read a KV cache: model.config.use_cache = False (or pass "
       "use_cache=False to the model's forward); it saves the bytes shown at the peak.",
       KvCache},
      {"snapshot_activations_dominate", "activations ≥ 50 % of the peak allocated", 0.5,
       render::Severity::kWarning,
       "Trade compute for memory with activation checkpointing "
       "(torch.utils.checkpoint.checkpoint on the transformer blocks), or use a smaller "
       "micro-batch with gradient accumulation to keep the global batch.",
       Activations},
      {"snapshot_optimizer_state_dominates", "optimizer state ≥ 35 % of the peak allocated", 0.5,
       render::Severity::kWarning,
       "Shard the optimizer state across data-parallel ranks (ZeRO-1/2: DeepSpeed, or FSDP / "
       "torch.distributed.optim.ZeroRedundancyOptimizer), or keep it in 8 bits "
       "(bitsandbytes.optim.Adam8bit).",
       Optimizer},
      {"snapshot_headroom",
       "peak reserved < 50 % of the device's memory (a snapshot does not record the device's "
       "memory: this rule needs it and does not fire without it)",
       0.4, render::Severity::kInfo,
       "Raise the batch size (activations grow with it; the batch could grow by the ratio shown), "
       "or keep the global batch with fewer gradient-accumulation steps.",
       Headroom},
  };
  return kRules;
}

std::string SnapshotRulesMarkdown() {
  std::string md = "| rule | fires when | confidence | fix |\n|---|---|---|---|\n";
  for (const SnapshotRule& r : SnapshotRules())
    md += "| `" + r.id + "` | " + r.threshold + " | " +
          render::FormatValue(Value::Share(r.confidence, 0)) + " | " + r.fix + " |\n";
  return md;
}

std::vector<render::Finding> AdviseSnapshot(const analyze::SnapshotAnalysis& analysis) {
  std::vector<render::Finding> out;
  for (const SnapshotRule& rule : SnapshotRules())
    for (const SnapshotDevice& d : analysis.devices) {
      SnapshotContext c{analysis, d,
                        analysis.devices.size() > 1 ? "_device_" + std::to_string(d.device) : ""};
      rule.run(c, rule, &out);
    }
  return out;
}

}  // namespace gpuscope::advise
