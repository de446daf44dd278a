"""BinaryRow codec: ``org.apache.paimon.data.BinaryRow`` (written by ``BinaryRowWriter``).

Byte layout (little-endian, the byte order Java uses on every supported platform)::

    [header W bytes][slot 0: 8 bytes]...[slot n-1: 8 bytes][variable part, 8-byte aligned items]
    W = ((n + 63 + 8) // 64) * 8      byte 0 = RowKind, bit (i + 8) set = field i is null

Slots: BOOLEAN/TINYINT byte 0, SMALLINT int16, INT/DATE (days)/TIME (millis of day) int32, BIGINT
int64, FLOAT/DOUBLE raw IEEE bits (Java ``BinaryRowWriter`` does not normalise NaN), compact
DECIMAL (p <= 18) the unscaled int64, compact TIMESTAMP (p <= 3) epoch millis. Strings and binary
of <= 7 bytes are inline (bytes 0..len-1, byte 7 = ``0x80 | len``); longer ones go to the variable
part and the slot holds ``offset << 32 | len`` (offset from the row start). Non-compact DECIMAL
reserves 16 bytes (``BigInteger.toByteArray`` big-endian bytes at their start), non-compact
TIMESTAMP 8 bytes (epoch millis; the slot keeps ``offset << 32 | nanoOfMillisecond``). Nulls set
the null bit and zero the slot, except non-compact DECIMAL/TIMESTAMP, which keep their zeroed
variable-part reservation and ``offset << 32`` in the slot: the canonical form of Paimon's
generated projections (``GenerateUtils.binaryWriterWriteNull``), used for partitions, keys and
bucket keys, which Java compares and hashes byte-wise.

Python value convention (used across paimon_core):

=============================  =================================================================
BOOLEAN                        ``bool``
TINYINT, SMALLINT, INT, BIGINT ``int``
FLOAT, DOUBLE                  ``float``
DECIMAL(p, s)                  ``decimal.Decimal`` (decoded with exactly ``s`` fraction digits)
CHAR, VARCHAR, STRING          ``str``
BINARY, VARBINARY, BYTES       ``bytes``
DATE                           ``datetime.date``
TIME(p)                        ``datetime.time`` (millisecond precision, what Paimon stores)
TIMESTAMP(p)                   naive ``datetime.datetime`` (wall clock)
TIMESTAMP_LTZ(p)               aware ``datetime.datetime`` in UTC
ARRAY / MULTISET / MAP / ROW   ``list`` / ``list[(elem, count)]`` / ``list[(key, value)]`` /
                               ``dict`` by field name (the shapes of pyarrow's ``as_py()``)
=============================  =================================================================

Timestamps: Python datetimes hold microseconds. Decoding with ``exact_timestamps=True`` returns
TIMESTAMP and TIMESTAMP_LTZ values as ``int`` epoch nanoseconds instead (exact for every precision
and for instants outside datetime's range). The encoder accepts datetimes (also pandas Timestamps
with their ``nanosecond``), ``int`` epoch nanoseconds, ``numpy.datetime64`` and
``(epoch_millis, nano_of_milli)`` tuples; values are truncated (floored) to the type's precision.
DATE also accepts ``int`` days and TIME ``int`` millis of day; DECIMAL also ``int`` and ``str``
(rounded HALF_UP to the scale, as Java's ``Decimal.fromBigDecimal``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import operator
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from paimon_core.errors import CorruptMetadataError, SchemaError, UnsupportedError
from paimon_core.spec.row_kind import RowKind
from paimon_core.types import (
    BINARY_ROOTS,
    INT_RANGES,
    STRING_ROOTS,
    ArrayType,
    AtomicType,
    DataType,
    MapType,
    MultisetType,
    TypeRoot,
)

__all__ = [
    "EMPTY_ROW",
    "EMPTY_ROW_SERIALIZED",
    "HEADER_SIZE_IN_BITS",
    "MAX_FIX_PART_DATA_SIZE",
    "binary_row_arity",
    "date_to_days",
    "decimal_to_unscaled",
    "decode_binary_row",
    "deserialize_binary_row",
    "encode_binary_row",
    "fixed_part_size",
    "is_compact_decimal",
    "is_compact_timestamp",
    "millis_nanos_to_datetime",
    "null_bits_size",
    "serialize_binary_row",
    "time_to_millis",
    "timestamp_to_millis_nanos",
]

HEADER_SIZE_IN_BITS = 8
MAX_FIX_PART_DATA_SIZE = 7
MAX_COMPACT_DECIMAL_PRECISION = 18
MAX_COMPACT_TIMESTAMP_PRECISION = 3

#: ``BinaryRow.EMPTY_ROW`` (arity 0): an 8-byte zero header.
EMPTY_ROW = bytes(8)
#: ``SerializationUtils.serializeBinaryRow(BinaryRow.EMPTY_ROW)``: arity prefix 0 + 8 zero bytes.
EMPTY_ROW_SERIALIZED = bytes.fromhex("00000000" + "00" * 8)

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH_ORDINAL = _EPOCH_DATE.toordinal()
_MILLIS_PER_DAY = 86_400_000
_NANOS_PER_MILLI = 1_000_000
_UTC = dt.UTC
_HIGHEST_FIRST_BIT = 0x80 << 56
_FIXED_FMT = {
    TypeRoot.TINYINT: "<b",
    TypeRoot.SMALLINT: "<h",
    TypeRoot.INT: "<i",
    TypeRoot.BIGINT: "<q",
}


def null_bits_size(arity: int) -> int:
    """``BinaryRow.calculateBitSetWidthInBytes``: header width in bytes (8 for <= 56 fields)."""
    return ((arity + 63 + HEADER_SIZE_IN_BITS) // 64) * 8


def fixed_part_size(arity: int) -> int:
    """``BinaryRow.calculateFixPartSizeInBytes``: header plus one 8-byte slot per field."""
    return null_bits_size(arity) + 8 * arity


def is_compact_decimal(precision: int) -> bool:
    """``Decimal.isCompact``: unscaled value stored in the 8-byte slot."""
    return precision <= MAX_COMPACT_DECIMAL_PRECISION


def is_compact_timestamp(precision: int) -> bool:
    """``Timestamp.isCompact``: epoch millis stored in the 8-byte slot."""
    return precision <= MAX_COMPACT_TIMESTAMP_PRECISION


# ---------------------------------------------------------------------------------------------
# value conversions shared by the row codec, bucketing and partition rendering


def _precision(t: AtomicType, default: int) -> int:
    return t.precision if t.precision is not None else default


def decimal_to_unscaled(value: Any, precision: int, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (``Decimal.fromBigDecimal``: HALF_UP).

    Raises:
        SchemaError: not a number, or more than ``precision`` digits.
    """
    if not isinstance(value, (decimal.Decimal, str)):
        try:
            value = _as_int(value, "DECIMAL")
        except SchemaError as e:
            raise SchemaError(f"expected a decimal.Decimal for DECIMAL({precision}, {scale}), "
                              f"got {type(value).__name__}") from e
    ctx = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP)
    try:
        d = ctx.create_decimal(value)
        if not d.is_finite():
            raise SchemaError(f"DECIMAL value {value!r} is not finite")
        q = d.quantize(decimal.Decimal(1).scaleb(-scale), context=ctx)
    except decimal.DecimalException as e:
        raise SchemaError(f"invalid DECIMAL value {value!r}") from e
    sign, digits, _ = q.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    if unscaled >= 10**precision:
        raise SchemaError(f"DECIMAL value {value!r} does not fit DECIMAL({precision}, {scale})")
    return -unscaled if sign else unscaled


