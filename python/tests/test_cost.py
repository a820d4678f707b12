"""The hook's own CPU time (gpuwatch_hook/_cost.py): the parts its
instrumentation takes, by its threads' clocks — the loop's share measured
on one batch in LOOP_EVERY and counted that many times, never the batch's
fetch; the rare parts (a look, a window) measured every time and never
twice; the server's threads; the metrics page's gpuwatch_hook_cpu_*.
python3 -m unittest discover -s python/tests"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gpuwatch_hook as hook  # noqa: E402
from gpuwatch_hook import _cost, _timing  # noqa: E402

from test_stages import metrics  # noqa: E402  (sets the runtime folder)


def burn(seconds):
    """Spins this thread's CPU for seconds of its own CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def fresh():
    """A new process-wide counter for one test (the real one put back after)."""
    old = _cost.cost
    _cost.cost = _cost.Cost()
    return old


class CostTest(unittest.TestCase):
    def setUp(self):
        self.old = fresh()

    def tearDown(self):
        _cost.cost = self.old

    def test_timed_adds_to_its_part_and_the_threads_inner(self):
        c = _cost.cost
        self.assertEqual(c.timed("payload", burn, 0.02), None)
        self.assertGreaterEqual(c.ns["payload"], 15_000_000)
        self.assertEqual(c.inner(), c.ns["payload"])
        with self.assertRaises(ZeroDivisionError):  # the callee's exception passes, its time counts
            c.timed("syncs", lambda: 1 / 0)
        self.assertEqual(c.inner(), c.ns["payload"] + c.ns["syncs"])

    def test_a_long_part_is_read_as_it_runs(self):
        # A profile's seconds of CPU were added when it ended: five times
        # the hook's cost in one frame, none in the frames before. Read by
        # its thread's clock as it runs, the part grows while it runs and
        # ends at what timed() would have added.
        import threading

        c = _cost.cost
        started, go_on = threading.Event(), threading.Event()

        def profile():
            burn(0.05)
            started.set()
            go_on.wait(10)
            burn(0.05)

        t = threading.Thread(target=c.timed_live, args=("profiler", profile))
        t.start()
        self.assertTrue(started.wait(10))
        during = c.seconds()["profiler"]
        go_on.set()
        t.join(10)
        after = c.seconds()["profiler"]
        self.assertGreaterEqual(during, 0.04)  # the first half, before it ended
        self.assertGreaterEqual(after, during + 0.04)
        self.assertEqual(c.live, {})
        self.assertAlmostEqual(after, c.ns["profiler"] / 1e9)

    def test_a_long_part_ending_during_a_reading_is_not_counted_twice(self):
        # A profile that ended while a reading read its thread's clock was
        # in the parts and in the reading: 0.4 s, then 0.2 s — a counter
        # going down (a review). The reading is one snapshot, and never
        # below what was said before.
        import threading

        c = _cost.cost
        started, go_on, ended = threading.Event(), threading.Event(), threading.Event()

        def profile():
            burn(0.05)
            started.set()
            go_on.wait(10)

        def request():
            c.timed_live("profiler", profile)
            ended.set()
            time.sleep(0.2)  # the request thread goes on, sending the profile

        t = threading.Thread(target=request)
        t.start()
        self.assertTrue(started.wait(10))
        read_live = c._read_live

        def racing(live):
            out = read_live(live)
            go_on.set()  # the profile ends between the snapshot and the sum
            ended.wait(10)
            return out

        c._read_live = racing
        first = c.seconds()["profiler"]
        c._read_live = read_live
        second = c.seconds()["profiler"]
        t.join(10)
        self.assertLess(first, 0.08)  # once, not twice
        self.assertGreaterEqual(second, first)

    def test_a_measured_batch_leaves_out_the_fetch_and_the_parts(self):
        c = _cost.cost
        m = _cost.Measure()
        burn(0.01)  # the hook's own, before the fetch
        m.pause()
        burn(0.05)  # the fetch: the job's
        c.timed("stages", burn, 0.02)  # a part inside the fetch: neither the loop's nor subtracted twice
        m.resume()
        c.timed("payload", burn, 0.03)  # a part after it: its own, not the loop's
        m.done()
        loop = c.ns["loop"] / _cost.LOOP_EVERY / 1e9
        self.assertGreater(loop, 0.008)
        self.assertLess(loop, 0.02)
        self.assertGreaterEqual(c.ns["stages"], 18_000_000)
        self.assertGreaterEqual(c.ns["payload"], 28_000_000)

    def test_a_batch_the_collector_ran_in_is_not_counted(self):
        import gc

        m = _cost.Measure()
        gc.collect(0)  # everyone's allocations' cost, not the hook's
        self.assertFalse(m.done())
        self.assertEqual(_cost.cost.ns["loop"], 0)
        m = _cost.Measure()
        self.assertTrue(m.done())

    def test_one_batch_in_loop_every_is_measured(self):
        stats = _timing.Stats()
        batches = [[0.0] * 4 for _ in range(3 * _cost.LOOP_EVERY)]

        def slow(it):
            burn(0.002)  # a fetch that costs: never the hook's
            return next(it)

        clock = _timing.Clock(stats)
        it = iter(batches)
        for _ in batches:
            clock.next(it, slow)
        loop = _cost.cost.ns["loop"] / 1e9
        # 3 measured batches, each ×LOOP_EVERY: far less than the fetches' 0.1 s.
        self.assertGreater(loop, 0)
        self.assertLess(loop, 0.05, "the fetch was counted as the hook's")

    def test_the_queue_depth_is_read_every_depth_every(self):
        # A poll of the workers' pipe each batch cost the loop tens of µs on
        # a busy VM: read at most every DEPTH_EVERY, the last reading stands.
        calls = []
        orig = _timing._torch.queue_depth

        def depth(it):
            calls.append(1)
            return len(calls)

        now = [0.0]
        clock = _timing._env.clock
        every = _timing.DEPTH_EVERY
        _timing._torch.queue_depth = depth
        _timing._env.clock = lambda: now[0]
        _timing.DEPTH_EVERY = 1.0  # whole numbers of quarters: no rounding
        try:
            stats = _timing.Stats()
            c = _timing.Clock(stats)
            it = iter(range(100))
            for i in range(100):
                now[0] = i * 0.25  # four batches per DEPTH_EVERY
                c.next(it, next)
        finally:
            _timing._torch.queue_depth = orig
            _timing._env.clock = clock
            _timing.DEPTH_EVERY = every
        self.assertEqual(len(calls), 25)
        self.assertEqual(stats.queue_depth, 25)

    def test_batches_are_queued_drained_every_drain_every_and_before_a_read(self):
        # Each batch only queues its figures (the loop's thread runs cold
        # after a batch arrives: every line costs); the loop drains them
        # every DRAIN_EVERY, so the queue stays bounded with nobody
        # reading, and a reader drains first, so it is never behind.
        now = [0.0]
        clock = _timing._env.clock
        every = _timing.DRAIN_EVERY
        _timing._env.clock = lambda: now[0]
        _timing.DRAIN_EVERY = 1.0
        try:
            stats = _timing.Stats()
            c = _timing.Clock(stats)
            it = iter([object()] * 102)
            longest = 0
            for i in range(100):
                now[0] = i * 0.25  # four batches per DRAIN_EVERY
                c.next(it, next)
                longest = max(longest, len(stats.pending))
            # Drained at the batch that finds DRAIN_EVERY passed: at most
            # the three before it wait.
            self.assertLessEqual(longest, 3, "the loop's thread let its queue grow")
            self.assertGreater(len(stats.pending), 0, "nothing was left for a reader to drain: the test shows nothing")
            # What a reader sees: every batch, every step, right after the loop.
            self.assertEqual(stats.batches, 100)  # the property drains first
            self.assertEqual(len(stats.pending), 0)
            for _ in range(2):
                c.next(it, next)
            self.assertEqual(len(stats.pending), 2)
            page = stats.render().decode()  # and so does the page
            self.assertEqual(len(stats.pending), 0)
        finally:
            _timing._env.clock = clock
            _timing.DRAIN_EVERY = every
        self.assertIn("gpuwatch_loader_batches_total 102\n", page)
        self.assertIn("gpuwatch_loader_wait_seconds_count 102\n", page)
        self.assertIn("gpuwatch_loader_step_seconds_count 101\n", page)  # a step between two batches

    def test_a_readers_drain_leaves_the_inline_figures_to_their_loop(self):
        # getitem and collate timed inline (num_workers=0) wait in one
        # process-wide total for the loop that timed them: a scrape of
        # another Stats (a second watch() in the process) must not take them.
        from gpuwatch_hook import _stages

        _stages.inline.take()
        a, b = _timing.Stats(), _timing.Stats()
        _stages.inline.add(0.004, 0.001)
        b.render()
        a.record(0.001, object(), None, None, 0.0)  # the loop's first batch drains
        a.close_settings()  # the window its batch opened: no next() here closes it
        self.assertEqual((a.stage_n["getitem"], b.stage_n["getitem"]), (1, 0))
        self.assertAlmostEqual(a.stage_sum["getitem"], 0.004)

    def test_the_page_says_the_hooks_cpu(self):
        with hook.watch(range(4 * _cost.LOOP_EVERY), port=0, quiet=True) as w:
            for _ in w:
                pass
            metrics(w)  # a request: the server's thread counts
            m = metrics(w)
        total = m.get("gpuwatch_hook_cpu_seconds_total")
        self.assertIsNotNone(total)
        parts = {p: m.get('gpuwatch_hook_part_cpu_seconds_total{part="%s"}' % p) for p in _cost.PARTS}
        self.assertEqual([p for p, v in parts.items() if v is None], [])
        self.assertAlmostEqual(sum(parts.values()), total, delta=1e-6)
        self.assertGreater(parts["server"], 0)
        self.assertGreater(parts["loop"], 0)


if __name__ == "__main__":
    unittest.main()
