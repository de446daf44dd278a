"""Maintenance assets on a local Spark: per-bucket compaction (metadata, run tags, schedule)
and snapshot expiry (snapshots expired, bytes freed, consumers respected); the daily batch
overwrite asset."""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pytest

from assets.demo_data import generate
from assets.derived import DERIVED_CONSUMER_ID
from assets.labels import SettingsError
from assets.maintenance import (
    bucket_state,
    compactions,
    expiry_assets,
    partition_key_of,
    split_key,
)
from assets.metadata import run_commit_user, snapshots_of_run
from assets.overwrite import fx_rates
from assets.tables import FX_RATES, ORDERS, BucketLayout, TableSpec
from paimon_core.catalog import FileSystemCatalog
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.fsck import fsck
from paimon_core.io.file_io import FileIO
from paimon_core.table import FileStoreTable
from tests.assets.helpers import assert_spark_metadata, by_key, commit_orders, order_rows
from tests.tables import pk_table, write_rows

ORDERS_COMPACTION = next(c for c in compactions if c.asset.key.path[-1] == "cdc_orders_compaction")
ORDERS_EXPIRY = next(a for a in expiry_assets if a.key.path[-1] == "cdc_orders_expiry")
ORDERS_KEY = dg.AssetKey(["cdc", "orders"])


@pytest.fixture
def orders(lake_catalog: FileSystemCatalog) -> FileStoreTable:
    """cdc.orders after 6 commits that touch every bucket: 6 level-0 files per bucket."""
    table = ORDERS.ensure(lake_catalog)
    for i in range(6):
        commit_orders(table, order_rows(range(1, 41), f"s{i}"), i + 1)
    return table


def _md(result: dg.ExecuteInProcessResult, asset: dg.AssetsDefinition,
        key: dg.AssetKey | None = None) -> dict[str, Any]:
    """The metadata of the run's materialization of ``key`` (default: the asset's own)."""
    [mat] = [m for m in result.asset_materializations_for_node(asset.op.name)
             if m.asset_key == (key or asset.key)]
    return {k: v.value for k, v in mat.metadata.items()}


def _table_events(result: dg.ExecuteInProcessResult,
                  asset: dg.AssetsDefinition) -> list[dg.AssetMaterialization]:
    """What a maintenance run reported on the TABLE's asset (cdc/orders)."""
    return [m for m in result.asset_materializations_for_node(asset.op.name)
            if m.asset_key == ORDERS_KEY]


def test_partition_keys_name_their_bucket() -> None:
    fx = next(c for c in compactions if c.asset.key.path[-1] == "ref_fx_rates_compaction")
    assert split_key(ORDERS, "cdc.orders/bucket-3") == (None, 3)
    assert split_key(FX_RATES, "ref.fx_rates/bucket-1|2025-01-07") == ({"dt": "2025-01-07"}, 1)
    key = dg.MultiPartitionKey({"dt": "2025-01-07", "bucket": "ref.fx_rates/bucket-1"})
    assert split_key(FX_RATES, key) == ({"dt": "2025-01-07"}, 1)
    assert partition_key_of(FX_RATES, {"dt": "2025-01-07"}, 1) == str(key)
    with pytest.raises(ValueError, match=r"not a compaction partition of cdc\.orders"):
        split_key(ORDERS, "cdc.customers/bucket-1")
    # the partition tag of every run of a partition (the limit of dagster.yaml works on it)
    # is the bucket's: the asset's partitions give it, whichever job runs them
    tags = ORDERS_COMPACTION.asset.partitions_def.get_tags_for_partition_key(
        "cdc.orders/bucket-3")
    assert tags["dagster/partition"] == "cdc.orders/bucket-3"
    assert fx.asset.partitions_def.get_tags_for_partition_key(str(key))[
        "dagster/partition"] == "ref.fx_rates/bucket-1|2025-01-07"
    assert ORDERS_COMPACTION.asset.partitions_def.get_partition_keys() == [
        f"cdc.orders/bucket-{b}" for b in range(4)]
    assert ORDERS_COMPACTION.asset.backfill_policy is None  # a backfill: a run per partition


