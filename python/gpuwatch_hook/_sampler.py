"""The stack sampler under every CPU profile the hook takes: it charges
each Python thread the CPU time its own clock shows, at the stack where it
runs, and writes the samples as a pprof profile. The training process's
profile (_profiler) and a DataLoader worker's (_workerprof) both use it."""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from typing import Any, Callable, Iterable, Optional

from . import _callee
from ._pprof import encode_profile
from ._version import __version__

_LINUX = sys.platform.startswith("linux")

#: How long the sampler sleeps with the GIL held after a look that found
#: a thread in a C function's call, before it reads whether the thread
#: still runs there (past_call): time for one through with a short call
#: to block on the GIL (the kernel's timer slack adds about 50 µs).
HELD_SLEEP_US = 20


class _HeldGIL:
    """libc's usleep and a /proc read called through ctypes.PyDLL, which
    keeps the GIL across the call: a thread waiting for the GIL stays
    waiting while the sampler sleeps and reads its state (Python's own
    sleep and file reads let go of it, and the thread looked at runs)."""

    def __init__(self) -> None:
        import ctypes  # only here: a process never profiled pays nothing

        libc = ctypes.PyDLL(None)
        self.usleep = libc.usleep
        self.usleep.argtypes = [ctypes.c_uint]
        self.open = libc.open
        self.open.argtypes = [ctypes.c_char_p, ctypes.c_int]
        self.read = libc.read
        self.read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
        self.read.restype = ctypes.c_ssize_t
        self.close = libc.close
        self.close.argtypes = [ctypes.c_int]
        self.buf = ctypes.create_string_buffer(512)

    def state(self, tid: int) -> str:
        """A thread of this process's scheduling state (R running or
        runnable, S asleep...) from /proc; "" where it cannot be read."""
        fd = self.open(b"/proc/self/task/%d/stat" % tid, os.O_RDONLY)
        if fd < 0:
            return ""
        try:
            n = self.read(fd, self.buf, len(self.buf))
        finally:
            self.close(fd)
        b = self.buf.raw[: max(n, 0)]
        i = b.rfind(b")")
        return b[i + 2 : i + 3].decode("ascii", "replace") if i >= 0 else ""


def _thread_cpu_clock(tid: int) -> int:
    """Linux's CPU-time clock of one thread, by its TID — what glibc's
    pthread_getcpuclockid returns (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)).
    Read for a thread that has exited, or one in another process, it
    fails with EINVAL instead of reading a stale pthread handle."""
    return ((~tid) << 3) | 6


