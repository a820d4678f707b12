import os, time, torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.set_num_threads(1)
class DS(Dataset):
    def __len__(self): return 200000
    def __getitem__(self, i):
        x = torch.randn(3, 32, 32)
        for _ in range(4): x = torch.tanh(x * 1.01)
        return x, i % 10
model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(DS(), batch_size=32, sampler=DistributedSampler(DS()), num_workers=0)
t0 = time.time(); n = 0
for i, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step(); n += len(x)
    if (i + 1) % 100 == 0: print(f"rank {rank} step {i+1} {n/(time.time()-t0):.0f} samples/s", flush=True)
dist.destroy_process_group()
