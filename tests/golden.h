// Golden files: what a command prints, kept under tests/golden/ and compared byte for byte.
// Whole documents (tests/golden/*.json, which the JSON-contract tests also read) and single
// sections (tests/golden/sections/*.json, golden_sections_test.cc) go through the same two steps:
// RunForGolden, then ExpectGolden. `GPUSCOPE_REBASELINE=1 ctest -R Golden` rewrites every golden
// file from what the build prints now; review the diff before committing it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace gpuscope::testing {

inline bool Rebaselining() { return std::getenv("GPUSCOPE_REBASELINE") != nullptr; }

inline std::string GoldenDir() { return std::string(GPUSCOPE_SOURCE_DIR) + "/tests/golden"; }

// An input file of a golden run: where it is on this machine, and how the golden file names it
// (a path relative to the checkout or to shared/, so golden files do not depend on where the
// checkout is, nor on whether a trace came from tests/data or shared/).
struct GoldenInput {
  std::string path;
  std::string shown;
};

// Runs gpuscope with `args` (shell-quoted by the caller) and returns its stdout with every input's
// path replaced by its shown name. Fails the test (and returns "") unless it exits 0.
inline std::string RunForGolden(const std::string& args, const std::vector<GoldenInput>& inputs) {
  const CommandResult r = RunGpuscope(args);
  EXPECT_EQ(r.exit_code, 0) << "gpuscope " << args << "\n" << r.err;
  if (r.exit_code != 0) return "";
  std::string out = r.out;
  for (const GoldenInput& in : inputs) out = ReplaceAll(out, in.path, in.shown);
  return out;
}

// `actual` against the golden file at `golden_path`; when rebaselining, writes it there instead.
// A difference is reported by its first differing line, not by dumping two whole documents.
inline void ExpectGolden(const std::string& actual, const std::string& golden_path) {
  if (Rebaselining()) WriteFile(golden_path, actual);
  const std::string expected = ReadFile(golden_path);
  if (actual == expected) return;
  std::istringstream a(actual), e(expected);
  std::string la, le;
  size_t line = 0;
  while (true) {
    ++line;
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_e = static_cast<bool>(std::getline(e, le));
    if (!more_a) la = "(end of output)";
    if (!more_e) le = "(end of golden file)";
    if (la != le || (!more_a && !more_e)) break;
  }
  ADD_FAILURE() << "differs from " << golden_path << " at line " << line << ":\n  golden: " << le
                << "\n  now:    " << la
                << "\nrebaseline with GPUSCOPE_REBASELINE=1 ctest -R Golden, then review the diff";
}

}  // namespace gpuscope::testing
