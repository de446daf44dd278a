"""Line-aligned byte ranges of the CDC job's landing files (one decode task unit each).

A large JSON-lines file is not decoded whole: the driver plans ranges of at most
``max_bytes`` (Spark's ``spark.sql.files.maxPartitionBytes``, 128 MB by default, or the job's
``--max-partition-bytes``), each decoded apart, read through FileIO with one ranged read
(:meth:`paimon_core.FileIO.read_range`), so a task holds one range at a time, never a file.

The rule is Hadoop's ``LineRecordReader``'s: the nominal range ``k`` is the bytes
``[k * max_bytes, (k + 1) * max_bytes)``, and a line belongs to the range in which it starts
(its first byte), so the line crossing a nominal boundary is read whole by the range before it;
a range in which no line starts (a line longer than ``max_bytes``) is dropped. Here the
boundaries are made line-aligned when planning: :func:`split_points` reads a few KB at each
nominal boundary (more only while a line goes on) for the first line start at or after it;
the file is never read whole on the driver.

Positions: a range does not know how many lines come before it, so the rows of the ``k``-th
range of a file (``LineRange.ordinal``, from 0) carry the *line position*
``k << LINE_BITS | j`` for their 1-based line ``j`` within the range
(:attr:`LineRange.first_position` is the decoder's ``first_line``). Positions order the
lines of a file exactly as their line numbers do (the tie-breaker between changes of equal
source position), and in the first range (every file no larger than ``max_bytes``, every
Avro file's first range) they *are* the line numbers. The 1-based line number in the file is
computed only where it is reported, for the few quarantined rows (:class:`LineNumbers`: the
newlines before the range are counted once per range).

Avro container files (``unit="avro-block"``) are split the same way at block boundaries
instead of line boundaries (:mod:`pipelines.cdc.avro_blocks`: a block belongs to the range in
which the sync marker before it starts); their positions count records instead of lines.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from paimon_core.integration import FileIO
from pipelines.cdc import avro_blocks

__all__ = ["DEFAULT_MAX_BYTES", "LINE_BITS", "LineNumbers", "LineRange", "RangeUnit",
           "parse_size", "plan_ranges", "range_bytes", "split_points"]

#: Spark's ``spark.sql.files.maxPartitionBytes`` default
DEFAULT_MAX_BYTES = 128 << 20
#: bytes read at a time while planning (at each nominal boundary) and while counting newlines
_SCAN_BYTES = 64 << 10
_COUNT_BYTES = 16 << 20
#: low bits of a line position that hold the line within its range (see the module docs): a
#: range holds fewer lines than bytes, and ranges are far below 2**40 bytes
LINE_BITS = 40
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)
#: what a range holds whole: lines of text (JSON lines) or blocks of an Avro container file
RangeUnit = Literal["line", "avro-block"]


@dataclass(frozen=True)
class LineRange:
    """Bytes ``[start, end)`` of the batch's file ``file_index`` (``path``): whole lines (or
    whole Avro blocks, ``unit``); the file's ``ordinal``-th range (from 0)."""

    file_index: int
    path: str
    start: int
    end: int
    ordinal: int
    unit: RangeUnit = "line"

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def first_position(self) -> int:
        """The line position of the range's first line (see the module docs): its line
        number in the first range."""
        return self.ordinal << LINE_BITS | 1


def parse_size(text: str) -> int:
    """Bytes of a size as Spark writes it (``134217728``, ``128m``, ``128MB``, ``1g``; binary
    units, as Spark's ``byteFromString``).

    Raises:
        ValueError: not a size, or not positive.
    """
    m = _SIZE.match(text)
    if m is None or (m.group(3) and m.group(3).lower() not in ("b", "ib")):
        raise ValueError(f"not a byte size: {text!r} (e.g. 134217728, 128m, 128MB)")
    n = int(m.group(1)) << (10 * "kmgtp".find(m.group(2).lower()) + 10 if m.group(2) else 0)
    if n <= 0:
        raise ValueError(f"a byte size must be positive: {text!r}")
    return n


