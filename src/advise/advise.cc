#include "advise/advise.h"

#include <algorithm>
#include <cstdio>

namespace gpuscope::advise {

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

namespace {

std::string Ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string Pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * share);
  return buf;
}

std::string Gb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

double Share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

Severity SeverityFor(double saving_share) {
  if (saving_share >= 0.20) return Severity::kCritical;
  if (saving_share >= 0.05) return Severity::kWarning;
  return Severity::kInfo;
}

int64_t StepCat(const analyze::StepsResult& s, analyze::StepCategory c) {
  return s.mean_steady_ns[static_cast<size_t>(c)];
}

}  // namespace

Advice AdviseRank(const RankInputs& in) {
  Advice advice;
  const analyze::StepsResult& steps = *in.steps;
  const int64_t step_ns = steps.mean_steady_step_ns;
  // Whole-trace sums (kernels, copies) divided over the steps the trace holds.
  const int64_t step_count = std::max<int64_t>(1, static_cast<int64_t>(steps.steps.size()));
  auto add = [&](Finding f) {
    f.estimated_saving_pct = 100.0 * Share(f.estimated_saving_ns_per_step, step_ns);
    f.severity = SeverityFor(f.estimated_saving_pct / 100.0);
    advice.findings.push_back(std::move(f));
  };
  if (in.summary->counts.kernels + in.summary->counts.memcpys == 0 || step_ns <= 0) {
    advice.verdict = "no GPU work";
    return advice;
  }

  // 1. Input pipeline stall: time in the step where only the DataLoader runs.
  const int64_t dataloader = StepCat(steps, analyze::StepCategory::kDataLoader);
  if (Share(dataloader, step_ns) > kInputStallShare) {
    Finding f;
    f.id = "input_pipeline_stall";
    f.title = "The GPU waits for the input pipeline";
    f.estimated_saving_ns_per_step = dataloader;
    f.saving_assumption =
        "Loading the next batch in worker processes hides the DataLoader time that nothing else "
        "overlaps today; the main process's own work stays.";
    f.evidence = {{"DataLoader share of the step", Pct(Share(dataloader, step_ns))},
                  {"DataLoader time per step", Ms(dataloader)},
                  {"mean step", Ms(step_ns)}};
    f.fix =
        "Load batches in background workers: DataLoader(..., num_workers=N (start with the CPU "
        "cores "
        "per GPU), pin_memory=True, persistent_workers=True, prefetch_factor=2), and copy with "
        ".to(device, non_blocking=True).";
    f.confidence = 0.8;
    add(std::move(f));
  }

  // 2. Exposed communication: communication with no kernel beside it (step category).
  const int64_t comm = StepCat(steps, analyze::StepCategory::kCommunication);
  if (Share(comm, step_ns) > kExposedCommShare) {
    Finding f;
    f.id = "exposed_communication";
    f.title = "Communication is not hidden behind compute";
    f.estimated_saving_ns_per_step = comm;
    f.saving_assumption =
        "Overlapping the collectives with backward compute hides at most the communication time "
        "that today runs with no kernel beside it.";
    f.evidence = {{"exposed communication per step", Ms(comm)},
                  {"share of the step", Pct(Share(comm, step_ns))}};
    if (in.gpu_time->comm_compute_overlap_ratio >= 0) {
      f.evidence.emplace_back("communication under compute (HTA overlap)",
                              Pct(in.gpu_time->comm_compute_overlap_ratio));
    }
    f.fix =
        "Let DDP overlap gradient all-reduce with backward: DistributedDataParallel(model, "
        "bucket_cap_mb=25 (tune 10-100), gradient_as_bucket_view=True, static_graph=True when the "
        "graph is fixed); avoid synchronising before the optimizer; with FSDP, enable forward/"
        "backward prefetch.";
    f.confidence = 0.6;
    add(std::move(f));
  }

  // 3. fp32 math on a GPU with tensor cores.
  const analyze::KernelsResult& k = *in.kernels;
  const int64_t fp32 =
      k.math_ns_by_precision[static_cast<size_t>(analyze::MathPrecision::kFp32Simt)];
  const int32_t cc = in.summary->compute_major;
  if (cc >= 7 && Share(fp32, k.math_ns) > kFp32MathShare) {
    Finding f;
    f.id = "fp32_math";
    f.title = "Matrix math runs in fp32 on CUDA cores, not on tensor cores";
    const int64_t per_step = fp32 / step_count;
    f.estimated_saving_ns_per_step = static_cast<int64_t>(static_cast<double>(per_step) *
                                                          (1.0 - 1.0 / kAssumedTensorCoreSpeedup));
    f.saving_assumption =
        "Tensor-core kernels run the same GEMMs and convolutions at least 2x faster (a "
        "conservative "
        "share of the 8-16x peak ratio); other kernels unchanged.";
    f.evidence = {{"fp32 CUDA-core share of GEMM/conv/attention time", Pct(Share(fp32, k.math_ns))},
                  {"fp32 math time per step", Ms(per_step)},
                  {"tensor-core share of math", Pct(Share(k.tensor_core_ns, k.math_ns))},
                  {"compute capability",
                   std::to_string(cc) + "." + std::to_string(in.summary->compute_minor)}};
    f.fix = cc >= 8
                ? "Train in bf16: with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16): "
                  "around forward and loss; or at least torch.backends.cuda.matmul.allow_tf32 = "
                  "True and torch.backends.cudnn.allow_tf32 = True."
                : "Use mixed precision: torch.autocast(device_type=\"cuda\", dtype=torch.float16) "
                  "with torch.cuda.amp.GradScaler (this GPU has fp16 tensor cores, no bf16).";
    f.confidence = 0.7;
    add(std::move(f));
  }

  // 4. Synchronisation: the GPU idles while the host resumes after blocking syncs.
  const analyze::SyncStats& sync = *in.sync;
  int64_t sync_idle_steps = 0, sync_steps = 0;
  for (const analyze::StepSyncStats& s : sync.steps) {
    sync_idle_steps += s.gpu_idle_after_sync_ns;
    ++sync_steps;
  }
  const int64_t sync_idle =
      sync_steps > 0 ? sync_idle_steps / sync_steps : sync.gpu_idle_after_sync_ns / step_count;
  if (!sync.points.empty() && Share(sync_idle, step_ns) > kSyncIdleShare) {
    Finding f;
    f.id = "sync_points";
    f.title = "Host-device synchronisation stalls the GPU";
    f.estimated_saving_ns_per_step = sync_idle;
    f.saving_assumption =
        "Without the blocking reads the GPU keeps its queue; it saves the GPU idle time that "
        "follows "
        "each sync point, not the host's blocked time.";
    f.evidence = {{"sync points per step",
                   std::to_string(static_cast<double>(sync.points.size()) /
                                  static_cast<double>(std::max<int64_t>(1, sync_steps)))
                       .substr(0, 4)},
                  {"GPU idle after them per step", Ms(sync_idle)},
                  {"host blocked in total", Ms(sync.blocked_ns)}};
    f.fix =
        "Move .item(), .cpu(), print(loss) and tensor-dependent Python control flow out of the "
        "step "
        "(accumulate on the GPU and read every N steps); use non_blocking=True copies.";
    f.confidence = 0.6;
    add(std::move(f));
  }

  // 5. Pageable copies that become synchronous.
  const analyze::CopyStats& copies = *in.copies;
  // Copy statistics use HTA's selection, which leaves the last step out.
  const int64_t copy_steps = copies.step_filtered && step_count > 1 ? step_count - 1 : step_count;
  int64_t pageable_ns = 0;
  for (const analyze::CopyGroup& g : copies.groups) {
    if (g.kind == GpuKind::kMemcpy && g.pageable) pageable_ns += g.time_ns;
  }
  if (copies.effectively_sync_memcpys + copies.sync_memcpys > 0 && pageable_ns > 0) {
    Finding f;
    f.id = "pageable_copies";
    f.title = "Host-device copies from pageable memory block the host";
    const int64_t per_step = pageable_ns / copy_steps;
    f.estimated_saving_ns_per_step = static_cast<int64_t>(static_cast<double>(per_step) *
                                                          (1.0 - 1.0 / kPinnedOverPageableSpeedup));
    f.saving_assumption =
        "Pinned copies run about 3x faster than pageable ones and no longer block the host.";
    f.evidence = {
        {"pageable memcpys", std::to_string(copies.pageable_memcpys)},
        {"asynchronous calls made synchronous", std::to_string(copies.effectively_sync_memcpys)},
        {"pageable copy time per step", Ms(per_step)}};
    f.fix =
        "Pin host memory: DataLoader(..., pin_memory=True) or tensor.pin_memory(), then "
        ".to(device, non_blocking=True).";
    f.confidence = 0.6;
    add(std::move(f));
  }

  // 5b. Many tiny copies: each pays launch and DMA setup latency for a few bytes.
  const double tiny_per_step =
      static_cast<double>(copies.tiny_memcpys) / static_cast<double>(copy_steps);
  if (tiny_per_step >= kTinyCopiesPerStep) {
    Finding f;
    f.id = "tiny_copies";
    f.title = "Many tiny host-device copies";
    f.estimated_saving_ns_per_step = copies.tiny_memcpy_time_ns / copy_steps;
    f.saving_assumption =
        "Batched into one copy per step, the tiny copies' own GPU time (mostly fixed latency) "
        "goes; an upper bound.";
    char per_step[32];
    std::snprintf(per_step, sizeof per_step, "%.1f", tiny_per_step);
    f.evidence = {{"copies under 64 KiB per step", per_step},
                  {"their GPU time per step", Ms(copies.tiny_memcpy_time_ns / copy_steps)}};
    f.fix =
        "Stack small tensors into one buffer and copy once per step; keep per-step scalars "
        "(losses, "
        "metrics) on the GPU and read them every N steps.";
    f.confidence = 0.5;
    add(std::move(f));
  }

  // 5c. Idle gaps: the GPU idles ≥ 1 ms at a time while the host does something that is neither
  // the DataLoader (input_pipeline_stall) nor waiting on a sync (sync_points). The analysis
  // already leaves those parts out, so this saving is disjoint from theirs.
  int64_t idle_gap_claim = 0;  // per step; launch_bound below does not claim it again
  if (in.idle_gaps && in.idle_gaps->long_gaps > 0) {
    const analyze::IdleGapStats& g = *in.idle_gaps;
    const int64_t per_step = g.unexplained_ns_per_steady_step;
    const bool starved = g.longest_unexplained_ns > analyze::kNsightGpuGapNs;
    if (Share(per_step, step_ns) > kIdleGapShare || starved) {
      Finding f;
      f.id = "idle_gaps";
      f.title = "The GPU sits idle while the host does other work";
      f.estimated_saving_ns_per_step = per_step;
      idle_gap_claim = per_step;
      f.saving_assumption =
          "Moving that host work off the step's critical path (or overlapping it with GPU work) "
          "removes the GPU idle of gaps of 1 ms or more that no DataLoader wait or sync point "
          "already explains; shorter gaps stay.";
      const uint64_t host_gaps = g.long_gaps - g.long_gaps_after_sync;
      f.evidence = {{"unexplained idle per steady step", Ms(per_step)},
                    {"share of the step", Pct(Share(per_step, step_ns))},
                    {"gaps of 1 ms or more, not after a sync", std::to_string(host_gaps)},
                    {"their idle not covered by the DataLoader", Ms(g.unexplained_ns)}};
      // The longest unexplained gaps, with their step and what the host ran.
      std::string ops_text;
      int shown = 0;
      for (const analyze::IdleGap& gap : g.longest) {
        if (gap.claim != analyze::IdleClaim::kHost || shown == 3) continue;
        std::string op = "no recorded op";
        if (in.trace && !gap.host_ops.empty())
          op = std::string(in.trace->Str(gap.host_ops[0].first));
        f.evidence.emplace_back(
            "gap " + std::to_string(++shown),
            Ms(gap.length()) +
                    (gap.step >= 0 ? " in step " + std::to_string(gap.step) : " outside the steps") +
                    ", host in " + op);
      }
      for (const analyze::IdleHostOp& h : g.host_ops) {
        if (!in.trace || ops_text.size() > 160) break;
        ops_text += (ops_text.empty() ? "" : ", ") + std::string(in.trace->Str(h.name)) + " (" +
                    Ms(h.overlap_ns) + ")";
      }
      if (starved) {
        f.evidence.emplace_back("longest gap (Nsight gpu_gaps > 500 ms)",
                                Ms(g.longest_unexplained_ns));
      }
      std::string fix = ops_text.empty()
                            ? "In these gaps the host runs Python outside any recorded op "
                              "(profile with with_stack=True to see it). "
                            : "In these gaps the host was in " + ops_text + ". ";
      auto any_op = [&](std::initializer_list<const char*> words) {
        for (const analyze::IdleHostOp& h : g.host_ops) {
          if (!in.trace) break;
          const std::string_view n = in.trace->Str(h.name);
          for (const char* w : words) {
            if (n.find(w) != std::string_view::npos) return true;
          }
        }
        return false;
      };
      if (any_op({"Optimizer", "optimizer", "zero_grad"})) {
        fix +=
            "Use a fused or foreach optimizer (torch.optim.AdamW(..., fused=True)) and "
            "zero_grad(set_to_none=True). ";
      }
      if (any_op({"save", "checkpoint", "Checkpoint"})) {
        fix +=
            "Checkpoint every N steps and asynchronously "
            "(torch.distributed.checkpoint.async_save). ";
      }
      if (any_op({"aten::to", "aten::copy_", "aten::_to_copy", "aten::cpu", "aten::item"})) {
        fix +=
            "Make copies asynchronous: pinned memory and .to(device, non_blocking=True); keep "
            ".cpu()/.item() reads out of the step. ";
      }
      fix +=
          "Move logging, metrics and checkpointing off the step (every N steps, or in a "
          "background thread); when the host work is many small launches, capture the step "
          "with CUDA graphs (torch.compile(mode=\"reduce-overhead\")).";
      f.fix = fix;
      f.confidence = 0.5;
      add(std::move(f));
      if (starved) advice.findings.back().severity = Severity::kCritical;
    }
  }

  // 5d. Low occupancy / tiny grids: kernels that leave SMs empty. No overlap with the stalls above
  // (they save GPU idle time, this saves GPU busy time).
  if (in.occupancy && in.occupancy->available) {
    const analyze::OccupancyStats& o = *in.occupancy;
    const bool tiny = o.tiny_grid_share >= kTinyGridKernelShare;
    const bool low_occ =
        o.achieved_occupancy_pct >= 0 && o.achieved_occupancy_pct < kLowAchievedOccupancyPct;
    if (tiny || low_occ) {
      Finding f;
      f.id = "low_occupancy";
      f.title = tiny ? "Many kernels launch fewer thread blocks than the GPU has SMs"
                     : "Kernels keep few warps resident per SM";
      const int64_t occ_steps =
          std::max<int64_t>(1, static_cast<int64_t>(steps.complete_count > 0 ? steps.complete_count
                                                                             : steps.steps.size()));
      // Bounded by the step time during which kernels run at all.
      const int64_t per_step = std::min(o.tiny_grid_lost_sm_ns / occ_steps,
                                        StepCat(steps, analyze::StepCategory::kKernel));
      f.estimated_saving_ns_per_step = tiny ? per_step : 0;
      f.saving_assumption =
          tiny ? "Upper bound: the tiny-grid kernels' work spread over every SM at the same "
                 "per-SM speed (time × blocks per SM) and the GPU on the critical path; real "
                 "gains are smaller."
               : "No time estimate: low occupancy alone does not bound the speed-up (a "
                 "memory-bound kernel can saturate bandwidth at low occupancy).";
      char buf[64];
      f.evidence = {{"tiny-grid share of compute-kernel time", Pct(o.tiny_grid_share)},
                    {"tiny-grid kernel time per step", Ms(o.tiny_grid_ns / occ_steps)}};
      if (o.sm_efficiency >= 0) {
        std::snprintf(buf, sizeof buf, "%.3f", o.sm_efficiency);
        f.evidence.emplace_back("est. SM efficiency (tb_plugin)", buf);
      }
      if (o.achieved_occupancy_pct >= 0) {
        std::snprintf(buf, sizeof buf, "%.1f %%", o.achieved_occupancy_pct);
        f.evidence.emplace_back("est. achieved occupancy (duration-weighted)", buf);
      }
      for (size_t i = 0; i < o.tiny.size() && i < 3; ++i) {
        std::snprintf(buf, sizeof buf, "%llu × %.2f blocks/SM, ",
                      static_cast<unsigned long long>(o.tiny[i].count),
                      o.tiny[i].mean_blocks_per_sm);
        f.evidence.emplace_back("tiny grid: " + o.tiny[i].name.substr(0, 60),
                                buf + Ms(o.tiny[i].total_ns));
      }
      f.fix =
          "Give each kernel more work: a larger batch or micro-batch; fuse small element-wise "
          "kernels with torch.compile; set torch.backends.cudnn.benchmark = True so cuDNN picks "
          "kernels for your shapes; replace per-sample or per-parameter Python loops with batched "
          "ops (torch._foreach_*, vmap).";
      f.confidence = 0.3;
      add(std::move(f));
    }
  }

  // 6. Launch-bound: many kernels shorter than their launch and an idle GPU not explained by input.
  const analyze::LaunchSummary& l = in.launches->all;
  const analyze::ExclusiveBreakdown& ex = in.gpu_time->exclusive;
  // Host time the idle_gaps finding already claims is not claimed again.
  const int64_t runtime =
      std::max<int64_t>(0, StepCat(steps, analyze::StepCategory::kRuntime) +
                               StepCat(steps, analyze::StepCategory::kCpuExec) - idle_gap_claim);
  if (l.n > 0 &&
      Share(static_cast<int64_t>(l.short_kernels), static_cast<int64_t>(l.n)) > kShortKernelShare &&
      Share(ex.idle_ns, ex.span_ns) > kLaunchIdleShare && runtime > 0) {
    Finding f;
    f.id = "launch_bound";
    f.title = "The CPU cannot launch kernels fast enough";
    f.estimated_saving_ns_per_step = runtime / 2;
    f.saving_assumption =
        "CUDA graphs or torch.compile remove about half of the launch and framework time that the "
        "GPU waits on; a rough bound, confidence low.";
    f.evidence = {{"kernels shorter than their launch",
                   Pct(Share(static_cast<int64_t>(l.short_kernels), static_cast<int64_t>(l.n)))},
                  {"GPU idle", Pct(Share(ex.idle_ns, ex.span_ns))},
                  {"runtime + CPU exec per step", Ms(runtime)}};
    f.fix =
        "Capture the step with CUDA graphs (torch.cuda.graphs / "
        "torch.compile(mode=\"reduce-overhead\")), "
        "fuse small ops (torch.compile), or raise the work per kernel (larger batch).";
    f.confidence = 0.35;
    add(std::move(f));
  }

  // 7. Straggler rank.
  if (in.across) {
    for (const analyze::RankRow& row : in.across->ranks) {
      if (row.rank != in.rank || !row.straggler) continue;
      Finding f;
      f.id = "straggler";
      f.title = "This rank is slower than the others";
      f.estimated_saving_ns_per_step = row.step_ns - in.across->median_step_ns;
      f.saving_assumption =
          "Every rank waits for the slowest at each collective; matching the median saves the "
          "difference.";
      f.evidence = {
          {"step time", Ms(row.step_ns)},
          {"median step over ranks", Ms(in.across->median_step_ns)},
          {"collectives reached last", std::to_string(row.last_arrivals) + " of " +
                                           std::to_string(in.across->collectives_compared)}};
      f.fix =
          "Check this rank's node: GPU clocks and temperature (nvidia-smi -q -d "
          "CLOCK,PERFORMANCE), "
          "other processes on the GPU, data sharding imbalance, and the NIC/PCIe link.";
      f.confidence = 0.6;
      add(std::move(f));
    }
  }

  // 8. Memory: near OOM, or much unused (no time saving; throughput via a larger batch).
  const analyze::DeviceMemory* dev = analyze::RankDevice(*in.memory);
  if (dev && dev->total_bytes > 0) {
    const int64_t used =
        dev->peak_reserved_bytes >= 0 ? dev->peak_reserved_bytes : dev->peak_allocated_bytes;
    const double share = Share(used, dev->total_bytes);
    if (share > kNearOomShare) {
      Finding f;
      f.id = "near_oom";
      f.title = "Memory is nearly full";
      f.saving_assumption =
          "No time saving: this finding is about the risk of running out of memory.";
      f.evidence = {{"peak reserved", Gb(used)}, {"device memory", Gb(dev->total_bytes)}};
      f.fix =
          "Use activation checkpointing (torch.utils.checkpoint), a smaller micro-batch with "
          "gradient "
          "accumulation to keep the global batch, or bf16.";
      f.confidence = 0.8;
      add(std::move(f));
    } else if (share < kMemoryUnusedShare) {
      Finding f;
      f.id = "memory_underused";
      f.title = "Most of the GPU's memory is unused";
      f.saving_assumption =
          "No direct time saving per step: a larger batch raises throughput per step.";
      char bound[64];
      std::snprintf(bound, sizeof bound, "up to %.1fx", 0.9 / std::max(share, 1e-9));
      f.evidence = {{"peak reserved", Gb(used)},
                    {"device memory", Gb(dev->total_bytes)},
                    {"batch could grow (if activations dominate)", bound}};
      f.fix =
          "Raise the batch size (and the learning rate schedule accordingly), or keep the global "
          "batch with fewer gradient-accumulation steps.";
      f.confidence = 0.4;
      add(std::move(f));
    }
  }

  std::stable_sort(advice.findings.begin(), advice.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     return a.estimated_saving_ns_per_step > b.estimated_saving_ns_per_step;
                   });
  static constexpr std::pair<const char*, const char*> kVerdicts[] = {
      {"input_pipeline_stall", "input-bound"},
      {"exposed_communication", "communication-bound"},
      {"launch_bound", "launch-bound"},
      {"sync_points", "sync-bound"},
      {"pageable_copies", "copy-bound"},
      {"fp32_math", "precision-bound"},
      {"idle_gaps", "host-bound"},
      {"straggler", "straggler"},
      {"memory_underused", "memory-underused"},
      {"near_oom", "near out of memory"},
  };
  // The verdict is the largest finding that can be one: low_occupancy's saving is an upper bound
  // (confidence 0.3) and tiny_copies' a small one, so a measured stall below them still names the
  // bottleneck.
  advice.verdict = "compute-bound — look at the kernels";
  for (const Finding& f : advice.findings) {
    const char* verdict = nullptr;
    for (const auto& [id, v] : kVerdicts)
      if (f.id == id) verdict = v;
    if (!verdict) continue;
    if (f.estimated_saving_pct >= 5.0 || f.id == "memory_underused" || f.id == "near_oom")
      advice.verdict = verdict;
    break;
  }
  return advice;
}

}  // namespace gpuscope::advise
