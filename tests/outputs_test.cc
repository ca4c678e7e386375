// Never destroy, never lose (issue 36, items 1–3): every output option leaves a FIFO, a device,
// a folder and a symbolic link as they were; a report lost on standard output is an error; diff
// reads each side once, so pipes and FIFOs work as inputs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "render/csv.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using testing::ReadFile;
using testing::RunGpuscope;
using testing::TempPath;
using testing::WriteFile;

std::string Example() {
  return std::string(GPUSCOPE_SOURCE_DIR) + "/examples/train_input_bound.pt.trace.json.gz";
}

// `script` run by bash (process substitution and `>&-` need it); stderr captured, stdout as the
// script redirects it. GPUSCOPE in the script is the binary.
testing::CommandResult Bash(const std::string& script) {
  const std::string file = TempPath("script.sh"), err = TempPath("script_err");
  WriteFile(file, "GPUSCOPE=" + std::string(GPUSCOPE_BINARY) + "\n" + script + "\n");
  const int status = std::system(("timeout 120 bash " + file + " 2>" + err).c_str());
  testing::CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = ReadFile(err);
  unlink(file.c_str());
  unlink(err.c_str());
  return r;
}

mode_t TypeOf(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

TEST(Outputs, MapNeverRenamesOverAFifoADeviceOrALink) {
  const std::string fifo = TempPath("summary.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto r = RunGpuscope("map " + Example() + " -o " + fifo);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("-o " + fifo + ": exists and is a FIFO; not replaced"), std::string::npos)
      << r.err;
  EXPECT_EQ(TypeOf(fifo), S_IFIFO);
  unlink(fifo.c_str());

  // -o /dev/null: before, a SQLite file would have replaced the device (as root).
  r = RunGpuscope("map " + Example() + " -o /dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is a character device; not replaced"), std::string::npos) << r.err;
  EXPECT_EQ(TypeOf("/dev/null"), S_IFCHR);

  const std::string dangling = TempPath("dangling.db");
  ASSERT_EQ(symlink(TempPath("nowhere.db").c_str(), dangling.c_str()), 0);
  r = RunGpuscope("map " + Example() + " -o " + dangling);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("which does not exist; not followed"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(TempPath("nowhere.db")));
  unlink(dangling.c_str());

  // A link to a regular file: the file is rewritten, the link stays, and the output says so.
  const std::string target = TempPath("job.db"), link = TempPath("latest.db");
  WriteFile(target, "old");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  r = RunGpuscope("map " + Example() + " -o " + link);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + link + " (through the symbolic link " + link + " → " + target),
            std::string::npos)
      << r.out;
  EXPECT_EQ(TypeOf(link), S_IFLNK);
  EXPECT_EQ(ReadFile(target).substr(0, 15), "SQLite format 3");
  unlink(link.c_str());
  unlink(target.c_str());
}

