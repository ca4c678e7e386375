// Shared helpers for tests: where the real traces are, temporary folders, reading files,
// running the CLI.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace gpuscope::testing {

// A small deterministic generator (xorshift64) for randomised oracle tests: the same inputs on
// every run and machine.
class XorShift {
 public:
  explicit XorShift(uint64_t seed) : x_(seed) {}
  uint64_t operator()() {
    x_ ^= x_ << 13;
    x_ ^= x_ >> 7;
    x_ ^= x_ << 17;
    return x_;
  }

 private:
  uint64_t x_;
};

// Real traces recorded on GPUs by others, and what HTA and the TensorBoard plugin report for them,
// come from two places with the same layout (traces/<source>/<file>, reference/...):
//  * tests/data in the repository: the few small ones the suite needs most (licence and origin
//    beside them, tests/data/README.md), so that their tests run on every clone;
//  * shared/ beside the repository (GPUSCOPE_SHARED_DIR): all of them, on developer machines.
// A file is looked up in tests/data first, then in shared/.
inline std::string SharedDir() {
  if (const char* env = std::getenv("GPUSCOPE_SHARED_DIR")) return env;
  return GPUSCOPE_SHARED_DIR;
}

inline std::string DataDir() { return std::string(GPUSCOPE_SOURCE_DIR) + "/tests/data"; }

inline bool HaveShared() { return std::filesystem::exists(SharedDir() + "/traces"); }

// `relative` (e.g. "traces/hta/x.json.gz" or "reference/hta/<folder>/temporal_breakdown.csv")
// under tests/data if it is there, else under shared/ (whether or not it exists there, so that an
// error names the place it was expected).
inline std::string RealPath(const std::string& relative) {
  const std::string vendored = DataDir() + "/" + relative;
  std::error_code ec;
  if (std::filesystem::exists(vendored, ec)) return vendored;
  return SharedDir() + "/" + relative;
}

inline bool HaveReal(const std::string& relative) {
  std::error_code ec;
  return std::filesystem::exists(RealPath(relative), ec);
}

// A real trace by its path under traces/ ("hta/x.json.gz"), and a reference output by its path
// under reference/ ("hta/<folder>/launch_stats_summary.csv", "tb_plugin/<trace>.txt").
inline std::string RealTrace(const std::string& relative) { return RealPath("traces/" + relative); }
inline std::string RealReference(const std::string& relative) {
  return RealPath("reference/" + relative);
}

// The folder traces/<sub> (traces/ itself when `sub` is empty) of shared/ when shared/ is there
// (it has every trace), else that of tests/data (the vendored few): for tests that go over all
// the real traces there are.
inline std::string RealTraceFolder(const std::string& sub = "") {
  return (HaveShared() ? SharedDir() : DataDir()) + "/traces" + (sub.empty() ? "" : "/" + sub);
}

// The files of `relatives` that neither tests/data nor shared/ has, comma-separated ("" = none).
inline std::string MissingReal(const std::vector<std::string>& relatives) {
  std::string missing;
  for (const std::string& r : relatives) {
    if (!HaveReal(r)) missing += (missing.empty() ? "" : ", ") + r;
  }
  return missing;
}

inline std::string MissingRealHint() {
  return " found neither in " + DataDir() + " nor in " + SharedDir() +
         " (only the few vendored in tests/data are part of the repository; set "
         "GPUSCOPE_SHARED_DIR to a shared/ folder to run every real-trace test)";
}

// Skips the test unless every file (paths relative to tests/data or shared/, e.g.
// "traces/hta/x.json.gz") is present.
#define GPUSCOPE_REQUIRE_REAL(...)                                                          \
  if (const std::string gpuscope_missing = ::gpuscope::testing::MissingReal({__VA_ARGS__}); \
      !gpuscope_missing.empty())                                                            \
  GTEST_SKIP() << gpuscope_missing << ::gpuscope::testing::MissingRealHint()

// Skips the test unless the whole shared/ folder is present: for tests that go over every real
// trace there is, which tests/data holds only a few of.
#define GPUSCOPE_REQUIRE_SHARED()                                                          \
  if (!::gpuscope::testing::HaveShared())                                                  \
  GTEST_SKIP() << "shared traces not found at " << ::gpuscope::testing::SharedDir()        \
               << " (this test goes over all of them, and tests/data vendors only a few; " \
                  "set GPUSCOPE_SHARED_DIR to a shared/ folder to run it)"

