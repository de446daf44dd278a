"""JSON values of change events as Paimon-typed Arrow columns, column by column.

Helpers of :mod:`pipelines.cdc.decode`: :func:`convert` turns one parsed JSON value column (as
pyarrow's JSON reader typed it) into a table column, with the semantics of the Spark SQL
reference (:func:`pipelines.cdc.events.typed_value`): NULL where a value does not fit the type
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

from paimon_core import DataType
from paimon_core.integration import (
    BINARY_ROOTS,
    INT_RANGES,
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    TypeRoot,
)
from pipelines.cdc.settings import EpochUnit
from pipelines.cdc.values.connect_decimal import (
    connect_decimal_values,
    connect_unscaled,
    fit_decimal,
)
from pipelines.cdc.values.geometry import GEOMETRY, geojson
from pipelines.cdc.values.nested import exact_leaves, nested_values

__all__ = ["BAD_VALUE", "BAD_VALUE_CHARS", "BITS", "CONNECT_DECIMAL", "EPOCH_UNITS",
           "FINER_THAN_MICROS", "LONG_NUMBER", "MAX_MICROS", "MIN_MICROS",
           "TIME_TEXT", "TIME_UNITS", "VARIABLE_SCALE_DECIMAL", "Fields", "Logical",
           "bad_value", "convert", "digits", "exact_numbers",
           "json_text", "schema_types", "stored_time_digits"]

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
#: the unit of the numbers of each time-of-day logical type (time past midnight);
#: ``io.debezium.time.ZonedTime`` is text (``HH:MM:SS[.f]`` and an offset, Debezium: GMT)
TIME_UNITS = {
    "io.debezium.time.Time": "ms",
    "org.apache.kafka.connect.data.Time": "ms",  # time.precision.mode=connect
    "io.debezium.time.MicroTime": "us",
    "io.debezium.time.NanoTime": "ns",
}
#: Debezium's bit string (MySQL ``BIT(n)``, n > 1; Postgres ``BIT`` / ``VARBIT``): base64 of
#: the bits in little-endian byte order (the ``length`` parameter: the number of bits); into a
#: BINARY / BYTES column its bytes in big-endian order (the order MySQL shows and Paimon's
#: Debezium sync stores), into BOOLEAN ``0`` / ``1``
BITS = "io.debezium.data.Bits"
#: the longest text of a refused value :func:`bad_value` gives (longer ones are cut, "…")
BAD_VALUE_CHARS = 80
#: the reason of a value that does not fit its column (the column's name follows)
BAD_VALUE = "bad value for "
#: a time of day as text: hours, minutes, seconds, up to 9 fraction digits, an optional offset
#: (``Z`` / ``+hh:mm`` / ``+hhmm``; ZonedTime): RE2 and Java syntax
TIME_TEXT = (r"^(?P<h>[0-9]{2}):(?P<m>[0-9]{2}):(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]{1,9}))?"
             r"(?P<z>Z|[+-][0-9]{2}:?[0-9]{2})?$")
#: ISO text with a non-zero digit below the microsecond (Spark and Python's parsers would
#: drop it: refused instead)
FINER_THAN_MICROS = r"\.[0-9]{6}[0-9]*[1-9]"
_DAY_NS = 86_400 * 10**9
#: the epoch microseconds of 0001-01-01T00:00 and 9999-12-31T23:59:59.999999: the timestamps
#: Paimon (Java ``LocalDateTime`` / ``Timestamp``) and Spark hold; others are refused
MIN_MICROS = -62_135_596_800 * 10**6
MAX_MICROS = 253_402_300_800 * 10**6 - 1
_UNIT_NS = {"ms": 10**6, "us": 10**3, "ns": 1}


def stored_time_digits(precision: int | None) -> int:
    """The fraction digits a Paimon ``TIME(p)`` value keeps: Paimon stores a time of day as
    milliseconds (Java ``int``, Parquet ``TIME(MILLIS)``), so at most 3 whatever ``p``."""
    return min(precision if precision is not None else 0, 3)


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


class _Float(float):
    """A JSON number a double holds exactly, with its text."""

    text: str

    def __new__(cls, text: str) -> _Float:
        out = super().__new__(cls, text)
        out.text = text
        return out


def _float_token(text: str) -> float | str:
    mantissa = text.lstrip("-").split("e")[0].split("E")[0].replace(".", "").lstrip("0")
    return _Long(text) if len(mantissa) > 15 else _Float(text)


def _quoted(v: Any) -> Any:
    """``v`` with every number in it as a JSON string of its text."""
    if isinstance(v, dict):
        return {k: _quoted(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_quoted(x) for x in v]
    if isinstance(v, _Float):
        return _Long(v.text)
    if isinstance(v, int) and not isinstance(v, bool):
        return _Long(str(v))
    return v


def _quote_nested(obj: Any) -> Any:
    """The event ``obj`` with the numbers inside its images' nested values (ARRAY / MAP / ROW
    columns) as JSON strings of their text: a nested value's numbers all become text, so
    that the JSON reader types the value's parts alike in this line."""
    if not isinstance(obj, dict):
        return obj
    env = obj["payload"] if isinstance(obj.get("payload"), dict) and "op" not in obj else obj
    for side in ("before", "after"):
        image = env.get(side)
        if isinstance(image, dict):
            env[side] = {k: _quoted(x) if isinstance(x, (dict, list)) else x
                         for k, x in image.items()}
    return obj


