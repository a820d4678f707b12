"""The GPU's time per step, measured (issue 51 item 4): a few steps
recorded with torch.profiler (Kineto) and summed by category.

Asked for (gpuwatch run --gpu-profile[=STEPS], which sets
GPUWATCH_GPU_PROFILE; POST /gpu-profile?steps=N on the hook's server), it
goes through its states on the loop's own thread, inside next():

* waiting: the loop runs as it would, for at least BEFORE batches (and,
  under gpuwatch run, until its WARM_AT-th batch): the mean time from one
  batch taken to the next over them is the step "before";
* recording: torch.profiler.profile runs (activities CPU, and CUDA where
  the job has initialised CUDA: the hook never initialises it) for STEPS
  steps, a step being from one batch taken to the next, or fewer: it
  ends at the first step's end past its bounds (MAX_RECORD_SECONDS, and
  MAX_RECORD_BYTES the process grew), and says so. The profiler keeps
  every op it sees until its stop, each a few KiB: a step of many small
  ops (a CPU loop of tiny layers) is hundreds of thousands of them, and
  five such steps grew a 241 MB job to 2.1 GB, its stop took 25 s. A
  single step is recorded whole (torch stops a profiler only on its own
  thread, at the loop's next batch);
* done: the profiler is stopped, its events summed into seconds per step
  by category (CATEGORIES) and, for matmul and conv, precision
  (PRECISIONS; "" where the events do not say: never guessed), and let go.
  On a GPU: the device's busy time (the union of its kernels, copies and
  sets; not a GPU user annotation, a record_function drawn on the GPU's
  timeline over its kernels: DDP's forward, an optimizer's step) and its
  idle gaps, each put on the host call that ran when the gap began on the
  loop's thread (the one with the hook's own mark, MARK, not autograd's;
  op, and the job's file:line from the profiler's stack),
  found by bisection: a launch-bound step has a gap after nearly every
  kernel; a matmul's or conv's precision is its launching op's inputs'
  where reduced (any op with dtypes, aten's or a custom one's); on a CPU
  (device "cpu"): the self time of the loop thread's ops, less those
  inside the DataLoader's next() (the input's: said apart);
* refused: it could not be done (no torch.profiler, a failure inside
  it): the reason is published, nothing raises into the job.

What it costs: the wall time per step while recording against the step
before, times the steps, plus the start, the stop and the summary, which
run on the loop's thread (never inside its wait for a batch: at an
epoch's end, _timing ends the wait first). The stop keeps torch's
Kineto results only (_lean_stop), and the memory let go goes back to
the system (_give_memory_back). Published as cost_seconds. Its CPU, the same
way: the training process's CPU per step while recording (every thread:
torch.profiler's callbacks on the loop's, Kineto's and CUPTI's own)
against the steps before, times the steps, plus the start, stop and
summary by the loop thread's clock; published as cost_cpu_seconds and
counted in the hook's own CPU (_cost, part gpu_profile): the loop
thread's part as it runs, the rest when the recording ends.

Costs nothing while not asked: next() reads one attribute that is None.
No patch is installed: the profiler is torch's own, on for the window
only."""

from __future__ import annotations

import bisect
import os
import re
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from . import _cost, _env

#: The steps recorded when none is said, and the most one may ask for.
DEFAULT_STEPS = 5
MAX_STEPS = 50
#: Batches seen before the profiler starts: the step "before" is their mean.
BEFORE = 3
#: gpuwatch run --gpu-profile: the first warm batch (start-up, the first
#: compilations and allocations are over by then).
WARM_AT = 10
#: The most idle sites kept (the rest are summed in "other").
MAX_IDLE_SITES = 8
#: A label's most characters.
MAX_LABEL = 200
#: A gap shorter than this (µs) between two device intervals is no gap:
#: the launch latency of back-to-back kernels.
MIN_GAP_US = 5.0

#: The profiler's event around the DataLoader's next() (torch's
#: record_function in _BaseDataLoaderIter.__next__).
INPUT_EVENT = "enumerate(DataLoader)#"
#: The hook's own mark on the loop's thread, once a step while it records
#: (a record_function entered and left in saw()): the thread that takes
#: the batches whatever the iterable (a generator, DALI, a DataLoader
#: read by a prefetch thread). Left out of every sum.
MARK = "gpuwatch#step"

#: The recording's bounds: at a step's end past either, it stops with the
#: steps it has. Its wall time (5 steps of 1 s fit) ...
MAX_RECORD_SECONDS = 5.0
#: ... and what the process grew since its start. The stop, not the
#: recording, is where the cost is: on torch 1.13 a recording that grew
#: the job 155 MB (840 000 ops, ~190 bytes each) took 3.8 s and 886 MB to
#: stop, 11 s to read its events and 4 s to sum them (a review). 32 MiB
#: (~175 000 ops: five steps of 20 000 CPU ops and kernels, a large
#: model's) bounds all of that to a few seconds.
MAX_RECORD_BYTES = 32 << 20

