#include "cli/output.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/output_file.h"
#include "base/sanitize.h"
#include "render/csv.h"
#include "render/html.h"
#include "render/json.h"
#include "render/text.h"

namespace gpuscope::cli {

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInternal:
      return kExitInternal;
    default:
      return kExitBadInput;
  }
}

void PrintError(const std::string& message) {
  std::fprintf(stderr, "gpuscope: error: %s\n", SanitizeText(message).c_str());
}

void PrintError(const Status& s) { PrintError(s.message()); }

int CheckStdout(int rc) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (flushed && !std::ferror(stdout)) return rc;
  PrintError(std::string("the report could not be written to standard output") +
             (error != 0 ? std::string(": ") + std::strerror(error) : std::string()) +
             " (hint: check the disk has space and that standard output is open)");
  return rc == kExitOk ? kExitBadInput : rc;
}

void ReserveStandardStreams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // Read-only: a write to it fails (EBADF), so CheckStdout still says the output was lost.
    const int opened = open("/dev/null", O_RDONLY);
    if (opened >= 0 && opened != fd) {
      dup2(opened, fd);
      close(opened);
    }
  }
}

namespace {
// A terminal narrower than this still gets 100-column lines: below it, wrapping hurts more.
constexpr size_t kMinWrapColumns = 60;
constexpr size_t kDefaultColumns = 100;

size_t TerminalColumns(int fd) {
  struct winsize ws {};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= kMinWrapColumns) return ws.ws_col;
  return kDefaultColumns;
}
// Every table as DIR/<key>.csv (render/csv.h), and what was written said on stderr.
int WriteCsv(const std::vector<std::pair<std::string, std::string>>& tables,
             const std::string& dir) {
  auto written = render::WriteCsvFiles(tables, dir);
  if (!written.ok()) {
    PrintError(written.status());
    return ExitCodeFor(written.status());
  }
  std::fprintf(stderr, "gpuscope: wrote %zu CSV tables to %s\n", written->size(),
               SanitizeText(dir).c_str());
  return 0;
}

}  // namespace

void AddOutputFlags(CLI::App* app, OutputArgs* args) {
  app->add_flag("--json", args->json, "Print the report as JSON (schema: docs/json-schema.md)");
  app->add_option("--html", args->html_path, "Also write a self-contained HTML report to FILE")
      ->type_name("FILE");
  app->add_option("--csv", args->csv_dir,
                  "Also write every table of the report as CSV: DIR/<table>.csv (e.g. "
                  "ops.csv: every op priced), the folder made if missing")
      ->type_name("DIR");
  app->add_flag("-v,--verbose", args->verbose, "Show all detail");
  app->add_option("--color", args->color,
                  "Colour: auto (when the text goes to a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app->add_option("--width", args->width,
                  "Wrap text at this many columns (0: never; default: the terminal's width when "
                  "the text goes to a terminal, no wrapping otherwise)")
      ->check(CLI::Range(0, 10000));
}

Status CheckOutputArgs(const OutputArgs& args) {
  if (!args.html_path.empty()) GPUSCOPE_RETURN_IF_ERROR(CheckOutputFile(args.html_path, "--html"));
  if (!args.csv_dir.empty()) GPUSCOPE_RETURN_IF_ERROR(CheckOutputFolder(args.csv_dir, "--csv"));
  return Status::Ok();
}

int Emit(const render::Document& doc, const OutputArgs& args) {
  // Every file output checked before any is written, so that a bad --csv never leaves the --html
  // page of the same command behind: CheckOutputArgs' checks, the CSV folder once, with its
  // tables by name.
  std::vector<std::pair<std::string, std::string>> tables;
  Status checked =
      args.html_path.empty() ? Status::Ok() : CheckOutputFile(args.html_path, "--html");
  if (checked.ok() && !args.csv_dir.empty()) {
    tables = render::CsvTables(doc);
    std::vector<std::string> names;
    for (const auto& [key, text] : tables) names.push_back(key + ".csv");
    checked = CheckOutputFolder(args.csv_dir, "--csv", names);
  }
  if (!checked.ok()) {
    PrintError(checked);
    return ExitCodeFor(checked);
  }
  std::string html_note;
  bool html_made = false;  // the page is new: removed again if the CSV tables then fail
  if (!args.html_path.empty()) {
    struct stat st {};
    html_made = lstat(args.html_path.c_str(), &st) != 0;
    const std::string page = render::RenderHtml(doc, {args.verbose});
    if (const Status s = WriteOutputFile(args.html_path, page, "--html", &html_note); !s.ok()) {
      PrintError(s);
      if (html_made) unlink(args.html_path.c_str());
      return ExitCodeFor(s);
    }
  }
  if (!args.csv_dir.empty()) {
    if (int rc = WriteCsv(tables, args.csv_dir); rc != 0) {
      if (html_made) unlink(args.html_path.c_str());
      return rc;
    }
  }
  errno = 0;
  bool put = true;
  if (args.json) {
    put = std::fputs(render::ToJson(doc).c_str(), stdout) >= 0;
  } else {
    const int fd = args.text_to_stderr ? STDERR_FILENO : STDOUT_FILENO;
    std::FILE* stream = args.text_to_stderr ? stderr : stdout;
    const bool tty = !args.never_terminal && isatty(fd);
    render::TextOptions text;
    text.verbose = args.verbose;
    text.color = args.color == "always" || (args.color == "auto" && tty);
    text.width = args.width >= 0 ? static_cast<size_t>(args.width) : tty ? TerminalColumns(fd) : 0;
    put = std::fputs(render::RenderText(doc, text).c_str(), stream) >= 0;
  }
  // The report itself lost (a full disk, /dev/full, a closed stdout) is an error, said with the
  // reason the first failed write gave.
  const int put_errno = errno;
  if (!put || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int e = put_errno != 0 ? put_errno : errno;
    PrintError(std::string("the report could not be written to standard output") +
               (e != 0 ? std::string(": ") + std::strerror(e) : std::string()) +
               " (hint: check the disk has space and that standard output is open)");
    std::clearerr(stdout);  // said once: CheckStdout at exit finds nothing more
    return kExitBadInput;
  }
  if (!args.html_path.empty())
    std::fprintf(stderr, "gpuscope: wrote HTML report %s%s\n", SanitizeText(args.html_path).c_str(),
                 html_note.c_str());
  return 0;
}

}  // namespace gpuscope::cli
