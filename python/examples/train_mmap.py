"""A real PyTorch loop over a memory-mapped dataset, watched by gpuwatch_hook.

The dataset is a numpy.memmap of fixed-size uint8 records (the layout of
an Arrow or .npy dataset on disk). Read in random order, every record is
a page fault the worker waits on; read as shuffled blocks of consecutive
records, the kernel's read-ahead serves them:

    # random order over a cold page cache: io_bound, the mmap mechanism
    python3 train_mmap.py --data /var/tmp/mmap.bin --access random --drop-cache
    # the fix: shuffle blocks of consecutive records
    python3 train_mmap.py --data /var/tmp/mmap.bin --access blocks --drop-cache

and in another terminal:

    gpuwatch attach http://127.0.0.1:6061

The data file is written once (--size bytes of random records) and reused.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

try:
    import gpuwatch_hook
except ImportError:  # run from a checkout: the hook is one folder up
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import gpuwatch_hook


class Records(Dataset):
    """Fixed-size uint8 records in a memory-mapped file."""

    RECORD = 16384  # bytes per record, by default: four pages

    def __init__(self, path: str, record: int) -> None:
        self.path, self.record = path, record
        self.n = os.path.getsize(path) // record
        self.data = None  # mapped lazily: in each worker, after the fork

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        if self.data is None:
            self.data = np.memmap(self.path, dtype=np.uint8, mode="r", shape=(self.n, self.record))
        x = torch.from_numpy(np.array(self.data[i]))  # the copy faults the pages in
        return x[:256].float(), int(x[0]) % 10


class BlockShuffle(Sampler):
    """Blocks of `block` consecutive indices, the blocks in random order:
    shuffled enough for SGD, contiguous enough for read-ahead."""

    def __init__(self, n: int, block: int) -> None:
        self.n, self.block = n, block

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        starts = torch.randperm((self.n + self.block - 1) // self.block) * self.block
        for s in starts.tolist():
            yield from range(s, min(s + self.block, self.n))


def make_data(path: str, size: int, record: int) -> None:
    if os.path.exists(path) and os.path.getsize(path) == size - size % record:
        return
    rng = np.random.default_rng(0)
    tmp = path + ".%d.tmp" % os.getpid()
    with open(tmp, "wb") as f:
        left = size - size % record
        while left > 0:
            n = min(left, 64 << 20)
            f.write(rng.bytes(n))
            left -= n
    os.replace(tmp, path)


def drop_cache(path: str) -> None:
    """Evict the file's pages, so the run starts from the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)  # dirty pages are not dropped, only written
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the memory-mapped data file (written once when missing)")
    ap.add_argument("--size", type=int, default=2 << 30, help="bytes of data to write when the file is missing")
    ap.add_argument("--record", type=int, default=Records.RECORD, help="bytes per record")
    ap.add_argument("--access", choices=("random", "blocks"), default="random")
    ap.add_argument("--block", type=int, default=256, help="records per block with --access blocks")
    ap.add_argument("--drop-cache", action="store_true", help="evict the file's pages before training")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: run until interrupted)")
    ap.add_argument("--port", type=int, default=None, help="the hook's port (default 6061; 0: any free)")
    args = ap.parse_args()

    make_data(args.data, args.size, args.record)
    if args.drop_cache:
        drop_cache(args.data)
    data = Records(args.data, args.record)
    if args.access == "random":
        sampler = torch.utils.data.RandomSampler(data)
    else:
        sampler = BlockShuffle(len(data), args.block)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers, persistent_workers=args.workers > 0)
    loader = gpuwatch_hook.watch(loader, port=args.port)
    model = torch.nn.Linear(256, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    deadline = time.monotonic() + args.seconds if args.seconds > 0 else None
    epoch = 0
    try:
        while deadline is None or time.monotonic() < deadline:
            for x, y in loader:
                opt.zero_grad()
                loss_fn(model(x / 255), y).backward()
                opt.step()
                time.sleep(0.005)  # the accelerator's step, which this CPU loop stands in for
                if deadline is not None and time.monotonic() >= deadline:
                    break
            epoch += 1
            print("epoch %d" % epoch, flush=True)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
