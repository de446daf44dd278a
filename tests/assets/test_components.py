"""The components of ``assets.components`` from their YAML attributes (no runs): what they
build follows the attributes (keys, groups, owners, tags, kinds, descriptions, partitions,
job / schedule / sensor names), bad attributes are typed errors naming the setting, and the
demo's YAML builds what the demo's tables say (``assets.tables`` reads the same files)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pytest
import yaml

from assets.components import (
    PaimonCdcTable,
    PaimonDerivedTable,
    PaimonOverwriteTable,
    PaimonResources,
    PaimonTableMaintenance,
)
from assets.labels import SettingsError
from assets.tables import ALL_TABLES, DEMO_DEFS

CDC = """
table: shop.orders
columns: [{name: id, type: BIGINT}, {name: status, type: STRING}, {name: lsn, type: BIGINT}]
primary_key: [id]
options: {bucket: 3, sequence.field: lsn, write-only: true}
asset:
  key: [lake, orders]
  group: shop
  owners: [team:data]
  tags: {tier: gold}
  kinds: [paimon, postgres]
  description: Orders of the shop.
source: {connector: mysql, format: debezium-json, partitioning: hourly,
         start: "2025-02-01", layout: "cdc/{table}/hour={partition}"}
schedule: {cron: "5 * * * *"}
"""


def build(cls: Any, text: str) -> dg.Definitions:
    return dg.build_defs_for_component(cls.resolve_from_yaml(text))


def validate(defs: dg.Definitions) -> None:
    """The definitions load, with the resources component's resources."""
    resources = dg.build_defs_for_component(PaimonResources())
    dg.Definitions.validate_loadable(dg.Definitions.merge(defs, resources))


def only_asset(defs: dg.Definitions) -> dg.AssetsDefinition:
    [asset] = [a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition)]
    return asset


def sensors(defs: dg.Definitions) -> dict[str, dg.SensorDefinition]:
    """The component's sensors by name, but for the table's state sensor (every table
    component has one: :func:`test_every_table_component_has_a_state_sensor`)."""
    return {s.name: s for s in defs.sensors or () if not s.name.endswith("_state_sensor")}


def test_cdc_table_follows_its_attributes() -> None:
    defs = build(PaimonCdcTable, CDC)
    asset = only_asset(defs)
    key = dg.AssetKey(["lake", "orders"])
    attrs = yaml.safe_load(CDC)
    assert asset.key == key
    spec = asset.specs_by_key[key]
    assert spec.group_name == attrs["asset"]["group"]
    assert list(spec.owners) == attrs["asset"]["owners"]
    assert {k: v for k, v in spec.tags.items() if not k.startswith("dagster/")} == (
        attrs["asset"]["tags"])
    assert spec.kinds == set(attrs["asset"]["kinds"])
    assert spec.description == attrs["asset"]["description"]
    parts = asset.partitions_def
    assert isinstance(parts, dg.HourlyPartitionsDefinition)
    assert parts.get_first_partition_key() == "2025-02-01-00:00"
    # the four checks target the configured key; the job and its schedule are named after
    # the table
    checks = {k.name for c in defs.asset_checks or () for k in c.check_keys
              if k.asset_key == key}
    assert checks == {"fsck_clean", "small_files", "snapshot_retention", "freshness"}
    # (and the checks' own job and schedule: freshness every 15 min)
    assert sorted(j.name for j in defs.jobs or ()) == ["shop_orders_checks_job",
                                                       "shop_orders_ingest_job"]
    [schedule] = [s for s in defs.schedules or () if s.name != "shop_orders_checks_schedule"]
    assert schedule.name == "shop_orders_ingest_job_schedule"
    assert schedule.cron_schedule == attrs["schedule"]["cron"]
    validate(defs)