TEST(Outputs, EveryOutputOptionRefusesAFolderAndWritesIntoADevice) {
  const std::string dir = TempPath("a_folder");
  std::filesystem::create_directory(dir);
  // Each option given a path that is a folder: refused by name, exit 2, the folder untouched.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"analyze " + Example() + " --html " + dir, "--html"},
      {"synth --steps 2 -o " + dir, "-o"},
      {"tune --results " + dir + " --param bs=1 --metric 'x([0-9]+)' -- true", "--results"},
      {"run --record " + dir + " -- true", "--record"},
  };
  for (const auto& [args, option] : cases) {
    auto r = RunGpuscope(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(option + " " + dir + ": exists and is a folder"), std::string::npos)
        << args << "\n" << r.err;
    EXPECT_TRUE(std::filesystem::is_directory(dir));
  }
  // A CSV table whose file name is taken by a folder.
  const std::string csv = TempPath("csv");
  std::filesystem::create_directories(csv + "/per_step.csv");
  auto r = RunGpuscope("analyze " + Example() + " --csv " + csv);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--csv " + csv + "/per_step.csv: exists and is a folder"), std::string::npos)
      << r.err;
  std::filesystem::remove_all(csv);
  // --write-configs: the same for a snippet's name.
  std::filesystem::create_directories(dir + "/megatron_args.sh");
  r = RunGpuscope(
      "plan --model llama-2-7b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len 4096 "
      "--framework megatron --write-configs " +
      dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--write-configs " + dir + "/megatron_args.sh: exists and is a folder"),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(dir);

  // A character device is written into, never replaced: --html /dev/null discards the page.
  r = RunGpuscope("analyze " + Example() + " --html /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(TypeOf("/dev/null"), S_IFCHR);
}

TEST(Outputs, AReportLostOnStandardOutputIsAnError) {
  for (const std::string& args :
       {"analyze --json " + Example(), "analyze " + Example(), "diff " + Example() + " " + Example(),
        std::string(
            "plan --model llama-2-7b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len 4096")}) {
    auto r = Bash("$GPUSCOPE " + args + " >/dev/full");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("could not be written to standard output: No space left on device"),
              std::string::npos)
        << args << "\n" << r.err;
  }
  // Standard output closed: no file gpuscope opens takes its place, and the loss is said.
  const std::string html = TempPath("closed.html");
  auto r = Bash("$GPUSCOPE analyze --json " + Example() + " --html " + html + " >&-");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("Bad file descriptor"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(html).substr(0, 15), "<!doctype html>");
  unlink(html.c_str());
  // run: the command's exit code would be 0; the lost --json report makes it 2.
  r = Bash("$GPUSCOPE run --json --interval 50ms -- true >/dev/full");
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(Outputs, DiffReadsEachSideOnceSoPipesAndFifosWork) {
  const std::string plain = TempPath("plain.json");
  WriteFile(plain, testing::Gunzip(Example()));
  // Before: "empty input" (the pipe was sniffed, then read again).
  auto r = Bash("$GPUSCOPE diff --json <(cat " + plain + ") " + plain + " >" +
                TempPath("out.json"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ReadFile(TempPath("out.json")).find("\"schema\": \"gpuscope.diff\""),
            std::string::npos);
  // Before: "not a JSON trace" (gzip undone only on the second open).
  r = Bash("$GPUSCOPE diff <(gzip -c " + plain + ") " + Example() + " >/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Before: a hang (the FIFO's writer was gone after the sniff).
  const std::string fifo = TempPath("trace.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  r = Bash("cat " + plain + " >" + fifo + " & $GPUSCOPE diff " + fifo + " " + plain +
           " >/dev/null; rc=$?; wait; exit $rc");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& f : {plain, fifo, TempPath("out.json")}) unlink(f.c_str());
}

// A FIFO, a device or a dangling link with a trace's name inside a folder of ranks: named, never
// read (a FIFO would wait for a writer), the other ranks analysed, exit 2 (before: skipped
// silently, exit 0; issue 36 item 6). The same for analyze, map and reduce.
TEST(Outputs, FolderEntriesThatAreNotFilesAreNamedNotSkippedSilently) {
  testing::ScopedTempDir dir;
  ASSERT_EQ(std::system(("cp " + Example() + " " + dir.File("rank0.pt.trace.json.gz")).c_str()), 0);
  ASSERT_EQ(mkfifo(dir.File("rank1.pt.trace.json").c_str(), 0600), 0);
  ASSERT_EQ(symlink(dir.File("gone.json").c_str(), dir.File("rank2.json.gz").c_str()), 0);
  ASSERT_EQ(symlink("/dev/zero", dir.File("rank3.json").c_str()), 0);
  std::filesystem::create_directory(dir.File("logs"));  // a folder: no input, not named
  testing::ScopedTempDir out;
  for (const std::string& args :
       {"analyze " + dir.path(), "map " + dir.path() + " -o " + out.path() + "/", "reduce " + dir.path()}) {
    const auto r = RunGpuscope(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("rank1.pt.trace.json: a FIFO, not a trace file; skipped"), std::string::npos)
        << args << "\n" << r.err;
    EXPECT_NE(r.err.find("rank2.json.gz: a dangling symbolic link, not a trace file"), std::string::npos)
        << args << "\n" << r.err;
    EXPECT_NE(r.err.find("rank3.json: a character device, not a trace file"), std::string::npos)
        << args << "\n" << r.err;
    EXPECT_EQ(r.err.find("logs"), std::string::npos) << args << "\n" << r.err;
  }
  EXPECT_TRUE(std::filesystem::exists(out.File("rank0.gpuscope.db")));
}

// Two map jobs given one -o file: the later one no longer replaces what the other wrote while it
// ran (its ranks were lost, and reduce showed 1 rank of 8); it writes beside it and says so, exit 2
// (issue 36 item 4). The FIFO holds map at its --monitor read while "the other writer" writes.
TEST(Outputs, MapDoesNotReplaceASummaryAnotherProcessWroteMeanwhile) {
  testing::ScopedTempDir dir;
  const std::string out = dir.File("job.db"), fifo = dir.File("monitor.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string recording = std::string(GPUSCOPE_SOURCE_DIR) + "/fuzz/seeds/monitor/recording.jsonl";
  auto r = Bash("( sleep 1; $GPUSCOPE map " + Example() + " -o " + out + " >/dev/null; cat " + recording +
                " > " + fifo + " ) & $GPUSCOPE map " + Example() + " -o " + out + " --monitor " + fifo +
                " >" + dir.File("stdout") + "; rc=$?; wait; exit $rc");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("was written by another process while this map ran"), std::string::npos) << r.err;
  const std::string stdout_text = ReadFile(dir.File("stdout"));
  const size_t at = stdout_text.find("wrote " + out + ".");
  ASSERT_NE(at, std::string::npos) << stdout_text;
  // Both summaries are there; reduce reads both.
  EXPECT_EQ(ReadFile(out).substr(0, 15), "SQLite format 3");
  size_t summaries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    summaries += e.path().filename().string().rfind("job.db", 0) == 0;
  EXPECT_EQ(summaries, 2u);
}

// Outputs are checked before the work that precedes them: `run --html FILE/x.html` ran the
// command and then failed "cannot write: Not a directory" (the check's access(parent, W_OK)
// passed on a regular file, and for root anywhere); tune checked none of its outputs before its
// trials; plan printed the report and wrote --html before a bad --write-configs failed.
TEST(Outputs, EveryOutputIsCheckedBeforeTheWorkAndBeforeAnyOtherOutput) {
  testing::ScopedTempDir dir;
  const std::string file = dir.File("a_file"), ran = dir.File("ran");
  WriteFile(file, "x");
  const std::string cmd = " -- sh -c 'echo ran > " + ran + "'";
  const std::pair<std::string, std::string> cases[] = {
      {"run --html " + file + "/x.html" + cmd, "--html " + file + "/x.html: cannot write into " +
                                                   file + ": it is a regular file, not a folder"},
      {"run --report-json " + file + "/x.json" + cmd, "--report-json " + file +
                                                          "/x.json: cannot write into " + file +
                                                          ": it is a regular file, not a folder"},
      {"run --csv " + file + "/csv" + cmd, "--csv " + file + "/csv: cannot create the folder: " +
                                               file + " is a regular file, not a folder"},
      {"run --html /proc/x.html" + cmd, "--html /proc/x.html: cannot create a file in /proc: "},
      {"tune -q --results " + dir.File("r.jsonl") +
           " --param X=1,2 --metric '([0-9]+) x' --html /no/such/dir/x.html" + cmd,
       "--html /no/such/dir/x.html: cannot write into /no/such/dir: No such file or directory"},
      {"tune -q --results " + dir.File("r.jsonl") + " --param X=1,2 --metric '([0-9]+) x' --csv " +
           file + "/csv" + cmd,
       "--csv " + file + "/csv: cannot create the folder"},
      {"tune -q --results " + dir.File("r.jsonl") + " --traces-dir " + file +
           "/traces --param X=1,2 --traces" + cmd,
       "--traces-dir " + file + "/traces: cannot create the folder"},
  };
  for (const auto& [args, want] : cases) {
    const auto r = RunGpuscope(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("gpuscope: error: " + want), std::string::npos) << args << "\n" << r.err;
    EXPECT_FALSE(std::filesystem::exists(ran)) << args;  // the command never ran
    EXPECT_FALSE(std::filesystem::exists(dir.File("r.jsonl"))) << args;
  }
  EXPECT_EQ(ReadFile(file), "x");
  // plan: --write-configs inside a regular file; nothing printed, no --html page written.
  const std::string page = dir.File("p.html");
  const auto r = RunGpuscope(
      "plan --model llama-2-7b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len 4096 --html " +
      page + " --write-configs " + file + "/configs");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("gpuscope: error: --write-configs " + file +
                       "/configs: cannot create the folder: " + file +
                       " is a regular file, not a folder"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(std::filesystem::exists(page));
}

// `analyze EX --html a.html --csv /proc/x` wrote a.html, then failed on the CSV folder with
// "not a folder" (it is that nothing can be created in /proc): every output is now checked
// before any is written, the CSV tables by name, and the message says what failed.
TEST(Outputs, NoOutputIsWrittenWhenAnotherOfTheSameCommandCannotBe) {
  testing::ScopedTempDir dir;
  const std::string page = dir.File("a.html"), tables = dir.File("tables");
  std::filesystem::create_directories(tables + "/per_step.csv");  // a folder in a table's place
  const std::pair<std::string, std::string> cases[] = {
      {"analyze " + Example() + " --html " + page + " --csv /proc/x",
       "--csv /proc/x: cannot create the folder: nothing can be created in /proc: "},
      {"analyze " + Example() + " --html " + page + " --csv " + tables,
       "--csv " + tables + "/per_step.csv: exists and is a folder"},
      {"diff " + Example() + " " + Example() + " --html " + page + " --csv /proc/x",
       "--csv /proc/x: cannot create the folder: nothing can be created in /proc: "},
  };
  for (const auto& [args, want] : cases) {
    const auto r = RunGpuscope(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("gpuscope: error: " + want), std::string::npos) << args << "\n" << r.err;
    EXPECT_FALSE(std::filesystem::exists(page)) << args;
    EXPECT_EQ(r.out, "") << args;
  }
  // A table that fails while being written (past the check; here a name in a folder that does
  // not exist): the tables and the folders this write created are removed, what was there before
  // stays.
  const std::string fresh = dir.File("fresh/csv");
  WriteFile(tables + "/keep.csv", "old");
  for (const std::string& out : {fresh, tables}) {
    auto written =
        render::WriteCsvFiles({{"keep", "a\r\n"}, {"steps", "b\r\n"}, {"no/such", "c\r\n"}}, out);
    ASSERT_FALSE(written.ok()) << out;
    EXPECT_NE(written.status().message().find("--csv " + out + "/no/such.csv: cannot write"),
              std::string::npos)
        << written.status().message();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("fresh")));
  EXPECT_EQ(ReadFile(tables + "/keep.csv"), "a\r\n");  // rewritten, not removed: it was there
  EXPECT_FALSE(std::filesystem::exists(tables + "/steps.csv"));
  EXPECT_TRUE(std::filesystem::is_directory(tables + "/per_step.csv"));
}

}  // namespace
}  // namespace gpuscope
