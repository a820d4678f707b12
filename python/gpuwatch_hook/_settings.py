"""What the job already does, read by the hook, never guessed: whether its
step's forward runs under autocast and in which dtype, the float32 matmul
precision and the TF32 and cudnn.benchmark switches, the conv weights'
memory format, whether a module is torch.compile'd, whether CUDA graphs
replay, the batch size, the GPU memory left, and the model's FLOPs per
step (docs/prometheus.md, "The job's settings").

Read in one step's window, once every READ_EVERY seconds (the first at
the first batch): when the loop takes a batch (_timing.Stats.record) a
global module forward pre-hook is registered, and sees that step's
forwards of modules that hold parameters (an augmentation or a loss
without parameters is passed over). The reading is the first top-level
one's — autocast as torch has it there, that module's submodules walked
once — replaced by the first training forward's where the first was an
evaluation (a frozen encoder under no_grad is not the model trained);
inside it, autocast read off is looked for again at its submodules (a
forward decorated with torch.autocast, or a `with` inside it). Every
top-level forward's FLOPs are counted and summed (Window). A reading of
an evaluation's step alone is followed by another at the next batch
(EVAL_REREADS at most), so a validation before training does not stand
for it. The loop's next ask for a batch after a module with parameters
ran closes the window (removes the hook, reads the GPU memory and whether
a CUDA graph replayed in between): a loop that prefetches a batch ahead
asks once before it trains (Window.ask). Between
windows nothing is installed: a training step costs the hook nothing for
this.

A setting the hook could not read is None and left off the page, never
a made-up value. Inside torch.compile's tracing the hook does nothing
(is_compiling() is tested first). A leaf: imports only _env. Its two
patches (CUDAGraph.replay, the forward pre-hook) are rows of _patches."""

from __future__ import annotations

import importlib
import sys
import threading
import time
import weakref
from typing import Any, Dict, List, Optional, Tuple

from . import _env

#: Seconds between two windows: a setting changed while the job runs is
#: seen within this.
READ_EVERY = 60.0

#: Readings of an evaluation's step (no grad, or the model in eval mode)
#: followed by another at the next batch instead of after READ_EVERY:
#: enough for a sanity check's or a validation's batches before training,
#: few enough that an evaluation-only job pays them once.
EVAL_REREADS = 32
#: torch's RNN kernels (torch.lstm is torch._VF.lstm, which nn.LSTM calls):
#: shape_counter sees each as one call, its matmuls inside.
RNN_CALLS = ("lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell")

#: The most submodules walked (a bound on one read's cost).
MAX_MODULES = 200_000

_replays = 0  # CUDAGraph.replay calls since the patch
_graphs_patched = False
_graphs_tried = False
# The FLOPs are counted once per process: False (not yet), EVAL (on an
# evaluation's forward, 1×: the first training forward counts again, 3×),
# True (on a training forward).
_flops_done: Any = False
EVAL = "eval"
#: Why the process's count is void ("": it is not): FROZEN, a training
#: forward with a frozen weight that FlopCounterMode cannot count (Window.void_frozen).
_flops_void = ""
#: The trainable parameters' elements of the module counted (or voided)
#: last; None where nothing was. A count is of the weights that train
#: then: where that changes (gradual unfreezing), the next training
#: forward is counted again.
_flops_trainable: Optional[int] = None
FROZEN = "a training forward with frozen weights, whose backward FlopCounterMode's forward count ×3 overstates"
#: The codes of a void count as the hook publishes them (info_labels'
#: flops_void; sample.JobSettings.FLOPsVoid says them in words): a partly
#: frozen model under FlopCounterMode, an RNN module neither counter reads.
VOID_CODES = {FROZEN: "frozen", "rnn": "rnn", "einsum": "einsum"}

#: Module calls (of modules with parameters) a window looks at: the step's
#: first RECHECKS at most, then its pre-hook goes (a forward under way is
#: still ended and counted by its own forward hook).
RECHECKS = 4096

#: A window's hook removes itself at the first module call past this many
#: seconds: a loop that left in the window's step takes no next batch.
MAX_SECONDS = 30.0
_warn_filtered = False


class Settings:
    """One reading. None: not read."""

    __slots__ = (
        "autocast", "autocast_dtype", "autocast_device", "matmul_precision", "matmul_tf32", "cudnn_tf32",
        "cudnn_benchmark", "forward", "training", "conv_format", "has_conv", "has_linear", "modules", "compiled",
        "cuda_graphs", "batch_size", "mem_free", "mem_total", "max_allocated", "flops_per_step", "flops_void", "read_at",
        "device_tf32", "weights_dtype", "intra_op_threads",
    )

    def __init__(self) -> None:
        for k in Settings.__slots__:
            setattr(self, k, None)

    def merge_forward(self, old: Optional["Settings"]) -> None:
        """Keeps old's forward readings where this window saw no forward,
        or saw an evaluation's (no grad) after a training step's."""
        if old is None or old.forward is None:
            return
        if self.forward is None or (not self.training and old.training):
            for k in FORWARD:
                setattr(self, k, getattr(old, k))
        if self.flops_per_step is None and not _flops_void:
            # (A count void since, of a partly frozen model's training
            # forward: an evaluation's count read before is not the step's.)
            self.flops_per_step = old.flops_per_step
        if self.flops_void is None and self.flops_per_step is None:
            self.flops_void = old.flops_void


#: The readings made inside the model's forward.
FORWARD = ("autocast", "autocast_dtype", "autocast_device", "forward", "training", "conv_format", "has_conv", "has_linear", "modules", "compiled", "batch_size", "weights_dtype",
           "intra_op_threads")


def _torch() -> Any:
    return sys.modules.get("torch")


def first_tensor(x: Any, torch: Any, depth: int = 0) -> Any:
    """The first tensor in a module's arguments (a tuple, list or dict,
    four levels deep at most), or None."""
    if isinstance(x, torch.Tensor):
        return x
    if depth >= 4:
        return None
    if isinstance(x, (tuple, list)):
        for v in x[:8]:
            t = first_tensor(v, torch, depth + 1)
            if t is not None:
                return t
    elif isinstance(x, dict):
        for v in list(x.values())[:8]:
            t = first_tensor(v, torch, depth + 1)
            if t is not None:
                return t
    return None


