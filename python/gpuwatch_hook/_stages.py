"""Where each batch's time goes: the stages of a torch DataLoader's
pipeline, timed where they run, with no change to the script.

In each DataLoader worker (docs/architecture.md §6, the loader protocol):

* getitem: the dataset's __getitem__ summed over the batch's samples (or
  an IterableDataset's next items, or __getitems__) — the fetch less the
  collate;
* collate: collate_fn;
* handover: pickling the batch for the trip to the training process, as
  CPU time of the thread that pickles it (the worker queue's feeder thread,
  beside the next batch's getitem: its wall time would count its waits for
  the GIL, which the main thread's getitem already shows).

getitem and collate are wall time on the worker's main thread: the
dataset's reads and waits are in them, as are its waits for the GIL and
for a CPU.

In the training process:

* take: unpickling the batch that came from a worker (receiving the
  shared-memory handles, rebuilding the tensors), as CPU time of the
  thread that unpickles it: the loop's own per-batch cost, which no more
  workers remove. Its wall time is longer while the workers are busy:
  each tensor's handle is fetched from the worker's resource-sharer
  thread, which waits for that worker's GIL — that is waiting on the
  workers, and the loop's wait shows it;
* pin: the pin-memory thread's copy into page-locked memory;
* step and first_batch are timed by _timing (the loop).

The channel: a worker's figures ride on the batch itself. The fetcher
(torch's _DatasetKind.create_fetcher, patched) returns a Carried holding
the batch and its figures; Carried pickles as (a clock read, the batch,
its figures), so pickle reaches the figures' reducer only once the batch
is pickled — that moment ends the hand-over — and the unpickler reaches
the clock read before the batch and the rebuild after it — that span is
the take. The pin-memory thread calls Carried.pin_memory (torch's
pin_memory() calls an object's own), which pins the batch inside and times
it. _MultiProcessingDataLoaderIter._process_data (patched), which every
batch passes before the loop gets it, unwraps it. The cost of a carried
batch: a few small objects, two CPU-clock reads on each side, about 100
bytes more in the pickle and one more global for the unpickler to look up
— about 8 µs (bench_hook.py measures it, and on a real loop). A worker
carries figures on one batch every CARRY_EVERY (20 ms) at most, so the
channel costs at most ~0.4 ms a second per worker however small the
batches; every other batch costs the fetch's two clock reads and the
unwrapping's type check. getitem and collate still count every batch (a
carried batch brings the sums since the last); handover, take and pin are
the means over the carried ones. A worker's batches after its last
carried one (at most 20 ms of them) are not counted when it exits: the
figures are means, which a tail left out does not bias.

With num_workers=0, getitem and collate run in the training process: the
fetcher records them into a pending total that the loop's timing takes
after each batch (nothing is wrapped there)."""

from __future__ import annotations

import threading
import time
from typing import Any, List, Optional, Tuple

from . import _cost, _env, _torch, _workerprof

#: Seconds between a worker's carried batches: the batches between carry
#: no figures (their getitem and collate are added to the next carried
#: one; handover, take and pin are timed on the carried ones), so the
#: channel's cost is paid at most 1/CARRY_EVERY times a second per worker.
CARRY_EVERY = 0.02

#: The stages, in the order a batch passes them.
STAGES = ("getitem", "collate", "handover", "take", "pin", "step", "first_batch")

_perf = time.perf_counter
_cpu = getattr(time, "thread_time", time.perf_counter)  # the calling thread's CPU time


