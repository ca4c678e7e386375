// Reads nvidia-smi logs into the monitor's sample series, so `gpuscope analyze LOG` gives the
// same verdict as a live run (GPU part only: nvidia-smi does not see the job's processes' CPU).
//
// Accepted (docs/monitor.md has examples):
//  * `nvidia-smi --query-gpu=FIELDS --format=csv[,nounits] [-l S | -lms MS]`: any subset and order
//    of the fields below, units in the header ("memory.used [MiB]") or after each value ("22000
//    MiB"), repeated headers, several GPUs (one row per GPU per tick). The header is required
//    (noheader output cannot be told apart from any CSV).
//    Fields used: timestamp, index, pci.bus_id, uuid, name, utilization.gpu,
//    utilization.memory, memory.used, memory.total, power.draw (or power.draw.instant /
//    power.draw.average), power.limit / enforced.power.limit, clocks.sm / clocks.current.sm,
//    temperature.gpu, clocks_throttle_reasons.active / clocks_event_reasons.active.
//  * `nvidia-smi dmon [-s pucvmet] [-o DT]`: the "# gpu pwr gtemp …" header (repeated every
//    screen), "-" for a missing value, optional Date/Time columns.
// A line that does not fit (wrong field count, a number that is not one, a bad timestamp) is
// counted and skipped; the report shows the count and the first few with FILE:LINE.
#pragma once

#include <string>

#include "gpuscope/status.h"
#include "monitor/samples.h"

namespace gpuscope::monitor {

enum class NvidiaSmiFormat : uint8_t { kNone, kCsvQuery, kDmon };

// Sniffs the first bytes of a file.
NvidiaSmiFormat DetectNvidiaSmiLog(const std::string& head);

Result<Recording> ParseNvidiaSmiLog(const std::string& text, const std::string& path);
Result<Recording> ReadNvidiaSmiLog(const std::string& path);

}  // namespace gpuscope::monitor
