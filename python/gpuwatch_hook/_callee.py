"""The C function a Python frame is calling, by name, for the profiler.

The profiler sees only Python frames, so a C function (torch.tensor,
np.array, float, an ndarray's astype) would count as its Python caller's
line. But a thread running a C function that holds the GIL lets go of it
only when the function returns, at the call instruction itself (CPython
checks for a GIL request after a call to C code), so the sampler finds the
calling frame stopped on that call: the instruction at f_lasti is a call,
and the source span Python keeps for it (co_positions, 3.11+) is the call
expression. Its callee's text names the function: a name reached through
modules only (np.array, torch.tensor, a builtin) is resolved to its module's
own name ("numpy.array", "torch.tensor", "builtins.float") by dictionary
lookups alone; anything else (a method of a value, x.astype) keeps its
source text. No user code runs, and nothing is looked up on a value.

Before Python 3.11 there are no positions, and a C call counts as its
caller's line, as before. docs/diagnosis.md, "The workers' CPU profile"."""

from __future__ import annotations

import builtins
import dis
import functools
import io
import linecache
import os
import re
import stat
import sys
import tokenize
import types
from typing import Optional, Tuple

_CALLS = frozenset(
    dis.opmap[n]
    for n in ("PRECALL", "CALL", "CALL_KW", "CALL_FUNCTION_EX", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_METHOD")
    if n in dis.opmap
)
POSITIONS = sys.version_info >= (3, 11)
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_TAIL = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)\Z")
MAX_TEXT = 80  # a callee's source text is cut to its last 80 characters
MAX_SPAN_LINES = 8  # a call written over more lines is not read
MAX_SOURCE = 4 << 20  # nor a source file over 4 MiB
MAX_CALL = 2048  # nor a call's text over 2 KiB (a literal list a megabyte long)


