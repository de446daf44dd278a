"""Writing one data (or changelog) file and its :class:`DataFileMeta`.

Mirrors ``org.apache.paimon.io.RowDataFileWriter`` (append tables),
``org.apache.paimon.io.KeyValueDataFileWriter`` (primary-key tables) and
``org.apache.paimon.io.DataFilePathFactory`` (names), restricted to what Java 0.9 reads
(spec §7.1, §8, §14.3): columns in schema order; primary-key files start with ``_KEY_<k>``
(trimmed primary key), ``_SEQUENCE_NUMBER`` (INT64) and ``_VALUE_KIND`` (INT32 annotated
INT(8) in Parquet, ORC byte). Files are Parquet or ORC (``file.format``,
:mod:`paimon_core.datafile.formats`); the layout of each type per format is
:mod:`paimon_core.datafile.parquet_layout` / :mod:`paimon_core.datafile.orc_layout`.

File names are ``data-<uuid>-<n>.<format>`` / ``changelog-<uuid>-<n>.<format>`` with one uuid per
:class:`DataFilePathFactory` and a counter that never repeats, so a retried write never
reuses a name. Local files are created exclusively (``O_EXCL``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa

from paimon_core.datafile.formats import FileEncoder, FormatOptions, StreamWriter
from paimon_core.datafile.formats import format_options as format_options_of
from paimon_core.datafile.stats import (
    StatsAccumulator,
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
from paimon_core.spec.row_kind import RowKind, retract_mask
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
    "KvFileStream",
    "RollingKvWriter",
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
    """Writes the data/changelog files of one table and describes them.

    Args:
        file_io: storage.
        schema: the table schema the files are written with.
        path_factory: names of new files (their extension is the format's).
        format_options: the file format and its writer settings (default: from the schema's
            options, :func:`~paimon_core.datafile.formats.format_options`).

    ``written_paths`` lists every file this writer created (what an abort deletes).
    """

    def __init__(
        self,
        file_io: FileIO,
        schema: TableSchema,
        path_factory: DataFilePathFactory,
        *,
        format_options: FormatOptions | None = None,
    ) -> None:
        self.file_io = file_io
        self.schema = schema
        self.path_factory = path_factory
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
        self.encoder = FileEncoder(self._file_columns(),
                                   format_options or format_options_of(schema))
        if path_factory.file_format != self.encoder.extension:
            raise SchemaError(f"data files named .{path_factory.file_format} cannot be "
                              f"written as {self.encoder.extension}")
        self._file_schema = self.encoder.schema
        self._lock = threading.Lock()
        self.written_paths: list[str] = []
        self._dirs: set[str] = set()

    # ---- layout
    def _file_columns(self) -> list[tuple[str, DataType, bool]]:
        cols: list[tuple[str, DataType, bool]] = []
        if self.is_pk:
            cols.extend((KEY_PREFIX + f.name, f.type, False) for f in self.key_fields)
            cols.append((SEQUENCE_NUMBER, bigint_type(False), False))
            cols.append((VALUE_KIND, tinyint_type(False), False))
        cols.extend((f.name, f.type, f.type.nullable) for f in self.fields)
        return cols

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
        file_table = self._kv_file_table(table)
        seq = table.column(SEQUENCE_NUMBER)
        keys = [table.column(k) for k in self.key_names]
        values = [table.column(f.name) for f in self.fields]
        if stats is None:
            key_stats = collect_stats(keys, self.key_types, self.key_modes)
            value_stats = collect_stats(values, self.value_types, self.value_modes,
                                        constant=constant)
        else:
            key_stats, value_stats = stats
        seq_np = seq.to_numpy()
        kinds = np.asarray(table.column(VALUE_KIND).to_numpy(), dtype=np.int8)
        delete_rows = int(np.count_nonzero(retract_mask(kinds)))
        min_key = self.key_bytes(table, 0)
        max_key = self.key_bytes(table, n - 1)
        name = self._new_name(changelog)
        size = self._write(bucket_dir, name, file_table)
        return self._meta(
            name, size, n, min_key, max_key, key_stats, value_stats,
            int(seq_np.min()), int(seq_np.max()), delete_rows,
        )

    def open_kv_file(self, bucket_dir: str, *, changelog: bool = False,
                     constant: Sequence[int] = ()) -> KvFileStream:
        """A primary-key data (or changelog) file written piece by piece: the pieces take
        the columns of :meth:`write_kv_file`, come in key order, and the file's meta is what
        :meth:`write_kv_file` would give for their concatenation."""
        return KvFileStream(self, bucket_dir, self._new_name(changelog), constant)

    def key_bytes(self, table: pa.Table, row: int) -> bytes:
        """The primary key of ``table``'s row ``row`` as a BinaryRow (a file's min / max key;
        ``table`` has the columns of :meth:`write_kv_file`)."""
        return serialize_binary_row(
            [epoch_nanos_value(table.column(k)[row], t)
             for k, t in zip(self.key_names, self.key_types)],
            self.key_types,
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
    def _new_name(self, changelog: bool) -> str:
        return (self.path_factory.new_changelog_file_name() if changelog
                else self.path_factory.new_data_file_name())

    def _kv_file_table(self, table: pa.Table) -> pa.Table:
        """The columns of a primary-key file (``_KEY_*``, sequence, kind, values)."""
        cols = [*(table.column(k) for k in self.key_names), table.column(SEQUENCE_NUMBER),
                table.column(VALUE_KIND), *(table.column(f.name) for f in self.fields)]
        return pa.Table.from_arrays(cols, names=self._file_schema.names)

    def _reserve(self, bucket_dir: str, path: str) -> None:
        """Record ``path`` as written by this writer (what an abort deletes) before creating it."""
        with self._lock:
            if bucket_dir not in self._dirs:
                self.file_io.mkdirs(bucket_dir)
                self._dirs.add(bucket_dir)
            self.written_paths.append(path)

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
        enc = self.encoder
        table = enc.physical(table)
        self._reserve(bucket_dir, path)
        try:
            local = self.file_io.arrow_filesystem(path)[1] if self.file_io.is_local else None
            if local is not None and table.nbytes > _BUFFERED_WRITE_BYTES:
                # big local files: reserve the name exclusively, then let Arrow write natively
                fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.close(fd)
                enc.write(table, local)
                size = enc.finish_file(local, path)  # a footer rewritten in place
                return os.path.getsize(local) if size is None else size
            # encoded in memory: object stores take one PUT; small local files one exclusive
            # create and write (opening files costs as much as encoding a thousand rows)
            sink = pa.BufferOutputStream()
            enc.write(table, sink)
            parts = enc.finish_buffer(memoryview(sink.getvalue()), path)
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


_BUFFERED_WRITE_BYTES = 4 << 20


class KvFileStream:
    """One primary-key data or changelog file written piece by piece (the file half of
    Java's ``RollingFileWriter``: a ``KeyValueDataFileWriter`` fed record by record).

    Pieces are buffered up to a row group (``_ROW_GROUP_ROWS`` rows or ``_ROW_GROUP_BYTES``
    of Arrow memory) and then encoded, so memory does not grow with the file. Stats, min /
    max key, sequence range, row and delete counts are folded in piece by piece and equal
    what :meth:`DataFileWriter.write_kv_file` gives for the same rows in one go. Local files
    are created exclusively and written as they go; on object stores the encoded file is
    put in one request at :meth:`close`. The path is in the writer's ``written_paths``
    before anything is created (an abort deletes it).
    """

    def __init__(self, owner: DataFileWriter, bucket_dir: str, name: str,
                 constant: Sequence[int]) -> None:
        self.owner = owner
        self.bucket_dir = bucket_dir
        self.name = name
        self.path = join(bucket_dir, name)
        self.rows = 0
        self._keys = StatsAccumulator(owner.key_types, owner.key_modes)
        self._values = StatsAccumulator(owner.value_types, owner.value_modes,
                                        constant=constant)
        self._min_key = b""
        self._max_key = b""
        self._min_seq = np.iinfo(np.int64).max
        self._max_seq = np.iinfo(np.int64).min
        self._deletes = 0
        self._last_kind = -1
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self._pq: StreamWriter | None = None
        self._local: str | None = None
        self._sink: pa.BufferOutputStream | None = None

    @property
    def last_kind(self) -> int:
        """Row kind of the last row written (-1 before the first)."""
        return self._last_kind

    def write(self, table: pa.Table) -> None:
        """Append rows (columns of :meth:`DataFileWriter.write_kv_file`, key order)."""
        n = table.num_rows
        if n == 0:
            return
        o = self.owner
        self._keys.add([table.column(k) for k in o.key_names])
        self._values.add([table.column(f.name) for f in o.fields])
        if not self.rows:
            self._min_key = o.key_bytes(table, 0)
        self._max_key = o.key_bytes(table, n - 1)
        seq = np.asarray(table.column(SEQUENCE_NUMBER).to_numpy(), dtype=np.int64)
        self._min_seq = min(self._min_seq, int(seq.min()))
        self._max_seq = max(self._max_seq, int(seq.max()))
        kinds = np.asarray(table.column(VALUE_KIND).to_numpy(), dtype=np.int8)
        self._deletes += int(np.count_nonzero(retract_mask(kinds)))
        self._last_kind = int(kinds[-1])
        self.rows += n
        piece = o.encoder.physical(o._kv_file_table(table))
        self._pending.append(piece)
        self._pending_rows += n
        self._pending_bytes += piece.nbytes
        if self._pending_rows >= _ROW_GROUP_ROWS or self._pending_bytes >= _ROW_GROUP_BYTES:
            self._flush()

    def close(self) -> DataFileMeta:
        """Finish the file and describe it.

        Raises:
            SchemaError: no row was written.
            StorageError: writing failed.
        """
        if not self.rows:
            raise SchemaError("cannot write an empty data file")
        self._flush()
        assert self._pq is not None
        o = self.owner
        try:
            self._pq.close()
            self._pq = None
            if self._local is not None:
                rewritten = o.encoder.finish_file(self._local, self.path)
                size = os.path.getsize(self._local) if rewritten is None else rewritten
            else:
                assert self._sink is not None
                parts = o.encoder.finish_buffer(memoryview(self._sink.getvalue()), self.path)
                self._sink = None
                o.file_io.write_bytes(self.path, b"".join(parts))
                size = sum(len(p) for p in parts)
        except (pa.ArrowException, OSError) as e:
            raise StorageError(self.path, f"writing the data file failed: {e}") from e
        return o._meta(self.name, size, self.rows, self._min_key, self._max_key,
                       self._keys.result(), self._values.result(), self._min_seq,
                       self._max_seq, self._deletes)

    def abort(self) -> None:
        """Drop the file's buffers and close it unfinished (the caller deletes
        ``written_paths``)."""
        self._pending.clear()
        self._sink = None
        if self._pq is not None:
            with contextlib.suppress(pa.ArrowException, OSError):
                self._pq.close()
            self._pq = None

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending)
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        try:
            if self._pq is None:
                self._open(table)
            assert self._pq is not None
            self._pq.write(table)
        except FileExistsError as e:
            raise StorageError(self.path, "data file already exists (name collision)") from e
        except (pa.ArrowException, OSError) as e:
            raise StorageError(self.path, f"writing the data file failed: {e}") from e

    def _open(self, first: pa.Table) -> None:
        o = self.owner
        o._reserve(self.bucket_dir, self.path)
        local = o.file_io.arrow_filesystem(self.path)[1] if o.file_io.is_local else None
        if local is not None:
            fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.close(fd)
            self._local = local
            self._pq = o.encoder.open(local, first)
        else:
            self._sink = pa.BufferOutputStream()
            self._pq = o.encoder.open(self._sink, first)


class RollingKvWriter:
    """Primary-key records written as files of about ``target_file_size``
    (``org.apache.paimon.io.RollingFileWriter``): chunks in key order go into the current
    file, and a new one is started when the current file reaches the target. The size of a
    file is estimated from ``bytes_per_row`` (the on-disk bytes per row of the input files,
    as compaction has always cut), so a file holds ``target_file_size / bytes_per_row`` rows.
    Changelog files never end with a ``-U`` (its ``+U`` follows in the same file: a reader
    of one file sees whole updates).

    Files get ``level`` and ``file_source`` (default: the writer's). Use as a context
    manager: leaving it by an exception aborts the open file; :meth:`close` returns the metas
    of every file written.
    """

    def __init__(self, writer: DataFileWriter, bucket_dir: str, *, target_file_size: int,
                 bytes_per_row: float, level: int = 0, changelog: bool = False,
                 file_source: FileSource | None = None, constant: Sequence[int] = ()) -> None:
        self.writer = writer
        self.bucket_dir = bucket_dir
        self.rows_per_file = (max(1, int(target_file_size // bytes_per_row))
                              if bytes_per_row > 0 else np.iinfo(np.int64).max)
        self.level = level
        self.changelog = changelog
        self.file_source = file_source
        self.constant = tuple(constant)
        self.files: list[DataFileMeta] = []
        self._file: KvFileStream | None = None

    def __enter__(self) -> RollingKvWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.abort()

    def write(self, chunk: pa.Table) -> None:
        """Append a chunk of records (columns of :meth:`DataFileWriter.write_kv_file`; chunks
        come in key order)."""
        n = chunk.num_rows
        kinds = (np.asarray(chunk.column(VALUE_KIND).to_numpy(), dtype=np.int8)
                 if self.changelog and n else None)
        pos = 0
        while pos < n:
            if self._file is None:
                self._file = self.writer.open_kv_file(self.bucket_dir, changelog=self.changelog,
                                                      constant=self.constant)
            end = min(n, pos + max(0, self.rows_per_file - self._file.rows))
            if kinds is not None:
                if end == pos and self._file.last_kind == RowKind.UPDATE_BEFORE:
                    end = pos + 1  # the +U of the file's last -U
                while pos < end < n and kinds[end - 1] == RowKind.UPDATE_BEFORE:
                    end += 1
            if end > pos:
                self._file.write(chunk.slice(pos, end - pos))
                pos = end
            if self._file.rows >= self.rows_per_file and not (
                    self.changelog and self._file.last_kind == RowKind.UPDATE_BEFORE):
                self._roll()

    def close(self) -> list[DataFileMeta]:
        """Finish the open file; the metas of all files written, in key order."""
        if self._file is not None and self._file.rows:
            self._roll()
        self._file = None
        return self.files

    def abort(self) -> None:
        if self._file is not None:
            self._file.abort()
            self._file = None

    def _roll(self) -> None:
        assert self._file is not None
        meta = self._file.close()
        self._file = None
        self.files.append(replace(meta, level=self.level,
                                  file_source=self.file_source or meta.file_source))


_ROW_GROUP_ROWS = 1 << 20  # pyarrow's default row-group size
_ROW_GROUP_BYTES = 32 << 20  # ~350k rows of the bench's 8 columns
