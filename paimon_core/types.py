"""Paimon data types: the model, their JSON form, SQL spellings and the Arrow mapping.

Mirrors ``org.apache.paimon.types.*`` and ``DataTypeJsonParser``. Atomic types serialise to the
exact strings Java writes (``DECIMAL(10, 2)``, ``TIMESTAMP(6) WITH LOCAL TIME ZONE``, ``STRING``
for ``VARCHAR(2147483647)``, suffix `` NOT NULL``); nested types to JSON objects.

Example:
    >>> t = parse_type_json({"type": "ARRAY", "element": "INT NOT NULL"})
    >>> t.to_json()
    {'type': 'ARRAY', 'element': 'INT NOT NULL'}
    >>> parse_sql_type("DECIMAL(10,2)").to_json()
    'DECIMAL(10, 2)'
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from typing import Any, Union

import pyarrow as pa

from paimon_core.errors import SchemaError, did_you_mean

MAX_LENGTH = 2147483647


class TypeRoot(enum.Enum):
    BOOLEAN = "BOOLEAN"
    TINYINT = "TINYINT"
    SMALLINT = "SMALLINT"
    INT = "INT"
    BIGINT = "BIGINT"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    CHAR = "CHAR"
    VARCHAR = "VARCHAR"
    BINARY = "BINARY"
    VARBINARY = "VARBINARY"
    DATE = "DATE"
    TIME = "TIME"
    TIMESTAMP = "TIMESTAMP"
    TIMESTAMP_LTZ = "TIMESTAMP_LTZ"
    ARRAY = "ARRAY"
    MULTISET = "MULTISET"
    MAP = "MAP"
    ROW = "ROW"


INTEGER_ROOTS = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT})
#: (lowest, highest) value of each integer type
INT_RANGES: dict[TypeRoot, tuple[int, int]] = {
    TypeRoot.TINYINT: (-(2**7), 2**7 - 1),
    TypeRoot.SMALLINT: (-(2**15), 2**15 - 1),
    TypeRoot.INT: (-(2**31), 2**31 - 1),
    TypeRoot.BIGINT: (-(2**63), 2**63 - 1),
}
STRING_ROOTS = frozenset({TypeRoot.CHAR, TypeRoot.VARCHAR})
BINARY_ROOTS = frozenset({TypeRoot.BINARY, TypeRoot.VARBINARY})


@dataclass(frozen=True, slots=True)
class AtomicType:
    """A non-nested type. ``length`` for CHAR/VARCHAR/BINARY/VARBINARY, ``precision``/``scale``
    for DECIMAL, ``precision`` for TIME/TIMESTAMP/TIMESTAMP_LTZ."""

    root: TypeRoot
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None

    def with_nullable(self, nullable: bool) -> AtomicType:
        return replace(self, nullable=nullable)

    def sql(self) -> str:
        r = self.root
        if r is TypeRoot.DECIMAL:
            s = f"DECIMAL({self.precision}, {self.scale})"
        elif r is TypeRoot.VARCHAR and self.length == MAX_LENGTH:
            s = "STRING"
        elif r is TypeRoot.VARBINARY and self.length == MAX_LENGTH:
            s = "BYTES"
        elif r in STRING_ROOTS or r in BINARY_ROOTS:
            s = f"{r.value}({self.length})"
        elif r in (TypeRoot.TIME, TypeRoot.TIMESTAMP):
            s = f"{r.value}({self.precision})"
        elif r is TypeRoot.TIMESTAMP_LTZ:
            s = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        else:
            s = r.value
        return s if self.nullable else s + " NOT NULL"

    def to_json(self) -> Any:
        return self.sql()

    def __str__(self) -> str:
        return self.sql()


@dataclass(frozen=True, slots=True)
class ArrayType:
    element: DataType
    nullable: bool = True

    root = TypeRoot.ARRAY

    def with_nullable(self, nullable: bool) -> ArrayType:
        return replace(self, nullable=nullable)

    def to_json(self) -> Any:
        return {"type": _kind("ARRAY", self.nullable), "element": self.element.to_json()}

    def sql(self) -> str:
        return _nn(f"ARRAY<{self.element.sql()}>", self.nullable)


@dataclass(frozen=True, slots=True)
class MultisetType:
    element: DataType
    nullable: bool = True

    root = TypeRoot.MULTISET

    def with_nullable(self, nullable: bool) -> MultisetType:
        return replace(self, nullable=nullable)

    def to_json(self) -> Any:
        return {"type": _kind("MULTISET", self.nullable), "element": self.element.to_json()}

    def sql(self) -> str:
        return _nn(f"MULTISET<{self.element.sql()}>", self.nullable)


@dataclass(frozen=True, slots=True)
class MapType:
    key: DataType
    value: DataType
    nullable: bool = True

    root = TypeRoot.MAP

    def with_nullable(self, nullable: bool) -> MapType:
        return replace(self, nullable=nullable)

    def to_json(self) -> Any:
        return {
            "type": _kind("MAP", self.nullable),
            "key": self.key.to_json(),
            "value": self.value.to_json(),
        }

    def sql(self) -> str:
        return _nn(f"MAP<{self.key.sql()}, {self.value.sql()}>", self.nullable)


@dataclass(frozen=True, slots=True)
class DataField:
    """A named column with its field id (``org.apache.paimon.types.DataField``)."""

    id: int
    name: str
    type: DataType
    description: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            out["description"] = self.description
        return out


@dataclass(frozen=True, slots=True)
class RowType:
    fields: tuple[DataField, ...] = field(default_factory=tuple)
    nullable: bool = True

    root = TypeRoot.ROW

    def with_nullable(self, nullable: bool) -> RowType:
        return replace(self, nullable=nullable)

    def to_json(self) -> Any:
        return {"type": _kind("ROW", self.nullable), "fields": [f.to_json() for f in self.fields]}

    def sql(self) -> str:
        inner = ", ".join(f"{f.name} {f.type.sql()}" for f in self.fields)
        return _nn(f"ROW<{inner}>", self.nullable)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"no field {name!r} in {self.names}")


DataType = Union[AtomicType, ArrayType, MultisetType, MapType, RowType]  # noqa: UP007


def _kind(name: str, nullable: bool) -> str:
    return name if nullable else name + " NOT NULL"


def _nn(s: str, nullable: bool) -> str:
    return s if nullable else s + " NOT NULL"


# ---------------------------------------------------------------------------------------------
# constructors


def atomic(root: TypeRoot, nullable: bool = True, **params: int) -> AtomicType:
    return AtomicType(root, nullable, **params)


def string_type(nullable: bool = True) -> AtomicType:
    return AtomicType(TypeRoot.VARCHAR, nullable, length=MAX_LENGTH)


def bigint_type(nullable: bool = True) -> AtomicType:
    return AtomicType(TypeRoot.BIGINT, nullable)


def int_type(nullable: bool = True) -> AtomicType:
    return AtomicType(TypeRoot.INT, nullable)


def tinyint_type(nullable: bool = True) -> AtomicType:
    return AtomicType(TypeRoot.TINYINT, nullable)


# ---------------------------------------------------------------------------------------------
# parsing: the SQL spelling of a type (also the JSON form of atomic types)

_SIMPLE_ALIASES: dict[str, TypeRoot] = {
    "BOOLEAN": TypeRoot.BOOLEAN,
    "TINYINT": TypeRoot.TINYINT,
    "SMALLINT": TypeRoot.SMALLINT,
    "INT": TypeRoot.INT,
    "INTEGER": TypeRoot.INT,
    "BIGINT": TypeRoot.BIGINT,
    "FLOAT": TypeRoot.FLOAT,
    "DOUBLE": TypeRoot.DOUBLE,
    "DATE": TypeRoot.DATE,
}

#: every type name :func:`parse_sql_type` knows (for "did you mean")
_TYPE_WORDS = [*_SIMPLE_ALIASES, "DECIMAL", "NUMERIC", "DEC", "STRING", "BYTES", "CHAR",
               "VARCHAR", "BINARY", "VARBINARY", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "ARRAY",
               "MULTISET", "MAP", "ROW"]

_TOKEN = re.compile(r"\s*(<|>|\(|\)|,|`[^`]*`|'[^']*'|[A-Za-z_][A-Za-z0-9_$]*|\d+|\S)")


class _Tokens:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks: list[str] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                break
            if m.group(1):
                self.toks.append(m.group(1))
            pos = m.end()
            if text[pos:].strip() == "":
                break
        self.i = 0

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def peek_upper(self, k: int = 0) -> str | None:
        p = self.peek(k)
        return p.upper() if p is not None else None

    def take(self) -> str:
        t = self.peek()
        if t is None:
            raise SchemaError(f"unexpected end of type {self.text!r}")
        self.i += 1
        return t

    def expect(self, tok: str) -> None:
        t = self.take()
        if t.upper() != tok:
            raise SchemaError(f"expected {tok!r} but found {t!r} in type {self.text!r}")

    def int_arg(self) -> int:
        t = self.take()
        if not t.isdigit():
            raise SchemaError(f"expected a number but found {t!r} in type {self.text!r}")
        return int(t)


def parse_sql_type(text: str) -> DataType:
    """Parse a type from its SQL spelling (Paimon's JSON atomic form, plus ARRAY<..>, MAP<..>,
    MULTISET<..> and ROW<name type, ...> as the oracle's schema.json accepts).

    Nested ROW fields get id -1 here; :func:`assign_field_ids` numbers them.
    """
    if not isinstance(text, str) or not text.strip():
        raise SchemaError(f"empty or non-string type: {text!r}")
    toks = _Tokens(text)
    t = _parse(toks)
    if toks.peek() is not None:
        raise SchemaError(f"unexpected {toks.peek()!r} in type {text!r}")
    return t


def _nullability(toks: _Tokens) -> bool:
    if toks.peek_upper() == "NOT" and toks.peek_upper(1) == "NULL":
        toks.take()
        toks.take()
        return False
    if toks.peek_upper() == "NULL":
        toks.take()
    return True


def _opt_args(toks: _Tokens) -> list[int]:
    args: list[int] = []
    if toks.peek() == "(":
        toks.take()
        args.append(toks.int_arg())
        while toks.peek() == ",":
            toks.take()
            args.append(toks.int_arg())
        toks.expect(")")
    return args


def _parse(toks: _Tokens) -> DataType:
    word = toks.take().upper()
    if word in _SIMPLE_ALIASES:
        return AtomicType(_SIMPLE_ALIASES[word], _nullability(toks))
    if word == "DOUBLE" and toks.peek_upper() == "PRECISION":
        toks.take()
        return AtomicType(TypeRoot.DOUBLE, _nullability(toks))
    if word in ("DECIMAL", "NUMERIC", "DEC"):
        args = _opt_args(toks)
        p = args[0] if args else 10
        s = args[1] if len(args) > 1 else 0
        if not 1 <= p <= 38 or not 0 <= s <= p:
            raise SchemaError(f"invalid DECIMAL({p}, {s}) in {toks.text!r}")
        return AtomicType(TypeRoot.DECIMAL, _nullability(toks), precision=p, scale=s)
    if word in ("STRING",):
        return AtomicType(TypeRoot.VARCHAR, _nullability(toks), length=MAX_LENGTH)
    if word in ("BYTES",):
        return AtomicType(TypeRoot.VARBINARY, _nullability(toks), length=MAX_LENGTH)
    if word in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        args = _opt_args(toks)
        default = 1 if word in ("CHAR", "BINARY") else MAX_LENGTH
        n = args[0] if args else default
        if n < 1:
            raise SchemaError(f"invalid length {n} in {toks.text!r}")
        return AtomicType(TypeRoot[word], _nullability(toks), length=n)
    if word == "TIME":
        args = _opt_args(toks)
        p = args[0] if args else 0
        _check_precision(p, toks)
        if toks.peek_upper() == "WITHOUT":
            for w in ("WITHOUT", "TIME", "ZONE"):
                toks.expect(w)
        return AtomicType(TypeRoot.TIME, _nullability(toks), precision=p)
    if word in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        args = _opt_args(toks)
        p = args[0] if args else 6
        _check_precision(p, toks)
        root = TypeRoot.TIMESTAMP if word == "TIMESTAMP" else TypeRoot.TIMESTAMP_LTZ
        if toks.peek_upper() == "WITH":
            toks.take()
            if toks.peek_upper() == "LOCAL":
                toks.take()
            toks.expect("TIME")
            toks.expect("ZONE")
            root = TypeRoot.TIMESTAMP_LTZ
        elif toks.peek_upper() == "WITHOUT":
            for w in ("WITHOUT", "TIME", "ZONE"):
                toks.expect(w)
        return AtomicType(root, _nullability(toks), precision=p)
    if word in ("ARRAY", "MULTISET"):
        toks.expect("<")
        el = _parse(toks)
        toks.expect(">")
        n = _nullability(toks)
        return ArrayType(el, n) if word == "ARRAY" else MultisetType(el, n)
    if word == "MAP":
        toks.expect("<")
        k = _parse(toks)
        toks.expect(",")
        v = _parse(toks)
        toks.expect(">")
        return MapType(k, v, _nullability(toks))
    if word == "ROW":
        toks.expect("<")
        fields: list[DataField] = []
        while True:
            name = toks.take()
            if name.startswith("`"):
                name = name[1:-1]
            ft = _parse(toks)
            desc = None
            if toks.peek() is not None and toks.peek().startswith("'"):  # type: ignore[union-attr]
                desc = toks.take()[1:-1]
            fields.append(DataField(-1, name, ft, desc))
            if toks.peek() == ",":
                toks.take()
                continue
            break
        toks.expect(">")
        return RowType(tuple(fields), _nullability(toks))
    close = did_you_mean(word, _TYPE_WORDS)
    hint = f" (did you mean {close!r}?)" if close else ""
    within = f" in {toks.text!r}" if toks.text.strip().upper() != word else ""
    raise SchemaError(f"unknown type {word!r}{within}{hint}")


def _check_precision(p: int, toks: _Tokens) -> None:
    if not 0 <= p <= 9:
        raise SchemaError(f"invalid precision {p} in {toks.text!r}")


def parse_type_json(obj: Any) -> DataType:
    """Parse a type in Paimon's JSON form (``DataTypeJsonParser``)."""
    if isinstance(obj, str):
        return parse_sql_type(obj)
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise SchemaError(f"invalid type JSON: {obj!r}")
    kind_text: str = obj["type"]
    nullable = "NOT NULL" not in kind_text.upper()
    kind = kind_text.upper().replace("NOT NULL", "").strip()
    try:
        if kind == "ARRAY":
            return ArrayType(parse_type_json(obj["element"]), nullable)
        if kind == "MULTISET":
            return MultisetType(parse_type_json(obj["element"]), nullable)
        if kind == "MAP":
            return MapType(parse_type_json(obj["key"]), parse_type_json(obj["value"]), nullable)
        if kind == "ROW":
            return RowType(tuple(parse_field_json(f) for f in obj["fields"]), nullable)
    except KeyError as e:
        raise SchemaError(f"type JSON {obj!r} lacks key {e}") from e
    # an atomic type written as an object (not done by Java, tolerated)
    return parse_sql_type(kind_text)


def parse_field_json(obj: Any) -> DataField:
    if not isinstance(obj, dict):
        raise SchemaError(f"invalid field JSON: {obj!r}")
    try:
        fid = obj["id"]
        name = obj["name"]
        tj = obj["type"]
    except KeyError as e:
        raise SchemaError(f"field JSON {obj!r} lacks key {e}") from e
    if not isinstance(fid, int) or not isinstance(name, str):
        raise SchemaError(f"invalid field JSON: {obj!r}")
    desc = obj.get("description")
    return DataField(fid, name, parse_type_json(tj), desc if isinstance(desc, str) else None)


def reassign_field_ids(t: DataType, counter: list[int]) -> DataType:
    """Number the nested ROW fields inside ``t`` exactly like Java's ``ReassignFieldId``:
    ``RowType.Builder.field(name, type.accept(this))`` evaluates a field's type first, so the
    fields nested inside a nested field get their ids *before* it (``ROW<a INT, b ROW<c INT>>``
    after id 6: a=7, c=8, b=9). ``counter[0]`` is the last id used and is advanced."""
    if isinstance(t, RowType):
        out = []
        for f in t.fields:
            inner = reassign_field_ids(f.type, counter)
            counter[0] += 1
            out.append(DataField(counter[0], f.name, inner, f.description))
        return RowType(tuple(out), t.nullable)
    if isinstance(t, ArrayType):
        return ArrayType(reassign_field_ids(t.element, counter), t.nullable)
    if isinstance(t, MultisetType):
        return MultisetType(reassign_field_ids(t.element, counter), t.nullable)
    if isinstance(t, MapType):
        key = reassign_field_ids(t.key, counter)
        return MapType(key, reassign_field_ids(t.value, counter), t.nullable)
    return t


def assign_field_ids(fields: list[DataField], start: int = 0) -> tuple[list[DataField], int]:
    """Number fields like Java's ``Schema.Builder``: each top-level column takes the next id,
    then its nested ROW fields are numbered by :func:`reassign_field_ids`
    (``r ROW<x, y ROW<z>>`` -> r, x, z, y). Returns the fields and the highest id used
    (``start - 1`` when empty)."""
    counter = [start - 1]
    out = []
    for f in fields:
        counter[0] += 1
        fid = counter[0]
        out.append(DataField(fid, f.name, reassign_field_ids(f.type, counter), f.description))
    return out, counter[0]


def highest_field_id(fields: tuple[DataField, ...] | list[DataField]) -> int:
    best = -1

    def visit(t: DataType) -> None:
        nonlocal best
        if isinstance(t, RowType):
            for f in t.fields:
                best = max(best, f.id)
                visit(f.type)
        elif isinstance(t, (ArrayType, MultisetType)):
            visit(t.element)
        elif isinstance(t, MapType):
            visit(t.key)
            visit(t.value)

    for f in fields:
        best = max(best, f.id)
        visit(f.type)
    return best


# ---------------------------------------------------------------------------------------------
# Arrow mapping (org.apache.paimon.arrow.ArrowUtils)


def timestamp_unit(precision: int) -> str:
    if precision == 0:
        return "s"
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


def to_arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type our readers produce for a Paimon type."""
    if isinstance(t, ArrayType):
        return pa.list_(to_arrow_field("element", t.element))
    if isinstance(t, MultisetType):
        return pa.map_(
            to_arrow_field("key", t.element.with_nullable(False)),
            pa.field("value", pa.int32(), nullable=False),
        )
    if isinstance(t, MapType):
        return pa.map_(
            to_arrow_field("key", t.key.with_nullable(False)), to_arrow_field("value", t.value)
        )
    if isinstance(t, RowType):
        return pa.struct([to_arrow_field(f.name, f.type) for f in t.fields])
    r = t.root
    if r is TypeRoot.BOOLEAN:
        return pa.bool_()
    if r is TypeRoot.TINYINT:
        return pa.int8()
    if r is TypeRoot.SMALLINT:
        return pa.int16()
    if r is TypeRoot.INT:
        return pa.int32()
    if r is TypeRoot.BIGINT:
        return pa.int64()
    if r is TypeRoot.FLOAT:
        return pa.float32()
    if r is TypeRoot.DOUBLE:
        return pa.float64()
    if r is TypeRoot.DECIMAL:
        assert t.precision is not None and t.scale is not None
        return pa.decimal128(t.precision, t.scale)
    if r in STRING_ROOTS:
        return pa.string()
    if r in BINARY_ROOTS:
        return pa.binary()
    if r is TypeRoot.DATE:
        return pa.date32()
    if r is TypeRoot.TIME:
        return pa.time32("ms")
    if r is TypeRoot.TIMESTAMP:
        assert t.precision is not None
        return pa.timestamp(timestamp_unit(t.precision))
    if r is TypeRoot.TIMESTAMP_LTZ:
        assert t.precision is not None
        return pa.timestamp(timestamp_unit(t.precision), tz="UTC")
    raise SchemaError(f"no Arrow mapping for {t}")  # pragma: no cover


def to_arrow_field(name: str, t: DataType) -> pa.Field:
    return pa.field(name, to_arrow_type(t), nullable=t.nullable)


def to_arrow_schema(fields: tuple[DataField, ...] | list[DataField]) -> pa.Schema:
    return pa.schema([to_arrow_field(f.name, f.type) for f in fields])


def from_arrow_type(t: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type (for tables created from Arrow schemas)."""
    if pa.types.is_boolean(t):
        return AtomicType(TypeRoot.BOOLEAN, nullable)
    ints = {8: TypeRoot.TINYINT, 16: TypeRoot.SMALLINT, 32: TypeRoot.INT, 64: TypeRoot.BIGINT}
    if pa.types.is_signed_integer(t):
        return AtomicType(ints[t.bit_width], nullable)
    if pa.types.is_float32(t):
        return AtomicType(TypeRoot.FLOAT, nullable)
    if pa.types.is_float64(t):
        return AtomicType(TypeRoot.DOUBLE, nullable)
    if pa.types.is_decimal(t):
        return AtomicType(TypeRoot.DECIMAL, nullable, precision=t.precision, scale=t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return AtomicType(TypeRoot.VARCHAR, nullable, length=MAX_LENGTH)
    if pa.types.is_fixed_size_binary(t):
        return AtomicType(TypeRoot.BINARY, nullable, length=t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return AtomicType(TypeRoot.VARBINARY, nullable, length=MAX_LENGTH)
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return AtomicType(TypeRoot.DATE, nullable)
    if pa.types.is_time(t):
        return AtomicType(TypeRoot.TIME, nullable, precision=3 if t.unit != "s" else 0)
    if pa.types.is_timestamp(t):
        p = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        root = TypeRoot.TIMESTAMP if t.tz is None else TypeRoot.TIMESTAMP_LTZ
        return AtomicType(root, nullable, precision=p)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        vf = t.value_field
        return ArrayType(from_arrow_type(vf.type, vf.nullable), nullable)
    if pa.types.is_map(t):
        return MapType(from_arrow_type(t.key_type, False),
                       from_arrow_type(t.item_type, t.item_field.nullable), nullable)
    if pa.types.is_struct(t):
        return RowType(tuple(DataField(-1, f.name, from_arrow_type(f.type, f.nullable))
                             for f in t), nullable)
    raise SchemaError(f"no Paimon type for Arrow type {t}")
