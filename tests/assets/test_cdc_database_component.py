"""``PaimonCdcDatabase`` from its YAML attributes, without runs: the tables of its state are
the landed ones (and those the sync created earlier), each one asset of one multi-asset with
its checks and the state sensor; bad attributes are typed errors naming the attribute; the
landing sensor requests one run per new batch. (Runs, the UI and the Reload:
``test_cdc_database.py``.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster.components.core.component_tree import ComponentTree

from assets.components import PaimonCdcDatabase, PaimonResources
from assets.components.database_sync import DatabaseSource, DatabaseTables, discover_database_tables
from assets.labels import SettingsError
from assets.resources import LandingZone, PaimonCatalog
from paimon_core import FileSystemCatalog, Schema
from tests.assets.processes import REPO

CORPUS = REPO / "tests" / "pipelines" / "cdc_corpus" / "database"

YAML = """
database: ods
landing: inventory
format: canal-json
excluding_tables: "orders"
table_prefix: src_
key_prefix: [lake]
asset: {group: feeds, owners: [team:data]}
landing_sensor: {minimum_interval_seconds: 5}
"""


def _land(landing: Path, batch: int, name: str) -> None:
    feed = landing / "inventory" / f"batch-{batch:06d}"
    feed.mkdir(parents=True)
    (feed / "part-0.jsonl").write_text((CORPUS / name).read_text())


def _defs(component: PaimonCdcDatabase, lake: dict[str, Path]) -> dg.Definitions:
    """The component's definitions from its state as a load of the code location writes it
    (``write_state_to_path`` over the lake's landing and warehouse)."""
    state = lake["warehouse"].parent / "state.json"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PAIMON_LANDING", str(lake["landing"]))
        mp.setenv("PAIMON_WAREHOUSE", str(lake["warehouse"]))
        component.write_state_to_path(state)
    return component.build_defs_from_state(ComponentTree.for_test().load_context, state)


def _asset(defs: dg.Definitions) -> dg.AssetsDefinition:
    [asset] = [a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition)]
    return asset


def test_landed_tables_are_assets_with_checks(lake: dict[str, Path]) -> None:
    _land(lake["landing"], 1, "canal_inventory_1.jsonl")
    defs = _defs(PaimonCdcDatabase.resolve_from_yaml(YAML), lake)
    asset = _asset(defs)
    # canal_inventory_1 names products, customers, orders and (its DDL) addresses; orders
    # is excluded; the key is [key_prefix, target table name]
    keys = {k.to_user_string() for k in asset.keys}
    assert keys == {"lake/src_addresses", "lake/src_customers", "lake/src_products"}
    specs = {s.key.to_user_string(): s for s in asset.specs}
    assert specs["lake/src_products"].metadata["paimon/table"] == "ods.src_products"
    assert specs["lake/src_products"].metadata["cdc/source_table"] == "inventory.products"
    assert {s.group_name for s in specs.values()} == {"feeds"}
    assert all(s.owners == ["team:data"] for s in specs.values())
    assert asset.can_subset and asset.op.pool == "paimon-spark"
    checks = {(c.asset_key.to_user_string(), c.name) for c in defs.asset_checks or ()
              for c in c.check_specs}
    assert ("lake/src_products", "fsck_clean") in checks and len(checks) == 3 * 4
    assert {j.name for j in defs.jobs or ()} == {"ods_sync_job", "ods_database_checks_job"}
    assert {s.name for s in defs.sensors or ()} == {
        "ods_database_landing_sensor", "ods_database_state_sensor"}
    resources = dg.build_defs_for_component(PaimonResources())
    dg.Definitions.validate_loadable(dg.Definitions.merge(defs, resources))


def test_tables_the_sync_created_earlier_stay_assets(lake: dict[str, Path]) -> None:
    """A landing cleaned after its batches were synced: the warehouse database's tables
    with the prefix are the feed's; a table without it (another writer's) is not."""
    cat = FileSystemCatalog(str(lake["warehouse"]))
    cat.create_database("ods")
    for name in ("src_products", "src_orders", "other"):
        cat.create_table(f"ods.{name}", Schema.of([("id", "BIGINT NOT NULL")],
                                                  primary_keys=["id"]))
    source = DatabaseSource(database="ods", landing="inventory", table_prefix="src_",
                            excluding_tables="orders")
    tables = discover_database_tables(source, LandingZone(root=str(lake["landing"])),
                                      PaimonCatalog(warehouse=str(lake["warehouse"])).load())
    assert [(t.source, t.target) for t in tables.tables] == [("products", "ods.src_products")]
    assert DatabaseTables.from_json(tables.to_json()) == tables


def test_no_table_yet_builds_no_asset(lake: dict[str, Path]) -> None:
    defs = _defs(PaimonCdcDatabase.resolve_from_yaml(YAML), lake)
    assert not defs.assets and not defs.jobs and not defs.sensors


@pytest.mark.parametrize(("change", "named"), [
    ({"format": "debezium-avro"}, "format 'debezium-avro'"),
    ({"including_tables": "prod("}, "including_tables: 'prod('"),
    ({"type_mapping": ["to-lowercase"]}, "type_mapping: 'to-lowercase'"),
    ({"metadata_columns": ["op_time"]}, "metadata_columns: 'op_time' is not supported"),
    ({"database": "a.b"}, "database 'a.b'"),
])
def test_bad_attributes_are_typed_errors(change: dict[str, Any], named: str) -> None:
    import yaml

    attrs = {**yaml.safe_load(YAML), **change}
    with pytest.raises(SettingsError, match=f"^{re.escape(named)}"):
        PaimonCdcDatabase.resolve_from_yaml(yaml.safe_dump(attrs)).source()