def read_flags(torch: Any, s: Settings) -> None:
    """The process-wide switches: float32 matmul precision, TF32 for
    matmuls and convs, cudnn.benchmark."""
    try:
        p = torch.get_float32_matmul_precision()
        s.matmul_precision = p if p in ("highest", "high", "medium") else None
    except Exception:
        pass
    backends = getattr(torch, "backends", None)
    matmul = getattr(getattr(backends, "cuda", None), "matmul", None)
    cudnn = getattr(backends, "cudnn", None)
    # torch ≥ 2.9 says fp32_precision ("ieee", "tf32"); allow_tf32 before.
    for obj, owner, attr in ((matmul, matmul, "matmul_tf32"), (getattr(cudnn, "conv", None) or cudnn, cudnn, "cudnn_tf32")):
        try:
            fp = getattr(obj, "fp32_precision", None)
        except Exception:  # torch's cuBLAS module raises for a name it lacks
            fp = None
        if fp in ("ieee", "tf32"):
            setattr(s, attr, fp == "tf32")
            continue
        try:
            v = getattr(owner, "allow_tf32", None)
            setattr(s, attr, v if isinstance(v, bool) else None)
        except Exception:
            pass
    try:
        v = cudnn.benchmark
        s.cudnn_benchmark = v if isinstance(v, bool) else None
    except Exception:
        pass


def read_threads(torch: Any, s: Settings) -> None:
    """torch's intra-op pool (torch.set_num_threads), read on the
    forward's thread: with OpenMP the count is the calling thread's, and
    the hook's own threads read the default (a review). Advice to cap the
    pool checks it first (a user's review: a script that called
    torch.set_num_threads(1) was told to)."""
    try:
        n = torch.get_num_threads()
        s.intra_op_threads = n if isinstance(n, int) and n > 0 else None
    except Exception:
        pass


def read_autocast(torch: Any, device: str, s: Settings) -> None:
    """Whether autocast is on for device ("cuda", "cpu") here, and its
    dtype: torch ≥ 2.4 takes the device type; before, one function per
    device."""
    on = dtype = None
    try:
        try:
            on = torch.is_autocast_enabled(device)
        except TypeError:  # torch < 2.4: no argument (CUDA's)
            on = torch.is_autocast_enabled() if device == "cuda" else torch.is_autocast_cpu_enabled() if device == "cpu" else None
        if on:
            get = getattr(torch, "get_autocast_dtype", None)
            if get is not None:
                dtype = get(device)
            elif device == "cuda":
                dtype = torch.get_autocast_gpu_dtype()
            elif device == "cpu":
                dtype = torch.get_autocast_cpu_dtype()
    except Exception:
        return
    if not isinstance(on, bool):
        return
    s.autocast, s.autocast_device = on, device
    if on:
        s.autocast_dtype = {torch.bfloat16: "bfloat16", torch.float16: "float16"}.get(dtype)


def read_modules(torch: Any, module: Any, s: Settings) -> None:
    """The module's submodules: how many, whether convs and linears are
    among them, the 2-D convs' weight memory format, the dtype of most of
    their weights, whether any is torch.compile'd."""
    nn = torch.nn
    convs = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
    conv2d = (nn.Conv2d, nn.ConvTranspose2d)
    conv_names = {c.__name__ for c in convs}
    script = getattr(getattr(torch, "jit", None), "ScriptModule", ())
    ev = sys.modules.get("torch._dynamo.eval_frame")
    optimized = getattr(ev, "OptimizedModule", None)
    n = 0
    has_conv = has_linear = compiled = False
    last = first = 0  # 2-D conv weights only one format can say: channels_last, contiguous
    elements: Dict[str, int] = {}  # the linears' and convs' weights by dtype
    for m in module.modules():
        n += 1
        if n > MAX_MODULES:
            return
        if optimized is not None and isinstance(m, optimized):
            compiled = True
        elif getattr(m, "_compiled_call_impl", None) is not None:
            compiled = True
        # A TorchScript module (torch.jit.trace or script) is none of
        # nn's classes: its original_name is the class it was made from.
        scripted = getattr(m, "original_name", None) if isinstance(m, script) else None
        if isinstance(m, nn.Linear) or scripted == "Linear":
            has_linear = True
            _count_weight(torch, m, elements)
        elif scripted in conv_names:
            has_conv = True
            _count_weight(torch, m, elements)
        elif isinstance(m, convs):
            has_conv = True
            _count_weight(torch, m, elements)
            w = getattr(m, "weight", None)
            if isinstance(m, conv2d) and isinstance(w, torch.Tensor) and w.dim() == 4:
                cl = w.is_contiguous(memory_format=torch.channels_last)
                c = w.is_contiguous()
                if cl and not c:
                    last += 1
                elif c and not cl:
                    first += 1
    s.modules, s.has_conv, s.has_linear, s.compiled = n, has_conv, has_linear, compiled
    if last or first:
        s.conv_format = "channels_last" if not first else "contiguous" if not last else "mixed"
    s.weights_dtype = weights_dtype(elements)


#: The weight dtypes a reading names; another (an int8 quantized weight)
#: makes the model's weights "mixed" where it holds a tenth of them.
_WEIGHT_DTYPES = ("float32", "bfloat16", "float16", "float64")


def _count_weight(torch: Any, m: Any, elements: Dict[str, int]) -> None:
    """Adds a linear's or conv's weight elements to its dtype's count."""
    w = getattr(m, "weight", None)
    if isinstance(w, torch.Tensor):
        name = str(w.dtype).replace("torch.", "")
        elements[name] = elements.get(name, 0) + w.numel()


def weights_dtype(elements: Dict[str, int]) -> Optional[str]:
    """The dtype of at least 90 % of the linears' and convs' weight
    elements ("float32", "bfloat16", "float16", "float64"), "mixed" where
    none holds that much, None where no weight was seen. A model cast with
    .half() or .to(torch.bfloat16) runs its matmuls in that dtype with
    autocast off (a review: such a model was told to autocast to bf16)."""
    total = sum(elements.values())
    if total <= 0:
        return None
    name, most = max(elements.items(), key=lambda kv: kv[1])
    if most >= 0.9 * total and name in _WEIGHT_DTYPES:
        return name
    return "mixed"


def _patch_graphs(torch: Any) -> None:
    """Counts CUDAGraph.replay calls (torch.cuda.graphs; torch.compile's
    reduce-overhead replays them too), where torch has CUDA built in.
    Tried once; never raises (a failure is warned, naming the patch)."""
    global _graphs_patched, _graphs_tried
    if _graphs_tried:
        return
    _graphs_tried = True
    try:
        if not torch.backends.cuda.is_built():
            return
    except Exception:
        return
    _graphs_patched = _env.attempt("CUDAGraph.replay", patch_replay, torch)


