"""JSON values of change events as Paimon-typed Arrow columns, column by column.

Helpers of :mod:`pipelines.cdc_decode`: :func:`convert` turns one parsed JSON value column (as
pyarrow's JSON reader typed it) into a table column, with the semantics of the Spark SQL
reference (:func:`pipelines.cdc_events.typed_value`): NULL where a value does not fit the type
exactly. Vectorised except for text only Python parses (ISO timestamps, base64, floats written
as text, integers of more than 18 characters) and nested values shown as JSON text.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import (
    BINARY_ROOTS,
    INT_RANGES,
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    DataType,
    TypeRoot,
)
from pipelines.cdc_connect_decimal import connect_decimal_values

__all__ = ["CONNECT_DECIMAL", "EPOCH_UNITS", "LONG_NUMBER", "VARIABLE_SCALE_DECIMAL", "Fields",
           "Logical", "convert", "digits", "exact_numbers", "json_text", "schema_types"]

#: Kafka Connect's decimal (``decimal.handling.mode=precise``, Debezium's default): base64 of
#: the big-endian two's complement unscaled value, the scale in the field's ``parameters``
CONNECT_DECIMAL = "org.apache.kafka.connect.data.Decimal"
#: Debezium's decimal of per-value scale: a struct ``{"scale": int, "value": base64}``
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
#: the unit of the epoch numbers of each timestamp logical type (``us`` per micro, ``ns``...)
EPOCH_UNITS = {
    "io.debezium.time.Timestamp": "ms",
    "org.apache.kafka.connect.data.Timestamp": "ms",
    "io.debezium.time.MicroTimestamp": "us",
    "io.debezium.time.NanoTimestamp": "ns",
}


class Fields:
    """The fields of one struct array, each extracted once (``flatten``): NULL where the
    array is NULL; all NULL for a field it lacks or has twice, or when it is not a struct."""

    def __init__(self, arr: pa.Array | None, n: int) -> None:
        self.n = n
        self.kids: dict[str, pa.Array] = {}
        if arr is not None and pa.types.is_struct(arr.type):
            names = [f.name for f in arr.type]
            for name, kid in zip(names, arr.flatten()):
                if names.count(name) == 1:
                    self.kids[name] = kid

    def __call__(self, name: str) -> pa.Array:
        kid = self.kids.get(name)
        return kid if kid is not None else pa.nulls(self.n)


#: text that may hold a JSON number a double or int64 cannot hold exactly: 20 digits (beyond
#: int64) or 16 digits around a point (beyond a double's 15); RE2 and Python syntax
LONG_NUMBER = "[0-9]{20}|[0-9]{16}\\.|" + "|".join(
    f"[0-9]{{{k}}}\\.[0-9]{{{16 - k}}}" for k in range(1, 16))


class _Long(str):
    """The text of a JSON number kept exact (written back as a JSON string)."""


def _float_token(text: str) -> float | str:
    mantissa = text.lstrip("-").split("e")[0].split("E")[0].replace(".", "").lstrip("0")
    return _Long(text) if len(mantissa) > 15 else float(text)


def _int_token(text: str) -> int | str:
    return _Long(text) if len(text.lstrip("-")) > 19 else int(text)


def exact_numbers(line: str) -> str:
    """``line`` with every JSON number that a double / int64 cannot hold exactly written as
    a JSON string of its text (the JSON reader then keeps it as text: a decimal or string
    column takes it exactly, nothing is rounded); other lines unchanged. Python's parser:
    only for lines :data:`LONG_NUMBER` finds."""
    try:
        obj = json.loads(line, parse_float=_float_token, parse_int=_int_token)
    except (ValueError, RecursionError):
        return line
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class Logical:
    """The logical types an event's own ``schema`` gives one column, per row: ``name`` (the
    Connect / Debezium logical type name, NULL when the event carries no schema) and
    ``scale`` (the ``scale`` parameter as text, for :data:`CONNECT_DECIMAL`)."""

    def __init__(self, name: pa.Array, scale: pa.Array) -> None:
        self.name = name
        self.scale = scale

    def is_(self, *names: str) -> pa.Array:
        return pc.fill_null(pc.is_in(self.name, pa.array(names, pa.string())), False)


def _scatter(values: pa.Array, rows: pa.Array, n: int) -> pa.Array:
    """An array of ``n`` rows holding ``values[i]`` at ``rows[i]`` (NULL elsewhere)."""
    pos = np.full(n, -1, np.int64)
    pos[rows.to_numpy(zero_copy_only=False)] = np.arange(len(rows), dtype=np.int64)
    idx = pa.array(pos, mask=pos < 0)
    return values.take(idx)


def schema_types(schema: pa.Array | None, n: int, names: Sequence[str]) -> dict[str, Logical]:
    """Per table column, the logical types the events' ``schema`` (Debezium JSON with
    schemas enabled: ``schema.fields[field == "after"].fields[field == column]``) gives it;
    empty when no event carries one. Vectorised over the flattened schema lists."""
    if schema is None or not pa.types.is_struct(schema.type):
        return {}
    env = Fields(schema, n)("fields")
    if not pa.types.is_list(env.type) or not pa.types.is_struct(env.type.value_type):
        return {}
    parent = pc.list_parent_indices(env)
    flat = pc.list_flatten(env)
    ff = Fields(flat, len(flat))
    fname = ff("field")
    if not pa.types.is_string(fname.type):
        return {}
    images = pc.fill_null(pc.is_in(fname, pa.array(["after"])), False)
    inner = ff("fields").filter(images)
    if not pa.types.is_list(inner.type) or not pa.types.is_struct(inner.type.value_type):
        return {}
    rows = parent.filter(images)
    rows2 = rows.take(pc.list_parent_indices(inner))
    flat2 = pc.list_flatten(inner)
    f2 = Fields(flat2, len(flat2))
    col, lname = f2("field"), f2("name")
    if not pa.types.is_string(col.type):
        return {}
    lname = lname if pa.types.is_string(lname.type) else pa.nulls(len(flat2), pa.string())
    scale = json_text(Fields(f2("parameters"), len(flat2))("scale"))
    out: dict[str, Logical] = {}
    for c in names:
        m = pc.fill_null(pc.equal(col, c), False)
        if not pc.any(m).as_py():
            continue
        r = rows2.filter(m)
        out[c] = Logical(_scatter(lname.filter(m), r, n), _scatter(scale.filter(m), r, n))
    return out


def json_text(arr: pa.Array) -> pa.Array:
    """JSON values as the text Spark's ``map<string, string>`` would hold."""
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_null(t):
        return arr.cast(pa.string())
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        return arr.cast(pa.string())
    if pa.types.is_timestamp(t):
        return pc.strftime(arr, "%Y-%m-%dT%H:%M:%S")
    return pa.array([None if v is None else json.dumps(v, separators=(",", ":"), default=str)
                     for v in arr.to_pylist()], pa.string())


