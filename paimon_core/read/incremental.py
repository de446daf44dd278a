"""Reading an incremental plan merged per key, with retractions (``incremental-between``).

Planning lives in :mod:`paimon_core.scan.incremental` (see its docs for the semantics and
Java's merge order); this module merges the planned files of every (partition, bucket) like
Java 0.9 does for ``t$audit_log`` with ``incremental-between``.

Both modes stream: every section is merged chunk by chunk in memory bounded by
``paimon-core.merge.buffer-rows`` (:mod:`paimon_core.read.merge_stream`), and
:meth:`IncrementalRead.to_batches` yields the result as it goes. Changelog files repeat a key
(``-U``/``+U``): their runs are read in key-aligned batches, in Java's run order, and a key's
n-th record of a file merges with the n-th records of the other runs (``_OCCURRENCE``). The
one exception is a ``deduplicate`` section whose merge meets a sequence-number tie: its
winner follows Java's loser tree, replayed record by record over the whole section.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.read.data_file import DataFileReader, FileRead
from paimon_core.read.merge import merge_records, sections
from paimon_core.read.merge_stream import merge_section_batches, section_chunks
from paimon_core.read.table_read import TableRead
from paimon_core.scan.java_merge_order import Record, java_sorted_runs, loser_tree_merge
from paimon_core.scan.predicate import filter_table
from paimon_core.scan.split import DataSplit
from paimon_core.spec.keys import key_decoder
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.option_enums import MergeEngine
from paimon_core.spec.row_kind import retract_mask, to_short_strings
from paimon_core.spec.system_fields import KEY_PREFIX, KIND_COLUMN, SEQUENCE_NUMBER, VALUE_KIND

__all__ = ["IncrementalRead"]

_OCCURRENCE = "_OCCURRENCE"

SortKey = tuple[Any, ...]


# ---------------------------------------------------------------------------------------------
# reading


class IncrementalRead:
    """Reads an :class:`IncrementalPlan` merged per key, with retractions and a ``_kind``
    column first (Java 0.9 ``incremental-between`` on ``t$audit_log``).

    Args:
        read: a :class:`TableRead` of the table (columns and predicate are taken from it).
        mode: the plan's mode (changelog files may repeat a key: see the module docstring).
    """

    def __init__(self, read: TableRead, mode: Literal["delta", "changelog"]) -> None:
        self.read = read
        self.mode = mode
        self.schema = read.schema
        self.options = read.options
        self.reader: DataFileReader = read.reader

    @property
    def output_schema(self) -> pa.Schema:
        """``_kind`` then the read's columns."""
        return pa.schema([pa.field(KIND_COLUMN, pa.string()), *self.read.output_schema])

    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table:
        return _concat(list(self._tables(splits)), self.output_schema)

    def to_batches(
        self, splits: Sequence[DataSplit], *, batch_size: int = 65536
    ) -> Iterator[pa.RecordBatch]:
        """:meth:`to_arrow` as a stream of batches of at most ``batch_size`` rows, split by
        split and section by section, each section merged in bounded chunks (memory bounded
        by ``paimon-core.merge.buffer-rows`` per section, not by the splits' size)."""
        for t in self._tables(splits):
            yield from t.to_batches(max_chunksize=batch_size)

    def _tables(self, splits: Sequence[DataSplit]) -> Iterator[pa.Table]:
        r = self.read
        schema = self.output_schema
        if not r.is_pk:
            for t in r.iter_changes(splits, KIND_COLUMN):
                yield t.cast(schema)
            return
        for split in splits:
            for t in self._pk_split(split, schema):
                if t.num_rows:
                    yield t

    def _pk_split(self, split: DataSplit, out_schema: pa.Schema) -> Iterator[pa.Table]:
        r = self.read
        decode = key_decoder(self.schema)
        seq = [*self.options.sequence_fields, SEQUENCE_NUMBER]
        if self.mode == "delta":
            # data files hold every key once with its own sequence number: the result does not
            # depend on Java's run order, and sections merge in bounded chunks
            for group in sections(split.files, decode):
                for t in merge_section_batches(
                    self.reader, split.bucket_path, group, options=self.options,
                    decode_key=decode, columns=r.read_columns, sequence_columns=seq,
                    ignore_delete=self.options.ignore_delete(), with_levels=False,
                ):
                    yield self._finish(t, out_schema)
            return
        for section in java_sorted_runs(split.files, decode):
            for t in self._changelog_section(split, section, seq):
                yield self._finish(t, out_schema)

    def _changelog_section(
        self, split: DataSplit, runs: list[list[DataFileMeta]], seq: list[str]
    ) -> Iterator[pa.Table]:
        """One section of changelog files merged (retractions kept), chunk by chunk."""
        keys = [KEY_PREFIX + k for k in self.schema.trimmed_primary_keys]
        group_keys = [*keys, _OCCURRENCE]
        if self._may_tie(runs) and any(
            _has_sequence_tie(t, group_keys, seq) for t in self._changelog_chunks(split, runs)
        ):
            yield self._whole_section(split, runs, keys, group_keys, seq)
            return
        for t in self._changelog_chunks(split, runs):
            if self.options.ignore_delete():
                t = t.filter(pa.array(~retract_mask(t.column(VALUE_KIND).to_numpy())))
            yield merge_records(t, group_keys, seq, VALUE_KIND, self.options)

    def _changelog_chunks(
        self, split: DataSplit, runs: list[list[DataFileMeta]]
    ) -> Iterator[pa.Table]:
        """The section's records in key-aligned chunks (every key's records in one chunk,
        runs concatenated in Java's order), each record with its occurrence in its file."""
        keys = [KEY_PREFIX + k for k in self.schema.trimmed_primary_keys]
        reads = [FileRead(split.bucket_path, f, tuple(self.read.read_columns), system=True)
                 for run in runs for f in run]
        for chunk in section_chunks(
            self.reader, reads, keys, key_decoder(self.schema),
            buffer_rows=self.options.merge_buffer_rows, runs=runs, unique_keys=False,
        ):
            t = chunk.records
            # a key lies in one file of a run: occurrences per run part are per file
            occ = np.empty(t.num_rows, dtype=np.int64)
            start = 0
            for n in chunk.sizes:
                occ[start:start + n] = _occurrences(t.slice(start, n), keys)
                start += n
            yield t.append_column(_OCCURRENCE, pa.array(occ))

    def _may_tie(self, runs: list[list[DataFileMeta]]) -> bool:
        """Whether a deduplicate merge of these runs may meet a sequence-number tie (only
        then does Java's loser tree decide the winner): never with ``ignore-delete`` or a
        single run; never when the runs' sequence-number ranges are disjoint and no
        ``sequence.field`` is set (a merge group takes at most one record per run)."""
        if (
            len(runs) < 2
            or self.options.ignore_delete()
            or self.options.merge_engine is not MergeEngine.DEDUPLICATE
        ):
            return False
        if self.options.sequence_fields:
            return True
        ranges = sorted((min(f.min_sequence_number for f in run),
                         max(f.max_sequence_number for f in run)) for run in runs)
        return any(a[1] >= b[0] for a, b in itertools.pairwise(ranges))

    def _whole_section(
        self, split: DataSplit, runs: list[list[DataFileMeta]], keys: list[str],
        group_keys: list[str], seq: list[str],
    ) -> pa.Table:
        """A section with a sequence tie, read whole and merged as Java's loser tree does."""
        tables = []
        for run in runs:
            parts = []
            for f in run:
                t = self.reader.read(split.bucket_path, f, self.read.read_columns, system=True)
                parts.append(t.append_column(_OCCURRENCE, pa.array(_occurrences(t, keys))))
            tables.append(pa.concat_tables(parts) if len(parts) > 1 else parts[0])
        return self._merge(tables, keys, group_keys, seq)

    def _finish(self, t: pa.Table, out_schema: pa.Schema) -> pa.Table:
        """Merged records (retractions kept) -> the ``_kind`` column first, filtered."""
        r = self.read
        t = t.append_column(KIND_COLUMN, to_short_strings(t.column(VALUE_KIND)))
        if r.predicate is not None and t.num_rows:
            t = filter_table(t, r.predicate, [self.schema.field(c) for c in r.read_columns])
        return t.select([KIND_COLUMN, *r.columns]).cast(out_schema)

    def _merge(
        self, runs: list[pa.Table], keys: list[str], group_keys: list[str], seq: list[str]
    ) -> pa.Table:
        """One section's merge result (retractions kept)."""
        t = pa.concat_tables(runs) if len(runs) > 1 else runs[0]
        if self.options.ignore_delete():
            kinds = t.column(VALUE_KIND).to_numpy()
            t = t.filter(pa.array(~retract_mask(kinds)))
            return merge_records(t, group_keys, seq, VALUE_KIND, self.options)
        # data files of a bucket never share a key's sequence number (spec 7.3); changelog
        # files of lookup / full-compaction producers do
        if (
            self.mode == "changelog"
            and len(runs) > 1
            and self.options.merge_engine is MergeEngine.DEDUPLICATE
            and _has_sequence_tie(t, group_keys, seq)
        ):
            # who wins a tie depends on Java's loser tree: replay it for this section
            records: list[list[Record]] = []
            offset = 0
            for run in runs:
                key_rows = _rows(run, keys)
                seq_rows = _rows(run, seq)
                records.append(
                    [(k, q, offset + i) for i, (k, q) in enumerate(zip(key_rows, seq_rows))]
                )
                offset += run.num_rows
            winners = [g[-1] for g in loser_tree_merge(records)]
            return t.take(pa.array(winners, type=pa.int64()))
        return merge_records(t, group_keys, seq, VALUE_KIND, self.options)


