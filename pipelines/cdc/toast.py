"""Unchanged TOASTed values: Debezium's placeholder ``__debezium_unavailable_value`` means "this
column did not change" (Postgres does not log a large value an update left alone). The CDC
job's write tasks replace it (``CdcOptions.unavailable="previous"``, the default) with the
column's previous value: the key's latest earlier change in the batch that holds a value, else
the table's row as the batch starts. A placeholder with no previous value anywhere is not
written: the row is refused with a reason (see :func:`fill_unavailable`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import RowKind, TableSchema
from paimon_core.integration import BINARY_ROOTS, KIND_COLUMN, STRING_ROOTS, AtomicType
from pipelines.cdc.events import UNAVAILABLE

__all__ = ["NO_PREVIOUS", "fill_unavailable", "placeholder_columns"]

#: the reason of a row whose placeholder has no previous value (``<col>`` appended)
NO_PREVIOUS = "unchanged TOAST value without a previous value for "

#: ``(columns) -> the table's rows of those columns as the batch started``
ReadPrevious = Callable[[Sequence[str]], pa.Table]


def placeholder_columns(data: pa.Table, schema: TableSchema) -> dict[str, np.ndarray]:
    """Per STRING / BYTES column holding the placeholder: where (a boolean mask)."""
    out: dict[str, np.ndarray] = {}
    for f in schema.fields:
        t = f.type
        if not isinstance(t, AtomicType) or f.name in schema.primary_keys:
            continue
        if t.root in STRING_ROOTS:
            mark: str | bytes = UNAVAILABLE
        elif t.root in BINARY_ROOTS:
            mark = UNAVAILABLE.encode()
        else:
            continue
        col = data.column(f.name)
        hit = pc.fill_null(pc.equal(col, pa.scalar(mark, col.type)), False)
        if pc.any(hit).as_py():
            out[f.name] = np.asarray(hit.to_numpy(zero_copy_only=False), bool)
    return out


def fill_unavailable(data: pa.Table, schema: TableSchema, order: Sequence[str],
                     read_previous: ReadPrevious) -> tuple[pa.Table, dict[int, str]]:
    """``data`` (valid change rows of one write task) with every placeholder replaced by the
    column's previous value: the key's latest earlier row (by the ``order`` columns) holding
    a value, else the table's (``read_previous``, asked only when needed). Returns the rows
    (sorted by key and order) and, for rows whose placeholder has no previous value, their
    index in the returned table -> the reason (the caller refuses them)."""
    marks = placeholder_columns(data, schema)
    if not marks:
        return data, {}
    keys = list(schema.primary_keys)
    idx = pc.sort_indices(data, sort_keys=[(c, "ascending") for c in [*keys, *order]],
                          null_placement="at_start")
    d = data.take(idx)
    for c in marks:
        marks[c] = marks[c][idx.to_numpy()]
    n = d.num_rows
    at = np.arange(n)
    new_group = np.zeros(n, bool)
    new_group[0] = True
    for k in keys:
        a = d.column(k).to_numpy(zero_copy_only=False)
        new_group[1:] |= a[1:] != a[:-1]
    group_start = np.maximum.accumulate(np.where(new_group, at, 0))
    is_del = np.asarray(pc.fill_null(pc.equal(d.column(KIND_COLUMN),
                                              RowKind.DELETE.short_string), False)
                        .to_numpy(zero_copy_only=False), bool)
    need: dict[str, np.ndarray] = {}
    for c, m in marks.items():
        m &= ~is_del  # a delete's values do not matter
        src = np.where(~m & ~is_del, at, -1)
        last = np.maximum.accumulate(src)
        from_batch = m & (last >= group_start)
        col = d.column(c).combine_chunks().take(pa.array(np.where(from_batch, last, at)))
        d = d.set_column(d.schema.get_field_index(c), d.field(c), col)
        if bool((m & ~from_batch).any()):
            need[c] = m & ~from_batch
    refused: dict[int, str] = {}
    if need:
        cols = [*keys, *need]
        got = read_previous(cols)
        prev = pa.table({c: got.column(c).cast(d.schema.field(c).type) for c in cols})
        prev = prev.append_column("_found", pa.array(np.ones(prev.num_rows, bool)))
        rows = np.flatnonzero(np.logical_or.reduce(list(need.values())))
        left = d.select(keys).take(pa.array(rows)).append_column("_row", pa.array(rows))
        found = left.join(prev, keys, join_type="left outer").sort_by("_row")
        if found.num_rows != len(rows):
            raise ValueError("the table holds a key twice")  # a primary key: never
        absent = np.asarray(found.column("_found").is_null().to_numpy(zero_copy_only=False),
                            bool)
        for c, m in need.items():
            mine = m[rows]
            values = found.column(c).combine_chunks()
            missing = absent & mine
            for r in rows[missing]:
                refused.setdefault(int(r), NO_PREVIOUS + c)
            col = d.column(c).combine_chunks()
            take = np.arange(n)
            pick = rows[mine & ~missing]
            merged = pa.concat_arrays([col, values.cast(col.type)])
            take[pick] = n + np.flatnonzero(mine & ~missing)
            d = d.set_column(d.schema.get_field_index(c), d.field(c),
                             merged.take(pa.array(take)))
    return d, refused
