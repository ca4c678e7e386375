#include "cli/usage.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace gpuscope::cli {

size_t EditDistance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic-programming table: the swap looks two rows back.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> ClosestMatch(std::string_view word,
                                        const std::vector<std::string>& candidates) {
  const size_t allowed = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  if (best) return best;
  // "--thr" for "--threads": a prefix of exactly one candidate.
  if (word.size() < 2) return std::nullopt;
  for (const std::string& c : candidates) {
    if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) {
      if (best) return std::nullopt;  // ambiguous
      best = c;
    }
  }
  return best;
}

namespace {

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// One argument as a POSIX shell reads it back: bare when safe, else in single quotes.
std::string ShellWord(const std::string& s) {
  const bool safe = !s.empty() && s.find_first_not_of(
                                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                      "QRSTUVWXYZ0123456789_-+=./:,@%") == std::string::npos;
  if (safe) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

std::string JoinOr(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

// A number such as "-3" is a value, not an option.
bool LooksNumeric(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

struct UnknownOption {
  std::string token;  // as typed, e.g. "--jsn" or "--jsn=1"
  std::string name;   // without dashes and value: "jsn"
  bool is_long = true;
};

struct Scan {
  std::optional<UnknownOption> unknown;    // the first option `app` does not know
  std::optional<size_t> first_positional;  // index in `args` of the first non-option argument
  bool positional_before_unknown = false;
};

// Scans `args[from..]` as CLI11 does: a known option that takes a value consumes the next
// argument unless written --name=value or -nVALUE, and "--" ends the options. Stops at the first
// unknown option.
Scan ScanOptions(const CLI::App& app, const std::vector<std::string>& args, size_t from) {
  Scan scan;
  for (size_t i = from; i < args.size(); ++i) {
    const std::string& t = args[i];
    if (t == "--") {
      if (i + 1 < args.size() && !scan.first_positional) scan.first_positional = i + 1;
      break;
    }
    const bool is_long = t.size() > 2 && t.compare(0, 2, "--") == 0;
    const bool is_short =
        !is_long && t.size() > 1 && t[0] == '-' && t[1] != '-' && !LooksNumeric(t);
    if (!is_long && !is_short) {
      if (!scan.first_positional) scan.first_positional = i;
      continue;
    }
    const size_t eq = t.find('=');
    const std::string name =
        is_long ? t.substr(2, eq == std::string::npos ? eq : eq - 2) : t.substr(1, 1);
    const CLI::Option* match = nullptr;
    for (const CLI::Option* opt : app.get_options()) {
      const auto& names = is_long ? opt->get_lnames() : opt->get_snames();
      if (std::find(names.begin(), names.end(), name) != names.end()) match = opt;
    }
    if (!match) {
      scan.unknown = UnknownOption{t, name, is_long};
      scan.positional_before_unknown = scan.first_positional.has_value();
      return scan;
    }
    const bool value_attached = is_long ? eq != std::string::npos : t.size() > 2;
    if (match->get_items_expected_max() > 0 && !value_attached) ++i;
  }
  return scan;
}

std::vector<std::string> OptionNames(const CLI::App& app, bool is_long) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& n : is_long ? opt->get_lnames() : opt->get_snames()) names.push_back(n);
  return names;
}

std::string UnknownOptionMessage(const CLI::App& app, const std::string& where,
                                 const UnknownOption& u) {
  std::string msg = "unknown option " + Quoted(u.token) + " for " + where;
  // One-letter options are all one edit apart: a suggestion among them would be a guess.
  if (auto near = u.is_long ? ClosestMatch(u.name, OptionNames(app, true)) : std::nullopt)
    msg += " (did you mean " + Quoted((u.is_long ? "--" : "-") + *near) + "?)";
  return msg + " (hint: " + where + " --help lists the options)";
}

}  // namespace

std::optional<std::string> ExplainUsageError(const CLI::App& app,
                                             const std::vector<std::string>& args,
                                             const CLI::ParseError& error) {
  // A long option given one dash: `analyze -json` reads as -j "son" ("--threads: Value son not in
  // range"). Said for what it is, before anything else (up to a command's "--").
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a.size() < 3 || a[0] != '-' || a[1] == '-' ||
        !std::isalpha(static_cast<unsigned char>(a[1])))
      continue;
    const std::string name =
        "--" + a.substr(1, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 1);
    std::vector<const CLI::App*> apps = {&app};
    for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
      apps.push_back(s);
    for (const CLI::App* s : apps)
      if (s->get_option_no_throw(name) != nullptr)
        return Quoted(a) + " is not an option: long options take two dashes (hint: " + name +
               (a.find('=') == std::string::npos ? "" : a.substr(a.find('='))) + ")";
  }
  // "Missing" messages only when CLI11 missed something: `run --live bogus` is a bad value.
  const bool missing = dynamic_cast<const CLI::RequiredError*>(&error) != nullptr;
  const std::vector<std::string> commands = CommandNames(app);
  // The top level: options up to the first word, which names the command.
  const Scan top = ScanOptions(app, args, 0);
  if (top.unknown && !top.positional_before_unknown)
    return UnknownOptionMessage(app, "gpuscope", *top.unknown);
  if (!top.first_positional) {
    if (!missing) return std::nullopt;
    return "a command is required: " + JoinOr(commands) +
           " (hint: gpuscope analyze TRACE; gpuscope --help describes each)";
  }
  const size_t at = *top.first_positional;
  const std::string& word = args[at];
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    if (s->check_name(word)) sub = s;
  if (!sub) {
    const std::string msg = "unknown command " + Quoted(word);
    if (auto near = ClosestMatch(word, commands))
      return msg + " (did you mean " + Quoted(*near) +
             "?) (hint: gpuscope --help lists the "
             "commands)";
    struct stat st;
    if (stat(word.c_str(), &st) == 0)
      return msg + " (hint: to analyse it: gpuscope analyze " + ShellWord(word) + ")";
    return msg + " (hint: the commands are " + JoinOr(commands) + "; gpuscope --help)";
  }
  const std::string where = "gpuscope " + sub->get_name();
  const Scan scan = ScanOptions(*sub, args, at + 1);
  if (sub->get_name() == "run" || sub->get_name() == "tune") {
    const bool has_separator = std::find(args.begin() + static_cast<std::ptrdiff_t>(at) + 1,
                                         args.end(), "--") != args.end();
    // `gpuscope run python3 -V`: the command's own options reached gpuscope.
    if (scan.unknown && scan.positional_before_unknown && !has_separator) {
      std::string fixed = where;
      for (size_t i = at + 1; i < *scan.first_positional; ++i) fixed += " " + ShellWord(args[i]);
      fixed += " --";
      for (size_t i = *scan.first_positional; i < args.size(); ++i)
        fixed += " " + ShellWord(args[i]);
      return Quoted(scan.unknown->token) + " is not an option of " + where +
             " (hint: put the command after --, so that its options are its own: " + fixed + ")";
    }
    if (missing && !scan.unknown && !scan.first_positional)
      return sub->get_name() == "run"
                 ? "run needs the command to watch, after -- (hint: " + where +
                       " -- python train.py)"
                 : "tune needs the command to run, after -- (hint: " + where +
                       " --param BATCH=pow2:8..256 --metric '([0-9.]+) samples/s' -- python "
                       "train.py --batch-size {BATCH})";
  }
  if (scan.unknown) return UnknownOptionMessage(*sub, where, *scan.unknown);
  return std::nullopt;
}

