// The vendored real traces in tests/data (size limit, licence and origin beside each source,
// byte-identical to shared/) and the test helpers that find them and clean up after the tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <vector>
#include <set>
#include <string>

#include "test_util.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

// The notes beside the data, not data themselves.
bool IsNote(const fs::path& p) {
  const std::string name = p.filename().string();
  return name == "README.md" || name == "LICENSE" || name == "ORIGIN.md";
}

TEST(TestData, AtMostFiveMegabytes) {
  uintmax_t bytes = 0, files = 0;
  for (const auto& e : fs::recursive_directory_iterator(testing::DataDir())) {
    if (!e.is_regular_file()) continue;
    bytes += e.file_size();
    ++files;
  }
  std::printf("tests/data: %ju files, %ju bytes\n", files, bytes);
  EXPECT_GT(files, 0u);
  EXPECT_LE(bytes, 5'000'000u) << "the repository carries at most 5 MB of real traces";
}

// Every source folder under traces/ (copies of shared/) and derived/ (cut down from shared/) has
// its licence and origin notes, and the origin note names every file in the folder.
TEST(TestData, EverySourceHasLicenceAndOrigin) {
  size_t sources = 0, traces = 0;
  std::vector<fs::directory_entry> folders;
  for (const char* top : {"/traces", "/derived"})
    for (const auto& source : fs::directory_iterator(testing::DataDir() + top)) folders.push_back(source);
  for (const auto& source : folders) {
    ASSERT_TRUE(source.is_directory()) << source.path();
    ++sources;
    SCOPED_TRACE(source.path().string());
    const fs::path licence = source.path() / "LICENSE", origin = source.path() / "ORIGIN.md";
    ASSERT_TRUE(fs::is_regular_file(licence));
    ASSERT_TRUE(fs::is_regular_file(origin));
    EXPECT_NE(testing::ReadFile(licence.string()).find("SPDX-License-Identifier"),
              std::string::npos);
    const std::string notes = testing::ReadFile(origin.string());
    for (const auto& f : fs::directory_iterator(source.path())) {
      if (IsNote(f.path())) continue;
      ++traces;
      // append, not "`" + string: GCC 12 reports a false -Wrestrict there (bug 105329).
      EXPECT_NE(notes.find(std::string("`").append(f.path().filename().string()).append("`")),
                std::string::npos)
          << f.path().filename() << " is not in " << origin;
    }
  }
  EXPECT_EQ(sources, 3u);
  EXPECT_EQ(traces, 15u);
}

// tests/data/traces and reference are a copy of part of shared/: same relative paths, same bytes
// (derived/ is not: its origin notes say how each file was made from shared/).
TEST(TestData, VendoredFilesEqualShared) {
  GPUSCOPE_REQUIRE_SHARED();
  size_t compared = 0;
  for (const char* top : {"traces", "reference"}) {
    for (const auto& e : fs::recursive_directory_iterator(testing::DataDir() + "/" + top)) {
      if (!e.is_regular_file() || IsNote(e.path())) continue;
      const std::string relative = fs::relative(e.path(), testing::DataDir()).string();
      const std::string shared = testing::SharedDir() + "/" + relative;
      ASSERT_TRUE(fs::exists(shared)) << relative << " is not in shared/";
      EXPECT_TRUE(testing::ReadFile(e.path().string()) == testing::ReadFile(shared)) << relative;
      ++compared;
    }
  }
  EXPECT_GE(compared, 14u);
}

TEST(TestData, LookupPrefersTestsDataThenShared) {
  const std::string vendored = testing::RealTrace("hta/triton_example.json.gz");
  EXPECT_EQ(vendored, testing::DataDir() + "/traces/hta/triton_example.json.gz");
  EXPECT_TRUE(testing::HaveReal("traces/hta/triton_example.json.gz"));
  // Not vendored: the shared/ path, whether or not shared/ has it.
  EXPECT_EQ(testing::RealTrace("hta/no_such_trace.json.gz"),
            testing::SharedDir() + "/traces/hta/no_such_trace.json.gz");
  EXPECT_FALSE(testing::HaveReal("traces/hta/no_such_trace.json.gz"));
  EXPECT_EQ(testing::MissingReal({"traces/hta/triton_example.json.gz", "traces/hta/nope.json.gz"}),
            "traces/hta/nope.json.gz");
  testing::RealParts parts;
  EXPECT_FALSE(parts.Have({"traces/hta/nope.json.gz"}));
  EXPECT_EQ(parts.ran(), 0);
  EXPECT_TRUE(parts.Have({"traces/hta/triton_example.json.gz", "reference/trace_counts.tsv"}));
  EXPECT_EQ(parts.ran(), 1);
  EXPECT_EQ(parts.left_out(), "traces/hta/nope.json.gz");
}

TEST(TestUtil, ScopedTempDirRemovesItsTree) {
  std::string path;
  {
    testing::ScopedTempDir dir("gpuscope_scoped_");
    path = dir.path();
    ASSERT_TRUE(fs::is_directory(path));
    EXPECT_EQ(fs::path(path).parent_path(), fs::temp_directory_path());
    fs::create_directories(dir.File("a/b"));
    testing::WriteFile(dir.File("a/b/c.txt"), "x");
    testing::ScopedTempDir other("gpuscope_scoped_");
    EXPECT_NE(other.path(), path);  // a fresh folder each time
    // A forked child that exits normally runs the static destructors of its copy of this
    // process's objects; it must not remove the parent's folder.
    const std::string process_dir = testing::ProcessTempDir().path();
    const pid_t child = fork();
    if (child == 0) std::exit(0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(fs::is_directory(process_dir));
    EXPECT_TRUE(fs::exists(dir.File("a/b/c.txt")));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(TestUtil, TempPathIsStableWithinTheProcess) {
  EXPECT_EQ(testing::TempPath("x.json"), testing::TempPath("x.json"));
  EXPECT_EQ(fs::path(testing::TempPath("x.json")).parent_path().string(),
            testing::ProcessTempDir().path());
  EXPECT_TRUE(fs::is_directory(testing::ProcessTempDir().path()));
}

}  // namespace
}  // namespace gpuscope
