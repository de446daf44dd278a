"""Filter literals: conversion to a column's Python value, and Java's comparison order.

Two conversions, both raising :class:`~paimon_core.errors.FilterError` naming column and value:

* :func:`literal_from_text` takes a literal as the ``--filter`` parser reads it (a ``str``, a JSON
  number or boolean, ``None``) and converts it like the oracle's ``py_value(v, t)``
  (``shared/oracle/paimon_oracle.py``), which is what the Java and pypaimon engines receive:
  ISO strings for dates/times/timestamps, integers as days for DATE, base64 for binary, exact
  decimal text rounded HALF_UP to the scale, timestamps truncated to the precision, TIME to
  milliseconds.
* :func:`coerce_literal` takes a value in the project's Python value convention (see
  ``paimon_core.spec.binary_row``) and normalises it to the column type the same way; a ``str``
  given for a non-string column goes through :func:`literal_from_text` (so binary takes
  base64 text), DATE also takes ``int`` days, TIME ``int`` millis of the day, TIMESTAMP/LTZ
  ``int`` epoch nanos (aware datetimes are converted to UTC, for TIMESTAMP too).

Normalised literal representation (what :class:`~paimon_core.scan.predicate.Leaf` holds after
binding): BOOLEAN ``bool``; integers ``int`` (range-checked); FLOAT ``float`` holding the exact
float32 value Java's ``Float.valueOf(repr(x))`` gives; DOUBLE ``float``; DECIMAL ``Decimal``
with exactly ``scale`` fraction digits; strings ``str``; binary ``bytes``; DATE ``date``; TIME
``time`` (milliseconds); TIMESTAMP(p <= 6) naive ``datetime``; TIMESTAMP_LTZ(p <= 6) aware UTC
``datetime``; **TIMESTAMP/LTZ(p >= 7) ``int`` epoch nanoseconds** (wall clock resp. UTC
instant), because ``datetime`` cannot hold nanoseconds.

:func:`java_compare` orders two values as Paimon's ``CompareUtils.compareLiteral`` does: Java's
``Float/Double.compareTo`` (NaN equals NaN and is greater than everything, ``-0.0 < 0.0``),
``Decimal``/``Timestamp``/``BinaryString`` by value (strings by code point = UTF-8 bytes), and
binary unsigned lexicographically (Paimon >= 2.0, pypaimon; Paimon 0.9 compared signed bytes).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import math
import re
from fractions import Fraction
from typing import Any

import numpy as np

from paimon_core.errors import FilterError
from paimon_core.types import (
    BINARY_ROOTS,
    INT_RANGES,
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    DataType,
    TypeRoot,
)

__all__ = [
    "INT_RANGES",
    "JsonNumber",
    "coerce_literal",
    "is_nested",
    "java_compare",
    "literal_from_text",
    "timestamp_nanos",
    "to_float32",
]


_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH_DT = dt.datetime(1970, 1, 1)
_NANOS_PER_DAY = 86_400 * 10**9

# Never the thread's default context (28 digits): DECIMAL(38, s) needs 38, inputs may carry more.
_DEC_CTX = decimal.Context(prec=76, rounding=decimal.ROUND_HALF_UP, Emin=-999999, Emax=999999)

# The oracle's timestamp syntax (_TS_RE), kept verbatim.
_TS_RE = re.compile(
    r"^(\d{4,})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?$"
)
_TIME_RE = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$")


class JsonNumber(float):
    """A JSON number with a fraction or exponent that keeps its source text, so that DECIMAL
    and integer literals written as numbers stay exact beyond float precision (the oracle's
    ``_JsonFloat``)."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> JsonNumber:
        self = float.__new__(cls, text)
        self.text = text
        return self


def _fail(column: str, t: DataType, value: Any, reason: str) -> FilterError:
    return FilterError(f"filter literal {value!r} for column {column!r} ({t}): {reason}")


def is_nested(t: DataType) -> bool:
    """Whether ``t`` is ARRAY, MULTISET, MAP or ROW (no value predicates on those)."""
    return not isinstance(t, AtomicType)


# ---------------------------------------------------------------------------------------------
# timestamps


