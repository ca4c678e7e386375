"""gpuscope for torch.profiler: a trace handler that diagnoses each profiling cycle, and a profiler
opened with the settings that make the best diagnosis.

    import gpuscope.torch
    with gpuscope.torch.profile("traces/") as prof:          # or torch.profiler.profile(...,
        for batch in loader:                                 #   on_trace_ready=gpuscope.torch
            train_step(batch)                                #   .trace_handler("traces/"))
            prof.step()

Each time a cycle's active steps end, the handler writes the trace as
torch.profiler.tensorboard_trace_handler does (DIR/<worker_name>.<step>.pt.trace.json, which the
TensorBoard plugin, HTA and `gpuscope analyze DIR` read), analyses it and prints the verdict and the
top findings. Reference: docs/python.md.
"""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import sys
from typing import Any, Callable, Optional, TextIO

import torch as _torch
import torch.profiler as _profiler

from . import Error, Report, analyze

__all__ = ["trace_handler", "profile", "profiler_problem"]


def profiler_problem(prof: Any = None) -> Optional[str]:
    """Why a trace of `prof` (a torch.profiler.profile) can hold no GPU activity to diagnose, with
    what to install or enable instead; None when it can."""
    if not _torch.autograd.kineto_available():
        return ("this PyTorch (%s) was built without Kineto (torch.autograd.kineto_available() is "
                "False): its profiler records only CPU ops in the legacy format, with no GPU "
                "kernels, copies or memory, so a trace has nothing to show where GPU time goes. "
                "Install a PyTorch build with Kineto (the pytorch.org wheels: pip install torch; "
                "the CUDA ones for a GPU) and profile with activities=[ProfilerActivity.CPU, "
                "ProfilerActivity.CUDA]." % _torch.__version__)
    activities = getattr(prof, "activities", None)
    if activities is not None and _profiler.ProfilerActivity.CUDA not in activities:
        if not _torch.cuda.is_available():
            return ("the profiler records no CUDA activities and this machine has no usable GPU "
                    "(torch.cuda.is_available() is False): run on the GPU machine with a CUDA "
                    "build of PyTorch, profiling activities=[ProfilerActivity.CPU, "
                    "ProfilerActivity.CUDA].")
        return ("the profiler records no CUDA activities (activities=%s), so the trace has no GPU "
                "kernels: enable them with activities=[ProfilerActivity.CPU, "
                "ProfilerActivity.CUDA]." % sorted(a.name for a in activities))
    return None


def _print_summary(report: Report, top: int, out: TextIO) -> None:
    for rank in report.ranks or [{"rank": None, "verdict": report.verdict,
                                  "findings": report.findings}]:
        label = "" if rank.get("rank") is None else " rank %s" % rank["rank"]
        out.write("gpuscope%s: verdict %s\n" % (label, rank.get("verdict")))
        for i, f in enumerate(rank["findings"][:top], 1):
            saving = f.get("saving_share")
            out.write("  %d. %s%s\n" % (i, f.get("title"),
                                        "" if saving is None else " (saves ~%.0f %% of a step)"
                                        % (100 * saving)))
            if f.get("fix"):
                out.write("     fix: %s\n" % f["fix"])


