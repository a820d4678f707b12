"""The batch itself: what the training loop receives, looked at on a
sample of the batches at a bounded cost (docs/architecture.md §6).

A look walks the batch (tuples, lists, dicts; at most MAX_DEPTH deep and
MAX_TENSORS arrays) and reads each torch tensor's or numpy array's dtype,
shape, bytes and whether it is pinned (page-locked: torch's is_pinned()).
Token padding is read from integer token tensors of two dimensions: the
zeros of an attention mask where the batch is a dict with one (the key
ends in "mask"), else, in the largest such tensor, the run of one value
that ends its rows (the pad value: the most common last element), where
at least one row ends in two or more of it. Looks are spaced by
LOOK_EVERY seconds, and the first batch of each epoch is looked at: the
cost is a few tens of µs per look, not per batch.

torch is never imported here: a tensor is what has torch's module and a
numel()."""

from __future__ import annotations

import sys
from typing import Any, List, NamedTuple, Optional, Tuple

#: Seconds between looks (the first batch is always looked at).
LOOK_EVERY = 0.25
#: Bounds on one look.
MAX_DEPTH = 4
MAX_TENSORS = 64
#: Tensors kept from the last look, for the metrics page.
MAX_SHOWN = 16

_INTS = ("int64", "int32", "int16", "long", "int")


class TensorLook(NamedTuple):
    path: str  # where in the batch: "[0]", "['input_ids']"
    dtype: str  # "float32", as numpy and torch name it
    shape: Tuple[int, ...]
    bytes: int
    pinned: Optional[bool]  # None for a numpy array


class Look(NamedTuple):
    tensors: List[TensorLook]  # at most MAX_TENSORS
    bytes: int
    float64_bytes: int
    pinned_bytes: int
    token_slots: int  # elements of the token tensor read for padding (0: none)
    padding_slots: int


def _dtype(x: Any) -> str:
    s = str(getattr(x, "dtype", ""))
    return s[len("torch.") :] if s.startswith("torch.") else s


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "numel") and hasattr(x, "element_size")


def _is_numpy(x: Any) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "nbytes") and hasattr(x, "shape")


def _walk(x: Any, path: str, depth: int, out: List[Tuple[str, Any]]) -> None:
    if len(out) >= MAX_TENSORS:
        return
    if _is_torch(x) or _is_numpy(x):
        out.append((path, x))
        return
    if depth >= MAX_DEPTH or isinstance(x, (str, bytes)):
        return
    if isinstance(x, dict):
        for k, v in list(x.items())[:MAX_TENSORS]:
            _walk(v, "%s[%r]" % (path, k) if isinstance(k, (str, int)) else path + "[?]", depth + 1, out)
    elif isinstance(x, (tuple, list)):
        for i, v in enumerate(x[:MAX_TENSORS]):
            _walk(v, "%s[%d]" % (path, i), depth + 1, out)


def look(batch: Any, found: Optional[List[Tuple[str, Any]]] = None, time_major: bool = False) -> Optional[Look]:
    """What batch holds, or None when it holds no tensor or array. found,
    when given, receives each (path, tensor or array) walked."""
    if found is None:
        found = []
    _walk(batch, "", 0, found)
    if not found:
        return None
    tensors = []
    total = f64 = pinned_bytes = 0
    for path, x in found:
        if _is_torch(x):
            n = int(x.numel()) * int(x.element_size())
            try:
                pinned: Optional[bool] = bool(x.is_pinned()) if x.device.type == "cpu" else False
            except Exception:
                pinned = None
        else:
            n, pinned = int(x.nbytes), None
        dt = _dtype(x)
        tensors.append(TensorLook(path[:128], dt[:32], tuple(int(d) for d in tuple(x.shape)[:8]), n, pinned))
        total += n
        if dt in ("float64", "double"):
            f64 += n
        if pinned:
            pinned_bytes += n
    slots, pad = padding(batch, found, time_major)
    return Look(tensors, total, f64, pinned_bytes, slots, pad)


def padding(batch: Any, found: List[Tuple[str, Any]], time_major: bool = False) -> Tuple[int, int]:
    """(token slots, padding slots) of the batch's token tensor; (0, 0)
    when it has none. time_major: the loader's batches are sequence ×
    batch (pad_sequence's default, _timing.Stats.samples_of), whose rows
    are time steps: read transposed (a review: 3–10 % read of 47 %)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0, 0
    try:
        if isinstance(batch, dict):
            for k, v in batch.items():
                if isinstance(k, str) and k.lower().endswith("mask") and _is_torch(v) and v.dim() == 2 and v.numel() > 0:
                    return int(v.numel()), int((v == 0).sum())
        seq = 0 if time_major else 1  # the sequence's dimension
        tokens = [x for _, x in found if _is_torch(x) and x.dim() == 2 and x.shape[seq] >= 2 and _dtype(x) in _INTS and x.device.type == "cpu"]
        if not tokens:
            return 0, 0
        t = max(tokens, key=lambda x: x.numel())
        if time_major:
            t = t.t()
        last = t[:, -1]
        vals, counts = torch.unique(last, return_counts=True)
        pad = vals[int(counts.argmax())]
        # The run of pad at each row's end: the running product of the
        # reversed row's matches.
        run = (t == pad).flip(1).to(torch.int32).cumprod(1).sum(1)
        if int(run.max()) < 2:  # one closing token per row: an end mark, not padding
            return int(t.numel()), 0
        return int(t.numel()), int(run.sum())
    except Exception:  # a tensor subclass that does not do these: no padding read
        return 0, 0
