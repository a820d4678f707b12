"""Host syncs inside the step (issue 51, item 3): the calls that make the
host wait for the GPU to drain its queue — tensor.item(), .cpu(),
.tolist(), .numpy(), print(tensor) and f"{tensor}" (its __repr__ and
__format__), float(t), int(t), bool(t) (an `if t:`), and
torch.cuda.synchronize() — counted per step with the file and line that
made each: "train.py:87 item 1 a step".

Counted in a window of STEPS steps, once every READ_EVERY seconds (the
first at batch FIRST_AT, past the first step's one-offs): when the loop
takes a batch (_timing.Stats.record) the calls are wrapped, and STEPS
batches later they are put back as they were. Between windows nothing is
installed: a training step costs the hook nothing for this (the wrappers
are not there; tests/test_syncs.py proves it and times the window).

A call counts where it would sync: on a tensor on an accelerator (any
device but the CPU and meta; torch.cuda.synchronize always). On the CPU
they do not sync and are not counted, unless COUNT_CPU (tests, and
GPUWATCH_SYNCS_CPU=1). A call made inside another counted call (a repr
that reads .tolist()) is the outer one's. Its site is the first frame
outside torch, the hook and the standard library (site-packages are the
job's): the job's own line, or the library's that made the call. The
sites kept are bounded (MAX_SITES); those past the bound are counted in
dropped. The time the host spent inside the calls is kept too: on a GPU
it is the host waiting for the queue to drain.

A leaf: imports only _env. Its patches are rows of _patches (moment
SYNCS), each installed on its own."""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _cost, _env

#: Seconds between two windows.
READ_EVERY = 60.0
#: Steps in a window.
STEPS = 8
#: The batch (1 the first) at which the first window opens.
FIRST_AT = 3
#: A window left open this long (the loop stopped taking batches) closes
#: at the next batch with the steps it saw.
MAX_SECONDS = 30.0
#: Sites kept for the whole process; sites shown on the page.
MAX_SITES = 256
MAX_SHOWN = 8
#: The longest site label: a path is cut at its start.
MAX_SITE = 200
#: Count calls on CPU tensors too (they would sync on a GPU): tests.
COUNT_CPU = os.environ.get("GPUWATCH_SYNCS_CPU", "") == "1"

#: The Tensor methods wrapped, and the call each is named by.
METHODS = (
    ("item", "item"),
    ("cpu", "cpu"),
    ("tolist", "tolist"),
    ("numpy", "numpy"),
    ("__repr__", "repr"),
    ("__format__", "format"),
    ("__float__", "float"),
    ("__int__", "int"),
    ("__bool__", "bool"),
)
#: Every call name the page may say (the Go side takes only these).
CALLS = tuple(c for _, c in METHODS) + ("synchronize", "grad_scaler")

#: A sync made by torch's GradScaler in step() (its check of the
#: gradients for inf/NaN, an .item() every step, in _maybe_opt_step: the
#: plain and the sharded scaler) is named grad_scaler at the job's
#: scaler.step() line: the job cannot move it to a log interval. Its other
#: syncs (get_scale(), which the job calls) are the job's own.
_GRAD_SCALER = "grad_scaler.py"
_GRAD_SCALER_CHECK = "_maybe_opt_step"


def _in_scaler_check(frame: Any) -> bool:
    """Whether frame is GradScaler's step() check (or a generator
    expression inside it), in torch's own grad_scaler module."""
    for _ in range(2):
        if frame is None:
            return False
        code = frame.f_code
        if code.co_filename.endswith(_GRAD_SCALER) and code.co_name == _GRAD_SCALER_CHECK:
            return _not_the_jobs(code)
        frame = frame.f_back
    return False

_window: Optional["Window"] = None  # the open window; the wrappers count only while it is
_tls = threading.local()  # .busy: inside a counted call on this thread
_installed: List[Tuple[Any, str, Any, bool, Any]] = []  # (owner, attr, original, owned, wrapper)
_inside: Dict[Any, bool] = {}  # code object -> not the job's (torch, the hook, the stdlib)
_roots: Tuple[str, ...] = ()
_fork_handler = False


def _skip_roots(torch: Any) -> Tuple[str, ...]:
    """The folders whose frames are not a site: torch's, the hook's, and
    the standard library's (its site-packages are the job's)."""
    out = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
    f = getattr(torch, "__file__", None)
    if f:
        out.append(os.path.dirname(os.path.abspath(f)) + os.sep)
    for k in ("stdlib", "platstdlib"):
        try:
            p = sysconfig.get_paths()[k]
        except Exception:
            continue
        if p:
            out.append(os.path.abspath(p) + os.sep)
    return tuple(dict.fromkeys(out))


def _not_the_jobs(code: Any) -> bool:
    fn = code.co_filename
    if fn.startswith("<"):  # torch.fx's generated code ("<eval_with_key>.3"); "<frozen ...>"
        return fn.startswith(("<eval_with_key>", "<frozen"))
    fn = os.path.abspath(fn)
    for r in _roots:
        if fn.startswith(r) and "-packages" + os.sep not in fn[len(r) :]:
            return True
    return False


