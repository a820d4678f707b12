"""gpuwatch_hook: let gpuwatch see inside a Python training loop.

    import gpuwatch_hook
    loader = gpuwatch_hook.watch(loader)      # a DataLoader, or any iterable
    for batch in loader:
        ...

then, on the same machine, plain `gpuwatch` finds it (the hook announces
itself, see below), or:

    gpuwatch attach http://127.0.0.1:6061          # one rank
    gpuwatch attach http://127.0.0.1:6061-6068     # every rank of a node

watch() times every batch: how long the training loop blocked in next()
(wait) and how long it worked on the batch before asking for the next one
(step). A daemon thread serves gpuwatch's loader protocol on 127.0.0.1:

* /metrics: Prometheus text with the same gpuwatch_loader_* names as
  gpuwatch's embedded loader, gpuwatch_loader_info{pid,kind="python"}, and
  for a torch DataLoader its num_workers, prefetch_factor, the batches ready
  in its queue and its worker PIDs;
* /debug/pprof/profile?seconds=N: the CPU time of the process's Python
  threads for N seconds, sampled at 100 Hz, as a pprof profile (gzipped
  protobuf) that gpuwatch and `go tool pprof` read.

Each serving process writes a small announcement (pid, RANK, LOCAL_RANK,
WORLD_SIZE, URL) under $XDG_RUNTIME_DIR/gpuwatch/ (or a private
/tmp/gpuwatch-UID/ without one) and removes it at exit, so gpuwatch attaches
to every rank on the machine with no URL typed. The ranks are also labels of
gpuwatch_loader_info.

The hook costs the training loop two clock reads and a few counter updates
per batch; nothing else runs until someone scrapes. It never raises into the
training loop: a port in use is a warning, anything that goes wrong while
timing is counted (gpuwatch_hook_errors_total), and the loop goes on. Only the standard library is used (Python 3.9
or newer); this one file is the whole hook, so copying it next to a training
script works as well as `pip install ./python`.
"""

from __future__ import annotations

import atexit
import bisect
import errno
import gzip
import http.server
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.parse
import warnings

__all__ = ["watch", "Watched", "take_profile", "encode_profile", "DEFAULT_PORT"]
__version__ = "0.1.0"

#: The port watch() serves on when none is given: 6061 plus the process's
#: LOCAL_RANK (torchrun sets it), so each rank on a node has its own.
DEFAULT_PORT = 6061

