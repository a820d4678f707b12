"""What the hook reads from torch: a DataLoader's knobs, and — through
private attributes, checked here in one place — its iterator's worker
processes and ready batches. torch is never imported by this module: it
looks at the objects it is given, and at torch only once the program has
imported it.

PRIVATE lists every private attribute read (those patched are rows of
_patches.PATCHES); tests/test_package.py (TorchAttributesTest) fails
loudly when a torch version drops one of either. Where one is missing at
run time the figure it gives is left out (never a wrong one), and nothing
raises."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple, Optional, Tuple

#: The private attributes of torch.utils.data.dataloader that the hook reads
#: (those it patches are _patches.PATCHES rows),
#: as (class name, attribute, what it gives).
PRIVATE = (
    ("_MultiProcessingDataLoaderIter", "_workers", "the worker processes (their PIDs)"),
    ("_MultiProcessingDataLoaderIter", "_data_queue", "batches the workers finished, not yet taken"),
    ("_MultiProcessingDataLoaderIter", "_task_info", "batches that arrived out of order and wait to be taken"),
    ("_MultiProcessingDataLoaderIter", "_rcvd_idx", "the index of the batch the loop takes next"),
    ("_BaseDataLoaderIter", "_next_data", "what __next__ calls: the hook times __next__ around it"),
    ("_BaseDataLoaderIter", "__dict__", "the hook keeps an epoch's timing on the iterator (_gpuwatch, _gpuwatch_stats); without it that loader is not timed, said once"),
    ("_MultiProcessingDataLoaderIter", "_data_queue._reader.poll", "whether the workers' pipe holds a batch now (without pin_memory)"),
    ("_utils.pin_memory", "pin_memory", "what the pin-memory thread calls: a carried batch is pinned with it"),
)

#: The private attributes of torch outside its data module that _settings
#: reads (CUDAGraph.replay, which it patches, is a _patches.PATCHES row),
#: as (object's dotted path, attribute, what it gives); TorchAttributesTest
#: checks those its torch version has.
PRIVATE_SETTINGS = (
    ("torch._dynamo.eval_frame", "OptimizedModule", "what torch.compile(module) returns: the model is compiled (torch ≥ 2.0; looked up only once the job imported it)"),
    ("torch.nn.modules.module.Module", "_compiled_call_impl", "set by module.compile() (torch ≥ 2.2): the module is compiled in place"),
)


class Knobs(NamedTuple):
    workers: Optional[int]
    prefetch: Optional[int]
    persistent: Optional[bool]
    pin_memory: Optional[bool]
    batches_per_epoch: Optional[int]
    worker_pids: Tuple[int, ...]
    #: For an IterableDataset: whether it splits its data by worker, as its
    #: code says (splits_by_worker); None for a map-style dataset, a
    #: DataPipe, or anything else.
    splits_by_worker: Optional[bool] = None
    #: The DataLoader's batch_size: None without auto-batching or with a
    #: batch_sampler of its own.
    batch_size: Optional[int] = None


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _bool(v: Any) -> Optional[bool]:
    return v if isinstance(v, bool) else None


def knobs(loader: Any, it: Any) -> Knobs:
    """A DataLoader's knobs (public attributes), and its iterator's worker
    PIDs; None for what an object does not have (any iterable may be
    watched)."""
    workers = _int(getattr(loader, "num_workers", None))
    # torch has prefetch_factor only with workers (before 2.0 it held the
    # default 2 regardless).
    prefetch = _int(getattr(loader, "prefetch_factor", None)) if workers else None
    persistent = _bool(getattr(loader, "persistent_workers", None))
    pin = _bool(getattr(loader, "pin_memory", None))
    per_epoch = None
    if workers is not None:  # a DataLoader: len() is its batches, when the dataset is sized
        try:
            per_epoch = len(loader)
        except Exception:  # an IterableDataset without __len__
            per_epoch = None
        per_epoch = per_epoch if isinstance(per_epoch, int) and per_epoch >= 0 else None
    batch = _int(getattr(loader, "batch_size", None)) if workers is not None else None
    batch = batch if batch is not None and batch > 0 else None
    return Knobs(workers, prefetch, persistent, pin, per_epoch, worker_pids(it), splits_by_worker(loader), batch)


def splits_by_worker(loader: Any) -> Optional[bool]:
    """Whether a DataLoader's IterableDataset splits its data by worker:
    its class's __iter__, or the loader's worker_init_fn (a function, a
    functools.partial of one, or an object's __call__), asks
    torch.utils.data.get_worker_info and reads the workers' count
    (num_workers), in its own code or in a function or generator defined
    inside it. Each worker runs __iter__ whole, so a dataset that does not
    split yields every sample once per worker; one that reads only a
    worker's seed from get_worker_info (to shuffle or seed) does not split
    (a review: it was taken for one that did). True where one place names
    both, False where neither does (a split in a helper they call is not
    seen: the advice's caution then stands where it need not), None for a
    map-style dataset or a DataPipe (the DataLoader shards those with
    their sharding_filter), or when torch's data module is not loaded.
    The names are what is read, not what the code does with them."""
    data = sys.modules.get("torch.utils.data")
    iterable = getattr(data, "IterableDataset", None)
    ds = getattr(loader, "dataset", None)
    if not isinstance(iterable, type) or not isinstance(ds, iterable):
        return None
    pipe = getattr(data, "IterDataPipe", None)
    if isinstance(pipe, type) and isinstance(ds, pipe):
        return None
    for fn in (getattr(type(ds), "__iter__", None), getattr(loader, "worker_init_fn", None)):
        names: set = set()
        _code_names(_code_of(fn), 3, names)
        if "get_worker_info" in names and "num_workers" in names:
            return True
    return False


def _code_of(fn: Any) -> Any:
    """The code object a callable runs: a function's, a bound method's, a
    functools.partial's function's, or an object's __call__'s; None."""
    for _ in range(4):
        if fn is None:
            return None
        code = getattr(fn, "__code__", None)
        if code is not None:
            return code
        inner = getattr(fn, "__func__", None) or getattr(fn, "func", None)  # a bound method, a partial
        if inner is None and not isinstance(fn, type):
            call = getattr(type(fn), "__call__", None)
            inner = call if getattr(call, "__code__", None) is not None else None
        fn = inner
    return None


def _code_names(code: Any, depth: int, out: set) -> None:
    """The names code reads (co_names), and those of code defined in it,
    depth levels down, added to out."""
    if code is None:
        return
    out.update(getattr(code, "co_names", ()))
    if depth > 0:
        for c in getattr(code, "co_consts", ()):
            if hasattr(c, "co_names"):
                _code_names(c, depth - 1, out)


def worker_pids(it: Any) -> Tuple[int, ...]:
    procs = getattr(it, "_workers", None)
    if not isinstance(procs, list):
        return ()
    return tuple(p.pid for p in procs if _int(getattr(p, "pid", None)) is not None)


def _arrived(v: Any) -> bool:
    return isinstance(v, tuple) and len(v) == 2  # (worker, data): here


def queue_depth(it: Any) -> Optional[int]:
    """Batches a torch DataLoader iterator has ready for the loop, in the
    order it takes them. torch hands batches over in order: a batch that
    arrived early waits in the reorder buffer (_task_info) until those
    before it come, and does not spare the loop its wait. So the next batch
    (_rcvd_idx) still being made while later ones wait in the buffer is 0
    ready (the loop waits on one worker); otherwise the run of arrived
    batches from the next one on, plus the data queue (arrived, in order
    as far as anything says). None when it is no such iterator."""
    q = getattr(it, "_data_queue", None)
    info = getattr(it, "_task_info", None)
    if q is None or not isinstance(info, dict):
        return None
    # Called on the training loop's thread, the only one that changes them.
    queued = _queued(q)
    nxt = getattr(it, "_rcvd_idx", None)
    if not isinstance(nxt, int) or isinstance(nxt, bool):
        return queued + sum(1 for v in info.values() if _arrived(v))  # older torch: no order known
    if nxt in info and not _arrived(info[nxt]) and any(_arrived(v) for v in info.values()):
        return 0
    run = 0
    while run < len(info) and _arrived(info.get(nxt + run)):
        run += 1
    return queued + run


def _queued(q: Any) -> int:
    """Batches in the data queue that the loop can read now. Without
    pin_memory it is the workers' multiprocessing queue, whose qsize()
    counts a batch from the moment a worker puts it — while the worker's
    feeder thread still copies it to shared memory and pickles it — so it
    says batches are ready that the loop must still wait for: there, only
    whether the pipe holds one now counts (0 or 1). With pin_memory it is a
    thread queue of batches received and pinned: qsize() is what it says."""
    reader = getattr(q, "_reader", None)
    poll = getattr(reader, "poll", None)
    if callable(poll):
        return 1 if poll(0) else 0
    return q.qsize()


def in_worker() -> bool:
    """Whether this process is a DataLoader worker (torch sets its worker
    info there); False when torch is not imported."""
    data = sys.modules.get("torch.utils.data")
    get = getattr(data, "get_worker_info", None)
    try:
        return get is not None and get() is not None
    except Exception:
        return False
