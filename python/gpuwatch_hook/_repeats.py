"""Whether an IterableDataset's workers yield the same data, measured on
the batches themselves (docs/diagnosis.md, "Workers that yield the same
samples").

Each worker runs an IterableDataset's __iter__ whole: unless the dataset
splits its data by worker (torch.utils.data.get_worker_info()), each
yields every sample, and an epoch trains on each sample num_workers times.
The DataLoader hands the batches out in turn, worker by worker, so an
epoch's batch i is worker i % num_workers's. Where workers 0 and 1's first
batches are the same bytes, their second batches too, and worker 0's
second differs from its first, the workers repeat each other's data:
measured, not read from the code. One pair alike is not enough (videos
that each fade in from black, labels alike in the first batches); a
dataset whose batches are all alike tells nothing and is not judged; one
that shuffles or augments per worker differs, and is not caught.

A batch's digest is its tensors' shapes and the first bytes of each (a
CPU tensor or numpy array; at most MAX_LEAVES of them, LOOK_BYTES in all,
rows sliced before any copy): four digests, for the loader's first epoch
only. torch is never imported here."""

from __future__ import annotations

import hashlib
from typing import Any, List, Optional

#: Bytes of a batch's tensors that its digest reads, in all.
LOOK_BYTES = 1 << 20
#: Tensors of a batch digested at most; deeper than MAX_DEPTH not looked at.
MAX_LEAVES = 8
MAX_DEPTH = 4


def _shape(x: Any) -> Any:
    """x's shape where it has one (a batch type whose attribute lookup
    raises, a dict with __getattr__ or a nested tensor, has none)."""
    try:
        return getattr(x, "shape", None)
    except Exception:
        return None


def lead(batch: Any, depth: int = 0) -> Any:
    """A batch's lead tensor or array as a DataLoader collates it: the
    batch itself, or the first element of a tuple, list or dict; None
    where it has none."""
    if _shape(batch) is not None:
        return batch
    if depth >= MAX_DEPTH:
        return None
    if isinstance(batch, (tuple, list)) and batch:
        return lead(batch[0], depth + 1)
    if isinstance(batch, dict) and batch:
        return lead(next(iter(batch.values())), depth + 1)
    return None


def leaves(batch: Any, out: List[Any], depth: int = 0) -> None:
    """Appends a batch's tensors and arrays, in order, to out (at most
    MAX_LEAVES)."""
    if len(out) >= MAX_LEAVES:
        return
    if _shape(batch) is not None:
        out.append(batch)
        return
    if depth >= MAX_DEPTH:
        return
    if isinstance(batch, (tuple, list)):
        for v in batch[:MAX_LEAVES]:
            leaves(v, out, depth + 1)
    elif isinstance(batch, dict):
        for v in list(batch.values())[:MAX_LEAVES]:
            leaves(v, out, depth + 1)


def _bytes(x: Any, budget: int) -> Any:
    """The first budget bytes of x (a CPU tensor or numpy array) as a
    contiguous numpy array: its first rows sliced before reshaping, so a
    strided tensor is not copied whole. Raises where it cannot."""
    dev = getattr(x, "device", None)
    if dev is not None and getattr(dev, "type", "cpu") != "cpu":
        raise ValueError("not on the CPU")  # reading it would wait for the GPU
    size = int(x.itemsize) if hasattr(x, "itemsize") and not callable(x.itemsize) else int(x.element_size())
    shape = tuple(int(d) for d in x.shape)
    if shape and shape[0] > 0:
        row = size
        for d in shape[1:]:
            row *= d
        x = x[: max(1, -(-budget // max(row, 1)))]
    part = x.reshape(-1)[: max(1, budget // max(size, 1))]
    if hasattr(part, "numpy"):  # a torch tensor; bfloat16 has no numpy twin
        try:
            part = part.numpy()
        except TypeError:
            part = part.float().numpy()
    if part.dtype.hasobject:
        raise ValueError("objects")  # its bytes are pointers, not the data
    return part


def digest(batch: Any) -> Optional[bytes]:
    """The digest of a batch's tensors (their shapes, and LOOK_BYTES of
    their first bytes shared among them), or None where one is not on the
    CPU or cannot be read, or there is none."""
    xs: List[Any] = []
    leaves(batch, xs)
    if not xs:
        return None
    h = hashlib.blake2b(digest_size=16)
    try:
        for x in xs:
            part = _bytes(x, LOOK_BYTES // len(xs))
            h.update(repr(tuple(int(d) for d in x.shape)).encode())
            h.update(memoryview(part).cast("B") if part.flags["C_CONTIGUOUS"] else part.tobytes())
    except Exception:  # an odd tensor type: not judged
        return None
    return h.digest()


class Watch:
    """The first batches of an epoch (0, 1, num_workers, num_workers + 1:
    workers 0 and 1's first two), watched for workers that repeat each
    other's data. result is None until done, then True (they repeat),
    False (they differ) or None (not judged)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.seen = 0
        self.digests: List[bytes] = []
        self.done = False
        self.result: Optional[bool] = None

    def add(self, batch: Any) -> None:
        if self.done:
            return
        i = self.seen
        self.seen += 1
        if i not in (0, 1, self.workers, self.workers + 1):
            return
        d = digest(batch)
        if d is None:
            self.done = True
            return
        self.digests.append(d)
        ds = self.digests
        if len(ds) == 2 and ds[0] != ds[1] or len(ds) == 4 and ds[2] != ds[3]:
            self.done, self.result = True, False
        elif len(ds) == 4:
            # Workers 0 and 1 alike in their first two batches, and worker
            # 0's second not its first: they repeat. All alike: a
            # constant, not judged.
            self.done = True
            self.result = True if ds[2] != ds[0] else None
