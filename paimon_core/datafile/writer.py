"""Writing one data (or changelog) file and its :class:`DataFileMeta`.

Mirrors ``org.apache.paimon.io.RowDataFileWriter`` (append tables),
``org.apache.paimon.io.KeyValueDataFileWriter`` (primary-key tables) and
``org.apache.paimon.io.DataFilePathFactory`` (names), restricted to what Java 0.9 reads
(spec §7.1, §8, §14.3): columns in schema order; primary-key files start with ``_KEY_<k>``
(trimmed primary key), ``_SEQUENCE_NUMBER`` (INT64) and ``_VALUE_KIND`` (INT32 annotated
INT(8)). The Parquet layout of each type (per-leaf timestamp encodings, decimals...) is
:mod:`paimon_core.datafile.parquet_layout`.

File names are ``data-<uuid>-<n>.parquet`` / ``changelog-<uuid>-<n>.parquet`` with one uuid per
:class:`DataFilePathFactory` and a counter that never repeats, so a retried write never
reuses a name. Local files are created exclusively (``O_EXCL``).
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paimon_core.datafile.parquet_layout import (
    FileLayout,
    ParquetOptions,
    annotate_buffer,
    annotate_file,
)
from paimon_core.datafile.stats import (
    StatsMode,
    collect_stats,
    column_stats_runs,
    simple_stats,
    stats_modes,
)
from paimon_core.errors import SchemaError, StorageError
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import DataFilePathFactory
from paimon_core.spec.binary_row import serialize_binary_row
from paimon_core.spec.manifest import DataFileMeta, FileSource
from paimon_core.spec.row_kind import retract_mask
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.stats import EMPTY_ROW, EMPTY_STATS, SimpleStats
from paimon_core.spec.system_fields import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from paimon_core.types import (
    AtomicType,
    DataField,
    DataType,
    TypeRoot,
    bigint_type,
    tinyint_type,
)

__all__ = [
    "DataFileWriter",
    "epoch_nanos_value",
    "local_now_millis",
    "split_by_size",
]



def local_now_millis() -> int:
    """Writer-local wall clock as if it were UTC, in millis (Java
    ``Timestamp.fromLocalDateTime(LocalDateTime.now())``)."""
    now = dt.datetime.now()
    return (now - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)


def epoch_nanos_value(s: pa.Scalar, t: DataType) -> object:
    """A key/partition value in the BinaryRow encoder's convention: timestamps as exact
    ``int`` epoch nanoseconds, DATE as days, TIME as millis; others ``as_py()``."""
    if not s.is_valid:
        return None
    if isinstance(t, AtomicType):
        if t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
            unit = s.type.unit
            return int(s.value) * {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
        if t.root in (TypeRoot.DATE, TypeRoot.TIME):
            return int(s.cast(pa.int32()).as_py())
    return s.as_py()


def split_by_size(
    table: pa.Table, target_bytes: int, size: int | None = None
) -> list[pa.Table]:
    """Zero-copy slices of about ``target_bytes`` (Arrow size, or the given estimate of the
    table's ``size``) each (``RollingFileWriter``)."""
    n = table.num_rows
    if n == 0:
        return []
    if size is None:
        size = table.nbytes
    if size <= target_bytes:
        return [table]
    rows = max(1, int(n * target_bytes // max(size, 1)))
    return [table.slice(i, rows) for i in range(0, n, rows)]


class DataFileWriter:
    """Writes Parquet data/changelog files of one table and describes them.

    Args:
        file_io: storage.
        schema: the table schema the files are written with.
        path_factory: names of new files.
        parquet: writer settings (default: from the schema's options).

    ``written_paths`` lists every file this writer created (what an abort deletes).
    """

    def __init__(
        self,
        file_io: FileIO,
        schema: TableSchema,
        path_factory: DataFilePathFactory,
        *,
        parquet: ParquetOptions | None = None,
    ) -> None:
        self.file_io = file_io
        self.schema = schema
        self.path_factory = path_factory
        self.parquet = parquet or ParquetOptions.from_schema(schema)
        self.fields = list(schema.fields)
        self.is_pk = bool(schema.primary_keys)
        self.key_names = list(schema.trimmed_primary_keys)
        self.key_fields: list[DataField] = [schema.field(k) for k in self.key_names]
        key_cols = [KEY_PREFIX + k for k in self.key_names]
        opts = schema.options
        self.value_modes: list[StatsMode] = stats_modes(
            opts, schema.field_names, self.key_names if self.is_pk else ()
        )
        self.key_modes: list[StatsMode] = stats_modes(opts, key_cols, key_cols)
        self.value_types = [f.type for f in self.fields]
        self.key_types = [f.type.with_nullable(False) for f in self.key_fields]
        self._layout = self._file_layout()
        self._file_schema = self._layout.schema
        self._lock = threading.Lock()
        self.written_paths: list[str] = []
        self._dirs: set[str] = set()
        self._dictionary: Sequence[str] | None = None

    # ---- layout
    def _file_layout(self) -> FileLayout:
        cols: list[tuple[str, DataType, bool]] = []
        if self.is_pk:
            cols.extend((KEY_PREFIX + f.name, f.type, False) for f in self.key_fields)
            cols.append((SEQUENCE_NUMBER, bigint_type(False), False))
            cols.append((VALUE_KIND, tinyint_type(False), False))
        cols.extend((f.name, f.type, f.type.nullable) for f in self.fields)
        return FileLayout.of(cols, self.parquet.int96_timestamps)

    # ---- public
    def write_append_file(
        self,
        bucket_dir: str,
        table: pa.Table,
        min_sequence_number: int,
        *,
        constant: Sequence[int] = (),
    ) -> DataFileMeta:
        """Write the rows of an append table (columns = table columns) as one file whose rows
        take sequence numbers ``min_sequence_number ..`` in order. ``constant`` lists columns
        holding one value in these rows (partition columns)."""
        n = table.num_rows
        value_stats = collect_stats(
            [table.column(i) for i in range(len(self.fields))], self.value_types,
            self.value_modes, constant=constant,
        )
        name = self.path_factory.new_data_file_name()
        size = self._write(bucket_dir, name, table)
        return self._meta(
            name, size, n, EMPTY_ROW, EMPTY_ROW, EMPTY_STATS, value_stats,
            min_sequence_number, min_sequence_number + n - 1, 0,
        )

    def write_kv_file(
        self,
        bucket_dir: str,
        table: pa.Table,
        *,
        changelog: bool = False,
        constant: Sequence[int] = (),
        stats: tuple[SimpleStats, SimpleStats] | None = None,
    ) -> DataFileMeta:
        """Write rows of a primary-key table: ``table`` holds the table columns followed by
        ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` and is sorted by key (then sequence).
        ``constant`` lists table columns holding one value in these rows; ``stats``: the
        (key, value) stats of these rows when already computed (:meth:`kv_stats_runs`)."""
        n = table.num_rows
        if n == 0:
            raise SchemaError("cannot write an empty data file")
        seq = table.column(SEQUENCE_NUMBER)
        kind = table.column(VALUE_KIND)
        keys = [table.column(k) for k in self.key_names]
        values = [table.column(f.name) for f in self.fields]
        file_table = pa.Table.from_arrays([*keys, seq, kind, *values], schema=None,
                                          names=self._file_schema.names)
        if stats is None:
            key_stats = collect_stats(keys, self.key_types, self.key_modes)
            value_stats = collect_stats(values, self.value_types, self.value_modes,
                                        constant=constant)
        else:
            key_stats, value_stats = stats
        seq_np = seq.to_numpy()
        kinds = np.asarray(kind.to_numpy(), dtype=np.int8)
        delete_rows = int(np.count_nonzero(retract_mask(kinds)))
        min_key = serialize_binary_row(
            [epoch_nanos_value(k[0], t) for k, t in zip(keys, self.key_types)], self.key_types
        )
        max_key = serialize_binary_row(
            [epoch_nanos_value(k[n - 1], t) for k, t in zip(keys, self.key_types)],
            self.key_types,
        )
        name = (
            self.path_factory.new_changelog_file_name()
            if changelog
            else self.path_factory.new_data_file_name()
        )
        size = self._write(bucket_dir, name, file_table)
        return self._meta(
            name, size, n, min_key, max_key, key_stats, value_stats,
            int(seq_np.min()), int(seq_np.max()), delete_rows,
        )

    def kv_stats_runs(
        self, table: pa.Table, starts: np.ndarray
    ) -> list[tuple[SimpleStats, SimpleStats]]:
        """The (key, value) stats :meth:`write_kv_file` would collect for each run of rows
        ``[starts[i], starts[i + 1])`` of ``table`` (columns as for :meth:`write_kv_file`),
        computed for all runs at once."""
        k = len(self.key_names)
        columns = [table.column(c) for c in (*self.key_names, *(f.name for f in self.fields))]
        runs = column_stats_runs(columns, [*self.key_types, *self.value_types],
                                 [*self.key_modes, *self.value_modes], starts)
        key_types = [t.with_nullable(True) for t in self.key_types]
        value_types = [t.with_nullable(True) for t in self.value_types]
        return [(simple_stats(r[:k], key_types), simple_stats(r[k:], value_types))
                for r in runs]

    # ---- internals
    def _meta(
        self,
        name: str,
        size: int,
        rows: int,
        min_key: bytes,
        max_key: bytes,
        key_stats: SimpleStats,
        value_stats: SimpleStats,
        min_seq: int,
        max_seq: int,
        delete_rows: int,
    ) -> DataFileMeta:
        return DataFileMeta(
            file_name=name,
            file_size=size,
            row_count=rows,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=min_seq,
            max_sequence_number=max_seq,
            schema_id=self.schema.id,
            level=0,
            extra_files=(),
            creation_time=local_now_millis(),
            delete_row_count=delete_rows,
            embedded_index=None,
            file_source=FileSource.APPEND,
            value_stats_cols=None,
            external_path=None,
            first_row_id=None,
            write_cols=None,
        )

    def _write(self, bucket_dir: str, name: str, table: pa.Table) -> int:
        path = join(bucket_dir, name)
        table = self._layout.physical(table)
        kwargs = self._writer_kwargs(table)
        with self._lock:
            if bucket_dir not in self._dirs:
                self.file_io.mkdirs(bucket_dir)
                self._dirs.add(bucket_dir)
            self.written_paths.append(path)
        leaves = self._layout.leaves
        try:
            local = self.file_io.arrow_filesystem(path)[1] if self.file_io.is_local else None
            if local is not None and table.nbytes > _BUFFERED_WRITE_BYTES:
                # big local files: reserve the name exclusively, then let Arrow write natively
                fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.close(fd)
                pq.write_table(table, local, **kwargs)
                if leaves:  # the footer is rewritten in place at the end of the file
                    return annotate_file(local, leaves, path)
                return os.path.getsize(local)
            # encoded in memory: object stores take one PUT; small local files one exclusive
            # create and write (opening files costs as much as encoding a thousand rows)
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, **kwargs)
            data = memoryview(sink.getvalue())
            parts: list[memoryview | bytes] = [data]
            if leaves:  # the file's head as it is, then a new footer
                parts = list(annotate_buffer(data, leaves, path))
            size = sum(len(p) for p in parts)
            if local is None:
                self.file_io.write_bytes(path, b"".join(parts))
                return size
            fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                for part in parts:
                    written = 0
                    while written < len(part):
                        written += os.write(fd, part[written:])
            finally:
                os.close(fd)
            return size
        except FileExistsError as e:
            raise StorageError(path, "data file already exists (name collision)") from e
        except (pa.ArrowException, OSError) as e:
            raise StorageError(path, f"writing the data file failed: {e}") from e

    def _dictionary_choice(self, table: pa.Table) -> Sequence[str] | bool:
        """Dictionary-encoded columns, decided on the first file big enough to judge and
        kept for the writer's life (a wrong guess only costs compression)."""
        if self._dictionary is not None:
            return self._dictionary
        choice, decisive = _dictionary_columns(table)
        if decisive and not isinstance(choice, bool):
            self._dictionary = choice
        return choice

    def _writer_kwargs(self, table: pa.Table) -> Mapping[str, object]:
        p = self.parquet
        kwargs: dict[str, object] = {
            "compression": p.compression,
            "store_decimal_as_integer": True,
            "use_dictionary": self._dictionary_choice(table),
            "write_statistics": True,
            **self._layout.writer_options(),
        }
        if p.compression_level is not None:
            kwargs["compression_level"] = p.compression_level
        return kwargs


def _dictionary_columns(table: pa.Table) -> tuple[Sequence[str] | bool, bool]:
    """Columns worth dictionary-encoding, and whether the table had enough rows for the
    choice to hold for later files. Big enough: those with few distinct values in the first
    rows (trying a dictionary on unique values costs much CPU, and Parquet throws it away
    anyway once the dictionary page overflows). Smaller files get no dictionary: zstd
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
_BUFFERED_WRITE_BYTES = 4 << 20
