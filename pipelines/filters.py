"""Spark data source filters -> paimon_core predicates (filter pushdown).

A filter is pushed only when Paimon's semantics (``paimon_core.scan.predicate``) give exactly
Spark's answer, because a pushed filter is applied row-exactly by the scan and *not* evaluated
again by Spark:

* columns of BOOLEAN, TINYINT..BIGINT, CHAR/VARCHAR/STRING, DATE and DECIMAL type (FLOAT/DOUBLE
  are not pushed: Paimon's ``0.0 = -0.0`` is false, Spark's true; timestamps and binary are left
  to Spark as well);
* literals that are exactly a value of the column type (a ``DECIMAL(10, 2)`` literal ``1.005``
  would be rounded by Paimon, so it stays with Spark);
* ``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``IS [NOT] NULL``, ``LIKE 'x%'`` and ``NOT`` of
  ``=`` / ``IN`` (null handling is the same: a comparison with NULL is not true).

Everything else is returned to Spark unchanged.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Mapping, Sequence
from typing import Any

from paimon_core import (
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    DataField,
    FilterError,
    Leaf,
    Op,
    Predicate,
    TypeRoot,
    and_,
    bind,
)

__all__ = ["to_predicate", "translate"]

_PUSHABLE_ROOTS = frozenset(
    {TypeRoot.BOOLEAN, TypeRoot.DATE, TypeRoot.DECIMAL, *INTEGER_ROOTS, *STRING_ROOTS}
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
    return False


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
        elif before != after:
            return None
    return bound


def translate(flt: Any, fields: Mapping[str, DataField]) -> Predicate | None:
    """The predicate for one Spark ``pyspark.sql.datasource.Filter``, or None when it cannot be
    pushed exactly."""
    from pyspark.sql import datasource as ds

    if isinstance(flt, ds.Not):
        child = flt.child
        if isinstance(child, ds.EqualTo):
            f = _column(child.attribute, fields)
            return _leaf(Op.NE, f, [child.value]) if f and child.value is not None else None
        if isinstance(child, ds.In):
            f = _column(child.attribute, fields)
            return _leaf(Op.NOT_IN, f, list(child.value)) if f else None
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
        return _leaf(op, f, [flt.value])
    if isinstance(flt, ds.In):
        return _leaf(Op.IN, f, list(flt.value))
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
