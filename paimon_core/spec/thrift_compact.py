"""The Thrift compact protocol at the field-id level: what a Parquet footer is made of.

A generic, schema-less codec (``org.apache.thrift.protocol.TCompactProtocol``): a struct decodes
to its fields in the order they were written, each with its id, its compact type code and its
value, so a footer can be changed field by field and encoded again. Encoding writes what
Thrift's own writers write (minimal varints, the short field header when the id delta is
1..15, booleans folded into the field header, container booleans as bytes 1/2), so a decoded
footer that nobody changed encodes back to the very same bytes.

Values: ``bool`` (BOOL fields and elements), ``int`` (BYTE/I16/I32/I64), ``float`` (DOUBLE),
``bytes`` (BINARY), :class:`TList` (LIST and SET), :class:`TMap`, :class:`TStruct`.

``decode_struct(..., until=k)`` decodes a struct's fields only up to field ``k`` and keeps the
rest as raw bytes (:attr:`TStruct.rest`), which encoding copies: a change to the first fields
of a big struct (the schema of a Parquet footer, before its row groups) costs no more than
those fields.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TypeVar

__all__ = [
    "CType",
    "TField",
    "TList",
    "TMap",
    "TStruct",
    "ThriftDecodeError",
    "decode_struct",
    "encode_struct",
]


class CType(IntEnum):
    """Compact-protocol type codes (``TCompactProtocol.Types``)."""

    STOP = 0
    BOOL_TRUE = 1
    BOOL_FALSE = 2
    BYTE = 3
    I16 = 4
    I32 = 5
    I64 = 6
    DOUBLE = 7
    BINARY = 8
    LIST = 9
    SET = 10
    MAP = 11
    STRUCT = 12


# plain ints on the hot paths (IntEnum comparisons cost several times more)
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DBL, _BIN, _LIST, _SET, _MAP, _STRUCT = range(13)
_BOUNDS = {_BYTE: 2**7, _I16: 2**15, _I32: 2**31, _I64: 2**63}
_MAX_DEPTH = 64
_DOUBLE = struct.Struct("<d")


class ThriftDecodeError(ValueError):
    """Bytes that are not a well-formed compact-protocol struct (truncated, unknown type code,
    impossible size, nested too deep); ``offset`` is where decoding stopped."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(f"{reason} at byte {offset}")
        self.reason = reason
        self.offset = offset


@dataclass(slots=True)
class TList:
    """A LIST (or SET, ``is_set``) of elements of compact type ``elem_type``."""

    elem_type: int
    items: list[Value] = field(default_factory=list)
    is_set: bool = False


@dataclass(slots=True)
class TMap:
    """A MAP; ``key_type`` / ``value_type`` are 0 for an empty map (not written)."""

    key_type: int
    value_type: int
    items: list[tuple[Value, Value]] = field(default_factory=list)


@dataclass(slots=True)
class TField:
    """One field of a struct: its id, its compact type code (BOOL_TRUE for a bool field,
    whatever its value) and its value."""

    id: int
    type: int
    value: Value


@dataclass(slots=True)
class TStruct:
    """A struct's fields in written order; ``rest``: the raw bytes of the fields after the
    last decoded one, and the STOP byte, when decoding stopped early (``until``)."""

    fields: list[TField] = field(default_factory=list)
    rest: bytes | None = None

    def get(self, field_id: int) -> TField | None:
        for f in self.fields:
            if f.id == field_id:
                return f
        return None

    def value(self, field_id: int) -> Value | None:
        f = self.get(field_id)
        return None if f is None else f.value

    def struct_at(self, field_id: int) -> TStruct | None:
        v = self.value(field_id)
        return v if isinstance(v, TStruct) else None

    def list_at(self, field_id: int) -> TList | None:
        v = self.value(field_id)
        return v if isinstance(v, TList) else None

    def put(self, field_id: int, ctype: int, value: Value) -> None:
        """Set field ``field_id`` (replacing it, else inserting it before the first field
        with a higher id: Thrift writers emit fields in ascending id order).

        Raises:
            ValueError: a new field after the decoded ones of a partly decoded struct.
        """
        if ctype == _FALSE:
            ctype = _TRUE
        new = TField(field_id, ctype, value)
        for i, f in enumerate(self.fields):
            if f.id == field_id:
                self.fields[i] = new
                return
            if f.id > field_id:
                self.fields.insert(i, new)
                return
        if self.rest is not None:
            raise ValueError(f"field {field_id} would follow the undecoded rest of the struct")
        self.fields.append(new)

    def remove(self, field_id: int) -> bool:
        """Drop field ``field_id``; whether it was there.

        Raises:
            ValueError: the last decoded field of a partly decoded struct (the rest's first
                field header is relative to its id).
        """
        if self.rest is not None and self.fields and self.fields[-1].id == field_id:
            raise ValueError(f"field {field_id} is followed by the undecoded rest")
        n = len(self.fields)
        self.fields = [f for f in self.fields if f.id != field_id]
        return len(self.fields) != n