def date_to_days(value: Any) -> int:
    """Days since 1970-01-01 of a ``datetime.date`` (or an ``int`` that already is)."""
    if isinstance(value, dt.datetime):
        raise SchemaError(f"expected a datetime.date for DATE, got a datetime: {value!r}")
    if isinstance(value, dt.date):
        return value.toordinal() - _EPOCH_ORDINAL
    return _as_int(value, "DATE")


def time_to_millis(value: Any) -> int:
    """Milliseconds of the day of a ``datetime.time`` (or an ``int`` that already is)."""
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + (
            value.microsecond // 1000
        )
    return _as_int(value, "TIME")


def timestamp_to_millis_nanos(value: Any, precision: int, ltz: bool) -> tuple[int, int]:
    """``(epoch_millis, nano_of_millisecond)`` of a timestamp value, floored to ``precision``.

    TIMESTAMP takes the wall clock of a datetime (a tzinfo, if any, is dropped); TIMESTAMP_LTZ
    converts an aware datetime to UTC and reads a naive one as UTC. ``int`` values are epoch
    nanoseconds; ``(millis, nanos)`` tuples are taken as they are.
    """
    if isinstance(value, tuple) and len(value) == 2:
        millis, nanos = _as_int(value[0], "TIMESTAMP"), _as_int(value[1], "TIMESTAMP")
        if not 0 <= nanos < _NANOS_PER_MILLI:
            raise SchemaError(f"nano-of-millisecond {nanos} out of range [0, 999999]")
    else:
        total = _timestamp_epoch_nanos(value, ltz)
        millis, nanos = divmod(total, _NANOS_PER_MILLI)
    if precision <= MAX_COMPACT_TIMESTAMP_PRECISION:
        unit = 10 ** (3 - precision)
        return millis - millis % unit, 0
    unit = 10 ** (9 - precision)
    return millis, nanos - nanos % unit


