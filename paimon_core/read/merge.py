"""Merge-on-read for primary-key tables.

Two implementations of each merge engine behind one shape:

* a *reference* that walks records one by one in (key, sequence) order, the way Java's
  ``SortMergeReader`` feeds ``MergeFunction``s (slow, obviously right, used by property tests);
* the *vectorised* one used by readers: sort once with Arrow, find the last record of every key
  with array comparisons, take those rows.

Plus the interval partitioning of a bucket's files into *sections* (``IntervalPartition``):
files whose key ranges cannot overlap are read without merging.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.options import CoreOptions
from paimon_core.read import engines
from paimon_core.read.engines.reference import reference_deduplicate
from paimon_core.spec.keys import KeyDecoder
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.option_enums import MergeEngine
from paimon_core.spec.row_kind import arrow_retract_mask

SortKey = tuple[Any, ...]


# ---------------------------------------------------------------------------------------------
# sections


def sections(
    files: Sequence[DataFileMeta], decode_key: KeyDecoder
) -> list[list[DataFileMeta]]:
    """Split files into groups whose key ranges do not overlap each other
    (``org.apache.paimon.mergetree.compact.IntervalPartition``)."""
    keyed = sorted(
        ((decode_key(f.min_key), decode_key(f.max_key), i, f) for i, f in enumerate(files)),
        key=lambda t: (t[0], t[1], t[2]),
    )
    out: list[list[DataFileMeta]] = []
    bound: SortKey | None = None
    for lo, hi, _, f in keyed:
        if bound is None or lo > bound:
            out.append([f])
            bound = hi
        else:
            out[-1].append(f)
            if hi > bound:
                bound = hi
    return out


# ---------------------------------------------------------------------------------------------
# deduplicate


def _last_of_each_key(sorted_keys: list[pa.Array | pa.ChunkedArray], n: int) -> np.ndarray:
    """Boolean mask: row i is the last row of its key run in already-sorted key columns."""
    last = np.zeros(n, dtype=bool)
    if n == 0:
        return last
    last[-1] = True
    if n == 1:
        return last
    for col in sorted_keys:
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        nxt = col.slice(1)
        cur = col.slice(0, n - 1)
        neq = pc.not_equal(cur, nxt)
        # NaN keys: compare bit patterns so equal NaNs stay one key
        if pa.types.is_floating(col.type):
            both_nan = pc.and_(pc.is_nan(cur), pc.is_nan(nxt))
            neq = pc.and_(neq, pc.invert(both_nan))
        last[:-1] |= neq.to_numpy(zero_copy_only=False)
    return last


def deduplicate(
    table: pa.Table,
    key_columns: Sequence[str],
    sequence_columns: Sequence[str],
    *,
    sequence_ordered: bool = False,
    key_order: bool = True,
) -> pa.Table:
    """Keep, for every key, the record with the highest (sequence columns...) order.

    ``sequence_columns`` lists user ``sequence.field`` columns first and ``_SEQUENCE_NUMBER``
    last; ties keep the later row. Retract rows are *not* dropped here: the winner may be a
    ``-D`` (the key is then deleted), which the caller filters out. ``sequence_ordered`` says
    the rows of every key already come in ascending sequence order (files concatenated by
    disjoint ascending sequence ranges, each sorted by key then sequence): a stable sort by
    key alone then suffices. ``key_order``: return the winners sorted by key (what compaction
    and the writer need); when false they keep their input order, which spares a gather of
    every column (a filter instead of a take) and is all a reader needs.
    """
    n = table.num_rows
    if n <= 1:
        return table
    assert sequence_columns or sequence_ordered, "no sequence columns, rows not in order"
    if sequence_ordered:
        sequence_columns = ()  # a stable sort by key keeps each key's rows in sequence order
    cols = [table.column(c) for c in key_columns]
    if len(sequence_columns) <= 1 and all(
        (pa.types.is_integer(k.type) or pa.types.is_date(k.type)) and not k.null_count
        for k in cols
    ):  # integer keys: one numpy (lex)sort
        keys = [_as_int(np.asarray(k.to_numpy())) for k in cols]
        code = _key_code(keys)
        if code is not None:
            keys = [code]
        if len(keys) == 1 and sequence_ordered:
            order = np.argsort(keys[0], kind="stable")
        else:
            seq = [] if sequence_ordered else [table.column(sequence_columns[0]).to_numpy()]
            order = np.lexsort((*seq, *reversed(keys)))  # stable: ties keep input order
        last = np.empty(n, dtype=bool)
        last[-1] = True
        for i, k in enumerate(keys):
            ks = k[order]
            if i == 0:
                np.not_equal(ks[1:], ks[:-1], out=last[:-1])
            else:
                last[:-1] |= ks[1:] != ks[:-1]
        return _winners(table, order, last, key_order)
    sort_keys = [(c, "ascending", "at_start") for c in (*key_columns, *sequence_columns)]
    order = pc.sort_indices(table, sort_keys=sort_keys)
    keys_sorted = [table.column(c).take(order) for c in key_columns]
    last = _last_of_each_key(keys_sorted, n)
    return _winners(table, order.to_numpy(), last, key_order)


def _as_int(values: np.ndarray) -> np.ndarray:
    """Dates (numpy ``datetime64[D]``) as their int64 day numbers (same order)."""
    return values.view(np.int64) if values.dtype.kind == "M" else values


def _key_code(keys: Sequence[np.ndarray]) -> np.ndarray | None:
    """Several integer key columns as one int64 of the same order (mixed radix over each
    column's range; one sort instead of a lexsort), or None when it would not fit."""
    if len(keys) < 2:
        return None
    code: np.ndarray | None = None
    total = 1
    for k in keys:
        if k.dtype == np.uint64:
            return None
        lo, hi = int(k.min()), int(k.max())
        span = hi - lo + 1
        total *= span
        if total >= 2**62:
            return None
        c = k.astype(np.int64) - lo
        code = c if code is None else code * span + c
    return code


def _winners(table: pa.Table, order: np.ndarray, last: np.ndarray, key_order: bool) -> pa.Table:
    """The rows ``order[last]`` of ``table``: in that (key) order, or in input order."""
    if key_order:
        return table.take(pa.array(order[last]))
    if last.all():
        return table
    keep = np.zeros(table.num_rows, dtype=bool)
    keep[order[last]] = True
    return table.filter(pa.array(keep))


def merge_records(
    table: pa.Table,
    key_columns: Sequence[str],
    sequence_columns: Sequence[str],
    kind_column: str,
    options: CoreOptions,
    *,
    sequence_ordered: bool = False,
    primary_keys: Sequence[str] = (),
    levels: np.ndarray | None = None,
    key_order: bool = True,
) -> pa.Table:
    """The table's merge engine over records of possibly many files (``MergeFunction`` behind
    ``ReducerMergeFunctionWrapper``): ``deduplicate``, ``partial-update``, ``aggregation``,
    ``first-row`` (:mod:`paimon_core.read.engines`), honouring ``sequence.field`` and
    ``ignore-delete`` as Paimon 0.9 does.

    ``table`` holds the key columns, the sequence columns (``sequence.field`` columns first,
    ``_SEQUENCE_NUMBER`` last), ``kind_column`` and value columns, in any row order. Returns one
    row per key: the engine's result, carrying a sequence number and a row kind (a key with a
    single record keeps that record unchanged, as in Java). A result whose kind is a retraction
    (-U/-D) means "the key is deleted": readers drop it, compaction keeps it unless it writes
    the last level. Used by reads, by the writer's buffer and by compaction.
    ``sequence_ordered``: the rows of every key already come in ascending sequence order (see
    :func:`deduplicate`); an optimisation hint only. ``kind_column`` may be absent from
    ``table`` when no input row is a retraction. ``primary_keys``: the table's primary-key
    columns (partition columns included) when ``table`` holds them as values: they are never
    aggregated (``FieldPrimaryKeyAgg``); the value columns behind ``_KEY_<k>`` key columns and
    the key columns themselves are recognised without it. ``levels``: the LSM level of every
    row; for tables whose merge function Java wraps in ``LookupMergeFunction``
    (``changelog-producer=lookup``, deletion vectors, ``force-lookup``; partial-update and
    aggregation) a key's records on levels > 0 other than its newest one are left out (that
    one already holds their merged state). ``key_order=False``: the result rows may come in
    any order (readers); by default they are sorted by key (compaction and writers).

    Raises:
        UnsupportedError: retractions the engine refuses (first-row, partial-update without
            the options that allow them, aggregate functions without retraction), an unknown
            engine.
        SchemaError: invalid engine options (unknown aggregate function...).
    """
    engine = options.merge_engine
    if engine is MergeEngine.DEDUPLICATE:
        has_retract = (
            kind_column in table.column_names
            and options.ignore_delete()
            and bool(pc.any(arrow_retract_mask(table.column(kind_column))).as_py())
        )
        if not has_retract:
            return deduplicate(
                table, key_columns, sequence_columns, sequence_ordered=sequence_ordered,
                key_order=key_order,
            )
    return engines.merge(
        table, key_columns, sequence_columns, kind_column, options,
        primary_keys=primary_keys, sequence_ordered=sequence_ordered, levels=levels,
    )


def drop_retracts(table: pa.Table, kind_column: str) -> pa.Table:
    """Remove ``-U`` / ``-D`` rows."""
    kinds = table.column(kind_column)
    retract = arrow_retract_mask(kinds)
    if not pc.any(retract).as_py():
        return table
    return table.filter(pc.invert(retract))


# ---------------------------------------------------------------------------------------------
# reference (row-at-a-time) implementation, for tests: see paimon_core.read.engines.reference

__all__ = [
    "deduplicate",
    "drop_retracts",
    "merge_records",
    "reference_deduplicate",
    "sections",
]