@pytest.mark.spark
def test_compact_one_bucket(spark: Any, orders: FileStoreTable, resources: dict) -> None:
    before = {b: bucket_state(orders, None, b) for b in range(4)}
    assert {s.files for s in before.values()} == {6}
    result = dg.materialize([ORDERS_COMPACTION.asset], partition_key="cdc.orders/bucket-2",
                            resources={k: resources[k] for k in ("catalog", "spark")})
    assert result.success
    md = _md(result, ORDERS_COMPACTION.asset)
    assert md["compact/status"] == "compacted"
    assert_spark_metadata(md, spark)
    assert (md["compact/files_before"], md["compact/sorted_runs_before"]) == (6, 6)
    assert md["compact/files_after"] == md["compact/sorted_runs_after"] == 1
    assert md["compact/bytes_rewritten"] == before[2].bytes
    assert 0 < md["compact/bytes_written"] < before[2].bytes
    assert md["paimon/commit_kind"] == "COMPACT"
    assert (md["paimon/files_deleted"], md["paimon/files_added"]) == (6, 1)
    assert md["paimon/rows_added"] == md["paimon/rows_deleted"] == 0
    # only bucket 2 was touched; the rows are unchanged
    assert [bucket_state(orders, None, b).files for b in range(4)] == [6, 6, 1, 6]
    rows = by_key(orders, "order_id")
    assert len(rows) == 40 and {r["status"] for r in rows.values()} == {"s5"}
    # the snapshot names the run
    [snap] = snapshots_of_run(orders, result.run_id)
    assert str(snap.id) == md["paimon/snapshot_id"] == "7"
    assert snap.commit_user == run_commit_user(result.run_id)
    assert fsck(orders).ok
    # the table's own asset shows the compacted table (its Overview: the latest
    # materialization's metadata), named by the run that made it
    [event] = _table_events(result, ORDERS_COMPACTION.asset)
    assert event.partition is None
    table_md = _md(result, ORDERS_COMPACTION.asset, ORDERS_KEY)
    assert table_md["paimon/snapshot_id"] == "7" and table_md["paimon/commit_kind"] == "COMPACT"
    assert table_md["paimon/live_files"] == 3 * 6 + 1
    assert table_md["paimon/sorted_runs"] == 3 * 6 + 1 and table_md["dagster/row_count"] == 40
    assert table_md["paimon/reported_by"] == (
        f"maintenance/cdc_orders_compaction (run {result.run_id})")
    # nothing left to do in that bucket: no Spark job, no snapshot
    again = dg.materialize([ORDERS_COMPACTION.asset], partition_key="cdc.orders/bucket-2",
                           resources={k: resources[k] for k in ("catalog", "spark")})
    md = _md(again, ORDERS_COMPACTION.asset)
    assert md["compact/status"] == "nothing to compact" and md["paimon/commit_kind"] == "NONE"
    assert _table_events(again, ORDERS_COMPACTION.asset) == []  # no commit, nothing to report
    assert orders.snapshot_manager.latest_snapshot_id() == 7
    # a no-op names the table's latest snapshot (text), no drop to 0; the table's row count
    # and schema belong to the table's asset, not to its compaction
    assert md["paimon/snapshot_id"] == "7" and md["paimon/files_added"] == 0
    assert "dagster/row_count" not in md and "dagster/column_schema" not in md


