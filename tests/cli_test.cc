// The command line as a user meets it: exit codes, one-line errors naming file and byte offset, and
// the summary of the bundled example compared against its golden JSON.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <simdjson.h>
#include <unistd.h>

#include <map>
#include <set>
#include <sstream>

#include "api/analyze.h"
#include "api/diff.h"
#include "analyze/kernel_class.h"
#include "api/plan.h"
#include "gpuscope/ingest.h"
#include "golden.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using testing::CommandResult;
using testing::DataDir;
using testing::RunGpuscope;
using testing::TempPath;
using testing::WriteFile;

std::string Example() {
  return std::string(GPUSCOPE_SOURCE_DIR) + "/examples/train_input_bound.pt.trace.json.gz";
}

// One line on stderr, naming the file, with the expected text; exit code 2.
void ExpectInputError(const testing::CommandResult& r, const std::string& file,
                      const std::string& text) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("gpuscope: error: " + file), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hint"), std::string::npos) << r.err;
}

// The long names of a subcommand's --help option lines ("  -j,--threads INT …" → threads).
std::set<std::string> FlagsOfHelp(const std::string& help) {
  std::set<std::string> flags;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("--");
    if (line.rfind("  ", 0) != 0 || at == std::string::npos || at > 5) continue;
    const size_t end = line.find(' ', at);
    flags.insert(line.substr(at + 2, end == std::string::npos ? end : end - at - 2));
  }
  return flags;
}

// A subcommand's flags are its options table's rows (help, default, allowed values) and the
// CLI's own, nothing else.
template <typename O>
void ExpectTableIsTheFlags(const std::string& sub, const api::OptionTable<O>& table,
                           std::set<std::string> cli_own) {
  const CommandResult help = RunGpuscope(sub + " --help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const char* own : {"help", "json", "html", "csv", "verbose", "color", "width"})
    cli_own.insert(own);
  for (const api::Option<O>& opt : table) {
    cli_own.insert(std::string(opt.name));
    EXPECT_NE(help.out.find(api::HelpText(opt).substr(0, 40)), std::string::npos) << opt.name;
    if (!opt.allowed.empty()) {
      std::string list;
      for (const std::string& a : opt.allowed) list += (list.empty() ? "" : ",") + a;
      EXPECT_NE(help.out.find("--" + std::string(opt.name) + " TEXT:{" + list + "}"),
                std::string::npos)
          << sub << " --" << opt.name;
    }
  }
  EXPECT_EQ(FlagsOfHelp(help.out), cli_own) << sub;
}

// One options table per subcommand (api/options.h) makes its flags: the man page and completion
// read them from --help, Python its keywords from the same table.
TEST(Cli, OptionsTablesMakeTheFlags) {
  ExpectTableIsTheFlags("plan", api::PlanOptionTable(),
                        {"write-configs", "list-models", "list-gpus"});
  ExpectTableIsTheFlags("analyze", api::AnalyzeOptionTable(), {"stats", "mpi"});
  ExpectTableIsTheFlags("diff", api::DiffOptionTable(), {});
  const CommandResult plan = RunGpuscope("plan --help");
  // Defaults are written once, in the options struct, and shown from there.
  EXPECT_NE(plan.out.find("(default: 0.45)"), std::string::npos);
  EXPECT_NE(plan.out.find("sgd (with momentum) (default: adam)"), std::string::npos);
  EXPECT_NE(RunGpuscope("analyze --help").out.find("-j,--threads INT:INT in [0 - 256]"),
            std::string::npos);
  // api refuses what the table refuses, as the CLI does.
  api::AnalyzeOptions a;
  a.inflater = "lz4";
  EXPECT_EQ(api::AnalyzeInput(DataDir() + "/none.json", a).status().message(),
            "--inflater: lz4 not in {auto, isal, zlib}");
  api::DiffOptions d;
  d.threads = 999;
  EXPECT_EQ(api::DiffInputs("a", "b", d).status().message(),
            "--threads: value not in range 0 to 256");
}

// The binary links no MPI (the plugin does, loaded only for --mpi): readelf finds no libmpi
// among its needed libraries, and --mpi with a plugin that cannot load is a usage error naming
// it, never a crash or a silent single-process run.
TEST(Cli, MpiIsAPluginLoadedOnlyForMpi) {
  const std::string elf = TempPath("needed.txt");
  if (std::system(("readelf -d " + std::string(GPUSCOPE_BINARY) + " >" + elf + " 2>&1").c_str()) ==
      0) {
    const std::string needed = testing::ReadFile(elf);
    EXPECT_NE(needed.find("NEEDED"), std::string::npos) << needed;
    EXPECT_EQ(needed.find("libmpi"), std::string::npos) << needed;
  }
  std::filesystem::remove(elf);
  const std::string folder = std::string(GPUSCOPE_SOURCE_DIR) + "/tests/data/traces/hta";
  setenv("GPUSCOPE_MPI_PLUGIN", "/nonexistent/libgpuscope-mpi.so", 1);
  const CommandResult r = RunGpuscope("analyze --mpi " + folder);
  unsetenv("GPUSCOPE_MPI_PLUGIN");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--mpi: cannot load /nonexistent/libgpuscope-mpi.so"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("verdict"), std::string::npos) << "no single-process report";
}

TEST(Cli, VersionAndHelp) {
  auto r = RunGpuscope("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("gpuscope 0.", 0), 0u) << r.out;
  r = RunGpuscope("analyze --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--json"), std::string::npos);
  r = RunGpuscope("synth --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--dataloader-stall"), std::string::npos);
  r = RunGpuscope("");
  EXPECT_EQ(r.exit_code, 2);
  r = RunGpuscope("analyze --threads -3 x");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Cli, MissingFile) {
  auto r = RunGpuscope("analyze /nonexistent/trace.json");
  ExpectInputError(r, "/nonexistent/trace.json", "no such file or folder");
}

