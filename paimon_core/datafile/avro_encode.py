"""Avro data files encoded column by column: Arrow arrays in, Avro container files out (the
bytes Java 0.9's ``AvroRowDatumWriter`` writes for the same rows; schema and codec in
:mod:`~paimon_core.datafile.avro_layout`).

Avro's binary encoding is row-major (a record is its fields' encodings one after the other),
but each field's encoding is a function of one value, so it is computed a column at a time,
``_CHUNK_ROWS`` rows at a time. Every field of bounded width (a union's branch byte, zig-zag
varints spread to bytes with numpy, floats, booleans, decimals as the minimal big-endian two's
complement, strings and bytes of at most ``_PAD_LIMIT`` bytes) is placed, as little-endian
uint64 words, at its byte offset in a matrix of a row per record, with a bit mask of the bytes
it writes (a prefix of its width; a null, or a row under a null parent, writes none); a column
of one value is constant bytes. Arrow's filter then takes the masked bytes in row order.
Longer strings, arrays and maps are Arrow binary arrays (an array's items encoded the same
way and regrouped by its offsets) joined to the matrix parts by ``binary_join_element_wise``.
The records are cut into blocks of about ``_BLOCK_BYTES``, each compressed and framed (count,
size, bytes, sync marker); Java's writer cuts 64000-byte blocks, any size reads alike.

Why this path (the bench's W1 rows, 2M rows of 8 columns; issue 31): fastavro's writer takes a
Python dict per row, about 10x this path's CPU. Joining per-column binary arrays cost 2.4x our
Parquet write; a padded byte matrix with a byte mask 1.5x (W2) to 2.2-2.8x (W1). This layout:
W1 in one thread about 0.5 s of encoding (the filter the largest part) and 0.4-0.5 s of
zstandard level 1 over the 135 MB of row-major Avro bytes (Java's codec and level: a floor).
"""

from __future__ import annotations

import bz2
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.datafile.avro_layout import AvroLayout, AvroOptions, is_array_map
from paimon_core.errors import SchemaError
from paimon_core.types import (
    ArrayType,
    AtomicType,
    DataType,
    MapType,
    MultisetType,
    RowType,
    TypeRoot,
    int_type,
)

__all__ = ["AvroStream", "encode_records"]

_BIN = pa.large_binary()
_EMPTY = pa.scalar(b"", _BIN)
_MAGIC = b"Obj\x01"
#: rows encoded at a time (bounds the padded matrices), and the uncompressed size of a block
_CHUNK_ROWS = 16384
_BLOCK_BYTES = 1 << 20


# ---------------------------------------------------------------------------------------------
# pieces: a row's encoding is a sequence of pieces, each either bytes of bounded width (placed
# at their byte offset in a matrix of little-endian uint64 words, one row per value, with a
# bit mask of the bytes written) or a binary array (one element per value: long strings,
# arrays and maps)


@dataclass(slots=True)
class _Fixed:
    """Bytes of bounded ``width`` per row. ``words``: their little-endian uint64 words, one
    array per 8 bytes (bytes past ``width`` in the last word must be zero unless ``tail``
    says they may be anything), or ``constant``: the same bytes in every row. ``written``:
    how many of the bytes each row writes, always a prefix."""

    width: int
    written: np.ndarray | int
    words: Callable[[], list[np.ndarray]] | None = None
    constant: int = 0
    tail: bool = False


def _word(values: np.ndarray, width: int, live: np.ndarray | None) -> _Fixed:
    """The ``width`` (<= 8) low bytes of each of ``values`` (uint64, zero above them) in
    the rows ``live``."""
    return _Fixed(width, width if live is None else live * np.uint8(width),
                  lambda: [values])


def _constant(byte: int, live: np.ndarray | None) -> _Fixed:
    """The one byte ``byte`` in the rows ``live`` (a union branch without nulls)."""
    return _Fixed(1, 1 if live is None else live.view(np.uint8), constant=byte)


Piece: TypeAlias = _Fixed | pa.Array
#: strings up to this many bytes are padded into the matrix, longer ones are a binary piece
_PAD_LIMIT = 48


