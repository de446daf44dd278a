"""The ``partial-update`` merge engine, vectorised (``PartialUpdateMergeFunction`` of Paimon
0.9).

Records of a key are applied oldest to newest onto an empty row; the result is an ``+I``
record carrying the sequence number of the last ``+I``/``+U`` record.

* Without sequence groups every ``+I``/``+U`` record overwrites the columns it has non-null
  (per column: the last non-null value). Retractions: skipped with ``ignore-delete``
  (fallback ``partial-update.ignore-delete``); with
  ``partial-update.remove-record-on-delete`` a ``-D`` removes the row and ``-U`` is skipped;
  otherwise they are an error.
* Sequence groups (``fields.<s1,...>.sequence-group = f1,...``): a record updates a group's
  columns (nulls included) only when its values of the group's sequence fields compare
  greater than or equal to the row's (nulls first; a record whose sequence fields are all
  null does not touch the group); a retraction that wins nulls the group's columns and sets
  its sequence fields. Columns outside every group behave as without groups (retractions
  never touch them). ``fields.<f>.aggregate-function`` (or ``fields.default-aggregate-
  function``) columns aggregate: ``agg`` for winning records, ``aggReversed`` for older
  ones, ``retract`` for retractions. The running "row sequence" of a group is a running
  maximum of dense ranks, so winners are found for all keys at once.

Deviations (Java's result is not defined or not usable there; documented in the README):
a key whose records are all retractions yields its last record unchanged (a retraction,
i.e. "deleted"; Java 0.9 yields an all-null ``+I`` row with a stale sequence number);
an ``+I`` after a ``-D`` with ``partial-update.remove-record-on-delete`` starts a new row
(Java 0.9 throws a NullPointerException, 1.0 does the same as here); aggregate functions on
a group's sequence field are refused.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.options import CoreOptions
from paimon_core.read.engines.aggregators import (
    AGG,
    RETRACT,
    REVERSED,
    FieldAgg,
    aggregate,
)
from paimon_core.read.engines.base import Records
from paimon_core.read.engines.segments import (
    dense_rank,
    last_in_group,
    run_starts,
    take_or_null,
)
from paimon_core.spec.row_kind import RowKind

__all__ = ["check_partial_update", "merge_partial_update"]



def check_partial_update(
    options: CoreOptions, field_names: list[str], aggregated: set[str]
) -> None:
    """The option checks of ``PartialUpdateMergeFunction.Factory``.

    Args:
        options: the table options.
        field_names: the table's columns.
        aggregated: columns with an aggregate function (explicit or the default).

    Raises:
        SchemaError: unknown or repeated sequence-group fields, aggregate functions without
            sequence groups, conflicting delete options.
        UnsupportedError: an aggregate function on a sequence-group sequence field.
    """
    seen: dict[str, str] = {}
    seq_fields: set[str] = set()
    for seq, members in options.sequence_groups():
        key = f"fields.{','.join(seq)}.sequence-group"
        for f in (*seq, *members):
            if f not in field_names:
                raise SchemaError(f"Field {f} can not be found in table schema ({key})")
        for f in members:
            if f in seen:
                raise SchemaError(f"Field {f} is defined repeatedly by multiple groups: {key}")
            seen[f] = key
        seq_fields.update(seq)
    groups = bool(options.sequence_groups())
    if aggregated and not groups:
        raise SchemaError("Must use sequence group for aggregation functions.")
    bad = sorted(aggregated & seq_fields)
    if bad:
        raise UnsupportedError(
            f"aggregate functions on sequence-group sequence fields {bad} are not supported "
            "(set fields.<f>.aggregate-function only on grouped or ungrouped value columns)"
        )
    remove = options.partial_update_remove_record_on_delete
    if remove and options.ignore_delete():
        raise SchemaError(
            "ignore-delete and partial-update.remove-record-on-delete have conflicting "
            "behavior so should not be enabled at the same time."
        )
    if remove and groups:
        raise SchemaError(
            "sequence group and partial-update.remove-record-on-delete have conflicting "
            "behavior so should not be enabled at the same time."
        )


def _valid(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _last_value(records: Records, column: str, mask: np.ndarray) -> pa.Array:
    """Per key: the column's last non-null value among the rows of ``mask``."""
    x = records.column(column)
    return take_or_null(x, last_in_group(records.gid, mask & _valid(x), records.groups))


