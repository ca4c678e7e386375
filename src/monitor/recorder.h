// Writes a monitor run to a file as it happens, in one of three documented formats
// (docs/monitor.md); src/ingest/recording/ reads all three back:
//   *.jsonl (default)  one JSON object per line: a header, one line per sample, an end line;
//   *.csv              long ("tidy") CSV: time_s,unix_ns,source,id,metric,value — one row per
//   value,
//                      with "run" rows for the header and end;
//   *.json             Chrome-trace JSON with counter ("ph":"C") tracks at absolute unix µs, to
//                      open in Perfetto next to a profiler trace of the same run, plus the JSONL
//                      objects as metadata events ("ph":"M", which viewers ignore) to read back.
// Every format is flushed about once a second, so a crashed or killed run still leaves its data.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "gpuscope/status.h"
#include "model/monitor_samples.h"

namespace gpuscope::monitor {

enum class RecordFormat : uint8_t { kJsonl, kCsv, kChromeTrace };

// From the file name: .csv → CSV, .json → Chrome trace, anything else → JSONL.
RecordFormat RecordFormatFor(const std::string& path);

class Recorder {
 public:
  static Result<std::unique_ptr<Recorder>> Open(const std::string& path);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // `meta` is the recording without samples: command, interval, GPUs, start time. The header is
  // flushed at once, so a file that cannot take data (a full disk) fails before the first sample.
  void WriteHeader(const Recording& meta);
  void WriteSample(const Sample& sample);
  // Writes the end (exit code, notes) and closes; returns an error if any write failed.
  Status Finish(const Recording& meta);

  // True once a write or flush failed (the file then gets nothing more), with why:
  // "writing run.jsonl failed: No space left on device". The caller warns as soon as it sees it.
  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }

 private:
  Recorder() = default;
  void Put(const std::string& text);
  void Flush();
  void Fail(int err);
  std::string error_;
  std::string path_;
  RecordFormat format_ = RecordFormat::kJsonl;
  std::FILE* file_ = nullptr;
  int64_t start_ns_ = 0;
  int64_t last_flush_ns_ = 0;
  bool first_event_ = true;
  bool failed_ = false;
};

// One sample as a JSONL line (no newline); exposed for tests and the golden format doc.
std::string SampleToJsonLine(const Sample& sample);

// Rounds a sample's measured values to the decimals a record keeps (2 for utilisations, 3 for
// watts and CPU %, whole MHz, °C and bytes/s), as taken: what `run` reports from memory is then
// what `analyze` of its record reports, in every format (a mean of unrounded values could print
// one digit apart from the same mean of the values read back).
void RoundAsRecorded(Sample* sample);

}  // namespace gpuscope::monitor