@pytest.mark.parametrize(("change", "named"), [
    ({"source": {"format": "xml"}}, "format"),
    ({"source": {"connector": "cobol"}}, "connector"),
    ({"source": {"layout": "{table}/all"}}, "placeholder"),
    ({"table": "orders"}, "database.table"),
    ({"columns": [{"name": "id", "type": "NOT_A_TYPE"}]}, "schema"),
    # option values are checked when the definitions load, as CREATE / ALTER check them
    ({"options": {"bucket": 3, "write-only": "maybe"}},
     r"shop\.orders: invalid schema: option write-only='maybe' is not a boolean"),
    ({"options": {"bucket": 3, "target-file-size": "12 apples"}},
     r"option target-file-size='12 apples' is not a memory size"),
])
def test_bad_attributes_are_typed_errors(change: dict[str, Any], named: str) -> None:
    attrs = {**yaml.safe_load(CDC), **change}
    with pytest.raises(SettingsError, match=named):
        build(PaimonCdcTable, yaml.safe_dump(attrs))


def test_overwrite_partitions_static_and_dynamic() -> None:
    base = {"table": "ref.rates", "columns": [{"name": "k", "type": "STRING"},
                                              {"name": "v", "type": "DOUBLE"}],
            "partition_by": ["k"]}
    static = only_asset(build(PaimonOverwriteTable, yaml.safe_dump(
        {**base, "partitions": {"kind": "static", "values": ["eu", "us"]}})))
    assert static.partitions_def is not None
    assert static.partitions_def.get_partition_keys() == ["eu", "us"]
    dynamic = only_asset(build(PaimonOverwriteTable, yaml.safe_dump(
        {**base, "partitions": {"kind": "dynamic", "name": "regions"}})))
    assert isinstance(dynamic.partitions_def, dg.DynamicPartitionsDefinition)
    assert dynamic.partitions_def.name == "regions"
    with pytest.raises(SettingsError, match="values"):
        build(PaimonOverwriteTable, yaml.safe_dump({**base, "partitions": {"kind": "static"}}))


def test_derived_table_needs_a_loadable_transform() -> None:
    attrs = {"table": "mart.flags", "source": "shop.orders", "primary_key": ["id"],
             "columns": [{"name": "id", "type": "BIGINT"}, {"name": "f", "type": "BOOLEAN"}],
             "transform": "assets.derived:enrich_orders", "sensor": {"name": "s"}}
    defs = build(PaimonDerivedTable, yaml.safe_dump(attrs))
    assert list(sensors(defs)) == ["s"]
    assert only_asset(defs).asset_deps[dg.AssetKey(["mart", "flags"])] == {
        dg.AssetKey(["shop", "orders"])}
    for bad in ("assets.derived:no_such_function", "no_such_module:fn", "nothing"):
        with pytest.raises(SettingsError, match="transform"):
            build(PaimonDerivedTable, yaml.safe_dump({**attrs, "transform": bad}))


def test_maintenance_of_a_table_written_elsewhere() -> None:
    defs = build(PaimonTableMaintenance, yaml.safe_dump({
        "table": "java.items", "buckets": 3, "external": True,
        "compaction": {"cron": "*/10 * * * *"}, "expiry": {"cron": None}}))
    keys = {a.key.to_user_string() for a in defs.assets or ()}  # type: ignore[union-attr]
    assert keys == {"java/items", "maintenance/java_items_compaction",
                    "maintenance/java_items_expiry"}
    compaction = next(a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition)
                      and a.key.path[-1] == "java_items_compaction")
    assert compaction.partitions_def is not None
    assert compaction.partitions_def.get_partition_keys() == [
        f"java.items/bucket-{b}" for b in range(3)]
    assert {s.name for s in defs.schedules or ()} == {"java_items_compaction_schedule",
                                                      "java_items_checks_schedule"}
    validate(defs)


