"""Row-exact evaluation of predicates on Arrow tables, with Java's semantics.

``pyarrow.compute`` follows IEEE and SQL rules; Paimon's ``Predicate.test(InternalRow)`` (what
Java's ``executeFilter()`` applies) does not, so every leaf is rewritten:

* every value leaf is ``is_valid(col) AND (...)``: a null never matches (and the leaf is never
  null, so Kleene ``and``/``or`` above it behave like Java's boolean ones);
* FLOAT/DOUBLE follow ``Double.compareTo``: NaN equals NaN and is above +inf, ``-0.0 < 0.0``
  (the sign of a zero is told by ``1 / x < 0``), so ``x > 1`` also selects NaN, ``x = 0.0`` does
  not select ``-0.0``; IN/NOT IN on floats are ORs/ANDs of those equalities;
* IN uses ``is_in`` on a value set without nulls; NOT IN with a NULL literal matches nothing;
* TIMESTAMP/LTZ literals become scalars of the column's own Arrow type (unit and time zone),
  TIME literals likewise; a literal the unit cannot hold exactly (or out of its range) turns
  into the equivalent floor/ceiling comparison;
* STARTSWITH uses ``starts_with`` on strings and binary alike.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import FilterError
from paimon_core.scan.predicate_literal import timestamp_nanos
from paimon_core.scan.predicate_model import (
    UNARY_OPS,
    And,
    Leaf,
    Op,
    Or,
    Predicate,
    bind,
    field_types,
)
from paimon_core.types import AtomicType, DataField, DataType, TypeRoot, to_arrow_type

__all__ = ["filter_table", "to_arrow_expression"]

_NANOS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_I64 = (-(2**63), 2**63 - 1)
_I32 = (-(2**31), 2**31 - 1)


def _false() -> pc.Expression:
    """The literal FALSE (built per call: ``pc.scalar`` at import time would make ``import
    paimon_core`` import pandas through pyarrow's scalar conversion, ~0.3 s)."""
    return pc.scalar(False)


def to_arrow_expression(
    pred: Predicate, fields: Sequence[DataField], *, arrow_schema: pa.Schema | None = None
) -> pc.Expression:
    """A ``pyarrow.dataset``-style expression selecting exactly the rows Java's
    ``Predicate.test(InternalRow)`` accepts.

    Args:
        pred: the predicate (literals are bound to ``fields`` first, see ``bind``).
        fields: the table's columns; the Arrow columns are expected to have type
            ``to_arrow_type(field.type)``.
        arrow_schema: the schema of the data actually filtered, if known: literal scalars are
            then built with its column types (units, time zones, string/binary flavours).

    Returns:
        The filter expression.

    Raises:
        FilterError: unknown column, unsupported operator for the column type, bad literal.
    """
    bound = bind(pred, fields)
    return _expr(bound, field_types(fields), arrow_schema)


def filter_table(table: pa.Table, pred: Predicate, fields: Sequence[DataField]) -> pa.Table:
    """The rows of ``table`` that match ``pred`` (Java's ``executeFilter()`` semantics).

    Args:
        table: the data; its columns named like ``fields`` (others are ignored).
        pred: the predicate.
        fields: the columns of ``table`` that ``pred`` references (extra fields are fine).

    Returns:
        The filtered table (same schema).

    Raises:
        FilterError: see :func:`to_arrow_expression`, or Arrow cannot evaluate the filter
            (e.g. a referenced column is missing from ``table``).
    """
    expr = to_arrow_expression(pred, fields, arrow_schema=table.schema)
    try:
        return table.filter(expr)
    except (pa.ArrowException, ValueError, TypeError, KeyError) as e:
        raise FilterError(f"cannot apply filter {pred} to the table: {e}") from e


# ---------------------------------------------------------------------------------------------


def _expr(pred: Predicate, types: dict[str, DataType], schema: pa.Schema | None) -> pc.Expression:
    if isinstance(pred, And):
        out = _expr(pred.children[0], types, schema)
        for c in pred.children[1:]:
            out = out & _expr(c, types, schema)
        return out
    if isinstance(pred, Or):
        out = _expr(pred.children[0], types, schema)
        for c in pred.children[1:]:
            out = out | _expr(c, types, schema)
        return out
    return _leaf(pred, types[pred.field], schema)


def _arrow_type(name: str, t: DataType, schema: pa.Schema | None) -> pa.DataType:
    if schema is not None:
        idx = schema.get_field_index(name)
        if idx >= 0:
            return schema.field(idx).type
    return to_arrow_type(t)


def _leaf(leaf: Leaf, t: DataType, schema: pa.Schema | None) -> pc.Expression:
    f = pc.field(leaf.field)
    if leaf.op is Op.IS_NULL:
        return f.is_null()
    if leaf.op is Op.IS_NOT_NULL:
        return f.is_valid()
    assert leaf.op not in UNARY_OPS and isinstance(t, AtomicType)
    at = _arrow_type(leaf.field, t, schema)
    lits = leaf.literals
    nonnull = [v for v in lits if v is not None]
    op = leaf.op
    if op is Op.NOT_IN and len(nonnull) != len(lits):
        return _false()
    if op is not Op.NOT_IN and not nonnull:
        return _false()  # = NULL, IN (), IN (NULL): no row
    is_float = t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE) and pa.types.is_floating(at)
    if is_float:
        body = _float_leaf(f, op, nonnull, at)
    elif t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ, TypeRoot.TIME) and (
        pa.types.is_timestamp(at) or pa.types.is_time(at)
    ):
        body = _ticks_leaf(f, op, nonnull, at)
    else:
        body = _plain_leaf(f, op, nonnull, at, leaf)
    if body is None:
        return _false()
    return f.is_valid() & body


