#include "tune/tune.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "analyze/monitor_stats.h"
#include "analyze/steps.h"
#include "base/output_file.h"
#include "base/sanitize.h"
#include "diff/diff.h"
#include "gpuscope/ingest.h"
#include "monitor/session.h"
#include "tune/oom.h"

namespace gpuscope::tune {

namespace {

// SIGINT/SIGTERM between trials (during one, the monitor's handler takes them and says so in
// RunOutcome::stop_signal).
std::atomic<int> g_signal{0};
void OnSignal(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
}

// What a line of the results file must match to stand for a trial of this search.
std::string MetricKey(const MetricSpec& m) {
  std::string key = m.kind == MetricKind::kTraces ? "traces"
                    : m.kind == MetricKind::kStep ? "step:" + m.pattern
                                                  : "metric:" + m.pattern;
  if (m.kind != MetricKind::kTraces)
    key += m.warmup.ns > 0 ? fmt::format(" warmup:{}ms", m.warmup.ns / 1'000'000)
                           : fmt::format(" warmup:{}", m.warmup.count);
  return key;
}

// The batch size steps are multiplied by (--step, --traces): the first pow2 param.
const Param* BatchParam(const std::vector<Param>& params) {
  for (const Param& p : params)
    if (p.kind == ParamKind::kPow2) return &p;
  return nullptr;
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Clip(std::string_view s, size_t n = 300) {
  std::string out = SanitizeText(s.substr(0, n));
  if (s.size() > n) out += "…";
  return out;
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
  }
  return "a signal";
}

// Steps per second from the Kineto traces a trial wrote: the steady steps of each file (the step
// analysis's own warm-up: the first step is left out), in file order.
Measurement MeasureTraces(const std::string& dir, std::string* note) {
  std::vector<StepSpan> spans;
  auto files = ListTraceFiles(dir);
  if (!files.ok() || files->empty()) {
    *note = "no trace in " + dir +
            " (hint: the command writes torch.profiler traces into {TRACE_DIR} "
            "or $GPUSCOPE_TRACE_DIR, e.g. with torch.profiler.tensorboard_trace_handler)";
    return {};
  }
  LoadOptions load;
  load.threads = 1;
  for (const std::string& f : *files) {
    auto trace = LoadTrace(f, load);
    if (!trace.ok()) {
      *note = Clip(trace.status().message());
      continue;
    }
    const analyze::StepsResult steps = analyze::AnalyzeSteps(*trace);
    if (steps.whole_span_fallback) {
      *note = f + ": no ProfilerStep (hint: call prof.step() once per training step)";
      continue;
    }
    for (const analyze::StepBreakdown& s : steps.steps)
      if (s.steady_state) spans.push_back({s.start_ns, s.duration_ns});
  }
  return MeasureStepSpans(spans, Warmup{0, 0});
}

class Runner {
 public:
  Runner(const TuneOptions& o, TuneResult* r, LineMeter meter, ResultsFile existing,
         std::unique_ptr<ResultsWriter> writer)
      : o_(o),
        r_(r),
        meter_(std::move(meter)),
        existing_(std::move(existing)),
        writer_(std::move(writer)),
        metric_key_(MetricKey(o.metric)),
        batch_(BatchParam(o.params)),
        start_ns_(SteadyNs()) {}

  Status fatal() const { return fatal_; }

