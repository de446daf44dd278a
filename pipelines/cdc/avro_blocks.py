"""The block structure of Avro object container files, for decoding one in ranges of blocks
(``--format debezium-avro``; :mod:`pipelines.cdc.ranges` plans the ranges).

A container file is a header (magic ``Obj\\x01``, the metadata map with ``avro.schema`` and
``avro.codec``, a 16-byte sync marker) followed by blocks, each ``count`` (zig-zag varint),
``size`` (varint), ``size`` bytes of (compressed) records, and the sync marker again (Avro 1.11
spec, "Object Container Files"). A block can be decoded knowing only the header, so a file is
split as Hadoop's ``AvroRecordReader`` splits it (``DataFileReader.sync(start)`` /
``pastSync(end)``): the nominal range ``k`` is the bytes ``[k * max_bytes, (k + 1) *
max_bytes)``, and a block belongs to the range in which the sync marker *before* it starts
(the header's marker for the first block), so a range holds whole blocks. :func:`split_points`
finds, at each nominal boundary, the first sync marker starting at or after it (reading a few
KB there, more only while a block goes on); the range then starts right after that marker.
A task reads the header and its range (:func:`range_bytes`) and decodes them as one container
file: no task reads the whole file.

Record numbers: a range does not know how many records come before it; the rows of range
``k`` carry the position ``k << LINE_BITS | j`` for their ``j``-th record in the range (as
lines, :mod:`pipelines.cdc.ranges`), and :func:`records_before` counts the records of the
blocks before a range by walking the block headers (their ``count``; the data is skipped,
never decompressed), only for quarantined records that are reported.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import fastavro
from fastavro.read import HEADER_SCHEMA

__all__ = ["AvroHeader", "range_bytes", "read_header", "records_before", "split_points"]

#: ``read(offset, n)``: the file's bytes ``[offset, offset + n)`` (fewer at its end)
Read = Callable[[int, int], bytes]
#: the length of the sync marker
SYNC_SIZE = 16
#: bytes read at a time: the header's first read, the scan at a boundary, the block walk
_HEADER_BYTES = 64 << 10
_SCAN_BYTES = 64 << 10
_WALK_BYTES = 4 << 20


@dataclass(frozen=True)
class AvroHeader:
    """The header of a container file: its length in bytes (the first block starts there),
    the sync marker, and the header's bytes."""

    length: int
    sync: bytes
    data: bytes


def read_header(read: Read, size: int) -> AvroHeader:
    """The header of a ``size``-byte container file (read from offset 0, 64 KB first, more
    while the metadata goes on).

    Raises:
        ValueError: the file does not start with an Avro container header.
    """
    n = _HEADER_BYTES
    while True:
        buf = read(0, min(n, size))
        if not buf.startswith(b"Obj\x01"):
            raise ValueError(f"not an Avro object container file (starts with {buf[:4]!r})")
        fo = io.BytesIO(buf)
        try:
            header = fastavro.schemaless_reader(fo, HEADER_SCHEMA)
        except Exception as e:  # a header cut short by the read, or a corrupt one
            if len(buf) < size:
                n *= 4
                continue
            raise ValueError(f"bad Avro header: {type(e).__name__}: {e}") from e
        assert isinstance(header, dict)
        length = fo.tell()
        return AvroHeader(length, bytes(header["sync"]), buf[:length])


def split_points(read: Read, size: int, max_bytes: int, *,
                 scan_bytes: int = _SCAN_BYTES) -> list[int]:
    """The start of every range of a ``size``-byte container file (see the module docs), the
    first 0 (the header and the first blocks): each later start is the byte after the first
    sync marker that starts at or after a nominal boundary ``k * max_bytes`` and is followed
    by a block. A file that is not a container is one range (its decode says why).

    Raises:
        ValueError: ``max_bytes`` is not positive.
    """
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, not {max_bytes}")
    try:
        header = read_header(read, size)
    except ValueError:
        return [0]
    points = [0]
    target = max_bytes
    while target < size:
        at = _find_sync(read, size, max(target, header.length), header.sync, scan_bytes)
        if at is None or at + SYNC_SIZE >= size:
            break
        points.append(at + SYNC_SIZE)
        target = (at // max_bytes + 1) * max_bytes
    return points


def _find_sync(read: Read, size: int, start: int, sync: bytes, scan_bytes: int) -> int | None:
    """The offset of the first ``sync`` starting at or after ``start``, or None."""
    off = start
    while off < size:
        chunk = read(off, scan_bytes + SYNC_SIZE - 1)
        i = chunk.find(sync)
        if i >= 0:
            return off + i
        if len(chunk) < scan_bytes + SYNC_SIZE - 1:
            return None
        off += scan_bytes
    return None


def range_bytes(read: Read, size: int, start: int, end: int) -> bytes:
    """The bytes a task decodes for the range ``[start, end)`` of a container file: the
    range itself when it starts the file, else the header followed by the range's blocks (a
    container file of its own)."""
    if start == 0:
        return read(0, end)
    return read_header(read, size).data + read(start, end - start)


def _varint(buf: bytes, at: int) -> tuple[int, int] | None:
    """The zig-zag varint at ``buf[at:]`` and the offset after it; None when cut short."""
    shift = 0
    acc = 0
    while at < len(buf):
        b = buf[at]
        acc |= (b & 0x7F) << shift
        at += 1
        if not b & 0x80:
            return (acc >> 1) ^ -(acc & 1), at
        shift += 7
    return None


def records_before(read: Read, size: int, end: int) -> int:
    """The records of the blocks that start before byte ``end`` (a range's start) of a
    container file: the sum of their ``count`` (block headers only, read
    :data:`_WALK_BYTES` at a time).

    Raises:
        ValueError: not a container file, or a block header is corrupt.
    """
    off = read_header(read, size).length
    count = 0
    buf, base = b"", off
    while off < end:
        parsed = None
        if off - base + 20 <= len(buf) or (buf and base + len(buf) >= size):
            parsed = _block_header(buf, off - base)
        if parsed is None:
            buf, base = read(off, _WALK_BYTES), off
            parsed = _block_header(buf, 0)
            if parsed is None:
                raise ValueError(f"corrupt Avro block header at byte {off}")
        n, length, data_at = parsed
        count += n
        off = base + data_at + length + SYNC_SIZE
    return count


def _block_header(buf: bytes, at: int) -> tuple[int, int, int] | None:
    """A block's record count and byte size at ``buf[at:]``, and where its data starts."""
    first = _varint(buf, at)
    if first is None:
        return None
    second = _varint(buf, first[1])
    if second is None or first[0] < 0 or second[0] < 0:
        return None
    return first[0], second[0], second[1]
