"""Epochs over a DataLoader built anew each time, or the same one again
(gpuwatch_hook/_timing.py): persistent_workers keeps workers across one
DataLoader's epochs only, so advice must know which the script does:
python3 -m unittest discover -s python/tests"""

import functools
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpuwatch_hook import _env, _timing  # noqa: E402

try:
    import torch  # noqa: F401
    from torch.utils.data import DataLoader
except ImportError:
    DataLoader = None


def loader(n=8):
    return DataLoader(list(range(n)), batch_size=4)


@unittest.skipIf(DataLoader is None, "needs torch")
class RebuiltEpochsTest(unittest.TestCase):
    def counted(self, st):
        page = st.render().decode()
        return st.rebuilt_epochs, [l for l in page.splitlines() if l.startswith("gpuwatch_loader_rebuilt_epochs_total ")]

    def test_a_new_loader_every_epoch_is_counted_from_the_second(self):
        st = _timing.Stats()
        for _ in range(3):
            dl = loader()  # the last epoch's is dropped here, as `dl = make_loader()` drops it
            st.epoch(dl, iter(dl))
        self.assertEqual(self.counted(st), (2, ["gpuwatch_loader_rebuilt_epochs_total 2"]))

    def test_one_loader_again_is_never_rebuilt(self):
        st, dl = _timing.Stats(), loader()
        for _ in range(3):
            st.epoch(dl, iter(dl))
        self.assertEqual(self.counted(st), (0, ["gpuwatch_loader_rebuilt_epochs_total 0"]))

    def test_a_train_and_a_val_loader_kept_are_never_rebuilt(self):
        st, train, val = _timing.Stats(), loader(), loader(4)
        for dl in (train, val, train, val):
            st.epoch(dl, iter(dl))
        self.assertEqual(self.counted(st)[0], 0)

    def test_a_fresh_eval_loader_beside_the_training_one_is_not_every_epoch(self):
        # The Trainer pattern: one training loader, a new eval loader for
        # each evaluation. The eval loaders are not the one timed
        # (timed_loader): no epoch of theirs, no rebuild.
        st, train = _timing.Stats(), loader()
        st.epoch(train, iter(train))
        for _ in range(3):
            ev = loader(4)
            self.assertFalse(st.epoch(ev, iter(ev)))
            del ev
        self.assertEqual(self.counted(st)[0], 0)
        self.assertEqual(st.epochs, 1)


    def test_a_loader_that_cannot_be_told_apart_says_nothing(self):
        class Slotted:  # no __weakref__: a WeakSet cannot hold it
            __slots__ = ("batch_size",)

            def __init__(self):
                self.batch_size = 4

            def __iter__(self):
                return iter(())

        st = _timing.Stats()
        for _ in range(2):
            s = Slotted()
            st.epoch(s, iter(s))
        self.assertEqual(self.counted(st), (None, []))


