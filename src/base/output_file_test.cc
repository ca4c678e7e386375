// The one output check (base/output_file.h): what each kind of existing path gets.
#include "base/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "test_util.h"

namespace gpuscope {
namespace {

using testing::ReadFile;
using testing::TempPath;
using testing::WriteFile;

bool IsSymlink(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

TEST(OutputFile, RegularFileIsTruncatedAndRewritten) {
  const std::string path = TempPath("out.txt");
  WriteFile(path, "an older and longer content");
  ASSERT_TRUE(WriteOutputFile(path, "new", "--html").ok());
  EXPECT_EQ(ReadFile(path), "new");
  unlink(path.c_str());
}

TEST(OutputFile, AppendKeepsWhatIsThere) {
  const std::string path = TempPath("results.jsonl");
  WriteFile(path, "line 1\n");
  auto f = OpenOutputFile(path, "--results", OutputOpen::kAppend);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(write(f->fd, "line 2\n", 7), 7);
  close(f->fd);
  EXPECT_EQ(ReadFile(path), "line 1\nline 2\n");
  unlink(path.c_str());
}

TEST(OutputFile, SymbolicLinkIsFollowedAndSaid) {
  const std::string target = TempPath("target.html"), link = TempPath("link.html");
  WriteFile(target, "old");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  std::string note;
  ASSERT_TRUE(WriteOutputFile(link, "page", "--html", &note).ok());
  EXPECT_TRUE(IsSymlink(link));  // the link stays a link
  EXPECT_EQ(ReadFile(target), "page");
  EXPECT_EQ(note, " (through the symbolic link " + link + " → " + target + ")");
  unlink(link.c_str());
  unlink(target.c_str());
}

TEST(OutputFile, DanglingLinkFolderAndBlockDeviceAreRefused) {
  const std::string link = TempPath("dangling.html");
  ASSERT_EQ(symlink(TempPath("missing/nowhere").c_str(), link.c_str()), 0);
  Status s = WriteOutputFile(link, "x", "--html");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("which does not exist; not followed"), std::string::npos)
      << s.message();
  EXPECT_FALSE(std::filesystem::exists(TempPath("missing")));
  unlink(link.c_str());

  const std::string dir = TempPath("a_folder");
  std::filesystem::create_directory(dir);
  s = WriteOutputFile(dir, "x", "--report-json");
  EXPECT_NE(s.message().find("--report-json " + dir + ": exists and is a folder; not written"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  std::filesystem::remove(dir);

  // A block device, when this machine shows one: never opened for writing.
  for (const char* dev : {"/dev/loop0", "/dev/sda", "/dev/vda", "/dev/nvme0n1"}) {
    struct stat st {};
    if (stat(dev, &st) != 0 || !S_ISBLK(st.st_mode)) continue;
    s = WriteOutputFile(dev, "x", "--html");
    EXPECT_NE(s.message().find("exists and is a block device; not written"), std::string::npos)
        << s.message();
    break;
  }
}

TEST(OutputFile, FifoAndCharacterDeviceAreWrittenIntoNeverReplaced) {
  ASSERT_TRUE(WriteOutputFile("/dev/null", "discarded", "--html").ok());
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  const std::string fifo = TempPath("pipe");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = ReadFile(fifo); });
  ASSERT_TRUE(WriteOutputFile(fifo, "through the pipe", "--html").ok());
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  unlink(fifo.c_str());
}

TEST(OutputFile, OnlyARegularFileIsReplaced) {
  std::string note;
  const std::string fresh = TempPath("fresh.db");
  auto p = CheckReplaceablePath(fresh, "-o", &note);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, fresh);

  const std::string fifo = TempPath("fifo.db");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  p = CheckReplaceablePath(fifo, "-o", &note);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("exists and is a FIFO; not replaced"), std::string::npos);
  unlink(fifo.c_str());