def _timestamp_epoch_nanos(value: Any, ltz: bool) -> int:
    if isinstance(value, dt.datetime):
        extra_nanos = int(getattr(value, "nanosecond", 0) or 0)  # pandas.Timestamp
        d: dt.datetime = value
        if d.tzinfo is not None:
            d = d.astimezone(_UTC).replace(tzinfo=None) if ltz else d.replace(tzinfo=None)
        days = d.toordinal() - _EPOCH_ORDINAL
        secs = days * 86_400 + d.hour * 3600 + d.minute * 60 + d.second
        return (secs * 1_000_000 + d.microsecond) * 1000 + extra_nanos
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            raise SchemaError("NaT is not a timestamp value (use None for null)")
        return int(value.astype("datetime64[ns]").astype(np.int64))
    return _as_int(value, "TIMESTAMP")


def millis_nanos_to_datetime(millis: int, nanos: int, ltz: bool) -> dt.datetime:
    """``Timestamp.toLocalDateTime`` as a Python datetime (sub-microsecond nanos truncated).

    Raises:
        UnsupportedError: the instant is outside ``datetime``'s range (years 1..9999).
    """
    days, ms_of_day = divmod(millis, _MILLIS_PER_DAY)
    try:
        base = dt.datetime.combine(dt.date.fromordinal(_EPOCH_ORDINAL + days), dt.time())
    except (ValueError, OverflowError) as e:
        raise UnsupportedError(f"timestamp {millis} ms is outside Python's datetime range") from e
    micros = ms_of_day * 1000 + nanos // 1000
    out = base + dt.timedelta(microseconds=micros)
    return out.replace(tzinfo=_UTC) if ltz else out


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise SchemaError(f"expected an integer for {what}, got a bool")
    try:
        return operator.index(value)
    except TypeError as e:
        raise SchemaError(f"expected an integer for {what}, got {type(value).__name__}") from e


