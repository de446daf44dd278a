"""The frame every vectorised merge engine runs in (``ReducerMergeFunctionWrapper`` over a
``MergeFunction``, fed by ``SortMergeReader``).

:func:`run_engine` sorts the records of a bucket by (key, sequence), passes every key with a
single record through unchanged (Java's ``ReducerMergeFunctionWrapper`` never calls the merge
function for a lone record: a lone ``-D`` stays a ``-D``, a lone ``+U`` keeps its kind and its
values), and hands the keys with several records, as :class:`Records`, to the engine, which
returns one row per key. The result holds one row per key, in key order, with the input's
columns and types.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.read.engines.segments import last_in_group, segment, take_or_null
from paimon_core.spec.row_kind import retract_mask
from paimon_core.spec.system_fields import KEY_PREFIX

__all__ = ["Records", "run_engine"]



@dataclass(frozen=True)
class Records:
    """The records of the keys that have two or more, sorted by key then sequence.

    Attributes:
        table: the records (all input columns).
        gid: key group of every row (0, 1, ... nondecreasing).
        groups: number of keys.
        kinds: row kind of every row (0..3; all 0 when the input has no kind column).
        key_columns: the merge key; with ``constant_columns`` (primary-key columns in the
            value, when known) they are the same in every record of a key.
        value_columns: every other column except the sequence number and the kind: the
            columns the engine merges (``sequence.field`` columns included).
        sequence_number: the ``_SEQUENCE_NUMBER`` column.
        kind_column: the row-kind column, None when the input has none.
    """

    table: pa.Table
    gid: np.ndarray
    groups: int
    kinds: np.ndarray
    key_columns: tuple[str, ...]
    constant_columns: frozenset[str]
    value_columns: tuple[str, ...]
    sequence_number: str
    kind_column: str | None

    @property
    def retract(self) -> np.ndarray:
        return retract_mask(self.kinds)

    def column(self, name: str) -> pa.Array:
        col = self.table.column(name)
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)

    def pick(self, idx: np.ndarray) -> pa.Table:
        """One whole record per key (``idx`` >= 0 for every key)."""
        return self.table.take(pa.array(idx, pa.int64()))

    def assemble(
        self,
        values: dict[str, pa.Array],
        representative: np.ndarray,
        sequence_from: np.ndarray,
        kind: np.ndarray,
    ) -> pa.Table:
        """One row per key: ``values`` for the merged columns, the other columns (keys,
        constants, and merged columns missing from ``values``) from the ``representative``
        record, the sequence number from record ``sequence_from``, the given kinds."""
        cols = []
        for f in self.table.schema:
            if f.name == self.kind_column:
                cols.append(pa.array(kind, f.type))
            elif f.name == self.sequence_number:
                cols.append(take_or_null(self.column(f.name), sequence_from))
            elif f.name in values:
                arr = values[f.name]
                cols.append(arr if arr.type == f.type else arr.cast(f.type))
            else:
                cols.append(take_or_null(self.column(f.name), representative))
        return pa.Table.from_arrays(cols, schema=self.table.schema)

    def replace_rows(self, merged: pa.Table, use_record: np.ndarray) -> pa.Table:
        """``merged`` (one row per key) with the keys where ``use_record`` >= 0 replaced by
        that whole record."""
        special = use_record >= 0
        if not special.any():
            return merged
        out = pa.concat_tables([merged, self.pick(use_record[special])])
        src = np.arange(self.groups, dtype=np.int64)
        src[special] = self.groups + np.arange(int(special.sum()))
        return out.take(pa.array(src, pa.int64()))


Engine = Callable[[Records], pa.Table]


def constant_columns(
    columns: Sequence[str], key_columns: Sequence[str], primary_keys: Sequence[str]
) -> frozenset[str]:
    """Value columns equal in every record of a key: the key columns, the primary-key
    columns (``primary_keys``, partition columns included) and the value columns behind
    ``_KEY_<k>`` key columns."""
    out = set(key_columns) | set(primary_keys)
    out |= {k[len(KEY_PREFIX):] for k in key_columns if k.startswith(KEY_PREFIX)}
    return frozenset(c for c in columns if c in out)


def run_engine(
    table: pa.Table,
    key_columns: Sequence[str],
    sequence_columns: Sequence[str],
    kind_column: str,
    engine: Engine,
    *,
    primary_keys: Sequence[str] = (),
    sequence_ordered: bool = False,
    levels: np.ndarray | None = None,
) -> pa.Table:
    """Merge ``table`` per key with ``engine`` (one row per key, in key order).

    ``levels``: the LSM level of every row, for ``LookupMergeFunction`` (a key with several
    records keeps, of its records on levels > 0, only the newest: it already holds the merged
    state of the older ones)."""
    n = table.num_rows
    if n == 0:
        return table
    seg = segment(table, key_columns, sequence_columns, sequence_ordered=sequence_ordered)
    multi = seg.lengths > 1
    if not multi.any():
        return table.take(pa.array(seg.order, pa.int64()))
    in_multi = multi[seg.gid]
    rows = seg.order[in_multi]
    sub = table.take(pa.array(rows, pa.int64()))
    g = seg.gid[in_multi]
    change = np.empty(len(g), dtype=bool)
    change[0] = True
    change[1:] = g[1:] != g[:-1]
    gid = np.cumsum(change) - 1
    if levels is not None:
        high = np.asarray(levels)[rows] > 0
        newest_high = last_in_group(gid, high, int(gid[-1]) + 1)
        keep = ~high
        keep[newest_high[newest_high >= 0]] = True
        if not keep.all():
            rows, gid = rows[keep], gid[keep]
            sub = sub.filter(pa.array(keep))
    has_kind = kind_column in table.column_names
    if has_kind:
        kc = sub.column(kind_column)
        kinds = np.asarray(pc.fill_null(kc, 0).to_numpy(zero_copy_only=False), dtype=np.int8)
    else:
        kinds = np.zeros(len(rows), dtype=np.int8)
    seq_col = sequence_columns[-1]
    keys = tuple(key_columns)
    skip = {seq_col, kind_column, *keys}
    consts = constant_columns(table.column_names, keys, primary_keys)
    records = Records(
        table=sub,
        gid=gid.astype(np.int64),
        groups=int(gid[-1]) + 1,
        kinds=kinds,
        key_columns=keys,
        constant_columns=consts,
        value_columns=tuple(c for c in table.column_names if c not in skip and c not in consts),
        sequence_number=seq_col,
        kind_column=kind_column if has_kind else None,
    )
    merged = engine(records)
    single = seg.order[seg.starts[~multi]]
    if len(single) == 0:
        return merged
    out = pa.concat_tables([table.take(pa.array(single, pa.int64())), merged])
    src = np.empty(seg.groups, dtype=np.int64)
    src[np.flatnonzero(~multi)] = np.arange(len(single))
    src[np.flatnonzero(multi)] = len(single) + np.arange(records.groups)
    return out.take(pa.array(src, pa.int64()))
