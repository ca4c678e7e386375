// Reads back the three formats `gpuscope run --record FILE` writes (src/monitor/recorder.cc,
// docs/monitor.md), so `gpuscope analyze FILE` gives the verdict `run` printed:
//   *.jsonl  one JSON object per line: a header, one line per sample, an end line;
//   *.csv    long CSV time_s,unix_ns,source,id,metric,value; rows with source "run" carry the
//            header and end (command words, GPU names, exit code, notes);
//   *.json   Chrome-trace JSON: counter events for viewers, plus "gpuscope_header",
//            "gpuscope_sample" and "gpuscope_end" metadata events ("ph":"M") whose args are the
//            JSONL objects; the reader uses those and ignores the counters.
// All three are read line by line (the writer puts one record on a line), in bounded memory.
//
// Bad lines are counted (Recording::malformed_lines) and skipped, as are samples with a value
// out of range (ingest/common/sample_checks.h). A recording without its end (gpuscope killed by
// SIGKILL, a full disk) is read up to where it stops, with a note saying it was cut short; an
// incomplete last line is part of the cut, not a malformed line. Every string (command, GPU and
// process names, notes) is cleaned of control characters (base/sanitize.h).
#pragma once

#include <string>
#include <string_view>

#include "gpuscope/ingest.h"
#include "gpuscope/status.h"
#include "io/byte_source.h"
#include "model/monitor_samples.h"

namespace gpuscope::ingest {

// Sniffers over the first bytes of a file (decompressed).
bool LooksLikeJsonlRecording(std::string_view head);
bool LooksLikeCsvRecording(std::string_view head);
bool LooksLikeChromeTraceRecording(std::string_view head);

Result<monitor::Recording> ReadJsonlRecording(io::ByteSource& source, const std::string& name,
                                              size_t max_line_bytes = kMaxElementBytes);
Result<monitor::Recording> ReadCsvRecording(io::ByteSource& source, const std::string& name,
                                            size_t max_line_bytes = kMaxElementBytes);
Result<monitor::Recording> ReadChromeTraceRecording(io::ByteSource& source, const std::string& name,
                                                    size_t max_line_bytes = kMaxElementBytes);

// The JSONL reader over text in memory (tests, fuzzing).
Result<monitor::Recording> ParseJsonlRecording(std::string_view text, const std::string& name);

}  // namespace gpuscope::ingest
