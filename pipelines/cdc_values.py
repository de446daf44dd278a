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
from typing import Any

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

__all__ = ["Fields", "convert", "digits", "json_text"]


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


def convert(arr: pa.Array, t: DataType, target: pa.DataType, epoch_unit: str) -> pa.Array:
    """A parsed JSON value column as Paimon type ``t`` in Arrow type ``target`` (Spark's);
    NULL where the value does not fit exactly (see :func:`pipelines.cdc_events.typed_value`)."""
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
            scaled = pc.multiply(arr, 1000) if epoch_unit == "ms" else arr
            out = scaled.cast(pa.int64()).cast(naive)
        elif pa.types.is_timestamp(src):
            out = arr.cast(pa.timestamp(src.unit)).cast(naive)
        else:
            is_num = digits(text)
            nums = pc.if_else(is_num, text, pa.scalar(None, pa.string())).cast(pa.int64())
            epoch = (pc.multiply(nums, 1000) if epoch_unit == "ms" else nums).cast(naive)
            iso = _py(lambda v: _iso(v, ltz), pc.if_else(is_num, pa.scalar(None, pa.string()),
                                                         text).to_pylist(),
                      pa.timestamp(target.unit, tz="UTC") if ltz else naive)
            out = pc.if_else(is_num, epoch, iso.cast(naive))
        return out.cast(target) if not ltz else pc.assume_timezone(out, "UTC").cast(target)
    return pa.nulls(n, target)  # pragma: no cover - TIME / MULTISET are refused upfront
