"""Filter predicates: the public API (model, parsing, Arrow evaluation, pruning).

Mirrors ``org.apache.paimon.predicate``. Semantics are Java's ``Predicate.test``, also where
they differ from SQL or IEEE:

* a comparison with a null column value or a null literal is false (``col != 1`` and
  ``col NOT IN (..)`` exclude nulls; ``col = NULL`` matches nothing; ``NOT IN`` with a NULL in
  the list matches nothing);
* floats compare like ``Double.compareTo``: NaN equals NaN and is greater than everything
  (``x > 1`` selects NaN rows), ``-0.0 < 0.0`` (``x = 0.0`` does not select ``-0.0``);
* strings compare by code point, binary unsigned byte-wise (Paimon >= 2.0 and pypaimon; Paimon
  0.9 compared signed bytes); ``STARTSWITH`` also works on binary columns (0.9 throws).

Layout: :mod:`~paimon_core.scan.predicate_literal` (literal conversion, Java's order),
:mod:`~paimon_core.scan.predicate_model` (model, builders, :func:`bind`, :func:`evaluate_row`),
:mod:`~paimon_core.scan.predicate_parse` (the ``--filter`` syntax),
:mod:`~paimon_core.scan.predicate_arrow` (:func:`to_arrow_expression`, :func:`filter_table`);
this module adds stats, partition and bucket pruning and re-exports the rest.

Literals are normalised to the column type by :func:`bind` (``parse_filter`` does it); see
:mod:`~paimon_core.scan.predicate_literal` for the representation (TIMESTAMP(p >= 7) literals
are ``int`` epoch nanoseconds).
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from paimon_core.scan.predicate_arrow import filter_table, to_arrow_expression
from paimon_core.scan.predicate_literal import java_compare, timestamp_nanos
from paimon_core.scan.predicate_model import (
    And,
    ColumnStats,
    Leaf,
    Op,
    Or,
    Predicate,
    and_,
    bind,
    equal,
    evaluate_row,
    field_types,
    greater_or_equal,
    greater_than,
    is_in,
    is_not_in,
    is_not_null,
    is_null,
    less_or_equal,
    less_than,
    not_equal,
    or_,
    referenced_fields,
    split_and,
    starts_with,
)
from paimon_core.scan.predicate_parse import parse_filter, parse_filters
from paimon_core.types import BINARY_ROOTS, AtomicType, DataField, DataType, TypeRoot

__all__ = [
    "And",
    "ColumnStats",
    "Leaf",
    "Op",
    "Or",
    "Predicate",
    "and_",
    "bind",
    "bucket_key_equalities",
    "equal",
    "evaluate_row",
    "filter_table",
    "greater_or_equal",
    "greater_than",
    "is_in",
    "is_not_in",
    "is_not_null",
    "is_null",
    "less_or_equal",
    "less_than",
    "might_match",
    "not_equal",
    "or_",
    "parse_filter",
    "parse_filters",
    "partition_predicate",
    "referenced_fields",
    "split_and",
    "starts_with",
    "to_arrow_expression",
]

MAX_BUCKET_COMBINATIONS = 100

# ---------------------------------------------------------------------------------------------
# stats pruning (Predicate.test(rowCount, minValues, maxValues, nullCounts))


def might_match(
    pred: Predicate,
    stats: Mapping[str, ColumnStats],
    row_count: int,
    *,
    fields: Sequence[DataField] | None = None,
) -> bool:
    """Whether a file with these column statistics may hold a matching row.

    Mirrors ``Predicate.test(rowCount, minValues, maxValues, nullCounts)`` but is strictly
    conservative: it returns True whenever unsure, i.e. for columns missing from ``stats``,
    unknown min/max, values it cannot compare, NaN in min/max, binary columns (their stats order
    depends on the writer), and for FLOAT/DOUBLE predicates a NaN row could satisfy (``>``,
    ``>=``, ``!=``, ``NOT IN``, ``= NaN``: writers may leave NaN out of min/max). Zero bounds of
    float columns are widened to ``-0.0``/``+0.0``; a ``datetime`` max of a TIMESTAMP(p >= 7)
    column (or of an unknown precision) is taken as up to 999 ns larger (decoders truncate
    nanoseconds).

    Args:
        pred: the predicate.
        stats: column name -> statistics of that column in the file.
        row_count: the file's row count.
        fields: if given, literals are first bound to these columns (see :func:`bind`) and
            their precisions are known.

    Returns:
        False only if no row of the file can match.
    """
    types: Mapping[str, DataType] = {}
    if fields is not None:
        pred = bind(pred, fields)
        types = field_types(fields)
    return _might(pred, stats, row_count, types)


def _might(
    pred: Predicate, stats: Mapping[str, ColumnStats], rc: int, types: Mapping[str, DataType]
) -> bool:
    if isinstance(pred, And):
        return all(_might(c, stats, rc, types) for c in pred.children)
    if isinstance(pred, Or):
        return any(_might(c, stats, rc, types) for c in pred.children)
    st = stats.get(pred.field)
    if st is None:
        return True
    return _leaf_might(pred, st, rc, types.get(pred.field))


def _is_float(v: Any) -> bool:
    return isinstance(v, float)


def _leaf_might(leaf: Leaf, st: ColumnStats, rc: int, t: DataType | None) -> bool:
    nc, mn, mx = st.null_count, st.min, st.max
    op = leaf.op
    if nc is not None and (nc < 0 or nc > rc):
        return True  # inconsistent stats: do not trust them
    if op is Op.IS_NULL:
        return nc is None or nc > 0
    if op is Op.IS_NOT_NULL:
        return nc is None or nc < rc
    lits = [v for v in leaf.literals if v is not None]
    if op is Op.NOT_IN:
        if len(lits) != len(leaf.literals):
            return False  # NOT IN (.., NULL) matches no row
    elif not lits:
        return False  # = NULL, IN (NULL), IN () match no row
    if nc is not None and nc == rc:
        return False  # all null: no value predicate matches
    if mn is None or mx is None or not lits:
        return True
    root = t.root if isinstance(t, AtomicType) else None
    is_float = root in (TypeRoot.FLOAT, TypeRoot.DOUBLE) or any(
        _is_float(v) for v in (mn, mx, *lits)
    )
    if root in BINARY_ROOTS or any(isinstance(v, (bytes, bytearray)) for v in (mn, mx, *lits)):
        return True
    if is_float:
        try:
            if math.isnan(float(mn)) or math.isnan(float(mx)):
                return True
            if op in (Op.GT, Op.GE, Op.NE, Op.NOT_IN):
                return not (op is Op.GT and math.isnan(float(lits[0])))
            if any(math.isnan(float(v)) for v in lits):
                return True  # = NaN, IN (.., NaN): NaN rows may be left out of the stats
            mn = -0.0 if float(mn) == 0 else mn
            mx = 0.0 if float(mx) == 0 else mx
        except (TypeError, ValueError):
            return True
    if isinstance(mx, dt.datetime):
        p = t.precision if isinstance(t, AtomicType) else None
        if p is None or p > 6:
            mx = timestamp_nanos(mx) + 999
            mn = timestamp_nanos(mn) if isinstance(mn, dt.datetime) else mn
    try:
        return _leaf_might_bounds(op, mn, mx, lits)
    except _Incomparable:
        return True


class _Incomparable(Exception):
    pass


def _c(a: Any, b: Any) -> int:
    c = java_compare(a, b)
    if c is None:
        raise _Incomparable()
    return c


def _leaf_might_bounds(op: Op, mn: Any, mx: Any, lits: list[Any]) -> bool:
    if op is Op.EQ or op is Op.IN:
        return any(_c(lit, mn) >= 0 and _c(lit, mx) <= 0 for lit in lits)
    if op is Op.NE or op is Op.NOT_IN:
        return not any(_c(lit, mn) == 0 and _c(lit, mx) == 0 for lit in lits)
    lit = lits[0]
    if op is Op.LT:
        return _c(lit, mn) > 0
    if op is Op.LE:
        return _c(lit, mn) >= 0
    if op is Op.GT:
        return _c(lit, mx) < 0
    if op is Op.GE:
        return _c(lit, mx) <= 0
    # STARTS_WITH on strings
    if not (isinstance(mn, str) and isinstance(mx, str) and isinstance(lit, str)):
        return True
    return (mn.startswith(lit) or mn <= lit) and (mx.startswith(lit) or mx >= lit)


# ---------------------------------------------------------------------------------------------
# partition and bucket pruning


def partition_predicate(pred: Predicate | None, partition_keys: Sequence[str]) -> Predicate | None:
    """The conjuncts of ``pred`` that reference only partition keys (for partition pruning).

    Top-level ``And``\\ s are split; a conjunct (leaf or ``Or`` tree) is kept only if every
    column it references is a partition key, everything else is dropped (like Java's
    ``PartitionPredicateVisitor`` applied per conjunct).

    Args:
        pred: the full filter, or ``None``.
        partition_keys: the table's partition columns.

    Returns:
        The partition-only predicate, or ``None`` if no conjunct qualifies.
    """
    keys = set(partition_keys)
    kept = [c for c in split_and(pred) if referenced_fields(c) <= keys]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else And(tuple(kept))


def _eq_key(v: Any) -> Any:
    """Hashable identity under Java's equality (``compareTo == 0``)."""
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else ("f", v, math.copysign(1.0, v))
    if isinstance(v, dt.datetime):
        return ("ts", timestamp_nanos(v))
    if isinstance(v, bool):
        return ("b", v)
    return v


