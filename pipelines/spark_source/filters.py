"""Spark data source filters -> paimon_core predicates (filter pushdown).

A filter is pushed only when Paimon's semantics (``paimon_core.scan.predicate``) give exactly
Spark's answer, because a pushed filter is applied row-exactly by the scan and *not* evaluated
again by Spark:

* columns of every atomic type but TIME: BOOLEAN, TINYINT..BIGINT, FLOAT/DOUBLE, DECIMAL,
  CHAR/VARCHAR/STRING, BINARY/VARBINARY, DATE, TIMESTAMP (Spark's ``TIMESTAMP_NTZ``: naive
  literals) and TIMESTAMP WITH LOCAL TIME ZONE (Spark's ``TIMESTAMP``: aware literals);
* FLOAT/DOUBLE: Spark and Paimon (``Double.compareTo``) agree on NaN (equal to itself, above
  every number) but not on zeros (Spark: ``-0.0 = 0.0``; Paimon: ``-0.0 < 0.0``), so a zero
  literal is rewritten to Paimon's equivalent: ``= 0`` -> ``IN (-0.0, 0.0)``, ``>= 0`` ->
  ``>= -0.0``, ``< 0`` -> ``< -0.0`` (``> 0`` / ``<= 0`` are the same on both sides);
* binary compares unsigned byte-wise on both sides;
* literals that are exactly a value of the column type (a ``DECIMAL(10, 2)`` literal ``1.005``
  or a microsecond literal on a ``TIMESTAMP(3)`` column would be rounded by Paimon, so it stays
  with Spark; ``TIMESTAMP(7..9)`` columns are left to Spark);
* ``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``IS [NOT] NULL``, ``LIKE 'x%'`` and ``NOT`` of
  ``=`` / ``IN`` (null handling is the same: a comparison with NULL is not true).

Everything else is returned to Spark unchanged.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Mapping, Sequence
from typing import Any

from paimon_core import DataField, Predicate
from paimon_core.errors import FilterError
from paimon_core.integration import (
    BINARY_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    Leaf,
    Op,
    TypeRoot,
    and_,
    bind,
)

__all__ = ["to_predicate", "translate"]

_FLOAT_ROOTS = frozenset({TypeRoot.FLOAT, TypeRoot.DOUBLE})
_TIMESTAMP_ROOTS = frozenset({TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ})
_PUSHABLE_ROOTS = frozenset(
    {TypeRoot.BOOLEAN, TypeRoot.DATE, TypeRoot.DECIMAL, *INTEGER_ROOTS, *STRING_ROOTS,
     *_FLOAT_ROOTS, *BINARY_ROOTS, *_TIMESTAMP_ROOTS}
)


def _column(attribute: Sequence[str], types: Mapping[str, DataField]) -> DataField | None:
    if len(attribute) != 1:
        return None  # nested field references are not pushed
    f = types.get(attribute[0])
    if f is None or not isinstance(f.type, AtomicType) or f.type.root not in _PUSHABLE_ROOTS:
        return None
    return f


def _literal_ok(value: Any, f: DataField) -> bool:
    assert isinstance(f.type, AtomicType)
    r = f.type.root
    if value is None:
        return True
    if r is TypeRoot.BOOLEAN:
        return isinstance(value, bool)
    if r in INTEGER_ROOTS:
        return isinstance(value, int) and not isinstance(value, bool)
    if r in STRING_ROOTS:
        return isinstance(value, str)
    if r is TypeRoot.DATE:
        return isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
    if r is TypeRoot.DECIMAL:
        return isinstance(value, (decimal.Decimal, int)) and not isinstance(value, bool)
    if r in _FLOAT_ROOTS:
        return isinstance(value, float)
    if r in BINARY_ROOTS:
        return isinstance(value, (bytes, bytearray))
    if r in _TIMESTAMP_ROOTS:
        if not isinstance(value, datetime.datetime) or (f.type.precision or 6) > 6:
            return False
        # NTZ columns get naive literals from Spark, LTZ columns aware ones
        return (value.tzinfo is not None) == (r is TypeRoot.TIMESTAMP_LTZ)
    return False


def _same(before: Any, after: Any) -> bool:
    """Binding left the literal as it was (NaN is NaN; -0.0 is not 0.0)."""
    if isinstance(before, float) and isinstance(after, float):
        if math.isnan(before) or math.isnan(after):
            return math.isnan(before) and math.isnan(after)
        return before == after and math.copysign(1.0, before) == math.copysign(1.0, after)
    if isinstance(before, (bytes, bytearray)):
        return bool(bytes(before) == after)
    return bool(before == after)


def _leaf(op: Op, f: DataField, values: Sequence[Any]) -> Predicate | None:
    if not all(_literal_ok(v, f) for v in values):
        return None
    leaf = Leaf(f.name, op, tuple(values))
    try:
        bound = bind(leaf, [f])
    except FilterError:
        return None
    assert isinstance(bound, Leaf)
    # pushed only if binding did not round or convert anything
    for before, after in zip(values, bound.literals):
        if before is None or after is None:
            if before is not after:
                return None
        elif not _same(before, after):
            return None
    return bound


def _is_zero(v: Any) -> bool:
    return isinstance(v, float) and v == 0.0


def _float_leaf(op: Op, f: DataField, values: Sequence[Any]) -> Predicate | None:
    """Spark's float comparison as Paimon's: only zero literals differ (see the module docs)."""
    if not any(_is_zero(v) for v in values):
        return _leaf(op, f, values)
    if op in (Op.IN, Op.NOT_IN):
        rest = [v for v in values if not _is_zero(v)]
        return _leaf(op, f, [*rest, -0.0, 0.0])
    zero = {Op.EQ: (Op.IN, [-0.0, 0.0]), Op.NE: (Op.NOT_IN, [-0.0, 0.0]),
            Op.GT: (Op.GT, [0.0]), Op.GE: (Op.GE, [-0.0]),
            Op.LT: (Op.LT, [-0.0]), Op.LE: (Op.LE, [0.0])}
    if op not in zero:
        return None
    new_op, lits = zero[op]
    return _leaf(new_op, f, lits)


def _make(op: Op, f: DataField, values: Sequence[Any]) -> Predicate | None:
    if isinstance(f.type, AtomicType) and f.type.root in _FLOAT_ROOTS:
        return _float_leaf(op, f, values)
    return _leaf(op, f, values)


def translate(flt: Any, fields: Mapping[str, DataField]) -> Predicate | None:
    """The predicate for one Spark ``pyspark.sql.datasource.Filter``, or None when it cannot be
    pushed exactly."""
    from pyspark.sql import datasource as ds

    if isinstance(flt, ds.Not):
        child = flt.child
        if isinstance(child, ds.EqualTo):
            f = _column(child.attribute, fields)
            return _make(Op.NE, f, [child.value]) if f and child.value is not None else None
        if isinstance(child, ds.In):
            f = _column(child.attribute, fields)
            return _make(Op.NOT_IN, f, list(child.value)) if f else None
        return None
    attribute = getattr(flt, "attribute", None)
    if attribute is None:
        return None
    f = _column(attribute, fields)
    if f is None:
        return None
    if isinstance(flt, ds.IsNull):
        return Leaf(f.name, Op.IS_NULL)
    if isinstance(flt, ds.IsNotNull):
        return Leaf(f.name, Op.IS_NOT_NULL)
    simple = {
        ds.EqualTo: Op.EQ, ds.GreaterThan: Op.GT, ds.GreaterThanOrEqual: Op.GE,
        ds.LessThan: Op.LT, ds.LessThanOrEqual: Op.LE,
    }
    if isinstance(flt, (ds.EqualTo, ds.GreaterThan, ds.GreaterThanOrEqual, ds.LessThan,
                        ds.LessThanOrEqual)):
        op = simple.get(type(flt))
        if op is None or flt.value is None:
            return None
        return _make(op, f, [flt.value])
    if isinstance(flt, ds.In):
        return _make(Op.IN, f, list(flt.value))
    if isinstance(flt, ds.StringStartsWith):
        if f.type.root not in STRING_ROOTS:
            return None
        return _leaf(Op.STARTS_WITH, f, [flt.value])
    return None


def to_predicate(filters: Sequence[Any], fields: Sequence[DataField]
                 ) -> tuple[Predicate | None, list[Any]]:
    """Split Spark filters (ANDed) into the pushed predicate and the filters Spark keeps.

    Returns:
        ``(predicate or None, the filters not pushed, by reference)``.
    """
    by_name = {f.name: f for f in fields}
    pushed: list[Predicate] = []
    rest: list[Any] = []
    for flt in filters:
        p = translate(flt, by_name)
        if p is None:
            rest.append(flt)
        else:
            pushed.append(p)
    if not pushed:
        return None, rest
    return (pushed[0] if len(pushed) == 1 else and_(*pushed)), rest
