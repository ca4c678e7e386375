#include "cli/output.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

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

namespace {
// A terminal narrower than this still gets 100-column lines: below it, wrapping hurts more.
constexpr size_t kMinWrapColumns = 60;
constexpr size_t kDefaultColumns = 100;

size_t TerminalColumns(int fd) {
  struct winsize ws {};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= kMinWrapColumns) return ws.ws_col;
  return kDefaultColumns;
}
// Every table as DIR/<key>.csv. A path that exists and is not a regular file (a folder, a FIFO,
// a device) is never written to.
int WriteCsv(const render::Document& doc, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) {
    std::fprintf(stderr, "gpuscope: error: cannot write CSV tables to %s: not a folder (hint: "
                 "--csv takes a folder; it is made if missing)\n", dir.c_str());
    return 2;
  }
  size_t written = 0;
  for (const auto& [key, text] : render::CsvTables(doc)) {
    const fs::path path = fs::path(dir) / (key + ".csv");
    if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
      std::fprintf(stderr, "gpuscope: error: %s exists and is not a regular file; not written\n",
                   path.c_str());
      return 2;
    }
    std::FILE* f = std::fopen(path.c_str(), "wb");
    bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (f && std::fclose(f) != 0) ok = false;
    if (!ok) {
      std::fprintf(stderr, "gpuscope: error: cannot write %s: %s (hint: check the folder is "
                   "writable)\n", path.c_str(), std::strerror(errno));
      return 2;
    }
    ++written;
  }
  std::fprintf(stderr, "gpuscope: wrote %zu CSV tables to %s\n", written, dir.c_str());
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

int Emit(const render::Document& doc, const OutputArgs& args) {
  if (!args.html_path.empty()) {
    const std::string page = render::RenderHtml(doc, {args.verbose});
    std::FILE* f = std::fopen(args.html_path.c_str(), "wb");
    bool ok = f && std::fwrite(page.data(), 1, page.size(), f) == page.size();
    if (f && std::fclose(f) != 0) ok = false;
    if (!ok) {
      std::fprintf(stderr,
                   "gpuscope: error: cannot write HTML report to %s: %s (hint: check the folder "
                   "exists and is writable)\n",
                   args.html_path.c_str(), std::strerror(errno));
      return 2;
    }
  }
  if (!args.csv_dir.empty()) {
    if (int rc = WriteCsv(doc, args.csv_dir); rc != 0) return rc;
  }
  if (args.json) {
    std::fputs(render::ToJson(doc).c_str(), stdout);
  } else {
    const int fd = args.text_to_stderr ? STDERR_FILENO : STDOUT_FILENO;
    std::FILE* stream = args.text_to_stderr ? stderr : stdout;
    const bool tty = !args.never_terminal && isatty(fd);
    render::TextOptions text;
    text.verbose = args.verbose;
    text.color = args.color == "always" || (args.color == "auto" && tty);
    text.width = args.width >= 0 ? static_cast<size_t>(args.width) : tty ? TerminalColumns(fd) : 0;
    std::fputs(render::RenderText(doc, text).c_str(), stream);
  }
  std::fflush(stdout);
  if (!args.html_path.empty())
    std::fprintf(stderr, "gpuscope: wrote HTML report %s\n", args.html_path.c_str());
  return 0;
}

}  // namespace gpuscope::cli