Value = bool | int | float | bytes | TList | TMap | TStruct

# ---------------------------------------------------------------------------------------------
# decoding


class _Reader:
    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end

    def byte(self) -> int:
        pos = self.pos
        if pos >= self.end:
            raise ThriftDecodeError("truncated", pos)
        self.pos = pos + 1
        return self.data[pos]

    def varint(self) -> int:
        data, pos, end = self.data, self.pos, self.end
        out = shift = 0
        while True:
            if pos >= end:
                raise ThriftDecodeError("truncated", pos)
            b = data[pos]
            pos += 1
            out |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return out
            shift += 7
            if shift > 63:
                raise ThriftDecodeError("varint longer than 10 bytes", pos)

    def take(self, n: int) -> bytes:
        pos = self.pos
        if pos + n > self.end:
            raise ThriftDecodeError(f"truncated ({n} bytes wanted)", pos)
        self.pos = pos + n
        return self.data[pos : pos + n]

    def value(self, ctype: int, depth: int) -> Value:
        if ctype in (_I32, _I64, _I16):
            n = self.varint()
            v = (n >> 1) ^ -(n & 1)
            bound = _BOUNDS[ctype]
            if not -bound <= v < bound:
                raise ThriftDecodeError(f"{CType(ctype).name} value {v} out of range", self.pos)
            return v
        if ctype == _BIN:
            return self.take(self.varint())
        if ctype == _STRUCT:
            return self.struct(depth + 1, None)
        if ctype in (_TRUE, _FALSE):  # a container element: one byte of its own
            return self.byte() == _TRUE
        if ctype == _BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ctype == _DBL:
            return float(_DOUBLE.unpack(self.take(8))[0])
        if depth >= _MAX_DEPTH:
            raise ThriftDecodeError(f"nested deeper than {_MAX_DEPTH}", self.pos)
        if ctype in (_LIST, _SET):
            head = self.byte()
            size, elem = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            self._check(elem, size)
            items = [self.value(elem, depth + 1) for _ in range(size)]
            return TList(elem, items, ctype == _SET)
        if ctype == _MAP:
            size = self.varint()
            if size == 0:
                return TMap(0, 0)
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            self._check(kt, size)
            self._check(vt, size)
            pairs = [(self.value(kt, depth + 1), self.value(vt, depth + 1)) for _ in range(size)]
            return TMap(kt, vt, pairs)
        raise ThriftDecodeError(f"unknown compact type {ctype}", self.pos)

    def struct(self, depth: int, until: int | None) -> TStruct:
        if depth >= _MAX_DEPTH:
            raise ThriftDecodeError(f"nested deeper than {_MAX_DEPTH}", self.pos)
        fields: list[TField] = []
        last = 0
        while True:
            head = self.byte()
            ctype = head & 0x0F
            if ctype == _STOP:
                if head:
                    raise ThriftDecodeError(f"bad field header {head:#x}", self.pos - 1)
                return TStruct(fields)
            if ctype > _STRUCT:
                raise ThriftDecodeError(f"unknown compact type {ctype}", self.pos - 1)
            delta = head >> 4
            if delta:
                fid = last + delta
            else:
                n = self.varint()
                fid = (n >> 1) ^ -(n & 1)
            if not -(2**15) <= fid < 2**15:
                raise ThriftDecodeError(f"field id {fid} out of range", self.pos)
            if ctype in (_TRUE, _FALSE):
                fields.append(TField(fid, _TRUE, ctype == _TRUE))
            else:
                fields.append(TField(fid, ctype, self.value(ctype, depth)))
            last = fid
            if fid == until:
                rest = self.data[self.pos : self.end]
                self.pos = self.end
                return TStruct(fields, rest)

    def _check(self, ctype: int, size: int) -> None:
        if not _TRUE <= ctype <= _STRUCT:
            raise ThriftDecodeError(f"unknown compact type {ctype}", self.pos)
        if size > self.end - self.pos:  # every element takes at least one byte
            raise ThriftDecodeError(
                f"container of {size} elements in {self.end - self.pos} bytes", self.pos)


