"""Row-at-a-time reference versions of the merge engines, shaped like Paimon 0.9's Java
classes (``SortMergeReader`` + ``ReducerMergeFunctionWrapper`` + ``DeduplicateMergeFunction``
/ ``FirstRowMergeFunction`` / ``PartialUpdateMergeFunction`` / ``AggregateMergeFunction`` and
the ``Field*Agg`` classes). Slow and obviously right: the property tests check the vectorised
engines against them. Not for production use.

Where the vectorised engines deliberately deviate from Java (documented in
:mod:`paimon_core.read.engines.partial_update`), these versions make the same choice, in the
place Java's code would take the other one.
"""

from __future__ import annotations

import decimal
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from paimon_core.errors import PaimonError, SchemaError, UnsupportedError
from paimon_core.options import CoreOptions
from paimon_core.read.engines.javanum import (
    DECIMAL_CONTEXT,
    decimal_divide,
    java_decimal,
    java_float_key,
    wrap_int,
)
from paimon_core.spec.option_enums import MergeEngine
from paimon_core.spec.row_kind import RETRACT_KINDS, RowKind

__all__ = ["reference_deduplicate", "reference_merge"]

Row = dict[str, Any]


def _nulls_first(values: Sequence[Any]) -> tuple[Any, ...]:
    return tuple((v is not None, v) for v in values)


def reference_deduplicate(
    rows: Sequence[dict[str, Any]],
    key_columns: Sequence[str],
    sequence_columns: Sequence[str],
    kind_column: str,
) -> list[dict[str, Any]]:
    """Row-by-row model of Java's sort-merge + ``DeduplicateMergeFunction``: returns the
    surviving non-retract rows ordered by key."""

    def order(r: dict[str, Any]) -> tuple[Any, ...]:
        return _nulls_first([r[c] for c in sequence_columns])

    latest: dict[tuple[Any, ...], tuple[tuple[Any, ...], int, dict[str, Any]]] = {}
    for i, r in enumerate(rows):
        key = tuple(r[c] for c in key_columns)
        cand = (order(r), i, r)
        cur = latest.get(key)
        if cur is None or (cand[0], cand[1]) >= (cur[0], cur[1]):
            latest[key] = cand
    out = [v[2] for k, v in sorted(latest.items(), key=lambda kv: kv[0])]
    return [r for r in out if r[kind_column] not in RETRACT_KINDS]


# ---------------------------------------------------------------------------------------------
# field aggregators (FieldAggregator and subclasses)


class Agg:
    name = ""
    retractable = False

    def __init__(self, field: str, t: pa.DataType, options: CoreOptions) -> None:
        self.field, self.t, self.options = field, t, options

    def reset(self) -> None:
        pass

    def agg(self, acc: Any, x: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, acc: Any, x: Any) -> Any:
        return self.agg(x, acc)

    def retract(self, acc: Any, x: Any) -> Any:
        raise UnsupportedError(
            f"Aggregate function '{self.name}' does not support retraction "
            f"(fields.{self.field}.ignore-retract)"
        )

    def _type_error(self) -> PaimonError:
        return SchemaError(f"type {self.t} not supported by {self.name}")


class IgnoreRetract(Agg):
    def __init__(self, inner: Agg) -> None:
        super().__init__(inner.field, inner.t, inner.options)
        self.inner = inner
        self.name = inner.name

    def reset(self) -> None:
        self.inner.reset()

    def agg(self, acc: Any, x: Any) -> Any:
        return self.inner.agg(acc, x)

    def agg_reversed(self, acc: Any, x: Any) -> Any:
        return self.inner.agg_reversed(acc, x)

    def retract(self, acc: Any, x: Any) -> Any:
        return acc


class PrimaryKey(Agg):
    name = "primary-key"

    def agg(self, acc: Any, x: Any) -> Any:
        return x

    def retract(self, acc: Any, x: Any) -> Any:
        return x


class LastValue(Agg):
    name = "last_value"

    def agg(self, acc: Any, x: Any) -> Any:
        return x

    def retract(self, acc: Any, x: Any) -> Any:
        return None


class LastNonNull(Agg):
    name = "last_non_null_value"

    def agg(self, acc: Any, x: Any) -> Any:
        return acc if x is None else x

    def retract(self, acc: Any, x: Any) -> Any:
        return None if x is not None else acc


