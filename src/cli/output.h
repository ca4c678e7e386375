// Every subcommand ends here: a document goes to the terminal as text, to stdout as JSON
// (--json), and to a file as HTML (--html FILE). No subcommand renders by itself.
#pragma once

#include <string>

#include "gpuscope/status.h"
#include "render/document.h"

namespace CLI {
class App;
}

namespace gpuscope::cli {

struct OutputArgs {
  bool json = false;
  bool verbose = false;
  std::string html_path;       // empty: no HTML page
  std::string csv_dir;         // empty: no CSV; else every table as DIR/<table key>.csv
  std::string color = "auto";  // auto (a terminal), always, never
  // Under mpirun every process's stdout is a pty, whatever mpirun's own is: treat it as not a
  // terminal (no color, no wrapping unless --color / --width ask), so output is as without MPI.
  bool never_terminal = false;
  int width = -1;  // text columns; -1: the terminal's width on a terminal, else none
  // Text to stderr instead of stdout (`run`: the watched command keeps stdout); wrapping and
  // colour then follow stderr's terminal. JSON stays on stdout.
  bool text_to_stderr = false;
};

// Exit codes of every subcommand (README): 0 done, 1 internal error, 2 bad input or usage.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;
int ExitCodeFor(const Status& s);
// "gpuscope: error: MESSAGE" on stderr; messages name paths and values as typed, so through the
// shared sanitiser (no control bytes reach the terminal).
void PrintError(const std::string& message);
void PrintError(const Status& s);

// Every subcommand's exit goes through this: standard output is flushed and checked, so a report
// lost to a full disk, /dev/full or a closed stdout is an error (exit 2), never a silent exit 0.
int CheckStdout(int rc);
// At start: a standard stream the caller closed (`>&-`) is held by /dev/null opened read-only, so
// no file gpuscope opens takes its number (a report would land in it) and writes to it still fail.
void ReserveStandardStreams();

// Adds --json, --html FILE, --csv DIR, -v/--verbose, --color and --width to a subcommand.
void AddOutputFlags(CLI::App* app, OutputArgs* args);

// --html FILE and --csv DIR checked as they will be written (base/output_file.h: CheckOutputFile,
// CheckOutputFolder), before anything is: for a command that runs for long before its report
// (`run`, `tune`) or writes other files too (`plan --write-configs`), up front.
Status CheckOutputArgs(const OutputArgs& args);

// Writes the views the flags ask for. Returns 0, or 2 when the HTML file, a CSV file or the report
// on standard output cannot be written (the error is printed; outputs go through
// base/output_file.h, so nothing an output path names is replaced or damaged). Every file is
// checked before any is written, and a write that still fails removes the files this call created
// (a new --html page, the CSV tables and folders it made), so a failed command leaves no half set.
// Text wraps to the terminal's width only when its stream is a terminal.
int Emit(const render::Document& doc, const OutputArgs& args);

}  // namespace gpuscope::cli
