"""A real PyTorch training loop (CPU) with planted answers for `gpuscope tune` (tests/python).

Throughput (samples/s) is made to depend on the batch size and the DataLoader workers in a known
way, with sleeps (which need no CPU, so the effects hold on a loaded 2-core machine):
  * each sample costs SAMPLE_S in the dataset's __getitem__ (simulated I/O: a worker waits);
  * the step computes a real forward/backward and then sleeps up to
    STEP_S * max(1, batch / PLATEAU_BATCH): a step costs the same up to the plateau batch (the GPU
    was under-used), and grows with the batch beyond it (the GPU is full).
So with W workers the steady step takes max(compute, batch * SAMPLE_S / W) (W = 0: their sum),
and samples/s = batch / step rises with the batch up to PLATEAU_BATCH and is flat beyond it;
more workers help until loading is faster than compute (planted: 4 workers at batch 32 with the
defaults). Above FITS_UP_TO the script fails the way PyTorch does on a CUDA out-of-memory: the
exception torch.cuda.OutOfMemoryError with PyTorch's message, exit code 1.

Each step prints "step N: X samples/s" (flushed). --pid-file appends the pid of the main process
and of each DataLoader worker, so a test can check none survives.
"""

import argparse
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

FITS_UP_TO = int(os.environ.get("TUNE_FITS_UP_TO", "96"))
PLATEAU_BATCH = int(os.environ.get("TUNE_PLATEAU_BATCH", "32"))
STEP_S = float(os.environ.get("TUNE_STEP_S", "0.05"))
SAMPLE_S = float(os.environ.get("TUNE_SAMPLE_S", "0.0047"))
FEATURES = 64


def record_pid(path):
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()}\n")


class SlowDataset(Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        if SAMPLE_S > 0:
            time.sleep(SAMPLE_S)  # the read of one sample
        return torch.full((FEATURES,), float(i % 7))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=int(os.environ.get("GPUSCOPE_BATCH", "8")))
    p.add_argument("--workers", type=int, default=int(os.environ.get("GPUSCOPE_WORKERS", "0")))
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--pid-file")
    a = p.parse_args()
    record_pid(a.pid_file)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Linear(FEATURES, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if a.batch_size > FITS_UP_TO:
        # What PyTorch raises when the activations of this batch do not fit (its message, 1.13).
        need = a.batch_size * 0.75
        raise torch.cuda.OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {need:.2f} GiB (GPU 0; 79.15 GiB total "
            "capacity; 77.31 GiB already allocated; 412.62 MiB free; 77.90 GiB reserved in total "
            "by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb "
            "to avoid fragmentation.  See documentation for Memory Management and "
            "PYTORCH_CUDA_ALLOC_CONF")
    loader = DataLoader(SlowDataset(), batch_size=a.batch_size, num_workers=a.workers,
                        persistent_workers=a.workers > 0,
                        worker_init_fn=(lambda _: record_pid(a.pid_file)) if a.workers else None)
    it = iter(loader)
    compute_s = STEP_S * max(1.0, a.batch_size / PLATEAU_BATCH)
    for step in range(a.steps):
        t0 = time.perf_counter()
        x = next(it)
        t1 = time.perf_counter()
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        time.sleep(max(0.0, compute_s - (time.perf_counter() - t1)))
        dt = time.perf_counter() - t0
        print(f"step {step}: {a.batch_size / dt:.1f} samples/s", flush=True)


if __name__ == "__main__":
    main()
