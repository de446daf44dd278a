"""CDC ingestion assets on a local Spark: daily partitions, exactly-once re-runs and backfills,
out-of-order days, quarantine, metadata and lineage."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from assets.cdc import cdc_commit_user, cdc_customers, cdc_identifier, cdc_orders
from assets.demo_data import Feed, generate
from assets.metadata import RUN_ID_PROPERTY, accepts_properties
from assets.tables import CUSTOMERS, ORDERS
from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.io.file_io import FileIO
from pipelines.cdc.ingest import CdcOptions, ingest_batch
from tests.assets.helpers import assert_spark_metadata

pytestmark = pytest.mark.spark

RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


@pytest.fixture
def feed(lake: dict[str, Path]) -> Feed:
    landing = str(lake["landing"])
    return generate(FileIO(landing), landing, customers=60, orders_per_day=120)


def _materialize(assets: list[Any], resources: dict[str, Any], *, day: str | None = None,
                 days: tuple[str, str] | None = None) -> dg.ExecuteInProcessResult:
    tags = {RANGE_START: days[0], RANGE_END: days[1]} if days else None
    result = dg.materialize(assets, resources=resources, partition_key=day, tags=tags)
    assert result.success
    return result


def _state(lake: dict[str, Path], identifier: str, key: str) -> dict[int, dict[str, Any]]:
    table = FileSystemCatalog(str(lake["warehouse"])).get_table(identifier)
    return {r[key]: {k: v for k, v in r.items() if k != "src_lsn"}
            for r in table.to_arrow().to_pylist()}


def _md(result: dg.ExecuteInProcessResult, asset: dg.AssetsDefinition) -> dict[str, Any]:
    # a range run materializes every partition of the range, with the run's metadata
    mats = result.asset_materializations_for_node(asset.op.name)
    assert mats and all(m.metadata == mats[0].metadata for m in mats)
    return {k: v.value for k, v in mats[-1].metadata.items()}


def test_daily_partitions_then_backfill_twice(
    spark: Any, feed: Feed, lake: dict[str, Path], resources: dict[str, Any]
) -> None:
    first = _materialize([cdc_customers, cdc_orders], resources, day=feed.days[0])
    md = _md(first, cdc_orders)
    # identifiers are text (never plotted as a series)
    assert md["paimon/snapshot_id"] == "1" and md["paimon/commit_kind"] == "APPEND"
    assert md["paimon/commit_identifier"] == str(cdc_identifier(feed.days[0])) == "20250106"
    assert md["cdc/events"] == feed.events["cdc.orders"][feed.days[0]]
    assert md["paimon/rows_added"] + md["paimon/rows_deleted"] == md["cdc/rows_written"]
    assert md["paimon/files_added"] >= 1 and md["paimon/bytes_added"] > 0
    assert_spark_metadata(md, spark)
    # the rest of the range as one backfill run (single-run backfill policy): day by day
    rest = _materialize([cdc_orders], resources, days=(feed.days[1], feed.days[2]))
    md = full = _md(rest, cdc_orders)
    assert md["cdc/days"] == list(feed.days[1:])
    assert md["paimon/snapshot_ids"] == [2, 3]
    assert md["cdc/quarantined"] == sum(feed.malformed["cdc.orders"].values()) == 4
    assert _state(lake, "cdc.orders", "order_id") == feed.orders
    first_day = {k: v for k, v in _state(lake, "cdc.customers", "customer_id").items()}
    assert len(first_day) == 60
    cat = FileSystemCatalog(str(lake["warehouse"]))
    orders = cat.get_table("cdc.orders")
    snaps = {s.id: s for s in orders.snapshot_manager.snapshots()}
    assert snaps[3].commit_user == cdc_commit_user(ORDERS, feed.days[2])
    assert snaps[3].commit_identifier == 20250108
    # the whole backfill again: nothing applied, the table is as one run left it
    again = _materialize([cdc_orders], resources, days=(feed.days[0], feed.days[2]))
    md = _md(again, cdc_orders)
    assert md["cdc/already_committed_days"] == list(feed.days)
    assert md["paimon/commit_kind"] == "NONE" and md["paimon/rows_added"] == 0
    # the table's state, as paimon_core reads it: a no-op run is no drop to zero
    assert md["dagster/row_count"] == full["dagster/row_count"] == len(feed.orders)
    assert md["paimon/snapshot_id"] == full["paimon/snapshot_id"] == "3"
    assert [(c.name, c.type) for c in md["dagster/column_schema"].columns] == [
        (f.name, f.type.sql()) for f in orders.schema.fields]
    assert md["paimon/live_files"] == full["paimon/live_files"] == len(
        orders.inspect.files())
    assert orders.snapshot_manager.latest_snapshot_id() == 3
    assert _state(lake, "cdc.orders", "order_id") == feed.orders
    assert fsck(orders).ok
    # quarantine: the malformed lines with their reasons
    quarantine = lake["landing"] / "cdc.orders" / "_quarantine"
    assert sorted(p.name for p in quarantine.iterdir()) == ["batch-20250107", "batch-20250108"]


def test_out_of_order_days_and_re_executed_partition(
    spark: Any, feed: Feed, lake: dict[str, Path], resources: dict[str, Any]
) -> None:
    # the newest day lands first, then the older ones as a backfill: no day is skipped, and
    # the source position (sequence.field) keeps the newest version of every key
    _materialize([cdc_orders], resources, day=feed.days[2])
    _materialize([cdc_orders], resources, days=(feed.days[0], feed.days[1]))
    assert _state(lake, "cdc.orders", "order_id") == feed.orders
    # one partition re-executed (a retried run): applied once
    redo = _materialize([cdc_orders], resources, day=feed.days[1])
    assert _md(redo, cdc_orders)["cdc/already_committed_days"] == [feed.days[1]]
    table = FileSystemCatalog(str(lake["warehouse"])).get_table("cdc.orders")
    assert table.snapshot_manager.latest_snapshot_id() == 3
    users = [s.commit_user for s in table.snapshot_manager.snapshots()]
    assert users == [cdc_commit_user(ORDERS, d) for d in (feed.days[2], *feed.days[:2])]


def test_missing_landing_day_fails_without_commit(
    spark: Any, lake: dict[str, Path], resources: dict[str, Any]
) -> None:
    result = dg.materialize([cdc_customers], resources=resources, partition_key="2025-02-01",
                            raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "no change events have landed" in failure.step_failure_data.error.message
    table = FileSystemCatalog(str(lake["warehouse"])).get_table(CUSTOMERS.identifier)
    assert table.latest_snapshot() is None


def test_snapshot_names_the_run(
    spark: Any, feed: Feed, lake: dict[str, Path], resources: dict[str, Any]
) -> None:
    if "properties" not in {f.name for f in dataclasses.fields(CdcOptions)} and (
        not accepts_properties(ingest_batch)
    ):
        pytest.xfail("pipelines.cdc.ingest.CdcOptions has no 'properties' for the snapshot "
                     "(issue 5 API): the run id cannot be recorded in CDC snapshots yet")
    result = _materialize([cdc_customers], resources, day=feed.days[0])
    snap = FileSystemCatalog(str(lake["warehouse"])).get_table("cdc.customers").latest_snapshot()
    assert snap.properties[RUN_ID_PROPERTY] == result.run_id
    assert snap.properties["dagster.partition-key"] == feed.days[0]


SOURCE_TABLE_YAML = """
table: shop.products
columns: [{name: id, type: BIGINT}, {name: name, type: STRING}]
primary_key: [id]
source: {format: canal-json, source_table: 'inventory\\.products2', partitioning: none,
         layout: "{table}"}
