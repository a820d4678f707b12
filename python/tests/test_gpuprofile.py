"""The GPU's time per step (gpuwatch_hook/_gpuprofile.py): a few steps
recorded with torch.profiler and summed by category and precision. Here
on Debian's CPU-only torch: the step is the CPU's (device "cpu"), its ops'
self time by category. python3 -m unittest discover -s python/tests"""

import os
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rundir  # noqa: E402  (python/tests: one runtime folder, removed at exit)
import gpuwatch_hook as hook  # noqa: E402
from gpuwatch_hook import _cost, _gpuprofile  # noqa: E402

from test_stages import metrics  # noqa: E402  (sets the runtime folder)

rundir.runtime_dir()

try:
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
except ImportError:
    torch = None


class NamesTest(unittest.TestCase):
    """Categories and precisions from names: no torch needed."""

    def test_kernel_names(self):
        for name, cat, prec in (
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "matmul", "bf16"),
            ("ampere_sgemm_128x64_tn", "matmul", "fp32"),
            ("cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4", "matmul", "tf32"),
            ("volta_h884gemm_64x64_ldg8_nn", "matmul", "fp16"),
            # cuBLAS's Hopper GEMMs: the inputs' type first.
            ("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", "matmul", "tf32"),
            ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", "matmul", "fp16"),
            ("nvjet_sm90_hss_320x128", "matmul", "fp16"),
            ("nvjet_bsb_128x128_64x4_1x2_h_bz_NNT", "matmul", "bf16"),
            ("nvjet_qqq_64x64_v", "matmul", ""),
            ("sm80_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw", "conv", "tf32"),
            ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>", "normalization", ""),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", "elementwise", ""),
            ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication", ""),
            ("Memcpy HtoD (Pageable -> Device)", "copy", ""),
            ("Memset (Device)", "copy", ""),
            ("void at::native::reduce_kernel<512, 1>", "reduction", ""),
            ("cudnn::pooling_fw_4d_kernel<float, float, cudnn::maxpooling_func<float>>", "reduction", ""),
            ("void at::native::max_pool_forward_nchw<float, float>", "reduction", ""),
            ("some_kernel_nobody_knows", "other", ""),
        ):
            self.assertEqual(_gpuprofile.category(name), cat, name)
            if cat in ("matmul", "conv"):
                self.assertEqual(_gpuprofile.kernel_precision(name), prec, name)

    def test_op_names_and_dtypes(self):
        for name, cat in (
            ("aten::addmm", "matmul"),
            ("aten::mm", "matmul"),
            ("aten::mkldnn_convolution", "conv"),
            ("aten::convolution_backward", "conv"),
            ("aten::native_batch_norm", "normalization"),
            ("aten::clamp_min", "elementwise"),
            ("aten::threshold_backward", "elementwise"),
            ("aten::copy_", "copy"),
            ("aten::_log_softmax", "reduction"),
            ("aten::max_pool2d_with_indices", "reduction"),
            ("aten::max_pool2d_with_indices_backward", "reduction"),
            ("aten::adaptive_avg_pool2d", "reduction"),
            ("aten::broadcast_tensors", "other"),
            ("aten::empty", "other"),
            ("ConvolutionBackward0", "other"),
            ("autograd::engine::evaluate_function: AddmmBackward0", "other"),
        ):
            self.assertEqual(_gpuprofile.category(name), cat, name)
        self.assertEqual(_gpuprofile.dtype_precision(["float", "float"]), "fp32")
        self.assertEqual(_gpuprofile.dtype_precision(["c10::BFloat16", "float"]), "bf16")
        self.assertEqual(_gpuprofile.dtype_precision(["", "Scalar"]), "")
        self.assertEqual(_gpuprofile.dtype_precision(["c10::ComplexFloat"]), "")  # unknown: said, not guessed

    def test_steps_from_outside(self):
        for raw, want in (("", 5), ("3", 3), ("50", 50), ("51", None), ("0", None), ("x", None), ("2.5", None), ("-1", None)):
            self.assertEqual(_gpuprofile.parse_steps(raw), want, raw)

    def test_hostile_labels_are_printable_and_cut(self):
        s = _gpuprofile.printable("a\x00b\nc" + "x" * 500)
        self.assertTrue(s.isprintable())
        self.assertLessEqual(len(s), _gpuprofile.MAX_LABEL)

    def test_idle_gaps_on_a_gpu_go_to_the_host_call_before_them(self):
        E = _gpuprofile.Event
        evs = [
            E("aten::addmm", 0, 10, 1, False, (), ("train.py(40): step",)),
            E("aten::item", 20, 100, 1, False, (), ("/x/torch/_tensor.py(1): item", "train.py(87): step")),
            E("ampere_sgemm_128x64_tn", 5, 40, 9, True),  # busy 5..45
            E("Memcpy DtoH (Device -> Pageable)", 45, 2, 9, True),  # 45..47, then idle 47..120
        ]
        s = _gpuprofile.summarize(evs, 1, True)
        self.assertEqual(s.device, "cuda")
        self.assertAlmostEqual(s.busy, 42e-6)
        self.assertAlmostEqual(s.idle, 5e-6 + 73e-6)
        self.assertEqual(s.idle_sites[0][0], "aten::item train.py:87")
        self.assertAlmostEqual(s.parts[("matmul", "fp32")], 40e-6)
        self.assertAlmostEqual(s.sync, 73e-6)  # the wait that began in .item(); not the first 5 µs

    def test_a_kernels_precision_is_its_launching_ops_inputs_where_reduced(self):
        # On an H200 a bf16 MLP under autocast ran nvjet_tst_… GEMMs, which
        # the name alone reads as tf32: the launching op's bf16 inputs
        # say bf16. With fp32 inputs the kernel's name decides (TF32 or
        # fp32); with no op linked, the name.
        E = _gpuprofile.Event
        tst = "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT"
        evs = [
            E("aten::addmm", 0, 10, 1, False, ("c10::BFloat16", "c10::BFloat16", "c10::BFloat16"), (), 7),
            E("aten::addmm", 20, 10, 1, False, ("float", "float", "float"), (), 8),
            E(tst, 5, 10, 9, True, corr=7),
            E(tst, 25, 10, 9, True, corr=8),
            E(tst, 40, 10, 9, True),  # not linked
            E("ampere_sgemm_128x64_tn", 55, 10, 9, True, corr=8),
        ]
        s = _gpuprofile.summarize(evs, 1, True)
        self.assertAlmostEqual(s.parts[("matmul", "bf16")], 10e-6)
        self.assertAlmostEqual(s.parts[("matmul", "tf32")], 20e-6)
        self.assertAlmostEqual(s.parts[("matmul", "fp32")], 10e-6)

    @unittest.skipIf(torch is None, "needs torch")
    def test_the_options_a_gpu_is_recorded_with_keep_the_ops_dtypes(self):
        # launched_precision reads the launching op's dtypes, which the
        # profiler keeps only with record_shapes: recorded with the
        # options a GPU is recorded with, a bf16 matmul's op has them.
        from torch.profiler import ProfilerActivity, profile

        a = torch.randn(64, 64).to(torch.bfloat16)
        with profile(activities=[ProfilerActivity.CPU], **_gpuprofile.recording_options(True)) as p:
            torch.mm(a, a)
        mm = [e for e in _gpuprofile.events_of(p) if e.name == "aten::mm"]
        self.assertTrue(mm, "no aten::mm recorded")
        self.assertEqual(_gpuprofile.dtype_precision(mm[0].dtypes), "bf16")
        self.assertGreater(mm[0].corr, 0)

    def test_shapes_are_not_recorded_on_torch_2_0(self):
        # torch 2.0's profiler raises inside the job's op on a tensor of
        # symbolic sizes (torch.compile, dynamic shapes) when it records
        # shapes (pytorch#104320, fixed in 2.1): not there, elsewhere yes.
        for v, want in [("2.0.1+cu118", False), ("2.0.0", False), ("2.1.0a0+4136153", False), ("2.1.0.dev20230620+cu118", False),
                        ("2.1.0", True), ("2.1.2+cu121", True), ("1.13.1", True), ("2.11.0+cu128", True), ("", True), ("junk", True)]:
            self.assertEqual(_gpuprofile.recording_options(True, v)["record_shapes"], want, v)

    def test_a_sync_wait_is_told_from_a_launch_wait(self):
        # The host launches (cudaLaunchKernel) slower than the kernels run:
        # a gap while it works on the next launch is not a sync's. Then
        # torch.cuda.synchronize() (a runtime call, on the OS thread's id
        # where the ops carry the profiler's) waits for the queue to drain;
        # the wait from the drain to the next kernel is the sync's.
        E = _gpuprofile.Event
        evs = [
            E("aten::relu", 0, 30, 1, False, (), ("train.py(50): step",)),
            E("cudaLaunchKernel", 2, 3, 4242, False),
            E("aten::relu", 30, 10, 1, False, (), ("train.py(51): step",)),
            E("cudaLaunchKernel", 32, 3, 4242, False),
            E("cudaDeviceSynchronize", 40, 6, 4242, False),  # returns at 46, after the drain at 45
            E("aten::add", 100, 30, 1, False, (), ("train.py(53): step",)),
            E("cudaLaunchKernel", 120, 3, 4242, False),
            E("vectorized_elementwise_kernel<relu>", 5, 10, 9, True),  # 5..15, idle 15..35 (launching)
            E("vectorized_elementwise_kernel<relu>", 35, 10, 9, True),  # 35..45, idle 45..125 (the sync's)
            E("vectorized_elementwise_kernel<add>", 125, 5, 9, True),  # 125..130
        ]
        s = _gpuprofile.summarize(evs, 1, True)
        self.assertAlmostEqual(s.idle, 5e-6 + 20e-6 + 80e-6)
        self.assertAlmostEqual(s.sync, 80e-6)
        # No sync: none of the waits is one.
        s = _gpuprofile.summarize([e for e in evs if e.name != "cudaDeviceSynchronize"], 1, True)
        self.assertAlmostEqual(s.idle, 105e-6)
        self.assertEqual(s.sync, 0)


