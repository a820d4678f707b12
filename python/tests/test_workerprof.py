"""The DataLoader's workers profile themselves on request and the training
process merges their samples (gpuwatch_hook/_workerprof.py): python3 -m
unittest discover -s python/tests"""

import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpuwatch_hook import _profiler, _stages, _workerprof  # noqa: E402

try:
    import torch
    import torch.utils.data.dataloader as dataloader
    from torch.utils.data import DataLoader, Dataset
except ImportError:
    torch = None


if torch is not None:

    class Burning(Dataset):
        """CPU work in __getitem__, which only the workers run."""

        def __len__(self):
            return 1 << 30

        def __getitem__(self, i):
            x = 0
            for k in range(20000):
                x += k * i
            return torch.tensor([x], dtype=torch.float64)


class RunFolder:
    """GPUWATCH_RUN_DIR set to a new private folder, _workerprof's lookup
    of it reset; both put back on exit."""

    def __enter__(self):
        self.old = os.environ.get("GPUWATCH_RUN_DIR")
        self.dir = tempfile.mkdtemp(prefix="gpuwatch-run-test-")
        os.environ["GPUWATCH_RUN_DIR"] = self.dir
        _workerprof._dir = _workerprof._UNSET
        _workerprof._last_mtime[0] = None
        return self.dir

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop("GPUWATCH_RUN_DIR", None)
        else:
            os.environ["GPUWATCH_RUN_DIR"] = self.old
        _workerprof._dir = _workerprof._UNSET
        _workerprof._last_mtime[0] = None
        shutil.rmtree(self.dir, ignore_errors=True)


class PollTest(unittest.TestCase):
    def test_no_thread_until_a_request_then_one(self):
        """While nobody profiles, a worker's poll starts nothing, however
        often it looks; a request starts one sampler thread, once."""
        with RunFolder():
            before = threading.active_count()
            for _ in range(100):
                _workerprof.poll()
            self.assertEqual(threading.active_count(), before, "no request: no thread")
            _workerprof.request(0.3)  # this process's workers'
            for _ in range(100):
                _workerprof.poll()
            self.assertEqual(threading.active_count(), before, "a request for another process's workers: no thread")
            req = _workerprof.request(0.3, pid=os.getppid())  # this process's parent's: it stands in for a worker
            self.assertIsNotNone(req)
            for _ in range(100):
                _workerprof.poll()
            names = [t.name for t in threading.enumerate()]
            self.assertEqual(names.count("gpuwatch-worker-profiler"), 1, names)
            end = time.monotonic() + 0.25
            while time.monotonic() < end:  # the stand-in worker's work
                pass
            got = _workerprof.collect(req)
            self.assertTrue(got, "the worker's samples")
            self.assertTrue(all(s[2]["worker_pid"] == str(os.getpid()) for s in got), got[:1])
            self.assertEqual([n for n in os.listdir(req[2]) if n.startswith(("worker-", "joined-"))], [], "the worker's files are removed")
            _workerprof.poll()  # the worker's next look puts SIGPROF back
            self.assertIsNone(_workerprof._signalled[0])

    def test_a_worker_that_joined_is_waited_for(self):
        """A worker whose samples come a second after the end (its GIL
        held, the CPU busy with other users) is waited for: its samples are
        in the profile."""
        with RunFolder() as d:
            rid, end = "slow", time.time() + 0.1
            open(os.path.join(d, _workerprof.JOINED % (rid, os.getpid())), "w").close()

            def late():
                time.sleep(max(0.0, end + 1.0 - time.time()))
                _workerprof._write(rid, d, [([("f", "x.py", 1)], [1, 10000000], {"thread": "MainThread"})])

            t = threading.Thread(target=late)
            t.start()
            got = _workerprof.collect((rid, end, d))
            t.join()
            self.assertEqual(len(got), 1, got)
            self.assertEqual(got[0][2]["worker_pid"], str(os.getpid()))
            self.assertEqual(os.listdir(d), [], "the marker and the samples are removed")

    def test_a_worker_that_exited_is_not_waited_for(self):
        """A worker that joined and then ended (its epoch over) writes
        nothing more: the training process does not wait JOIN_WAIT for it."""
        with RunFolder() as d:
            child = subprocess.Popen([sys.executable, "-c", "pass"])
            child.wait()  # reaped: its pid names no process
            rid, end = "gone", time.time() + 0.1
            open(os.path.join(d, _workerprof.JOINED % (rid, child.pid)), "w").close()
            start = time.time()
            self.assertEqual(_workerprof.collect((rid, end, d)), [])
            self.assertLess(time.time() - start, _workerprof.JOIN_WAIT / 2, "waited for a worker that is gone")
            self.assertEqual(os.listdir(d), [], "its marker is removed")

    def test_without_a_run_folder_nothing_is_asked(self):
        with RunFolder():
            os.environ.pop("GPUWATCH_RUN_DIR")
            self.assertIsNone(_workerprof.request(1))
            self.assertEqual(_workerprof.collect(None), [])


@unittest.skipIf(torch is None, "needs torch (CI has Debian's python3-torch)")
class WorkerProfileTest(unittest.TestCase):
    def test_workers_samples_join_the_training_process_profile(self):
        """num_workers=2: a profile taken in the training process holds the
        workers' getitem (which only they run), labelled with their pids."""
        _stages.patch(dataloader)
        with RunFolder() as d:
            stop = threading.Event()
            pids = []

            def loop():
                it = iter(DataLoader(Burning(), batch_size=4, num_workers=2))
                pids.extend(p.pid for p in it._workers)
                for _ in it:
                    if stop.is_set():
                        break

            t = threading.Thread(target=loop)
            t.start()
            try:
                data = _profiler.take_profile(1.5, workers=True)
            finally:
                stop.set()
                t.join()
            raw = gzip.decompress(data)
            self.assertTrue(b"Burning.__getitem__" in raw, "no worker's getitem in the profile")
            self.assertTrue(b"worker_pid" in raw, "no worker's label in the profile")
            self.assertTrue(any(str(p).encode() in raw for p in pids), "none of the workers' pids %s in the profile" % pids)
            self.assertEqual([n for n in os.listdir(d) if n.startswith("worker-")], [], "workers' files are removed")


if __name__ == "__main__":
    unittest.main()
