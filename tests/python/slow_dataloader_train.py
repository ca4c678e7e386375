"""A small real PyTorch training loop (CPU) whose DataLoader workers are deliberately slow.

Run under `gpuscope run -- python slow_dataloader_train.py` by tests/python/run_slow_dataloader_test.py.
Each sample takes SAMPLE_SLEEP_S in the worker (time.sleep: the worker waits, like a slow disk or
network read), so two workers deliver a batch every BATCH * SAMPLE_SLEEP_S / 2 seconds while the
step itself computes for less. The loop measures with wall-clock timers how long it waits for the
next batch and how long the step computes, and its own CPU time and lifetime, and prints them as
JSON on its last line.
"""

import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

BATCH = 8
SAMPLE_SLEEP_S = float(os.environ.get("SAMPLE_SLEEP_S", "0.02"))
DURATION_S = float(os.environ.get("TRAIN_SECONDS", "12"))
FEATURES = 512
STEPS_PER_BATCH = int(os.environ.get("STEPS_PER_BATCH", "1"))


class SlowDataset(Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        time.sleep(SAMPLE_SLEEP_S)  # the slow part of the input pipeline
        g = torch.Generator().manual_seed(i)
        x = torch.randn(FEATURES, generator=g)
        return x, (x.sum() > 0).long()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the step keeps one core busy: the main process's CPU is its compute
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowDataset(), batch_size=BATCH, num_workers=2, persistent_workers=True)
    it = iter(loader)
    x, y = next(it)  # workers started, first batch in: the timed loop starts in steady state
    wait = compute = 0.0
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < DURATION_S:
        t0 = time.perf_counter()
        x, y = next(it)
        t1 = time.perf_counter()
        for _ in range(STEPS_PER_BATCH):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        t2 = time.perf_counter()
        wait += t1 - t0
        compute += t2 - t1
        steps += 1
    total = wait + compute
    # The process's own CPU accounting over its whole life (what `gpuscope run` samples from
    # /proc/PID/stat): CPU seconds of this process (not its workers) and seconds since it started.
    times = os.times()
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        uptime_s = float(f.read().split()[0])
    life_s = uptime_s - start_ticks / os.sysconf("SC_CLK_TCK")
    print(json.dumps({"steps": steps, "wait_s": wait, "compute_s": compute,
                      "wait_share": wait / total if total else None,
                      "process_cpu_s": times.user + times.system, "process_life_s": life_s}))
    sys.stdout.flush()
    # Exit now: the interpreter's teardown (the workers' shutdown, torch's finalisers) would spend
    # CPU after the accounting above, which `gpuscope run` would see and the script would not.
    os._exit(0)


if __name__ == "__main__":
    main()