#: Histogram bounds in seconds: the embedded loader's (loader/stats.go).
BUCKETS = (0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

# The clock for wait and step; tests replace it.
_clock = time.perf_counter


def _warn(msg: str) -> None:
    warnings.warn("gpuwatch_hook: " + msg, RuntimeWarning, stacklevel=3)


class _Histogram:
    __slots__ = ("counts", "count", "sum")

    def __init__(self) -> None:
        self.counts = [0] * len(BUCKETS)  # per bucket, not cumulative
        self.count = 0
        self.sum = 0.0

    def observe(self, v: float) -> None:
        i = bisect.bisect_left(BUCKETS, v)  # first bound ≥ v: Prometheus's le
        if i < len(BUCKETS):
            self.counts[i] += 1
        self.count += 1
        self.sum += v


def _batch_len(batch, depth: int = 0):
    """The number of samples in a batch as a DataLoader collates it — a
    tensor or array's first dimension, or that of the first element of a
    tuple, list or dict — or None when it cannot tell."""
    shape = getattr(batch, "shape", None)
    if shape is not None:
        try:
            return int(shape[0]) if len(shape) > 0 else None
        except (TypeError, ValueError, IndexError):
            return None
    if depth >= 4:
        return None
    if isinstance(batch, (tuple, list)) and batch:
        return _batch_len(batch[0], depth + 1)
    if isinstance(batch, dict) and batch:
        return _batch_len(next(iter(batch.values())), depth + 1)
    return None


class _Stats:
    """What the hook has measured, shared by the training thread (writes)
    and the server's threads (reads) under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wait = _Histogram()
        self.step = _Histogram()
        self.batches = 0
        self.samples = 0
        self.sized = False  # some batch's size was known
        self.queue_depth = None
        self.workers = None
        self.prefetch = None
        self.worker_pids = ()
        self.loop_tid = None  # the OS thread that iterates: the training loop
        self.errors = 0

    def record(self, wait: float, batch, depth) -> None:
        try:
            n = _batch_len(batch)
        except Exception:  # a batch type with odd attributes: size unknown
            n = None
        with self.lock:
            self.wait.observe(wait)
            self.batches += 1
            if n is not None:
                self.samples += n
                self.sized = True
            self.queue_depth = depth

    def record_step(self, step: float) -> None:
        with self.lock:
            self.step.observe(step)

    def epoch(self, loader, it) -> None:
        """Reads a DataLoader's knobs when an epoch starts (its iterator
        holds the workers)."""
        workers = getattr(loader, "num_workers", None)
        workers = workers if isinstance(workers, int) and not isinstance(workers, bool) else None
        prefetch = getattr(loader, "prefetch_factor", None)
        # torch has prefetch_factor only with workers (before 2.0 it held
        # the default 2 regardless).
        prefetch = prefetch if workers and isinstance(prefetch, int) else None
        pids = ()
        procs = getattr(it, "_workers", None)
        if isinstance(procs, list):
            pids = tuple(p.pid for p in procs if isinstance(getattr(p, "pid", None), int))
        with self.lock:
            self.workers, self.prefetch, self.worker_pids = workers, prefetch, pids
            self.loop_tid = _native_tid()

    def render(self) -> bytes:
        with self.lock:
            wait, step = _copy(self.wait), _copy(self.step)
            batches, samples, sized = self.batches, self.samples, self.sized
            depth, workers, prefetch, pids = self.queue_depth, self.workers, self.prefetch, self.worker_pids
            tid = self.loop_tid
            errors = self.errors
        out = []
        hist = out.append

        def histogram(name: str, help_: str, h: _Histogram) -> None:
            hist("# HELP %s %s\n# TYPE %s histogram\n" % (name, help_, name))
            cum = 0
            for b, c in zip(BUCKETS, h.counts):
                cum += c
                hist('%s_bucket{le="%s"} %d\n' % (name, _fmt(b), cum))
            hist('%s_bucket{le="+Inf"} %d\n%s_sum %s\n%s_count %d\n' % (name, h.count, name, _fmt(h.sum), name, h.count))

        def one(name: str, typ: str, help_: str, v) -> None:
            hist("# HELP %s %s\n# TYPE %s %s\n%s %s\n" % (name, help_, name, typ, name, _fmt(v)))

        histogram("gpuwatch_loader_wait_seconds", "Time the training loop blocked waiting for the next batch.", wait)
        histogram(
            "gpuwatch_loader_step_seconds",
            "Time between receiving a batch and asking for the next (the training step).",
            step,
        )
        one("gpuwatch_loader_batches_total", "counter", "Batches handed to the training loop.", batches)
        if sized:
            one("gpuwatch_loader_samples_total", "counter", "Samples handed to the training loop.", samples)
        if depth is not None:
            one(
                "gpuwatch_loader_queue_depth",
                "gauge",
                "Batches ready and waiting when the training loop last asked.",
                depth,
            )
        if workers is not None:
            one("gpuwatch_loader_workers", "gauge", "Loader workers (num_workers).", workers)
        if prefetch is not None:
            one("gpuwatch_loader_prefetch", "gauge", "Batches prefetched per worker (prefetch_factor).", prefetch)
        if pids:
            hist("# HELP gpuwatch_loader_worker_info The loader's worker processes.\n")
            hist("# TYPE gpuwatch_loader_worker_info gauge\n")
            for i, pid in enumerate(pids):
                hist('gpuwatch_loader_worker_info{worker="%d",pid="%d"} 1\n' % (i, pid))
        one("gpuwatch_hook_errors_total", "counter", "Waits or steps the hook failed to record (the loop went on).", errors)
        hist("# HELP gpuwatch_loader_info The loader's process and kind.\n# TYPE gpuwatch_loader_info gauge\n")
        # tid: the training loop's OS thread, so gpuwatch can tell it from the
        # process's compute threads (OpenBLAS, OpenMP, torch intra-op).
        tid_label = ',tid="%d"' % tid if tid else ""
        for name, v in _rank_env().items():
            tid_label += ',%s="%d"' % (name, v)
        hist('gpuwatch_loader_info{pid="%d",kind="python"%s} 1\n' % (os.getpid(), tid_label))
        return "".join(out).encode()


def _rank_env() -> dict:
    """RANK, LOCAL_RANK and WORLD_SIZE of this process (torch.distributed's
    launchers set them), those that are small non-negative numbers."""
    out = {}
    for env, name in (("RANK", "rank"), ("LOCAL_RANK", "local_rank"), ("WORLD_SIZE", "world_size")):
        try:
            v = int(os.environ.get(env, ""))
        except ValueError:
            continue
        if 0 <= v < 1 << 20:
            out[name] = v
    return out


def discovery_dir() -> str:
    """Where serving processes announce themselves: $XDG_RUNTIME_DIR/gpuwatch,
    or /tmp/gpuwatch-UID where there is no runtime folder (gpuwatch reads
    the same place)."""
    d = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(d):
        return os.path.join(d, "gpuwatch")
    import tempfile

    return os.path.join(tempfile.gettempdir(), "gpuwatch-%d" % os.geteuid())


def _announce(url: str):
    """Writes this process's announcement; returns its path, or None when it
    could not (a warning: attaching by URL still works). The folder must be
    this user's and writable by no one else, as gpuwatch requires."""
    d = discovery_dir()
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.lstat(d)
        import stat

        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise OSError("%s is not a private folder of this user" % d)
        entry = {"pid": os.getpid(), "url": url, "kind": "python"}
        entry.update(_rank_env())
        path = os.path.join(d, "%d-%s.json" % (os.getpid(), url.rsplit(":", 1)[-1]))
        tmp = path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, path)
    except OSError as e:
        _warn("not announced for discovery (attach to %s instead): %s" % (url, e))
        return None
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # never from a forked worker
            try:
                os.unlink(path)
            except OSError:
                pass

    atexit.register(remove)
    return path


