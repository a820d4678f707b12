"""The stages inside a DataLoader's workers, carried to the training
process, and the look at the batch itself (gpuwatch_hook/_stages.py,
_payload.py): python3 -m unittest discover -s python/tests"""

import json
import os
import pickle
import subprocess
import sys
import time
import unittest
import urllib.request
from multiprocessing.reduction import ForkingPickler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rundir  # noqa: E402  (python/tests: one runtime folder, removed at exit)
import gpuwatch_hook as hook  # noqa: E402
from gpuwatch_hook import _payload, _stages  # noqa: E402

rundir.runtime_dir()

try:
    import torch
    from torch.utils.data import DataLoader, Dataset, IterableDataset
except ImportError:
    torch = None


def metrics(w):
    """The hook's metrics page of watcher w, read with its token (the
    server wants it on every request)."""
    out = {}
    req = urllib.request.Request(w.url + "/metrics", headers={"Authorization": "Bearer " + w.token})
    with urllib.request.urlopen(req, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
    return out


def stage(m, name):
    return m.get('gpuwatch_loader_stage_seconds_total{stage="%s"}' % name), m.get('gpuwatch_loader_stage_batches_total{stage="%s"}' % name)


if torch is not None:

    class Sleepy(Dataset):
        """Each sample sleeps GETITEM seconds and says how long it took."""

        GETITEM = 0.003

        def __len__(self):
            return 48

        def __getitem__(self, i):
            t = time.perf_counter()
            time.sleep(self.GETITEM)
            return torch.full((4,), float(i)), time.perf_counter() - t

    def sleepy_collate(samples):
        t = time.perf_counter()
        time.sleep(0.006)
        x = torch.stack([s[0] for s in samples])
        # Each batch says what its samples and its collate took, measured
        # inside (the truth the hook is checked against).
        return x, torch.tensor([sum(s[1] for s in samples), time.perf_counter() - t], dtype=torch.float64)

    class Counting(IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            n, k = (20, 0) if info is None else (20 // info.num_workers, info.id)
            for i in range(n):
                yield torch.tensor([k * 100 + i])

    class Failing(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 5:
                raise ValueError("sample 5 is broken")
            return i


@unittest.skipIf(torch is None, "needs torch (CI has Debian's python3-torch)")
class StagesTest(unittest.TestCase):
    def run_loader(self, loader):
        with hook.watch(loader, port=0, quiet=True) as w:
            batches = list(w)
            return batches, metrics(w)

    def test_worker_stage_shares_match_what_the_loop_measures(self):
        """num_workers=2: the hook's getitem and collate shares are within
        0.05 of the shares the dataset and collate_fn measure of
        themselves (sleeps: robust on a loaded machine)."""
        for workers in (2, 0):
            loader = DataLoader(Sleepy(), batch_size=4, num_workers=workers, collate_fn=sleepy_collate)
            batches, m = self.run_loader(loader)
            own = torch.stack([b[1] for b in batches]).sum(0)
            truth_getitem = float(own[0] / own.sum())
            g, gn = stage(m, "getitem")
            c, cn = stage(m, "collate")
            h, hn = stage(m, "handover")
            # Every batch inline; from workers, the batches up to each
            # worker's last carried one (CARRY_EVERY), at least its first.
            if workers:
                self.assertTrue(workers <= gn == cn <= 12, m)
            else:
                self.assertEqual((gn, cn), (12, 12), m)
            # The truth is getitem's share of getitem and collate: the
            # hand-over (pickling into shared memory, 4-5 ms a batch here)
            # is no part of it, and in the denominator took 0.09-0.115 off.
            self.assertAlmostEqual(g / (g + c), truth_getitem, delta=0.05)
            self.assertGreaterEqual(g, float(own[0]) * 0.9 * gn / 12)  # the hook's getitem holds the samples' own time
            if workers:
                self.assertTrue(workers <= hn <= gn, m)  # timed on the carried batches
                self.assertEqual(stage(m, "take")[1], hn)
                self.assertLess(h / hn, 0.05, "handing over a tiny batch cannot take 50 ms of CPU")
            else:
                self.assertIsNone(hn, "no hand-over without workers")
            self.assertEqual(stage(m, "step")[1], 12)
            self.assertEqual(stage(m, "first_batch")[1], 1)

    def test_the_loop_gets_the_batches_it_would_get_without_the_hook(self):
        def plain(workers):
            return list(DataLoader(list(range(10)), batch_size=3, num_workers=workers))

        for workers in (0, 2):
            want = plain(workers)
            got, m = self.run_loader(DataLoader(list(range(10)), batch_size=3, num_workers=workers))
            self.assertEqual([type(b) for b in got], [type(b) for b in want])
            self.assertTrue(all(torch.equal(a, b) for a, b in zip(got, want)))
            dicts, _ = self.run_loader(DataLoader([{"x": i, "s": "a"} for i in range(6)], batch_size=2, num_workers=workers))
            self.assertEqual([sorted(d) for d in dicts], [["s", "x"]] * 3)
            self.assertEqual(m["gpuwatch_hook_errors_total"], 0)

    def test_an_iterable_dataset_ends_as_it_would(self):
        got, m = self.run_loader(DataLoader(Counting(), batch_size=3, num_workers=2))
        self.assertEqual(sorted(int(x) for b in got for x in b), sorted([i for i in range(10)] + [100 + i for i in range(10)]))
        self.assertTrue(2 <= stage(m, "getitem")[1] <= len(got), m)  # each worker's first batch is carried

    def test_a_workers_error_reaches_the_loop(self):
        for workers in (0, 2):
            with hook.watch(DataLoader(Failing(), batch_size=2, num_workers=workers), port=0, quiet=True) as w:
                with self.assertRaisesRegex(ValueError, "sample 5 is broken"):
                    list(w)

    def test_an_unwatched_loader_gets_plain_batches(self):
        """Once patched, every DataLoader's workers carry their times; a
        loader nobody watches still gets its batches as they are."""
        self.run_loader(DataLoader(list(range(4)), batch_size=2, num_workers=1))
        got = list(DataLoader(list(range(4)), batch_size=2, num_workers=1))
        self.assertTrue(all(type(b) is torch.Tensor for b in got), [type(b) for b in got])


#: gpuwatch run's path at num_workers=0 with torch's default collate_fn,
#: in a fresh interpreter: _auto.install() (what run's sitecustomize
#: calls) before torch is imported, then a loader whose samples are views
#: (nothing to fetch) of 4 MiB each, so that collating (torch.stack's
#: copy, 32 MiB a batch) is nearly all of a batch. Prints run's stage figures, as its
#: metrics page serves them.
RUN_INLINE_DEFAULT_COLLATE = """
import json, sys, urllib.request
sys.path.insert(0, sys.argv[1])
from gpuwatch_hook import _auto
_auto.install()
import torch
from torch.utils.data import DataLoader, Dataset

class Views(Dataset):
    def __init__(self): self.x = torch.ones(32, 1024, 1024)
    def __len__(self): return 32
    def __getitem__(self, i): return self.x[i]

for _ in DataLoader(Views(), batch_size=8):
    pass
from gpuwatch_hook import _run
stats, srv = _run.server()
req = urllib.request.Request(srv.url + "/metrics", headers={"Authorization": "Bearer " + srv.token})
out = {}
for line in urllib.request.urlopen(req, timeout=5).read().decode().splitlines():
    if line.startswith("gpuwatch_loader_stage_"):
        k, v = line.rsplit(" ", 1)
        out[k] = float(v)
print(json.dumps(out))
srv.close()
"""


@unittest.skipIf(torch is None, "needs torch (CI has Debian's python3-torch)")
class RunInlineStagesTest(unittest.TestCase):
    def test_run_splits_the_default_collate_from_getitem_inline(self):
        """Under gpuwatch run, num_workers=0 and torch's own collate_fn:
        the single-process iterator's fetcher is timed, and torch.stack's
        time is collate, not getitem (torch 1.13's _MapDatasetFetcher
        calls self.collate_fn, the timed one)."""
        env = dict(os.environ)
        env.pop("GPUWATCH_RUN_DIR", None)
        package_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        p = subprocess.run([sys.executable, "-c", RUN_INLINE_DEFAULT_COLLATE, package_dir], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = json.loads(p.stdout.strip().splitlines()[-1])
        g, gn = stage(m, "getitem")
        c, cn = stage(m, "collate")
        self.assertEqual((gn, cn), (4, 4), m)  # every batch, inline
        self.assertIsNone(stage(m, "handover")[1], "no hand-over without workers")
        # 8 views against a 32 MiB stack a batch: collate is nearly all
        # (0.5: a preempted view leaves room; counted as getitem, collate
        # would read 0).
        self.assertGreater(c / (g + c), 0.5, m)


class CarriedTest(unittest.TestCase):
    def test_pickling_carries_the_figures_and_times_both_ends(self):
        c = _stages.Carried({"x": list(range(1000))}, 0.5, 0.25)
        back = pickle.loads(ForkingPickler.dumps(c))
        self.assertIs(type(back), _stages.Carried)
        self.assertEqual(back.data, c.data)
        self.assertEqual((back.getitem, back.collate), (0.5, 0.25))
        self.assertIsNotNone(back.handover)
        self.assertIsNotNone(back.take)
        self.assertGreaterEqual(back.handover, 0)
        self.assertIsNone(back.pin)

    def test_odd_figures_are_left_out(self):
        back = _stages._carry(_stages._REBUILD, "not a time", [1], (float("nan"), -1.0, "x", -3))
        self.assertEqual(back.data, [1])
        self.assertEqual((back.getitem, back.collate, back.handover, back.take, back.batches), (None, None, None, None, 1))

    def test_a_worker_carries_one_batch_per_interval_with_the_sums_since(self):
        """Between carried batches a worker's getitem and collate add up,
        and the next carried batch brings the sums and their count: every
        batch counts, and the channel's cost is paid once an interval."""

        class Fetcher:
            def __init__(self):
                self.collate_fn = lambda b: b

            def fetch(self, index):
                time.sleep(0.001)
                return self.collate_fn(list(index))

        f = _stages.wrap_fetcher(Fetcher(), True)
        got = [f.fetch([i]) for i in range(40)]  # ≥ 40 ms of fetching
        carried = [b for b in got if type(b) is _stages.Carried]
        self.assertIs(type(got[0]), _stages.Carried)  # the first batch is carried
        self.assertLess(len(carried), len(got) / 2, "a batch carried every ~1 ms: CARRY_EVERY is not applied")
        self.assertGreaterEqual(len(carried), 2)
        self.assertEqual(sum(c.batches for c in carried) + (len(got) - len(got[: got.index(carried[-1]) + 1])), len(got))
        back = pickle.loads(ForkingPickler.dumps(carried[1]))
        self.assertEqual(back.batches, carried[1].batches)
        self.assertGreaterEqual(back.getitem, 0.001 * back.batches * 0.9)  # the sum over its batches
        stats = hook._timing.Stats()
        stats.record_carried(back)
        self.assertEqual((stats.stage_n["getitem"], stats.stage_n["handover"]), (back.batches, 1))

    @unittest.skipIf(torch is None, "needs torch")
    def test_torchs_pin_memory_calls_into_it(self):
        from torch.utils.data._utils.pin_memory import pin_memory

        c = _stages.Carried(["no tensors", ("a", "b")], 0.0, 0.0)
        out = pin_memory(c)
        self.assertIs(out, c)
        self.assertEqual(out.data, ["no tensors", ["a", "b"]])  # torch's own pinning of the inside
        self.assertIsNotNone(out.pin)


@unittest.skipIf(torch is None, "needs torch")
class PayloadTest(unittest.TestCase):
    def test_dtypes_shapes_bytes_and_float64(self):
        batch = (torch.zeros(8, 3, 4, 4, dtype=torch.float64), torch.zeros(8, dtype=torch.int64), "names")
        lk = _payload.look(batch)
        self.assertEqual([(t.path, t.dtype, t.shape, t.bytes, t.pinned) for t in lk.tensors],
                         [("[0]", "float64", (8, 3, 4, 4), 8 * 48 * 8, False), ("[1]", "int64", (8,), 64, False)])
        self.assertEqual(lk.bytes, 8 * 48 * 8 + 64)
        self.assertEqual(lk.float64_bytes, 8 * 48 * 8)
        self.assertEqual(lk.pinned_bytes, 0)
        self.assertEqual((lk.token_slots, lk.padding_slots), (0, 0))  # no 2-D integer tensor
        f32 = _payload.look({"img": torch.zeros(2, 2)})
        self.assertEqual((f32.float64_bytes, f32.tensors[0].path), (0, "['img']"))

    def test_numpy_arrays_count_too(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("no numpy")
        lk = _payload.look([np.zeros((4, 5))])
        self.assertEqual((lk.bytes, lk.float64_bytes, lk.tensors[0].pinned), (160, 160, None))

    def test_padding_that_ends_the_rows(self):
        ids = torch.tensor([[5, 6, 7, 0, 0, 0], [5, 6, 7, 8, 9, 0], [1, 2, 3, 4, 5, 6], [4, 0, 0, 0, 0, 0]])
        lk = _payload.look((ids, torch.zeros(4)))
        self.assertEqual((lk.token_slots, lk.padding_slots), (24, 3 + 1 + 0 + 5))

    def test_an_attention_mask_says_the_padding(self):
        mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
        lk = _payload.look({"input_ids": torch.tensor([[3, 4, 1, 1], [3, 4, 5, 6]]), "attention_mask": mask})
        self.assertEqual((lk.token_slots, lk.padding_slots), (8, 2))

    def test_one_end_token_per_row_is_not_padding(self):
        ids = torch.tensor([[5, 6, 2], [7, 8, 2]])
        lk = _payload.look([ids])
        self.assertEqual((lk.token_slots, lk.padding_slots), (6, 0))

    def test_a_look_is_bounded(self):
        lk = _payload.look([[torch.zeros(1)] * 10] * 20)
        self.assertEqual(len(lk.tensors), _payload.MAX_TENSORS)
        self.assertIsNone(_payload.look([[[[[torch.zeros(1)]]]]]))  # deeper than MAX_DEPTH
        self.assertIsNone(_payload.look(["text", 3, None]))

    def test_looks_are_spaced_and_published(self):
        loader = DataLoader([(torch.zeros(3, dtype=torch.float64), torch.tensor([1, 2, 0, 0])) for _ in range(12)], batch_size=4)
        clock = hook._env.clock
        try:
            now = [0.0]
            hook._env.clock = lambda: now[0]
            with hook.watch(loader, port=0, quiet=True) as w:
                for _ in w:  # three batches at t=0: only the first is looked at
                    pass
                for _ in w:  # a new epoch: its first batch is
                    now[0] += 0.01
                m = metrics(w)
        finally:
            hook._env.clock = clock
        self.assertEqual(m["gpuwatch_loader_batches_looked_total"], 2)
        self.assertEqual(m["gpuwatch_loader_batch_bytes_total"], 2 * (4 * 3 * 8 + 4 * 4 * 8))
        self.assertEqual(m["gpuwatch_loader_batch_float64_bytes_total"], 2 * 4 * 3 * 8)
        self.assertEqual(m["gpuwatch_loader_batch_token_slots_total"], 2 * 16)
        self.assertEqual(m["gpuwatch_loader_batch_padding_slots_total"], 2 * 8)
        self.assertEqual(m['gpuwatch_loader_batch_tensor_bytes{index="0",path="[0]",dtype="float64",shape="4x3",pinned="0"}'], 96)


if __name__ == "__main__":
    unittest.main()
