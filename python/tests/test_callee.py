"""C functions caught running are named by their caller's call
(gpuwatch_hook/_callee.py), and a worker's profile by its own CPU time
(SIGPROF) sees a loop's Python as well as its C calls
(gpuwatch_hook/_workerprof.py): python3 -m unittest discover -s python/tests"""

import dis
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpuwatch_hook import _callee, _workerprof  # noqa: E402

try:
    import numpy as np
except ImportError:
    np = None


def helper(rows):
    return rows


class Holder:
    def __init__(self, v):
        self.rows = [v]


def calls(rows, a, h):
    x = np.array(rows)
    y = float(rows[0])
    z = a.astype(np.float64)
    w = h.rows[0].tolist()
    v = helper(rows)
    u = np.asarray(
        rows,
        dtype=np.float32,
    )
    t = dict(a="(")
    s = float(y)
    return x, y, z, w, v, u, t, s


def sleeper(stop):
    x = 0
    while not stop.is_set():
        x += 1
        time.sleep(0.01)
    return x


def locked(stop, lock):
    while not stop.is_set():
        with lock:
            pass


def spinner(stop):
    # Arithmetic in a while loop: where every version hands the GIL over
    # (3.9 before a for loop's next too, which is no checkpoint: a next
    # can block).
    x = 0
    while not stop.is_set():
        n = 0
        while n < 10000:
            n += 1
        x += n
    return x


def branches(stop, flag):
    x = 0
    while not stop.is_set():
        if flag:  # a forward jump: on 3.10 it tests flag first, and is no checkpoint
            x += 1
    return x


def reader(stop, pipe):
    total = 0
    for line in pipe:  # blocks in the read, at the loop's FOR_ITER
        total += len(line)
    return total


class CheckpointTest(unittest.TestCase):
    def test_only_where_the_gil_is_handed_over(self):
        # Where each version hands the GIL over, as sampling spinning
        # threads showed (docs/diagnosis.md): a loop's jump back on every
        # version; never a call, a with, a for's next, a subscript, a load
        # or a store, which can block or are no checkpoint; a conditional
        # jump only backwards (3.10's tests its value first, and
        # `if loss_on_gpu:` syncs).
        judged = []
        for fn in (spinner, branches, locked, reader):
            code = fn.__code__
            for ins in dis.get_instructions(code):
                name = ins.opname
                if name in ("JUMP_ABSOLUTE", "JUMP_BACKWARD", "RESUME"):
                    want = True
                elif name.startswith("POP_JUMP"):
                    want = name.startswith("POP_JUMP_BACKWARD") or (sys.version_info[:2] == (3, 10) and ins.argval < ins.offset)
                elif "CALL" in name or "WITH" in name or name in ("FOR_ITER", "GET_ITER", "BINARY_SUBSCR") or name.startswith(("LOAD_", "STORE_")):
                    want = False
                else:
                    continue  # 3.9's arithmetic and the rest: the threads below
                self.assertEqual(_callee.at_checkpoint(code, ins.offset), want, (fn.__name__, name, ins.offset))
                judged.append((name, want))
        self.assertIn(True, [w for _, w in judged])
        self.assertTrue(any(n.startswith("POP_JUMP") and not w for n, w in judged), judged)  # branches' if
        code = spinner.__code__
        # Before 3.11 a frame's lasti is -1 at its start, where the GIL is
        # handed over; from 3.11 -1 is unknown: it may be blocked.
        self.assertEqual(_callee.at_checkpoint(code, -1), not _callee.POSITIONS)
        self.assertFalse(_callee.at_checkpoint(code, -2))
        self.assertFalse(_callee.at_checkpoint(code, len(code.co_code)))

    def looks(self, target, *args, let_go=None):
        """Where a thread running target is seen, 20 times: at a checkpoint
        or not. let_go, if given, lets it go at the end."""
        stop = threading.Event()
        t = threading.Thread(target=target, args=(stop,) + args)
        t.start()
        try:
            deadline = time.monotonic() + 5
            while True:
                frame = sys._current_frames().get(t.ident)
                if frame is not None and frame.f_code is target.__code__:
                    break
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.001)
            seen = []
            for _ in range(20):
                time.sleep(0.003)
                frame = sys._current_frames().get(t.ident)
                seen.append(frame is not None and _callee.at_checkpoint(frame.f_code, frame.f_lasti))
                frame = None
            return seen
        finally:
            stop.set()
            if let_go is not None:
                let_go()
            t.join()

    def test_a_thread_running_python_is_seen_at_one(self):
        # Seen while this thread holds the GIL: the spinner handed it over
        # at its loop's jump back.
        seen = self.looks(spinner)
        self.assertGreaterEqual(sum(seen), 15, seen)

    def test_a_blocked_thread_is_not(self):
        self.assertEqual(sum(self.looks(sleeper)), 0)  # in time.sleep: a call
        lock = threading.Lock()
        lock.acquire()  # held: the thread blocks in `with lock:`, which is no call
        self.assertEqual(sum(self.looks(locked, lock, let_go=lock.release)), 0)
        r, w = os.pipe()
        with os.fdopen(r, "rb") as pipe, os.fdopen(w, "wb") as out:
            out.write(b"a line\n")  # in the loop, then blocked in its next read
            out.flush()
            self.assertEqual(sum(self.looks(reader, pipe, let_go=out.close)), 0)


