"""The lines of a landed change-event file: split with numpy (UTF-8 checked, CR kept as the
reference keeps it), built lazily (the usual file parses as one document and never needs
them), and a few taken without building the others."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["BAD_UTF8", "Lazy", "is_utf8", "lines_of", "newlines", "split_lines", "split_text",
           "take_lines"]


class Lazy:
    """The lines of a file as a string array, built on first use (the usual file parses as one
    document and never needs them); ``take``: a few of them without building the others (a
    malformed line's text in a file of valid ones)."""

    def __init__(self, make: Callable[[], pa.Array],
                 take: Callable[[np.ndarray], pa.Array] | None = None) -> None:
        self._make: Callable[[], pa.Array] | None = make
        self._take = take
        self._arr: pa.Array | None = None

    def __call__(self) -> pa.Array:
        if self._arr is None:
            assert self._make is not None
            self._arr, self._make = self._make(), None
        return self._arr

    def take(self, rows: np.ndarray) -> pa.Array:
        """The lines of indices ``rows``, as ``self().take(rows)``."""
        if self._arr is None and self._take is not None:
            return self._take(rows)
        return self().take(pa.array(rows, pa.int64()))


def take_lines(data: bytes, starts: np.ndarray, rows: np.ndarray) -> pa.Array:
    """The lines ``rows`` of ``data`` (UTF-8, no line ending in CR, below 2 GB; its lines
    start at ``starts``) as :func:`split_lines` gives them, copying only those lines."""
    offsets = np.empty(len(starts) + 1, np.int32)
    offsets[:-1] = starts
    offsets[-1] = len(data)
    with_newlines = pa.Array.from_buffers(pa.string(), len(starts), [
        None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return pc.utf8_rtrim(with_newlines.take(pa.array(rows, pa.int64())), characters="\n")


#: bytes scanned at a time for newlines (a cache-sized temporary instead of a file-sized one)
_SCAN = 1 << 18


def newlines(buf: np.ndarray) -> np.ndarray:
    """The offsets of the newlines in ``buf`` (bytes), as ``np.flatnonzero(buf == 10)``,
    scanned :data:`_SCAN` bytes at a time."""
    if len(buf) <= _SCAN:
        return np.flatnonzero(buf == 10)
    parts = [np.flatnonzero(buf[o:o + _SCAN] == 10) + o for o in range(0, len(buf), _SCAN)]
    return np.concatenate(parts)


def lines_of(lines: pa.Array | Lazy) -> pa.Array:
    return lines() if isinstance(lines, Lazy) else lines


def split_lines(data: bytes) -> pa.Array:
    """The lines of a file as a string array: split at ``\\n``, one trailing ``\\r``
    removed, no line after a final newline; a line that is not UTF-8 becomes
    :data:`BAD_UTF8` (not JSON: a malformed event). Vectorised (numpy) for UTF-8 input."""
    n = len(data)
    if n == 0:
        return pa.array([], pa.string())
    if n >= 2**31 - 1 or not is_utf8(data):
        return pa.array(_split_lines_py(data), pa.string())
    buf = np.frombuffer(data, np.uint8)
    nl = newlines(buf)
    # no line after a final newline (nor after a final newline + CR: an empty line)
    count = len(nl) + (0 if data.endswith((b"\n", b"\n\r")) or data == b"\r" else 1)
    if count == 0:
        return pa.array([], pa.string())
    starts = np.empty(count, np.int64)
    starts[0] = 0
    starts[1:] = nl[:count - 1] + 1
    ends = np.empty(count, np.int64)
    ends[:len(nl)] = nl[:count]
    ends[len(nl):] = n
    keep = buf != 10  # the bytes of the lines: all but the separators
    if b"\r" in data:  # one trailing CR per line goes
        cr = ends > starts
        cr[cr] = buf[ends[cr] - 1] == 13
        ends -= cr
        keep[ends[cr]] = False
    offsets = np.zeros(count + 1, np.int32)
    np.cumsum(ends - starts, out=offsets[1:])
    values = buf[keep]
    return pa.Array.from_buffers(pa.string(), count,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(values)])


#: the text of a line that is not UTF-8 (see :func:`split_lines`)
BAD_UTF8 = "\u0000<invalid utf-8>"


def split_text(data: bytes) -> list[str]:
    """``data`` split at ``\\n`` as Python strings, one trailing ``\\r`` removed (a last empty
    line after a final newline is kept); a line that is not UTF-8 becomes :data:`BAD_UTF8`.
    The per-line reference of :func:`split_lines`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        out = []
        for raw in data.split(b"\n"):
            try:
                out.append(raw.decode("utf-8").rstrip("\r"))
            except UnicodeDecodeError:
                out.append(BAD_UTF8)
        return out
    lines = text.split("\n")
    return [x[:-1] if x.endswith("\r") else x for x in lines]


def _split_lines_py(data: bytes) -> list[str]:
    out = split_text(data)
    if out and out[-1] == "":
        out.pop()
    return out


def is_utf8(data: bytes | pa.Buffer) -> bool:
    whole = pa.Array.from_buffers(pa.string(), 1, [
        None, pa.py_buffer(np.array([0, len(data)], np.int32)), pa.py_buffer(data)])
    try:
        whole.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True