def timestamp_nanos(v: Any) -> int:
    """Epoch nanoseconds of a timestamp value: an ``int`` is taken as epoch nanos; a naive
    ``datetime`` as a wall clock (read as UTC); an aware one as its UTC instant.

    Raises:
        TypeError: ``v`` is not an ``int`` or a ``datetime``.
    """
    if isinstance(v, int) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            off = v.utcoffset()
            v = v.replace(tzinfo=None) - (off if off is not None else dt.timedelta(0))
        d: dt.timedelta = v - _EPOCH_DT
        extra = int(getattr(v, "nanosecond", 0) or 0)  # pandas.Timestamp
        return ((d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds) * 1000 + extra
    raise TypeError(f"not a timestamp: {v!r}")


def text_timestamp_nanos(s: str) -> int:
    """The oracle's ``_ts_to_nanos`` for strings (an offset is honoured for both TIMESTAMP and
    TIMESTAMP_LTZ, as there). Raises ValueError."""
    m = _TS_RE.match(s.strip())
    if not m:
        raise ValueError("not an ISO timestamp (YYYY-MM-DD[ HH:MM[:SS[.fffffffff]]][Z|+hh:mm])")
    y, mo, d, hh, mi, ss, frac, tz = m.groups()
    if int(hh or 0) > 23 or int(mi or 0) > 59 or int(ss or 0) > 59:
        raise ValueError("hour/minute/second out of range")
    days = (dt.date(int(y), int(mo), int(d)) - _EPOCH_DATE).days
    secs = days * 86_400 + int(hh or 0) * 3600 + int(mi or 0) * 60 + int(ss or 0)
    nanos = secs * 10**9 + (int(frac.ljust(9, "0")) if frac else 0)
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        nanos -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60) * 10**9
    return nanos