class Net(nn.Module if torch is not None else object):
    """Linear, conv, relu and batchnorm: every category a step of a CNN has."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 30 * 30, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


def parts(m):
    """{(category, precision): seconds per step} of a metrics page."""
    out = {}
    pre = "gpuwatch_job_gpu_time_seconds_per_step{"
    for k, v in m.items():
        if k.startswith(pre):
            cat, prec = k[len(pre) : -1].split(",")
            out[(cat.split('"')[1], prec.split('"')[1])] = v
    return out


@unittest.skipIf(torch is None, "needs torch (CI has Debian's python3-torch)")
class RecordingTest(unittest.TestCase):
    def train(self, w, batches, autocast=False):
        net = Net()
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        n = 0
        for x, y in w:
            if autocast:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = nn.functional.cross_entropy(net(x), y)
            else:
                loss = nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            n += 1
            if n >= batches:
                break

    def loader(self, n=64):
        return DataLoader(TensorDataset(torch.randn(n, 3, 32, 32), torch.randint(0, 10, (n,))), batch_size=8)

    def profiler_on(self):
        try:
            return torch.autograd._profiler_enabled()
        except AttributeError:
            return None

    def test_a_cpu_step_by_category_with_fp32_matmul_and_conv(self):
        w = hook.watch(self.loader(), port=0, quiet=True)
        try:
            ok, _ = w._stats.ask_gpu_profile(3)
            self.assertTrue(ok)
            ok, why = w._stats.ask_gpu_profile(3)
            self.assertFalse(ok)  # one at a time
            self.assertIn("being recorded", why)
            self.train(w, 8)
            g = w._stats.gpu_profile.figures()
            m = metrics(w)
        finally:
            w.close()
        self.assertEqual(g["state"], "done", g)
        self.assertEqual(g["device"], "cpu")
        self.assertEqual(g["steps"], 3)
        p = parts(m)
        self.assertIn(("matmul", "fp32"), p)
        self.assertIn(("conv", "fp32"), p)
        self.assertIn(("normalization", ""), p)
        self.assertIn(("elementwise", ""), p)
        step = m["gpuwatch_job_gpu_profile_step_seconds"]
        self.assertLessEqual(sum(p.values()), step)
        self.assertAlmostEqual(sum(p.values()), m["gpuwatch_job_gpu_profile_busy_seconds_per_step"], places=6)
        self.assertGreater(p[("conv", "fp32")], 0)
        # The cost is published; nothing is left on after the window.
        self.assertGreaterEqual(m["gpuwatch_job_gpu_profile_cost_seconds"], 0)
        # Its CPU too (the profiler's start alone takes some), and it is in
        # the hook's own CPU, part gpu_profile: no less than the window's.
        cpu = m["gpuwatch_job_gpu_profile_cost_cpu_seconds"]
        self.assertGreater(cpu, 0)
        self.assertGreaterEqual(m['gpuwatch_hook_part_cpu_seconds_total{part="gpu_profile"}'], cpu - 1e-6)
        self.assertIn("gpuwatch_job_gpu_profile_before_step_seconds", m)
        self.assertGreater(m["gpuwatch_job_gpu_profile_input_seconds_per_step"], 0)  # the fetch, num_workers=0: said apart
        self.assertEqual(m['gpuwatch_job_gpu_profile_info{state="done",device="cpu",reason=""}'], 1)
        if self.profiler_on() is not None:
            self.assertFalse(self.profiler_on())
        self.assertIsNone(w._stats.gpu_profile._prof)

    def test_bf16_under_autocast(self):
        w = hook.watch(self.loader(), port=0, quiet=True)
        try:
            w._stats.ask_gpu_profile(2)
            self.train(w, 8, autocast=True)
            g = w._stats.gpu_profile.figures()
        finally:
            w.close()
        self.assertEqual(g["state"], "done", g)
        p = dict(g["parts"])
        self.assertIn(("conv", "bf16"), p)
        self.assertIn(("matmul", "bf16"), p)

    def test_the_epoch_ends_inside_the_window(self):
        w = hook.watch(self.loader(n=48), port=0, quiet=True)  # 6 batches
        try:
            w._stats.ask_gpu_profile(20)
            self.train(w, 100)
            g = w._stats.gpu_profile.figures()
        finally:
            w.close()
        self.assertEqual(g["state"], "done", g)
        # Started at the batch after BEFORE, each later batch a step, and
        # the step on the last batch before the epoch ended: one more.
        self.assertEqual(g["steps"], 6 - _gpuprofile.BEFORE)
        # Fewer than asked, and why (a review: "3 steps, profiled" for 5).
        self.assertEqual(g["reason"], "the epoch ended after %d of the 20 steps asked" % (6 - _gpuprofile.BEFORE))

    def test_the_stop_at_an_epoch_end_is_no_input_wait(self):
        # A review: a recording the epoch ended stopped inside the loop's
        # next(), read as the loop waiting for its input ("the loader
        # does not answer", single_core_maxed) all the while.
        w = hook.watch(self.loader(n=48), port=0, quiet=True)  # 6 batches
        seen = []
        saved = _gpuprofile.summarize
        try:

            def summarize(*a):
                seen.append((dict(w._stats.waiting_since), w._stats.waiting()))
                return saved(*a)

            _gpuprofile.summarize = summarize
            w._stats.ask_gpu_profile(20)
            self.train(w, 100)
            g = w._stats.gpu_profile.figures()
        finally:
            _gpuprofile.summarize = saved
            w.close()
        self.assertEqual(g["state"], "done", g)
        self.assertEqual(seen, [({}, 0.0)])

    def test_the_recording_ends_at_its_bounds_with_the_steps_it_has(self):
        for bound, value, why in (("MAX_RECORD_BYTES", 1, "the job grew"), ("MAX_RECORD_SECONDS", 0.0, "the recording's bound of 0 s")):
            saved = getattr(_gpuprofile, bound)
            w = hook.watch(self.loader(), port=0, quiet=True)
            try:
                setattr(_gpuprofile, bound, value)
                w._stats.ask_gpu_profile(20)
                self.train(w, 8)
                g = w._stats.gpu_profile.figures()
            finally:
                setattr(_gpuprofile, bound, saved)
                w.close()
            if bound == "MAX_RECORD_BYTES" and _gpuprofile._rss() == 0:
                continue  # no /proc here: the bound by time stands
            self.assertEqual(g["state"], "done", g)
            self.assertEqual(g["steps"], 1, g)  # one step is recorded whole, then the bound ends it
            self.assertTrue(g["reason"].startswith("stopped after 1 of the 20 steps asked: " + why), g["reason"])
            self.assertGreater(dict(g["parts"]).get(("conv", "fp32"), 0), 0)

    def test_the_stop_keeps_torchs_results_only(self):
        # torch < 2.4 parsed every event into a Python object at the stop
        # (28 s, 2 GB for 900 000 ops on 1.13): the hook reads Kineto's
        # results only, and the job's own profiler parses as before.
        cls = torch.autograd.profiler.profile
        parse = getattr(cls, "_parse_kineto_results", None)
        calls = []
        w = hook.watch(self.loader(), port=0, quiet=True)
        try:
            if parse is not None:
                cls._parse_kineto_results = lambda self, r: calls.append(1) or parse(self, r)
            w._stats.ask_gpu_profile(2)
            self.train(w, 8)
            g = w._stats.gpu_profile.figures()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as own:
                torch.ones(2).sum()
        finally:
            if parse is not None:
                cls._parse_kineto_results = parse
            w.close()
        self.assertEqual(g["state"], "done", g)
        self.assertGreater(g["busy_seconds_per_step"], 0)
        self.assertEqual(len(calls), 1 if parse is not None else 0)  # the job's, not the hook's
        self.assertTrue(any(e.name == "aten::sum" for e in own.events()))

    def test_a_failure_is_refused_and_the_loop_goes_on(self):
        w = hook.watch(self.loader(), port=0, quiet=True)
        saved = _gpuprofile.events_of
        try:

            def broken(prof):
                raise RuntimeError("no events\x00here")

            _gpuprofile.events_of = broken
            w._stats.ask_gpu_profile(2)
            self.train(w, 8)
            g = w._stats.gpu_profile.figures()
            m = metrics(w)
        finally:
            _gpuprofile.events_of = saved
            w.close()
        self.assertEqual(g["state"], "refused")
        self.assertEqual(g["reason"], "RuntimeError: no events?here")
        self.assertIn('gpuwatch_job_gpu_profile_info{state="refused",device="cpu",reason="RuntimeError: no events?here"}', m)
        if self.profiler_on() is not None:
            self.assertFalse(self.profiler_on())
        self.assertEqual(w._stats.batches, 8)

    def test_nothing_is_published_or_on_when_not_asked(self):
        w = hook.watch(self.loader(), port=0, quiet=True)
        before = _cost.cost.seconds()["gpu_profile"]
        try:
            self.train(w, 4)
            self.assertIsNone(w._stats.gpu_profile)
            self.assertNotIn(b"gpuwatch_job_gpu_profile", w._stats.render())
            # It costs nothing: the hook's part (process-wide: earlier
            # recordings stay in it) does not move.
            self.assertEqual(_cost.cost.seconds()["gpu_profile"], before)
        finally:
            w.close()

    def test_asked_over_http_with_the_token(self):
        w = hook.watch(self.loader(), port=0, quiet=True)
        try:

            def post(q, token=w.token):
                req = urllib.request.Request(w.url + "/gpu-profile" + q, data=b"", method="POST", headers={"Authorization": "Bearer " + token})
                try:
                    with urllib.request.urlopen(req, timeout=5) as r:
                        return r.status
                except urllib.error.HTTPError as e:
                    return e.code

            self.assertEqual(post("?steps=0"), 400)
            self.assertEqual(post("?steps=51"), 400)
            self.assertEqual(post("?steps=2", token="wrong"), 401)
            self.assertEqual(post("?steps=2"), 202)
            self.assertEqual(post("?steps=2"), 409)
            self.train(w, 8)
            self.assertEqual(w._stats.gpu_profile.state, "done")
            self.assertEqual(post(""), 202)  # done: another may be asked (5 steps)
            self.assertEqual(w._stats.gpu_profile.steps, 5)
        finally:
            w.close()


if __name__ == "__main__":
    time.sleep(0)
    unittest.main()
