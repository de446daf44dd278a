"""Deletion-vector index files (``index/index-<uuid>-<n>`` of type ``DELETION_VECTORS``).

Mirrors ``org.apache.paimon.deletionvectors.DeletionVectorsIndexFile``,
``BitmapDeletionVector``, ``Bitmap64DeletionVector`` and ``DeletionVector.read``.
Layout (verified in the Java 0.9 and HEAD sources and on files written by Java 0.9)::

    byte     version = 1
    then per data file, at DeletionVectorMeta.offset:
      int32 BE  n = size of the vector bytes
      vector bytes (n):
        32-bit (BitmapDeletionVector):  int32 BE magic 1581511376,
                                        RoaringBitmap (32-bit portable serialization)
        64-bit (Bitmap64DeletionVector, HEAD only):
                                        int32 LE magic 1681511377,
                                        int64 LE bitmap count, then per bitmap:
                                        uint32 LE key (high 32 bits) + 32-bit portable bitmap
      int32 BE  CRC32 of the vector bytes

``DeletionVectorMeta.length`` is ``n`` for the 32-bit format and ``n + 8`` for the 64-bit one
(HEAD's DeletionFileWriter records the full size returned by ``serializeTo``).

RoaringBitmap portable format (https://github.com/RoaringBitmap/RoaringFormatSpec), all
little-endian: cookie ``12346`` + uint32 container count, or cookie ``12347 | (count-1) << 16``
followed by a run-flag bitset; ``count`` x (uint16 key, uint16 cardinality-1); uint32 offsets
(always without runs, with runs only when count >= 4); then the containers: run
(uint16 n, n x (start, length-1)), array (cardinality <= 4096: uint16 values) or bitmap
(8 KiB, 65536 bits).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from paimon_core.errors import CorruptMetadataError, SchemaError
from paimon_core.spec.index_manifest import DeletionVectorMeta

__all__ = [
    "BITMAP64_MAGIC",
    "BITMAP_MAGIC",
    "DV_FILE_VERSION",
    "decode_deletion_vectors",
    "deserialize_roaring32",
    "encode_deletion_vectors",
    "serialize_roaring32",
]

#: First byte of a deletion-vector index file (``DeletionVectorsIndexFile.VERSION_ID_V1``).
DV_FILE_VERSION = 1
#: ``BitmapDeletionVector.MAGIC_NUMBER`` (stored big-endian).
BITMAP_MAGIC = 1581511376
#: ``Bitmap64DeletionVector.MAGIC_NUMBER`` (stored little-endian).
BITMAP64_MAGIC = 1681511377

_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192
_MAX_POSITION_32 = 2**31 - 1

Int64Array = npt.NDArray[np.int64]


class _Bad(Exception):
    pass


def _need(data: bytes, pos: int, size: int, what: str) -> None:
    if size < 0 or pos + size > len(data):
        raise _Bad(f"truncated {what}")


def _run_values(runs: npt.NDArray[np.uint16]) -> npt.NDArray[np.int64]:
    """Expand (start, length-1) pairs into the covered values (vectorised)."""
    starts = runs[0::2].astype(np.int64)
    lengths = runs[1::2].astype(np.int64) + 1
    if np.any(starts + lengths > 65536):
        raise _Bad("run container exceeds 65536")
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    # offsets within each run: arange(total) - repeat(run start index in output)
    run_begin = np.cumsum(lengths) - lengths
    values = np.arange(total, dtype=np.int64) - np.repeat(run_begin - starts, lengths)
    return values


def deserialize_roaring32(data: bytes, pos: int = 0) -> tuple[Int64Array, int]:
    """Decode a portable 32-bit RoaringBitmap starting at ``pos``.

    Returns:
        (sorted int64 array of the unsigned 32-bit values, position after the bitmap).

    Raises:
        ValueError: malformed bitmap.
    """
    try:
        return _deserialize32(data, pos)
    except _Bad as e:
        raise ValueError(str(e)) from e


def _deserialize32(data: bytes, pos: int) -> tuple[Int64Array, int]:
    _need(data, pos, 4, "roaring cookie")
    cookie = int.from_bytes(data[pos : pos + 4], "little")
    pos += 4
    run_flags: bytes | None = None
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        nbytes = (size + 7) // 8
        _need(data, pos, nbytes, "roaring run flags")
        run_flags = data[pos : pos + nbytes]
        pos += nbytes
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        _need(data, pos, 4, "roaring container count")
        size = int.from_bytes(data[pos : pos + 4], "little")
        pos += 4
        if size > 65536:
            raise _Bad(f"roaring container count {size} > 65536")
    else:
        raise _Bad(f"bad roaring cookie {cookie}")
    _need(data, pos, 4 * size, "roaring container headers")
    header = np.frombuffer(data, dtype="<u2", count=2 * size, offset=pos)
    keys = header[0::2].astype(np.int64)
    cards = header[1::2].astype(np.int64) + 1
    pos += 4 * size
    if size > 1 and np.any(np.diff(keys) <= 0):
        raise _Bad("roaring keys are not strictly increasing")
    if run_flags is None or size >= _NO_OFFSET_THRESHOLD:
        _need(data, pos, 4 * size, "roaring offsets")
        pos += 4 * size  # offsets are redundant for a sequential read
    parts: list[Int64Array] = []
    for i in range(size):
        is_run = run_flags is not None and (run_flags[i // 8] >> (i % 8)) & 1
        card = int(cards[i])
        if is_run:
            _need(data, pos, 2, "run container")
            n_runs = int.from_bytes(data[pos : pos + 2], "little")
            pos += 2
            _need(data, pos, 4 * n_runs, "run container")
            runs = np.frombuffer(data, dtype="<u2", count=2 * n_runs, offset=pos)
            pos += 4 * n_runs
            low = _run_values(runs)
            if len(low) > 1 and np.any(np.diff(low) <= 0):
                raise _Bad("overlapping runs")
        elif card <= _ARRAY_MAX:
            _need(data, pos, 2 * card, "array container")
            low = np.frombuffer(data, dtype="<u2", count=card, offset=pos).astype(np.int64)
            pos += 2 * card
            if card > 1 and np.any(np.diff(low) <= 0):
                raise _Bad("array container values not strictly increasing")
        else:
            _need(data, pos, _BITMAP_BYTES, "bitmap container")
            bits = np.unpackbits(
                np.frombuffer(data, dtype=np.uint8, count=_BITMAP_BYTES, offset=pos),
                bitorder="little",
            )
            low = np.flatnonzero(bits).astype(np.int64)
            pos += _BITMAP_BYTES
        if len(low) != card:
            raise _Bad(f"container {i}: cardinality {len(low)} != header {card}")
        parts.append((keys[i] << 16) | low)
    values = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return values, pos


def serialize_roaring32(positions: npt.ArrayLike) -> bytes:
    """Portable 32-bit RoaringBitmap of ``positions`` (array/bitmap containers, no runs).

    Raises:
        SchemaError: a position outside ``0 .. 2**32-1``.
    """
    pos = np.unique(np.asarray(positions, dtype=np.int64))
    if len(pos) and (pos[0] < 0 or pos[-1] > 0xFFFFFFFF):
        raise SchemaError("roaring bitmap values must be in 0 .. 2**32-1")
    keys, starts, counts = np.unique(pos >> 16, return_index=True, return_counts=True)
    size = len(keys)
    header = np.empty(2 * size, dtype="<u2")
    header[0::2] = keys
    header[1::2] = counts - 1
    bodies: list[bytes] = []
    for start, count in zip(starts.tolist(), counts.tolist()):
        low = pos[start : start + count] & 0xFFFF
        if count <= _ARRAY_MAX:
            bodies.append(low.astype("<u2").tobytes())
        else:
            bits = np.zeros(65536, dtype=np.uint8)
            bits[low] = 1
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
    sizes = np.array([len(b) for b in bodies], dtype=np.int64)
    first = 8 + 8 * size
    offsets = (first + np.cumsum(sizes) - sizes).astype("<u4")
    return b"".join(
        [
            struct.pack("<II", _SERIAL_COOKIE_NO_RUN, size),
            header.tobytes(),
            offsets.tobytes(),
            *bodies,
        ]
    )


def _deserialize64(data: bytes) -> Int64Array:
    _need(data, 0, 8, "64-bit bitmap count")
    count = int.from_bytes(data[:8], "little", signed=True)
    if count < 0 or count > len(data):
        raise _Bad(f"invalid 64-bit bitmap count {count}")
    pos = 8
    parts: list[Int64Array] = []
    last_key = -1
    for _ in range(count):
        _need(data, pos, 4, "64-bit bitmap key")
        key = int.from_bytes(data[pos : pos + 4], "little", signed=True)
        pos += 4
        if key <= last_key or key > 2**31 - 2:
            raise _Bad(f"invalid 64-bit bitmap key {key}")
        last_key = key
        low, pos = _deserialize32(data, pos)
        parts.append((np.int64(key) << 32) | low)
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


def _decode_one(data: bytes, meta: DeletionVectorMeta) -> Int64Array:
    off = meta.offset
    _need(data, off, 8, "deletion vector header")
    size = int.from_bytes(data[off : off + 4], "big", signed=True)
    magic_be = int.from_bytes(data[off + 4 : off + 8], "big", signed=True)
    magic_le = int.from_bytes(data[off + 4 : off + 8], "little", signed=True)
    if magic_be == BITMAP_MAGIC:
        expected = meta.length
    elif magic_le == BITMAP64_MAGIC:
        expected = meta.length - 8
    else:
        raise _Bad(f"invalid deletion vector magic {magic_be} (expected {BITMAP_MAGIC})")
    if size != expected:
        raise _Bad(f"size field {size} does not match the index manifest (expected {expected})")
    _need(data, off + 4, size + 4, "deletion vector")
    vector = data[off + 4 : off + 4 + size]
    crc = int.from_bytes(data[off + 4 + size : off + 8 + size], "big")
    if zlib.crc32(vector) != crc:
        raise _Bad("CRC32 mismatch")
    if magic_be == BITMAP_MAGIC:
        values, end = _deserialize32(vector, 4)
        if values.size and values[-1] > _MAX_POSITION_32:
            raise _Bad("32-bit deletion vector holds a position beyond 2**31-1")
    else:
        values = _deserialize64(vector[4:])
        end = size
    if end != size:
        raise _Bad(f"{size - end} trailing bytes after the bitmap")
    if meta.cardinality is not None and meta.cardinality != len(values):
        raise _Bad(f"cardinality {len(values)} != {meta.cardinality} recorded in the manifest")
    return values


def decode_deletion_vectors(
    data: bytes, ranges: Sequence[DeletionVectorMeta], path: str
) -> dict[str, Int64Array]:
    """Decode the deletion vectors of a DV index file.

    Mirrors ``DeletionVectorsIndexFile.readAllDeletionVectors`` (version byte, size, magic and
    CRC32 are all checked, as Java 0.9 does).

    Args:
        data: the whole index file.
        ranges: the ``_DELETIONS_VECTORS_RANGES`` of its index manifest entry.
        path: the file's path, for error messages.

    Returns:
        data file name -> sorted int64 array of deleted row positions.

    Raises:
        CorruptMetadataError: wrong version byte, size/magic/CRC mismatch, malformed bitmap.
    """
    if len(data) < 1:
        raise CorruptMetadataError(path, "empty deletion vector file")
    if data[0] != DV_FILE_VERSION:
        raise CorruptMetadataError(
            path, f"unsupported deletion vector file version {data[0]} (expected 1)"
        )
    out: dict[str, Int64Array] = {}
    for meta in ranges:
        try:
            out[meta.data_file_name] = _decode_one(data, meta)
        except (_Bad, ValueError) as e:
            raise CorruptMetadataError(
                path, f"deletion vector of {meta.data_file_name} at {meta.offset}: {e}"
            ) from e
    return out


def encode_deletion_vectors(
    vectors: Mapping[str, npt.ArrayLike],
) -> tuple[bytes, list[DeletionVectorMeta]]:
    """Encode a DV index file in the 32-bit format (``DeletionVectorsIndexFile.write``).

    Readable by Java 0.9+ and pypaimon; containers are array or bitmap (no run containers).

    Args:
        vectors: data file name -> deleted row positions (any order, duplicates allowed).

    Returns:
        (file bytes, one DeletionVectorMeta per data file in mapping order, with cardinality).

    Raises:
        SchemaError: a position outside ``0 .. 2**31-1`` (``RoaringBitmap32.MAX_VALUE``).
    """
    parts: list[bytes] = [bytes([DV_FILE_VERSION])]
    offset = 1
    metas: list[DeletionVectorMeta] = []
    for name, positions in vectors.items():
        pos = np.unique(np.asarray(positions, dtype=np.int64))
        if len(pos) and (pos[0] < 0 or pos[-1] > _MAX_POSITION_32):
            raise SchemaError(f"deletion vector of {name}: positions must be in 0 .. 2**31-1")
        vector = struct.pack(">i", BITMAP_MAGIC) + serialize_roaring32(pos)
        parts.append(struct.pack(">i", len(vector)))
        parts.append(vector)
        parts.append(struct.pack(">I", zlib.crc32(vector)))
        metas.append(DeletionVectorMeta(name, offset, len(vector), len(pos)))
        offset += len(vector) + 8
    return b"".join(parts), metas
