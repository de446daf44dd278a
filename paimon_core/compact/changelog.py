"""Changelog produced by compaction, vectorised (``FullChangelogMergeFunctionWrapper`` and
``LookupChangelogMergeFunctionWrapper`` of Paimon 0.9, applied to whole Arrow tables).

Both work on the records of a compaction grouped by key (sorted by key, then by the
sequence columns) and merge every key through the table's merge engine
(:func:`paimon_core.read.merge.merge_records`, never a special case per engine). Every
changelog row is a copy of a whole record (its sequence number included) with a new row kind:
``+I`` 0, ``-U`` 1, ``+U`` 2, ``-D`` 3; for one key ``-U`` precedes ``+U``.

* **full-compaction** (output = the max level): ``before`` = the key's record on the max
  level (the previous full state), ``after`` = the merged record.
  No before: ``+I after`` when after is not a retraction. Before and more than one record:
  ``-D before`` when after is a retraction, else ``-U before, +U after``. Before alone: no
  change.
* **lookup** (a compaction involving level-0 files): ``before`` = the newest record of the key
  on a level > 0 among the compacted files, else the one found by looking the key up in the
  levels above the output level (lowest level first); ``after`` = the merge of the key's
  level-0 records with ``before``. Only keys with level-0 records produce changelog: ``+I
  after`` when before is absent or a retraction, else ``-D before`` / ``-U before, +U after``.

``changelog-producer.row-deduplicate`` drops ``-U/+U`` pairs whose values are equal.

**first-row** tables compact like lookup ones but through ``FirstRowMergeFunctionWrapper``: a
key that exists on a level above the output is left out (its first row is already there),
the others keep their first record; with the lookup producer a first record coming from
level 0 is also the changelog, as it is (its own kind: ``+I``, or ``+U`` when it was written
as one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import PaimonError
from paimon_core.options import CoreOptions
from paimon_core.read.merge import merge_records
from paimon_core.spec.row_kind import RowKind, add_mask
from paimon_core.spec.system_fields import SEQUENCE_NUMBER, VALUE_KIND

__all__ = [
    "KeyedRecords",
    "first_row_lookup",
    "full_changelog",
    "group_rows",
    "lookup_changelog",
    "sort_by_key",
]

@dataclass(frozen=True)
class KeyedRecords:
    """How records are keyed and merged: key columns (``_KEY_*``), sequence columns
    (``sequence.field`` columns, then ``_SEQUENCE_NUMBER``), the value (table) columns and the
    table options (merge engine)."""

    key_columns: tuple[str, ...]
    sequence_columns: tuple[str, ...]
    value_columns: tuple[str, ...]
    options: CoreOptions
    row_deduplicate: bool = False
    primary_keys: tuple[str, ...] = ()

    @property
    def output_columns(self) -> list[str]:
        """Columns of a written record (the writer derives ``_KEY_*`` from the values)."""
        return [*self.value_columns, SEQUENCE_NUMBER, VALUE_KIND]

    def merge(self, table: pa.Table, levels: np.ndarray | None = None) -> pa.Table:
        """One record per key, sorted by key (``levels``: the level of every record, for
        the engines Java wraps in ``LookupMergeFunction``)."""
        merged = merge_records(table, list(self.key_columns), list(self.sequence_columns),
                               VALUE_KIND, self.options, primary_keys=self.primary_keys,
                               levels=levels)
        return sort_by_key(merged, self.key_columns)


def sort_by_key(table: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    if table.num_rows <= 1:
        return table
    if len(key_columns) == 1:
        col = table.column(key_columns[0])
        if pa.types.is_integer(col.type) and col.null_count == 0:
            k = np.asarray(col.to_numpy())
            if bool((k[1:] > k[:-1]).all()):
                return table
    order = pc.sort_indices(table, sort_keys=[(c, "ascending") for c in key_columns])
    return table.take(order)


def _new_key(col: pa.Array) -> np.ndarray:
    """Boolean per adjacent pair (i-1, i) of a sorted key column: the key changes."""
    prev, cur = col.slice(0, len(col) - 1), col.slice(1)
    neq = pc.not_equal(prev, cur)
    if pa.types.is_floating(col.type):  # equal NaNs are one key
        neq = pc.and_(neq, pc.invert(pc.and_(pc.is_nan(prev), pc.is_nan(cur))))
    return np.asarray(neq.to_numpy(zero_copy_only=False), dtype=bool)


def group_rows(table: pa.Table, rec: KeyedRecords) -> tuple[np.ndarray, np.ndarray, int]:
    """``(order, gid, groups)``: row indices sorted by key then sequence, the key group of
    every sorted position (0, 1, ... in key order) and the number of keys."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    sort_keys = [(c, "ascending", "at_start")
                 for c in (*rec.key_columns, *rec.sequence_columns)]
    order = np.asarray(pc.sort_indices(table, sort_keys=sort_keys).to_numpy(), dtype=np.int64)
    start = np.zeros(n, dtype=bool)
    start[0] = True
    idx = pa.array(order)
    for c in rec.key_columns:
        col = table.column(c).take(idx)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        start[1:] |= _new_key(col)
    gid = np.cumsum(start) - 1
    return order, gid, int(gid[-1]) + 1