  p = CheckReplaceablePath("/dev/null", "-o", &note);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("is a character device; not replaced"), std::string::npos);

  // A link to a regular file: the file is what gets replaced (the link stays).
  const std::string target = TempPath("real.db"), link = TempPath("link.db");
  WriteFile(target, "old");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  p = CheckReplaceablePath(link, "-o", &note);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, std::filesystem::canonical(target).string());
  EXPECT_NE(note.find("through the symbolic link"), std::string::npos);
  unlink(link.c_str());
  // A link to a character device: refused, not followed into it.
  ASSERT_EQ(symlink("/dev/null", link.c_str()), 0);
  p = CheckReplaceablePath(link, "-o", &note);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("which is a character device; not replaced"),
            std::string::npos);
  unlink(link.c_str());
  unlink(target.c_str());
}

// A path inside a regular file, or in a folder where nothing can be created, is refused by the
// check itself: access(parent, W_OK) passed for both (and for root anywhere), so `run --html
// FILE/x.html` ran the command and only then failed.
TEST(OutputFile, TheCheckTriesWhereTheFileWouldGo) {
  const std::string file = TempPath("a_file");
  WriteFile(file, "x");
  Status s = CheckOutputFile(file + "/x.html", "--html");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--html " + file + "/x.html: cannot write into " + file +
                             ": it is a regular file, not a folder (hint: give a path inside a "
                             "folder that exists)");
  s = CheckOutputFile(file + "/sub/x.html", "--html");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--html " + file + "/sub/x.html: cannot write into " + file +
                             "/sub: " + file +
                             " is a regular file, not a folder (hint: give a path inside a folder "
                             "that exists)");
  s = CheckOutputFile("/no/such/dir/x.html", "--html");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "--html /no/such/dir/x.html: cannot write into /no/such/dir: No such file or "
            "directory (hint: check the folder exists and is writable)");
  // /proc: a folder in which nothing can be created (whoever runs the test, root included).
  s = CheckOutputFile("/proc/x.html", "--html");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("--html /proc/x.html: cannot create a file in /proc: ", 0), 0u)
      << s.message();
  EXPECT_TRUE(CheckOutputFile(TempPath("fine.html"), "--html").ok());
  EXPECT_TRUE(CheckOutputFile(file, "--html").ok());
  EXPECT_EQ(ReadFile(file), "x");  // checked, not truncated
  // The probe leaves nothing behind.
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(testing::ProcessTempDir().path()))
    entries += e.path().filename().string().rfind(".gpuscope-write-check", 0) == 0;
  EXPECT_EQ(entries, 0u);
  unlink(file.c_str());
}

TEST(OutputFile, AFolderOutputIsAFolderOrCanBeMade) {
  const std::string file = TempPath("not_a_folder");
  WriteFile(file, "x");
  Status s = CheckOutputFolder(file, "--csv");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--csv " + file +
                             ": exists and is a regular file, not a folder (hint: --csv takes a "
                             "folder; it is made if missing)");
  s = CheckOutputFolder(file + "/csv", "--csv");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--csv " + file + "/csv: cannot create the folder: " + file +
                             " is a regular file, not a folder (hint: give a folder path whose "
                             "parents are folders)");
  s = CheckOutputFolder("/proc/x", "--csv");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("--csv /proc/x: cannot create the folder: nothing can be created in "
                              "/proc: ",
                              0),
            0u)
      << s.message();
  EXPECT_TRUE(CheckOutputFolder(TempPath("new/deeper"), "--csv").ok());
  EXPECT_FALSE(std::filesystem::exists(TempPath("new")));  // checked, not made
  // Files named in an existing folder: each checked (a folder in a table's place is refused).
  const std::string dir = TempPath("tables");
  std::filesystem::create_directories(dir + "/ops.csv");
  s = CheckOutputFolder(dir, "--csv", {"steps.csv", "ops.csv"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--csv " + dir + "/ops.csv: exists and is a folder"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(CheckOutputFolder(dir, "--csv", {"steps.csv"}).ok());
  std::filesystem::remove_all(dir);
  unlink(file.c_str());
}

}  // namespace
}  // namespace gpuscope
