"""Fixed-bucket assignment: Paimon's bucket-key hash, scalar and vectorised over Arrow columns.

Mirrors ``org.apache.paimon.bucket.DefaultBucketFunction`` (0.9: ``KeyAndBucketExtractor``):
the bucket key columns are projected into a BinaryRow (RowKind +I, Java's canonical null form,
see :mod:`paimon_core.spec.binary_row`), hashed with ``BinaryRow.hashCode()`` =
``MurmurHashUtils.hashBytesByWords`` (MurmurHash3 x86_32, seed 42, little-endian 4-byte words)
and ``bucket = Math.abs(hash % numBuckets)``.

:func:`bucket_ids` / :func:`hash_codes` do exactly that for whole Arrow columns with numpy: every
row's BinaryRow is laid out in one flat buffer (fixed-width slots written through uint64 views,
strings inline when <= 7 bytes or copied 8 bytes at a time into the 8-byte-aligned variable part),
then rows are grouped by byte length and the murmur rounds run as uint32 operations over a
(rows x words) array per group. Floats keep their raw bits (Java's ``BinaryRowWriter.writeFloat``/
``writeDouble`` do not normalise NaN, and -0.0 differs from 0.0).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.spec.binary_row import (
    HEADER_SIZE_IN_BITS,
    fixed_part_size,
    is_compact_decimal,
    is_compact_timestamp,
    null_bits_size,
)
from paimon_core.types import (
    BINARY_ROOTS,
    STRING_ROOTS,
    AtomicType,
    DataType,
    TypeRoot,
    to_arrow_type,
)

__all__ = ["DEFAULT_SEED", "bucket_ids", "bucket_of", "hash_binary_row", "hash_codes",
           "key_fingerprint_pair", "key_fingerprints"]

DEFAULT_SEED = 42
#: the seed of the low word of :func:`key_fingerprints` (any seed other than 42)
_SECOND_SEED = 0x9747B28C
#: the seeds of the check word of :func:`key_fingerprint_pair` (independent of the two above)
_CHECK_SEEDS = (0x5BD1E995, 0x27D4EB2F)
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_M32 = 0xFFFFFFFF

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
Columns = Sequence["pa.Array | pa.ChunkedArray"]


# ---------------------------------------------------------------------------------------------
# scalar


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k: int) -> int:
    return (_rotl((k * _C1) & _M32, 15) * _C2) & _M32


def _mix_h1(h: int, k: int) -> int:
    return (_rotl(h ^ k, 13) * 5 + 0xE6546B64) & _M32


def _fmix(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def hash_binary_row(row_bytes: bytes) -> int:
    """``MurmurHashUtils.hashBytes`` with seed 42 (= ``BinaryRow.hashCode()`` for row bytes).

    Args:
        row_bytes: BinaryRow bytes without the arity prefix (a multiple of 8 long). Other
            lengths are hashed like Java's ``hashBytes``: the trailing bytes are mixed one by
            one as sign-extended ints.

    Returns:
        The signed 32-bit hash.
    """
    data = bytes(row_bytes)
    aligned = len(data) - len(data) % 4
    h = DEFAULT_SEED
    for (word,) in struct.iter_unpack("<I", data[:aligned]):
        h = _mix_h1(h, _mix_k1(word))
    for b in data[aligned:]:
        h = _mix_h1(h, _mix_k1((b - 256 if b > 127 else b) & _M32))
    return _fmix(h, len(data))


def bucket_of(hash: int, num_buckets: int) -> int:
    """``Math.abs(hash % numBuckets)`` with Java's truncating ``%``.

    Raises:
        SchemaError: ``num_buckets`` is not positive.
    """
    if num_buckets <= 0:
        raise SchemaError(f"number of buckets must be positive, got {num_buckets}")
    return abs(hash) % num_buckets


# ---------------------------------------------------------------------------------------------
# vectorised


def bucket_ids(columns: Columns, types: Sequence[DataType], num_buckets: int) -> np.ndarray:
    """The fixed bucket of every row, as Java computes it from the bucket-key columns.

    Args:
        columns: the bucket-key columns (``pa.Array`` or ``pa.ChunkedArray``, equal lengths),
            in bucket-key order.
        types: their Paimon types.
        num_buckets: the table's ``bucket`` option (> 0).

    Returns:
        ``int32`` array with one bucket in ``[0, num_buckets)`` per row.

    Raises:
        SchemaError: bad arguments, or a column whose Arrow type does not fit its Paimon type.
        UnsupportedError: a nested bucket-key type.
    """
    if num_buckets <= 0:
        raise SchemaError(f"number of buckets must be positive, got {num_buckets}")
    h = hash_codes(columns, types).astype(np.int64)
    return np.abs(np.fmod(h, num_buckets)).astype(np.int32)


def hash_codes(columns: Columns, types: Sequence[DataType]) -> np.ndarray:
    """``BinaryRow.hashCode()`` of every row projected to ``columns`` (int32 array).

    Equal to ``hash_binary_row(encode_binary_row(row, types))`` for each row.

    Raises:
        SchemaError: length/type mismatches.
        UnsupportedError: a nested type.
    """
    laid = _row_layout(columns, types)
    if laid is None:
        return np.zeros(0, dtype=np.int32)
    return _hash_rows(*laid, DEFAULT_SEED)


def key_fingerprints(columns: Columns, types: Sequence[DataType]) -> U64:
    """A 64-bit identity of every row projected to ``columns``: ``BinaryRow.hashCode()`` in
    the high word and the same MurmurHash3 of the same bytes with a second seed in the low
    word (one layout, two hash passes). Equal rows get equal fingerprints; two different rows
    share one with probability about 2^-64 (10M distinct keys: ~3e-6 for any collision at all),
    where 32-bit hashes collide by the thousands. Raises what :func:`hash_codes` raises.
    """
    laid = _row_layout(columns, types)
    if laid is None:
        return np.zeros(0, dtype=np.uint64)
    return _fingerprint(laid, DEFAULT_SEED, _SECOND_SEED)


def key_fingerprint_pair(columns: Columns, types: Sequence[DataType]) -> tuple[U64, U64]:
    """:func:`key_fingerprints` and a check word: a second 64-bit fingerprint of the same
    bytes with two other seeds (one layout, four hash passes), to confirm a fingerprint match
    (two different rows share both with probability about 2^-128)."""
    laid = _row_layout(columns, types)
    if laid is None:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64)
    return _fingerprint(laid, DEFAULT_SEED, _SECOND_SEED), _fingerprint(laid, *_CHECK_SEEDS)


def _fingerprint(laid: tuple[npt.NDArray[np.uint8], I64, I64], high_seed: int,
                 low_seed: int) -> U64:
    high = _hash_rows(*laid, high_seed).view(np.uint32).astype(np.uint64)
    low = _hash_rows(*laid, low_seed).view(np.uint32).astype(np.uint64)
    return np.asarray((high << np.uint64(32)) | low, dtype=np.uint64)


def _row_layout(columns: Columns, types: Sequence[DataType]
                ) -> tuple[npt.NDArray[np.uint8], I64, I64] | None:
    """Every row's BinaryRow bytes in one buffer (:func:`_layout`), None for no rows."""
    if len(columns) != len(types):
        raise SchemaError(f"{len(columns)} columns but {len(types)} types")
    if not columns:
        raise SchemaError("at least one bucket key column is needed")
    arrays = [_as_array(c) for c in columns]
    lengths = {len(a) for a in arrays}
    if len(lengths) > 1:
        raise SchemaError(f"bucket key columns have different lengths: {sorted(lengths)}")
    n = lengths.pop()
    if n == 0:
        return None
    cols = [_prepare(a, t, n) for a, t in zip(arrays, types)]
    return _layout(cols, n)