def digits(text: pa.Array) -> pa.Array:
    """True where the text is an integer literal (optional minus, digits only)."""
    return pc.match_substring_regex(text, r"^-?[0-9]+$")


def _py(fn: Any, values: list[Any], target: pa.DataType) -> pa.Array:
    out = []
    for v in values:
        try:
            out.append(None if v is None else fn(v))
        except (ValueError, TypeError, OverflowError, binascii.Error):
            out.append(None)
    return pa.array(out, target)


def _iso(v: str, ltz: bool) -> datetime.datetime:
    d = datetime.datetime.fromisoformat(v.strip().replace(" ", "T", 1))
    if ltz:
        return d if d.tzinfo else d.replace(tzinfo=datetime.UTC)
    return d.replace(tzinfo=None)


def _epoch_micros(nums: pa.Array, logical: Logical | None, epoch_unit: str) -> pa.Array:
    """Epoch numbers (int64) as microseconds: in the unit the row's logical type names
    (:data:`EPOCH_UNITS`), else in ``epoch_unit``; NULL where nanoseconds are not whole
    microseconds (never truncated)."""
    default = pc.multiply(nums, 1000) if epoch_unit == "ms" else nums
    if logical is None:
        return default
    by_ms = logical.is_(*[k for k, u in EPOCH_UNITS.items() if u == "ms"])
    by_us = logical.is_(*[k for k, u in EPOCH_UNITS.items() if u == "us"])
    by_ns = logical.is_(*[k for k, u in EPOCH_UNITS.items() if u == "ns"])
    whole = pc.divide(nums, 1000)
    from_ns = pc.if_else(pc.equal(pc.multiply(whole, 1000), nums), whole,
                         pa.scalar(None, pa.int64()))
    return pc.if_else(by_ns, from_ns, pc.if_else(by_us, nums, pc.if_else(
        by_ms, pc.multiply(nums, 1000), default)))