TEST(Cli, EmptyFile) {
  const std::string path = TempPath("empty.json");
  WriteFile(path, "");
  ExpectInputError(RunGpuscope("analyze " + path), path, "at byte 0: empty file");
}

TEST(Cli, FolderWithoutTraces) {
  const std::string dir = TempPath("no_traces");
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/notes.txt", "hello");
  ExpectInputError(RunGpuscope("analyze " + dir), dir, "no trace files in this folder");
}

TEST(Cli, TruncatedJson) {
  const std::string path = TempPath("truncated.json");
  WriteFile(path,
            R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": "X", "na)");
  ExpectInputError(RunGpuscope("analyze " + path), path,
                   "at byte 77: truncated JSON: the input ends inside traceEvents after 1 complete "
                   "events, inside a string");
}

// One '}' missing inside an event makes every later event part of it: the error names that event's
// start, not the end of the file (issue 36 item 6: it said "unbalanced '}'" 46 bytes before EOF).
TEST(Cli, MissingBraceIsLocatedAtItsEvent) {
  std::string json = R"({"traceEvents": [)";
  size_t broken_at = 0;
  for (int i = 0; i < 40; ++i) {
    if (i) json += ", ";
    if (i == 10) broken_at = json.size();
    json += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" +
            std::to_string(1000 + 10 * i) + R"(, "dur": 5, "args": {"device": 0, "stream": 7})" +
            (i == 10 ? "" : "}");
  }
  json += "]}";
  const std::string path = TempPath("missing_brace.json");
  WriteFile(path, json);
  ExpectInputError(RunGpuscope("analyze " + path), path,
                   "at byte " + std::to_string(broken_at) +
                       ": the traceEvents element starting here is closed by the ']' at byte " +
                       std::to_string(json.size() - 2) + ": a '}' is missing inside it");
}