class FirstValue(Agg):
    name = "first_value"

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc: Any, x: Any) -> Any:
        if not self.initialized:
            self.initialized = True
            return x
        return acc


class FirstNonNull(Agg):
    name = "first_non_null_value"

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc: Any, x: Any) -> Any:
        if not self.initialized and x is not None:
            self.initialized = True
            return x
        return acc


class Arith(Agg):
    def op(self, a: Any, b: Any, kind: str) -> Any:
        t = self.t
        if pa.types.is_decimal(t):
            fn = {"+": DECIMAL_CONTEXT.add, "-": DECIMAL_CONTEXT.subtract,
                  "*": DECIMAL_CONTEXT.multiply, "/": decimal_divide}[kind]
            return java_decimal(fn(a, b), t.precision, t.scale, exact_long=kind in "+-")
        if pa.types.is_integer(t):
            if kind == "/":
                if b == 0:
                    raise PaimonError("division by zero")
                q = abs(a) // abs(b)
                r = -q if (a < 0) != (b < 0) else q
            else:
                r = {"+": a + b, "-": a - b, "*": a * b}[kind]
            return wrap_int(r, t.bit_width)
        if pa.types.is_floating(t):
            ft = np.float32 if t == pa.float32() else np.float64
            with np.errstate(all="ignore"):
                fa, fb = ft(a), ft(b)
                r = {"+": fa + fb, "-": fa - fb, "*": fa * fb, "/": fa / fb}[kind]
            return float(r)
        raise self._type_error()