"""


def test_source_table_reaches_the_job(lake: dict[str, Path], resources: dict[str, Any],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``source.source_table`` of a PaimonCdcTable is the job's ``CdcOptions.source_table``
    (the events of other tables are the job's to skip); a pattern that is no regex is refused
    at load, naming the attribute."""
    from assets.components import PaimonCdcTable
    from assets.labels import SettingsError
    from pipelines.cdc.ingest import BatchReport

    seen: list[CdcOptions] = []

    def fake(spark: Any, settings: Any, identifier: str, batch: int, files: list[str],
             options: CdcOptions, **kw: Any) -> BatchReport:
        seen.append(options)
        return BatchReport(batch=batch, events=1, valid=1)

    monkeypatch.setattr("assets.cdc.ingest_batch", fake)
    monkeypatch.setattr("assets.resources.SparkResource.session", lambda self: None)
    landed = lake["landing"] / "shop.products"
    landed.mkdir()
    (landed / "part-0.json").write_text("{}\n")
    defs = dg.build_defs_for_component(PaimonCdcTable.resolve_from_yaml(SOURCE_TABLE_YAML))
    [asset] = [a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition)]
    assert dg.materialize([asset], resources=resources).success
    [options] = seen
    assert options.source_table == "inventory\\.products2"
    assert options.format == "canal-json"
    with pytest.raises(SettingsError, match=r"source_table: .*'inventory\(' is not a regular"):
        dg.build_defs_for_component(PaimonCdcTable.resolve_from_yaml(
            SOURCE_TABLE_YAML.replace("inventory\\.products2", "inventory(")))
