import sys, time, math, torch
from torch.utils.data import Dataset, DataLoader
NW = int(sys.argv[1]) if len(sys.argv) > 1 else 0
SECS = float(sys.argv[2]) if len(sys.argv) > 2 else 40
class DS(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        s = 0.0
        for k in range(6000):            # CPU-heavy pure-Python feature computation
            s += math.sin(k * i % 97)
        x = torch.full((64,), s / 6000.0)
        return x, i % 10
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
dl = DataLoader(DS(), batch_size=32, shuffle=True, num_workers=NW)
t0 = time.time(); n = 0
for x, y in dl:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    n += x.shape[0]
    if time.time() - t0 > SECS: break
print(f"s0 num_workers={NW}: {n/(time.time()-t0):.1f} samples/s", flush=True)
