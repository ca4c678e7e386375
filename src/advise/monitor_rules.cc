#include "advise/monitor_rules.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "render/build.h"
#include "render/format.h"

namespace gpuscope::advise {

namespace {

using namespace render::build;  // the document-builder vocabulary
using analyze::MonitorCpu;
using analyze::MonitorGpu;
using analyze::MonitorStats;

std::string PctText(double v) { return render::FormatValue(Percent(v)); }
std::string Approx(int64_t ns) { return render::FormatDurationApprox(static_cast<double>(ns)); }

std::string GpuWords(const MonitorContext& c) {
  return "GPU busy " + PctText(*c.stats.util_mean_pct) + " on average";
}

// "used 100 % of one core"; above one core, "used 13.6 cores" (a main process whose threads —
// torch's intra-op pool, an image decoder — keep many cores busy is not single-threaded: the
// H200 lab's A1 run, 1,361 %).
std::string MainWords(const MonitorContext& c) {
  const double pct = c.cpu->main_mean_pct;
  return "the main process (" + c.cpu->main_name + ", pid " + std::to_string(c.cpu->main_pid) +
         ") used " +
         (pct > 100 ? render::FormatNumber(pct / 100, 1) + " cores"
                    : PctText(pct) + " of one core");
}

bool EndedWorkersWorthSaying(const MonitorCpu& cpu) {
  return cpu.workers_ended_mean_pct >= kEndedWorkersWorthSayingPct;
}

std::string WorkerWords(const MonitorContext& c) {
  const MonitorCpu& cpu = *c.cpu;
  const bool ended = EndedWorkersWorthSaying(cpu);
  std::string words;
  if (cpu.workers.empty())
    words = ended ? "no worker process was alive at a sample" : "no worker processes existed";
  else
    words = std::to_string(cpu.workers.size()) + " worker" + (cpu.workers.size() == 1 ? "" : "s") +
            (c.workers_idle ? " idled (" : " averaged ") + PctText(cpu.worker_mean_each_pct) +
            (c.workers_idle ? " each)" : " each");
  if (ended)
    words += ", and workers that ended between samples used " +
             PctText(cpu.workers_ended_mean_pct) + " of a core";
  return words;
}

void AddGpuUtil(const MonitorContext& c, std::vector<Field>* e) {
  e->push_back(F("gpu_util_mean_pct", "GPU busy", Percent(*c.stats.util_mean_pct)));
}

void AddMain(const MonitorContext& c, std::vector<Field>* e) {
  e->push_back(F("main_process", "main process",
                 Value::Text(c.cpu->main_name + " (pid " + std::to_string(c.cpu->main_pid) + ")")));
  e->push_back(F("main_cpu_mean_pct", "main process used", Percent(c.cpu->main_mean_pct)));
}

void AddWorkers(const MonitorContext& c, std::vector<Field>* e) {
  const MonitorCpu& cpu = *c.cpu;
  e->push_back(F("workers", "workers", Count(cpu.workers.size())));
  // Without a worker there is no per-worker mean: n/a, not 0 %.
  e->push_back(
      cpu.workers.empty()
          ? Detail("worker_cpu_mean_pct", "each worker used", Value::Na(Unit::kPercent))
          : F("worker_cpu_mean_pct", "each worker used", Percent(cpu.worker_mean_each_pct)));
  Field ended = F("workers_ended_cpu_mean_pct", "workers that ended between samples used",
                  Percent(cpu.workers_ended_mean_pct));
  ended.detail = !EndedWorkersWorthSaying(cpu);
  e->push_back(std::move(ended));
}

// The GPU's busy share (when recorded), the main process and its workers: the evidence of the
// findings about who the GPU waits for.
void AddGpuMainWorkers(const MonitorContext& c, std::vector<Field>* e) {
  if (c.stats.util_mean_pct) AddGpuUtil(c, e);
  AddMain(c, e);
  AddWorkers(c, e);
}

void AddSystem(const MonitorContext& c, std::vector<Field>* e) {
  e->push_back(F("system_busy_mean_pct", "cores busy", Percent(*c.cpu->system_busy_mean_pct)));
  e->push_back(Detail("cores", "cores", Count(c.cpu->cores)));
}

Field GpuIndex(const MonitorGpu& g) { return F("gpu", "GPU", Count(g.index)); }

bool Underused(const MonitorContext& c) {
  return c.stats.util_mean_pct && *c.stats.util_mean_pct < kLowGpuUtilPct;
}

constexpr const char* kInputFix =
    "Move data loading and augmentation into DataLoader workers: DataLoader(..., num_workers=N "
    "(start with the CPU cores per GPU), pin_memory=True, persistent_workers=True); keep "
    "per-sample Python work out of the training loop.";

// ---- The rules, in table order. ----

std::string Gpu(int32_t index) { return "GPU " + std::to_string(index); }

const MonitorGpu* FindGpu(const MonitorStats& s, int32_t index) {
  for (const MonitorGpu& g : s.gpus)
    if (g.index == index) return &g;
  return nullptr;
}

// The GPUs of a node unevenly busy: names the least busy one and says what the numbers support.
void GpuImbalance(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  const std::optional<analyze::GpuBalance>& b = c.stats.balance;
  if (!b || b->spread_pct < kImbalanceSpreadPct) return;
  const MonitorGpu* least = FindGpu(c.stats, b->least);
  std::string behind;  // every GPU at least the spread threshold below the busiest
  size_t n_behind = 0;
  for (const MonitorGpu& g : c.stats.gpus)
    if (g.util_mean_pct && b->busiest_pct - *g.util_mean_pct >= kImbalanceSpreadPct) {
      behind += (behind.empty() ? "" : ", ") + std::to_string(g.index);
      ++n_behind;
    }
  const bool no_work = least && b->least_pct < kNoWorkUtilPct && least->mem_used_peak_bytes &&
                       static_cast<double>(*least->mem_used_peak_bytes) < kNoWorkMemBytes;
  MonitorFinding f;
  f.evidence = {F("busiest_gpu", "busiest", Count(b->busiest)),
                F("busiest_util_mean_pct", "busy", Percent(b->busiest_pct)),
                F("lagging_gpu", "least busy", Count(b->least)),
                F("lagging_util_mean_pct", "busy", Percent(b->least_pct)),
                F("spread_pct", "spread", Percent(b->spread_pct)),
                F("lagging_gpus", "GPUs as far behind (indices)", Value::Text(behind))};
  if (least && least->mem_used_peak_bytes)
    f.evidence.push_back(F("lagging_mem_used_peak_bytes", "its memory peak",
                           UnsignedBytes(*least->mem_used_peak_bytes)));
  f.words = Gpu(b->busiest) + " busy " + PctText(b->busiest_pct) + ", " + Gpu(b->least) + " " +
            PctText(b->least_pct) + " (spread " + render::FormatNumber(b->spread_pct, 0) +
            " points" + (n_behind > 1 ? "; GPUs " + behind + " all that far behind" : "") + ")";
  if (no_work) {
    f.title = Gpu(b->least) + " has no work";
    f.words += ": " + Gpu(b->least) + " ran almost no kernels and holds " +
               render::FormatBytes(static_cast<double>(*least->mem_used_peak_bytes)) +
               ": no process of the job uses it";
    f.fix =
        "Start one process per GPU (torchrun --nproc_per_node=<GPUs>), give each its own "
        "device (torch.cuda.set_device(local_rank)), and check CUDA_VISIBLE_DEVICES.";
  } else {
    f.title = Gpu(b->least) + " lags behind " + Gpu(b->busiest);
    f.words += ": " + Gpu(b->least) +
               " gets work only part of the time. In a synchronous job (DDP, FSDP) its rank is "
               "the straggler: the others wait for it in collectives, and NCCL's waiting kernels "
               "count as busy, so " +
               Gpu(b->busiest) + "'s " + PctText(b->busiest_pct) +
               " overstates useful work; in independent jobs, " + Gpu(b->least) +
               "'s job is just lighter";
  }
  out->push_back(std::move(f));
}

// Utilisation near 0 % for part of every period on one GPU or more.
void PeriodicStall(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  const MonitorGpu* worst = nullptr;
  std::string gpus;
  for (const MonitorGpu& g : c.stats.gpus) {
    const analyze::PeriodicStall& p = g.periodic_stall;
    if (p.stalls == 0 || p.busy_between_pct < kStallBusyBetweenPct) continue;
    gpus += (gpus.empty() ? "" : ", ") + std::to_string(g.index);
    if (!worst || p.duty > worst->periodic_stall.duty) worst = &g;
  }
  if (!worst) return;
  const analyze::PeriodicStall& p = worst->periodic_stall;
  const bool long_period = p.period_ns > kStallCheckpointPeriodNs;
  MonitorFinding f;
  const std::string stall_s = render::FormatNumber(p.stall_ns / 1e9, 1) + " s";
  const std::string period_s = render::FormatNumber(p.period_ns / 1e9, 1) + " s";
  f.title = "GPU utilisation drops to ~0 % for " + stall_s + " of every " + period_s;
  f.evidence = {F("gpu", "GPU", Count(worst->index)),
                F("period_ns", "every", Value::Nanos(p.period_ns)),
                F("stall_ns", "near 0 % for", Value::Nanos(p.stall_ns)),
                F("stall_share", "of the time", Value::Share(p.duty, 0)),
                F("stalls", "stalls", Count(p.stalls)),
                F("busy_between_pct", "busy between them", Percent(p.busy_between_pct)),
                F("gpus", "GPUs with it", Value::Text(gpus))};
  f.words = stall_s + " of every " + period_s + " (" + render::FormatShare(p.duty, 0) +
            ") near 0 % on GPU " + gpus + " (" + std::to_string(p.stalls) + " stalls, " +
            PctText(p.busy_between_pct) + " busy between them): the signature of " +
            (long_period ? "checkpointing or evaluation every N steps"
                         : "data loading that runs dry every few steps, or checkpointing");
  if (long_period)
    f.fix =
        "Save checkpoints asynchronously (torch.distributed.checkpoint.async_save, or copy "
        "the state to CPU and write it in a background thread) and evaluate less often or "
        "on fewer batches.";
  out->push_back(std::move(f));
}

// Busy at low power for a long stretch: a kernel spinning in a collective.
void ProbablyHung(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  for (const MonitorGpu& g : c.stats.gpus) {
    const analyze::BusyAtLowPower& b = g.busy_at_low_power;
    if (b.duration_ns < kHangMinNs) continue;
    const Value share = Value::ShareOf(b.power_mean_w, b.power_limit_w, 0);
    MonitorFinding f;
    f.key = "probably_hung_gpu_" + std::to_string(g.index);
    f.title = "GPU " + std::to_string(g.index) + " probably hung in a collective";
    f.evidence = {
        GpuIndex(g),
        F("busy_util_min_pct", "utilisation at least", Percent(analyze::kHangUtilPct)),
        F("power_mean_w", "power", Value::Number(b.power_mean_w, 0, Unit::kWatts)),
        F("power_limit_w", "limit", Value::Number(b.power_limit_w, 0, Unit::kWatts)),
        F("power_limit_share", "of the limit", share),
        F("busy_at_low_power_ns", "for", Value::Nanos(b.duration_ns)),
        F("from_start_ns", "from the start after", Value::Nanos(b.start_ns - c.stats.start_ns))};
    f.words = "utilisation ≥ " + PctText(analyze::kHangUtilPct) + " at " +
              render::FormatNumber(b.power_mean_w, 0) + " of " +
              render::FormatNumber(b.power_limit_w, 0) + " W (" + render::FormatValue(share) +
              " of the limit) for " + Approx(b.duration_ns) +
              " from t=" + Approx(b.start_ns - c.stats.start_ns) +
              ": a kernel that spins without doing arithmetic, typically an NCCL collective "
              "waiting for a rank that does not arrive";
    out->push_back(std::move(f));
  }
}

void InputSingleThreaded(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  if (!Underused(c) || !c.main_bound || !c.workers_idle) return;
  MonitorFinding f;
  f.title = "The input pipeline runs in the main process";
  AddGpuMainWorkers(c, &f.evidence);
  f.words = GpuWords(c) + " while " + MainWords(c) + " and " + WorkerWords(c);
  out->push_back(std::move(f));
}

void MainCpuBound(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  if (c.stats.util_mean_pct || !c.main_bound || !c.workers_idle) return;
  MonitorFinding f;
  f.title = "The main process keeps its cores full";
  AddMain(c, &f.evidence);
  AddWorkers(c, &f.evidence);
  f.words = MainWords(c) + " and " + WorkerWords(c) +
            " — if this job feeds a GPU, its input pipeline runs in the main process";
  out->push_back(std::move(f));
}

void WorkersSaturated(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  const bool with_gpu = c.stats.util_mean_pct.has_value();
  if (!c.workers_saturated || (with_gpu && !Underused(c))) return;
  MonitorFinding f;
  if (with_gpu) AddGpuUtil(c, &f.evidence);
  AddWorkers(c, &f.evidence);
  f.evidence.push_back(F("busy_worker_min_pct", "each at least", Percent(kBusyWorkerPct)));
  const std::string words = WorkerWords(c) + " (each ≥ " + PctText(kBusyWorkerPct) + " of a core)";
  if (with_gpu) {
    f.title = "Data-loading workers are saturated";
    f.words = GpuWords(c) + " while " + words;
    f.fix = c.system_saturated ? "All cores are busy: make transforms cheaper (decode on the GPU, "
                                 "pre-process the data set once) or use a machine with more cores "
                                 "per GPU."
                               : "Raise num_workers (cores are free), or make transforms cheaper.";
  } else {
    f.title = "Worker processes are saturated";
    f.words = words;
    f.fix = "Raise the number of workers if cores are free, or make the per-sample work cheaper.";
  }
  out->push_back(std::move(f));
}

void CpuSaturated(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  if (!c.system_saturated) return;
  const bool with_gpu = c.stats.util_mean_pct.has_value();
  // With a GPU: the host explanation of an under-used GPU when no worker rule took it.
  if (with_gpu &&
      (!Underused(c) || c.Fired("input_single_threaded") || c.Fired("workers_saturated")))
    return;
  MonitorFinding f;
  f.title = "All CPU cores are busy";
  if (with_gpu) AddGpuUtil(c, &f.evidence);
  AddSystem(c, &f.evidence);
  const std::string cores =
      "the cores were " + PctText(*c.cpu->system_busy_mean_pct) + " busy on average";
  f.words = with_gpu ? GpuWords(c) + " while " + cores : cores;
  f.fix = with_gpu ? "Find what else runs on the machine (top), or use fewer/cheaper CPU "
                     "transforms per sample."
                   : "Find what else runs on the machine (top), or do less CPU work per sample.";
  out->push_back(std::move(f));
}

// The main process mostly off the CPU while it has worker processes (DataLoader workers): a
// training step that computes on its thread is off the CPU while it waits for the next batch.
// Without GPU data this is the only reading the CPU samples support; with one, the GPU must be
// mostly idle too (else the wait is the GPU's work).
void WaitsOnWorkers(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  if (!c.cpu || c.cpu->workers.empty() || c.cpu->main_mean_pct >= kCpuBoundPct / 2 ||
      c.system_saturated || c.Fired("workers_saturated"))
    return;
  if (c.stats.util_mean_pct && *c.stats.util_mean_pct >= kIdleGpuUtilPct) return;
  MonitorFinding f;
  f.title = "The training process waits for its input from its worker processes";
  AddGpuMainWorkers(c, &f.evidence);
  f.evidence.push_back(F("main_off_cpu_share", "main process off the CPU",
                         Value::Share(1 - c.cpu->main_mean_pct / 100)));
  f.words = (c.stats.util_mean_pct ? GpuWords(c) + " while " : std::string()) + MainWords(c) +
            " (off the CPU " + PctText(100 - c.cpu->main_mean_pct) + " of the time) and " +
            WorkerWords(c);
  if (c.workers_idle)
    f.fix =
        "The workers are idle too, so each batch waits on something slow inside "
        "__getitem__ or collate (storage or network reads, a lock, a sleep): time one "
        "__getitem__, cache or pre-process the data set, and raise num_workers and "
        "prefetch_factor so more batches are in flight (persistent_workers=True).";
  out->push_back(std::move(f));
}

void Waiting(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  if (!c.stats.util_mean_pct || *c.stats.util_mean_pct >= kIdleGpuUtilPct ||
      c.cpu->main_mean_pct >= kCpuBoundPct / 2 || c.Fired("input_single_threaded") ||
      c.Fired("workers_saturated") || c.Fired("cpu_saturated") || c.Fired("waits_on_workers"))
    return;
  MonitorFinding f;
  f.title = "GPU and host both mostly idle: the job waits on something else";
  AddGpuUtil(c, &f.evidence);
  AddMain(c, &f.evidence);
  f.words = GpuWords(c) + " while " + MainWords(c);
  const std::optional<uint64_t>& read = c.cpu->read_bytes;
  if (read && c.stats.duration_ns > 0) {
    const double per_s =
        static_cast<double>(*read) / (static_cast<double>(c.stats.duration_ns) / 1e9);
    f.evidence.push_back(F("read_bytes", "the tree read from storage", UnsignedBytes(*read)));
    f.evidence.push_back(
        F("read_bytes_per_s", "at", Value::Number(per_s, 1, Unit::kBytesPerSecond)));
    f.words += "; the tree read " + render::FormatBytes(static_cast<double>(*read)) +
               " from storage (" + render::FormatRate(per_s, Unit::kBytesPerSecond) + ")";
  }
  out->push_back(std::move(f));
}

void GpuUnderused(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  if (!Underused(c)) return;
  for (const char* id : {"input_single_threaded", "workers_saturated", "cpu_saturated",
                         "waits_on_workers", "waiting"})
    if (c.Fired(id)) return;
  MonitorFinding f;
  f.title = "GPU under-used, host not visibly the bottleneck";
  AddGpuMainWorkers(c, &f.evidence);
  f.words = GpuWords(c) + "; " + MainWords(c) + "; " + WorkerWords(c);
  out->push_back(std::move(f));
}

void MemoryHeadroom(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  for (const MonitorGpu& g : c.stats.gpus) {
    if (!g.mem_used_peak_bytes || !g.mem_total_bytes || *g.mem_total_bytes == 0 ||
        !(*g.mem_used_peak_bytes < kMemoryHeadroomFraction * *g.mem_total_bytes))
      continue;
    MonitorFinding f;
    f.key = "memory_headroom_gpu_" + std::to_string(g.index);
    f.title = "GPU " + std::to_string(g.index) + " memory mostly unused";
    f.evidence = {
        GpuIndex(g),
        F("mem_used_peak_bytes", "memory used at the peak", UnsignedBytes(*g.mem_used_peak_bytes)),
        F("mem_total_bytes", "of", UnsignedBytes(*g.mem_total_bytes)),
        F("mem_used_peak_share", "share",
          Value::ShareOf(static_cast<double>(*g.mem_used_peak_bytes),
                         static_cast<double>(*g.mem_total_bytes), 0))};
    f.words = "memory used " + render::FormatBytes(static_cast<double>(*g.mem_used_peak_bytes)) +
              " of " + render::FormatBytes(static_cast<double>(*g.mem_total_bytes)) +
              " at the peak → batch could grow";
    out->push_back(std::move(f));
  }
}

void Throttled(const MonitorContext& c, std::vector<MonitorFinding>* out) {
  for (const MonitorGpu& g : c.stats.gpus) {
    if (!g.throttled_share || *g.throttled_share < kThrottleShareMin) continue;
    MonitorFinding f;
    f.key = "throttled_gpu_" + std::to_string(g.index);
    f.title = "GPU " + std::to_string(g.index) + " clocks slowed down";
    f.evidence = {GpuIndex(g), F("throttled_share", "steady samples slowed down",
                                 Value::Share(*g.throttled_share, 0))};
    f.words = "a power-cap, thermal or hardware slowdown reason was set in " +
              render::FormatShare(*g.throttled_share, 0) + " of the steady-state samples";
    if (g.temperature_max_c) {
      f.evidence.push_back(F("temperature_max_c", "max temperature",
                             Value::Number(*g.temperature_max_c, 0, Unit::kCelsius)));
      f.words += " (max " +
                 render::FormatValue(Value::Number(*g.temperature_max_c, 0, Unit::kCelsius)) + ")";
    }
    out->push_back(std::move(f));
  }
}

std::vector<MonitorRule> MakeRules() {
  using render::Severity;
  const std::string low = "steady GPU util < " + PctText(kLowGpuUtilPct) + " (`kLowGpuUtilPct`)";
  // The host rules explain an under-used GPU: fixing the cause gains at most its idle time.
  const std::string host_saving =
      "at most the GPU's idle share of the steady state (100 % − steady util); no time estimate";
  return {
      {"probably_hung", kMonBusyAtLowPower,
       "SM util ≥ " + PctText(analyze::kHangUtilPct) + " at power < " +
           render::FormatShare(analyze::kHangPowerFraction, 0) +
           " of the limit (`analyze::kHangUtilPct`, `analyze::kHangPowerFraction`) for ≥ " +
           Approx(kHangMinNs) + " in a row (`kHangMinNs`)",
       "the rest of the run: a hung job makes no progress", 0.6, Severity::kCritical, true,
       "Check that every rank is alive and reaches the same collective; run with "
       "NCCL_DEBUG=INFO and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and a process-group timeout; "
       "`py-spy dump --pid PID` each rank to see where it waits.",
       "gpu, busy_util_min_pct, power_mean_w, power_limit_w, power_limit_share, "
       "busy_at_low_power_ns, from_start_ns",
       ProbablyHung},
      {"gpu_imbalance", kMonGpuBalance,
       "steady util of the busiest GPU − the least busy ≥ " +
           render::FormatNumber(kImbalanceSpreadPct, 0) +
           " points (`kImbalanceSpreadPct`); titled \"has no work\" when the least busy is < " +
           PctText(kNoWorkUtilPct) + " with < " + render::FormatBytes(kNoWorkMemBytes) +
           " used (`kNoWorkUtilPct`, `kNoWorkMemBytes`)",
       "at most the lagging GPU's idle share (in a synchronous job every GPU runs at the "
       "straggler's pace); no time estimate",
       0.6, Severity::kWarning, true,
       "Find what the least busy GPU's rank does differently: shard the data evenly "
       "(DistributedSampler, drop_last=True), move rank-0-only work (logging, evaluation, "
       "checkpoint writing) off the step path, give every rank the same DataLoader workers and "
       "CPU cores; `gpuscope analyze` of per-rank profiler traces names the straggler and its "
       "wait.",
       "busiest_gpu, busiest_util_mean_pct, lagging_gpu, lagging_util_mean_pct, spread_pct, "
       "lagging_gpus, lagging_mem_used_peak_bytes",
       GpuImbalance},
      {"periodic_stall", kMonPeriodicStall,
       "≥ " + std::to_string(analyze::kStallMinCount) + " steady-state spans of util ≤ " +
           PctText(analyze::kStallUtilPct) + " whose starts are evenly spaced (" +
           render::FormatShare(analyze::kStallRegularShare, 0) + " of the gaps within ±" +
           render::FormatShare(analyze::kStallPeriodTolerance, 0) +
           " of the median or one sample; `analyze::kStall*`), mean util between them ≥ " +
           PctText(kStallBusyBetweenPct) + " (`kStallBusyBetweenPct`)",
       "up to the stalled share of the time (the duty cycle), if the pause is overlapped with "
       "compute; no time estimate",
       0.7, Severity::kWarning, true,
       "Keep the input pipeline ahead of the GPU: DataLoader(..., num_workers=N, "
       "prefetch_factor=4, persistent_workers=True, pin_memory=True); if the period matches "
       "checkpointing or evaluation, save asynchronously and evaluate less often.",
       "gpu, period_ns, stall_ns, stall_share, stalls, busy_between_pct, gpus", PeriodicStall},
      {"input_single_threaded", kMonGpuUtil | kMonMainCpu | kMonWorkersCpu,
       low + ", main process ≥ " + PctText(kCpuBoundPct) +
           " of one core (`kCpuBoundPct`), every "
           "worker < " +
           PctText(kIdleWorkerPct) +
           " (`kIdleWorkerPct`; or none), workers that "
           "ended between samples < " +
           PctText(kIdleWorkerPct) + " of a core together",
       host_saving, 0.7, Severity::kWarning, true, kInputFix,
       "gpu_util_mean_pct, main_process, main_cpu_mean_pct, workers, worker_cpu_mean_pct, "
       "workers_ended_cpu_mean_pct",
       InputSingleThreaded},
      {"main_cpu_bound", kMonGpuUtil | kMonMainCpu | kMonWorkersCpu,
       "no GPU data, main process ≥ " + PctText(kCpuBoundPct) +
           " of one core, workers idle (as "
           "above)",
       "unknown without GPU data", 0.5, Severity::kWarning, true, kInputFix,
       "main_process, main_cpu_mean_pct, workers, worker_cpu_mean_pct, "
       "workers_ended_cpu_mean_pct",
       MainCpuBound},
      {"workers_saturated", kMonGpuUtil | kMonWorkersCpu | kMonSystemCpu,
       low + " or no GPU data, at least one worker and every worker ≥ " + PctText(kBusyWorkerPct) +
           " of a core (`kBusyWorkerPct`)",
       host_saving, 0.7, Severity::kWarning, true,
       "Raise num_workers (cores are free), or make transforms cheaper.",
       "gpu_util_mean_pct (with GPU data), workers, worker_cpu_mean_pct, "
       "workers_ended_cpu_mean_pct, busy_worker_min_pct",
       WorkersSaturated},
      {"cpu_saturated", kMonGpuUtil | kMonSystemCpu,
       "cores ≥ " + PctText(kCpuSaturatedPct) +
           " busy on average (`kCpuSaturatedPct`); with GPU "
           "data only when " +
           low + " and no rule above fired",
       host_saving, 0.6, Severity::kWarning, true,
       "Find what else runs on the machine (top), or use fewer/cheaper CPU transforms per "
       "sample.",
       "gpu_util_mean_pct (with GPU data), system_busy_mean_pct, cores", CpuSaturated},
      {"waits_on_workers", kMonGpuUtil | kMonMainCpu | kMonWorkersCpu | kMonSystemCpu,
       "main process < " + render::FormatNumber(kCpuBoundPct / 2, 1) +
           " % of one core with ≥ 1 worker process, cores not saturated, workers not "
           "saturated, and (with GPU data) steady GPU util < " +
           PctText(kIdleGpuUtilPct) + " (`kIdleGpuUtilPct`)",
       "at most the main process's off-CPU share (the time the step waits for its batch); no "
       "time estimate",
       0.5, Severity::kWarning, true,
       "Keep batches ahead of the step: DataLoader(..., num_workers=N, prefetch_factor=4, "
       "persistent_workers=True, pin_memory=True), and make each sample cheaper to produce "
       "(time one __getitem__).",
       "gpu_util_mean_pct, main_process, main_cpu_mean_pct, workers, worker_cpu_mean_pct, "
       "workers_ended_cpu_mean_pct, main_off_cpu_share",
       WaitsOnWorkers},
      {"waiting", kMonGpuUtil | kMonMainCpu | kMonStorageReads,
       "steady GPU util < " + PctText(kIdleGpuUtilPct) + " (`kIdleGpuUtilPct`), main process < " +
           render::FormatNumber(kCpuBoundPct / 2, 1) + " % of one core, no rule above fired",
       host_saving, 0.4, Severity::kWarning, true,
       "Look for slow storage or network reads, a lock, or another rank it waits for (py-spy "
       "dump shows where).",
       "gpu_util_mean_pct, main_process, main_cpu_mean_pct, read_bytes, read_bytes_per_s", Waiting},
      {"gpu_underused", kMonGpuUtil | kMonMainCpu | kMonWorkersCpu,
       low + " with process data, and none of the host rules above fired", host_saving, 0.5,
       Severity::kWarning, true,
       "Profile a few steps (torch.profiler) and run `gpuscope analyze` on the trace to see "
       "where the step time goes.",
       "gpu_util_mean_pct, main_process, main_cpu_mean_pct, workers, worker_cpu_mean_pct, "
       "workers_ended_cpu_mean_pct",
       GpuUnderused},
      {"memory_headroom", kMonGpuMemory,
       "peak memory used < " + render::FormatShare(kMemoryHeadroomFraction, 0) +
           " of the GPU's memory (`kMemoryHeadroomFraction`)",
       "none (throughput: a larger batch per step)", 0.6, Severity::kInfo, false,
       "Raise the batch size (and scale the learning rate), or keep the global batch with "
       "fewer gradient-accumulation steps.",
       "gpu, mem_used_peak_bytes, mem_total_bytes, mem_used_peak_share", MemoryHeadroom},
      {"throttled", kMonThrottle,
       "≥ " + render::FormatShare(kThrottleShareMin, 0) +
           " of the steady samples with a power-cap, thermal or hardware slowdown reason "
           "(`kThrottleShareMin`)",
       "unknown: the clocks' deficit is not measured", 0.8, Severity::kWarning, false,
       "Check cooling and power limits (nvidia-smi -q -d PERFORMANCE).",
       "gpu, throttled_share, temperature_max_c", Throttled},
  };
}

constexpr uint32_t kCpuInputs = kMonMainCpu | kMonWorkersCpu | kMonSystemCpu | kMonStorageReads;

std::string Verdict(const MonitorContext& c, const std::vector<MonitorFinding>& findings) {
  std::string verdict;
  const auto first = std::find_if(findings.begin(), findings.end(), [](const MonitorFinding& f) {
    const MonitorRule* rule = FindMonitorRule(f.id);
    return rule && rule->verdict;
  });
  const std::optional<double>& util = c.stats.util_mean_pct;
  if (first != findings.end())
    verdict = first->words + " → " + first->title;
  else if (util && *util >= kWellUsedGpuUtilPct)
    verdict = GpuWords(c) + " → GPU well used";
  else if (util)
    verdict = GpuWords(c);
  else if (c.cpu)
    verdict = "no GPU data; " + MainWords(c) + ", " + WorkerWords(c);
  else
    verdict = "no GPU or CPU data in the samples";
  verdict[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(verdict[0])));
  return verdict;
}

}  // namespace

