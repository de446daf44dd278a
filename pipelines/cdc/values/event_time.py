"""The ``op_ts`` metadata column: the time each change was made in the source database.

Paimon's CDC actions define ``op_ts`` (``CdcMetadataConverter.OpTsConverter``) as
``TIMESTAMP_LTZ(3) NOT NULL`` read from the Debezium record's ``source.ts_ms`` (the time
the change was made in the database; 0 for a snapshot read by MySQL CDC), and offer it
for the MySQL and Postgres sources only: neither Paimon 0.9 nor 1.x has an ``op_ts`` for
its Kafka formats (0.9 has no Kafka metadata column at all, later versions the Kafka
record's ``topic`` / ``partition`` / ``offset`` / ``timestamp`` / ``timestamp_type``). We
give every format the column with that meaning, read from the field where its events say
when the change was made in the source database:

* ``debezium-json`` / ``debezium-avro``: ``source.ts_ms`` (epoch milliseconds; Paimon's
  own field; never the top-level ``ts_ms``, the connector's processing time);
* ``canal-json``: ``es`` (epoch milliseconds: the binlog event's execution time; ``ts`` is
  canal's parse time);
* ``maxwell-json``: ``ts`` (epoch **seconds**: the binlog event's timestamp);
* ``ogg-json``: ``op_ts`` (text ``YYYY-MM-DD HH:MM:SS[.ffffff]``, UTC: the operation's
  commit time in the trail; ``current_ts`` is GoldenGate's processing time);
* ``aws-dms-json``: ``metadata.timestamp`` (ISO text in UTC, ``...Z``: DMS's time of the
  record; DMS carries no other change time without a transformation rule).

Text times may end in ``Z`` or ``+00:00`` (UTC); a time with another offset, or no time,
is no ``op_ts``: the event is quarantined with the reason ``missing op_ts (<field>)``, as a
NOT NULL column's missing value is. Times finer than milliseconds are truncated to
milliseconds (Paimon formats ``op_ts`` with precision 3). The column is nullable in our
tables (Paimon says NOT NULL) as the other metadata columns are: the decoders refuse an
event without the value before a row is written. Vectorised: numbers and text are read
with pyarrow compute, no per-event Python.

A format not in :data:`EVENT_TIME_FIELDS` has no time of change: ``op_ts`` is refused at
start, naming the format (:func:`check_event_time`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import SchemaError, TableSchema
from paimon_core.errors import ConfigError
from paimon_core.integration import AtomicType, TypeRoot
from pipelines.cdc.values.convert import MAX_MICROS, MIN_MICROS, Fields, digits, json_text

__all__ = ["EVENT_TIME_FIELDS", "OP_TS", "OP_TS_TYPE", "check_event_time",
           "check_op_ts_column", "epoch_millis", "event_millis", "missing_reason",
           "op_ts_values"]

#: the metadata column's name and type (Paimon's ``OpTsConverter``)
OP_TS = "op_ts"
OP_TS_TYPE = "TIMESTAMP_LTZ(3)"
#: where each format's events say when the change was made (see the module docs)
EVENT_TIME_FIELDS = {"debezium-json": "source.ts_ms", "debezium-avro": "source.ts_ms",
                     "canal-json": "es", "maxwell-json": "ts", "ogg-json": "op_ts",
                     "aws-dms-json": "metadata.timestamp"}
#: the factor to milliseconds of a format's numeric time (Maxwell's ``ts``: seconds)
_TO_MILLIS = {"maxwell-json": 1000}
_ISO = (r"^(?P<dt>[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2})"
        r"(?:\.(?P<f>[0-9]{1,9}))?(?:Z|[+-]00:?00)?$")
_NULL_L = pa.scalar(None, pa.int64())


def check_event_time(fmt: str) -> None:
    """Refuse ``op_ts`` for a format whose events carry no time of change.

    Raises:
        ConfigError: ``fmt`` is not in :data:`EVENT_TIME_FIELDS`.
    """
    if fmt not in EVENT_TIME_FIELDS:
        raise ConfigError("metadata-column", f"{OP_TS}: {fmt} events carry no time of change "
                                             "(formats with one: "
                                             f"{', '.join(EVENT_TIME_FIELDS)})")


def check_op_ts_column(schema: TableSchema, name: str) -> None:
    """Refuse an ``op_ts`` column the table lacks or cannot hold a time in.

    Raises:
        SchemaError: no column ``name``, or one that is not a TIMESTAMP / TIMESTAMP_LTZ.
    """
    t = schema.field(name).type  # (SchemaError naming it when absent)
    if not isinstance(t, AtomicType) or t.root not in (TypeRoot.TIMESTAMP,
                                                       TypeRoot.TIMESTAMP_LTZ):
        raise SchemaError(f"metadata column {name} is {t}: the event's time of change needs "
                          f"a TIMESTAMP or {OP_TS_TYPE} column")


def missing_reason(fmt: str, name: str = OP_TS) -> str:
    """The rejection reason of an event without its time of change."""
    return f"missing {name} ({EVENT_TIME_FIELDS.get(fmt, 'no time field')})"


def epoch_millis(raw: pa.Array | None, n: int, factor: int = 1) -> pa.Array:
    """Per row, epoch milliseconds of ``raw`` (``None``: all NULL): integers (or digit text)
    times ``factor``, else ISO text in UTC (see the module docs); NULL where there is no
    time, it is malformed, or outside years 1..9999."""
    if raw is None or pa.types.is_null(raw.type):
        return pa.nulls(n, pa.int64())
    lo, hi = MIN_MICROS // 1000, MAX_MICROS // 1000
    if pa.types.is_timestamp(raw.type):  # (text a JSON reader took for a time: UTC)
        raw = raw.cast(pa.timestamp(raw.type.unit)).cast(pa.timestamp("ms"), safe=False)
        factor = 1
    if pa.types.is_integer(raw.type) or pa.types.is_timestamp(raw.type):
        nums, iso = raw.cast(pa.int64()), None
    else:
        text = json_text(raw)
        is_num = digits(text)
        nums = pc.if_else(is_num, text, pa.scalar(None, pa.string())).cast(pa.int64())
        iso = pc.if_else(is_num, _NULL_L, _iso_millis(text))
    fits = pc.and_(pc.greater_equal(nums, lo // factor), pc.less_equal(nums, hi // factor))
    out = pc.if_else(fits, pc.multiply(nums, factor), _NULL_L)
    if iso is not None:
        out = pc.coalesce(out, iso)
    return pc.if_else(pc.and_(pc.greater_equal(out, lo), pc.less_equal(out, hi)), out, _NULL_L)


def _iso_millis(text: pa.Array) -> pa.Array:
    m = pc.extract_regex(text, _ISO)
    dt = pc.replace_substring(pc.struct_field(m, "dt"), " ", "T")
    parsed = pc.strptime(dt, "%Y-%m-%dT%H:%M:%S", "s", error_is_null=True)
    exact = pc.equal(pc.strftime(parsed, "%Y-%m-%dT%H:%M:%S"), dt)  # (no February 30th)
    seconds = pc.if_else(exact, pc.multiply(parsed.cast(pa.int64()), 1000), _NULL_L)
    frac = pc.struct_field(m, "f")
    ms = pc.utf8_rpad(pc.utf8_slice_codeunits(pc.fill_null(frac, "0"), 0, 3), 3, "0")
    return pc.add(seconds, ms.cast(pa.int64()))


def event_millis(fmt: str, t: pa.Table) -> pa.Array:
    """Per parsed event of ``t`` (a chunk of format ``fmt``'s JSON events), the epoch
    milliseconds of its time of change (see the module docs; NULL where it has none)."""
    n = t.num_rows
    path = EVENT_TIME_FIELDS[fmt].split(".")
    col = (t.column(path[0]).combine_chunks() if path[0] in t.column_names else None)
    for part in path[1:]:
        col = (Fields(col, n)(part) if col is not None and pa.types.is_struct(col.type)
               else None)
    return epoch_millis(col, n, _TO_MILLIS.get(fmt, 1))


def op_ts_values(millis: pa.Array, target: pa.DataType) -> pa.Array:
    """Epoch milliseconds as the column's Arrow type (Spark's: microseconds, UTC)."""
    ts = millis.cast(pa.timestamp("ms", tz="UTC"))
    if pa.types.is_timestamp(target) and target.tz is None:
        ts = ts.cast(pa.timestamp("ms"))
    return ts.cast(target)
