"""A real PyTorch training loop on the CPU, watched by gpuwatch_hook.

It trains a small MLP on synthetic data through a torch DataLoader, so
gpuwatch can be tried (and tested) on a machine without a GPU:

    # the num_workers=0 trap: a heavy __getitem__ in the training process
    python3 train_cpu.py --workers 0 --getitem-work 20000 --hidden 64
    # healthy: light samples, a heavier step
    python3 train_cpu.py --workers 2 --getitem-work 0 --hidden 2048

and in another terminal:

    gpuwatch attach http://127.0.0.1:6061

--getitem-work is Python loop iterations per sample (about 70 ns each on a
2020s x86 core): the stand-in for decoding and augmenting in Python.

--threads N caps the training process's own compute threads: it calls
torch.set_num_threads(N) and sets OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and
MKL_NUM_THREADS before torch loads (the BLAS reads them once, at load, and
ignores torch.set_num_threads). On a small box those pools otherwise take
the cores the DataLoader workers need.
"""

import argparse
import os
import sys
import time


def _threads_from_argv() -> int:
    """--threads, read before torch is imported: the BLAS libraries size
    their thread pools from the environment when they are loaded."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--threads", type=int, default=0)
    return ap.parse_known_args()[0].threads


_THREADS = _threads_from_argv()
if _THREADS > 0:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(_THREADS)

import torch  # noqa: E402  (after the thread settings above)
from torch.utils.data import DataLoader, Dataset  # noqa: E402

try:
    import gpuwatch_hook
except ImportError:  # run from a checkout: the hook is one folder up
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import gpuwatch_hook


class Synthetic(Dataset):
    """Samples of FEATURES floats with a class label; each __getitem__
    does `work` iterations of Python arithmetic first."""

    FEATURES = 256

    def __init__(self, n: int, work: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, self.FEATURES, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.work = work

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        acc = i
        for k in range(self.work):
            acc = (acc * 1103515245 + k) & 0x7FFFFFFF
        x = self.x[i]
        if self.work:
            x = x + (acc & 1) * 1e-6  # the work's result is used
        return x, self.y[i]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=0, help="DataLoader num_workers")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--getitem-work", type=int, default=20000, help="Python loop iterations per sample")
    ap.add_argument("--hidden", type=int, default=64, help="MLP width: the step's cost grows with its square")
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: run until interrupted)")
    ap.add_argument("--port", type=int, default=None, help="the hook's port (default 6061 + LOCAL_RANK; 0: any free)")
    ap.add_argument(
        "--threads",
        type=int,
        default=0,
        help="the training process's compute threads: torch.set_num_threads and the BLAS/OpenMP pools (0: their defaults)",
    )
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    data = Synthetic(args.samples, args.getitem_work)
    loader = DataLoader(
        data,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
    )
    loader = gpuwatch_hook.watch(loader, port=args.port)
    h = args.hidden
    model = torch.nn.Sequential(
        torch.nn.Linear(Synthetic.FEATURES, h),
        torch.nn.ReLU(),
        torch.nn.Linear(h, h),
        torch.nn.ReLU(),
        torch.nn.Linear(h, 10),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    deadline = time.monotonic() + args.seconds if args.seconds > 0 else None
    epoch = 0
    try:
        while deadline is None or time.monotonic() < deadline:
            for x, y in loader:
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                if deadline is not None and time.monotonic() >= deadline:
                    break
            epoch += 1
            print("epoch %d loss %.3f" % (epoch, loss.item()), flush=True)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
