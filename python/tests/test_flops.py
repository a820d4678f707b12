"""The model's FLOPs per step, counted once by the hook
(gpuwatch_hook/_settings.py count_flops): torch.utils.flop_counter where
torch has it (≥ 2.1), else the shapes of the forward's linears, convs,
matmuls and attentions (shape_counter, a TorchFunctionMode, torch ≥ 1.13).
Here on Debian's torch 1.13, which has no flop_counter: each figure is the
hand arithmetic written out in its test, ×3 for a training step (the
backward about twice the forward), ×1 for an evaluation's.
python3 -m unittest discover -s python/tests"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gpuwatch_hook as hook  # noqa: E402
from gpuwatch_hook import _payload, _settings  # noqa: E402

from test_settings import setting_info  # noqa: E402
from test_stages import metrics  # noqa: E402  (sets the runtime folder)

try:
    import torch
    from torch import nn
    from torch.utils.data import DataLoader
except ImportError:
    torch = None

try:
    import torch.utils.flop_counter  # noqa: F401

    shapes_only = False  # torch ≥ 2.1 counts with flop_counter
except ImportError:
    shapes_only = torch is not None and hasattr(torch.overrides, "TorchFunctionMode")


if torch is not None:

    def conv_net():
        torch.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))

    class Matmuls(nn.Module):
        """A forward of torch's matmuls called directly, no Linear."""

        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(6, 7))
            self.w2 = nn.Parameter(torch.randn(7, 3))
            self.b = nn.Parameter(torch.randn(3))

        def forward(self, x):  # x: 4×5×6
            h = x @ self.w  # 4×5×7
            y = torch.matmul(h, self.w2)  # 4×5×3
            z = torch.addmm(self.b, h.flatten(0, 1), self.w2)  # 20×3
            g = torch.bmm(h, h.transpose(1, 2))  # 4×5×5
            return y.sum() + z.sum() + g.sum()

    class Einsum(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x):
            h = self.fc(x)
            return torch.einsum("bij,bkj->bik", h, h)

    class Einsum3(nn.Module):
        """An einsum of three operands: contracted pairwise in an order
        the shapes counter does not follow."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x):
            h = self.fc(x)
            return torch.einsum("bij,bkj,bkl->bil", h, h, h)

    class HandWritten(nn.Module):
        """Weights as Parameters multiplied through a transpose, as many
        research codebases write an MLP: 256 → 512 → 10."""

        def __init__(self):
            super().__init__()
            self.w1 = nn.Parameter(torch.randn(512, 256) * 0.02)
            self.b1 = nn.Parameter(torch.zeros(512))
            self.w2 = nn.Parameter(torch.randn(10, 512) * 0.02)

        def forward(self, x):
            h = torch.relu(x @ self.w1.T + self.b1)
            return h @ self.w2.t()

    class Recurrent(nn.Module):
        """An RNN and a linear head: lstm.py's model, small."""

        def __init__(self, rnn):
            super().__init__()
            self.rnn = rnn(6, 8, batch_first=True)
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            o, _ = self.rnn(x)
            return self.head(o[:, -1])

    class Raises(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x):
            self.fc(x)
            raise KeyError("the job's own error")


# Conv2d(3, 8, 3, padding=1) on 4×3×16×16: 2·N·C_out·H·W·C_in·k²; then
# Linear(2048, 10) on 4×2048: 2·N·in·out.
CONV = 2 * 4 * 8 * 16 * 16 * 3 * 9  # 442,368
LINEAR = 2 * 4 * 2048 * 10  # 163,840


def always_call_taken():
    """Whether this torch's register_forward_hook takes always_call."""
    try:
        torch.nn.Linear(1, 1).register_forward_hook(lambda *a: None, always_call=True).remove()
        return True
    except TypeError:
        return False


def stack_depth():
    """The torch function modes in force (0: none of the hook's left)."""
    return torch._C._len_torch_function_stack()


