"""The code location loads; its resources (catalog: local | S3, a discriminated union) work
from the environment at run time, including against a real S3 endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from assets.derived import orders_enriched
from assets.resources import LocalStorage, PaimonCatalog, S3Storage, SparkResource
from assets.tables import ORDERS, ORDERS_ENRICHED
from paimon_core.catalog import FileSystemCatalog
from tests.assets.helpers import by_key, commit_orders, order_rows

ASSET_KEYS = {
    "cdc/customers", "cdc/orders", "ref/fx_rates", "mart/orders_enriched",
    *(f"maintenance/{t}_{kind}" for t in ("cdc_customers", "cdc_orders", "ref_fx_rates",
                                          "mart_orders_enriched")
      for kind in ("compaction", "expiry")),
}


@pytest.mark.parametrize("module", ["assets", "assets.production"])
def test_definitions_load(module: str) -> None:
    import importlib

    defs = importlib.import_module(module).defs
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == ASSET_KEYS
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert len(checks) == 16
    assert ("cdc/orders", "fsck_clean") in checks and ("ref/fx_rates", "freshness") in checks
    repo = defs.get_repository_def()
    assert {s.name for s in repo.sensor_defs} == {
        "cdc_orders_snapshot_sensor", "cdc_landing_sensor",
        *(f"{t}_state_sensor" for t in ("cdc_customers", "cdc_orders", "ref_fx_rates",
                                        "mart_orders_enriched"))}
    assert all(repo.get_sensor_def(f"{t}_state_sensor").default_status
               is dg.DefaultSensorStatus.RUNNING for t in ("cdc_orders", "ref_fx_rates"))
    assert {s.name for s in repo.schedule_defs} == {
        "cdc_ingest_job_schedule", "fx_rates_overwrite_job_schedule", "expiry_schedule",
        *(f"{t}_{kind}_schedule" for t in ("cdc_customers", "cdc_orders", "ref_fx_rates",
                                           "mart_orders_enriched")
          for kind in ("compaction", "checks")),  # checks: freshness every 15 min
    }
    assert {"cdc_ingest_job", "mart_orders_enriched_job", "expiry_job",
            "cdc_orders_compaction_job"} <= set(repo.job_names)
    assert set(defs.resources) == {"catalog", "landing", "spark"}


def test_resource_sets_read_the_environment_at_run_time(
    lake: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from assets import defs

    cat = FileSystemCatalog(str(lake["warehouse"]))
    commit_orders(ORDERS.ensure(cat), order_rows([1, 2], "new"), 1)
    monkeypatch.setenv("PAIMON_WAREHOUSE", str(lake["warehouse"]))
    monkeypatch.setenv("PAIMON_LANDING", str(lake["landing"]))
    result = defs.resolve_job_def("mart_orders_enriched_job").execute_in_process()
    assert result.success
    assert result.dagster_run.tags["paimon/derived"] == "mart.orders_enriched"
    assert sorted(by_key(cat.get_table(ORDERS_ENRICHED.identifier), "order_id")) == [1, 2]


def test_storage_is_a_discriminated_union() -> None:
    local = PaimonCatalog(warehouse="/data/wh")
    assert isinstance(local.storage, LocalStorage) and local.storage_options() == {}
    s3 = PaimonCatalog(warehouse="s3://lake/wh", storage=S3Storage(
        endpoint="http://minio:9000", region="us-east-1", access_key="a", secret_key="b",
        max_attempts=3))
    assert s3.storage_options() == {
        "s3.endpoint": "http://minio:9000", "s3.region": "us-east-1", "s3.access-key": "a",
        "s3.secret-key": "b", "s3.max-attempts": "3"}
    assert s3.settings().storage_options == s3.storage_options()

    # the same union from run config: the discriminator selects the variant
    @dg.asset
    def probe(catalog: PaimonCatalog) -> dict[str, Any]:
        return {"kind": catalog.storage.kind, "options": catalog.storage_options()}

    result = dg.materialize(
        [probe], resources={"catalog": PaimonCatalog.configure_at_launch()},
        run_config={"resources": {"catalog": {"config": {
            "warehouse": "s3://lake/wh", "storage": {"s3": {"endpoint": "http://x:9000"}}}}}},
    )
    assert result.output_for_node("probe") == {"kind": "s3",
                                               "options": {"s3.endpoint": "http://x:9000"}}
    spark = SparkResource(master="spark://m:7077", conf={"a": "1"}, conf_pairs="b=2;a=3")
    assert spark.settings().conf == {"a": "3", "b": "2"}
    assert spark.settings().master == "spark://m:7077"


@pytest.mark.s3
def test_derived_asset_on_s3(s3_root: tuple[str, dict[str, str]]) -> None:
    root, opts = s3_root
    catalog = PaimonCatalog(warehouse=f"{root}/warehouse", storage=S3Storage(
        endpoint=opts["s3.endpoint"], region=opts["s3.region"],
        access_key=opts["s3.access-key"], secret_key=opts["s3.secret-key"]))
    source = ORDERS.ensure(catalog.load())
    commit_orders(source, order_rows([1, 2, 3], "new"), 1)
    commit_orders(source, order_rows([2], "new", "-D"), 2)
    result = dg.materialize([orders_enriched], resources={"catalog": catalog})
    assert result.success
    target = catalog.table(ORDERS_ENRICHED.identifier)
    assert sorted(by_key(target, "order_id")) == [1, 3]
    assert target.latest_snapshot().properties["dagster.run-id"] == result.run_id


def test_table_state_sensor_reports_what_other_writers_commit(lake: dict[str, Path]) -> None:
    """The demo's ``cdc_orders_state_sensor`` (on by default): a snapshot the table asset's
    latest materialization reports is not reported twice; one another writer committed is
    reported on ``cdc/orders`` -- as a materialization, what the asset Overview shows -- with
    the table's state as paimon_core reads it; an unchanged table emits nothing."""
    from assets import defs
    from assets.metadata import REPORTED_BY, commit_properties, snapshot_metadata
    from paimon_core import CommitOptions

    sensor = defs.get_repository_def().get_sensor_def("cdc_orders_state_sensor")
    cat = FileSystemCatalog(str(lake["warehouse"]))
    orders = ORDERS.ensure(cat)
    resources = {"catalog": PaimonCatalog(warehouse=str(lake["warehouse"]))}
    key = dg.AssetKey(["cdc", "orders"])
    instance = dg.DagsterInstance.ephemeral()

    def tick(cursor: str | None) -> dg.SensorResult:
        result = sensor(dg.build_sensor_context(cursor=cursor, resources=resources,
                                                instance=instance))
        assert isinstance(result, dg.SensorResult)
        return result

    # what a materialization of cdc/orders commits (its run and asset in the snapshot) and
    # reports (its metadata in the instance)
    builder = orders.new_batch_write_builder("dagster-run", options=CommitOptions(
        properties=commit_properties("run-1", "cdc/orders")))
    with builder.new_write() as write:
        write.write_arrow(order_rows([1, 2, 3], "new").drop_columns(["_k"]))
        messages = write.prepare_commit()
    builder.new_commit().commit(messages)
    instance.report_runless_asset_event(dg.AssetMaterialization(
        key, metadata=snapshot_metadata(orders, [1])))
    first = tick(None)
    assert first.asset_events == []  # the materialization reported it
    commit_orders(orders, order_rows([3], "new", "-D"), 2)  # another writer
    second = tick(first.cursor)
    [event] = second.asset_events
    assert isinstance(event, dg.AssetMaterialization) and event.asset_key == key
    assert event.partition is None  # the whole table's state
    md = {k: getattr(v, "value", v) for k, v in event.metadata.items()}
    assert md["dagster/row_count"] == orders.to_arrow().num_rows == 2
    assert md["paimon/snapshot_id"] == str(orders.latest_snapshot().id) == "2"
    assert orders.latest_snapshot().commit_user in md[REPORTED_BY]
    assert tick(second.cursor).asset_events == []
