"""_gpuprofile against what a real job's profile holds (a hostile
review's findings, each a test): GPU user annotations, a launch-bound
step's many gaps, a loop that leaves with a break while it records,
the job's own torch.profiler, autograd's own thread, custom ops."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rundir  # noqa: E402  (python/tests: one runtime folder, removed at exit)
import gpuwatch_hook as hook  # noqa: E402
from gpuwatch_hook import _gpuprofile  # noqa: E402

from test_stages import metrics  # noqa: E402,F401  (sets the runtime folder)

rundir.runtime_dir()

try:
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
except ImportError:
    torch = None

E = _gpuprofile.Event


class FakeKinetoEvent:
    """What torch 2.x's _KinetoEvent gives (the methods events_of calls,
    plus is_user_annotation, torch >= 2.5)."""

    def __init__(self, name, start_us, dur_us, tid, cuda, dtypes=(), corr=0, linked=0, user_annotation=False):
        self._n, self._s, self._d, self._t, self._cuda = name, start_us, dur_us, tid, cuda
        self._dtypes, self._corr, self._linked, self._ua = list(dtypes), corr, linked, user_annotation

    def name(self):
        return self._n

    def device_type(self):
        return "DeviceType.CUDA" if self._cuda else "DeviceType.CPU"

    def start_ns(self):
        return int(self._s * 1000)

    def duration_ns(self):
        return int(self._d * 1000)

    def start_us(self):
        return self._s

    def duration_us(self):
        return self._d

    def start_thread_id(self):
        return self._t

    def dtypes(self):
        return self._dtypes

    def stack(self):
        return []

    def correlation_id(self):
        return self._corr

    def linked_correlation_id(self):
        return self._linked

    def is_user_annotation(self):
        return self._ua

    def scope(self):  # c10::RecordScope: USER_SCOPE (7) for a record_function
        return 7 if self._n.startswith("Optimizer.") else 0


class FakeKinetoEventOld(FakeKinetoEvent):
    """torch < 2.5: no is_user_annotation."""

    is_user_annotation = property(lambda self: (_ for _ in ()).throw(AttributeError("is_user_annotation")))


class FakeProf:
    def __init__(self, evs):
        res = type("R", (), {"events": lambda self_: evs})()
        self.profiler = type("P", (), {"kineto_results": res})()


class GpuUserAnnotationTest(unittest.TestCase):
    def test_a_gpu_user_annotation_is_not_device_work(self):
        # torch 2.x (Kineto) projects every record_function that launched
        # kernels onto the GPU's timeline as a gpu_user_annotation, a
        # device event (DeviceType.CUDA) spanning its first kernel's start
        # to its last kernel's end: DDP wraps every forward in
        # "DistributedDataParallel.forward", torch.optim every step in
        # "Optimizer.step#AdamW.step", torch.compile its graphs. It is no
        # kernel: here 3 kernels of 10 µs with 20 µs launch gaps between.
        name = "Optimizer.step#AdamW.step"
        kevs = [
            FakeKinetoEvent(name, 0, 100, 1, False),  # the host's record_function
            FakeKinetoEvent("aten::_foreach_add_", 1, 5, 1, False, ("TensorList",), corr=11),
            FakeKinetoEvent("aten::_foreach_mul_", 31, 5, 1, False, ("TensorList",), corr=12),
            FakeKinetoEvent("aten::_foreach_div_", 61, 5, 1, False, ("TensorList",), corr=13),
            FakeKinetoEvent("multi_tensor_apply_kernel<add>", 10, 10, 7, True, linked=11),  # 10..20
            FakeKinetoEvent("multi_tensor_apply_kernel<mul>", 40, 10, 7, True, linked=12),  # 40..50
            FakeKinetoEvent("multi_tensor_apply_kernel<div>", 70, 10, 7, True, linked=13),  # 70..80
            FakeKinetoEvent(name, 10, 70, 7, True, user_annotation=True),  # gpu_user_annotation 10..80
        ]
        self.check(kevs)
        # torch 1.13 to 2.4: no is_user_annotation; the same.
        self.check([FakeKinetoEventOld(e._n, e._s, e._d, e._t, e._cuda, e._dtypes, e._corr, e._linked, e._ua) for e in kevs])

    def check(self, kevs):
        s = _gpuprofile.summarize(_gpuprofile.events_of(FakeProf(kevs)), 1, True)
        self.assertAlmostEqual(s.busy, 30e-6)  # the kernels' union; got 70 µs (the annotation's span)
        self.assertAlmostEqual(s.idle, (10 + 20 + 20 + 20) * 1e-6)  # got 30 µs: the launch gaps hidden
        self.assertAlmostEqual(sum(s.parts.values()), 30e-6)  # got 100 µs: "other" +70 µs counted twice


class LargeProfileTest(unittest.TestCase):
    @staticmethod
    def launch_bound(n):
        """n steps' worth of one op, one launch and one 3 µs kernel each,
        an 11 µs gap after every kernel (a launch-bound job)."""
        evs, t = [], 0.0
        for i in range(n):
            evs.append(E("aten::add", t, 8, 1, False, ("float",), ("train.py(%d): step" % (i % 50),), i + 1))
            evs.append(E("cudaLaunchKernel", t + 2, 4, 4242, False))
            evs.append(E("vectorized_elementwise_kernel<add>", t + 6, 3, 9, True, corr=i + 1))
            t += 20.0
        return evs

    def test_the_summary_is_not_quadratic_in_the_gaps(self):
        # The summary runs on the loop's thread, inside next(): 50 steps of
        # a model with 2,000 kernels a step is 100,000 gaps. Each gap's site
        # scanned the loop thread's top-level ops from the start (twice): 4×
        # the events took 16× the time (8,000 kernels: 1.2 s here; 100,000:
        # minutes with the training loop stopped). Counted, not timed: the
        # top-level ops are walked a few times in all, not once a gap
        # (bench_hook.py times the summary).
        walks = [0]

        class Counted(list):
            def __iter__(self):
                walks[0] += 1
                return super().__iter__()

        orig = _gpuprofile._top_level
        _gpuprofile._top_level = lambda evs: Counted(orig(evs))
        try:
            s = _gpuprofile.summarize(self.launch_bound(2000), 5, True)
        finally:
            _gpuprofile._top_level = orig
        self.assertGreater(s.idle, 0)
        self.assertLess(walks[0], 20, "the top-level ops walked %d times for 2,000 gaps" % walks[0])


def watched_loop(step):
    """A watched DataLoader's loop, a GPU profile of 5 steps asked for:
    step(n) runs after each batch's backward, and the loop leaves with a
    break where it returns True. The watcher, closed."""
    ds = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    w = hook.watch(DataLoader(ds, batch_size=4), port=0, quiet=True)
    watched_loop.current = w  # for a step's other threads
    net = nn.Linear(8, 1)
    try:
        w._stats.ask_gpu_profile(5)
        for n, (x, y) in enumerate(w, 1):
            nn.functional.mse_loss(net(x), y).backward()
            if step(n):
                break
    finally:
        w.close()
    return w


@unittest.skipIf(torch is None, "needs torch")
class LeftWithABreakTest(unittest.TestCase):
    def test_close_ends_a_recording_the_loop_left_with_a_break(self):
        # close() ends the syncs' and settings' windows because "a loop
        # that left with a break in it takes no next batch"; a GPU
        # recording under way is left on: torch.profiler keeps recording
        # (shapes, stacks, every kernel) through whatever the job does
        # next, until the process ends, and nothing is ever published.
        w = watched_loop(lambda n: n == _gpuprofile.BEFORE + 3)  # left inside the window: 2 of 5 steps recorded
        try:
            on = torch.autograd._profiler_enabled()
            state = w._stats.gpu_profile.state
        finally:
            p = w._stats.gpu_profile._prof
            if p is not None:  # leave the test process clean
                p.stop()
        self.assertFalse(on, "torch.profiler still on after close()")
        self.assertNotEqual(state, _gpuprofile.RECORDING)


@unittest.skipIf(torch is None, "needs torch")
class TheJobsOwnProfilerTest(unittest.TestCase):
    """torch allows one profiler a thread: a second start raises
    "Profiler is already enabled on this thread" in the caller."""

    def loop(self, step):
        return watched_loop(step)._stats.gpu_profile

    def test_the_jobs_profiler_started_while_gpuwatch_records_runs(self):
        # A job that profiles a step of its own (torch.profiler.profile as
        # a context manager) inside gpuwatch's window got a RuntimeError
        # from torch: its training died of gpuwatch's recording.
        seen = []

        def step(n):
            if n == _gpuprofile.BEFORE + 3:  # inside the window
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
                    torch.mm(torch.randn(4, 4), torch.randn(4, 4))
                seen.append(len(p.events()))

        gp = self.loop(step)
        self.assertTrue(seen and seen[0] > 0, "the job's profile recorded nothing")
        self.assertEqual(gp.state, _gpuprofile.REFUSED)
        self.assertIn("gave way", gp.reason)
        self.assertFalse(torch.autograd._profiler_enabled())
        for mod_name, name in _gpuprofile._PROFILER_STARTS:
            mod = sys.modules.get(mod_name)
            f = getattr(mod, name, None)
            if f is not None:
                self.assertNotEqual(getattr(f, "__name__", ""), "wrapper", "%s.%s left patched" % (mod_name, name))

    def other_thread(self, start_at, join_at):
        """A loop whose step start_at starts a thread that profiles a step
        of its own, joined at step join_at: what that thread saw of
        gpuwatch's recording once its profiler had started, how many
        events its profile holds, and gpuwatch's recording."""
        import threading

        seen = []

        def other():
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
                seen.append(watched_loop.current._stats.gpu_profile.state)
                torch.mm(torch.randn(4, 4), torch.randn(4, 4))
            seen.append(len(p.events()))

        t = threading.Thread(target=other)

        def step(n):
            if n == start_at:
                t.start()
            if n == join_at:
                t.join()

        gp = self.loop(step)
        self.assertEqual(len(seen), 2, "the job's thread did not finish")
        self.assertGreater(seen[1], 0, "the job's profile recorded nothing")
        self.assertEqual(gp.state, _gpuprofile.REFUSED)
        self.assertIn("on another thread", gp.reason)
        self.assertFalse(torch.autograd._profiler_enabled(), "gpuwatch's recording left on")
        return seen[0], gp

    def test_the_jobs_profiler_on_another_thread_starts_after_gpuwatchs_ended(self):
        # Kineto keeps one trace a process: a start on another thread
        # cancelled gpuwatch's trace, and gpuwatch's stop then ended the
        # job's (on a GPU: their kernels gone). gpuwatch's recording can
        # only be stopped on its own thread: the job's start waits for the
        # loop's next batch, where it ends.
        state, gp = self.other_thread(_gpuprofile.BEFORE + 3, _gpuprofile.BEFORE + 5)
        self.assertEqual(state, _gpuprofile.REFUSED, "the job's profiler ran beside gpuwatch's")
        self.assertNotIn("waited", gp.reason)

    def test_a_loop_joining_the_profiling_thread_is_not_frozen(self):
        # The loop waits on that very thread: no next batch comes, so the
        # job's start waits GIVE_WAY_WAIT and goes first.
        state, gp = self.other_thread(_gpuprofile.BEFORE + 3, _gpuprofile.BEFORE + 3)
        self.assertEqual(state, _gpuprofile.RECORDING)
        self.assertIn("then went first", gp.reason)

    def test_gpuwatch_does_not_start_while_a_profiler_records_on_any_thread(self):
        # torch 2.x sets torch.autograd.profiler._is_profiler_enabled while
        # any thread's profiler records (Debian's 1.13 has no such flag:
        # set here as 2.x sets it).
        prof = torch.autograd.profiler
        had = hasattr(prof, "_is_profiler_enabled")
        old = getattr(prof, "_is_profiler_enabled", None)
        prof._is_profiler_enabled = True
        try:
            gp = self.loop(lambda n: None)
        finally:
            if had:
                prof._is_profiler_enabled = old
            else:
                del prof._is_profiler_enabled
        self.assertEqual(gp.state, _gpuprofile.REFUSED)
        self.assertIn("own torch.profiler is recording", gp.reason)

    def test_gpuwatch_does_not_start_while_the_jobs_profiler_records(self):
        p = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        p.start()
        try:
            gp = self.loop(lambda n: None)
        finally:
            p.stop()  # the job's own stops as it began: no RuntimeError
        self.assertEqual(gp.state, _gpuprofile.REFUSED)
        self.assertIn("own torch.profiler is recording", gp.reason)
        self.assertGreater(len(p.events()), 0)

    def test_a_recording_left_alone_still_sums_and_puts_torch_back(self):
        gp = self.loop(lambda n: None)
        self.assertEqual(gp.state, _gpuprofile.DONE, gp.reason)
        self.assertIs(torch.autograd.profiler._enable_profiler, torch.autograd._enable_profiler)


