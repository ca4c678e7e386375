// Summary files: one rank's RankSummary (or several) in an SQLite database that standard tools
// open (sqlite3, DuckDB, pandas, Spark). Format, tables and versioning: docs/summary-format.md.
#pragma once

#include <string>
#include <vector>

#include "gpuscope/status.h"
#include "report/summary.h"

namespace gpuscope::store {

inline constexpr int kSummaryFormatVersion = 1;

// Writes the summaries to `path` (replacing it), atomically (a temporary file renamed). Only a
// regular file is replaced (base/output_file.h): a symbolic link to one is followed and `*note`
// says so; a FIFO, device, folder or dangling link is refused.
Status WriteSummaryFile(const std::string& path, const std::vector<report::RankSummary>& ranks,
                        std::string* note = nullptr);
// Reads every summary in `path`; a file that is not a summary, or of a newer version, is an error
// naming the file and what it is.
Result<std::vector<report::RankSummary>> ReadSummaryFile(const std::string& path);

// The same as bytes (sqlite3_serialize), for sending summaries between processes (MPI).
Result<std::string> SerializeSummaries(const std::vector<report::RankSummary>& ranks);
Result<std::vector<report::RankSummary>> DeserializeSummaries(const std::string& bytes,
                                                              const std::string& name);

// True when the first bytes are an SQLite database (the registry uses it to route files).
bool LooksLikeSummaryFile(std::string_view first_bytes);

}  // namespace gpuscope::store