def _from_parts(data: np.ndarray | pa.Buffer, lengths: np.ndarray) -> pa.Array:
    """A binary array whose i-th element is the next ``lengths[i]`` bytes of ``data``."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if not isinstance(data, pa.Buffer):
        data = pa.py_buffer(data)
    return pa.Array.from_buffers(_BIN, len(lengths), [None, pa.py_buffer(offsets), data])


_U64 = np.uint64
#: zig-zag values from which a varint takes k + 2 bytes (k = 0..8)
_VARINT_LIMITS = [_U64(1 << (7 * k)) for k in range(1, 10)]


def _varint_piece(values: np.ndarray, live: np.ndarray | None) -> _Fixed:
    """Avro's zig-zag varint of each (64-bit) value; nothing for rows not ``live``."""
    v = values.astype(np.int64, copy=False)
    zz = ((v << 1) ^ (v >> 63)).view(np.uint64)
    top = int(zz.max()) if len(zz) else 0
    if len(zz) and int(zz.min()) == top:  # one value (a partition column, a row kind)
        one = _long_zz(top)
        return _Fixed(len(one), len(one) if live is None else live * np.uint8(len(one)),
                      constant=int.from_bytes(one, "little"))
    width = max(1, (top.bit_length() + 6) // 7)
    # the length of each: one byte, plus one per 7-bit group above the first
    lengths = np.ones(len(zz), dtype=np.uint8)
    for limit in _VARINT_LIMITS[:width - 1]:
        np.add(lengths, zz >= limit, out=lengths, casting="unsafe")
    written = lengths if live is None else np.where(live, lengths, np.uint8(0))

    def words() -> list[np.ndarray]:
        if width == 1:
            return [zz]
        if width <= 4:
            return [_spread32(zz, lengths, width).astype(np.uint64)]
        low = _spread64(zz, lengths)
        if width <= 8:
            return [low]
        # bytes 8 and 9 hold bits 56-62 and 63, with their continuation bits
        top8 = zz >> _U64(56)
        return [low, (top8 & _U64(0x7F)) | ((top8 & _U64(0x80)) << _U64(1))
                | _CONT[1][lengths]]
    return _Fixed(width, written, words)


def _spread32(zz: np.ndarray, lengths: np.ndarray, width: int) -> np.ndarray:
    """Varints of 2 to 4 bytes as little-endian uint32 words: the 7-bit groups of ``zz``
    spread to bytes (28 bits -> two 14-bit halves -> four 7-bit groups) and each byte but
    the last of the varint with its continuation bit."""
    x = zz.astype(np.uint32)
    if width > 2:
        _split(x, np.uint32(0x3FFF), np.uint32(0xFFFC000), 2)
    _split(x, np.uint32(0x007F007F), np.uint32(0x3F803F80), 1)
    x |= _CONT32[lengths]
    return x


def _spread64(zz: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each varint as little-endian uint64 words (bits 0-55 of ``zz``
    in 7-bit groups: 56 -> 2 x 28 -> 4 x 14 -> 8 x 7 bits, continuation bits set)."""
    x = zz & _U64(0x00FFFFFFFFFFFFFF)
    _split(x, _U64(0xFFFFFFF), _U64(0xFFFFFFF0000000), 4)
    _split(x, _U64(0x00003FFF00003FFF), _U64(0x0FFFC0000FFFC000), 2)
    _split(x, _U64(0x007F007F007F007F), _U64(0x3F803F803F803F80), 1)
    x |= _CONT[0][lengths]
    return x


def _split(x: np.ndarray, keep: np.integer, move: np.integer, shift: int) -> None:
    """In place: ``x = (x & keep) | ((x & move) << shift)``."""
    moved = x & move
    moved <<= x.dtype.type(shift)
    x &= keep
    x |= moved


def _cont_bits() -> tuple[np.ndarray, np.ndarray]:
    """By varint length: the continuation bits (0x80 in every byte but the last) of the
    two words of :func:`_varint_piece`."""
    lo = np.zeros(11, dtype=np.uint64)
    hi = np.zeros(11, dtype=np.uint64)
    for length in range(1, 11):
        for byte in range(length - 1):
            if byte < 8:
                lo[length] |= np.uint64(0x80 << (8 * byte))
            else:
                hi[length] |= np.uint64(0x80 << (8 * (byte - 8)))
    return lo, hi


_CONT = _cont_bits()
_CONT32 = _CONT[0][:5].astype(np.uint32)
_OFFSET_TYPES = {pa.string(): np.int32, pa.binary(): np.int32,
                 pa.large_string(): np.int64, pa.large_binary(): np.int64}


def _bytes_piece(arr: pa.Array, live: np.ndarray | None) -> list[Piece]:
    """Avro ``string``/``bytes``: the length as a varint, then the bytes (null slots, which
    are never ``live``, get none)."""
    offset_type = _OFFSET_TYPES.get(arr.type)
    data = arr if offset_type is not None else arr.cast(_BIN)
    n = len(data)
    offsets = np.frombuffer(data.buffers()[1], dtype=offset_type or np.int64,
                            count=data.offset + n + 1)[data.offset:]
    lengths = np.diff(offsets)
    if live is not None:
        lengths = np.where(live, lengths, 0)
    head = _varint_piece(lengths, live)
    longest = int(lengths.max()) if n else 0
    if longest > _PAD_LIMIT:
        body = data.cast(_BIN)
        if live is not None and not live.all():
            body = pc.if_else(pa.array(live), body, _EMPTY)
        return [head, body]
    if not longest:
        return [head]
    first, last = int(offsets[0]), int(offsets[-1])
    if last - first == n * longest and (live is None or live.all()):
        # strings of one length: one string in every row (a partition column)?
        rows = np.frombuffer(data.buffers()[2], dtype=np.uint8, count=last - first,
                             offset=first).reshape(n, longest)
        if (rows == rows[0]).all():
            return [head, _Fixed(longest, longest,
                                 constant=int.from_bytes(rows[0].tobytes(), "little"))]
    # the bytes of these rows in aligned words, with room for the last row's words
    nwords = (longest + 7) // 8
    raw = np.zeros((last - first + 7) // 8 + nwords + 1, dtype=np.uint64)
    raw.view(np.uint8)[:last - first] = np.frombuffer(
        data.buffers()[2], dtype=np.uint8, count=last - first, offset=first)
    starts = offsets[:-1] - first
    index = (starts >> 3).astype(np.intp)
    shift = ((starts & 7) << 3).astype(np.uint64)  # the string's first bit in its word
    back = _U64(63) - shift

    def words() -> list[np.ndarray]:
        # each word of a string from the two aligned words it straddles (a gather of
        # aligned words costs a fifth of one of unaligned ones): low >> shift | high <<
        # (64 - shift), the second shift split in two so that it is never 64
        out: list[np.ndarray] = []
        low = raw[index]
        for j in range(nwords):
            high = raw[index + (j + 1)]
            w = low >> shift
            high_part = high << _U64(1)
            high_part <<= back
            w |= high_part
            out.append(w)
            low = high
        return out
    return [head, _Fixed(longest, lengths, words, tail=True)]


def _compact(fixed: Sequence[_Fixed], n: int) -> pa.Array:
    """The bytes written by ``fixed`` of each row, one binary element per row: the pieces
    are placed at their byte offsets in a matrix of uint64 words (a row of ``words``
    words), a bit mask marks the bytes each row writes (a prefix of each piece), and
    Arrow's filter takes the marked bytes in row order."""
    width = sum(f.width for f in fixed)
    words = (width + 7) // 8
    # column-major while the pieces are placed (each placement a contiguous pass), made
    # row-major once at the end
    mat = np.zeros((words, n), dtype=np.uint64)
    mask = np.zeros(((words + 7) // 8, n), dtype=np.uint64)  # a bit per byte of a row
    constant = 0  # the bytes (and mask bits) the same in every row, as one integer
    constant_mask = 0
    lengths = np.zeros(n, dtype=np.int64)
    at = 0
    for f in fixed:
        if f.words is None:
            constant |= f.constant << (8 * at)
        else:
            for j, w in enumerate(f.words()):
                size = min(8, f.width - 8 * j)
                if f.tail and size < 8:
                    w = w & _U64((1 << (8 * size)) - 1)
                _place(mat, w, 8 * (at + 8 * j), 8 * size)
        written = f.written
        lengths += written
        if isinstance(written, int):
            constant_mask |= ((1 << written) - 1) << at
        else:
            _place(mask, (_U64(1) << written.astype(np.uint64)) - _U64(1), at, f.width)
        at += f.width
    for k in range(words):
        if (c := (constant >> (64 * k)) & _ALL) != 0:
            mat[k] |= _U64(c)
    for k in range(mask.shape[0]):
        if (c := (constant_mask >> (64 * k)) & _ALL) != 0:
            mask[k] |= _U64(c)
    rows = np.ascontiguousarray(mat.T).view(np.uint8).reshape(-1)
    bits = np.ascontiguousarray(mask.T).view(np.uint8)
    if bits.shape[1] != words:  # a row's bits: one byte per word of the row
        bits = np.ascontiguousarray(bits[:, :words])
    return _from_parts(_select(rows, bits.reshape(-1)), lengths)


_ALL = (1 << 64) - 1


def _place(mat: np.ndarray, values: np.ndarray, at: int, size: int) -> None:
    """OR the ``size`` low bits of ``values`` (uint64, zero above them) into the rows of
    ``mat`` (uint64 words, one row per column) from bit ``at`` of each row, across two
    words when they straddle one."""
    k, shift = divmod(at, 64)
    if shift == 0:
        mat[k] |= values
        return
    mat[k] |= values << _U64(shift)
    if shift + size > 64:
        mat[k + 1] |= values >> _U64(64 - shift)


def _select(data: np.ndarray, bits: np.ndarray) -> pa.Buffer:
    """The bytes of ``data`` whose bit is set in ``bits`` (a bitmap, least significant bit
    first: Arrow's filter, about 3x numpy's boolean selection on these masks)."""
    mask = pa.BooleanArray.from_buffers(pa.bool_(), len(data), [None, pa.py_buffer(bits)])
    values = pa.Array.from_buffers(pa.uint8(), len(data), [None, pa.py_buffer(data)])
    kept = pc.filter(values, mask)
    return kept.buffers()[1]


def _binary(pieces: Sequence[Piece], n: int) -> pa.Array:
    """The pieces of ``n`` values joined into one binary array (one element per value)."""
    groups: list[pa.Array] = []
    run: list[_Fixed] = []
    for p in pieces:
        if isinstance(p, _Fixed):
            run.append(p)
            continue
        if run:
            groups.append(_compact(run, n))
            run = []
        groups.append(p)
    if run:
        groups.append(_compact(run, n))
    if not groups:
        return _from_parts(np.zeros(0, dtype=np.uint8), np.zeros(n, dtype=np.int64))
    if len(groups) == 1:
        return groups[0]
    out = pc.binary_join_element_wise(*groups, _EMPTY)
    assert isinstance(out, pa.Array)
    return out


def _regroup(elements: pa.Array, offsets: np.ndarray) -> pa.Array:
    """Concatenations of ``elements[offsets[i]:offsets[i + 1]]`` (elements without nulls)."""
    elem_offsets = np.frombuffer(elements.buffers()[1], dtype=np.int64,
                                 count=elements.offset + len(elements) + 1)[elements.offset:]
    return pa.Array.from_buffers(_BIN, len(offsets) - 1, [
        None, pa.py_buffer(np.ascontiguousarray(elem_offsets[offsets])), elements.buffers()[2]])


def _valid(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _and(live: np.ndarray | None, valid: np.ndarray | None) -> np.ndarray | None:
    if live is None:
        return valid
    return live if valid is None else live & valid


# ---------------------------------------------------------------------------------------------
# pieces by type


def _pieces(arr: pa.Array, t: DataType, live: np.ndarray | None, column: str) -> list[Piece]:
    """The pieces of ``arr``'s values as type ``t`` (a nullable ``t`` as its union) in the
    rows ``live`` (None: all); other rows get no bytes."""
    valid = _valid(arr)
    if not t.nullable:
        if valid is not None and (live is None or (live & ~valid).any()):
            raise SchemaError(f"column {column!r} is NOT NULL but holds a null")
        return _value_pieces(arr, t, live, column)
    # the union's branch: 0 null, 1 the value (zig-zag varints 0 and 2)
    branch = (_constant(2, live) if valid is None
              else _word((valid.view(np.uint8) << 1).astype(np.uint64), 1, live))
    return [branch,
            *_value_pieces(arr, t, _and(live, valid), column)]


def _value_pieces(arr: pa.Array, t: DataType, live: np.ndarray | None,
                  column: str) -> list[Piece]:
    if isinstance(t, RowType):
        assert isinstance(arr, pa.StructArray)
        out: list[Piece] = []
        # the slice applied, parent nulls merged into the children (outside ``live``)
        for f, child in zip(t.fields, arr.flatten()):
            out.extend(_pieces(child, f.type, live, f"{column}.{f.name}"))
        return out
    if isinstance(t, ArrayType):
        assert isinstance(arr, (pa.ListArray, pa.LargeListArray))
        items = arr.values
        body = _blocks(items, t.element, None, arr.offsets.to_numpy(), column)
    elif isinstance(t, (MapType, MultisetType)):
        assert isinstance(arr, pa.MapArray)
        key = t.key if isinstance(t, MapType) else t.element
        value = t.value if isinstance(t, MapType) else int_type(True)
        key_type = key.with_nullable(False) if not is_array_map(t) else key
        body = _blocks(arr.keys, key_type, (arr.items, value), arr.offsets.to_numpy(), column)
    else:
        assert isinstance(t, AtomicType)
        return _atomic_pieces(arr, t, live)
    if live is not None and not live.all():
        body = pc.if_else(pa.array(live), body, _EMPTY)
    return [body]


def _blocks(items: pa.Array, t: DataType, values: tuple[pa.Array, DataType] | None,
            offsets: np.ndarray, column: str) -> pa.Array:
    """Avro arrays/maps of ``items`` (and map ``values``) grouped by ``offsets``: the count,
    the items, and the end marker 0 (just 0 when empty, as Java's ``BinaryEncoder``)."""
    first, last = int(offsets[0]), int(offsets[-1])
    items = items.slice(first, last - first)
    pieces = _pieces(items, t, None, column)
    if values is not None:
        pieces += _pieces(values[0].slice(first, last - first), values[1], None, column)
    encoded = _binary(pieces, last - first)
    counts = np.diff(offsets)
    end = _constant(0, counts > 0)
    return _binary([_varint_piece(counts, None), _regroup(encoded, offsets - first), end],
                   len(counts))


def _atomic_pieces(arr: pa.Array, t: AtomicType, live: np.ndarray | None) -> list[Piece]:
    r = t.root
    if r in (TypeRoot.CHAR, TypeRoot.VARCHAR, TypeRoot.BINARY, TypeRoot.VARBINARY):
        return _bytes_piece(arr, live)
    if r is TypeRoot.BOOLEAN:
        return [_word(_numbers(arr.cast(pa.uint8())).astype(np.uint64), 1, live)]
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        width = 4 if r is TypeRoot.FLOAT else 8
        values = _numbers(arr).astype("<f4" if width == 4 else "<f8")
        bits = values.view(np.uint64) if width == 8 else values.view(np.uint32).astype(np.uint64)
        return [_word(bits, width, live)]
    if r is TypeRoot.DECIMAL:
        return _decimal_pieces(arr, live)
    if r is TypeRoot.DATE:
        return [_varint_piece(_numbers(arr.cast(pa.int32())), live)]
    if r is TypeRoot.TIME:
        return [_varint_piece(_numbers(arr.cast(pa.time32("ms")).cast(pa.int32())), live)]
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return [_varint_piece(_epoch(arr, "ms" if (t.precision or 0) <= 3 else "us"), live)]
    return [_varint_piece(_numbers(arr), live)]


def _numbers(arr: pa.Array) -> np.ndarray:
    """The values of a fixed-width array (nulls as 0)."""
    if arr.null_count:
        arr = arr.fill_null(pa.scalar(0, arr.type) if not pa.types.is_boolean(arr.type)
                            else False)
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def _epoch(arr: pa.Array, unit: str) -> np.ndarray:
    """Epoch values of a timestamp array in ``unit``, floored (Java's ``getMillisecond``)."""
    t = arr.type
    assert isinstance(t, pa.TimestampType)
    raw = _numbers(arr.cast(pa.int64()))
    have = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
    want = {"ms": 1000, "us": 1_000_000}[unit]
    if have < want:
        return raw * (want // have)
    if have > want:
        return raw // (have // want)
    return raw


def _decimal_pieces(arr: pa.Array, live: np.ndarray | None) -> list[Piece]:
    """Each unscaled value's minimal big-endian two's complement (``BigInteger
    .toByteArray``), as bytes (a varint length and the bytes)."""
    # null slots hold some 16 bytes: encoded, then masked by ``live``
    if not pa.types.is_decimal128(arr.type):
        arr = arr.cast(pa.decimal128(38, arr.type.scale))
    n = len(arr)
    le = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=(arr.offset + n) * 16)
    be = np.ascontiguousarray(le[arr.offset * 16:].reshape(n, 16)[:, ::-1])
    sign = np.where(be[:, 0] & 0x80, 0xFF, 0).astype(np.uint8)
    same = np.logical_and.accumulate(be[:, :15] == sign[:, None], axis=1)
    next_sign = (be[:, 1:] & 0x80) == (sign[:, None] & 0x80)
    drop = np.count_nonzero(same & next_sign, axis=1)
    # the bytes kept moved to the front (a piece writes a prefix of its columns)
    kept = np.take_along_axis(be, np.minimum(np.arange(16) + drop[:, None], 15), axis=1)

    halves = kept.view(np.uint64)
    size = 16 - drop
    return [_varint_piece(size, live),
            _Fixed(16, size if live is None else size * live,
                   lambda: [halves[:, 0], halves[:, 1]])]


def encode_records(table: pa.Table, types: Sequence[DataType]) -> pa.Array:
    """The encoded top-level record of each row of ``table`` (columns of ``types``)."""
    pieces: list[Piece] = []
    for name, col, t in zip(table.column_names, table.columns, types):
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        pieces.extend(_pieces(arr, t, None, name))
    return _binary(pieces, table.num_rows)


# ---------------------------------------------------------------------------------------------
# the container file


def _long(v: int) -> bytes:
    return _long_zz((v << 1) ^ (v >> 63))


def _long_zz(zz: int) -> bytes:
    """The varint of a zig-zag encoded value."""
    out = bytearray()
    while True:
        b = zz & 0x7F
        zz >>= 7
        if zz:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _avro_bytes(b: bytes) -> bytes:
    return _long(len(b)) + b


def _compressor(options: AvroOptions) -> Callable[[pa.Buffer], Any]:
    """The block compression of ``options``' codec: a buffer in, a bytes-like out."""
    codec, level = options.codec, options.level
    if codec == "null":
        return lambda b: b
    if codec == "deflate":
        def deflate(b: pa.Buffer) -> bytes:
            c = zlib.compressobj(level, zlib.DEFLATED, -15)
            return c.compress(memoryview(b)) + c.flush()
        return deflate
    if codec == "bzip2":
        return lambda b: bz2.compress(memoryview(b))
    assert codec == "zstandard", codec  # snappy and xz are refused (avro_layout)
    zstd = pa.Codec("zstd", compression_level=level)
    return lambda b: zstd.compress(b)


class AvroStream:
    """One Avro container file written piece by piece to ``sink`` (a path or a writable
    Arrow stream); the header goes out with the first piece."""

    def __init__(self, sink: str | pa.NativeFile, layout: AvroLayout,
                 options: AvroOptions) -> None:
        import json

        self._own = isinstance(sink, str)
        self._out: BinaryIO | pa.NativeFile = (
            open(sink, "wb") if isinstance(sink, str) else sink)  # noqa: SIM115
        self._layout = layout
        self._compress = _compressor(options)
        self._sync = os.urandom(16)
        meta = {"avro.schema": json.dumps(layout.avro, separators=(",", ":")).encode(),
                "avro.codec": options.codec.encode()}
        header = bytearray(_MAGIC)
        header += _long(len(meta))
        for k, v in meta.items():
            header += _avro_bytes(k.encode()) + _avro_bytes(v)
        header += b"\x00" + self._sync
        self._out.write(bytes(header))

    def write(self, table: pa.Table) -> None:
        """Append the rows of ``table`` (the layout's physical columns)."""
        if not table.num_rows:
            return
        for first in range(0, table.num_rows, _CHUNK_ROWS):
            chunk = table.slice(first, _CHUNK_ROWS)
            self._blocks(encode_records(chunk, self._layout.types))

    def _blocks(self, records: pa.Array) -> None:
        offsets = np.frombuffer(records.buffers()[1], dtype=np.int64,
                                count=records.offset + len(records) + 1)[records.offset:]
        data = records.buffers()[2]
        n = len(records)
        start = 0
        while start < n:
            # rows up to the block size (at least one row) form a block
            end = int(np.searchsorted(offsets, offsets[start] + _BLOCK_BYTES, "right")) - 1
            end = min(max(end, start + 1), n)
            first = int(offsets[start])
            body = self._compress(data.slice(first, int(offsets[end]) - first))
            self._out.write(_long(end - start) + _long(len(body)))
            self._out.write(body)
            self._out.write(self._sync)
            start = end

    def close(self) -> None:
        if self._own:
            self._out.close()
