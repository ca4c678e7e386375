"""Python.Acceptance: the installed package against the CLI built from the same source.

acceptance_test.py GPUSCOPE_BINARY SOURCE_DIR (run with the test venv's python).
"""

import json
import os
import subprocess
import sys
import tempfile

cli, src = sys.argv[1], sys.argv[2]
example = os.path.join(src, "examples", "train_input_bound.pt.trace.json.gz")
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


# The acceptance command, exactly, from the source folder (whose python/ holds the package's
# sources, not an importable gpuscope: the import must find the installed one).
acceptance = ("import gpuscope; "
              "print(gpuscope.analyze('examples/train_input_bound.pt.trace.json.gz').verdict)")
out = subprocess.run([sys.executable, "-c", acceptance], cwd=src, capture_output=True, text=True)
print("acceptance prints: %r" % out.stdout)
check(out.returncode == 0 and out.stdout == "input-bound\n",
      "python3 -c \"import gpuscope; print(gpuscope.analyze(example).verdict)\" prints input-bound")

import gpuscope  # noqa: E402

check(os.path.realpath(gpuscope.__file__).startswith(os.path.realpath(sys.prefix)),
      "gpuscope is imported from the venv (%s)" % gpuscope.__file__)

report = gpuscope.analyze(example)
cli_json = subprocess.run([cli, "analyze", "--json", example], capture_output=True, text=True)
check(cli_json.returncode == 0, "gpuscope analyze --json exits 0")
check(report.to_dict() == json.loads(cli_json.stdout),
      ".to_dict() equals gpuscope analyze --json of the same file")
check(report.to_json() == cli_json.stdout, ".to_json() is byte for byte the --json output")
cli_text = subprocess.run([cli, "analyze", example], capture_output=True, text=True)
check(report.text() == cli_text.stdout, ".text() is the CLI's text report (on a pipe)")

check(report.verdict == "input-bound", ".verdict")
keys = [f["key"] for f in report.findings]
print("findings:", keys)
check(keys[:1] == ["input_pipeline_stall"], ".findings ranked, the DataLoader stall first")
stall = report.findings[0]
check(abs(stall["evidence"]["dataloader_share"] - 0.30) < 0.005,
      "finding evidence: DataLoader share of the step 30.0 %")
check(len(report.ranks) == 1 and report.ranks[0]["rank"] == 0 and
      report.ranks[0]["verdict"] == "input-bound", ".ranks")
try:
    import pandas  # noqa: F401
    have_pandas = True
except ImportError:
    have_pandas = False
steps = report.steps
n = len(steps)
check(n == 6, ".steps: 6 ProfilerSteps (got %d)" % n)
if have_pandas:
    check(type(steps).__name__ == "DataFrame", ".steps is a DataFrame with pandas")
    check(list(steps["step"]) == [7, 8, 9, 10, 11, 12], ".steps step numbers #7–#12")
    check(set(report.kernels["class"]) == {"compute", "communication", "memory"},
          ".kernels: the three classes")
    check(len(report.memory) == 1 and int(report.memory["peak_allocated_bytes"][0]) > 0,
          ".memory: one device with its peak")
    check(len(report.idle_gaps) > 0, ".idle_gaps: the longest gaps")
    # Every op priced, on a vendored trace recorded with shapes (tb_plugin's ResNet-50, V100).
    resnet = os.path.join(src, "tests", "data", "traces", "kineto_tb_plugin",
                          "resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz")
    ops = gpuscope.analyze(resnet).ops
    check(type(ops).__name__ == "DataFrame" and len(ops) > 10, ".ops: a DataFrame of priced ops")
    check({"op", "input_dims", "count", "time_ns", "flops", "bytes", "bound"} <= set(ops.columns),
          ".ops columns")
    fc = ops[(ops["op"] == "aten::addmm") & ops["input_dims"].str.startswith("[[1000], [32, 2048]")]
    check(len(fc) == 1 and float(fc["flops"].iloc[0]) == 2 * 32 * 2048 * 1000 + 32 * 1000,
          ".ops: the classifier's addmm priced 2·M·N·K + M·N")
    check(float(ops["time_ns"].sum()) > 0 and (ops["time_ns"] >= 0).all(), ".ops: GPU time")
    # The critical path per step (each row sums to its step) and each fix replayed.
    cp = report.critical_path
    parts = ["host_compute_ns", "launch_overhead_ns", "data_wait_ns", "sync_ns", "gpu_compute_ns",
             "communication_ns", "copy_ns", "gpu_idle_ns"]
    check(len(cp) == 5 and all(int(r["duration_ns"]) == sum(int(r[p]) for p in parts)
                               for _, r in cp.iterrows()),
          ".critical_path: the 5 steady steps, parts summing to each step")
    wi = report.whatif
    check(list(wi["fix"])[0] == "data_wait" and int(wi["plan_order"].iloc[0]) == 1,
          ".whatif: the DataLoader fix first in the plan")
