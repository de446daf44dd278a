"""Reading one data file into Arrow, mapped to the current schema by field id.

A file records the schema id it was written with (``_SCHEMA_ID``). Columns are located in the
file by that schema's names and re-labelled with the current schema's names (renames), cast to
the current types (widening), and filled with nulls when the column did not exist yet (added
columns); dropped columns are simply not read. Mirrors Java's ``SchemaEvolutionUtil`` /
``BulkFormatMapping``.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from paimon_core.errors import (
    CastError,
    CorruptMetadataError,
    FileNotFoundInTableError,
    PaimonError,
    UnsupportedError,
)
from paimon_core.io.file_io import FileIO, join
from paimon_core.read.avro_file import read_avro
from paimon_core.read.casts import cast_evolved, is_widening
from paimon_core.schema_manager import SchemaManager
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.system_fields import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from paimon_core.types import (
    AtomicType,
    DataField,
    DataType,
    TypeRoot,
    bigint_type,
    tinyint_type,
    to_arrow_type,
)

_BIGINT: DataType = bigint_type(False)
_TINYINT: DataType = tinyint_type(False)
#: read buffer per column of a streamed Parquet file (bytes)
_STREAM_BUFFER = 1 << 18
#: rows per batch of the multi-file scan (Arrow's default)
_SCAN_BATCH_ROWS = 1 << 17


@dataclass(frozen=True)
class ColumnMapping:
    """How to produce each requested output column from one file."""

    #: (output name, name in the file or None, type read, the file's type when a value cast
    #: is needed (an ALTER changed the type other than by widening) else None)
    output: tuple[tuple[str, str | None, DataType, DataType | None], ...]


@dataclass(frozen=True, eq=False)
class FileRead:
    """One file to read and how (the arguments of :meth:`DataFileReader.read`)."""

    bucket_path: str
    file: DataFileMeta
    columns: tuple[str, ...]
    system: bool = False
    keys: bool = True
    kind: bool = True
    sequence: bool = True
    deleted_rows: np.ndarray | None = None
    constants: Mapping[str, pa.Scalar] | None = None


@functools.cache
def scan_memory_pool() -> pa.MemoryPool:
    """The Arrow memory pool the multi-file scan decodes into: jemalloc when this pyarrow has
    it, unless ``ARROW_DEFAULT_MEMORY_POOL`` chose a pool for the process.

    Arrow's default, mimalloc, touches fresh segments that transparent huge pages (``always``
    on many Linux hosts) back with 2 MB pages, each zeroed by the kernel on first touch: the
    first read of a fresh process (a CLI call, a Spark task, a Dagster step) spent about twice
    the CPU of the next one in kernel time. Decoding into jemalloc measured 0.45 s against
    0.96 s CPU for the first W2 read, and no worse afterwards (bench/README.md). Buffers keep
    their pool, so mixing pools is safe; Arrow's memory accounting for the default pool
    (``pa.total_allocated_bytes()``) no longer includes the scan's buffers.
    """
    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        try:
            return pa.jemalloc_memory_pool()
        except NotImplementedError:  # a pyarrow built without jemalloc
            pass
    return pa.default_memory_pool()


def file_path(bucket_path: str, f: DataFileMeta) -> str:
    return f.external_path if f.external_path else join(bucket_path, f.file_name)


def file_format(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower() if "." in name else "parquet"


class DataFileReader:
    """Reads data files of one table for a given current schema."""

    def __init__(self, file_io: FileIO, schema: TableSchema, schemas: SchemaManager) -> None:
        self.file_io = file_io
        self.schema = schema
        self.schemas = schemas
        self._mappings: dict[tuple[Any, ...], ColumnMapping] = {}

    def _file_schema(self, schema_id: int) -> TableSchema:
        return self.schema if schema_id == self.schema.id else self.schemas.schema(schema_id)

    def mapping(
        self,
        schema_id: int,
        columns: Sequence[str],
        system: bool,
        *,
        keys: bool = True,
        kind: bool = True,
        sequence: bool = True,
    ) -> ColumnMapping:
        key = (schema_id, tuple(columns), system, keys, kind, sequence)
        m = self._mappings.get(key)
        if m is not None:
            return m
        old = self._file_schema(schema_id)
        old_by_id = {f.id: f for f in old.fields}
        out: list[tuple[str, str | None, DataType, DataType | None]] = []
        if system:
            if keys:
                for k in self.schema.trimmed_primary_keys:
                    cur = self.schema.field(k)
                    of = old_by_id.get(cur.id)
                    out.append(
                        (
                            KEY_PREFIX + k,
                            KEY_PREFIX + of.name if of else None,
                            cur.type.with_nullable(False),
                            _cast_from(of, cur.type),
                        )
                    )
            if sequence:
                out.append((SEQUENCE_NUMBER, SEQUENCE_NUMBER, _BIGINT, None))
            if kind:
                out.append((VALUE_KIND, VALUE_KIND, _TINYINT, None))
        for name in columns:
            cur = self.schema.field(name)
            of = old_by_id.get(cur.id)
            out.append((name, of.name if of is not None else None, cur.type,
                        _cast_from(of, cur.type)))
        m = ColumnMapping(tuple(out))
        self._mappings[key] = m
        return m

    def read(
        self,
        bucket_path: str,
        f: DataFileMeta,
        columns: Sequence[str],
        *,
        system: bool = False,
        keys: bool = True,
        kind: bool = True,
        sequence: bool = True,
        deleted_rows: np.ndarray | None = None,
        constants: Mapping[str, pa.Scalar] | None = None,
    ) -> pa.Table:
        """Read ``columns`` (current names) of one file; with ``system`` also the key
        (unless ``keys`` is False: readers may use the value's primary-key columns, which
        hold the same values), sequence (unless ``sequence`` is False) and kind (unless
        ``kind`` is False) columns of a primary-key file. ``deleted_rows`` are positions
        removed by a deletion vector.
        ``constants`` are columns whose value is known for the whole file (partition
        columns): they are not decoded but repeated."""
        path = file_path(bucket_path, f)
        mapping = self.mapping(
            f.schema_id, columns, system, keys=keys, kind=kind, sequence=sequence
        )
        const = constants or {}
        wanted = [src for out, src, _, _ in mapping.output if src is not None and out not in const]
        table = self._read_physical(path, wanted, f.file_size)
        if file_format(path) == "orc":
            table = _orc_chars(table, mapping)
        if table.num_rows != f.row_count:
            raise CorruptMetadataError(
                path,
                f"data file has {table.num_rows} rows but its manifest entry says {f.row_count}",
            )
        table = _conform(table, mapping, path, const)
        if deleted_rows is not None and len(deleted_rows):
            table = table.filter(pa.array(kept_rows(deleted_rows, table.num_rows)))
        return table

    def read_many(self, reads: Sequence[FileRead]) -> list[pa.Table]:
        """Read many files at once; the same result as :meth:`read` on each, in order.

        Parquet files that need the same physical columns are decoded in one Arrow dataset
        scan (its C++ thread pool overlaps the small files that primary-key tables are made
        of, instead of one Python call per file), each file's deletion vector applied to its
        slice of the scan; anything the scan cannot vouch for (row counts, missing columns,
        type clashes) is re-read file by file, which raises the precise error.
        """
        out: list[pa.Table | None] = [None] * len(reads)
        bulk: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(reads):
            if file_format(r.file.file_name) == "parquet" and not r.file.external_path:
                m = self._mapping_of(r)
                const = r.constants or {}
                wanted = tuple(
                    src for o, src, _, _ in m.output if src is not None and o not in const
                )
                if wanted:
                    bulk.setdefault((id(m), wanted), []).append(i)
                    continue
            out[i] = self.read_one(r)
        for (_, wanted), idxs in bulk.items():
            tables = self._scan(reads, idxs, list(wanted)) if len(idxs) > 1 else None
            for i in idxs:
                out[i] = self.read_one(reads[i]) if tables is None else tables[i]
        return [t for t in out if t is not None]

    def _mapping_of(self, r: FileRead) -> ColumnMapping:
        return self.mapping(
            r.file.schema_id, r.columns, r.system, keys=r.keys, kind=r.kind, sequence=r.sequence
        )

    def read_one(self, r: FileRead) -> pa.Table:
        return self.read(
            r.bucket_path,
            r.file,
            r.columns,
            system=r.system,
            keys=r.keys,
            kind=r.kind,
            sequence=r.sequence,
            deleted_rows=r.deleted_rows,
            constants=r.constants,
        )

    def _scan(
        self, reads: Sequence[FileRead], idxs: Sequence[int], wanted: list[str]
    ) -> dict[int, pa.Table] | None:
        """One dataset scan over ``reads[idxs]``; None when the per-file path must decide.

        The scan is consumed batch by batch, in file order: a file's deletion vector is
        applied to each of its batches as it arrives (its slice of the file's keep mask), so
        the rows a vector removes are dropped while the batch is fresh in the cache and the
        unfiltered batch is freed at once (its memory reused by the next batch) instead of
        the whole unfiltered scan being held and copied afterwards.
        """
        # pyarrow.dataset imports pandas (~0.3 s): loaded by the first multi-file scan, not by
        # ``import paimon_core`` (writers, metadata commands and CLI calls never need it)
        import pyarrow.dataset as pads

        paths = [file_path(reads[i].bucket_path, reads[i].file) for i in idxs]
        try:
            dataset = self._dataset(pads, reads, idxs, paths)
            scanner = dataset.scanner(columns=wanted, batch_size=_SCAN_BATCH_ROWS,
                                      memory_pool=scan_memory_pool())
            parts = _scan_parts(scanner, [reads[i] for i in idxs])
            # the footers were read by the scan (cached on the fragments)
            fragments = list(dataset.get_fragments())
            if parts is None or len(fragments) != len(idxs) or any(
                not set(wanted) <= set(fr.physical_schema.names)
                or fr.metadata.num_rows != reads[i].file.row_count
                for fr, i in zip(fragments, idxs)
            ):
                return None
        except (pa.ArrowException, OSError, ValueError, TypeError, PaimonError):
            return None
        return {
            i: _conform(part, self._mapping_of(reads[i]), path, reads[i].constants)
            for i, path, part in zip(idxs, paths, parts)
        }

    def _dataset(
        self, pads: Any, reads: Sequence[FileRead], idxs: Sequence[int], paths: list[str]
    ) -> Any:
        """The Arrow dataset of the files ``paths`` (of ``reads[idxs]``), in order."""
        # local files: memory-mapped (as :meth:`_read_physical`), no read coalescing
        # (measured ~15 % faster on many small files); object stores keep Arrow's default
        # pre-buffering (fewer, larger requests)
        fmt = pads.ParquetFileFormat(
            default_fragment_scan_options=pads.ParquetFragmentScanOptions(
                pre_buffer=not self.file_io.is_local
            )
        )
        dataset: Any
        if self.file_io.is_local:
            inner = [self.file_io.arrow_filesystem(p)[1] for p in paths]
            dataset = pads.dataset(inner, format=fmt, filesystem=_mapped_local_fs())
        else:
            # sized opens: no HEAD per file, a small file in one GET
            frags = [fmt.make_fragment(self._remote_source(p, reads[i].file.file_size))
                     for p, i in zip(paths, idxs)]
            dataset = pads.FileSystemDataset(frags, frags[0].physical_schema, fmt)
        return dataset

    def iter_batches(
        self, bucket_path: str, f: DataFileMeta, columns: Sequence[str], batch_size: int,
        *, system: bool = False,
    ) -> Iterator[pa.Table]:
        """Stream a file in bounded chunks (parquet row groups / batches); ``system`` as
        for :meth:`read` (see :meth:`iter_read`)."""
        yield from self.iter_read(FileRead(bucket_path, f, tuple(columns), system=system),
                                  batch_size)

    def iter_read(self, r: FileRead, batch_rows: int) -> Iterator[pa.Table]:
        """:meth:`read_one` of ``r`` in chunks of at most ``batch_rows`` rows, in file order
        (Parquet pages decoded batch by batch: memory bounded by a batch, not the file).
        Deletion vectors and constants apply per chunk; ORC files come whole.

        Raises:
            CorruptMetadataError: a missing or unreadable file, missing columns, or a row
                count other than the manifest's.
        """
        f = r.file
        path = file_path(r.bucket_path, f)
        if file_format(f.file_name) != "parquet":
            yield self.read_one(r)
            return
        mapping = self._mapping_of(r)
        const = r.constants or {}
        wanted = [src for out, src, _, _ in mapping.output if src is not None and out not in const]
        deleted = (
            np.sort(r.deleted_rows) if r.deleted_rows is not None and len(r.deleted_rows) else None
        )
        seen = 0
        try:
            with self._open_input(path, f.file_size) as fh:
                # column chunks read through a buffer, page by page: not whole, nor pre-buffered
                # (a row group of a large file holds tens of MB per column)
                pf = pq.ParquetFile(fh, buffer_size=_STREAM_BUFFER, pre_buffer=False)
                present = set(pf.schema_arrow.names)
                missing = [c for c in wanted if c not in present]
                if missing:
                    raise CorruptMetadataError(path, f"data file lacks columns {missing}")
                total = pf.metadata.num_rows
                batches: Iterator[pa.Table]
                if wanted:
                    batches = (
                        pa.Table.from_batches([b])
                        for b in pf.iter_batches(
                            batch_size=batch_rows, columns=wanted, use_threads=True
                        )
                    )
                else:  # no physical column needed: only the row count matters
                    batches = (
                        pa.table({"__n": pa.nulls(min(batch_rows, total - o))}).drop(["__n"])
                        for o in range(0, total, batch_rows)
                    )
                for t in batches:
                    n = t.num_rows
                    t = _conform(t, mapping, path, const)
                    if deleted is not None:
                        t = t.filter(pa.array(_keep(deleted, seen, n)))
                    seen += n
                    yield t
        except (FileNotFoundError, FileNotFoundInTableError) as e:
            raise CorruptMetadataError(path, "data file referenced by a snapshot is missing") from e
        except PaimonError:
            raise
        except (pa.ArrowInvalid, pa.ArrowException, OSError) as e:
            raise CorruptMetadataError(path, f"unreadable data file: {e}") from e
        if seen != f.row_count:
            raise CorruptMetadataError(
                path, f"data file has {seen} rows but its manifest entry says {f.row_count}"
            )

    def _remote_source(self, path: str, size: int) -> pa.NativeFile:
        """A file on an object store opened with the size its manifest records."""
        return pa.PythonFile(self.file_io.open_sized(path, size), mode="r")

    def _open_input(self, path: str, size: int) -> Any:
        if self.file_io.is_local:
            fs, inner = self.file_io.arrow_filesystem(path)
            return fs.open_input_file(inner)
        return self._remote_source(path, size)

    def _read_physical(self, path: str, columns: list[str], size: int) -> pa.Table:
        fmt = file_format(path)
        _, inner = self.file_io.arrow_filesystem(path)
        try:
            if fmt == "parquet":
                # local files are memory-mapped (measured fastest: no copies into buffers)
                with contextlib.ExitStack() as stack:
                    source: Any = inner
                    if not self.file_io.is_local:
                        source = stack.enter_context(self._remote_source(path, size))
                    pf = stack.enter_context(
                        pq.ParquetFile(source, memory_map=self.file_io.is_local)
                    )
                    present = set(pf.schema_arrow.names)
                    missing = [c for c in columns if c not in present]
                    if missing:
                        raise CorruptMetadataError(path, f"data file lacks columns {missing}")
                    if not columns:
                        n = pf.metadata.num_rows
                        return pa.table({"__n": pa.nulls(n)}).drop(["__n"]) if n else pa.table({})
                    return pf.read(columns=columns, use_threads=True)
            if fmt == "orc":
                with self._open_input(path, size) as fh:
                    of = paorc.ORCFile(fh)
                    if not columns:
                        return pa.table({"__n": pa.nulls(of.nrows)}).drop(["__n"])
                    return of.read(columns=columns)
            if fmt == "avro":
                with self._open_input(path, size) as fh:
                    try:
                        table, n = read_avro(fh, columns)
                    except KeyError as e:
                        raise CorruptMetadataError(path, f"data file lacks column {e}") from e
                    if not columns:
                        return pa.table({"__n": pa.nulls(n)}).drop(["__n"])
                    return table
        except (FileNotFoundError, FileNotFoundInTableError) as e:
            raise CorruptMetadataError(path, "data file referenced by a snapshot is missing") from e
        except PaimonError:
            raise
        except (pa.ArrowInvalid, pa.ArrowException, OSError) as e:
            raise CorruptMetadataError(path, f"unreadable data file: {e}") from e
        raise UnsupportedError(f"data file format {fmt!r} is not supported ({path})")


def _conform(
    table: pa.Table,
    mapping: ColumnMapping,
    path: str,
    constants: Mapping[str, pa.Scalar] | None = None,
) -> pa.Table:
    n = table.num_rows
    arrays = []
    names = []
    for out_name, src, dtype, src_type in mapping.output:
        target = to_arrow_type(dtype)
        if constants and out_name in constants:
            arrays.append(repeat(constants[out_name], n))
        elif src is None:
            arrays.append(pa.nulls(n, type=target))
        else:
            arrays.append(_read_as(table.column(src), src, src_type, dtype, target, path))
        names.append(out_name)
    if not arrays:
        return pa.table({"__n": pa.nulls(n)}).drop(["__n"]) if n else pa.table({})
    return pa.Table.from_arrays(arrays, names=names)


def _read_as(
    col: pa.ChunkedArray, src: str, src_type: DataType | None, dtype: DataType,
    target: pa.DataType, path: str,
) -> pa.ChunkedArray | pa.Array:
    """A file column as the current type: Java's cast when ALTER changed the type
    (:mod:`paimon_core.read.casts`), else only the Arrow representation adjusted."""
    try:
        if src_type is not None:
            return cast_evolved(col, src_type, dtype)
        return col if col.type == target else _cast(col, target)
    except CastError as e:
        raise CastError(e.value, e.source, e.target, e.reason, path=path, column=src) from e
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise CorruptMetadataError(
            path, f"column {src!r} of type {col.type} cannot be read as {dtype}: {e}"
        ) from e


def _cast_from(old: DataField | None, current: DataType) -> DataType | None:
    """The file's type of a column when reading it needs Java's value cast, else None (a
    widening, or a nested type: Java 0.9 evolves atomic types only; Arrow's cast adjusts a
    nested one's representation as before). A CHAR column changed to VARCHAR is no widening:
    an ORC file's padding is trimmed by its CHAR type (:func:`_orc_chars`)."""
    if old is None or not isinstance(old.type, AtomicType) or not isinstance(current, AtomicType):
        return None
    return None if is_widening(old.type, current) else old.type


def _orc_chars(table: pa.Table, mapping: ColumnMapping) -> pa.Table:
    """CHAR columns of an ORC file as Java reads them: trailing spaces removed (ORC's
    ``char(n)`` is stored padded to its length, and Java reads it through ORC's char reader,
    which trims; the file's type decides: the type read, or the type a value cast reads from)."""
    for _, src, dtype, src_type in mapping.output:
        file_type = src_type or dtype
        if src is not None and file_type.root is TypeRoot.CHAR and src in table.column_names:
            i = table.column_names.index(src)
            table = table.set_column(i, src, pc.utf8_rtrim(table.column(i), characters=" "))
    return table


def kept_rows(deleted: np.ndarray, n: int) -> np.ndarray:
    """The rows of an ``n``-row file that a deletion vector (positions, any order) keeps."""
    keep = np.ones(n, dtype=bool)
    keep[deleted[deleted < n]] = False
    return keep


@functools.cache
def _mapped_local_fs() -> pafs.LocalFileSystem:
    """The local filesystem of multi-file scans: files memory-mapped, not copied into read
    buffers (data files are immutable: never truncated while mapped)."""
    return pafs.LocalFileSystem(use_mmap=True)


def _scan_parts(scanner: Any, reads: Sequence[FileRead]) -> list[pa.Table] | None:
    """The rows of each of ``reads`` (in order) from a scan of their files, deletion vectors
    applied batch by batch; None when the scan's batches do not line up with the files'
    row counts (the per-file path then raises the precise error). The batches come in file
    order; which file a batch belongs to follows from the row counts (the caller checks
    each file's own row count against its manifest entry)."""
    schema = scanner.projected_schema
    parts: list[list[pa.RecordBatch]] = [[] for _ in reads]
    keeps: list[np.ndarray | None] = [None] * len(reads)
    seen = [0] * len(reads)
    k = 0
    for tagged in scanner.scan_batches():
        batch = tagged.record_batch
        n = batch.num_rows
        if not n:
            continue
        while k < len(reads) and seen[k] == reads[k].file.row_count:
            k += 1
        if k == len(reads) or seen[k] + n > reads[k].file.row_count:
            return None
        r = reads[k]
        if r.deleted_rows is not None and len(r.deleted_rows):
            if keeps[k] is None:
                keeps[k] = kept_rows(r.deleted_rows, r.file.row_count)
            keep = keeps[k]
            assert keep is not None
            part = keep[seen[k]:seen[k] + n]
            if not part.all():  # a batch the vector does not touch is kept as decoded
                batch = batch.filter(pa.array(part))
        seen[k] += n
        parts[k].append(batch)
    if any(s != r.file.row_count for s, r in zip(seen, reads)):
        return None
    return [pa.Table.from_batches(p, schema=schema) for p in parts]


def _keep(deleted: np.ndarray, offset: int, n: int) -> np.ndarray:
    """Rows ``offset .. offset + n`` of a file that a deletion vector (sorted positions)
    keeps."""
    keep = np.ones(n, dtype=bool)
    lo, hi = np.searchsorted(deleted, [offset, offset + n])
    keep[deleted[lo:hi] - offset] = False
    return keep


def repeat(value: pa.Scalar, n: int) -> pa.Array:
    """``n`` copies of one value (a partition column of a whole file), built directly from
    buffers (a ``take`` of a one-element array costs ten times more for strings)."""
    t = value.type
    if not value.is_valid:
        return pa.nulls(n, type=t)
    if pa.types.is_string(t) or pa.types.is_binary(t):
        raw = value.as_py()
        data = raw.encode() if isinstance(raw, str) else bytes(raw)
        if len(data) * n < 2**31:
            offsets = np.arange(0, (n + 1) * len(data), len(data) or 1, dtype=np.int32)
            if not data:
                offsets = np.zeros(n + 1, dtype=np.int32)
            return pa.Array.from_buffers(
                t, n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)]
            )
    elif pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_boolean(t):
        storage = pa.array([value]).to_numpy(zero_copy_only=False)
        return pa.array(np.repeat(storage, n), type=t)
    return pa.array([value], type=t).take(np.zeros(n, dtype=np.int32))


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    src = col.type
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(target):
        # INT96/ns or another unit -> the unit of the Paimon precision; LTZ <-> naive keeps
        # the stored instant (both are epoch based).
        if src.tz != target.tz:
            col = (
                pc.cast(col, pa.timestamp(src.unit, tz=target.tz))
                if src.tz is None
                else col.cast(pa.timestamp(src.unit))
                if target.tz is None
                else col
            )
        return col.cast(target, safe=False)
    return col.cast(target)


def fields_of(schema: TableSchema, names: Sequence[str]) -> list[DataField]:
    return [schema.field(n) for n in names]
