#!/usr/bin/env python3
"""`gpuscope tune` end to end on a real PyTorch training script (tests/python/tune_train.py).

  tune_test.py GPUSCOPE TRAIN_SCRIPT WORKDIR search     batch plateau + best workers (planted)
  tune_test.py GPUSCOPE TRAIN_SCRIPT WORKDIR boundary   OOM boundary found exactly by bisection
  tune_test.py GPUSCOPE TRAIN_SCRIPT WORKDIR kill SIG   SIGINT/SIGTERM mid-trial: exit code,
                                                        valid JSONL, no process left, resume

Runs the script with this test's Python and its torch (exit 77, skipped, without). WORKDIR is
made empty first and removed at the end when the test passes.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

# The trials run with the Python that runs this test (the project's venv: torch 2.13, CPU).
PYTHON = sys.executable
KILL_TRIAL_S = 20  # --trial-time of the kill tests (start-up: ~2 s idle, ~8 s under heavy load)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def read_jsonl(path):
    """Every line must be a whole JSON object (the file is written line by line, fsync'd)."""
    records = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n"):
                fail(f"{path}:{n}: the line is not complete")
            try:
                records.append(json.loads(line))
            except ValueError as e:
                fail(f"{path}:{n}: not JSON: {e}")
    return records


def tune(g, args, cwd, env=None):
    p = subprocess.run([g, "tune"] + args, cwd=cwd, capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})), timeout=900)
    return p


def check_best(doc, want):
    got = {k: v["value"] for k, v in doc["sections"]["best"]["items"]["params"]["fields"].items()}
    if got != want:
        fail(f"best params {got}, planted {want}")


def search(g, script, work):
    results = os.path.join(work, "search.jsonl")
    # Planted (tune_train.py defaults): samples/s rises up to batch 32 (+40 %, +25 % per doubling
    # at 0 workers) and is flat beyond; at batch 32, 4 workers are the first whose loading is
    # faster than the step (+34 %, +127 %, +33 % from 0 to 4; 0 % to 8). --plateau 10 %: the flat
    # part measures within ±3 % here, the rises are 25 % and more.
    p = tune(g, ["--param", "BATCH=pow2:8..512", "--param", "WORKERS=0,1,2,4,8",
                 "--metric", r"([0-9.]+) samples/s", "--plateau", "10%", "--trial-time", "30s",
                 "--results", results, "--json", "--",
                 PYTHON, script, "--batch-size", "{BATCH}", "--workers", "{WORKERS}"], work)
    if p.returncode != 0:
        fail(f"tune exited {p.returncode}\n{p.stderr[-3000:]}")
    doc = json.loads(p.stdout)
    if doc["schema"] != "gpuscope.tune":
        fail("schema " + doc["schema"])
    check_best(doc, {"BATCH": "32", "WORKERS": "4"})
    records = read_jsonl(results)
    tried = [(r["params"]["BATCH"], r["params"]["WORKERS"]) for r in records]
    # The ladder stops at the plateau (64 is no better than 32), so nothing ran out of memory.
    for want in [("8", "0"), ("16", "0"), ("32", "0"), ("64", "0"), ("32", "4"), ("32", "8")]:
        if want not in tried:
            fail(f"BATCH={want[0]} WORKERS={want[1]} was not tried: {tried}")
    if ("128", "0") in tried:
        fail(f"the ladder went on past the plateau: {tried}")
    if any(r["outcome"] not in ("ok", "timeout") for r in records):
        fail("a trial did not give a throughput: " + str([r["outcome"] for r in records]))
    gain = doc["sections"]["best"]["items"]["gain"]["fields"]
    if not gain["gain_share"]["value"] > 2:
        fail(f"gain over the first {gain['gain_share']['value']}: planted ×4 and more")
    print(f"ok: best BATCH=32 WORKERS=4 in {len(records)} trials, gain "
          f"{gain['gain_share']['value']:.2f}, p {gain['p_value']['value']}")


def boundary(g, script, work):
    results = os.path.join(work, "boundary.jsonl")
    # No plateau and no loading cost: samples/s doubles with the batch up to the planted limit;
    # fits at 96, OOM at 97 — a boundary that is no power of two, so only bisection finds it.
    env = {"TUNE_PLATEAU_BATCH": "100000", "TUNE_SAMPLE_S": "0", "TUNE_FITS_UP_TO": "96"}
    p = tune(g, ["--param", "BATCH=pow2:8..512", "--metric", r"([0-9.]+) samples/s",
                 "--trial-time", "30s", "--results", results, "--json", "--",
                 PYTHON, script, "--batch-size", "{BATCH}"], work, env)
    if p.returncode != 0:
        fail(f"tune exited {p.returncode}\n{p.stderr[-3000:]}")
    doc = json.loads(p.stdout)
    check_best(doc, {"BATCH": "96"})
    b = doc["sections"]["boundaries"]["items"]["boundary_BATCH"]["fields"]
    if (b["largest_fit"]["value"], b["first_oom"]["value"], b["exact"]["value"]) != (96, 97, True):
        fail(f"boundary {b}")
    records = read_jsonl(results)
    order = [int(r["params"]["BATCH"]) for r in records]
    # Doubling to the first OOM, then bisection between 64 and 128.
    if order != [8, 16, 32, 64, 128, 96, 112, 104, 100, 98, 97]:
        fail(f"trial order {order}")
    outcomes = {int(r["params"]["BATCH"]): r["outcome"] for r in records}
    if any((outcomes[b] == "oom") != (b > 96) for b in order):
        fail(f"outcomes {outcomes}")
    oom = next(r for r in records if r["outcome"] == "oom")
    if oom["oom_framework"] != "PyTorch (CUDA)" or "CUDA out of memory" not in oom["note"]:
        fail(f"OOM record {oom}")
    print(f"ok: boundary fits at 96, OOM at 97; trials {order}")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except FileNotFoundError:
        return False


