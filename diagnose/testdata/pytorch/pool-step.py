"""An IterableDataset of text lines (64 numbers each, parsed per sample)
feeding an MLP whose step runs on the CPU: 1.45 ms a batch of 256, its
matmuls on OpenBLAS's pool (one thread beside the loop's on the 2-core
VM, spinning between calls). W=workers, B=batch size, T=seconds (prints
samples/s from 3 s in); recorded with `gpuwatch run --once --record`."""
import os, random, tempfile, time
import torch, torch.nn as nn
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

F = os.path.join(tempfile.gettempdir(), "gpuwatch-pool-step-lines.txt")
if not os.path.exists(F):
    r = random.Random(0)
    with open(F + ".part", "w") as f:
        for _ in range(60000):
            f.write(",".join(f"{r.random():.5f}" for _ in range(64)) + "\n")
    os.replace(F + ".part", F)


class Lines(IterableDataset):
    def __iter__(self):
        wi = get_worker_info()
        k, m = (wi.id, wi.num_workers) if wi else (0, 1)
        with open(F) as f:
            for j, line in enumerate(f):
                if j % m == k:
                    v = torch.tensor([float(x) for x in line.split(",")])
                    yield v[:63], v[63]


model = nn.Sequential(nn.Linear(63, 128), nn.Tanh(), nn.Linear(128, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
W, B = int(os.environ.get("W", 0)), int(os.environ.get("B", 256))
T = float(os.environ.get("T", 1e9))
dl = DataLoader(Lines(), batch_size=B, num_workers=W)
t0 = time.time(); n = 0; started = None
while True:
    for x, y in dl:
        loss = (model(x).squeeze(1) - y).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        now = time.time()
        if started is None and now - t0 > 3:
            started, n = now, 0
        n += len(y)
        if now - t0 > T:
            print(f"samples/s {n / (now - started):.1f}", flush=True)
            raise SystemExit