def _kinds(table: pa.Table) -> np.ndarray:
    return np.asarray(table.column(VALUE_KIND).to_numpy(), dtype=np.int8)


def _aligned(merged: pa.Table, groups: int) -> None:
    if merged.num_rows != groups:
        raise PaimonError(
            f"the merge engine returned {merged.num_rows} records for {groups} keys")


def _assemble(
    rec: KeyedRecords, before: pa.Table, after: pa.Table, groups: int,
    b_idx: np.ndarray, b_kind: np.ndarray, b_group: np.ndarray,
    a_idx: np.ndarray, a_kind: np.ndarray, a_group: np.ndarray,
) -> pa.Table:
    """Changelog rows: before-records (``-U``/``-D``) and after-records (``+I``/``+U``)
    interleaved in key order, before first."""
    cols = rec.output_columns

    def part(src: pa.Table, idx: np.ndarray, kind: np.ndarray) -> pa.Table:
        t = src.take(pa.array(idx, pa.int64())).select(cols)
        return t.set_column(cols.index(VALUE_KIND), VALUE_KIND, pa.array(kind, pa.int8()))

    out = pa.concat_tables([part(before, b_idx, b_kind), part(after, a_idx, a_kind)])
    rank = np.concatenate([b_group * 2, a_group * 2 + 1])
    return out.take(pa.array(np.argsort(rank, kind="stable")))


def _equal_values(rec: KeyedRecords, before: pa.Table, b_idx: np.ndarray, after: pa.Table,
                  a_idx: np.ndarray) -> np.ndarray:
    """Per pair: the value columns are equal (``RecordEqualiser``; rare option, row-wise)."""
    cols = list(rec.value_columns)
    left = before.take(pa.array(b_idx, pa.int64())).select(cols).to_pylist()
    right = after.take(pa.array(a_idx, pa.int64())).select(cols).to_pylist()
    same: np.ndarray = np.array([x == y for x, y in zip(left, right)], dtype=bool)
    return same


def _changes(
    rec: KeyedRecords, before: pa.Table, after: pa.Table, groups: int,
    before_of: np.ndarray, emit: np.ndarray, only_before_unchanged: np.ndarray,
) -> pa.Table:
    """The changelog of keys ``emit`` given each key's before-record (index into ``before``,
    -1 = none) and after-record (row g of ``after``)."""
    add = add_mask(_kinds(after))
    has_before = before_of >= 0
    g = np.arange(groups)
    ins = emit & ~has_before & add
    dele = emit & has_before & ~add & ~only_before_unchanged
    upd = emit & has_before & add & ~only_before_unchanged
    if rec.row_deduplicate and upd.any():
        cand = np.flatnonzero(upd)
        same = _equal_values(rec, before, before_of[cand], after, cand)
        upd[cand[same]] = False
    b_groups = np.concatenate([g[dele], g[upd]])
    b_kind = np.concatenate([np.full(int(dele.sum()), RowKind.DELETE, np.int8),
                             np.full(int(upd.sum()), RowKind.UPDATE_BEFORE, np.int8)])
    a_groups = np.concatenate([g[ins], g[upd]])
    a_kind = np.concatenate([np.full(int(ins.sum()), RowKind.INSERT, np.int8),
                             np.full(int(upd.sum()), RowKind.UPDATE_AFTER, np.int8)])
    return _assemble(rec, before, after, groups, before_of[b_groups], b_kind, b_groups,
                     a_groups, a_kind, a_groups)


def full_changelog(
    records: pa.Table, levels: np.ndarray, max_level: int, rec: KeyedRecords
) -> tuple[pa.Table, pa.Table]:
    """Full-compaction changelog of ``records`` (every record of the compacted files, with
    the level of its file in ``levels``). Returns ``(merged records, changelog)``; merged
    records are sorted by key and include retractions (the caller drops them)."""
    order, gid, groups = group_rows(records, rec)
    merged = rec.merge(records, levels)
    _aligned(merged, groups)
    counts = np.bincount(gid, minlength=groups)
    on_top = np.flatnonzero(levels[order] == max_level)
    top = np.full(groups, -1, dtype=np.int64)
    if len(on_top):
        if len(np.unique(gid[on_top])) != len(on_top):
            raise PaimonError("a key appears twice on the max level (overlapping files)")
        top[gid[on_top]] = order[on_top]
    emit = np.ones(groups, dtype=bool)
    unchanged = (top >= 0) & (counts == 1)  # the top record alone: no change
    log = _changes(rec, records, merged, groups, top, emit, unchanged)
    return merged, log