// Error paths a new user met (issue 32 item 7).
TEST(Cli, ErrorPathsSayWhatToDo) {
  // A long option with one dash read as -j "son": "--threads: Value son not in range".
  auto r = RunGpuscope("analyze -json " + Example());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("\"-json\" is not an option: long options take two dashes (hint: --json)"),
            std::string::npos)
      << r.err;
  // Nsight's own report format: export it first.
  const std::string rep = TempPath("profile.nsys-rep");
  WriteFile(rep, std::string("\x7f\x01NSYS binary report") + std::string(100, '\0'));
  ExpectInputError(RunGpuscope("analyze " + rep), rep, "this is an Nsight Systems report");
  EXPECT_NE(RunGpuscope("analyze " + rep).err.find("nsys export --type sqlite"), std::string::npos);
  // JSON that holds no event object is no trace (was exit 0, "no GPU work").
  const std::string arr = TempPath("numbers.json");
  WriteFile(arr, "[1,2,3]");
  ExpectInputError(
      RunGpuscope("analyze " + arr), arr,
      "not a JSON trace: the top-level array holds 3 elements, none of them an event object");
  // The generic refusal names every input gpuscope reads.
  const std::string text = TempPath("notes.txt");
  WriteFile(text, "hello");
  r = RunGpuscope("analyze " + text);
  EXPECT_NE(r.err.find("Nsight Systems SQLite exports"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CUDA memory snapshots"), std::string::npos) << r.err;
  // run: outputs written at the end are checked before the command starts.
  const std::string dir = TempPath("a_folder");
  std::filesystem::create_directory(dir);
  for (const char* option : {"--html", "--report-json"}) {
    r = RunGpuscope(std::string("run ") + option + " " + dir + " -- sh -c 'echo started'");
    EXPECT_EQ(r.exit_code, 2) << option << r.err;
    EXPECT_EQ(r.out.find("started"), std::string::npos) << option << ": the command ran";
    EXPECT_NE(r.err.find(std::string(option) + " " + dir + ": exists and is a folder"),
              std::string::npos)
        << r.err;
  }
  std::filesystem::remove(dir);
  for (const std::string& f : {rep, arr, text}) std::filesystem::remove(f);
}

TEST(Cli, TruncatedGzip) {
  const std::string full = testing::ReadFile(Example());
  const std::string path = TempPath("truncated.json.gz");
  WriteFile(path, full.substr(0, full.size() / 2));
  ExpectInputError(RunGpuscope("analyze " + path), path, "truncated gzip");
  // The gzip is detected from its bytes, not its name.
  const std::string renamed = TempPath("looks_plain.json");
  WriteFile(renamed, full);
  auto r = RunGpuscope("analyze " + renamed);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(Cli, JsonThatIsNotATrace) {
  const std::string path = TempPath("config.json");
  WriteFile(path, R"({"hidden_size": 4096, "num_layers": 32})");
  ExpectInputError(RunGpuscope("analyze " + path), path,
                   "not a trace: the JSON object has no \"traceEvents\" array");
}

TEST(Cli, BinaryFile) {
  const std::string path = TempPath("model.bin");
  WriteFile(path, std::string("\x7f"
                              "ELF\x02\x01\x01\0\0\0",
                              10));
  ExpectInputError(RunGpuscope("analyze " + path), path,
                   "at byte 0: not a JSON trace: expected '{' or '[' but found 0x7f");
}

TEST(Cli, ZeroGpuEventsIsAWarningNotAnError) {
  const std::string path = TempPath("cpu_only.json");
  WriteFile(
      path,
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})");
  auto r = RunGpuscope("analyze --color never " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("warning     no GPU events in this trace"), std::string::npos) << r.out;
}

TEST(Cli, OneBadFileInAFolderIsReportedAndTheRestAnalysed) {
  const std::string dir = TempPath("mixed_ranks");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(Example(), dir + "/rank0.pt.trace.json.gz",
                             std::filesystem::copy_options::overwrite_existing);
  WriteFile(dir + "/rank1.pt.trace.json", "{\"traceEvents\": [");
  auto r = RunGpuscope("analyze --json " + dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("rank1.pt.trace.json: at byte 17: truncated JSON"), std::string::npos)
      << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(doc["schema"].get_string().value(), "gpuscope.report");
  EXPECT_TRUE(doc["sections"]["rank_0"].is_object());
  EXPECT_EQ(doc["sections"]["failures"]["items"].get_object().size(), 1u);
}

// Golden: the summary JSON of the bundled example, minus the machine-specific path.
TEST(Cli, ExampleSummaryMatchesGolden) {
  const std::string out = testing::RunForGolden(
      "analyze --json " + Example(), {{Example(), "examples/train_input_bound.pt.trace.json.gz"}});
  ASSERT_FALSE(out.empty());
  testing::ExpectGolden(out, testing::GoldenDir() + "/example_summary.json");
}

TEST(Cli, TextSummaryOfTheExample) {
  auto r = RunGpuscope("analyze --color never " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NVIDIA A100-SXM4-80GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("diagnostics none: every event was read"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\033["), std::string::npos) << "no colour when not a terminal";
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

// Golden: the full JSON report of three real traces (old schema, NCCL + ns decimals, ns trace).
// Paths are replaced by their shared-relative form so the files do not depend on the checkout
// (nor on whether the trace came from tests/data or shared/).
TEST(Cli, RealTraceReportsMatchGolden) {
  testing::RealParts parts;
  const std::pair<const char*, const char*> cases[] = {
      {"kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz",
       "resnet50_nw0.json"},
      {"hta/trace_diff_control_A100_rank3of8.json.gz", "trace_diff_control.json"},
      {"hta/ns_resolution_V100_rank0.pt.trace.json.gz", "ns_resolution.json"},
  };
  for (const auto& [trace, golden] : cases) {
    if (!parts.Have({"traces/" + std::string(trace)})) continue;
    SCOPED_TRACE(trace);
    const std::string path = testing::RealTrace(trace);
    const std::string out = testing::RunForGolden("analyze --json " + path,
                                                  {{path, std::string("shared/traces/") + trace}});
    ASSERT_FALSE(out.empty());
    testing::ExpectGolden(out, testing::GoldenDir() + "/" + golden);
  }
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

}  // namespace
}  // namespace gpuscope

// ---- Progress bar: on stderr only when stderr is a terminal ----

namespace gpuscope {
namespace {

using testing::CommandResult;
using testing::DataDir;
using testing::RunGpuscope;
using testing::TempPath;

// Runs gpuscope with stdout to /dev/null and stderr on a pseudo-terminal; returns what the terminal
// saw. GPUSCOPE_PROGRESS_AFTER_MS=0 makes the bar appear at once (it waits 1 s by default).
std::string StderrOnATerminal(const std::vector<std::string>& args) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    setenv("GPUSCOPE_PROGRESS_AFTER_MS", "0", 1);
    std::vector<char*> argv = {const_cast<char*>(GPUSCOPE_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(GPUSCOPE_BINARY, argv.data());
    _exit(127);
  }
  std::string seen;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child has exited and closed the terminal
    seen.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << seen;
  return seen;
}

}  // namespace

TEST(Cli, ProgressBarOnATerminalOnly) {
  const std::string trace = TempPath("progress.pt.trace.json");
  auto s = RunGpuscope("synth -o " + trace + " --steps 40");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const std::string tty = StderrOnATerminal({"analyze", trace, "--batch-mb", "0.05"});
  EXPECT_NE(tty.find("reading ["), std::string::npos) << tty;
  EXPECT_NE(tty.find("100%"), std::string::npos) << tty;
  EXPECT_NE(tty.find("analysing"), std::string::npos) << tty;
  // The bar is erased at the end: the last thing on the line is spaces and a carriage return.
  EXPECT_EQ(tty.substr(tty.size() - 1), "\r") << tty;

  // Not a terminal: nothing but the report (stderr empty).
  setenv("GPUSCOPE_PROGRESS_AFTER_MS", "0", 1);
  auto piped = RunGpuscope("analyze " + trace + " --batch-mb 0.05");
  unsetenv("GPUSCOPE_PROGRESS_AFTER_MS");
  EXPECT_EQ(piped.exit_code, 0);
  EXPECT_EQ(piped.err, "");
}

}  // namespace gpuscope

namespace gpuscope {
namespace {

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The terminal report fits 100 columns, whatever the names in the trace (long mangled kernels,
// long warnings): checked on the example and on every real trace (shared/, else tests/data).
TEST(Cli, TextReportFitsOneHundredColumns) {
  std::vector<std::string> inputs = {std::string(GPUSCOPE_SOURCE_DIR) +
                                     "/examples/train_input_bound.pt.trace.json.gz"};
  if (std::filesystem::exists(testing::RealTraceFolder())) {
    for (const auto& dir : std::filesystem::directory_iterator(testing::RealTraceFolder()))
      if (dir.is_directory())
        for (const auto& f : std::filesystem::directory_iterator(dir.path()))
          if (f.path().string().find(".json") != std::string::npos) inputs.push_back(f.path());
  }
  size_t lines = 0;
  for (const std::string& in : inputs) {
    auto r = testing::RunGpuscope("analyze --verbose --width 100 " + in);
    std::istringstream text(r.out);
    for (std::string line; std::getline(text, line); ++lines)
      EXPECT_LE(CodePoints(line), 100u) << in << "\n" << line;
  }
  std::printf("%zu inputs, %zu lines checked\n", inputs.size(), lines);
  EXPECT_GT(lines, 40u);
}

}  // namespace
}  // namespace gpuscope

// ---- Command-line manners: did you mean, run's command after --, examples in --help ----

namespace gpuscope {
namespace {

using testing::CommandResult;
using testing::DataDir;
using testing::RunGpuscope;

// Exactly one line on stderr, equal to `line`; exit code 2; nothing on stdout.
void ExpectUsageError(const std::string& args, const std::string& line) {
  SCOPED_TRACE("gpuscope " + args);
  const auto r = RunGpuscope(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpuscope: error: " + line + "\n");
  EXPECT_EQ(r.out, "");
}

TEST(CliUsage, UnknownCommandSuggestsTheClosest) {
  // Before: "A subcommand is required".
  ExpectUsageError("anaylze x",
                   "unknown command \"anaylze\" (did you mean \"analyze\"?) (hint: "
                   "gpuscope --help lists the commands)");
  ExpectUsageError("plna --model llama-3-8b",
                   "unknown command \"plna\" (did you mean \"plan\"?) (hint: gpuscope --help "
                   "lists the commands)");
  ExpectUsageError("dif a b",
                   "unknown command \"dif\" (did you mean \"diff\"?) (hint: gpuscope "
                   "--help lists the commands)");
  ExpectUsageError("frobnicate",
                   "unknown command \"frobnicate\" (hint: the commands are analyze, map, reduce, "
                   "run, synth, plan, diff or tune; gpuscope --help)");
  // A file given without the command.
  ExpectUsageError(Example(), "unknown command \"" + Example() +
                                  "\" (hint: to analyse it: gpuscope analyze " + Example() + ")");
  ExpectUsageError("",
                   "a command is required: analyze, map, reduce, run, synth, plan, diff or tune "
                   "(hint: gpuscope analyze TRACE; gpuscope --help describes each)");
}

// synth's job-level flags: durations need a unit, --late-rank needs --late; a job with two runs
// writes run<J>.rank<R> files.
TEST(CliUsage, SynthJobFlags) {
  ExpectUsageError("synth -o x --ranks 2 --late-rank 1 --late 5",
                   "--late \"5\" is not a duration (hint: e.g. 500us, 2ms, 1.5s)");
  ExpectUsageError("synth -o x --ranks 2 --late-rank 1",
                   "--late-rank needs --late (how late, e.g. --late 500us)");
  ExpectUsageError("synth -o x --ranks 2 --late-rank 2 --late 1ms",
                   "synth: late_rank must be -1 (none) or a rank in [0, 2) (got 2)");
  const std::string dir = testing::TempPath("synth_job_flags");
  const auto r = RunGpuscope("synth -o " + dir +
                             " --ranks 2 --steps 2 --layers 1 --late-rank 1 "
                             "--late 300us --clock-offset 5ms --arrival-jitter 2us --runs 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("wrote 2 runs of 2 ranks to " + dir, 0), 0u) << r.out;
  for (const char* f : {"run0.rank0", "run0.rank1", "run1.rank0", "run1.rank1"}) {
    const std::string text = testing::ReadFile(dir + "/" + f + ".pt.trace.json");
    EXPECT_NE(text.find("\"Seq\": "), std::string::npos) << f;
  }
}

TEST(CliUsage, UnknownOptionSuggestsTheClosest) {
  // Before: "The following argument was not expected: --jsn", no suggestion.
  ExpectUsageError("analyze --jsn x",
                   "unknown option \"--jsn\" for gpuscope analyze (did you "
                   "mean \"--json\"?) (hint: gpuscope analyze --help lists "
                   "the options)");
  ExpectUsageError("analyze x --thraeds=4",
                   "unknown option \"--thraeds=4\" for gpuscope analyze (did you mean "
                   "\"--threads\"?) (hint: gpuscope analyze --help lists the options)");
  ExpectUsageError("analyze --thr 4 x",
                   "unknown option \"--thr\" for gpuscope analyze (did you "
                   "mean \"--threads\"?) (hint: gpuscope analyze --help "
                   "lists the options)");
  ExpectUsageError("diff a b --htlm d.html",
                   "unknown option \"--htlm\" for gpuscope diff (did "
                   "you mean \"--html\"?) (hint: gpuscope diff --help "
                   "lists the options)");
  ExpectUsageError("plan --model llama-3-8b --gpus 8 --global-bacth 64",
                   "unknown option \"--global-bacth\" for gpuscope plan (did you mean "
                   "\"--global-batch\"?) (hint: gpuscope plan --help lists the options)");
  ExpectUsageError("synth -o x.json --seeed 3",
                   "unknown option \"--seeed\" for gpuscope synth "
                   "(did you mean \"--seed\"?) (hint: gpuscope "
                   "synth --help lists the options)");
  ExpectUsageError("--verison",
                   "unknown option \"--verison\" for gpuscope (did you mean "
                   "\"--version\"?) (hint: gpuscope --help lists the options)");
  // Far from every option, or a one-letter option: no guess.
  ExpectUsageError("analyze --frobnicate x",
                   "unknown option \"--frobnicate\" for gpuscope "
                   "analyze (hint: gpuscope analyze --help lists the "
                   "options)");
  ExpectUsageError("analyze -x x",
                   "unknown option \"-x\" for gpuscope analyze (hint: gpuscope "
                   "analyze --help lists the options)");
  // A known option's value is not mistaken for an option; CLI11's own check still answers.
  const auto r = RunGpuscope("analyze --threads -3 x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--threads: Value -3 not in range 0 to 256"), std::string::npos) << r.err;
}

TEST(CliUsage, RunCommandBelongsAfterDoubleDash) {
  // Before: "The following argument was not expected: -V".
  ExpectUsageError("run python3 -V",
                   "\"-V\" is not an option of gpuscope run (hint: put the "
                   "command after --, so that its options are its own: "
                   "gpuscope run -- python3 -V)");
  ExpectUsageError("run --record r.jsonl python3 -c 'print(1)'",
                   "\"-c\" is not an option of gpuscope run (hint: put the command after --, so "
                   "that its options are its own: gpuscope run --record r.jsonl -- python3 -c "
                   "'print(1)')");
  ExpectUsageError("run --recrod r.jsonl -- python3 -V",
                   "unknown option \"--recrod\" for gpuscope run (did you mean \"--record\"?) "
                   "(hint: gpuscope run --help lists the options)");
  ExpectUsageError("run --record r.jsonl",
                   "run needs the command to watch, after -- (hint: "
                   "gpuscope run -- python train.py)");
  // A bad value is not a missing command: CLI11's message stands.
  const auto r = RunGpuscope("run --live bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--live"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("needs the command"), std::string::npos) << r.err;
}

TEST(CliUsage, EveryHelpEndsWithAnExample) {
  for (const char* command : {"", "analyze", "run", "synth", "plan", "diff"}) {
    SCOPED_TRACE(command);
    const auto r = RunGpuscope(std::string(command) + " --help");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The last block: "Example:" or "Examples:", then indented command lines of this command.
    const size_t block = r.out.rfind("\nExample");
    ASSERT_NE(block, std::string::npos) << r.out;
    std::istringstream lines(r.out.substr(block + 1));
    std::string line;
    std::getline(lines, line);
    EXPECT_TRUE(line == "Example:" || line == "Examples:") << line;
    size_t examples = 0;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      EXPECT_EQ(line.rfind(std::string("  gpuscope ") + command, 0), 0u) << line;
      ++examples;
    }
    EXPECT_GE(examples, 1u);
  }
}

// kernels.csv holds every distinct kernel of a real trace (by short name, per class: copies and
// sets in class memory), with the run, rank and trace file of each row.
TEST(Cli, CsvKernelTableHasEveryDistinctKernel) {
  const std::string trace = testing::RealPath(
      "traces/kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
  GPUSCOPE_REQUIRE_REAL(
      "traces/kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
  testing::ScopedTempDir dir;
  const std::string out = dir.File("tables");
  const auto r = RunGpuscope("analyze --csv " + out + " " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = testing::ReadCsv(out + "/kernels.csv");
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[0][0], "section");
  EXPECT_EQ(rows[0][1], "run");
  EXPECT_EQ(rows[0][2], "rank");
  EXPECT_EQ(rows[0][3], "path");
  EXPECT_EQ(rows[0][4], "class");
  EXPECT_EQ(rows[0][5], "name");
  // The trace's distinct (class, short name) pairs, counted here from the model.
  Result<Trace> t = LoadTrace(trace);
  ASSERT_TRUE(t.ok());
  const analyze::KernelClasses classes = analyze::BuildKernelClasses(*t);
  std::set<std::pair<std::string, std::string>> distinct;
  for (size_t i = 0; i < t->gpu.size(); ++i)
    if (t->gpu.kind[i] != GpuKind::kSync)
      distinct.insert({analyze::KernelClassName(classes.row[i]),
                       classes.OfName(t->gpu.name[i]).short_name});
  std::set<std::pair<std::string, std::string>> listed;
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][0], "input_0");  // no rank in this trace: its section is input_0
    EXPECT_EQ(rows[i][1], "job_1");    // one trace, one run
    EXPECT_EQ(rows[i][2], "");
    EXPECT_EQ(rows[i][3], trace);
    listed.insert({rows[i][4], rows[i][5]});
  }
  EXPECT_EQ(listed.size(), rows.size() - 1) << "each kernel once";
  EXPECT_EQ(listed, distinct);
  EXPECT_GT(listed.size(), 50u);  // ResNet-50: more than the top 10 per class
}

// A folder holding two runs of two ranks each: every row names its run, so the two runs' rank 0
// stay apart (both have rank 0 and the same tables), and each section is in one run.
TEST(Cli, CsvRowsOfTwoRunsNameTheirRun) {
  testing::ScopedTempDir dir;
  const std::string folder = dir.File("two_runs");
  ASSERT_EQ(RunGpuscope("synth -o " + dir.File("a") + " --ranks 2 --steps 4").exit_code, 0);
  ASSERT_EQ(RunGpuscope("synth -o " + dir.File("b") + " --ranks 2 --steps 4 --dataloader-stall 0.3")
                .exit_code,
            0);
  std::filesystem::create_directory(folder);
  for (const char* run : {"a", "b"})
    for (const char* rank : {"rank0", "rank1"})
      std::filesystem::copy_file(dir.File(std::string(run) + "/" + rank + ".pt.trace.json"),
                                 folder + "/" + run + "_" + rank + ".pt.trace.json");
  const std::string out = dir.File("tables");
  const auto r = RunGpuscope("analyze --csv " + out + " " + folder);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = testing::ReadCsv(out + "/per_step.csv");
  ASSERT_GE(rows.size(), 2u);
  ASSERT_EQ(rows[0][1], "run");
  std::map<std::string, std::set<std::string>> runs_of_section;
  std::map<std::string, std::set<std::string>> paths_of_rank0_by_run;
  for (size_t i = 1; i < rows.size(); ++i) {
    runs_of_section[rows[i][0]].insert(rows[i][1]);
    if (rows[i][2] == "0") paths_of_rank0_by_run[rows[i][1]].insert(rows[i][3]);
  }
  EXPECT_EQ(runs_of_section.size(), 4u);
  for (const auto& [section, runs] : runs_of_section) EXPECT_EQ(runs.size(), 1u) << section;
  ASSERT_EQ(paths_of_rank0_by_run.size(), 2u);
  EXPECT_EQ(paths_of_rank0_by_run["job_1"].size(), 1u);
  EXPECT_EQ(paths_of_rank0_by_run["job_2"].size(), 1u);
  EXPECT_NE(*paths_of_rank0_by_run["job_1"].begin(), *paths_of_rank0_by_run["job_2"].begin());
}

// --csv DIR writes every table of the report as DIR/<table>.csv, ops.csv among them: the
// columns the issue names, a GEMM priced by its formula, a convolution of a trace without
// Concrete Inputs left unpriced (never guessed); a --csv that is a file is refused.
TEST(Cli, CsvWritesEveryTableWithOpCosts) {
  const std::string trace = testing::RealPath(
      "traces/kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
  GPUSCOPE_REQUIRE_REAL(
      "traces/kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
  testing::ScopedTempDir dir;
  const std::string out = dir.File("tables");
  const auto r = RunGpuscope("analyze --csv " + out + " " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("CSV tables to " + out), std::string::npos) << r.err;
  for (const char* table : {"ops", "kernel_costs", "per_step", "top_kernels_compute"})
    EXPECT_TRUE(std::filesystem::exists(out + "/" + table + ".csv")) << table;
  std::ifstream in(out + "/ops.csv");
  std::string header;
  std::getline(in, header);
  for (const char* column :
       {"section,", "op,", "input_dims,", "count,", "time_ns,", "flops,", "bytes,", "bound,"})
    EXPECT_NE(header.find(column), std::string::npos) << column << " in " << header;
  std::string line;
  bool gemm = false, conv = false;
  while (std::getline(in, line)) {
    // The classifier: aten::addmm [[1000], [32, 2048], [2048, 1000]], 2·32·2048·1000 + 32·1000.
    if (line.find("aten::addmm,\"[[1000], [32, 2048], [2048, 1000]") != std::string::npos) {
      gemm = true;
      EXPECT_NE(line.find(",131104000,"), std::string::npos) << line;
    }
    if (line.find("aten::convolution,") != std::string::npos) {
      conv = true;
      EXPECT_NE(line.find("shapes_not_understood"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(gemm);
  EXPECT_TRUE(conv);
  // Per kernel: the same figures, the roofline's included.
  std::ifstream kin(out + "/kernel_costs.csv");
  std::string kheader;
  std::getline(kin, kheader);
  for (const char* column : {"kernel,", "time_ns,", "flops,", "bytes,", "achieved_tflops,",
                             "intensity,", "bound,", "roofline_ns,", "efficiency_share"})
    EXPECT_NE(kheader.find(column), std::string::npos) << column << " in " << kheader;
  // A path that is a file, not a folder: exit 2, nothing written.
  const std::string file = dir.File("plain");
  WriteFile(file, "x");
  const auto bad = RunGpuscope("analyze --csv " + file + " " + trace);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("not a folder"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gpuscope