def trace_handler(dir_name: str, worker_name: Optional[str] = None, use_gzip: bool = False,
                  print_verdict: bool = True, top: int = 3,
                  file: Optional[TextIO] = None) -> Callable[[Any], None]:
    """A torch.profiler on_trace_ready handler: writes each cycle's trace into `dir_name` as
    tensorboard_trace_handler does (worker_name defaults to "<host>_<pid>"; the step number
    follows), then, with print_verdict, analyses it and prints the verdict and the `top` findings
    (to `file`, default stderr). When the profiler cannot record GPU activity (PyTorch without
    Kineto, no CUDA activities) the report of what the trace holds (steps, DataLoader waits, host
    work) is followed by a note saying so and what to enable. The handler's `.last_path` and
    `.last_report` hold the latest trace and Report."""

    def handler(prof: Any) -> None:
        out = file if file is not None else sys.stderr
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or "%s_%d" % (socket.gethostname(), os.getpid())
        path = os.path.join(dir_name, "%s.%d.pt.trace.json" % (name, prof.step_num))
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)
            path += ".gz"
        handler.last_path = path
        handler.last_report = None
        if not print_verdict:
            return
        # A trace without GPU activity is still analysed: its steps, DataLoader waits and host
        # work are in it. The note says what the trace cannot show and what to enable.
        problem = profiler_problem(prof)
        try:
            report = analyze(path)
        except Error as e:
            out.write("gpuscope: error: %s\n" % e)
            out.flush()
            return
        handler.last_report = report
        out.write("gpuscope: %s\n" % path)
        _print_summary(report, top, out)
        if problem is not None:
            out.write("  note: no GPU activity in this trace: %s\n" % problem)
        out.flush()

    handler.last_path = None
    handler.last_report = None
    return handler


# What each setting costs, said when profile() opens the profiler. The costs fall on the recorded
# (warm-up and active) steps only; the wait steps and the steps after the schedule run as usual.
_OVERHEAD = {
    "schedule": "steps outside the active ones run unprofiled; the warm-up steps are recorded "
                "and dropped, so the active steps exclude the profiler's start-up cost",
    "record_shapes": "input shapes per op: small host cost per op (kernels and shapes for "
                     "`gpuscope analyze`'s kernel tables)",
    "profile_memory": "every allocation and free: host cost per allocation (peak memory and "
                      "headroom)",
    "with_stack": "a Python stack per op: the largest host cost of the three, so off by "
                  "default; on to see source lines",
}


def profile(dir_name: str = "gpuscope_traces", *, wait: int = 1, warmup: int = 1, active: int = 3,
            repeat: int = 1, record_shapes: bool = True, profile_memory: bool = True,
            with_stack: bool = False, activities: Optional[list] = None,
            print_verdict: bool = True, worker_name: Optional[str] = None,
            use_gzip: bool = False, file: Optional[TextIO] = None,
            **kwargs: Any) -> "_profiler.profile":
    """torch.profiler.profile with the settings that make the best diagnosis: a schedule that
    skips `wait` steps, warms up for `warmup` and records `active` steps (several steps give
    the step time and its spread; `repeat` cycles), input shapes and memory events, CUDA
    activities when a GPU is available, and trace_handler(dir_name) as on_trace_ready. Says what
    each setting costs (to `file`, default stderr). Use it as torch.profiler.profile: call
    prof.step() at the end of every training step."""
    out = file if file is not None else sys.stderr
    if activities is None:
        activities = [_profiler.ProfilerActivity.CPU]
        if _torch.cuda.is_available():
            activities.append(_profiler.ProfilerActivity.CUDA)
    handler = trace_handler(dir_name, worker_name=worker_name, use_gzip=use_gzip,
                            print_verdict=print_verdict, file=file)
    prof = _profiler.profile(
        activities=activities,
        schedule=_profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat),
        on_trace_ready=handler, record_shapes=record_shapes, profile_memory=profile_memory,
        with_stack=with_stack, **kwargs)
    lines = ["gpuscope.torch.profile: schedule wait=%d warmup=%d active=%d repeat=%d: %s"
             % (wait, warmup, active, repeat, _OVERHEAD["schedule"])]
    for name, on in (("record_shapes", record_shapes), ("profile_memory", profile_memory),
                     ("with_stack", with_stack)):
        lines.append("  %s=%s: %s" % (name, on, _OVERHEAD[name]))
    lines.append("  traces: %s (gpuscope analyze %s)" % (dir_name, dir_name))
    problem = profiler_problem(prof)
    if problem is not None:
        lines.append("  note: " + problem)
    out.write("\n".join(lines) + "\n")
    out.flush()
    prof.gpuscope_handler = handler
    return prof