# The longest a profiler start of the job's on another thread waits for
# the loop's next batch, where gpuwatch's recording ends first (seconds).
GIVE_WAY_WAIT = 1.0
#: c10::RecordScope::USER_SCOPE (record_function), KinetoEvent.scope().
USER_SCOPE = 7

#: The host calls that wait for the GPU: a gap that begins while one runs
#: is a sync's (the host waited for the queue to drain, then had nothing
#: launched). CUDA's and HIP's runtime and driver calls as the profiler
#: records them (cudaMemcpy without Async blocks), and the ops whose
#: whole purpose is a value on the host (.item(), a tensor in an if).
SYNC_CALLS = frozenset((
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyDtoH", "cuMemcpyDtoH_v2",
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy",
    "aten::item", "aten::_local_scalar_dense", "aten::is_nonzero",
))

WAITING, RECORDING, DONE, REFUSED = "waiting", "recording", "done", "refused"
STATES = (WAITING, RECORDING, DONE, REFUSED)

#: The categories, in the order the page writes them.
CATEGORIES = ("matmul", "conv", "elementwise", "normalization", "reduction", "copy", "communication", "other")
#: The precisions of matmul and conv ("" : not said by the events).
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")

_perf = time.perf_counter

# Op and kernel names to categories, checked in this order (normalization
# before conv: cuDNN's batch-norm kernels are cudnn::bn_…; conv before
# matmul: cuDNN's implicit-gemm kernels name both; normalization before
# reduction: a norm kernel reduces).
_RULES = (
    # The autograd engine's wrappers of a backward op (its children are the
    # ops): their self time is the engine's, not the op's.
    ("other", re.compile(r"^autograd::|^torch::autograd::|Backward\d*$")),
    ("communication", re.compile(r"nccl|gloo|c10d::|record_param_comms|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|^aten::(send|recv)$", re.I)),
    ("copy", re.compile(r"^memcpy|^memset|aten::(copy_|_to_copy|to|clone|contiguous|fill_|zero_|_copy_from|_copy_from_and_resize|index_copy_?)$|copy_kernel|CatArrayBatchedCopy", re.I)),
    ("normalization", re.compile(r"norm(?!al)|bn_fw|bn_bw|welford", re.I)),
    # Pooling is a windowed reduction (cuDNN's pooling kernels before the
    # conv rule takes them for its "cudnn").
    ("reduction", re.compile(r"pool", re.I)),
    ("conv", re.compile(r"conv|cudnn|implicit_?gemm|wgrad|dgrad|fprop|winograd", re.I)),
    ("matmul", re.compile(r"gemm|gemv|matmul|cublas|cutlass|nvjet|^aten::(mm|addmm|bmm|baddbmm|addbmm|addmv|mv|dot|vdot|linear|_scaled_mm|_int_mm|einsum|mkldnn_linear|_addmm_activation)$|xmma|sm\d+_xmma|flash|attention", re.I)),
    ("reduction", re.compile(r"reduce|^aten::(sum|mean|prod|amax|amin|max|min|argmax|argmin|var|std|var_mean|std_mean|cumsum|cumprod|logsumexp|all|any|_softmax|softmax|_log_softmax|log_softmax|_softmax_backward_data|_log_softmax_backward_data|nll_loss\w*|cross_entropy_loss)$|softmax", re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|foreach|fused_adam|fused_sgd|^aten::(add|add_|sub|sub_|mul|mul_|div|div_|relu|relu_|gelu|silu|sigmoid|tanh|clamp\w*|threshold\w*|exp|log|sqrt|rsqrt|pow|neg|abs|where|dropout|native_dropout\w*|addcmul_?|addcdiv_?|lerp_?|maximum|minimum|gelu_backward|silu_backward|sigmoid_backward|tanh_backward|masked_fill_?|bernoulli_?|sgn|sign|reciprocal)$", re.I)),
)

# Precision from a CUDA kernel's name, checked in this order.
_KERNEL_PRECISION = (
    ("fp8", re.compile(r"fp8|e4m3|e5m2", re.I)),
    ("int8", re.compile(r"int8|imma|(?:^|_)[ui]8(?:_|$)|_s8s8|i8i8", re.I)),
    ("bf16", re.compile(r"bf16|bfloat16", re.I)),
    ("tf32", re.compile(r"tf32|s1688|s16816|s1684", re.I)),
    ("fp16", re.compile(r"fp16|f16|h884|h1688|h16816|h16832|hgemm|half", re.I)),
    ("fp64", re.compile(r"dgemm|fp64|f64|d884|double", re.I)),
    ("fp32", re.compile(r"sgemm|fp32|f32|scudnn|float", re.I)),
)

# Precision from an op's first input dtype (as the profiler writes it with
# record_shapes: torch 1.13 and 2.x say "float", "c10::BFloat16" …).
_DTYPE_PRECISION = {
    "float": "fp32",
    "double": "fp64",
    "c10::BFloat16": "bf16",
    "c10::Half": "fp16",
    "signed char": "int8",
    "unsigned char": "int8",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
}


def category(name: str) -> str:
    """The category of an op or kernel name (CATEGORIES), "other" where no
    rule says."""
    for cat, rx in _RULES:
        if rx.search(name):
            return cat
    return "other"


# cuBLAS's Hopper GEMMs (nvjet_tst_128x256_…, nvjet_sm90_hss_320x128):
# the letters after the prefix name the types, inputs first — h fp16,
# b bf16, t tf32 — and the other letters are left unsaid ("": the
# profile's matmul time is then of no precision it knows).
_NVJET = re.compile(r"nvjet_(?:sm\d+_)?([a-z])[a-z]{2}_", re.I)
_NVJET_INPUT = {"h": "fp16", "b": "bf16", "t": "tf32"}


def kernel_precision(name: str) -> str:
    """A CUDA kernel's precision from its name, "" where it does not say."""
    m = _NVJET.search(name)
    if m:
        return _NVJET_INPUT.get(m.group(1).lower(), "")
    for p, rx in _KERNEL_PRECISION:
        if rx.search(name):
            return p
    return ""


def recording_options(cuda: bool, torch_version: str = "") -> Dict[str, bool]:
    """torch.profiler.profile's options beside the activities. Shapes are
    recorded on a GPU too: only with them does the profiler keep an op's
    input dtypes, which give a kernel its precision (launched_precision).
    Not on torch 2.0 (nor a 2.1 pre-release, which may predate the fix):
    there the profiler asks a tensor of symbolic sizes (torch.compile with
    dynamic shapes) for its sizes, which raises inside the job's own op
    (pytorch#104320, fixed in 2.1); a kernel's precision then comes from
    its name only. Stacks only on a GPU: they name the
    host call an idle gap follows."""
    return {"record_shapes": not _is_torch_2_0(torch_version), "with_stack": cuda}


def _is_torch_2_0(version: str) -> bool:
    """version (torch.__version__: "2.0.1+cu118") is a 2.0 release, or a
    2.1 pre-release ("2.1.0a0+4136153", "2.1.0.dev20230620")."""
    parts = str(version).split("+")[0].split(".")
    if len(parts) < 2 or parts[0] != "2":
        return False
    if parts[1] == "0":
        return True
    return parts[1] == "1" and ("a" in ".".join(parts[2:]) or "dev" in ".".join(parts[2:]))


def launched_precision(kernel: "Event", op: "Optional[Event]") -> str:
    """A matmul or conv kernel's precision: its launching op's inputs where
    they are of a reduced precision (bf16, fp16, fp8, int8: the kernel
    runs on them), else its name (fp32 inputs run in fp32 or TF32, which
    only the kernel says). A name alone misleads: a bf16 MLP under
    autocast on an H200 ran cuBLAS's nvjet_tst_… kernels, read as tf32,
    at 599 TFLOPS, above TF32's dense peak."""
    by_name = kernel_precision(kernel.name)
    by_op = dtype_precision(op.dtypes) if op is not None else ""
    if by_op in ("bf16", "fp16", "fp8", "int8"):
        return by_op
    return by_name


def dtype_precision(dtypes: Any) -> str:
    """An op's precision from its inputs' dtypes: the first tensor's, ""
    where none is known."""
    try:
        for d in dtypes or ():
            if d and d != "Scalar":
                return _DTYPE_PRECISION.get(str(d), "")
    except TypeError:
        return ""
    return ""


def printable(s: str, n: int = MAX_LABEL) -> str:
    """s with every unprintable character a "?", cut to n characters."""
    s = "".join(ch if ch.isprintable() else "?" for ch in str(s))
    return s if len(s) <= n else s[: n - 3] + "..."


def parse_steps(raw: Any) -> Optional[int]:
    """Steps to record from outside (the environment, a request): "" is
    DEFAULT_STEPS; an integer in [1, MAX_STEPS], else None."""
    if raw is None or str(raw).strip() == "":
        return DEFAULT_STEPS
    try:
        v = int(str(raw).strip())
    except ValueError:
        return None
    return v if 1 <= v <= MAX_STEPS else None


def _us(e: Any, what: str) -> float:
    """A Kineto event's start or duration in µs (torch 2.x has …_ns too)."""
    f = getattr(e, what + "_ns", None)
    if f is not None:
        try:
            return f() / 1000.0
        except Exception:  # a binding that lists it without giving it
            pass
    return float(getattr(e, what + "_us")())


def _is_device(e: Any) -> bool:
    return "CPU" not in str(e.device_type())


class Event:
    """What the summary needs of one profiler event."""

    __slots__ = ("name", "start", "end", "thread", "device", "dtypes", "stack", "corr")

    def __init__(self, name: str, start: float, dur: float, thread: int, device: bool, dtypes: Any = (), stack: Any = (), corr: int = 0) -> None:
        self.name, self.start, self.end = name, start, start + max(dur, 0.0)
        self.thread, self.device = thread, device
        self.dtypes, self.stack = dtypes, stack
        # An op's correlation id; a kernel's is its launching op's (0:
        # not linked).
        self.corr = corr


def events_of(prof: Any) -> List[Event]:
    """The events of a stopped torch.profiler.profile, read from its Kineto
    results (torch 1.13 and 2.x: profile.profiler.kineto_results)."""
    res = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if res is None:
        raise RuntimeError("this torch's profiler gives no Kineto results")
    out = []
    raw = list(res.events())
    user_scopes = set()  # torch < 2.5: the names of the host's record_function scopes
    for e in raw:
        try:
            if not _is_device(e) and e.scope() == USER_SCOPE:
                user_scopes.add(e.name())
        except Exception:
            pass
    for e in raw:
        name = e.name()
        if not name or name.startswith("[memory]") or name.startswith("ProfilerStep"):
            continue
        dev = _is_device(e)
        if dev:
            # A gpu_user_annotation (a record_function projected onto the
            # GPU's timeline: DDP's forward, torch.optim's step) is no
            # kernel: torch >= 2.5 says so; before, its name is a host's.
            try:
                ua = bool(e.is_user_annotation())
            except Exception:
                ua = name in user_scopes
            if ua:
                continue
        try:
            dtypes = e.dtypes() if not dev else ()
        except Exception:
            dtypes = ()
        try:
            stack = e.stack() if not dev else ()
        except Exception:
            stack = ()
        try:
            corr = int(e.linked_correlation_id() if dev else e.correlation_id())
        except Exception:
            corr = 0
        out.append(Event(name, _us(e, "start"), _us(e, "duration"), e.start_thread_id(), dev, dtypes, stack, corr))
    return out


def self_times(evs: List[Event]) -> List[Tuple[Event, float]]:
    """Each host event with its self time (µs): its span less its
    children's, children being the events of its thread inside it."""
    out: List[Tuple[Event, float]] = []
    by_thread: Dict[int, List[Event]] = {}
    for e in evs:
        if not e.device:
            by_thread.setdefault(e.thread, []).append(e)
    for tevs in by_thread.values():
        tevs.sort(key=lambda e: (e.start, -e.end))
        stack: List[List[Any]] = []  # [event, children's µs]
        for e in tevs:
            while stack and stack[-1][0].end <= e.start:
                top = stack.pop()
                out.append((top[0], max(0.0, (top[0].end - top[0].start) - top[1])))
            if stack:
                stack[-1][1] += e.end - e.start
            stack.append([e, 0.0])
        while stack:
            top = stack.pop()
            out.append((top[0], max(0.0, (top[0].end - top[0].start) - top[1])))
    return out


def _loop_thread(evs: List[Event]) -> Optional[int]:
    """The loop's thread (the profiler's thread ids are its own, not the
    OS's): the one with the hook's marks (MARK), else the one that called
    the DataLoader's next() most, else the one whose top-level events span
    the most (on a GPU that may be autograd's, whose backward spans about
    twice the forward)."""
    by: Dict[int, List[Event]] = {}
    for e in evs:
        if not e.device:
            by.setdefault(e.thread, []).append(e)
    for prefix in (MARK, INPUT_EVENT):
        takers = {t: sum(1 for e in tevs if e.name.startswith(prefix)) for t, tevs in by.items()}
        if takers and max(takers.values()) > 0:
            return max(takers, key=lambda t: takers[t])
    best, most = None, -1.0
    for t, tevs in by.items():
        total = sum(e.end - e.start for e in _top_level(tevs))
        if total > most:
            best, most = t, total
    return best


def job_site(stack: Any) -> str:
    """The job's innermost frame in a profiler stack ("file.py(87): fn"),
    as "file.py:87", or "" where none is the job's (torch's, the hook's)."""
    try:
        frames = list(stack or ())
    except TypeError:
        return ""
    for f in frames:
        f = str(f)
        m = re.match(r"(.*)\((\d+)\): ", f)
        if not m:
            continue
        path = m.group(1)
        if "/torch/" in path or "gpuwatch_hook" in path or path.startswith("<"):
            continue
        try:
            cwd = os.getcwd() + os.sep
            if path.startswith(cwd):
                path = path[len(cwd) :]
        except OSError:
            pass
        return "%s:%s" % (path, m.group(2))
    return ""


class Summary:
    """What one recording measured, per step."""

    def __init__(self) -> None:
        self.device = "cpu"
        self.parts: Dict[Tuple[str, str], float] = {}  # (category, precision) -> seconds per step
        self.busy: Optional[float] = None  # seconds per step the device (or the loop's ops) worked
        self.idle: Optional[float] = None  # seconds per step the device waited (GPU only)
        self.sync: Optional[float] = None  # of idle, the waits that began in a host sync (SYNC_CALLS)
        self.idle_sites: List[Tuple[str, float]] = []  # (after, seconds per step), most first
        self.input: Optional[float] = None  # seconds per step inside the DataLoader's next() (CPU only)


def summarize(evs: List[Event], steps: int, cuda: bool) -> Summary:
    """Sums a recording's events into seconds per step (Summary)."""
    s = Summary()
    steps = max(steps, 1)
    loop = _loop_thread(evs)
    evs = [e for e in evs if e.name != MARK]
    if cuda and any(e.device for e in evs):
        _summarize_cuda(s, evs, steps, loop)
        return s
    # The loop's time inside the DataLoader's next() (its fetch, with
    # num_workers=0; its wait otherwise) is the input's, not the step's
    # work: it and the ops inside it are left out, and said apart.
    inside = [(e.start, e.end) for e in evs if e.thread == loop and not e.device and e.name.startswith(INPUT_EVENT)]
    s.input = sum(b - a for a, b in inside) / 1e6 / steps
    busy = 0.0
    for e, self_us in self_times(evs):
        if e.thread != loop or self_us <= 0 or any(a <= e.start and e.end <= b for a, b in inside):
            continue
        cat = category(e.name)
        prec = dtype_precision(e.dtypes) if cat in ("matmul", "conv") else ""
        k = (cat, prec)
        s.parts[k] = s.parts.get(k, 0.0) + self_us / 1e6 / steps
        busy += self_us
    s.busy = busy / 1e6 / steps
    return s


def _summarize_cuda(s: Summary, evs: List[Event], steps: int, loop: Optional[int]) -> None:
    s.device = "cuda"
    dev = sorted((e for e in evs if e.device), key=lambda e: e.start)
    # The ops by correlation id: any op with dtypes (aten's or a custom
    # one's); the runtime's calls (cudaLaunchKernel), whose ids are
    # CUPTI's own, carry none.
    ops = {e.corr: e for e in evs if not e.device and e.corr > 0 and e.dtypes}
    for e in dev:
        cat = category(e.name)
        prec = launched_precision(e, ops.get(e.corr)) if cat in ("matmul", "conv") else ""
        k = (cat, prec)
        s.parts[k] = s.parts.get(k, 0.0) + (e.end - e.start) / 1e6 / steps
    # The union of the device's intervals, and the gaps between them within
    # the recording's span (its host events' first start to last end).
    host = [e for e in evs if not e.device]
    lo = min([e.start for e in host] + [dev[0].start])
    hi = max([e.end for e in host] + [e.end for e in dev])
    merged: List[List[float]] = []
    for e in dev:
        if merged and e.start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e.end)
        else:
            merged.append([e.start, e.end])
    busy = sum(b - a for a, b in merged)
    gaps = []
    prev = lo
    for a, b in merged:
        if a - prev >= MIN_GAP_US:
            gaps.append((prev, a))
        prev = max(prev, b)
    if hi - prev >= MIN_GAP_US:
        gaps.append((prev, hi))
    tops = _top_level([e for e in host if e.thread == loop])
    top_starts = [e.start for e in tops]
    sites: Dict[str, float] = {}
    for a, b in gaps:
        k = _host_call_at(tops, a, top_starts)
        sites[k] = sites.get(k, 0.0) + (b - a)
    # Any thread's sync counts: the runtime's calls may carry the OS
    # thread's id where the ops carry the profiler's own.
    syncs = _union([(e.start, e.end) for e in host if e.name in SYNC_CALLS])
    starts = [a for a, _ in syncs]
    s.busy = busy / 1e6 / steps
    s.idle = sum(b - a for a, b in gaps) / 1e6 / steps
    s.sync = sum(b - a for a, b in gaps if _inside(syncs, starts, a)) / 1e6 / steps
    ranked = sorted(sites.items(), key=lambda kv: -kv[1])
    kept = ranked[: MAX_IDLE_SITES - 1] if len(ranked) > MAX_IDLE_SITES else ranked
    rest = sum(v for _, v in ranked[len(kept) :])
    s.idle_sites = [(k, v / 1e6 / steps) for k, v in kept]
    if rest > 0:
        s.idle_sites.append(("other", rest / 1e6 / steps))


def _union(spans: List[Tuple[float, float]]) -> List[Tuple[float, float]]:
    """The union of intervals, as disjoint ones by start."""
    out: List[Tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _inside(spans: List[Tuple[float, float]], starts: List[float], t: float) -> bool:
    """t lies in one of the disjoint spans (starts: their starts)."""
    i = bisect.bisect_right(starts, t) - 1
    return i >= 0 and t <= spans[i][1]


def _top_level(evs: List[Event]) -> List[Event]:
    """The events of one thread that no other of them holds, by start."""
    out: List[Event] = []
    end = -1.0
    for e in sorted(evs, key=lambda e: (e.start, -e.end)):
        if e.start >= end:
            out.append(e)
            end = e.end
    return out


def _host_call_at(tops: List[Event], t: float, starts: Optional[List[float]] = None) -> str:
    """The host call that ran when a gap began at t: the top-level op
    running then, else the last one that had ended; with the job's
    file:line where the profiler's stack gives it."""
    if starts is None:
        starts = [e.start for e in tops]
    i = bisect.bisect_right(starts, t) - 1
    best = tops[i] if i >= 0 else None
    if best is None:
        return "(start)"
    site = job_site(best.stack)
    return printable(best.name + (" " + site if site else ""))


# Where torch starts a profiler (torch.autograd.profiler.profile's
# _prepare_trace and _start_trace, emit_nvtx, the legacy profiler): the
# functions they look up at each call, by module and name.
_PROFILER_STARTS = (
    ("torch.autograd.profiler", "_prepare_profiler"),
    ("torch.autograd.profiler", "_enable_profiler"),
    ("torch.autograd", "_prepare_profiler"),
    ("torch.autograd", "_enable_profiler"),
    ("torch.autograd", "_enable_profiler_legacy"),
    ("torch.autograd.profiler_legacy", "_enable_profiler_legacy"),
)


def _profiler_on(torch: Any) -> bool:
    """A torch.profiler of the job's is recording: on this thread (torch's
    per-thread state), or on any (torch.autograd.profiler's process-wide
    flag, where torch has one: 2.x). Kineto, which collects the trace, is
    one a process: a second start cancels the trace already running."""
    try:
        if torch.autograd._profiler_enabled():
            return True
    except Exception:
        pass
    return getattr(getattr(getattr(torch, "autograd", None), "profiler", None), "_is_profiler_enabled", False) is True


def _give_way_to_the_job(torch: Any, give_way: Any) -> "List[Tuple[Any, str, Any, Any]]":
    """While gpuwatch records, each of torch's profiler starts first calls
    give_way (which ends the recording), then torch's own: a profiler the
    job starts meanwhile would otherwise raise "Profiler is already
    enabled on this thread" in the job. Returns what _restore puts back;
    installed only for the few steps recorded."""
    patched = []
    for mod_name, name in _PROFILER_STARTS:
        mod = sys.modules.get(mod_name)
        orig = getattr(mod, name, None)
        if mod is None or not callable(orig):
            continue

        def wrapper(*a: Any, __orig: Any = orig, **k: Any) -> Any:
            try:
                give_way()
            except Exception:  # never into the job's profiler start
                pass
            return __orig(*a, **k)

        try:
            setattr(mod, name, wrapper)
        except Exception:
            continue
        patched.append((mod, name, orig, wrapper))
    return patched


def _restore(patched: "List[Tuple[Any, str, Any, Any]]") -> None:
    """Puts torch's profiler starts back, where nothing else replaced
    them since."""
    for mod, name, orig, wrapper in patched:
        try:
            if getattr(mod, name, None) is wrapper:
                setattr(mod, name, orig)
        except Exception:
            pass


def _lean_stop(prof: Any) -> None:
    """Makes prof's stop keep torch's Kineto results only (events_of reads
    them). torch before 2.4 also parses every event into a Python
    FunctionEvent at the stop, for key_averages and tables the hook never
    reads: 28 s and 2 GB for a recording of 900 000 ops on torch 1.13.
    An attribute of the hook's own profiler object (torch.profiler's
    profile holds torch.autograd.profiler's as .profiler), not a patch
    of torch's: a profiler of the job's parses as it always did."""
    inner = getattr(prof, "profiler", None)
    if inner is not None and hasattr(inner, "_parse_kineto_results"):
        inner._parse_kineto_results = _no_function_events


def _no_function_events(*_: Any) -> List[Any]:
    return []


def _rss() -> int:
    """The process's resident bytes (0: unknown)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):
    _PAGE = 4096


def _give_memory_back() -> None:
    """Hands the memory the recording let go back to the system (glibc's
    malloc_trim): freed, the profiler's events stay in the job's resident
    size otherwise (1 GB after a recording of 200 000 ops, on torch
    1.13). A few ms; nothing where the C library has none."""
    try:
        import ctypes  # only here: a job never asked to record pays nothing

        libc = ctypes.CDLL(None)
        trim = getattr(libc, "malloc_trim", None)
        if trim is not None:
            trim(0)
    except Exception:
        pass


class GPUProfile:
    """One recording. The loop's thread drives it through saw() (each
    batch taken) and epoch_ended(); the server's threads read figures()
    under lock."""

    def __init__(self, steps: int, warm_at: int = 0) -> None:
        self.lock = threading.Lock()
        self.steps = steps
        self.warm_at = warm_at  # the loop's batch count before which it does not start
        self.state = WAITING
        self.reason = ""
        self.device = ""
        self._seen: List[float] = []  # batch times while waiting (the last BEFORE + 1)
        self._seen_cpu: List[int] = []  # the process's CPU ns at those batches
        self._cpu0 = 0  # the process's CPU ns when the start began
        self._before_cpu = 0.0  # the process's CPU ns per step before the recording
        self._own_ns = 0  # the loop thread's CPU ns in the start, stop and summary
        self._other0 = 0  # the hook's stack-profile CPU ns (part profiler) at the start
        self._prof: Any = None
        self._patched: List[Tuple[Any, str, Any, Any]] = []  # _give_way_to_the_job's, while it records
        self._thread = 0  # the thread it records on (the loop's)
        self._asked_away = ""  # why another thread's profiler start asked this one to end (at the loop's next batch)
        self._ended = threading.Event()  # set once it no longer records (done or refused)
        self._cuda = False
        self._t0 = 0.0  # the first recorded step's start (a batch taken)
        self._n = 0  # steps recorded
        self._overhead = 0.0  # seconds the loop's thread spent starting, stopping, summing
        self._rss0 = 0  # the process's resident bytes when it started (0: unknown)
        self.before_step: Optional[float] = None
        self.step_seconds: Optional[float] = None
        self.cost_seconds: Optional[float] = None
        self.cost_cpu_seconds: Optional[float] = None
        self.summary: Optional[Summary] = None

    def busy(self) -> bool:
        return self.state in (WAITING, RECORDING)

    def saw(self, batches: int, now: float) -> None:
        """A batch the loop took (its count so far, at now): the boundary
        between two steps. Never raises."""
        try:
            if self.state == WAITING:
                self._seen.append(now)
                del self._seen[: -(BEFORE + 1)]
                self._seen_cpu.append(time.process_time_ns())
                del self._seen_cpu[: -(BEFORE + 1)]
                if len(self._seen) > BEFORE and batches >= self.warm_at:
                    self._start(now)
            elif self.state == RECORDING and self._asked_away:
                self._refuse(self._asked_away)
            elif self.state == RECORDING:
                self._mark_step()
                self._n += 1
                if self._n >= self.steps:
                    self._stop(now)
                else:
                    past = self._past_bounds()
                    if past:
                        self._stop(now, "stopped after %d of the %d steps asked: %s" % (self._n, self.steps, past))
        except Exception as e:  # never into the job
            self._refuse("%s: %s" % (type(e).__name__, e))

    def epoch_ended(self, now: float) -> None:
        """The loop's iterator ran out: a recording under way ends with the
        steps it has. The step on the last batch has run since its saw()
        (the loop asked for another batch after it), so it is one more
        step recorded: counted, the time and CPU per step are not a step
        too high. Never raises."""
        try:
            if self.state == RECORDING and self._asked_away:
                self._refuse(self._asked_away)
            elif self.state == RECORDING:
                self._n += 1
                short = "the epoch ended after %d of the %d steps asked" % (self._n, self.steps) if self._n < self.steps else ""
                self._stop(now, short)
        except Exception as e:
            self._refuse("%s: %s" % (type(e).__name__, e))

    def _past_bounds(self) -> str:
        """Why the recording must end at this step's end ("": it goes on):
        its wall time or the process's growth past their bounds."""
        ran = _env.clock() - self._t0
        if ran >= MAX_RECORD_SECONDS:
            return "the recording's bound of %g s" % MAX_RECORD_SECONDS
        grew = _rss() - self._rss0
        if self._rss0 > 0 and grew >= MAX_RECORD_BYTES:
            return "the job grew %d MiB while recording (bound %d MiB)" % (grew >> 20, MAX_RECORD_BYTES >> 20)
        return ""

    def _start(self, now: float) -> None:
        t, own = _perf(), _cost.now()
        self._rss0 = _rss()
        self._cpu0 = time.process_time_ns()
        self._other0 = _cost.cost.part_ns("profiler")
        seen, cpu = self._seen, self._seen_cpu
        self.before_step = (seen[-1] - seen[0]) / (len(seen) - 1)
        self._before_cpu = (cpu[-1] - cpu[0]) / (len(cpu) - 1) if len(cpu) == len(seen) else 0.0
        self._seen, self._seen_cpu = [], []
        torch = sys.modules.get("torch")  # the job's own: the hook never imports it
        tp = getattr(torch, "profiler", None)
        profile = getattr(tp, "profile", None)
        acts_t = getattr(tp, "ProfilerActivity", None)
        if profile is None or acts_t is None:
            return self._refuse("torch.profiler is not there (torch not imported, or too old)")
        ProfilerActivity = acts_t  # noqa: N806 (torch's name)
        acts = [ProfilerActivity.CPU]
        cuda = False
        try:  # never initialise CUDA: only where the job has
            cuda = bool(torch.cuda.is_available() and torch.cuda.is_initialized())
        except Exception:
            cuda = False
        if cuda:
            acts.append(ProfilerActivity.CUDA)
        if _profiler_on(torch):
            return self._refuse("the job's own torch.profiler is recording (torch allows one at a time)")
        prof = profile(activities=acts, **recording_options(cuda, str(getattr(torch, "__version__", ""))))
        prof.start()
        self._thread = threading.get_ident()
        self._patched = _give_way_to_the_job(torch, self._give_way)
        with self.lock:
            self._prof, self._cuda = prof, cuda
            self.device = "cuda" if cuda else "cpu"
            self.state = RECORDING
        self._overhead += _perf() - t
        self._own_ns += _cost.now() - own
        self._t0 = _env.clock()  # after the start: the steps recorded begin here
        self._mark_step()

    def _mark_step(self) -> None:
        """The hook's mark (MARK) on this thread, the loop's, in the
        recording: a record_function entered and left, a few µs once a
        step while it records. Where torch has none, nothing."""
        rf = getattr(getattr(getattr(sys.modules.get("torch"), "autograd", None), "profiler", None), "record_function", None)
        if rf is not None:
            with rf(MARK):
                pass

    def _give_way(self) -> None:
        """The job starts a torch.profiler of its own while this one
        records. On the thread this one records on, torch would raise in
        the job's call (one a thread): this recording ends first, summing
        nothing. On another thread, Kineto (one trace a process) would
        cancel this trace, and this one's later stop would end the job's:
        this one can only be stopped from its own thread, so the job's
        start waits for the loop's next batch, where it ends, at most
        GIVE_WAY_WAIT (a loop stuck meanwhile, joining that very thread,
        is not waited for: the recording ends at its next batch all the
        same, and says so)."""
        if self.state != RECORDING:
            return
        if threading.get_ident() == self._thread:
            self._refuse("the job started its own torch.profiler while gpuwatch recorded: gpuwatch's recording gave way")
            return
        self._asked_away = "the job started a torch.profiler on another thread while gpuwatch recorded: gpuwatch's recording gave way (one trace a process)"
        if not self._ended.wait(GIVE_WAY_WAIT):
            self._asked_away += "; its start waited %g s for the loop's next batch, then went first" % GIVE_WAY_WAIT

    def _stop(self, now: float, short: str = "") -> None:
        """Ends the recording with its steps; short says why it has fewer
        than were asked (the figures' reason, with the state done)."""
        end = _env.clock()
        t, own = _perf(), _cost.now()
        _restore(self._patched)
        self._patched = []
        prof, self._prof = self._prof, None
        if prof is None:  # it gave way to the job's own profiler meanwhile
            return
        try:
            _lean_stop(prof)
            prof.stop()
            evs = events_of(prof)
        finally:
            del prof  # the profiler and its events are let go
        s = summarize(evs, self._n, self._cuda)
        del evs
        _give_memory_back()
        wall = (end - self._t0) / self._n
        self._overhead += _perf() - t
        extra = max(0.0, wall - (self.before_step or wall)) * self._n
        self._own_ns += _cost.now() - own
        # The process's CPU beyond its steps' before (every thread), never
        # less than the loop thread's own start, stop and summary. That own
        # part reaches the hook's cost through the caller (_timing times
        # saw() as part gpu_profile); the rest is added here.
        # A stack profile taken meanwhile is counted in its own part, not
        # again here; the hook's regular work (the loop's, the server's
        # scrapes) is in the steps before too.
        other = _cost.cost.part_ns("profiler") - self._other0
        cpu_ns = max(float(self._own_ns), time.process_time_ns() - self._cpu0 - self._before_cpu * self._n - other)
        _cost.cost.add("gpu_profile", int(cpu_ns - self._own_ns))
        with self.lock:
            self.summary = s
            self.device = s.device
            self.step_seconds = wall
            self.steps = self._n
            self.reason = short
            self.cost_seconds = extra + self._overhead
            self.cost_cpu_seconds = cpu_ns / 1e9
            self.state = DONE
        self._ended.set()

    def _refuse(self, why: str) -> None:
        _restore(self._patched)
        self._patched = []
        prof, self._prof = self._prof, None
        if prof is not None:
            try:
                _lean_stop(prof)
                prof.stop()
            except Exception:
                pass
            del prof
            _give_memory_back()
        with self.lock:
            self.state, self.reason = REFUSED, printable(why)
        self._ended.set()

    def figures(self) -> dict:
        """What the metrics page shows: the state, and what was measured."""
        with self.lock:
            s = self.summary
            return {
                "state": self.state,
                "reason": self.reason,
                "device": self.device,
                "steps": self.steps,
                "before_step_seconds": self.before_step,
                "step_seconds": self.step_seconds,
                "cost_seconds": self.cost_seconds,
                "cost_cpu_seconds": self.cost_cpu_seconds,
                "busy_seconds_per_step": s.busy if s else None,
                "idle_seconds_per_step": s.idle if s else None,
                "sync_seconds_per_step": s.sync if s else None,
                "input_seconds_per_step": s.input if s else None,
                "parts": sorted(s.parts.items(), key=lambda kv: (CATEGORIES.index(kv[0][0]), kv[0][1])) if s else [],
                "idle_sites": list(s.idle_sites) if s else [],
            }
