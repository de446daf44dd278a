"""The derived table fed by incremental reads (``mart.orders_enriched``) and its sensor."""

from __future__ import annotations

import decimal
from typing import Any

import dagster as dg
import pyarrow as pa

from assets.derived import (
    DERIVED_COMMIT_USER,
    DERIVED_CONSUMER_ID,
    apply_range,
    enrich_orders,
    orders_enriched,
    orders_snapshot_sensor,
)
from assets.metadata import RUN_ID_PROPERTY, snapshots_of_run
from assets.tables import ORDERS_ENRICHED
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.table import FileStoreTable
from tests.assets.helpers import by_key, commit_orders, order_rows


def _consumer(table: FileStoreTable) -> int | None:
    c = ConsumerManager(table.file_io, table.path).consumer(DERIVED_CONSUMER_ID)
    return None if c is None else c.next_snapshot


def _derived_snapshots(target: FileStoreTable) -> int:
    return len(target.snapshot_manager.list_snapshot_ids())


# ------------------------------------------------------------------------------ transform
def test_enrich_orders_values() -> None:
    src = order_rows([1, 4, 60], "new", amount="12.50").drop_columns(["_k"])
    src = src.set_column(2, "status", pa.array(["new", "delivered", None], pa.string()))
    out = enrich_orders(src, 7)
    assert out.column_names == [f["name"] for f in ORDERS_ENRICHED.schema["fields"]]
    assert out.column("is_open").to_pylist() == [True, False, True]
    assert out.column("amount").to_pylist() == [
        decimal.Decimal("12.50"), decimal.Decimal("50.00"), decimal.Decimal("750.00")]
    assert out.column("amount_band").to_pylist() == ["small", "medium", "large"]
    assert out.column("source_snapshot").to_pylist() == [7, 7, 7]


# ------------------------------------------------------------------------------ apply_range
def test_apply_range_reads_only_the_range_exactly_once(tables: Any) -> None:
    src, tgt = tables
    s1 = commit_orders(src, order_rows([1, 2, 3, 4], "new"), 1)
    r1 = apply_range(src, tgt, 0, s1)
    assert (r1.mode, r1.rows_read, r1.upserts, r1.deletes) == ("incremental", 4, 4, 0)
    assert _consumer(src) == s1 + 1
    commit_orders(src, order_rows([2, 3], "delivered", "+U"), 2)
    s3 = commit_orders(src, order_rows([4], "new", "-D"), 3)
    r2 = apply_range(src, tgt, s1, s3)
    # only the 3 changed keys are read, not the 4 rows of the table
    assert (r2.start, r2.end, r2.rows_read, r2.upserts, r2.deletes) == (1, 3, 3, 2, 1)
    rows = by_key(tgt, "order_id")
    assert sorted(rows) == [1, 2, 3]
    assert rows[1]["status"] == "new" and rows[1]["source_snapshot"] == 1
    assert rows[2]["status"] == "delivered" and rows[2]["is_open"] is False
    assert rows[2]["source_snapshot"] == 3
    n = _derived_snapshots(tgt)
    # re-executing the same range (a retried run) applies nothing
    again = apply_range(src, tgt, s1, s3)
    assert again.mode == "skipped" and again.snapshot_ids == ()
    assert _derived_snapshots(tgt) == n
    assert by_key(tgt, "order_id") == rows


def test_overtaken_range_is_a_no_op(tables: Any) -> None:
    src, tgt = tables
    s1 = commit_orders(src, order_rows([1, 2], "new"), 1)
    s2 = commit_orders(src, order_rows([1], "shipped", "+U"), 2)
    # the sensor registered the consumer before handing out (0, 1] and (1, 2]; the later
    # range runs first: it reads from the consumer position, a superset of its range
    ConsumerManager(src.file_io, src.path).reset_consumer(DERIVED_CONSUMER_ID, Consumer(1))
    late = apply_range(src, tgt, s1, s2)
    assert (late.start, late.end, late.upserts) == (0, 2, 2)
    early = apply_range(src, tgt, 0, s1)
    assert early.mode == "skipped"
    rows = by_key(tgt, "order_id")
    assert sorted(rows) == [1, 2] and rows[1]["status"] == "shipped"


