"""gpuwatch run's instrumentation: every torch.utils.data.DataLoader of this
Python process is timed as watch() times one, with no change to the script.

`gpuwatch run -- CMD` puts a sitecustomize on the command's PYTHONPATH that
calls install(). install() imports nothing: it adds a finder to
sys.meta_path that waits for torch.utils.data.dataloader to be imported,
and patches DataLoader.__iter__ and _BaseDataLoaderIter.__next__ right after
that module runs. A process that never imports torch.utils.data is left
as it was. The server starts (on an ephemeral loopback port, announced for
discovery) when a DataLoader is first iterated, never in a DataLoader
worker, so launchers and workers serve nothing."""

from __future__ import annotations

import functools
import importlib.abc
import os
import sys
import threading
from typing import Any, List, Optional, Tuple

from . import _ceiling, _server, _stages, _timing, _torch

TARGET = "torch.utils.data.dataloader"
#: gpuwatch run --ceiling=SECONDS sets it: the replay's seconds (_ceiling).
CEILING_ENV = "GPUWATCH_CEILING_SECONDS"

_patched = False
_lock = threading.Lock()
_state: Optional[Tuple[_timing.Stats, Optional[_server.Server]]] = None
_dataloader_cls: Any = None


def active() -> bool:
    """Whether this process's DataLoaders are timed by run's patch."""
    return _patched


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
                    _timing.warn_once("%s=%r: want seconds in (0, %g]; the ceiling is not measured" % (CEILING_ENV, raw[:32], _ceiling.MAX_SECONDS))
                else:
                    stats.ask_ceiling(seconds)
            _, srv = _server.serve("127.0.0.1", 0, stats, True)
            _state = (stats, srv)
        return _state


def _forget_after_fork() -> None:
    global _state, _lock
    _state = None
    _lock = threading.Lock()


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for TARGET it asks the finders after it, and
    wraps the module's execution so that the patch follows it."""

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

        def exec_module(module: Any) -> None:
            run(module)
            try:
                patch(module)
            except Exception as e:  # never into the program's import
                _server.warn("DataLoaders are not timed: %s" % e)
            finally:
                _remove_finder()

        loader.exec_module = exec_module
        return spec


_finder: List[_Finder] = []


def _remove_finder() -> None:
    for f in _finder:
        try:
            sys.meta_path.remove(f)
        except ValueError:
            pass
    _finder.clear()


def install() -> None:
    """Times every DataLoader of this process from the moment torch's data
    module is imported (at once if it already is)."""
    mod = sys.modules.get(TARGET)
    if mod is not None:
        patch(mod)
        return
    if not _finder:
        f = _Finder()
        _finder.append(f)
        sys.meta_path.insert(0, f)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forget_after_fork)
    marker = os.environ.get("GPUWATCH_RUN_DIR", "")
    if os.path.isabs(marker):
        # Tells gpuwatch run that this process loaded the hook (a process
        # started with python -I or -S does not).
        try:
            fd = os.open(os.path.join(marker, "py-%d" % os.getpid()), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.close(fd)
        except OSError:
            pass


def patch(module: Any) -> None:
    """Patches module's DataLoader.__iter__ (an epoch starts: read the
    knobs, start the server) and _BaseDataLoaderIter.__next__ (time each
    batch). Subclasses of the iterator define _next_data, not __next__, so
    one patch covers them all. _stages.patch times the stages inside the
    workers."""
    global _patched, _dataloader_cls
    if _patched:
        return
    loader_cls = module.DataLoader
    base = module._BaseDataLoaderIter
    orig_iter = loader_cls.__iter__
    orig_next = base.__next__

    @functools.wraps(orig_iter)
    def __iter__(self: Any) -> Any:
        started = _timing.clock()
        it = orig_iter(self)
        if _torch.in_worker():
            return it
        try:
            stats, _ = server()
        except Exception as e:  # no stats, no page: nothing to count in
            _timing.warn_once("DataLoaders are not timed: %s" % e)
            return it
        try:
            stats.epoch(self, it)
        except Exception as e:
            stats.error()
            _timing.warn_once("a DataLoader's knobs are not read: %s" % e)
        _timing.attach(it, "_gpuwatch", _timing.Clock(stats, started))
        return it

    @functools.wraps(orig_next)
    def __next__(self: Any) -> Any:
        c = getattr(self, "_gpuwatch", None)
        if c is None:
            return orig_next(self)
        return c.next(self, orig_next)

    _stages.patch(module)  # the workers' stage times, and the unwrapping of their batches
    loader_cls.__iter__ = __iter__
    base.__next__ = __next__
    _dataloader_cls = loader_cls
    _patched = True