def split_points(read: Callable[[int, int], bytes], size: int, max_bytes: int, *,
                 scan_bytes: int = _SCAN_BYTES) -> list[int]:
    """The start of every range of a ``size``-byte file (see the module docs), the first 0:
    each start is the first line start (offset 0 or a byte after ``\\n``) at or after a
    nominal boundary ``k * max_bytes``, and below ``size``. ``read(offset, n)`` returns the
    file's bytes ``[offset, offset + n)`` (fewer at its end); it is called from each nominal
    boundary on, ``scan_bytes`` at a time, until a newline is found.

    Raises:
        ValueError: ``max_bytes`` is not positive.
    """
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, not {max_bytes}")
    points = [0]
    target = max_bytes - 1  # a line starts at b when byte b - 1 is a newline
    while target < size - 1:
        off = target
        while off < size:
            chunk = read(off, scan_bytes)
            if not chunk:
                return points
            i = chunk.find(b"\n")
            if i >= 0:
                break
            off += len(chunk)
        else:
            return points
        start = off + i + 1
        if start >= size:
            break
        points.append(start)
        # the next nominal boundary after this start (a long line spans several)
        target = (start // max_bytes + 1) * max_bytes - 1
    return points


def plan_ranges(file_io: FileIO, paths: Sequence[str], max_bytes: int, *,
                splittable: bool = True, unit: RangeUnit = "line") -> list[LineRange]:
    """The ranges of ``paths`` (in order; see the module docs) holding whole units
    (``unit``: lines, or Avro blocks: :func:`pipelines.cdc.avro_blocks.split_points`).
    ``splittable=False``: one range per file.

    Raises:
        ValueError: ``max_bytes`` is not positive.
        FileNotFoundInTableError, StorageError: a file cannot be read.
    """
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, not {max_bytes}")
    out: list[LineRange] = []
    for i, path in enumerate(paths):
        size = file_io.size(path)
        if not splittable or size <= max_bytes:
            out.append(LineRange(i, path, 0, size, 0, unit))
            continue
        split = avro_blocks.split_points if unit == "avro-block" else split_points
        points = split(functools.partial(file_io.read_range, path), size, max_bytes)
        ends = [*points[1:], size]
        out.extend(LineRange(i, path, s, e, k, unit)
                   for k, (s, e) in enumerate(zip(points, ends)))
    return out


def range_bytes(file_io: FileIO, r: LineRange) -> bytes:
    """What a task decodes for range ``r`` (one ranged read; an Avro range after the first
    also reads the file's header: :func:`pipelines.cdc.avro_blocks.range_bytes`)."""
    if r.unit == "avro-block" and r.start > 0:
        return avro_blocks.range_bytes(functools.partial(file_io.read_range, r.path),
                                       file_io.size(r.path), r.start, r.end)
    return file_io.read_range(r.path, r.start, r.length)


class LineNumbers:
    """The 1-based line number (record number for Avro) in its file of a line position (see
    the module docs), for the ranges ``ranges`` of a batch: a position in a file's first
    range is its line number; in a later range, the newlines (Avro: the records of the blocks,
    :func:`pipelines.cdc.avro_blocks.records_before`) before the range are counted (read
    through ``file_io``, :data:`_COUNT_BYTES` at a time) the first time one of its
    positions is asked for. Only reported lines (quarantined rows) are ever asked for."""

    def __init__(self, file_io: FileIO, ranges: Sequence[LineRange]) -> None:
        self._io = file_io
        self._ranges = {(r.file_index, r.ordinal): r for r in ranges}
        self._before: dict[tuple[int, int], int] = {}  # (file, ordinal) -> newlines before

    def __call__(self, file_index: int, position: int) -> int:
        """The line number of ``position`` in the batch's file ``file_index``.

        Raises:
            KeyError: the file has no such range.
            FileNotFoundInTableError, StorageError: the file cannot be read.
        """
        ordinal, line = position >> LINE_BITS, position & ((1 << LINE_BITS) - 1)
        if ordinal == 0:
            return line
        key = (file_index, ordinal)
        if key not in self._before:
            r = self._ranges[key]
            self._before[key] = (avro_blocks.records_before(
                functools.partial(self._io.read_range, r.path), self._io.size(r.path), r.start)
                if r.unit == "avro-block" else self._newlines(r.path, r.start))
        return self._before[key] + line

    def _newlines(self, path: str, end: int) -> int:
        """The newlines in the bytes ``[0, end)`` of ``path``."""
        count = 0
        for off in range(0, end, _COUNT_BYTES):
            chunk = self._io.read_range(path, off, min(_COUNT_BYTES, end - off))
            count += chunk.count(b"\n")
        return count