html = report.to_html()
check(html.lstrip().lower().startswith("<!doctype html"), ".to_html() is a page")
check("<iframe" in report._repr_html_(), "_repr_html_ shows the page in a notebook cell")

# A CUDA memory snapshot (a small one made by fuzz/seeds/snapshot/make_seeds.py): its own document.
snap_path = os.path.join(src, "fuzz", "seeds", "snapshot", "snapshot_p4.pickle")
snap = gpuscope.analyze(snap_path)
snap_cli = subprocess.run([cli, "analyze", "--json", snap_path], capture_output=True, text=True)
check(snap.to_dict() == json.loads(snap_cli.stdout) and snap.to_dict()["schema"] == "gpuscope.snapshot",
      "analyze(snapshot.pickle) is the gpuscope.snapshot document analyze --json prints")

# Errors: gpuscope.Error (a ValueError) with the message the CLI prints.
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "cut.pt.trace.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": ')
    for path in (bad, os.path.join(tmp, "missing.pt.trace.json")):
        c = subprocess.run([cli, "analyze", path], capture_output=True, text=True)
        cli_message = c.stderr.strip()
        prefix = "gpuscope: error: "
        try:
            gpuscope.analyze(path)
            check(False, "analyze(%s) raises" % os.path.basename(path))
        except gpuscope.Error as e:
            print("CLI:    %s\nPython: %s" % (cli_message, e))
            check(isinstance(e, ValueError), "gpuscope.Error is a ValueError")
            check(c.returncode == 2 and cli_message == prefix + str(e),
                  "%s: the exception's message is the CLI's" % os.path.basename(path))

# The command is installed with the package (console script → the bundled binary).
exe = os.path.join(os.path.dirname(sys.executable), "gpuscope")
v = subprocess.run([exe, "--version"], capture_output=True, text=True)
check(v.returncode == 0 and v.stdout == subprocess.run([cli, "--version"], capture_output=True,
                                                       text=True).stdout,
      "the venv's gpuscope command runs (%s)" % v.stdout.strip())

# plan and diff, against the CLI's JSON.
p = gpuscope.plan(model="llama-3-8b", gpu="h100-sxm", gpus=8, global_batch=64, seq_len=4096)
c = subprocess.run([cli, "plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "8",
                    "--global-batch", "64", "--seq-len", "4096", "--json"],
                   capture_output=True, text=True)
check(p.schema == "gpuscope.plan" and p.to_dict() == json.loads(c.stdout),
      "plan() equals gpuscope plan --json")
try:
    gpuscope.plan(model="no-such-model", gpu="h100-sxm", gpus=8, global_batch=64, seq_len=4096)
    check(False, "plan(model=no-such-model) raises")
except gpuscope.Error as e:
    c = subprocess.run([cli, "plan", "--model", "no-such-model", "--gpu", "h100-sxm", "--gpus",
                        "8", "--global-batch", "64", "--seq-len", "4096"],
                       capture_output=True, text=True)
    check(c.stderr.strip() == "gpuscope: error: " + str(e), "plan error: the CLI's message")
d = gpuscope.diff(example, example)
c = subprocess.run([cli, "diff", "--json", example, example], capture_output=True, text=True)
check(d.to_dict() == json.loads(c.stdout), "diff() equals gpuscope diff --json")
check(d.verdict == "input-bound → input-bound", "diff verdict before → after")

print("%d failed" % len(failures) if failures else "all passed")
sys.exit(1 if failures else 0)
