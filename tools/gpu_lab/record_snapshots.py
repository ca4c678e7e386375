#!/usr/bin/env python3
"""Records the real CUDA memory snapshots issue 32 item 6 still lacks, on a lent GPU.

Prepared on a machine without a GPU (session 24) so that a session that is lent one spends its
device minutes running this, not writing it. Writes to OUT (default $OUT):

  kv_on.pickle.gz    one training step of gpt2-medium (tests/data/plan/gpt2-medium.config.json;
                     random weights) at batch B x sequence S under torch.autocast(bf16), with
                     transformers' use_cache left on: the KV cache (cache_utils.py's
                     DynamicCache.update) is among the live allocations at the peak
  kv_off.pickle.gz   the same step with use_cache=False: the fix
  cap_oom.pickle.gz  an OOM under torch.cuda.set_per_process_memory_fraction(FRACTION) with the
                     device mostly free ("… GiB allowed" in PyTorch's message)
  truth.json         per run: torch.cuda.max_memory_allocated() of the recorded step, the mean
                     step time over --steps steps timed with CUDA events without the recorder,
                     the OOM's message, the versions and the device name

Each snapshot holds one step's allocation history (torch.cuda.memory._record_memory_history,
python stacks), gzip-compressed (gpuscope reads .pickle.gz by content).

  python3 tools/gpu_lab/record_snapshots.py [--out DIR] [--batch 8] [--seq 1024]
  python3 tools/gpu_lab/record_snapshots.py --dry-run   # the same steps on the CPU, tiny model,
                                                        # no snapshot: checks the script here
"""
import argparse
import gzip
import json
import os
import pickle
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "..", "tests", "data", "plan", "gpt2-medium.config.json")


def build_model(dry_run):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config.from_json_file(CONFIG)
    if dry_run:
        config.n_layer, config.n_embd, config.n_head = 2, 64, 2
    return GPT2LMHeadModel(config), config


def train_steps(use_cache, args, record_path=None):
    """Runs warm-up steps, --steps timed steps, then (on CUDA) one recorded step."""
    import torch

    device = "cpu" if args.dry_run else "cuda"
    model, config = build_model(args.dry_run)
    model.to(device).train()
    model.config.use_cache = use_cache
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device=device)

    def step():
        with torch.autocast(device, dtype=torch.bfloat16):
            out = model(input_ids=ids, labels=ids, use_cache=use_cache)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return out

    for _ in range(3):
        step()
    result = {"use_cache": use_cache, "batch": args.batch, "seq": args.seq}
    if args.dry_run:
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        result["step_ms"] = (time.perf_counter() - start) * 1e3 / args.steps
        return result
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(args.steps):
        step()
    end.record()
    torch.cuda.synchronize()
    result["step_ms"] = begin.elapsed_time(end) / args.steps
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks="python")
    out = step()
    torch.cuda.synchronize()
    result["max_allocated_bytes"] = torch.cuda.max_memory_allocated()
    result["max_reserved_bytes"] = torch.cuda.max_memory_reserved()
    # The output (and with use_cache its past_key_values) is still referenced here, as in a loop
    # that keeps `out` for logging.
    # (transformers 5.24 renames past_key_values to cache; the device had 5.17.)
    cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
    result["returned_cache"] = cache is not None
    write_snapshot(torch.cuda.memory._snapshot(), record_path)
    torch.cuda.memory._record_memory_history(enabled=None)
    del out, model, optimizer
    torch.cuda.empty_cache()
    return result


def write_snapshot(snapshot, path):
    with gzip.open(path, "wb", compresslevel=9) as f:
        pickle.dump(snapshot, f)


def cap_oom(args):
    import torch

    if args.dry_run:
        return {"skipped": "no CUDA in --dry-run"}
    torch.cuda.set_per_process_memory_fraction(args.fraction)
    torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks="python")
    held, message = [], ""
    try:
        while True:  # 1 GiB at a time until the cap refuses
            held.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
    except torch.cuda.OutOfMemoryError as e:
        message = str(e).splitlines()[0]
    free, total = torch.cuda.mem_get_info()
    write_snapshot(torch.cuda.memory._snapshot(), os.path.join(args.out, "cap_oom.pickle.gz"))
    torch.cuda.memory._record_memory_history(enabled=None)
    del held
    torch.cuda.empty_cache()
    torch.cuda.set_per_process_memory_fraction(1.0)
    return {"fraction": args.fraction, "message": message, "free_bytes_after": free,
            "total_bytes": total}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--fraction", type=float, default=0.12)
    p.add_argument("--max-entries", type=int, default=40000)
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args()
    if args.dry_run:
        args.batch, args.seq, args.steps = 2, 32, 2
    import torch
    import transformers

    os.makedirs(args.out, exist_ok=True)
    truth = {
        "made_by": "tools/gpu_lab/record_snapshots.py" + (" --dry-run" if args.dry_run else ""),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "device": "cpu" if args.dry_run else torch.cuda.get_device_name(),
        "runs": {},
    }
    for tag, use_cache in (("kv_on", True), ("kv_off", False)):
        path = os.path.join(args.out, tag + ".pickle.gz")
        truth["runs"][tag] = train_steps(use_cache, args, path)
        print(tag, truth["runs"][tag], flush=True)
    truth["runs"]["cap_oom"] = cap_oom(args)
    print("cap_oom", truth["runs"]["cap_oom"], flush=True)
    with open(os.path.join(args.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
