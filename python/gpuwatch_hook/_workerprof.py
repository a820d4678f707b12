"""CPU profiles of the DataLoader's workers, on request, merged into the
training process's profile (issue 39).

The channel is gpuwatch run's private folder (GPUWATCH_RUN_DIR; without it
the workers are not profiled). A profile request writes the file
profile-request-PID there (PID the training process's: every rank of a
distributed job shares the folder, and a worker answers its own parent
only): its id and the wall-clock time the profile ends.
A worker looks at that file's modification time once per carried batch
(_stages: at most every CARRY_EVERY, 20 ms) — one stat, about a
microsecond; no thread runs and nothing else is done while nobody
profiles. A worker that sees a new request it can still join says so
(an empty file, joined-ID-PID), profiles itself until the request's end
(_Signalled, or a sampler thread where it cannot) and writes its samples,
as JSON, to worker-ID-PID.json in the folder. The training process, its
own profile taken, waits for every worker that joined and is still alive,
at most JOIN_WAIT past the end, reads and removes their files, and writes
one profile with every process's samples, each worker's labelled with its
pid."""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading
import time
from typing import Any, List, Optional, Tuple

from . import _env
from ._sampler import Sampler

#: How long past the request's end the training process waits at most
#: for a worker that joined: they end at the same wall-clock time and
#: write theirs at once (70-100 ms on 2 busy cores, the text loop), unless
#: a long hold of their GIL or other users' CPU delays them. A fixed wait
#: of 0.5 s once lost a busy run's workers' profile; the wait ends as soon
#: as every worker that joined has written, or has exited.
JOIN_WAIT = 3.0

JOINED = "joined-%s-%d"  # % (request id, the worker's pid)

REQUEST = "profile-request-%d"  # % the training process's pid

_UNSET = object()
_dir: Any = _UNSET  # the run folder, looked up once per process
_last_mtime: List[Optional[int]] = [None]  # of the request last looked at


def _folder() -> Optional[str]:
    global _dir
    if _dir is _UNSET:
        _dir = _env.run_dir()
    return _dir


def request(seconds: float, pid: Optional[int] = None) -> Optional[Tuple[str, float, str]]:
    """Asks the workers of process pid (this one) for a profile of seconds
    from now: (id, end, folder), or None without a run folder (or when it
    cannot be written)."""
    d = _folder()
    if d is None:
        return None
    rid = "%d-%d" % (os.getpid(), time.time_ns())
    end = time.time() + seconds
    path = os.path.join(d, REQUEST % (os.getpid() if pid is None else pid))
    tmp = path + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"id": rid, "end": end}, f)
        os.replace(tmp, path)
    except OSError:
        return None
    return rid, end, d