def _native_tid():
    """The calling thread's OS thread ID (as /proc/PID/task lists it), or
    None where Python cannot tell."""
    try:
        return threading.get_native_id()
    except (AttributeError, OSError):
        return None


def _copy(h: _Histogram) -> _Histogram:
    c = _Histogram()
    c.counts, c.count, c.sum = list(h.counts), h.count, h.sum
    return c


def _fmt(v) -> str:
    """A number as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it for
    the values here: integers without a point."""
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def _queue_depth(it):
    """Batches a torch DataLoader iterator has ready: those in its data
    queue and those that arrived out of order and wait in its reorder
    buffer. None when it is no such iterator."""
    q = getattr(it, "_data_queue", None)
    info = getattr(it, "_task_info", None)
    if q is None or not isinstance(info, dict):
        return None
    # Called on the training loop's thread, the only one that changes it.
    return q.qsize() + sum(1 for v in info.values() if len(v) == 2)


class _Timed:
    """The iterator the training loop sees: times each next() and hands the
    batch through unchanged."""

    __slots__ = ("_it", "_stats", "_handed", "_depth_ok")

    def __init__(self, it, stats: _Stats) -> None:
        self._it = it
        self._stats = stats
        self._handed = None  # when the last batch was handed out
        self._depth_ok = True

    def __iter__(self):
        return self

    def __next__(self):
        t0 = _clock()
        stats = self._stats
        if self._handed is not None:
            try:
                stats.record_step(t0 - self._handed)
            except Exception:  # never into the training loop
                stats.errors += 1
            self._handed = None
        depth = None
        if self._depth_ok:
            try:
                depth = _queue_depth(self._it)
            except Exception:
                depth = None
            self._depth_ok = depth is not None
        batch = next(self._it)  # the loader's own exceptions, StopIteration included, are the loop's
        t1 = _clock()
        try:
            stats.record(t1 - t0, batch, depth)
        except Exception:
            stats.errors += 1
        self._handed = t1
        return batch

    def __len__(self):
        return len(self._it)

    def __getattr__(self, name):
        return getattr(self._it, name)


class Watched:
    """A watched iterable: iterating it iterates the wrapped loader, timed.
    Everything else (len(), .dataset, .sampler.set_epoch, …) is the
    loader's own."""

    def __init__(self, loader, stats: _Stats, server) -> None:
        self.loader = loader
        self._stats = stats
        self._server = server
        #: The URL gpuwatch attaches to, or None when nothing is served.
        self.url = server.url if server else None

    def __iter__(self):
        it = iter(self.loader)
        try:
            self._stats.epoch(self.loader, it)
        except Exception:
            self._stats.errors += 1
        return _Timed(it, self._stats)

    def __len__(self):
        return len(self.loader)

    def __getattr__(self, name):
        if name == "loader":  # not yet set: never recurse
            raise AttributeError(name)
        return getattr(self.loader, name)

    def __repr__(self) -> str:
        return "gpuwatch_hook.Watched(%r, url=%r)" % (self.loader, self.url)