@unittest.skipIf(DataLoader is None, "needs torch")
class IterableEpochLengthTest(unittest.TestCase):
    """A DataLoader with no len() (an IterableDataset): its epoch's length
    is what its dataset's last epoch run to its end held, each dataset its
    own (a review: a validation loader's 5 batches were reported for the
    training loader's 1,000, and gpuwatch read its workers as restarting
    every few batches)."""

    def setUp(self):
        self.stats = []

    def tearDown(self):
        # A loop that leaves an epoch early, or a Stats dropped mid-epoch,
        # leaves its sync window open (_syncs): closed here, as a watched
        # loader's exit closes it.
        for st in self.stats:
            if st.sync_window is not None:
                st.end_syncs()

    def new_stats(self):
        st = _timing.Stats()
        self.stats.append(st)
        return st

    def stream(self, n):
        class Stream(torch.utils.data.IterableDataset):
            def __iter__(self):
                return iter(torch.arange(n, dtype=torch.float32))

        return Stream()

    def epoch(self, st, dl, inside=None):
        """One epoch of dl, timed as gpuwatch run times it; inside: another
        loader's whole epoch run after its second batch (validation
        inside an epoch). The length reported at its last batch."""
        it = iter(dl)
        timed = _timing.Timed(it, st) if st.epoch(dl, it) else it
        for i, _ in enumerate(timed):
            if inside is not None and i == 1:
                self.epoch(st, inside)
            at_last = st.batches_per_epoch
        return at_last

    def test_a_training_and_a_validation_stream_each_have_their_own(self):
        st, train, val = self.new_stats(), DataLoader(self.stream(40), batch_size=4), DataLoader(self.stream(8), batch_size=4)
        got = [(self.epoch(st, train), self.epoch(st, val)) for _ in range(3)]
        self.assertEqual(got, [(None, None), (10, 2), (10, 2)])

    def test_a_loader_built_anew_each_epoch_keeps_its_datasets(self):
        st, data = self.new_stats(), self.stream(40)
        got = [self.epoch(st, DataLoader(data, batch_size=4)) for _ in range(3)]
        self.assertEqual(got, [None, 10, 10])

    def test_the_loop_resumed_after_validation_inside_its_epoch_is_unknown(self):
        st, train, val = self.new_stats(), DataLoader(self.stream(40), batch_size=4), DataLoader(self.stream(8), batch_size=4)
        self.epoch(st, train)
        self.epoch(st, val)
        # Its own epoch starts at 10; the validation's inside says 2 while
        # it runs; the training loop's next batch is not the validation's.
        self.assertIsNone(self.epoch(st, train, inside=val))
        self.assertEqual(st.ran_out_of(train.dataset), 10)

    def test_an_epoch_left_early_says_nothing(self):
        st, train = self.new_stats(), DataLoader(self.stream(40), batch_size=4)
        it = iter(train)
        st.epoch(train, it)
        for i, _ in enumerate(_timing.Timed(it, st)):
            if i == 3:
                break
        self.assertIsNone(st.ran_out_of(train.dataset))


@unittest.skipIf(DataLoader is None, "needs torch")
class BetweenEpochsTest(unittest.TestCase):
    """The loop's time between the timed loader's epochs (validation, a
    checkpoint), from an epoch's end to the next one's iter(): each epoch
    pays it whatever the loader's knobs, so a prediction must count it (a
    review: 3 s epochs with 5 s of validation after each were promised
    1.8× from persistent workers, ≈ 1.2× at most). Read on the hook's own
    clock, set here."""

    def setUp(self):
        self.now = 100.0
        orig = _env.clock
        _env.clock = lambda: self.now
        self.addCleanup(setattr, _env, "clock", orig)

    def epoch(self, st, dl, leave_after=None):
        """One epoch of dl as gpuwatch run times it, each batch 10 ms;
        leave_after: the loop breaks out after that many batches."""
        started = _env.clock()
        it = iter(dl)
        timed = _timing.Timed(it, st, started) if st.epoch(dl, it, started) else it
        for i, _ in enumerate(timed):
            self.now += 0.01
            if leave_after is not None and i + 1 == leave_after:
                break

    def page(self, st):
        got = {}
        for line in st.render().decode().splitlines():
            name, _, v = line.partition(" ")
            if name.startswith("gpuwatch_loader_between_epochs_seconds") or name == "gpuwatch_loader_epoch_gaps_total":
                got[name] = float(v)
        self.under_way = got.get("gpuwatch_loader_between_epochs_seconds")
        return got.get("gpuwatch_loader_between_epochs_seconds_total"), got.get("gpuwatch_loader_epoch_gaps_total")

    def test_validation_after_each_epoch_is_summed(self):
        st, train, val = _timing.Stats(), loader(16), loader(8)
        for _ in range(3):
            self.epoch(st, train)
            self.epoch(st, val)  # not the loader timed: inside the gap, 20 ms
            self.now += 2.5
        # Three epochs, two gaps summed; the third, after the last epoch,
        # is under way.
        s, n = self.page(st)
        self.assertAlmostEqual(s, 2 * 2.52, places=6)
        self.assertEqual(n, 2)
        self.assertAlmostEqual(self.under_way, 2.52, places=6)
        self.epoch(st, train)  # it ends: summed, and none under way
        s, n = self.page(st)
        self.assertAlmostEqual(s, 3 * 2.52, places=6)
        self.assertEqual((n, self.under_way), (3, 0.0))

    def test_the_clock_stops_at_the_next_epochs_iter(self):
        # A read inside the next epoch's iter() (its workers starting)
        # sees the gap end where iter() began, as the sum will: the clock
        # of the two never steps back, and the start-up is the epoch's
        # stall. Another loader's iter() inside the gap stops nothing.
        st, train, val = _timing.Stats(), loader(16), loader(8)
        self.epoch(st, train)
        self.now += 1.0
        st.iter_starting(self.now)  # the validation loader's
        self.now += 0.5
        self.assertEqual(self.page(st), (0.0, 0.0))
        self.assertAlmostEqual(self.under_way, 1.0)
        it = iter(val)
        self.assertFalse(st.epoch(val, it, self.now - 0.5))
        self.page(st)
        self.assertAlmostEqual(self.under_way, 1.5)  # runs on
        self.now += 1.0
        started = self.now
        st.iter_starting(started)  # the training loader's, its workers starting for 3 s
        self.now += 3.0
        self.page(st)
        self.assertAlmostEqual(self.under_way, 2.5)
        it = iter(train)
        self.assertTrue(st.epoch(train, it, started))
        s, n = self.page(st)
        self.assertAlmostEqual(s, 2.5)
        self.assertEqual((n, self.under_way), (1, 0.0))

    def test_epochs_back_to_back_have_none(self):
        st, train = _timing.Stats(), loader(16)
        for _ in range(3):
            self.epoch(st, train)
        self.assertEqual(self.page(st), (0.0, 2))

    def test_a_loader_built_anew_each_epoch_measures_no_gap(self):
        # Its training loader gone while the validation loader runs, the
        # validation loader is the one timed: the gaps between the two
        # are no time between the job's epochs, and none is counted.
        st, val = _timing.Stats(), loader(8)
        for _ in range(3):
            self.epoch(st, loader(16))
            self.epoch(st, val)
            self.now += 2.5
        self.assertEqual(self.page(st), (0.0, 0))

    def test_an_epoch_left_early_is_no_gap(self):
        # max_steps reached inside the epoch: no end was seen, so the time
        # to the next epoch is not known to be outside one.
        st, train = _timing.Stats(), loader(16)
        self.epoch(st, train, leave_after=2)
        self.now += 3.0
        self.epoch(st, train)
        self.assertEqual(self.page(st), (0.0, 0))


