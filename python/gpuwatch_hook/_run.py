"""gpuwatch run's timing of every DataLoader of the process, with no change
to the script: run's stats and server (started on an ephemeral loopback
port, announced for discovery, when a DataLoader is first iterated — never
in a DataLoader worker, so launchers and workers serve nothing), the
wrappers of DataLoader.__iter__ (an epoch starts: read the knobs, start
the server) and _BaseDataLoaderIter.__next__ (time each batch), and the
finder that waits for torch.utils.data.dataloader to be imported.

Nothing here is installed by itself: each installer is a row of
_patches.PATCHES, and _auto (what run's sitecustomize calls) installs
them through the table."""

from __future__ import annotations

import functools
import importlib.abc
import os
import sys
import threading
from typing import Any, Callable, List, Optional, Tuple

from . import _ceiling, _env, _gpuprofile, _server, _timing, _torch

TARGET = "torch.utils.data.dataloader"
#: gpuwatch run --ceiling=SECONDS sets it: the replay's seconds (_ceiling).
CEILING_ENV = "GPUWATCH_CEILING_SECONDS"
#: gpuwatch run --gpu-profile[=STEPS] sets it: the steps recorded
#: (_gpuprofile), once, from the loop's _gpuprofile.WARM_AT-th batch.
GPU_PROFILE_ENV = "GPUWATCH_GPU_PROFILE"

_lock = threading.Lock()
_state: Optional[Tuple[_timing.Stats, Optional[_server.Server]]] = None
_dataloader_cls: Any = None  # DataLoader, once its __iter__ is patched
_next_patched = False
_fork_handler = False


def active() -> bool:
    """Whether this process's DataLoaders are timed by run's patches (both
    DataLoader.__iter__ and _BaseDataLoaderIter.__next__)."""
    return _dataloader_cls is not None and _next_patched


def times(loader: Any) -> bool:
    """Whether run's patch times loader (a DataLoader)."""
    return _dataloader_cls is not None and isinstance(loader, _dataloader_cls)


def server() -> Tuple[_timing.Stats, Optional[_server.Server]]:
    """This process's stats and server, started on first use."""
    global _state
    with _lock:
        if _state is None:
            stats = _timing.Stats()
            raw = os.environ.get(CEILING_ENV, "")
            if raw:  # gpuwatch run --ceiling: measured once the loop is warm
                seconds = _ceiling.parse_seconds(raw)
                if seconds is None:
                    _env.warn_once("%s=%r: want seconds in (0, %g]; the ceiling is not measured" % (CEILING_ENV, raw[:32], _ceiling.MAX_SECONDS))
                else:
                    stats.ask_ceiling(seconds)
            raw = os.environ.get(GPU_PROFILE_ENV)
            if raw is not None:  # gpuwatch run --gpu-profile: recorded once the loop is warm
                steps = _gpuprofile.parse_steps(raw)
                if steps is None:
                    _env.warn_once("%s=%r: want steps in [1, %d]; the GPU's time is not recorded" % (GPU_PROFILE_ENV, raw[:32], _gpuprofile.MAX_STEPS))
                else:
                    stats.ask_gpu_profile(steps, _gpuprofile.WARM_AT)
            _, srv = _server.serve("127.0.0.1", 0, stats, True)
            _state = (stats, srv)
        return _state


def patch_iter(module: Any) -> bool:
    """Wraps module's (torch.utils.data.dataloader's) DataLoader.__iter__:
    at an epoch's start, outside a worker, run's server is started, the
    loader's knobs read, and a _timing.Clock kept on the iterator for
    __next__. Once per process."""
    global _dataloader_cls
    if _dataloader_cls is not None:
        return True
    loader_cls = module.DataLoader
    orig_iter = loader_cls.__iter__

    @functools.wraps(orig_iter)
    def __iter__(self: Any) -> Any:
        started = _env.clock()
        st = _state  # this process's, once started: its gap's clock stops while iter() runs (Stats.iter_starting)
        if st is not None:
            st[0].iter_starting(started)
        it = orig_iter(self)
        if _torch.in_worker():
            return it
        try:
            stats, _ = server()
        except Exception as e:  # no stats, no page: nothing to count in
            _env.warn_once("DataLoaders are not timed: %s" % e)
            return it
        try:
            timed = stats.epoch(self, it, started)
        except Exception as e:
            stats.error()
            _env.warn_once("a DataLoader's knobs are not read: %s" % e)
            timed = True
        if timed:  # the training loader: a validation loader beside it is not timed (Stats.timed_loader)
            _timing.attach(it, "_gpuwatch", _timing.Clock(stats, started))
        return it

    loader_cls.__iter__ = __iter__
    _dataloader_cls = loader_cls
    return True