def kill(g, script, work, signame):
    sig = getattr(signal, signame)
    results = os.path.join(work, "kill.jsonl")
    pids = os.path.join(work, "pids")
    # Trial 1 runs until --trial-time (a "timeout": a result); trial 2 is signalled mid-way,
    # once its DataLoader workers are up (their pids are in the file). A trial must outlast the
    # script's start-up: `import torch` (2.13) takes ~2 s of CPU, twice that on a loaded machine.
    args = ["--param", "BATCH=pow2:8..64", "--param", "WORKERS=2,0", "--metric",
            r"([0-9.]+) samples/s", "--trial-time", f"{KILL_TRIAL_S}s", "--results", results, "--",
            PYTHON, script, "--batch-size", "{BATCH}", "--workers", "{WORKERS}",
            "--steps", "100000", "--pid-file", pids]
    proc = subprocess.Popen([g, "tune"] + args, cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 3 * KILL_TRIAL_S + 30
    while time.time() < deadline:
        n = len(read_jsonl(results)) if os.path.exists(results) else 0
        lines = open(pids).read().split() if os.path.exists(pids) else []
        if n == 1 and len(lines) >= 6:  # trial 1: main + 2 workers; trial 2 the same
            break
        time.sleep(0.1)
    else:
        proc.kill()
        fail("trial 2 with its workers never started")
    time.sleep(0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    if proc.returncode != 128 + sig:
        fail(f"exit code {proc.returncode}, expected {128 + sig}\n{err[-2000:]}")
    left = [p for p in open(pids).read().split() if alive(p)]
    if left:
        fail(f"processes of the trials still run: {left}")
    records = read_jsonl(results)
    if [r["outcome"] for r in records] != ["timeout", "interrupted"]:
        fail("outcomes " + str([r["outcome"] for r in records]))
    if "best" not in out or "BATCH 8" not in out or f"interrupted ({signame})" not in out:
        fail("the best so far is not printed:\n" + out)
    # The rerun resumes: trial 1 comes from the file, the interrupted one runs again; the budget
    # (2.2 trials) stops it after two more trials with "budget spent".
    p = tune(g, ["--budget", f"{2.2 * KILL_TRIAL_S:.0f}s"] + args, work)
    if p.returncode != 0:
        fail(f"rerun exited {p.returncode}\n{p.stderr[-2000:]}")
    if "trial 1 · BATCH=8 WORKERS=2 · timeout" not in p.stderr or "(from " not in p.stderr:
        fail("the rerun did not take trial 1 from the file:\n" + p.stderr[-2000:])
    if "budget spent" not in p.stdout:
        fail("the rerun did not stop on its budget:\n" + p.stdout)
    records = read_jsonl(results)
    first = [r for r in records if r["params"] == {"BATCH": "8", "WORKERS": "2"}]
    if [r["outcome"] for r in first] != ["timeout"]:
        fail("trial 1 was run again: " + str([r["outcome"] for r in first]))
    again = [r for r in records if r["params"] == {"BATCH": "16", "WORKERS": "2"}]
    if [r["outcome"] for r in again][:2] != ["interrupted", "timeout"]:
        fail("the interrupted trial was not run again: " + str([r["outcome"] for r in again]))
    left = [p for p in open(pids).read().split() if alive(p)]
    if left:
        fail(f"processes of the trials still run after the rerun: {left}")
    print(f"ok: {signame} → exit {128 + sig}, JSONL valid, no process left, rerun resumed "
          f"({len(records)} records)")


def main():
    g, script, work, mode = sys.argv[1:5]
    if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"SKIP: {PYTHON} cannot import torch (tools/setup.sh --test installs it)")
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # The trials' temporary files (the DataLoader workers' pymp-* folders, left behind when a
    # trial's time limit or a kill ends them) go inside `work`, removed below, not into /tmp.
    os.environ["TMPDIR"] = os.path.join(work, "tmp")
    os.makedirs(os.environ["TMPDIR"])
    if mode == "search":
        search(g, script, work)
    elif mode == "boundary":
        boundary(g, script, work)
    elif mode == "kill":
        kill(g, script, work, sys.argv[5])
    else:
        fail("unknown mode " + mode)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
