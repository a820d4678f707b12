"""Whether an IterableDataset's workers yield the same data, measured on
the batches themselves (docs/diagnosis.md, "Workers that yield the same
samples").

Each worker runs an IterableDataset's __iter__ whole: unless the dataset
splits its data by worker (torch.utils.data.get_worker_info()), each
yields every sample, and an epoch trains on each sample num_workers times.
The DataLoader hands the batches out in turn, worker by worker, so an
epoch's first num_workers batches are each worker's first. Where the
first two are the same bytes and worker 0's second batch (batch
num_workers) differs from its first, the workers repeat each other's
data: measured, not read from the code. A dataset whose batches are all
alike (a constant) tells nothing and is not judged; one that shuffles or
augments per worker differs, and is not caught.

A batch's digest is its lead tensor's shape and first LOOK_BYTES bytes
(a CPU tensor or numpy array): three digests an epoch, for the loader's
first epoch only, a few ms at most. torch is never imported here."""

from __future__ import annotations

import hashlib
from typing import Any, List, Optional

#: Bytes of a batch's lead tensor that its digest reads.
LOOK_BYTES = 1 << 20


def lead(batch: Any, depth: int = 0) -> Any:
    """A batch's lead tensor or array as a DataLoader collates it: the
    batch itself, or the first element of a tuple, list or dict; None
    where it has none."""
    if getattr(batch, "shape", None) is not None:
        return batch
    if depth >= 4:
        return None
    if isinstance(batch, (tuple, list)) and batch:
        return lead(batch[0], depth + 1)
    if isinstance(batch, dict) and batch:
        return lead(next(iter(batch.values())), depth + 1)
    return None


def digest(batch: Any) -> Optional[bytes]:
    """The digest of a batch's lead tensor (its shape and first LOOK_BYTES
    bytes), or None where it has none on the CPU or cannot be read."""
    x = lead(batch)
    if x is None:
        return None
    try:
        dev = getattr(x, "device", None)
        if dev is not None and getattr(dev, "type", "cpu") != "cpu":
            return None  # reading it would wait for the GPU
        h = hashlib.blake2b(repr(tuple(x.shape)).encode(), digest_size=16)
        flat = x.reshape(-1)
        n = max(1, LOOK_BYTES // max(1, int(getattr(flat, "itemsize", 0) or flat.element_size())))
        part = flat[:n]
        if hasattr(part, "numpy"):  # a torch tensor; bfloat16 has no numpy twin
            try:
                part = part.numpy()
            except TypeError:
                part = part.float().numpy()
        if part.dtype.hasobject:
            return None  # its bytes are pointers, not the data
        h.update(memoryview(part).cast("B") if part.flags["C_CONTIGUOUS"] else part.tobytes())
        return h.digest()
    except Exception:  # an odd tensor type: not judged
        return None


class Watch:
    """The first num_workers + 1 batches of an epoch, watched for workers
    that repeat each other's data. add() returns None until it can tell,
    then True (they repeat) or False (they differ); it can also give up
    (done, result None)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.seen = 0
        self.digests: List[Optional[bytes]] = []
        self.done = False
        self.result: Optional[bool] = None

    def add(self, batch: Any) -> None:
        if self.done:
            return
        i = self.seen
        self.seen += 1
        if i not in (0, 1, self.workers):
            return
        d = digest(batch)
        if d is None:
            self.done = True
            return
        self.digests.append(d)
        if len(self.digests) == 2 and self.digests[0] != self.digests[1]:
            self.done, self.result = True, False
        elif len(self.digests) == 3:
            # Workers 0 and 1's first batches alike, and worker 0's second
            # not: they repeat. All three alike: a constant, not judged.
            self.done = True
            self.result = True if self.digests[2] != self.digests[0] else None