def _timestamp_literal(nanos: int, t: AtomicType, column: str, raw: Any) -> Any:
    p = t.precision if t.precision is not None else 6
    q = 10 ** (9 - p)
    nanos -= nanos % q  # floor, like the oracle's _truncate_nanos and binary_row
    ltz = t.root is TypeRoot.TIMESTAMP_LTZ
    if p > 6:
        return nanos
    try:
        v = _EPOCH_DT + dt.timedelta(microseconds=nanos // 1000)
    except OverflowError as e:
        raise _fail(column, t, raw, "outside the range of years 1..9999") from e
    return v.replace(tzinfo=dt.UTC) if ltz else v


# ---------------------------------------------------------------------------------------------
# floats


def to_float32(x: float) -> float:
    """The float32 value Java's ``Float.valueOf(repr(x))`` yields (correctly rounded from the
    decimal text, ties to even), as a Python float. Non-finite values pass through."""
    if not math.isfinite(x):
        return x
    exact = Fraction(repr(x))
    with np.errstate(over="ignore"):
        c = np.float32(x)
    f32_max = Fraction(float(np.finfo(np.float32).max))
    if np.isinf(c) or abs(exact) > f32_max:
        half_ulp = Fraction(2) ** (127 - 24)
        if abs(exact) >= f32_max + half_ulp:
            return math.copysign(math.inf, x)
        return math.copysign(float(f32_max), x)
    cands = [c, np.nextafter(c, np.float32(-np.inf)), np.nextafter(c, np.float32(np.inf))]
    best = c
    best_d = abs(Fraction(float(c)) - exact)
    for cand in cands[1:]:
        if np.isinf(cand):
            continue
        d = abs(Fraction(float(cand)) - exact)
        if d < best_d or (d == best_d and int(cand.view(np.uint32)) % 2 == 0):
            best, best_d = cand, d
    return float(best)


def _text_float(s: str) -> float:
    """The oracle's ``_to_float`` for strings. Raises ValueError."""
    s = s.strip()
    if s in ("NaN", "nan"):
        return math.nan
    if s in ("Infinity", "inf", "+Infinity"):
        return math.inf
    if s in ("-Infinity", "-inf"):
        return -math.inf
    return float(s)


# ---------------------------------------------------------------------------------------------
# decimals


def _to_decimal(v: Any, t: AtomicType, column: str) -> decimal.Decimal:
    """The oracle's ``_to_decimal``: exact parse, HALF_UP to the scale, must fit the precision."""
    p, s = t.precision or 10, t.scale or 0
    try:
        if isinstance(v, decimal.Decimal):
            d = v
        elif isinstance(v, float):
            d = decimal.Decimal(getattr(v, "text", None) or repr(v))
        else:
            d = decimal.Decimal(str(v).strip())
        if not d.is_finite():
            raise decimal.InvalidOperation()
        q = d.quantize(decimal.Decimal(1).scaleb(-s, _DEC_CTX), context=_DEC_CTX)
    except (decimal.InvalidOperation, ValueError) as e:
        raise _fail(column, t, v, "not a valid decimal") from e
    if q and q.adjusted() >= p - s:
        raise _fail(column, t, v, f"does not fit DECIMAL({p}, {s})")
    return q


# ---------------------------------------------------------------------------------------------
# conversions


def literal_from_text(raw: Any, t: DataType, column: str) -> Any:
    """Convert a literal as read from a ``--filter`` expression to the column's value.

    Args:
        raw: ``None``, ``bool``, ``int``, ``float`` (``JsonNumber`` keeps its text) or ``str``
            (quoted strings and bare words alike), as the oracle's ``_parse_literal`` returns.
        t: the column type.
        column: the column name (for error messages).

    Returns:
        The normalised literal (see the module docstring), ``None`` for NULL.

    Raises:
        FilterError: the literal is not a value of the column type.
    """
    if raw is None:
        return None
    if is_nested(t):
        raise _fail(column, t, raw, "value predicates on nested columns are not supported")
    assert isinstance(t, AtomicType)
    r = t.root
    if isinstance(raw, (list, dict)):
        raise _fail(column, t, raw, "not a scalar literal")
    try:
        if r is TypeRoot.BOOLEAN:
            if isinstance(raw, str):
                if raw.strip().lower() not in ("true", "false"):
                    raise ValueError("expected true or false")
                return raw.strip().lower() == "true"
            if isinstance(raw, bool):
                return raw
            if isinstance(raw, int) and raw in (0, 1):
                return bool(raw)
            raise ValueError("expected true or false")
        if r in INTEGER_ROOTS:
            if isinstance(raw, bool):
                raise ValueError("a boolean is not an integer")
            if isinstance(raw, float):
                if not math.isfinite(raw):
                    raise ValueError("not an integer")
                d = decimal.Decimal(getattr(raw, "text", None) or repr(raw))
                if d != d.to_integral_value():
                    raise ValueError("non-integral value")
                return coerce_literal(int(d), t, column)
            return coerce_literal(int(raw), t, column)
        if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            if isinstance(raw, bool):
                raise ValueError("a boolean is not a number")
            f = _text_float(raw) if isinstance(raw, str) else float(raw)
            return to_float32(f) if r is TypeRoot.FLOAT else f
        if r is TypeRoot.DECIMAL:
            if isinstance(raw, bool):
                raise ValueError("a boolean is not a number")
            return _to_decimal(raw, t, column)
        if r in STRING_ROOTS:
            # the oracle converts non-strings with Python's str(): 1.50 -> '1.5', true -> 'True'
            return (
                raw if isinstance(raw, str) else str(float(raw) if isinstance(raw, float) else raw)
            )
        if r in BINARY_ROOTS:
            if not isinstance(raw, str):
                raise ValueError("binary literals are base64 strings")
            return base64.b64decode(raw)
        if r is TypeRoot.DATE:
            if isinstance(raw, bool):
                raise ValueError("a boolean is not a date")
            if isinstance(raw, int):
                return _EPOCH_DATE + dt.timedelta(days=raw)
            if not isinstance(raw, str):
                raise ValueError("expected an ISO date string or days since 1970-01-01")
            return dt.date.fromisoformat(raw.strip()[:10])
        if r is TypeRoot.TIME:
            if not isinstance(raw, str):
                raise ValueError("expected a time string HH:MM[:SS[.fff]]")
            m = _TIME_RE.match(raw.strip())
            if not m:
                raise ValueError("expected a time string HH:MM[:SS[.fff]]")
            hh, mi, ss, frac = m.groups()
            ms = int((frac or "0").ljust(3, "0")[:3])
            tm = dt.time(int(hh), int(mi), int(ss or 0), ms * 1000)
            return coerce_literal(tm, t, column)
        if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
            if not isinstance(raw, str):
                raise ValueError("timestamps are ISO strings (integers are ambiguous)")
            return _timestamp_literal(text_timestamp_nanos(raw), t, column, raw)
    except FilterError:
        raise
    except (ValueError, TypeError, OverflowError, binascii.Error) as e:
        raise _fail(column, t, raw, str(e) or type(e).__name__) from e
    raise _fail(column, t, raw, "unsupported column type")  # pragma: no cover


def coerce_literal(value: Any, t: DataType, column: str) -> Any:
    """Normalise a Python-convention value to the column type (idempotent).

    Decimals are rounded HALF_UP to the scale, timestamps and times truncated to the precision,
    FLOAT values rounded to float32; ints are range-checked. A ``str`` for a non-string column
    is parsed with :func:`literal_from_text`.

    Args:
        value: the literal (``None`` stays ``None``).
        t: the column type.
        column: the column name (for error messages).

    Returns:
        The normalised literal (see the module docstring).

    Raises:
        FilterError: the value is not of the column type or does not fit it.
    """
    if value is None:
        return None
    if is_nested(t):
        raise _fail(column, t, value, "value predicates on nested columns are not supported")
    assert isinstance(t, AtomicType)
    r = t.root
    if isinstance(value, str) and r not in STRING_ROOTS:
        return literal_from_text(value, t, column)
    if r is TypeRoot.BOOLEAN:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
    elif r in INTEGER_ROOTS:
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            lo, hi = INT_RANGES[r]
            if not lo <= int(value) <= hi:
                raise _fail(column, t, value, f"out of range for {r.value}")
            return int(value)
    elif r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, (bool, np.bool_)
        ):
            try:
                f = float(value)
            except OverflowError as e:
                raise _fail(column, t, value, "out of range") from e
            return to_float32(f) if r is TypeRoot.FLOAT else f
    elif r is TypeRoot.DECIMAL:
        if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
            return _to_decimal(value, t, column)
    elif r in STRING_ROOTS:
        if isinstance(value, str):
            return value
    elif r in BINARY_ROOTS:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
    elif r is TypeRoot.DATE:
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return literal_from_text(value, t, column)  # days since 1970-01-01
    elif r is TypeRoot.TIME:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 86_400_000:
            value = dt.time(
                value // 3_600_000, value // 60_000 % 60, value // 1000 % 60, value % 1000 * 1000
            )  # millis of the day
        if isinstance(value, dt.time):
            p = min(t.precision or 0, 3)
            ms = value.microsecond // 1000
            ms -= ms % (10 ** (3 - p))
            return dt.time(value.hour, value.minute, value.second, ms * 1000)
    elif r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ) and (
        isinstance(value, (dt.datetime, int)) and not isinstance(value, bool)
    ):
        return _timestamp_literal(timestamp_nanos(value), t, column, value)
    raise _fail(column, t, value, f"a {type(value).__name__} is not a value of this type")