def test_op_ts_metadata_column_reaches_the_sync() -> None:
    import yaml

    attrs = {**yaml.safe_load(YAML), "metadata_columns": ["op_ts", "table_name"]}
    opts = PaimonCdcDatabase.resolve_from_yaml(yaml.safe_dump(attrs)).source().options()
    assert opts.create.metadata_columns == ("op_ts", "table_name")


def test_landing_sensor_requests_a_run_per_new_batch(lake: dict[str, Path]) -> None:
    _land(lake["landing"], 1, "canal_inventory_1.jsonl")
    defs = _defs(PaimonCdcDatabase.resolve_from_yaml(YAML), lake)
    [sensor] = [s for s in defs.sensors or () if s.name == "ods_database_landing_sensor"]
    landing = LandingZone(root=str(lake["landing"]))

    def tick() -> list[str]:
        with dg.build_sensor_context(resources={"landing": landing}) as ctx:
            result = sensor(ctx)
        return [r.run_key for r in result.run_requests or ()]

    [first] = tick()
    assert tick() == [first]  # the same batches: the same run key (one run)
    _land(lake["landing"], 2, "canal_inventory_2.jsonl")
    [second] = tick()
    assert second != first and second.startswith("batches-2-")


def test_refresh_without_the_environment_names_the_variable(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PAIMON_LANDING", raising=False)
    monkeypatch.setenv("PAIMON_WAREHOUSE", str(tmp_path))
    with pytest.raises(SettingsError, match=r"^PaimonCdcDatabase: the tables' refresh reads "
                       r"the landing zone: environment variable PAIMON_LANDING is not set$"):
        PaimonCdcDatabase.resolve_from_yaml(YAML).write_state_to_path(tmp_path / "state")


def test_scaffolded_attributes_resolve() -> None:
    """What ``dg scaffold defs assets.components.PaimonCdcDatabase`` writes is valid."""
    import yaml

    from assets.components.tables import TEMPLATES

    text = yaml.safe_dump(TEMPLATES["PaimonCdcDatabase"])
    source = PaimonCdcDatabase.resolve_from_yaml(text).source()
    assert (source.database, source.landing, source.format) == ("ods", "inventory", "canal-json")


#: a canal event of a table without a primary key (``pkNames`` null), in the shape of the
#: corpus' events: the sync cannot create its table
NO_KEY = ('{"data":[{"line":"started"}],"database":"inventory","es":1589373530000,"id":20,'
          '"isDdl":false,"mysqlType":{"line":"VARCHAR(255)"},"old":null,"pkNames":null,'
          '"sql":"","sqlType":{"line":12},"table":"logs","ts":1589373530477,"type":"INSERT"}')


@pytest.mark.spark
def test_a_selection_syncs_its_tables_and_a_refused_table_fails_the_run(
        spark: Any, lake: dict[str, Path], resources: dict[str, Any]) -> None:
    """"Materialize selected" syncs only the selected tables; a table the sync refuses (no
    primary key) fails the run naming it, after the other tables' materializations."""
    feed = lake["landing"] / "inventory" / "batch-000001"
    feed.mkdir(parents=True)
    lines = (CORPUS / "canal_inventory_1.jsonl").read_text().splitlines()[:8]
    (feed / "part-0.jsonl").write_text("\n".join([*lines, NO_KEY]) + "\n")
    staging = lake["landing"].parent / "staging"  # out of the landing: staging_dir
    defs = _defs(PaimonCdcDatabase.resolve_from_yaml(
        f"database: ods\nlanding: inventory\nstaging_dir: {staging}"), lake)
    asset = _asset(defs)
    keys = {k.to_user_string() for k in asset.keys}
    assert keys == {"ods/customers", "ods/logs", "ods/orders", "ods/products"}
    cat = FileSystemCatalog(str(lake["warehouse"]))
    one = dg.materialize([asset], resources=resources, selection="ods/products")
    assert one.success
    assert [m.asset_key.to_user_string()
            for m in one.asset_materializations_for_node(asset.op.name)] == ["ods/products"]
    assert cat.list_tables("ods") == ["products"]
    every = dg.materialize([asset], resources=resources, raise_on_error=False)
    assert not every.success
    done = {m.asset_key.to_user_string()
            for m in every.asset_materializations_for_node(asset.op.name)}
    assert done == {"ods/customers", "ods/orders", "ods/products"}
    [failure] = [e for e in every.all_events if e.is_step_failure]
    message = failure.step_failure_data.error.message
    assert "tables refused by the sync: ods.logs: batch 1: " in message, message
    assert "cannot create table ods.logs: its events carry no primary key" in message
    assert sorted(cat.list_tables("ods")) == ["customers", "orders", "products"]
    # the refused table's batch stays staged for the re-run: in staging_dir, not the landing
    assert (staging / "batch-000001").is_dir()
    assert sorted(p.name for p in (lake["landing"] / "inventory").iterdir()) == ["batch-000001"]
