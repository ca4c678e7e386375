"""Python.RunSlowDataLoader(Verdict): a real PyTorch training loop (torch 2.13, CPU) whose two
DataLoader workers are deliberately slow, run under the installed `gpuscope run`.

  run_slow_dataloader_test.py TRAIN_SCRIPT RESULT_JSON
    Runs `gpuscope run --report-json R -- PYTHON TRAIN_SCRIPT` (PYTHON: the one running this test).
    gpuscope's figure for the main process's CPU (main_cpu_mean_pct, sampled from /proc every
    interval) is compared with the process's own accounting, read by the script at its end:
    CPU seconds (os.times) over its lifetime (/proc/self/stat start time). Both are CPU-time over
    wall-time of the same process, so a second job on the machine changes both alike. They differ
    only by what the sampling does not see: the life before the first sample and after the last
    one, at most two intervals of the lifetime (plus 0.5 point for the 2 decimals recorded). The
    test asserts that derived bound, that the loop does wait for its input (measured with
    wall-clock timers in the loop: > 30 %), and that gpuscope names the main process and its 2
    workers. Saves both documents to RESULT_JSON for:
  run_slow_dataloader_test.py --verdict RESULT_JSON
    The acceptance's verdict: input-bound (the training process waits for its input from its
    workers: rule `waits_on_workers`, which reads it from CPU data alone). When another job kept
    the cores saturated, the rule table's order (cpu_saturated first) is checked instead: CPU
    samples cannot tell waiting for a batch from waiting for a core.
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
    it = items(saved["report"])
    verdict = value(it["verdict"], "verdict")
    busy = value(it["cpu"], "system_busy_mean_pct")
    print("gpuscope run's verdict: %s (the cores were %s %% busy)" % (verdict, busy))
    if busy is not None and busy >= 90:
        # Another job kept the cores saturated (kCpuSaturatedPct, 90 %). Off the CPU then means
        # waiting for a core as much as for a batch, which the CPU samples cannot tell apart, so
        # the rule table puts cpu_saturated before waits_on_workers (docs/monitor.md). Check that
        # order instead of the verdict an idle machine gives.
        ok = "cores" in verdict.lower() and "busy" in verdict.lower()
        print(("ok    " if ok else "FAIL  ") + "on saturated cores the verdict is the "
              "cpu_saturated rule's, as the rule table orders it")
        sys.exit(0 if ok else 1)
    if "input" in verdict.lower() and ("wait" in verdict.lower() or "bound" in verdict.lower()):
        print("ok    the verdict says the loop waits for its input")
        sys.exit(0)
    print("FAIL  the verdict does not say the loop waits for its input (rule waits_on_workers, "
          "docs/monitor.md)")
    sys.exit(1)

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: torch is not importable (tools/setup.sh --test)")
    sys.exit(77)

train, result_path = sys.argv[1], sys.argv[2]
gpuscope_cmd = os.path.join(os.path.dirname(sys.executable), "gpuscope")
with tempfile.TemporaryDirectory() as tmp:
    report_path = os.path.join(tmp, "run.json")
    env = dict(os.environ, TRAIN_SECONDS=os.environ.get("TRAIN_SECONDS", "12"))
    run = subprocess.run([gpuscope_cmd, "run", "--report-json", report_path, "--",
                          sys.executable, train], capture_output=True, text=True, env=env,
                         timeout=240)
    print(run.stderr)
    check(run.returncode == 0, "gpuscope run -- python train.py exits 0")
    loop = json.loads(run.stdout.strip().splitlines()[-1])
    with open(report_path) as f:
        report = json.load(f)

it = items(report)
cpu = it["cpu"]
main_cpu = value(cpu, "main_cpu_mean_pct")
workers = it["workers"]["rows"]
interval_s = 0.1  # gpuscope run's default --interval
print("loop: %d steps, waited %.2f s, computed %.2f s; process: %.2f CPU s over %.2f s"
      % (loop["steps"], loop["wait_s"], loop["compute_s"], loop["process_cpu_s"],
         loop["process_life_s"]))
own = 100 * loop["process_cpu_s"] / loop["process_life_s"]
bound = 100 * 2 * interval_s / loop["process_life_s"] + 0.5
print("main process CPU: its own accounting %.1f %%, gpuscope run %.1f %%, difference %.1f points "
      "(derived bound %.1f points)" % (own, main_cpu, abs(own - main_cpu), bound))
check(abs(own - main_cpu) <= bound, "gpuscope's main-process CPU is the process's own, within %.1f "
      "points" % bound)
measured = loop["wait_share"]
print("share of the loop waiting for data (wall-clock, in the loop): %.1f %%" % (100 * measured))
check(measured > 0.3, "the loop does wait for its input (%.0f %% > 30 %%)" % (100 * measured))
check(str(value(cpu, "main_process")).startswith("python"),
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
