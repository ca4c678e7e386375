// Reads DCGM logs into the monitor's sample series (docs/monitor.md has examples):
//  * `dcgmi dmon -e FIELD_IDS [-d MS]`: a "#Entity  SMACT  SMOCC  TENSO  DRAMA …" header (field
//    tags, repeated every screen), an "ID" units line, rows "GPU 0  0.512  0.301 …" ("N/A" is
//    missing). dcgmi prints no time: rows are one tick apart, a tick when a GPU repeats, assumed
//    1 s (dcgmi's default -d 1000; noted). Rows of other entities (GPU-I, GPU-CI, …) are left out
//    and counted in a note.
//  * dcgm-exporter's Prometheus text (`curl host:9400/metrics`), scrapes appended to one file:
//    `DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="…",modelName="…",…} 0.51 [TIMESTAMP_MS]`. A sample's
//    time is its Prometheus timestamp (unix ms) when it has one, else that of the last
//    `# timestamp T` comment line above it (unix seconds, or ms when T > 1e11: write it with
//    `echo "# timestamp $(date +%s.%N)"` before each scrape), else scrapes are told apart by a
//    metric of a GPU that repeats and assumed 1 s apart (noted).
// Metrics used (DCGM field id, dmon tag, exporter name): 203 GPUTL DCGM_FI_DEV_GPU_UTIL (%),
// 1001 GRACT DCGM_FI_PROF_GR_ENGINE_ACTIVE (ratio; the utilisation when GPUTL is absent), 1002
// SMACT, 1003 SMOCC, 1004 TENSO (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE), 1005 DRAMA (ratios 0–1 → %),
// 204 MCUTL DCGM_FI_DEV_MEM_COPY_UTIL (%), 252 FBUSD / 251 FBFRE / 250 FBTTL DCGM_FI_DEV_FB_USED
// / _FREE / _TOTAL (MiB; total = used + free without FBTTL), 155 POWER DCGM_FI_DEV_POWER_USAGE
// (W), 160 PMLMT DCGM_FI_DEV_POWER_MGMT_LIMIT (W), 156 TOTEC
// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ → J), 150 GTEMP DCGM_FI_DEV_GPU_TEMP (°C), 100 SMCLK
// DCGM_FI_DEV_SM_CLOCK (MHz). Others are ignored. A value that is not a number or out of range
// (ingest/common/sample_checks.h) makes its line malformed: counted, skipped, the first three
// shown as FILE:LINE: why.
#pragma once

#include <string>
#include <string_view>

#include "gpuscope/ingest.h"
#include "gpuscope/status.h"
#include "io/byte_source.h"
#include "model/monitor_samples.h"

namespace gpuscope::ingest {

// The first bytes (decompressed) look like `dcgmi dmon` output.
bool LooksLikeDcgmiDmon(std::string_view head);
// The first bytes look like dcgm-exporter's Prometheus text.
bool LooksLikeDcgmExporter(std::string_view head);

Result<monitor::Recording> ReadDcgmiDmon(io::ByteSource& source, const std::string& name,
                                         size_t max_line_bytes = kMaxElementBytes);
Result<monitor::Recording> ReadDcgmExporter(io::ByteSource& source, const std::string& name,
                                            size_t max_line_bytes = kMaxElementBytes);

// Either format from text in memory (tests).
Result<monitor::Recording> ParseDcgmLog(std::string_view text, const std::string& name);

}  // namespace gpuscope::ingest
