"""Field aggregators, vectorised (``org.apache.paimon.mergetree.compact.aggregate.Field*Agg``
and ``FieldAggregator.createFieldAggregator`` of Paimon 0.9).

An aggregator folds the values one column takes in the records of one key, in (key, sequence)
order, starting from null: ``agg(acc, x)`` for ``+I``/``+U`` records, ``retract(acc, x)`` for
``-U``/``-D`` records (functions without retraction throw unless
``fields.<f>.ignore-retract``), and, inside partial-update sequence groups, ``aggReversed(acc,
x) = agg(x, acc)`` for records older than the group's current sequence. Here every column is
folded for all keys at once (:func:`aggregate`): closed forms per segment when the function
allows them (last/first values by index, integer sums and products by ``reduceat``, min/max by
one sort, listagg by one ``binary_join``), else a fold rank by rank (float and decimal
arithmetic, whose result depends on the order of the steps).

Functions of Paimon 0.9: ``sum product max min last_value last_non_null_value first_value
first_non_null_value`` (``first_not_null_value``) ``listagg bool_and bool_or``, and
``primary-key`` for primary-key columns. Not implemented (UnsupportedError): ``collect
merge_map nested_update hll_sketch theta_sketch rbm32 rbm64``. ``count`` is not a Paimon 0.9
function (removed before the release, apache/paimon#3932): it is rejected as Java rejects it.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import PaimonError, SchemaError, UnsupportedError
from paimon_core.options import CoreOptions
from paimon_core.read.engines.javanum import (
    DECIMAL_CONTEXT,
    decimal_divide,
    float_order_key,
    java_decimal,
    wrap_int,
)
from paimon_core.read.engines.segments import (
    by_rank,
    first_in_group,
    last_in_group,
    run_starts,
    take_or_null,
)

__all__ = [
    "AGG",
    "RETRACT",
    "REVERSED",
    "FieldAgg",
    "aggregate",
    "create_aggregator",
]

AGG, REVERSED, RETRACT = 1, 2, 3
NOT_IMPLEMENTED = frozenset(
    {"collect", "merge_map", "nested_update", "hll_sketch", "theta_sketch", "rbm32", "rbm64"}
)

Vals = tuple[np.ndarray, np.ndarray]  # values, validity
Step = tuple[np.ndarray, np.ndarray, np.ndarray]  # accumulator, valid, initialized


def _to_vals(arr: pa.Array) -> Vals:
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        vals = np.asarray(arr.fill_null(pa.scalar(0, t)).to_numpy(zero_copy_only=False))
    elif pa.types.is_boolean(t):
        vals = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    else:
        vals = np.empty(len(arr), dtype=object)
        vals[:] = arr.to_pylist()
    return vals, valid


def _from_vals(vals: np.ndarray, valid: np.ndarray, t: pa.DataType) -> pa.Array:
    if vals.dtype == object:
        out = vals.copy()
        out[~valid] = None
        return pa.array(out.tolist(), type=t)
    return pa.array(vals, type=t, mask=~valid)


def _empty_state(vals: np.ndarray, groups: int) -> np.ndarray:
    if vals.dtype == object:
        return np.full(groups, None, dtype=object)
    return np.zeros(groups, dtype=vals.dtype)


def _has_pair(gid: np.ndarray, valid: np.ndarray) -> bool:
    """Some group has two or more valid values."""
    g = gid[valid]
    return bool(len(g) > 1 and (g[1:] == g[:-1]).any())


class FieldAgg:
    """One column's aggregator (``FieldAggregator``)."""

    name: ClassVar[str] = ""
    retractable: ClassVar[bool] = False
    commutative: ClassVar[bool] = False  # aggReversed(a, x) == agg(a, x)

    def __init__(self, field: str, arrow_type: pa.DataType, options: CoreOptions) -> None:
        self.field = field
        self.type = arrow_type
        self.options = options

    # ---- types (Java throws when two non-null values of an unsupported type meet)
    def supports(self, t: pa.DataType) -> bool:
        return True

    def check(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray) -> None:
        if self.supports(self.type):
            return
        valid = np.asarray(x.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if _has_pair(gid, valid) or (self.name == "sum" and (valid & (ops == RETRACT)).any()):
            raise SchemaError(
                f"type {self.type} of column {self.field!r} is not supported by aggregate "
                f"function '{self.name}'"
            )

    # ---- closed forms: ops are AGG / RETRACT only
    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        return self.fold(x, gid, ops, groups)

    # ---- the general fold, rank by rank
    def fold(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        vals, valid = _to_vals(x)
        acc = _empty_state(vals, groups)
        accv = np.zeros(groups, dtype=bool)
        init = np.zeros(groups, dtype=bool)
        with np.errstate(all="ignore"):
            for rows in by_rank(gid):
                g = gid[rows]
                a, av, i = self.step(ops[rows], acc[g], accv[g], init[g], vals[rows], valid[rows])
                acc[g], accv[g], init[g] = a, av, i
        return _from_vals(acc, accv, self.type)

    def step(self, op: np.ndarray, acc: np.ndarray, accv: np.ndarray, init: np.ndarray,
             x: np.ndarray, xv: np.ndarray) -> Step:
        """One fold step for one record of each key: ``op`` per element, the accumulator
        (value, valid, ``initialized`` flag) and the input (value, valid)."""
        raise NotImplementedError  # pragma: no cover


def _select(
    cases: list[tuple[np.ndarray, np.ndarray, np.ndarray]], acc: np.ndarray, accv: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per element, the (value, valid) of the first case whose mask is set, else the
    accumulator."""
    out, outv = acc.copy(), accv.copy()
    done = np.zeros(len(acc), dtype=bool)
    for mask, v, vv in cases:
        m = mask & ~done
        out[m] = v[m]
        outv[m] = vv[m]
        done |= m
    return out, outv


class PrimaryKeyAgg(FieldAgg):
    """``FieldPrimaryKeyAgg``: agg and retract return the input."""

    name = "primary-key"
    retractable = True

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        return take_or_null(x, last_in_group(gid, np.ones(len(gid), bool), groups))

    def step(self, op: np.ndarray, acc: np.ndarray, accv: np.ndarray, init: np.ndarray,
             x: np.ndarray, xv: np.ndarray) -> Step:
        keep = op == REVERSED
        return np.where(keep, acc, x), np.where(keep, accv, xv), init


class LastValueAgg(FieldAgg):
    """``FieldLastValueAgg``: the input; retract -> null."""

    name = "last_value"
    retractable = True

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        last = last_in_group(gid, np.ones(len(gid), bool), groups)
        last[(last >= 0) & (ops[np.maximum(last, 0)] == RETRACT)] = -1
        return take_or_null(x, last)

    def step(self, op: np.ndarray, acc: np.ndarray, accv: np.ndarray, init: np.ndarray,
             x: np.ndarray, xv: np.ndarray) -> Step:
        v, vv = _select([(op == AGG, x, xv), (op == RETRACT, x, np.zeros_like(xv))], acc, accv)
        return v, vv, init


class LastNonNullValueAgg(FieldAgg):
    """``FieldLastNonNullValueAgg``: a non-null input replaces; a non-null retraction clears."""

    name = "last_non_null_value"
    retractable = True

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        valid = np.asarray(x.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        last = last_in_group(gid, valid, groups)
        last[(last >= 0) & (ops[np.maximum(last, 0)] == RETRACT)] = -1
        return take_or_null(x, last)

    def step(self, op: np.ndarray, acc: np.ndarray, accv: np.ndarray, init: np.ndarray,
             x: np.ndarray, xv: np.ndarray) -> Step:
        v, vv = _select(
            [
                ((op == AGG) & xv, x, xv),
                ((op == REVERSED) & ~accv, x, xv),
                ((op == RETRACT) & xv, x, np.zeros_like(xv)),
            ],
            acc, accv,
        )
        return v, vv, init


class FirstValueAgg(FieldAgg):
    """``FieldFirstValueAgg``: the input of the first agg call since reset."""

    name = "first_value"

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        return take_or_null(x, first_in_group(gid, np.ones(len(gid), bool), groups))

    def step(self, op: np.ndarray, acc: np.ndarray, accv: np.ndarray, init: np.ndarray,
             x: np.ndarray, xv: np.ndarray) -> Step:
        agg_first = (op == AGG) & ~init
        rev_later = (op == REVERSED) & init
        v, vv = _select([(agg_first, x, xv), (rev_later, x, xv)], acc, accv)
        return v, vv, init | (op == AGG) | (op == REVERSED)


class FirstNonNullValueAgg(FieldAgg):
    """``FieldFirstNonNullValueAgg``: the first non-null input since reset."""

    name = "first_non_null_value"

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        valid = np.asarray(x.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        return take_or_null(x, first_in_group(gid, valid, groups))

    def step(self, op: np.ndarray, acc: np.ndarray, accv: np.ndarray, init: np.ndarray,
             x: np.ndarray, xv: np.ndarray) -> Step:
        agg_take = (op == AGG) & ~init & xv
        rev_keep = (op == REVERSED) & ~init & accv
        rev_take = (op == REVERSED) & ~rev_keep
        v, vv = _select([(agg_take, x, xv), (rev_take, x, xv)], acc, accv)
        return v, vv, init | agg_take | rev_keep


def _numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


class _Arith(FieldAgg):
    """Shared by sum and product: Java arithmetic on one element pair."""

    commutative = True

    def supports(self, t: pa.DataType) -> bool:
        return _numeric(t)

    def _apply(self, a: np.ndarray, b: np.ndarray,
               fn: Callable[[Any, Any], Any], exact_long: bool) -> tuple[np.ndarray, np.ndarray]:
        """``fn`` on pairs (numpy ufuncs; Python operators on DECIMAL objects), Java-wrapped;
        returns (values, valid)."""
        t = self.type
        if pa.types.is_decimal(t):
            with decimal.localcontext(DECIMAL_CONTEXT):
                raw = np.asarray(fn(a, b), dtype=object)
            p, s = t.precision, t.scale
            conv = np.frompyfunc(lambda v: java_decimal(v, p, s, exact_long=exact_long), 1, 1)
            out = np.asarray(conv(raw), dtype=object)
            return out, np.asarray(_NOT_NONE(out), dtype=bool)
        if pa.types.is_integer(t):
            wide = fn(a.astype(np.int64), b.astype(np.int64))
            return np.asarray(wide).astype(a.dtype), np.ones(len(a), dtype=bool)
        return np.asarray(fn(a, b)).astype(a.dtype), np.ones(len(a), dtype=bool)


_NOT_NONE = np.frompyfunc(lambda v: v is not None, 1, 1)
_DECIMAL_DIVIDE = np.frompyfunc(decimal_divide, 2, 1)


def _java_long_div(p: int, d: int) -> int:
    q = abs(p) // abs(d)
    return wrap_int(-q if (p < 0) != (d < 0) else q, 64)


_LONG_DIV = np.frompyfunc(_java_long_div, 2, 1)


class SumAgg(_Arith):
    """``FieldSumAgg``: null-skipping sum; retract subtracts (a null accumulator becomes the
    negated input)."""

    name = "sum"
    retractable = True

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        if not pa.types.is_integer(self.type):
            return self.fold(x, gid, ops, groups)
        vals, valid = _to_vals(x)
        signed = np.where(ops == RETRACT, -vals.astype(np.int64), vals.astype(np.int64))
        idx = np.flatnonzero(valid)
        out = np.zeros(groups, dtype=np.int64)
        has = np.zeros(groups, dtype=bool)
        if len(idx):
            g = gid[idx]
            starts = run_starts(g)
            out[g[starts]] = np.add.reduceat(signed[idx], starts)
            has[g[starts]] = True
        return pa.array(out.astype(vals.dtype), type=self.type, mask=~has)

    def step(self, op: np.ndarray, acc: np.ndarray, accv: np.ndarray, init: np.ndarray,
             x: np.ndarray, xv: np.ndarray) -> Step:
        dec = pa.types.is_decimal(self.type)
        ret = op == RETRACT
        both = accv & xv
        add_m, sub_m = both & ~ret, both & ret
        out, outv = acc.copy(), accv.copy()
        if add_m.any():
            out[add_m], outv[add_m] = self._apply(acc[add_m], x[add_m], np.add, True)
        if sub_m.any():
            out[sub_m], outv[sub_m] = self._apply(acc[sub_m], x[sub_m], np.subtract, True)
        only_x = ~accv & xv
        take = only_x & ~ret
        out[take], outv[take] = x[take], True
        neg = only_x & ret
        if neg.any():
            zero = np.full(int(neg.sum()), decimal.Decimal(0), dtype=object) if dec else (
                np.zeros_like(x[neg]))
            out[neg], outv[neg] = self._apply(zero, x[neg], np.subtract, False)
        return out, outv, init


class ProductAgg(_Arith):
    """``FieldProductAgg``: null-skipping product; retract divides (a null accumulator
    becomes the input itself)."""

    name = "product"
    retractable = True

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        if not pa.types.is_integer(self.type) or (ops == RETRACT).any():
            return self.fold(x, gid, ops, groups)
        vals, valid = _to_vals(x)
        idx = np.flatnonzero(valid)
        out = np.ones(groups, dtype=np.int64)
        has = np.zeros(groups, dtype=bool)
        if len(idx):
            g = gid[idx]
            starts = run_starts(g)
            out[g[starts]] = np.multiply.reduceat(vals[idx].astype(np.int64), starts)
            has[g[starts]] = True
        return pa.array(out.astype(vals.dtype), type=self.type, mask=~has)

    def _divide(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = self.type
        if pa.types.is_decimal(t):
            return self._apply(a, b, _DECIMAL_DIVIDE, False)
        if pa.types.is_floating(t):
            return np.asarray(a / b).astype(a.dtype), np.ones(len(a), dtype=bool)
        if (b == 0).any():
            raise PaimonError(
                f"aggregate 'product' of {self.field!r}: retraction divides by zero "
                "(Java ArithmeticException)"
            )
        ok = np.ones(len(a), dtype=bool)
        if t.bit_width == 64:  # Long.MIN_VALUE / -1 wraps: exact Python integers
            q = _LONG_DIV(a.astype(object), b.astype(object))
            return np.asarray(q.astype(object).tolist(), dtype=np.int64), ok
        # Java integer division truncates toward zero; the result wraps at the type's width
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        q = np.abs(a64) // np.abs(b64)
        q = np.where((a64 < 0) != (b64 < 0), -q, q)
        return q.astype(a.dtype), ok

    def step(self, op: np.ndarray, acc: np.ndarray, accv: np.ndarray, init: np.ndarray,
             x: np.ndarray, xv: np.ndarray) -> Step:
        ret = op == RETRACT
        both = accv & xv
        mul_m, div_m = both & ~ret, both & ret
        out, outv = acc.copy(), accv.copy()
        if mul_m.any():
            out[mul_m], outv[mul_m] = self._apply(acc[mul_m], x[mul_m], np.multiply, False)
        if div_m.any():
            out[div_m], outv[div_m] = self._divide(acc[div_m], x[div_m])
        take = ~accv & xv  # agg(null, x) and retract(null, x) both give x
        out[take], outv[take] = x[take], True
        return out, outv, init


class _Extreme(FieldAgg):
    """``FieldMaxAgg`` / ``FieldMinAgg`` (``InternalRowUtils.compare`` order)."""

    commutative = True
    highest: ClassVar[bool] = True

    def supports(self, t: pa.DataType) -> bool:
        return (
            _numeric(t)
            or pa.types.is_temporal(t)
            or pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t)
        )

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        valid = np.asarray(x.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        idx = np.flatnonzero(valid)
        out = np.full(groups, -1, dtype=np.int64)
        if len(idx) == 0:
            return take_or_null(x, out)
        sub = x.take(pa.array(idx, pa.int64()))
        if pa.types.is_floating(x.type):
            key: pa.Array = pa.array(float_order_key(np.asarray(sub.to_numpy())))
        else:
            key = sub
        g = gid[idx]
        order = np.asarray(
            pc.sort_indices(
                pa.table({"g": pa.array(g), "v": key}),
                sort_keys=[("g", "ascending"), ("v", "ascending")],
            ).to_numpy(),
            dtype=np.int64,
        )
        gs = g[order]
        pick = np.ones(len(order), dtype=bool)
        if self.highest:
            pick[:-1] = gs[1:] != gs[:-1]
        else:
            pick[1:] = gs[1:] != gs[:-1]
        out[gs[pick]] = idx[order[pick]]
        return take_or_null(x, out)


class MaxAgg(_Extreme):
    name = "max"
    highest = True


class MinAgg(_Extreme):
    name = "min"
    highest = False


class ListAggAgg(FieldAgg):
    """``FieldListaggAgg``: non-null strings joined by ``fields.<f>.list-agg-delimiter``."""

    name = "listagg"

    def __init__(self, field: str, arrow_type: pa.DataType, options: CoreOptions) -> None:
        super().__init__(field, arrow_type, options)
        self.delimiter = options.field_list_agg_delimiter(field)

    def supports(self, t: pa.DataType) -> bool:
        return bool(pa.types.is_string(t) or pa.types.is_large_string(t))

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        valid = np.asarray(x.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        idx = np.flatnonzero(valid)
        src = np.full(groups, -1, dtype=np.int64)
        if len(idx) == 0:
            return take_or_null(x, src)
        g = gid[idx]
        starts = run_starts(g)
        offsets = np.append(starts, len(idx)).astype(np.int32)
        values = x.take(pa.array(idx, pa.int64()))
        lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)
        joined = pc.binary_join(lists, self.delimiter).cast(self.type)
        src[g[starts]] = np.arange(len(starts))
        return take_or_null(joined, src)

    def step(self, op: np.ndarray, acc: np.ndarray, accv: np.ndarray, init: np.ndarray,
             x: np.ndarray, xv: np.ndarray) -> Step:
        d = self.delimiter
        both = accv & xv
        out, outv = acc.copy(), accv.copy()
        fwd = both & (op == AGG)
        rev = both & (op == REVERSED)
        out[fwd] = acc[fwd] + d + x[fwd]
        out[rev] = x[rev] + d + acc[rev]
        take = ~accv & xv
        out[take], outv[take] = x[take], True
        return out, outv, init


class _BoolAgg(FieldAgg):
    commutative = True
    ufunc: ClassVar[np.ufunc] = np.logical_and

    def supports(self, t: pa.DataType) -> bool:
        return bool(pa.types.is_boolean(t))

    def reduce(self, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int) -> pa.Array:
        vals, valid = _to_vals(x)
        idx = np.flatnonzero(valid)
        out = np.zeros(groups, dtype=bool)
        has = np.zeros(groups, dtype=bool)
        if len(idx):
            g = gid[idx]
            starts = run_starts(g)
            out[g[starts]] = self.ufunc.reduceat(vals[idx].astype(bool), starts)
            has[g[starts]] = True
        return pa.array(out, type=self.type, mask=~has)


class BoolAndAgg(_BoolAgg):
    name = "bool_and"
    ufunc = np.logical_and


class BoolOrAgg(_BoolAgg):
    name = "bool_or"
    ufunc = np.logical_or


_BY_NAME: dict[str, type[FieldAgg]] = {
    c.name: c
    for c in (SumAgg, ProductAgg, MaxAgg, MinAgg, LastNonNullValueAgg, LastValueAgg,
              FirstValueAgg, FirstNonNullValueAgg, ListAggAgg, BoolAndAgg, BoolOrAgg)
}
_BY_NAME["first_not_null_value"] = FirstNonNullValueAgg  # LEGACY_NAME


def create_aggregator(
    field: str, arrow_type: pa.DataType, options: CoreOptions, *, primary_key: bool,
    function: str | None,
) -> tuple[FieldAgg, bool]:
    """``FieldAggregator.createFieldAggregator``: the column's aggregator and whether it
    ignores retractions (``fields.<f>.ignore-retract``).

    Raises:
        SchemaError: an unknown function name.
        UnsupportedError: a Paimon function this implementation does not have.
    """
    ignore = options.field_ignore_retract(field)
    if primary_key:
        return PrimaryKeyAgg(field, arrow_type, options), ignore
    if function is None:
        return LastNonNullValueAgg(field, arrow_type, options), ignore
    cls = _BY_NAME.get(function)
    if cls is None:
        if function in NOT_IMPLEMENTED:
            raise UnsupportedError(
                f"aggregate function {function!r} (column {field!r}) is not supported by this "
                "implementation"
            )
        raise SchemaError(
            f"Use unsupported aggregation: {function} or spell aggregate function incorrectly! "
            f"(fields.{field}.aggregate-function)"
        )
    return cls(field, arrow_type, options), ignore


def aggregate(
    agg: FieldAgg, x: pa.Array, gid: np.ndarray, ops: np.ndarray, groups: int,
    *, ignore_retract: bool = False,
) -> pa.Array:
    """Fold column ``x`` (rows of the records taking part, in key then sequence order;
    ``gid`` their key group, nondecreasing) with ``ops`` (AGG / REVERSED / RETRACT per row)
    into one value per group (null for a group without rows).

    Raises:
        UnsupportedError: a retraction reaches a function without retraction.
    """
    if ignore_retract:
        keep = ops != RETRACT
        if not keep.all():
            x = x.filter(pa.array(keep))
            gid, ops = gid[keep], ops[keep]
    if not agg.retractable and (ops == RETRACT).any():
        raise UnsupportedError(
            f"Aggregate function '{agg.name}' does not support retraction, If you allow this "
            "function to ignore retraction messages, you can configure "
            f"'fields.{agg.field}.ignore-retract'='true'."
        )
    if len(gid) == 0:
        return pa.nulls(groups, agg.type)
    agg.check(x, gid, ops)
    if agg.commutative:
        ops = np.where(ops == REVERSED, AGG, ops)
    if (ops == REVERSED).any():
        return agg.fold(x, gid, ops, groups)
    return agg.reduce(x, gid, ops, groups)
