"""Paimon's Parquet layout as Java 0.9 writes and reads it (``ParquetSchemaConverter``,
``ParquetRowDataWriter``, ``ParquetSplitReaderUtil``), and how pyarrow is made to produce it.

* TIMESTAMP / TIMESTAMP_LTZ: precision <= 3 is INT64 annotated TIMESTAMP(MILLIS), 4..6 INT64
  TIMESTAMP(MICROS), >= 7 un-annotated INT96 (Julian day + nanos of day); ``isAdjustedToUTC``
  is true for LTZ. Java picks the reader by the *Paimon* precision and checks the physical
  type (INT96 for > 6, INT64 otherwise), per leaf, nested leaves included.
  pyarrow writes INT96 for all timestamps of a file or none. A file without precision >= 7
  leaves is written plainly; a file with them is written with INT96 on, its precision <= 6
  leaves handed over as plain int64 (epoch millis / micros), and its footer then annotates
  those leaves (:func:`~paimon_core.spec.parquet_footer.annotate_timestamps`; only the schema
  in the footer at the end of the file changes, never a data page). This way round, the INT96
  pages are pyarrow's own (Julian day by floor division, nanos of day in [0, 1 day): Java 0.9
  decodes them right, before 1970 too) and the INT64 pages and statistics are exactly those of
  a timestamp column (same values, same signed order); un-annotated INT64 leaves would read as
  bigint in pyarrow-based readers (pypaimon), and FIXED_LEN_BYTE_ARRAY(12) leaves retyped to
  INT96 would need our own INT96 encoder and their statistics removed.
* DECIMAL p <= 9 as INT32, p <= 18 as INT64 (Java 0.9 cannot read dictionary-encoded
  FIXED_LEN_BYTE_ARRAY decimals of precision <= 18), larger as FIXED_LEN_BYTE_ARRAY;
* TIME as INT32 millis, DATE INT32, TINYINT/SMALLINT INT32 with INT(8)/INT(16) annotations;
* compression ``file.compression`` (zstd) at ``file.compression.zstd-level`` (1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

from paimon_core.errors import UnsupportedError
from paimon_core.options import CoreOptions
from paimon_core.spec.parquet_footer import (
    TAIL_SIZE,
    TimestampAnnotation,
    annotate_timestamps,
    decode_file_metadata,
    encode_footer,
    footer_start,
)
from paimon_core.spec.schema import TableSchema
from paimon_core.types import (
    ArrayType,
    AtomicType,
    DataType,
    MapType,
    MultisetType,
    RowType,
    TypeRoot,
    to_arrow_type,
)

__all__ = [
    "FileLayout",
    "Leaves",
    "ParquetOptions",
    "annotate_buffer",
    "annotate_file",
    "int64_timestamp_leaves",
    "physical_arrow_type",
]

Leaves = Mapping[tuple[str, ...], TimestampAnnotation]

_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "brotli": "brotli",
    "none": "none",
    "uncompressed": "none",
}
# parquet names of nested levels (pyarrow's compliant nested types = Java's ConversionPatterns)
_LIST = ("list", "element")
_MAP_KEY = ("key_value", "key")
_MAP_VALUE = ("key_value", "value")


@dataclass(frozen=True, slots=True)
class ParquetOptions:
    """Parquet writer settings derived from the table: codec, level, and whether its files
    hold INT96 (TIMESTAMP precision >= 7) leaves."""

    compression: str = "zstd"
    compression_level: int | None = 1
    int96_timestamps: bool = False

    @classmethod
    def of(cls, schema: TableSchema, opts: CoreOptions) -> ParquetOptions:
        """Validate the table's format options ``opts`` (parsed by the caller).

        Raises:
            UnsupportedError: a format other than parquet or an unknown codec.
        """
        if schema.file_format != "parquet":
            raise UnsupportedError(
                f"file.format={schema.file_format!r}: not a parquet table"
            )
        raw = opts.file_compression
        codec = _CODECS.get(raw)
        if codec is None:
            raise UnsupportedError(f"file.compression={raw!r} is not supported for parquet")
        level: int | None = None
        if codec == "zstd":
            level = opts.file_compression_zstd_level
        nanos = any(p >= 7 for f in schema.fields for p in _timestamp_precisions(f.type))
        return cls(codec, level, nanos)


@dataclass(frozen=True)
class FileLayout:
    """How a file of Paimon ``(name, type, nullable)`` columns is handed to pyarrow: its Arrow
    schema, whether INT96 is on, and the INT64 leaves whose footer entries then get their
    TIMESTAMP annotation (:func:`annotate_buffer`, :func:`annotate_file`)."""

    columns: tuple[tuple[str, DataType, bool], ...]
    int96: bool
    schema: pa.Schema
    leaves: Leaves

    @classmethod
    def of(cls, columns: Sequence[tuple[str, DataType, bool]], int96: bool) -> FileLayout:
        arrow = pa.schema([pa.field(n, physical_arrow_type(t, int96), nullable)
                           for n, t, nullable in columns])
        leaves: dict[tuple[str, ...], TimestampAnnotation] = {}
        if int96:
            for n, t, _ in columns:
                leaves.update(int64_timestamp_leaves((n,), t))
        return cls(tuple(columns), int96, arrow, leaves)

    def physical(self, table: pa.Table) -> pa.Table:
        """``table`` (columns in layout order, Arrow types of :func:`to_arrow_type`) as the
        arrays handed to pyarrow: TIMESTAMP(0) seconds become millis (exact), and in an INT96
        file TIMESTAMP(<= 6) leaves then become their int64 epoch values (nested ones too)."""
        target = self.schema
        if table.schema.equals(target, check_metadata=False):
            return table
        arrays = []
        for col, f, (_, t, _) in zip(table.columns, target, self.columns):
            if col.type != f.type:
                timestamps = physical_arrow_type(t)
                if col.type != timestamps:
                    col = col.cast(timestamps)
                if col.type != f.type:
                    col = col.cast(f.type)
            arrays.append(col)
        return pa.Table.from_arrays(arrays, schema=target)

    def writer_options(self) -> dict[str, object]:
        """The pyarrow ``write_table`` options this layout needs."""
        if not self.int96:
            return {"use_deprecated_int96_timestamps": False}
        # no ARROW:schema when leaves get annotated: it would call them int64
        return {"use_deprecated_int96_timestamps": True, "store_schema": not self.leaves}


def _timestamp_precisions(t: DataType) -> list[int]:
    if isinstance(t, AtomicType):
        if t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
            return [t.precision if t.precision is not None else 6]
        return []
    if isinstance(t, (ArrayType, MultisetType)):
        return _timestamp_precisions(t.element)
    if isinstance(t, MapType):
        return _timestamp_precisions(t.key) + _timestamp_precisions(t.value)
    return [p for f in t.fields for p in _timestamp_precisions(f.type)]


def _is_int64_timestamp(t: DataType) -> bool:
    return (isinstance(t, AtomicType) and t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ)
            and (t.precision if t.precision is not None else 6) <= 6)


def physical_arrow_type(t: DataType, int96: bool = False) -> pa.DataType:
    """The Arrow type handed to the Parquet writer: :func:`to_arrow_type` except that
    TIMESTAMP(0) is written in milliseconds (Parquet has no seconds) and, in a file written
    with INT96 on (``int96``), TIMESTAMP precision <= 6 is plain int64 (epoch millis for
    precision <= 3, micros for 4..6)."""
    if isinstance(t, AtomicType):
        if t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
            if int96 and _is_int64_timestamp(t):
                return pa.int64()
            if (t.precision or 0) == 0:
                return pa.timestamp("ms", tz="UTC" if t.root is TypeRoot.TIMESTAMP_LTZ else None)
        return to_arrow_type(t)
    if isinstance(t, ArrayType):
        return pa.list_(pa.field("element", physical_arrow_type(t.element, int96),
                                 t.element.nullable))
    if isinstance(t, MapType):
        return pa.map_(
            pa.field("key", physical_arrow_type(t.key, int96), False),
            pa.field("value", physical_arrow_type(t.value, int96), t.value.nullable),
        )
    if isinstance(t, MultisetType):
        return pa.map_(
            pa.field("key", physical_arrow_type(t.element, int96), False),
            pa.field("value", pa.int32(), False),
        )
    assert isinstance(t, RowType)
    return pa.struct([pa.field(f.name, physical_arrow_type(f.type, int96), f.type.nullable)
                      for f in t.fields])


def int64_timestamp_leaves(path: tuple[str, ...], t: DataType) -> Leaves:
    """The TIMESTAMP precision <= 6 leaves of a column of type ``t`` at ``path``, by their
    Parquet column path, with the annotation Java writes for them."""
    if isinstance(t, AtomicType):
        if not _is_int64_timestamp(t):
            return {}
        unit: Literal["ms", "us"] = "ms" if (t.precision or 0) <= 3 else "us"
        return {path: TimestampAnnotation(unit, t.root is TypeRoot.TIMESTAMP_LTZ)}
    out: dict[tuple[str, ...], TimestampAnnotation] = {}
    if isinstance(t, ArrayType):
        out.update(int64_timestamp_leaves((*path, *_LIST), t.element))
    elif isinstance(t, MapType):
        out.update(int64_timestamp_leaves((*path, *_MAP_KEY), t.key))
        out.update(int64_timestamp_leaves((*path, *_MAP_VALUE), t.value))
    elif isinstance(t, MultisetType):
        out.update(int64_timestamp_leaves((*path, *_MAP_KEY), t.element))
    else:
        assert isinstance(t, RowType)
        for f in t.fields:
            out.update(int64_timestamp_leaves((*path, f.name), f.type))
    return out


def annotate_buffer(data: memoryview, leaves: Leaves, path: str) -> tuple[memoryview, bytes]:
    """A Parquet file encoded in memory with its footer annotated: the unchanged head (a view
    of ``data``) and the new footer (what follows it in the file).

    Raises:
        CorruptMetadataError: not a Parquet file, or a leaf that is not there as plain INT64.
    """
    start = footer_start(bytes(data[-TAIL_SIZE:]), len(data), path)
    meta = decode_file_metadata(data[start:len(data) - TAIL_SIZE], path, schema_only=True)
    annotate_timestamps(meta, leaves, path)
    return data[:start], encode_footer(meta)


def annotate_file(local: str, leaves: Leaves, path: str) -> int:
    """Annotate the footer of the local Parquet file ``local`` in place (its head is not
    rewritten: the file is truncated where its footer starts and the new one appended);
    returns the new file size.

    Raises:
        CorruptMetadataError: as :func:`annotate_buffer`.
        OSError: reading or writing the file failed.
    """
    with open(local, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - TAIL_SIZE))
        start = footer_start(f.read(TAIL_SIZE), size, path)
        f.seek(start)
        meta = decode_file_metadata(f.read(size - TAIL_SIZE - start), path, schema_only=True)
        annotate_timestamps(meta, leaves, path)
        footer = encode_footer(meta)
        f.seek(start)
        f.write(footer)
        f.truncate()
        return start + len(footer)