def decode_struct(data: bytes | memoryview, pos: int = 0, end: int | None = None, *,
                  until: int | None = None) -> tuple[TStruct, int]:
    """Decode the struct starting at ``data[pos]``.

    Args:
        data, pos, end: the bytes (``end`` defaults to their end).
        until: stop after the struct's field of this id and keep everything after it up to
            ``end`` as the struct's :attr:`~TStruct.rest` (undecoded and unchecked).

    Returns:
        (the struct, the position after it).

    Raises:
        ThriftDecodeError: malformed bytes.
    """
    raw = bytes(data) if isinstance(data, memoryview) else data
    r = _Reader(raw, pos, len(raw) if end is None else end)
    return r.struct(0, until), r.pos


# ---------------------------------------------------------------------------------------------
# encoding

_T = TypeVar("_T")


def _varint(n: int, out: bytearray) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _int(ctype: int, v: Value) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{CType(ctype).name} value {v!r}")
    bound = _BOUNDS[ctype]
    if not -bound <= v < bound:
        raise ValueError(f"{CType(ctype).name} value {v} out of range")
    return v


def _typed(v: Value, kind: type[_T]) -> _T:
    if not isinstance(v, kind):
        raise TypeError(f"expected {kind.__name__}, got {v!r}")
    return v


def _encode_value(ctype: int, v: Value, out: bytearray) -> None:
    if ctype in (_I32, _I64, _I16):
        n = _int(ctype, v)
        _varint((n << 1) ^ (n >> 63) if n < 0 else n << 1, out)
    elif ctype == _BIN:
        b = _typed(v, bytes)
        _varint(len(b), out)
        out += b
    elif ctype == _STRUCT:
        _encode_struct(_typed(v, TStruct), out)
    elif ctype in (_TRUE, _FALSE):
        out.append(_TRUE if _typed(v, bool) else _FALSE)
    elif ctype == _BYTE:
        out.append(_int(ctype, v) & 0xFF)
    elif ctype == _DBL:
        out += _DOUBLE.pack(_typed(v, float))
    elif ctype in (_LIST, _SET):
        lst = _typed(v, TList)
        n = len(lst.items)
        if n < 15:
            out.append((n << 4) | lst.elem_type)
        else:
            out.append(0xF0 | lst.elem_type)
            _varint(n, out)
        for item in lst.items:
            _encode_value(lst.elem_type, item, out)
    elif ctype == _MAP:
        m = _typed(v, TMap)
        _varint(len(m.items), out)
        if m.items:
            out.append((m.key_type << 4) | m.value_type)
            for k, x in m.items:
                _encode_value(m.key_type, k, out)
                _encode_value(m.value_type, x, out)
    else:
        raise TypeError(f"unknown compact type {ctype}")


def _encode_struct(s: TStruct, out: bytearray) -> None:
    last = 0
    for f in s.fields:
        ctype = f.type
        if ctype in (_TRUE, _FALSE):
            ctype = _TRUE if _typed(f.value, bool) else _FALSE
        delta = f.id - last
        if 0 < delta <= 15:
            out.append((delta << 4) | ctype)
        else:
            out.append(ctype)
            n = f.id
            _varint((n << 1) ^ (n >> 63) if n < 0 else n << 1, out)
        if ctype != _TRUE and ctype != _FALSE:
            _encode_value(ctype, f.value, out)
        last = f.id
    if s.rest is None:
        out.append(_STOP)
    else:
        out += s.rest


def encode_struct(s: TStruct) -> bytes:
    """The compact-protocol bytes of ``s`` (fields in their list order, then its undecoded
    rest, if any).

    Raises:
        TypeError / ValueError: a value that does not fit its field's type.
    """
    out = bytearray()
    _encode_struct(s, out)
    return bytes(out)
