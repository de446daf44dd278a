"""The Spark SQL reference of the CDC formats, for the test that compares it with the fast
path: each format's events read by :func:`pipelines.cdc.formats.reference.parse_format_events`,
then decoded as Debezium's by :mod:`pipelines.cdc.events`; the rows are given the fast path's
conventions (``_event`` 2 * row, ``ddl``, an event with a rejected row rejected whole); a
format's own refusals (GoldenGate's compressed updates) by
:func:`pipelines.cdc.formats.reference.with_format_errors`."""

from __future__ import annotations

from typing import Any

from pipelines.cdc.formats.reference import SLOTS
from pipelines.cdc.formats.views import DDL


def _whole_events(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An event with a rejected row: one row (row 0's positions) with its first reason."""
    first_bad: dict[int, tuple[int, str]] = {}
    for r in rows:
        err = r["_error"]
        # (an event of another table is one row, as a rejected one)
        if err is not None and err not in (DDL, "truncate", "message", "tombstone"):
            row = r["_event"] // 2
            if r["_pos_line"] not in first_bad or row < first_bad[r["_pos_line"]][0]:
                first_bad[r["_pos_line"]] = (row, err)
    out = []
    for r in rows:
        bad = first_bad.get(r["_pos_line"])
        if bad is None:
            out.append(r)
        elif r["_event"] == 0:
            out.append({**{k: None for k in r}, **{k: v for k, v in r.items()
                                                  if k.startswith("_pos_")},
                        "_event": 0, "_error": bad[1]})
    return out


def spark_sql_rows(spark: Any, cases: list[tuple[str, str]], schema: Any,
                   tmp: Any, source_tables: Any = None, op_ts_column: str | None = None
                   ) -> list[list[dict[str, Any]]]:
    """Per ``(format, file text)`` of ``cases`` (the file index is the case's), its change
    rows by the Spark SQL reference (one Spark job for all); ``source_tables``: the
    :class:`~pipelines.cdc.source_tables.TableFilter` of the events taken; ``op_ts_column``:
    the column filled with each event's time of change."""
    from paimon_core.io.file_io import FileIO
    from pipelines.cdc.batch.stage import read_lines
    from pipelines.cdc.events import classify_events, to_changes
    from pipelines.cdc.formats.reference import (
        parse_format_events,
        with_format_errors,
        with_op_ts,
    )

    paths = []
    for case, (_, text) in enumerate(cases):
        path = tmp / f"case-{case}.jsonl"
        path.write_text(text)
        paths.append(str(path))
    lines = read_lines(spark, FileIO(str(tmp)), paths)
    index = {p: i for i, p in enumerate(paths)}
    events = None
    for (fmt, _), path in zip(cases, paths):
        filled = [op_ts_column] if op_ts_column is not None else []
        ev = parse_format_events(lines.filter(lines.file == path), fmt, schema, index, filled)
        if op_ts_column is not None:
            ev = with_op_ts(ev, fmt, op_ts_column)
        events = ev if events is None else events.unionByName(ev)
    assert events is not None
    classified = with_format_errors(classify_events(
        events, schema, position_fields=list(SLOTS), unavailable="store",
        source_tables=source_tables))
    ref = to_changes(classified, schema, position_fields=list(SLOTS),
                     keep_rejected=True).toArrow().to_pylist()
    per_case: list[list[dict[str, Any]]] = [[] for _ in cases]
    for r in ref:
        case = index[paths[r["_pos_file"]]] if isinstance(r["_pos_file"], int) else \
            index[r["_pos_file"]]
        row = r["_pos_n2"] if cases[case][0] == "canal-json" and r["_pos_n2"] else 0
        r = {**r, "_event": 2 * row + r["_event"], "_pos_file": case,
             "_error": DDL if r["_error"] == "message" else r["_error"]}
        per_case[case].append(r)
    return [_whole_events(rows) for rows in per_case]
