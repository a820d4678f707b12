"""The hook's own cost: the CPU time its instrumentation takes inside the
job, by its own per-thread clocks (time.thread_time_ns), in parts:

* loop: the patched __next__'s own work around each batch (the wait and
  step timing, the queue depth, the stage figures taken, the windows'
  steps) — never the batch's fetch itself. A thread-clock read costs about
  a µs and a half on a VM (a system call, not the vDSO), four a batch would
  cost more than the timing they measure: one batch in LOOP_EVERY is
  measured, less the measurement's own cost (BIAS_NS, calibrated at
  import), and counts LOOP_EVERY times; one the garbage collector ran in
  is not counted;
* payload: each look inside a batch (_payload), measured every time (a
  few a second);
* settings, syncs: opening and closing the settings' and the syncs'
  windows, and each sync counted, measured every time;
* stages: the figures a worker's batch carried, added up in the training
  process;
* profiler: the stack sampler's profiles (their request's thread);
* gpu_profile: a torch.profiler recording of the GPU's time per step
  (_gpuprofile), while it records only: the process's CPU per step beyond
  the steps before, every thread, added when it ends;
* server: the HTTP server's threads (the serving thread and the deadlines'
  by their own clocks, read when the page is rendered; each request's
  thread less the profile it took).

What runs inside the rare parts (a look) is never counted twice: a
measured batch subtracts what the parts measured on its thread while it
ran. The workers' share (the fetch's clock reads, the carried figures'
pickling) is not here: bench/hook-cost.sh measures the whole job's.

Process-wide: one counter for every DataLoader of the process."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any, Callable, Dict, List, Optional

#: The parts, in the order the metrics page lists them.
PARTS = ("loop", "payload", "settings", "syncs", "stages", "profiler", "gpu_profile", "server")

#: One batch in LOOP_EVERY has its timing measured (and counts LOOP_EVERY).
LOOP_EVERY = 16

_now = getattr(time, "thread_time_ns", None)  # the calling thread's CPU time


def now() -> int:
    """The calling thread's CPU time, ns (0 where Python has no clock)."""
    return _now() if _now is not None else 0


def thread_clock(tid: int) -> int:
    """Linux's CPU-time clock of one thread by its TID (as _sampler's)."""
    return ((~tid) << 3) | 6


