"""A real PyTorch DataLoader loop with a simulated accelerator step, the
shape of the usual DataLoader tuning benchmark: set the knobs on the
command line, run it for a while, read samples/s and the loop's own wait.

    python3 dataloader_bench.py --workers 2 --cost 0.001 --step 0.03
    gpuwatch run -- python3 dataloader_bench.py --workers 0 --cost 0.004
    gpuwatch tune -- python3 dataloader_bench.py --workers {num_workers:1} --io 0.002

Each sample costs --cost seconds of real CPU work (Python arithmetic,
calibrated at start, or at --rate iterations a CPU second) and waits --io
seconds on "storage" (a sleep, as a network read would); the step is
--matmul (a NumPy matmul on the CPU, which goes through the machine's BLAS)
then a --step sleep standing for the accelerator. Short epochs (--epoch-batches) with a costly worker start
(--worker-start) show what persistent_workers saves.

It prints one line "RESULT {json}" when it ends: its own wait share (time
in next() over time in the loop) and samples/s, measured after --warmup
seconds; with --report, a "PROGRESS {json}" line every so many seconds.
--hook wraps the DataLoader with gpuwatch_hook.watch() (the hook's own
way; gpuwatch run needs no such flag)."""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("--workers", type=int, default=2, help="num_workers")
p.add_argument("--prefetch", type=int, default=None, help="prefetch_factor (with workers)")
p.add_argument("--persistent", type=lambda s: s.lower() in ("1", "true", "yes"), default=False, help="persistent_workers: true or false")
p.add_argument("--pin", type=lambda s: s.lower() in ("1", "true", "yes"), default=False, help="pin_memory: true or false")
p.add_argument("--batch", type=int, default=8, help="batch_size")
p.add_argument("--cost", type=float, default=0.0005, help="CPU seconds of work per sample")
p.add_argument("--io", type=float, default=0.0, help="seconds each sample waits on storage")
p.add_argument("--rate", type=float, default=0.0, help="iterations of the work loop per CPU second (0: calibrate at start); runs compared with each other should share one")
p.add_argument("--print-rate", action="store_true", help="print the calibrated rate and exit")
p.add_argument("--step", type=float, default=0.03, help="the simulated accelerator step, seconds")
p.add_argument("--matmul", type=int, default=0, help="an N×N NumPy matmul in each step (the BLAS's threads)")
p.add_argument("--epoch-batches", type=int, default=0, help="batches per epoch (0: one endless epoch)")
p.add_argument("--worker-start", type=float, default=0.0, help="seconds each worker takes to start (worker_init_fn)")
p.add_argument("--seconds", type=float, default=30, help="how long to run")
p.add_argument("--warmup", type=float, default=3, help="seconds not measured at the start")
p.add_argument("--report", type=float, default=0, help="a PROGRESS line every this many seconds (0: none)")
p.add_argument("--hook", action="store_true", help="wrap the DataLoader with gpuwatch_hook.watch()")
a = p.parse_args()


def calibrate():
    """Iterations of the work loop per CPU second: the best of ten rounds
    a few ms apart (a busy box slows some rounds, by cache and by its other
    hyperthread, and a slow reading makes every sample lighter)."""
    best = 0.0
    for _ in range(10):
        t = time.thread_time()
        work(200000)
        best = max(best, 200000 / max(time.thread_time() - t, 1e-6))
        time.sleep(0.005)
    return best


def work(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFF
    return x


# A rate calibrated in each run makes each run's samples cost a different
# amount of work where the CPU's speed varies between runs (other users, a
# busy sibling thread): tune's runs and a sweep's are compared by the work
# each sample is, so they are given one rate (--rate).
if a.print_rate:
    print(calibrate())
    sys.exit(0)
RATE = a.rate or (calibrate() if a.cost > 0 else 0)


class Samples(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if a.cost > 0:
            work(int(a.cost * RATE))
        if a.io > 0:
            time.sleep(a.io)
        return torch.zeros(16)


def init_worker(_):
    if a.worker_start > 0:
        time.sleep(a.worker_start)


length = a.epoch_batches * a.batch if a.epoch_batches else 1 << 30
kw = dict(batch_size=a.batch, num_workers=a.workers, pin_memory=a.pin, worker_init_fn=init_worker if a.workers else None)
if a.workers:
    kw["persistent_workers"] = a.persistent
    if a.prefetch:
        kw["prefetch_factor"] = a.prefetch
loader = DataLoader(Samples(length), **kw)
if a.hook:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import gpuwatch_hook

    loader = gpuwatch_hook.watch(loader, port=0)

model = torch.nn.Linear(16, 16)
mm = np.random.rand(a.matmul, a.matmul) if a.matmul else None
start = time.perf_counter()
end = start + a.seconds
measured_from = start + a.warmup
wait = step = 0.0
samples = 0
last, lw, ls, ln = time.perf_counter(), 0.0, 0.0, 0
done = False
while not done:
    epoch_start = time.perf_counter()  # starting the workers is part of the first wait
    it = iter(loader)
    while True:
        t0 = epoch_start if epoch_start is not None else time.perf_counter()
        epoch_start = None
        try:
            b = next(it)
        except StopIteration:
            break
        t1 = time.perf_counter()
        model(b).sum().backward()
        if mm is not None:
            np.dot(mm, mm)
        time.sleep(a.step)
        t2 = time.perf_counter()
        if t0 >= measured_from:
            wait += t1 - t0
            step += t2 - t1
            samples += len(b)
            lw, ls, ln = lw + t1 - t0, ls + t2 - t1, ln + len(b)
        if a.report and t2 - last >= a.report and lw + ls > 0:
            print("PROGRESS " + json.dumps({"wait_share": lw / (lw + ls), "samples_per_sec": ln / (lw + ls)}), flush=True)
            last, lw, ls, ln = t2, 0.0, 0.0, 0
        if t2 >= end:
            done = True
            break
total = wait + step
print("RESULT " + json.dumps({"wait_share": wait / total if total else None, "samples_per_sec": samples / total if total else None,
                              "seconds": total, "workers": a.workers}), flush=True)