def _scalar(v: Any, at: pa.DataType, leaf: Leaf) -> pa.Scalar:
    try:
        return pa.scalar(v, type=at)
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
        raise FilterError(f"literal {v!r} of {leaf} does not fit Arrow type {at}: {e}") from e


def _plain_leaf(
    f: pc.Expression, op: Op, lits: list[Any], at: pa.DataType, leaf: Leaf
) -> pc.Expression | None:
    if op is Op.IN or op is Op.NOT_IN:
        if not lits:
            return None if op is Op.IN else f.is_valid()
        try:
            values = pa.array(lits, type=at)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
            raise FilterError(f"literals of {leaf} do not fit Arrow type {at}: {e}") from e
        isin = f.isin(values)
        return isin if op is Op.IN else ~isin
    lit = lits[0]
    if op is Op.STARTS_WITH:
        return pc.starts_with(f, pattern=lit)
    s = _scalar(lit, at, leaf)
    return _compare(f, op, s)


def _compare(f: pc.Expression, op: Op, s: Any) -> pc.Expression:
    if op is Op.EQ:
        return f == s
    if op is Op.NE:
        return f != s
    if op is Op.LT:
        return f < s
    if op is Op.LE:
        return f <= s
    if op is Op.GT:
        return f > s
    if op is Op.GE:
        return f >= s
    raise FilterError(f"operator {op.value} does not apply here")


# ---- FLOAT / DOUBLE: Double.compareTo


def _zero(f: pc.Expression, at: pa.DataType, negative: bool) -> pc.Expression:
    zero = pa.scalar(0.0, type=at)
    inv = pc.divide(pc.scalar(pa.scalar(1.0, type=at)), f)  # +-inf: the sign of the zero
    return (f == zero) & ((inv < zero) if negative else (inv > zero))


def _float_cmp(f: pc.Expression, op: Op, lit: float, at: pa.DataType) -> pc.Expression:
    nan = pc.is_nan(f)
    if math.isnan(lit):
        table = {
            Op.EQ: nan,
            Op.NE: ~nan,
            Op.LT: ~nan,
            Op.LE: f.is_valid(),
            Op.GT: _false(),
            Op.GE: nan,
        }
        return table[op]
    s = pa.scalar(lit, type=at)
    if lit == 0:
        zero = pa.scalar(0.0, type=at)
        negz, posz = _zero(f, at, True), _zero(f, at, False)
        if math.copysign(1.0, lit) < 0:  # -0.0
            table = {
                Op.EQ: negz,
                Op.NE: ~negz,
                Op.LT: f < zero,
                Op.LE: (f < zero) | negz,
                Op.GT: (f > zero) | posz | nan,
                Op.GE: (f >= zero) | nan,
            }
        else:  # +0.0
            table = {
                Op.EQ: posz,
                Op.NE: ~posz,
                Op.LT: (f < zero) | negz,
                Op.LE: f <= zero,
                Op.GT: (f > zero) | nan,
                Op.GE: (f > zero) | posz | nan,
            }
        return table[op]
    if op is Op.GT:
        return (f > s) | nan
    if op is Op.GE:
        return (f >= s) | nan
    return _compare(f, op, s)  # IEEE == != < <= agree with Java for a non-zero, non-NaN literal


