"""Python.FrontDoor: one implementation per subcommand, two shells over it.

front_door_test.py GPUSCOPE_BINARY SOURCE_DIR (run with the test venv's python).

  * gpuscope.analyze / plan / diff and `gpuscope analyze|plan|diff --json` on the same inputs — a
    Kineto trace, a folder of ranks, an Nsight Systems export, a `gpuscope map` summary, a folder
    of summaries, a CUDA memory snapshot, a `gpuscope run --record` recording, an nvidia-smi log, a
    plan, a diff — give equal documents, and inputs read in part give the same failures (the CLI's
    stderr lines, exit 2) in both;
  * `gpuscope map DIR` and `gpuscope analyze DIR` accept the same folders (traces, Nsight exports,
    summaries, a mix), and `reduce` of map's output is `analyze DIR`'s report.
Inputs are the repository's own (examples/, tests/data, fuzz/seeds): nothing here needs shared/.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import gpuscope

cli, src = sys.argv[1], sys.argv[2]
data = os.path.join(src, "tests", "data")
example = os.path.join(src, "examples", "train_input_bound.pt.trace.json.gz")
nsys = os.path.join(data, "derived", "nsys", "fuser_8xh100_report1_cut.sqlite")
ranks = [os.path.join(data, "traces", "hta", "sampled_rank-%d.json.gz" % r) for r in (0, 1)]
snapshot = os.path.join(src, "fuzz", "seeds", "snapshot", "snapshot_p4.pickle")
recording = os.path.join(src, "fuzz", "seeds", "monitor", "recording.jsonl")
smi_log = os.path.join(data, "monitor", "nvidia_smi_2gpu.csv")
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def run(*args):
    return subprocess.run([cli, *args], capture_output=True, text=True)


def error_lines(stderr):
    return [line[len("gpuscope: error: "):] for line in stderr.splitlines()
            if line.startswith("gpuscope: error: ")]


def same(name, py_call, cli_args):
    """The Python call and the CLI's --json: equal documents, the same failures."""
    c = run(*cli_args, "--json")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            report = py_call()
        except gpuscope.Error as e:
            check(False, "%s: Python raised %s (CLI exit %d: %s)" % (name, e, c.returncode,
                                                                   c.stderr.strip()[-300:]))
            return None
    if c.returncode not in (0, 2) or not c.stdout:
        check(False, "%s: the CLI failed (exit %d: %s)" % (name, c.returncode, c.stderr[-300:]))
        return None
    doc = report.to_dict()
    check(doc == json.loads(c.stdout), "%s: Python's document equals the CLI's (%s)"
          % (name, doc.get("schema")))
    py_failures = [str(f) for f in report.failures] if hasattr(report, "failures") else []
    check(py_failures == error_lines(c.stderr) and (c.returncode == 2) == bool(py_failures),
          "%s: the same failures (%d) and exit %d" % (name, len(py_failures), c.returncode))
    return doc


