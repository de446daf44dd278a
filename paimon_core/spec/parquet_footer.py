"""The Parquet footer (``FileMetaData``) as a Thrift struct, and the one change we make to it.

A Parquet file ends with ``<FileMetaData, compact Thrift><4-byte little-endian length>PAR1``;
the column chunks it points to all lie before it, so the footer can be replaced without
touching a data page.

Why we replace it: Paimon Java 0.9 stores TIMESTAMP/LTZ of precision <= 3 as INT64 annotated
TIMESTAMP(MILLIS), 4..6 as INT64 TIMESTAMP(MICROS) and >= 7 as un-annotated INT96
(``ParquetSchemaConverter.createTimestampWithLogicalType``), and reads each precision only
from that physical type. pyarrow writes INT96 for every timestamp of a file or for none
(``use_deprecated_int96_timestamps``), so a file holding both kinds is written with INT96 on
and its precision <= 6 leaves as plain INT64 values; :func:`annotate_timestamps` then gives
those leaves the annotation Java writes (``converted_type`` TIMESTAMP_MILLIS/MICROS and
``logicalType`` TIMESTAMP(isAdjustedToUTC, unit); byte for byte what pyarrow itself writes for a
timestamp column). The INT64 pages and statistics are already those of the timestamp column
(same values, same signed order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec.thrift_compact import (
    CType,
    TField,
    ThriftDecodeError,
    TStruct,
    decode_struct,
    encode_struct,
)

__all__ = [
    "MAGIC",
    "TAIL_SIZE",
    "TimestampAnnotation",
    "annotate_timestamps",
    "decode_file_metadata",
    "encode_footer",
    "footer_start",
    "schema_leaves",
]

MAGIC = b"PAR1"
TAIL_SIZE = 8  # 4-byte footer length + magic


class PhysicalType(IntEnum):
    """``parquet.thrift`` ``Type``."""

    BOOLEAN = 0
    INT32 = 1
    INT64 = 2
    INT96 = 3
    FLOAT = 4
    DOUBLE = 5
    BYTE_ARRAY = 6
    FIXED_LEN_BYTE_ARRAY = 7


# FileMetaData / SchemaElement / KeyValue field ids and codes of parquet.thrift
_FMD_SCHEMA = 2
_SE_TYPE = 1
_SE_NAME = 4
_SE_NUM_CHILDREN = 5
_SE_CONVERTED = 6
_SE_LOGICAL = 10
_LT_TIMESTAMP = 8
_CONVERTED = {"ms": 9, "us": 10}  # ConvertedType TIMESTAMP_MILLIS / TIMESTAMP_MICROS
_TIME_UNIT = {"ms": 1, "us": 2}  # TimeUnit union: MILLIS / MICROS


@dataclass(frozen=True, slots=True)
class TimestampAnnotation:
    """The TIMESTAMP annotation of an INT64 leaf: its unit and ``isAdjustedToUTC`` (true for
    TIMESTAMP WITH LOCAL TIME ZONE, false for TIMESTAMP)."""

    unit: Literal["ms", "us"]
    adjusted_to_utc: bool

    def logical_type(self) -> TStruct:
        unit = TStruct([TField(_TIME_UNIT[self.unit], CType.STRUCT, TStruct())])
        ts = TStruct([TField(1, CType.BOOL_TRUE, self.adjusted_to_utc),
                      TField(2, CType.STRUCT, unit)])
        return TStruct([TField(_LT_TIMESTAMP, CType.STRUCT, ts)])


def footer_start(tail: bytes, file_size: int, path: str) -> int:
    """Where the FileMetaData of a file of ``file_size`` bytes starts, from its last
    :data:`TAIL_SIZE` bytes.

    Raises:
        CorruptMetadataError: no ``PAR1`` magic, or a length that does not fit the file.
    """
    if len(tail) != TAIL_SIZE or tail[4:] != MAGIC:
        raise CorruptMetadataError(path, "not a Parquet file (no PAR1 magic at its end)")
    length = int.from_bytes(tail[:4], "little")
    start = file_size - TAIL_SIZE - length
    if length == 0 or start < len(MAGIC):
        raise CorruptMetadataError(path, f"Parquet footer length {length} does not fit a file "
                                         f"of {file_size} bytes")
    return start


def decode_file_metadata(footer: bytes | memoryview, path: str, *,
                         schema_only: bool = False) -> TStruct:
    """The FileMetaData struct of ``footer`` (exactly the footer's bytes); with
    ``schema_only`` decoded up to its schema, the row groups and everything after them kept
    as raw bytes (encoding copies them back).

    Raises:
        CorruptMetadataError: not one well-formed Thrift struct filling ``footer``, or no
            schema list.
    """
    try:
        meta, end = decode_struct(footer, until=_FMD_SCHEMA if schema_only else None)
    except ThriftDecodeError as e:
        raise CorruptMetadataError(path, f"undecodable Parquet footer: {e}") from e
    if end != len(footer):
        raise CorruptMetadataError(
            path, f"Parquet footer ends at byte {end} of {len(footer)}")
    schema = meta.list_at(_FMD_SCHEMA)
    if schema is None or not schema.items or not all(
            isinstance(x, TStruct) for x in schema.items):
        raise CorruptMetadataError(path, "Parquet footer has no schema")
    if schema_only and meta.rest is None:
        raise CorruptMetadataError(path, "Parquet footer ends with its schema")
    return meta


def encode_footer(meta: TStruct) -> bytes:
    """The bytes that end a Parquet file: FileMetaData, its length, ``PAR1``."""
    body = encode_struct(meta)
    return body + len(body).to_bytes(4, "little") + MAGIC


def schema_leaves(meta: TStruct, path: str) -> dict[tuple[str, ...], TStruct]:
    """The primitive SchemaElements of a FileMetaData by their column path (names from the
    root's child down, e.g. ``("arr", "list", "element")``).

    Raises:
        CorruptMetadataError: a schema tree whose child counts do not add up.
    """
    schema = meta.list_at(_FMD_SCHEMA)
    assert schema is not None
    elements = [e for e in schema.items if isinstance(e, TStruct)]
    out: dict[tuple[str, ...], TStruct] = {}
    pos = 1

    def visit(prefix: tuple[str, ...], children: int) -> None:
        nonlocal pos
        for _ in range(children):
            if pos >= len(elements):
                raise CorruptMetadataError(path, "Parquet schema is shorter than its child "
                                                 "counts say")
            e = elements[pos]
            pos += 1
            name = e.value(_SE_NAME)
            if not isinstance(name, bytes):
                raise CorruptMetadataError(path, "Parquet schema element without a name")
            here = (*prefix, name.decode("utf-8", "replace"))
            n = e.value(_SE_NUM_CHILDREN)
            if isinstance(n, int) and n > 0:
                visit(here, n)
            else:
                out[here] = e

    root_children = elements[0].value(_SE_NUM_CHILDREN)
    visit((), root_children if isinstance(root_children, int) else 0)
    if pos != len(elements):
        raise CorruptMetadataError(path, f"Parquet schema has {len(elements) - pos} elements "
                                         "outside its tree")
    return out


def annotate_timestamps(
    meta: TStruct, leaves: Mapping[tuple[str, ...], TimestampAnnotation], path: str
) -> None:
    """Give each INT64 leaf of ``leaves`` its TIMESTAMP annotation (in place). The file should
    carry no ``ARROW:schema`` (pyarrow's ``store_schema=False``): it would still call these
    leaves int64.

    Raises:
        CorruptMetadataError: a leaf that is missing, not INT64, or already annotated.
    """
    found = schema_leaves(meta, path)
    for leaf, ann in leaves.items():
        e = found.get(leaf)
        where = ".".join(leaf)
        if e is None:
            raise CorruptMetadataError(path, f"Parquet schema has no leaf {where!r}")
        if e.value(_SE_TYPE) != PhysicalType.INT64:
            raise CorruptMetadataError(path, f"Parquet leaf {where!r} is not INT64")
        if e.get(_SE_CONVERTED) is not None or e.get(_SE_LOGICAL) is not None:
            raise CorruptMetadataError(path, f"Parquet leaf {where!r} is already annotated")
        e.put(_SE_CONVERTED, CType.I32, _CONVERTED[ann.unit])
        e.put(_SE_LOGICAL, CType.STRUCT, ann.logical_type())