def _as_bytes(value: Any, t: AtomicType) -> bytes:
    if t.root in STRING_ROOTS:
        if not isinstance(value, str):
            raise SchemaError(f"expected str for {t}, got {type(value).__name__}")
        # Java String.getBytes(UTF_8) replaces unpaired surrogates with '?'
        return value.encode("utf-8", errors="replace")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise SchemaError(f"expected bytes for {t}, got {type(value).__name__}")


# ---------------------------------------------------------------------------------------------
# encoding


def encode_binary_row(values: Sequence[Any], types: Sequence[DataType], row_kind: int = 0) -> bytes:
    """Encode a row as Java's ``BinaryRowWriter`` does (canonical null form), no arity prefix.

    Args:
        values: one Python value per field (see the module docstring), ``None`` for null.
        types: the field types.
        row_kind: the RowKind byte (0 +I, 1 -U, 2 +U, 3 -D).

    Returns:
        The row bytes (a multiple of 8 long).

    Raises:
        SchemaError: arity mismatch, or a value that does not fit its type.
        UnsupportedError: a non-null ARRAY/MAP/MULTISET/ROW value (decode-only).
    """
    n = len(types)
    if len(values) != n:
        raise SchemaError(f"row has {len(values)} values but {n} types")
    kind = RowKind.from_byte_value(row_kind)
    w = null_bits_size(n)
    fixed = bytearray(w + 8 * n)
    fixed[0] = kind.value
    var = bytearray()
    cursor = len(fixed)

    def put_var(data: bytes, reserve: int) -> int:
        nonlocal cursor
        off = cursor
        var.extend(data)
        var.extend(bytes(reserve - len(data)))
        cursor += reserve
        return off

    for i, (v, t) in enumerate(zip(values, types)):
        slot = w + 8 * i
        if v is None:
            fixed[(i + HEADER_SIZE_IN_BITS) // 8] |= 1 << ((i + HEADER_SIZE_IN_BITS) % 8)
            if isinstance(t, AtomicType):
                if t.root is TypeRoot.DECIMAL and not is_compact_decimal(_precision(t, 10)):
                    struct.pack_into("<q", fixed, slot, put_var(b"", 16) << 32)
                elif t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ) and not (
                    is_compact_timestamp(_precision(t, 6))
                ):
                    struct.pack_into("<q", fixed, slot, put_var(b"", 8) << 32)
            continue
        if not isinstance(t, AtomicType):
            raise UnsupportedError(f"encoding non-null {t.sql()} values into a BinaryRow")
        r = t.root
        if r is TypeRoot.BOOLEAN:
            if not isinstance(v, (bool, np.bool_)):
                raise SchemaError(f"expected bool for BOOLEAN, got {type(v).__name__}")
            fixed[slot] = 1 if v else 0
        elif r in INT_RANGES:
            iv = _as_int(v, r.value)
            lo, hi = INT_RANGES[r]
            if not lo <= iv <= hi:
                raise SchemaError(f"{iv} out of range for {t}")
            struct.pack_into(_FIXED_FMT[r], fixed, slot, iv)
        elif r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            if isinstance(v, (bool, np.bool_)) or not isinstance(
                v, (int, float, np.integer, np.floating)
            ):
                raise SchemaError(f"expected float for {t}, got {type(v).__name__}")
            try:
                struct.pack_into("<f" if r is TypeRoot.FLOAT else "<d", fixed, slot, float(v))
            except OverflowError as e:
                raise SchemaError(f"{v!r} out of range for {t}") from e
        elif r is TypeRoot.DECIMAL:
            p, s = _precision(t, 10), t.scale or 0
            unscaled = decimal_to_unscaled(v, p, s)
            if is_compact_decimal(p):
                struct.pack_into("<q", fixed, slot, unscaled)
            else:
                data = _to_java_big_integer_bytes(unscaled)
                if len(data) > 16:
                    raise SchemaError(f"DECIMAL value {v!r} needs more than 16 bytes")
                struct.pack_into("<q", fixed, slot, (put_var(data, 16) << 32) | len(data))
        elif r in STRING_ROOTS or r in BINARY_ROOTS:
            data = _as_bytes(v, t)
            if len(data) <= MAX_FIX_PART_DATA_SIZE:
                fixed[slot : slot + len(data)] = data
                fixed[slot + 7] = 0x80 | len(data)
            else:
                off = put_var(data, (len(data) + 7) & ~7)
                struct.pack_into("<q", fixed, slot, (off << 32) | len(data))
        elif r is TypeRoot.DATE:
            struct.pack_into("<i", fixed, slot, _check_i32(date_to_days(v), t))
        elif r is TypeRoot.TIME:
            struct.pack_into("<i", fixed, slot, _check_i32(time_to_millis(v), t))
        elif r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
            p = _precision(t, 6)
            millis, nanos = timestamp_to_millis_nanos(v, p, r is TypeRoot.TIMESTAMP_LTZ)
            if not INT_RANGES[TypeRoot.BIGINT][0] <= millis <= INT_RANGES[TypeRoot.BIGINT][1]:
                raise SchemaError(f"timestamp {v!r} out of range")
            if is_compact_timestamp(p):
                struct.pack_into("<q", fixed, slot, millis)
            else:
                off = put_var(struct.pack("<q", millis), 8)
                struct.pack_into("<q", fixed, slot, (off << 32) | nanos)
        else:  # pragma: no cover - every atomic root is handled above
            raise UnsupportedError(f"type {t} in a BinaryRow")
    return bytes(fixed) + bytes(var)


