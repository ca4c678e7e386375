// Reads nvidia-smi logs into the monitor's sample series, so `gpuscope analyze LOG` gives the
// same verdict as a live run (GPU part only: nvidia-smi does not see the job's processes' CPU).
//
// Accepted (docs/monitor.md has examples):
//  * `nvidia-smi --query-gpu=FIELDS --format=csv[,nounits] [-l S | -lms MS]`: any subset and order
//    of the fields below, units in the header ("memory.used [MiB]") or after each value ("22000
//    MiB"), repeated headers, several GPUs (one row per GPU per tick).
//    Fields used: timestamp, index, pci.bus_id, uuid, name, utilization.gpu,
//    utilization.memory, memory.used, memory.total, power.draw (or power.draw.instant /
//    power.draw.average), power.limit / enforced.power.limit, clocks.sm / clocks.current.sm,
//    temperature.gpu, clocks_throttle_reasons.active / clocks_event_reasons.active.
//  * The same with `--format=csv,noheader`: the field list passed as `fields` (analyze
//    --smi-fields) stands for the header; without it the columns are recognised from the values
//    of the first rows (up to 32): a timestamp, a bus id or UUID, the first text (name), the
//    first bare integer (index) and the second (temperature.gpu), the first and second `%`
//    (utilization.gpu, .memory), of two `MiB` the larger is memory.total, of two `W` the larger
//    is power.limit, the first `MHz` (clocks.sm), a hex mask (clocks_event_reasons). A note says
//    which column was taken for what. `csv,noheader,nounits` (bare numbers) cannot be told apart
//    and is an error asking for --smi-fields.
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
// (a "YYYY/MM/DD HH:MM:SS.mmm" timestamp, "43 %", "22000 MiB", "120.50 W", "[N/A]", a bus id, …)
// with no header line.
NvidiaSmiFormat DetectNvidiaSmiLog(std::string_view head);

// Reads a log line by line from `source`, never holding the text whole; `name` labels messages.
// A line longer than `max_line_bytes` is an error.
Result<monitor::Recording> ReadNvidiaSmiLog(io::ByteSource& source, const std::string& name,
                                            size_t max_line_bytes = kMaxElementBytes);
// The same, with the --query-gpu field list of a headerless log ("timestamp,index,
// utilization.gpu [%],…", units optional); empty: recognised from the values.
Result<monitor::Recording> ReadNvidiaSmiLogWithFields(io::ByteSource& source,
                                                      const std::string& name,
                                                      size_t max_line_bytes,
                                                      std::string_view fields);
// The same from text in memory (tests, fuzzing).
Result<monitor::Recording> ParseNvidiaSmiLog(std::string_view text, const std::string& name,
                                             std::string_view fields = {});

}  // namespace gpuscope::ingest