def patch_next(module: Any) -> bool:
    """Wraps module's _BaseDataLoaderIter.__next__: a batch of an iterator
    that __iter__ gave a Clock is timed by it. Subclasses of the iterator
    define _next_data, not __next__, so one patch covers them all. Once
    per process."""
    global _next_patched
    if _next_patched:
        return True
    base = module._BaseDataLoaderIter
    orig_next = base.__next__

    @functools.wraps(orig_next)
    def __next__(self: Any) -> Any:
        c = getattr(self, "_gpuwatch", None)
        if c is None:
            return orig_next(self)
        return c.next(self, orig_next)

    base.__next__ = __next__
    _next_patched = True
    return True


def _forget_after_fork() -> None:
    global _state, _lock
    _state = None
    _lock = threading.Lock()


def install_fork_handler(_: Any = None) -> bool:
    """A forked child (a worker) forgets run's stats and server. Once per
    process."""
    global _fork_handler
    if _fork_handler or not hasattr(os, "register_at_fork"):
        return _fork_handler
    os.register_at_fork(after_in_child=_forget_after_fork)
    _fork_handler = True
    return True


#: The hook's own folder: its frames in a traceback are its wrappers'.
HOOK_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _ours(tb: Any) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(HOOK_DIR)


def strip_hook_frames(exc: Optional[BaseException], depth: int = 0) -> None:
    """Takes the hook's pass-through frames (the wrapped __next__ between
    the loop and torch) out of exc's traceback, and its causes' and
    contexts': they pointed the user at a run folder removed when the run
    ended (a review). An exception raised in the hook itself keeps them
    all: that is the hook's fault, to be read whole."""
    if exc is None or depth > 8:
        return
    tb = exc.__traceback__
    kept = []
    last = None
    while tb is not None:
        last = tb
        if not _ours(tb):
            kept.append(tb)
        tb = tb.tb_next
    if last is not None and not _ours(last) and len(kept) > 0:
        for a, b in zip(kept, kept[1:]):
            a.tb_next = b
        kept[-1].tb_next = None
        exc.__traceback__ = kept[0]
    strip_hook_frames(exc.__cause__, depth + 1)
    strip_hook_frames(exc.__context__, depth + 1)


def install_excepthook(_: Any = None) -> bool:
    """An uncaught exception's traceback is printed without the hook's
    frames (strip_hook_frames), then by the hook that was there."""
    before = sys.excepthook
    if getattr(before, "_gpuwatch", False):
        return True

    def excepthook(tp: Any, value: Any, tb: Any) -> None:
        try:
            # Only the exception's own traceback, as Python hands it over:
            # one given apart (or none) is printed as given.
            if value is not None and tb is not None and tb is value.__traceback__:
                strip_hook_frames(value)
                tb = value.__traceback__
        except Exception:  # never in the way of the job's own error
            pass
        before(tp, value, tb)

    excepthook._gpuwatch = True  # type: ignore[attr-defined]
    sys.excepthook = excepthook
    return True


class Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for TARGET it asks the finders after it, and
    wraps the module's execution so that then(module) follows it (the
    table's patches of it: _patches.patch_run)."""

    def __init__(self, then: Callable[[Any], Any]) -> None:
        self.then = then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != TARGET:
            return None
        spec = None
        for f in list(sys.meta_path):
            if f is self:
                continue
            find = getattr(f, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module
        then = self.then

        def exec_module(module: Any) -> None:
            run(module)
            try:
                then(module)
            except Exception as e:  # never into the program's import
                _env.warn("DataLoaders are not timed: %s" % e)
            finally:
                remove_finder()

        loader.exec_module = exec_module
        return spec


_finder: List[Finder] = []


def install_finder(then: Callable[[Any], Any]) -> bool:
    """Puts the finder first on sys.meta_path: then(module) runs right
    after torch.utils.data.dataloader has. Once."""
    if not _finder:
        f = Finder(then)
        _finder.append(f)
        sys.meta_path.insert(0, f)
    return True


def remove_finder() -> None:
    """Takes the finder off sys.meta_path (once its module has run)."""
    for f in _finder:
        try:
            sys.meta_path.remove(f)
        except ValueError:
            pass
    _finder.clear()
