"""The ceiling: kept batches replayed to the loop, the rate with its
input free, and the real stream resumed where it was
(gpuwatch_hook/_ceiling.py): python3 -m unittest discover -s python/tests"""

import os
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rundir  # noqa: E402  (python/tests: one runtime folder, removed at exit)
import gpuwatch_hook as hook  # noqa: E402
from gpuwatch_hook import _ceiling  # noqa: E402

rundir.runtime_dir()

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError:
    torch = None

if torch is not None:

    class Slow(Dataset):
        """A sample takes 3 ms to make: with 2 workers and a 2 ms step the
        loop waits for its input."""

        def __len__(self):
            return 600

        def __getitem__(self, i):
            time.sleep(0.003)
            return torch.full((4,), float(i)), i


def stream_is_whole(seen, kept_batches, batch):
    """Whether the indices the loop received are the real stream (every
    index once, in order) plus repeats of at most kept_batches batches:
    none lost, none of the real stream repeated."""
    first, repeats = [], []
    got = set()
    for i in seen:
        (repeats if i in got else first).append(i)
        got.add(i)
    return first == list(range(len(first))) and len(set(repeats)) <= kept_batches * batch


@unittest.skipIf(torch is None, "needs torch (CI has Debian's python3-torch)")
class CeilingTest(unittest.TestCase):
    def setUp(self):
        self.warm = _ceiling.WARM_SECONDS, _ceiling.WARM_BATCHES
        _ceiling.WARM_SECONDS, _ceiling.WARM_BATCHES = 0.5, 10

    def tearDown(self):
        _ceiling.WARM_SECONDS, _ceiling.WARM_BATCHES = self.warm

    def loop(self, w, seconds, step=0.002, past=None, then=20):
        """Trains for seconds; with past, until the ceiling's state is no
        longer one of past and then batches more, seconds only bounding it
        (a loaded box starts its workers slowly)."""
        seen, more = [], 0
        t = time.perf_counter()
        for x, idx in w:
            seen.extend(int(i) for i in idx)
            time.sleep(step)
            if past is not None and w._stats.ceiling.state not in past:
                more += 1
                if more > then:
                    break
            if time.perf_counter() - t > seconds:
                break
        return seen

    def test_the_ceiling_is_the_rate_with_input_free_and_the_stream_resumes(self):
        w = hook.watch(DataLoader(Slow(), batch_size=4, num_workers=2), port=0, quiet=True)
        try:
            ok, _ = w._stats.ask_ceiling(1.0)
            self.assertTrue(ok)
            seen = self.loop(w, 60, past=("warming", "keeping", "replaying"), then=40)
            c = w._stats.ceiling.figures()
        finally:
            w.close()
        self.assertEqual(c["state"], "done", c)
        self.assertAlmostEqual(c["measured_seconds"], 1.0, delta=0.1)
        # Input free, the loop's rate is its step's: 4 samples a ≥ 2 ms step.
        self.assertLessEqual(c["samples_per_second"], 4 / 0.002 * 1.05)
        self.assertGreater(c["samples_per_second"], 4 / c["step_seconds"] * 0.8)
        # Before, it waited on 2 workers making a batch in 12 ms each.
        self.assertLess(c["before_samples_per_second"], 2 * 4 / 0.012 * 1.2)
        self.assertGreater(c["samples_per_second"], 2 * c["before_samples_per_second"])
        self.assertTrue(stream_is_whole(seen, c["kept_batches"], 4), seen[:80])
        self.assertGreater(len(seen), len(set(seen)), "nothing was replayed")
        # Replayed batches are the ceiling's: the stream's figures count the real ones.
        m = w._stats
        self.assertEqual(m.batches, len(set(seen)) // 4)

    def test_a_batch_too_large_is_refused_and_the_loop_goes_on(self):
        w = hook.watch(DataLoader(Slow(), batch_size=4, num_workers=2), port=0, quiet=True)
        try:
            w._stats.ask_ceiling(1.0)
            w._stats.ceiling.limit = 100  # bytes: not two batches of 4 × (16 + 8)
            seen = self.loop(w, 60, past=("warming", "keeping"))  # and the loop goes on
            c = w._stats.ceiling.figures()
        finally:
            w.close()
        self.assertEqual(c["state"], "refused")
        self.assertIn("not two within the limit of 100 bytes", c["reason"])
        self.assertEqual(seen, list(range(len(seen))))
        self.assertNotIn("samples_per_second", {k for k, v in c.items() if v is not None})

    def test_asked_over_http_with_the_token_once_at_a_time(self):
        w = hook.watch(DataLoader(Slow(), batch_size=4, num_workers=0), port=0, quiet=True)
        try:
            def post(q, token=w.token):
                req = urllib.request.Request(w.url + "/ceiling" + q, data=b"", method="POST", headers={"Authorization": "Bearer " + token})
                try:
                    with urllib.request.urlopen(req, timeout=5) as r:
                        return r.status
                except urllib.error.HTTPError as e:
                    return e.code

            self.assertEqual(post("?seconds=1", token="x" * 32), 401)
            self.assertEqual(post("?seconds=nan"), 400)
            self.assertEqual(post("?seconds=100000"), 400)
            self.assertEqual(post("?seconds=-1"), 400)
            self.assertEqual(post("?seconds=0.5"), 202)
            self.assertEqual(post("?seconds=0.5"), 409)  # one at a time
            self.loop(w, 60, step=0.0, past=("warming", "keeping", "replaying"), then=0)
            self.assertEqual(w._stats.ceiling.state, "done")
            self.assertEqual(post("?seconds=0.5"), 202)  # done: another may start
        finally:
            w.close()

    def test_an_epoch_that_ends_while_keeping_replays_what_was_kept(self):
        w = hook.watch(DataLoader(list(range(64)), batch_size=4, num_workers=0), port=0, quiet=True)
        try:
            w._stats.ask_ceiling(0.3)
            _ceiling.WARM_SECONDS, _ceiling.WARM_BATCHES = 0.0, 10  # 16 batches an epoch: keeping starts at the 12th
            seen = []
            for _ in range(3):
                for b in w:
                    seen.extend(int(i) for i in b)
            c = w._stats.ceiling.figures()
        finally:
            w.close()
        self.assertEqual(c["state"], "done", c)
        self.assertGreaterEqual(c["kept_batches"], 2)
        # The real stream, three epochs of 0..63, is all there in order;
        # what else came is replays of the kept batches (the epoch's last).
        want, extra, j = list(range(64)) * 3, [], 0
        for i in seen:
            if j < len(want) and i == want[j]:
                j += 1
            else:
                extra.append(i)
        self.assertEqual(j, len(want), "a batch of the real stream was lost")
        self.assertTrue(extra, "nothing was replayed")
        self.assertLessEqual(set(extra), set(range(64 - 4 * c["kept_batches"], 64)))

    def test_not_asked_costs_one_attribute(self):
        w = hook.watch(DataLoader(list(range(8)), batch_size=4), port=0, quiet=True)
        try:
            self.assertEqual(len(list(w)), 2)
            self.assertIsNone(w._stats.ceiling)
            self.assertNotIn(b"ceiling", w._stats.render())
        finally:
            w.close()


class ParseTest(unittest.TestCase):
    def test_seconds_from_outside(self):
        for raw, want in (("30", 30.0), ("0.5", 0.5), ("0", None), ("-3", None), ("nan", None), ("inf", None), ("1e9", None), ("", None), ("x", None)):
            self.assertEqual(_ceiling.parse_seconds(raw), want, raw)


if __name__ == "__main__":
    unittest.main()