def _pinned(pred: Predicate) -> tuple[str, list[Any]] | None:
    """(column, allowed values) if ``pred`` only admits those values of one column."""
    if isinstance(pred, Leaf):
        if pred.op in (Op.EQ, Op.IN):
            return pred.field, [v for v in pred.literals if v is not None]
        return None
    if isinstance(pred, Or):
        parts = [_pinned(c) for c in pred.children]
        if any(p is None for p in parts):
            return None
        names = {p[0] for p in parts if p is not None}
        if len(names) != 1:
            return None
        return names.pop(), [v for p in parts if p is not None for v in p[1]]
    return None


def bucket_key_equalities(
    pred: Predicate | None, bucket_keys: Sequence[str]
) -> list[tuple[Any, ...]] | None:
    """The bucket-key value combinations a row matching ``pred`` can have (bucket pruning).

    Every bucket-key column must be pinned by a top-level conjunct ``k = v``, ``k IN (..)`` or an
    ``Or`` of those on ``k`` (several conjuncts on one key intersect); null literals never
    match; values are distinct under Java's equality (``-0.0`` and ``0.0`` differ); a NaN
    literal disables the pruning (NaN payloads are hashed unnormalised). Mirrors the role of
    Java's ``BucketSelectConverter``.

    Args:
        pred: the filter (bind it first so that literals have the column types).
        bucket_keys: the bucket-key columns, in bucket-key order.

    Returns:
        The distinct value tuples in ``bucket_keys`` order (``[]``: no row can match), or
        ``None`` if some key is not pinned or there are more than 100 combinations.
    """
    if pred is None or not bucket_keys:
        return None
    allowed: dict[str, list[Any]] = {}
    for conj in split_and(pred):
        pin = _pinned(conj)
        if pin is None or pin[0] not in bucket_keys:
            continue
        name, vals = pin
        uniq: dict[Any, Any] = {}
        for v in vals:
            uniq.setdefault(_eq_key(v), v)
        if name in allowed:
            allowed[name] = [v for v in allowed[name] if _eq_key(v) in uniq]
        else:
            allowed[name] = list(uniq.values())
    if any(k not in allowed for k in bucket_keys):
        return None
    if any(isinstance(v, float) and math.isnan(v) for vals in allowed.values() for v in vals):
        return None  # NaN payloads are not normalised before hashing: any bucket may hold one
    lists = [allowed[k] for k in bucket_keys]
    if math.prod(len(x) for x in lists) > MAX_BUCKET_COMBINATIONS:
        return None
    return list(itertools.product(*lists))