def poll() -> None:
    """A worker's look at its parent's request: one stat while nothing is
    asked."""
    d = _folder()
    if d is None:
        return
    if _signalled[0] is not None:
        _restore()
    path = os.path.join(d, REQUEST % os.getppid())
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return
    if mtime == _last_mtime[0]:
        return
    _last_mtime[0] = mtime
    try:
        with open(path) as f:
            req = json.load(f)
        rid, end = str(req["id"]), float(req["end"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    if end - time.time() < 0.05:  # seen too late to sample anything
        return
    _join(rid, d)
    if not _by_signal(rid, end, d):
        threading.Thread(target=_profile, args=(rid, end, d), name="gpuwatch-worker-profiler", daemon=True).start()


def _join(rid: str, d: str) -> None:
    """Tells the training process to wait for this worker's samples."""
    try:
        os.close(os.open(os.path.join(d, JOINED % (rid, os.getpid())), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
    except OSError:
        pass  # not waited for: its samples count if they come by the end


def _profile(rid: str, end: float, d: str) -> None:
    """A sampler thread's profile of the worker (the training process's
    own sampler): where no CPU-time signal can be had."""
    s = Sampler(100, ())
    s.run(max(0.0, end - time.time()))
    _write(rid, d, s.samples())


def _write(rid: str, d: str, samples: List[Any]) -> None:
    path = os.path.join(d, "worker-%s-%d.json" % (rid, os.getpid()))
    tmp = path + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"pid": os.getpid(), "samples": samples}, f)
        os.replace(tmp, path)
    except OSError:
        pass  # the training process's profile goes without this worker


class _Signalled:
    """A worker's profile by its own CPU time: SIGPROF every 10 ms of the
    process's CPU (ITIMER_PROF), its handler run by the worker's main
    thread, where __getitem__ and collate_fn run, at its next bytecode
    boundary. A sampler thread cannot do this fairly: to look it must take
    the GIL, and a worker whose C calls let go of the GIL and take it back
    at once (torch.tensor, numpy's copies) hands it to its own main thread
    again before the sampler wakes, so the sampler saw a time-series loop
    19 times in 3 s, each time just after a GIL-releasing call, and its
    Python loop, 63 % of the time, never. The handler charges each thread
    the CPU time its own clock shows since the last sample: the main thread
    at the stack it interrupted (a C function that held the GIL is
    interrupted when it returns, at its call, and _callee may name it), the
    others (the queue's feeder thread pickling batches) where they let go
    of the GIL for it."""

    def __init__(self) -> None:
        self.sampler = Sampler(100, ())
        self.lock = threading.Lock()
        self.main = threading.main_thread().ident
        self.last: dict = {}  # ident -> its CPU clock at the last sample
        self.done = False
        self.previous: Any = signal.SIG_DFL
        self.finisher: Optional[int] = None

    def on_signal(self, signum: int, frame: Any) -> None:
        # Handlers can nest (one runs Python, another arrives): a sample
        # that finds the lock held is dropped, never waited for.
        if self.done or frame is None or not self.lock.acquire(blocking=False):
            return
        try:
            s = self.sampler
            frames = sys._current_frames()
            frames[self.main] = frame  # not the handler's own frame
            if any(i not in s.names for i in frames):
                s.names = {t.ident: (t.name, getattr(t, "native_id", None)) for t in threading.enumerate()}
            now = s.clocks([i for i in frames if i != self.finisher])
            for ident, ns in now.items():
                prev = self.last.get(ident)
                self.last[ident] = ns
                if prev is not None and ns > prev:
                    s.charge((s.names.get(ident, ("thread %d" % ident,))[0], s.stack(frames[ident])), ns - prev)
            frames = frame = None  # no frame outlives its sample
        finally:
            self.lock.release()

    def start(self) -> None:
        """The threads' clocks now: each sample charges the time since."""
        s = self.sampler
        s.names = {t.ident: (t.name, getattr(t, "native_id", None)) for t in threading.enumerate()}
        self.last = s.clocks(list(s.names))

    def ours(self) -> bool:
        """Whether SIGPROF's handler is still this one (nobody replaced it)."""
        try:
            return signal.getsignal(signal.SIGPROF) == self.on_signal
        except (OSError, ValueError):
            return False

    def stop(self) -> None:
        """No more samples; the timer off, where the handler is still ours
        (otherwise the timer is whoever replaced it's)."""
        with self.lock:
            was, self.done = self.done, True
        if not was and self.ours():
            try:
                signal.setitimer(signal.ITIMER_PROF, 0)
            except (OSError, ValueError):
                pass

    def finish(self, rid: str, end: float, d: str) -> None:
        self.finisher = threading.get_ident()
        time.sleep(max(0.0, end - time.time()))
        self.stop()
        _write(rid, d, self.sampler.samples())  # no handler runs once done: no lock needed


_signalled: List[Optional[_Signalled]] = [None]  # the handler installed, until put back
_atexit_registered = [False]


def _stop_at_exit() -> None:
    """A worker that exits while it profiles (the end of an epoch): the
    timer off before the interpreter puts SIGPROF's default back, whose
    action would kill it (a spawned worker died by SIGPROF otherwise)."""
    p = _signalled[0]
    if p is not None:
        p.stop()


def install_exit_handler() -> bool:
    """At exit a worker's profile stops (_stop_at_exit). Once per process."""
    if not _atexit_registered[0]:
        atexit.register(_stop_at_exit)
        _atexit_registered[0] = True
    return True


def _by_signal(rid: str, end: float, d: str) -> bool:
    """Starts a SIGPROF profile until end, where this is the worker's main
    thread and nobody else uses SIGPROF or ITIMER_PROF (a profiler of the
    user's own); False otherwise."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    try:
        if signal.getsignal(signal.SIGPROF) not in (signal.SIG_DFL, None) or signal.getitimer(signal.ITIMER_PROF) != (0.0, 0.0):
            return False
        if not _env.attempt("atexit: a worker's profile stopped", install_exit_handler):
            return False  # without it, an exit during the profile would be killed by SIGPROF
        p = _Signalled()
        p.start()
        p.previous = signal.signal(signal.SIGPROF, p.on_signal)
        _signalled[0] = p
        signal.siginterrupt(signal.SIGPROF, False)  # SA_RESTART: most of the worker's system calls go on
        signal.setitimer(signal.ITIMER_PROF, 0.01, 0.01)
    except (OSError, ValueError, RuntimeError):
        _restore(force=True)
        return False
    threading.Thread(target=p.finish, args=(rid, end, d), name="gpuwatch-worker-profiler", daemon=True).start()
    return True


def _restore(force: bool = False) -> None:
    """Puts SIGPROF's handler back once a profile is done (only the main
    thread can), where it is still ours: a handler someone installed since
    is theirs to keep."""
    p = _signalled[0]
    if p is None:
        return
    if not force and not p.done:
        return
    p.stop()
    if p.ours():
        try:
            signal.signal(signal.SIGPROF, p.previous if p.previous is not None else signal.SIG_DFL)
        except (OSError, ValueError):
            return
    _signalled[0] = None


def collect(req: Optional[Tuple[str, float, str]]) -> List[Any]:
    """The workers' samples for req, each labelled with its worker's pid,
    once every worker that joined has written them or exited (at most
    JOIN_WAIT past the request's end); their files are removed."""
    if req is None:
        return []
    rid, end, d = req
    time.sleep(max(0.0, end - time.time()))
    prefix, joined = "worker-%s-" % rid, "joined-%s-" % rid
    deadline = end + JOIN_WAIT
    while True:
        try:
            names = os.listdir(d)
        except OSError:
            return []
        wrote = {n[len(prefix) : -len(".json")] for n in names if n.startswith(prefix) and n.endswith(".json")}
        waiting = [n for n in names if n.startswith(joined) and n[len(joined) :] not in wrote and _alive(n[len(joined) :])]
        if not waiting or time.time() >= deadline:
            break
        time.sleep(0.01)
    out: List[Any] = []
    for n in names:
        path = os.path.join(d, n)
        if n.startswith(joined):
            _unlink(path)
            continue
        if not (n.startswith(prefix) and n.endswith(".json")):
            continue
        try:
            with open(path) as f:
                got = json.load(f)
            pid = int(got["pid"])
            for frames, values, labels in got["samples"]:
                labels = {str(k): str(v) for k, v in labels.items()}
                labels["worker_pid"] = str(pid)
                out.append(([tuple(fr) for fr in frames], [int(v) for v in values], labels))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # a torn or foreign file: left out
        finally:
            _unlink(path)
    return out


def _alive(pid: str) -> bool:
    """Whether process pid runs (a zombie does not, where /proc says so: a
    worker that ended with its epoch and is not yet reaped writes nothing
    more)."""
    try:
        n = int(pid)
        if n <= 0:  # 0 and -1 would name groups of processes
            return False
        os.kill(n, 0)
    except PermissionError:
        pass  # it exists
    except (OSError, ValueError, OverflowError):
        return False
    try:
        with open("/proc/%d/stat" % n, "rb") as f:
            stat = f.read()
    except OSError:
        return True  # no /proc (not Linux), or gone since: the deadline bounds the wait
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    return state not in (b"Z", b"X", b"x")


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