def site_of(frame: Any) -> Optional[Tuple[str, int]]:
    """The first frame from frame outwards that is the job's: (file,
    line); None when every frame is torch's, the hook's or the stdlib's."""
    n = 0
    while frame is not None and n < 64:
        code = frame.f_code
        inside = _inside.get(code)
        if inside is None:
            inside = _not_the_jobs(code)
            if len(_inside) < 16384:
                _inside[code] = inside
        if not inside:
            return code.co_filename, frame.f_lineno
        frame = frame.f_back
        n += 1
    return None


def site_label(path: str, line: int) -> str:
    """A site as the page says it: the file relative to the working folder
    where it is under it, else its path; cut at the start to MAX_SITE."""
    try:
        cwd = os.getcwd() + os.sep
        p = os.path.abspath(path)
        if p.startswith(cwd):
            path = p[len(cwd) :]
    except (OSError, ValueError):
        pass
    s = "".join(ch if ch.isprintable() else "?" for ch in "%s:%d" % (path, line))  # a hostile name: no control byte, no lone surrogate
    if len(s) > MAX_SITE:
        s = "..." + s[len(s) - MAX_SITE + 3 :]
    return s


class Counts:
    """Every window's counts, summed: per (file, line, call) the calls and
    the seconds inside them, over steps. Kept under the Stats' lock."""

    __slots__ = ("sites", "steps", "windows", "dropped")

    def __init__(self) -> None:
        self.sites: Dict[Tuple[str, int, str], List[float]] = {}  # -> [calls, seconds]
        self.steps = 0
        self.windows = 0
        self.dropped = 0  # calls at sites past MAX_SITES

    def add(self, w: "Window") -> None:
        self.steps += w.steps
        self.windows += 1
        self.dropped += w.dropped
        for k, (n, sec) in w.sites.items():
            c = self.sites.get(k)
            if c is None:
                if len(self.sites) >= MAX_SITES:
                    self.dropped += n
                    continue
                c = self.sites[k] = [0, 0.0]
            c[0] += n
            c[1] += sec

    def copy(self) -> "Counts":
        c = Counts()
        c.sites = {k: list(v) for k, v in self.sites.items()}
        c.steps, c.windows, c.dropped = self.steps, self.windows, self.dropped
        return c

    def top(self, n: int = MAX_SHOWN) -> List[Tuple[str, str, float, float]]:
        """The n sites with the most calls: (site, call, calls per step,
        seconds per step)."""
        if not self.steps:
            return []
        ks = sorted(self.sites.items(), key=lambda kv: (-kv[1][0], kv[0]))[:n]
        return [(site_label(f, ln), call, v[0] / self.steps, v[1] / self.steps) for (f, ln, call), v in ks]


class Window:
    """One window: open() wraps the calls, step() at each batch taken
    until STEPS, close() puts them back."""

    def __init__(self) -> None:
        self.sites: Dict[Tuple[str, int, str], List[float]] = {}
        self.steps = 0
        self.dropped = 0
        self.opened = time.monotonic()
        self.lock = threading.Lock()

    @staticmethod
    def open() -> Optional["Window"]:
        """A window, its wrappers installed; None when torch is not
        imported or nothing could be wrapped. Never raises."""
        global _window, _roots
        torch = sys.modules.get("torch")
        if torch is None or getattr(torch, "Tensor", None) is None or _window is not None:
            return None
        try:
            if not _roots:
                _roots = _skip_roots(torch)
            _fork()
            w = Window()
            _window = w
            if not install_all(torch):
                close_window(w)
                return None
        except Exception:
            _window = None
            return None
        return w

    def step(self) -> bool:
        """A batch taken: one more step. Whether the window is done."""
        self.steps += 1
        return self.steps >= STEPS or time.monotonic() - self.opened > MAX_SECONDS

    def count(self, frame: Any, call: str, seconds: float) -> None:
        s = site_of(frame)
        if s is None:
            return
        try:
            if _in_scaler_check(frame):
                call = "grad_scaler"
        except AttributeError:
            pass
        k = (s[0], s[1], call)
        with self.lock:
            c = self.sites.get(k)
            if c is None:
                if len(self.sites) >= MAX_SITES:
                    self.dropped += 1
                    return
                c = self.sites[k] = [0, 0.0]
            c[0] += 1
            c[1] += seconds


def close_window(w: Window) -> Window:
    """Ends w: every wrapper put back. Never raises."""
    global _window
    if _window is w:
        _window = None
    uninstall_all()
    return w


