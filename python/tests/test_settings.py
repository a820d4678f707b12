"""What the job already does, read by the hook (gpuwatch_hook/_settings.py):
autocast and its dtype, the float32 matmul precision, TF32 and
cudnn.benchmark, the conv weights' memory format, compile, the batch
size — each read in one step's window, as torch has it there, and nothing
installed after it. Here on Debian's CPU-only torch (autocast on the CPU
in bfloat16); the GPU's memory and CUDA graphs from torch.cuda's answers
faked on the CPU (a real GPU's answers need one).
python3 -m unittest discover -s python/tests"""

import os
import sys
import time
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gpuwatch_hook as hook  # noqa: E402
from gpuwatch_hook import _settings  # noqa: E402

from test_stages import metrics  # noqa: E402  (sets the runtime folder)

try:
    import torch
    from torch import nn
    from torch.utils.data import DataLoader
except ImportError:
    torch = None


def setting_info(m):
    """The labels of gpuwatch_job_setting_info on a metrics page (None when
    it is absent)."""
    for k in m:
        if k.startswith("gpuwatch_job_setting_info{"):
            body = k[len("gpuwatch_job_setting_info{") : -1]
            return dict((kv.split("=", 1)[0], kv.split("=", 1)[1].strip('"')) for kv in body.split(","))
    return None


if torch is not None:

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.fc = nn.Linear(8 * 8 * 8, 10)

        def forward(self, x):
            return self.fc(torch.relu(self.conv(x)).flatten(1))

    class Jitter(nn.Module):
        """An augmentation without parameters, called before the model."""

        def forward(self, x):
            return x + 0.0


