"""Array plumbing shared by the read-side casts (:mod:`paimon_core.read.casts`,
:mod:`paimon_core.read.casts_time`): numpy views with validity, the first offending value of
a failed cast, and Java's ``Double.toString`` / ``Float.toString`` text of numbers."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import CastError
from paimon_core.types import DataType

__all__ = ["check_values", "from_numpy", "java_double_strings", "java_number_text", "to_numpy"]


def to_numpy(arr: pa.Array, fill: object) -> tuple[np.ndarray, np.ndarray]:
    """The values of ``arr`` with nulls replaced by ``fill``, and the validity mask."""
    valid = np.asarray(pc.is_valid(arr))
    values = np.asarray(pc.fill_null(arr, pa.scalar(fill, arr.type)) if arr.null_count
                        else arr.to_numpy(zero_copy_only=False))
    return values, valid


def from_numpy(values: np.ndarray, valid: np.ndarray, typ: pa.DataType) -> pa.Array:
    """An Arrow array of ``typ`` from numpy ``values``, null where ``valid`` is False."""
    mask = None if valid.all() else ~valid
    return pa.array(values, type=typ, mask=mask)


def check_values(arr: pa.Array, ok: pa.Array, source: DataType, target: DataType,
                 why: str) -> None:
    """Raise :class:`CastError` naming the first non-null value of ``arr`` that ``ok`` does
    not accept (Java fails the read on it)."""
    bad = pc.and_(pc.is_valid(arr), pc.invert(pc.fill_null(ok, False)))
    if pc.any(bad).as_py():
        value = arr[pc.index(bad, True).as_py()].as_py()
        raise CastError(value, source.sql(), target.sql(), why)


def java_number_text(d: decimal.Decimal) -> str:
    """Java's ``Double.toString`` layout of the shortest decimal ``d`` of a finite double:
    plain with at least one fraction digit for 1e-3 <= |d| < 1e7, else ``d.dddE±n``."""
    sign, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + exp  # the decimal point sits after ``point`` digits
    neg = "-" if sign else ""
    if text == "0":
        return neg + "0.0"
    if 1 <= point <= 7:  # 1 <= |d| < 1e7
        return f"{neg}{text[:point].ljust(point, '0')}.{text[point:] or '0'}"
    if -2 <= point <= 0:  # 1e-3 <= |d| < 1
        return f"{neg}0.{'0' * -point}{text}"
    return _sci(neg, text, point)


def _sci(neg: str, text: str, point: int) -> str:
    return f"{neg}{text[0]}.{text[1:] or '0'}E{point - 1}"


def _one(v: float, float32: bool) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    shortest = repr(np.float32(v)) if float32 else repr(v)
    if float32:
        shortest = shortest.removeprefix("np.float32(").removesuffix(")")
    return java_number_text(decimal.Decimal(shortest))


def java_double_strings(arr: pa.Array, *, float32: bool = False) -> pa.Array:
    """``Double.toString`` (``Float.toString`` with ``float32``) of every value, nulls kept.
    Formatted once per distinct value (a handful in an evolved column, typically)."""
    distinct = pc.unique(arr).drop_null()
    text = pa.array([_one(v, float32) for v in distinct.to_pylist()], pa.string())
    return pc.take(text, pc.index_in(arr, value_set=distinct))
