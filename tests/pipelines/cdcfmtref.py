"""The reference of the CDC formats: each event of a format, translated by plain Python into
Debezium envelope lines (one per row; the format's position in ``source._p0.._p2``), is decoded
by the Spark SQL reference (:func:`tests.pipelines.cdcref.spark_changes`); a test checks that
the fast path (:mod:`pipelines.cdc_formats`) gives the same rows. Per event, as Paimon's
``*RecordParser`` reads it (see :mod:`pipelines.cdc_formats` for where we differ)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

from pipelines.cdc_formats import DDL

#: the position fields of the translated events
SLOTS = ("_p0", "_p1", "_p2")
_CANAL = {"INSERT": "c", "UPDATE": "u", "DELETE": "d", "ROW": "r", "TRUNCATE": "t"}
_CANAL_DDL = {"CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX"}
_MAXWELL = {"insert": "c", "bootstrap-insert": "r", "update": "u", "delete": "d"}
_MAXWELL_SKIPPED = {"database-create", "database-alter", "database-drop", "table-create",
                    "table-alter", "table-drop", "bootstrap-start", "bootstrap-complete"}
_OGG = {"I": "c", "U": "u", "D": "d", "T": "t"}
_DMS = {"load": "r", "insert": "c", "update": "u", "delete": "d"}


def _norm(row: dict[str, Any], booleans: set[str], binaries: set[str]) -> dict[str, Any]:
    out = {}
    for k, v in row.items():
        if k in booleans and not isinstance(v, bool) and v is not None:
            t = json.dumps(v) if not isinstance(v, str) else v
            v = {"1": "true", "0": "false"}.get(t, t)
        if k in binaries and isinstance(v, str):
            try:
                v = base64.b64encode(v.encode("latin-1")).decode()
            except UnicodeEncodeError:
                v = "!"
        out[k] = v
    return out


def _overlay(row: dict[str, Any], old: Any, prefix: str = "") -> dict[str, Any]:
    old = old if isinstance(old, dict) else {}
    return {k: (old[prefix + k] if old.get(prefix + k) is not None else v)
            for k, v in row.items()}


def _event(op: str | None, before: Any, after: Any, slots: list[Any]) -> dict[str, Any]:
    return {"op": op, "before": before, "after": after, "source": dict(zip(SLOTS, slots))}


def translate(fmt: str, line: str, file_index: int, line_no: int, booleans: set[str],
              binaries: set[str]) -> Iterator[tuple[int, dict[str, Any] | None, bool]]:
    """``(row, Debezium event, is DDL)`` of each row of one event line (a DDL / control event:
    one ``op: m`` event)."""
    ev = json.loads(line)
    arrival = [file_index, line_no, 0]
    if fmt == "canal-json":
        typ = ev.get("type")
        op = _CANAL.get(typ)
        if (ev.get("isDdl") is True or typ in _CANAL_DDL) and op != "t":
            yield 0, _event("m", None, None, arrival), True
            return
        data = ev.get("data") or [None]
        olds = ev.get("old") or []
        for i, row in enumerate(data):
            row_slots = [file_index, line_no, i]
            if row is None:
                yield i, _event(op, None, None, row_slots), False
                continue
            img = _norm(row, booleans, binaries) if op != "t" else None
            old = olds[i] if i < len(olds) else None
            before = (_norm(_overlay(row, old), booleans, binaries) if op == "u"
                      else img if op == "d" else None)
            yield i, _event(op, before, None if op == "d" else img, row_slots), False
    elif fmt == "maxwell-json":
        typ = ev.get("type")
        m = re.match(r"^(.*\.([0-9]{1,9})):([0-9]{1,18})$", str(ev.get("position") or ""))
        slots: list[Any] = ([m.group(1), int(m.group(3)), ev.get("xoffset") or 0] if m
                            else arrival)
        if typ in _MAXWELL_SKIPPED:
            yield 0, _event("m", None, None, slots), True
            return
        op = _MAXWELL.get(str(typ))
        data = ev.get("data")
        img = _norm(data, booleans, binaries) if isinstance(data, dict) else data
        before = (_norm(_overlay(data, ev.get("old")), booleans, binaries)
                  if op in ("u", "d") and isinstance(data, dict) else None)
        yield 0, _event(op, before if op in ("u", "d") else None,
                        None if op == "d" else img, slots), False
    elif fmt == "ogg-json":
        op = _OGG.get(ev.get("op_type"))
        pos = str(ev.get("pos"))
        num = int(pos) if pos.isdigit() and len(pos.lstrip("0")) <= 18 else None
        b_raw, a_raw = ev.get("before"), ev.get("after")
        before = (_norm(b_raw, booleans, binaries) if isinstance(b_raw, dict) else b_raw
                  ) if op in ("u", "d") else None
        after = (_norm(a_raw, booleans, binaries) if isinstance(a_raw, dict) else a_raw
                 ) if op in ("c", "r", "u") else None
        yield 0, _event(op, before, after, [num, 0, 0]), False
    elif fmt == "aws-dms-json":
        meta = ev.get("metadata") or {}
        if meta.get("record-type") not in (None, "data"):
            yield 0, _event("m", None, None, arrival), True
            return
        op = _DMS.get(str(meta.get("operation")))
        data = ev.get("data")
        plain = ({k: v for k, v in data.items() if not k.startswith("BI_")}
                 if isinstance(data, dict) else data)
        img = _norm(plain, booleans, binaries) if isinstance(plain, dict) else plain
        before = (_norm(_overlay(plain, data, "BI_"), booleans, binaries)
                  if op in ("u", "d") and isinstance(plain, dict) else None)
        yield 0, _event(op, before, None if op == "d" else img, arrival), False
    else:  # pragma: no cover
        raise ValueError(fmt)


def reference_rows(spark: Any, cases: list[tuple[str, str]], schema: Any,
                   tmp: Any) -> list[list[dict[str, Any]]]:
    """Per ``(format, file text)`` of ``cases`` (the file index is the case's), its change
    rows by the reference (translation + Spark SQL, one Spark job for all), with the fast
    path's conventions: ``_pos_line`` the event's line, ``_event`` 2 * row (+1 for the ``-D``
    of a key change), DDL as ``ddl``, an event with a rejected row rejected whole (one row,
    its first reason)."""
    from paimon_core import AtomicType, TypeRoot
    from tests.pipelines.cdcref import spark_changes

    booleans = {f.name for f in schema.fields
                if isinstance(f.type, AtomicType) and f.type.root is TypeRoot.BOOLEAN}
    out_lines: list[str] = []
    origin: list[tuple[int, int, int, bool]] = []  # per translated line: case, line, row, DDL
    for case, (fmt, text) in enumerate(cases):
        binaries = ({f.name for f in schema.fields if isinstance(f.type, AtomicType)
                     and f.type.root in (TypeRoot.BINARY, TypeRoot.VARBINARY)}
                    if fmt == "canal-json" else set())
        for no, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            for row, event, ddl in translate(fmt, line, case, no, booleans, binaries):
                out_lines.append(json.dumps(event))
                origin.append((case, no, row, ddl))
    path = tmp / "ref.jsonl"
    path.write_text("\n".join(out_lines) + "\n")
    ref = spark_changes(spark, path, schema, position_fields=list(SLOTS), epoch_unit="ms",
                        sequence_column=None, unavailable="store").to_pylist()
    per_case: list[list[dict[str, Any]]] = [[] for _ in cases]
    for r in ref:
        case, no, row, ddl = origin[r["_pos_line"] - 1]
        r = {**r, "_pos_line": no, "_event": 2 * row + r["_event"], "_pos_file": case}
        if ddl:
            r["_error"] = DDL
        per_case[case].append(r)
    return [_whole_events(rows) for rows in per_case]


def _whole_events(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An event with a rejected row: one row (row 0's positions) with its first reason."""
    first_bad: dict[int, tuple[int, str]] = {}
    for r in rows:
        err = r["_error"]
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
