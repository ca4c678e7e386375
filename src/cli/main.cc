// gpuscope command line: flags → library calls → renderer. No analysis logic lives here.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>

#include "analyze/run_all.h"
#include "api/analyze.h"
#include "base/malloc_tuning.h"
#include "base/numbers.h"
#include "base/thread_pool.h"
#include "cli/diff_command.h"
#include "cli/job_command.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/plan_command.h"
#include "cli/run_command.h"
#include "cli/tune_command.h"
#include "cli/usage.h"
#include "gpuscope/ingest.h"
#include "gpuscope/synth.h"
#include "gpuscope/version.h"
#include "ingest/inputs.h"
#include "ingest/registry.h"
#include "job/map_reduce.h"
#include "job/mpi.h"
#include "render/format.h"

namespace {

using namespace gpuscope;

using cli::ExitCodeFor;
using cli::kExitBadInput;
using cli::kExitInternal;
using cli::kExitOk;
using cli::PrintError;

// "512M", "1G", "100MB", "4096" → bytes. Returns false on nonsense.
bool ParseSize(const std::string& text, uint64_t* out) {
  size_t i = 0;
  double value = 0;
  try {
    value = std::stod(text, &i);
  } catch (...) {
    return false;
  }
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    scale = 1024.0 * 1024 * 1024;
  else
    return false;
  if (value < 0) return false;
  *out = static_cast<uint64_t>(value * scale);
  return true;
}

// "500us", "2ms", "1.5s", "250ns" (also "µs", "5m", "1h") → ns: base's ParseDurationNs, the
// parser of every duration flag. Returns false on nonsense.
bool ParseDuration(const std::string& text, int64_t* out) {
  return ParseDurationNs(text, out) == NumberError::kOk;
}

// A progress bar on stderr, only when stderr is a terminal and the work has run for over a second.
// GPUSCOPE_PROGRESS_AFTER_MS overrides the one second (tests use 0 to see the bar on a small
// trace).
class ProgressBar {
 public:
  ProgressBar() : enabled_(isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()) {
    if (const char* after = std::getenv("GPUSCOPE_PROGRESS_AFTER_MS"))
      delay_ = std::chrono::milliseconds(std::atol(after));
  }
  // `what` names the work: "reading" (bytes of one file), "mapping" (ranks of a folder).
  void Update(uint64_t done, uint64_t total, const char* what = "reading") {
    if (!enabled_ || total == 0) return;
    const auto now = std::chrono::steady_clock::now();
    // At most 10 redraws a second, but always the last one (100 %) once the bar is up.
    if (now - start_ < delay_) return;
    if (shown_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double f = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    const int width = 40;
    const int filled = static_cast<int>(f * width);
    std::fprintf(stderr, "\r  %s [%.*s%*s] %3.0f%%", what, filled,
                 "########################################", width - filled, "", f * 100);
    shown_ = true;
  }
  // The analyses run after reading; say so where the bar was, so a long pause is explained.
  void Analysing() {
    if (shown_) std::fprintf(stderr, "\r  analysing%*s", 46, "");
  }
  ~ProgressBar() {
    if (shown_) std::fprintf(stderr, "\r%*s\r", 60, "");
  }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::milliseconds delay_{1000};
  std::chrono::steady_clock::time_point start_, last_;
};

struct AnalyzeArgs {
  std::string input;
  api::AnalyzeOptions options;  // the flags of api::AnalyzeOptionTable()
  // The CLI's own: --stats, --mpi, the views.
  bool stats = false;
  cli::OutputArgs out;
  bool mpi = false;  // under mpirun/srun: map spread over the MPI processes (job/mpi.h)
};

// What --stats prints on stderr after the report (bench/run.sh reads it).
void PrintStats(const api::Analysis& a, double wall) {
  const job::MapStats& stats = a.stats;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  // With several ranks the loads and analyses overlap: their seconds are sums over the ranks,
  // wall_seconds is the whole run, and model_MB the largest rank's model.
  std::fprintf(
      stderr,
      "stats: load_seconds=%.3f analyze_seconds=%.3f file_bytes=%llu json_bytes=%llu events=%llu "
      "json_MBps=%.1f events_per_s=%.0f peak_rss_MB=%.1f model_MB=%.1f ranks=%zu "
      "reduce_seconds=%.3f wall_seconds=%.3f\n",
      stats.load_seconds, stats.analyze_seconds, static_cast<unsigned long long>(stats.file_bytes),
      static_cast<unsigned long long>(stats.json_bytes),
      static_cast<unsigned long long>(stats.events), stats.json_bytes / 1e6 / stats.load_seconds,
      stats.events / stats.load_seconds, usage.ru_maxrss / 1024.0, stats.max_model_bytes / 1e6,
      a.ranks, a.reduce_seconds, wall);
  // What each analysis cost, thread CPU seconds summed over ranks.
  std::string line = "stats: analysis_cpu_seconds";
  for (size_t i = 0; i < stats.analysis_cpu_seconds.size(); ++i)
    // append, not " " + string: GCC 12 reports a false -Wrestrict there (bug 105329).
    line.append(" ")
        .append(analyze::AnalysisName(static_cast<analyze::AnalysisId>(i)))
        .append("=")
        .append(render::FormatNumber(stats.analysis_cpu_seconds[i], 3));
  std::fprintf(stderr, "%s\n", line.c_str());
}

// `gpuscope analyze`: flags → api::AnalyzeInput (the one implementation, shared with Python) →
// the renderer; what is the CLI's own is MPI, the progress bar, --stats and the exit code.
int RunAnalyze(const AnalyzeArgs& args) {
  api::AnalyzeOptions options = args.options;
  // The report's files, checked before the analysis (minutes on a large job) rather than after.
  if (const Status s = cli::CheckOutputArgs(args.out); !s.ok()) {
    PrintError(s);
    return ExitCodeFor(s);
  }
  // Under mpirun every process runs this; MPI starts before any thread and ends after the last
  // (`world` is destroyed last). Only process 0 prints.
  std::unique_ptr<job::MpiWorld> world;
  bool mapper_ran = false;
  Status mpi_status;
  if (args.mpi) {
    auto kind = ingest::ClassifyPath(args.input);
    if (!kind.ok()) {
      PrintError(kind.status());
      return ExitCodeFor(kind.status());
    }
    if (*kind != ingest::PathKind::kFolder && *kind != ingest::PathKind::kSummary) {
      PrintError(Status::Error(StatusCode::kUsage,
                               "--mpi spreads the traces of a folder over MPI processes; " +
                                   args.input +
                                   " is not a folder (hint: analyze it without --mpi)"));
      return kExitBadInput;
    }
    auto started = job::MpiWorld::Start(nullptr, nullptr);
    if (!started.ok()) {
      PrintError(started.status());
      return ExitCodeFor(started.status());
    }
    world = std::move(*started);
    options.mapper = [&](const std::vector<std::string>& traces, const job::MapOptions& o,
                         ThreadPool& p) -> Result<job::Mapped> {
      mapper_ran = true;
      auto r = job::MapTracesMpi(*world, traces, o, p);
      if (!r.ok()) mpi_status = r.status();
      return r;
    };
  }
  const bool quiet = world && !world->root();
  ProgressBar bar;
  if (!quiet) {
    options.progress = [&bar](uint64_t done, uint64_t total) { bar.Update(done, total); };
    options.ranks_done = [&bar](size_t done, size_t total) { bar.Update(done, total, "mapping"); };
    options.analysing = [&bar] { bar.Analysing(); };
  }
  const auto t0 = std::chrono::steady_clock::now();
  Result<api::Analysis> analysis = api::AnalyzeInput(args.input, options);
  if (world && (!mapper_ran || !mpi_status.ok())) {
    // This process failed before or during the gather: the others would wait for it forever.
    const Status& why = mapper_ran ? mpi_status : analysis.status();
    PrintError(why);
    world->Abort(ExitCodeFor(why));
  }
  if (quiet) return kExitOk;  // process 0 reports
  if (!analysis.ok()) {
    PrintError(analysis.status());
    return ExitCodeFor(analysis.status());
  }
  cli::OutputArgs out = args.out;
  out.never_terminal = world != nullptr;
  if (const int rc = cli::Emit(analysis->document, out); rc != 0) return rc;
  if (args.stats) {
    PrintStats(*analysis,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  for (const std::string& note : analysis->notes)
    std::fprintf(stderr, "gpuscope: note: %s\n", note.c_str());
  int rc = kExitOk;
  for (const Status& f : analysis->failures) {
    PrintError(f);
    rc = std::max(rc, ExitCodeFor(f));
  }
  return rc;
}

}  // namespace

namespace {

CLI::App* AddAnalyzeCommand(CLI::App& app, AnalyzeArgs* aa) {
  auto* analyze = cli::AddCommand(app, "analyze");
  analyze
      ->add_option("TRACE", aa->input,
                   "Trace file (.json or .json.gz, detected from content), folder, or - for "
                   "stdin (pipes work); also a `gpuscope run --record` file (.jsonl, .csv or "
                   ".json), an nvidia-smi CSV / dmon log, a PyTorch CUDA memory snapshot "
                   "(torch.cuda.memory._dump_snapshot pickle), or a summary from `gpuscope map`")
      ->required();
  cli::AddOutputFlags(analyze, &aa->out);
  cli::AddOptions(analyze, api::AnalyzeOptionTable(), &aa->options);
  analyze->add_flag(
      "--stats", aa->stats,
      "Print load time, throughput, peak memory and each analysis' CPU seconds to stderr");
  analyze->add_flag("--mpi", aa->mpi,
                    std::string("Under mpirun/srun: each MPI process maps a share of the folder's "
                                "traces, process 0 reduces and prints (output as without --mpi; "
                                "docs/jobs.md)") +
                        (job::MpiBuilt() ? "" : " [no MPI plugin here: libgpuscope-mpi.so]"));
  return analyze;
}

// synth's flags: the generator's options, and the texts parsed after (sizes, durations).
struct SynthArgs {
  SynthOptions so;
  std::string out_path, target_size, precision = "bf16";
  std::string late, jitter, clock_offset, clock_noise;
};

CLI::App* AddSynthCommand(CLI::App& app, SynthArgs* a) {
  auto* synth = cli::AddCommand(app, "synth");
  synth
      ->add_option("-o,--out", a->out_path,
                   "Output file (1 rank) or folder (several ranks: rank<R>.pt.trace.json[.gz])")
      ->required();
  synth->add_option("--ranks", a->so.ranks, "Number of ranks (default 1)")
      ->check(CLI::Range(1, 4096));
  synth->add_option("--steps", a->so.steps, "ProfilerSteps per rank (default 8)")
      ->check(CLI::Range(1, 10000000));
  synth->add_option("--target-size", a->target_size,
                    "Grow steps until each rank's JSON reaches this size (e.g. 1G)");
  synth
      ->add_option("--layers", a->so.layers,
                   "Model layers; kernels per step scale with it (default 12)")
      ->check(CLI::Range(1, 10000));
  synth
      ->add_option("--dataloader-stall", a->so.dataloader_stall_fraction,
                   "Share of each step the GPU waits for the DataLoader (0-0.9)")
      ->check(CLI::Range(0.0, 0.9));
  synth
      ->add_option("--sync-per-step", a->so.sync_points_per_step,
                   "Host-device sync points (.item()) per step")
      ->check(CLI::Range(0, 1000));
  synth
      ->add_option("--sync-stall", a->so.sync_stall_fraction,
                   "Share of each step all GPU streams idle after the .item() syncs while the "
                   "CPU uses the value (0-0.9; 1 sync per step if --sync-per-step is 0)")
      ->check(CLI::Range(0.0, 0.9));
  synth
      ->add_option("--host-gap", a->so.host_gap_fraction,
                   "Share of each step the GPU idles while the host runs a non-DataLoader, "
                   "non-sync op (## log_metrics ##) before the first copy (0-0.89)")
      ->check(CLI::Range(0.0, 0.89));
  synth
      ->add_option("--tiny-grids", a->so.tiny_grid_fraction,
                   "Share of compute-kernel time in kernels with fewer blocks than SMs (0-0.89)")
      ->check(CLI::Range(0.0, 0.89));
  synth->add_flag("--pageable", a->so.pageable_copies,
                  "Input copies from pageable (not pinned) memory");
  synth
      ->add_option("--exposed-comm", a->so.exposed_comm_fraction,
                   "Share of each step the all-reduce runs with no compute beside it (0-0.9)")
      ->check(CLI::Range(0.0, 0.9));
  synth->add_option("--precision", a->precision, "Math precision of GEMM kernels: bf16 or fp32")
      ->check(CLI::IsMember({"bf16", "fp32"}));
  synth->add_option("--straggler-rank", a->so.straggler_rank, "This rank's compute runs slower");
  synth
      ->add_option("--straggler-slowdown", a->so.straggler_slowdown,
                   "Slowdown factor of the straggler (default 1.3)")
      ->check(CLI::Range(1.0, 100.0));
  synth->add_option("--slow-kernel", a->so.slow_kernel,
                    "Kernels whose name contains this text run --slow-kernel-factor times longer");
  synth
      ->add_option("--slow-kernel-factor", a->so.slow_kernel_factor,
                   "Slowdown of the --slow-kernel kernels (default 1, i.e. none)")
      ->check(CLI::Range(0.1, 100.0));
  synth->add_flag("--coupled", a->so.coupled_collectives,
                  "Ranks wait for each other at collectives: each rank's NCCL kernel starts at "
                  "its arrival, all end together (implied by --late-rank, --clock-offset, "
                  "--clock-noise)");
  synth->add_option("--late-rank", a->so.late_rank,
                    "This rank reaches every collective --late after the others (its forward "
                    "pass runs longer), and the others wait for it");
  synth->add_option("--late", a->late,
                    "How late the --late-rank is, e.g. 500us, 2ms (exactly so without planted "
                    "fractions; beside them, see docs/synth.md)");
  synth->add_option("--arrival-jitter", a->jitter,
                    "Coupled ranks: each rank's arrival at each collective varies by up to this "
                    "(default 1us)");
  synth->add_option("--clock-offset", a->clock_offset,
                    "Coupled ranks: each rank's clock is off by a seeded amount up to ± this, "
                    "e.g. 50ms");
  synth->add_option("--clock-noise", a->clock_noise,
                    "Coupled ranks: each step, each rank's clock is off by a further seeded "
                    "amount up to ± this (clocks that cannot be aligned)");
  synth
      ->add_option("--runs", a->so.runs,
                   "Write this many separate runs of the job into the folder "
                   "(run<J>.rank<R>.pt.trace.json; run J starts J hours after run 0)")
      ->check(CLI::Range(1, 1000));
  synth->add_flag("--gzip", a->so.gzip, "Write gzip-compressed traces");
  synth->add_flag("--integer-timestamps", a->so.integer_timestamps,
                  "2021-style integer µs timestamps");
  synth->add_option("--seed", a->so.seed,
                    "Random seed (default 1); same options and seed → same bytes");
  return synth;
}

int RunSynth(SynthArgs& a) {
  a.so.precision = a.precision == "fp32" ? SynthPrecision::kFp32 : SynthPrecision::kBf16;
  if (!a.target_size.empty() && !ParseSize(a.target_size, &a.so.target_bytes)) {
    PrintError(Status::Error(
        StatusCode::kUsage,
        "--target-size \"" + a.target_size + "\" is not a size (hint: e.g. 100M, 1G, 5GB)"));
    return kExitBadInput;
  }
  for (auto [text, field, flag] :
       {std::tuple{&a.late, &a.so.late_ns, "--late"},
        std::tuple{&a.jitter, &a.so.arrival_jitter_ns, "--arrival-jitter"},
        std::tuple{&a.clock_offset, &a.so.clock_offset_max_ns, "--clock-offset"},
        std::tuple{&a.clock_noise, &a.so.clock_noise_ns, "--clock-noise"}}) {
    if (!text->empty() && !ParseDuration(*text, field)) {
      PrintError(Status::Error(StatusCode::kUsage,
                               std::string(flag) + " \"" + *text +
                                   "\" is not a duration (hint: e.g. 500us, 2ms, 1.5s)"));
      return kExitBadInput;
    }
  }
  if (a.so.late_rank >= 0 && a.late.empty()) {
    PrintError(Status::Error(StatusCode::kUsage,
                             "--late-rank needs --late (how late, e.g. --late 500us)"));
    return kExitBadInput;
  }
  if (a.so.ranks == 1 && a.so.runs == 1) {
    auto truth = WriteSynthTrace(a.so, 0, a.out_path);
    if (!truth.ok()) {
      PrintError(truth.status());
      return ExitCodeFor(truth.status());
    }
    std::printf("wrote %s: %d steps, %s events, %s\n", a.out_path.c_str(), truth->steps,
                render::GroupDigits(truth->events).c_str(),
                render::FormatBytes(static_cast<double>(truth->bytes_written)).c_str());
    return kExitOk;
  }
  auto truths = WriteSynthTraces(a.so, a.out_path);
  if (!truths.ok()) {
    PrintError(truths.status());
    return ExitCodeFor(truths.status());
  }
  uint64_t bytes = 0, events = 0;
  for (const SynthTruth& t : *truths) bytes += t.bytes_written, events += t.events;
  const std::string what = a.so.runs > 1 ? std::to_string(a.so.runs) + " runs of " +
                                               std::to_string(a.so.ranks) + " ranks"
                                         : std::to_string(truths->size()) + " ranks";
  std::printf("wrote %s to %s: %s events, %s\n", what.c_str(), a.out_path.c_str(),
              render::GroupDigits(events).c_str(),
              render::FormatBytes(static_cast<double>(bytes)).c_str());
  return kExitOk;
}

int Main(int argc, char** argv) {
  TuneMalloc();
  CLI::App app{
      "gpuscope: why your GPU training job under-uses the GPU, and what to change.\n"
      "analyze reads PyTorch profiler (Kineto) traces (plain or gzip, one file or a folder of\n"
      "ranks), Nsight Systems SQLite exports (nsys export --type sqlite), gpuscope run\n"
      "recordings, nvidia-smi and DCGM logs, and PyTorch CUDA memory snapshots\n"
      "(torch.cuda.memory._dump_snapshot pickles, read as plain data); map and reduce split\n"
      "a job of many ranks across machines; plan sizes a run before launch; run watches a live\n"
      "run; tune runs a training command's batch size, workers, … experiments and keeps the\n"
      "best; diff compares two runs (or two memory snapshots)."};
  app.set_version_flag("--version", std::string("gpuscope ") + GPUSCOPE_VERSION);
  app.require_subcommand(1);

  AnalyzeArgs aa;
  auto* analyze = AddAnalyzeCommand(app, &aa);

  cli::MapCliOptions map_options;
  auto* map = cli::AddMapCommand(app, &map_options);
  cli::ReduceCliOptions reduce_options;
  auto* reduce = cli::AddReduceCommand(app, &reduce_options);

  // run
  cli::RunCliOptions run_options;
  auto* run = cli::AddRunCommand(app, &run_options);

  SynthArgs synth_args;
  auto* synth = AddSynthCommand(app, &synth_args);

  gpuscope::cli::PlanCliOptions plan_options;
  auto* plan = gpuscope::cli::AddPlanCommand(app, &plan_options);

  cli::DiffCliOptions diff_options;
  auto* diff = cli::AddDiffCommand(app, &diff_options);
  cli::TuneCliOptions tune_options;
  auto* tune = cli::AddTuneCommand(app, &tune_options);
  cli::AddHelpExamples(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end here too, with exit code 0.
    if (e.get_exit_code() != 0) {
      const std::vector<std::string> args(argv + 1, argv + argc);
      if (auto why = cli::ExplainUsageError(app, args, e)) {
        PrintError(Status::Error(StatusCode::kUsage, *why));
        return kExitBadInput;
      }
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitBadInput;
  }

  if (analyze->parsed()) return RunAnalyze(aa);
  if (map->parsed()) return cli::RunMapCommand(map_options);
  if (reduce->parsed()) return cli::RunReduceCommand(reduce_options);
  if (plan->parsed()) return gpuscope::cli::RunPlanCommand(plan_options);
  if (run->parsed()) return cli::RunRunCommand(run_options);
  if (tune->parsed()) return cli::RunTuneCommand(tune_options);

  if (diff->parsed()) return cli::RunDiffCommand(diff_options);
  if (synth->parsed()) return RunSynth(synth_args);
  return kExitInternal;
}

}  // namespace

int main(int argc, char** argv) {
  gpuscope::cli::ReserveStandardStreams();
  return gpuscope::cli::CheckStdout(Main(argc, argv));
}
