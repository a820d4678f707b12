"""Host syncs on a real CUDA GPU (gpuwatch_hook/_syncs.py): calls on GPU
tensors count without GPUWATCH_SYNCS_CPU, at their lines, with the host's
wait; the window's cost on a GPU step. Skipped without CUDA. On an H200
(torch 2.11+cu130, a 2-layer 4096-wide MLP, batch 2048): item 1 a step
with the host waiting 5.8 ms there, repr 1, cpu 1, synchronize 0.5; the
step 8.214 ms plain, 8.259 ms in the window (+0.55 %, noise level), so
0.0006 % of samples/s for a window of 8 steps every 60 s.
python3 -m unittest discover -s python/tests -p test_syncs_cuda.py"""

import io
import contextlib
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpuwatch_hook import _syncs, _timing  # noqa: E402

try:
    import torch
    from torch import nn
except ImportError:
    torch = None

HERE = os.path.abspath(__file__)


def line_of(marker):
    with open(HERE, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if marker in line and "line_of(" not in line:
                return i
    raise AssertionError(marker)


@unittest.skipIf(torch is None or not torch.cuda.is_available(), "needs a CUDA GPU")
class CudaSyncsTest(unittest.TestCase):
    def test_gpu_syncs_counted_at_their_lines(self):
        self.assertFalse(_syncs.COUNT_CPU)
        dev = "cuda"
        model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=1e-4)
        x = torch.randn(2048, 4096, device=dev)

        def step(i):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            loss.item()  # CUDA-ITEM
            print(loss)  # CUDA-PRINT
            if i % 2 == 0:
                torch.cuda.synchronize()  # CUDA-SYNC
            x.sum().cpu()  # CUDA-CPU
            torch.ones(3).tolist()  # a CPU tensor: not counted

        def run(n, window):
            w = _syncs.Window.open() if window else None
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                for i in range(n):
                    step(i)
            torch.cuda.synchronize()
            dt = (time.perf_counter() - t0) / n
            if w is not None:
                w.steps = n
                _syncs.close_window(w)
            return dt, w

        run(5, False)
        plain, win = [], []
        w = None
        for _ in range(3):
            plain.append(run(20, False)[0])
            dt, w = run(20, True)
            win.append(dt)
        c = _syncs.Counts()
        c.add(w)
        top = {(s, call): (n, sec) for s, call, n, sec in c.top()}
        rel = os.path.relpath(HERE)
        sys.stderr.write("\ncuda syncs: %r\nstep %.3f ms plain, %.3f ms in the window (%+.2f %%); a window of %d steps every %.0f s: %.5f %% of samples/s\n"
                         % (top, min(plain) * 1e3, min(win) * 1e3, (min(win) / min(plain) - 1) * 100, _syncs.STEPS, _syncs.READ_EVERY,
                            max(0.0, min(win) - min(plain)) * _syncs.STEPS / _syncs.READ_EVERY * 100))
        self.assertEqual(top[("%s:%d" % (rel, line_of("# CUDA-ITEM")), "item")][0], 1)
        self.assertEqual(top[("%s:%d" % (rel, line_of("# CUDA-PRINT")), "repr")][0], 1)
        self.assertEqual(top[("%s:%d" % (rel, line_of("# CUDA-SYNC")), "synchronize")][0], 0.5)
        self.assertEqual(top[("%s:%d" % (rel, line_of("# CUDA-CPU")), "cpu")][0], 1)
        # The CPU tensor's tolist is not a sync; run()'s own
        # torch.cuda.synchronize() calls, inside the window, are (once a window).
        mine = {k for k in top if k[0].startswith(rel + ":")}
        step_lines = {line_of(m) for m in ("# CUDA-ITEM", "# CUDA-PRINT", "# CUDA-SYNC", "# CUDA-CPU")}
        self.assertEqual({int(s.rsplit(":", 1)[1]) for s, call in mine if call != "synchronize" or top[(s, call)][0] >= 0.5}, step_lines, top)
        self.assertNotIn("tolist", {call for _, call in top}, top)
        self.assertGreater(top[("%s:%d" % (rel, line_of("# CUDA-ITEM")), "item")][1], 1e-4)  # the host waited for the step's kernels
        self.assertEqual(_syncs.installed(), 0)


if __name__ == "__main__":
    unittest.main()
