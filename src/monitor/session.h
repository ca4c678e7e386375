// `gpuscope run -- CMD`: starts the command, samples GPUs (NVML) and the command's process tree
// (/proc) every interval, shows a live line, records, and returns what it saw.
//
// Signals and processes (docs/monitor.md, "Signals and the command's processes"): in the
// foreground of a terminal the command shares gpuscope's process group; elsewhere it gets its own.
// SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 sent to gpuscope by another process are forwarded
// to the whole job — the command's group, and every process of its tree outside it — not only to
// the command. Terminal-typed signals already reached a command sharing our group and are not
// sent twice. After a forwarded stopping signal ended the command, the rest of its group gets 5 s,
// then SIGKILL. A second SIGINT kills the whole job. A guard process ends the job if gpuscope is
// killed. A signal ignored when gpuscope starts (SIGHUP under nohup) stays ignored, for the
// command too. The command's stdin, stdout and stderr are ours, untouched; gpuscope writes only
// to stderr.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/status.h"
#include "model/monitor_samples.h"

namespace gpuscope::monitor {

// Samples kept in memory for the verdict; beyond this, every other one is dropped (the means the
// verdict uses stay unbiased; the --record file keeps every sample). 36,000 = 1 h at 10 Hz.
inline constexpr size_t kMaxSamplesInMemory = 36'000;

struct RunOptions {
  std::vector<std::string> command;
  int64_t interval_ns = 100'000'000;  // 100 ms
  std::string record_path;            // empty: no record
  std::string tensorboard_dir;        // empty: no TensorBoard
  std::string nvml_library;           // empty: $GPUSCOPE_NVML_LIBRARY or libnvidia-ml.so.1
  bool live = false;                  // show the live line on stderr

  // For `gpuscope tune`'s trials; their defaults leave `gpuscope run` as it is.
  // "NAME=VALUE" entries set in the command's environment (replacing a variable of that name).
  std::vector<std::string> extra_env;
  // > 0: this long after the start the job is ended as a forwarded SIGTERM ends it (SIGTERM to
  // the whole job, kStopGraceNs, then SIGKILL) and RunOutcome::timed_out is set.
  int64_t time_limit_ns = 0;
  // When set, the command's stdout and stderr are pipes: their bytes are copied as they come to
  // echo_stdout_fd / echo_stderr_fd (-1: not shown), and each line is handed over without its
  // end — stream 1 or 2, the text ('\r' ends a line too: progress bars redraw with it; a line is
  // cut at kMaxLineBytes), and the steady-clock ns when it was read.
  std::function<void(int stream, std::string_view line, int64_t steady_ns)> on_line;
  int echo_stdout_fd = STDOUT_FILENO;
  int echo_stderr_fd = STDERR_FILENO;
  // The command always gets a process group of its own and /dev/null as stdin, also in the
  // foreground of a terminal: Ctrl-C reaches gpuscope only, which ends the job as a whole.
  bool detached = false;
  bool quiet = false;  // no "no GPU metrics" line on stderr
};

// A line handed to RunOptions::on_line holds at most this many bytes (the rest is dropped).
inline constexpr size_t kMaxLineBytes = 64 * 1024;

struct RunOutcome {
  Recording recording;
  int exit_code = 0;  // the command's, or 128+signal when a signal ended it, 127 if not started
  bool record_failed = false;  // writing --record failed (warned on stderr, noted in the recording)
  bool timed_out = false;      // RunOptions::time_limit_ns ended the job
  // SIGINT, SIGTERM, SIGHUP or SIGQUIT that gpuscope received (not from the command) while the
  // command ran, forwarded to the job; 0 if none. The first one counts.
  int stop_signal = 0;
};

// Fails (usage/IO) only before the command starts, e.g. an unwritable --record file or a command
// that cannot be executed. Once started, problems become notes in the recording.
Result<RunOutcome> RunAndMonitor(const RunOptions& options);

// Keeps samples 0, 2, 4, … in place (the in-memory downsampling of long runs).
void DropEveryOtherSample(std::vector<Sample>* samples);

// The sampling interval's bounds: below 10 ms the sampling itself costs CPU time the run would
// see; above 1 h a run would have hardly a sample.
inline constexpr int64_t kMinIntervalNs = 10'000'000;
inline constexpr int64_t kMaxIntervalNs = 3'600'000'000'000;
// "100ms", "0.5s", "2s", "5m", "1h" → ns (base/numbers.h: ParseDurationNs, the parser of every
// duration flag); nullopt for anything else or outside 10 ms … 1 h.
std::optional<int64_t> ParseInterval(const std::string& text);

}  // namespace gpuscope::monitor
