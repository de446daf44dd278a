"""Paimon's ORC layout as Java 0.9 writes and reads it (``OrcFileFormat``,
``OrcSplitReaderUtil.toOrcType``, ``OrcWriterFactory``), and how pyarrow is made to produce it.

Types (``toOrcType``): BOOLEAN boolean, TINYINT byte, SMALLINT short, INT and TIME int (TIME
as millis of the day), BIGINT long, FLOAT float, DOUBLE double, DECIMAL(p, s) decimal(p, s),
DATE date, TIMESTAMP timestamp, TIMESTAMP_LTZ timestamp with local time zone (ORC's
``TIMESTAMP_INSTANT``), BINARY/VARBINARY binary, ARRAY list, MAP map, MULTISET map<element,
int>, ROW struct. CHAR/VARCHAR are written as ORC ``string`` (pyarrow's ORC writer has no
char/varchar; Java reads a string column as CHAR/VARCHAR through ORC's schema evolution).

Writer settings, named as Java names them (``OrcFileFormat.getOrcProperties``: every table
option ``orc.<key>`` goes to the ORC writer as ``orc.<key>``):

* codec: ``orc.compress`` if set, else ``file.compression`` (default zstd; Java
  ``CompressionKind.valueOf``: none, zlib, snappy, lz4, zstd — lzo is refused, pyarrow has
  none);
* zstd level: ``orc.compression.zstd.level``, else ``file.compression.zstd-level`` (1).
  pyarrow's ORC writer takes no level, only ORC's ``orc.compression.strategy``: level 1 picks
  ``speed``, higher levels ``compression``; ``orc.compression.strategy`` set explicitly wins;
* stripe size: ``file.block-size`` if set, else ``orc.stripe.size`` (64 MB);
* ``orc.write.format``: the file version, ``0.12`` (ORC's default, integer run-length
  encoding v2) or ``0.11`` (RLE v1, which Java's readers read alike: on the bench's W1 rows
  pyarrow writes it with about 40 % less CPU; the default stays Java's);
* ``orc.compress.size`` (compression chunk), ``orc.row.index.stride`` (10000),
  ``orc.dictionary.key.threshold``, ``orc.bloom.filter.columns`` / ``orc.bloom.filter.fpp``
  (0.01), ``orc.write.batch-size`` (Paimon's, 1024).

Two defaults differ from Java's (256 KB chunks, dictionary threshold 0.8), chosen by
measurement: 64 KB chunks and no dictionary encoding unless ``orc.dictionary.key.threshold``
asks for it. On the bench's rows a 5k-row file cost 3.4 ms CPU this way against 5.3 ms with
Java's two defaults (Parquet: 2.1 ms); zstd already folds the repeats a dictionary would.
Either way the files are what Java's readers read.

Any other ``orc.*`` option is refused by name when writing (it would otherwise be dropped).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.option_validation import refuse_unapplied_format_options
from paimon_core.options import CoreOptions
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

__all__ = ["OrcLayout", "OrcOptions", "check_timestamps", "orc_arrow_type"]

# Java CompressionKind names (file.compression / orc.compress) -> pyarrow's ORC codec names
_CODECS = {
    "none": "uncompressed",
    "zlib": "zlib",
    "snappy": "snappy",
    "lz4": "lz4",
    "zstd": "zstd",
}
_PREFIX = "orc."
_COMPRESS = "orc.compress"
_ZSTD_LEVEL = "orc.compression.zstd.level"
_STRATEGY = "orc.compression.strategy"
_STRIPE_SIZE = "orc.stripe.size"
_CHUNK = "orc.compress.size"
_STRIDE = "orc.row.index.stride"
_DICT = "orc.dictionary.key.threshold"
_BLOOM_COLUMNS = "orc.bloom.filter.columns"
_BLOOM_FPP = "orc.bloom.filter.fpp"
_BATCH = "orc.write.batch-size"
_WRITE_FORMAT = "orc.write.format"
_FILE_VERSIONS = ("0.11", "0.12")
_FILE_BLOCK_SIZE = "file.block-size"
#: the ``orc.*`` options this writer applies
KNOWN_OPTIONS = frozenset({_COMPRESS, _ZSTD_LEVEL, _STRATEGY, _STRIPE_SIZE, _CHUNK, _STRIDE,
                           _DICT, _BLOOM_COLUMNS, _BLOOM_FPP, _BATCH, _WRITE_FORMAT})


@dataclass(frozen=True, slots=True)
class OrcOptions:
    """ORC writer settings derived from the table's options (module docstring)."""

    compression: str = "zstd"
    strategy: str = "speed"
    stripe_size: int = 64 << 20
    chunk_size: int = 64 << 10
    row_index_stride: int = 10000
    dictionary_threshold: float = 0.0
    bloom_filter_columns: tuple[str, ...] = ()
    bloom_filter_fpp: float = 0.01
    batch_size: int = 1024
    file_version: str = "0.12"

    @classmethod
    def of(cls, opts: CoreOptions) -> OrcOptions:
        """The settings of ``opts`` (a table's options).

        Raises:
            UnsupportedError: a codec pyarrow's ORC writer lacks, or an ``orc.*`` option
                this writer does not apply.
            SchemaError: a malformed value.
        """
        refuse_unapplied_format_options(opts, _PREFIX, KNOWN_OPTIONS, "ORC")
        key = _COMPRESS if _COMPRESS in opts.raw else CoreOptions.FILE_COMPRESSION
        raw = (opts.raw.get(key) or "zstd").strip().lower()
        codec = _CODECS.get(raw)
        if codec is None:
            raise UnsupportedError(
                f"{key}={raw!r} is not supported for orc (one of {', '.join(_CODECS)})")
        level = (opts.get_int(_ZSTD_LEVEL, 1) if _ZSTD_LEVEL in opts.raw
                 else opts.file_compression_zstd_level)
        strategy = (opts.raw.get(_STRATEGY) or ("speed" if level <= 1 else "compression"))
        strategy = strategy.strip().lower()
        if strategy not in ("speed", "compression"):
            raise SchemaError(f"option {_STRATEGY}={strategy!r} is not speed or compression")
        version = (opts.raw.get(_WRITE_FORMAT) or _JAVA_DEFAULTS.file_version).strip()
        if version not in _FILE_VERSIONS:
            raise SchemaError(f"option {_WRITE_FORMAT}={opts.raw[_WRITE_FORMAT]!r} is not an "
                              f"ORC file version (one of {', '.join(_FILE_VERSIONS)})")
        stripe = (opts.get_memory_size(_FILE_BLOCK_SIZE, 0)
                  or opts.get_int(_STRIPE_SIZE, _JAVA_DEFAULTS.stripe_size, minimum=1, bits=64))
        return cls(
            compression=codec,
            strategy=strategy,
            stripe_size=stripe,
            chunk_size=opts.get_int(_CHUNK, _JAVA_DEFAULTS.chunk_size, minimum=1),
            row_index_stride=opts.get_int(_STRIDE, _JAVA_DEFAULTS.row_index_stride, minimum=1),
            dictionary_threshold=_fraction(opts, _DICT, _JAVA_DEFAULTS.dictionary_threshold),
            bloom_filter_columns=tuple(
                c.strip() for c in (opts.raw.get(_BLOOM_COLUMNS) or "").split(",") if c.strip()),
            bloom_filter_fpp=_fraction(opts, _BLOOM_FPP, _JAVA_DEFAULTS.bloom_filter_fpp),
            batch_size=opts.get_int(_BATCH, _JAVA_DEFAULTS.batch_size, minimum=1),
            file_version=version,
        )

    def writer_kwargs(self, names: Sequence[str]) -> dict[str, object]:
        """``pyarrow.orc`` writer arguments for a file of columns ``names``.

        Raises:
            SchemaError: a bloom-filter column that is not a column of the file.
        """
        index = {n: i for i, n in enumerate(names)}
        missing = [c for c in self.bloom_filter_columns if c not in index]
        if missing:
            raise SchemaError(
                f"option {_BLOOM_COLUMNS} names {missing[0]!r}, not a column of the data files")
        kwargs: dict[str, object] = {
            "compression": self.compression,
            "compression_strategy": self.strategy,
            "stripe_size": self.stripe_size,
            "compression_block_size": self.chunk_size,
            "row_index_stride": self.row_index_stride,
            "dictionary_key_size_threshold": self.dictionary_threshold,
            "batch_size": self.batch_size,
            "file_version": self.file_version,
        }
        if self.bloom_filter_columns:
            # pyarrow numbers the columns of the ORC type tree, the root struct being 0
            kwargs["bloom_filter_columns"] = [index[c] + 1 for c in self.bloom_filter_columns]
            kwargs["bloom_filter_fpp"] = self.bloom_filter_fpp
        return kwargs


