"""Reading an incremental plan merged per key, with retractions (``incremental-between``).

Planning lives in :mod:`paimon_core.scan.incremental` (see its docs for the semantics and
Java's merge order); this module merges the planned files of every (partition, bucket) like
Java 0.9 does for ``t$audit_log`` with ``incremental-between``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.options import CoreOptions
from paimon_core.read.data_file import DataFileReader
from paimon_core.read.merge import merge_records, sections
from paimon_core.read.merge_stream import merge_section_batches
from paimon_core.read.table_read import TableRead
from paimon_core.scan.java_merge_order import Record, java_sorted_runs, loser_tree_merge
from paimon_core.scan.predicate import filter_table
from paimon_core.scan.split import DataSplit
from paimon_core.spec.keys import key_decoder
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
        self.options = CoreOptions(self.schema.options)
        self.reader: DataFileReader = read.reader

    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table:
        r = self.read
        if not r.is_pk:
            out_schema = pa.schema([pa.field(KIND_COLUMN, pa.string()), *r.output_schema])
            return r.read_changes(splits, KIND_COLUMN).cast(out_schema)
        parts = [self._read_pk_split(s) for s in splits]
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return pa.schema(
                [pa.field(KIND_COLUMN, pa.string()), *r.output_schema]
            ).empty_table()
        return pa.concat_tables(parts)

    def _read_pk_split(self, split: DataSplit) -> pa.Table:
        r = self.read
        decode = key_decoder(self.schema)
        keys = [KEY_PREFIX + k for k in self.schema.trimmed_primary_keys]
        seq = [*self.options.sequence_fields, SEQUENCE_NUMBER]
        group_keys = [*keys, _OCCURRENCE] if self.mode == "changelog" else keys
        out_schema = pa.schema([pa.field(KIND_COLUMN, pa.string()), *r.output_schema])
        outs = []
        if self.mode == "delta":
            # data files hold every key once with its own sequence number: the result does not
            # depend on Java's run order, and sections merge in bounded chunks
            for group in sections(split.files, decode):
                for t in merge_section_batches(
                    self.reader, split.bucket_path, group, options=self.options,
                    decode_key=decode, columns=r.read_columns, sequence_columns=seq,
                    ignore_delete=self.options.ignore_delete(), with_levels=False,
                ):
                    outs.append(self._finish(t, out_schema))
            return _concat(outs, out_schema)
        for section in java_sorted_runs(split.files, decode):
            runs: list[pa.Table] = []
            for run in section:
                tables = []
                for f in run:
                    t = self.reader.read(split.bucket_path, f, r.read_columns, system=True)
                    if self.mode == "changelog":
                        t = t.append_column(_OCCURRENCE, pa.array(_occurrences(t, keys)))
                    tables.append(t)
                runs.append(pa.concat_tables(tables) if len(tables) > 1 else tables[0])
            t = self._merge(runs, keys, group_keys, seq)
            outs.append(self._finish(t, out_schema))
        return _concat(outs, out_schema)

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
