#include "base/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/sanitize.h"

namespace gpuscope {

namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

Status Refused(const std::string& path, const char* option, const std::string& what,
               const std::string& hint) {
  return Status::Error(StatusCode::kUsage, std::string(option) + " " + SanitizeText(path) + ": " +
                                               what + " (hint: " + hint + ")");
}

std::string LinkTarget(const std::string& path) {
  char buf[4096];
  const ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("?");
}

std::string LinkNote(const std::string& path) {
  return " (through the symbolic link " + SanitizeText(path) + " → " +
         SanitizeText(LinkTarget(path)) + ")";
}

// Where a folder, block device or socket is; the message and hint every writer gives.
Status NotWritable(const std::string& path, const char* option, mode_t mode) {
  return Refused(path, option, std::string("exists and is ") + KindOf(mode) + "; not written",
                 S_ISDIR(mode) ? "this option takes a file name; give one inside the folder"
                               : "give the path of a file to write");
}

bool WritableInto(mode_t mode) { return S_ISREG(mode) || S_ISFIFO(mode) || S_ISCHR(mode); }

// What `path` names now, under the rules of output_file.h: nothing, or something written into
// (`*exists`), through a symbolic link (said in `*note`); a dangling link, a folder, a block device
// or a socket is refused.
Status CheckExisting(const std::string& path, const char* option, std::string* note,
                     bool* exists = nullptr) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    if (stat(path.c_str(), &st) != 0)
      return Refused(
          path, option,
          "is a symbolic link to " + SanitizeText(LinkTarget(path)) + ", which " +
              (errno == ENOENT ? std::string("does not exist")
                               : std::string("cannot be reached: ") + std::strerror(errno)) +
              "; not followed",
          "give the path of the file to create itself");
    *note = LinkNote(path);
  } else if (stat(path.c_str(), &st) != 0) {
    if (exists) *exists = false;  // nothing there yet
    return Status::Ok();
  }
  if (!WritableInto(st.st_mode)) return NotWritable(path, option, st.st_mode);
  if (exists) *exists = true;
  return Status::Ok();
}

}  // namespace

Result<OutputFile> OpenOutputFile(const std::string& path, const char* option, OutputOpen mode) {
  OutputFile out;
  GPUSCOPE_RETURN_IF_ERROR(CheckExisting(path, option, &out.note));
  struct stat st {};
  const int flags =
      O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (mode == OutputOpen::kAppend ? O_APPEND : 0);
  const int fd = open(path.c_str(), flags, 0666);
  if (fd < 0)
    return Status::Error(StatusCode::kIoError,
                         std::string(option) + " " + SanitizeText(path) +
                             ": cannot write: " + std::strerror(errno) +
                             " (hint: check the folder exists and is writable)");
  // Again on what was opened: the path may have changed between the check and the open.
  if (fstat(fd, &st) != 0 || !WritableInto(st.st_mode)) {
    close(fd);
    return NotWritable(path, option, st.st_mode);
  }
  if (S_ISREG(st.st_mode) && mode == OutputOpen::kTruncate && ftruncate(fd, 0) != 0) {
    const int e = errno;
    close(fd);
    return Status::Error(StatusCode::kIoError, std::string(option) + " " + SanitizeText(path) +
                                                   ": cannot truncate: " + std::strerror(e));
  }
  out.fd = fd;
  return out;
}

namespace {

Status CannotWrite(const std::string& path, const char* option, const std::string& why,
                   const std::string& hint) {
  return Status::Error(StatusCode::kIoError, std::string(option) + " " + SanitizeText(path) + ": " +
                                                 why + " (hint: " + hint + ")");
}

// Whether a file can be created in the folder `dir`, by creating one and removing it: access()
// answers yes to root everywhere (/proc included), and a path through a regular file fails only
// when something is made there. The probe's name starts with a dot, which no folder listing of
// gpuscope reads as an input.
bool ProbeCreate(const std::string& dir, bool folder, std::string* why) {
  std::string probe = (std::filesystem::path(dir) / ".gpuscope-write-check-XXXXXX").string();
  if (folder) {
    if (mkdtemp(probe.data()) == nullptr) {
      *why = std::strerror(errno);
      return false;
    }
    rmdir(probe.c_str());
    return true;
  }
  const int fd = mkstemp(probe.data());
  if (fd < 0) {
    *why = std::strerror(errno);
    return false;
  }
  close(fd);
  unlink(probe.c_str());
  return true;
}

// The nearest folder at or above `dir` that exists, and whether it is a folder (a regular file
// on the way, as in FILE/x.html, is where making the path fails).
std::string NearestExisting(const std::string& dir, struct stat* st) {
  std::filesystem::path p = dir.empty() ? std::filesystem::path(".") : std::filesystem::path(dir);
  while (stat(p.c_str(), st) != 0) {
    const std::filesystem::path up = p.parent_path();
    if (up.empty() || up == p) {
      p = p.is_absolute() ? std::filesystem::path("/") : std::filesystem::path(".");
      stat(p.c_str(), st);
      break;
    }
    p = up;
  }
  return p.string();
}

}  // namespace

