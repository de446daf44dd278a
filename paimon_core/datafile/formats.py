"""The file format new data files of a table are written in (``file.format``), and the
encoder of one writer's files.

A table's ``file.format`` may change by ALTER; files of each format stay readable (the
reader dispatches on each file's extension) and new files take the format in force when
their writer was made. Parquet, ORC and Avro are written; anything else is refused with its
name. Each format's layout and options live beside it
(:mod:`~paimon_core.datafile.parquet_layout`, :mod:`~paimon_core.datafile.orc_layout`,
:mod:`~paimon_core.datafile.avro_layout` and its encoder
:mod:`~paimon_core.datafile.avro_encode`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from paimon_core.datafile.avro_encode import AvroStream
from paimon_core.datafile.avro_layout import AvroLayout, AvroOptions
from paimon_core.datafile.orc_layout import OrcLayout, OrcOptions
from paimon_core.datafile.parquet_layout import (
    FileLayout,
    ParquetOptions,
    annotate_buffer,
    annotate_file,
)
from paimon_core.errors import UnsupportedError
from paimon_core.options import CoreOptions
from paimon_core.spec.schema import TableSchema
from paimon_core.types import DataType

__all__ = ["FileEncoder", "FormatOptions", "StreamWriter", "format_options"]

FormatOptions = ParquetOptions | OrcOptions | AvroOptions
WRITTEN_FORMATS = ("parquet", "orc", "avro")
# Java 0.9's per-level overrides (CoreOptions.FILE_FORMAT_PER_LEVEL / FILE_COMPRESSION_PER_LEVEL)
_PER_LEVEL = ("file.format.per.level", "file.compression.per.level")


def format_options(schema: TableSchema, opts: CoreOptions | None = None) -> FormatOptions:
    """The writer settings of ``schema``'s ``file.format`` (``opts``: its parsed options).

    Raises:
        UnsupportedError: a format this writer does not write, an option of the format it
            cannot apply, or a per-level format or compression.
    """
    opts = opts if opts is not None else CoreOptions(schema.options)
    for key in _PER_LEVEL:
        if (opts.raw.get(key) or "").strip():
            raise UnsupportedError(
                f"option {key}={opts.raw[key]!r} is not applied by this writer (every level "
                "is written in file.format with file.compression)")
    fmt = schema.file_format
    if fmt == "parquet":
        return ParquetOptions.of(schema, opts)
    if fmt == "orc":
        return OrcOptions.of(opts)
    if fmt == "avro":
        return AvroOptions.of(opts)
    raise UnsupportedError(
        f"file.format={fmt!r}: this writer writes {', '.join(WRITTEN_FORMATS)} data files")


class StreamWriter(Protocol):
    """A data file being encoded piece by piece."""

    def write(self, table: pa.Table) -> None: ...

    def close(self) -> None: ...


class _ParquetStream:
    def __init__(self, writer: pq.ParquetWriter) -> None:
        self._w = writer

    def write(self, table: pa.Table) -> None:
        self._w.write_table(table, row_group_size=table.num_rows)

    def close(self) -> None:
        self._w.close()


class FileEncoder:
    """Encodes the data files of one writer: columns ``(name, type, nullable)`` in file
    order, in the format of ``options``.

    For Parquet the columns to dictionary-encode are decided on the first file big enough
    to judge and kept for the encoder's life (a wrong guess only costs compression).
    """

    def __init__(self, columns: Sequence[tuple[str, DataType, bool]],
                 options: FormatOptions) -> None:
        self.options = options
        self.layout: FileLayout | OrcLayout | AvroLayout
        if isinstance(options, OrcOptions):
            self.extension, self.layout = "orc", OrcLayout.of(columns)
        elif isinstance(options, AvroOptions):
            self.extension, self.layout = "avro", AvroLayout.of(columns, options)
        else:
            self.extension = "parquet"
            self.layout = FileLayout.of(columns, options.int96_timestamps)
        self.schema = self.layout.schema
        self._dictionary: Sequence[str] | None = None
        self._orc_kwargs = (options.writer_kwargs(self.schema.names)
                            if isinstance(options, OrcOptions) else None)

    @property
    def rewrites_footer(self) -> bool:
        """Whether a finished file's footer is rewritten (:meth:`finish_file`)."""
        return bool(self.layout.leaves)

    def physical(self, table: pa.Table) -> pa.Table:
        return self.layout.physical(table)

    def write(self, table: pa.Table, where: str | pa.NativeFile) -> None:
        """Encode a whole file of ``table`` (physical columns) to ``where``."""
        if self._orc_kwargs is not None:
            paorc.write_table(table, where, **self._orc_kwargs)
        elif isinstance(self.layout, AvroLayout):
            stream = self.open(where, table)
            stream.write(table)
            stream.close()
        else:
            pq.write_table(table, where, **self._parquet_kwargs(table))

    def open(self, where: str | pa.NativeFile, first: pa.Table) -> StreamWriter:
        """Start a file written piece by piece; ``first`` is its first piece (not written)."""
        if self._orc_kwargs is not None:
            writer: StreamWriter = paorc.ORCWriter(where, **self._orc_kwargs)
            return writer
        if isinstance(self.layout, AvroLayout):
            assert isinstance(self.options, AvroOptions)
            return AvroStream(where, self.layout, self.options)
        return _ParquetStream(pq.ParquetWriter(where, first.schema,
                                               **self._parquet_kwargs(first)))

    def finish_file(self, local: str, path: str) -> int | None:
        """Rewrite the footer of the finished local file if the layout needs it; its new
        size, or None when nothing was rewritten."""
        if not self.rewrites_footer:
            return None
        assert isinstance(self.layout, FileLayout)
        return annotate_file(local, self.layout.leaves, path)

    def finish_buffer(self, data: memoryview, path: str) -> list[memoryview | bytes]:
        """The parts of a file encoded in memory, footer rewritten if the layout needs it."""
        if not self.rewrites_footer:
            return [data]
        assert isinstance(self.layout, FileLayout)
        return list(annotate_buffer(data, self.layout.leaves, path))

    def _parquet_kwargs(self, table: pa.Table) -> dict[str, Any]:
        p = self.options
        assert isinstance(p, ParquetOptions) and isinstance(self.layout, FileLayout)
        kwargs: dict[str, Any] = {
            "compression": p.compression,
            "store_decimal_as_integer": True,
            "use_dictionary": self._dictionary_choice(table),
            "write_statistics": True,
            **self.layout.writer_options(),
        }
        if p.compression_level is not None:
            kwargs["compression_level"] = p.compression_level
        return kwargs

    def _dictionary_choice(self, table: pa.Table) -> Sequence[str] | bool:
        if self._dictionary is not None:
            return self._dictionary
        choice, decisive = _dictionary_columns(table)
        if decisive and not isinstance(choice, bool):
            self._dictionary = choice
        return choice


def _dictionary_columns(table: pa.Table) -> tuple[Sequence[str] | bool, bool]:
    """Parquet columns worth dictionary-encoding, and whether the table had enough rows for
    the choice to hold for later files. Big enough: those with few distinct values in the
    first rows (trying a dictionary on unique values costs much CPU, and Parquet throws it
    away anyway once the dictionary page overflows). Smaller files get no dictionary: zstd
    already folds their repeats (measured on 1k-row files: smaller files, and about a third
    less CPU than with dictionaries)."""
    if table.num_rows < _DICT_SAMPLE:
        return False, False
    out = []
    for name, col in zip(table.column_names, table.columns):
        t = col.type
        if pa.types.is_nested(t):
            out.append(name)
        elif not pa.types.is_boolean(t):
            sample = col.slice(0, _DICT_SAMPLE)
            if len(sample.unique()) <= _DICT_SAMPLE // 4:
                out.append(name)
    return out, True


_DICT_SAMPLE = 2048