def patch_replay(torch: Any) -> bool:
    """Wraps torch.cuda.graphs.CUDAGraph.replay to count the replays."""
    cls = torch.cuda.graphs.CUDAGraph
    orig = cls.replay

    def replay(self: Any, *a: Any, **k: Any) -> Any:
        global _replays
        _replays += 1
        return orig(self, *a, **k)

    replay.__name__, replay.__qualname__, replay.__doc__ = orig.__name__, getattr(orig, "__qualname__", "replay"), orig.__doc__
    cls.replay = replay
    return True


def _filter_compile_warning() -> None:
    """torch ≥ 2.5 warns, at each torch.compile'd module's call while a
    global module hook is registered, that the hook fires an extra time:
    the window's hook is the hook's, not the job's, so that one warning
    is not shown. Installed once (changing warnings.filters again and
    again would show the job's once-only warnings anew)."""
    global _warn_filtered
    if _warn_filtered:
        return
    _warn_filtered = True
    import warnings

    warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks", category=UserWarning)


def flop_counter(torch: Any, training: bool = False, checkpointed: bool = False) -> Any:
    """A counter of a forward's FLOPs, entered, left and asked
    get_total_flops(): torch.utils.flop_counter.FlopCounterMode (torch ≥
    2.1), the forward's FLOPs, which the Window multiplies (3× a training
    forward's); else shape_counter, whose count is the step's already
    (its attribute multiplied). Raises where torch has neither."""
    try:
        fc = importlib.import_module("torch.utils.flop_counter")
    except ImportError:
        return shape_counter(torch, training, checkpointed)
    return fc.FlopCounterMode(display=False)


def shape_counter(torch: Any, training: bool = False, checkpointed: bool = False) -> Any:
    """Counts a forward's FLOPs by the shapes of the calls that carry the
    work, for a torch without flop_counter: a
    torch.overrides.TorchFunctionMode (torch ≥ 1.13; AttributeError
    before) that sees each torch call the forward makes, where call_flops
    counts those it knows. A call inside a torch function written in
    Python runs with the mode off and is not seen, so
    F.multi_head_attention_forward is counted whole; an einsum of two
    operands and a tensordot by their shapes (einsum_flops). An einsum of
    three or more, whose order of contraction it does not follow, spoils
    the count, as do an RNN's kernels (nn.LSTM's torch.lstm, an LSTMCell's
    torch.lstm_cell: a step's matmuls inside one call) and a call
    call_flops fails on: get_total_flops() is then 0, no count rather than
    a wrong one, and void names why ("einsum", "rnn"; "" a call it failed
    on).

    training: a training forward's (Window.begin), whose calls are each
    counted with their backward (grad_flops: 3× a trained layer's, 2×
    a frozen one's that a gradient goes back through, 1× one's that none
    does), so the count is the step's (multiplied: the Window does not
    multiply it again); else each call 1×. checkpointed: the forward is a
    reentrant checkpoint's first pass, under no_grad (grad_flops)."""
    F, T = torch.nn.functional, torch.Tensor
    # The calls counted, each with the argument whose last dimension a
    # matmul sums over (a conv: whether it is transposed).
    kinds = {f: ("mm", 0) for f in (torch.matmul, T.matmul, T.__matmul__, torch.mm, T.mm, torch.bmm, T.bmm)}
    kinds[F.linear] = ("linear", 0)
    kinds.update({f: ("mm", 1) for f in (torch.addmm, T.addmm, torch.baddbmm, T.baddbmm)})
    kinds.update({f: ("conv", False) for f in (F.conv1d, F.conv2d, F.conv3d)})
    kinds.update({f: ("conv", True) for f in (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)})
    kinds[F.multi_head_attention_forward] = ("attention", None)
    if hasattr(F, "scaled_dot_product_attention"):  # torch 2.0
        kinds[F.scaled_dot_product_attention] = ("sdpa", None)
    kinds[torch.einsum] = ("einsum", None)
    kinds[torch.tensordot] = ("tensordot", None)
    for name in RNN_CALLS:
        f = getattr(torch, name, None)
        if f is not None:
            kinds[f] = ("unread", "rnn")

    class ShapeCounter(torch.overrides.TorchFunctionMode):
        multiplied = True

        def __init__(self) -> None:
            super().__init__()
            self.total = 0
            self.spoiled = False
            self.void = ""  # why spoiled, where it knows: "einsum", "rnn"
            self.trained = False  # a call of a trained weight came (grad_flops)

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))  # the job's call: its error is the job's
            if not self.spoiled:
                try:
                    kind = kinds.get(func)
                    if kind is not None:
                        if training:
                            self.total += grad_flops(self, torch, kind, args, kwargs, out, checkpointed)
                        else:
                            self.total += call_flops(kind, args, out, kwargs)
                except Unread as e:
                    self.spoiled, self.void = True, e.void
                except Exception:
                    self.spoiled = True
            return out

        def get_total_flops(self) -> int:
            return 0 if self.spoiled else self.total

    return ShapeCounter()


def grad_flops(counter: Any, torch: Any, kind: Tuple[str, Any], args: Any, kwargs: Any, out: Any, checkpointed: bool) -> int:
    """One call's FLOPs in a training forward, its backward's with them:
    a matmul or conv y = f(x, W) costs its forward F, F more for x's
    gradient where x needs one and F more for W's where W needs one. A
    call of a trained weight (F.linear's or a conv's weight, an
    nn.Parameter multiplied, an attention's projections) is counted 3×,
    its input's gradient with it even where autograd skips it (a trained
    model's first layer, a trained head on a frozen backbone): the 3× of
    the 6N rule and of FlopCounterMode's count, so the two counters agree
    on a trained model. A call of frozen weights is 1× plus 1 for each
    operand that needs a gradient (a frozen layer after a trained one,
    2×; a frozen backbone before it, 1×); two activations multiplied
    (attention's products), 1 plus 1 for each that needs one.

    With grad off in a training forward (a reentrant checkpoint's first
    pass: the window's checkpointed, or a checkpoint nested in the model,
    CheckpointFunction.forward on the stack), the activations need no
    gradient yet the block's backward will: a trained weight's call is
    3×, a frozen one's 2× where its input needs a gradient or a trained
    call came before it in the forward, else 1×. Grad off elsewhere (a
    torch.no_grad block in the forward): 1×, no backward."""
    what = kind[0]
    if what == "sdpa":
        q, k, v = args[0], args[1], args[2]
        s = 2 * k.shape[-2]
        if torch.is_grad_enabled():
            qk = _needs(q) + _needs(k)
            return s * q.numel() * (1 + qk) + s * out.numel() * (1 + min(qk, 1) + _needs(v))
        return call_flops(kind, args, out) * _no_grad_multiple(counter, (q, k, v), (), checkpointed)
    if what == "attention":
        ops = tuple(a for a in args[:3])
        weights = tuple(a for a in tuple(args[3:]) + tuple((kwargs or {}).values()) if isinstance(a, torch.nn.Parameter) and a.dim() >= 2)
    elif what in ("conv", "linear"):
        ops, weights = (args[0], args[1]), (args[1],)
    elif what in ("mm", "einsum", "tensordot"):
        if what == "einsum":
            ops = einsum_operands(args)[1]
        else:
            ops = (args[0], args[1]) if kind[1] == 0 or what == "tensordot" else (args[1], args[2])
        weights = tuple(a for a in ops if _weight(torch, a))
    else:
        raise Unread(kind[1] or "")
    n = call_flops(kind, args, out, kwargs)
    if not torch.is_grad_enabled():
        return n * _no_grad_multiple(counter, ops, weights, checkpointed)
    if any(_needs(w) for w in weights):
        counter.trained = True
        return 3 * n
    if what == "attention":
        return _frozen_attention(args, n)
    return n * (1 + min(2, sum(_needs(t) for t in ops)))