class Sum(Arith):
    name = "sum"

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        return self.op(acc, x, "+")

    def retract(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            if acc is None:
                return None if x is None else self.op(self._zero(), x, "-")
            return acc
        return self.op(acc, x, "-")

    def _zero(self) -> Any:
        return decimal.Decimal(0) if pa.types.is_decimal(self.t) else 0


class Product(Arith):
    name = "product"

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        return self.op(acc, x, "*")

    def retract(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        return self.op(acc, x, "/")


def _comparable(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        or pa.types.is_temporal(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
        or pa.types.is_binary(t) or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    )


class Max(Agg):
    name = "max"

    def key(self, v: Any) -> Any:
        if not _comparable(self.t):
            raise self._type_error()
        return java_float_key(v) if pa.types.is_floating(self.t) else v

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        return x if self.key(acc) < self.key(x) else acc


class Min(Max):
    name = "min"

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        return acc if self.key(acc) < self.key(x) else x


class ListAgg(Agg):
    name = "listagg"

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return acc if x is None else x
        if not (pa.types.is_string(self.t) or pa.types.is_large_string(self.t)):
            raise self._type_error()
        return f"{acc}{self.options.field_list_agg_delimiter(self.field)}{x}"


class BoolAnd(Agg):
    name = "bool_and"

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return acc if x is None else x
        if not pa.types.is_boolean(self.t):
            raise self._type_error()
        return bool(acc and x)


class BoolOr(BoolAnd):
    name = "bool_or"

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return acc if x is None else x
        if not pa.types.is_boolean(self.t):
            raise self._type_error()
        return bool(acc or x)


_AGGS: dict[str, type[Agg]] = {
    c.name: c for c in (Sum, Product, Max, Min, LastNonNull, LastValue, FirstValue,
                        FirstNonNull, ListAgg, BoolAnd, BoolOr)
}
_AGGS["first_not_null_value"] = FirstNonNull


def make_agg(field: str, t: pa.DataType, options: CoreOptions, *, primary_key: bool,
             function: str | None) -> Agg:
    if primary_key:
        a: Agg = PrimaryKey(field, t, options)
    elif function is None:
        a = LastNonNull(field, t, options)
    else:
        cls = _AGGS.get(function)
        if cls is None:
            raise SchemaError(f"Use unsupported aggregation: {function}")
        a = cls(field, t, options)
    if options.field_ignore_retract(field):
        a = IgnoreRetract(a)
    return a


# ---------------------------------------------------------------------------------------------
# merge functions


class MergeFunction:
    def reset(self) -> None:
        raise NotImplementedError

    def add(self, kv: Row) -> None:
        raise NotImplementedError

    def result(self) -> Row | None:
        raise NotImplementedError


class Ctx:
    """What the merge functions need to know about the records."""

    def __init__(self, schema: pa.Schema, key_columns: Sequence[str], seq: str, kind: str,
                 options: CoreOptions, constants: frozenset[str]) -> None:
        self.schema, self.seq, self.kind, self.options = schema, seq, kind, options
        self.keys = tuple(key_columns)
        self.constants = constants
        self.values = [f.name for f in schema
                       if f.name not in (seq, kind) and f.name not in constants]


def _retract(kv: Row, ctx: Ctx) -> bool:
    return kv[ctx.kind] in RETRACT_KINDS


class Deduplicate(MergeFunction):
    def __init__(self, ctx: Ctx) -> None:
        self.ctx, self.ignore = ctx, ctx.options.ignore_delete()

    def reset(self) -> None:
        self.latest: Row | None = None

    def add(self, kv: Row) -> None:
        if self.ignore and _retract(kv, self.ctx):
            return
        self.latest = kv

    def result(self) -> Row | None:
        return self.latest


class FirstRow(MergeFunction):
    def __init__(self, ctx: Ctx) -> None:
        self.ctx, self.ignore = ctx, ctx.options.ignore_delete()

    def reset(self) -> None:
        self.first: Row | None = None

    def add(self, kv: Row) -> None:
        if _retract(kv, self.ctx):
            if self.ignore:
                return
            raise UnsupportedError("First row merge engine can not accept DELETE/UPDATE_BEFORE")
        if self.first is None:
            self.first = kv

    def result(self) -> Row | None:
        return self.first


class Aggregate(MergeFunction):
    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        o = ctx.options
        self.aggs = {c: make_agg(c, ctx.schema.field(c).type, o, primary_key=False,
                                 function=o.field_aggregate_function(c)) for c in ctx.values}

    def reset(self) -> None:
        self.latest: Row | None = None
        self.row: Row = dict.fromkeys(self.ctx.values)
        for a in self.aggs.values():
            a.reset()

    def add(self, kv: Row) -> None:
        self.latest = kv
        retract = kv[self.ctx.kind] not in (0, 2)
        for c, a in self.aggs.items():
            self.row[c] = a.retract(self.row[c], kv[c]) if retract else a.agg(self.row[c], kv[c])

    def result(self) -> Row | None:
        assert self.latest is not None
        out = dict(self.latest)
        out.update(self.row)
        out[self.ctx.kind] = 0
        return out


class PartialUpdate(MergeFunction):
    """``PartialUpdateMergeFunction`` (Java's field loop, in schema order)."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        o = ctx.options
        self.ignore = o.ignore_delete()
        self.remove = o.partial_update_remove_record_on_delete
        self.fields = [f.name for f in ctx.schema if f.name not in (ctx.seq, ctx.kind)]
        self.seq_of: dict[str, tuple[str, ...]] = {}
        for seq, members in o.sequence_groups():
            for m in (*members, *seq):
                self.seq_of[m] = seq
        self.seq_enabled = bool(self.seq_of)
        self.aggs = {}
        for c in ctx.values:
            fn = o.field_aggregate_function(c)
            if fn is not None:
                self.aggs[c] = make_agg(c, ctx.schema.field(c).type, o, primary_key=False,
                                        function=fn)

    def reset(self) -> None:
        self.row: Row | None = dict.fromkeys(self.fields)
        self.latest_seq: int | None = None
        self.any_insert = False
        self.key: Row | None = None
        for a in self.aggs.values():
            a.reset()

    @staticmethod
    def _cmp(a: Sequence[Any], b: Sequence[Any]) -> int:
        ka, kb = _nulls_first(a), _nulls_first(b)
        return (ka > kb) - (ka < kb)

    def add(self, kv: Row) -> None:
        self.key = kv
        if _retract(kv, self.ctx):
            if self.ignore:
                return
            if self.seq_enabled:
                self._retract_groups(kv)
                return
            if self.remove:
                if kv[self.ctx.kind] == RowKind.DELETE:
                    self.row = None
                return
            raise UnsupportedError("By default, Partial update can not accept delete records")
        self.latest_seq = kv[self.ctx.seq]
        self.any_insert = True
        if self.row is None:  # Java 0.9 throws here (NullPointerException); 1.0 restarts
            self.row = dict.fromkeys(self.fields)
        row = self.row
        for f in self.fields:
            x = kv[f]
            seq = self.seq_of.get(f)
            agg = self.aggs.get(f)
            acc = row[f]
            if seq is None:
                if agg is not None:
                    row[f] = agg.agg(acc, x)
                elif x is not None:
                    row[f] = x
                continue
            if all(kv[s] is None for s in seq):
                continue
            if self._cmp([kv[s] for s in seq], [row[s] for s in seq]) >= 0:
                if f in seq:
                    for s in seq:
                        row[s] = kv[s]
                row[f] = x if agg is None else agg.agg(acc, x)
            elif agg is not None:
                row[f] = agg.agg_reversed(acc, x)

    def _retract_groups(self, kv: Row) -> None:
        row = self.row
        assert row is not None
        updated: set[str] = set()
        for f in self.fields:
            seq = self.seq_of.get(f)
            if seq is None:
                continue
            agg = self.aggs.get(f)
            if all(kv[s] is None for s in seq):
                continue
            if self._cmp([kv[s] for s in seq], [row[s] for s in seq]) >= 0:
                if f in seq:
                    for s in seq:
                        if s not in updated:
                            row[s] = kv[s]
                            updated.add(s)
                elif agg is None:
                    row[f] = None
                else:
                    row[f] = agg.retract(row[f], kv[f])
            elif agg is not None:
                row[f] = agg.retract(row[f], kv[f])

    def result(self) -> Row | None:
        if self.row is None or not self.any_insert:
            return None  # deleted (remove-record-on-delete) / only retractions (deviation)
        assert self.key is not None
        out = dict(self.row)
        for c in self.ctx.constants:
            out[c] = self.key[c]
        out[self.ctx.seq] = self.latest_seq
        out[self.ctx.kind] = 0
        return out


_ENGINES: dict[MergeEngine, Callable[[Ctx], MergeFunction]] = {
    MergeEngine.DEDUPLICATE: Deduplicate,
    MergeEngine.FIRST_ROW: FirstRow,
    MergeEngine.PARTIAL_UPDATE: PartialUpdate,
    MergeEngine.AGGREGATE: Aggregate,
}


def reference_merge(
    rows: Sequence[Row],
    schema: pa.Schema,
    key_columns: Sequence[str],
    sequence_columns: Sequence[str],
    kind_column: str,
    options: CoreOptions,
    *,
    primary_keys: Sequence[str] = (),
    levels: Sequence[int] | None = None,
    lookup: bool = False,
) -> list[Row | None]:
    """Per key (in key order): the merged record, or None when the key is deleted (Java's
    ``null`` result; a lone retraction, passed through, is returned as is). ``lookup``: the
    merge function is wrapped in ``LookupMergeFunction`` (``levels``: each row's level)."""
    constants = frozenset(c for c in schema.names if c in {*key_columns, *primary_keys})
    ctx = Ctx(schema, key_columns, sequence_columns[-1], kind_column, options, constants)
    mf = _ENGINES[options.merge_engine](ctx)

    def cmp(a: tuple[int, Row], b: tuple[int, Row]) -> int:
        ka = _nulls_first([a[1][c] for c in key_columns])
        kb = _nulls_first([b[1][c] for c in key_columns])
        if ka != kb:
            return -1 if ka < kb else 1
        sa = _nulls_first([a[1][c] for c in sequence_columns])
        sb = _nulls_first([b[1][c] for c in sequence_columns])
        if sa != sb:
            return -1 if sa < sb else 1
        return a[0] - b[0]

    ranked = sorted(enumerate(rows), key=functools.cmp_to_key(cmp))
    ordered = [r for _, r in ranked]
    level_of = [0 if levels is None else levels[i] for i, _ in ranked]
    out: list[Row | None] = []
    i = 0
    while i < len(ordered):
        key = [ordered[i][c] for c in key_columns]
        j = i
        while j < len(ordered) and [ordered[j][c] for c in key_columns] == key:
            j += 1
        group = ordered[i:j]
        if len(group) == 1:  # ReducerMergeFunctionWrapper
            out.append(dict(group[0]))
        else:
            if lookup:  # LookupMergeFunction: only the newest record on a level > 0
                lv = level_of[i:j]
                high = [x for x in range(len(group)) if lv[x] > 0]
                group = [kv for x, kv in enumerate(group) if lv[x] == 0 or x == high[-1]]
            mf.reset()
            for kv in group:
                mf.add(kv)
            out.append(mf.result())
        i = j
    return out
