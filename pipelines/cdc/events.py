"""Debezium-style change events as DataFrames: pure Spark SQL transforms, the reference
semantics of CDC decoding. The job (:mod:`pipelines.cdc.ingest`) runs the vectorised pyarrow
decoder :mod:`pipelines.cdc.decode`, which a test checks against these transforms row by row;
the constants and helpers here (row kinds, rejection reasons, position columns, type
inference for new columns) are shared by both.

An event is one JSON object per line (optionally wrapped as ``{"schema": ..., "payload": {...}}``)::

    {"op": "u", "ts_ms": 1700000000000,
     "before": {"id": 7, "name": "old"}, "after": {"id": 7, "name": "new"},
     "source": {"lsn": 123456}}

``op``: ``c`` (create), ``r`` (snapshot read), ``u`` (update), ``d`` (delete: ``before`` may
hold only the key), ``m`` (logical decoding message: skipped, counted), ``t`` (truncate: the
job empties the table at its position); a tombstone (``null`` or
``{"schema": null, "payload": null}``) is skipped and counted. An unchanged TOASTed value
(``__debezium_unavailable_value``) keeps the column's previous value (see
:data:`pipelines.cdc.settings.Unavailable` for the options). Images are parsed
as ``map<string, string>`` (every JSON value as its text, nested values as JSON), then cast to
the table's column types with ``try_cast``, so that a value that does not fit its column is
*detected* (the event is quarantined) instead of silently nulled or truncated. Value encodings:

* integers / decimals / floats / booleans: JSON numbers, booleans or their text (Debezium
  ``decimal.handling.mode=string|double``). A decimal must be plain text with at most the
  column's scale of significant fraction digits (``12.50`` fits ``DECIMAL(5, 2)``, ``1.005``
  and ``1e3`` do not: never rounded); a BOOLEAN takes ``1`` / ``0`` too (MySQL's
  ``TINYINT(1)``, as Paimon's CDC sync maps it), no other number;
* decimals by the event's own schema (Debezium JSON with schemas enabled, :func:`logical_type`):
  Kafka Connect ``Decimal`` (the default ``precise`` mode: base64 of the unscaled value, the
  ``scale`` parameter) and ``VariableScaleDecimal`` (``{"scale", "value"}``), exact or
  refused; into a STRING column their exact decimal text;
* DATE: days since the epoch (``io.debezium.time.Date``) or ISO text (``IsoDate``'s
  ``2017-09-15Z`` too);
* TIMESTAMP / TIMESTAMP WITH LOCAL TIME ZONE: epoch numbers in the unit the event's schema
  names (``Timestamp`` ms, ``MicroTimestamp`` µs, ``NanoTimestamp`` ns: refused when not
  whole µs), else in ``epoch_unit``; or ISO text (``ZonedTimestamp``: an instant; into
  TIMESTAMP its UTC wall-clock time; a non-zero digit below the µs is refused). Refused
  when finer than the column's precision or outside the years 1..9999 (Postgres' infinity);
* TIME(p): a time of day, numbers past midnight in the unit of ``Time`` (ms) /
  ``MicroTime`` (µs) / ``NanoTime`` (ns) (else ``epoch_unit``) or text ``HH:MM:SS[.f]`` with
  an optional offset (``ZonedTime``, taken away: UTC); Paimon stores milliseconds, so a
  value finer than ``min(p, 3)`` fraction digits, or not in ``[00:00, 24:00)``, is refused.
  This reference carries TIME as its microseconds past midnight (BIGINT: Spark's TIME type
  is off by default); the fast path as ``time64``;
* BINARY / BYTES: base64 text; Debezium ``Bits`` (little-endian) land big-endian, as Paimon's
  Debezium sync stores them; ``Bits`` of 0 / 1 into BOOLEAN;
* STRING: text as is (``Json``, ``Uuid``, ``Enum``, ``EnumSet``, ``Xml``, ``Ltree``,
  ``Interval``...); geometry structs (``Geometry`` / ``Point`` / ``Geography``) as the
  GeoJSON text Paimon's sync writes (2D WKB; others refused); ``Year`` is an INT;
* ARRAY / MAP / ROW: JSON; their decimals must fit exactly too (checked on the numbers' text:
  never rounded), numbers longer than a double kept as text.

The source position orders events: the fields of the event's ``source.connector``
(:data:`CONNECTOR_POSITIONS`: Postgres ``lsn``, MySQL ``file, pos, row``, SQL Server
``commit_lsn, change_lsn, event_serial_no``, Oracle ``scn``, MongoDB ``ts_ms, ord``, Db2
``commit_lsn, change_lsn``; ``lsn`` without a connector), or ``position_fields`` when given;
numbers, or fixed-width text such as MySQL's binlog file and SQL Server's LSNs. ``ts_ms``, the
input file and the line number break ties.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from paimon_core import DataType, RowKind, RowType, TableSchema
from paimon_core.integration import (
    BINARY_ROOTS,
    KIND_COLUMN,
    STRING_ROOTS,
    ArrayType,
    AtomicType,
    MapType,
    TypeRoot,
)
from pipelines.cdc.settings import Unavailable
from pipelines.cdc.source_tables import OTHER_TABLE, taken_column
from pipelines.cdc.values.convert import (
    BITS,
    CONNECT_DECIMAL,
    EPOCH_UNITS,
    FINER_THAN_MICROS,
    LONG_NUMBER,
    MAX_MICROS,
    MIN_MICROS,
    TIME_TEXT,
    TIME_UNITS,
    VARIABLE_SCALE_DECIMAL,
    stored_time_digits,
)
from pipelines.cdc.values.geometry import GEOMETRY, geojson
from pipelines.cdc.values.nested import exact_leaves
from pipelines.spark_types import spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from pipelines.cdc.source_tables import TableFilter

__all__ = ["ERROR_COLUMN", "FIELDS_COLUMN", "KIND_COLUMN", "SEQUENCE_UNFIT", "TOMBSTONE",
           "classify_events", "is_supported_type", "logical_type", "parse_events",
           "position_columns", "to_changes", "typed_value", "unknown_columns"]

ERROR_COLUMN = "_error"
POSITION_PREFIX = "_pos_"
_IMAGE = "map<string,string>"
_EVENT_FIELDS = f"op:string,ts_ms:long,before:{_IMAGE},after:{_IMAGE},source:{_IMAGE}"
#: the part of Debezium's ``schema`` (JSON converter with schemas enabled) that types values:
#: per envelope field (``before`` / ``after``) its fields' logical type ``name`` and
#: ``parameters`` (a decimal's ``scale``)
_SCHEMA = ("struct<fields:array<struct<field:string,fields:array<struct<field:string,"
           "name:string,parameters:map<string,string>>>>>>")
EVENT_SCHEMA = (
    f"op string, ts_ms long, before {_IMAGE}, after {_IMAGE}, source {_IMAGE}, "
    f"payload struct<{_EVENT_FIELDS}>, schema {_SCHEMA}, _corrupt string"
)
#: an unquoted JSON number that :data:`pipelines.cdc.values.convert.LONG_NUMBER` finds (Java regex:
#: the text before it, the number)
_LONG_TOKEN = (r"([:\[,]\s*)(-?[0-9]*(?:" + LONG_NUMBER + r")[0-9]*(?:[eE][+-]?[0-9]+)?)"
               r"(?=\s*[,}\]])")
#: strict base64 (as Python's ``b64decode(validate=True)``; Spark's decoder is lenient)
_BASE64 = r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
#: the column of :func:`parse_events` holding the events' own field types (see
#: :func:`logical_type`)
FIELDS_COLUMN = "_fields"
OPS = ("c", "r", "u", "d", "t", "m")
#: the operations that carry a row
ROW_OPS = ("c", "r", "u", "d")
#: the ``_error`` of a Kafka tombstone line (JSON ``null`` or ``{"schema": null, "payload":
#: null}``): skipped and counted, not an error
TOMBSTONE = "tombstone"
#: the ``_error`` of a logical decoding message (``op: "m"``): skipped and counted
MESSAGE = "message"
#: the reason of an event whose position cannot fill the sequence column (then its name)
SEQUENCE_UNFIT = "source position does not fit the sequence column"
#: the ``_error`` of a truncate (``op: "t"``): counted; the job empties the table there
TRUNCATE = "truncate"
#: outcomes that are not malformed events
SKIPPED = (TOMBSTONE, MESSAGE)
#: a tombstone printed with the envelope (JsonConverter with schemas enabled)
TOMBSTONE_ENVELOPE = (r'^\s*\{\s*(?:"schema"\s*:\s*null\s*,\s*"payload"\s*:\s*null'
                      r'|"payload"\s*:\s*null\s*,\s*"schema"\s*:\s*null'
                      r'|"payload"\s*:\s*null)\s*\}\s*$')
#: Debezium's placeholder of an unchanged TOASTed value (``unavailable.value.placeholder``)
UNAVAILABLE = "__debezium_unavailable_value"
#: the placeholder of a binary column (its bytes, base64 as the JSON converter writes them)
UNAVAILABLE_BASE64 = base64.b64encode(UNAVAILABLE.encode()).decode()
#: the source position fields of each Debezium connector (``source.connector``), most
#: significant first; the first must be present, the others may be NULL (Debezium's
#: SourceInfo of each connector)
CONNECTOR_POSITIONS: dict[str, tuple[str, ...]] = {
    "postgresql": ("lsn",),
    "mysql": ("file", "pos", "row"),
    "mariadb": ("file", "pos", "row"),
    "sqlserver": ("commit_lsn", "change_lsn", "event_serial_no"),
    "oracle": ("scn",),
    "mongodb": ("ts_ms", "ord"),
    "db2": ("commit_lsn", "change_lsn"),
}
#: the position fields of events whose ``source`` names no connector
DEFAULT_POSITIONS = ("lsn",)
#: the ``_connector`` of events whose ``source`` holds no position (the first field of their
#: connector's, e.g. as some Kafka sinks write ``source`` with only ``db`` and ``table``):
#: ordered by arrival (file, line), as canal's; refused mixed with positioned events
ARRIVAL = "(no source position: arrival order)"
#: position slots when the fields come from ``source.connector``
AUTO_SLOTS = max(len(v) for v in CONNECTOR_POSITIONS.values())


def parse_events(lines: DataFrame) -> DataFrame:
    """``(file, line, value)`` JSON lines -> one row per non-blank line with the envelope
    unpacked: ``file, line, value, op, ts_ms, before, after, source, _corrupt, _tombstone``
    (``_tombstone``: the line is JSON ``null``, a Kafka tombstone, which is not an event)."""
    from pyspark.sql import functions as F

    trimmed = F.trim(F.col("value"))
    # JSON numbers a double / int64 cannot hold become JSON strings of their text first
    # (Spark's parser would print them as doubles): exact, as the fast path keeps them
    exact = F.regexp_replace(F.col("value"), _LONG_TOKEN, '$1"$2"')
    e = F.from_json(exact, EVENT_SCHEMA,
                    {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"})
    parsed = lines.filter(trimmed != "").withColumn("_e", e)
    pay = F.col("_e.payload")
    top = F.col("_e")
    use_payload = pay.isNotNull() & top["op"].isNull()
    fields = ["op", "ts_ms", "before", "after", "source"]
    return parsed.select(
        "file", "line", "value",
        *[F.when(use_payload, pay[f]).otherwise(top[f]).alias(f) for f in fields],
        F.try_element_at(F.filter(F.col("_e.schema.fields"), lambda x: x["field"] == "after"),
                         F.lit(1))["fields"].alias(FIELDS_COLUMN),
        F.col("_e._corrupt").alias("_corrupt"),
        ((trimmed == "null") | trimmed.rlike(TOMBSTONE_ENVELOPE)).alias("_tombstone"),
    )


def _digits(c: Column) -> Column:
    return c.rlike(r"^-?[0-9]+$")


def logical_type(column: str) -> tuple[Column, Column]:
    """The logical type ``name`` and ``scale`` parameter the event's own schema gives
    ``column`` (NULLs when the event carries no schema), from :data:`FIELDS_COLUMN`."""
    from pyspark.sql import functions as F

    f = F.try_element_at(F.filter(F.col(FIELDS_COLUMN), lambda x: x["field"] == column),
                         F.lit(1))
    return f["name"], f["parameters"]["scale"]


def _epoch(n: Column, name: Column | None, epoch_unit: str) -> Column:
    """Epoch numbers as a timestamp, in the unit the logical type ``name`` gives (else in
    ``epoch_unit``); NULL where nanoseconds are not whole microseconds."""
    from pyspark.sql import functions as F

    # years 1..9999 only: no overflow, no Postgres +-infinity
    ms = F.when(n.between(MIN_MICROS // 1000, MAX_MICROS // 1000), n)
    us = F.when(n.between(MIN_MICROS, MAX_MICROS), n)
    default = F.timestamp_micros(us) if epoch_unit == "us" else F.timestamp_millis(ms)
    if name is None:
        return default
    units = {u: [k for k, v in EPOCH_UNITS.items() if v == u] for u in ("ms", "us", "ns")}
    return (F.when(name.isin(*units["ns"]),
                   F.when(n % 1000 == 0, F.timestamp_micros(
                       (n.cast("decimal(20,0)") / 1000).cast("long"))))
            .when(name.isin(*units["us"]), F.timestamp_micros(us))
            .when(name.isin(*units["ms"]), F.timestamp_millis(ms))
            .otherwise(default))


def _reversed(b: Column) -> Column:
    """The bytes of ``b`` in reverse order (Debezium's little-endian Bits -> big-endian)."""
    from pyspark.sql import functions as F

    pairs = F.regexp_extract_all(F.hex(b), F.lit("(..)"), 1)
    return F.when(b.isNotNull(), F.unhex(F.array_join(F.reverse(pairs), "")))


#: :data:`pipelines.cdc.values.convert.TIME_TEXT` without group names (Java's regex syntax differs)
_TIME_TEXT = re.sub(r"\?P<\w+>", "", TIME_TEXT)
_DAY_NS = 86_400 * 10**9


def _time_micros(raw: Column, name: Column | None, epoch_unit: str, digits_kept: int) -> Column:
    """A time of day as its microseconds past midnight (BIGINT: Spark has no TIME type
    unless enabled; the fast path's ``time64``): numbers in the unit of the logical type
    ``name`` (:data:`pipelines.cdc.values.convert.TIME_UNITS`, else ``epoch_unit``) or text
    ``HH:MM:SS[.f][offset]`` (the offset taken away); NULL out of ``[00:00, 24:00)`` or finer
    than the ``digits_kept`` fraction digits the column stores."""
    from pyspark.sql import functions as F

    unit_ns = {"ms": 10**6, "us": 10**3, "ns": 1}
    factor: Column = F.lit(unit_ns[epoch_unit])
    if name is not None:
        expr = None
        for logical, unit in TIME_UNITS.items():
            expr = (F.when(name == logical, F.lit(unit_ns[unit])) if expr is None
                    else expr.when(name == logical, F.lit(unit_ns[unit])))
        assert expr is not None
        factor = expr.otherwise(factor)
    n = raw.try_cast("long")
    by_number = F.when((n >= 0) & (n < F.lit(_DAY_NS) / factor), n * factor)

    def group(i: int) -> Column:
        return F.regexp_extract(raw, _TIME_TEXT, i)

    h, m, s = (group(i).try_cast("long") for i in (1, 2, 3))
    frac = F.coalesce(F.rpad(group(4), 9, "0").try_cast("long"), F.lit(0))
    zone = F.regexp_replace(group(5), ":", "")
    off = F.when((zone == "") | (zone == "Z"), F.lit(0)).otherwise(
        (F.substring(zone, 2, 2).try_cast("long") * 60 + F.substring(zone, 4, 2).try_cast("long"))
        * 60 * 10**9 * F.when(zone.startswith("-"), F.lit(-1)).otherwise(F.lit(1)))
    clock = ((h * 60 + m) * 60 + s) * 10**9 + frac - off
    by_text = F.when(raw.rlike(_TIME_TEXT) & (h < 24) & (m < 60) & (s < 60),
                     F.pmod(clock, F.lit(_DAY_NS)))
    ns = F.when(_digits(raw), by_number).otherwise(by_text)
    step = 10 ** (9 - digits_kept)
    return _let(ns, lambda x: F.when(x % step == 0, (x / 1000).cast("long")))


def _let(value: Column, body: Any) -> Column:
    """``body(x)`` with ``x`` bound to ``value`` once (a one-element ``transform``): keeps
    expressions that use a value many times small enough for Spark's planner."""
    from pyspark.sql import functions as F

    return F.element_at(F.transform(F.array(value), body), 1)


def _unscaled_text(b64: Column, scale: Column) -> Column:
    """Kafka Connect's decimal (base64 of the big-endian two's complement unscaled value)
    with ``scale`` as plain decimal text; NULL when not base64, empty or beyond 38 digits.
    Flat: the bytes as 32 hex digits, sign-extended (16 bytes hold every 38-digit value); a
    negative value is -(complement + 1); the magnitude is hi * 2**64 + lo."""
    from pyspark.sql import functions as F

    def half(mag_hex: Column, start: int) -> Column:
        return F.conv(F.substr(mag_hex, F.lit(start), F.lit(16)), 16, 10).cast("decimal(20,0)")

    def text(digits: Column, k: Column, neg: Column) -> Column:
        def cut(padded: Column) -> Column:
            at = F.length(padded) - k
            return F.concat(F.substr(padded, F.lit(1), at), F.lit("."), F.substr(padded, at + 1))

        plain = F.when(k <= 0, F.concat(digits, F.repeat(F.lit("0"), -k))).otherwise(
            _let(F.lpad(digits, F.greatest(k + 1, F.length(digits)), "0"), cut))
        return F.concat(F.when(neg, F.lit("-")).otherwise(F.lit("")), plain)

    def from_hex(h: Column) -> Column:
        def signed(neg: Column) -> Column:
            padded = F.when(F.length(h) <= 32,
                            F.lpad(h, 32, F.when(neg, F.lit("F")).otherwise(F.lit("0"))))
            mag_hex = F.when(neg, F.translate(padded, "0123456789ABCDEF", "FEDCBA9876543210")
                             ).otherwise(padded)

            def digits(mh: Column) -> Column:
                mag = F.try_add(F.try_multiply(half(mh, 1), F.lit(decimal.Decimal(2**64))),
                                half(mh, 17))
                return F.when(neg, F.try_add(mag, F.lit(1))).otherwise(mag) \
                    .cast("decimal(38,0)").cast("string")

            k = F.when(scale.isNull(), F.lit(0)).otherwise(scale.try_cast("int"))
            return _let(_let(mag_hex, digits), lambda d: _let(k, lambda kk: text(d, kk, neg)))

        return F.when(F.length(h) > 0,
                      _let(F.substr(h, F.lit(1), F.lit(1)).isin(*"89ABCDEF"), signed))

    return _let(F.hex(F.try_to_binary(b64, F.lit("base64"))), from_hex)


def _decoded_decimals(raw: Column, name: Column, scale: Column) -> tuple[Column, Column]:
    """The decimal text of ``raw`` when the schema's logical type ``name`` is
    :data:`CONNECT_DECIMAL` (base64, ``scale``) or :data:`VARIABLE_SCALE_DECIMAL` (an
    object ``{"scale", "value"}``) and it decodes as such; NULL otherwise (the value is then
    read by the table's type)."""
    from pyspark.sql import functions as F

    def connect(r: Column) -> Column:
        return F.when((name == CONNECT_DECIMAL) & r.rlike(_BASE64), _unscaled_text(r, scale))

    def variable(r: Column) -> Column:
        def of(vs: Column) -> Column:
            return F.when((name == VARIABLE_SCALE_DECIMAL) & r.startswith("{")
                          & vs.rlike(r"^-?[0-9]+$"),
                          _unscaled_text(F.get_json_object(r, "$.value"), vs))
        return _let(F.get_json_object(r, "$.scale"), of)

    return _let(raw, connect), _let(raw, variable)


def _geojson_or_null(wkb: str | None, srid: str | None) -> str | None:
    if wkb is None:
        return None
    try:
        return geojson(wkb, srid)
    except (ValueError, TypeError, binascii.Error):
        return None


def _decimals_as_text(st: Any) -> Any:
    """The Spark type ``st`` with every decimal a string (the number's text as written)."""
    from pyspark.sql import types as T

    if isinstance(st, T.DecimalType):
        return T.StringType()
    if isinstance(st, T.ArrayType):
        return T.ArrayType(_decimals_as_text(st.elementType), st.containsNull)
    if isinstance(st, T.MapType):
        return T.MapType(_decimals_as_text(st.keyType), _decimals_as_text(st.valueType),
                         st.valueContainsNull)
    if isinstance(st, T.StructType):
        return T.StructType([T.StructField(f.name, _decimals_as_text(f.dataType), f.nullable)
                             for f in st.fields])
    return st


def _exact_texts(v: Column, t: DataType) -> Column:
    """Whether every decimal in the nested value ``v`` (decimals as text) fits its type
    exactly (at most the scale's significant fraction digits, plain text)."""
    from pyspark.sql import functions as F

    if isinstance(t, AtomicType):
        if t.root is not TypeRoot.DECIMAL:
            return F.lit(True)
        scale, ints = t.scale or 0, (t.precision or 38) - (t.scale or 0)
        return v.isNull() | v.rlike(
            rf"^-?0*[0-9]{{0,{ints}}}(\.[0-9]{{0,{scale}}}0*)?$")
    if isinstance(t, ArrayType):
        return F.coalesce(F.forall(v, lambda x: _exact_texts(x, t.element)), F.lit(True))
    if isinstance(t, MapType):
        return F.coalesce(F.forall(F.map_values(v), lambda x: _exact_texts(x, t.value))
                          & F.forall(F.map_keys(v), lambda x: _exact_texts(x, t.key)),
                          F.lit(True))
    if isinstance(t, RowType):
        out = F.lit(True)
        for f in t.fields:
            out = out & _exact_texts(v[f.name], f.type)
        return F.coalesce(out, F.lit(True))
    return F.lit(True)


def _exact_decimal(text: Column, t: AtomicType, st: Any) -> Column:
    # Spark rounds a decimal cast to the scale: accept only text with at most ``scale``
    # significant fraction digits, so nothing is rounded silently
    from pyspark.sql import functions as F

    scale = t.scale or 0
    exact = text.rlike(rf"^[+-]?[0-9]+(\.[0-9]{{0,{scale}}}0*)?$")
    return F.when(exact, text.try_cast(st))


def typed_value(raw: Column, t: DataType, *, epoch_unit: str = "ms",
                logical: tuple[Column, Column] | None = None) -> Column:
    """The text ``raw`` as a value of Paimon type ``t`` (null when it does not fit);
    ``logical``: the logical type name and scale the event's own schema gives the value
    (:func:`logical_type`), which decide its encoding where given."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    name = logical[0] if logical is not None else None

    st = spark_type(t)
    if not isinstance(t, AtomicType):
        assert isinstance(st, (T.ArrayType, T.MapType, T.StructType))
        if not exact_leaves(t):
            return F.from_json(raw, st)
        # Spark rounds a JSON number into a nested decimal: the numbers' text (the value
        # parsed with its decimals as strings) is checked first, as for a top-level decimal
        texts = F.from_json(raw, _decimals_as_text(st))
        return F.when(_exact_texts(texts, t), F.from_json(raw, st))
    r = t.root
    if r in STRING_ROOTS:
        if logical is None:
            return raw
        scaled, variable = _decoded_decimals(raw, logical[0], logical[1])
        name = logical[0]
        # (WKB -> GeoJSON needs a parser: the reference calls the same function, in a UDF)
        geometry = F.udf(lambda w, s: _geojson_or_null(w, s), "string")(  # (no hints)
            F.get_json_object(raw, "$.wkb"), F.get_json_object(raw, "$.srid"))
        return F.when(name.isin(*GEOMETRY) & raw.startswith("{"), geometry).otherwise(
            F.coalesce(scaled, variable, raw))
    if r in BINARY_ROOTS:
        decoded = F.try_to_binary(raw, F.lit("base64"))
        if name is None:
            return decoded
        return _let(decoded, lambda b: F.when(name == BITS, _reversed(b)).otherwise(b))
    if r is TypeRoot.BOOLEAN:
        low = F.lower(raw)
        plain = F.when(low.isin("true", "1"), F.lit(True)).when(low.isin("false", "0"),
                                                                  F.lit(False))
        if name is None:
            return plain
        bit = F.hex(F.try_to_binary(raw, F.lit("base64")))
        return F.when(name == BITS, F.when(bit == "01", F.lit(True))
                      .when(bit == "00", F.lit(False))).otherwise(plain)
    if r is TypeRoot.TIME:
        return _time_micros(raw, name, epoch_unit, stored_time_digits(t.precision))
    if r is TypeRoot.DATE:  # days, ISO text or IsoDate ("2017-09-15Z")
        return F.when(_digits(raw), F.date_add(F.lit("1970-01-01").cast("date"),
                                               raw.try_cast("int"))
                      ).otherwise(F.regexp_replace(raw, "Z$", "").try_cast(st))
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        n = raw.try_cast("long")
        epoch = _epoch(n, name, epoch_unit)
        # ISO text with an offset is an instant: into TIMESTAMP its UTC wall-clock time (the
        # reference's session runs in UTC); a digit below the microsecond is refused
        iso = F.when(raw.rlike(FINER_THAN_MICROS), F.lit(None).cast(st)).when(
            raw.rlike(r"(Z|[+-][0-9]{2}(:?[0-9]{2})?)$"),
            raw.try_cast("timestamp").cast(st)).otherwise(raw.try_cast(st))
        value = F.when(_digits(raw), epoch.cast(st)).otherwise(iso)
        p = t.precision if t.precision is not None else 6
        if p >= 6:
            return value
        return _let(value, lambda v: F.when(
            F.date_format(v, "SSSSSS").cast("int") % 10 ** (6 - p) == 0, v))
    if r is TypeRoot.DECIMAL:
        plain = _let(raw, lambda x: _exact_decimal(x, t, st))
        if logical is None:
            return plain
        scaled, variable = _decoded_decimals(raw, logical[0], logical[1])
        decoded = F.coalesce(scaled, variable)
        return _let(decoded, lambda d: F.when(d.isNotNull(), _let(
            d, lambda x: _exact_decimal(x, t, st))).otherwise(plain))
    return raw.try_cast(st)


def _slot_raws(position_fields: Sequence[str] | None) -> list[Column]:
    """The raw source position per slot: the given fields, or (``None``) the fields of the
    event's ``source.connector`` (:data:`CONNECTOR_POSITIONS`, padded with NULL)."""
    from pyspark.sql import functions as F

    src = F.col("source")
    if position_fields is not None:
        return [src[p] for p in position_fields]
    conn = src["connector"]
    out = []
    for i in range(AUTO_SLOTS):
        raw: Column = (src[DEFAULT_POSITIONS[i]] if i < len(DEFAULT_POSITIONS)
                       else F.lit(None).cast("string"))
        expr = F.when(conn.isNull(), raw)
        for name, fields in CONNECTOR_POSITIONS.items():
            expr = expr.when(conn == name, src[fields[i]] if i < len(fields)
                             else F.lit(None).cast("string"))
        out.append(expr)
    return out


def _unavailable(raw: Column, t: DataType) -> Column | None:
    """Whether ``raw`` is Debezium's unchanged-TOAST placeholder (text / base64 bytes)."""
    if isinstance(t, AtomicType) and t.root in STRING_ROOTS:
        return raw == UNAVAILABLE
    if isinstance(t, AtomicType) and t.root in BINARY_ROOTS:
        return raw == UNAVAILABLE_BASE64
    return None


def classify_events(
    events: DataFrame,
    schema: TableSchema,
    *,
    position_fields: Sequence[str] | None = None,
    epoch_unit: str = "ms",
    sequence_column: str | None = None,
    unavailable: Unavailable = "previous",
    source_tables: TableFilter | None = None,
) -> DataFrame:
    """Add ``_error`` (null = a valid event, ``tombstone`` / ``message`` / ``truncate`` /
    ``other table`` (of a table ``source_tables`` does not take), else the reason).

    Reasons: ``malformed JSON``, ``unknown op``, ``missing after`` / ``missing before``,
    ``unknown source connector``, ``missing source position``, ``null key <col>``,
    ``bad value for <col>``, ``unchanged TOAST value for <col>``, ``null for NOT NULL column
    <col>``, ``source position does not fit the sequence column <col>`` (with
    ``sequence_column``: the table column filled from the position). Columns of the images that
    the table does not have are not errors (see :func:`unknown_columns`).
    ``position_fields``: ``None`` = the fields of the event's ``source.connector`` (without
    them: arrival order, :data:`ARRIVAL`; missing ``position_fields`` are refused)."""
    from pyspark.sql import functions as F

    op = F.col("op")
    img = F.when(op == "d", F.col("before")).otherwise(F.col("after"))
    reasons: list[tuple[Column, str]] = [
        (F.col("_corrupt").isNotNull(), "malformed JSON"),
        (op.isNull() | ~op.isin(*OPS), "unknown op"),
        (op.isin("c", "r", "u") & F.col("after").isNull(), "missing after"),
        ((op == "d") & F.col("before").isNull(), "missing before"),
    ]
    raws = _slot_raws(position_fields)
    if position_fields is None:
        conn = F.col("source")["connector"]
        reasons.append((conn.isNotNull() & ~conn.isin(*CONNECTOR_POSITIONS),
                        "unknown source connector"))
    else:
        for raw in raws:
            reasons.append((F.col("source").isNull() | raw.isNull(),
                            "missing source position"))
    for k in schema.trimmed_primary_keys or schema.primary_keys:
        reasons.append((img[k].isNull(), f"null key {k}"))
    for f in schema.fields:
        raw = img[f.name]
        lt = logical_type(f.name)
        bad = raw.isNotNull() & typed_value(raw, f.type, epoch_unit=epoch_unit,
                                            logical=lt).isNull()
        if f.name in schema.primary_keys:
            # the before image of a key-changing update must fit the key type as well
            braw = F.col("before")[f.name]
            bad = bad | ((op == "u") & braw.isNotNull()
                         & typed_value(braw, f.type, epoch_unit=epoch_unit,
                                       logical=lt).isNull())
        reasons.append((bad, f"bad value for {f.name}"))
    for f in schema.fields if unavailable == "refuse" else ():
        toast = _unavailable(img[f.name], f.type)
        if toast is not None:
            reasons.append((op.isin("c", "r", "u") & toast,
                            f"unchanged TOAST value for {f.name}"))
    for f in schema.fields:
        if f.name in schema.primary_keys:
            continue
        if not f.type.nullable:
            reasons.append((F.col("op").isin("c", "r", "u") & img[f.name].isNull(),
                            f"null for NOT NULL column {f.name}"))
    if sequence_column is not None:
        reasons.append((op.isin(*ROW_OPS) & img[sequence_column].isNull()
                        & _sequence_value(position_fields).isNull(),
                        f"{SEQUENCE_UNFIT} {sequence_column}"))
    err: Column = F.lit(None).cast("string")
    for cond, reason in reversed(reasons):
        err = F.when(cond, F.lit(reason)).otherwise(err)
    # a message / truncate carries no row: only its envelope is checked
    special = (F.when(F.col("_corrupt").isNotNull(), F.lit("malformed JSON"))
               .when(op == "m", F.lit(MESSAGE)).otherwise(F.lit(TRUNCATE)))
    err = F.when(op.isin("t", "m"), special).otherwise(err)
    return events.withColumn(ERROR_COLUMN, F.when(F.col("_tombstone"), F.lit(TOMBSTONE))
                             .otherwise(_routed(err, source_tables)))


def _routed(err: Column, source_tables: TableFilter | None) -> Column:
    """``err`` with ``other table`` for a parsed event whose ``source.db`` / ``source.table``
    ``source_tables`` does not take."""
    from pyspark.sql import functions as F

    src = F.col("source")
    other = (F.col("_corrupt").isNull() & src.isNotNull()
             & ~taken_column(source_tables, src["db"], src["table"]))
    return F.when(other, F.lit(OTHER_TABLE)).otherwise(err)


def unknown_columns(events: DataFrame, schema: TableSchema) -> Column:
    """An ``array<string>`` expression: keys of the event's images the table lacks."""
    from pyspark.sql import functions as F

    known = F.array(*[F.lit(n) for n in schema.field_names])
    keys = F.array_union(F.coalesce(F.map_keys("after"), F.array().cast("array<string>")),
                         F.coalesce(F.map_keys("before"), F.array().cast("array<string>")))
    return F.array_except(keys, known)


def position_columns(position_fields: Sequence[str] | None) -> list[str]:
    """Names of the ordering columns :func:`to_changes` adds, most significant first: per
    position field (``None``: per slot of :data:`CONNECTOR_POSITIONS`) its numeric value and
    (when it is not a number) its text, then ``ts_ms``, the file and the line."""
    out = []
    slots = AUTO_SLOTS if position_fields is None else len(position_fields)
    for i in range(slots):
        out += [f"{POSITION_PREFIX}n{i}", f"{POSITION_PREFIX}s{i}"]
    return [*out, f"{POSITION_PREFIX}ts", f"{POSITION_PREFIX}file", f"{POSITION_PREFIX}line"]


#: bits of a MySQL position packed into one BIGINT sequence value: binlog file index, pos, row
MYSQL_BITS = (20, 32, 11)
#: bits of a MongoDB position packed into one BIGINT: the oplog second, ``ord``
MONGODB_BITS = (31, 32)
#: the binlog file index (``mysql-bin.000003`` -> 3)
MYSQL_FILE_INDEX = r"\.([0-9]{1,9})$"


def _position(position_fields: Sequence[str] | None) -> list[Column]:
    from pyspark.sql import functions as F

    parts: list[Column] = []
    for raw in _slot_raws(position_fields):
        num = raw.try_cast("long")
        parts += [num, F.when(num.isNull(), raw)]  # the text only orders non-numeric values
    parts.append(F.col("ts_ms"))
    none = _positionless(position_fields)
    parts = [F.when(~none, c) for c in parts] + [F.col("file"), F.col("line")]
    return [c.alias(n) for c, n in zip(parts, position_columns(position_fields))]


def _positionless(position_fields: Sequence[str] | None) -> Column:
    """Whether the event is ordered by arrival (:data:`ARRIVAL`): no ``position_fields``,
    a known connector (or none) and no first position field."""
    from pyspark.sql import functions as F

    if position_fields is not None:
        return F.lit(False)
    conn = F.col("source")["connector"]
    return (F.coalesce(conn.isin(*CONNECTOR_POSITIONS), F.lit(True))
            & _slot_raws(None)[0].isNull())


def _sequence_value(position_fields: Sequence[str] | None) -> Column:
    """One BIGINT of the source position for the table's sequence column: the first position
    field as a number; with the connector's positions, for MySQL file index, pos and row
    packed (:data:`MYSQL_BITS`), for MongoDB the oplog second and ``ord``
    (:data:`MONGODB_BITS`); NULL when a part is out of range or the position is not a number
    (SQL Server / Db2 LSNs are 80 bits: such an event is refused when the table has a
    sequence column, see :func:`classify_events`)."""
    from pyspark.sql import functions as F

    first = _slot_raws(position_fields)[0].try_cast("long")
    if position_fields is not None:
        return first
    src = F.col("source")
    idx = F.regexp_extract(src["file"], MYSQL_FILE_INDEX, 1).try_cast("long")
    pos = src["pos"].try_cast("long")
    row = F.coalesce(src["row"].try_cast("long"), F.lit(0))
    fb, pb, rb = MYSQL_BITS
    ok = ((idx >= 0) & (idx < 2**fb) & (pos >= 0) & (pos < 2**pb) & (row >= 0)
          & (row < 2**rb))
    packed = F.when(ok, idx * 2**(pb + rb) + pos * 2**rb + row)
    ts = src["ts_ms"].try_cast("long")
    ordinal = src["ord"].try_cast("long")
    sb, ob = MONGODB_BITS
    mongo_ok = ((ts >= 0) & (ts % 1000 == 0) & (ts < 1000 * 2**sb) & (ordinal >= 0)
                & (ordinal < 2**ob))
    mongo = F.when(mongo_ok, (ts / 1000).cast("long") * 2**ob + ordinal)
    conn = src["connector"]
    return (F.when(conn.isin("mysql", "mariadb"), packed)
            .when(conn == "mongodb", mongo).otherwise(first))


def _change_rows(schema: TableSchema) -> Column:
    """The rows of an event, as an array of ``(k, img)`` structs: the ``+I`` / ``+U`` / ``-D``
    of its image, and the ``-D`` of the ``before`` key of an update that changed the key."""
    from pyspark.sql import functions as F

    op = F.col("op")
    # a key change: a before image that holds the key, with another value (a partial
    # before without the key, as after an added column, is not one)
    key_changed = F.lit(False)
    before_has_key = F.col("before").isNotNull()
    for k in schema.primary_keys:
        before_has_key = before_has_key & F.col("before")[k].isNotNull()
        key_changed = key_changed | ~F.col("before")[k].eqNullSafe(F.col("after")[k])
    kind = (F.when(op == "d", F.lit(RowKind.DELETE.short_string))
            .when(op == "u", F.lit(RowKind.UPDATE_AFTER.short_string))
            .otherwise(F.lit(RowKind.INSERT.short_string)))
    image = F.when(op == "d", F.col("before")).otherwise(F.col("after"))
    old_key = F.struct(F.lit(RowKind.DELETE.short_string).alias("k"), F.col("before").alias("img"))
    rows = F.array(F.struct(kind.alias("k"), image.alias("img")),
                   F.when((op == "u") & before_has_key & key_changed, old_key))
    return F.filter(rows, lambda x: x.isNotNull())


def to_changes(
    events: DataFrame,
    schema: TableSchema,
    *,
    position_fields: Sequence[str] | None = None,
    sequence_column: str | None = None,
    epoch_unit: str = "ms",
    keep_rejected: bool = False,
) -> DataFrame:
    """Classified events (:func:`classify_events`) -> table rows with ``_kind`` and the
    ordering columns :func:`position_columns` (largest = latest).

    ``c``/``r`` -> ``+I`` of ``after``; ``u`` -> ``+U`` of ``after`` (and ``-D`` of the
    ``before`` key when the update changed the key: a ``before`` without the key is not a key
    change); ``d`` -> ``-D`` of ``before`` (the key is enough: Postgres' REPLICA IDENTITY
    DEFAULT). ``m`` / ``t`` carry no row.
    ``sequence_column`` (a table column missing from the images) is filled with the first
    position field as a number, so that the table's ``sequence.field`` orders versions across
    batches.

    Without ``keep_rejected`` only valid events are turned into rows. With it every event
    stays (one pass over the input serves the counts, the quarantine and the write): a
    rejected event becomes one row with NULL table columns and kind, and five more columns
    are added: ``_error`` (the reason, NULL when valid), ``_event`` (0 for the first row of an
    event: count events where it is 0), ``_value`` (the raw line of a quarantined event) and
    ``_unknown`` (image keys the table lacks, newline-separated, for valid events) and
    ``_connector`` (``source.connector``: one batch holds the events of one connector).
    """
    from pyspark.sql import functions as F

    err = F.col(ERROR_COLUMN)
    changes = _change_rows(schema)
    pos = position_columns(position_fields)
    if keep_rejected:
        rejected = F.struct(F.lit(None).cast("string").alias("k"),
                            F.lit(None).cast(_IMAGE).alias("img"))
        unknown = unknown_columns(events, schema)
        rows = events.select(
            *_position(position_fields), err.alias(ERROR_COLUMN),
            F.when(err.isNotNull() & ~err.isin(TOMBSTONE, OTHER_TABLE), F.col("value"))
            .alias("_value"),
            F.when(err.isNull() & (F.size(unknown) > 0), F.array_join(unknown, "\n"))
            .alias("_unknown"),
            F.when(err.isin(OTHER_TABLE, TOMBSTONE), F.lit(None).cast("string")).when(
                _positionless(position_fields), F.lit(ARRIVAL))
            .otherwise(F.col("source")["connector"]).alias("_connector"),
            _sequence_value(position_fields).alias("_seqv"),
            F.posexplode(F.when(err.isNull(), changes).otherwise(F.array(rejected)))
            .alias("_event", "_r"), FIELDS_COLUMN,
        )
        extras = [ERROR_COLUMN, "_event", "_value", "_unknown", "_connector"]
    else:
        rows = events.filter(err.isNull()).select(
            *_position(position_fields), _sequence_value(position_fields).alias("_seqv"),
            F.explode(changes).alias("_r"), FIELDS_COLUMN)
        extras = []
    cols = []
    for f in schema.fields:
        value = typed_value(F.col("_r.img")[f.name], f.type, epoch_unit=epoch_unit,
                            logical=logical_type(f.name))
        if sequence_column is not None and f.name == sequence_column:
            value = F.coalesce(value, F.col("_seqv").cast(spark_type(f.type)))
        cols.append(value.alias(f.name))
    return rows.select(*cols, F.col("_r.k").alias(KIND_COLUMN), *pos, *extras)


def is_supported_type(t: DataType) -> bool:
    """Column types the event decoder handles (MULTISET is not)."""
    if isinstance(t, AtomicType):
        return True
    return t.root is not TypeRoot.MULTISET