def _check_i32(v: int, t: AtomicType) -> int:
    if not -(1 << 31) <= v < (1 << 31):
        raise SchemaError(f"{v} out of range for {t}")
    return v


def _to_java_big_integer_bytes(v: int) -> bytes:
    """``BigInteger.toByteArray``: minimal big-endian two's complement (zero is ``00``)."""
    n = (v.bit_length() if v >= 0 else (~v).bit_length()) // 8 + 1
    return v.to_bytes(n, "big", signed=True)


def serialize_binary_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """``SerializationUtils.serializeBinaryRow``: int32 big-endian arity + the +I row bytes."""
    return struct.pack(">i", len(types)) + encode_binary_row(values, types)


# ---------------------------------------------------------------------------------------------
# decoding


def binary_row_arity(data: bytes, *, path: str = "<bytes>") -> int:
    """The arity prefix of a serialized row (``SerializationUtils.deserializeBinaryRow``).

    Raises:
        CorruptMetadataError: fewer than 4 bytes or a negative arity.
    """
    if len(data) < 4:
        raise CorruptMetadataError(path, f"serialized BinaryRow of {len(data)} bytes")
    (arity,) = struct.unpack_from(">i", data, 0)
    if arity < 0:
        raise CorruptMetadataError(path, f"negative BinaryRow arity {arity}")
    return int(arity)


def deserialize_binary_row(
    data: bytes,
    types: Sequence[DataType],
    *,
    path: str = "<bytes>",
    exact_timestamps: bool = False,
) -> list[Any]:
    """Decode a serialized row (arity prefix + row bytes) as stored in manifests.

    Args:
        data: the serialized bytes.
        types: the expected field types; ``len(types)`` must equal the stored arity.
        path: the file the bytes come from, for error messages.
        exact_timestamps: return timestamps as ``int`` epoch nanoseconds.

    Raises:
        CorruptMetadataError: wrong arity or malformed bytes.
    """
    arity = binary_row_arity(data, path=path)
    if arity != len(types):
        raise CorruptMetadataError(
            path, f"BinaryRow arity {arity} does not match the {len(types)} expected fields"
        )
    return decode_binary_row(
        bytes(data[4:]), types, path=path, exact_timestamps=exact_timestamps
    )