  Evaluation Evaluate(const Setting& s) {
    double sum = 0;
    int n = 0;
    for (int rep = 0; rep < o_.repeat; ++rep) {
      if (const TrialRecord* done = Done(s, rep)) {
        r_->trials.push_back(*done);
        r_->resumed.push_back(true);
        if (o_.progress)
          std::fprintf(stderr, "gpuscope tune: trial %zu · %s%s · %s (from %s)\n",
                       r_->trials.size(), SettingText(s, o_.params).c_str(),
                       RepeatText(rep).c_str(), Describe(*done).c_str(),
                       SanitizeText(o_.results_path).c_str());
      } else {
        if (const int sig = g_signal.load(); sig != 0) {
          Stop(sig);
          return {Evaluation::Kind::kStop, 0};
        }
        const int64_t left = o_.budget_ns - (SteadyNs() - start_ns_);
        if (left < o_.trial_time_ns) {
          r_->stop_reason = "budget spent";
          return {Evaluation::Kind::kStop, 0};
        }
        auto t = RunTrial(s, rep);
        if (!t.ok()) {
          fatal_ = t.status();
          return {Evaluation::Kind::kStop, 0};
        }
        if (Status w = writer_->Append(*t); !w.ok()) {
          fatal_ = w;
          return {Evaluation::Kind::kStop, 0};
        }
        r_->trials.push_back(std::move(*t));
        r_->resumed.push_back(false);
        const TrialRecord& last = r_->trials.back();
        if (o_.progress)
          std::fprintf(stderr, "gpuscope tune: trial %zu → %s · %.1f s\n", r_->trials.size(),
                       Describe(last).c_str(), last.duration_s);
        if (last.outcome == kOutcomeInterrupted) {
          Stop(stop_signal_);
          return {Evaluation::Kind::kStop, 0};
        }
      }
      const TrialRecord& t = r_->trials.back();
      if (t.outcome == kOutcomeOom) return {Evaluation::Kind::kOom, 0};
      // A failure or a trial without a throughput is not repeated: it would say the same.
      if (!HasThroughput(t.outcome)) return {Evaluation::Kind::kBad, 0};
      sum += t.throughput;
      ++n;
    }
    return {Evaluation::Kind::kOk, sum / n};
  }

 private:
  void Stop(int sig) {
    r_->stop_signal = sig;
    r_->stop_reason = std::string("interrupted (") + SignalName(sig) + ")";
  }

  std::string RepeatText(int rep) const {
    return o_.repeat > 1 ? fmt::format(" · repeat {}/{}", rep + 1, o_.repeat) : "";
  }

  std::string Describe(const TrialRecord& t) const {
    if (!HasThroughput(t.outcome))
      return t.outcome + (t.note.empty() ? "" : ": " + Clip(t.note, 160));
    return fmt::format("{} · {:.6g} {} ({} values, {} warm-up)", t.outcome, t.throughput,
                       t.unit.empty() ? "(metric)" : t.unit, t.values, t.warmup);
  }

  // The trial of the results file that stands for this one: same template, metric, params and
  // repeat, with a result (an interrupted trial is run again).
  const TrialRecord* Done(const Setting& s, int rep) const {
    for (const TrialRecord& t : existing_.records)
      if (t.command == o_.command && t.metric == metric_key_ && t.params == s && t.repeat == rep &&
          t.outcome != kOutcomeInterrupted)
        return &t;
    return nullptr;
  }

