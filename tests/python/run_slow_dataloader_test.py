"""Python.RunSlowDataLoader(Verdict): a real PyTorch training loop (Debian's torch, CPU) whose two
DataLoader workers are deliberately slow, run under the installed `gpuscope run`.

  run_slow_dataloader_test.py TRAIN_SCRIPT RESULT_JSON
    Runs `gpuscope run --report-json R -- /usr/bin/python3 TRAIN_SCRIPT`. The loop measures with
    wall-clock timers the share of its time spent waiting for the next batch; gpuscope sees the
    main process's CPU (the step computes on one thread, so the main process is off the CPU
    exactly while it waits): its figure for the wait is 1 − main-process CPU. The test prints
    both, asserts they agree within 10 percentage points and that gpuscope names the main
    process and its 2 workers. Saves both documents to RESULT_JSON for:
  run_slow_dataloader_test.py --verdict RESULT_JSON
    The acceptance's verdict: input-bound (the training process waits for its input from its
    workers: rule `waits_on_workers`, which reads it from CPU data alone).
"""

import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def items(doc):
    def walk(section):
        for key, item in section.get("items", {}).items():
            yield key, item
        for sub in section.get("sections", {}).values():
            yield from walk(sub)
    return dict(walk(doc))


def value(item, field):
    f = item.get("fields", {}).get(field)
    return None if f is None else f.get("value")


if sys.argv[1] == "--verdict":
    with open(sys.argv[2]) as f:
        saved = json.load(f)
    verdict = value(items(saved["report"])["verdict"], "verdict")
    print("gpuscope run's verdict: %s" % verdict)
    if "input" in verdict.lower() and ("wait" in verdict.lower() or "bound" in verdict.lower()):
        print("ok    the verdict says the loop waits for its input")
        sys.exit(0)
    print("FAIL  the verdict does not say the loop waits for its input (rule waits_on_workers, "
          "docs/monitor.md)")
    sys.exit(1)

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: torch is not importable (Debian: python3-torch; tools/setup.sh --test)")
    sys.exit(77)

train, result_path = sys.argv[1], sys.argv[2]
gpuscope_cmd = os.path.join(os.path.dirname(sys.executable), "gpuscope")
with tempfile.TemporaryDirectory() as tmp:
    report_path = os.path.join(tmp, "run.json")
    env = dict(os.environ, TRAIN_SECONDS=os.environ.get("TRAIN_SECONDS", "12"))
    run = subprocess.run([gpuscope_cmd, "run", "--report-json", report_path, "--",
                          "/usr/bin/python3", train], capture_output=True, text=True, env=env,
                         timeout=240)
    print(run.stderr)
    check(run.returncode == 0, "gpuscope run -- python3 train.py exits 0")
    loop = json.loads(run.stdout.strip().splitlines()[-1])
    with open(report_path) as f:
        report = json.load(f)

it = items(report)
cpu = it["cpu"]
main_cpu = value(cpu, "main_cpu_mean_pct")
workers = it["workers"]["rows"]
print("loop: %d steps, waited %.2f s, computed %.2f s" % (loop["steps"], loop["wait_s"],
                                                         loop["compute_s"]))
measured = loop["wait_share"]
seen = 1 - main_cpu / 100
print("share of the loop waiting for data: measured in the loop %.1f %%, gpuscope run "
      "(1 − main-process CPU %.1f %%) %.1f %%, difference %.1f points"
      % (100 * measured, main_cpu, 100 * seen, 100 * abs(seen - measured)))
check(abs(seen - measured) <= 0.10, "they agree within 10 percentage points")
check(measured > 0.3, "the loop does wait for its input (%.0f %% > 30 %%)" % (100 * measured))
check(str(value(cpu, "main_process")).startswith("python3"),
      "gpuscope names the main process: %s" % value(cpu, "main_process"))
check(value(cpu, "workers") == 2 and len(workers) == 2,
      "gpuscope names the 2 DataLoader workers: %s" %
      ", ".join("%s (pid %s, CPU %.0f %%)" % (w["name"], w["pid"], w["cpu_mean_pct"] or 0)
                for w in workers))
print("verdict: %s" % value(it["verdict"], "verdict"))
with open(result_path, "w") as f:
    json.dump({"loop": loop, "report": report}, f)

print("%d failed" % len(failures) if failures else "all passed")
sys.exit(1 if failures else 0)
