"""gpuwatch_hook: let gpuwatch see inside a Python training loop.

    import gpuwatch_hook
    loader = gpuwatch_hook.watch(loader)      # a DataLoader, or any iterable
    for batch in loader:
        ...

or, with no change to the script at all:

    gpuwatch run -- python train.py           # every DataLoader is watched

then, on the same machine, plain `gpuwatch` finds it (the hook announces
itself), or `gpuwatch attach http://127.0.0.1:6061`.

watch() times every batch: how long the training loop blocked in next()
(wait) and how long it worked on the batch before asking for the next one
(step). A daemon thread serves gpuwatch's loader protocol on 127.0.0.1:

* /metrics: Prometheus text with the gpuwatch_loader_* names of gpuwatch's
  embedded loader, gpuwatch_loader_info{pid,kind="python",tid,rank…}, and
  for a torch DataLoader its num_workers, prefetch_factor,
  persistent_workers, pin_memory, batches per epoch, the time to each
  epoch's first batch, the batches ready in its queue and its worker PIDs;
* for a torch DataLoader, where each batch's time goes, stage by stage,
  timed inside its workers (getitem, collate, handover) and in the
  training process (take, pin, step, first_batch), and what a sample of
  its batches hold (dtype, shape, bytes, float64, padding, pinned);
* /debug/pprof/profile?seconds=N: the CPU time of the process's Python
  threads for N seconds, sampled at 100 Hz, as a pprof profile.

Each serving process writes a small announcement (pid, RANK, LOCAL_RANK,
WORLD_SIZE, URL, token) under $XDG_RUNTIME_DIR/gpuwatch/ (or a private
/tmp/gpuwatch-UID/; under gpuwatch run, also in run's private folder), 0600,
and removes it when it closes or exits. Every request must carry the token
(Authorization: Bearer TOKEN): another local user who finds the port reads
nothing (docs/security.md). gpuwatch reads the token from the announcement.

The hook costs the training loop two clock reads and a few counter updates
per batch, and for a torch DataLoader the stage times (_stages: about 10 µs
a batch, most of it in the workers) and a look inside one batch every
0.25 s (_payload); nothing else runs until someone scrapes. It never raises into the
training loop: a port in use is a warning, anything that goes wrong while
timing is counted (gpuwatch_hook_errors_total), and the loop goes on. Only
the standard library is used (Python 3.9 or newer). Importing it changes
nothing in the process: the server, its thread and its fork handler start
with the first watch().

The modules, in layers that import only downward (tests/test_layers.py
LAYERS): _version and _env (the warning, the run folder, the ranks, the
clock); the leaves _torch (what is read from torch, private attributes
checked in one place), _pprof (the profile's encoding), _callee, _payload
(the look at the batches), _h2d (the copies to the GPU), _settings (what
the job already does), _syncs (the host syncs inside the step); _sampler (the stack sampler); _workerprof (the
workers' profiles), _ceiling and _gpuprofile (the GPU's time per step); _profiler (the CPU profile) and _stages
(the stage times inside the workers); _timing (wait, step, the metrics
page); _server (the HTTP server and the announcement); _run (gpuwatch
run's timing of every DataLoader); _patches (the table of every patch);
_auto (what run's sitecustomize calls) and this package.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

from . import _env, _patches, _run, _server, _timing
from ._pprof import encode_profile
from ._profiler import take_profile
from ._server import MAX_CONNECTIONS, MAX_PROFILE_SECONDS, REQUEST_SECONDS, discovery_dir
from ._version import __version__

__all__ = [
    "watch",
    "Watched",
    "take_profile",
    "encode_profile",
    "discovery_dir",
    "DEFAULT_PORT",
    "MAX_CONNECTIONS",
    "MAX_PROFILE_SECONDS",
    "REQUEST_SECONDS",
    "__version__",
]

#: The port watch() serves on when none is given: 6061 plus the process's
#: LOCAL_RANK (torchrun sets it), so each rank on a node has its own.
DEFAULT_PORT = 6061


class Watched:
    """A watched iterable: iterating it iterates the wrapped loader, timed.
    Everything else (len(), .dataset, .sampler.set_epoch, …) is the
    loader's own. close() (or leaving a `with` block) stops serving when no
    other watch shares the server, and removes the announcement."""

    def __init__(self, loader: Any, stats: _timing.Stats, server: Optional[_server.Server], timed: bool = True) -> None:
        self.loader = loader
        self._stats = stats
        self._server = server
        self._timed = timed
        #: The URL gpuwatch attaches to, or None when nothing is served.
        self.url = server.url if server else None
        #: The token every request to url must carry (Authorization: Bearer
        #: TOKEN); gpuwatch reads it from the announcement.
        self.token = server.token if server else None

    def __iter__(self) -> Any:
        if not self._timed:  # gpuwatch run already times every DataLoader
            return iter(self.loader)
        _patch_stages(self.loader)  # before iter(): the workers it starts are timed
        started = _env.clock()
        self._stats.iter_starting(started)
        it = iter(self.loader)
        try:
            timed = self._stats.epoch(self.loader, it, started)
        except Exception:
            self._stats.error()
            timed = True
        if not timed:  # another of the process's loaders is its training one (Stats.timed_loader)
            return it
        return _timing.Timed(it, self._stats, started)

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str) -> Any:
        if name == "loader":  # not yet set: never recurse
            raise AttributeError(name)
        return getattr(self.loader, name)

    def close(self) -> None:
        """Stops serving (when no other watch shares the server); a syncs'
        or settings' window still open ends (a loop that left with a break
        in it takes no next batch)."""
        try:
            self._stats.end_syncs()
            self._stats.close_settings()
            self._stats.end_gpu_profile()
        except Exception:
            pass
        srv, self._server = self._server, None
        if srv is not None and self._timed:
            _server.release(srv)

    def __enter__(self) -> "Watched":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "gpuwatch_hook.Watched(%r, url=%r)" % (self.loader, self.url)


def _patch_stages(loader: Any) -> None:
    """Times the stages inside a torch DataLoader's workers (_stages):
    installs _patches' WATCH rows into torch's data module, once, when
    loader is one of its DataLoaders. Never raises."""
    mod = sys.modules.get(_run.TARGET)
    if mod is None or not isinstance(loader, getattr(mod, "DataLoader", ())):
        return
    _patches.install(_patches.WATCH, mod)


class WatchedIterator(_timing.Timed):
    """A watched iterator (a generator, an iter(loader)): one pass."""

    __slots__ = ("url", "token", "_server")

    def __init__(self, it: Any, stats: _timing.Stats, server: Optional[_server.Server]) -> None:
        super().__init__(it, stats)
        self._server = server
        stats.set_loop_tid()  # watch() is called where the loop runs
        self.url = server.url if server else None
        self.token = server.token if server else None

    def close(self) -> None:
        try:
            self._clock.stats.end_syncs()
            self._clock.stats.close_settings()
            self._clock.stats.end_gpu_profile()
        except Exception:
            pass
        srv, self._server = self._server, None
        _server.release(srv)

    def __enter__(self) -> "WatchedIterator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def watch(loader: Any, port: Optional[int] = None, host: str = "127.0.0.1", quiet: bool = False) -> Any:
    """Wraps loader (a torch DataLoader, or any iterable or iterator) so
    that gpuwatch can watch it, and serves the loader protocol on
    http://host:port. port defaults to 6061 + $LOCAL_RANK; 0 picks a free
    one (see the returned object's .url). Binding another host than
    127.0.0.1 exposes the process's metrics and profiles to the network.

    Under `gpuwatch run`, every DataLoader is already timed: a DataLoader
    is then returned watched by that (its .url is run's server), not twice.

    Never raises for the server: a port in use is a warning, and batches
    are still timed."""
    if _run.active() and _run.times(loader):
        stats, srv = _run.server()
        return Watched(loader, stats, srv, timed=False)
    if port is None:
        try:
            port = DEFAULT_PORT + int(os.environ.get("LOCAL_RANK", "0"))
        except ValueError:
            port = DEFAULT_PORT
    stats, server = _server.serve(host, int(port), None, quiet)
    if hasattr(type(loader), "__next__"):  # an iterator: one pass, timed as it goes
        # (never iter() a DataLoader here: that would start its workers)
        return WatchedIterator(loader, stats, server)
    return Watched(loader, stats, server)