  Result<TrialRecord> RunTrial(const Setting& s, int rep) {
    const size_t number = r_->trials.size() + 1;
    TrialRecord t;
    t.command = o_.command;
    t.metric = metric_key_;
    t.params = s;
    t.repeat = rep;
    t.unit = r_->unit;
    std::string trace_dir;
    if (o_.metric.kind == MetricKind::kTraces) {
      trace_dir = o_.traces_root + "/trial-" + std::to_string(number);
      std::error_code ec;
      std::filesystem::remove_all(trace_dir, ec);  // a trial of an earlier, interrupted run
      std::filesystem::create_directories(trace_dir, ec);
      if (ec)
        return Status::Error(StatusCode::kIoError,
                             "cannot make the trace folder " + trace_dir + ": " + ec.message());
    }
    monitor::RunOptions ro;
    ro.command = Substitute(o_.command, s, trace_dir);
    ro.interval_ns = o_.interval_ns;
    ro.nvml_library = o_.nvml_library;
    ro.extra_env = SettingEnvironment(s, trace_dir);
    // Python block-buffers stdout into a pipe: without this its metric lines would come in bursts
    // (or only at exit), with the times of the bursts. The user's own setting stands.
    if (std::getenv("PYTHONUNBUFFERED") == nullptr) ro.extra_env.push_back("PYTHONUNBUFFERED=1");
    ro.time_limit_ns = o_.trial_time_ns;
    ro.detached = true;
    ro.quiet = true;
    ro.echo_stdout_fd = ro.echo_stderr_fd = o_.show_output ? STDERR_FILENO : -1;
    LineMeter meter = meter_;
    const bool lines = o_.metric.kind != MetricKind::kTraces;
    const OomPattern* oom = nullptr;
    std::string oom_line, last_error_line;
    const int64_t t0 = SteadyNs();
    ro.on_line = [&](int stream, std::string_view line, int64_t now) {
      if (lines) meter.OnLine(line, now - t0);
      // The most specific message wins (the table's order): a traceback may show the raise
      // statement's source ("OutOfMemoryError") before the message itself.
      if (const OomPattern* p = MatchOom(line); p != nullptr && (oom == nullptr || p < oom))
        oom = p, oom_line = Clip(line);
      if (stream == 2 && line.find_first_not_of(" \t") != std::string_view::npos)
        last_error_line = Clip(line);
    };
    if (o_.progress)
      std::fprintf(stderr, "gpuscope tune: trial %zu · %s%s · %s\n", number,
                   SettingText(s, o_.params).c_str(), RepeatText(rep).c_str(),
                   SanitizeText(ShellLine(ro.command)).c_str());
    t.started_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    GPUSCOPE_TRY(out, monitor::RunAndMonitor(ro));
    t.duration_s = static_cast<double>(SteadyNs() - t0) / 1e9;
    t.exit_code = out->exit_code;

    const analyze::MonitorStats st = analyze::ComputeMonitorStats(out->recording);
    if (!st.has_gpu && !told_no_gpu_) {
      r_->notes.push_back(
          "no GPU metrics (" +
          (st.gpu_unavailable.empty() ? std::string("no GPU samples") : st.gpu_unavailable) +
          "): GPU use and memory are n/a, out of memory is told by the messages only");
      told_no_gpu_ = true;
    }
    t.gpu_util_mean_pct = st.util_mean_pct;
    for (const analyze::MonitorGpu& g : st.gpus)
      if (g.mem_used_peak_bytes &&
          (!t.gpu_mem_peak_bytes || *g.mem_used_peak_bytes > *t.gpu_mem_peak_bytes)) {
        t.gpu_mem_peak_bytes = g.mem_used_peak_bytes;
        t.gpu_mem_total_bytes = g.mem_total_bytes;
      }
    if (st.cpu) t.tree_cpu_mean_pct = st.cpu->tree_mean_pct;

    std::string trace_note;
    Measurement m = lines ? meter.Measure() : MeasureTraces(trace_dir, &trace_note);
    if (o_.metric.kind != MetricKind::kRegex && batch_ != nullptr)
      m.Scale(static_cast<double>(std::stoll(s.at(batch_->name))));
    t.values = static_cast<int64_t>(m.seen);
    t.warmup = static_cast<int64_t>(m.warmup);

    const bool at_limit = t.gpu_mem_peak_bytes && t.gpu_mem_total_bytes &&
                          *t.gpu_mem_total_bytes > 0 &&
                          static_cast<double>(*t.gpu_mem_peak_bytes) >=
                              kMemoryAtLimitShare * static_cast<double>(*t.gpu_mem_total_bytes);
    if (out->stop_signal != 0) {
      stop_signal_ = out->stop_signal;
      t.outcome = kOutcomeInterrupted;
      t.note = std::string("stopped by ") + SignalName(out->stop_signal) + ": not a result";
    } else if (oom != nullptr) {
      t.outcome = kOutcomeOom;
      t.oom_framework = oom->framework;
      t.note = oom_line;
    } else if (out->exit_code != 0 && !out->timed_out && at_limit) {
      t.outcome = kOutcomeOom;
      t.oom_framework = "GPU memory at its limit";
      t.note =
          fmt::format("failed (exit {}) with GPU memory at {:.1f} of {:.1f} GB", out->exit_code,
                      *t.gpu_mem_peak_bytes / 1e9, *t.gpu_mem_total_bytes / 1e9);
    } else if (out->exit_code != 0 && !out->timed_out) {
      t.outcome = kOutcomeFailed;
      t.note =
          last_error_line.empty() ? fmt::format("exit code {}", out->exit_code) : last_error_line;
    } else if (!m.ok) {
      t.outcome = kOutcomeNoMetric;
      t.note = NoMetricHint(m, meter, trace_note);
    } else {
      t.outcome = out->timed_out ? kOutcomeTimeout : kOutcomeOk;
      t.throughput = m.value;
      t.samples = std::move(m.samples);
    }
    return t;
  }

