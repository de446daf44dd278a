"""The Spark SQL reference of the CDC decoder, for the tests that compare the two."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from paimon_core.spec.schema import TableSchema

#: the columns both decoders must agree on, besides the table's
COMPARED = ("_kind", "_pos_n0", "_pos_s0", "_pos_ts", "_pos_line", "_error", "_event",
            "_connector")


def spark_changes(spark: Any, path: Path, schema: TableSchema, **opts: Any) -> Any:
    """The change rows of the JSON-lines file at ``path`` by the Spark SQL reference
    (``parse_events`` -> ``classify_events`` -> ``to_changes(keep_rejected=True)``), as Arrow;
    ``decimal_base64=True``: the events' decimals as Kafka Connect bytes of the column's
    scale where their schema names none (``decimal_base64_fields``); ``op_ts_column``: the
    column filled with each event's time of change (``with_op_ts``)."""
    from paimon_core.io.file_io import FileIO
    from pipelines.cdc.batch.stage import read_lines
    from pipelines.cdc.events import classify_events, parse_events, to_changes
    from pipelines.cdc.formats.reference import (
        decimal_base64_fields,
        with_format_errors,
        with_op_ts,
    )

    lines = read_lines(spark, FileIO(str(path.parent)), [str(path)])
    events = parse_events(lines)
    if opts.pop("decimal_base64", False):
        events = decimal_base64_fields(events, schema)
    op_ts_column = opts.pop("op_ts_column", None)
    if op_ts_column is not None:
        events = with_op_ts(events, "debezium-json", op_ts_column)
    changes = {k: v for k, v in opts.items() if k not in ("unavailable", "source_tables")}
    classified = with_format_errors(classify_events(events, schema, **opts))
    return to_changes(classified, schema, keep_rejected=True, **changes).toArrow()


def compared_rows(t: Any, schema: TableSchema) -> list[tuple[Any, ...]]:
    """The rows of ``t`` over the compared columns, in a canonical order."""
    cols = [*schema.field_names, *COMPARED]
    return sorted((tuple(_micros(r[c]) for c in cols) for r in t.select(cols).to_pylist()),
                  key=repr)


def _micros(v: Any) -> Any:
    """A time of day as its microseconds past midnight (the reference carries TIME so)."""
    if isinstance(v, datetime.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 10**6 + v.microsecond
    return v