def test_every_table_component_has_a_state_sensor() -> None:
    """The table's state sensor (on by default, on the table's asset key), tunable or
    dropped by ``state_sensor``; maintenance brings one only with the table it declares
    (``external``) or when asked."""
    def state(defs: dg.Definitions) -> list[tuple[str, Any, int]]:
        return [(s.name, s.default_status, s.minimum_interval_seconds or 0)
                for s in defs.sensors or () if s.name.endswith("_state_sensor")]

    running, stopped = dg.DefaultSensorStatus.RUNNING, dg.DefaultSensorStatus.STOPPED
    assert state(build(PaimonCdcTable, CDC)) == [("shop_orders_state_sensor", running, 30)]
    tuned = {**yaml.safe_load(CDC), "state_sensor": {"minimum_interval_seconds": 90,
                                                     "running": False}}
    assert state(build(PaimonCdcTable, yaml.safe_dump(tuned))) == [
        ("shop_orders_state_sensor", stopped, 90)]
    assert state(build(PaimonCdcTable, yaml.safe_dump(
        {**yaml.safe_load(CDC), "state_sensor": None}))) == []
    derived = {"table": "mart.flags", "source": "shop.orders", "primary_key": ["id"],
               "columns": [{"name": "id", "type": "BIGINT"}],
               "transform": "assets.derived:enrich_orders"}
    assert state(build(PaimonDerivedTable, yaml.safe_dump(derived))) == [
        ("mart_flags_state_sensor", running, 30)]
    overwrite = {"table": "ref.rates", "columns": [{"name": "k", "type": "STRING"},
                                                   {"name": "v", "type": "DOUBLE"}],
                 "partition_by": ["k"], "state_sensor": {"name": "rates_state_sensor"}}
    assert state(build(PaimonOverwriteTable, yaml.safe_dump(overwrite))) == [
        ("rates_state_sensor", running, 30)]
    maintenance = {"table": "java.items"}
    assert state(build(PaimonTableMaintenance, yaml.safe_dump(maintenance))) == []
    assert state(build(PaimonTableMaintenance, yaml.safe_dump(
        {**maintenance, "external": True}))) == [("java_items_state_sensor", running, 30)]
    assert state(build(PaimonTableMaintenance, yaml.safe_dump(
        {**maintenance, "state_sensor": {}}))) == [("java_items_state_sensor", running, 30)]


def test_state_sensor_reports_on_the_configured_asset_key(lake: dict[str, Any]) -> None:
    """A commit of another engine reaches the component's asset (``asset.key``)."""
    from assets.resources import PaimonCatalog
    from paimon_core import FileSystemCatalog, Schema, parse_sql_type
    from tests.tables import write_rows

    [sensor] = [s for s in build(PaimonCdcTable, CDC).sensors or ()
                if s.name == "shop_orders_state_sensor"]
    cat = FileSystemCatalog(str(lake["warehouse"]))
    table = cat.create_table("shop.orders", Schema.of(
        [(n, parse_sql_type(t)) for n, t in (("id", "BIGINT NOT NULL"), ("status", "STRING"),
                                             ("lsn", "BIGINT"))],
        primary_keys=["id"], options={"bucket": "3"}))
    write_rows(table, pa.table({"id": [1, 2], "status": ["a", "b"], "lsn": [1, 2]}))
    ctx = dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources={
        "catalog": PaimonCatalog(warehouse=str(lake["warehouse"]))})
    result = sensor(ctx)
    assert isinstance(result, dg.SensorResult)
    [event] = result.asset_events or ()
    assert event.asset_key == dg.AssetKey(["lake", "orders"])
    assert event.metadata["dagster/row_count"].value == 2