@unittest.skipIf(torch is None, "needs torch (CI has Debian's python3-torch)")
class SettingsTest(unittest.TestCase):
    def run_loop(self, model=None, step=None, batches=6, channels_last=False, data=None, batch_size=4):
        model = model or Net()
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        data = data if data is not None else [torch.randn(3, 8, 8) for _ in range(24)]
        loader = DataLoader(data, batch_size=batch_size)
        with hook.watch(loader, port=0, quiet=True) as w:
            for i, x in enumerate(w):
                if i >= batches:
                    break
                if step is not None:
                    step(model, x)
                else:
                    model(x).sum().backward()
            m = metrics(w)
        self.assertIsNotNone(setting_info(m), m)
        return setting_info(m), m

    def test_plain_fp32_is_read_as_such(self):
        info, m = self.run_loop()
        self.assertEqual(info["autocast"], "0")
        self.assertNotIn("autocast_dtype", info)
        self.assertEqual(info["autocast_device"], "cpu")
        self.assertEqual(info["conv_memory_format"], "contiguous")
        self.assertEqual((info["has_conv"], info["has_linear"], info["compiled"], info["training"]), ("1", "1", "0", "1"))
        self.assertEqual(info["float32_matmul_precision"], torch.get_float32_matmul_precision())
        self.assertEqual(info["cudnn_benchmark"], "0")
        self.assertEqual(info["matmul_allow_tf32"], "1" if torch.backends.cuda.matmul.allow_tf32 else "0")
        self.assertNotIn("cuda_graphs", info)  # no CUDA here: not known, not 0
        self.assertEqual(m["gpuwatch_job_batch_size"], 4)
        self.assertEqual(m["gpuwatch_job_modules"], 3)
        self.assertEqual(m["gpuwatch_job_intra_op_threads"], torch.get_num_threads())

    def test_intra_op_threads_are_the_forwards(self):
        # Read on the forward's thread: the script's set_num_threads.
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            _, m = self.run_loop()
        finally:
            torch.set_num_threads(before)
        self.assertEqual(m["gpuwatch_job_intra_op_threads"], 1)
        self.assertNotIn("gpuwatch_job_gpu_mem_free_bytes", m)  # no CUDA: absent
        self.assertAlmostEqual(m["gpuwatch_job_settings_read_timestamp_seconds"], time.time(), delta=60)

    def test_a_torchscript_models_layers_are_read(self):
        # torch.jit.trace and script make modules of none of nn's classes
        # (a review: a traced MLP read has_linear 0, so tensor_idle was
        # never named for it): their original_name says what they were.
        traced = torch.jit.trace(nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 10)), torch.randn(4, 3, 8, 8))
        info, _ = self.run_loop(model=traced)
        self.assertEqual((info["has_conv"], info["has_linear"]), ("0", "1"))
        scripted = torch.jit.script(Net())
        info, _ = self.run_loop(model=scripted)
        self.assertEqual((info["has_conv"], info["has_linear"]), ("1", "1"))

    def test_a_cuda_model_fed_cpu_batches_is_a_cuda_job(self):
        # nn.DataParallel, DDP and Accelerate's hooks call a CUDA model with
        # CPU batches, which they move: the model's device decides (a
        # review: such a job read autocast_device cpu, "on the CPU"). Its
        # parameters' device is faked here (no CUDA on this machine).
        class OnCuda(nn.Linear):
            def parameters(self, recurse=True):
                yield types.SimpleNamespace(device=types.SimpleNamespace(type="cuda", index=0))

        w = _settings.Window(torch)
        w.read_forward(OnCuda(4, 2), (torch.randn(3, 4),))
        self.assertEqual(w.s.autocast_device, "cuda")
        self.assertEqual(w.cuda_index, 0)
        plain = _settings.Window(torch)
        plain.read_forward(nn.Linear(4, 2), (torch.randn(3, 4),))
        self.assertEqual(plain.s.autocast_device, "cpu")

    def test_autocast_bf16_is_read_inside_the_forward(self):
        def step(model, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(x)
            out.float().sum().backward()

        info, _ = self.run_loop(step=step)
        self.assertEqual((info["autocast"], info["autocast_dtype"], info["autocast_device"]), ("1", "bfloat16", "cpu"))

    def test_autocast_entered_inside_the_forward_is_read(self):
        # PyTorch's AMP docs decorate forward for DataParallel: the model's
        # own pre-hook runs before autocast is entered.
        class Decorated(Net):
            @torch.autocast("cpu", dtype=torch.bfloat16)
            def forward(self, x):
                return super().forward(x)

        class WithInside(Net):
            def forward(self, x):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return super().forward(x)

        for cls in (Decorated, WithInside):
            dtypes = []

            def step(model, x):
                out = model(x)
                dtypes.append(out.dtype)
                out.float().sum().backward()

            info, _ = self.run_loop(model=cls(), step=step)
            self.assertEqual(set(dtypes), {torch.bfloat16}, cls.__name__)
            self.assertEqual((info["autocast"], info["autocast_dtype"], info["autocast_device"]), ("1", "bfloat16", "cpu"), cls.__name__)
            self.assertEqual(len(torch.nn.modules.module._global_forward_pre_hooks), 0, cls.__name__)

    def test_a_frozen_encoder_first_is_not_the_model_trained(self):
        """Distillation, a diffusion model's VAE, a BYOL teacher: a frozen
        module runs first under no_grad; the reading is the trained
        model's (in bf16 autocast here), and the step's FLOPs are the
        encoder's forward (1×) and the model's training step (3×)."""
        torch.manual_seed(0)
        encoder = nn.Linear(32, 32).eval()
        for p in encoder.parameters():
            p.requires_grad_(False)
        model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))

        def step(_, x):
            with torch.no_grad():
                feats = encoder(x)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(feats)
            out.float().sum().backward()

        saved = _settings._flops_done
        _settings._flops_done = False
        try:
            info, m = self.run_loop(model=model, step=step, data=[torch.randn(32) for _ in range(24)])
        finally:
            _settings._flops_done = saved
        self.assertEqual((info["autocast"], info["autocast_dtype"], info["training"]), ("1", "bfloat16", "1"))
        self.assertEqual(m["gpuwatch_job_modules"], 4)  # the Sequential and its three, not the encoder
        n = 4  # the batch
        encoder_fwd = 2 * n * 32 * 32
        model_fwd = 2 * n * (32 * 64 + 64 * 10)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], encoder_fwd + 3 * model_fwd)

    def test_micro_batches_are_the_step_and_the_loaders_batch(self):
        """A batch split into micro-batches, a forward and backward each,
        one optimizer step: the step's FLOPs are every micro-batch's, and
        the batch is the loader's (8), not a chunk's (2)."""
        model = nn.Linear(16, 4)

        def step(_, x):
            for chunk in x.chunk(4):
                model(chunk).sum().backward()

        saved = _settings._flops_done
        _settings._flops_done = False
        try:
            info, m = self.run_loop(model=model, step=step, data=[torch.randn(16) for _ in range(48)], batch_size=8)
        finally:
            _settings._flops_done = saved
        self.assertEqual(m["gpuwatch_job_batch_size"], 8)
        self.assertEqual(m["gpuwatch_job_flops_per_step"], 3 * 2 * 8 * 16 * 4)

    def test_a_trained_head_on_a_frozen_backbone_is_training(self):
        """A linear probe: 40 frozen layers, then the trained head (its
        parameters past the first 64 looked at before) — a training
        step, not an evaluation."""
        backbone = nn.Sequential(*[nn.Linear(16, 16) for _ in range(40)])
        for p in backbone.parameters():
            p.requires_grad_(False)
        model = nn.Sequential(backbone, nn.Linear(16, 4))
        info, _ = self.run_loop(model=model, step=lambda m, x: m(x).sum().backward(), data=[torch.randn(16) for _ in range(48)], batch_size=8)
        self.assertEqual(info["training"], "1")

    def test_a_break_in_the_windows_step_leaves_nothing(self):
        """A loop that leaves in the window's step (a smoke test, a batch
        size finder) takes no next batch: leaving watch closes the window,
        and the model is not held."""
        import gc
        import weakref

        model = nn.Linear(16, 4)
        loader = DataLoader([torch.randn(16) for _ in range(48)], batch_size=8)
        with hook.watch(loader, port=0, quiet=True) as w:
            for x in w:
                model(x).sum().backward()
                break
        self.assertEqual(len(torch.nn.modules.module._global_forward_pre_hooks), 0)
        self.assertEqual(len(model._forward_hooks), 0)
        ref = weakref.ref(model)
        del model, w, loader
        gc.collect()
        self.assertIsNone(ref())

    def test_a_forward_on_another_thread_is_not_the_steps(self):
        """An EMA or evaluation thread's forward while the window is open
        is not read, counted or left under the counter."""
        import threading

        side = nn.Linear(16, 16)
        started, release = threading.Event(), threading.Event()

        class Slow(nn.Module):
            def __init__(s):
                super().__init__()
                s.f = side

            def forward(s, x):
                started.set()
                release.wait(10)
                return s.f(x)

        slow = Slow()
        out = []
        t = threading.Thread(target=lambda: out.append(slow(torch.randn(2, 16))))

        def step(model, x):
            if not t.is_alive() and not out:
                t.start()
                started.wait(10)
            model(x).sum().backward()

        info, m = self.run_loop(model=nn.Linear(16, 4), step=step, data=[torch.randn(16) for _ in range(48)], batch_size=8)
        release.set()
        t.join(10)
        self.assertEqual(m["gpuwatch_job_modules"], 1)  # the loop's Linear, not the thread's
        self.assertEqual(len(slow._forward_hooks), 0)

    def test_a_model_cast_to_bf16_says_its_weights_dtype(self):
        # A model cast with .to(torch.bfloat16) or .half() runs its matmuls
        # in that dtype with autocast off (a review: such a model was read
        # fp32 and told to autocast to bf16).
        info, _ = self.run_loop()
        self.assertEqual(info["weights_dtype"], "float32")
        cast = Net().to(torch.bfloat16)
        data = [torch.randn(3, 8, 8, dtype=torch.bfloat16) for _ in range(24)]
        info, _ = self.run_loop(model=cast, data=data)
        self.assertEqual((info["weights_dtype"], info["autocast"]), ("bfloat16", "0"))
        # A tenth of the weights in another dtype: mixed, no one dtype.
        self.assertEqual(_settings.weights_dtype({"bfloat16": 85, "float32": 15}), "mixed")
        self.assertEqual(_settings.weights_dtype({"float16": 95, "float32": 5}), "float16")
        self.assertEqual(_settings.weights_dtype({"qint8": 100}), "mixed")
        self.assertIsNone(_settings.weights_dtype({}))

    def test_channels_last_convs(self):
        info, _ = self.run_loop(channels_last=True)
        self.assertEqual(info["conv_memory_format"], "channels_last")

    def test_float32_matmul_precision_high(self):
        before = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high")
        try:
            info, _ = self.run_loop()
        finally:
            torch.set_float32_matmul_precision(before)
        self.assertEqual(info["float32_matmul_precision"], "high")

    def test_cudnn_benchmark_true_and_false(self):
        before = torch.backends.cudnn.benchmark
        try:
            for on in (True, False):
                torch.backends.cudnn.benchmark = on
                info, _ = self.run_loop()
                self.assertEqual(info["cudnn_benchmark"], "1" if on else "0")
        finally:
            torch.backends.cudnn.benchmark = before

    def test_tf32_switches_for_matmuls_and_convs_each_read(self):
        # Each of the two TF32 switches read on and off, on its own: the
        # matmuls' (torch.backends.cuda.matmul.allow_tf32) and cuDNN's
        # convs' (torch.backends.cudnn.allow_tf32, on by torch's default).
        mm, cv = torch.backends.cuda.matmul, torch.backends.cudnn
        before = (mm.allow_tf32, cv.allow_tf32)
        try:
            for m_on, c_on in ((True, False), (False, True), (False, False)):
                mm.allow_tf32, cv.allow_tf32 = m_on, c_on
                info, _ = self.run_loop()
                self.assertEqual((info["matmul_allow_tf32"], info["cudnn_allow_tf32"]), ("1" if m_on else "0", "1" if c_on else "0"))
        finally:
            mm.allow_tf32, cv.allow_tf32 = before

    def test_gpu_memory_and_cuda_graphs_are_read_at_the_windows_end(self):
        # What a CUDA torch answers, on the CPU: torch.cuda's memory of
        # the model's GPU, and CUDAGraph.replay calls counted by the patch
        # (replays inside the window: CUDA graphs on; none: off).
        cuda = types.SimpleNamespace(
            is_initialized=lambda: True,
            current_device=lambda: 0,
            mem_get_info=lambda i: (40 << 30, 141 << 30),
            max_memory_allocated=lambda i: 90 << 30,
            get_device_capability=lambda i: (9, 0),
        )
        fake = types.SimpleNamespace(cuda=cuda, backends=torch.backends, get_float32_matmul_precision=torch.get_float32_matmul_precision)
        patched = _settings._graphs_patched
        _settings._graphs_patched = True
        try:
            for replays in (3, 0):
                w = _settings.Window(fake)
                _settings._replays += replays
                s = w.close()
                self.assertEqual((s.mem_free, s.mem_total, s.max_allocated), (40 << 30, 141 << 30, 90 << 30))
                self.assertIs(s.cuda_graphs, replays > 0)
                labels = dict(_settings.info_labels(s))
                self.assertEqual(labels["cuda_graphs"], "1" if replays else "0")
                self.assertEqual(labels["device_tf32"], "1")  # sm_90
                gauges = {name: v for name, _, v in _settings.gauges(s)}
                self.assertEqual(gauges["gpuwatch_job_gpu_mem_free_bytes"], 40 << 30)
        finally:
            _settings._graphs_patched = patched
        # Without CUDA initialized nothing of the GPU is said.
        cuda.is_initialized = lambda: False
        s = _settings.Window(fake).close()
        self.assertEqual((s.mem_free, s.mem_total, s.cuda_graphs), (None, None, None))

    def test_the_devices_tf32_is_read_from_its_compute_capability(self):
        # A V100 (7.0) or a T4 (7.5) has no TF32 and no bf16 tensor cores,
        # an A100 (8.0) and an H200 (9.0) have both; ROCm's capability
        # numbers are not NVIDIA's, and a capability that cannot be read
        # is not a guess.
        def fake(cap, hip=None):
            def get(i):
                if isinstance(cap, Exception):
                    raise cap
                return cap
            return types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_capability=get), version=types.SimpleNamespace(hip=hip))
        for cap, want in (((7, 0), False), ((7, 5), False), ((8, 0), True), ((9, 0), True)):
            self.assertIs(_settings.device_tf32(fake(cap), 0), want, cap)
        self.assertIsNone(_settings.device_tf32(fake((9, 4), hip="6.2"), 0))
        self.assertIsNone(_settings.device_tf32(fake(RuntimeError("no device")), 0))
        self.assertIsNone(_settings.device_tf32(fake(("9", "0")), 0))

    def test_a_module_without_parameters_called_first_is_not_the_model(self):
        jitter = Jitter()

        def step(model, x):
            model(jitter(x)).sum().backward()

        info, m = self.run_loop(step=step)
        self.assertEqual(info["has_conv"], "1")
        self.assertEqual(m["gpuwatch_job_modules"], 3)

    def test_an_evaluation_says_it_is_not_training(self):
        def step(model, x):
            with torch.no_grad():
                model(x)

        info, _ = self.run_loop(step=step)
        self.assertEqual(info["training"], "0")

    def test_no_forward_gives_no_forward_reading(self):
        info, m = self.run_loop(step=lambda model, x: None)
        for k in ("autocast", "has_conv", "compiled", "conv_memory_format"):
            self.assertNotIn(k, info)  # not read: absent, never guessed
        self.assertIn("float32_matmul_precision", info)
        self.assertNotIn("gpuwatch_job_batch_size", m)

    def test_a_loop_that_prefetches_a_batch_ahead_is_read(self):
        """A generator around the DataLoader that asks for the next batch
        before it yields the one it has (a user's review: "no model's
        forward seen", each window closed by that ask with nothing run):
        the window stays open over one empty ask, to the forward."""
        model = Net()
        loader = DataLoader([torch.randn(3, 8, 8) for _ in range(24)], batch_size=4)

        def ahead(it):
            it = iter(it)
            nxt = next(it, None)
            while nxt is not None:
                cur, nxt = nxt, next(it, None)
                yield cur

        with hook.watch(loader, port=0, quiet=True) as w:
            for x in ahead(w):
                model(x).sum().backward()
            m = metrics(w)
        info = setting_info(m)
        self.assertIsNotNone(info, m)
        self.assertEqual((info.get("has_conv"), info.get("training")), ("1", "1"), info)
        self.assertEqual(m["gpuwatch_job_batch_size"], 4)
        self.assertEqual(len(torch.nn.modules.module._global_forward_pre_hooks), 0)

    def test_a_compiled_module_is_seen(self):
        """torch.compile's OptimizedModule (torch ≥ 2.0) and module.compile()'s
        _compiled_call_impl (≥ 2.2), as this torch would show them."""
        fake = types.ModuleType("torch._dynamo.eval_frame")

        class OptimizedModule(nn.Module):
            def __init__(self, mod):
                super().__init__()
                self._orig_mod = mod

            def forward(self, x):
                return self._orig_mod(x)

        fake.OptimizedModule = OptimizedModule
        saved = sys.modules.get("torch._dynamo.eval_frame")
        sys.modules["torch._dynamo.eval_frame"] = fake
        try:
            info, _ = self.run_loop(model=OptimizedModule(Net()))
            self.assertEqual(info["compiled"], "1")
        finally:
            if saved is None:
                del sys.modules["torch._dynamo.eval_frame"]
            else:
                sys.modules["torch._dynamo.eval_frame"] = saved
        net = Net()
        net._compiled_call_impl = lambda *a: None
        info, _ = self.run_loop(model=net)
        self.assertEqual(info["compiled"], "1")

    def test_the_read_costs_nothing_per_sample_after_its_window(self):
        """One window at the first batch: the pre-hook sees that step's
        forwards (the model's and, autocast read off there, its
        submodules') and is gone when the next batch closes the window;
        later steps run with no global hook of the hook's, and no second
        window opens within READ_EVERY."""
        calls = []
        orig_pre, orig_open = _settings.Window.pre, _settings.Window.open

        def pre(self, module, args):
            calls.append(type(module).__name__)
            return orig_pre(self, module, args)

        opened = []

        def open_():
            w = orig_open()
            opened.append(w)
            return w

        hooks_in_steps = []

        def step(model, x):
            model(x).sum().backward()
            hooks_in_steps.append(len(torch.nn.modules.module._global_forward_pre_hooks))

        _settings.Window.pre, _settings.Window.open = pre, staticmethod(open_)
        try:
            self.run_loop(step=step, batches=6)
        finally:
            _settings.Window.pre, _settings.Window.open = orig_pre, orig_open
        self.assertEqual(len(opened), 1)
        # The model's forward, once, and (autocast read off there) its
        # submodules in that forward alone: autocast may be entered inside.
        self.assertEqual(calls, ["Net", "Conv2d", "Linear"])
        self.assertEqual(hooks_in_steps, [1, 0, 0, 0, 0, 0])  # the window's step alone
        self.assertEqual(len(torch.nn.modules.module._global_forward_pre_hooks), 0)

    def test_labels_are_only_what_was_read(self):
        s = _settings.Settings()
        self.assertEqual(_settings.info_labels(s), [])
        self.assertEqual(_settings.gauges(s), [])
        s.autocast, s.autocast_dtype, s.cuda_graphs = True, "float16", False
        self.assertEqual(_settings.info_labels(s), [("autocast", "1"), ("autocast_dtype", "float16"), ("cuda_graphs", "0")])


if __name__ == "__main__":
    unittest.main()
