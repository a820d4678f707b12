"""The host-to-device copy: the loop's copies of a batch's tensors to the
GPU (tensor.to(device), tensor.cuda()), timed on the batches _payload looks
at (docs/architecture.md §6, the loader protocol).

When CUDA is built into torch, Tensor.to and Tensor.cuda are wrapped once.
The wrapper's every call costs torch.compiler.is_compiling() and a dict's
truth test (and a membership test while a looked-at batch waits to be
copied); only the CPU tensors of the last batch looked at are timed, each
once:

* the bytes, whether the source is pinned (page-locked) and whether the
  call asked for non_blocking;
* host: the wall time the loop's thread spent in the call. A pageable
  copy, or a blocking one, keeps the loop there until the copy is done (a
  pageable copy cannot overlap the step);
* device: the copy's time on the GPU, between two CUDA events recorded on
  the current stream around the call, read once the second has passed
  (later next() calls poll it: nothing waits for the GPU). bytes ÷ that
  time is the copy's rate, set against the PCIe link's by gpuwatch.

Nothing is timed inside torch.compile's tracing (is_compiling() is tested
first, so that the tracer never reads the hook's state and never guards
on it), or before CUDA is set up by the job itself: the hook never
initialises CUDA. Tensors are watched
through weak references: a batch is never kept alive by the hook."""

from __future__ import annotations

import sys
import threading
import time
import weakref
from typing import Any, Dict, List, Optional, Tuple

from . import _env

#: At most this many copies wait for their GPU time; older ones are let go.
MAX_PENDING = 16

_perf = time.perf_counter
_lock = threading.Lock()
# id(tensor) -> (its weak reference, the Stats its batch counts in, the
# batch's mark: [copied yet]), for the CPU tensors of the last batch looked
# at that are not copied yet.
_watched: Dict[int, Tuple[Any, Any, List[bool]]] = {}
# Copies whose GPU time is not read yet: (start, end, bytes, stats).
_pending: List[Tuple[Any, Any, int, Any]] = []
_installed = False
_tried = False
#: The device type a copy goes to (the tests copy to "meta").
_GPU = "cuda"


class Figures:
    """One loader's copies, cumulative (kept in its Stats, under its lock)."""

    __slots__ = ("batches", "copies", "bytes", "pinned_bytes", "non_blocking_bytes", "host_seconds", "device_seconds", "device_bytes", "device")

    def __init__(self) -> None:
        self.batches = 0  # batches looked at with at least one copy
        self.copies = 0
        self.bytes = self.pinned_bytes = self.non_blocking_bytes = 0
        self.host_seconds = 0.0
        self.device_seconds = 0.0  # of the copies whose GPU time was read
        self.device_bytes = 0
        self.device: Optional[int] = None  # the last copy's GPU

    def copy(self) -> "Figures":
        out = Figures()
        for k in Figures.__slots__:
            setattr(out, k, getattr(self, k))
        return out


def install() -> None:
    """Wraps Tensor.to and Tensor.cuda once, each on its own (_patches),
    where torch has CUDA built in. Tried once, at the first batch looked at
    (watch): the DataLoader patch runs inside `import torch`, before
    torch.backends is there. Never raises: a wrapper that cannot be
    installed is warned, naming it."""
    global _installed, _tried
    torch = sys.modules.get("torch")
    if _tried or torch is None:
        return
    _tried = True
    try:
        if not torch.backends.cuda.is_built():
            return
    except Exception:
        return
    to = _env.attempt("Tensor.to", install_to, torch)
    cuda = _env.attempt("Tensor.cuda", install_cuda, torch)
    _installed = to or cuda


def install_to(torch: Any) -> bool:
    """Wraps torch.Tensor.to: a looked-at batch's tensor copied to the GPU
    is timed (_timed); every other call goes straight through."""
    return _wrap(torch, "to")