namespace {

// Each subcommand's description (the first paragraph of its --help, and of its man page section)
// and its examples (the end of its --help), in one table so that the help reads as one text.
struct CommandDoc {
  std::string_view name;
  const char* description;
  const char* examples;
};
constexpr CommandDoc kCommandDocs[] = {
    {"analyze",
     "Read a trace (or a folder of per-rank traces, or summaries from `gpuscope map`) and\n"
     "report, per rank, the verdict and the findings with estimated savings and fixes, then\n"
     "where the step time goes: GPU time, step breakdown, kernels, launches, copies, sync\n"
     "points, memory, and across ranks. A folder is mapped a few ranks at a time (memory stays\n"
     "that of a few ranks plus their summaries) and reduced, as `map` + `reduce` do.",
     "Examples:\n"
     "  gpuscope analyze rank0.pt.trace.json.gz\n"
     "  gpuscope analyze --json --html report.html traces/   # a folder of per-rank traces\n"
     "  gpuscope analyze --mpi traces/   # under mpirun -n 4 --bind-to none: docs/jobs.md\n"
     "  gpuscope analyze snapshot.pickle   # torch.cuda.memory._dump_snapshot: "
     "docs/memory-snapshot.md"},
    {"map",
     "Analyse each trace on its own and write its summary (an SQLite file: the rank's report\n"
     "section, steps, collectives and headline numbers; docs/summary-format.md), for `reduce`\n"
     "to combine. Run one map per rank anywhere (a Slurm array, xargs -P), then reduce.",
     "Examples:\n"
     "  gpuscope map rank7.pt.trace.json.gz -o summaries/  # summaries/rank7.gpuscope.db\n"
     "  ls traces/*.json.gz | xargs -P 8 -I{} gpuscope map -j 1 {} -o summaries/\n"
     "  sbatch --array=0-999 --wrap 'gpuscope map traces/rank$SLURM_ARRAY_TASK_ID.json -o "
     "summaries/'"},
    {"reduce",
     "Combine summaries written by `gpuscope map` (files, or folders of them) into the report\n"
     "`gpuscope analyze FOLDER` prints for the same traces: ranks grouped into jobs,\n"
     "collectives matched across ranks, the job summary, then the rank sections.",
     "Examples:\n"
     "  gpuscope reduce summaries/                  # the report analyze traces/ prints\n"
     "  gpuscope reduce --json --ranks all summaries/ > job.json"},
    {"run",
     "Run a command and watch it: GPU (NVML) and CPU of its process tree (/proc), a live line,\n"
     "an optional record, and a verdict at the end: text on stderr (the command keeps stdout),\n"
     "--json on stdout after the command's own output, --html FILE. Exits with the command's\n"
     "code (2 when it succeeded but the verdict could not be written).",
     "Examples:\n"
     "  gpuscope run --record run.jsonl --report-json verdict.json -- torchrun "
     "--nproc_per_node 8 train.py\n"
     "  gpuscope run --html run.html -- python train.py   # the verdict as a page too"},
    {"tune",
     "Run the experiments the optimisation guides prescribe around a training command: each\n"
     "trial runs CMD under the monitor with {NAME} (and $GPUSCOPE_NAME) set to its values and\n"
     "measures its throughput; batch sizes (pow2:) are doubled until out of memory or a\n"
     "plateau, then bisected to the exact boundary; other params are tried at the best batch\n"
     "(coordinate descent). Out of memory is a result. Trials are appended to --results as\n"
     "they end; a rerun resumes. Ctrl-C ends the current trial and prints the best so far.\n"
     "Trials' output goes to stderr; the report to stdout. docs/tune.md.",
     "Examples:\n"
     "  gpuscope tune --param BATCH=pow2:8..512 --param WORKERS=0,2,4,8 --metric "
     "'([0-9.]+) samples/s' -- python train.py --batch-size {BATCH} --workers {WORKERS}\n"
     "  gpuscope tune --param BATCH=pow2:16..256 --step '^step ' --trial-time 2m --budget 1h "
     "--repeat 3 -- python train.py   # reads $GPUSCOPE_BATCH\n"
     "  docs/tune.md: the search, the metric options and their pitfalls"},
    {"synth",
     "Write synthetic Kineto traces of a training loop with planted bottlenecks\n"
     "(for examples, ground-truth tests and benchmarks).",
     "Example:\n"
     "  gpuscope synth -o stalled.pt.trace.json.gz --gzip --dataloader-stall 0.3"},
    {"plan",
     "Plan transformer training: memory per GPU term by term, step time, and the best\n"
     "micro-batch / accumulation / TP / PP / ZeRO / recompute / precision for N GPUs, under\n"
     "each framework's own memory rules (Megatron-LM, DeepSpeed, FSDP, DDP; or --framework),\n"
     "with its config files (--write-configs DIR). With every degree given (--tp --pp --mbs\n"
     "--zero|--fsdp --recompute --precision) it evaluates that configuration; otherwise it\n"
     "searches the free ones.",
     "Examples:\n"
     "  gpuscope plan --model llama-3-8b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len "
     "4096\n"
     "  gpuscope plan --model ./config.json --gpu a100-80gb --gpus 16 --global-batch 256 "
     "--seq-len 2048 --json"},
    {"diff",
     "Compare two runs (BEFORE and AFTER: trace files or folders of rank traces, ranks matched\n"
     "by rank id): step time and its spread, breakdowns, kernels and ops added/removed/slower/\n"
     "faster, findings resolved and new, peak memory. Definitions: docs/diff.md. Two CUDA memory\n"
     "snapshots (torch.cuda.memory._dump_snapshot pickles) are compared too: peak, categories "
     "and\n"
     "allocation stacks at the peak (docs/memory-snapshot.md).",
     "Examples:\n"
     "  gpuscope diff before.pt.trace.json.gz after.pt.trace.json.gz --html diff.html\n"
     "  gpuscope diff before.pickle after.pickle   # two CUDA memory snapshots"},
};

}  // namespace