def test_crash_between_commit_and_consumer_update(tables: Any) -> None:
    src, tgt = tables
    s1 = commit_orders(src, order_rows([1, 2], "new"), 1)
    apply_range(src, tgt, 0, s1)
    s2 = commit_orders(src, order_rows([1], "shipped", "+U"), 2)
    apply_range(src, tgt, s1, s2)
    # simulate the crash: the commit landed, the consumer still says "next is 2"
    ConsumerManager(src.file_io, src.path).reset_consumer(DERIVED_CONSUMER_ID, Consumer(2))
    n = _derived_snapshots(tgt)
    redo = apply_range(src, tgt, s1, s2)
    assert redo.mode == "skipped"
    assert _derived_snapshots(tgt) == n
    assert _consumer(src) == s2 + 1


def test_expired_range_rebuilds_from_the_source_state(tables: Any) -> None:
    src, tgt = tables
    for i in range(1, 7):
        commit_orders(src, order_rows([i, i + 100], "new"), i)
    commit_orders(src, order_rows([101], "new", "-D"), 7)
    res = src.expire_snapshots(retain_min=2, retain_max=2)
    assert res.earliest == 6
    r = apply_range(src, tgt, 0, 7)
    assert r.mode == "full"
    assert sorted(by_key(tgt, "order_id")) == [1, 2, 3, 4, 5, 6, 102, 103, 104, 105, 106]
    assert tgt.latest_snapshot().commit_kind.value == "OVERWRITE"
    assert tgt.latest_snapshot().commit_identifier == 7


def test_rerun_of_a_range_whose_end_expired_rebuilds_at_the_latest(tables: Any) -> None:
    """The derived table is behind a range whose end snapshot has expired meanwhile (its
    consumer was removed): the state at that end is gone, the run rebuilds from the latest
    snapshot instead (the derived table moves forward, never back)."""
    src, tgt = tables
    s1 = commit_orders(src, order_rows([1], "new"), 1)
    apply_range(src, tgt, 0, s1)
    ConsumerManager(src.file_io, src.path).delete_consumer(DERIVED_CONSUMER_ID)
    for i in range(2, 6):
        commit_orders(src, order_rows([i], "new"), i)
    assert src.expire_snapshots(retain_min=2, retain_max=2).earliest == 4
    r = apply_range(src, tgt, s1, 3)  # a re-executed run of the range (1, 3]
    assert (r.mode, r.start, r.end) == ("full", 1, 5)
    assert sorted(by_key(tgt, "order_id")) == [1, 2, 3, 4, 5]
    assert tgt.latest_snapshot().commit_identifier == 5
    assert _consumer(src) == 6
    assert apply_range(src, tgt, 3, 5).mode == "skipped"


# ------------------------------------------------------------------------------ sensor
def _tick(resources: dict[str, Any], cursor: str | None) -> dg.SensorResult:
    ctx = dg.build_sensor_context(cursor=cursor, resources={"catalog": resources["catalog"]})
    result = orders_snapshot_sensor(ctx)
    assert isinstance(result, dg.SensorResult)
    return result


def test_sensor_ticks_with_cursor(tables: Any, resources: dict[str, Any]) -> None:
    src, _ = tables
    empty = _tick(resources, None)
    assert not empty.run_requests and empty.cursor == "0"
    # first tick registered the consumer: expiry keeps everything from snapshot 1 on
    assert _consumer(src) == 1
    s1 = commit_orders(src, order_rows([1, 2], "new"), 1)
    s2 = commit_orders(src, order_rows([3], "new"), 2)
    first = _tick(resources, empty.cursor)
    assert first.cursor == str(s2)
    [req] = first.run_requests
    assert req.run_key == "cdc.orders:0-2"
    op = orders_enriched.op.name
    assert req.run_config["ops"][op]["config"] == {"start_snapshot": 0, "end_snapshot": s2}
    # nothing new -> skip, cursor unchanged
    idle = _tick(resources, first.cursor)
    assert not idle.run_requests and idle.cursor == str(s2)
    assert s1 == 1


