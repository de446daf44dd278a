"""``incremental-between-scan-mode = diff``: the difference of two snapshots' merged states.

Mirrors ``org.apache.paimon.table.source.snapshot.IncrementalDiffStartingScanner`` and
``IncrementalDiffSplitRead`` (Paimon 1.1; 0.9 diffs this way only between two tags,
``IncrementalTagStartingScanner``), as read from ``t$audit_log`` (deletes kept): per primary key

* live at ``start`` only: ``-D`` with the value it had at ``start``;
* live at ``end`` only: its row at ``end``, with its stored kind (``+I`` / ``+U``);
* live at both with another value (any column): its row at ``end``; with the same value:
  nothing.

Unlike the ``delta`` / ``changelog`` modes, which read the files the APPEND snapshots of the
range added and so pass over an OVERWRITE (a truncate, an INSERT OVERWRITE), the diff compares
whole states: a truncate inside the range shows as ``-D`` of every key that was live at
``start`` and is not live again at ``end``. Primary-key tables only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import UnsupportedError
from paimon_core.read.incremental import IncrementalRead, adjacent_equal, values_equal
from paimon_core.read.table_read import TableRead
from paimon_core.scan.incremental import check_range
from paimon_core.scan.planner import ScanPlanner
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.row_kind import RowKind, arrow_short_retract_mask
from paimon_core.spec.snapshot import Snapshot
from paimon_core.spec.system_fields import KIND_COLUMN

__all__ = ["DIFF_MODE", "diff_states", "live_state", "read_incremental_diff"]

#: the ``incremental-between-scan-mode`` value of this read
DIFF_MODE = "diff"

_SIDE = "_diff_side"  # 0 = start, 1 = end


def read_incremental_diff(
    snapshots: SnapshotManager,
    planner: ScanPlanner,
    read: TableRead,
    start: int,
    end: int,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """The diff of the states at ``start`` and ``end`` (``start = 0``: the empty table before
    the first snapshot), ``_kind`` first, then ``columns`` (all by default). ``read`` reads
    every column (values are compared whole) under the read's predicate.

    Raises:
        UnsupportedError: an append table, or deletion vectors.
        SchemaError / SnapshotExpiredError / SnapshotNotExistError: a bad range.
    """
    schema = planner.schema
    if not schema.primary_keys:
        raise UnsupportedError(
            f"incremental-between-scan-mode={DIFF_MODE} needs a primary-key table"
        )
    if planner.options.deletion_vectors_enabled:
        raise UnsupportedError(
            f"incremental-between-scan-mode={DIFF_MODE} is not supported with "
            "deletion-vectors.enabled"
        )
    if not check_range(snapshots, start, end) or start == end:
        empty = pa.schema([pa.field(KIND_COLUMN, pa.string()), *read.output_schema])
        return empty.empty_table().select([KIND_COLUMN, *(columns or read.columns)])
    before = live_state(read, planner, snapshots.snapshot(start) if start > 0 else None)
    after = live_state(read, planner, snapshots.snapshot(end))
    out = diff_states(before, after, list(schema.primary_keys))
    return out.select([KIND_COLUMN, *(columns or read.columns)])


def live_state(read: TableRead, planner: ScanPlanner, snapshot: Snapshot | None) -> pa.Table:
    """The merged rows live at ``snapshot`` with their stored kinds (``+I`` / ``+U``) in a
    ``_kind`` column first; empty for None (before the first snapshot)."""
    plan = planner.plan(snapshot)
    data = IncrementalRead(read, "delta").to_arrow(plan.splits)
    return data.filter(pc.invert(arrow_short_retract_mask(data.column(KIND_COLUMN))))


def diff_states(start: pa.Table, end: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Per key of ``keys``, what changed from ``start`` to ``end`` (both from
    :func:`live_state`, same schema, each key at most once), sorted by key; see the module
    docs."""
    both = pa.concat_tables([
        start.append_column(_SIDE, pa.array(np.zeros(start.num_rows, np.int8))),
        end.append_column(_SIDE, pa.array(np.ones(end.num_rows, np.int8))),
    ])
    n = both.num_rows
    if n == 0:
        return start
    order = pc.sort_indices(both, sort_keys=[*((k, "ascending") for k in keys),
                                             (_SIDE, "ascending")])
    both = both.take(order)
    same_key = np.ones(n - 1, dtype=bool)
    for k in keys:
        same_key &= adjacent_equal(both.column(k))
    # a pair = row i (start) and row i + 1 (end) of one key
    pair_first = np.flatnonzero(same_key)
    in_pair = np.zeros(n, dtype=bool)
    in_pair[pair_first] = True
    in_pair[pair_first + 1] = True
    side = both.column(_SIDE).to_numpy()
    values = [c for c in both.column_names if c not in (KIND_COLUMN, _SIDE)]
    changed = _rows_differ(both, values, pair_first, pair_first + 1)
    keep = ~in_pair  # keys on one side only
    keep[pair_first[changed] + 1] = True  # changed keys: the row at end
    out = both.filter(pa.array(keep))
    gone = pa.array(side[keep] == 0)
    kinds = pc.if_else(gone, pa.scalar(RowKind.DELETE.short_string), out.column(KIND_COLUMN))
    out = out.set_column(0, pa.field(KIND_COLUMN, pa.string()), kinds)
    return out.drop_columns([_SIDE]).cast(start.schema)


def _rows_differ(t: pa.Table, columns: Sequence[str], left: np.ndarray,
                 right: np.ndarray) -> np.ndarray:
    differ = np.zeros(len(left), dtype=bool)
    if len(left) == 0:
        return differ
    li, ri = pa.array(left), pa.array(right)
    for c in columns:
        col = t.column(c)
        differ |= ~values_equal(col.take(li).combine_chunks(), col.take(ri).combine_chunks())
    return differ
