"""Python.TorchHandlerWithoutKineto: gpuscope.torch against Debian's real PyTorch (1.13, CPU,
built without Kineto). The handler, used as on_trace_ready of a real torch.profiler run, writes
the trace as tensorboard_trace_handler names it and says that this profiler records no GPU
activity and what to install, instead of printing an empty verdict.

torch_handler_test.py SOURCE_DIR (run with the test venv's python).
"""

import io
import os
import shutil
import sys
import tempfile

try:
    import torch
    import torch.profiler as tp
except ImportError:
    print("SKIP: torch is not importable (Debian: python3-torch; tools/setup.sh --test)")
    sys.exit(77)
if torch.autograd.kineto_available():
    print("SKIP: this PyTorch has Kineto; the test is about one without (Debian's python3-torch)")
    sys.exit(77)

import gpuscope  # noqa: E402
import gpuscope.torch as gt  # noqa: E402

src = sys.argv[1]
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


tmp = tempfile.mkdtemp()
try:
    # 1. The handler on a real profiler without Kineto.
    out = io.StringIO()
    handler = gt.trace_handler(tmp, worker_name="worker0", file=out)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tp.profile(activities=[tp.ProfilerActivity.CPU],
                    schedule=tp.schedule(wait=1, warmup=1, active=2, repeat=1),
                    on_trace_ready=handler, record_shapes=True, profile_memory=True) as prof:
        for _ in range(5):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(torch.randn(16, 64)),
                                              torch.randint(0, 4, (16,))).backward()
            opt.step()
            prof.step()
    said = out.getvalue()
    print("handler said:\n" + said)
    written = sorted(os.listdir(tmp))
    check(written == ["worker0.4.pt.trace.json"],
          "the trace is written as <worker_name>.<step>.pt.trace.json (%s)" % written)
    check("built without Kineto" in said and "kineto_available() is False" in said,
          "the handler says the profiler has no Kineto")
    check("pip install torch" in said and "ProfilerActivity.CUDA" in said,
          "and what to install and enable instead")
    check("verdict" not in said and handler.last_report is None, "no (empty) verdict printed")
    # What the verdict would have been: the legacy trace has no GPU work in it.
    legacy = gpuscope.analyze(os.path.join(tmp, written[0]))
    print("gpuscope.analyze of that trace: verdict %r" % legacy.verdict)
    check(legacy.verdict == "no GPU work", "(analysing it anyway finds no GPU work)")

    # 2. gpuscope.torch.profile says its settings' costs, and the same about this PyTorch.
    out = io.StringIO()
    prof = gt.profile(os.path.join(tmp, "p"), wait=1, warmup=1, active=2, file=out)
    with prof:
        for _ in range(4):
            model(torch.randn(16, 64)).sum().backward()
            prof.step()
    said = out.getvalue()
    print("profile() said:\n" + said)
    for word in ("wait=1 warmup=1 active=2", "record_shapes=True", "profile_memory=True",
                 "with_stack=False", "built without Kineto"):
        check(word in said, "profile() says %s" % word)

    # 3. The branches that need Kineto, with this torch's answers replaced (a fake profiler: the
    # real one cannot record CUDA here). No CUDA activities → says so; CUDA recorded → the
    # verdict and top findings of the trace (the bundled Kineto example stands in for it).
    real = torch.autograd.kineto_available
    torch.autograd.kineto_available = lambda: True
    try:
        class FakeProfiler:
            step_num = 12

            def __init__(self, activities):
                self.activities = set(activities)

            def export_chrome_trace(self, path):
                shutil.copyfile(os.path.join(src, "examples",
                                             "train_input_bound.pt.trace.json.gz"), path)

        out = io.StringIO()
        h = gt.trace_handler(os.path.join(tmp, "k"), worker_name="w", file=out)
        h(FakeProfiler([tp.ProfilerActivity.CPU]))
        print("no CUDA activities:\n" + out.getvalue())
        check("no CUDA activities" in out.getvalue() and h.last_report is None,
              "a profiler without CUDA activities: says so")
        out = io.StringIO()
        h = gt.trace_handler(os.path.join(tmp, "k"), worker_name="w", file=out)
        h(FakeProfiler([tp.ProfilerActivity.CPU, tp.ProfilerActivity.CUDA]))
        print("with CUDA activities:\n" + out.getvalue())
        check("verdict input-bound" in out.getvalue() and
              "The GPU waits for the input pipeline" in out.getvalue(),
              "with CUDA activities: prints the verdict and the top finding")
        check(h.last_report is not None and h.last_report.verdict == "input-bound",
              "handler.last_report")
    finally:
        torch.autograd.kineto_available = real
finally:
    shutil.rmtree(tmp)

print("%d failed" % len(failures) if failures else "all passed")
sys.exit(1 if failures else 0)
