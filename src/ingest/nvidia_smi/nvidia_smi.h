// Reads nvidia-smi logs into the monitor's sample series, so `gpuscope analyze LOG` gives the
// same verdict as a live run (GPU part only: nvidia-smi does not see the job's processes' CPU).
//
// Accepted (docs/monitor.md has examples):
//  * `nvidia-smi --query-gpu=FIELDS --format=csv[,nounits] [-l S | -lms MS]`: any subset and order
//    of the fields below, units in the header ("memory.used [MiB]") or after each value ("22000
//    MiB"), repeated headers, several GPUs (one row per GPU per tick). The header is required:
//    without it (`--format=csv,noheader`) the columns cannot be told apart (two % columns, two MiB
//    columns, two W columns, in the order the user queried them), so such a log is recognised
//    and refused with a hint to keep the header, rather than read with a guessed column order.
//    Fields used: timestamp, index, pci.bus_id, uuid, name, utilization.gpu,
//    utilization.memory, memory.used, memory.total, power.draw (or power.draw.instant /
//    power.draw.average), power.limit / enforced.power.limit, clocks.sm / clocks.current.sm,
//    temperature.gpu, clocks_throttle_reasons.active / clocks_event_reasons.active.
//  * `nvidia-smi dmon [-s pucvmet] [-o DT]`: the "# gpu pwr gtemp …" header (repeated every
//    screen), "-" for a missing value, optional Date/Time columns.
// A line that does not fit (wrong field count, a number that is not one, a value out of range —
// utilisation outside 0–100 %, negative power, memory used above total —, a bad timestamp) is
// counted and skipped; the report shows the count and the first few with FILE:LINE. GPU names are
// cleaned of control characters (base/sanitize.h) before anything prints them.
#pragma once

#include <string>
#include <string_view>

#include "gpuscope/ingest.h"
#include "gpuscope/status.h"
#include "io/byte_source.h"
#include "model/monitor_samples.h"

namespace gpuscope::ingest {

enum class NvidiaSmiFormat : uint8_t { kNone, kCsvQuery, kDmon, kCsvNoHeader };

// Sniffs the first bytes of a file (decompressed). kCsvNoHeader: rows of nvidia-smi query values
// (a "YYYY/MM/DD HH:MM:SS.mmm" timestamp, "43 %", "22000 MiB", "120.50 W", "[N/A]", …) with no
// header line; the reader refuses them with a hint.
NvidiaSmiFormat DetectNvidiaSmiLog(std::string_view head);

// Reads a log line by line from `source`, never holding the text whole; `name` labels messages.
// A line longer than `max_line_bytes` is an error.
Result<monitor::Recording> ReadNvidiaSmiLog(io::ByteSource& source, const std::string& name,
                                            size_t max_line_bytes = kMaxElementBytes);
// The same from text in memory (tests, fuzzing).
Result<monitor::Recording> ParseNvidiaSmiLog(std::string_view text, const std::string& name);

}  // namespace gpuscope::ingest