@unittest.skipUnless(_callee.POSITIONS, "positions of instructions are Python 3.11's")
@unittest.skipIf(np is None, "needs numpy")
class CalleeTest(unittest.TestCase):
    def test_names_each_call_by_what_it_calls(self):
        code = calls.__code__
        got = set()
        for ins in dis.get_instructions(code):
            if ins.opcode in _callee._CALLS:
                name = _callee.callee(code, ins.offset, calls.__globals__)
                if name is not None:
                    got.add(name)
        # A subscript before a call lets it be named (an index, in most
        # __getitem__); arithmetic does not (test_work_before_the_call_is_the_lines).
        want = {"numpy.array", "builtins.float", "a.astype", "h.rows[0].tolist", "numpy.asarray", "builtins.dict"}
        self.assertEqual(got, want, "helper is Python (its own frame shows); no instruction but a call is named")

    def test_work_before_the_call_is_the_lines(self):
        src = "import numpy as np\ndef g(a):\n    b = a * 1.0001 + 0.5\n    return float(b[0]), float(b)\n"
        d = tmpdir(self)
        path = os.path.join(d, "g.py")
        with open(path, "w") as f:
            f.write(src)
        ns = {}
        exec(compile(src, path, "exec"), ns)
        code = ns["g"].__code__
        got = [_callee.callee(code, i.offset, ns) for i in dis.get_instructions(code) if i.opcode in _callee._CALLS]
        named = [n for n in got if n]
        # Each float() is one call site (PRECALL and CALL on 3.11): half of them are float(b)'s.
        self.assertEqual(named, ["builtins.float"] * (len(got) // 2), "only float(b): the first float's sample holds the arithmetic")

    def test_an_edited_source_names_nothing(self):
        d = tmpdir(self)
        path = os.path.join(d, "e.py")
        with open(path, "w") as f:
            f.write("import numpy as np\ndef g(s):\n    return np.array(s)\n")
        ns = {}
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), ns)
        with open(path, "w") as f:
            f.write("import numpy as np\ndef g(s):\n    return tokenizer.encode(s)\n")
        import linecache

        linecache.checkcache(path)
        code = ns["g"].__code__
        got = [_callee.callee(code, i.offset, ns) for i in dis.get_instructions(code) if i.opcode in _callee._CALLS]
        self.assertEqual([n for n in got if n], [], "tokenizer is no name the code uses")

    def test_not_a_call_and_out_of_range(self):
        code = calls.__code__
        for ins in dis.get_instructions(code):
            if ins.opcode not in _callee._CALLS:
                self.assertIsNone(_callee.callee(code, ins.offset, calls.__globals__), ins.opname)
        self.assertIsNone(_callee.callee(code, len(code.co_code) + 10, calls.__globals__))
        self.assertIsNone(_callee.callee(code, -1, calls.__globals__))

    def test_no_source_no_name(self):
        src = "def g(rows):\n    return float(rows[0])\n"
        ns = {}
        exec(compile(src, "<nowhere>", "exec"), ns)
        code = ns["g"].__code__
        for ins in dis.get_instructions(code):
            if ins.opcode in _callee._CALLS:
                self.assertIsNone(_callee.callee(code, ins.offset, ns))

    def test_a_fifo_for_a_source_is_not_read(self):
        """A code object's file can be anything: a FIFO there would block
        linecache's read (and the profile) for ever."""
        d = tmpdir(self)
        fifo = os.path.join(d, "src.py")
        os.mkfifo(fifo)
        ns = {}
        exec(compile("def g(rows):\n    return float(rows[0])\n", fifo, "exec"), ns)
        code = ns["g"].__code__
        n = 0
        for ins in dis.get_instructions(code):
            if ins.opcode in _callee._CALLS:
                n += 1
                self.assertIsNone(_callee.callee(code, ins.offset, ns))
        self.assertGreater(n, 0)

    def test_callee_text(self):
        for call, want in {
            "torch.tensor(rows, dtype=torch.float32)": "torch.tensor",
            "x[i].astype(np.float32)": "x[i].astype",
            "f(a)(b)": "f(a)",
            "(a)": None,
            "x": None,
            "d['k'](1)": "d['k']",
        }.items():
            got = _callee._callee_text(call)
            self.assertEqual(got and got[0], want, call)
        self.assertIsNone(_callee._callee_text("f(" + "1, " * 1000 + ")"), "over MAX_CALL")