def decode_binary_row(
    row_bytes: bytes,
    types: Sequence[DataType],
    *,
    path: str = "<bytes>",
    exact_timestamps: bool = False,
) -> list[Any]:
    """Decode row bytes (no arity prefix) into Python values (see the module docstring).

    Also decodes stats rows (min/max values), whose fields are all nullable.

    Raises:
        CorruptMetadataError: the bytes are too short or an offset points outside them.
        UnsupportedError: a DATE/TIME/TIMESTAMP outside Python's range (use
            ``exact_timestamps=True`` for timestamps).
    """
    reader = _Reader(bytes(row_bytes), path, exact_timestamps)
    return reader.row(0, len(row_bytes), list(types))


class _Reader:
    """Reads fields out of a BinaryRow / BinaryArray / BinaryMap held in one buffer."""

    __slots__ = ("buf", "exact", "path")

    def __init__(self, buf: bytes, path: str, exact: bool) -> None:
        self.buf = buf
        self.path = path
        self.exact = exact

    def fail(self, reason: str) -> CorruptMetadataError:
        return CorruptMetadataError(self.path, reason)

    def check(self, off: int, size: int, limit: int) -> None:
        if off < 0 or size < 0 or off + size > limit:
            raise self.fail(f"BinaryRow section [{off}, {off + size}) beyond {limit} bytes")

    def row(self, base: int, size: int, types: list[DataType]) -> list[Any]:
        n = len(types)
        w = null_bits_size(n)
        end = base + size
        self.check(base, w + 8 * n, end)
        out: list[Any] = []
        for i, t in enumerate(types):
            bit = i + HEADER_SIZE_IN_BITS
            if self.buf[base + bit // 8] & (1 << (bit % 8)):
                out.append(None)
            else:
                out.append(self.value(t, base, end, base + w + 8 * i, 8))
        return out

    def value(self, t: DataType, base: int, end: int, off: int, width: int) -> Any:
        """Read the value of type ``t`` whose slot (``width`` bytes) is at ``off``; variable
        parts are addressed relative to ``base`` and must end before ``end``."""
        buf = self.buf
        if isinstance(t, AtomicType):
            r = t.root
            if r is TypeRoot.BOOLEAN:
                return buf[off] != 0
            if r in _FIXED_FMT:
                return struct.unpack_from(_FIXED_FMT[r], buf, off)[0]
            if r is TypeRoot.FLOAT:
                return struct.unpack_from("<f", buf, off)[0]
            if r is TypeRoot.DOUBLE:
                return struct.unpack_from("<d", buf, off)[0]
            if r is TypeRoot.DATE:
                days = struct.unpack_from("<i", buf, off)[0]
                try:
                    return dt.date.fromordinal(_EPOCH_ORDINAL + days)
                except (ValueError, OverflowError) as e:
                    raise UnsupportedError(f"DATE {days} is outside Python's date range") from e
            if r is TypeRoot.TIME:
                ms = struct.unpack_from("<i", buf, off)[0]
                if not 0 <= ms < _MILLIS_PER_DAY:
                    raise UnsupportedError(f"TIME of {ms} ms is outside a day")
                secs, milli = divmod(ms, 1000)
                return dt.time(secs // 3600, secs // 60 % 60, secs % 60, milli * 1000)
            slot = struct.unpack_from("<q", buf, off)[0]
            if r is TypeRoot.DECIMAL:
                p, s = _precision(t, 10), t.scale or 0
                if is_compact_decimal(p):
                    unscaled = slot
                else:
                    data = self.var(base, end, slot)
                    if not data:
                        raise self.fail("non-null DECIMAL with 0 bytes")
                    unscaled = int.from_bytes(data, "big", signed=True)
                return decimal.Decimal(f"{unscaled}E-{s}")
            if r in STRING_ROOTS or r in BINARY_ROOTS:
                if slot & _HIGHEST_FIRST_BIT:
                    n = (slot >> 56) & 0x7F
                    if n > MAX_FIX_PART_DATA_SIZE:
                        raise self.fail(f"inline length {n} > 7")
                    data = buf[off : off + n]
                else:
                    data = self.var(base, end, slot)
                return _decode_utf8(data) if r in STRING_ROOTS else data
            if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
                ltz = r is TypeRoot.TIMESTAMP_LTZ
                if is_compact_timestamp(_precision(t, 6)):
                    millis, nanos = slot, 0
                else:
                    sub = slot >> 32
                    nanos = slot & 0xFFFFFFFF
                    self.check(base + sub, 8, end)
                    millis = struct.unpack_from("<q", buf, base + sub)[0]
                    if nanos >= _NANOS_PER_MILLI:
                        raise self.fail(f"nano-of-millisecond {nanos} out of range")
                if self.exact:
                    return millis * _NANOS_PER_MILLI + nanos
                return millis_nanos_to_datetime(millis, nanos, ltz)
            raise UnsupportedError(f"type {t} in a BinaryRow")  # pragma: no cover
        slot = struct.unpack_from("<q", buf, off)[0]
        sub, size = slot >> 32, slot & 0xFFFFFFFF
        self.check(base + sub, size, end)
        if isinstance(t, ArrayType):
            return self.array(base + sub, size, t.element)
        if isinstance(t, MultisetType):
            return self.map(base + sub, size, t.element, AtomicType(TypeRoot.INT, False))
        if isinstance(t, MapType):
            return self.map(base + sub, size, t.key, t.value)
        return dict(
            zip(
                [f.name for f in t.fields],
                self.row(base + sub, size, [f.type for f in t.fields]),
                strict=True,
            )
        )

    def var(self, base: int, end: int, slot: int) -> bytes:
        sub, size = slot >> 32, slot & 0xFFFFFFFF
        self.check(base + sub, size, end)
        return self.buf[base + sub : base + sub + size]

    def array(self, base: int, size: int, element: DataType) -> list[Any]:
        """``BinaryArray``: int32 count, null bits in 4-byte words, then the elements."""
        end = base + size
        self.check(base, 4, end)
        (count,) = struct.unpack_from("<i", self.buf, base)
        if count < 0:
            raise self.fail(f"negative BinaryArray size {count}")
        width = _array_element_size(element)
        first = base + 4 + ((count + 31) // 32) * 4
        self.check(first, width * count, end)
        out: list[Any] = []
        for i in range(count):
            if self.buf[base + 4 + i // 8] & (1 << (i % 8)):
                out.append(None)
            else:
                out.append(self.value(element, base, end, first + i * width, width))
        return out

    def map(self, base: int, size: int, key: DataType, value: DataType) -> list[Any]:
        """``BinaryMap``: int32 byte size of the key array, the key array, the value array."""
        self.check(base, 4, base + size)
        (kbytes,) = struct.unpack_from("<i", self.buf, base)
        if kbytes < 0 or 4 + kbytes > size:
            raise self.fail(f"BinaryMap key array of {kbytes} bytes in {size}")
        keys = self.array(base + 4, kbytes, key)
        values = self.array(base + 4 + kbytes, size - 4 - kbytes, value)
        if len(keys) != len(values):
            raise self.fail(f"BinaryMap with {len(keys)} keys and {len(values)} values")
        return list(zip(keys, values, strict=True))


def _array_element_size(t: DataType) -> int:
    """``BinaryArray.calculateFixLengthPartSize``."""
    r = t.root
    if r in (TypeRoot.BOOLEAN, TypeRoot.TINYINT):
        return 1
    if r is TypeRoot.SMALLINT:
        return 2
    if r in (TypeRoot.INT, TypeRoot.FLOAT, TypeRoot.DATE, TypeRoot.TIME):
        return 4
    return 8


def _decode_utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Java's BinaryString.toString decodes leniently (U+FFFD), never fails
        return data.decode("utf-8", errors="replace")
