"""Row-level transforms of a CDC batch's decoded change rows (Arrow tables, vectorised): the
last change of every key, the placeholder values of key-only deletes, the rows after a
source position (a truncate's)."""

from __future__ import annotations

import decimal
from collections.abc import Sequence

import pyarrow as pa

from paimon_core import DataField, RowKind
from paimon_core.integration import deduplicate
from pipelines.cdc.events import KIND_COLUMN

__all__ = ["after_position", "key_only_deletes", "last_changes", "zero_value"]


def after_position(b: pa.Table, pos: Sequence[str], p: Sequence[object]) -> pa.Array:
    """Rows of ``b`` (one chunk) whose position (the ``pos`` columns, NULL first) is after
    ``p``."""
    import pyarrow.compute as pc

    later = pa.array([False] * b.num_rows, pa.bool_())  # typed: a batch may be empty
    for name, v in reversed(list(zip(pos, p))):
        col = b.column(name)
        if v is None:
            greater, equal = pc.is_valid(col), pc.is_null(col)
        else:
            greater = pc.fill_null(pc.greater(col, pa.scalar(v, col.type)), False)
            equal = pc.fill_null(pc.equal(col, pa.scalar(v, col.type)), False)
        later = pc.or_(greater, pc.and_(equal, later))
    return later



def last_changes(data: pa.Table, keys: Sequence[str], order: Sequence[str]) -> pa.Table:
    """The last row of every key by the ``order`` columns (later rows win ties), the rows of
    :func:`paimon_core.read.merge.deduplicate`, with a numpy fast path (one stable
    ``lexsort``) when the key columns are integers or strings and the order columns integers,
    without NULLs (an order column that is entirely NULL orders nothing and is skipped); the
    fast path groups string keys by dictionary code, so its rows are not in key order (the
    table writer sorts them)."""
    import numpy as np
    import pyarrow.compute as pc

    n = data.num_rows
    if n <= 1:
        return data
    sort_cols: list[np.ndarray] = []  # most significant first
    for name in keys:
        col = data.column(name).combine_chunks()
        if col.null_count:
            return deduplicate(data, list(keys), list(order))
        if pa.types.is_integer(col.type):
            sort_cols.append(col.to_numpy())
        elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            sort_cols.append(pc.dictionary_encode(col).indices.to_numpy())  # equality only
        else:
            return deduplicate(data, list(keys), list(order))
    for name in order:
        col = data.column(name).combine_chunks()
        if col.null_count == n:
            continue
        if col.null_count or not pa.types.is_integer(col.type):
            return deduplicate(data, list(keys), list(order))
        sort_cols.append(col.to_numpy())
    idx = np.lexsort(sort_cols[::-1])
    last = np.zeros(n, bool)
    last[-1] = True
    for col in sort_cols[:len(keys)]:
        s = col[idx]
        last[:-1] |= s[1:] != s[:-1]
    return data.take(pa.array(idx[last]))



def zero_value(t: pa.DataType) -> pa.Scalar:
    """A placeholder value of Arrow type ``t`` (zero, empty), for the value columns of a
    ``-D`` row whose event carried only the key."""
    if pa.types.is_struct(t):
        return pa.scalar({f.name: zero_value(f.type).as_py() for f in t}, t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return pa.scalar([], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_date32(t):
        return pa.scalar(0, pa.int32()).cast(t)
    if pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(0), t)
    return pa.scalar(0, pa.int64()).cast(t)



def key_only_deletes(data: pa.Table, fields: Sequence[DataField],
                      keys: Sequence[str]) -> pa.Table:
    """``-D`` rows need only their key (a Postgres delete under REPLICA IDENTITY DEFAULT
    carries nothing else): their NULLs in NOT NULL value columns are filled with a placeholder
    (:func:`zero_value`) so that the file keeps the column's NOT NULL; no other row changes."""
    import pyarrow.compute as pc

    if not data.num_rows:
        return data
    is_d = None
    for f in fields:
        if f.name in keys or f.type.nullable:
            continue
        col = data.column(f.name).combine_chunks()
        if not col.null_count:
            continue
        if is_d is None:
            kind = data.column(KIND_COLUMN)
            is_d = pc.fill_null(pc.equal(kind, RowKind.DELETE.short_string), False)
        fill = pc.and_(is_d, pc.is_null(col))
        filled = pc.if_else(fill, zero_value(col.type), col)
        data = data.set_column(data.schema.get_field_index(f.name), data.field(f.name), filled)
    return data
