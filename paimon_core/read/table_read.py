"""Reading planned splits into Arrow (``org.apache.paimon.table.source.TableRead``).

Append splits are read file by file. Primary-key splits are cut into sections of files whose
key ranges cannot overlap; a one-file section is read as is (retract rows dropped), a section
of several files is merged with the table's merge engine (:func:`merge_records`). Filters are
applied row-exactly *after* merging, so an old version of a key can never resurface.
``to_arrow`` merges whole sections (fastest when everything is kept anyway); ``to_batches``
merges them chunk by chunk in bounded memory (:mod:`paimon_core.read.merge_stream`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from paimon_core.io.file_io import FileIO
from paimon_core.layout import TableContext
from paimon_core.options import CoreOptions
from paimon_core.read import engines
from paimon_core.read.data_file import (
    DataFileReader,
    FileRead,
    repeat,
)
from paimon_core.read.merge import (
    drop_retracts,
    merge_records,
    sections,
)
from paimon_core.read.merge_stream import merge_section_batches
from paimon_core.scan.predicate import Predicate, filter_table, referenced_fields
from paimon_core.scan.split import DataSplit
from paimon_core.schema_manager import SchemaManager
from paimon_core.spec.deletion_vector import decode_deletion_vectors
from paimon_core.spec.index_manifest import DeletionVectorMeta
from paimon_core.spec.keys import key_decoder
from paimon_core.spec.option_enums import MergeEngine
from paimon_core.spec.row_kind import retract_mask, to_short_strings
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.system_fields import KIND_COLUMN, SEQUENCE_NUMBER, VALUE_KIND
from paimon_core.threads import pool_threads
from paimon_core.types import AtomicType, DataType, TypeRoot, to_arrow_schema, to_arrow_type

_CONSTANT_ROOTS = frozenset(
    {
        TypeRoot.CHAR,
        TypeRoot.VARCHAR,
        TypeRoot.BOOLEAN,
        TypeRoot.TINYINT,
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.DATE,
    }
)


def _constant_safe(t: DataType) -> bool:
    """Partition types whose decoded partition value is exactly the stored column value."""
    return isinstance(t, AtomicType) and t.root in _CONSTANT_ROOTS


@dataclass(frozen=True)
class _SplitPlan:
    """The files a split needs and how to turn them into the split's rows."""

    reads: list[FileRead]
    finish: Callable[[list[pa.Table]], pa.Table]


