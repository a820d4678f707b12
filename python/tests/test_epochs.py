"""Epochs over a new DataLoader each time, or the same one again
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


@unittest.skipIf(DataLoader is None, "needs torch")
class NewLoaderEpochsTest(unittest.TestCase):
    def epochs(self, loaders):
        st = _timing.Stats()
        for dl in loaders:
            st.epoch(dl, iter(dl))
        page = st.render().decode()
        return st.new_loader_epochs, [l for l in page.splitlines() if l.startswith("gpuwatch_loader_new_loader_epochs_total ")]

    def test_a_new_loader_every_epoch_is_counted_every_epoch(self):
        made = [DataLoader(list(range(8)), batch_size=4) for _ in range(3)]
        self.assertEqual(self.epochs(made), (3, ["gpuwatch_loader_new_loader_epochs_total 3"]))

    def test_one_loader_again_is_new_once(self):
        dl = DataLoader(list(range(8)), batch_size=4)
        self.assertEqual(self.epochs([dl, dl, dl]), (1, ["gpuwatch_loader_new_loader_epochs_total 1"]))

    def test_a_train_and_a_val_loader_kept_are_new_once_each(self):
        train, val = DataLoader(list(range(8)), batch_size=4), DataLoader(list(range(4)), batch_size=4)
        self.assertEqual(self.epochs([train, val, train, val])[0], 2)

    def test_a_loader_that_cannot_be_told_apart_says_nothing(self):
        class Slotted:  # no __weakref__: a WeakSet cannot hold it
            __slots__ = ("batch_size",)

            def __init__(self):
                self.batch_size = 4

            def __iter__(self):
                return iter(())

        n, lines = self.epochs([Slotted(), Slotted()])
        self.assertIsNone(n)
        self.assertEqual(lines, [])


if __name__ == "__main__":
    unittest.main()