def test_compaction_schedule_requests_only_buckets_that_need_it(
    orders: FileStoreTable, resources: dict[str, Any]
) -> None:
    orders.compact(buckets=[1])  # bucket 1 is done already
    from assets import defs

    ctx = dg.build_schedule_context(
        resources={"catalog": resources["catalog"]}, repository_def=defs.get_repository_def(),
        scheduled_execution_time=datetime.datetime(2025, 1, 9, 3, 0, tzinfo=datetime.UTC))
    requests = ORDERS_COMPACTION.schedule.evaluate_tick(ctx).run_requests
    assert [r.partition_key for r in requests] == [f"cdc.orders/bucket-{b}" for b in (0, 2, 3)]
    # its runs do what the picker asked for (a run without config compacts fully)
    op = ORDERS_COMPACTION.asset.op.name
    assert {str(r.run_config) for r in requests} == {
        str({"ops": {op: {"config": {"strategy": "minor"}}}})}
    assert [r.run_key for r in requests] == [
        f"2025-01-09T03:00:00+00:00:cdc.orders/bucket-{b}" for b in (0, 2, 3)]
    # a table whose buckets are all compacted: skip
    orders.compact()
    result = ORDERS_COMPACTION.schedule.evaluate_tick(ctx)
    assert not result.run_requests and result.skip_message
    # one more commit: 2 sorted runs per bucket, which a full compaction would merge but the
    # universal picker (what the schedule runs) leaves until the trigger (5)
    commit_orders(orders, order_rows(range(1, 41), "s6"), 8)
    result = ORDERS_COMPACTION.schedule.evaluate_tick(ctx)
    assert not result.run_requests and result.skip_message