def _frozen_attention(args: Any, n: int) -> int:
    """A frozen nn.MultiheadAttention's call with grad on: its four
    projections 2× where an input needs a gradient (else 1×), and its two
    products, activations multiplied, 1 plus 1 for each operand that needs
    one — Q·Kᵀ 3× where query and key need one (a review: a frozen MHA
    after a trained layer counted its products 2×, 106,496 FLOPs against
    114,688 by hand)."""
    q, k, v = args[0], args[1], args[2]
    e2 = 2 * q.shape[-1]
    proj = e2 * (2 * q.numel() + k.numel() + v.numel())
    each = (n - proj) // 2  # Q·Kᵀ and the weights · V, 2·N·L·S·E each
    qk = _needs(q) + _needs(k)
    # Each projection on its own input (cross-attention's frozen memory
    # takes no gradient through its key and value projections), the output
    # projection where any input needs one.
    projected = e2 * (q.numel() * (1 + _needs(q)) + k.numel() * (1 + _needs(k)) + v.numel() * (1 + _needs(v)) + q.numel() * (1 + min(1, qk + _needs(v))))
    return projected + each * (1 + qk) + each * (1 + min(1, qk) + _needs(v))


def _weight(torch: Any, t: Any) -> bool:
    """A weight multiplied: an nn.Parameter, or a view of one (x @
    self.w.T: the transpose is no Parameter, and a trained layer written
    by hand counted 2×, its input needing no gradient; a review)."""
    P = torch.nn.Parameter
    return isinstance(t, P) or isinstance(getattr(t, "_base", None), P)


def _needs(t: Any) -> int:
    return 1 if getattr(t, "requires_grad", False) else 0


def _no_grad_multiple(counter: Any, ops: Any, weights: Any, checkpointed: bool) -> int:
    """grad_flops' multiple of a call with grad off in a training forward."""
    if not (checkpointed or _under_checkpoint_forward()):
        return 1
    if any(_needs(w) for w in weights):
        counter.trained = True
        return 3
    return 2 if counter.trained or any(_needs(t) for t in ops) else 1


def _under_checkpoint_forward() -> bool:
    """Whether a reentrant checkpoint's forward (CheckpointFunction.forward)
    is on the stack (STACK_WALK frames at most)."""
    fwd, _ = _checkpoint_codes()
    if fwd is None:
        return False
    f: Any = sys._getframe(1)
    for _ in range(STACK_WALK):
        if f is None:
            return False
        if f.f_code is fwd:
            return True
        f = f.f_back
    return False


