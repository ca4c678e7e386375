// The CSV view of a document: every table as one CSV text (`--csv DIR` writes each to
// DIR/<table key>.csv). A table that several sections hold (one per rank) becomes one CSV whose
// first column, `section`, is the key of the top-level section each row came from (rank_0,
// input_1, jobs, …), then `run`, `rank` and `path`: the rank's job ("job_2": its section under
// `jobs`), number and trace file (empty outside a rank's section; each left out where the table
// has such a column itself). Values are written as the
// JSON view writes them (durations as integer ns, shares 0–1, bytes as integers), null as an empty
// field; RFC 4180 quoting.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gpuscope/status.h"
#include "render/document.h"

namespace gpuscope::render {

// (table key, CSV text) in the order the tables first appear in the document.
std::vector<std::pair<std::string, std::string>> CsvTables(const Document& doc);

// Every table as DIR/<key>.csv (DIR made if missing), each file through the one output check
// (base/output_file.h: never into a FIFO or a device): what `--csv DIR` and
// Python's Report.to_csv write. Returns the paths written; `option` names the flag in errors.
Result<std::vector<std::string>> WriteCsvTables(const Document& doc, const std::string& dir,
                                                const char* option = "--csv");
// The same for tables already made (CsvTables): a caller that checked their paths first writes
// what it checked. On a failed write, the tables and folders this call created are removed.
Result<std::vector<std::string>> WriteCsvFiles(
    const std::vector<std::pair<std::string, std::string>>& tables, const std::string& dir,
    const char* option = "--csv");

}  // namespace gpuscope::render