class Sampler:
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
        self.globs: dict = {}  # code -> its frame's globals, where it was innermost
        self.callees: dict = {}  # (code, byte offset) -> the C function called there, or None
        self.comps: dict = {}  # (code, byte offset) -> the inlined comprehension running there (3.12+), or None
        self.checkpoints: dict = {}  # (code, byte offset) -> at a checkpoint (_callee.at_checkpoint)
        self.held: Any = None  # _HeldGIL once past_call needs it, False where it cannot be had
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

    def run(self, seconds: float, before_tick: Optional[Callable[[], None]] = None) -> None:
        start = time.monotonic()
        end = start + seconds
        tick = start
        while True:
            if before_tick is not None:
                before_tick()
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
            w0 = time.monotonic_ns()
            time.sleep(0.0005)  # window one: threads that can run, run
        frames = sys._current_frames()
        w1 = time.monotonic_ns()
        at = self.clocks(idents) if self.cpu_clock else {}
        keys = {}
        for ident in idents:
            frame = frames.get(ident)
            if frame is None:
                continue  # ended during the window
            if self.cpu_clock:
                prev, now_ns = self.last.get(ident), at.get(ident)
                if now_ns is not None and now_ns == prev and not self.checkpoint(frame.f_code, frame.f_lasti):
                    # Idle since the last tick (its clock has not moved,
                    # so it did not move through the window either) and
                    # not waiting for the GIL to run Python: nothing is
                    # charged and nothing noted, so its stack is not
                    # walked. (A clock below the last read is another
                    # thread under a reused ident: walked, and noted.) Most of a process's threads are idle (the
                    # hook's server, torch's pin-memory and queue
                    # threads): the walks were a third of a tick.
                    continue
            keys[ident] = (self.names.get(ident, ("thread %d" % ident,))[0], self.stack(frame))
        frames = frame = None  # no frame outlives its tick
        if not self.cpu_clock:
            for key in keys.values():
                self.charge(key, self.period_ns)
            return
        past = self.past_call(keys, at)
        time.sleep(0.0005)  # window two
        after = self.clocks(idents)
        w2 = time.monotonic_ns()
        # A window lasts past its half millisecond while the sampler waits
        # for the GIL (a thread running Python holds it up to the switch
        # interval, and ran all along) or for a core (a loaded box: time
        # enough for a thread to block and wake again): a thread ran
        # across the look if its clock moved through half of each window.
        need1, need2 = max(50_000, (w1 - w0) // 2), max(50_000, (w2 - w1) // 2)
        for ident, key in keys.items():
            now_ns = at.get(ident)
            if now_ns is None:
                continue
            prev = self.last.get(ident)
            self.last[ident] = now_ns
            # Running where it was seen: stopped where CPython hands the GIL
            # over (a loop's jump back, a function's start), it is running
            # Python and waits for the GIL to go on. Stopped anywhere else
            # it is in C code that let go of the GIL (a call, a lock, a
            # read) and may be blocked there: running only if its clock
            # moved through half of both windows, before and after the
            # look. (A thread that just let go of the GIL to block still
            # moves a few microseconds on its way into the kernel; one that
            # ran up to its blocking call moved before but not after, one
            # woken just after the look after but not before.)
            running = self.at_checkpoint(key) or (
                now_ns - before.get(ident, now_ns) >= need1 and after.get(ident, now_ns) - now_ns >= need2
            )
            if running:
                key = past.get(ident, key)
                self.ran_at[ident] = key
            if prev is None or now_ns <= prev:
                continue  # first sight, or idle since the last tick
            self.charge(key if running else self.ran_at.get(ident, key), now_ns - prev)

    def past_call(self, keys: dict, at: dict) -> dict:
        """The threads seen in a C function's call that were through with
        it by the look: each as its key with the call's line as its leaf,
        not the function.

        The GIL reaches the sampler where a thread lets go of it, and a C
        function that lets go (most of torch's) does so on every call: a
        loop of Python that called torch.randn(64) each 0.5 ms was seen in
        randn at every tick and charged 100 % to it, for 2 µs of 550 (a
        hostile user's review). The sampler sleeps HELD_SLEEP_US after the
        look with the GIL held (_HeldGIL), then reads each such thread's
        state without letting go of it: one through with its call waits
        for the GIL to go on in Python, asleep (S), and its time is the
        Python around the call, charged to the call's line; one still in
        its call runs on without the GIL, or waits for a core (R), and
        keeps the function. On this project's 2-core VM, a loop of 0.5 ms
        of Python and randn read S at 196 of 200 looks; one of 0.1 ms of
        Python and a 1 ms matmul read R at 170 (the other 30 came as the
        matmul ended). Its CPU clock cannot tell them apart (a thread kept
        off a core stands still too), nor Python's own sleep and reads,
        which let go of the GIL: the thread runs, and reads R. A thread
        blocked in its call (a read, a lock) sleeps as well, but its clock
        did not move through the windows, so it is not running and this
        does not apply. Costs the sleep with the GIL held (the job's
        Python threads wait through it: 20 µs and the timer's slack) and
        a read of /proc per such thread, a tick, only while a thread is
        seen in a call."""
        calls = []
        for ident, key in keys.items():
            stack = key[1]
            if stack and stack[0][2] >= 0 and at.get(ident) is not None:
                code, _, lasti = stack[0]
                if not self.checkpoint(code, lasti) and self.callee(code, lasti) is not None:
                    calls.append(ident)
        if not calls:
            return {}
        if self.held is None:
            try:
                self.held = _HeldGIL()
            except Exception:  # no libc to call (not Linux, no ctypes)
                self.held = False
        if not self.held:
            return {}
        self.held.usleep(HELD_SLEEP_US)
        out = {}
        for ident in calls:
            tid = self.names.get(ident, (None, None))[1]
            if tid is not None and self.held.state(tid) == "S":
                name, stack = keys[ident]
                code, line, _ = stack[0]
                out[ident] = (name, ((code, line, -1),) + stack[1:])
        return out

    def at_checkpoint(self, key) -> bool:
        """Whether the thread of a sample's key was seen where CPython
        hands the GIL over (_callee.at_checkpoint): running Python. Kept
        per instruction: from 3.11 each read of co_code is a fresh copy."""
        if not key[1]:
            return False
        code, _, lasti = key[1][0]
        return self.checkpoint(code, lasti)

    def checkpoint(self, code, lasti: int) -> bool:
        """at_checkpoint of an innermost frame's code and instruction."""
        v = self.checkpoints.get((code, lasti))
        if v is None:
            v = self.checkpoints[(code, lasti)] = _callee.at_checkpoint(code, lasti)
        return v

    def stack(self, frame) -> tuple:
        """The key of a frame's stack, innermost first: (code, line,
        instruction) per frame, the instruction only for the innermost:
        stopped on a call, it is running a C function (_callee)."""
        if _callee.POSITIONS and frame.f_code not in self.globs:
            self.globs[frame.f_code] = frame.f_globals
        lasti = frame.f_lasti
        stack = []
        while frame is not None and len(stack) < 128:
            code = frame.f_code
            if code not in self.modules:
                self.modules[code] = frame.f_globals.get("__name__")
            stack.append((code, frame.f_lineno, lasti))
            lasti = -1
            frame = frame.f_back
        return tuple(stack)

    def samples(self) -> list:
        """The samples: (frames, [count, cpu ns], labels), frames as
        _frame gives them, innermost first."""
        samples = []
        for (thread, stack), (n, ns) in self.agg.items():
            frames = [_frame(code, line, self.modules.get(code)) for code, line, _ in stack]
            code, line, lasti = stack[0]
            if lasti >= 0:
                comp = self.comprehension(code, lasti)
                if comp is not None:  # 3.12+: as 3.11's own frame for it would be named
                    kind, first = comp
                    frames.insert(0, ("%s.<locals>.<%s>" % (frames[0][0], kind), "<%s>" % kind, code.co_filename, first or line or 0, line or 0))
                fn = self.callee(code, lasti)
                if fn is not None:  # a C function, called from its caller's line
                    # Its first line is the call's: each call site is a
                    # function of its own (two float() calls, two places).
                    frames.insert(0, (fn, "<C call>", code.co_filename, line or 0, line or 0))
            samples.append((frames, [n, ns], {"thread": thread}))
        return samples

    def comprehension(self, code, lasti: int):
        k = (code, lasti)
        if k not in self.comps:
            self.comps[k] = _callee.comprehension(code, lasti)
        return self.comps[k]

    def callee(self, code, lasti: int):
        k = (code, lasti)
        if k not in self.callees:
            self.callees[k] = _callee.callee(code, lasti, self.globs.get(code))
        return self.callees[k]

    def profile(self, more: Iterable = ()) -> bytes:
        """The profile of the samples, and more (other processes')."""
        samples = self.samples()
        samples.extend(more)
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


