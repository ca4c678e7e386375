// Where gpuscope writes: one check for every output option (-o, --html, --csv, --report-json,
// --record, --results, --tensorboard, --write-configs), so that no output ever replaces or
// damages what the path already names.
//
//   * Nothing there, or a regular file: written (created, or truncated and rewritten).
//   * A symbolic link is followed, never replaced, and never silently: the caller names the file it
//     reached (`OutputFile::note`). A dangling link is refused: writing would create a file
//     somewhere the user did not name.
//   * A FIFO or a character device (/dev/null, /dev/stdout, a terminal) is written into, as `cat >`
//     would; it is never replaced. (Opening a FIFO waits for its reader, as it does for any tool.)
//   * A folder, a block device or a socket is refused with a hint: writing into a disk would
//     destroy it, and a folder is not a file.
//
// The summary file (`map -o`) is written to a temporary file and renamed over the path;
// `CheckReplaceablePath` gives the path to rename over, refusing anything but a regular file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/status.h"

namespace gpuscope {

enum class OutputOpen : uint8_t {
  kTruncate,  // the file's old content goes
  kAppend,    // lines added at the end (tune --results)
};

// An opened output. `fd` is owned by the caller (close it, or fdopen it).
struct OutputFile {
  int fd = -1;
  // "" or " (through the symbolic link PATH → TARGET)": appended to the caller's "wrote" line.
  std::string note;
};

// Opens `path` for writing under the rules above. `option` names the flag in messages ("--html").
Result<OutputFile> OpenOutputFile(const std::string& path, const char* option,
                                  OutputOpen mode = OutputOpen::kTruncate);

// The checks OpenOutputFile makes, without writing anything, plus where the file would go: an
// existing regular file opened for writing (not truncated), else a folder that exists and in
// which a file can be created — tried by creating and removing one, since access() says yes to
// root everywhere, /proc included. For outputs written at the end of a long run (`run --html`,
// `tune --html`) and for every output of a command before any is written.
Status CheckOutputFile(const std::string& path, const char* option);

// The same for an output folder (--csv, --write-configs; made if missing): a folder that exists
// and can hold a new file, each of `files` in it (names) checked as above; or a path that can be
// made — the nearest part of it that exists is a folder something can be created in.
Status CheckOutputFolder(const std::string& dir, const char* option,
                         const std::vector<std::string>& files = {});

// Opens, writes all of `bytes` and closes; an error names the path, errno and a hint. `note`, when
// given, receives OutputFile::note.
Status WriteOutputFile(const std::string& path, std::string_view bytes, const char* option,
                       std::string* note = nullptr);

// The path a temporary file may be renamed over: `path` itself when nothing or a regular file is
// there, the regular file a symbolic link leads to (said in `*note`), else an error.
Result<std::string> CheckReplaceablePath(const std::string& path, const char* option,
                                         std::string* note);

// What a path holds, to tell whether another process changed it meanwhile (two `map -o` writers of
// one file): absent, or device, inode, size and modification time.
struct FileStamp {
  bool exists = false;
  uint64_t device = 0, inode = 0;
  int64_t size = 0, mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
FileStamp StampOf(const std::string& path);

}  // namespace gpuscope
