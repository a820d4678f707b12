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
import io
import linecache
import os
import re
import stat
import sys
import tokenize
import types
from typing import Optional

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


def callee(code, lasti: int, globs) -> Optional[str]:
    """The name of the function the call at code's byte offset lasti
    calls, or None: not a call, a Python function (its own frame shows),
    no source, or no name to read."""
    if not POSITIONS or lasti < 0:
        return None
    raw = code.co_code
    if lasti >= len(raw) or raw[lasti] not in _CALLS:
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
    fn = _callee_text(text)
    if fn is None:
        return None
    if _DOTTED.match(fn):
        return _resolve(fn, code, globs)
    m = _TAIL.search(fn)  # a method of some value: self.rows[i].astype
    if m is None:
        return None
    return _cut(fn)


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


def _callee_text(call: str) -> Optional[str]:
    """The callee of a call expression's text: its tokens before the
    parenthesis that opens its arguments, found from the closing one at its
    end (strings and comments are tokens of their own: a "(" in one is not
    a bracket). None where the text does not end in a call."""
    try:
        toks = [
            t
            for t in tokenize.generate_tokens(io.StringIO(call.strip()).readline)
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
                if t.string != "(":
                    return None
                return "".join(x.string for x in toks[:i]) or None
    return None


def _resolve(fn: str, code, globs) -> Optional[str]:
    parts = fn.split(".")
    local = parts[0] in code.co_varnames or parts[0] in code.co_cellvars or parts[0] in code.co_freevars
    if local or not isinstance(globs, dict):
        return _cut(fn)
    obj = globs.get(parts[0], _MISSING)
    if obj is _MISSING:
        obj = builtins.__dict__.get(parts[0], _MISSING)
    if obj is _MISSING:
        return _cut(fn)
    prefix = None  # the deepest module reached, and the parts after it
    i = 1
    while isinstance(obj, types.ModuleType):
        prefix = (obj, i)
        if i == len(parts):
            return None  # a module is not called
        nxt = obj.__dict__.get(parts[i], _MISSING)
        if nxt is _MISSING:
            break
        obj, i = nxt, i + 1
    if i == len(parts):
        if isinstance(obj, (types.FunctionType, types.MethodType)):
            return None  # Python: its own frame is where the time is
        if isinstance(obj, types.BuiltinFunctionType):
            mod, name = obj.__module__, obj.__name__
            if isinstance(mod, str) and isinstance(name, str):
                return _cut(mod + "." + name)
        elif type(obj) is type:  # a class whose metaclass is type: no user code reads its names
            mod, name = obj.__module__, obj.__qualname__
            if isinstance(mod, str) and isinstance(name, str):
                return _cut(mod + "." + name)
    if prefix is None:
        return _cut(fn)  # a global value's method: tokenizer.encode
    mod, at = prefix
    name = mod.__dict__.get("__name__")
    if not isinstance(name, str):
        return _cut(fn)
    return _cut(".".join([name] + parts[at:]))


def _cut(s: str) -> str:
    return s if len(s) <= MAX_TEXT else "…" + s[-(MAX_TEXT - 1) :]


_MISSING = object()