_JAVA_DEFAULTS = OrcOptions()


def _fraction(opts: CoreOptions, key: str, default: float) -> float:
    raw = opts.raw.get(key)
    if raw is None:
        return default
    try:
        value = float(raw.strip())
    except ValueError as e:
        raise SchemaError(f"option {key}={raw!r} is not a number") from e
    if not 0.0 <= value <= 1.0:
        raise SchemaError(f"option {key}={raw!r} must be between 0 and 1")
    return value


def orc_arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type handed to the ORC writer for Paimon type ``t``: :func:`to_arrow_type`
    except TIME (int millis of the day) and MULTISET (map<element, int>), nested ones too."""
    if isinstance(t, AtomicType):
        return pa.int32() if t.root is TypeRoot.TIME else to_arrow_type(t)
    if isinstance(t, ArrayType):
        return pa.list_(pa.field("element", orc_arrow_type(t.element), t.element.nullable))
    if isinstance(t, MapType):
        return pa.map_(pa.field("key", orc_arrow_type(t.key), False),
                       pa.field("value", orc_arrow_type(t.value), t.value.nullable))
    if isinstance(t, MultisetType):
        return pa.map_(pa.field("key", orc_arrow_type(t.element), False),
                       pa.field("value", pa.int32(), False))
    assert isinstance(t, RowType)
    return pa.struct([pa.field(f.name, orc_arrow_type(f.type), f.type.nullable)
                      for f in t.fields])


@dataclass(frozen=True)
class OrcLayout:
    """How a file of Paimon ``(name, type, nullable)`` columns is handed to pyarrow's ORC
    writer: its Arrow schema (no footer rewriting: ``leaves`` is empty)."""

    schema: pa.Schema
    leaves: dict[tuple[str, ...], object]

    @classmethod
    def of(cls, columns: Sequence[tuple[str, DataType, bool]]) -> OrcLayout:
        return cls(pa.schema([pa.field(n, orc_arrow_type(t), nullable)
                              for n, t, nullable in columns]), {})

    def physical(self, table: pa.Table) -> pa.Table:
        """``table`` (columns in layout order, Arrow types of :func:`to_arrow_type`) as the
        arrays handed to the writer (TIME as int32, nested ones too).

        Raises:
            UnsupportedError: a timestamp before 1970 with digits below the millisecond
                (:func:`check_timestamps`).
        """
        target = self.schema
        for name, col in zip(target.names, table.columns):
            check_timestamps(name, col)
        if table.schema.equals(target, check_metadata=False):
            return table
        arrays = [col if col.type == f.type else col.cast(f.type)
                  for col, f in zip(table.columns, target)]
        return pa.Table.from_arrays(arrays, schema=target)


def check_timestamps(name: str, col: pa.Array | pa.ChunkedArray) -> None:
    """Refuse the timestamps of column ``name`` (nested ones too) that pyarrow's ORC writer
    would encode unreadably for Java: a value before 1970 with digits below the millisecond.

    pyarrow splits a timestamp into ORC's seconds and nanoseconds by truncation (apache/arrow
    ``TimestampAppender``), so such a value gets negative nanoseconds; ORC Java then yields a
    negative nanosecond-of-millisecond and Paimon Java fails the read
    (``IllegalArgumentException``). Whole milliseconds before 1970, and anything after, are
    read right by Java, pypaimon and us.

    Raises:
        UnsupportedError: names the column and the first such value.
    """
    t = col.type
    if isinstance(col, pa.ChunkedArray):
        for chunk in col.chunks:
            check_timestamps(name, chunk)
        return
    if pa.types.is_timestamp(t):
        factor = {"us": 1000, "ns": 1_000_000}.get(t.unit)
        if factor is None:
            return
        raw = pc.fill_null(col.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        bad = np.flatnonzero((raw < 0) & (raw % factor != 0))
        if len(bad):
            raise UnsupportedError(
                f"column {name!r}: timestamp {col[int(bad[0])]} is before 1970 with digits "
                "below the millisecond, which pyarrow's ORC writer encodes so that Paimon "
                "Java cannot read it; write it to a parquet table or at millisecond precision")
    elif isinstance(col, pa.MapArray):
        check_timestamps(name, col.keys)
        check_timestamps(name, col.items)
    elif isinstance(col, (pa.ListArray, pa.LargeListArray)):
        check_timestamps(name, col.flatten())
    elif isinstance(col, pa.StructArray):
        for i, child in enumerate(col.flatten()):
            check_timestamps(f"{name}.{t.field(i).name}", child)