def _float_leaf(f: pc.Expression, op: Op, lits: list[Any], at: pa.DataType) -> pc.Expression | None:
    if op is Op.IN:
        parts = [_float_cmp(f, Op.EQ, float(v), at) for v in lits]
        return _or_all(parts)
    if op is Op.NOT_IN:
        parts = [_float_cmp(f, Op.NE, float(v), at) for v in lits]
        return _and_all(parts) if parts else f.is_valid()
    if op is Op.STARTS_WITH:
        raise FilterError("STARTSWITH does not apply to float columns")
    return _float_cmp(f, op, float(lits[0]), at)


def _or_all(parts: list[pc.Expression]) -> pc.Expression | None:
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out | p
    return out


def _and_all(parts: list[pc.Expression]) -> pc.Expression:
    out = parts[0]
    for p in parts[1:]:
        out = out & p
    return out


# ---- TIMESTAMP / TIMESTAMP_LTZ / TIME: integer ticks of the column's unit


def _ticks(v: Any, at: pa.DataType) -> tuple[int, bool, int]:
    """(floor ticks, exact, range) of a literal in the unit of ``at``; range is -1/1 when the
    literal lies below/above every value the type can hold (ticks then meaningless)."""
    if pa.types.is_timestamp(at):
        nanos = timestamp_nanos(v)
        lo, hi = _I64
    else:
        assert isinstance(v, dt.time)
        nanos = ((v.hour * 60 + v.minute) * 60 + v.second) * 10**9 + v.microsecond * 1000
        lo, hi = _I32 if pa.types.is_time32(at) else _I64
    q, r = divmod(nanos, _NANOS_PER_UNIT[at.unit])
    if q > hi:
        return 0, False, 1
    if q < lo:
        return 0, False, -1
    return q, r == 0, 0


def _tick_scalar(q: int, at: pa.DataType) -> pa.Scalar:
    if pa.types.is_timestamp(at):
        return pa.scalar(q, type=at)
    return pa.scalar(q, type=pa.int32() if pa.types.is_time32(at) else pa.int64()).cast(at)


def _ticks_leaf(f: pc.Expression, op: Op, lits: list[Any], at: pa.DataType) -> pc.Expression | None:
    valid = f.is_valid()
    if op is Op.IN or op is Op.NOT_IN:
        exact = []
        for v in lits:
            q, ok, rng = _ticks(v, at)
            if ok and rng == 0:
                exact.append(q)
        if not exact:
            return None if op is Op.IN else valid
        values = pa.array([_tick_scalar(q, at) for q in exact], type=at)
        isin = f.isin(values)
        return isin if op is Op.IN else ~isin
    if op is Op.STARTS_WITH:
        raise FilterError("STARTSWITH does not apply to time/timestamp columns")
    q, ok, rng = _ticks(lits[0], at)
    if rng != 0:
        # the literal is above (rng = 1) or below (-1) every representable value
        above = rng > 0
        if op is Op.EQ:
            return None
        if op is Op.NE:
            return valid
        if op in (Op.LT, Op.LE):
            return valid if above else None
        return None if above else valid  # GT, GE
    s = _tick_scalar(q, at)
    if ok:
        return _compare(f, op, s)
    # literal strictly between s and the next tick
    if op is Op.EQ:
        return None
    if op is Op.NE:
        return valid
    if op in (Op.LT, Op.LE):
        return f <= s
    return f > s  # GT, GE