def call_flops(kind: Tuple[str, Any], args: Any, out: Any, kwargs: Any = None) -> int:
    """One call's FLOPs as torch.utils.flop_counter counts them: 2 × the
    output's elements × what each sums over. A matmul 2·M·N·K (M·N
    outputs, K the first matrix's last dimension; a linear's bias left
    out); a conv 2·N·C_out·prod(output spatial)·(C_in/groups)·prod(kernel),
    the weight (C_out, C_in/groups, *kernel) giving all but N·C_out·
    prod(output spatial), a transposed conv's over its input's elements
    instead; nn.MultiheadAttention's (query L×N×E, key and value S×N×·) its
    three input projections and its output's, 2·E each per row, and its
    two L×S products, 2·N·L·S·E each; scaled_dot_product_attention's
    (query …×L×E, key …×S×E, output …×L×Ev) its two, 2·S per element of
    the query and of the output. Raises on what it cannot read."""
    what, arg = kind
    if what in ("mm", "linear"):
        return 2 * out.numel() * args[arg].shape[-1]
    if what == "conv":
        x, w = args[0], args[1]
        return 2 * (x if arg else out).numel() * (w.numel() // w.shape[0])
    if what == "attention":
        q, k, v = args[0], args[1], args[2]
        e = q.shape[-1]
        return 2 * e * (2 * q.numel() + k.numel() + v.numel()) + 4 * q.numel() * k.shape[0]
    if what == "sdpa":
        return 2 * args[1].shape[-2] * (args[0].numel() + out.numel())
    if what == "einsum":
        return einsum_flops(*einsum_operands(args))
    if what == "tensordot":
        return tensordot_flops(args, kwargs or {})
    raise Unread(arg or "")


class Unread(Exception):
    """A call whose work the shapes counter does not read; void is the
    reason the hook gives (VOID_CODES: "einsum", "rnn")."""

    def __init__(self, void: str) -> None:
        super().__init__("a call whose work is not read")
        self.void = void


def einsum_operands(args: Any) -> Tuple[str, Tuple[Any, ...]]:
    """torch.einsum's equation and operands: einsum(eq, a, b) or
    einsum(eq, [a, b]). The sublist form (a, [0, 1], b, [1, 2]) is not
    read (Unread)."""
    if not args or not isinstance(args[0], str):
        raise Unread("einsum")
    ops = tuple(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else tuple(args[1:])
    return args[0], ops


def einsum_flops(equation: str, ops: Tuple[Any, ...]) -> int:
    """An einsum's FLOPs as torch.utils.flop_counter counts them (torch ≥
    2.1 runs a two-operand einsum as a bmm below it): each subscript
    only one operand has and the output has not is summed first (not
    counted); then, where a subscript is in both operands and not the
    output, a bmm of 2 × the product of the sizes of every subscript left
    (the output's and those both have): "bhqd,bhkd->bhqk" 2·b·h·q·k·d;
    where none is, an elementwise product, which neither counts (0). One
    operand (a sum, a trace) is 0. Three or more, contracted pairwise in
    an order it does not follow, raise Unread("einsum"). An ellipsis is
    its operands' broadcast dimensions, one subscript each; a dimension
    of size 1 is as if that operand had not the subscript (broadcast)."""
    if len(ops) == 1:
        return 0
    if len(ops) != 2:
        raise Unread("einsum")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != 2:
        raise ValueError("an equation of another count of operands")
    sizes: Dict[str, int] = {}
    letters = []
    for sub, op in zip(subs, ops):
        have = _subscripts(sub, tuple(op.shape))
        for c, n in have:
            sizes[c] = max(sizes.get(c, 1), n)  # broadcast
        # A dimension of size 1 broadcasts: torch sums it out of, or
        # repeats it over, the other operand, not a bmm dimension of this.
        letters.append(set(c for c, n in have if n != 1))
    a, b = letters
    if arrow:
        out = set(c for c in rhs.replace("...", "") if c.isalpha())
        if "..." in rhs:
            out |= set(c for c in a | b if c.startswith("."))
    else:  # implicit: the subscripts that appear once, and the ellipsis
        counts: Dict[str, int] = {}
        for c in lhs.replace("...", ""):
            counts[c] = counts.get(c, 0) + 1
        out = set(c for c, n in counts.items() if n == 1 and c.isalpha()) | set(c for c in a | b if c.startswith("."))
    if not (a & b) - out:
        return 0  # an elementwise product: torch's mul, uncounted
    n = 2
    for c in out | (a & b):
        n *= sizes[c]
    return n


def _subscripts(sub: str, shape: Tuple[int, ...]) -> List[Tuple[str, int]]:
    """One operand's subscripts with their sizes; an ellipsis' dimensions
    named ".0" (its last), ".1", …, right-aligned as they broadcast."""
    names: List[str] = list(sub)
    if "..." in sub:
        head, _, tail = sub.partition("...")
        dots = len(shape) - len(head) - len(tail)
        if dots < 0:
            raise ValueError("an equation that does not fit its operands")
        names = list(head) + ["." + str(dots - 1 - i) for i in range(dots)] + list(tail)
    if len(names) != len(shape):
        raise ValueError("an equation that does not fit its operands")
    return list(zip(names, shape))


def tensordot_flops(args: Any, kwargs: Dict[str, Any]) -> int:
    """torch.tensordot(a, b, dims) as the one mm it runs: 2 × a's elements
    × b's over the dimensions summed (dims an int: a's last dims; a pair of
    lists: a's dimensions named)."""
    a, b = args[0], args[1]
    dims = args[2] if len(args) > 2 else kwargs.get("dims", 2)
    shape = tuple(a.shape)
    if isinstance(dims, int):
        summed = shape[len(shape) - dims:] if dims > 0 else ()
    elif isinstance(dims, (list, tuple)) and len(dims) == 2 and all(isinstance(d, int) for d in dims[0]):
        summed = tuple(shape[d] for d in dims[0])
    else:
        raise Unread("tensordot")
    k = 1
    for d in summed:
        k *= d
    if k == 0:
        return 0
    return 2 * a.numel() * (b.numel() // k)


class Window:
    """One step's read: open() at a batch taken, close() at the next.

    Every forward of a module with parameters that no other such forward
    is under (a top-level forward: the model, a frozen encoder or teacher
    run before it, each micro-batch's forward) is seen. The reading is the
    first of them, replaced by the first training forward (grad enabled,
    the module in training mode, a parameter that requires grad) where
    the first was not one: a frozen encoder run under no_grad is not the
    model trained. Each top-level forward's FLOPs are counted with its
    backward (a training one's: shape_counter each call's, 3× a trained
    layer's, 2× a frozen one's that a gradient goes back through, 1× one's
    that none does; FlopCounterMode the forward ×3, and no count where a
    weight is frozen, void_frozen), 1× an evaluation's, and summed: the
    step's. Inside
    the reading's forward, autocast read off there is looked for again at
    its submodules (a forward decorated with torch.autocast, or a `with`
    in it). RECHECKS module calls at most; then the hook goes."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.s = Settings()
        self.handle: Any = None
        self.replays = _replays
        self.cuda_index: Optional[int] = None
        self.closed = False
        self.tid = threading.get_ident()  # the loop's thread: forwards elsewhere are not the step's
        self.opened = time.monotonic()
        self.calls = 0  # module calls with parameters seen (RECHECKS)
        self.asks = 0  # the loop's asks for a batch since it opened (ask)
        self.model: Any = None  # a weak reference to the module the reading is of
        self.active: Any = None  # a weak reference to the module whose top-level forward is under way
        self.grad_hooks: List[Any] = []  # the handles of watch_backward's hooks, removed at close
        self.active_training = False
        self.active_handle: Any = None  # its forward hook, which ends it
        self.reentered = 0  # its own forwards under way inside it (a recursive model)
        self.in_backward = False  # a backward of a counted forward runs (checkpoints recompute there)
        self.flops: Any = None  # the counter (flop_counter) of the forward under way
        self.flops_sum = 0.0  # the FLOPs of the window's forwards, each its multiple
        self.flops_counted = ""  # "", EVAL or "train": what the window counted
        self.flops_failed = False  # a forward not counted whole: no sum this window
        self.uncompiled: dict = {}  # id(module) -> whether it may be counted (not compiled)

    @staticmethod
    def open() -> Optional["Window"]:
        """A window, its hook registered; None when torch's nn is not
        imported (nothing to read). Never raises."""
        torch = _torch()
        if torch is None or getattr(torch, "nn", None) is None:
            return None
        try:
            _patch_graphs(torch)
            w = Window(torch)
            if "torch._dynamo" in sys.modules:
                _filter_compile_warning()
        except Exception:
            return None
        return w if _env.attempt("forward pre-hook", w.install) else None

    def ask(self) -> bool:
        """The loop asks for a batch: whether the window's step ends here.
        It does where a module with parameters was called in it, at the
        second ask, or past MAX_SECONDS. A loop that asks for the next
        batch before it trains on the one it has (a prefetching generator
        around the DataLoader: `nxt = next(it)`, then `yield cur`) asks
        once with nothing run: the window stays open to that forward (a
        user's review: such a loop read "no model's forward seen", every
        window closed empty). The epoch's end closes it whatever."""
        self.asks += 1
        return self.calls > 0 or self.asks > 1 or time.monotonic() - self.opened > MAX_SECONDS

    def install(self) -> bool:
        """Registers the window's global forward pre-hook
        (torch.nn.modules.module.register_module_forward_pre_hook); close,
        or RECHECKS calls, removes it."""
        self.handle = self.torch.nn.modules.module.register_module_forward_pre_hook(self.pre)
        return True

    def pre(self, module: Any, args: Any) -> None:
        """The global forward pre-hook: a top-level forward of a module
        with parameters begins (read, counted), or a submodule of one runs
        (autocast looked for again)."""
        torch = self.torch
        if self.closed or threading.get_ident() != self.tid or _env.compiling(torch):
            return None
        try:
            if next(module.parameters(), None) is None:
                return None  # an augmentation, a loss: not the model
        except Exception:
            return None
        self.calls += 1
        if self.calls > RECHECKS or time.monotonic() - self.opened > MAX_SECONDS:
            # A loop that left in the window's step (a break) takes no next
            # batch to close it: the hook goes by itself. A forward still
            # under way then raised without its forward hook called (torch
            # without always_call): not counted.
            self._remove()
            if self.active is not None:
                self._end_forward(False)
            return None
        active = self._active()
        if active is not None and (module is not active or _in_call(module)):
            self.void_unread(module)
            if module is active:
                self.reentered += 1  # a recursive forward: its own forward hook ends it
            elif active is self._model() and self.s.autocast is False and self.s.autocast_device:
                self.recheck_autocast()
            return None
        if self.active is not None:
            # Its module gone, or called again from outside its own call:
            # the forward ended raising (torch without always_call).
            self._end_forward(False)
        if self.in_backward:
            # An activation checkpoint recomputing a block's forward in the
            # backward: not another forward of the step.
            return None
        checkpointed = self.under_checkpoint()
        if checkpointed == "backward":
            return None  # a reentrant checkpoint of the whole model, recomputing: the same
        try:
            self.begin(module, args, checkpointed == "forward")
        except Exception:
            pass
        return None

    def under_checkpoint(self) -> Optional[str]:
        """Where a top-level forward runs inside a reentrant activation
        checkpoint of its own (torch.utils.checkpoint called on the whole
        model from the loop): "forward" in its first pass, which runs
        under no_grad and is the step's training forward; "backward" in
        its recompute, which is not another forward (and whose output,
        made under no_grad, had no gradient hook to say so). None
        elsewhere. A backward anywhere on the stack wins: the recompute
        of a checkpoint nested in another runs the inner one's forward
        too. Walks the whole stack (STACK_WALK frames at most), once per
        top-level forward of the window."""
        fwd, bwd = _checkpoint_codes()
        if fwd is None:
            return None
        try:
            f: Any = sys._getframe(2)
        except ValueError:
            return None
        found = None
        for _ in range(STACK_WALK):
            if f is None:
                break
            if f.f_code is bwd:
                return "backward"
            if f.f_code is fwd:
                found = "forward"
            f = f.f_back
        return found

    def _model(self) -> Any:
        return self.model() if self.model is not None else None

    def _active(self) -> Any:
        return self.active() if self.active is not None else None

    def begin(self, module: Any, args: Any, checkpointed: bool = False) -> None:
        """A top-level forward: the reading where it is the first, or the
        first training one after an evaluation's; its FLOPs counted; a
        forward hook ends it. checkpointed: it is a reentrant activation
        checkpoint's first pass, under no_grad, and trains all the same."""
        torch = self.torch
        grad = checkpointed or torch.is_grad_enabled()
        training = bool(grad and getattr(module, "training", False) and _requires_grad(module))
        if self.s.forward is None or (training and not self.s.training):
            self.s = Settings()
            try:
                self.model = weakref.ref(module)
            except TypeError:
                self.model = None
            self.read_forward(module, args)
            self.s.training = training
        if not self.hook_end(module):
            return
        try:
            self.active = weakref.ref(module)
        except TypeError:
            self.active_handle.remove()
            self.active_handle = None
            return
        self.active_training = training
        if _flops_done is True and training and _flops_trainable is not None and module is self._model() and _trainable(module) != _flops_trainable:
            _recount()  # its weights that train changed since (a review: unfreezing a layer kept the count of 7,168, not 15,360)
        if _flops_done is True or self.flops_failed:
            return
        if not self.may_count(module):
            return
        try:
            mode = flop_counter(torch, training, checkpointed)
            if training and not getattr(mode, "multiplied", False) and _frozen_weight(torch, module):
                self.void_frozen()
                return
            mode.__enter__()
        except Exception:
            _counter_broke()
            self.flops_failed = True
            return
        self.flops = mode
        self.void_unread(module)

    def void_frozen(self) -> None:
        """A training forward of a module with a frozen weight and a
        counter that counts the forward alone (FlopCounterMode, whose count
        the Window multiplies): no count, rather than a wrong one. Its
        backward is not 3× its forward: a frozen layer's weight takes no
        gradient, a frozen backbone before a trained head not even its
        input's (a linear probe read 3.27e+08 FLOPs a step against
        1.20e+08). FlopCounterMode counts at the dispatcher, below
        autograd, and says nothing of which op's operands need a gradient;
        a dispatch mode of the hook's own reading requires_grad there would
        rest on what torch keeps of autograd's state on the tensors it is
        handed, and on which op carries a weight once decomposed (F.linear
        as t() and addmm), neither an interface torch keeps from 2.1 on,
        and none of it testable here (torch 1.13). So the
        process counts no more (FROZEN says why, in flops_failed and
        _flops_void), and an evaluation's count read before is not kept
        for the training steps (merge_forward)."""
        global _flops_done, _flops_void, _flops_trainable
        self.flops_failed = FROZEN
        _flops_void = FROZEN
        _flops_done = True
        model = self._active()
        _flops_trainable = _trainable(model) if model is not None else None

    def void_unread(self, module: Any) -> None:
        """A module whose work neither counter reads runs in a counted
        forward: the window's count is void, no count rather than a wrong
        one. nn.RNN, LSTM and GRU (torch.nn.RNNBase) run as one kernel
        (cuDNN's _cudnn_rnn, oneDNN's mkldnn_rnn_layer), which
        FlopCounterMode has no formula for, and shape_counter sees one
        call: an LSTM model counted its linear head alone (4.92e+05 FLOPs a
        step against 3.78e+09)."""
        if self.flops is None or self.flops_failed:
            return
        rnn = getattr(getattr(self.torch, "nn", None), "RNNBase", None)
        if rnn is not None and isinstance(module, rnn):
            self.flops_failed = "rnn"

    def hook_end(self, module: Any) -> bool:
        """A forward hook on the top-level module, which ends its forward
        (where register_forward_hook takes always_call, torch calls it when
        the forward raises too; elsewhere a forward that raised is ended,
        uncounted, at the next module call that finds its module gone, when
        the hook leaves, or at the window's close()). False where it cannot
        be hooked."""
        try:
            try:
                self.active_handle = module.register_forward_hook(self.end, always_call=True)
            except TypeError:
                self.active_handle = module.register_forward_hook(self.end)
        except Exception:
            return False
        return True

    def end(self, module: Any, args: Any, out: Any) -> None:
        if threading.get_ident() != self.tid or module is not self._active():
            return None  # the module called on another thread: not the forward under way
        if self.reentered:
            self.reentered -= 1  # a recursive call of it ended, not the forward
            return None
        # With always_call torch calls it from its except block when the
        # forward raised (out None); a forward may return None as well.
        raised = out is None and sys.exc_info()[0] is not None
        training = self.active_training
        self._end_forward(not raised)
        if not raised and training:
            self.watch_backward(out)
        return None

    def watch_backward(self, out: Any) -> None:
        """Marks the backward of a training forward's output while it runs
        (a gradient hook on the output, and the engine's callback at the
        backward's end): a forward begun meanwhile is an activation
        checkpoint's recompute, not another forward of the step."""
        t = first_tensor((out,), self.torch)
        if t is None or not getattr(t, "requires_grad", False) or getattr(t, "grad_fn", None) is None:
            return  # a leaf (a parameter returned as it is) keeps its hooks: none added

        def began(_: Any) -> None:
            self.in_backward = True
            try:
                self.torch.autograd.Variable._execution_engine.queue_callback(ended)
            except Exception:
                pass
            return None

        def ended() -> None:
            self.in_backward = False

        try:
            self.grad_hooks.append(t.register_hook(began))
        except Exception:
            pass

    def _end_forward(self, whole: bool) -> None:
        h, self.active_handle = self.active_handle, None
        if h is not None:
            h.remove()
        training, self.active, self.reentered = self.active_training, None, 0
        mode, self.flops = self.flops, None
        if mode is None:
            return
        try:
            mode.__exit__(None, None, None)
            n = float(mode.get_total_flops())
        except Exception:
            _counter_broke()
            self.flops_failed = True
            return
        if getattr(mode, "spoiled", False):
            # A call the shapes counter does not read: no count, and why
            # where it knows (an einsum of three operands had no reason).
            self.flops_failed = mode.void if mode.void in VOID_CODES else True
            return
        if not whole:
            self.flops_failed = True  # a forward that raised: the sum would be short
            return
        if not n > 0:
            return  # a module of no counted op (a loss with a parameter, an embedding lookup)
        # A training step is its forward and a backward about twice the
        # forward's (the usual 6N-per-token rule is this 3×); shape_counter
        # counted each call with its own backward (grad_flops).
        self.flops_sum += n * (3 if training and not getattr(mode, "multiplied", False) else 1)
        if training:
            self.flops_counted = "train"
        elif not self.flops_counted:
            self.flops_counted = EVAL

    def may_count(self, module: Any) -> bool:
        """Whether a module's forward may be counted: none of its modules
        is torch.compile'd (the counter would trace into the compiled
        code). The reading's model is read already; another is walked
        once per window."""
        key = id(module)
        ok = self.uncompiled.get(key)
        if ok is None:
            if module is self._model():
                ok = self.s.compiled is False
            else:
                probe = Settings()
                read_modules(self.torch, module, probe)
                ok = probe.compiled is False
            self.uncompiled[key] = ok
        return ok

    def recheck_autocast(self) -> None:
        """A submodule inside the reading's forward: autocast on here is
        the step's (read_forward read it off at the model's own call)."""
        now = Settings()
        try:
            read_autocast(self.torch, self.s.autocast_device, now)
        except Exception:
            return
        if now.autocast:
            self.s.autocast, self.s.autocast_dtype = True, now.autocast_dtype

    def _remove(self) -> None:
        h, self.handle = self.handle, None
        if h is not None:
            h.remove()

    def read_forward(self, module: Any, args: Any) -> None:
        torch, s = self.torch, self.s
        s.forward = True
        t = first_tensor(args, torch)
        device = None
        if t is not None:
            if t.dim() > 0:
                s.batch_size = int(t.shape[0])  # the loader's batch, where the hook knows it, replaces it (_timing)
            device = t.device
        # The model's device decides where it has one on CUDA: a CUDA
        # model is called with CPU batches by nn.DataParallel, DDP and
        # Accelerate's hooks, which move them (a review: such a job read
        # "on the CPU").
        p = next(module.parameters(), None)
        pdev = getattr(p, "device", None)
        if getattr(pdev, "type", None) == "cuda" or device is None or device.type not in ("cuda", "cpu"):
            device = pdev if pdev is not None else device
        dtype = getattr(device, "type", None)
        if dtype == "cuda":
            self.cuda_index = device.index
        if dtype in ("cuda", "cpu"):
            read_autocast(torch, dtype, s)
        read_flags(torch, s)
        read_modules(torch, module, s)
        read_threads(torch, s)

    def close(self) -> Settings:
        """Ends the window: removes what is left, sums the FLOPs, reads the
        GPU memory and the replays. Never raises."""
        global _flops_done, _flops_trainable
        self.closed = True
        s, torch = self.s, self.torch
        try:
            self._remove()
            if self.active is not None:
                self._end_forward(False)  # a forward that raised (torch without always_call): no count
            for h in self.grad_hooks:
                h.remove()
            self.grad_hooks = []
        except Exception:
            pass
        if self.flops_failed in VOID_CODES:
            s.flops_void = VOID_CODES[self.flops_failed]  # why there is no count, said (a review)
        elif _flops_void in VOID_CODES:
            s.flops_void = VOID_CODES[_flops_void]  # the process counts no more, and says why
        if self.flops_counted and not self.flops_failed and self.flops_sum > 0:
            s.flops_per_step = self.flops_sum
            if _flops_done is not True:
                _flops_done = True if self.flops_counted == "train" else EVAL
                model = self._model()
                if _flops_done is True and model is not None:
                    _flops_trainable = _trainable(model)
        if s.forward is None:
            read_flags(torch, s)
        try:
            if torch.cuda.is_initialized():
                i = self.cuda_index if self.cuda_index is not None else torch.cuda.current_device()
                free, total = torch.cuda.mem_get_info(i)
                s.mem_free, s.mem_total = int(free), int(total)
                s.max_allocated = int(torch.cuda.max_memory_allocated(i))
                s.device_tf32 = device_tf32(torch, i)
                if _graphs_patched:
                    s.cuda_graphs = _replays > self.replays
        except Exception:
            pass
        s.read_at = time.time()
        return s


def device_tf32(torch: Any, i: int) -> Optional[bool]:
    """Whether CUDA device i has TF32 and bf16 tensor cores (compute
    capability 8.0, Ampere, and later): before it (a V100, a T4, an RTX
    2080) torch's TF32 switches change nothing and bf16 has no tensor
    cores. None on ROCm, whose capability numbers are not NVIDIA's."""
    if getattr(getattr(torch, "version", None), "hip", None):
        return None
    try:
        major = torch.cuda.get_device_capability(i)[0]
    except Exception:
        return None
    return major >= 8 if isinstance(major, int) else None


def _in_call(module: Any) -> bool:
    """Whether a call of module is under way below the one whose pre-hook
    runs now (a recursive forward), by the frames of torch's Module call:
    the caller's caller of the pre-hook is this call's own."""
    try:
        code = _CALL_IMPL[0]
        if code is None:
            import torch

            code = _CALL_IMPL[0] = torch.nn.Module._call_impl.__code__
        f = sys._getframe(3)
    except Exception:
        return True  # not known: taken as the recursion it mostly is
    for _ in range(512):
        if f is None:
            return False
        if f.f_code is code and f.f_locals.get("self") is module:
            return True
        f = f.f_back
    return True


_CALL_IMPL: List[Any] = [None]


#: The most frames under_checkpoint looks at: a module call is 3 frames
#: (torch 1.13: 2), so a model 300 modules deep under a checkpoint.
STACK_WALK = 1024


def _checkpoint_codes() -> Tuple[Any, Any]:
    """The code of a reentrant activation checkpoint's forward and
    backward (torch.utils.checkpoint.CheckpointFunction); None, None where
    the job has not imported it (nothing imported here)."""
    try:
        f = sys.modules["torch.utils.checkpoint"].CheckpointFunction
        return f.forward.__code__, f.backward.__code__
    except Exception:
        return None, None


def _requires_grad(module: Any) -> bool:
    """Whether a parameter of module requires grad (a frozen encoder's
    do not; a frozen backbone's trained head does)."""
    return any(getattr(p, "requires_grad", False) for p in module.parameters())


def _frozen_weight(torch: Any, module: Any) -> bool:
    """Whether a weight of module is frozen (requires_grad off): a
    parameter of two dimensions or more (a linear's, a conv's, an
    attention's projections), an embedding's table left out (a lookup,
    not a matmul: a frozen one changes no matmul's backward).
    MAX_MODULES walked at most."""
    skip = tuple(c for c in (getattr(torch.nn, "Embedding", None), getattr(torch.nn, "EmbeddingBag", None)) if c is not None)
    for i, m in enumerate(module.modules()):
        if i >= MAX_MODULES:
            break
        if skip and isinstance(m, skip):
            continue
        for p in m.parameters(recurse=False):
            if not getattr(p, "requires_grad", True) and p.dim() >= 2:
                return True
    return False


def _trainable(module: Any) -> int:
    """The elements of module's parameters that require grad (-1 where
    they cannot be read)."""
    try:
        return sum(p.numel() for p in module.parameters() if p.requires_grad)
    except Exception:
        return -1


def _recount() -> None:
    """The next training forward is counted again (its trained weights
    changed), its void too."""
    global _flops_done, _flops_void, _flops_trainable
    _flops_done, _flops_void, _flops_trainable = False, "", None


def _counter_broke() -> None:
    """The FLOP counter itself raised: it would again, so the process
    counts no more (each window would pay for it)."""
    global _flops_done
    _flops_done = True


def info_labels(s: Settings) -> List[Tuple[str, str]]:
    """The gpuwatch_job_setting_info labels of a reading, those read."""
    out: List[Tuple[str, str]] = []

    def flag(name: str, v: Optional[bool]) -> None:
        if v is not None:
            out.append((name, "1" if v else "0"))

    flag("autocast", s.autocast)
    if s.autocast and s.autocast_dtype:
        out.append(("autocast_dtype", s.autocast_dtype))
    if s.autocast_device:
        out.append(("autocast_device", s.autocast_device))
    if s.matmul_precision:
        out.append(("float32_matmul_precision", s.matmul_precision))
    flag("matmul_allow_tf32", s.matmul_tf32)
    flag("cudnn_allow_tf32", s.cudnn_tf32)
    flag("cudnn_benchmark", s.cudnn_benchmark)
    if s.conv_format:
        out.append(("conv_memory_format", s.conv_format))
    if s.weights_dtype:
        out.append(("weights_dtype", s.weights_dtype))
    flag("has_conv", s.has_conv)
    flag("has_linear", s.has_linear)
    flag("compiled", s.compiled)
    flag("cuda_graphs", s.cuda_graphs)
    flag("training", s.training)
    flag("device_tf32", s.device_tf32)
    if s.flops_void:
        out.append(("flops_void", s.flops_void))
    return out


def gauges(s: Settings) -> List[Tuple[str, str, Any]]:
    """The gauges of a reading, those read: (name, help, value)."""
    out: List[Tuple[str, str, Any]] = []
    for name, help_, v in (
        ("gpuwatch_job_batch_size", "The samples in the batch the step took from the loader (per rank); where the hook does not count them, the first dimension of the first tensor the model's forward got.", s.batch_size),
        ("gpuwatch_job_modules", "Modules in the model (itself and every submodule).", s.modules),
        ("gpuwatch_job_intra_op_threads", "Threads of torch's intra-op pool in the training process (torch.get_num_threads()).", s.intra_op_threads),
        ("gpuwatch_job_gpu_mem_free_bytes", "GPU memory free on the model's GPU (torch.cuda.mem_get_info), when the settings were read.", s.mem_free),
        ("gpuwatch_job_gpu_mem_total_bytes", "GPU memory on the model's GPU (torch.cuda.mem_get_info).", s.mem_total),
        ("gpuwatch_job_gpu_max_allocated_bytes", "The most GPU memory torch's allocator has held for tensors (torch.cuda.max_memory_allocated).", s.max_allocated),
        ("gpuwatch_job_flops_per_step", "The step's FLOPs: each top-level forward of a module with parameters in one step, counted once per process (torch.utils.flop_counter, else the shapes of its linears, convs, matmuls and attentions), with its backward for a training forward (a trained layer 3×, a frozen one a gradient goes through 2×; torch.utils.flop_counter: the forward 3×, and no count for a model with a frozen weight), summed.", s.flops_per_step),
        ("gpuwatch_job_settings_read_timestamp_seconds", "When the settings were last read (Unix time).", s.read_at),
    ):
        if v is not None:
            out.append((name, help_, v))
    return out