class Busy:
    """A loop that times its own parts: a Python loop building lists of
    floats, and np.array over them."""

    LISTS = ARRAY = 0  # their lines, found below

    def __init__(self):
        self.cols = [list(range(i, i + 2000)) for i in range(16)]
        self.own = {"lists": 0.0, "array": 0.0}

    def step(self):
        t0 = time.perf_counter()
        rows = [[float(c[t]) for c in self.cols] for t in range(0, 2000, 4)]  # Busy.LISTS
        t1 = time.perf_counter()
        for _ in range(6):
            np.array(rows, dtype=np.float64)  # Busy.ARRAY
        t2 = time.perf_counter()
        self.own["lists"] += t1 - t0
        self.own["array"] += t2 - t1


def _lines():
    import inspect

    src, first = inspect.getsourcelines(Busy.step)
    for i, line in enumerate(src):
        if "# Busy.LISTS" in line:
            Busy.LISTS = first + i
        if "# Busy.ARRAY" in line:
            Busy.ARRAY = first + i


_lines()


def tmpdir(test):
    """A new folder, removed when the test ends."""
    d = tempfile.mkdtemp(prefix="gpuwatch-callee-test-")
    test.addCleanup(shutil.rmtree, d, True)
    return d


def signal_profile(test, rid, seconds, step):
    """step() run over and over for seconds under a SIGPROF profile
    (_workerprof._by_signal), and the samples it wrote; the handler put
    back."""
    d = tmpdir(test)
    end = time.time() + seconds
    test.assertTrue(_workerprof._by_signal(rid, end, d))
    try:
        while time.time() < end:
            step()
        for t in threading.enumerate():
            if t.name == "gpuwatch-worker-profiler":
                t.join(5)  # it stops the timer, then writes the samples
    finally:
        _workerprof._restore()
    names = os.listdir(d)
    test.assertEqual(len(names), 1, names)
    with open(os.path.join(d, names[0])) as f:
        return json.load(f)["samples"]


def _profile_then_exit(d):
    _workerprof._by_signal("exit", time.time() + 30, d)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass


@unittest.skipIf(np is None, "needs numpy")
@unittest.skipUnless(hasattr(signal, "setitimer"), "SIGPROF is POSIX")
class SignalledProfileTest(unittest.TestCase):
    def test_the_loop_python_and_its_c_calls_both_show(self):
        """A sampler thread would see this loop only after its GIL-releasing
        calls; by CPU-time signal, the Python list building and np.array
        each take within 0.15 of their share by the loop's own clocks."""
        b = Busy()
        samples = signal_profile(self, "t1", 2.0, b.step)
        self.assertIs(signal.getsignal(signal.SIGPROF), signal.SIG_DFL, "the handler is put back")
        self.assertEqual(signal.getitimer(signal.ITIMER_PROF), (0.0, 0.0), "the timer is off")
        # Each sample by the line its innermost frame is at: a C call
        # caught running carries its caller's line, a list comprehension's
        # own frame (before 3.12) the line it is written on.
        lines = {Busy.LISTS: "lists", Busy.ARRAY: "array"}
        by = {"lists": 0, "array": 0}
        total = 0
        for frames, (n, ns), _ in samples:
            total += ns
            part = lines.get(frames[0][4]) if frames[0][2] == __file__ else None
            if part:
                by[part] += ns
        own = sum(b.own.values())
        self.assertGreater(total, 0.5e9, "at least half the CPU seconds sampled")
        for part in ("lists", "array"):
            self.assertAlmostEqual(by[part] / total, b.own[part] / own, delta=0.15, msg="%s: profile %s, own %s" % (part, by, b.own))

    def test_a_profiler_of_the_users_own_is_left_alone(self):
        """Someone else's SIGPROF handler: no signal profile (the sampler
        thread takes its place), and the handler stays."""
        mine = lambda s, f: None  # noqa: E731
        old = signal.signal(signal.SIGPROF, mine)
        try:
            self.assertFalse(_workerprof._by_signal("t2", time.time() + 0.2, tmpdir(self)))
            self.assertIs(signal.getsignal(signal.SIGPROF), mine)
        finally:
            signal.signal(signal.SIGPROF, old)

    def test_a_worker_that_exits_while_it_profiles_exits_cleanly(self):
        """A spawned worker ends its interpreter, which puts SIGPROF's
        default back (terminate), while the timer still runs: the timer
        must be off by then."""
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        p = ctx.Process(target=_profile_then_exit, args=(tmpdir(self),))
        p.start()
        p.join(60)
        self.assertEqual(p.exitcode, 0, "-27 is death by SIGPROF")

    def test_a_handler_installed_since_is_left(self):
        """Someone replaces the handler (and arms their own timer) while a
        profile runs: neither is undone when it ends."""
        d = tmpdir(self)
        self.assertTrue(_workerprof._by_signal("t4", time.time() + 0.2, d))
        got = []
        mine = lambda s, f: got.append(s)  # noqa: E731
        signal.signal(signal.SIGPROF, mine)
        try:
            signal.setitimer(signal.ITIMER_PROF, 0.01, 0.01)
            end = time.monotonic() + 0.6
            while time.monotonic() < end:
                pass
            _workerprof._restore()
            self.assertIs(signal.getsignal(signal.SIGPROF), mine)
            self.assertNotEqual(signal.getitimer(signal.ITIMER_PROF), (0.0, 0.0), "their timer still runs")
            self.assertIsNone(_workerprof._signalled[0])
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, signal.SIG_DFL)
        self.assertTrue(got, "their handler ran")

    def test_only_the_main_thread(self):
        got, d = [], tmpdir(self)
        t = threading.Thread(target=lambda: got.append(_workerprof._by_signal("t3", time.time() + 0.2, d)))
        t.start()
        t.join()
        self.assertEqual(got, [False])
        self.assertIs(signal.getsignal(signal.SIGPROF), signal.SIG_DFL)


if __name__ == "__main__":
    unittest.main()