def _dynamic_table(catalog: FileSystemCatalog) -> FileStoreTable:
    """``db.dyn``: a primary-key table with dynamic buckets (``bucket = -1``, 4 keys a
    bucket), two commits of ids 0..11: buckets 0, 1, 2, two level-0 files each."""
    import pyarrow as pa

    from paimon_core.schema_builder import Schema

    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table("db.dyn", Schema.of(
        [("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "4", "write-only": "true"}))
    for k in range(2):
        with table.new_write("w") as w:
            w.write_arrow(pa.table({"id": pa.array(range(12), pa.int64()),
                                    "v": [f"v{k}"] * 12}))
            table.new_commit("w").commit(w.prepare_commit(), k)
    return table


def test_dynamic_bucket_partitions_are_the_tables_live_buckets(
        lake_catalog: FileSystemCatalog, resources: dict[str, Any]) -> None:
    """With no bucket layout given (a table declared elsewhere), or a dynamic-bucket one:
    dynamic partitions, which the buckets sensor and the schedule fill with the table's live
    buckets (today's ``buckets: -1`` gave one partition, bucket-0); a restated count the
    table does not have fails the tick naming both."""
    from assets.maintenance import build_compaction

    table = _dynamic_table(lake_catalog)
    assert sorted({b for b in table.inspect.buckets().column("bucket").to_pylist()}) == [0, 1, 2]
    spec = TableSpec("db.dyn", {"options": {}})
    compaction = build_compaction(spec, layout=BucketLayout(-1, True), layout_source="here")
    assert isinstance(compaction.asset.partitions_def, dg.DynamicPartitionsDefinition)
    assert compaction.sensor is not None
    assert compaction.sensor.default_status is dg.DefaultSensorStatus.RUNNING
    catalog = {"catalog": resources["catalog"]}
    keys = [f"db.dyn/bucket-{b}" for b in range(3)]
    # every evaluation context in a with: a context that opens the instance from its ref and is
    # never closed leaves that instance's state storage current for later tests (dagster's
    # set_defs_state_storage), a dead weakref once it is collected
    with dg.instance_for_test() as instance:
        with dg.build_sensor_context(instance=instance, resources=catalog) as sctx:
            result = compaction.sensor(sctx)
        assert isinstance(result, dg.SensorResult)
        [add] = result.dynamic_partitions_requests or ()
        assert add.partitions_def_name == "db_dyn_compaction_buckets"
        assert list(add.partition_keys) == keys
        # the schedule adds them too, then asks the picker (2 sorted runs: below its trigger)
        with dg.build_schedule_context(instance=instance, resources=catalog,
                                       scheduled_execution_time=datetime.datetime.now()) as ctx:
            tick = compaction.schedule.evaluate_tick(ctx)
        assert not tick.run_requests and tick.skip_message
        assert instance.get_dynamic_partitions("db_dyn_compaction_buckets") == keys
        with dg.build_sensor_context(instance=instance, resources=catalog) as sctx:
            again = compaction.sensor(sctx)
        assert isinstance(again, dg.SkipReason)
    # a count restated for a table declared elsewhere, which the table does not have
    restated = build_compaction(spec, layout=BucketLayout(4, None),
                                layout_source="buckets: 4 (defs.yaml:4)")
    assert restated.sensor is None  # static partitions bucket-0..3
    with (dg.instance_for_test() as instance,
          dg.build_schedule_context(instance=instance, resources=catalog) as ctx,
          pytest.raises(dg.DagsterError) as excinfo):
        restated.schedule.evaluate_tick(ctx)
    assert isinstance(excinfo.value.__cause__, SettingsError)
    assert str(excinfo.value.__cause__) == (
        "db.dyn: buckets: 4 (defs.yaml:4) says bucket = 4 (hash-fixed), the table has "
        "bucket = -1 (hash-dynamic)")


def test_compaction_config_defaults_to_the_cli_strategy() -> None:
    """One default for a compaction asset run and ``python -m pipelines.jobs.compact``; the older
    ``full`` spelling still works, a contradiction is an error."""
    from assets.maintenance import CompactConfig
    from paimon_core.cli.compact_cmds import add_strategy_args

    parser = argparse.ArgumentParser()
    add_strategy_args(parser)
    assert CompactConfig().chosen() == parser.parse_args([]).strategy == "full"
    assert CompactConfig(strategy="minor").chosen() == "minor"
    assert CompactConfig(full=False).chosen() == "minor"
    assert CompactConfig(full=True, strategy="full").chosen() == "full"
    with pytest.raises(SettingsError, match="full: true contradicts strategy: minor"):
        CompactConfig(full=True, strategy="minor").chosen()


def test_expiry_of_a_table_not_created_yet_reports_zero(resources: dict[str, Any]) -> None:
    """Its figures are those of no table (prod_demo printed "expired None snapshot(s)" for
    such a table: the materialization had no figures); Spark does not start."""
    res = {k: resources[k] for k in ("catalog", "spark")}
    md = _md(dg.materialize([ORDERS_EXPIRY], resources=res), ORDERS_EXPIRY)
    assert md["expire/status"] == "no table yet" and md["paimon/table"] == "cdc.orders"
    assert md["expire/snapshots_expired"] == md["expire/files_deleted"] == 0
    assert md["expire/bytes_freed"] == md["expire/total_bytes_freed"] == 0


@pytest.mark.spark
def test_expiry_frees_snapshots_and_respects_consumers(
    spark: Any, orders: FileStoreTable, resources: dict[str, Any]
) -> None:
    orders.compact()  # snapshot 7 deletes the level-0 files of 1..6
    for i in range(7, 10):
        commit_orders(orders, order_rows([i], "late"), i + 1)
    sm = orders.snapshot_manager
    assert (sm.earliest_snapshot_id(), sm.latest_snapshot_id()) == (1, 10)
    # a reader that has not read snapshot 5 yet
    ConsumerManager(orders.file_io, orders.path).reset_consumer(DERIVED_CONSUMER_ID,
                                                                Consumer(5))
    res = {k: resources[k] for k in ("catalog", "spark")}
    run = dg.materialize([ORDERS_EXPIRY], resources=res)
    first = _md(run, ORDERS_EXPIRY)
    # the table's asset shows what expiry left
    table_md = _md(run, ORDERS_EXPIRY, ORDERS_KEY)
    assert table_md["paimon/earliest_snapshot"] == "5" and table_md["paimon/snapshot_id"] == "10"
    assert table_md["paimon/snapshots_retained"] == 6
    assert first["expire/expired_ids"] == [1, 2, 3, 4]
    assert first["expire/snapshots_expired"] == 4 and first["expire/earliest"] == "5"
    assert first["expire/retained_before"] == 10 and first["expire/retained_after"] == 6
    assert first["expire/bytes_freed"] > 0
    assert_spark_metadata(first, spark)
    # the reader moved on: retention (num-retained.max = 4) applies in full
    ConsumerManager(orders.file_io, orders.path).reset_consumer(DERIVED_CONSUMER_ID,
                                                                Consumer(11))
    second = _md(dg.materialize([ORDERS_EXPIRY], resources=res), ORDERS_EXPIRY)
    assert second["expire/expired_ids"] == [5, 6]
    assert second["expire/data_files_deleted"] > 0  # the files compaction replaced
    assert second["expire/retained_after"] == 4
    assert (sm.earliest_snapshot_id(), sm.latest_snapshot_id()) == (7, 10)
    assert fsck(orders).ok
    assert sorted(by_key(orders, "order_id")) == list(range(1, 41))


@pytest.mark.spark
def test_batch_overwrite_replaces_exactly_one_partition(
    spark: Any, lake: dict[str, Path], resources: dict[str, Any]
) -> None:
    landing = str(lake["landing"])
    feed = generate(FileIO(landing), landing, customers=10, orders_per_day=10)
    for day in feed.days[:2]:
        result = dg.materialize([fx_rates], partition_key=day, resources=resources)
        md = _md(result, fx_rates)
        assert md["paimon/commit_kind"] == "OVERWRITE"
        assert md["overwrite/partition"] == f"dt={day}" and md["overwrite/rows"] == 5
        assert_spark_metadata(md, spark)
    table = FileSystemCatalog(str(lake["warehouse"])).get_table(FX_RATES.identifier)
    before = table.to_arrow().to_pylist()
    assert sorted({r["dt"] for r in before}) == list(feed.days[:2]) and len(before) == 10
    # a corrected extract for day 1 lands; the day is re-run: only dt=day1 changes
    day1 = lake["landing"] / "ref.fx_rates" / f"dt={feed.days[0]}" / "rates.csv"
    day1.write_text(f"dt,currency,rate_to_eur,source\n{feed.days[0]},EUR,1.000000,fixed\n")
    result = dg.materialize([fx_rates], partition_key=feed.days[0], resources=resources)
    md = _md(result, fx_rates)
    assert (md["paimon/rows_added"], md["paimon/rows_deleted"]) == (1, 5)
    after = table.to_arrow().to_pylist()
    assert [r for r in after if r["dt"] == feed.days[0]] == [
        {"dt": feed.days[0], "currency": "EUR", "rate_to_eur": before[0]["rate_to_eur"]
         .__class__("1.000000"), "source": "fixed"}]
    assert [r for r in after if r["dt"] == feed.days[1]] == [
        r for r in before if r["dt"] == feed.days[1]]
    assert snapshots_of_run(table, result.run_id)[0].commit_kind.value == "OVERWRITE"


def test_a_runs_snapshots_found_under_the_new_and_the_legacy_user(tmp_path: Path) -> None:
    """Runs before issue 29 committed as ``dagster:<run id>``: still the run's snapshots."""
    t = pk_table(tmp_path / "wh")
    rows = pa.table({"pt": ["a"], "id": [1], "v": ["x"]})
    write_rows(t, rows, user="dagster:run-1")  # committed before issue 29
    write_rows(t, rows, user=run_commit_user("run-1"))
    write_rows(t, rows, user=run_commit_user("run-2"))
    assert [s.id for s in snapshots_of_run(t, "run-1")] == [1, 2]
    assert [s.id for s in snapshots_of_run(t, "run-2")] == [3]