def test_demo_tables_are_the_demo_yaml() -> None:
    declared = {}
    for path in sorted(DEMO_DEFS.rglob("defs.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            attrs = doc["attributes"]
            if "columns" in attrs:
                declared[attrs["table"]] = attrs
    assert {t.identifier for t in ALL_TABLES} == set(declared)
    for spec in ALL_TABLES:
        attrs = declared[spec.identifier]
        assert [f["name"] for f in spec.schema["fields"]] == [
            c["name"] for c in attrs["columns"]]
        assert spec.table_schema().options["bucket"] == str(attrs["options"]["bucket"])


def test_overwrite_from_an_upstream_asset(lake: dict[str, Any]) -> None:
    """An upstream asset's output replaces the partition (static INSERT OVERWRITE): the
    table holds exactly each partition's last output, the other partitions untouched."""
    from assets.resources import PaimonCatalog
    from paimon_core import FileSystemCatalog

    parts = dg.StaticPartitionsDefinition(["eu", "us"])
    outputs = {"eu": [("eu", 1.0), ("eu", 2.0)], "us": [("us", 3.0)]}

    @dg.asset(key=["raw", "rates"], partitions_def=parts)
    def raw_rates(context) -> pa.Table:  # type: ignore[no-untyped-def]
        rows = outputs[context.partition_key]
        return pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows]})

    defs = build(PaimonOverwriteTable, yaml.safe_dump({
        "table": "ref.rates", "columns": [{"name": "k", "type": "STRING"},
                                          {"name": "v", "type": "DOUBLE"}],
        "partition_by": ["k"], "partitions": {"kind": "static", "values": ["eu", "us"]},
        "upstream": ["raw", "rates"]}))
    target = only_asset(defs)
    resources = {"catalog": PaimonCatalog(warehouse=str(lake["warehouse"])),
                 "io_manager": dg.FilesystemIOManager(base_dir=str(lake["landing"]))}
    for key in ("eu", "us"):
        assert dg.materialize([raw_rates, target], partition_key=key,
                              resources=resources).success
    outputs["eu"] = [("eu", 5.0)]  # a corrected output replaces the partition
    assert dg.materialize([raw_rates, target], partition_key="eu", resources=resources).success
    got = FileSystemCatalog(str(lake["warehouse"])).get_table("ref.rates").to_arrow()
    assert sorted(zip(got["k"].to_pylist(), got["v"].to_pylist())) == sorted(
        r for rows in outputs.values() for r in rows)


def test_landing_sensor_requests_each_landed_partition(lake: dict[str, Any]) -> None:
    from assets.resources import LandingZone

    attrs = {**yaml.safe_load(CDC), "landing_sensor": {"name": "orders_landed"}}
    defs = build(PaimonCdcTable, yaml.safe_dump(attrs))
    [sensor] = sensors(defs).values()
    assert sensor.name == "orders_landed"
    root = Path(lake["landing"])
    hours = {"2025-02-01-03:00": True, "2025-02-01-04:00": False, "2025-01-31-23:00": True}
    for hour, with_file in hours.items():  # before the start, or empty: not requested
        d = root / "cdc" / "shop.orders" / f"hour={hour}"
        d.mkdir(parents=True)
        if with_file:
            (d / "part-0.json").write_text("{}\n")
    (root / "cdc" / "shop.orders" / "hour=2025-02-01-05:00" / ".hidden").parent.mkdir()
    ctx = dg.build_sensor_context(resources={"landing": LandingZone(root=str(root))})
    result = sensor(ctx)
    assert isinstance(result, dg.SensorResult)
    expected = [h for h, with_file in hours.items() if with_file and h >= "2025-02-01"]
    assert [r.partition_key for r in result.run_requests or ()] == expected
    assert [r.run_key for r in result.run_requests or ()] == expected


LANDED = """
table: shop.orders
columns: [{name: id, type: BIGINT}, {name: status, type: STRING}, {name: lsn, type: BIGINT}]
primary_key: [id]
source: {start: "2025-01-01", partition_keys: landed}
landing_sensor: {}
"""