@unittest.skipIf(torch is None, "needs torch (CI has Debian's python3-torch)")
class FLOPsTest(unittest.TestCase):
    def setUp(self):
        # A window another test left open (its Stats never closed, as
        # test_cost's are not) would take the count at the next forward.
        for h in list(torch.nn.modules.module._global_forward_pre_hooks.values()):
            if isinstance(getattr(h, "__self__", None), _settings.Window):
                h.__self__.close()
        self.done, self.void, self.trainable = _settings._flops_done, _settings._flops_void, _settings._flops_trainable
        _settings._flops_done = False  # once per process: each test counts anew
        _settings._flops_void, _settings._flops_trainable = "", None

    def tearDown(self):
        _settings._flops_done, _settings._flops_void, _settings._flops_trainable = self.done, self.void, self.trainable

    def count(self, model, x, train=True):
        """One window around one step of model on x, as the hook opens it
        at a batch and closes it at the next: (its reading, the output)."""
        model.train(train)
        w = _settings.Window.open()
        self.assertIsNotNone(w)
        try:
            if train:
                out = model(x)
                out.sum().backward()
            else:
                with torch.no_grad():
                    out = model(x)
        finally:
            s = w.close()
        self.assertEqual(len(torch.nn.modules.module._global_forward_pre_hooks), 0)
        self.assertEqual(stack_depth(), 0)
        self.assertIsNone(w.flops)
        for m in model.modules():
            self.assertEqual(len(m._forward_hooks), 0, m)
        return s, out

    def test_a_conv_net_training_step_through_the_metrics_page(self):
        """The gauge the hook serves, under watch() as a job runs it."""
        model = conv_net()
        m = self.run_steps(lambda x: model(x).sum().backward(), [torch.randn(3, 16, 16) for _ in range(24)], 4, batches=3)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * (CONV + LINEAR))  # 1,818,624

    def test_a_validation_before_training_does_not_stand_for_the_step(self):
        """A sanity check or validation first (Lightning's default): the
        first reading is an evaluation's forward, 1×; the training steps
        after it are read at the next batch and counted 3×."""
        model = conv_net()
        n = [0]

        def step(x):
            n[0] += 1
            if n[0] <= 2:
                model.eval()
                with torch.no_grad():
                    model(x)
                model.train()
                return
            model(x).sum().backward()

        m = self.run_steps(step, [torch.randn(3, 16, 16) for _ in range(24)], 4, batches=5)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * (CONV + LINEAR))
        self.assertIn('training="1"', [k for k in m if k.startswith("gpuwatch_job_setting_info{")][0])

    def run_steps(self, step, data, batch_size, batches=6):
        """step(x) over a watched loader's first batches: its metrics page."""
        loader = DataLoader(data, batch_size=batch_size)
        with hook.watch(loader, port=0, quiet=True) as w:
            for i, x in enumerate(w):
                if i >= batches:
                    break
                step(x)
            m = metrics(w)
        return m

    def test_batches_of_varying_shapes_say_the_count_is_one_steps(self):
        """A review: a transformer fed batches padded per batch (T from 8
        to 128) read its first batch's FLOPs as every step's, and an MFU
        from it 10× low. Where the batches looked at differ past their
        first dimension the setting says so; batches of one shape do not
        (a short last batch neither)."""
        model = nn.Linear(16, 4)

        def step(x):
            if isinstance(x, dict):  # a batch led by its texts (no sample count read)
                x = x["x"]
            model(x).sum().backward()

        m = self.run_steps(step, [torch.randn(16) for _ in range(44)], 8)
        self.assertIn("gpuwatch_job_flops_per_step", m)
        self.assertNotIn("flops_shapes", setting_info(m))
        for batches, vary in (
            ([torch.randn(8, 16)] * 3 + [torch.randn(8, 3, 16)] * 2 + [torch.randn(8, 5, 16)], True),
            ([torch.randn(8, 16)] * 5 + [torch.randn(3, 16)], False),  # a short last batch, looked at
            ([torch.randn(8, 16)] * 5 + [torch.randn(8, 3, 16)], False),  # one look off the rest
            ([{"text": ["a"] * 8, "x": torch.randn(8, n, 16)} for n in (1, 1, 2, 3, 4, 5)], True),
        ):
            _settings._flops_done = False
            with hook.watch(DataLoader(batches, batch_size=None), port=0, quiet=True) as w:
                for x in w:
                    step(x)
                    time.sleep(_payload.LOOK_EVERY)  # each batch looked at
                m = metrics(w)
            self.assertIn("gpuwatch_job_flops_per_step", m)
            self.assertEqual(setting_info(m).get("flops_shapes"), "vary" if vary else None, repr(batches[-1])[:80])

    def test_time_major_batches_count_their_samples_and_vary(self):
        """A collate by pad_sequence (batch_first=False by default) gives
        sequence length × batch: read by its first dimension, the samples
        were the lengths and the shapes never varied (elements per
        "sample" the batch's width). Where the loader's batch_size is the
        second dimension, that is the batch."""
        from torch.nn.utils.rnn import pad_sequence

        emb = nn.Embedding(50, 16)
        lin = nn.Linear(16, 4)
        seqs = [torch.randint(1, 50, (n,)) for n in range(3, 53)]  # batches 10, 18, …, 50 long, and a last of 2 samples
        _settings._flops_done = False
        with hook.watch(DataLoader(seqs, batch_size=8, collate_fn=pad_sequence), port=0, quiet=True) as w:
            for x in w:
                self.assertIn(x.shape[1], (8, 2))  # time-major
                lin(emb(x)).sum().backward()
                time.sleep(_payload.LOOK_EVERY)  # each batch looked at
            m = metrics(w)
        self.assertEqual(m["gpuwatch_loader_samples_total"], len(seqs))
        self.assertEqual(setting_info(m).get("flops_shapes"), "vary")
        # Its padding, read along each sample's sequence (the rows of a
        # time-major batch are time steps): every batch looked at, but
        # the last, whose one padded slot is an end mark to the hook.
        slots = pad = 0
        for i in range(0, len(seqs), 8):
            lens = [len(q) for q in seqs[i:i + 8]]
            slots += max(lens) * len(lens)
            if max(lens) - min(lens) >= 2:
                pad += sum(max(lens) - n for n in lens)
        self.assertEqual((m["gpuwatch_loader_batch_token_slots_total"], m["gpuwatch_loader_batch_padding_slots_total"]), (slots, pad))
        self.assertEqual(m.get("gpuwatch_job_batch_size"), 8)

    def test_a_batch_as_long_as_its_sequences_keeps_its_layout(self):
        """A batch-major loader whose sequences are batch_size long: its
        full batches (8, 8) say nothing of the layout, and its short last
        batch (3, 8) is not read as time-major (a review: once read so,
        every epoch's last batch counted 8)."""
        seqs = [torch.randint(1, 50, (8,)) for _ in range(19)]
        with hook.watch(DataLoader(seqs, batch_size=8), port=0, quiet=True) as w:
            for _ in range(2):
                for x in w:
                    pass
            m = metrics(w)
        self.assertEqual(m["gpuwatch_loader_samples_total"], 38)

    def test_a_checkpoints_recompute_in_the_backward_is_not_another_forward(self):
        """torch.utils.checkpoint runs a block's forward again in the
        backward: that is not a forward of the step to count 3× more."""
        from torch.utils.checkpoint import checkpoint

        class M(nn.Module):
            def __init__(s):
                super().__init__()
                s.c, s.a, s.b = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 4)

            def forward(s, x):
                return s.b(checkpoint(s.a, s.c(x)))

        model = M()
        m = self.run_steps(lambda x: model(x).sum().backward(), [torch.randn(16) for _ in range(48)], 8)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * (2 * 2 * 8 * 16 * 16 + 2 * 8 * 16 * 4))

    def test_a_whole_model_checkpointed_from_the_loop_is_one_training_forward(self):
        """torch.utils.checkpoint called on the whole model from the loop
        (reentrant): its first pass runs under no_grad and is the step's
        training forward, its recompute in the backward is not another
        (counted 1× then 3×, 4× the forward, before). Without reentrance
        the same count."""
        import warnings

        from torch.utils.checkpoint import checkpoint

        want = 3 * (2 * 8 * 16 * 16 + 2 * 8 * 16 * 4)
        for reentrant in (True, False):
            with self.subTest(reentrant=reentrant):
                _settings._flops_done = False  # once per process: each counts anew
                torch.manual_seed(0)
                model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 4))

                def step(x):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # torch ≥ 2.4 asks use_reentrant to be said
                        checkpoint(model, x.requires_grad_(), use_reentrant=reentrant).sum().backward()

                m = self.run_steps(step, [torch.randn(16) for _ in range(48)], 8)
                self.assertEqual(m["gpuwatch_job_flops_per_step"], want)
                self.assertEqual(setting_info(m)["training"], "1")

    def test_a_checkpoint_nested_or_deep_under_the_loops_is_not_counted_again(self):
        """The loop checkpoints the model, which checkpoints a block of its
        own (as Hugging Face's gradient checkpointing does): the outer
        recompute runs the inner checkpoint's forward, and is still the
        recompute (9× a Linear counted, 6× right, before). A model 20
        Sequentials deep under the checkpoint: its recompute too (counted
        again past 32 frames, before)."""
        import warnings

        from torch.utils.checkpoint import checkpoint

        lin = 2 * 8 * 16 * 16

        class Inner(nn.Module):
            def __init__(s):
                super().__init__()
                s.a, s.b = nn.Linear(16, 16), nn.Linear(16, 16)

            def forward(s, x):
                return s.b(checkpoint(s.a, x, use_reentrant=True))

        def deep(n):
            m = nn.Linear(16, 16)
            for _ in range(n):
                m = nn.Sequential(m)
            return m

        for name, model, want in (("nested", Inner(), 3 * 2 * lin), ("deep", deep(20), 3 * lin)):
            with self.subTest(name):
                _settings._flops_done = False

                def step(x, model=model):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        checkpoint(model, x.requires_grad_(), use_reentrant=True).sum().backward()

                m = self.run_steps(step, [torch.randn(16) for _ in range(48)], 8)
                self.assertEqual(m["gpuwatch_job_flops_per_step"], want)

    def test_checkpoint_sequential_from_the_loop_is_one_training_forward(self):
        """checkpoint_sequential over a Sequential from the loop: each
        checkpointed segment's modules run under no_grad as the step's
        training forward (counted 1× each before, 0.59× the step in all),
        their recompute is not counted, the last segment runs as it is."""
        import warnings

        from torch.utils.checkpoint import checkpoint_sequential

        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 4))

        def step(x):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                checkpoint_sequential(model, 2, x.requires_grad_()).sum().backward()

        m = self.run_steps(step, [torch.randn(16) for _ in range(48)], 8)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * (3 * 2 * 8 * 16 * 16 + 2 * 8 * 16 * 4))

    def test_a_teacher_after_a_validation_is_counted(self):
        """A validation batch first, then a frozen teacher under no_grad
        before the student's training step: the step is the teacher's
        forward and the student's 3×."""
        teacher = nn.Linear(32, 32).eval()
        for p in teacher.parameters():
            p.requires_grad_(False)
        student = nn.Linear(32, 10)
        n = [0]

        def step(x):
            n[0] += 1
            if n[0] == 1:
                student.eval()
                with torch.no_grad():
                    student(teacher(x))
                student.train()
                return
            with torch.no_grad():
                f = teacher(x)
            student(f).sum().backward()

        m = self.run_steps(step, [torch.randn(32) for _ in range(48)], 4)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 2 * 4 * 32 * 32 + 3 * 2 * 4 * 32 * 10)

    def test_modules_of_no_counted_op_leave_the_count_whole(self):
        """A loss with a parameter (multi-task weighting), an embedding
        looked up first: modules with parameters whose forward has no
        counted op add nothing and stop nothing."""

        class Weighted(nn.Module):
            def __init__(s):
                super().__init__()
                s.log_var = nn.Parameter(torch.zeros(2))

            def forward(s, a, b):
                return torch.exp(-s.log_var[0]) * a + s.log_var[0] + torch.exp(-s.log_var[1]) * b + s.log_var[1]

        model, crit = nn.Linear(16, 4), Weighted()

        def step(x):
            out = model(x)
            crit(out.pow(2).mean(), out.abs().mean()).backward()

        m = self.run_steps(step, [torch.randn(16) for _ in range(48)], 8)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * 2 * 8 * 16 * 4)
        _settings._flops_done = False
        emb, mlp = nn.Embedding(100, 16), nn.Linear(16, 4)

        def step2(x):
            with torch.no_grad():
                e = emb(x)
            mlp(e).sum().backward()

        m = self.run_steps(step2, [torch.tensor(i % 100) for i in range(48)], 8)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * 2 * 8 * 16 * 4)

    def test_a_forward_that_raised_is_read_again(self):
        """A first step whose forward raised and was caught (a batch
        skipped on an OOM): counted again at the next batch."""
        model = nn.Linear(16, 4)
        n = [0]

        def step(x):
            n[0] += 1
            if n[0] == 1:
                try:
                    model(torch.randn(8, 5))  # a shape error, as an OOM would raise
                except RuntimeError:
                    return
            model(x).sum().backward()

        m = self.run_steps(step, [torch.randn(16) for _ in range(48)], 8)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * 2 * 8 * 16 * 4)
        for mod in model.modules():
            self.assertEqual(len(mod._forward_hooks), 0)

    def test_a_forward_returning_none_is_not_one_that_raised(self):
        """A statistics or memory-bank module (a parameter, no output):
        its None is a whole forward; the count stands and the window is
        not opened again at every batch."""

        class Bank(nn.Module):
            def __init__(s):
                super().__init__()
                s.scale = nn.Parameter(torch.ones(1))
                s.register_buffer("mean", torch.zeros(4))

            def forward(s, z):
                s.mean.mul_(0.9).add_(0.1 * z.detach().mean(0))

        model, bank = nn.Linear(16, 4), Bank()
        opened = []
        orig = _settings.Window.open
        _settings.Window.open = staticmethod(lambda: opened.append(1) or orig())
        try:

            def step(x):
                z = model(x)
                bank(z)
                z.sum().backward()

            m = self.run_steps(step, [torch.randn(16) for _ in range(48)], 8)
        finally:
            _settings.Window.open = orig
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * 2 * 8 * 16 * 4)
        self.assertEqual(len(opened), 1)

    def test_a_parameter_returned_as_it_is_gets_no_hook(self):
        """A module returning its parameter (learned queries): the window
        adds no gradient hook to it, and leaves no window alive."""
        import gc
        import weakref

        class Queries(nn.Module):
            def __init__(s):
                super().__init__()
                s.q = nn.Parameter(torch.randn(8, 16))

            def forward(s):
                return s.q

        q, head = Queries(), nn.Linear(16, 4)
        wins = []
        for _ in range(5):
            w = _settings.Window.open()
            wins.append(weakref.ref(w))
            head(q()).sum().backward()
            w.close()
            del w
        gc.collect()
        self.assertFalse(q.q._backward_hooks)
        self.assertEqual(sum(r() is not None for r in wins), 0)

    def test_a_forward_that_raised_unhooked_is_not_counted_later(self):
        """Where torch calls no forward hook on a raise (no always_call):
        the next call of the same model, from outside its own call, ends
        the forward that raised, uncounted — it read the count of all it
        ran meanwhile (a validation), 262,000× high."""
        model = nn.Linear(16, 4)
        n, depth = [0], []

        def step(x):
            n[0] += 1
            if n[0] == 1:
                try:
                    model(torch.randn(8, 5))
                except RuntimeError:
                    pass
                with torch.no_grad():
                    for _ in range(50):
                        model(torch.randn(512, 16))
                depth.append(stack_depth())  # the counter left at the next call, not at the next batch
                return
            model(x).sum().backward()

        m = self.run_steps(step, [torch.randn(16) for _ in range(48)], 8)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * 2 * 8 * 16 * 4)
        self.assertEqual(stack_depth(), 0)
        if always_call_taken():
            return  # torch calls the forward hook on a raise: nothing left to end
        self.assertEqual(depth, [0])

    def test_a_recursive_model_is_one_forward(self):
        class Tree(nn.Module):
            def __init__(s):
                super().__init__()
                s.f = nn.Linear(16, 16)

            def forward(s, x, depth=2):
                x = s.f(x)
                if depth:
                    x = s(x, depth - 1)
                return s.f(x)

        model = Tree()
        m = self.run_steps(lambda x: model(x).sum().backward(), [torch.randn(16) for _ in range(48)], 8)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * 6 * 2 * 8 * 16 * 16)

    @staticmethod
    def frozen(*modules):
        for m in modules:
            for p in m.parameters():
                p.requires_grad_(False)

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_a_frozen_backbone_before_a_trained_head(self):
        """A review: a linear probe (a frozen conv backbone, a trained
        linear head) read 3× its whole forward, 2.7× the truth. The
        backbone's convs take no gradient, of their weight or their input:
        1×; the head's weight takes one: 3× (its input's gradient counted
        too, by the convention a trained layer keeps, the first of a
        trained model's as well). A frozen block under torch.no_grad in
        the forward of a trained model: 1× too."""
        model = conv_net()
        self.frozen(model[0])
        s, _ = self.count(model, torch.randn(4, 3, 16, 16))
        self.assertIs(s.training, True)
        # 442,368 + 3 · 163,840 = 933,888 (3 · (CONV + LINEAR) = 1,818,624 before)
        self.assertEqual(s.flops_per_step, CONV + 3 * LINEAR)

        class NoGradBackbone(nn.Module):
            def __init__(s):
                super().__init__()
                s.net = conv_net()

            def forward(s, x):
                with torch.no_grad():
                    h = s.net[2](s.net[1](s.net[0](x)))
                return s.net[3](h)

        _settings._flops_done = False
        s, _ = self.count(NoGradBackbone(), torch.randn(4, 3, 16, 16))
        self.assertEqual(s.flops_per_step, CONV + 3 * LINEAR)  # the conv trainable, but under no_grad

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_frozen_layers_after_trained_ones(self):
        """A trained backbone and a frozen head: the head's backward is its
        input's gradient alone, 2×; the conv 3×. Biases trained alone
        (BitFit): the first linear's backward computes nothing of its
        weight nor of its input (the batch), 1×; the second's, its input's
        (the first's output, which needs one for the bias), 2×."""
        model = conv_net()
        self.frozen(model[3])
        s, _ = self.count(model, torch.randn(4, 3, 16, 16))
        # 3 · 442,368 + 2 · 163,840 = 1,654,784 (1,818,624 before)
        self.assertEqual(s.flops_per_step, 3 * CONV + 2 * LINEAR)

        _settings._flops_done = False
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 4))
        for m in model:
            m.weight.requires_grad_(False)
        s, _ = self.count(model, torch.randn(8, 16))
        # 2·8·16·16 + 2 · 2·8·16·4 = 4,096 + 2,048 = 6,144 (9,216 before)
        self.assertEqual(s.flops_per_step, 2 * 8 * 16 * 16 + 2 * (2 * 8 * 16 * 4))

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_a_count_follows_the_weights_that_train(self):
        """A review: gradual unfreezing kept the count of the frozen model
        (7,168 FLOPs a step, against 15,360 once its first layer trained),
        counted once per process. Where the weights that train change, the
        next training step is counted again; where they do not, not."""
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
        self.frozen(model[0])
        x = torch.randn(8, 16)
        s, _ = self.count(model, x)
        self.assertEqual(s.flops_per_step, 2 * 8 * 16 * 16 + 3 * (2 * 8 * 16 * 4))  # 7,168
        s, _ = self.count(model, x)
        self.assertIsNone(s.flops_per_step)  # counted once: this window counts nothing
        for p in model[0].parameters():
            p.requires_grad_(True)
        s, _ = self.count(model, x)
        self.assertEqual(s.flops_per_step, 3 * (2 * 8 * 16 * 16 + 2 * 8 * 16 * 4))  # 15,360

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_two_modules_of_one_step_are_not_counted_again(self):
        """A review: dec(enc(x)), two top-level modules, was counted again in
        every window after the first, dec alone (3,072 of 15,360): the
        trained weights are compared on the module the count was read of."""
        torch.manual_seed(0)
        enc, dec = nn.Linear(16, 16), nn.Linear(16, 4)
        x = torch.randn(8, 16)
        for i in range(3):
            enc.train(), dec.train()
            w = _settings.Window.open()
            try:
                dec(enc(x)).sum().backward()
            finally:
                s = w.close()
            want = 3 * (2 * 8 * 16 * 16 + 2 * 8 * 16 * 4) if i == 0 else None  # 15,360, then counted once
            self.assertEqual(s.flops_per_step, want, i)

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_cross_attention_to_frozen_memory(self):
        """A review: a frozen MHA attending from a trained layer's output to
        memory that needs no gradient counted its key and value projections
        2×; they take none, 1×. L=8, S=32, N=2, E=16: the linear 8,192 3×;
        the query and output projections 2·16·256 = 8,192 each 2×, the key
        and value's 2·16·1,024 = 32,768 each 1×; the products 2·2·8·32·16 =
        16,384 each, Q·Kᵀ 2× (the query needs one), the weights·V 2×."""

        class X(nn.Module):
            def __init__(self):
                super().__init__()
                self.inp, self.att = nn.Linear(16, 16), nn.MultiheadAttention(16, 2)

            def forward(self, x, mem):
                return self.att(self.inp(x), mem, mem, need_weights=False)[0]

        torch.manual_seed(0)
        model = X()
        self.frozen(model.att)
        mem = torch.randn(32, 2, 16)
        model.train()
        w = _settings.Window.open()
        try:
            model(torch.randn(8, 2, 16), mem).sum().backward()
        finally:
            s = w.close()
        self.assertEqual(s.flops_per_step, 3 * 8192 + 2 * 8192 * 2 + 2 * 32768 + 2 * 16384 * 2)  # 188,416 (253,952 before)

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_a_frozen_attention_after_a_trained_layer(self):
        """A review: a frozen nn.MultiheadAttention after a trained linear
        counted 2× whole; its products multiply two activations that both
        need a gradient, 3×. L=8, N=2, E=16: the linear 2·16·16·16 = 8,192,
        3×; the projections 2·16·(2·256 + 256 + 256) = 32,768, 2×; the
        products 2·2·8·8·16 = 4,096 each, 3×."""

        class PT(nn.Module):
            def __init__(self):
                super().__init__()
                self.inp, self.att = nn.Linear(16, 16), nn.MultiheadAttention(16, 2)

            def forward(self, x):
                h = self.inp(x)
                return self.att(h, h, h, need_weights=False)[0]

        torch.manual_seed(0)
        model = PT()
        self.frozen(model.att)
        s, _ = self.count(model, torch.randn(8, 2, 16))
        self.assertEqual(s.flops_per_step, 3 * 8192 + 2 * 32768 + 3 * 2 * 4096)  # 114,688 (106,496 before)

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_a_partly_frozen_model_checkpointed_from_the_loop(self):
        """A reentrant checkpoint's first pass runs under no_grad, where no
        activation needs a gradient: a trained layer 3×, a frozen one after
        it 2× (its gradient goes back through it in the recompute's
        backward); a frozen first layer whose input, the checkpoint's,
        needs a gradient, 2× too."""
        import warnings

        from torch.utils.checkpoint import checkpoint

        lin1, lin2 = 2 * 8 * 16 * 16, 2 * 8 * 16 * 4  # 4,096, 1,024
        for frozen, want in ((1, 3 * lin1 + 2 * lin2), (0, 2 * lin1 + 3 * lin2)):  # 14,336; 11,264 (15,360 before)
            with self.subTest(frozen=frozen):
                _settings._flops_done = False
                torch.manual_seed(0)
                model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 4))
                self.frozen(model[frozen])

                def step(x, model=model):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        checkpoint(model, x.requires_grad_(), use_reentrant=True).sum().backward()

                m = self.run_steps(step, [torch.randn(16) for _ in range(48)], 8)
                self.assertEqual(m["gpuwatch_job_flops_per_step"], want)

    def test_flop_counter_mode_gives_no_count_for_a_partly_frozen_model(self):
        """torch ≥ 2.1's FlopCounterMode counts the forward, ×3 by the
        window for a training one: a model with a frozen weight and a
        trained one is not counted at all (its backward is not 2× its
        forward), and an evaluation's count read before it is not kept for
        the training steps. A stand-in for the mode: 1,000 FLOPs a
        forward. A trained model 3×, an evaluation 1×, a frozen embedding
        alone (a lookup) no matter: as before."""

        class Mode:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return None

            def get_total_flops(self):
                return 1000

        saved = _settings.flop_counter
        _settings.flop_counter = lambda *a, **k: Mode()
        try:
            model = conv_net()
            self.frozen(model[0])
            w = _settings.Window.open()
            model(torch.randn(4, 3, 16, 16)).sum().backward()
            s = w.close()
            self.assertIsNone(s.flops_per_step)  # 3,000 before
            self.assertEqual(w.flops_failed, _settings.FROZEN)
            self.assertIs(s.training, True)
            # Why, said to gpuwatch (a review: it read "neither counter gave one").
            self.assertEqual(s.flops_void, "frozen")
            self.assertIn(("flops_void", "frozen"), _settings.info_labels(s))
            s, _ = self.count(model, torch.randn(4, 3, 16, 16))
            self.assertIsNone(s.flops_per_step)  # the process counts no more
            self.assertEqual(s.flops_void, "frozen")

            for train, want in ((True, 3000), (False, 1000)):
                _settings._flops_done, _settings._flops_void = False, ""
                s, _ = self.count(conv_net(), torch.randn(4, 3, 16, 16), train=train)
                self.assertEqual(s.flops_per_step, want)
            _settings._flops_done = False
            emb, lin = nn.Embedding(10, 16), nn.Linear(16, 4)
            self.frozen(emb)
            s, _ = self.count(nn.Sequential(emb, lin), torch.arange(8))
            self.assertEqual(s.flops_per_step, 3000)

            _settings._flops_done = False
            model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 4))
            self.frozen(model[0])
            n = [0]

            def step(x):
                n[0] += 1
                if n[0] == 1:
                    model.eval()
                    with torch.no_grad():
                        model(x)
                    model.train()
                    return
                model(x).sum().backward()

            m = self.run_steps(step, [torch.randn(16) for _ in range(48)], 8)
            self.assertNotIn("gpuwatch_job_flops_per_step", m)  # the validation's 1,000 before the void
        finally:
            _settings.flop_counter = saved

    def test_an_evaluation_is_its_forward_once(self):
        s, _ = self.count(conv_net(), torch.randn(4, 3, 16, 16), train=False)
        self.assertIs(s.training, False)
        self.assertEqual(s.flops_per_step, CONV + LINEAR)  # 606,208

    def test_matmuls_called_directly_are_counted(self):
        s, _ = self.count(Matmuls(), torch.randn(4, 5, 6), train=False)
        want = (
            2 * 4 * 5 * 7 * 6  # x @ w: M = 4·5 rows, N = 7, K = 6
            + 2 * 4 * 5 * 3 * 7  # matmul(h, w2): M = 20, N = 3, K = 7
            + 2 * 20 * 3 * 7  # addmm(b, h, w2): the bias left out
            + 2 * 4 * 5 * 5 * 7  # bmm(h, hᵀ): batch 4, M = N = 5, K = 7
        )
        self.assertEqual(s.flops_per_step, want)  # 4,760

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_attention_is_counted_whole(self):
        """nn.MultiheadAttention's calls run inside
        F.multi_head_attention_forward, out of the mode's sight: counted
        from its arguments' shapes."""
        torch.manual_seed(0)

        class SelfAttention(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

            def forward(self, x):
                return self.mha(x, x, x)[0]

        s, _ = self.count(SelfAttention(), torch.randn(2, 5, 8))  # N = 2, L = S = 5, E = 8
        forward = (
            3 * 2 * (2 * 5) * 8 * 8  # q, k, v projections: 2·(N·L)·E·E each
            + 2 * (2 * 2 * 5 * 5 * 8)  # q·kᵀ and attention·v: 2·N·L·S·E each
            + 2 * (2 * 5) * 8 * 8  # the output projection
        )
        self.assertEqual(s.flops_per_step, 3 * forward)  # 20,160

    def test_scaled_dot_product_attention_is_its_two_products(self):
        """torch 2.0's F.scaled_dot_product_attention, one call to the mode:
        q·kᵀ and the weights·v, 2·N·H·L·S·E and 2·N·H·L·S·Ev (the shapes
        alone: torch 1.13 has no such call)."""
        q, k, v = torch.empty(2, 4, 5, 8), torch.empty(2, 4, 7, 8), torch.empty(2, 4, 7, 3)
        out = torch.empty(2, 4, 5, 3)
        want = 2 * 2 * 4 * 5 * 7 * 8 + 2 * 2 * 4 * 5 * 7 * 3
        self.assertEqual(_settings.call_flops(("sdpa", None), (q, k, v), out), want)  # 7,040

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_an_einsum_of_two_is_counted_and_of_three_says_why_not(self):
        """A review: a model with an einsum had no count and no reason
        (the count of its other calls had been void in silence). Two
        operands are counted as FlopCounterMode counts the bmm torch ≥ 2.1
        runs them as: the linear 3× (2·6·6 a row, 6 rows), the einsum's
        2·b·i·k·j = 216 3× (both operands need a gradient). Three: no count,
        and flops_void says einsum."""
        s, _ = self.count(Einsum(), torch.randn(2, 3, 6))
        self.assertEqual(s.flops_per_step, 3 * 2 * 6 * 6 * 6 + 3 * 216)
        self.assertIsNone(s.flops_void)
        _settings._flops_done = False
        s, _ = self.count(Einsum3(), torch.randn(2, 3, 6))
        self.assertIsNone(s.flops_per_step)
        self.assertIs(s.training, True)  # the rest was read
        self.assertEqual(s.flops_void, "einsum")

    def test_weights_written_by_hand_count_as_a_linears(self):
        """A review: x @ self.w1.T read 2× (the transpose is no Parameter,
        the input needs no gradient): 17,760,256 FLOPs against the
        26,148,864 of the same model in nn.Linear. Each layer trained, 3×."""
        s, _ = self.count(HandWritten(), torch.randn(32, 256))
        self.assertEqual(s.flops_per_step, 3 * (2 * 32 * 256 * 512 + 2 * 32 * 512 * 10))

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_einsum_and_tensordot_by_their_shapes(self):
        """Each against the product by hand: a bmm 2·(every subscript kept
        or contracted); a subscript only one operand has and the output
        has not is summed first, uncounted; no contracted subscript is an
        elementwise product (torch's mul: 0); the list and sublist forms,
        an ellipsis, the implicit output; tensordot's three dims forms."""
        a, b = torch.randn(2, 3, 5, 6), torch.randn(2, 3, 7, 6)
        cases = [
            (lambda: torch.einsum("bhqd,bhkd->bhqk", a, b), 2 * 2 * 3 * 5 * 7 * 6),
            (lambda: torch.einsum("bhqd,bhkd->bhqk", [a, b]), 2 * 2 * 3 * 5 * 7 * 6),
            (lambda: torch.einsum("...qd,...kd->...qk", a, b), 2 * 2 * 3 * 5 * 7 * 6),
            (lambda: torch.einsum("...qd,...kd", a, b), 2 * 2 * 3 * 5 * 7 * 6),
            (lambda: torch.einsum("...qd,kd->...qk", a, torch.randn(7, 6)), 2 * 2 * 3 * 5 * 7 * 6),
            (lambda: torch.einsum("ij,jk", torch.randn(3, 4), torch.randn(4, 5)), 2 * 3 * 4 * 5),
            (lambda: torch.einsum("ij,jk->i", torch.randn(3, 4), torch.randn(4, 5)), 2 * 3 * 4),
            (lambda: torch.einsum(torch.randn(3, 4), [0, 1], torch.randn(4, 5), [1, 2]), 2 * 3 * 4 * 5),
            (lambda: torch.einsum("i,j->ij", torch.randn(3), torch.randn(4)), 0),
            (lambda: torch.einsum("ij,jk->ik", torch.randn(3, 1), torch.randn(4, 5)), 0),  # j broadcast: a sum, then a mul
            (lambda: torch.einsum("...ij,...jk->ik", torch.randn(1, 3, 4), torch.randn(7, 4, 5)), 2 * 3 * 4 * 5),  # the batch summed out of one first
            (lambda: torch.einsum("ii->i", torch.randn(3, 3)), 0),
            (lambda: torch.tensordot(torch.randn(3, 4, 5), torch.randn(4, 5, 6)), 2 * 3 * 4 * 5 * 6),
            (lambda: torch.tensordot(torch.randn(3, 4, 5), torch.randn(5, 6), dims=1), 2 * 3 * 4 * 5 * 6),
            (lambda: torch.tensordot(torch.randn(3, 4, 5), torch.randn(4, 3, 6), dims=([0, 1], [1, 0])), 2 * 3 * 4 * 5 * 6),
        ]
        for i, (call, want) in enumerate(cases):
            mode = _settings.shape_counter(torch)
            with mode:
                call()
            self.assertEqual((mode.get_total_flops(), mode.spoiled), (want, False), i)
        mode = _settings.shape_counter(torch)
        with mode:
            torch.einsum("ij,jk,kl->il", torch.randn(3, 4), torch.randn(4, 5), torch.randn(5, 2))
        self.assertEqual((mode.get_total_flops(), mode.void), (0, "einsum"))

    def test_an_rnn_gives_no_count_rather_than_its_head_alone(self):
        """A review: an LSTM model read "4.92e+05 FLOPs a step", its head's,
        against 3.78e+09: neither counter reads an RNN's kernels. Whichever
        counter this torch has, no count; the rest is read, and a model
        without one is counted as before."""
        for rnn in (nn.LSTM, nn.GRU, nn.RNN):
            _settings._flops_done = False
            s, _ = self.count(Recurrent(rnn), torch.randn(2, 5, 6))
            self.assertIsNone(s.flops_per_step, rnn)
            self.assertIs(s.training, True)
            self.assertEqual(s.flops_void, "rnn")  # why, said
        _settings._flops_done = False
        s, _ = self.count(nn.LSTM(6, 8), torch.randn(5, 2, 6), train=False)  # the RNN itself the model
        self.assertIsNone(s.flops_per_step)
        _settings._flops_done = False
        s, _ = self.count(conv_net(), torch.randn(4, 3, 16, 16))
        self.assertEqual(s.flops_per_step, 3 * (CONV + LINEAR))

    def test_the_shapes_counter_is_spoiled_by_an_rnns_kernels(self):
        """torch.lstm (nn.LSTM's _VF.lstm) and an LSTMCell's lstm_cell are
        one call each to the mode, their matmuls inside: no count."""
        for model, x in ((nn.LSTM(6, 8), torch.randn(5, 2, 6)), (nn.LSTMCell(6, 8), torch.randn(2, 6)), (nn.GRU(6, 8), torch.randn(5, 2, 6))):
            mode = _settings.shape_counter(torch)
            with mode:
                model(x)
                torch.mm(torch.randn(2, 3), torch.randn(3, 4))
            self.assertEqual(mode.get_total_flops(), 0, model)

    def test_the_count_is_once_per_process_and_leaves_nothing(self):
        """count() checks that no hook, pre-hook or mode is left after the
        window; a second window does not count again."""
        s, _ = self.count(conv_net(), torch.randn(4, 3, 16, 16))
        self.assertEqual(s.flops_per_step, 3 * (CONV + LINEAR))
        s, _ = self.count(conv_net(), torch.randn(4, 3, 16, 16))
        self.assertIsNone(s.flops_per_step)
        self.assertIs(s.training, True)
        s, _ = self.count(conv_net(), torch.randn(4, 3, 16, 16), train=False)
        self.assertIsNone(s.flops_per_step)  # nor an evaluation after a training step

    def test_a_forward_that_raises_leaves_nothing(self):
        """The job's error reaches the job; the window's close removes the
        counter its forward hook did not."""
        model = Raises()
        with self.assertRaises(KeyError):
            self.count(model, torch.randn(2, 6))
        self.assertEqual(stack_depth(), 0)
        self.assertEqual(len(model._forward_hooks), 0)
        self.assertEqual(len(torch.nn.modules.module._global_forward_pre_hooks), 0)

    @unittest.skipUnless(shapes_only, "the shapes counter: torch 1.13 to 2.0")
    def test_an_error_in_the_counter_never_reaches_the_forward(self):
        x = torch.randn(4, 3, 16, 16)
        want = conv_net().eval()(x)

        def broken(*a):
            raise RuntimeError("a counter's bug")

        for name in ("call_flops", "shape_counter"):
            _settings._flops_done = False
            saved = getattr(_settings, name)
            setattr(_settings, name, broken)
            try:
                s, out = self.count(conv_net(), x, train=False)
            finally:
                setattr(_settings, name, saved)
            self.assertTrue(torch.equal(out, want), name)
            self.assertIsNone(s.flops_per_step, name)
            self.assertIs(s.training, False, name)


if __name__ == "__main__":
    unittest.main()
