"""A dataset whose batches are cheap to make (32 samples of torch.full, 83 µs
inline on the 2-core VM) and cost more to take from a worker than to make.
W=workers, T=seconds; recorded with `gpuwatch run --once --record`."""
import os, sys, time, torch
from torch.utils.data import Dataset, DataLoader
class DS(Dataset):
    def __len__(self): return 200000
    def __getitem__(self, i):
        return torch.full((64,), float(i)), i % 10
W = int(os.environ.get("W", "2"))
dl = DataLoader(DS(), batch_size=32, num_workers=W, shuffle=True)
model = torch.nn.Linear(64, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
t0 = time.time(); n = 0
for ep in range(100):
    for x, y in dl:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        n += x.shape[0]
        if time.time() - t0 > float(os.environ.get("T", "25")):
            print(f"W={W} {n/(time.time()-t0):.0f} samples/s"); sys.exit(0)
