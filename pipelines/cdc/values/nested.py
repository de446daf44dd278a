"""Nested values (ARRAY / MAP / ROW) holding DECIMAL or STRING leaves, converted value by value
in Python, so that a decimal is checked from its number's text and never rounded (the rest of
:mod:`pipelines.cdc.values.convert` is column by column)."""

from __future__ import annotations

import decimal
import json
import re
from typing import Any

import pyarrow as pa

from paimon_core import DataType, RowType
from paimon_core.integration import (
    INTEGER_ROOTS,
    STRING_ROOTS,
    ArrayType,
    AtomicType,
    MapType,
    TypeRoot,
)
from pipelines.cdc.values.connect_decimal import fit_decimal

__all__ = ["exact_leaves", "nested_values"]


def exact_leaves(t: DataType) -> bool:
    """Whether a nested type holds DECIMAL or STRING values (JSON numbers in them must land
    exactly: see :func:`nested_values`)."""
    if isinstance(t, AtomicType):
        return t.root is TypeRoot.DECIMAL or t.root in STRING_ROOTS
    if isinstance(t, ArrayType):
        return exact_leaves(t.element)
    if isinstance(t, MapType):
        return exact_leaves(t.key) or exact_leaves(t.value)
    if isinstance(t, RowType):
        return any(exact_leaves(f.type) for f in t.fields)
    return False


def nested_values(arr: pa.Array, t: DataType, target: pa.DataType) -> pa.Array:
    """ARRAY / MAP / ROW values holding DECIMAL or STRING leaves, value by value (Python: a
    decimal is checked from the number's text; numbers longer than a double arrive as text,
    :func:`exact_numbers`): NULL where a value does not fit exactly (never rounded)."""
    out: list[Any] = []
    for v in arr.to_pylist():
        try:
            out.append(None if v is None else _py_value(v, t))
        except (ValueError, TypeError, KeyError, ArithmeticError):
            out.append(None)
    try:
        return pa.array(out, target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # other leaves: row by row
        return pa.chunked_array([_one(v, target) for v in out], target).combine_chunks()


def _one(v: Any, target: pa.DataType) -> pa.Array:
    try:
        return pa.array([v], target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.nulls(1, target)


def _py_value(v: Any, t: DataType) -> Any:
    """One parsed JSON value as a Python value of type ``t`` (raises where it does not fit)."""
    if v is None:
        return None
    if isinstance(t, ArrayType):
        if not isinstance(v, list):
            raise TypeError(v)
        return [_py_value(x, t.element) for x in v]
    if isinstance(t, MapType):
        if isinstance(v, dict):  # (pyarrow reads an object as a struct: an absent key is None)
            pairs = [(k, x) for k, x in v.items() if x is not None]
        elif isinstance(v, list):  # an Avro map read by pyarrow: its (key, value) pairs
            pairs = [_pair(p) for p in v]
        else:
            raise TypeError(v)
        return [(_py_value(k, t.key), _py_value(x, t.value)) for k, x in pairs]
    if isinstance(t, RowType):
        if not isinstance(v, dict):
            raise TypeError(v)
        return {f.name: _py_value(v.get(f.name), f.type) for f in t.fields}
    assert isinstance(t, AtomicType)
    if t.root is TypeRoot.DECIMAL:
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise TypeError(v)
        text = repr(v) if isinstance(v, float) else str(v)
        if not _PLAIN.match(text):  # plain decimal text only, as a top-level decimal
            raise ValueError(text)
        return fit_decimal(decimal.Decimal(text), t.precision or 38, t.scale or 0)
    if t.root in STRING_ROOTS:
        if isinstance(v, str):
            return v
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        return json.dumps(v, separators=(",", ":"), default=str)
    if isinstance(v, str) and (t.root in INTEGER_ROOTS or t.root in (TypeRoot.FLOAT,
                                                                     TypeRoot.DOUBLE)):
        if not _NUMBER.match(v):  # a number made text (exact_numbers)
            raise ValueError(v)
        return float(v) if t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE) else int(v)
    return v


def _pair(p: Any) -> tuple[Any, Any]:
    """One entry of a map given as a list: a ``(key, value)`` pair (pyarrow's map values),
    or a ``{"key", "value"}`` record (Connect's Avro form of a map whose keys are not
    strings)."""
    if isinstance(p, (tuple, list)) and len(p) == 2:
        return p[0], p[1]
    if isinstance(p, dict) and set(p) == {"key", "value"}:
        return p["key"], p["value"]
    raise TypeError(p)


_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$")
_PLAIN = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