def test_sensor_restart_from_stored_cursor_loses_nothing(tables: Any, resources: dict) -> None:
    src, tgt = tables
    commit_orders(src, order_rows([1], "new"), 1)
    t1 = _tick(resources, None)
    [r1] = t1.run_requests
    # the daemon stops; snapshots keep coming; a new daemon starts from the stored cursor
    commit_orders(src, order_rows([2], "new"), 2)
    commit_orders(src, order_rows([3], "new"), 3)
    t2 = _tick(resources, t1.cursor)
    [r2] = t2.run_requests
    ranges = [(r.run_config["ops"][orders_enriched.op.name]["config"]) for r in (r1, r2)]
    assert ranges == [{"start_snapshot": 0, "end_snapshot": 1},
                      {"start_snapshot": 1, "end_snapshot": 3}]
    # the ranges are contiguous: every snapshot handed out exactly once
    for rng in ranges:
        apply_range(src, tgt, rng["start_snapshot"], rng["end_snapshot"])
    assert sorted(by_key(tgt, "order_id")) == [1, 2, 3]
    # a sensor that lost its cursor resumes from the consumer position, not from 0
    lost = _tick(resources, None)
    assert not lost.run_requests and lost.cursor == "3"


def test_sensor_skips_compaction_only_ranges(tables: Any, resources: dict[str, Any]) -> None:
    src, _ = tables
    commit_orders(src, order_rows([1, 2], "new"), 1)
    commit_orders(src, order_rows([1], "shipped", "+U"), 2)
    t1 = _tick(resources, "2")
    assert not t1.run_requests
    ConsumerManager(src.file_io, src.path).reset_consumer(DERIVED_CONSUMER_ID, Consumer(3))
    sid = src.compact()
    assert sid == 3
    t2 = _tick(resources, "2")
    assert not t2.run_requests and t2.cursor == "3"
    assert _consumer(src) == 4  # expiry is not held back by the compaction snapshot


# ------------------------------------------------------------------------------ the asset
def test_asset_materializes_sensor_range_with_lineage(tables: Any, resources: dict) -> None:
    src, tgt = tables
    commit_orders(src, order_rows([1, 2, 3], "new"), 1)
    commit_orders(src, order_rows([3], "new", "-D"), 2)
    [req] = _tick(resources, None).run_requests
    result = dg.materialize(
        [orders_enriched], resources={"catalog": resources["catalog"]},
        run_config=req.run_config, tags={**req.tags, "dagster/run_key": req.run_key},
    )
    assert result.success
    md = result.asset_materializations_for_node(orders_enriched.op.name)[0].metadata
    snap = tgt.latest_snapshot()
    assert md["paimon/snapshot_id"].value == str(snap.id)
    assert md["paimon/commit_kind"].value == "APPEND"
    # key 3 was inserted and deleted inside the range: the merged change is one -D
    assert md["paimon/rows_added"].value == 2
    assert md["paimon/rows_deleted"].value == 1
    assert (md["paimon/upserts"].value, md["paimon/deletes"].value) == (2, 1)
    assert md["paimon/files_added"].value >= 1
    assert md["paimon/bytes_added"].value > 0
    assert md["paimon/source_range"].value == "(0, 2]"
    assert md["paimon/mode"].value == "incremental"
    # lineage the other way: the snapshot names the run
    assert snap.properties[RUN_ID_PROPERTY] == result.run_id
    assert snap.properties["dagster.asset-key"] == "mart/orders_enriched"
    assert [s.id for s in snapshots_of_run(tgt, result.run_id)] == [snap.id]
    assert snap.commit_user == DERIVED_COMMIT_USER and snap.commit_identifier == 2
    # the same run request executed again (a re-executed run): nothing applied twice
    again = dg.materialize([orders_enriched], resources={"catalog": resources["catalog"]},
                           run_config=req.run_config)
    md2 = again.asset_materializations_for_node(orders_enriched.op.name)[0].metadata
    assert md2["paimon/mode"].value == "skipped"
    assert tgt.latest_snapshot().id == snap.id
