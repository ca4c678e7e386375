"""An input-bound PyTorch training loop (CPU) whose DataLoader workers burn CPU: each sample is
augmented with real tensor work in the worker, so two workers are busy all the time while the
training process mostly waits for the next batch. Made to record
tests/data/monitor/run_cpu_busy_workers.jsonl (issue 32 item 1: the busiest processes are the
workers, the trainer is their parent):

  gpuscope run --interval 100ms --record run_cpu_busy_workers.jsonl -- \
      python3 tests/python/busy_workers_train.py

It prints the trainer's pid, its workers' pids and the share of the loop spent waiting for a
batch (wall-clock timers) as JSON on its last line.
"""

import json
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

SECONDS = float(os.environ.get("TRAIN_SECONDS", "8"))


class HeavyDataset(Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(64, 64, generator=g)
        for _ in range(40):  # augmentation: CPU work in the worker
            x = torch.tanh(x @ x.T / 64)
        return x.flatten()[:256], int(i % 2)


def main():
    torch.set_num_threads(1)
    model = torch.nn.Linear(256, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(HeavyDataset(), batch_size=16, num_workers=2,
                        worker_init_fn=lambda _: torch.set_num_threads(1))
    it = iter(loader)
    wait = 0.0
    start = time.perf_counter()
    steps = 0
    while time.perf_counter() - start < SECONDS:
        t0 = time.perf_counter()
        x, y = next(it)
        wait += time.perf_counter() - t0
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        steps += 1
    total = time.perf_counter() - start
    workers = [w.pid for w in it._workers]
    print(json.dumps({"trainer_pid": os.getpid(), "worker_pids": workers, "steps": steps,
                      "wait_share": round(wait / total, 3)}))


if __name__ == "__main__":
    main()