bool MonitorContext::Fired(std::string_view id) const {
  return std::any_of(earlier.begin(), earlier.end(),
                     [id](const MonitorFinding& f) { return f.id == id; });
}

const std::vector<MonitorRule>& MonitorRules() {
  static const std::vector<MonitorRule> rules = MakeRules();
  return rules;
}

const MonitorRule* FindMonitorRule(std::string_view id) {
  for (const MonitorRule& r : MonitorRules())
    if (r.id == id) return &r;
  return nullptr;
}

std::string MonitorInputNames(uint32_t inputs) {
  static constexpr std::pair<MonitorInput, const char*> kNames[] = {
      {kMonGpuUtil, "gpu_util"},       {kMonBusyAtLowPower, "busy_at_low_power"},
      {kMonGpuMemory, "gpu_memory"},   {kMonThrottle, "throttle"},
      {kMonMainCpu, "main_cpu"},       {kMonWorkersCpu, "workers_cpu"},
      {kMonSystemCpu, "system_cpu"},   {kMonStorageReads, "storage_reads"},
      {kMonGpuBalance, "gpu_balance"}, {kMonPeriodicStall, "periodic_stall"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames)
    if (inputs & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

std::string MonitorRulesMarkdown() {
  std::string out =
      "| id | reads | fires when | saving model | confidence | severity | verdict |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const MonitorRule& r : MonitorRules())
    out += "| `" + r.id + "` | " + MonitorInputNames(r.reads) + " | " + r.threshold + " | " +
           r.saving_model + " | " + render::FormatNumber(r.confidence, 2) + " | " +
           render::SeverityName(r.severity) + " | " + (r.verdict ? "yes" : "no") + " |\n";
  out += "\n| id | evidence keys | fix |\n|---|---|---|\n";
  for (const MonitorRule& r : MonitorRules())
    out += "| `" + r.id + "` | " + r.evidence_keys + " | " + r.fix + " |\n";
  return out;
}

MonitorAdvice AdviseMonitor(const MonitorStats& s) {
  MonitorAdvice advice;
  if (s.samples == 0) {
    advice.verdict = "no samples: the command ended before the first sample";
    return advice;
  }
  MonitorContext ctx{s, s.cpu ? &*s.cpu : nullptr, false, false, false, false, advice.findings};
  if (ctx.cpu) {
    const MonitorCpu& cpu = *ctx.cpu;
    const auto idle = std::count_if(cpu.workers.begin(), cpu.workers.end(),
                                    [](const auto& w) { return w.cpu_mean_pct < kIdleWorkerPct; });
    const auto busy = std::count_if(cpu.workers.begin(), cpu.workers.end(),
                                    [](const auto& w) { return w.cpu_mean_pct >= kBusyWorkerPct; });
    ctx.main_bound = cpu.main_mean_pct >= kCpuBoundPct;
    // Idle: every worker seen alive below the threshold, and the short-lived ones together too.
    ctx.workers_idle = static_cast<size_t>(idle) == cpu.workers.size() &&
                       cpu.workers_ended_mean_pct < kIdleWorkerPct;
    ctx.workers_saturated = !cpu.workers.empty() && static_cast<size_t>(busy) == cpu.workers.size();
    ctx.system_saturated =
        cpu.system_busy_mean_pct && *cpu.system_busy_mean_pct >= kCpuSaturatedPct;
  }
  for (const MonitorRule& rule : MonitorRules()) {
    if ((rule.reads & kCpuInputs) && !ctx.cpu) continue;
    const size_t first = advice.findings.size();
    rule.run(ctx, &advice.findings);
    for (size_t i = first; i < advice.findings.size(); ++i) {
      MonitorFinding& f = advice.findings[i];
      f.id = rule.id;
      if (f.key.empty()) f.key = rule.id;
      f.severity = rule.severity;
      f.confidence = rule.confidence;
      if (f.fix.empty()) f.fix = rule.fix;
    }
  }
  advice.verdict = Verdict(ctx, advice.findings);
  return advice;
}

render::Finding ToDocumentFinding(const MonitorFinding& f) {
  render::Finding d;
  d.key = f.key;
  d.title = f.title;
  d.severity = f.severity;
  d.saving = Value::Na(Unit::kNanos);
  d.saving_share = Value::Na(Unit::kShare);
  if (const MonitorRule* rule = FindMonitorRule(f.id)) d.saving_assumption = rule->saving_model;
  d.confidence = f.confidence;
  d.evidence = f.evidence;
  d.fix = f.fix;
  return d;
}

}  // namespace gpuscope::advise