def _concat(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    parts = [p for p in parts if p.num_rows]
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _rows(t: pa.Table, columns: Sequence[str]) -> list[SortKey]:
    """Row tuples of some columns, nulls first in comparisons (``(False,)`` < ``(True, v)``)."""
    cols = [t.column(c).to_pylist() for c in columns]
    return [tuple((v is not None, v) for v in row) for row in zip(*cols)]


def values_equal(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Element-wise ``a[i] == b[i]``, nulls equal to each other (nested types compared as
    values)."""
    try:
        eq = pc.equal(a, b).fill_null(False).to_numpy(zero_copy_only=False)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # lists, maps, structs
        return np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist())], dtype=bool)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b)).to_numpy(zero_copy_only=False)
    return np.asarray(eq | both_null, dtype=bool)


def adjacent_equal(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``col[i] == col[i + 1]`` (as :func:`values_equal`)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    n = len(col)
    return values_equal(col.slice(0, n - 1), col.slice(1))


def _has_sequence_tie(t: pa.Table, group_keys: Sequence[str], seq: Sequence[str]) -> bool:
    """Whether some merge group's highest sequence appears twice (then the row order decides
    the winner)."""
    n = t.num_rows
    if n <= 1:
        return False
    order = pc.sort_indices(
        t, sort_keys=[(c, "ascending", "at_start") for c in (*group_keys, *seq)]
    )
    s = t.select([*group_keys, *seq]).take(order)
    same_group = np.ones(n - 1, dtype=bool)
    for c in group_keys:
        same_group &= adjacent_equal(s.column(c))
    same_seq = same_group.copy()
    for c in seq:
        same_seq &= adjacent_equal(s.column(c))
    last = np.ones(n, dtype=bool)
    last[:-1] = ~same_group
    return bool(np.any(same_seq & last[1:]))


def _occurrences(t: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """For every row, how many earlier rows of the same file have its key (0, 1, ...)."""
    n = t.num_rows
    if n <= 1:
        return np.zeros(n, dtype=np.int64)
    order = pc.sort_indices(t, sort_keys=[(k, "ascending") for k in keys]).to_numpy()
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for k in keys:
        col = t.column(k).take(pa.array(order))
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        neq = pc.not_equal(col.slice(0, n - 1), col.slice(1)).fill_null(True)
        new[1:] |= neq.to_numpy(zero_copy_only=False)
    pos = np.arange(n, dtype=np.int64)
    starts = pos[new]
    occ_sorted = pos - starts[np.cumsum(new) - 1]
    occ = np.empty(n, dtype=np.int64)
    occ[order] = occ_sorted
    return occ