void AddHelpExamples(CLI::App& app) {
  app.footer(
      "Python: import gpuscope (Python 3.9 or newer; pip install --no-build-isolation . in a "
      "venv);\n"
      "gpuscope.torch needs PyTorch 2.x. Tested with Python 3.11 and torch 2.13.0 (CPU build), "
      "the\n"
      "versions in requirements-test.txt. The Python tests alone, after the README's test "
      "command:\n"
      "ctest --test-dir build/release -L 'python|torch2|hta-live|frameworks' (docs/python.md).\n"
      "\n"
      "Examples:\n"
      "  gpuscope analyze rank0.pt.trace.json.gz\n"
      "  gpuscope run --record run.jsonl -- python train.py\n"
      "  gpuscope plan --model llama-3-8b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len "
      "4096\n"
      "  gpuscope diff before.pt.trace.json.gz after.pt.trace.json.gz");
}

CLI::App* AddCommand(CLI::App& app, std::string_view name) {
  for (const CommandDoc& c : kCommandDocs)
    if (c.name == name) {
      CLI::App* cmd = app.add_subcommand(std::string(name), c.description);
      cmd->footer(c.examples);
      return cmd;
    }
  // Only the Add*Command functions call this, each with its own name: a missing row is a bug.
  std::abort();
}

}  // namespace gpuscope::cli