def _int_token(text: str) -> int | str:
    return _Long(text) if len(text.lstrip("-")) > 19 else int(text)


def exact_numbers(line: str) -> str:
    """``line`` with every JSON number that a double / int64 cannot hold exactly written as
    a JSON string of its text (the JSON reader then keeps it as text: a decimal or string
    column takes it exactly, nothing is rounded), and every number inside the images' nested
    values too (:func:`_quote_nested`); other lines unchanged. Python's parser: only for
    lines :data:`LONG_NUMBER` finds."""
    try:
        obj = json.loads(line, parse_float=_float_token, parse_int=_int_token)
    except (ValueError, RecursionError):
        return line
    return json.dumps(_quote_nested(obj), ensure_ascii=False, separators=(",", ":"))


class Logical:
    """The logical types an event's own ``schema`` gives one column, per row: ``name`` (the
    Connect / Debezium logical type name, NULL when the event carries no schema) and
    ``scale`` (the ``scale`` parameter as text, for :data:`CONNECT_DECIMAL`)."""

    def __init__(self, name: pa.Array, scale: pa.Array) -> None:
        self.name = name
        self.scale = scale

    def is_(self, *names: str) -> pa.Array:
        return pc.fill_null(pc.is_in(self.name, pa.array(names, pa.string())), False)


def bad_value(event: str | None, reason: str | None) -> str | None:
    """The value a ``bad value for <col>`` reason refers to, as its JSON text (a string as
    itself), cut to :data:`BAD_VALUE_CHARS` characters: from the event's ``after`` image
    (``before`` for a delete, or when ``after`` lacks the column); None for other reasons
    or when the event does not hold it. For the quarantine: the reason stays the same for
    every value (the batch summary counts reasons), the value goes beside it. Python's
    parser, numbers kept as written: only quarantined events come here."""
    if event is None or reason is None or not reason.startswith(BAD_VALUE):
        return None
    col = reason[len(BAD_VALUE):]
    try:
        obj = json.loads(event, parse_float=_Long, parse_int=_Long)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    env = obj["payload"] if isinstance(obj.get("payload"), dict) and "op" not in obj else obj
    sides = ("before", "after") if env.get("op") == "d" else ("after", "before")
    for side in sides:
        image = env.get(side)
        if isinstance(image, dict) and image.get(col) is not None:
            v = image[col]
            text = v if isinstance(v, str) and not isinstance(v, _Long) else _as_written(v)
            return text if len(text) <= BAD_VALUE_CHARS else text[:BAD_VALUE_CHARS - 1] + "…"
    return None