def install_cuda(torch: Any) -> bool:
    """Wraps torch.Tensor.cuda, as install_to wraps to."""
    return _wrap(torch, "cuda")


def _wrap(torch: Any, attr: str) -> bool:
    compiler = getattr(torch, "compiler", None)
    compiling = getattr(compiler, "is_compiling", None) or (lambda: False)
    orig = getattr(torch.Tensor, attr)

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not compiling() and _watched and id(self) in _watched:
            return _timed(self, orig, args, kwargs, 1)
        return orig(self, *args, **kwargs)

    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = orig.__name__, getattr(orig, "__qualname__", orig.__name__), orig.__doc__
    setattr(torch.Tensor, attr, wrapper)
    return True


def watch(tensors: List[Any], stats: Any) -> None:
    """Watches the CPU tensors of a batch just looked at: their next copy
    to the GPU is timed and counted in stats. The last batch's tensors not
    copied by now are let go."""
    if not _tried:
        install()
    if not _installed:
        return
    w: Dict[int, Tuple[Any, Any, List[bool]]] = {}
    mark = [False]
    for t in tensors:
        try:
            if t.device.type == "cpu" and t.numel() > 0:
                w[id(t)] = (weakref.ref(t), stats, mark)
        except Exception:  # a tensor subclass without these: not watched
            continue
    global _watched
    with _lock:
        _watched = w


def _non_blocking(args: Tuple[Any, ...], kwargs: Dict[str, Any], first: int) -> bool:
    if "non_blocking" in kwargs:
        return bool(kwargs["non_blocking"])
    # to(device, dtype, non_blocking), to(dtype, non_blocking), cuda(device, non_blocking):
    # the first bool among the positional arguments after the first.
    for a in args[first:]:
        if isinstance(a, bool):
            return a
    return False


def _timed(t: Any, orig: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any], first: int) -> Any:
    entry = _watched.get(id(t))
    if entry is None or entry[0]() is not t:  # another tensor at a reused address
        return orig(t, *args, **kwargs)
    stats, mark = entry[1], entry[2]
    torch = sys.modules["torch"]
    start = end = None
    try:
        if torch.cuda.is_initialized():  # never the hook's to set CUDA up
            start = torch.cuda.Event(enable_timing=True)
            start.record()
    except Exception:
        start = None
    t0 = _perf()
    out = orig(t, *args, **kwargs)
    host = _perf() - t0
    try:
        dev = out.device
        if dev.type != _GPU or out is t:
            return out  # no copy to a GPU (a dtype's, or none): still watched
        with _lock:
            if _watched.pop(id(t), None) is None:
                return out  # counted by another thread's copy of it
        n = int(t.numel()) * int(t.element_size())
        pinned = bool(t.is_pinned())
        nb = _non_blocking(args, kwargs, first)
        if start is not None and dev.type == "cuda" and dev.index == torch.cuda.current_device():
            end = torch.cuda.Event(enable_timing=True)
            end.record()
        first_of_batch = not mark[0]
        mark[0] = True
        stats.h2d_copy(n, pinned, nb, host, dev.index, first_of_batch)
        if end is not None:
            with _lock:
                _pending.append((start, end, n, stats))
                del _pending[:-MAX_PENDING]
    except Exception:  # the copy is the loop's; the hook's miss only counts
        stats.error()
    return out


def poll() -> None:
    """Reads the GPU time of the copies whose end has passed. Called on
    the loop's thread at each of its drains (_timing.DRAIN_EVERY); costs
    a list's truth test when none waits."""
    if not _pending:
        return
    with _lock:
        waiting = list(_pending)
    done = []
    for p in waiting:
        start, end, n, stats = p
        try:
            if not end.query():
                continue
            sec = start.elapsed_time(end) / 1000
        except Exception:
            sec = None
        done.append(p)
        if sec is not None and sec >= 0:
            stats.h2d_device(n, sec)
    if done:
        with _lock:
            for p in done:
                if p in _pending:
                    _pending.remove(p)