def _fit_decimal(v: decimal.Decimal, precision: int, scale: int) -> decimal.Decimal:
    """``v`` at ``scale`` if that is exact and it has at most ``precision`` digits."""
    ctx = decimal.Context(prec=200, traps=[decimal.Inexact, decimal.InvalidOperation])
    q = v.quantize(decimal.Decimal(1).scaleb(-scale, ctx), context=ctx)
    if q.adjusted() >= precision - scale:
        raise ValueError(f"{v} has more than {precision - scale} integer digits")
    return q


def _unscaled(b64: str, scale: int) -> decimal.Decimal:
    """Kafka Connect's decimal: base64 of the big-endian two's complement unscaled value."""
    raw = base64.b64decode(b64, validate=True)
    if not raw:
        raise ValueError("no bytes")
    return decimal.Decimal(f"{int.from_bytes(raw, 'big', signed=True)}E-{int(scale)}")


def _connect_decimals(arr: pa.Array, logical: Logical, fit: Any,
                      target: pa.DataType) -> tuple[pa.Array, pa.Array] | None:
    """Rows whose schema says :data:`CONNECT_DECIMAL` (and the value is text) or
    :data:`VARIABLE_SCALE_DECIMAL` (and the value is an object) and that decode as such:
    (mask, ``fit(value)`` of each in ``target``, NULL where it raises). None when there are
    none. A value that does not decode (a plain number, text that is not base64) is left to
    the table's type. Python per value: base64 needs Python's parser."""
    src = arr.type
    n = len(arr)
    if pa.types.is_string(src):
        mask = logical.is_(CONNECT_DECIMAL)
    elif pa.types.is_struct(src):
        mask = logical.is_(VARIABLE_SCALE_DECIMAL)
    else:
        return None
    mask = pc.and_(mask, pc.is_valid(arr))
    if not pc.any(mask).as_py():
        return None
    rows = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    if pa.types.is_string(src) and pa.types.is_decimal128(target):  # column-wise when it can
        fast = connect_decimal_values(arr.take(pa.array(rows)),
                                      logical.scale.take(pa.array(rows)), target)
        if fast is not None:
            at = pa.array(rows)
            return pc.is_valid(_scatter(at, at, n)), _scatter(fast, at, n)
    items = arr.take(pa.array(rows)).to_pylist()
    scales = logical.scale.take(pa.array(rows)).to_pylist()
    decoded: list[bool] = []
    values: list[Any] = []
    for item, scale in zip(items, scales):
        try:
            if isinstance(item, dict):
                v = _unscaled(item["value"], int(item["scale"]))
            else:
                v = _unscaled(item, int(scale or 0))
        except (ValueError, TypeError, KeyError, binascii.Error):
            decoded.append(False)
            values.append(None)
            continue
        decoded.append(True)
        try:
            values.append(fit(v))
        except (ValueError, decimal.DecimalException):
            values.append(None)
    ok = pa.array(rows[np.array(decoded, bool)])
    if len(ok) == 0:
        return None
    vals = pa.array(values, target).filter(pa.array(decoded))
    return pc.is_valid(_scatter(ok, ok, n)), _scatter(vals, ok, n)