def _as_written(v: Any) -> str:
    """Compact JSON text of a value parsed with its numbers as :class:`_Long` text."""
    if isinstance(v, _Long):
        return str.__str__(v)
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _as_written(x)
                              for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_as_written(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


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
    # an instant (ZonedTimestamp: Debezium writes it in UTC) as its UTC wall-clock time
    return d.astimezone(datetime.UTC).replace(tzinfo=None) if d.tzinfo else d


def _epoch_micros(nums: pa.Array, logical: Logical | None, epoch_unit: EpochUnit) -> pa.Array:
    """Epoch numbers (int64) as microseconds: in the unit the row's logical type names
    (:data:`EPOCH_UNITS`), else in ``epoch_unit``; NULL where nanoseconds are not whole
    microseconds (never truncated)."""
    null_l = pa.scalar(None, pa.int64())
    # years 1..9999 only (Postgres' +-infinity, 9223372036825200000, is not a time)
    ms = pc.if_else(pc.and_(pc.greater_equal(nums, MIN_MICROS // 1000),
                            pc.less_equal(nums, MAX_MICROS // 1000)), nums, null_l)
    default = pc.multiply(ms, 1000) if epoch_unit == "ms" else nums
    if logical is not None:
        by_ms = logical.is_(*[k for k, u in EPOCH_UNITS.items() if u == "ms"])
        by_us = logical.is_(*[k for k, u in EPOCH_UNITS.items() if u == "us"])
        by_ns = logical.is_(*[k for k, u in EPOCH_UNITS.items() if u == "ns"])
        whole = pc.divide(nums, 1000)
        from_ns = pc.if_else(pc.equal(pc.multiply(whole, 1000), nums), whole, null_l)
        default = pc.if_else(by_ns, from_ns, pc.if_else(by_us, nums, pc.if_else(
            by_ms, pc.multiply(ms, 1000), default)))
    return pc.if_else(pc.and_(pc.greater_equal(default, MIN_MICROS),
                              pc.less_equal(default, MAX_MICROS)), default, null_l)


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
                v = connect_unscaled(item["value"], int(item["scale"]))
            else:
                v = connect_unscaled(item, int(scale or 0))
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


def convert(arr: pa.Array, t: DataType, target: pa.DataType, epoch_unit: EpochUnit,
            logical: Logical | None = None) -> pa.Array:
    """A parsed JSON value column as Paimon type ``t`` in Arrow type ``target`` (Spark's);
    NULL where the value does not fit exactly (see :func:`pipelines.cdc.events.typed_value`).
    ``logical``: the logical types the events' own schema gives the column (decoded by
    them where given, by the table's type where not)."""
    n = len(arr)
    src = arr.type
    if pa.types.is_null(src):
        return pa.nulls(n, target)
    if not isinstance(t, AtomicType):
        if exact_leaves(t):
            return nested_values(arr, t, target)
        try:
            return arr.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return pa.nulls(n, target)
    r = t.root
    if r in STRING_ROOTS:
        return _to_string(arr, t, target, epoch_unit, logical)
    if r in BINARY_ROOTS:
        return _to_binary(arr, target, logical)
    if r is TypeRoot.BOOLEAN:
        return _to_boolean(arr, t, target, epoch_unit, logical)
    text = json_text(arr)
    if r in INTEGER_ROOTS:
        return _to_integer(arr, text, r, target)
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        if pa.types.is_integer(src) or pa.types.is_floating(src):
            return arr.cast(target)
        return _py(float, text.to_pylist(), target)
    if r is TypeRoot.DECIMAL:
        return _to_decimal(arr, text, t, target, epoch_unit, logical)
    if r is TypeRoot.DATE:
        return _to_date(arr, text, target)
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return _to_timestamp(arr, text, t, target, epoch_unit, logical)
    if r is TypeRoot.TIME:
        return _time(arr, text, logical, epoch_unit, stored_time_digits(t.precision), target)
    return pa.nulls(n, target)  # pragma: no cover - MULTISET is refused upfront


def _to_string(arr: pa.Array, t: AtomicType, target: pa.DataType, epoch_unit: EpochUnit,
               logical: Logical | None) -> pa.Array:
    """A STRING column: JSON text, a Connect decimal's exact text, a geometry's WKB as text."""
    src = arr.type
    if logical is not None and pa.types.is_struct(src) and pc.any(
            logical.is_(*GEOMETRY)).as_py():
        geo = logical.is_(*GEOMETRY)
        others = Logical(pc.if_else(geo, pa.scalar(None, pa.string()), logical.name),
                         logical.scale)
        rest = convert(pc.if_else(geo, pa.scalar(None, src), arr), t, target, epoch_unit, others)
        return pc.if_else(geo, _geometry_text(arr), rest)
    by_schema = (None if logical is None else _connect_decimals(
        arr, logical, lambda v: format(v, "f"), pa.string()))
    if by_schema is not None:  # a decimal's exact text
        return pc.if_else(by_schema[0], by_schema[1], json_text(arr))
    return json_text(arr)


def _to_binary(arr: pa.Array, target: pa.DataType, logical: Logical | None) -> pa.Array:
    """A BINARY column: base64 text, or a BIT(n)'s bytes."""
    if not pa.types.is_string(arr.type):
        return pa.nulls(len(arr), target)
    if logical is not None and pc.any(logical.is_(BITS)).as_py():
        bits = logical.is_(BITS).to_pylist()
        return _py(lambda v: _bytes(v[0], v[1]), list(zip(arr.to_pylist(), bits)), target)
    return _py(lambda v: base64.b64decode(v, validate=True), arr.to_pylist(), target)


def _to_boolean(arr: pa.Array, t: AtomicType, target: pa.DataType, epoch_unit: EpochUnit,
                logical: Logical | None) -> pa.Array:
    """A BOOLEAN column: JSON booleans, their text, ``1`` / ``0`` (MySQL's ``TINYINT(1)`` /
    ``BOOLEAN``, which Debezium sends as numbers; as Paimon's CDC type mapping without
    ``tinyint1-not-bool``; any other number is refused), or a BIT(1)."""
    src = arr.type
    if pa.types.is_boolean(src):
        return arr
    if (pa.types.is_string(src) and logical is not None
            and pc.any(logical.is_(BITS)).as_py()):  # BIT(n) of the value 0 or 1
        bits = logical.is_(BITS)
        as_bits = _py(_bit, pc.if_else(bits, arr, pa.scalar(None, src)).to_pylist(),
                      pa.bool_())
        rest = convert(pc.if_else(bits, pa.scalar(None, src), arr), t, target, epoch_unit)
        return pc.if_else(bits, as_bits, rest)
    if pa.types.is_floating(src):  # (a double's text would print 1.0 as "1")
        return pa.nulls(len(arr), pa.bool_())
    low = pc.utf8_lower(json_text(arr))
    return pc.if_else(pc.is_in(low, _TRUE), True,
                      pc.if_else(pc.is_in(low, _FALSE), False, pa.scalar(None, pa.bool_())))


_TRUE, _FALSE = pa.array(["true", "1"]), pa.array(["false", "0"])


def _to_integer(arr: pa.Array, text: pa.Array, r: TypeRoot, target: pa.DataType) -> pa.Array:
    """An integer column: numbers in range, or their text (by value past 18 characters)."""
    src = arr.type
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


def _to_decimal(arr: pa.Array, text: pa.Array, t: AtomicType, target: pa.DataType,
                epoch_unit: EpochUnit, logical: Logical | None) -> pa.Array:
    """A DECIMAL column: Connect decimals by the events' schema, else exact text (a double by
    the shortest text that reads back as it)."""
    src = arr.type
    p, s = t.precision or 38, t.scale or 0
    by_schema = (None if logical is None else _connect_decimals(
        arr, logical, lambda v: fit_decimal(v, p, s), target))
    if by_schema is not None:
        mask, values = by_schema
        rest = convert(pc.if_else(mask, pa.scalar(None, src), arr), t, target, epoch_unit)
        return pc.if_else(mask, values, rest)
    if pa.types.is_struct(src):
        return pa.nulls(len(arr), target)
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


def _to_date(arr: pa.Array, text: pa.Array, target: pa.DataType) -> pa.Array:
    """A DATE column: days since the epoch, a timestamp, or ISO text."""
    src = arr.type
    if pa.types.is_integer(src):
        return arr.cast(pa.int32()).cast(target)
    if pa.types.is_timestamp(src):
        return arr.cast(target)
    days = pc.if_else(digits(text), text, pa.scalar(None, pa.string()))
    as_days = days.cast(pa.int64()).cast(pa.int32()).cast(target)
    iso = pc.replace_substring_regex(text, "Z$", "")  # IsoDate: "2017-09-15Z"
    parsed = pc.strptime(iso, "%Y-%m-%d", "s", error_is_null=True).cast(target)
    return pc.if_else(pc.is_valid(as_days), as_days, parsed)


def _to_timestamp(arr: pa.Array, text: pa.Array, t: AtomicType, target: pa.DataType,
                  epoch_unit: EpochUnit, logical: Logical | None) -> pa.Array:
    """A TIMESTAMP / TIMESTAMP_LTZ column: epoch numbers (in their logical type's unit, else
    ``epoch_unit``) or ISO text, within the column's precision."""
    src = arr.type
    ltz = t.root is TypeRoot.TIMESTAMP_LTZ
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
        finer = pc.fill_null(pc.match_substring_regex(text, FINER_THAN_MICROS), False)
        out = pc.if_else(is_num, epoch, pc.if_else(finer, pa.scalar(None, naive),
                                                   iso.cast(naive)))
    out = _within_precision(out, t.precision)
    return out.cast(target) if not ltz else pc.assume_timezone(out, "UTC").cast(target)


def _geometry_text(arr: pa.Array) -> pa.Array:
    """Debezium geometry structs as Paimon's GeoJSON text (:func:`geojson`; NULL where
    ``wkb`` is missing or not 2D OGC WKB). Python per value: WKB needs a parser."""
    f = Fields(arr, len(arr))
    wkb = f("wkb")
    if not pa.types.is_string(wkb.type):
        return pa.nulls(len(arr), pa.string())
    srid = json_text(f("srid"))
    return _py(lambda v: geojson(v[0], v[1]), list(zip(wkb.to_pylist(), srid.to_pylist())),
               pa.string())


def _bytes(b64: str, bits: bool) -> bytes:
    raw = base64.b64decode(b64, validate=True)
    return raw[::-1] if bits else raw  # Bits: little-endian -> big-endian


def _bit(b64: str) -> bool:
    raw = base64.b64decode(b64, validate=True)
    if raw not in (b"\x00", b"\x01"):
        raise ValueError(b64)
    return raw == b"\x01"


def _within_precision(ts: pa.Array, precision: int | None) -> pa.Array:
    """``ts`` (a timestamp array in µs) NULL where finer than ``precision`` fraction digits
    (a TIMESTAMP(3) column keeps milliseconds: a value with microseconds is not stored)."""
    p = precision if precision is not None else 6
    if p >= 6 or ts.type.unit != "us":
        return ts
    v = ts.cast(pa.int64())
    factor = 10 ** (6 - p)
    whole = pc.equal(pc.subtract(v, pc.multiply(pc.divide(v, factor), factor)), 0)
    return pc.if_else(whole, ts, pa.scalar(None, ts.type))


def _time(arr: pa.Array, text: pa.Array, logical: Logical | None, epoch_unit: EpochUnit,
          digits_kept: int, target: pa.DataType) -> pa.Array:
    """A time of day as ``target`` (Spark's ``time64[ns]``): numbers past midnight in the
    unit the row's logical type names (:data:`TIME_UNITS`, else ``epoch_unit``) or text
    ``HH:MM:SS[.f][offset]`` (:data:`TIME_TEXT`; an offset is taken away: the UTC time of
    day, as Debezium's ZonedTime is written). NULL where out of ``[00:00, 24:00)`` or finer
    than the ``digits_kept`` fraction digits the column stores. Vectorised."""
    n = len(arr)
    null_l = pa.scalar(None, pa.int64())
    if pa.types.is_integer(arr.type):
        nums = arr.cast(pa.int64())
        is_num = pc.is_valid(nums)
    else:
        is_num = pc.fill_null(digits(text), False)
        nums = pc.if_else(is_num, text, pa.scalar(None, pa.string())).cast(pa.int64())
    factor = pa.array(np.full(n, _UNIT_NS[epoch_unit], np.int64))
    if logical is not None:
        for name, unit in TIME_UNITS.items():
            factor = pc.if_else(logical.is_(name), _UNIT_NS[unit], factor)
    in_day = pc.and_(pc.greater_equal(nums, 0), pc.less(nums, pc.divide(_DAY_NS, factor)))
    ns = pc.multiply(pc.if_else(in_day, nums, null_l), factor)
    if not pa.types.is_integer(arr.type):
        parts = pc.extract_regex(pc.if_else(is_num, pa.scalar(None, pa.string()), text),
                                 TIME_TEXT)
        h, m, s = (pc.struct_field(parts, k).cast(pa.int64()) for k in ("h", "m", "s"))
        frac = pc.struct_field(parts, "f")
        frac_ns = pc.fill_null(pc.utf8_rpad(frac, 9, "0").cast(pa.int64()), 0)
        ok = pc.and_(pc.and_(pc.less(h, 24), pc.less(m, 60)), pc.less(s, 60))
        clock = pc.add(pc.multiply(pc.add(pc.multiply(pc.add(pc.multiply(h, 60), m), 60), s),
                                   10**9), frac_ns)
        zone = pc.replace_substring(pc.struct_field(parts, "z"), ":", "")
        zone = pc.if_else(pc.fill_null(pc.equal(pc.utf8_length(zone), 5), False), zone,
                          pa.scalar(None, pa.string()))  # "+hhmm" ("Z", none: UTC)
        zh = pc.utf8_slice_codeunits(zone, 1, 3).cast(pa.int64())
        zm = pc.utf8_slice_codeunits(zone, 3, 5).cast(pa.int64())
        off = pc.multiply(pc.add(pc.multiply(zh, 60), zm), 60 * 10**9)
        off = pc.if_else(pc.fill_null(pc.starts_with(zone, "-"), False), pc.negate(off), off)
        utc = pc.subtract(clock, pc.fill_null(off, 0))
        utc = pc.add(utc, pc.if_else(pc.less(utc, 0), _DAY_NS, 0))
        utc = pc.subtract(utc, pc.if_else(pc.greater_equal(utc, _DAY_NS), _DAY_NS, 0))
        ns = pc.if_else(is_num, ns, pc.if_else(ok, utc, null_l))
    step = 10 ** (9 - digits_kept)
    whole = pc.equal(pc.subtract(ns, pc.multiply(pc.divide(ns, step), step)), 0)
    return pc.if_else(whole, ns, null_l).cast(target)
