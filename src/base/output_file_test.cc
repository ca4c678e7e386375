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

}  // namespace
}  // namespace gpuscope
