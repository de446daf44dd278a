"""A CDC truncate seen by a streaming reader with ``streaming-read-overwrite=true``: the table
the CDC job wrote (Debezium's Postgres create / truncate examples, as in
``test_cdc_truncate``) streams the truncate as ``-D`` rows, and Java 0.9 (the oracle's
``newStreamScan`` on ``t$audit_log``) streams the same lines from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.schema_change import SetOption
from paimon_core.table import FileStoreTable
from tests.pipelines.cdcgen import corpus_landing
from tests.pipelines.test_cdc_truncate import TWO_BATCHES, _ingest, _rows

pytestmark = pytest.mark.spark

FROM_1 = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}


def _stream(t: FileStoreTable, **options: str) -> tuple[list[tuple[int, str]], pa.Table]:
    scan = t.new_stream_scan(options={**FROM_1, **options})
    plans = []
    while (plan := scan.plan()) is not None:
        plans.append(plan)
    return [(p.snapshot_id, p.source) for p in plans], pa.concat_tables(
        [scan.read(p) for p in plans])


def _lines(t: FileStoreTable, data: pa.Table) -> list[str]:
    fields = [t.schema.field(c) for c in data.column_names if c != "_kind"]
    return canonical_lines(data, fields, kind_col="_kind")


def _prepare(spark: Any, tmp: Path) -> FileStoreTable:
    corpus_landing(tmp, TWO_BATCHES)
    _ingest(spark, tmp)
    catalog = FileSystemCatalog(str(tmp / "wh"))
    catalog.alter_table("db.customers", [SetOption("streaming-read-overwrite", "true")])
    return catalog.get_table("db.customers")


@pytest.mark.oracle
def test_java_streams_the_cdc_truncate_as_we_do(spark: Any, tmp_path: Path) -> None:
    from tests.interop.oracle import ensure_ready, run_batches

    t = _prepare(spark, tmp_path)
    plans, data = _stream(t)
    # snapshots: 1 batch 1, then batch 2 as APPEND (create id 1), OVERWRITE (the truncate),
    # APPEND (create id 3)
    assert plans == [(1, "delta"), (2, "delta"), (3, "overwrite"), (4, "delta")]
    # a keyed replay of the stream holds what a batch read holds at the end: nobody but 3
    state: dict[int, str] = {}
    for row in data.to_pylist():
        if row["_kind"] in ("+I", "+U"):
            state[row["id"]] = row["first_name"]
        else:
            state.pop(row["id"], None)
    assert state == {r["id"]: r["first_name"] for r in _rows(t)} == {3: "Edward"}
    ensure_ready()
    out = tmp_path / "java-stream.jsonl"
    cmds = [{"cmd": "incremental", "warehouse": str(tmp_path / "wh"), "table": "db.customers",
             "engine": "java", "from": 0, "to": 4, "mode": "stream", "output": str(out)}]
    result = run_batches({"stream": cmds}, tmp_path)["stream"]
    assert not result.failures(), (result.failures(), result.stderr[-3000:])
    assert out.read_text().splitlines() == _lines(t, data)
    # without the option the truncate is skipped (Java's default): the replay keeps id 1
    plans, _ = _stream(t, **{"streaming-read-overwrite": "false"})
    assert plans == [(1, "delta"), (2, "delta"), (4, "delta")]
