"""pprof's profile format (github.com/google/pprof/proto/profile.proto),
written by hand: the hook uses the standard library only."""

from __future__ import annotations

import gzip
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

def _uvarint(b: bytearray, v: int) -> None:
    v &= (1 << 64) - 1  # int64 fields: two's complement
    while v >= 0x80:
        b.append((v & 0x7F) | 0x80)
        v >>= 7
    b.append(v)


def _int(b: bytearray, field: int, v: int) -> None:
    if v:
        _uvarint(b, field << 3)
        _uvarint(b, v)


def _msg(b: bytearray, field: int, data) -> None:
    _uvarint(b, field << 3 | 2)
    _uvarint(b, len(data))
    b += data


def _packed(b: bytearray, field: int, vals) -> None:
    inner = bytearray()
    for v in vals:
        _uvarint(inner, v)
    _msg(b, field, inner)


def encode_profile(
    samples: Iterable[Tuple[Sequence[Tuple[str, str, str, int, int]], Sequence[int], Dict[str, str]]],
    sample_types: Sequence[Tuple[str, str]],
    period_type: Optional[Tuple[str, str]] = None,
    period: int = 0,
    time_nanos: int = 0,
    duration_nanos: int = 0,
    comments: Sequence[str] = (),
) -> bytes:
    """Encodes a profile in pprof's format, gzipped. samples: (stack, values,
    labels), the stack leaf first as (name, system name, file, first line,
    line), values one per sample type, labels a dict of strings.
    sample_types: (type, unit) pairs."""
    strings = {"": 0}
    table = [""]

    def s(x: str) -> int:
        i = strings.get(x)
        if i is None:
            i = strings[x] = len(table)
            table.append(x)
        return i

    out = bytearray()
    for typ, unit in sample_types:
        vt = bytearray()
        _int(vt, 1, s(typ))
        _int(vt, 2, s(unit))
        _msg(out, 1, vt)
    functions: dict = {}  # (name, system name, file, first line) -> id
    locations: dict = {}  # (function id, line) -> id
    fn_bytes = bytearray()
    loc_bytes = bytearray()
    for stack, values, labels in samples:
        ids = []
        for name, system, filename, first, line in stack:
            fkey = (name, system, filename, first)
            fid = functions.get(fkey)
            if fid is None:
                fid = functions[fkey] = len(functions) + 1
                fb = bytearray()
                _int(fb, 1, fid)
                _int(fb, 2, s(name))
                _int(fb, 3, s(system))
                _int(fb, 4, s(filename))
                _int(fb, 5, first)
                _msg(fn_bytes, 5, fb)
            lkey = (fid, line)
            lid = locations.get(lkey)
            if lid is None:
                lid = locations[lkey] = len(locations) + 1
                ln = bytearray()
                _int(ln, 1, fid)
                _int(ln, 2, line)
                lb = bytearray()
                _int(lb, 1, lid)
                _int(lb, 2, 1)  # mapping 1
                _msg(lb, 4, ln)
                _msg(loc_bytes, 4, lb)
            ids.append(lid)
        sb = bytearray()
        _packed(sb, 1, ids)
        _packed(sb, 2, values)
        for k, v in sorted(labels.items()):
            lab = bytearray()
            _int(lab, 1, s(k))
            _int(lab, 2, s(v))
            _msg(sb, 3, lab)
        _msg(out, 2, sb)
    # One mapping that says the functions are already known, so pprof does
    # not try to symbolize addresses.
    mp = bytearray()
    _int(mp, 1, 1)
    _int(mp, 5, s("python"))
    for field in (7, 8, 9):  # has_functions, has_filenames, has_line_numbers
        _int(mp, field, 1)
    _msg(out, 3, mp)
    out += loc_bytes
    out += fn_bytes
    comment_ids = [s(c) for c in comments]
    pt = None
    if period_type:
        pt = bytearray()
        _int(pt, 1, s(period_type[0]))
        _int(pt, 2, s(period_type[1]))
    for x in table:
        _msg(out, 6, x.encode("utf-8", "replace"))
    _int(out, 9, time_nanos)
    _int(out, 10, duration_nanos)
    if pt is not None:
        _msg(out, 11, pt)
    _int(out, 12, period)
    if comment_ids:
        _packed(out, 13, comment_ids)
    return gzip.compress(bytes(out))
