// Shared helpers for tests: where the real traces are, reading files, running the CLI.
#pragma once

#include <sys/wait.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpuscope::testing {

inline std::string SharedDir() {
  if (const char* env = std::getenv("GPUSCOPE_SHARED_DIR")) return env;
  return GPUSCOPE_SHARED_DIR;
}

inline bool HaveShared() { return std::filesystem::exists(SharedDir() + "/traces"); }

#define GPUSCOPE_REQUIRE_SHARED()                                                          \
  if (!::gpuscope::testing::HaveShared())                                                  \
  GTEST_SKIP() << "shared traces not found at " << ::gpuscope::testing::SharedDir()        \
               << " (they are not part of the repository; set GPUSCOPE_SHARED_DIR to run " \
                  "the real-trace tests)"

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
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuscope_cli_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out_path = (dir / "out").string(), err_path = (dir / "err").string();
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

// The HTA reference runs in shared/reference/hta and the trace files each was computed from
// (shared/reference/README.md, "Folder → trace file").
struct HtaCase {
  std::string folder;               // shared/reference/hta/<folder>
  std::vector<std::string> traces;  // shared/traces/<...>
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

inline std::string TempPath(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuscope_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace gpuscope::testing
