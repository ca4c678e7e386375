// The results file of `gpuscope tune` (default gpuscope-tune.jsonl): one JSON object per line,
// one line per trial, appended as each trial ends — written whole with one write() and flushed to
// disk (fdatasync) before the next trial starts, so a kill at any moment leaves every finished
// trial readable. A rerun with the same file resumes: a trial whose command template, metric,
// params and repeat number are in the file (any outcome but "interrupted") is not run again.
//
// Reading is tolerant: a line that is not a trial record (a partly written last line after a
// power cut, an edit) is reported as FILE:LINE with the reason and skipped — in a file that is
// ours. A file that is not (no record, a foreign line; binary at the start) is refused.
// docs/tune.md has the fields.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/status.h"
#include "tune/params.h"

namespace gpuscope::tune {

// Outcomes of a trial, as written.
inline constexpr std::string_view kOutcomeOk = "ok";            // the command ended by itself
inline constexpr std::string_view kOutcomeTimeout = "timeout";  // ended at --trial-time; measured
inline constexpr std::string_view kOutcomeOom = "oom";          // out of device memory
inline constexpr std::string_view kOutcomeFailed = "failed";    // exit code ≠ 0, not OOM
inline constexpr std::string_view kOutcomeNoMetric = "no_metric";  // ran, but no throughput
inline constexpr std::string_view kOutcomeInterrupted =
    "interrupted";  // Ctrl-C / SIGTERM: no result

// True for an outcome with a throughput (ok, timeout).
bool HasThroughput(std::string_view outcome);

struct TrialRecord {
  std::vector<std::string> command;  // the template, {NAME} placeholders as given
  std::string metric;                // "metric:REGEX", "step:REGEX" or "traces", + " warmup:…"
  Setting params;
  int repeat = 0;  // 0 … --repeat − 1
  std::string outcome;
  int exit_code = 0;                        // the command's; 128+N when signal N ended it
  double throughput = 0;                    // ok / timeout
  std::string unit;                         // "samples/s", "steps/s", or "" (the metric's own)
  std::vector<double> samples;              // per value / window / step, for the significance test
  int64_t values = 0;                       // values, lines or steps seen
  int64_t warmup = 0;                       // of them left out
  double duration_s = 0;                    // the trial's wall time
  std::optional<double> gpu_util_mean_pct;  // steady mean over the GPUs (NVML)
  std::optional<uint64_t> gpu_mem_peak_bytes;   // the largest peak of a GPU
  std::optional<uint64_t> gpu_mem_total_bytes;  // that GPU's memory
  std::optional<double> tree_cpu_mean_pct;      // the command's process tree, % of one core
  std::string oom_framework;  // who said "out of memory" ("PyTorch (CUDA)"; "GPU memory at its
                              // limit" when only the samples tell)
  std::string note;           // the line that said it, the last error line, a hint
  int64_t started_unix_ms = 0;
};

// One line of JSON (no newline).
std::string TrialRecordJson(const TrialRecord& record);
// The record of one line; kInvalidInput with the reason.
Result<TrialRecord> ParseTrialRecord(std::string_view line);

// Resume key: same command template, metric, params and repeat.
bool SameTrial(const TrialRecord& a, const TrialRecord& b);

struct ResultsFile {
  std::vector<TrialRecord> records;  // in file order
  std::vector<std::string> skipped;  // "FILE:LINE: reason" per line that is not a record
  bool ends_mid_line = false;        // the last line has no newline (a cut write)
};

// Parses a whole file's text; `path` names it in the skipped lines.
ResultsFile ReadResults(std::string_view text, const std::string& path);
// Whether `text` (parsed as `parsed`) is a file tune may append to: empty, or holding at least
// one trial record, or only lines that begin like one (writes cut before the first record was
// whole). Anything else — a trace, gzip or other binary bytes at the start, another tool's JSON
// lines — is kInvalidInput naming the file, the first foreign line and its byte offset, with a
// hint: appending would damage it.
Status CheckResultsFileIsOurs(std::string_view text, const ResultsFile& parsed,
                              const std::string& path);
// Reads the file; a file that does not exist is empty (a first run). A file that is not ours
// (CheckResultsFileIsOurs) is an error, before any trial runs.
Result<ResultsFile> LoadResults(const std::string& path);

// Appends records to the results file, each line whole and on disk before Append returns.
class ResultsWriter {
 public:
  ResultsWriter() = default;
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;
  ~ResultsWriter();
  // `starts_mid_line`: the file ends without a newline; one is written first, so that the cut
  // line stays one bad line and the next record starts a line of its own.
  static Result<std::unique_ptr<ResultsWriter>> Open(const std::string& path, bool starts_mid_line);
  Status Append(const TrialRecord& record);

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace gpuscope::tune
