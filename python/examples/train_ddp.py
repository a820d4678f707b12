"""A real torch.distributed training job on the CPU (gloo), one process per
rank, each with its own DataLoader watched by gpuwatch_hook: the straggler
case, on any machine.

Launch the ranks directly (Debian's torchrun 1.13 fails on Python 3.11):

    for r in 0 1; do
      RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \\
        python3 train_ddp.py --slow-rank 1 --seconds 60 &
    done

and in another terminal, plain `gpuwatch` (it finds both hooks), or

    gpuwatch attach http://127.0.0.1:6061-6062

--slow-rank R gives rank R a heavy __getitem__ (--getitem-work Python
iterations per sample) with num_workers=0; every other rank's samples are
light. DistributedDataParallel all-reduces the gradients in every step, so
the fast ranks wait for rank R there: their steps are longer, their loader
waits short.
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_cpu import Synthetic, gpuwatch_hook  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slow-rank", type=int, default=-1, help="the rank whose samples are heavy (-1: none)")
    ap.add_argument("--getitem-work", type=int, default=20000, help="Python loop iterations per sample on the slow rank")
    ap.add_argument("--workers", type=int, default=2, help="num_workers on the other ranks (the slow rank has 0)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: until interrupted)")
    ap.add_argument("--port", type=int, default=None, help="the hook's port (default 6061 + LOCAL_RANK; 0: any free)")
    ap.add_argument("--no-hook", action="store_true", help="leave the DataLoader as it is (gpuwatch run times it)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    slow = rank == args.slow_rank
    data = Synthetic(args.samples, args.getitem_work if slow else 0)
    workers = 0 if slow else args.workers
    loader = DataLoader(
        data,
        batch_size=args.batch_size,
        sampler=DistributedSampler(data, seed=0),
        num_workers=workers,
        persistent_workers=workers > 0,
    )
    if not args.no_hook:
        loader = gpuwatch_hook.watch(loader, port=args.port)
    h = args.hidden
    model = DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(Synthetic.FEATURES, h), torch.nn.ReLU(), torch.nn.Linear(h, 10))
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    deadline = time.monotonic() + args.seconds if args.seconds > 0 else None
    epoch = 0
    try:
        while True:
            loader.sampler.set_epoch(epoch)
            for x, y in loader:
                opt.zero_grad()
                loss_fn(model(x), y).backward()  # the all-reduce: every rank waits for the slowest
                opt.step()
                # Every rank must agree to stop, or one would wait forever in
                # the next all-reduce.
                stop = torch.tensor([1 if deadline is not None and time.monotonic() >= deadline else 0])
                dist.all_reduce(stop, op=dist.ReduceOp.MAX)
                if stop.item():
                    return
            epoch += 1
    except KeyboardInterrupt:
        pass
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