# ---------------------------------------------------------------------------------------------
# Java's comparison order


def _is_real(v: Any) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def _float_compare(a: float, b: float) -> int:
    """``Double.compare``: NaN == NaN > +inf, -0.0 < 0.0."""
    an, bn = math.isnan(a), math.isnan(b)
    if an or bn:
        return int(an) - int(bn)
    if a < b:
        return -1
    if a > b:
        return 1
    sa, sb = math.copysign(1.0, a), math.copysign(1.0, b)
    return (sa > sb) - (sa < sb)


def java_compare(a: Any, b: Any) -> int | None:
    """Compare two literal/column values in Paimon's order (``CompareUtils.compareLiteral``).

    Timestamps may be mixed ``datetime``/``int`` epoch nanos. Returns -1, 0 or 1, or ``None``
    when the two values cannot be compared (different kinds).
    """
    if isinstance(a, bool) or isinstance(b, bool):
        if isinstance(a, bool) and isinstance(b, bool):
            return int(a) - int(b)
        return None
    if isinstance(a, float) or isinstance(b, float):
        if not (_is_real(a) and _is_real(b)):
            return None
        return _float_compare(float(a), float(b))
    if isinstance(a, dt.datetime) or isinstance(b, dt.datetime):
        if not all(isinstance(x, (dt.datetime, int)) for x in (a, b)):
            return None
        na, nb = timestamp_nanos(a), timestamp_nanos(b)
        return (na > nb) - (na < nb)
    if isinstance(a, (bytearray, memoryview)):
        a = bytes(a)
    if isinstance(b, (bytearray, memoryview)):
        b = bytes(b)
    try:
        lt, gt = bool(a < b), bool(a > b)
    except TypeError:
        return None
    if not lt and not gt and a != b:
        return None
    return int(gt) - int(lt)