with tempfile.TemporaryDirectory() as tmp:
    folder = os.path.join(tmp, "ranks")
    os.mkdir(folder)
    for r in ranks:
        shutil.copy(r, folder)
    nsys_folder = os.path.join(tmp, "nsys")
    os.mkdir(nsys_folder)
    shutil.copy(nsys, nsys_folder)
    mixed = os.path.join(tmp, "mixed")
    os.mkdir(mixed)
    for f in (ranks[0], nsys, example):
        shutil.copy(f, mixed)

    # Summaries: map's output of the folder of ranks, one file per rank and one for all.
    summaries = os.path.join(tmp, "summaries") + os.sep
    m = run("map", folder, "-o", summaries)
    check(m.returncode == 0, "map FOLDER -o DIR/ (%s)" % m.stderr.strip()[-200:])
    one = os.path.join(tmp, "all.gpuscope.db")
    m = run("map", folder, "-o", one)
    check(m.returncode == 0, "map FOLDER -o FILE (%s)" % m.stderr.strip()[-200:])
    # A recording with a cut last line: read in part, counted, exit 2 in both.
    cut = os.path.join(tmp, "cut.jsonl")
    with open(recording) as f, open(cut, "w") as g:
        g.write(f.read() + '{"t": 1, "gpu_util"\n')

    inputs = [
        ("a Kineto trace", example),
        ("a folder of ranks", folder),
        ("an Nsight Systems export", nsys),
        ("a folder of Nsight exports", nsys_folder),
        ("a folder of traces and Nsight exports", mixed),
        ("a summary", one),
        ("a folder of summaries", summaries),
        ("a CUDA memory snapshot", snapshot),
        ("a recording", recording),
        ("a recording with a cut line", cut),
        ("an nvidia-smi log", smi_log),
    ]
    docs = {}
    for name, path in inputs:
        docs[name] = same("analyze " + name, lambda p=path: gpuscope.analyze(p), ["analyze", path])
    check(docs["a CUDA memory snapshot"] is not None
          and docs["a CUDA memory snapshot"]["schema"] == "gpuscope.snapshot",
          "a snapshot is the gpuscope.snapshot document")
    check(docs["a recording"] is not None and docs["a recording"]["schema"] == "gpuscope.run",
          "a recording is the gpuscope.run document")
    check(docs["an Nsight Systems export"] is not None
          and docs["an Nsight Systems export"]["schema"] == "gpuscope.report",
          "an Nsight export is a report in Python too (it was refused as a damaged summary)")
    # analyze with --monitor beside a trace, and --ranks.
    same("analyze TRACE --monitor", lambda: gpuscope.analyze(example, monitor=recording),
         ["analyze", example, "--monitor", recording])
    same("analyze FOLDER --ranks all", lambda: gpuscope.analyze(folder, ranks="all"),
         ["analyze", folder, "--ranks", "all"])
    same("plan", lambda: gpuscope.plan(model="llama-3-8b", gpu="h100-sxm", gpus=8,
                                       global_batch=64, seq_len=4096),
         ["plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "8", "--global-batch",
          "64", "--seq-len", "4096"])
    # Every table as a DataFrame equals its CSV (Report.to_csv, `--csv DIR`), kernels complete.
    import csv as _csv
    rep = gpuscope.analyze(example)
    csv_dir = os.path.join(tmp, "csv")
    written = rep.to_csv(csv_dir)
    cli_dir = os.path.join(tmp, "cli_csv")
    c = run("analyze", example, "--csv", cli_dir)
    check(c.returncode == 0 and sorted(os.listdir(cli_dir)) == sorted(map(os.path.basename, written)),
          "to_csv writes the CLI's --csv files (%d)" % len(written))

    def cell(text):
        if text == "":
            return None
        if text in ("true", "false"):
            return text == "true"
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
        return text

    mismatched = []
    for path in written:
        key = os.path.basename(path)[:-4]
        with open(path, newline="", encoding="utf-8") as f:
            cli_rows = [{k: cell(v) for k, v in row.items()} for row in _csv.DictReader(f)]
        with open(os.path.join(cli_dir, key + ".csv"), encoding="utf-8") as f1, open(path, encoding="utf-8") as f2:
            if f1.read() != f2.read():
                mismatched.append(key + " (CLI)")
        frame = rep.table(key)
        py_rows = frame.to_dict("records") if hasattr(frame, "to_dict") else frame
        py_rows = [{k: (None if v != v else v) for k, v in r.items() if k in cli_rows[0]}
                   for r in py_rows] if cli_rows else py_rows
        if [{k: r.get(k) for k in cli_rows[0]} for r in py_rows] != cli_rows:
            mismatched.append(key)
    check(not mismatched, "every Python table equals its CSV (mismatched: %s)" % mismatched)
    # to_csv goes through the CLI's output checks: a folder named like a table is an error naming
    # it (as `--csv` says), not a Python traceback from open().
    odd_dir = os.path.join(tmp, "csv_odd")
    os.makedirs(os.path.join(odd_dir, "kernels.csv"))
    try:
        rep.to_csv(odd_dir)
        check(False, "to_csv refuses a folder named kernels.csv")
    except gpuscope.Error as e:
        check("kernels.csv" in str(e), "to_csv refuses a folder named kernels.csv: %s" % e)
    kernels = rep.kernels
    names = set(kernels["name"]) if hasattr(kernels, "columns") else {k["name"] for k in kernels}
    check(len(names) == len(kernels) and len(kernels) > 10 and
          {"section", "run", "rank", "path", "class", "count", "total_ns"} <=
          set(kernels.columns),
          "r.kernels: every kernel (%d), with section, run, rank and path" % len(kernels))

    # A folder of two runs of two ranks (one with a DataLoader stall): each rank entry has its
    # run and only its own findings; runs() gives each run's verdict, ranks and findings; every
    # table row names its run, as the CSV does.
    two_runs = os.path.join(tmp, "two_runs")
    os.mkdir(two_runs)
    for name, extra in (("a", []), ("b", ["--dataloader-stall", "0.3"])):
        out = os.path.join(tmp, "synth_" + name)
        check(run("synth", "-o", out, "--ranks", "2", "--steps", "4", *extra).returncode == 0,
              "synth run " + name)
        for f in sorted(os.listdir(out)):
            shutil.copy(os.path.join(out, f), os.path.join(two_runs, name + "_" + f))
    rr = gpuscope.analyze(two_runs)
    entries = rr.ranks
    stalled = {x["section"] for x in entries
               if any(f["key"] == "input_pipeline_stall" for f in x["findings"])}
    check(len(entries) == 4 and {x["run"] for x in entries} == {"job_1", "job_2"} and
          all(f["section"] == x["section"] for x in entries for f in x["findings"]) and
          len(stalled) == 2 and len({x["run"] for x in entries if x["section"] in stalled}) == 1,
          "two runs: 4 rank entries, each with its run and its own findings (stall in one run)")
    runs_ = rr.runs
    check([r_["run"] for r_ in runs_] == ["job_1", "job_2"] and
          all(len(r_["ranks"]) == 2 and r_["verdict"] for r_ in runs_) and
          sum(any(f["key"] == "input_pipeline_stall" for f in r_["findings"]) for r_ in runs_) == 1,
          "runs: two, each with 2 ranks, a verdict, and its own findings")
    steps = rr.table("per_step")
    pairs = {(r_["section"], r_["run"]) for r_ in
             (steps.to_dict("records") if hasattr(steps, "to_dict") else steps)}
    check(len(pairs) == 4 and len({s_ for s_, _ in pairs}) == 4,
          "per_step rows name their run, one run per section")

    # plan's keywords are the CLI's flags from one table: the same names, the same refusals.
    table = gpuscope.plan_options()
    plan_help = run("plan", "--help").stdout
    check(all(("--" + o["name"].replace("_", "-") + " ") in plan_help for o in table)
          and len(table) == 32, "plan_options() are 32 flags of `plan --help`")
    base = dict(model="llama-3-8b", gpu="h100-sxm", gpus=8, global_batch=64, seq_len=4096)
    base_args = ["plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "8",
                 "--global-batch", "64", "--seq-len", "4096"]
    for extra, args in ((dict(optimizer="lion"), ["--optimizer", "lion"]),
                        (dict(fsdp=True, zero=2), ["--fsdp", "--zero", "2"]),
                        (dict(top=0), ["--top", "0"])):
        try:
            gpuscope.plan(**base, **extra)
            check(False, "plan(%s) is refused" % extra)
        except gpuscope.Error as e:
            c = run(*base_args, *args)
            check(c.returncode == 2, "CLI refuses %s (exit %d)" % (args, c.returncode))
            check(str(e).split(":")[0].split(" ")[0] == args[0],
                  "plan(%s) refused for %s as the CLI refuses %s" % (extra, e, args[0]))
    # An int too large for the option's C++ type is out of range (gpuscope.Error, as the docs
    # say), not "TypeError: plan(): gpus must be an int, not int".
    for name, call, want in (
            ("plan(gpus=10**30)", lambda: gpuscope.plan(**dict(base, gpus=10**30)),
             "--gpus: 1000000000000000000000000000000 is out of range (an integer from "
             "-9223372036854775808 to 9223372036854775807)"),
            ("plan(top=2**70)", lambda: gpuscope.plan(**base, top=2**70),
             "--top: value not in range 1 to 1000"),
            ("analyze(threads=2**40)", lambda: gpuscope.analyze(example, threads=2**40),
             "--threads: value not in range 0 to 256")):
        try:
            call()
            check(False, "%s is refused" % name)
        except gpuscope.Error as e:
            check(str(e) == want, "%s: gpuscope.Error %r" % (name, str(e)))
        except TypeError as e:
            check(False, "%s: gpuscope.Error, not TypeError (%s)" % (name, e))
    try:
        gpuscope.plan(**base, batch_size=8)
        check(False, "an unknown keyword is refused")
    except TypeError as e:
        check("batch_size" in str(e), "an unknown keyword is named: %s" % e)
    # analyze() and diff() take every option of their tables as keywords.
    import inspect
    from gpuscope import _gpuscope
    for fn, rows in ((gpuscope.analyze, _gpuscope.analyze_options()),
                     (gpuscope.diff, _gpuscope.diff_options())):
        params = set(inspect.signature(fn).parameters)
        missing = [o["name"] for o in rows if o["name"] not in params]
        check(not missing, "%s() takes its table's options (missing: %s)" % (fn.__name__, missing))
    same("diff", lambda: gpuscope.diff(ranks[0], ranks[1]), ["diff", ranks[0], ranks[1]])
    same("diff FOLDER FOLDER", lambda: gpuscope.diff(folder, folder), ["diff", folder, folder])

    # map DIR and analyze DIR accept the same folders; reduce of map's output is analyze DIR.
    for name, path in (("traces", folder), ("Nsight exports", nsys_folder), ("a mix", mixed),
                       ("summaries", summaries)):
        a = run("analyze", path, "--json")
        out = os.path.join(tmp, "mapped-" + name.replace(" ", "_")) + os.sep
        m = run("map", path, "-o", out)
        check(a.returncode == 0 and m.returncode == 0,
              "a folder of %s: analyze exit %d, map exit %d (%s)"
              % (name, a.returncode, m.returncode, (a.stderr + m.stderr).strip()[-300:]))
        r = run("reduce", out, "--json")
        check(r.returncode == 0 and json.loads(r.stdout) == json.loads(a.stdout),
              "a folder of %s: reduce of map's output equals analyze DIR" % name)

    # A folder mapped into a file of its own, twice: the file is replaced, not carried into itself.
    inside = os.path.join(folder, "all.gpuscope.db")
    for _ in range(2):
        m = run("map", folder, "-o", inside)
    r = run("reduce", inside, "--json")
    check(m.returncode == 0 and r.returncode == 0
          and json.loads(r.stdout) == json.loads(run("reduce", one, "--json").stdout),
          "map FOLDER -o FOLDER/FILE twice: the same ranks as once (%s)" % m.stdout.strip()[-200:])

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
