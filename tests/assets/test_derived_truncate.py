"""A CDC truncate (``op: "t"``) in the source reaches the derived table.

The events go through the real CDC job (:func:`pipelines.cdc.ingest.ingest` on a local Spark)
into ``cdc.orders``; the truncate lies between other events of one batch, so the batch lands
as APPEND, OVERWRITE (the truncate), APPEND. The derived table is then maintained by
:func:`assets.derived.apply_range` and must equal :func:`assets.derived.enrich_orders` of a
full read of the source at the range end (the recomputation): the truncated rows gone, the
rows created after the truncate there. Expected keys are written by hand from the events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from assets.derived import STAMP, apply_range, enrich_orders
from assets.tables import ORDERS
from paimon_core.table import FileStoreTable
from pipelines.cdc.ingest import CdcOptions, ingest
from pipelines.config import CatalogSettings

pytestmark = pytest.mark.spark

MS = 1_709_251_200_000  # 2024-03-01 00:00 UTC


def _order(order_id: int, status: str, amount: str) -> dict[str, Any]:
    return {"order_id": order_id, "customer_id": order_id % 7, "status": status,
            "amount": amount, "currency": "EUR", "created_at": MS, "updated_at": MS + order_id}


def _event(op: str, lsn: int, before: dict[str, Any] | None = None,
           after: dict[str, Any] | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "source": {"connector": "postgresql", "name": "shop", "db": "shop", "schema": "public",
                   "table": "orders", "ts_ms": MS, "snapshot": False, "lsn": lsn},
        "op": op, "ts_ms": MS,
    }
    if op != "t":
        payload["before"], payload["after"] = before, after
    return {"schema": None, "payload": payload}


def _land(landing: Path, batches: list[list[dict[str, Any]]]) -> None:
    for b, events in enumerate(batches, 1):
        d = landing / f"batch-{b:06d}"
        d.mkdir(parents=True)
        (d / "part-0.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def _recomputed(source: FileStoreTable, snapshot_id: int) -> list[dict[str, Any]]:
    """enrich_orders of the source's full state at ``snapshot_id``, without the stamp."""
    rb = source.new_read_builder().with_time_travel(snapshot_id=snapshot_id)
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits)
    return _rows(enrich_orders(rows, snapshot_id))


def _rows(t: pa.Table) -> list[dict[str, Any]]:
    return sorted((r for r in t.drop_columns([STAMP]).to_pylist()),
                  key=lambda r: r["order_id"])


def test_a_cdc_truncate_empties_the_derived_table_at_its_position(
        spark: Any, tables: Any, lake: dict[str, Path]) -> None:
    src, tgt = tables
    o = {i: _order(i, "new", f"{i}0.00") for i in range(1, 7)}
    _land(lake["landing"], [
        # batch 1: orders 1-4 created
        [_event("c", 100 + i, after=o[i]) for i in (1, 2, 3, 4)],
        # batch 2: 2 shipped, 3 deleted, TRUNCATE, then 5 created and 2 created again
        [_event("u", 200, before=o[2], after={**o[2], "status": "shipped"}),
         _event("d", 201, before=o[3]),
         _event("t", 202),
         _event("c", 203, after=o[5]),
         _event("c", 204, after={**o[2], "amount": "999.00"})],
        # batch 3: 5 delivered, 6 created
        [_event("u", 300, before=o[5], after={**o[5], "status": "delivered"}),
         _event("c", 301, after=o[6])],
    ])
    reports = ingest(spark, CatalogSettings(str(lake["warehouse"])), ORDERS.identifier,
                     str(lake["landing"]), CdcOptions(), batches=[1])
    assert [r.snapshot_ids for r in reports] == [[1]]
    first = apply_range(src, tgt, 0, 1)
    assert first.mode == "incremental"
    assert _rows(tgt.to_arrow()) == _recomputed(src, 1)
    assert [r["order_id"] for r in _rows(tgt.to_arrow())] == [1, 2, 3, 4]

    reports = ingest(spark, CatalogSettings(str(lake["warehouse"])), ORDERS.identifier,
                     str(lake["landing"]), CdcOptions(), batches=[2])
    assert [(r.truncates, r.snapshot_ids) for r in reports] == [(1, [2, 3, 4])]
    assert [src.snapshot_manager.snapshot(s).commit_kind.value for s in (2, 3, 4)] == [
        "APPEND", "OVERWRITE", "APPEND"]
    # the incremental diff of the source shows the truncate: every key live at 1 and not
    # live at 4 as -D (1, 3, 4), 2 changed, 5 new
    diff = src.read_merged_changes(1, 4, mode="diff", columns=["order_id"]).to_pylist()
    assert sorted((r["_kind"], r["order_id"]) for r in diff) == [
        ("+I", 2), ("+I", 5), ("-D", 1), ("-D", 3), ("-D", 4)]
    second = apply_range(src, tgt, 1, 4)
    assert second.mode == "full"  # the range holds an OVERWRITE: rebuilt from the source
    derived = _rows(tgt.to_arrow())
    assert derived == _recomputed(src, 4)
    assert [(r["order_id"], r["status"], str(r["amount"])) for r in derived] == [
        (2, "new", "999.00"), (5, "new", "50.00")]

    ingest(spark, CatalogSettings(str(lake["warehouse"])), ORDERS.identifier,
           str(lake["landing"]), CdcOptions(), batches=[3])
    third = apply_range(src, tgt, 4, 5)
    assert third.mode == "incremental"
    assert _rows(tgt.to_arrow()) == _recomputed(src, 5)
    assert [(r["order_id"], r["status"]) for r in _rows(tgt.to_arrow())] == [
        (2, "new"), (5, "delivered"), (6, "new")]