class _WatchedIterator(_Timed):
    """A watched iterator (a generator, an iter(loader)): one pass."""

    __slots__ = ("url", "_server")

    def __init__(self, it, stats: _Stats, server) -> None:
        super().__init__(it, stats)
        self._server = server
        stats.loop_tid = _native_tid()  # watch() is called where the loop runs
        self.url = server.url if server else None


# One server per (host, port) in this process: a second watch() on the same
# port — a validation loader beside the training one — shares it.
_servers: dict = {}
_servers_lock = threading.Lock()
_listening: list = []  # every server started here, shared or not


def _after_fork_in_child() -> None:
    """A DataLoader worker is a fork of the training process: it must not
    hold the training process's listening sockets (they would keep the
    port taken after the training process ends), and it has no server
    thread."""
    global _servers_lock
    _servers_lock = threading.Lock()
    for srv in _listening:
        try:
            srv.socket.close()
        except OSError:
            pass
    _listening.clear()
    _servers.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def watch(loader, port=None, host: str = "127.0.0.1", quiet: bool = False):
    """Wraps loader (a torch DataLoader, or any iterable or iterator) so
    that gpuwatch can watch it, and serves the loader protocol on
    http://host:port. port defaults to 6061 + $LOCAL_RANK; 0 picks a free
    one (see the returned object's .url). Binding another host than
    127.0.0.1 exposes the process's metrics and profiles to the network.

    Never raises for the server: a port in use is a warning, and batches
    are still timed."""
    if port is None:
        try:
            port = DEFAULT_PORT + int(os.environ.get("LOCAL_RANK", "0"))
        except ValueError:
            port = DEFAULT_PORT
    stats, server = _serve(host, int(port), quiet)
    if hasattr(type(loader), "__next__"):  # an iterator: one pass, timed as it goes
        # (never iter() a DataLoader here: that would start its workers)
        return _WatchedIterator(loader, stats, server)
    return Watched(loader, stats, server)


def _serve(host: str, port: int, quiet: bool):
    with _servers_lock:
        key = (host, port)
        if key in _servers:
            srv = _servers[key]
            return srv.stats, srv
        stats = _Stats()
        try:
            srv = _Server((host, port), stats)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                _warn(
                    "port %d on %s is in use (another training process, or another program): not serving "
                    "metrics; batches are still timed. Pass watch(..., port=0) for a free port." % (port, host)
                )
            else:
                _warn("cannot serve on %s:%d (%s): not serving metrics; batches are still timed" % (host, port, e))
            return stats, None
        if port != 0:  # port 0 is a new port each time: nothing to share
            _servers[key] = srv
        _listening.append(srv)
        t = threading.Thread(target=srv.serve_forever, name="gpuwatch_hook server", daemon=True)
        t.start()
        srv.thread_ident = t.ident
        srv.announcement = _announce(srv.url)
        if not quiet:
            sys.stderr.write("gpuwatch_hook: serving %s — watch it with: gpuwatch attach %s\n" % (srv.url, srv.url))
        if host not in ("127.0.0.1", "localhost", "::1"):
            _warn("serving on %s: anyone who can reach it can read this process's metrics and profiles" % host)
        return stats, srv


#: At most this many connections are served at once; more are closed at
#: once. A scrape and a profile need two; a flood must not grow threads.
MAX_CONNECTIONS = 16

