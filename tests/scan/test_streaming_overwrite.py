"""``streaming-read-overwrite=true``: a streaming reader sees an OVERWRITE (a truncate, an
INSERT OVERWRITE) as changes, as Paimon 0.9's ``DataTableStreamScan`` does.

The reference for every check is the batch read: a reader that applies the streamed changes
by key (``+I``/``+U`` upsert, ``-U``/``-D`` delete) must hold what a batch read of the same
snapshot returns. Without the option the OVERWRITE is skipped and the replay keeps the
overwritten rows (the control that shows the check can fail). The exact rows of an overwrite
plan come from the delta plans of the snapshots that added the deleted files; Java 0.9 (the
oracle) streams the same lines from the table we wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.scan.streaming import StreamPlan, StreamTableScan
from paimon_core.schema_change import SetOption
from paimon_core.table import FileStoreTable
from tests.scan.change_tables import (
    S5_OVERWRITE,
    append_table,
    build_history,
    klines,
    lines,
    pk_table,
    write,
)

OVERWRITE = {"streaming-read-overwrite": "true"}
FROM_1 = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}

Key = tuple[Any, ...]


def drain(scan: StreamTableScan) -> list[StreamPlan]:
    out = []
    while (plan := scan.plan()) is not None:
        out.append(plan)
    return out


def replay(state: dict[Key, dict[str, Any]], changes: pa.Table) -> None:
    """Applies changes by primary key (pt, id), as a keyed sink does."""
    for row in changes.to_pylist():
        key = (row["pt"], row["id"])
        if row["_kind"] in ("+I", "+U"):
            state[key] = {k: v for k, v in row.items() if k != "_kind"}
        else:
            state.pop(key, None)


def batch_state(t: FileStoreTable, snapshot_id: int) -> dict[Key, dict[str, Any]]:
    rb = t.new_read_builder().with_time_travel(snapshot_id=snapshot_id)
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits).to_pylist()
    return {(r["pt"], r["id"]): r for r in rows}


def replay_matches_batch(t: FileStoreTable, scan: StreamTableScan,
                         plans: list[StreamPlan]) -> list[int]:
    """The snapshots after whose plan the replayed state differs from the batch read."""
    state: dict[Key, dict[str, Any]] = {}
    wrong = []
    for plan in plans:
        replay(state, scan.read(plan))
        if state != batch_state(t, plan.snapshot_id):
            wrong.append(plan.snapshot_id)
    return wrong


def test_an_insert_overwrite_streams_as_deletes_then_the_new_rows(
        catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.pk", **OVERWRITE)
    build_history(t)  # 1-3 APPEND, 4 COMPACT, 5 OVERWRITE of partition a, 6 APPEND
    scan = t.new_stream_scan(options=FROM_1)
    plans = drain(scan)
    assert [(p.snapshot_id, p.source) for p in plans] == [
        (1, "delta"), (2, "delta"), (3, "delta"), (5, "overwrite"), (6, "delta"),
    ]
    assert replay_matches_batch(t, scan, plans) == []
    # the rows of snapshot 5: every stored record of partition a's files (added by snapshots
    # 1-3, read here through the delta path) as -D, retractions left out; then the new rows
    added = pa.concat_tables([scan.read(p) for p in plans[:3]]).to_pylist()
    gone = [("-D", r["pt"], r["id"], r["v"]) for r in added
            if r["pt"] == "a" and r["_kind"] in ("+I", "+U")]
    assert len(gone) == 8  # a1 three times (v1, v2, v3), a2 twice, a3-a5 once
    assert lines(t, scan.read(plans[3])) == klines(*gone, *S5_OVERWRITE)
    assert plans[3].row_count == sum(f.row_count for s in plans[3].before for f in s.files) + 2


def test_without_the_option_the_overwrite_is_skipped(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.pk")
    build_history(t)
    scan = t.new_stream_scan(options=FROM_1)
    plans = drain(scan)
    assert [p.snapshot_id for p in plans] == [1, 2, 3, 6]
    # the reader keeps partition a's overwritten rows: its state is wrong from snapshot 6 on
    assert replay_matches_batch(t, scan, plans) == [6]


def test_a_truncate_reaches_a_consumer_as_deletes(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.pk", **OVERWRITE)
    write(t, [("+I", p, i, f"v1_{p}{i}") for p in "ab" for i in range(1, 4)])  # 1
    write(t, [("-D", "a", 2, "x"), ("+U", "b", 1, "v2_b1")])                   # 2
    scan = t.new_stream_scan("etl", options=FROM_1)
    first = drain(scan)
    scan.notify_checkpoint_complete(scan.checkpoint())
    assert t.new_commit("truncater").truncate() == [3]
    write(t, [("+I", "c", 1, "after")])                                          # 4
    # a new reader with the same consumer resumes at the truncate
    again = t.new_stream_scan("etl", options=OVERWRITE)
    plans = drain(again)
    assert [(p.snapshot_id, p.source) for p in plans] == [(3, "overwrite"), (4, "delta")]
    truncate = again.read(plans[0])
    assert set(truncate.column("_kind").to_pylist()) == {"-D"}
    # every key that was live is retracted (b1 twice: v1 and v2 are both stored), the
    # deleted key a2 too (its +I is stored; its -D record is not reversed)
    assert sorted((r["pt"], r["id"]) for r in truncate.to_pylist()) == [
        ("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 1), ("b", 2), ("b", 3)]
    assert replay_matches_batch(t, again, [*first, *plans]) == []
    assert batch_state(t, 3) == {}


def test_refused_where_java_refuses(catalog: FileSystemCatalog, tmp_path: Path) -> None:
    ap = append_table(catalog, "db.ap")
    with pytest.raises(UnsupportedError, match="primary key"):
        ap.new_stream_scan(options=OVERWRITE)
    for producer in ("lookup", "full-compaction"):
        t = pk_table(catalog, f"db.{producer.replace('-', '_')}",
                     **{"changelog-producer": producer})
        with pytest.raises(UnsupportedError, match="duplicated changes"):
            t.new_stream_scan(options=OVERWRITE)
        with pytest.raises(SchemaError, match="duplicated changes"):  # ALTER, as Java
            catalog.alter_table(t.identifier, [SetOption("streaming-read-overwrite", "true")])
    with pytest.raises(SchemaError, match="primary-key"):
        catalog.alter_table(ap.identifier, [SetOption("streaming-read-overwrite", "true")])
    dv = pk_table(catalog, "db.dv", **{"deletion-vectors.enabled": "true"})
    with pytest.raises(UnsupportedError, match="deletion-vectors"):
        dv.new_stream_scan(options=OVERWRITE)
    # the input producer reads overwrites too (its follow-up reads changelog files)
    inp = pk_table(catalog, "db.inp", **{"changelog-producer": "input", **OVERWRITE})
    write(inp, [("+I", "a", 1, "v1")])
    inp.new_commit("truncater").truncate()
    plans = drain(inp.new_stream_scan(options=FROM_1))
    assert [(p.snapshot_id, p.source) for p in plans] == [(1, "changelog"), (2, "overwrite")]


@pytest.mark.oracle
def test_java_streams_the_same_truncate(catalog: FileSystemCatalog, tmp_path: Path) -> None:
    """Java 0.9 (``incremental --mode stream``: ``newStreamScan`` on ``t$audit_log``) reads
    the table we wrote, ``streaming-read-overwrite`` in its options. The history holds no
    ``-U``/``-D`` record in the files the truncate deletes: Java fails the read on those."""
    from tests.interop.oracle import ensure_ready, run_batches

    t = pk_table(catalog, "db.pk", **OVERWRITE)
    write(t, [("+I", p, i, f"v1_{p}{i}") for p in "ab" for i in range(1, 4)])  # 1
    write(t, [("+U", "a", 1, "v2_a1"), ("+I", "b", 9, "v2_b9")])               # 2
    assert t.new_commit("truncater").truncate() == [3]
    write(t, [("+I", "a", 1, "v4_a1"), ("+I", "c", 5, "v4_c5")])               # 4
    ensure_ready()
    wh, out = str(catalog.warehouse), tmp_path / "java"
    out.mkdir()
    base = {"warehouse": wh, "table": "db.pk", "engine": "java"}
    cmds = [{"cmd": "incremental", **base, "from": 0, "to": 4, "mode": "stream",
             "output": str(out / "stream.jsonl")}]
    cmds += [{"cmd": "read", **base, "snapshot": s, "output": str(out / f"read-{s}.jsonl")}
             for s in (1, 2, 3, 4)]
    result = run_batches({"overwrite": cmds}, tmp_path)["overwrite"]
    assert not result.failures(), (result.failures(), result.stderr[-3000:])
    scan = t.new_stream_scan(options=FROM_1)
    plans = drain(scan)
    assert [(p.snapshot_id, p.source) for p in plans] == [
        (1, "delta"), (2, "delta"), (3, "overwrite"), (4, "delta")]
    ours = lines(t, pa.concat_tables([scan.read(p) for p in plans]))
    assert (out / "stream.jsonl").read_text().splitlines() == ours
    assert sum(line.startswith('{"_kind":"-D"') for line in ours) == 8
    for s in (1, 2, 3, 4):
        rb = t.new_read_builder().with_time_travel(snapshot_id=s)
        data = rb.new_read().to_arrow(rb.new_scan().plan().splits)
        java = (out / f"read-{s}.jsonl").read_text().splitlines()
        assert java == canonical_lines(data, list(t.schema.fields)), s
