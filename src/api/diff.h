// `gpuscope diff BEFORE AFTER` up to its document, without flags or printing (see analyze.h).
#pragma once

#include <string>
#include <vector>

#include "api/options.h"
#include "gpuscope/status.h"
#include "render/document.h"

namespace gpuscope::api {

struct DiffOptions {
  int threads = 0;
  std::string names;  // "short" or "raw"; empty: short, or raw under hta
  bool hta = false;   // count kernels and ops as HTA's trace diff does
};

struct Diffed {
  render::Document document;
  // Files of either side that could not be read, as the CLI prints them ("before: …").
  std::vector<Status> failures;
};

// Fails with "before: …" / "after: …" when a side cannot be read at all.
Result<Diffed> DiffInputs(const std::string& before, const std::string& after,
                          const DiffOptions& options = {});

// diff's options (the CLI's flags and Python's keywords), checked by DiffInputs.
const OptionTable<DiffOptions>& DiffOptionTable();

}  // namespace gpuscope::api
