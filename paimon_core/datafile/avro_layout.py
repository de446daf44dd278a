"""Paimon's Avro layout as Java 0.9 writes it (``AvroFileFormat``, ``AvroSchemaConverter``,
``FieldWriterFactory``): the Avro schema of a data file and the writer settings.

Schema (``AvroSchemaConverter.convertToSchema``): the file is a record named
``org.apache.paimon.avro.generated.record`` (namespace ``org.apache.paimon.avro.generated``),
a nested ROW the record ``<parent name>_<field>``; a nullable type is the union
``["null", T]`` and its record field defaults to null. BOOLEAN boolean; TINYINT, SMALLINT, INT
int; BIGINT long; FLOAT float; DOUBLE double; CHAR/VARCHAR string; BINARY/VARBINARY bytes;
DECIMAL(p, s) bytes with the ``decimal`` logical type (the unscaled value's minimal
two's-complement bytes, ``BigInteger.toByteArray``); DATE int/``date``; TIME(p <= 3)
int/``time-millis``; TIMESTAMP(p) long with ``timestamp-millis`` (p <= 3) or
``timestamp-micros`` (p <= 6); TIMESTAMP_LTZ(p) the same with ``local-timestamp-*``; ARRAY
array; MAP with a CHAR/VARCHAR key the Avro map, any other key an array of records ``{key,
value}`` named as the column with the ``map`` logical type; MULTISET the same with a
nullable int value. Java refuses TIME above precision 3 and timestamps above 6, and so do we.

Codec (``AvroFileFormat.createCodecFactory``): ``avro.codec`` if set (Avro's names: null,
deflate, snappy, bzip2, xz, zstandard), else ``zstandard`` at ``file.compression.zstd-level``
when ``file.compression`` is zstd (Java 0.9's default), else ``snappy`` for any other
``file.compression``. Java 0.9's bundle reads neither snappy nor xz (measured: it lacks both
codecs, and its writer fails alike), so a table that asks for either is refused by name.
``avro.row-name-mapping`` (``old:new,...``) renames records as Java does. Any other ``avro.*``
option is refused by name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.option_validation import refuse_unapplied_format_options
from paimon_core.options import CoreOptions
from paimon_core.types import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    RowType,
    TypeRoot,
    int_type,
    to_arrow_type,
)

__all__ = ["AvroLayout", "AvroOptions", "avro_schema", "is_array_map"]

TOP_RECORD = "org.apache.paimon.avro.generated.record"
_CODEC = "avro.codec"
_ROW_NAME_MAPPING = "avro.row-name-mapping"
KNOWN_OPTIONS = frozenset({_CODEC, _ROW_NAME_MAPPING})
#: Avro's codec names (``CodecFactory.fromString``)
CODECS = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Avro's defaults (``CodecFactory``): deflate -1 (zlib's 6), xz 6, zstandard 3
_DEFAULT_LEVEL = {"deflate": 6, "xz": 6, "zstandard": 3}


@dataclass(frozen=True, slots=True)
class AvroOptions:
    """Avro writer settings derived from the table's options (module docstring)."""

    codec: str = "zstandard"
    level: int = 1
    row_name_mapping: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, opts: CoreOptions) -> AvroOptions:
        """The settings of ``opts`` (a table's options).

        Raises:
            UnsupportedError: an ``avro.*`` option this writer does not apply.
            SchemaError: an unknown codec or a malformed row name mapping.
        """
        refuse_unapplied_format_options(opts, "avro.", KNOWN_OPTIONS, "Avro")
        mapping = _mapping(opts.raw.get(_ROW_NAME_MAPPING) or "")
        if _CODEC in opts.raw:
            codec = (opts.raw[_CODEC] or "").strip().lower()
            if codec not in CODECS:
                raise SchemaError(f"option {_CODEC}={opts.raw[_CODEC]!r} is not an Avro codec "
                                  f"(one of {', '.join(CODECS)})")
            _check_readable(codec, f"{_CODEC}={opts.raw[_CODEC]!r}")
            return cls(codec, _DEFAULT_LEVEL.get(codec, 0), mapping)
        if opts.file_compression == "zstd":
            return cls("zstandard", opts.file_compression_zstd_level, mapping)
        _check_readable("snappy", f"{CoreOptions.FILE_COMPRESSION}={opts.file_compression!r} "
                                  "(Java 0.9 writes Avro in snappy for any file.compression "
                                  "but zstd)")
        return cls("snappy", 0, mapping)


# codecs Paimon Java 0.9's bundle cannot read (measured with the oracle): its shaded Avro
# registers no snappy codec ("Unrecognized codec: snappy"), and it has no xz library
# (NoClassDefFoundError: org/tukaani/xz/XZInputStream); its own writer fails alike
_JAVA_UNREADABLE = ("snappy", "xz")


def _check_readable(codec: str, why: str) -> None:
    if codec in _JAVA_UNREADABLE:
        raise UnsupportedError(
            f"option {why}: Avro codec {codec!r} is not readable by Paimon Java 0.9 (its "
            "bundled Avro lacks it, and its writer fails the same way); set avro.codec to "
            f"{', '.join(c for c in CODECS if c not in _JAVA_UNREADABLE)}, or "
            "file.compression=zstd")


