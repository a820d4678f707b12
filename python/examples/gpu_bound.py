"""A GPU-bound training loop, unmodified by gpuwatch: the step is the limit
and its input is free (batches made on the device, a DataLoader over
indices so the hook has a loop to time). Its precision is the question:

    python3 gpu_bound.py --model mlp --precision fp32     # tensor cores idle
    python3 gpu_bound.py --model mlp --precision bf16     # autocast bf16
    python3 gpu_bound.py --model mlp --precision tf32     # fp32 on TF32 tensor cores
    python3 gpu_bound.py --model resnet --precision bf16 --channels-last
    python3 gpu_bound.py --model mlp --hidden 256 --batch 64 --sync-every-step  # loss.item() each step
    python3 gpu_bound.py --model mlp --hidden 256 --batch 64 --compile          # CUDA graphs (torch 2)
    python3 gpu_bound.py --model mlp --own-profiler-every 7                     # profiles itself

It writes its own samples/s (the truth gpuwatch's figures are checked
against) to --out every few seconds. Run it under gpuwatch:
gpuwatch run --once --json -- python3 gpu_bound.py --precision fp32
"""

import argparse
import json
import time

import torch
from torch.utils.data import DataLoader

p = argparse.ArgumentParser()
p.add_argument("--model", choices=["mlp", "resnet"], default="mlp")
p.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32")
p.add_argument("--channels-last", action="store_true")
p.add_argument("--batch", type=int, default=0, help="default: 4096 for the MLP, 128 for the ResNet")
p.add_argument("--hidden", type=int, default=4096)
p.add_argument("--layers", type=int, default=8)
p.add_argument("--seconds", type=float, default=60)
p.add_argument("--out", default="")
p.add_argument("--sync-every-step", action="store_true", help="read the loss with .item() every step (a host sync)")
p.add_argument("--compile", action="store_true", help='torch.compile(model, mode="reduce-overhead"): CUDA graphs')
p.add_argument("--own-profiler-every", type=int, default=0, metavar="N",
               help="profile one step of every N with torch.profiler, as a job that profiles itself does (gpuwatch's own recording gives way)")
args = p.parse_args()
if args.compile and not hasattr(torch, "compile"):
    p.error("--compile needs torch 2 (torch.compile); this is torch " + torch.__version__)

dev = "cuda" if torch.cuda.is_available() else "cpu"
if args.precision == "tf32":
    torch.set_float32_matmul_precision("high")
else:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

if args.model == "mlp":
    batch = args.batch or 4096
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(args.hidden, 10)).to(dev)
    x = torch.randn(batch, args.hidden, device=dev)
else:
    import torchvision

    batch = args.batch or 128
    model = torchvision.models.resnet50().to(dev)
    x = torch.randn(batch, 3, 224, 224, device=dev)
if args.channels_last:
    model = model.to(memory_format=torch.channels_last)
    x = x.to(memory_format=torch.channels_last)
y = torch.randint(0, 10, (batch,), device=dev)
if args.compile:
    model = torch.compile(model, mode="reduce-overhead")
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
loss_fn = torch.nn.CrossEntropyLoss()

# The input is free: a loader over indices, one index a step (no collate:
# 4096 ints collated a step cost the bf16 MLP a fifth of its time, which
# gpuwatch rightly read as the loop's own input), the batch already on
# the device.
loader = DataLoader(range(1 << 30), batch_size=None, num_workers=0)
t0 = time.monotonic()
last, done, mark, n_mark = t0, 0, None, 0
for i, _ in enumerate(loader):
    own = None
    if args.own_profiler_every and i % args.own_profiler_every == 0:
        acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if dev == "cuda" else [])
        own = torch.profiler.profile(activities=acts)
        own.start()  # raises if another profiler records on this thread
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
        loss = loss_fn(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if own is not None:
        own.stop()
    if args.sync_every_step:
        seen = loss.item()  # the host waits for the GPU here, every step
    done += batch
    now = time.monotonic()
    if i < 3:  # torch.compile compiles on the first steps: the clock starts after them
        t0 = now
    if mark is None and now - t0 >= 5:  # past the warm-up
        torch.cuda.synchronize() if dev == "cuda" else None
        mark, n_mark = time.monotonic(), done
    if now - last >= 2 and mark is not None:
        torch.cuda.synchronize() if dev == "cuda" else None
        rate = (done - n_mark) / (time.monotonic() - mark)
        last = now
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"samples_per_sec": rate, "model": args.model, "precision": args.precision, "batch": batch}, f)
    if now - t0 >= args.seconds:
        break
