"""Python.PlanExact: exact mode of `gpuscope plan` live (torch + transformers on fake tensors).

plan_exact_test.py GPUSCOPE_BINARY SOURCE_DIR SHARED_DIR (run with the test venv's python, which has
torch 2.13 CPU and transformers). Skips (77) without them.

  * the CLI (`--exact`, with GPUSCOPE_PYTHON = this interpreter) and the Python API
    (gpuscope.plan(exact=True)) on small GPT-2 and Llama shapes: measured terms, the assumption
    saying what was measured, and the same numbers from both;
  * the lab's gpt2-medium (B2, bf16, batch 8 × 1024) re-measured equals the saved measurement
    tests/data/plan/exact_gpt2-medium_b8_s1024_bf16.json that tests/plan_exact_test.cc checks
    against the H200 run (so the saved file is what the code measures);
  * a config transformers cannot build is exit 2 with its message.
"""

import json
import os
import subprocess
import sys
import tempfile

try:
    import torch  # noqa: F401
    import transformers  # noqa: F401
except ImportError as e:
    print(f"SKIP: exact mode needs torch and transformers ({e})")
    sys.exit(77)

import gpuscope  # noqa: E402

cli, src = sys.argv[1], sys.argv[2]
shared = sys.argv[3] if len(sys.argv) > 3 else ""  # may be absent: then the lab check says so
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def terms(doc):
    rows = doc["sections"]["best"]["items"]["memory_terms"]["rows"]
    return {r["term"]: r for r in rows}


def assumptions(doc):
    return [i["text"] for i in doc["sections"]["assumptions"]["items"].values()]


tiny_gpt2 = {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "n_positions": 128,
             "vocab_size": 1000, "n_inner": None, "activation_function": "gelu_new"}
tiny_llama = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 176,
              "vocab_size": 1000, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
              "tie_word_embeddings": False, "hidden_act": "silu"}

env = dict(os.environ, GPUSCOPE_PYTHON=sys.executable)
with tempfile.TemporaryDirectory() as tmp:
    for name, config in (("gpt2", tiny_gpt2), ("llama", tiny_llama)):
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(config, f)
        args = ["plan", "--model", path, "--gpu", "h200", "--gpus", "1", "--global-batch", "2",
                "--mbs", "2", "--seq-len", "64", "--precision", "bf16", "--recompute", "none",
                "--framework", "ddp", "--zero", "0", "--tp", "1", "--pp", "1", "--exact"]
        out = subprocess.run([cli] + args + ["--json"], capture_output=True, text=True, env=env)
        check(out.returncode == 0, f"{name}: gpuscope plan --exact exits 0 ({out.stderr[-300:]})")
        if out.returncode != 0:
            continue
        doc = json.loads(out.stdout)
        t = terms(doc)
        measured = [k for k in t if k.endswith("(measured)")]
        check(any(k.startswith("saved tensors of transformer layers") for k in measured),
              f"{name}: the layers' saved tensors are a measured term ({sorted(t)})")
        layers = next(r for k, r in t.items() if k.startswith("saved tensors"))
        check(layers["memory_bytes"] > 0, f"{name}: the layers saved {layers['memory_bytes']} B")
        check(any("exact mode: one training step" in a for a in assumptions(doc)),
              f"{name}: the assumptions say what exact mode measured")
        row = doc["sections"]["search"]["items"]["configurations"]["rows"][0]
        check(0 < row["peak_allocated_bytes"] < row["peak_bytes"],
              f"{name}: 0 < peak_allocated_bytes {row['peak_allocated_bytes']} < peak_bytes")
        # The same plan from Python (measured in this process).
        report = gpuscope.plan(model=path, gpu="h200", gpus=1, global_batch=2, mbs=2, seq_len=64,
                               precision="bf16", recompute="none", framework="ddp", zero=0, tp=1,
                               pp=1, exact=True)
        py_row = report.to_dict()["sections"]["search"]["items"]["configurations"]["rows"][0]
        check(py_row["peak_allocated_bytes"] == row["peak_allocated_bytes"] and
              py_row["step_time_ns"] == row["step_time_ns"],
              f"{name}: gpuscope.plan(exact=True) = the CLI ({py_row['peak_allocated_bytes']} vs "
              f"{row['peak_allocated_bytes']} B)")

    # A config transformers cannot build: exit 2, its message.
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        json.dump(dict(tiny_gpt2, model_type="no-such-model", n_inner=256), f)
    out = subprocess.run([cli, "plan", "--model", bad, "--gpu", "h200", "--gpus", "1",
                          "--global-batch", "2", "--seq-len", "64", "--exact"],
                         capture_output=True, text=True, env=env)
    check(out.returncode == 2 and "exact mode" in out.stderr,
          f"a config transformers cannot read: exit 2 with exact mode's message ({out.stderr[-200:]})")

# The saved lab measurement is what the code measures now.
config = os.path.join(shared, "traces", "gpu_lab_h200", "gpt2-medium.config.json")
if os.path.isfile(config):
    from gpuscope import exact  # the installed package's copy of python/gpuscope/exact.py
    live = exact.measure(config, 8, 1024, "bf16")
    with open(os.path.join(src, "tests", "data", "plan",
                           "exact_gpt2-medium_b8_s1024_bf16.json")) as f:
        saved = json.load(f)
    ratio = live["peak_allocated_bytes"] / saved["peak_allocated_bytes"]
    check(abs(ratio - 1) < 0.005,
          f"gpt2-medium bf16 b8: live peak {live['peak_allocated_bytes']} B = saved "
          f"{saved['peak_allocated_bytes']} B within 0.5 % ({ratio:.4f}; transformers "
          f"{live['transformers']} vs {saved['transformers']})")
    check(live["saved_per_layer_bytes"] == saved["saved_per_layer_bytes"],
          "gpt2-medium bf16 b8: the same bytes saved per layer")
    print(f"measured in {live['seconds']} s")
else:
    print(f"note: {config} not found; the lab measurement is not re-checked")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
