"""Sorting records by (key, sequence) and cutting them into one segment per key.

The vectorised counterpart of Java's ``SortMergeReader`` feeding a ``MergeFunction`` key by
key (``org.apache.paimon.mergetree.compact.SortMergeReaderWithMinHeap``): one stable Arrow
sort by the key columns, then the sequence columns (``sequence.field`` columns with nulls
first, as the generated ``RecordComparator`` orders them, then ``_SEQUENCE_NUMBER``), and
boundaries found with array comparisons. Per-segment reductions use numpy (``reduceat``,
"last valid index per segment") and, where Java's result depends on the order of every
step, :func:`by_rank`: the records of all keys are visited rank by rank (the first record of
every key, then the second...), each step vectorised over the keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Segments",
    "by_rank",
    "dense_rank",
    "first_in_group",
    "last_in_group",
    "run_starts",
    "segment",
    "take_or_null",
]


@dataclass(frozen=True)
class Segments:
    """Records sorted by (key, sequence) and grouped by key.

    Attributes:
        order: positions into the input table, in (key, sequence) order.
        gid: key group (0, 1, ... in key order) of every sorted position.
        starts: first sorted position of every group.
        lengths: number of records of every group.
    """

    order: np.ndarray
    gid: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray

    @property
    def groups(self) -> int:
        return len(self.starts)


def _combined(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def adjacent_changes(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Boolean per adjacent pair ``(i, i + 1)``: the values differ (nulls equal each other,
    NaNs equal each other)."""
    col = _combined(col)
    n = len(col)
    if n <= 1:
        return np.zeros(0, dtype=bool)
    a, b = col.slice(0, n - 1), col.slice(1)
    neq = pc.not_equal(a, b)
    if pa.types.is_floating(col.type):
        neq = pc.and_kleene(neq, pc.invert(pc.and_(pc.is_nan(a), pc.is_nan(b))))
    out = np.asarray(neq.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    if col.null_count:
        an = np.asarray(a.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        bn = np.asarray(b.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        out |= an != bn
    return out


def segment(
    table: pa.Table,
    key_columns: Sequence[str],
    sequence_columns: Sequence[str],
    *,
    sequence_ordered: bool = False,
) -> Segments:
    """Sort ``table`` by key then sequence (stable: ties keep their input order) and find the
    key groups. ``sequence_ordered``: the rows of every key already come in sequence order (a
    stable sort by key suffices)."""
    n = table.num_rows
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return Segments(z, z, z, z)
    order: np.ndarray | None = None
    if len(key_columns) == 1 and (sequence_ordered or len(sequence_columns) == 1):
        k = _combined(table.column(key_columns[0]))
        if (pa.types.is_integer(k.type) or pa.types.is_date(k.type)) and not k.null_count:
            keys = np.asarray(k.to_numpy(zero_copy_only=False))  # dates: datetime64
            if sequence_ordered:
                order = np.argsort(keys, kind="stable")
            else:
                s = _combined(table.column(sequence_columns[0]))
                if pa.types.is_integer(s.type) and not s.null_count:
                    order = np.lexsort((np.asarray(s.to_numpy()), keys))
            if order is not None:
                ks = keys[order]
                change = ks[1:] != ks[:-1]
    if order is None:
        cols = list(key_columns) if sequence_ordered else [*key_columns, *sequence_columns]
        idx = pc.sort_indices(
            table.select(cols),
            sort_keys=[(c, "ascending", "at_start") for c in cols],
        )
        order = np.asarray(idx.to_numpy(), dtype=np.int64)
        change = np.zeros(n - 1, dtype=bool)
        for c in key_columns:
            change |= adjacent_changes(table.column(c).take(idx))
    order = np.asarray(order, dtype=np.int64)
    start_mask = np.empty(n, dtype=bool)
    start_mask[0] = True
    start_mask[1:] = change
    starts = np.flatnonzero(start_mask)
    gid = np.cumsum(start_mask) - 1
    lengths = np.diff(np.append(starts, n))
    return Segments(order, gid.astype(np.int64), starts.astype(np.int64), lengths)


def run_starts(gid: np.ndarray) -> np.ndarray:
    """Positions where a run of equal values of a nondecreasing ``gid`` starts."""
    if len(gid) == 0:
        return np.zeros(0, dtype=np.int64)
    m = np.empty(len(gid), dtype=bool)
    m[0] = True
    m[1:] = gid[1:] != gid[:-1]
    return np.flatnonzero(m)


def last_in_group(gid: np.ndarray, mask: np.ndarray, groups: int) -> np.ndarray:
    """Per group: the last position whose ``mask`` is set (-1 for none); ``gid``
    nondecreasing."""
    out = np.full(groups, -1, dtype=np.int64)
    idx = np.flatnonzero(mask)
    if len(idx):
        g = gid[idx]
        last = np.ones(len(idx), dtype=bool)
        last[:-1] = g[1:] != g[:-1]
        out[g[last]] = idx[last]
    return out


def first_in_group(gid: np.ndarray, mask: np.ndarray, groups: int) -> np.ndarray:
    """Per group: the first position whose ``mask`` is set (-1 for none)."""
    out = np.full(groups, -1, dtype=np.int64)
    idx = np.flatnonzero(mask)
    if len(idx):
        g = gid[idx]
        first = np.ones(len(idx), dtype=bool)
        first[1:] = g[1:] != g[:-1]
        out[g[first]] = idx[first]
    return out


def take_or_null(arr: pa.Array | pa.ChunkedArray, idx: np.ndarray) -> pa.Array:
    """``arr[idx]``, null where ``idx`` is -1."""
    arr = _combined(arr)
    missing = idx < 0
    if missing.any():
        return arr.take(pa.array(np.where(missing, 0, idx), pa.int64(), mask=missing))
    return arr.take(pa.array(idx, pa.int64()))


def by_rank(gid: np.ndarray) -> list[np.ndarray]:
    """Positions of a nondecreasing ``gid`` grouped by their rank inside their run: element
    ``k`` holds the ``k``-th position of every run that has one (ascending). Folding
    element after element replays Java's record-by-record order for all keys at once."""
    n = len(gid)
    if n == 0:
        return []
    starts = run_starts(gid)
    run_len = np.diff(np.append(starts, n))
    rank = np.arange(n, dtype=np.int64) - np.repeat(starts, run_len)
    order = np.argsort(rank, kind="stable")
    counts = np.bincount(rank)
    return np.split(order, np.cumsum(counts)[:-1])


def dense_rank(table: pa.Table) -> np.ndarray:
    """Dense rank (0, 1, ...) of every row of ``table`` in lexicographic column order, nulls
    first and equal to each other (the order of Paimon's generated ``RecordComparator``)."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    idx = pc.sort_indices(
        table, sort_keys=[(c, "ascending", "at_start") for c in table.column_names]
    )
    change = np.zeros(n - 1, dtype=bool)
    for c in table.column_names:
        change |= adjacent_changes(table.column(c).take(idx))
    sorted_rank = np.concatenate([[0], np.cumsum(change)]).astype(np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[np.asarray(idx.to_numpy(), dtype=np.int64)] = sorted_rank
    return rank