def shapes(cols, out):
    for t in range(3):  # shapes.LOOP
        out.append(t * 2)
    rows = [[float(c[t + 1]) for c in cols] for t in range(4)]  # shapes.LIST
    s = {x for x in out}  # shapes.SET
    d = {x: 1 for x in out}  # shapes.DICT
    return rows, s, d


class Lists:
    """A comprehension that builds lists value by value, then a plain loop
    of arithmetic, each timed by its own clock."""

    def __init__(self):
        self.cols = [[float(k) for k in range(i, i + 2000)] for i in range(16)]
        self.own = {"comp": 0.0, "loop": 0.0}

    def step(self):
        t0 = time.perf_counter()
        rows = [[c[t] * 2 for c in self.cols] for t in range(0, 2000, 2)]  # Lists.COMP
        t1 = time.perf_counter()
        acc = 0
        for t in range(30000):
            acc += t * 3 % 7
        t2 = time.perf_counter()
        self.own["comp"] += t1 - t0
        self.own["loop"] += t2 - t1
        return rows, acc


def _line_of(fn, mark):
    import inspect

    src, first = inspect.getsourcelines(fn)
    return next(first + i for i, line in enumerate(src) if mark in line)


class ComprehensionTest(unittest.TestCase):
    @unittest.skipUnless(_callee.INLINED, "comprehensions run inline from Python 3.12 (PEP 709)")
    def test_inlined_comprehensions_are_named(self):
        """Each instruction of an inlined comprehension's loop is that
        comprehension's, with its loop's line; a plain loop's, and the
        code after, are none's."""
        got = {}
        for x in dis.get_instructions(shapes.__code__):
            line = x.positions.lineno if x.positions else None
            got.setdefault(line, set()).add(_callee.comprehension(shapes.__code__, x.offset))
        self.assertEqual(got[_line_of(shapes, "shapes.LOOP")] | got[_line_of(shapes, "shapes.LOOP") + 1], {None})
        lst, st, dc = (_line_of(shapes, "shapes." + k) for k in ("LIST", "SET", "DICT"))
        self.assertIn(("listcomp", lst), got[lst])
        self.assertIn(("setcomp", st), got[st])
        self.assertIn(("dictcomp", dc), got[dc])
        subscr = [x.offset for x in dis.get_instructions(shapes.__code__) if x.opname == "BINARY_SUBSCR"]
        self.assertTrue(subscr and all(_callee.comprehension(shapes.__code__, o) == ("listcomp", lst) for o in subscr))

    @unittest.skipIf(_callee.INLINED, "before 3.12 a comprehension is a frame of its own")
    def test_before_inlining_none(self):
        for x in dis.get_instructions(shapes.__code__):
            self.assertIsNone(_callee.comprehension(shapes.__code__, x.offset))

    @unittest.skipUnless(hasattr(signal, "setitimer"), "SIGPROF is POSIX")
    def test_a_comprehensions_time_is_named_on_every_version(self):
        """Profiled by signal, the time in a list comprehension's own code
        is under a frame named <listcomp> (3.11's own frame; from 3.12 the
        profiler's, for the inlined loop): ≥ 90 % of the samples at its
        line; none of the plain loop's."""
        samples = signal_profile(self, "comp", 1.5, Lists().step)
        at, named, loop = 0, 0, 0
        line = _line_of(Lists.step, "Lists.COMP")
        for frames, (n, ns), _ in samples:
            inner = frames[0]
            if inner[2] != __file__:
                continue
            if inner[4] == line:
                at += ns
                named += ns if inner[0].endswith(".<listcomp>") else 0
            elif inner[0].endswith(".<listcomp>"):
                loop += ns
        self.assertGreater(at, 0.1e9, "the comprehension sampled for at least 0.1 s")
        self.assertGreaterEqual(named / at, 0.9, "of its line's samples, %.2f under <listcomp>" % (named / at))
        self.assertEqual(loop, 0, "samples elsewhere under <listcomp>")