@unittest.skipIf(DataLoader is None, "needs torch")
class TimedLoaderTest(unittest.TestCase):
    """A job of a training and a validation loader: the training one is
    timed, its knobs read; the validation one's batches, waits and
    knobs are not the training loop's (a review: summed, they read
    25 % more samples/s than the job's, and the knobs flipped between
    the two every second)."""

    def test_the_validation_loader_is_not_timed(self):
        st = _timing.Stats()
        train = DataLoader(list(range(64)), batch_size=4, num_workers=0)
        val = DataLoader(list(range(8)), batch_size=8, num_workers=0)
        for dl, want in ((train, True), (val, False), (train, True), (val, False)):
            self.assertEqual(st.epoch(dl, iter(dl)), want)
        self.assertEqual((st.batches_per_epoch, st.epochs), (16, 2))

    def test_a_sanity_check_first_gives_way_to_the_training_loader(self):
        st = _timing.Stats()
        train, val = DataLoader(list(range(64)), batch_size=4), DataLoader(list(range(8)), batch_size=8)
        self.assertTrue(st.epoch(val, iter(val)))  # Lightning's sanity check: val first
        self.assertTrue(st.epoch(train, iter(train)))
        self.assertFalse(st.epoch(val, iter(val)))
        self.assertEqual(st.batches_per_epoch, 16)

    def test_an_iterable_stream_is_the_training_loader(self):
        class Stream(torch.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(32))

        st = _timing.Stats()
        train, val = DataLoader(Stream(), batch_size=4), DataLoader(list(range(800)), batch_size=4)
        self.assertTrue(st.epoch(train, iter(train)))
        self.assertFalse(st.epoch(val, iter(val)))

    def test_a_loader_no_longer_timed_keeps_nothing_on_its_iterator(self):
        # Persistent workers hand back one iterator every epoch: what was
        # attached while the loader was timed goes when it is not.
        st = _timing.Stats()
        val, train = DataLoader(list(range(8)), batch_size=8), DataLoader(list(range(64)), batch_size=4)
        it = iter(val)
        self.assertTrue(st.epoch(val, it))
        _timing.attach(it, "_gpuwatch", object())
        _timing.attach(it, "_gpuwatch_stats", st)
        self.assertTrue(st.epoch(train, iter(train)))
        self.assertFalse(st.epoch(val, it))
        self.assertNotIn("_gpuwatch", vars(it))
        self.assertNotIn("_gpuwatch_stats", vars(it))

    def test_a_training_loader_made_in_the_for_statement_stays_timed(self):
        # `for b in DataLoader(...)`: the loader is gone at once, its
        # iterator runs the epoch; a validation loader asked mid-epoch is
        # not timed.
        import gc

        st = _timing.Stats()
        train = DataLoader(list(range(64)), batch_size=4)
        it = iter(train)
        self.assertTrue(st.epoch(train, it))
        del train
        gc.collect()
        val = DataLoader(list(range(8)), batch_size=8)
        self.assertFalse(st.epoch(val, iter(val)))
        del it
        gc.collect()
        nxt = DataLoader(list(range(64)), batch_size=4)  # the next epoch's
        self.assertTrue(st.epoch(nxt, iter(nxt)))

    def test_loaders_of_one_length_take_turns(self):
        # Equals cannot be told apart: the newest is timed, as a loader
        # built anew each epoch must be.
        st = _timing.Stats()
        a, b = loader(), loader()
        self.assertTrue(st.epoch(a, iter(a)))
        self.assertTrue(st.epoch(b, iter(b)))