  std::string NoMetricHint(const Measurement& m, const LineMeter& meter,
                           const std::string& trace_note) const {
    if (o_.metric.kind == MetricKind::kTraces) return trace_note;
    const bool step = o_.metric.kind == MetricKind::kStep;
    std::string s;
    if (m.seen == 0)
      s = fmt::format("no line matched {} '{}'", step ? "--step" : "--metric", o_.metric.pattern);
    else
      s = fmt::format("{} {} matched, {} of them warm-up{}", m.seen, step ? "lines" : "values",
                      m.warmup, step ? " (a rate needs 2 after it)" : "");
    if (meter.unparsed() > 0)
      s += fmt::format("; {} matches whose first group is not a number", meter.unparsed());
    return s +
           " (hint: does the command print it, and flush? gpuscope sets PYTHONUNBUFFERED=1; "
           "other programs may buffer a pipe; a longer --trial-time or a smaller --warmup)";
  }

  static std::string ShellLine(const std::vector<std::string>& argv) {
    std::string out;
    for (const std::string& a : argv) {
      const bool plain = !a.empty() && a.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789_-+=./:,@%") == std::string::npos;
      std::string w = "'";
      for (char c : a) w += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += (out.empty() ? "" : " ") + (plain ? a : w + "'");
    }
    return out;
  }

  const TuneOptions& o_;
  TuneResult* r_;
  const LineMeter meter_;
  const ResultsFile existing_;
  std::unique_ptr<ResultsWriter> writer_;
  const std::string metric_key_;
  const Param* batch_;
  const int64_t start_ns_;
  bool told_no_gpu_ = false;
  int stop_signal_ = 0;
  Status fatal_;
};

// Installs OnSignal for SIGINT and SIGTERM (unless ignored at start, as under nohup) for the
// life of the object; the old dispositions come back after.
class SignalScope {
 public:
  SignalScope() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < 2; ++i) {
      sigaction(kSignals[i], nullptr, &old_[i]);
      if (old_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &sa, nullptr), set_[i] = true;
    }
  }
  ~SignalScope() {
    for (size_t i = 0; i < 2; ++i)
      if (set_[i]) sigaction(kSignals[i], &old_[i], nullptr);
  }

 private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  struct sigaction old_[2]{};
  bool set_[2] = {false, false};
};

}  // namespace

Status CheckOptions(const TuneOptions& o) {
  if (o.command.empty())
    return Status::Error(StatusCode::kUsage,
                         "no command to tune (hint: gpuscope tune --param BATCH=pow2:8..256 "
                         "--metric '([0-9.]+) samples/s' -- python train.py --batch-size {BATCH})");
  GPUSCOPE_RETURN_IF_ERROR(CheckParams(o.params));
  GPUSCOPE_RETURN_IF_ERROR(
      CheckPlaceholders(o.command, o.params, o.metric.kind == MetricKind::kTraces));
  if (o.metric.kind != MetricKind::kTraces)
    if (auto m = LineMeter::Make(o.metric); !m.ok()) return m.status();
  if (o.repeat < 1 || o.repeat > 1000)
    return Status::Error(StatusCode::kUsage, "--repeat must be from 1 to 1000");
  if (o.budget_ns < o.trial_time_ns)
    return Status::Error(StatusCode::kUsage,
                         "--budget is shorter than one --trial-time: no trial could start");
  return Status::Ok();
}

