# args: num_workers, worker_init sleep (s, every epoch's worker start), validation seconds, epochs, batches/epoch[, first access sleep[, persistent_workers]]
import sys, time, torch
from torch.utils.data import Dataset, DataLoader
NW, INIT, VAL, EP, NB = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
FIRST = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
PERSIST = len(sys.argv) > 7 and sys.argv[7].lower() in ("1", "true")
class DS(Dataset):
    def __len__(self): return NB * 16
    def __getitem__(self, i):
        global FIRST
        if FIRST:
            time.sleep(FIRST); FIRST = 0.0  # lazy open on first access (each worker / the process)
        return torch.randn(64), torch.tensor(i % 10)
def init(_): time.sleep(INIT)
model = torch.nn.Linear(64, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kw = dict(worker_init_fn=init, persistent_workers=PERSIST) if NW else {}
dl = DataLoader(DS(), batch_size=16, num_workers=NW, **kw)
for ep in range(EP):
    for x, y in dl:
        t = time.time()
        while time.time() - t < 0.03: pass  # the step: CPU-bound 30 ms
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    t = time.time()
    while time.time() - t < VAL:  # validation: compute, no next()
        with torch.no_grad(): model(torch.randn(256, 64))
    print("epoch", ep, "done", flush=True)