class Carried:
    """A batch on its way from a worker, with what it cost so far.
    Never seen by the training loop: _process_data unwraps it."""

    __slots__ = ("data", "getitem", "collate", "batches", "handover", "take", "pin", "_t")

    def __init__(self, data: Any, getitem: Optional[float], collate: Optional[float], batches: int = 1) -> None:
        self.data = data
        # getitem and collate: the sums over this worker's batches since its
        # last carried one (batches of them, this one included).
        self.getitem, self.collate, self.batches = getitem, collate, batches
        self.handover: Optional[float] = None
        self.take: Optional[float] = None
        self.pin: Optional[float] = None
        self._t = 0.0

    def __reduce__(self) -> Any:
        # Called by the pickler right before it pickles these arguments in
        # order: _MARK (a clock read when unpickled), the batch, then
        # _Tail, whose reducer runs once the batch is pickled. All three
        # rebuild through the one function _carry: pickle writes (and the
        # unpickler looks up) one global, the others are memo references.
        self._t = _cpu()
        return (_carry, (_REBUILD, _MARK, self.data, _Tail(self)))

    def pin_memory(self, *args: Any) -> "Carried":
        """What torch's pin_memory() calls on an object it does not know:
        pins the batch inside (torch's own function, with the device it
        was given where it passes one) and times it."""
        from torch.utils.data._utils import pin_memory as pm

        t = _perf()
        self.data = pm.pin_memory(self.data, *args)
        self.pin = _perf() - t
        return self


# What _carry rebuilds: a clock read, the figures, a Carried.
_NOW, _FIGURES, _REBUILD = 0, 1, 2


class _Mark:
    __slots__ = ()

    def __reduce__(self) -> Any:
        return (_carry, (_NOW,))


_MARK = _Mark()


class _Tail:
    __slots__ = ("c",)

    def __init__(self, c: Carried) -> None:
        self.c = c

    def __reduce__(self) -> Any:
        c = self.c
        return (_carry, (_FIGURES, c.getitem, c.collate, max(0.0, _cpu() - c._t), c.batches))


def _seconds(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, float) and 0 <= v < 1e6 else None


def _carry(what: int, *args: Any) -> Any:
    """The unpickler's side: a clock read (this thread's CPU time, before
    the batch is unpickled), the worker's figures, or the Carried rebuilt
    — the CPU time since the clock read is the take."""
    if what == _NOW:
        return _cpu()
    if what == _FIGURES:
        return args
    now = _cpu()
    t0, data, figs = args
    c = Carried(data, None, None)
    if isinstance(figs, tuple) and len(figs) == 4:
        c.getitem, c.collate, c.handover = _seconds(figs[0]), _seconds(figs[1]), _seconds(figs[2])
        n = figs[3]
        c.batches = n if type(n) is int and 0 < n < 1 << 30 else 1
    c.take = now - t0 if isinstance(t0, float) and now >= t0 else None
    return c