def convert(arr: pa.Array, t: DataType, target: pa.DataType, epoch_unit: str,
            logical: Logical | None = None) -> pa.Array:
    """A parsed JSON value column as Paimon type ``t`` in Arrow type ``target`` (Spark's);
    NULL where the value does not fit exactly (see :func:`pipelines.cdc_events.typed_value`).
    ``logical``: the logical types the events' own schema gives the column (decoded by
    them where given, by the table's type where not)."""
    n = len(arr)
    src = arr.type
    if pa.types.is_null(src):
        return pa.nulls(n, target)
    if not isinstance(t, AtomicType):
        try:
            return arr.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return pa.nulls(n, target)
    r = t.root
    if r in STRING_ROOTS:
        by_schema = (None if logical is None else _connect_decimals(
            arr, logical, lambda v: format(v, "f"), pa.string()))
        if by_schema is not None:  # a decimal's exact text
            return pc.if_else(by_schema[0], by_schema[1], json_text(arr))
        return json_text(arr)
    if r in BINARY_ROOTS:
        if not pa.types.is_string(src):
            return pa.nulls(n, target)
        return _py(lambda v: base64.b64decode(v, validate=True), arr.to_pylist(), target)
    if r is TypeRoot.BOOLEAN:
        if pa.types.is_boolean(src):
            return arr
        low = pc.utf8_lower(json_text(arr))
        return pc.if_else(pc.equal(low, "true"), True,
                          pc.if_else(pc.equal(low, "false"), False, pa.scalar(None, pa.bool_())))
    text = json_text(arr)
    if r in INTEGER_ROOTS:
        lo, hi = INT_RANGES[r]
        if pa.types.is_integer(src):
            if r is TypeRoot.BIGINT:
                return arr.cast(target)
            ok = pc.and_(pc.greater_equal(arr, lo), pc.less_equal(arr, hi))
            return pc.if_else(ok, arr, pa.scalar(None, src)).cast(target)

        def parse(v: str) -> int:
            x = int(v)
            if not lo <= x <= hi:
                raise ValueError(v)
            return x

        null_s = pa.scalar(None, pa.string())
        num = pc.if_else(digits(text), text, null_s)
        width = pc.binary_length(num)
        vals = pc.if_else(pc.less_equal(width, 18), num, null_s).cast(pa.int64())  # < 2**63
        if r is not TypeRoot.BIGINT:
            ok = pc.and_(pc.greater_equal(vals, lo), pc.less_equal(vals, hi))
            vals = pc.if_else(ok, vals, pa.scalar(None, pa.int64()))
        wide = pc.fill_null(pc.greater(width, 18), False)  # (leading zeros, overflow): by value
        if pc.any(wide).as_py():
            vals = pc.replace_with_mask(vals, wide, _py(parse, pc.filter(num, wide).to_pylist(),
                                                        pa.int64()))
        return vals.cast(target)
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        if pa.types.is_integer(src) or pa.types.is_floating(src):
            return arr.cast(target)
        return _py(float, text.to_pylist(), target)
    if r is TypeRoot.DECIMAL:
        p, s = t.precision or 38, t.scale or 0
        by_schema = (None if logical is None else _connect_decimals(
            arr, logical, lambda v: _fit_decimal(v, p, s), target))
        if by_schema is not None:
            mask, values = by_schema
            rest = convert(pc.if_else(mask, pa.scalar(None, src), arr), t, target, epoch_unit)
            return pc.if_else(mask, values, rest)
        if pa.types.is_struct(src):
            return pa.nulls(n, target)
        scale = t.scale or 0
        if pa.types.is_floating(src):  # the shortest text that reads back as the double
            text = pa.array([None if v is None else repr(v) for v in arr.to_pylist()],
                            pa.string())
        exact = pc.match_substring_regex(text, rf"^[+-]?[0-9]+(\.[0-9]{{0,{scale}}}0*)?$")
        good = pc.if_else(exact, text, pa.scalar(None, pa.string()))
        try:
            return good.cast(target)
        except pa.ArrowInvalid:  # too many integer digits somewhere: value by value
            return _py(lambda v: decimal.Decimal(v), good.to_pylist(), target)
    if r is TypeRoot.DATE:
        if pa.types.is_integer(src):
            return arr.cast(pa.int32()).cast(target)
        if pa.types.is_timestamp(src):
            return arr.cast(target)
        days = pc.if_else(digits(text), text, pa.scalar(None, pa.string()))
        as_days = days.cast(pa.int64()).cast(pa.int32()).cast(target)
        parsed = pc.strptime(text, "%Y-%m-%d", "s", error_is_null=True).cast(target)
        return pc.if_else(pc.is_valid(as_days), as_days, parsed)
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        ltz = r is TypeRoot.TIMESTAMP_LTZ
        naive = pa.timestamp(target.unit)
        if pa.types.is_integer(src):
            out = _epoch_micros(arr.cast(pa.int64()), logical, epoch_unit).cast(naive)
        elif pa.types.is_timestamp(src):
            out = arr.cast(pa.timestamp(src.unit)).cast(naive)
        else:
            is_num = digits(text)
            nums = pc.if_else(is_num, text, pa.scalar(None, pa.string())).cast(pa.int64())
            epoch = _epoch_micros(nums, logical, epoch_unit).cast(naive)
            iso = _py(lambda v: _iso(v, ltz), pc.if_else(is_num, pa.scalar(None, pa.string()),
                                                         text).to_pylist(),
                      pa.timestamp(target.unit, tz="UTC") if ltz else naive)
            out = pc.if_else(is_num, epoch, iso.cast(naive))
        return out.cast(target) if not ltz else pc.assume_timezone(out, "UTC").cast(target)
    return pa.nulls(n, target)  # pragma: no cover - TIME / MULTISET are refused upfront