Status CheckOutputFile(const std::string& path, const char* option) {
  std::string note;
  bool exists = false;
  GPUSCOPE_RETURN_IF_ERROR(CheckExisting(path, option, &note, &exists));
  struct stat st {};
  if (exists && stat(path.c_str(), &st) == 0) {
    // A regular file: opened for writing without truncating, which tells what access() would
    // not (root, a read-only file system, a file of /proc); a FIFO is not opened (that waits).
    if (S_ISREG(st.st_mode)) {
      const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
      if (fd < 0)
        return CannotWrite(path, option, std::string("cannot write: ") + std::strerror(errno),
                           "check the file's permissions, or give another path");
      close(fd);
    } else if (access(path.c_str(), W_OK) != 0) {
      return CannotWrite(path, option, std::string("cannot write: ") + std::strerror(errno),
                         "give the path of a file to write");
    }
    return Status::Ok();
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  if (stat(dir.c_str(), &st) != 0) {
    const int e = errno;
    struct stat up {};
    const std::string existing = NearestExisting(dir, &up);
    if (!S_ISDIR(up.st_mode))
      return CannotWrite(path, option,
                         "cannot write into " + SanitizeText(dir) + ": " + SanitizeText(existing) +
                             " is " + KindOf(up.st_mode) + ", not a folder",
                         "give a path inside a folder that exists");
    return CannotWrite(path, option,
                       "cannot write into " + SanitizeText(dir) + ": " + std::strerror(e),
                       "check the folder exists and is writable");
  }
  if (!S_ISDIR(st.st_mode))
    return CannotWrite(path, option,
                       "cannot write into " + SanitizeText(dir) + ": it is " + KindOf(st.st_mode) +
                           ", not a folder",
                       "give a path inside a folder that exists");
  std::string why;
  if (!ProbeCreate(dir, false, &why))
    return CannotWrite(path, option, "cannot create a file in " + SanitizeText(dir) + ": " + why,
                       "check the folder is writable, or give another path");
  return Status::Ok();
}

Status CheckOutputFolder(const std::string& dir, const char* option,
                         const std::vector<std::string>& files) {
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      return Refused(dir, option,
                     std::string("exists and is ") + KindOf(st.st_mode) + ", not a folder",
                     std::string(option) + " takes a folder; it is made if missing");
    std::string why;
    if (!ProbeCreate(dir, false, &why))
      return CannotWrite(dir, option, "cannot create a file in the folder: " + why,
                         "check the folder is writable, or give another one");
    for (const std::string& f : files)
      GPUSCOPE_RETURN_IF_ERROR(CheckOutputFile((std::filesystem::path(dir) / f).string(), option));
    return Status::Ok();
  }
  // Made when written: the nearest folder that exists must be one it can be made in.
  const std::string existing = NearestExisting(dir, &st);
  if (!S_ISDIR(st.st_mode))
    return CannotWrite(dir, option,
                       "cannot create the folder: " + SanitizeText(existing) + " is " +
                           KindOf(st.st_mode) + ", not a folder",
                       "give a folder path whose parents are folders");
  std::string why;
  if (!ProbeCreate(existing, true, &why))
    return CannotWrite(dir, option,
                       "cannot create the folder: nothing can be created in " +
                           SanitizeText(existing) + ": " + why,
                       "give a folder in a writable place");
  return Status::Ok();
}

Status WriteOutputFile(const std::string& path, std::string_view bytes, const char* option,
                       std::string* note) {
  GPUSCOPE_TRY(file, OpenOutputFile(path, option));
  if (note != nullptr) *note = file->note;
  size_t done = 0;
  int error = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(file->fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (close(file->fd) != 0 && error == 0) error = errno;
  if (error != 0)
    return Status::Error(StatusCode::kIoError,
                         std::string(option) + " " + SanitizeText(path) +
                             ": cannot write: " + std::strerror(error) +
                             " (hint: check the disk has space and the folder is writable)");
  return Status::Ok();
}

Result<std::string> CheckReplaceablePath(const std::string& path, const char* option,
                                         std::string* note) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;
    return Status::Error(StatusCode::kIoError, std::string(option) + " " + SanitizeText(path) +
                                                   ": " + std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return path;
  if (!S_ISLNK(st.st_mode))
    return Refused(path, option,
                   std::string("exists and is ") + KindOf(st.st_mode) + "; not replaced",
                   S_ISDIR(st.st_mode) ? "this option takes a file name; give one inside the folder"
                                       : "give the path of a file to write");
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(path, ec);
  if (ec || stat(target.c_str(), &st) != 0)
    return Refused(path, option,
                   "is a symbolic link to " + SanitizeText(LinkTarget(path)) +
                       ", which does not exist; not followed",
                   "give the path of the file to create itself");
  if (!S_ISREG(st.st_mode))
    return Refused(path, option,
                   "is a symbolic link to " + SanitizeText(target.string()) + ", which is " +
                       KindOf(st.st_mode) + "; not replaced",
                   "give the path of a file to write");
  if (note != nullptr) *note = LinkNote(path);
  return target.string();
}

FileStamp StampOf(const std::string& path) {
  FileStamp s;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.device = static_cast<uint64_t>(st.st_dev);
  s.inode = static_cast<uint64_t>(st.st_ino);
  s.size = static_cast<int64_t>(st.st_size);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return s;
}

}  // namespace gpuscope
