"""The loop's copies of a batch to the GPU (gpuwatch_hook/_h2d.py): timed on
the batches looked at, counted once per tensor, with their bytes, pinned
and non_blocking shares. Here (no GPU, Debian's CPU-only torch) the copies
go to torch's "meta" device; the CUDA events are proved on a real GPU
(docs/diagnosis.md). python3 -m unittest discover -s python/tests"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gpuwatch_hook as hook  # noqa: E402
from gpuwatch_hook import _h2d  # noqa: E402

from test_stages import metrics  # noqa: E402  (sets the runtime folder)

try:
    import torch
    from torch.utils.data import DataLoader
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "needs torch (CI has Debian's python3-torch)")
class CopyTest(unittest.TestCase):
    def setUp(self):
        self.saved = (torch.Tensor.to, torch.Tensor.cuda, torch.backends.cuda.is_built, _h2d._installed, _h2d._tried, _h2d._GPU)
        torch.backends.cuda.is_built = lambda: True  # a CUDA build, as far as install can tell
        _h2d._installed, _h2d._tried, _h2d._GPU = False, False, "meta"

    def tearDown(self):
        torch.Tensor.to, torch.Tensor.cuda, torch.backends.cuda.is_built, _h2d._installed, _h2d._tried, _h2d._GPU = self.saved
        _h2d._watched = {}

    def test_copies_of_looked_at_batches_are_counted_once(self):
        data = [(torch.zeros(256), torch.tensor(i)) for i in range(48)]
        loader = DataLoader(data, batch_size=4)  # x: 4×256 float32, 4 KiB
        copies = 0
        with hook.watch(loader, port=0, quiet=True) as w:
            for x, y in w:
                same = x.to(torch.float32)  # no copy to a device: not counted, still watched
                self.assertIs(same, x)
                out = x.to("meta", non_blocking=True)
                self.assertEqual(out.device.type, "meta")
                x.to("meta")  # a second copy of the same tensor: counted once
                copies += 1
                time.sleep(0.03)  # 12 batches × 30 ms: a look every 0.25 s, the first batch's too
            m = metrics(w)
        n = m["gpuwatch_loader_h2d_batches_total"]
        self.assertTrue(2 <= n <= m["gpuwatch_loader_batches_looked_total"], m)
        self.assertEqual(m["gpuwatch_loader_h2d_copies_total"], n)  # x only: y was never copied
        self.assertEqual(m["gpuwatch_loader_h2d_bytes_total"], n * 4 * 256 * 4)
        self.assertEqual(m["gpuwatch_loader_h2d_non_blocking_bytes_total"], m["gpuwatch_loader_h2d_bytes_total"])
        self.assertEqual(m["gpuwatch_loader_h2d_pinned_bytes_total"], 0)
        self.assertGreater(m["gpuwatch_loader_h2d_host_seconds_total"], 0)
        self.assertEqual(m["gpuwatch_loader_h2d_device_seconds_total"], 0)  # no CUDA events off a GPU
        self.assertEqual(m["gpuwatch_hook_errors_total"], 0)

    def test_positional_non_blocking_and_unwatched_tensors(self):
        _h2d.install()
        self.assertTrue(_h2d._installed)
        self.assertTrue(_h2d._non_blocking(("cuda", torch.float16, True), {}, 1))
        self.assertTrue(_h2d._non_blocking((0, True), {}, 1))
        self.assertFalse(_h2d._non_blocking(("cuda",), {}, 1))
        self.assertFalse(_h2d._non_blocking(("cuda",), {"non_blocking": False}, 1))
        t = torch.ones(3)
        self.assertTrue(torch.equal(t.to(torch.float64), torch.ones(3, dtype=torch.float64)))  # the wrapper is transparent
        self.assertEqual(t.to("meta").device.type, "meta")

    def test_the_hook_keeps_no_batch_alive(self):
        import gc
        import weakref

        class S:
            copies = 0

            def h2d_copy(self, *a):
                S.copies += 1

            def error(self):
                raise AssertionError("no error expected")

        t = torch.ones(8)
        ref = weakref.ref(t)
        _h2d.watch([t], S())
        self.assertTrue(_h2d._installed, "the first watch installs")
        del t
        gc.collect()
        self.assertIsNone(ref(), "a watched tensor must not be kept alive")
        u = torch.ones(8)  # may reuse the address: not the watched tensor
        u.to("meta")
        self.assertEqual(S.copies, 0)


if __name__ == "__main__":
    unittest.main()
