"""Epochs over a DataLoader built anew each time, or the same one again
(gpuwatch_hook/_timing.py): persistent_workers keeps workers across one
DataLoader's epochs only, so advice must know which the script does:
python3 -m unittest discover -s python/tests"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpuwatch_hook import _timing  # noqa: E402

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
        # each evaluation. The first eval is not a rebuild (the training
        # loader lives); the later ones are: rebuilt stays under epochs − 1.
        st, train = _timing.Stats(), loader()
        st.epoch(train, iter(train))
        for _ in range(3):
            ev = loader(4)
            st.epoch(ev, iter(ev))
            del ev
        self.assertEqual(self.counted(st)[0], 2)
        self.assertEqual(st.epochs, 4)

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


if __name__ == "__main__":
    unittest.main()
