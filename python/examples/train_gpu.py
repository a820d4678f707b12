"""A real PyTorch training loop on the GPU (CUDA), unmodified by gpuwatch:
an MLP trained on synthetic samples whose __getitem__ costs --cost seconds
of CPU each. With few workers the GPU waits for input; with enough it is
the busy part.

    gpuwatch run -- python3 train_gpu.py --workers 0 --cost 0.002
    gpuwatch run -- python3 train_gpu.py --workers 8 --cost 0.0005 --hidden 8192

It prints "RESULT {json}" at the end: its own wait share and samples/s
(after --warmup seconds), and its copies to the device (seconds per batch,
host and device clocks). --reuse takes one batch and trains on it again and
again (still copied each step): the loop's rate with its input free, the
truth for gpuwatch run --ceiling. --device cpu runs it anywhere."""

import argparse
import json
import time

import torch
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("--workers", type=int, default=2)
p.add_argument("--cost", type=float, default=0.001, help="CPU seconds per sample")
p.add_argument("--batch", type=int, default=64)
p.add_argument("--hidden", type=int, default=4096, help="the MLP's width: the GPU's work per step")
p.add_argument("--layers", type=int, default=4)
p.add_argument("--pin", action="store_true")
p.add_argument("--persistent", action="store_true")
p.add_argument("--seconds", type=float, default=40)
p.add_argument("--warmup", type=float, default=5)
p.add_argument("--device", default="cuda")
p.add_argument("--features", type=int, default=1024, help="floats per sample: the bytes each batch copies to the device")
p.add_argument("--reuse", action="store_true", help="train on the first batch again and again: input free")
a = p.parse_args()


def work(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFF
    return x


t = time.thread_time()
work(200000)
RATE = 200000 / max(time.thread_time() - t, 1e-6)


class Samples(Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        work(int(a.cost * RATE))
        return torch.randn(a.features), torch.randint(0, 10, ())


dev = torch.device(a.device)
layers = [torch.nn.Linear(a.features, a.hidden), torch.nn.ReLU()]
for _ in range(a.layers - 1):
    layers += [torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(a.hidden, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
kw = dict(batch_size=a.batch, num_workers=a.workers, pin_memory=a.pin)
if a.workers:
    kw["persistent_workers"] = a.persistent
loader = DataLoader(Samples(), **kw)
start = time.perf_counter()
cuda = dev.type == "cuda"
wait = step = copy_host = copy_dev = 0.0
n = copies = 0
it = iter(loader)
kept = None
while True:
    t0 = time.perf_counter()
    if kept is None:
        x, y = next(it)
        if a.reuse:
            kept = (x, y)
    else:
        x, y = kept
    t1 = time.perf_counter()
    if cuda:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
    x, y = x.to(dev, non_blocking=a.pin), y.to(dev, non_blocking=a.pin)
    tc = time.perf_counter()
    if cuda:
        e1.record()
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    loss.item()  # the step ends when the GPU is done
    t2 = time.perf_counter()
    if t0 - start >= a.warmup:
        wait += t1 - t0
        step += t2 - t1
        n += len(x)
        copies += 1
        copy_host += tc - t1
        if cuda:
            copy_dev += e0.elapsed_time(e1) / 1000  # the step's loss.item() synchronised
    if t2 - start >= a.seconds:
        break
res = {"wait_share": wait / (wait + step), "samples_per_sec": n / (wait + step), "device": str(dev), "pin": a.pin}
if copies:
    res["copy_host_ms"] = 1000 * copy_host / copies
    res["batch_bytes"] = x.numel() * x.element_size() + y.numel() * y.element_size()
    if cuda:
        res["copy_device_ms"] = 1000 * copy_dev / copies
        res["copy_bytes_per_sec"] = res["batch_bytes"] / max(copy_dev / copies, 1e-9)
print("RESULT " + json.dumps(res), flush=True)