@dataclass(slots=True)
class _Col:
    """One column prepared for layout.

    ``slot`` is the 8-byte slot (for variable-part fields without the ``offset << 32`` part),
    ``reserve`` the variable-part bytes each row needs (array, or an int when constant).
    ``kind``: "fixed", "bytes" (string/binary), "decimal" (16-byte payload), "ts" (8 bytes).
    """

    null: npt.NDArray[np.bool_] | None
    slot: U64
    reserve: I64 | int
    kind: str
    long_rows: I64 | None = None  # "bytes": rows stored in the variable part
    src: I64 | None = None  # "bytes": start of each row's bytes in ``data``
    lens: I64 | None = None  # "bytes": byte length of each row
    data: npt.NDArray[np.uint8] | None = None  # "bytes": padded data buffer
    payload: U64 | None = None  # "decimal": (n, 2) words; "ts": (n,) millis


def _as_array(c: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(c, pa.ChunkedArray):
        if c.num_chunks == 0:
            return pa.array([], type=c.type)
        if c.num_chunks == 1:
            return c.chunk(0)
        if pa.types.is_string(c.type) or pa.types.is_binary(c.type):
            c = c.cast(pa.large_string() if pa.types.is_string(c.type) else pa.large_binary())
        return c.combine_chunks()
    if not isinstance(c, pa.Array):
        raise SchemaError(f"expected a pyarrow Array or ChunkedArray, got {type(c).__name__}")
    return c


def _values(arr: pa.Array, dtype: str) -> np.ndarray:
    """The value buffer of a primitive array, zero-copy (null slots hold garbage)."""
    buf = arr.buffers()[1]
    width = np.dtype(dtype).itemsize
    if buf is None:
        return np.zeros(len(arr), dtype=dtype)
    per = arr.type.bit_width // 8 // width if pa.types.is_decimal(arr.type) else 1
    vals = np.frombuffer(buf, dtype=dtype)
    return vals[arr.offset * per : (arr.offset + len(arr)) * per]


def _cast(arr: pa.Array, target: pa.DataType, t: DataType) -> pa.Array:
    if arr.type == target:
        return arr
    try:
        return pc.cast(arr, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"column of Arrow type {arr.type} cannot be used as {t}: {e}") from e


def _prepare(arr: pa.Array, t: DataType, n: int) -> _Col:
    if not isinstance(t, AtomicType):
        raise UnsupportedError(f"bucket key of nested type {t.sql()}")
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    null = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    if pa.types.is_null(arr.type):
        arr = pa.nulls(n, type=to_arrow_type(t))
        null = np.ones(n, dtype=np.bool_)
    r = t.root
    if r is TypeRoot.BOOLEAN:
        a = _cast(arr, pa.bool_(), t)
        slot = pc.fill_null(a, False).to_numpy(zero_copy_only=False).astype(np.uint64)
        return _fixed(slot, null)
    if r in _INT_TYPES:
        pa_type, unsigned = _INT_TYPES[r]
        vals = _values(_cast(arr, pa_type, t), unsigned)
        return _fixed(vals.astype(np.uint64), null)
    if r is TypeRoot.FLOAT:
        return _fixed(_float_bits(arr, t, np.float32, "<u4").astype(np.uint64), null)
    if r is TypeRoot.DOUBLE:
        return _fixed(_float_bits(arr, t, np.float64, "<u8").astype(np.uint64), null)
    if r is TypeRoot.DATE:
        if pa.types.is_date64(arr.type):
            days = np.floor_divide(_values(arr, "<i8"), 86_400_000).astype("<i4")
        else:
            target = pa.date32() if pa.types.is_date32(arr.type) else pa.int32()
            days = _values(_cast(arr, target, t), "<i4")
        return _fixed(days.view("<u4").astype(np.uint64), null)
    if r is TypeRoot.TIME:
        return _fixed(_time_millis(arr, t).view("<u4").astype(np.uint64), null)
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return _timestamp(arr, t, null)
    if r is TypeRoot.DECIMAL:
        return _decimal(arr, t, null)
    if r in STRING_ROOTS or r in BINARY_ROOTS:
        return _bytes(arr, t, null)
    raise UnsupportedError(f"bucket key of type {t}")  # pragma: no cover


_INT_TYPES: dict[TypeRoot, tuple[pa.DataType, str]] = {  # values read as unsigned: Java
    TypeRoot.TINYINT: (pa.int8(), "<u1"),  # writes only the type's own bytes of the slot
    TypeRoot.SMALLINT: (pa.int16(), "<u2"),
    TypeRoot.INT: (pa.int32(), "<u4"),
    TypeRoot.BIGINT: (pa.int64(), "<u8"),
}


def _fixed(slot: U64, null: npt.NDArray[np.bool_] | None) -> _Col:
    if null is not None:
        slot[null] = 0
    return _Col(null, slot, 0, "fixed")


def _float_bits(arr: pa.Array, t: AtomicType, ftype: type, bits: str) -> np.ndarray:
    want = pa.float32() if ftype is np.float32 else pa.float64()
    if arr.type == want:
        return _values(arr, bits)
    if pa.types.is_floating(arr.type):
        src = _values(arr, {16: "<f2", 32: "<f4", 64: "<f8"}[arr.type.bit_width])
        with np.errstate(over="ignore", invalid="ignore"):
            conv: np.ndarray = src.astype(ftype)
        overflow = np.isinf(conv) & np.isfinite(src)
        if arr.null_count:
            overflow &= arr.is_valid().to_numpy(zero_copy_only=False)
        if overflow.any():
            raise SchemaError(f"value out of range for {t}")
        return conv.view(bits)
    return _values(_cast(arr, want, t), bits)


def _time_millis(arr: pa.Array, t: AtomicType) -> np.ndarray:
    ty = arr.type
    if pa.types.is_time32(ty) or pa.types.is_time64(ty):
        raw = _values(arr, "<i4" if pa.types.is_time32(ty) else "<i8").astype(np.int64)
        if ty.unit == "s":
            return (raw * 1000).astype(np.int32)
        per_milli = {"ms": 1, "us": 1000, "ns": 1_000_000}[ty.unit]
        return np.floor_divide(raw, per_milli).astype(np.int32)
    return _values(_cast(arr, pa.int32(), t), "<i4")


def _epoch_millis_nanos(arr: pa.Array, t: AtomicType) -> tuple[I64, I64]:
    ty = arr.type
    if pa.types.is_timestamp(ty):
        raw = _values(arr, "<i8")
        unit = ty.unit
    elif pa.types.is_date(ty):
        raw = _values(_cast(arr, pa.timestamp("ms"), t), "<i8")
        unit = "ms"
    else:  # integers: epoch nanoseconds, like the scalar encoder
        raw = _values(_cast(arr, pa.int64(), t), "<i8")
        unit = "ns"
    if unit == "s":
        return raw * 1000, np.zeros(len(raw), dtype=np.int64)
    if unit == "ms":
        return raw.astype(np.int64), np.zeros(len(raw), dtype=np.int64)
    per_milli = 1000 if unit == "us" else 1_000_000
    millis, sub = np.divmod(raw, per_milli)
    return millis, sub * (1_000_000 // per_milli)


def _timestamp(arr: pa.Array, t: AtomicType, null: npt.NDArray[np.bool_] | None) -> _Col:
    p = t.precision if t.precision is not None else 6
    millis, nanos = _epoch_millis_nanos(arr, t)
    if is_compact_timestamp(p):
        unit = 10 ** (3 - p)
        if unit > 1:
            millis = millis - np.mod(millis, unit)
        return _fixed(millis.view("<u8").copy(), null)
    unit = 10 ** (9 - p)
    if unit > 1:
        nanos = nanos - np.mod(nanos, unit)
    payload = millis.view("<u8").copy()
    slot = nanos.astype(np.uint64)
    if null is not None:
        payload[null] = 0
        slot[null] = 0
    return _Col(null, slot, 8, "ts", payload=payload)


def _bit_length(x: U64) -> I64:
    """Vectorised ``int.bit_length`` of uint64 values."""
    out = np.zeros(len(x), dtype=np.int64)
    x = x.copy()
    for s in (32, 16, 8, 4, 2, 1):
        big = x >= np.uint64(1 << s)
        x[big] >>= np.uint64(s)
        out[big] += s
    out += (x > 0).astype(np.int64)
    return out


def _decimal(arr: pa.Array, t: AtomicType, null: npt.NDArray[np.bool_] | None) -> _Col:
    p = t.precision if t.precision is not None else 10
    s = t.scale or 0
    if pa.types.is_decimal(arr.type) and arr.type.scale > s:
        try:
            # Java's HALF_UP rounds ties away from zero (Arrow's "half_up" goes to +inf)
            arr = pc.round(arr, ndigits=s, round_mode="half_towards_infinity")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaError(f"cannot round {arr.type} to {t}: {e}") from e
    arr = _cast(arr, pa.decimal128(p, s), t)
    words = _values(arr, "<u8").reshape(-1, 2)
    lo = words[:, 0].copy()
    if is_compact_decimal(p):
        return _fixed(lo, null)
    hi = words[:, 1].copy()
    neg = hi >= np.uint64(1 << 63)
    xh = np.where(neg, ~hi, hi)
    xl = np.where(neg, ~lo, lo)
    bits = np.where(xh != 0, 64 + _bit_length(xh), _bit_length(xl))
    nbytes = bits // 8 + 1  # BigInteger.toByteArray: minimal two's complement, zero -> 1 byte
    be = np.stack([hi.byteswap(), lo.byteswap()], axis=1).view(np.uint8).reshape(-1, 16)
    idx = np.arange(16)[None, :] + (16 - nbytes)[:, None]
    payload8 = np.where(idx < 16, np.take_along_axis(be, np.minimum(idx, 15), axis=1), 0)
    payload = np.ascontiguousarray(payload8.astype(np.uint8)).view("<u8").reshape(-1, 2).copy()
    slot = nbytes.astype(np.uint64)
    if null is not None:
        payload[null] = 0
        slot[null] = 0
    return _Col(null, slot, 16, "decimal", payload=payload)


def _bytes(arr: pa.Array, t: AtomicType, null: npt.NDArray[np.bool_] | None) -> _Col:
    ty = arr.type
    if pa.types.is_large_binary(ty):
        a = arr
    elif (pa.types.is_string(ty) or pa.types.is_large_string(ty)
          or pa.types.is_string_view(ty) or pa.types.is_binary(ty)
          or pa.types.is_binary_view(ty) or pa.types.is_fixed_size_binary(ty)):
        a = arr.cast(pa.large_binary()) if not pa.types.is_large_string(ty) else arr.view(
            pa.large_binary())
    else:
        raise SchemaError(f"column of Arrow type {ty} cannot be used as {t}")
    n = len(a)
    offsets = np.frombuffer(a.buffers()[1], dtype="<i8")[a.offset : a.offset + n + 1]
    src = offsets[:-1].astype(np.int64)
    lens = np.diff(offsets).astype(np.int64)
    if null is not None:
        lens[null] = 0
    raw = a.buffers()[2]
    body = np.frombuffer(raw, dtype=np.uint8) if raw is not None else np.zeros(0, np.uint8)
    data = np.zeros(len(body) + 8, dtype=np.uint8)  # 8 spare bytes for unaligned word reads
    data[: len(body)] = body
    words = _unaligned_words(data)
    inline = lens <= 7
    first = words[np.where(inline, np.minimum(src, len(words) - 1), 0)]
    short = np.minimum(lens, 7).astype(np.uint64)
    mask = (np.uint64(1) << (short * np.uint64(8))) - np.uint64(1)
    marker = (short | np.uint64(0x80)) << np.uint64(56)
    slot = np.where(inline, (first & mask) | marker, lens.astype(np.uint64))
    reserve = np.where(inline, 0, (lens + 7) & ~7).astype(np.int64)
    if null is not None:
        slot[null] = 0
        reserve[null] = 0
    long_rows = np.nonzero(~inline)[0] if not inline.all() else None
    return _Col(null, slot, reserve, "bytes", long_rows=long_rows, src=src, lens=lens, data=data)


def _unaligned_words(data: npt.NDArray[np.uint8]) -> U64:
    """A uint64 view starting at every byte of ``data`` (``data`` has 8 spare bytes)."""
    count = max(len(data) - 7, 1)
    return np.ndarray(shape=(count,), dtype="<u8", buffer=data, strides=(1,))


def _layout(cols: list[_Col], n: int) -> tuple[npt.NDArray[np.uint8], I64, I64]:
    """Write every row's BinaryRow into one buffer; returns (buffer, row starts, row lengths)."""
    k = len(cols)
    w = null_bits_size(k)
    fixed = fixed_part_size(k)
    var_off: list[I64 | int] = []
    total_var: I64 | int = 0
    for c in cols:
        var_off.append(fixed + total_var)
        total_var = total_var + c.reserve
    row_len = np.broadcast_to(np.asarray(fixed + total_var, dtype=np.int64), (n,))
    if isinstance(total_var, int):
        starts = np.arange(n, dtype=np.int64) * (fixed + total_var)
    else:
        starts = np.zeros(n, dtype=np.int64)
        np.cumsum(row_len[:-1], out=starts[1:])
    size = int(starts[-1] + row_len[-1])
    buf = np.zeros(size, dtype=np.uint8)
    buf64 = buf.view("<u8")
    start_words = starts // 8
    for b in range(w):  # null bits; byte 0 (RowKind +I) stays 0
        header = np.zeros(n, dtype=np.uint8)
        for j, c in enumerate(cols):
            bit = j + HEADER_SIZE_IN_BITS
            if c.null is not None and bit // 8 == b:
                header |= c.null.astype(np.uint8) << np.uint8(bit % 8)
        if header.any():
            buf[starts + b] = header
    for j, c in enumerate(cols):
        slot_words = start_words + (w // 8 + j)
        off = var_off[j]
        if c.kind == "fixed":
            buf64[slot_words] = c.slot
            continue
        var_words = (starts + off) // 8
        if c.kind == "ts":
            assert c.payload is not None
            buf64[slot_words] = c.slot | (np.asarray(off, dtype=np.uint64) << np.uint64(32))
            buf64[var_words] = c.payload
        elif c.kind == "decimal":
            assert c.payload is not None
            buf64[slot_words] = c.slot | (np.asarray(off, dtype=np.uint64) << np.uint64(32))
            buf64[var_words] = c.payload[:, 0]
            buf64[var_words + 1] = c.payload[:, 1]
        else:
            slot = c.slot.copy()
            if c.long_rows is not None:
                rows = c.long_rows
                off_rows = np.broadcast_to(np.asarray(off, dtype=np.int64), (n,))[rows]
                slot[rows] |= off_rows.astype(np.uint64) << np.uint64(32)
                _copy_bytes(c, rows, var_words[rows], buf64)
            buf64[slot_words] = slot
    return buf, starts, np.ascontiguousarray(row_len)


def _copy_bytes(c: _Col, rows: I64, dest_words: I64, buf64: U64) -> None:
    """Copy the variable-part bytes of ``rows`` 8 bytes at a time, zero-padding the last word."""
    assert c.src is not None and c.lens is not None and c.data is not None
    words = _unaligned_words(c.data)
    src, lens, dst = c.src[rows], c.lens[rows], dest_words
    q = 0
    while len(src):
        remaining = lens - 8 * q
        word = words[src + 8 * q]
        partial = remaining < 8
        if partial.any():  # 1..7 bytes left: keep them, zero the rest (Java zero-pads)
            shift = (np.minimum(remaining, 7) * 8).astype(np.uint64)
            mask = np.where(partial, (np.uint64(1) << shift) - np.uint64(1), np.uint64(_M64))
            word = word & mask
        buf64[dst + q] = word
        keep = remaining > 8
        src, lens, dst = src[keep], lens[keep], dst[keep]
        q += 1


_M64 = (1 << 64) - 1


def _hash_rows(buf: npt.NDArray[np.uint8], starts: I64, row_len: I64, seed: int) -> np.ndarray:
    n = len(starts)
    out = np.empty(n, dtype=np.int32)
    buf32 = buf.view("<u4")
    first, last = int(row_len[0]), int(row_len.min())
    if first == last and int(row_len.max()) == first:
        out[:] = _murmur(buf32.reshape(n, first // 4), first, seed)
        return out
    units = (row_len // 8).astype(np.int64)
    order = np.argsort(units.astype(np.uint16) if units.max() < 65536 else units, kind="stable")
    sorted_units = units[order]
    bounds = np.flatnonzero(np.diff(sorted_units)) + 1
    for grp in np.split(order, bounds):
        length = int(row_len[grp[0]])
        idx = (starts[grp] // 4)[:, None] + np.arange(length // 4, dtype=np.int64)[None, :]
        out[grp] = _murmur(buf32[idx], length, seed)
    return out


def _rotl_np(x: U32, r: int) -> U32:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _murmur(words: U32, length: int, seed: int) -> np.ndarray:
    """MurmurHash3 x86_32 (Java's seed 42, or :data:`_SECOND_SEED`) of each row of a
    (rows x words) uint32 array."""
    k = np.ascontiguousarray(words.T) * np.uint32(_C1)
    k = _rotl_np(k, 15)
    k *= np.uint32(_C2)
    h = np.full(words.shape[0], seed, dtype=np.uint32)
    for col in k:
        h ^= col
        h = _rotl_np(h, 13)
        h *= np.uint32(5)
        h += np.uint32(0xE6546B64)
    h ^= np.uint32(length)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h.view(np.int32)