class Cost:
    """The cumulative ns per part; threads add under the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ns: Dict[str, int] = dict.fromkeys(PARTS, 0)
        self.threads: List[int] = []  # TIDs of the hook's own long-lived threads (server)
        self.thread_ns: Dict[int, int] = {}  # their last clock read
        self._tls = threading.local()  # per thread: ns measured by parts, for a measured batch to subtract
        # Long parts under way (a profile's seconds): part and start by the
        # TID of the thread running them, read by its clock as they run.
        self.live: Dict[int, List[Any]] = {}
        self._shown: Dict[str, float] = {}  # the seconds last returned: never less after

    def add(self, part: str, ns: int) -> None:
        if ns <= 0:
            return
        with self.lock:
            self.ns[part] += ns

    def timed(self, part: str, f: Callable[..., Any], *args: Any) -> Any:
        """f(*args), its thread's CPU time added to part."""
        t0 = now()
        try:
            return f(*args)
        finally:
            d = now() - t0
            self.add(part, d)
            tls = self._tls
            tls.inner = getattr(tls, "inner", 0) + d

    def timed_live(self, part: str, f: Callable[..., Any], *args: Any) -> Any:
        """timed(), its CPU read as it runs: a 5 s profile's CPU was
        added in the frame it ended in, five times the hook's cost in
        one frame and none in the others (a review)."""
        get_tid = getattr(threading, "get_native_id", None)
        tid = get_tid() if get_tid is not None and _now is not None else None
        if tid is None:
            return self.timed(part, f, *args)
        t0 = now()
        with self.lock:
            self.live[tid] = [part, t0]
        try:
            return f(*args)
        finally:
            d = now() - t0
            with self.lock:
                self.live.pop(tid, None)
                if d > 0:
                    self.ns[part] += d
            tls = self._tls
            tls.inner = getattr(tls, "inner", 0) + d

    @staticmethod
    def _read_live(live: List[Any]) -> Dict[str, int]:
        """The ns the long parts under way (live's snapshot) have run so
        far, by part."""
        out: Dict[str, int] = {}
        for tid, (part, t0) in live:
            try:
                d = time.clock_gettime_ns(thread_clock(tid)) - t0
            except (OSError, AttributeError):
                continue
            if d > 0:
                out[part] = out.get(part, 0) + d
        return out

    def part_ns(self, part: str) -> int:
        """The ns counted in part so far."""
        with self.lock:
            return self.ns[part]

    def inner(self) -> int:
        """The ns timed() measured on this thread so far."""
        return getattr(self._tls, "inner", 0)

    def watch_thread(self, tid: Optional[int]) -> None:
        """Counts a thread of the hook's own, whole, by its clock."""
        if tid is not None and _now is not None:
            with self.lock:
                if tid not in self.threads and len(self.threads) < 8:
                    self.threads.append(tid)

    def _read_threads(self) -> None:
        for tid in list(self.threads):
            try:
                v = time.clock_gettime_ns(thread_clock(tid))
            except (OSError, AttributeError):
                continue  # the thread has ended: its last read stands
            with self.lock:
                self.thread_ns[tid] = max(v, self.thread_ns.get(tid, 0))

    def seconds(self) -> Optional[Dict[str, float]]:
        """Seconds per part (the server's threads read now); None where
        there is no thread clock."""
        if _now is None:
            return None
        self._read_threads()
        # The parts and the long parts under way in one snapshot: a part
        # that ends after it is in neither's sum twice (a review: read
        # across two locks, a profile ending between them counted twice,
        # and the next reading, a counter, went down).
        with self.lock:
            ns, live = dict(self.ns), list(self.live.items())
            threads = sum(self.thread_ns.values())
        running = self._read_live(live)
        out = {k: (v + running.get(k, 0)) / 1e9 for k, v in ns.items()}
        out["server"] += threads / 1e9
        with self.lock:
            for k, v in out.items():  # a counter: never below what it said
                out[k] = self._shown[k] = max(v, self._shown.get(k, 0.0))
        return out


cost = Cost()


class Measure:
    """One measured batch on the loop's thread: start(), then around the
    fetch pause() and resume(), then done()."""

    __slots__ = ("t", "paused", "inner", "pinner", "gc")

    def __init__(self) -> None:
        self.gc = gc.get_count()
        self.t = now()
        self.inner = cost.inner()
        self.paused = self.pinner = 0

    def pause(self) -> None:
        self.pinner = cost.inner()
        self.paused = now()

    def resume(self) -> None:
        p, self.paused = self.paused, 0
        if p:
            self.t += now() - p  # the fetch is the job's
            self.inner += cost.inner() - self.pinner  # and what parts measured inside it, already left out

    def done(self) -> bool:
        """Adds the batch's cost, LOOP_EVERY times; False (nothing added)
        where the interpreter's garbage collector ran inside it: a
        collection walks every object of the process (torch's are many)
        and is the cost of everyone's allocations, not of the hook's few —
        counted LOOP_EVERY times it would swamp the figure. The next batch
        is measured instead."""
        d = self.raw() - BIAS_NS  # the measurement's own cost left out
        g = gc.get_count()
        if g[1:] != self.gc[1:]:  # a collection: gen0's ran (gen1's count moved), or an older one's
            return False
        cost.add("loop", d * LOOP_EVERY)
        return True

    def raw(self) -> int:
        """The span's ns, the fetch and the parts inside it left out."""
        if self.paused:  # the fetch raised: its time is not the hook's
            self.resume()
        return now() - self.t - (cost.inner() - self.inner)


def _bias() -> int:
    """What a measured batch's span holds of the measurement itself (its
    clock reads, its calls), the least of a few empty ones: about four
    clock reads' worth, which the batches not measured do not pay."""
    if _now is None:
        return 0
    best = 1 << 30
    for _ in range(16):
        m = Measure()
        m.pause()
        m.resume()
        best = min(best, m.raw())
    return max(0, best)


#: The measurement's own cost in a measured batch's span, ns.
BIAS_NS = _bias()