// Tests over several real files run the parts whose files are present. A part whose files are
// missing is named on stderr; a test none of whose parts ran says so with GTEST_SKIP.
class RealParts {
 public:
  // Whether all of `relatives` are present; counts the part as run or left out.
  bool Have(const std::vector<std::string>& relatives) {
    const std::string missing = MissingReal(relatives);
    if (missing.empty()) {
      ++ran_;
      return true;
    }
    left_out_ += (left_out_.empty() ? "" : "; ") + missing;
    std::fprintf(stderr, "[ LEFT OUT ] %s%s\n", missing.c_str(), MissingRealHint().c_str());
    return false;
  }
  int ran() const { return ran_; }
  const std::string& left_out() const { return left_out_; }

 private:
  int ran_ = 0;
  std::string left_out_;
};

#define GPUSCOPE_SKIP_IF_NONE_RAN(parts)                      \
  if ((parts).ran() == 0)                                     \
  GTEST_SKIP() << "no part could run: " << (parts).left_out() \
               << ::gpuscope::testing::MissingRealHint()

// A fresh folder under $TMPDIR (else /tmp), removed with everything in it when this object goes
// away. Only the process that made it removes it (a forked child that exits normally must not
// delete its parent's files).
class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& prefix = "gpuscope_test_") : owner_(getpid()) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror(("mkdtemp " + pattern).c_str());
      std::abort();  // no test can run without it
    }
    path_ = pattern;
  }
  ~ScopedTempDir() {
    if (getpid() != owner_) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  pid_t owner_;
  std::string path_;
};

// This test process's temporary folder, removed when the process exits (ctest runs every test
// case in a process of its own, so no test sees another's files and none is left behind).
inline const ScopedTempDir& ProcessTempDir() {
  static const ScopedTempDir dir;
  return dir;
}

// A path named `name` in this process's temporary folder (the same path for the same name).
inline std::string TempPath(const std::string& name) { return ProcessTempDir().File(name); }

// Every occurrence of `from` in `s` replaced by `to` (golden files leave out checkout paths).
inline std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

inline std::string Gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

inline std::string Gzip(const std::string& data) {
  std::string out;
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  out.resize(deflateBound(&zs, data.size()) + 64);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the gpuscope binary with `args` (shell-quoted by the caller), capturing stdout and stderr.
inline CommandResult RunGpuscope(const std::string& args) {
  const std::string out_path = TempPath("cli_out"), err_path = TempPath("cli_err");
  const std::string cmd =
      std::string(GPUSCOPE_BINARY) + " " + args + " >" + out_path + " 2>" + err_path;
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  return r;
}

// CSV text of the reference outputs (no quoted fields there): rows of cells; empty lines skipped;
// a trailing comma gives a trailing empty cell (pandas writes NaN that way).
inline std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

inline std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  return ParseCsv(ReadFile(path));
}

// The HTA reference runs in reference/hta and the trace files each was computed from
// (shared/reference/README.md, "Folder → trace file"); tests/data holds some of them.
struct HtaCase {
  std::string folder;               // reference/hta/<folder>
  std::vector<std::string> traces;  // traces/<...>

  // Everything the case needs, relative to tests/data or shared/ (for RealParts::Have).
  std::vector<std::string> Files() const {
    std::vector<std::string> files = {"reference/hta/" + folder};
    for (const std::string& t : traces) files.push_back("traces/" + t);
    return files;
  }
};

inline const std::vector<HtaCase>& HtaReferenceCases() {
  static const std::vector<HtaCase> cases = {
      {"df_index_resolver_V100_rank1of2_memevents",
       {"hta/df_index_resolver_V100_rank1of2_memevents.json.gz"}},
      {"nccl_parser_config_A100_rank0of2", {"hta/nccl_parser_config_A100_rank0of2.json.gz"}},
      {"negative_queue_length_A100-80GB_rank0of16",
       {"hta/negative_queue_length_A100-80GB_rank0of16.json.gz"}},
      {"ns_resolution_V100_rank0.pt.trace", {"hta/ns_resolution_V100_rank0.pt.trace.json.gz"}},
      {"resnet50_num_workers_0.worker0.1623143089861.pt.trace",
       {"kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz"}},
      {"resnet50_num_workers_4.worker0.1623212756351.pt.trace",
       {"kineto_tb_plugin/resnet50_num_workers_4.worker0.1623212756351.pt.trace.json.gz"}},
      {"sampled_rank-0+sampled_rank-1",
       {"hta/sampled_rank-0.json.gz", "hta/sampled_rank-1.json.gz"}},
      {"trace_diff_control_A100_rank3of8", {"hta/trace_diff_control_A100_rank3of8.json.gz"}},
      {"trace_diff_test_V100_rank1of2", {"hta/trace_diff_test_V100_rank1of2.json.gz"}},
  };
  return cases;
}

}  // namespace gpuscope::testing