def test_landed_partitions_are_the_landed_days(lake: dict[str, Any]) -> None:
    """``partition_keys: landed``: the partitions are the days whose events landed (the
    sensor adds them), not every calendar day since ``start``, so the UI's "Missing" counts
    landed days not ingested yet; keys that are no calendar day are ignored."""
    from assets.resources import LandingZone

    defs = build(PaimonCdcTable, LANDED)
    validate(defs)
    asset = only_asset(defs)
    parts = asset.partitions_def
    assert isinstance(parts, dg.DynamicPartitionsDefinition)
    assert parts.name == "shop_orders_landed"
    by_name = sensors(defs)
    assert set(by_name) == {"shop_orders_landing_sensor", "shop_orders_landed_partitions_sensor"}
    sensor = by_name["shop_orders_landing_sensor"]
    # the partitions' own sensor ships running: a day landed while the landing sensor is
    # stopped still becomes a partition (Missing, backfillable); it requests no run
    registrar = by_name["shop_orders_landed_partitions_sensor"]
    assert registrar.default_status is dg.DefaultSensorStatus.RUNNING
    assert sensor.default_status is dg.DefaultSensorStatus.RUNNING
    root = Path(lake["landing"]) / "shop.orders"
    landed = {"2025-01-03": True, "2025-01-09": True, "2025-01-05": False,  # empty: no
              "2024-12-31": True, "garbage": True}  # before start / no day: ignored
    for day, with_file in landed.items():
        (root / f"dt={day}").mkdir(parents=True)
        if with_file:
            (root / f"dt={day}" / "part-0.json").write_text("{}\n")
    expected = ["2025-01-03", "2025-01-09"]
    with dg.instance_for_test() as instance:
        def tick() -> dg.SensorResult:
            ctx = dg.build_sensor_context(instance=instance, resources={
                "landing": LandingZone(root=str(lake["landing"]))})
            result = sensor(ctx)
            assert isinstance(result, dg.SensorResult)
            assert [r.partition_key for r in result.run_requests or ()] == expected
            return result

        [add] = tick().dynamic_partitions_requests or ()
        assert isinstance(add, dg.AddDynamicPartitionsRequest)
        assert (add.partitions_def_name, list(add.partition_keys)) == (parts.name, expected)
        instance.add_dynamic_partitions(parts.name, list(add.partition_keys))
        assert parts.get_partition_keys(dynamic_partitions_store=instance) == expected
        # known keys are not added again; a newly landed day is
        assert not tick().dynamic_partitions_requests
        (root / "dt=2025-01-10").mkdir()
        (root / "dt=2025-01-10" / "part-0.json").write_text("{}\n")
        expected.append("2025-01-10")
        [add] = tick().dynamic_partitions_requests or ()
        assert list(add.partition_keys) == ["2025-01-10"]
        (root / "dt=2025-01-11").mkdir()
        (root / "dt=2025-01-11" / "part-0.json").write_text("{}\n")
        ctx = dg.build_sensor_context(instance=instance, resources={
            "landing": LandingZone(root=str(lake["landing"]))})
        result = registrar(ctx)
        assert isinstance(result, dg.SensorResult) and not result.run_requests
        [add] = result.dynamic_partitions_requests or ()
        assert list(add.partition_keys) == ["2025-01-10", "2025-01-11"]


@pytest.mark.parametrize(("change", "named"), [
    ({"landing_sensor": None}, "declare landing_sensor"),
    ({"schedule": {"cron": "0 1 * * *"}}, "no schedule"),
    ({"source": {"partition_keys": "landed", "partitioning": "none"}}, "daily or hourly"),
])
def test_landed_partitions_need_the_sensor(change: dict[str, Any], named: str) -> None:
    attrs = {**yaml.safe_load(LANDED), **change}
    with pytest.raises(SettingsError, match=named):
        build(PaimonCdcTable, yaml.safe_dump(attrs))


@pytest.mark.parametrize("cls", [PaimonCdcTable, PaimonOverwriteTable, PaimonDerivedTable,
                                 PaimonTableMaintenance, PaimonResources])
def test_scaffolded_attributes_resolve(cls: Any) -> None:
    """What ``dg scaffold defs`` writes is a valid component (the derived table's example
    transform aside: it names the user's module)."""
    from assets.components.tables import TEMPLATES

    attrs = dict(TEMPLATES[cls.__name__])
    if cls is PaimonDerivedTable:
        attrs["transform"] = "assets.derived:enrich_orders"
    defs = build(cls, yaml.safe_dump(attrs))
    if cls is PaimonResources:
        dg.Definitions.validate_loadable(defs)
    else:
        validate(defs)


# ------------------------------------------------------------------------------ in a project
PROJECT_CDC = """\
type: assets.components.PaimonCdcTable
attributes:
  table: shop.customers
  columns: [{name: id, type: BIGINT}, {name: status, type: STRING}, {name: lsn, type: BIGINT}]
  primary_key: [id]
  options: {bucket: 2, sequence.field: lsn}
"""
PROJECT_DERIVED = """\
type: assets.components.PaimonDerivedTable
attributes:
  table: mart.flags
  columns: [{name: id, type: BIGINT}, {name: f, type: BOOLEAN}]
  primary_key: [id]
  source: %s
  transform: assets.derived:enrich_orders
"""
PROJECT_MAINTENANCE = """\
type: assets.components.PaimonTableMaintenance
attributes:
  table: shop.customers
"""


