"""The Spark SQL reference of the other CDC formats (:mod:`pipelines.cdc.formats`): each
format's events as the columns of :func:`pipelines.cdc.events.parse_events` (one row per row of
an event, the format's position in ``source`` as :data:`SLOTS`), so that
:func:`pipelines.cdc.events.classify_events` and :func:`pipelines.cdc.events.to_changes` (with
``position_fields=SLOTS``) decode them as Debezium's. A test checks that the fast path gives
the same rows.

A format's own refusals (GoldenGate's compressed updates without a value for a column,
:mod:`pipelines.cdc.formats.ogg_compressed`) are the events' ``_format_error`` column,
folded into the classified events' reason by :func:`with_format_errors`. The reference of
Debezium JSON's ``--decimal-base64`` (:class:`~pipelines.cdc.settings.DecodeSettings`) is
:func:`decimal_base64_fields`, applied to the events of
:func:`pipelines.cdc.events.parse_events` before they are classified."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from paimon_core import TableSchema
from paimon_core.integration import AtomicType, TypeRoot
from pipelines.cdc.events import _LONG_TOKEN, FIELDS_COLUMN, TOMBSTONE
from pipelines.cdc.formats import SLOTS
from pipelines.cdc.formats.ogg_compressed import NO_VALUE
from pipelines.cdc.source_tables import OTHER_TABLE
from pipelines.cdc.values.convert import CONNECT_DECIMAL, MAX_MICROS, MIN_MICROS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["SLOTS", "decimal_base64_fields", "parse_format_events", "with_format_errors",
           "with_op_ts"]

_IMG = "map<string,string>"
_FIELDS = "array<struct<field:string,name:string,parameters:map<string,string>>>"
_SCHEMAS = {
    "canal-json": f"data array<{_IMG}>, old array<{_IMG}>, type string, isDdl boolean, "
                  "database string, table string, es string",
    "maxwell-json": f"data {_IMG}, old {_IMG}, type string, position string, xoffset long, "
                    "database string, table string, ts string",
    "ogg-json": f"before {_IMG}, after {_IMG}, op_type string, pos string, table string, "
                "op_ts string",
    "aws-dms-json": f"data {_IMG}, metadata struct<operation:string,`record-type`:string,"
                    "`schema-name`:string,`table-name`:string,timestamp:string>",
}
#: Spark's pattern of :data:`pipelines.cdc.values.event_time`'s text times
_ISO = (r"^([0-9]{4}-[0-9]{2}-[0-9]{2})[ T]([0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,9}))?"
        r"(?:Z|[+-]00:?00)?$")
_OPS = {
    "canal-json": {"INSERT": "c", "UPDATE": "u", "DELETE": "d", "ROW": "r", "TRUNCATE": "t"},
    "maxwell-json": {"insert": "c", "bootstrap-insert": "r", "update": "u", "delete": "d"},
    "ogg-json": {"I": "c", "U": "u", "D": "d", "T": "t"},
    "aws-dms-json": {"load": "r", "insert": "c", "update": "u", "delete": "d"},
}
_CANAL_DDL = ("CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX")
_MAXWELL_SKIPPED = ("database-create", "database-alter", "database-drop", "table-create",
                    "table-alter", "table-drop", "bootstrap-start", "bootstrap-complete")


def _op(raw: Column, fmt: str) -> Column:
    from pyspark.sql import functions as F

    out = F.lit(None).cast("string")
    for k, v in _OPS[fmt].items():
        out = F.when(raw == k, F.lit(v)).otherwise(out)
    return out


def _norm(img: Column, schema: TableSchema, canal: bool) -> Column:
    """BOOLEAN columns take ``1`` / ``0``; (canal) BINARY columns the ISO-8859-1 text's bytes,
    as base64 (see :mod:`pipelines.cdc.formats`)."""
    from pyspark.sql import functions as F

    roots = {f.name: f.type.root for f in schema.fields if isinstance(f.type, AtomicType)}
    booleans = [n for n, r in roots.items() if r is TypeRoot.BOOLEAN]
    binaries = [n for n, r in roots.items()
                if canal and r in (TypeRoot.BINARY, TypeRoot.VARBINARY)]
    if not booleans and not binaries:
        return img

    def value(k: Column, v: Column) -> Column:
        out = v
        if booleans:
            out = F.when(k.isin(*booleans) & (v == "1"), F.lit("true")).when(
                k.isin(*booleans) & (v == "0"), F.lit("false")).otherwise(out)
        if binaries:
            out = F.when(k.isin(*binaries) & v.isNotNull(),
                         F.base64(F.encode(v, "ISO-8859-1"))).otherwise(out)
        return out

    return F.transform_values(img, value)


def _overlay(row: Column, old: Column) -> Column:
    """``row`` with the non-NULL values of ``old`` (an update's before image)."""
    from pyspark.sql import functions as F

    return F.map_filter(F.map_zip_with(row, F.coalesce(old, F.create_map().cast(_IMG)),
                                       lambda k, v1, v2: F.coalesce(v2, v1)),
                        lambda k, v: F.array_contains(F.map_keys(row), k))


def _names(fmt: str) -> tuple[Column, Column]:
    """The database and table the event names (``source.db`` / ``source.table`` of the
    envelope, as :func:`pipelines.cdc.source_tables.event_tables` reads them)."""
    from pyspark.sql import functions as F

    if fmt == "ogg-json":  # SCHEMA.TABLE, split at the first dot
        full = F.col("_e.table")
        two = full.contains(".")
        return (F.when(two, F.substring_index(full, ".", 1)),
                F.when(two, F.expr("substring(_e.table, instr(_e.table, '.') + 1)"))
                .otherwise(full))
    if fmt == "aws-dms-json":
        return F.col("_e.metadata")["schema-name"], F.col("_e.metadata")["table-name"]
    return F.col("_e.database"), F.col("_e.table")


def _file_ordinal(file_index: Mapping[str, int]) -> Column:
    """Each line's file ordinal (the arrival order's first part)."""
    from pyspark.sql import functions as F

    fidx = F.lit(None).cast("long")
    for path, i in file_index.items():
        fidx = F.when(F.col("file") == path, F.lit(i)).otherwise(fidx)
    return fidx


def _compressed(after: Column, before: Column) -> Column:
    """A GoldenGate update's ``after`` with the columns it leaves out (keys it lacks) taken
    from ``before``."""
    from pyspark.sql import functions as F

    return F.map_concat(F.map_filter(F.coalesce(before, F.create_map().cast(_IMG)),
                                     lambda k, v: ~F.array_contains(F.map_keys(after), k)),
                        after)


def _no_value(after: Column, before: Column, columns: Sequence[str]) -> Column:
    """:data:`~pipelines.cdc.formats.ogg_compressed.NO_VALUE` and the table ``columns``
    neither image holds (a key of neither map), else NULL."""
    from pyspark.sql import functions as F

    empty = F.create_map().cast(_IMG)
    held = F.array_union(F.map_keys(F.coalesce(after, empty)),
                         F.map_keys(F.coalesce(before, empty)))
    missing = F.filter(F.array(*[F.lit(c) for c in columns]),
                       lambda c: ~F.array_contains(held, c))
    return F.when(F.size(missing) > 0, F.concat(F.lit(NO_VALUE),
                                                 F.array_join(missing, ", ")))


def with_format_errors(classified: DataFrame) -> DataFrame:
    """Classified events (:func:`pipelines.cdc.events.classify_events`) with a valid event
    without its time of change refused (``_time_error``, :func:`with_op_ts`: the last
    reason), then each event's ``_format_error`` as its reason, over any reason but
    ``malformed JSON``, a tombstone's and another table's (as the fast path's format
    outcome)."""
    from pyspark.sql import functions as F

    from pipelines.cdc.events import ERROR_COLUMN

    err = F.col(ERROR_COLUMN)
    if "_time_error" in classified.columns:
        err = F.coalesce(err, F.col("_time_error"))
    if "_format_error" in classified.columns:
        own = F.col("_format_error")
        keep = err.isin("malformed JSON", TOMBSTONE, OTHER_TABLE)
        err = F.when(own.isNotNull() & (err.isNull() | ~keep), own).otherwise(err)
    return classified.withColumn(ERROR_COLUMN, err)


def _millis(raw: Column, factor: int = 1) -> Column:
    """Epoch milliseconds of a time of change (digits times ``factor``, else UTC text; the
    reference's session runs in UTC), NULL outside years 1..9999
    (:func:`pipelines.cdc.values.event_time.epoch_millis`)."""
    from pyspark.sql import functions as F

    lo, hi = MIN_MICROS // 1000, MAX_MICROS // 1000
    n = F.when(raw.rlike(r"^-?[0-9]{1,18}$"), raw.cast("long"))
    num = F.when(n.between(lo // factor, hi // factor), n * factor)
    day_time = F.concat(F.regexp_extract(raw, _ISO, 1), F.lit("T"),
                        F.regexp_extract(raw, _ISO, 2))
    seconds = F.unix_millis(F.try_to_timestamp(day_time, F.lit("yyyy-MM-dd'T'HH:mm:ss")))
    frac = F.rpad(F.substring(F.regexp_extract(raw, _ISO, 3), 1, 3), 3, "0")
    iso = F.when(raw.rlike(_ISO), seconds + frac.cast("long"))
    out = F.coalesce(num, iso)
    return F.when(out.between(lo, hi), out)


def with_op_ts(events: DataFrame, fmt: str, column: str) -> DataFrame:
    """Events (:func:`pipelines.cdc.events.parse_events` for Debezium JSON, else
    :func:`parse_format_events`) with each event's time of change as the images' ``column``
    (UTC text, milliseconds) and ``_time_error`` where a row's event has none (the
    reference of the ``op_ts`` metadata column, :mod:`pipelines.cdc.values.event_time`;
    fold with :func:`with_format_errors`)."""
    from pyspark.sql import functions as F

    from pipelines.cdc.events import ROW_OPS
    from pipelines.cdc.values.event_time import missing_reason

    raw = (F.col("_event_time") if "_event_time" in events.columns
           else F.col("source")["ts_ms"])
    ms = _millis(raw, 1000 if fmt == "maxwell-json" else 1)
    text = F.concat(F.date_format(F.timestamp_millis(ms), "yyyy-MM-dd'T'HH:mm:ss.SSS"),
                    F.lit("Z"))
    entry = F.when(ms.isNotNull(), F.create_map(F.lit(column), text)).otherwise(
        F.create_map().cast(_IMG))

    def put(img: Column) -> Column:
        return F.when(img.isNotNull(), F.map_concat(
            F.map_filter(img, lambda k, v: k != column), entry))

    return events.withColumns({
        "before": put(F.col("before")), "after": put(F.col("after")),
        "_time_error": F.when(F.col("op").isin(*ROW_OPS) & ms.isNull(),
                              F.lit(missing_reason(fmt, column)))})


def decimal_base64_fields(events: DataFrame, schema: TableSchema) -> DataFrame:
    """Events of :func:`pipelines.cdc.events.parse_events` whose schema names no logical type
    for a DECIMAL column given Kafka Connect's ``Decimal`` of the column's scale (the
    reference of ``decimal_base64``: base64 text decodes by the column's scale, other text is
    read as a decimal)."""
    from pyspark.sql import functions as F

    decimals = [(f.name, f.type.scale) for f in schema.fields
                if isinstance(f.type, AtomicType) and f.type.root is TypeRoot.DECIMAL]
    if not decimals:
        return events
    names = F.array(*[F.lit(n) for n, _ in decimals])
    own = F.filter(F.col(FIELDS_COLUMN),  # (a field the event's schema names is kept)
                   lambda x: ~(F.array_contains(names, x["field"]) & x["name"].isNull()))
    added = F.array(*[F.struct(F.lit(n).alias("field"), F.lit(CONNECT_DECIMAL).alias("name"),
                               F.create_map(F.lit("scale"), F.lit(str(scale)))
                               .alias("parameters")) for n, scale in decimals])
    fields = F.coalesce(F.concat(own.cast(_FIELDS), added.cast(_FIELDS)), added.cast(_FIELDS))
    return events.withColumn(FIELDS_COLUMN, fields)


def parse_format_events(lines: DataFrame, fmt: str, schema: TableSchema,
                        file_index: Mapping[str, int], filled: Sequence[str] = ()
                        ) -> DataFrame:
    """``(file, line, value)`` lines of format ``fmt`` -> the columns of
    :func:`pipelines.cdc.events.parse_events` plus ``_ddl`` (a DDL / control event, an
    ``op: m`` here), ``_row`` (the row's index within its event) and ``_format_error`` (the
    format's own refusal, :func:`with_format_errors`), one row per row of an event;
    ``file_index``: each file's ordinal (the arrival order's first part); ``filled``: table
    columns the job fills itself (never in the images: the sequence column, metadata
    columns)."""
    from pyspark.sql import functions as F

    trimmed = F.trim(F.col("value"))
    exact = F.regexp_replace(F.col("value"), _LONG_TOKEN, '$1"$2"')
    e = F.from_json(exact, f"{_SCHEMAS[fmt]}, _corrupt string",
                    {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"})
    parsed = lines.filter(trimmed != "").withColumn("_e", e).withColumn(
        "_fidx", _file_ordinal(file_index))
    canal = fmt == "canal-json"
    if canal:
        parsed = parsed.select("*", F.posexplode_outer("_e.data").alias("_row", "_d"))
        row = F.coalesce(F.col("_row"), F.lit(0))
        data = F.col("_d")
        old = F.try_element_at(F.col("_e.old"), row + 1)
        typ = F.col("_e.type")
        op = _op(typ, fmt)
        ddl = (F.coalesce(F.col("_e.isDdl"), F.lit(False)) | typ.isin(*_CANAL_DDL)) & (
            F.coalesce(op, F.lit("")) != "t")
        arrival = [F.col("_fidx"), F.col("line"), row]
        slots = arrival
    else:
        row = F.lit(0)
        data, old, op, ddl, slots = _flat_parts(fmt, [F.col("_fidx"), F.col("line"), row])
    own_error = F.lit(None).cast("string")
    if fmt == "ogg-json":
        b_img, a_img = F.col("_e.before"), F.col("_e.after")
        before = F.when(op.isin("u", "d"), _norm(b_img, schema, False))
        after = F.when(op.isin("c", "r"), _norm(a_img, schema, False)).when(
            op == "u", _norm(_compressed(a_img, b_img), schema, False))
        columns = [c for c in schema.field_names if c not in filled]
        own_error = F.when(op == "u", _no_value(a_img, b_img, columns))
    else:
        before = (F.when(op == "u", _norm(_overlay(data, old), schema, canal))
                  .when(op == "d", _norm(data, schema, canal)))
        after = F.when(op.isin("c", "r", "u"), _norm(data, schema, canal))
    db, table = _names(fmt)
    source = F.create_map(*[x for name, s in [*zip(SLOTS, slots), ("db", db), ("table", table)]
                            for x in (F.lit(name), s.cast("string"))])
    return parsed.select(
        "file", "line", "value",
        F.when(ddl, F.lit("m")).otherwise(op).alias("op"),
        F.lit(None).cast("long").alias("ts_ms"),
        F.when(~ddl, before).alias("before"), F.when(~ddl, after).alias("after"),
        source.alias("source"),
        F.lit(None).cast("array<struct<field:string,name:string,parameters:map<string,string>>>")
        .alias(FIELDS_COLUMN),
        F.col("_e._corrupt").alias("_corrupt"),
        (trimmed == "null").alias("_tombstone"),
        ddl.alias("_ddl"), row.alias("_row"), own_error.alias("_format_error"),
        _event_time(fmt).alias("_event_time"),
    )


def _flat_parts(fmt: str, arrival: list[Column]
                ) -> tuple[Column, Column, Column, Column, list[Column]]:
    """An event of one row (maxwell, GoldenGate, DMS): its ``data`` and ``old`` images (the
    GoldenGate images are read by the caller: nulls here), ``op``, whether it is a DDL /
    control event, and its position slots (``arrival``: file ordinal, line, row)."""
    from pyspark.sql import functions as F

    data = old = F.lit(None)
    if fmt == "maxwell-json":
        data, old, typ = F.col("_e.data"), F.col("_e.old"), F.col("_e.type")
        op = _op(typ, fmt)
        ddl = typ.isin(*_MAXWELL_SKIPPED)
        pos_re = r"^(.*\.([0-9]{1,9})):([0-9]{1,18})$"
        has = F.col("_e.position").rlike(pos_re)
        slots = [F.when(has, F.regexp_extract("_e.position", pos_re, 1)).otherwise(
                     F.col("_fidx").cast("string")),
                 F.when(has, F.regexp_extract("_e.position", pos_re, 3).cast("long"))
                 .otherwise(F.col("line")),
                 F.when(has, F.coalesce(F.col("_e.xoffset"), F.lit(0))).otherwise(0)]
    elif fmt == "ogg-json":
        op = _op(F.col("_e.op_type"), fmt)
        ddl = F.lit(False)
        pos = F.col("_e.pos")
        digits = F.regexp_replace(pos, "^0+", "")
        num = F.when(pos.rlike("^[0-9]+$") & (F.length(digits) <= 18),
                     F.when(digits == "", F.lit("0")).otherwise(digits).cast("long"))
        slots = [num, F.lit(0), F.lit(0)]
    else:  # aws-dms-json
        raw = F.col("_e.data")
        kind = F.col("_e.metadata")["record-type"]
        op = _op(F.col("_e.metadata")["operation"], fmt)
        ddl = kind.isNotNull() & (kind != "data")
        data = F.map_filter(raw, lambda k, v: ~k.startswith("BI_"))
        old = F.transform_keys(F.map_filter(raw, lambda k, v: k.startswith("BI_")),
                               lambda k, v: F.substring(k, 4, 1 << 20))
        slots = arrival
    return data, old, op, ddl, slots


def _event_time(fmt: str) -> Column:
    """The text of the event's time of change (:data:`pipelines.cdc.values.event_time.
    EVENT_TIME_FIELDS`)."""
    from pyspark.sql import functions as F

    return {"canal-json": F.col("_e.es"), "maxwell-json": F.col("_e.ts"),
            "ogg-json": F.col("_e.op_ts"),
            "aws-dms-json": F.col("_e.metadata")["timestamp"]}[fmt]