def lookup_changelog(
    unit: pa.Table, unit_levels: np.ndarray, lookup: pa.Table | None,
    lookup_levels: np.ndarray | None, rec: KeyedRecords,
) -> tuple[pa.Table, pa.Table]:
    """Lookup changelog of the compacted records ``unit`` (levels of their files in
    ``unit_levels``), looking keys up in ``lookup`` (records of the levels above the output
    level, with their levels). Returns ``(merged records sorted by key, changelog)``."""
    n_unit = unit.num_rows
    if lookup is not None and lookup.num_rows:
        assert lookup_levels is not None
        base = pa.concat_tables([unit.select(lookup.column_names), lookup])
        levels = np.concatenate([unit_levels, lookup_levels])
    else:
        base = unit
        levels = unit_levels
    is_unit = np.arange(base.num_rows) < n_unit
    order, gid, groups = group_rows(base, rec)
    s_unit, s_level = is_unit[order], levels[order]
    has_unit = np.zeros(groups, dtype=bool)
    has_unit[gid[s_unit]] = True
    has_l0 = np.zeros(groups, dtype=bool)
    has_l0[gid[s_unit & (s_level == 0)]] = True
    # before: newest unit record on a level > 0 (last in sequence order) ...
    high = np.full(groups, -1, dtype=np.int64)
    pos = np.flatnonzero(s_unit & (s_level > 0))
    np.maximum.at(high, gid[pos], pos)
    # ... else the looked-up record of the lowest level above the output
    pos = np.flatnonzero(~s_unit)
    if len(pos):
        best = np.full(groups, np.iinfo(np.int64).max, dtype=np.int64)
        rank = s_level[pos].astype(np.int64) * (len(order) + 1) + pos
        np.minimum.at(best, gid[pos], rank)
        found = (high < 0) & (best != np.iinfo(np.int64).max)
        high[found] = best[found] % (len(order) + 1)
    before_of = np.where(high >= 0, order[np.maximum(high, 0)], -1)
    # merge input: level-0 records of the compacted keys plus their before-record
    inputs = order[s_unit & (s_level == 0)]
    keep = has_unit & (high >= 0)
    merge_in = np.sort(np.concatenate([inputs, before_of[keep]]))
    merged = rec.merge(base.take(pa.array(merge_in, pa.int64())), levels[merge_in])
    kept = np.flatnonzero(has_unit)
    _aligned(merged, len(kept))
    # changelog only for keys with level-0 records; a retracted before counts as absent
    before_kind = np.where(before_of >= 0, _kinds(base)[np.maximum(before_of, 0)], -1)
    before_of = np.where(add_mask(before_kind), before_of, -1)
    log = _changes(rec, base, merged, len(kept), before_of[kept], has_l0[kept],
                   np.zeros(len(kept), dtype=bool))
    return merged, log


def first_row_lookup(
    unit: pa.Table, unit_levels: np.ndarray, lookup: pa.Table | None, rec: KeyedRecords,
    *, produce_changelog: bool,
) -> tuple[pa.Table, pa.Table]:
    """First-row compaction involving level 0 (``FirstRowMergeFunctionWrapper``): returns
    ``(records to write sorted by key, changelog)``; ``lookup`` holds the records of the
    levels above the output level."""
    order, gid, groups = group_rows(unit, rec)
    merged = rec.merge(unit, unit_levels)
    _aligned(merged, groups)
    keep = np.ones(groups, dtype=bool)
    if lookup is not None and lookup.num_rows:
        cols = list(rec.key_columns)
        both = pa.concat_tables([merged.select(cols), lookup.select(cols)])
        b_order, b_gid, b_groups = group_rows(both, KeyedRecords(
            rec.key_columns, (), (), rec.options))
        from_lookup = b_order >= merged.num_rows
        seen = np.zeros(b_groups, dtype=bool)
        seen[b_gid[from_lookup]] = True
        is_merged = ~from_lookup
        # merged rows are keys 0..groups-1 in key order, as the groups of ``both`` they are in
        keep[b_order[is_merged]] = ~seen[b_gid[is_merged]]
    kept = merged.filter(pa.array(keep))
    if not produce_changelog:
        return kept, kept.slice(0, 0).select(rec.output_columns)
    # the first record itself when it comes from a level-0 file (sequence numbers identify
    # it), with its own row kind (Java adds the result KeyValue to the changelog unchanged)
    seq = np.asarray(unit.column(SEQUENCE_NUMBER).to_numpy(), dtype=np.int64)[order]
    win = np.asarray(merged.column(SEQUENCE_NUMBER).to_numpy(), dtype=np.int64)
    from_l0 = np.zeros(groups, dtype=bool)
    hit = (unit_levels[order] == 0) & (seq == win[gid])
    from_l0[gid[hit]] = True
    idx = np.flatnonzero(keep & from_l0)
    log = merged.take(pa.array(idx, pa.int64())).select(rec.output_columns)
    return kept, log