def _mapping(raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        old, sep, new = entry.partition(":")
        if not sep or not old.strip() or not new.strip():
            raise SchemaError(f"option {_ROW_NAME_MAPPING}={raw!r}: entry {entry!r} is not "
                              "<record name>:<new name>")
        out[old.strip()] = new.strip()
    return out


def is_array_map(t: MapType | MultisetType) -> bool:
    """Whether a MAP/MULTISET is written as an array of key/value records (its key is not
    CHAR/VARCHAR: Avro maps have string keys only)."""
    key = t.key if isinstance(t, MapType) else t.element
    return not (isinstance(key, AtomicType) and key.root in (TypeRoot.CHAR, TypeRoot.VARCHAR))


def _check_name(name: str, what: str) -> None:
    for part in name.split("."):
        if not _AVRO_NAME.fullmatch(part):
            raise UnsupportedError(
                f"{what} {name!r} is not a valid Avro name ([A-Za-z_][A-Za-z0-9_]*), so "
                "Java's Avro writer refuses it too; use another file.format")


def avro_schema(t: DataType, row_name: str, mapping: dict[str, str], column: str) -> Any:
    """The Avro schema (JSON form) Java's ``convertToSchema(t, row_name)`` gives.

    Raises:
        UnsupportedError: a type Java's Avro writer refuses (``column`` is named).
    """
    row_name = mapping.get(row_name, row_name)
    schema = _non_null_schema(t, row_name, mapping, column)
    return ["null", schema] if t.nullable else schema


def _non_null_schema(t: DataType, row_name: str, mapping: dict[str, str], column: str) -> Any:
    if isinstance(t, RowType):
        _check_name(row_name, f"column {column!r}: record name")
        fields = []
        for f in t.fields:
            path = f"{column}.{f.name}" if column else f.name
            _check_name(f.name, f"column {path!r}: name")
            entry: dict[str, Any] = {
                "name": f.name,
                "type": avro_schema(f.type, f"{row_name}_{f.name}", mapping, path)}
            if f.type.nullable:
                entry["default"] = None
            fields.append(entry)
        return {"type": "record", "name": row_name, "fields": fields}
    if isinstance(t, ArrayType):
        return {"type": "array", "items": avro_schema(t.element, row_name, mapping, column)}
    if isinstance(t, (MapType, MultisetType)):
        key = t.key if isinstance(t, MapType) else t.element
        value = t.value if isinstance(t, MapType) else int_type(True)
        if not is_array_map(t):
            return {"type": "map", "values": avro_schema(value, row_name, mapping, column)}
        _check_name(row_name, f"column {column!r}: record name")
        value_field: dict[str, Any] = {
            "name": "value", "type": avro_schema(value, f"{row_name}_value", mapping, column)}
        if value.nullable:
            value_field["default"] = None
        entry_record = {"type": "record", "name": row_name, "fields": [
            {"name": "key", "type": avro_schema(key, f"{row_name}_key", mapping, column)},
            value_field]}
        return {"type": "array", "items": entry_record, "logicalType": "map"}
    assert isinstance(t, AtomicType)
    return _atomic_schema(t, column)


_PLAIN = {
    TypeRoot.BOOLEAN: "boolean", TypeRoot.TINYINT: "int", TypeRoot.SMALLINT: "int",
    TypeRoot.INT: "int", TypeRoot.BIGINT: "long", TypeRoot.FLOAT: "float",
    TypeRoot.DOUBLE: "double", TypeRoot.CHAR: "string", TypeRoot.VARCHAR: "string",
    TypeRoot.BINARY: "bytes", TypeRoot.VARBINARY: "bytes",
}


def _atomic_schema(t: AtomicType, column: str) -> Any:
    r = t.root
    if r in _PLAIN:
        return _PLAIN[r]
    if r is TypeRoot.DECIMAL:
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision,
                "scale": t.scale}
    if r is TypeRoot.DATE:
        return {"type": "int", "logicalType": "date"}
    p = t.precision or 0
    if r is TypeRoot.TIME:
        if p > 3:
            raise UnsupportedError(f"column {column!r}: {t} has no Avro type (Java writes TIME "
                                   "up to precision 3 in Avro); use another file.format")
        return {"type": "int", "logicalType": "time-millis"}
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        if p > 6:
            raise UnsupportedError(f"column {column!r}: {t} has no Avro type (Java writes "
                                   "timestamps up to precision 6 in Avro); use another "
                                   "file.format")
        local = "local-" if r is TypeRoot.TIMESTAMP_LTZ else ""
        unit = "millis" if p <= 3 else "micros"
        return {"type": "long", "logicalType": f"{local}timestamp-{unit}"}
    raise UnsupportedError(f"column {column!r}: {t} has no Avro type")  # pragma: no cover


@dataclass(frozen=True)
class AvroLayout:
    """How a file of Paimon ``(name, type, nullable)`` columns is written in Avro: the Arrow
    schema of the arrays handed to the encoder (:func:`to_arrow_type`), the Avro schema and
    the Paimon types (no footer rewriting: ``leaves`` is empty)."""

    schema: pa.Schema
    avro: dict[str, Any]
    types: tuple[DataType, ...]
    leaves: dict[tuple[str, ...], object]

    @classmethod
    def of(cls, columns: Sequence[tuple[str, DataType, bool]],
           options: AvroOptions) -> AvroLayout:
        """Raises:
            UnsupportedError: a column Java's Avro writer refuses (named)."""
        types = tuple(t.with_nullable(nullable) for _, t, nullable in columns)
        row = RowType(nullable=False, fields=tuple(
            DataField(i, name, t) for i, ((name, _, _), t) in enumerate(zip(columns, types))))
        avro = avro_schema(row, TOP_RECORD, options.row_name_mapping, "")
        return cls(pa.schema([pa.field(n, to_arrow_type(t), t.nullable)
                              for (n, _, _), t in zip(columns, types)]), avro, types, {})

    def physical(self, table: pa.Table) -> pa.Table:
        """``table`` (columns in layout order) with the layout's Arrow types."""
        if table.schema.equals(self.schema, check_metadata=False):
            return table
        arrays = [col if col.type == f.type else col.cast(f.type)
                  for col, f in zip(table.columns, self.schema)]
        return pa.Table.from_arrays(arrays, schema=self.schema)