#: The longest profile served, in seconds (gpuwatch asks for 5).
MAX_PROFILE_SECONDS = 60


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # A deep accept queue: a burst of connections is accepted (and the
    # ones past MAX_CONNECTIONS closed) at once, not after SYN retries.
    request_queue_size = 256

    def __init__(self, addr, stats: _Stats) -> None:
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, _Handler)
        self.stats = stats
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.profiling = threading.Lock()
        self.thread_ident = None
        h, p = self.server_address[:2]
        self.url = "http://%s:%d" % ("[%s]" % h if ":" in h else h, p)

    def handle_error(self, request, client_address) -> None:
        pass  # a request that failed is the client's problem, not the training log's

    def process_request(self, request, client_address) -> None:
        # One thread per connection, but never more than MAX_CONNECTIONS.
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    server_version = "gpuwatch_hook/" + __version__
    #: Seconds a connection may sit without sending its request (or
    #: reading the answer): an idle or half-open one is closed then.
    timeout = 10

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        u = urllib.parse.urlsplit(self.path)
        try:
            if u.path == "/metrics":
                self._send(200, "text/plain; version=0.0.4; charset=utf-8", self.server.stats.render())
            elif u.path == "/debug/pprof/profile":
                self._profile(urllib.parse.parse_qs(u.query))
            elif u.path == "/":
                self._send(200, "text/plain; charset=utf-8", b"gpuwatch_hook: /metrics (Prometheus text), /debug/pprof/profile?seconds=N (pprof)\n")
            else:
                self._send(404, "text/plain; charset=utf-8", b"404 not found\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away

    def _profile(self, query) -> None:
        raw = query.get("seconds", ["30"])[-1]
        try:
            seconds = float(raw)
        except ValueError:
            seconds = -1.0
        if not 0 < seconds <= MAX_PROFILE_SECONDS:
            msg = "seconds: want a number of seconds in (0, %d]\n" % MAX_PROFILE_SECONDS
            self._send(400, "text/plain; charset=utf-8", msg.encode())
            return
        if not self.server.profiling.acquire(blocking=False):
            self._send(409, "text/plain; charset=utf-8", b"a profile is already being taken; try again when it ends\n")
            return
        try:
            data = take_profile(seconds, exclude=(threading.get_ident(), self.server.thread_ident))
        finally:
            self.server.profiling.release()
        self._send(
            200,
            "application/octet-stream",
            data,
            {"Content-Disposition": 'attachment; filename="profile"'},
        )

    def _send(self, code: int, ctype: str, body: bytes, headers=None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # noqa: A002 (http.server's name)
        pass  # the training script's stderr is not ours to fill


# --- the profiler ----------------------------------------------------------

_LINUX = sys.platform.startswith("linux")


def _thread_cpu_clock(tid: int) -> int:
    """Linux's CPU-time clock of one thread, by its TID — what glibc's
    pthread_getcpuclockid returns (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)).
    Read for a thread that has exited, or one in another process, it
    fails with EINVAL instead of reading a stale pthread handle."""
    return ((~tid) << 3) | 6


def take_profile(seconds: float, hz: int = 100, exclude=()) -> bytes:
    """Samples the stacks of this process's Python threads at hz for
    seconds and returns a gzipped pprof profile of their CPU time.

    Each tick charges every thread the CPU time its own clock shows since
    the last tick, at the stack where the thread is running. Whether it is
    running is seen, not guessed: the sampler reads the clocks, lets go of
    the GIL for half a millisecond, reads the stacks and clocks, lets go
    again, and reads the clocks once more. A thread whose clock moved in
    both windows is running where it was seen, and its time goes there; one
    whose clock stood still in either is blocked there (a sleep, a queue, a
    socket), or nearly, and the time it used since the last tick is charged
    to the stack it last ran at. Idle threads cost nothing and show nothing.
    Threads without Python frames (torch's intra-op pool, say) are not seen.

    The GIL decides when the sampler gets to look: a thread running Python
    lets go of it only every sys.getswitchinterval() (5 ms by default) or at
    a blocking call, so a sampler at 100 Hz would mostly find threads at
    their blocking calls. While it profiles, the switch interval is 0.2 ms
    (put back after), and ticks are spaced at random around 1/hz, so no
    rhythm of the program locks onto them.

    Off Linux there is no per-thread clock by TID; every tick then charges
    each thread 1/hz of wall time, and the profile's comment says so."""
    s = _Sampler(hz, exclude)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, 0.0002))
    try:
        s.run(seconds)
    finally:
        sys.setswitchinterval(switch)
    return s.profile()