Result<TuneResult> RunTune(const TuneOptions& options) {
  GPUSCOPE_RETURN_IF_ERROR(CheckOptions(options));
  TuneResult result;
  result.options = options;
  const bool scaled = options.metric.kind != MetricKind::kRegex;
  result.unit = !scaled ? "" : BatchParam(options.params) ? "samples/s" : "steps/s";
  if (options.metric.kind == MetricKind::kTraces && result.options.traces_root.empty())
    result.options.traces_root = options.results_path + ".traces";
  if (options.metric.kind == MetricKind::kTraces)  // made by the first trial: checked before it
    GPUSCOPE_RETURN_IF_ERROR(CheckOutputFolder(result.options.traces_root, "--traces-dir"));
  GPUSCOPE_TRY(existing, LoadResults(options.results_path));
  result.skipped_lines = existing->skipped;
  for (const std::string& line : result.skipped_lines)
    std::fprintf(stderr, "gpuscope tune: warning: %s\n", line.c_str());
  GPUSCOPE_TRY(writer, ResultsWriter::Open(options.results_path, existing->ends_mid_line));
  LineMeter meter = *LineMeter::Make(options.metric.kind == MetricKind::kTraces
                                         ? MetricSpec{MetricKind::kStep, ".", {}}
                                         : options.metric);
  const int64_t start = SteadyNs();
  SignalScope signals;
  Runner runner(result.options, &result, std::move(meter), std::move(*existing),
                std::move(*writer));
  SearchOptions so;
  so.plateau = options.plateau;
  result.search = Search(options.params, so, [&](const Setting& s) { return runner.Evaluate(s); });
  result.elapsed_ns = SteadyNs() - start;
  if (!runner.fatal().ok()) return runner.fatal();
  // A signal that came after the last trial ended still ends tune as interrupted.
  if (result.stop_signal == 0 && g_signal.load() != 0) {
    result.stop_signal = g_signal.load();
    result.stop_reason = std::string("interrupted (") + SignalName(result.stop_signal) + ")";
  }
  Summarise(&result);
  return result;
}

void Summarise(TuneResult* r) {
  r->settings.clear();
  for (size_t i = 0; i < r->trials.size(); ++i) {
    const TrialRecord& t = r->trials[i];
    SettingSummary* s = nullptr;
    for (SettingSummary& x : r->settings)
      if (x.setting == t.params) s = &x;
    if (s == nullptr) {
      r->settings.push_back({t.params, {}, std::string(kOutcomeOk), false, 0, {}, 0});
      s = &r->settings.back();
    }
    s->trials.push_back(i);
    if (t.outcome == kOutcomeInterrupted) continue;  // not a result
    if (!HasThroughput(t.outcome)) {
      if (s->outcome == kOutcomeOk) s->outcome = t.outcome;
      continue;
    }
    s->samples.insert(s->samples.end(), t.samples.begin(), t.samples.end());
  }
  for (SettingSummary& s : r->settings) {
    std::vector<double> throughputs;
    for (size_t i : s.trials)
      if (HasThroughput(r->trials[i].outcome)) throughputs.push_back(r->trials[i].throughput);
    const size_t n = throughputs.size();
    s.has_throughput = n > 0 && s.outcome == kOutcomeOk;
    if (n == 0 && s.outcome == kOutcomeOk) s.outcome = kOutcomeInterrupted;  // no trial ended
    if (n > 0) s.throughput = MeanOf(throughputs);
    if (s.samples.size() >= 2) {
      const double mean = MeanOf(s.samples);
      double var = 0;  // inf for values near DBL_MAX: the spread is then n/a
      for (double x : s.samples) var += (x - mean) * (x - mean);
      s.spread = std::sqrt(var / static_cast<double>(s.samples.size() - 1));
    }
  }
  auto find = [&](const Setting& s) -> const SettingSummary* {
    for (const SettingSummary& x : r->settings)
      if (x.setting == s) return &x;
    return nullptr;
  };
  r->gain_share = 0;
  r->p_value = -1;
  r->significant = r->enough_samples = false;
  if (!r->search.have_best) return;
  const SettingSummary* first = find(r->search.first);
  const SettingSummary* best = find(r->search.best);
  if (first == nullptr || best == nullptr || first->throughput <= 0) return;
  r->gain_share = best->throughput / first->throughput - 1;
  if (first == best || first->samples.empty() || best->samples.empty()) return;
  // U: pairs in which the best's sample is higher (ties ½) — the statistic diff uses.
  double u = 0;
  for (double b : best->samples)
    for (double f : first->samples) u += b > f ? 1.0 : b == f ? 0.5 : 0.0;
  const size_t nb = best->samples.size(), nf = first->samples.size();
  r->p_value = diff::MannWhitneyP(nb, nf, u);
  r->enough_samples = diff::MannWhitneyP(nb, nf, 0) < diff::kNoiseAlpha;
  r->significant = r->enough_samples && r->p_value < diff::kNoiseAlpha;
}

}  // namespace gpuscope::tune