if DataLoader is not None:
    from torch.utils.data import IterableDataset, get_worker_info

    class Split(IterableDataset):
        """Splits its range by worker, as torch's documentation shows."""

        def __iter__(self):
            info = get_worker_info()
            n = 1 if info is None else info.num_workers
            k = 0 if info is None else info.id
            return iter(range(k, 8, n))

    class Whole(IterableDataset):
        """Yields everything in every worker."""

        def __iter__(self):
            yield from range(8)

    class Shuffled(IterableDataset):
        """Reads only its worker's seed, to shuffle: every worker yields all."""

        def __iter__(self):
            info = get_worker_info()
            g = torch.Generator().manual_seed(0 if info is None else info.seed % 2**32)
            return iter(torch.randperm(8, generator=g).tolist())

    class SplitInside(IterableDataset):
        """Asks torch.utils.data.get_worker_info in a generator it defines."""

        def __iter__(self):
            def gen():
                info = torch.utils.data.get_worker_info()
                yield from range(0 if info is None else info.id, 8, 1 if info is None else info.num_workers)

            return gen()


@unittest.skipIf(DataLoader is None, "needs torch")
class SplitsByWorkerTest(unittest.TestCase):
    """Whether an IterableDataset splits its data by worker, read from its
    code, so that gpuwatch does not caution a dataset that already does
    (diagnose's iterableWorkersLine)."""

    def said(self, dl):
        st = _timing.Stats()
        st.epoch(dl, iter(dl))
        return [l for l in st.render().decode().splitlines() if l.startswith("gpuwatch_loader_iterable_splits_by_worker ")]

    def test_each_kind(self):
        self.assertEqual(self.said(DataLoader(Split(), batch_size=4)), ["gpuwatch_loader_iterable_splits_by_worker 1"])
        self.assertEqual(self.said(DataLoader(SplitInside(), batch_size=4)), ["gpuwatch_loader_iterable_splits_by_worker 1"])
        self.assertEqual(self.said(DataLoader(Whole(), batch_size=4)), ["gpuwatch_loader_iterable_splits_by_worker 0"])
        self.assertEqual(self.said(loader()), [], "a map-style dataset says nothing")

    def test_a_worker_init_fn_that_splits(self):
        def init(_, total=8):
            info = get_worker_info()
            per = total // info.num_workers
            info.dataset.start = info.id * per

        class Init:
            def __call__(self, _):
                init(_)
                info = get_worker_info()
                info.dataset.step = info.num_workers

        for fn in (init, functools.partial(init, total=8), Init()):
            self.assertEqual(self.said(DataLoader(Whole(), batch_size=4, num_workers=0, worker_init_fn=fn)), ["gpuwatch_loader_iterable_splits_by_worker 1"], fn)

    def test_a_seed_alone_is_no_split(self):
        # get_worker_info for the worker's seed only: each worker still
        # yields every sample (a review: this was read as a split).
        def seed(_):
            torch.manual_seed(get_worker_info().seed % 2**32)

        self.assertEqual(self.said(DataLoader(Shuffled(), batch_size=4)), ["gpuwatch_loader_iterable_splits_by_worker 0"])
        self.assertEqual(self.said(DataLoader(Whole(), batch_size=4, num_workers=0, worker_init_fn=seed)), ["gpuwatch_loader_iterable_splits_by_worker 0"])

    def test_the_splitting_dataset_really_splits(self):
        # The two kinds as two workers run them: what the gauge tells apart.
        got = sorted(int(x) for b in DataLoader(Split(), batch_size=2, num_workers=2) for x in b)
        self.assertEqual(got, list(range(8)))
        got = sorted(int(x) for b in DataLoader(Whole(), batch_size=2, num_workers=2) for x in b)
        self.assertEqual(got, sorted(list(range(8)) * 2))