def _previous_max(gid: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Per row: the largest ``rank`` of the earlier rows of its run (-1 for the first)."""
    if len(rank) == 0:
        return rank
    width = int(rank.max()) + 2
    enc = gid * width + rank + 1
    cm = np.maximum.accumulate(enc)
    prev = np.empty_like(cm)
    prev[0] = 0
    prev[1:] = cm[:-1]
    out: np.ndarray = prev - gid * width - 1
    out[run_starts(gid)] = -1
    return out


def merge_partial_update(
    records: Records, options: CoreOptions, aggregators: Mapping[str, tuple[FieldAgg, bool]]
) -> pa.Table:
    """One ``+I`` record per key of ``records`` (keys with two or more records).

    Raises:
        UnsupportedError: a retraction that no option allows.
    """
    gid, groups = records.gid, records.groups
    retract = records.retract
    n = len(gid)
    ignore_delete = options.ignore_delete()
    remove = options.partial_update_remove_record_on_delete
    seq_groups = [
        (seq, members) for seq, members in options.sequence_groups()
        if any(c in records.table.column_names for c in (*seq, *members))
    ]
    insert = ~retract
    everything = np.ones(n, dtype=bool)
    last = last_in_group(gid, everything, groups)
    latest = last_in_group(gid, insert, groups)  # latestSequenceNumber
    values: dict[str, pa.Array] = {}
    use_record = np.where(latest < 0, last, -1)  # only retractions: the last one, as is
    live = insert
    if not options.sequence_groups():
        if retract.any() and not ignore_delete and not remove:
            raise UnsupportedError(
                "By default, Partial update can not accept delete records, you can choose one "
                "of the following solutions: 1. Configure 'ignore-delete' to ignore delete "
                "records. 2. Configure 'sequence-group's to retract partial columns. (or "
                "'partial-update.remove-record-on-delete' to remove the row on -D)"
            )
        if remove:
            last_delete = last_in_group(gid, records.kinds == RowKind.DELETE, groups)
            live = insert & (np.arange(n) > last_delete[gid])
            deleted = (last_delete >= 0) & (last_in_group(gid, live, groups) < 0)
            use_record = np.where(deleted, last_delete, use_record)
    grouped: set[str] = set()
    for seq, members in seq_groups:
        missing = [c for c in seq if c not in records.table.column_names]
        if missing:
            raise SchemaError(f"sequence-group fields {missing} are missing from the records")
        part = ~(retract & ignore_delete)
        any_seq = np.zeros(n, dtype=bool)
        for c in seq:
            any_seq |= _valid(records.column(c))
        part &= any_seq
        pidx = np.flatnonzero(part)
        pg = gid[pidx]
        rank = dense_rank(records.table.select(list(seq)).take(pa.array(pidx, pa.int64())))
        win = rank >= _previous_max(pg, rank)
        p_retract = retract[pidx]
        winner = last_in_group(pg, win, groups)  # positions into pidx
        w_row = np.where(winner >= 0, pidx[np.maximum(winner, 0)], -1) if len(pidx) else winner
        w_live = np.where((w_row >= 0) & ~retract[np.maximum(w_row, 0)], w_row, -1)
        ops = np.where(p_retract, RETRACT, np.where(win, AGG, REVERSED)).astype(np.int8)
        for c in seq:
            values[c] = take_or_null(records.column(c), w_row)
            grouped.add(c)
        for c in members:
            if c not in records.table.column_names or c in records.constant_columns or c in seq:
                continue
            grouped.add(c)
            if c in aggregators:
                agg, ignore = aggregators[c]
                x = records.column(c).take(pa.array(pidx, pa.int64()))
                values[c] = aggregate(agg, x, pg, ops, groups, ignore_retract=ignore)
            else:
                values[c] = take_or_null(records.column(c), w_live)
    for c in records.value_columns:
        if c in grouped:
            continue
        if c in aggregators:
            agg, ignore = aggregators[c]
            idx = np.flatnonzero(live)
            x = records.column(c).take(pa.array(idx, pa.int64()))
            ops = np.full(len(idx), AGG, dtype=np.int8)
            values[c] = aggregate(agg, x, gid[idx], ops, groups, ignore_retract=ignore)
        else:
            values[c] = _last_value(records, c, live)
    rep = np.where(latest >= 0, latest, last)
    merged = records.assemble(values, rep, rep, np.zeros(groups, dtype=np.int8))
    return records.replace_rows(merged, use_record)