class TableRead:
    """Reads splits of one table.

    Args:
        file_io: storage.
        schema: the schema to read with (usually the latest), or that schema resolved
            (:attr:`FileStoreTable.context`: its options are not parsed again).
        schemas: to look up the schemas old files were written with.
        columns: output columns (None = all, in schema order).
        predicate: row filter, applied exactly.
    """

    def __init__(
        self,
        file_io: FileIO,
        schema: TableSchema | TableContext,
        schemas: SchemaManager,
        columns: Sequence[str] | None = None,
        predicate: Predicate | None = None,
        *,
        max_workers: int | None = None,
    ) -> None:
        self.file_io = file_io
        self.options: CoreOptions = (schema.options if isinstance(schema, TableContext)
                                     else CoreOptions(schema.options))
        schema = self.schema = schema.schema if isinstance(schema, TableContext) else schema
        self.columns = list(columns) if columns is not None else schema.field_names
        for c in self.columns:
            schema.field(c)  # typed error for unknown columns
        self.predicate = predicate
        self.max_workers = max_workers or pool_threads()  # paimon_core.threads
        self.reader = DataFileReader(file_io, schema, schemas)
        self.schemas = schemas
        needed = list(self.columns)
        if predicate is not None:
            needed += [
                c
                for c in schema.field_names
                if c in referenced_fields(predicate) and c not in needed
            ]
        self.is_pk = bool(schema.primary_keys)
        if self.is_pk:
            # every merge engine of Paimon 0.9; its options are checked once, here
            engines.validate(schema, self.options)
            for c in engines.extra_read_columns(schema, needed, self.options):
                needed.append(c)
            for c in self.options.sequence_fields:
                if c not in needed:
                    needed.append(c)
            # merging keys on the value's primary-key columns (same values as _KEY_*)
            for c in schema.trimmed_primary_keys:
                if c not in needed:
                    needed.append(c)
        self.read_columns = needed
        self._constant_types = {
            k: to_arrow_type(schema.field(k).type)
            for k in schema.partition_keys
            if k in needed and _constant_safe(schema.field(k).type)
        }
        self.output_schema = to_arrow_schema([schema.field(c) for c in self.columns])

    # ---- public
    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table:
        # all files of all splits are decoded together (one Arrow scan per kind of read),
        # then each split is merged / filtered on its own
        plans = [self._plan_split(s) for s in splits]
        reads = [r for p in plans for r in p.reads]
        tables = self.reader.read_many(reads)
        jobs = []
        start = 0
        for p in plans:
            jobs.append((p, tables[start : start + len(p.reads)]))
            start += len(p.reads)
        outs: list[pa.Table]
        if len(jobs) > 1 and self.max_workers > 1:
            with ThreadPoolExecutor(min(self.max_workers, len(jobs))) as pool:
                outs = list(pool.map(lambda j: j[0].finish(j[1]), jobs))
        else:
            outs = [p.finish(t) for p, t in jobs]
        outs = [t for t in outs if t.num_rows]
        if not outs:
            return self.output_schema.empty_table()
        return pa.concat_tables(outs)

    def to_batches(
        self, splits: Sequence[DataSplit], *, batch_size: int = 65536
    ) -> Iterator[pa.RecordBatch]:
        """Stream the rows split by split, in batches of at most ``batch_size`` rows. Memory is
        bounded by one batch for append splits, and for primary-key splits by
        ``paimon-core.merge.buffer-rows`` rows per section, shared by its sorted runs (the
        streaming merge of :mod:`paimon_core.read.merge_stream`), whatever the bucket's size
        and its number of runs."""
        for split in splits:
            if self.is_pk:
                parts: Iterator[pa.Table] = self._iter_pk(split)
            else:
                parts = self._iter_append(split, batch_size)
            for t in parts:
                yield from t.to_batches(max_chunksize=batch_size)

    def read_split(self, split: DataSplit) -> pa.Table:
        plan = self._plan_split(split)
        return plan.finish(self.reader.read_many(plan.reads))

    def _plan_split(self, split: DataSplit) -> _SplitPlan:
        if self.is_pk:
            return self._plan_pk(split)
        const = self._constants(split)
        vectors = self._vectors(split)
        reads = [
            FileRead(
                split.bucket_path,
                f,
                tuple(self.read_columns),
                deleted_rows=vectors.get(f.file_name),
                constants=const,
            )
            for f in split.files
        ]

        def finish(tables: list[pa.Table]) -> pa.Table:
            parts = [self._finish(t) for t in tables]
            parts = [p for p in parts if p.num_rows]
            return pa.concat_tables(parts) if parts else self.output_schema.empty_table()

        return _SplitPlan(reads, finish)

    # ---- internals
    def _iter_append(self, split: DataSplit, batch_size: int) -> Iterator[pa.Table]:
        vectors = self._vectors(split)
        for f in split.files:
            if f.file_name in vectors:
                yield self._finish(
                    self.reader.read(
                        split.bucket_path,
                        f,
                        self.read_columns,
                        deleted_rows=vectors[f.file_name],
                    )
                )
                continue
            for chunk in self.reader.iter_batches(
                split.bucket_path, f, self.read_columns, batch_size
            ):
                out = self._finish(chunk)
                if out.num_rows:
                    yield out

    def _finish(self, table: pa.Table) -> pa.Table:
        if self.predicate is not None and table.num_rows:
            table = filter_table(
                table, self.predicate, [self.schema.field(c) for c in self.read_columns]
            )
        # the table's nullability (files may declare NOT NULL columns optional)
        return table.select(self.columns).cast(self.output_schema)

    def _constants(self, split: DataSplit) -> dict[str, pa.Scalar]:
        """Partition columns of a split, known from its partition: not decoded from files."""
        if not self._constant_types:
            return {}
        keys = self.schema.partition_keys
        if len(split.partition_values) != len(keys):
            return {}
        out = {}
        for k, v in zip(keys, split.partition_values):
            t = self._constant_types.get(k)
            if t is not None:
                try:
                    out[k] = pa.scalar(v, type=t)
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                    return {}
        return out

    def _vectors(self, split: DataSplit) -> dict[str, np.ndarray]:
        """The deletion vectors of the split's files (data file name -> deleted positions):
        each DV index file read once, the vectors it holds for these files decoded together
        (one read per bucket's index file, not one per data file)."""
        by_path: dict[str, list[DeletionVectorMeta]] = {}
        for name, df in split.deletion_files:
            by_path.setdefault(df.path, []).append(
                DeletionVectorMeta(name, df.offset, df.length, None))
        out: dict[str, np.ndarray] = {}
        for path, ranges in by_path.items():
            out.update(decode_deletion_vectors(self.file_io.read_bytes(path), ranges, path))
        return out

    def _plan_pk(self, split: DataSplit) -> _SplitPlan:
        keys = list(self.schema.trimmed_primary_keys)
        seq = [c for c in self.options.sequence_fields] + [SEQUENCE_NUMBER]
        groups = ([[f] for f in split.files] if split.raw_convertible
                  else sections(split.files, key_decoder(self.schema)))
        # Java's AggregateMergeFunction applies retractions even with ignore-delete
        ignore_delete = (self.options.ignore_delete()
                         and self.options.merge_engine is not MergeEngine.AGGREGATE)
        const, vectors = self._constants(split), self._vectors(split)
        reads: list[FileRead] = []
        # LookupMergeFunction (lookup changelog, deletion vectors) needs each record's level
        lookup = engines.lookup_wrapped(self.options)
        plain_dedup = (
            self.options.merge_engine is MergeEngine.DEDUPLICATE
            and not self.options.sequence_fields
            and not lookup
        )
        # per section: (number of files, read as is, rows of a key in sequence order,
        # sequence numbers read, levels)
        recipe: list[tuple[int, bool, bool, bool, tuple[int, ...]]] = []
        for group in groups:
            # a lone file without retract rows needs no merge: its value columns as they are
            # (delete_row_count is None, i.e. unknown, in files of old writers)
            if len(group) == 1 and group[0].delete_row_count == 0:
                reads.append(FileRead(split.bucket_path, group[0], tuple(self.read_columns),
                                      deleted_rows=vectors.get(group[0].file_name),
                                      constants=const))
                recipe.append((1, True, True, True, ()))
                continue
            group = sorted(group, key=lambda f: (f.min_sequence_number, f.max_sequence_number))
            ordered = not self.options.sequence_fields and all(
                a.max_sequence_number < b.min_sequence_number for a, b in itertools.pairwise(group)
            )
            # Row kinds are always read here: pypaimon 2.1 records delete_row_count 0 for files
            # holding -D rows (rowkind.field). Partition constants are added after the merge.
            # Sequence numbers are not read when the files' order already is the sequence
            # order and the plain deduplicate merge (a stable sort by key) needs nothing else.
            columns = tuple(c for c in self.read_columns if c not in const)
            with_seq = not (ordered and plain_dedup)
            reads.extend(
                FileRead(
                    split.bucket_path,
                    f,
                    columns,
                    system=True,
                    keys=False,
                    sequence=with_seq,
                    deleted_rows=vectors.get(f.file_name),
                )
                for f in group
            )
            recipe.append((len(group), False, ordered, with_seq, tuple(f.level for f in group)))

        def finish(tables: list[pa.Table]) -> pa.Table:
            outs = []
            start = 0
            for n, as_is, ordered, with_seq, file_levels in recipe:
                parts = tables[start : start + n]
                start += n
                if as_is:
                    outs.append(self._finish(parts[0]))
                    continue
                t = pa.concat_tables(parts) if n > 1 else parts[0]
                levels = (
                    np.repeat(np.asarray(file_levels), [p.num_rows for p in parts])
                    if lookup else None
                )
                if ignore_delete:
                    live = ~retract_mask(np.asarray(t.column(VALUE_KIND).to_numpy()))
                    t = t.filter(pa.array(live))
                    levels = None if levels is None else levels[live]
                if n > 1:
                    t = merge_records(
                        t, keys, seq if with_seq else [], VALUE_KIND, self.options,
                        sequence_ordered=ordered, primary_keys=self.schema.primary_keys,
                        levels=levels, key_order=False,
                    )
                t = drop_retracts(t, VALUE_KIND)
                for name, value in const.items():
                    t = t.append_column(name, repeat(value, t.num_rows))
                outs.append(self._finish(t))
            outs = [o for o in outs if o.num_rows]
            return pa.concat_tables(outs) if outs else self.output_schema.empty_table()

        return _SplitPlan(reads, finish)

    def _iter_pk(self, split: DataSplit) -> Iterator[pa.Table]:
        """The rows of a primary-key split, section by section, each merged in bounded
        chunks (the same result as :meth:`_plan_pk`, which merges whole sections)."""
        decode = key_decoder(self.schema)
        groups = (
            [[f] for f in split.files]
            if split.raw_convertible
            else sections(split.files, decode)
        )
        const = self._constants(split)
        columns = tuple(c for c in self.read_columns if c not in const)
        buffer_rows = self.options.merge_buffer_rows
        vectors = self._vectors(split)
        for group in groups:
            if len(group) == 1 and group[0].delete_row_count == 0:  # as is (see _plan_pk)
                f = group[0]
                read = FileRead(split.bucket_path, f, tuple(self.read_columns),
                                deleted_rows=vectors.get(f.file_name), constants=const)
                merged: Iterator[pa.Table] = self.reader.iter_read(read, buffer_rows)
            else:
                deleted = {f.file_name: vectors[f.file_name] for f in group
                           if f.file_name in vectors}
                merged = merge_section_batches(
                    self.reader, split.bucket_path, group, options=self.options,
                    decode_key=decode, columns=columns,
                    key_columns=self.schema.trimmed_primary_keys,
                    sequence_columns=[*self.options.sequence_fields, SEQUENCE_NUMBER],
                    primary_keys=self.schema.primary_keys, deleted_rows=deleted,
                    keep_retracts=False, system_columns=False, key_order=False,
                    buffer_rows=buffer_rows,
                )
            for t in merged:
                for name, value in const.items():
                    if name not in t.column_names:
                        t = t.append_column(name, repeat(value, t.num_rows))
                out = self._finish(t)
                if out.num_rows:
                    yield out

    # ---- incremental (unmerged) reading
    def read_changes(self, splits: Sequence[DataSplit], kind_column: str = KIND_COLUMN) -> pa.Table:
        """Rows of the given (delta / changelog) splits as written, each with its row kind
        (``+I``, ``-U``, ``+U``, ``-D``) in ``kind_column``, first."""
        parts = list(self.iter_changes(splits, kind_column))
        if not parts:
            return self.changes_schema(kind_column).empty_table()
        return pa.concat_tables(parts)

    def changes_schema(self, kind_column: str = KIND_COLUMN) -> pa.Schema:
        """The schema of :meth:`read_changes`: ``kind_column`` then the output columns."""
        return pa.schema([pa.field(kind_column, pa.string()), *self.output_schema])

    def iter_changes(
        self, splits: Sequence[DataSplit], kind_column: str = KIND_COLUMN
    ) -> Iterator[pa.Table]:
        """:meth:`read_changes` file by file, each file in batches of at most
        ``paimon-core.merge.buffer-rows`` rows (empty batches left out)."""
        # one schema for all parts (files may declare NOT NULL columns optional, or not)
        schema = self.changes_schema(kind_column)
        for split in splits:
            for f in split.files:
                read = FileRead(split.bucket_path, f, tuple(self.read_columns),
                                system=self.is_pk)
                for t in self.reader.iter_read(read, self.options.merge_buffer_rows):
                    if self.is_pk:
                        kinds = t.column(VALUE_KIND)
                    else:
                        kinds = pa.array(np.zeros(t.num_rows, dtype=np.int8))
                    t = self._with_kind(t, kinds, kind_column)
                    if self.predicate is not None and t.num_rows:
                        t = filter_table(
                            t, self.predicate, [self.schema.field(c) for c in self.read_columns]
                        )
                    if t.num_rows:
                        yield t.select([kind_column, *self.columns]).cast(schema)

    @staticmethod
    def _with_kind(t: pa.Table, kinds: pa.Array | pa.ChunkedArray, name: str) -> pa.Table:
        return t.append_column(name, to_short_strings(kinds))