if __name__ == "__main__":
    unittest.main()


if DataLoader is not None:

    class FadeIn(IterableDataset):
        """Split by worker; each worker's stream starts with the same
        blank frames."""

        def __iter__(self):
            info = get_worker_info()
            k = 0 if info is None else info.id
            return iter([0] * 4 + [100 * (k + 1) + i for i in range(4)])

    class Constant(IterableDataset):
        """The same sample over and over: its batches tell nothing."""

        def __iter__(self):
            return iter([7] * 8)


@unittest.skipIf(DataLoader is None, "needs torch")
class RepeatsTest(unittest.TestCase):
    """Whether an IterableDataset's workers yield the same data, measured
    on the batches the loop takes (_repeats): two workers' first batches
    the same bytes, their second too, and the first worker's second not its first (a user's review: an
    unsplit dataset at num_workers=2 trained on every sample twice, and
    gpuwatch said nothing)."""

    def measured(self, ds, workers=2):
        st = _timing.Stats()
        dl = DataLoader(ds, batch_size=4, num_workers=workers)
        it = iter(dl)
        st.epoch(dl, it)
        for b in it:
            st.watch_repeats(b)  # as record() does, without its windows (which patch torch)
        return [l for l in st.render().decode().splitlines() if l.startswith("gpuwatch_loader_iterable_repeats ")]

    def test_each_kind(self):
        self.assertEqual(self.measured(Whole()), ["gpuwatch_loader_iterable_repeats 1"])
        # Split, yet the workers' first batches alike (videos that fade in
        # from black, a review): their second batches differ.
        self.assertEqual(self.measured(FadeIn()), ["gpuwatch_loader_iterable_repeats 0"])
        self.assertEqual(self.measured(Split()), ["gpuwatch_loader_iterable_repeats 0"])
        self.assertEqual(self.measured(Constant()), [], "all batches alike: not judged")
        self.assertEqual(self.measured(Whole(), workers=0), [], "no workers: nothing to repeat")
        self.assertEqual(self.measured(list(range(8))), [], "a map-style dataset: its sampler splits it")

    def test_digests(self):
        from gpuwatch_hook import _repeats

        x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
        self.assertEqual(_repeats.digest((x, torch.zeros(4))), _repeats.digest({"x": x.clone(), "y": torch.zeros(4)}))
        self.assertNotEqual(_repeats.digest((x, torch.zeros(4))), _repeats.digest((x, torch.ones(4))))  # every tensor counts

        class AttrDict(dict):
            __getattr__ = dict.__getitem__  # a dotted batch: its missing attributes raise KeyError

        self.assertEqual(_repeats.digest(AttrDict(x=x)), _repeats.digest({"x": x}))
        big = torch.arange(4096 * 512, dtype=torch.float32).reshape(4096, 512)
        self.assertEqual(_repeats.digest(big.t()), _repeats.digest(big.t().contiguous()))  # rows sliced first, then copied
        self.assertNotEqual(_repeats.digest(x), _repeats.digest(x.reshape(6, 4)))  # the shape counts
        self.assertEqual(_repeats.digest(x.t()), _repeats.digest(x.t().contiguous()))  # strided: its values
        self.assertIsNotNone(_repeats.digest(x.to(torch.bfloat16)))
        self.assertEqual(_repeats.digest(x.numpy()), _repeats.digest(x))
        for none in ("text", [], None, [[1, 2]], torch.zeros(4, dtype=torch.complex64).numpy().astype(object)):
            self.assertIsNone(_repeats.digest(none), none)