class LoopThreadTest(unittest.TestCase):
    def test_the_loop_thread_on_a_gpu_is_not_autograds(self):
        # On a GPU, autograd runs the backward on its device thread
        # (pt_autograd_0), whose top-level ops span about twice the
        # forward's: _loop_thread (the thread whose top-level events span
        # most) picks it, and every idle gap is put on a backward op (no
        # job file:line) or "(start)", never on the job's call. The loop's
        # thread is the one that takes the batches (enumerate(DataLoader)#…).
        evs = [
            E("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 5, 1, False),
            E("aten::relu", 10, 20, 1, False, ("float",), ("train.py(50): step",)),
            E("Optimizer.step#SGD.step", 90, 5, 1, False),
            E("autograd::engine::evaluate_function: AddmmBackward0", 31, 58, 2, False),
            E("aten::mm", 32, 50, 2, False, ("float", "float")),
            E("vectorized_elementwise_kernel<relu>", 2, 10, 9, True),  # 2..12, then idle 12..40
            E("ampere_sgemm_128x64_tn", 40, 55, 9, True),  # 40..95
        ]
        s = _gpuprofile.summarize(evs, 1, True)
        self.assertEqual(s.idle_sites[0][0], "aten::relu train.py:50")  # got "(start)"


class MarkedLoopThreadTest(unittest.TestCase):
    """The loop's thread by the hook's own mark (a record_function once a
    step while it records), whatever the iterable: a generator has no
    enumerate(DataLoader)# event, and a DataLoader read by a prefetch
    thread has them on that thread."""

    def events(self, *extra):
        return [
            E(_gpuprofile.MARK, 1, 0.5, 1, False),
            E("aten::relu", 10, 20, 1, False, ("float",), ("train.py(50): step",)),
            E("Optimizer.step#SGD.step", 90, 5, 1, False),
            E("autograd::engine::evaluate_function: AddmmBackward0", 31, 58, 2, False),
            E("aten::mm", 32, 50, 2, False, ("float", "float")),
            E("vectorized_elementwise_kernel<relu>", 2, 10, 9, True),  # idle 12..40
            E("ampere_sgemm_128x64_tn", 40, 55, 9, True),
        ] + list(extra)

    def test_a_generator(self):
        s = _gpuprofile.summarize(self.events(), 1, True)
        self.assertEqual(s.idle_sites[0][0], "aten::relu train.py:50")

    def test_a_dataloader_read_by_a_prefetch_thread(self):
        pulls = [E("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, 3, 3, False) for t in (0, 20, 40, 60)]
        s = _gpuprofile.summarize(self.events(*pulls), 1, True)
        self.assertEqual(s.idle_sites[0][0], "aten::relu train.py:50")
        self.assertNotIn(("other", ""), s.parts)  # the mark is no work


@unittest.skipIf(torch is None, "needs torch")
class MarkedRecordingTest(unittest.TestCase):
    def test_the_mark_is_recorded_and_left_out_of_the_parts(self):
        # A real recording on the CPU: a thread pulls batches from a
        # DataLoader into a queue, and the loop, on the main thread, takes
        # them from a generator and runs the model. The hook's mark is in
        # the recording once at its start and once a step, and the step's
        # parts are the model's (its matmul).
        # (torch 1.13 records the main thread only: there the prefetch
        # thread is not seen at all; MarkedLoopThreadTest has both.)
        import queue
        import threading

        ds = TensorDataset(torch.randn(256, 64), torch.randint(0, 4, (256,)))
        q = queue.Queue(4)

        def pull():
            for b in DataLoader(ds, batch_size=8):
                q.put(b)
            q.put(None)

        def batches():
            while True:
                b = q.get()
                if b is None:
                    return
                yield b

        threading.Thread(target=pull, daemon=True).start()
        net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
        w = hook.watch(batches(), port=0, quiet=True)
        stats = w._clock.stats  # a generator's watch: a WatchedIterator
        marks = []
        summarize = _gpuprofile.summarize

        def spy(evs, steps, cuda):
            marks.append(sum(1 for e in evs if e.name == _gpuprofile.MARK))
            return summarize(evs, steps, cuda)

        _gpuprofile.summarize = spy
        try:
            ok, _ = stats.ask_gpu_profile(3)
            self.assertTrue(ok)
            for n, (x, y) in enumerate(w, 1):
                nn.functional.cross_entropy(net(x), y).backward()
                if n >= 12:
                    break
            g = stats.gpu_profile
            state, summary = g.state, g.summary
        finally:
            _gpuprofile.summarize = summarize
            w.close()
        self.assertEqual(state, _gpuprofile.DONE)
        self.assertEqual(marks, [1 + 3])
        self.assertIn(("matmul", "fp32"), summary.parts, summary.parts)


class CustomOpTest(unittest.TestCase):
    def test_a_custom_ops_reduced_inputs_give_its_kernel_precision(self):
        # The op map keeps only "aten::" ops, to leave out the runtime's
        # calls (cudaLaunchKernel) whose ids are CUPTI's; but those carry no
        # dtypes, which the map already asks for. A bf16 GEMM launched by
        # a custom op (torch.library: mylib::, fbgemm::, bitsandbytes::,
        # vllm's _C::) is read from its name alone: nvjet_tst as tf32.
        tst = "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT"
        evs = [
            E("mylib::fused_linear", 0, 10, 1, False, ("c10::BFloat16", "c10::BFloat16"), (), 7),
            E("cudaLaunchKernel", 2, 3, 4242, False, (), (), 7),  # a CUPTI id equal to the op's: no dtypes
            E(tst, 5, 10, 9, True, corr=7),
        ]
        s = _gpuprofile.summarize(evs, 1, True)
        self.assertIn(("matmul", "bf16"), s.parts)  # got ("matmul", "tf32")