def _wrap_method(torch: Any, attr: str, call: str) -> Callable[..., Any]:
    """The wrapper of Tensor.attr: counts a call on an accelerator's tensor
    (any tensor under COUNT_CPU) at its site, then calls the original."""
    orig = getattr(torch.Tensor, attr)
    clock = time.perf_counter

    def wrapper(self: Any, *a: Any, **k: Any) -> Any:
        w = _window
        if w is None or getattr(_tls, "busy", False):
            return orig(self, *a, **k)
        try:
            dev = self.device.type
        except Exception:
            dev = "cpu"
        if (dev in ("cpu", "meta") and not COUNT_CPU) or _env.compiling(torch):
            return orig(self, *a, **k)
        _tls.busy = True
        t0 = clock()
        try:
            return orig(self, *a, **k)
        finally:
            t = clock() - t0
            _tls.busy = False
            try:
                _cost.cost.timed("syncs", w.count, sys._getframe(1), call, t)
            except Exception:
                pass

    wrapper.__name__ = getattr(orig, "__name__", attr)
    wrapper.__qualname__ = "Tensor." + attr
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    wrapper._gpuwatch_orig = orig  # type: ignore[attr-defined]
    return wrapper


def _wrap_sync(torch: Any) -> Callable[..., Any]:
    """The wrapper of torch.cuda.synchronize: every call counts."""
    orig = torch.cuda.synchronize
    clock = time.perf_counter

    def synchronize(*a: Any, **k: Any) -> Any:
        w = _window
        if w is None or getattr(_tls, "busy", False):
            return orig(*a, **k)
        _tls.busy = True
        t0 = clock()
        try:
            return orig(*a, **k)
        finally:
            t = clock() - t0
            _tls.busy = False
            try:
                _cost.cost.timed("syncs", w.count, sys._getframe(1), "synchronize", t)
            except Exception:
                pass

    synchronize.__name__, synchronize.__doc__ = "synchronize", orig.__doc__
    synchronize._gpuwatch_orig = orig  # type: ignore[attr-defined]
    return synchronize


def _put(owner: Any, attr: str, wrapper: Any) -> bool:
    orig_own = attr in vars(owner)
    orig = vars(owner)[attr] if orig_own else None
    setattr(owner, attr, wrapper)
    _installed.append((owner, attr, orig, orig_own, wrapper))
    return True


def patch_method(torch: Any, attr: str, call: str) -> bool:
    """Wraps torch.Tensor.attr for the window (a row of _patches)."""
    return _put(torch.Tensor, attr, _wrap_method(torch, attr, call))


def patch_synchronize(torch: Any) -> bool:
    """Wraps torch.cuda.synchronize for the window, where torch has CUDA
    built in (or COUNT_CPU: a test calls it on its own)."""
    try:
        built = bool(torch.backends.cuda.is_built())
    except Exception:
        built = False
    if not built and not COUNT_CPU:
        return False
    return _put(torch.cuda, "synchronize", _wrap_sync(torch))


def install_all(torch: Any) -> int:
    """Every wrapper of the window, each on its own: how many stand."""
    n = 0
    n += _env.attempt("syncs: Tensor.item", patch_method, torch, "item", "item")
    n += _env.attempt("syncs: Tensor.cpu", patch_method, torch, "cpu", "cpu")
    n += _env.attempt("syncs: Tensor.tolist", patch_method, torch, "tolist", "tolist")
    n += _env.attempt("syncs: Tensor.numpy", patch_method, torch, "numpy", "numpy")
    n += _env.attempt("syncs: Tensor.__repr__", patch_method, torch, "__repr__", "repr")
    n += _env.attempt("syncs: Tensor.__format__", patch_method, torch, "__format__", "format")
    n += _env.attempt("syncs: Tensor.__float__", patch_method, torch, "__float__", "float")
    n += _env.attempt("syncs: Tensor.__int__", patch_method, torch, "__int__", "int")
    n += _env.attempt("syncs: Tensor.__bool__", patch_method, torch, "__bool__", "bool")
    n += _env.attempt("syncs: torch.cuda.synchronize", patch_synchronize, torch)
    return n


def uninstall_all() -> None:
    """Puts every wrapper back: the original where it was the owner's own,
    none (the inherited one shows again) where it was not. A wrapper
    someone has since wrapped again is left, idle (it counts only while a
    window is open)."""
    while _installed:
        owner, attr, orig, own, wrapper = _installed.pop()
        try:
            if vars(owner).get(attr) is not wrapper:
                continue
            if own:
                setattr(owner, attr, orig)
            else:
                delattr(owner, attr)
        except Exception:
            pass


def installed() -> int:
    """How many wrappers are installed now (tests)."""
    return len(_installed)


def _forget() -> None:
    """After fork, in the child (a DataLoader worker forked while a window
    was open): nothing of the window stays."""
    global _window
    _window = None
    uninstall_all()


def install_fork_handler(_: Any = None) -> bool:
    """os.register_at_fork: a forked child puts the wrappers back (a row
    of _patches)."""
    os.register_at_fork(after_in_child=_forget)
    return True


def _fork() -> None:
    global _fork_handler
    if _fork_handler or not hasattr(os, "register_at_fork"):
        return
    _fork_handler = True
    _env.attempt("os.register_at_fork: the syncs'", install_fork_handler)