def load_project(root: Path, monkeypatch: pytest.MonkeyPatch, defs: dict[str, str]
                 ) -> dg.Definitions:
    """The definitions of a dg project at ``root`` whose defs folder holds ``defs``
    (folder -> defs.yaml) and the resources component, as ``dg check defs`` builds them."""
    name = f"proj_{root.name}"
    assert name not in sys.modules, f"{name}: one project name per test session"
    files = {"pyproject.toml": f'[project]\nname = "{name}"\nversion = "0.1.0"\n\n'
             f'[tool.dg]\ndirectory_type = "project"\n\n[tool.dg.project]\n'
             f'root_module = "{name}"\n', f"{name}/__init__.py": "",
             f"{name}/defs/__init__.py": "",
             f"{name}/defs/lake/defs.yaml": "type: assets.components.PaimonResources\n",
             **{f"{name}/defs/{k}/defs.yaml": v for k, v in defs.items()}}
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    monkeypatch.syspath_prepend(str(root))
    return dg.ComponentTree.for_project(root).build_defs()


def settings_error(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """The message of the SettingsError behind Dagster's load error."""
    e: BaseException | None = excinfo.value
    while e is not None and not isinstance(e, SettingsError):
        e = e.__cause__ or e.__context__
    assert e is not None, excinfo.value
    return str(e)


def test_a_derived_source_must_be_a_table_of_the_project(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``source: shop.customerz`` (the issue's typo) fails the load: one line with the file
    and line, the field, the value and the closest table of the project."""
    with pytest.raises(Exception) as excinfo:
        load_project(tmp_path / "typo", monkeypatch, {
            "customers": PROJECT_CDC, "flags": PROJECT_DERIVED % "shop.customerz"})
    assert settings_error(excinfo) == (
        "proj_typo/defs/flags/defs.yaml:6: source: 'shop.customerz' is no table of this code "
        "location (did you mean 'shop.customers'?); its components write shop.customers (a "
        "table only another engine writes: add source_external: true)")
    # the right name loads, with the lineage edge to the source component's asset
    defs = load_project(tmp_path / "right", monkeypatch, {
        "customers": PROJECT_CDC, "flags": PROJECT_DERIVED % "shop.customers"})
    dg.Definitions.validate_loadable(defs)
    [flags] = [a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition)
               and dg.AssetKey(["mart", "flags"]) in a.keys]
    assert flags.asset_deps[dg.AssetKey(["mart", "flags"])] == {dg.AssetKey(["shop",
                                                                             "customers"])}


def test_an_external_source_fails_the_sensor_tick_while_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lake: dict[str, Any]) -> None:
    """A source another engine writes (``source_external: true``) is not checked at load;
    while it does not exist the snapshot sensor's tick fails naming it (a source of the
    project's own components skips: not written yet)."""
    from assets.resources import PaimonCatalog

    text = PROJECT_DERIVED % "java.items" + "  source_external: true\n"
    defs = load_project(tmp_path / "ext", monkeypatch, {"flags": text,
                                                        "customers": PROJECT_CDC})
    catalog = PaimonCatalog(warehouse=str(lake["warehouse"]))
    sensors = {s.name: s for s in defs.sensors or ()}
    ctx = dg.build_sensor_context(resources={"catalog": catalog})
    with pytest.raises(Exception) as excinfo:
        sensors["java_items_snapshot_sensor"](ctx)
    assert settings_error(excinfo).startswith(
        f"source table java.items of mart.flags does not exist in the warehouse "
        f"{lake['warehouse']}")
    ours = load_project(tmp_path / "ownsrc", monkeypatch, {
        "customers": PROJECT_CDC, "flags": PROJECT_DERIVED % "shop.customers"})
    [sensor] = [s for s in ours.sensors or () if s.name == "shop_customers_snapshot_sensor"]
    result = sensor(dg.build_sensor_context(resources={"catalog": catalog}))
    assert isinstance(result, dg.SensorResult)
    assert not result.run_requests and "does not exist yet" in str(result.skip_reason)


def test_maintenance_of_a_component_table_builds_no_second_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's maintenance block for one's own CDC table loads (it failed with
    ``Duplicate asset check key ... fsck_clean``): the table's component has the checks; the
    expiry schedule ships running, the compaction schedule stopped."""
    defs = load_project(tmp_path / "own", monkeypatch, {
        "customers": PROJECT_CDC, "maintenance": PROJECT_MAINTENANCE})
    dg.Definitions.validate_loadable(defs)
    checks = [k.name for c in defs.asset_checks or () for k in c.check_keys]
    assert sorted(checks) == ["freshness", "fsck_clean", "small_files", "snapshot_retention"]
    schedules = {s.name: s.default_status for s in defs.schedules or ()}
    assert schedules["shop_customers_expiry_schedule"] is dg.DefaultScheduleStatus.RUNNING
    assert schedules["shop_customers_compaction_schedule"] is dg.DefaultScheduleStatus.STOPPED
    stopped = load_project(tmp_path / "stopped", monkeypatch, {
        "customers": PROJECT_CDC,
        "maintenance": PROJECT_MAINTENANCE + "  expiry: {running: false}\n"})
    assert {s.name: s.default_status for s in stopped.schedules or ()}[
        "shop_customers_expiry_schedule"] is dg.DefaultScheduleStatus.STOPPED


@pytest.mark.parametrize(("extra", "message"), [
    ("  checks: {max_small_files: 10}\n",
     "proj_{n}/defs/maintenance/defs.yaml:4: checks: shop.customers has its checks from its "
     "PaimonCdcTable (proj_{n}/defs/customers/defs.yaml:3): set them there, or checks: null "
     "here"),
    ("  external: true\n",
     "proj_{n}/defs/maintenance/defs.yaml:4: external: true, but shop.customers is the asset "
     "of its PaimonCdcTable (proj_{n}/defs/customers/defs.yaml:3): remove external here"),
])
def test_maintenance_refuses_what_the_table_component_has(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, message: str) -> None:
    name = "mc" if "checks" in extra else "me"
    with pytest.raises(Exception) as excinfo:
        load_project(tmp_path / name, monkeypatch, {
            "customers": PROJECT_CDC, "maintenance": PROJECT_MAINTENANCE + extra})
    assert settings_error(excinfo) == message.format(n=name)
    # checks: null is accepted (the demo's spelling)
    load_project(tmp_path / f"{name}null", monkeypatch, {
        "customers": PROJECT_CDC, "maintenance": PROJECT_MAINTENANCE + "  checks: null\n"})


def test_maintenance_partitions_are_the_buckets_the_table_component_declares(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No restated count: the compaction partitions of one's own table are the buckets its
    component declares (``bucket: 2``: bucket-0, bucket-1; unset on a primary-key table:
    Paimon's dynamic buckets, dynamic partitions with their sensor); the older ``buckets:``
    is accepted when equal (a FutureWarning), refused naming both when not."""
    def compaction(defs: dg.Definitions) -> dg.AssetsDefinition:
        return next(a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition)
                    and a.key.path[-1] == "shop_customers_compaction")

    defs = load_project(tmp_path / "lay", monkeypatch, {
        "customers": PROJECT_CDC, "maintenance": PROJECT_MAINTENANCE})
    parts = compaction(defs).partitions_def
    assert parts is not None and parts.get_partition_keys() == [
        "shop.customers/bucket-0", "shop.customers/bucket-1"]
    assert "shop_customers_compaction_buckets_sensor" not in sensors(defs)
    with pytest.raises(Exception) as excinfo:
        load_project(tmp_path / "lay3", monkeypatch, {
            "customers": PROJECT_CDC, "maintenance": PROJECT_MAINTENANCE + "  buckets: 3\n"})
    assert settings_error(excinfo) == (
        "buckets: 3 (proj_lay3/defs/maintenance/defs.yaml:4): shop.customers has bucket = 2 "
        "from its PaimonCdcTable (proj_lay3/defs/customers/defs.yaml:3): remove buckets: here "
        "(the compaction reads the table's bucket layout)")
    with pytest.warns(FutureWarning, match=r"buckets: 2 .*deprecated"):
        same = load_project(tmp_path / "lay2", monkeypatch, {
            "customers": PROJECT_CDC, "maintenance": PROJECT_MAINTENANCE + "  buckets: 2\n"})
    assert compaction(same).partitions_def == parts
    dynamic = load_project(tmp_path / "laydyn", monkeypatch, {
        "customers": PROJECT_CDC.replace("bucket: 2, ", ""),
        "maintenance": PROJECT_MAINTENANCE})
    assert compaction(dynamic).partitions_def == dg.DynamicPartitionsDefinition(
        name="shop_customers_compaction_buckets")
    sensor = sensors(dynamic)["shop_customers_compaction_buckets_sensor"]
    assert sensor.default_status is dg.DefaultSensorStatus.RUNNING


def _orders_spec(options: dict[str, Any], **attrs: Any) -> Any:
    from assets.tables import TableSpec

    return TableSpec.from_attributes({
        "table": "shop.orders", "columns": [{"name": "id", "type": "BIGINT"},
                                            {"name": "lsn", "type": "BIGINT"}],
        "primary_key": ["id"], "options": options, **attrs})


def test_declared_options_are_altered_on_an_existing_table(tmp_path: Path) -> None:
    """A component's ``options:`` on an existing table: a listed option with another value
    (or missing) is SET, an unlisted one is kept, a run with nothing changed alters nothing."""
    from paimon_core import FileSystemCatalog

    cat = FileSystemCatalog(str(tmp_path / "wh"))
    first = _orders_spec({"bucket": 2, "sequence.field": "lsn", "write-only": True})
    created = first.ensure_declared(cat)
    assert created.altered == {} and created.table.schema.id == 0
    assert first.ensure_declared(cat).altered == {}  # nothing changed: no new schema
    edited = _orders_spec({"bucket": 2, "sequence.field": "lsn", "write-only": False,
                           "snapshot.num-retained.max": 70})
    got = edited.ensure_declared(cat)
    assert got.altered == {"snapshot.num-retained.max": "(unset) -> 70",
                           "write-only": "true -> false"}
    schema = cat.get_table("shop.orders").schema
    assert schema.id == 1 and schema.options == {
        "bucket": "2", "sequence.field": "lsn", "write-only": "false",
        "snapshot.num-retained.max": "70"}
    assert got.table.schema.options == schema.options  # the run goes on with the new options
    # a key removed from the YAML is kept (the YAML declares the keys it lists)
    assert _orders_spec({"bucket": 2}).ensure_declared(cat).altered == {}
    assert cat.get_table("shop.orders").schema.options["write-only"] == "false"


@pytest.mark.parametrize(("options", "attrs", "named"), [
    ({"bucket": 4}, {}, "option 'bucket' of shop.orders cannot be changed by the options its "
                        "component declares: the table has bucket='2', given bucket='4'"),
    ({"bucket": 2, "merge-engine": "first-row"}, {}, "option 'merge-engine'"),
    ({"bucket": 2}, {"primary_key": ["id", "lsn"]}, "option 'primary-key'"),
])
def test_declared_immutable_options_that_differ_are_refused(
        tmp_path: Path, options: dict[str, Any], attrs: dict[str, Any], named: str) -> None:
    from paimon_core import FileSystemCatalog
    from paimon_core.errors import ImmutableOptionError

    cat = FileSystemCatalog(str(tmp_path / "wh"))
    _orders_spec({"bucket": 2}).ensure_declared(cat)
    with pytest.raises(ImmutableOptionError) as e:
        _orders_spec({**options, "snapshot.num-retained.max": 90}, **attrs).ensure_declared(cat)
    assert named in str(e.value)
    schema = cat.get_table("shop.orders").schema  # nothing altered
    assert schema.id == 0 and schema.options == {"bucket": "2"}