def callee(code, lasti: int, globs) -> Optional[str]:
    """The name of the function the call at code's byte offset lasti
    calls, or None: not a call, a call whose sample may hold other work
    (alone), a Python function (its own frame shows), no source, or no
    name to read."""
    if not POSITIONS or lasti < 0:
        return None
    raw = code.co_code
    if lasti >= len(raw) or raw[lasti] not in _CALLS or not alone(code, lasti):
        return None
    try:
        pos = next(_nth(code.co_positions(), lasti // 2), None)
    except Exception:
        return None
    if pos is None or None in pos:
        return None
    text = _span(code.co_filename, *pos)
    if text is None:
        return None
    got = _callee_text(text)
    if got is None:
        return None
    fn, names = got
    # The source read now must be the source that was compiled: every
    # name the callee's text uses is one the code object uses (a file
    # edited since the import reads other text).
    known = set(code.co_names) | set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    if not names or not all(n in known or n in builtins.__dict__ for n in names):
        return None
    if _DOTTED.match(fn):
        return _resolve(fn, code, globs)
    m = _TAIL.search(fn)  # a method of some value: self.rows[i].astype
    if m is None:
        return None
    return _cut(fn)


# Where a thread that was running Python hands the GIL over at a request
# (CPython's eval breaker): a function's start and a loop's jump back. A
# thread stopped at one of them waits for the GIL to go on running there;
# stopped anywhere else, it is inside C code (a call, a `with`'s lock, a
# `for` over a pipe) that let go of the GIL, and may be blocked in it.
# Python 3.10 hands it over at a jump taken and a function's start
# (f_lasti -1), of which a conditional jump counts only backwards; 3.9
# before most instructions, the frame showing the one before: of those, a
# jump and arithmetic, which do not block (list += file, which reads, is
# the exception let pass). Seen by sampling spinning and sleeping threads
# on each version: docs/diagnosis.md.
if sys.version_info >= (3, 11):
    _CHECKPOINT_NAMES = (
        "RESUME", "JUMP_BACKWARD", "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
        "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE",
    )
elif sys.version_info >= (3, 10):
    # A conditional jump tests its value first (a C __bool__ may let go of
    # the GIL and block: `if loss_on_gpu:` syncs), so only a jump back, a
    # loop's, counts: the test of `while x:` at its end.
    _CHECKPOINT_NAMES = ("JUMP_ABSOLUTE", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE")
else:
    _CHECKPOINT_NAMES = ("JUMP_ABSOLUTE", "COMPARE_OP") + tuple(
        n for n in dis.opmap if n.startswith(("BINARY_", "INPLACE_")) and not n.endswith("SUBSCR")
    )
_CHECKPOINTS = frozenset(dis.opmap[n] for n in _CHECKPOINT_NAMES if n in dis.opmap)
_BACKWARD_ONLY = frozenset(dis.opmap[n] for n in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE") if sys.version_info[:2] == (3, 10))


def at_checkpoint(code, lasti: int) -> bool:
    """Whether a frame stopped at byte offset lasti is at a point where
    CPython hands the GIL over to a thread that asks for it: the thread
    is running Python there, waiting for the GIL to go on, not blocked.
    Before 3.11 a frame not yet started (lasti -1) is at its start; False
    where the instruction cannot be read (an offset outside the code)."""
    if lasti < 0:
        return not POSITIONS and lasti == -1
    raw = code.co_code
    if lasti >= len(raw) or raw[lasti] not in _CHECKPOINTS:
        return False
    if raw[lasti] in _BACKWARD_ONLY:
        target = next((x.argval for x in dis.get_instructions(code) if x.offset == lasti), None)
        return isinstance(target, int) and target < lasti
    return True


# Instructions after which CPython may run a signal handler or hand the GIL
# over: a sample stopped on a call is charged the CPU time since the last
# of them.
_CHECKS = frozenset(("RESUME", "JUMP_BACKWARD", "CALL", "PRECALL", "CALL_KW", "CALL_FUNCTION_EX"))
# Instructions that can do unbounded work in C before the call (array
# arithmetic, a comparison of arrays, a C iterator's next, formatting): a
# sample after them is not the call's alone. A subscript is let pass:
# self.rows[i] before torch.tensor(row) is an index, as in most
# __getitem__; a gather by an index array before a call is the call's
# then, a bias the docs name.
_HEAVY_PREFIXES = (
    "BINARY_OP", "BINARY_SLICE", "UNARY_", "STORE_SUBSCR", "STORE_SLICE", "DELETE_SUBSCR", "COMPARE_OP", "CONTAINS_OP", "FOR_ITER",
    "GET_ITER", "UNPACK_", "BUILD_STRING", "FORMAT_", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE",
    "CALL_INTRINSIC", "IMPORT_", "TO_BOOL", "GET_LEN", "MATCH_",
)


def alone(code, lasti: int) -> bool:
    """Whether the call at lasti is the only work a sample stopped on it
    can hold: between the last instruction where the handler could have
    run and the call there are only loads, stores and jumps, read back
    from the call in the code's order (across a forward jump's target,
    so an if's other branch is read as if it ran: an approximation).
    a * 2 + 1 before float(b[0]) is the arithmetic's time, not float's:
    the sample is the line's."""
    ins = list(dis.get_instructions(code))
    i = next((k for k, x in enumerate(ins) if x.offset == lasti), None)
    if i is None:
        return False
    if ins[i].opname == "CALL":  # 3.11: its PRECALL (and KW_NAMES) came just before, the same call
        while i > 0 and ins[i - 1].opname in ("PRECALL", "KW_NAMES"):
            i -= 1
    for k in range(i - 1, -1, -1):
        x = ins[k]
        if x.opname in _CHECKS:
            return True
        if x.opname.startswith(_HEAVY_PREFIXES):
            return False
    return True  # the code's start: RESUME, or before 3.11 none


# From Python 3.12 a list, set or dict comprehension runs inline in its
# function's frame (PEP 709); before, it was a frame of its own, named
# <listcomp>. Its loop is the only one that adds with LIST_APPEND, SET_ADD
# or MAP_ADD.
INLINED = sys.version_info >= (3, 12)
_ADDS = {"LIST_APPEND": "listcomp", "SET_ADD": "setcomp", "MAP_ADD": "dictcomp"}


def comprehension(code, lasti: int) -> Optional[Tuple[str, int]]:
    """Which comprehension ("listcomp", "setcomp", "dictcomp") code runs at
    byte offset lasti, inlined in its function's frame (3.12+), and the
    line its loop starts on; None where it runs none. The profiler names a
    sample there as 3.11 named the comprehension's own frame, so the time
    Python spends building a list value by value counts as such
    (pprofsum's converting) whatever the version."""
    if not INLINED or lasti < 0:
        return None
    found: Optional[Tuple[str, int]] = None
    for start, end, kind, line in _comprehensions(code):  # outermost first: the last to hold lasti is the innermost
        if start <= lasti <= end:
            found = (kind, line)
    return found


@functools.lru_cache(maxsize=1024)
def _comprehensions(code) -> Tuple[Tuple[int, int, str, int], ...]:
    """code's inlined comprehensions: (first and last byte offset of the
    loop, kind, its line), by first offset. A loop that adds with
    LIST_APPEND, SET_ADD or MAP_ADD is a comprehension's (the adds of a
    nested one are in its own, innermost, loop)."""
    try:
        ins = list(dis.get_instructions(code))
    except Exception:
        return ()
    loops = {x.offset: (x.argval, x.positions.lineno if x.positions else None) for x in ins if x.opname == "FOR_ITER" and isinstance(x.argval, int)}
    out = set()
    for x in ins:
        kind = _ADDS.get(x.opname)
        inner = max((lo for lo, (end, _) in loops.items() if lo < x.offset <= end), default=None) if kind else None
        if inner is not None:
            out.add((inner, loops[inner][0], kind, loops[inner][1] or 0))
    return tuple(sorted(out))


def _nth(it, n: int):
    for i, v in enumerate(it):
        if i == n:
            yield v
            return


def _span(filename: str, line: int, end_line: int, col: int, end_col: int) -> Optional[str]:
    """The source between two positions (columns are UTF-8 byte offsets)."""
    if end_line < line or end_line - line >= MAX_SPAN_LINES:
        return None
    try:  # linecache reads a whole file, and would block on a FIFO
        st = os.stat(filename)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE:
        return None
    lines = [linecache.getline(filename, n).encode("utf-8", "replace") for n in range(line, end_line + 1)]
    if not lines[0]:
        return None
    if len(lines) == 1:
        b = lines[0][col:end_col]
    else:
        b = lines[0][col:] + b"".join(lines[1:-1]) + lines[-1][:end_col]
    return b.decode("utf-8", "replace")


def _callee_text(call: str):
    """The callee of a call expression's text and the names it uses: its
    tokens before the parenthesis that opens its arguments, found from the
    closing one at its end (strings and comments are tokens of their own: a
    "(" in one is not a bracket). None where the text does not end in a
    call, or is longer than MAX_CALL."""
    call = call.strip()
    if len(call) > MAX_CALL:
        return None
    try:
        toks = [
            t
            for t in tokenize.generate_tokens(io.StringIO(call).readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
        ]
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    if not toks or toks[-1].string != ")":
        return None
    depth = 0
    for i in range(len(toks) - 1, -1, -1):
        t = toks[i]
        if t.type != tokenize.OP:
            continue
        if t.string in ")]}":
            depth += 1
        elif t.string in "([{":
            depth -= 1
            if depth == 0:
                if t.string != "(" or i == 0:
                    return None
                head = toks[:i]
                return "".join(x.string for x in head), [x.string for x in head if x.type == tokenize.NAME]
    return None


def _resolve(fn: str, code, globs) -> Optional[str]:
    parts = fn.split(".")
    local = parts[0] in code.co_varnames or parts[0] in code.co_cellvars or parts[0] in code.co_freevars
    if local or type(globs) is not dict:
        return _cut(fn)
    obj = globs.get(parts[0], _MISSING)
    if obj is _MISSING:
        obj = builtins.__dict__.get(parts[0], _MISSING)
    if obj is _MISSING:
        return _cut(fn)
    prefix = None  # the deepest module reached, and the parts after it
    i = 1
    while issubclass(type(obj), types.ModuleType):
        prefix = (obj, i)
        if i == len(parts):
            return None  # a module is not called
        nxt = obj.__dict__.get(parts[i], _MISSING)
        if nxt is _MISSING:
            break
        obj, i = nxt, i + 1
    if i == len(parts):
        kind = type(obj)
        if kind in (types.FunctionType, types.MethodType):
            return None  # Python: its own frame is where the time is
        if kind is types.BuiltinFunctionType:
            mod, name = obj.__module__, obj.__name__
            if type(mod) is str and type(name) is str:
                return _cut(mod + "." + name)
        elif kind is type:  # a class whose metaclass is type: no user code reads its names
            mod, name = obj.__module__, obj.__qualname__
            if type(mod) is str and type(name) is str:
                return _cut(mod + "." + name)
    if prefix is None:
        return _cut(fn)  # a global value's method: tokenizer.encode
    mod, at = prefix
    name = mod.__dict__.get("__name__")
    if type(name) is not str:
        return _cut(fn)
    return _cut(".".join([name] + parts[at:]))


def _cut(s: str) -> str:
    return s if len(s) <= MAX_TEXT else "…" + s[-(MAX_TEXT - 1) :]


_MISSING = object()