class _Sampler:
    def __init__(self, hz: int, exclude) -> None:
        self.interval = 1.0 / hz
        self.period_ns = int(1e9 / hz)
        self.exclude = set(e for e in exclude if e is not None)
        self.exclude.add(threading.get_ident())
        self.cpu_clock = _LINUX
        self.agg: dict = {}  # (thread name, stack) -> [samples, cpu ns]
        self.last: dict = {}  # ident -> cpu ns at the last tick
        self.ran_at: dict = {}  # ident -> the key of the stack it last ran at
        self.names: dict = {}  # ident -> (name, native id)
        self.modules: dict = {}  # code -> its module's __name__
        self.rng = random.Random()
        self.start_wall_ns = time.time_ns()
        self.duration_ns = 0

    def clocks(self, idents) -> dict:
        out = {}
        for ident in idents:
            tid = self.names.get(ident, (None, None))[1]
            if tid is None:
                continue
            try:
                out[ident] = time.clock_gettime_ns(_thread_cpu_clock(tid))
            except OSError:
                pass  # the thread has ended
        return out

    def charge(self, key, used: int) -> None:
        v = self.agg.get(key)
        if v is None:
            self.agg[key] = [1, used]
        else:
            v[0] += 1
            v[1] += used

    def run(self, seconds: float) -> None:
        start = time.monotonic()
        end = start + seconds
        tick = start
        while True:
            self.tick()
            tick += self.interval * (0.5 + self.rng.random())
            now = time.monotonic()
            if now >= end:
                break
            if tick < now:  # fell behind (a long GIL hold): skip the lost ticks
                tick = now
            time.sleep(min(tick, end) - now)
        self.duration_ns = int((time.monotonic() - start) * 1e9)

    def tick(self) -> None:
        idents = [i for i in sys._current_frames() if i not in self.exclude]
        if any(i not in self.names for i in idents):
            self.names = {t.ident: (t.name, getattr(t, "native_id", None)) for t in threading.enumerate()}
        if self.cpu_clock:
            before = self.clocks(idents)
            time.sleep(0.0005)  # window one: threads that can run, run
        frames = sys._current_frames()
        at = self.clocks(idents) if self.cpu_clock else {}
        keys = {}
        for ident in idents:
            frame = frames.get(ident)
            if frame is None:
                continue  # ended during the window
            stack = []
            while frame is not None and len(stack) < 128:
                code = frame.f_code
                if code not in self.modules:
                    self.modules[code] = frame.f_globals.get("__name__")
                stack.append((code, frame.f_lineno))
                frame = frame.f_back
            keys[ident] = (self.names.get(ident, ("thread %d" % ident,))[0], tuple(stack))
        frames = frame = None  # no frame outlives its tick
        if not self.cpu_clock:
            for key in keys.values():
                self.charge(key, self.period_ns)
            return
        time.sleep(0.0005)  # window two
        after = self.clocks(idents)
        for ident, key in keys.items():
            now_ns = at.get(ident)
            if now_ns is None:
                continue
            prev = self.last.get(ident)
            self.last[ident] = now_ns
            # Running where it was seen: its clock moved by a tenth of a
            # window or more both before and after the look. (A thread that
            # just let go of the GIL to block still moves a few microseconds
            # on its way into the kernel; one that ran up to its blocking
            # call moved before but not after, and one woken just after the
            # look moved after but not before.)
            running = (
                now_ns - before.get(ident, now_ns) >= 50_000 and after.get(ident, now_ns) - now_ns >= 50_000
            )
            if running:
                self.ran_at[ident] = key
            if prev is None or now_ns <= prev:
                continue  # first sight, or idle since the last tick
            self.charge(key if running else self.ran_at.get(ident, key), now_ns - prev)

    def profile(self) -> bytes:
        samples = []
        for (thread, stack), (n, ns) in self.agg.items():
            frames = [_frame(code, line, self.modules.get(code)) for code, line in stack]
            samples.append((frames, [n, ns], {"thread": thread}))
        comments = ["gpuwatch_hook %s, Python %s, pid %d" % (__version__, sys.version.split()[0], os.getpid())]
        if not self.cpu_clock:
            comments.append("wall-clock samples: no per-thread CPU clock on %s" % sys.platform)
        return encode_profile(
            samples,
            sample_types=[("samples", "count"), ("cpu", "nanoseconds")],
            period_type=("cpu", "nanoseconds"),
            period=self.period_ns,
            time_nanos=self.start_wall_ns,
            duration_nanos=self.duration_ns,
            comments=comments,
        )


