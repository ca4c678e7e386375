#include "cli/output.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/sanitize.h"
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
}  // namespace

void AddOutputFlags(CLI::App* app, OutputArgs* args) {
  app->add_flag("--json", args->json, "Print the report as JSON (schema: docs/json-schema.md)");
  app->add_option("--html", args->html_path, "Also write a self-contained HTML report to FILE")
      ->type_name("FILE");
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