class Inline:
    """getitem and collate timed in the training process (num_workers=0),
    waiting for the loop's timing to take them. One loop thread writes and
    takes; the lock only guards against a second loop."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.getitem = self.collate = 0.0
        self.batches = 0

    def add(self, getitem: float, collate: float) -> None:
        with self.lock:
            self.getitem += getitem
            self.collate += collate
            self.batches += 1

    def take(self) -> Optional[Tuple[float, float, int]]:
        if not self.batches:  # read without the lock: the common case costs nothing
            return None
        with self.lock:
            out = (self.getitem, self.collate, self.batches)
            self.getitem = self.collate = 0.0
            self.batches = 0
        return out


inline = Inline()


def wrap_fetcher(fetcher: Any, in_worker: bool) -> Any:
    """Times a torch dataset fetcher's fetch and its collate_fn (both are
    attributes torch calls through the instance). In a worker fetch
    returns a Carried; in the training process the batch, with the figures
    added to inline."""
    fetch = fetcher.fetch
    collate = fetcher.collate_fn
    last: List[float] = [0.0]
    # A worker's getitem and collate since its last carried batch, their
    # batches, and when it carried last.
    acc: List[Any] = [0.0, 0.0, 0, -CARRY_EVERY]

    def timed_collate(data: Any) -> Any:
        t = _perf()
        try:
            return collate(data)
        finally:
            last[0] = _perf() - t

    def timed_fetch(index: Any) -> Any:
        last[0] = 0.0
        t = _perf()
        batch = fetch(index)  # the dataset's exceptions (StopIteration too) are torch's
        total = _perf() - t
        c = min(last[0], total)
        if not in_worker:
            inline.add(total - c, c)
            return batch
        acc[0] += total - c
        acc[1] += c
        acc[2] += 1
        now = t + total
        if now - acc[3] < CARRY_EVERY:
            return batch
        carried = Carried(batch, acc[0], acc[1], acc[2])
        acc[:] = [0.0, 0.0, 0, now]
        _workerprof.poll()  # a profile asked for? one stat while none is
        return carried

    fetcher.collate_fn = timed_collate
    fetcher.fetch = timed_fetch
    return fetcher


#: Set once patch() installed both; bench_hook sets it to keep watch()
#: from patching. Each installer also sees its own patch by its mark.
_patched = False
_patch_lock = threading.Lock()
_MARK_ATTR = "_gpuwatch_patch"


def _marked(f: Any) -> bool:
    return getattr(f, _MARK_ATTR, False) is True


def patch_process_data(module: Any) -> bool:
    """Patches _MultiProcessingDataLoaderIter._process_data of
    torch.utils.data.dataloader (module), which every batch from a worker
    passes before the loop gets it: a Carried batch is unwrapped there and
    its figures go to the iterator's stats (a loader nobody watches still
    has its batches unwrapped: its figures are dropped). Idempotent;
    raises where torch's shape is not the one read (_patches)."""
    with _patch_lock:
        it_cls = module._MultiProcessingDataLoaderIter
        orig_process = it_cls._process_data
        if _patched or _marked(orig_process):
            return True

        def _process_data(self: Any, data: Any, *rest: Any) -> Any:  # torch ≥ 2.6 passes the worker too
            if type(data) is Carried:
                c, data = data, data.data
                stats = getattr(self, "_gpuwatch_stats", None)
                if stats is not None:
                    try:
                        _cost.cost.timed("stages", stats.record_carried, c)
                    except Exception:
                        stats.error()
            return orig_process(self, data, *rest)

        _process_data.__wrapped__ = orig_process  # type: ignore[attr-defined]
        setattr(_process_data, _MARK_ATTR, True)
        it_cls._process_data = _process_data
        return True


def patch_fetcher(module: Any) -> bool:
    """Patches _DatasetKind.create_fetcher of torch.utils.data.dataloader
    (module) so that every DataLoader's fetchers are timed (wrap_fetcher).
    Only after patch_process_data (_patches says so): a worker's Carried
    batch must be unwrapped before the loop sees it. A worker forked after
    this inherits it; a spawned one gets it from gpuwatch run's
    sitecustomize. Idempotent; raises where torch's shape is not the one
    read (_patches)."""
    with _patch_lock:
        kind = module._DatasetKind
        orig_create = kind.__dict__["create_fetcher"].__func__
        if _patched or _marked(orig_create):
            return True

        def create_fetcher(*args: Any, **kwargs: Any) -> Any:
            fetcher = orig_create(*args, **kwargs)
            try:
                return wrap_fetcher(fetcher, _torch.in_worker())
            except Exception as e:  # a fetcher of another shape: untimed, and said once
                _env.warn_once("a DataLoader's stages are not timed: its fetcher (%s) has no fetch and collate_fn to time: %s" % (type(fetcher).__name__, e))
                return fetcher

        create_fetcher.__wrapped__ = orig_create  # type: ignore[attr-defined]
        setattr(create_fetcher, _MARK_ATTR, True)
        kind.create_fetcher = staticmethod(create_fetcher)
        return True


def patch(module: Any) -> None:
    """Both stage patches of torch.utils.data.dataloader (module), the
    unwrapping first: what _patches installs for the stages (watch() of a
    DataLoader, gpuwatch run), for the tests and bench_hook. Raises where
    one cannot be installed."""
    global _patched
    if _patched:
        return
    patch_process_data(module)
    patch_fetcher(module)
    _patched = True