def _frame(code, line, module=None):
    """(function name, system name, file, first line, line) of one frame.
    The name is module-qualified as pprof users expect of Go:
    "torch.utils.data.dataloader._BaseDataLoaderIter.__next__". module is
    the frame's __name__; without one, the file's name stands in."""
    qual = getattr(code, "co_qualname", code.co_name)  # 3.11+
    if not isinstance(module, str) or not module:
        module = os.path.splitext(os.path.basename(code.co_filename))[0]
    name = "%s.%s" % (module, qual) if module else qual
    return (name, code.co_name, code.co_filename, code.co_firstlineno, line or 0)


# --- pprof's protobuf (github.com/google/pprof/proto/profile.proto) ----------


def _uvarint(b: bytearray, v: int) -> None:
    v &= (1 << 64) - 1  # int64 fields: two's complement
    while v >= 0x80:
        b.append((v & 0x7F) | 0x80)
        v >>= 7
    b.append(v)


def _int(b: bytearray, field: int, v: int) -> None:
    if v:
        _uvarint(b, field << 3)
        _uvarint(b, v)


def _msg(b: bytearray, field: int, data) -> None:
    _uvarint(b, field << 3 | 2)
    _uvarint(b, len(data))
    b += data


def _packed(b: bytearray, field: int, vals) -> None:
    inner = bytearray()
    for v in vals:
        _uvarint(inner, v)
    _msg(b, field, inner)


def encode_profile(
    samples,
    sample_types,
    period_type=None,
    period: int = 0,
    time_nanos: int = 0,
    duration_nanos: int = 0,
    comments=(),
) -> bytes:
    """Encodes a profile in pprof's format, gzipped. samples: (stack, values,
    labels), the stack leaf first as (name, system name, file, first line,
    line), values one per sample type, labels a dict of strings.
    sample_types: (type, unit) pairs."""
    strings = {"": 0}
    table = [""]

    def s(x: str) -> int:
        i = strings.get(x)
        if i is None:
            i = strings[x] = len(table)
            table.append(x)
        return i

    out = bytearray()
    for typ, unit in sample_types:
        vt = bytearray()
        _int(vt, 1, s(typ))
        _int(vt, 2, s(unit))
        _msg(out, 1, vt)
    functions: dict = {}  # (name, system name, file, first line) -> id
    locations: dict = {}  # (function id, line) -> id
    fn_bytes = bytearray()
    loc_bytes = bytearray()
    for stack, values, labels in samples:
        ids = []
        for name, system, filename, first, line in stack:
            fkey = (name, system, filename, first)
            fid = functions.get(fkey)
            if fid is None:
                fid = functions[fkey] = len(functions) + 1
                fb = bytearray()
                _int(fb, 1, fid)
                _int(fb, 2, s(name))
                _int(fb, 3, s(system))
                _int(fb, 4, s(filename))
                _int(fb, 5, first)
                _msg(fn_bytes, 5, fb)
            lkey = (fid, line)
            lid = locations.get(lkey)
            if lid is None:
                lid = locations[lkey] = len(locations) + 1
                ln = bytearray()
                _int(ln, 1, fid)
                _int(ln, 2, line)
                lb = bytearray()
                _int(lb, 1, lid)
                _int(lb, 2, 1)  # mapping 1
                _msg(lb, 4, ln)
                _msg(loc_bytes, 4, lb)
            ids.append(lid)
        sb = bytearray()
        _packed(sb, 1, ids)
        _packed(sb, 2, values)
        for k, v in sorted(labels.items()):
            lab = bytearray()
            _int(lab, 1, s(k))
            _int(lab, 2, s(v))
            _msg(sb, 3, lab)
        _msg(out, 2, sb)
    # One mapping that says the functions are already known, so pprof does
    # not try to symbolize addresses.
    mp = bytearray()
    _int(mp, 1, 1)
    _int(mp, 5, s("python"))
    for field in (7, 8, 9):  # has_functions, has_filenames, has_line_numbers
        _int(mp, field, 1)
    _msg(out, 3, mp)
    out += loc_bytes
    out += fn_bytes
    comment_ids = [s(c) for c in comments]
    pt = None
    if period_type:
        pt = bytearray()
        _int(pt, 1, s(period_type[0]))
        _int(pt, 2, s(period_type[1]))
    for x in table:
        _msg(out, 6, x.encode("utf-8", "replace"))
    _int(out, 9, time_nanos)
    _int(out, 10, duration_nanos)
    if pt is not None:
        _msg(out, 11, pt)
    _int(out, 12, period)
    if comment_ids:
        _packed(out, 13, comment_ids)
    return gzip.compress(bytes(out))
