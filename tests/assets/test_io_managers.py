"""The IO managers (:mod:`assets.io_managers`) and the table-state observations
(:mod:`assets.observations`), through ``dg.materialize`` on a real catalog.

Each frame type (pyarrow, pandas, polars) writes partitioned assets (daily time windows and
static keys); the expected table contents come from a model kept here (a dict by key / the
frames written, partition by partition), never from the code under test. One module-scoped
warehouse is written by every frame type and mode, then ONE oracle batch (Paimon Java 0.9)
reads all its tables and writes a table of its own, whose state the observation reports.
"""

import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from assets.io_managers import (
    PaimonPyArrowIOManager,
)
from assets.io_managers_spark import PaimonSparkIOManager
from assets.metadata import RUN_ID_PROPERTY
from assets.observations import build_table_observation, build_table_state_sensor
from assets.resources import PaimonCatalog, SparkResource
from paimon_core import FileSystemCatalog
from paimon_core.cli.main import main as paimon_main
from tests.assets.io_helpers import (
    DAILY,
    REGIONS,
    io_manager,
    last_metadata,
    materialize,
    refused,
    sorted_rows,
)
from tests.interop.oracle import ensure_ready, run_batches


# ------------------------------------------------------------------------------ daily events
def _events(day: str, n: int, version: int) -> list[dict[str, Any]]:
    return [{"id": i, "amount": float(i * 10 + version), "name": f"e{day}-{i}-v{version}"}
            for i in range(n)]


def _write_daily(kind: str, wh: Path, model: dict[str, list[dict[str, Any]]]) -> None:
    """Days 01 and 02, then day 01 again with other rows: the second write of day 01 replaces
    exactly day 01. The arrow frames lack ``dt`` (the IO manager adds it); pandas / polars
    carry it (a STRING and a DATE column)."""
    versions = iter([1, 2, 3])

    def frame(day: str) -> Any:
        version = next(versions)
        rows = _events(day, 3 + version, version)
        model[day] = rows
        if kind == "arrow":
            return pa.Table.from_pylist(rows)
        if kind == "pandas":
            return pd.DataFrame([{**r, "dt": day} for r in rows])
        return pl.DataFrame([{**r, "dt": datetime.date.fromisoformat(day)} for r in rows])

    @dg.asset(key=[f"{kind}_db", "events"], partitions_def=DAILY,
              metadata={"partition_expr": "dt"})
    def events(context: dg.AssetExecutionContext) -> Any:
        return frame(context.partition_key)

    io = io_manager(kind, wh)
    for day in ("2024-01-01", "2024-01-02", "2024-01-01"):
        assert materialize([events], io, wh, partition_key=day).success


# ------------------------------------------------------------------------------ static regions
def _write_regions(kind: str, wh: Path, model: dict[str, list[dict[str, Any]]]) -> None:
    @dg.asset(key=[f"{kind}_db", "regions"], partitions_def=REGIONS,
              metadata={"partition_expr": "region", "primary_key": ["region", "id"],
                        "bucket": 2})
    def regions(context: dg.AssetExecutionContext) -> Any:
        region = context.partition_key
        rows = [{"region": region, "id": i, "score": i * (2 if region == "eu" else 3)}
                for i in range(5)]
        model[region] = rows
        if kind == "arrow":
            return pa.Table.from_pylist(rows)
        if kind == "pandas":
            return pd.DataFrame(rows)
        return pl.DataFrame(rows)

    io = io_manager(kind, wh)
    for region in ("eu", "us"):
        assert materialize([regions], io, wh, partition_key=region).success


# ------------------------------------------------------------------------------ modes
def _upsert_asset(rows: list[dict[str, Any]]) -> dg.AssetsDefinition:
    @dg.asset(key=["modes", "kv"], metadata={"primary_key": "id", "write_mode": "upsert"})
    def kv() -> pa.Table:
        return pa.Table.from_pylist(rows)

    return kv


def _write_modes(wh: Path) -> dict[str, Any]:
    """upsert with row kinds, append twice, overwrite, schema evolution (a new column)."""
    io = io_manager("arrow", wh)
    model: dict[int, dict[str, Any]] = {}
    first = [{"id": i, "v": f"a{i}"} for i in range(6)]
    second = [{"id": 1, "v": "b1", "_row_kind": "+U"}, {"id": 2, "v": "a2", "_row_kind": "-D"},
              {"id": 9, "v": "b9", "_row_kind": "+I"}]
    for batch in (first, second):
        assert materialize([_upsert_asset(batch)], io, wh).success
        for r in batch:
            if r.get("_row_kind") == "-D":
                model.pop(r["id"], None)
            else:
                model[r["id"]] = {"id": r["id"], "v": r["v"]}

    @dg.asset(key=["modes", "log"], metadata={"write_mode": "append"})
    def log() -> pa.Table:
        return pa.table({"n": pa.array([1, 2], pa.int64())})

    for _ in range(2):
        assert materialize([log], io, wh).success

    evolved = [{"id": 1, "a": "x"}, {"id": 2, "a": "y"}]

    @dg.asset(key=["modes", "wide"], metadata={"write_mode": "append"})
    def wide_v1() -> pa.Table:
        return pa.Table.from_pylist(evolved)

    @dg.asset(key=["modes", "wide"], metadata={"write_mode": "append"})
    def wide_v2() -> pa.Table:
        return pa.Table.from_pylist([{"id": 3, "a": "z", "b": 30.5}])

    assert materialize([wide_v1], io, wh).success
    result = materialize([wide_v2], io, wh)
    assert result.success
    return {"kv": sorted(model.values(), key=lambda r: r["id"]), "wide_md": last_metadata(result)}


# ------------------------------------------------------------------------------ Spark
def _write_spark(spark: Any, wh: Path, model: dict[str, Any]) -> None:
    """A daily Spark DataFrame asset (days 01, 02, then 01 again) and, in the last run, a
    downstream Spark asset reading its day's ``id`` column through the paimon data source."""
    versions = iter([1, 2, 3])

    @dg.asset(key=["spark_db", "events"], partitions_def=DAILY,
              metadata={"partition_expr": "dt", "primary_key": ["dt", "id"]})
    def events(context: dg.AssetExecutionContext) -> Any:
        version = next(versions)
        rows = [(i, f"v{version}-{i}", context.partition_key) for i in range(2 + version)]
        model[context.partition_key] = [{"id": i, "v": v, "dt": d} for i, v, d in rows]
        return spark.createDataFrame(rows, "id BIGINT, v STRING, dt STRING")

    @dg.asset(key=["spark_db", "ids"], partitions_def=DAILY, metadata={"partition_expr": "dt"},
              ins={"events": dg.AssetIn(key=["spark_db", "events"],
                                        metadata={"columns": ["id"]})})
    def ids(events: Any) -> Any:
        model["ids_columns"] = events.columns
        return events

    io = PaimonSparkIOManager(catalog=PaimonCatalog(warehouse=str(wh)),
                              spark=SparkResource(master="local[2]"))
    for day in ("2024-01-01", "2024-01-02"):
        assert materialize([events], io, wh, partition_key=day).success
    assert materialize([events, ids], io, wh, partition_key="2024-01-01").success


# ------------------------------------------------------------------------------ the module's lake
JAVA_SCHEMA = {"fields": [{"name": "id", "type": "BIGINT"}, {"name": "v", "type": "STRING"}],
               "primary_keys": ["id"], "options": {"bucket": "2"}}
TABLES = ["arrow_db.events", "pandas_db.events", "polars_db.events", "arrow_db.regions",
          "pandas_db.regions", "polars_db.regions", "modes.kv", "modes.log", "modes.wide",
          "spark_db.events", "spark_db.ids"]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Iterator[dict[str, Any]]:
    ensure_ready()
    root = tmp_path_factory.mktemp("iomanagers")
    wh = root / "wh"
    wh.mkdir()
    models: dict[str, Any] = {}
    for kind in ("arrow", "pandas", "polars"):
        models[f"{kind}_db.events"] = daily = {}
        _write_daily(kind, wh, daily)
        models[f"{kind}_db.regions"] = regions = {}
        _write_regions(kind, wh, regions)
    models.update(_write_modes(wh))
    models["spark"] = {}
    _write_spark(spark, wh, models["spark"])
    # one oracle batch: Java reads every table written above, and writes its own table twice
    # (the second commit updates keys 0..3: 10 records written, 8 live rows)
    (root / "java.json").write_text(json.dumps(JAVA_SCHEMA))
    (root / "j1.jsonl").write_text("".join(json.dumps({"id": i, "v": f"j{i}"}) + "\n"
                                           for i in range(6)))
    (root / "j2.jsonl").write_text("".join(json.dumps({"id": i, "v": f"k{i}"}) + "\n"
                                           for i in range(4)) + json.dumps({"id": 7, "v": "k7"})
                                   + "\n" + json.dumps({"id": 6, "v": "k6"}) + "\n")
    cmds: list[dict[str, Any]] = [
        {"cmd": "read", "warehouse": str(wh), "table": t, "output": str(root / f"{t}.jsonl")}
        for t in TABLES
    ]
    java = {"warehouse": str(wh), "table": "java_db.t"}
    cmds += [{"cmd": "create", **java, "schema": str(root / "java.json")},
             {"cmd": "write", **java, "input": str(root / "j1.jsonl")},
             {"cmd": "write", **java, "input": str(root / "j2.jsonl")},
             {"cmd": "read", **java, "output": str(root / "java_db.t.jsonl")}]
    failed = run_batches({"iomanagers": cmds}, root)["iomanagers"].failures()
    assert not failed, f"oracle commands failed: {failed}"
    yield {"wh": wh, "root": root, "models": models}


def _ours(capsys: pytest.CaptureFixture[str], wh: Path, table: str) -> list[str]:
    """Our CLI's canonical read (the same canonical JSON lines as the oracle's)."""
    capsys.readouterr()
    assert paimon_main(["read", "--warehouse", str(wh), "--table", table]) == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.oracle
@pytest.mark.parametrize("table", TABLES)
def test_java_reads_what_the_io_managers_wrote(
    lake: dict[str, Any], capsys: pytest.CaptureFixture[str], table: str
) -> None:
    java = (lake["root"] / f"{table}.jsonl").read_text().splitlines()
    assert java, f"Java read nothing from {table}"
    assert java == _ours(capsys, lake["wh"], table)


@pytest.mark.parametrize("kind", ["arrow", "pandas", "polars"])
def test_daily_partition_overwrites_exactly_its_day(lake: dict[str, Any], kind: str) -> None:
    catalog = FileSystemCatalog(str(lake["wh"]))
    table = catalog.get_table(f"{kind}_db.events")
    model = lake["models"][f"{kind}_db.events"]
    assert table.schema.partition_keys == ("dt",)
    got = table.to_arrow()
    dt_as = (lambda d: datetime.date.fromisoformat(d)) if kind == "polars" else (lambda d: d)
    expected = [{**r, "dt": dt_as(day)} for day, rows in model.items() for r in rows]
    assert sorted_rows(got, "dt", "id") == sorted(expected, key=lambda r: (r["dt"], r["id"]))
    assert len(model["2024-01-01"]) == 6  # the second write of day 01 (version 3) won
    snaps = list(table.snapshot_manager.snapshots())
    assert [s.commit_kind.value for s in snaps] == ["OVERWRITE"] * 3
    assert snaps[-1].properties[RUN_ID_PROPERTY]
    assert snaps[-1].properties["dagster.partition-key"] == "2024-01-01"


@pytest.mark.parametrize("kind", ["arrow", "pandas", "polars"])
def test_static_partitions_with_primary_key(lake: dict[str, Any], kind: str) -> None:
    table = FileSystemCatalog(str(lake["wh"])).get_table(f"{kind}_db.regions")
    model = lake["models"][f"{kind}_db.regions"]
    assert table.schema.primary_keys == ("region", "id")
    assert table.schema.options["bucket"] == "2"
    expected = [r for rows in model.values() for r in rows]
    assert sorted_rows(table.to_arrow(), "region", "id") == sorted(
        expected, key=lambda r: (r["region"], r["id"]))


def test_spark_dataframes_by_partition(lake: dict[str, Any]) -> None:
    catalog = FileSystemCatalog(str(lake["wh"]))
    model = lake["models"]["spark"]
    expected = sorted(model["2024-01-01"] + model["2024-01-02"], key=lambda r: (r["dt"], r["id"]))
    assert len(model["2024-01-01"]) == 5  # version 3 replaced version 1 of day 01
    assert sorted_rows(catalog.get_table("spark_db.events").to_arrow(), "dt", "id") == expected
    assert model["ids_columns"] == ["id"]  # the input's columns metadata
    ids = catalog.get_table("spark_db.ids")  # written once, from day 01 only
    assert sorted_rows(ids.to_arrow(), "dt", "id") == [{"id": r["id"], "dt": r["dt"]}
                                                 for r in model["2024-01-01"]]


def test_upsert_with_row_kinds(lake: dict[str, Any]) -> None:
    table = FileSystemCatalog(str(lake["wh"])).get_table("modes.kv")
    assert sorted_rows(table.to_arrow(), "id") == lake["models"]["kv"]
    assert "_row_kind" not in table.schema.field_names


def test_append_twice(lake: dict[str, Any]) -> None:
    table = FileSystemCatalog(str(lake["wh"])).get_table("modes.log")
    assert sorted(table.to_arrow().column("n").to_pylist()) == [1, 1, 2, 2]


def test_schema_evolution_adds_a_nullable_column(lake: dict[str, Any]) -> None:
    table = FileSystemCatalog(str(lake["wh"])).get_table("modes.wide")
    assert table.schema.id == 1 and table.schema.field_names == ["id", "a", "b"]
    assert table.schema.field("b").type.nullable
    assert sorted_rows(table.to_arrow(), "id") == [
        {"id": 1, "a": "x", "b": None}, {"id": 2, "a": "y", "b": None},
        {"id": 3, "a": "z", "b": 30.5}]
    md = lake["models"]["wide_md"]
    assert md["dagster/row_count"] == 3 and md["paimon/rows_written"] == 1
    assert [c.name for c in md["dagster/column_schema"].columns] == ["id", "a", "b"]


# ------------------------------------------------------------------------------ inputs
def test_inputs_select_columns_and_partitions(tmp_path: Path) -> None:
    @dg.asset(partitions_def=DAILY, metadata={"partition_expr": "dt"}, key=["src", "daily"])
    def daily(context: dg.AssetExecutionContext) -> pd.DataFrame:
        day = context.partition_key
        return pd.DataFrame({"dt": [day] * 3, "id": [1, 2, 3], "x": [1.5, 2.5, 3.5]})

    seen: dict[str, Any] = {}

    @dg.asset(partitions_def=DAILY, key=["src", "picked"],
              ins={"daily": dg.AssetIn(key=["src", "daily"], metadata={"columns": ["id", "dt"]})},
              metadata={"partition_expr": "dt"})
    def picked(context: dg.AssetExecutionContext, daily: pd.DataFrame) -> pd.DataFrame:
        seen[context.partition_key] = daily
        return daily

    io = io_manager("pandas", tmp_path)
    for day in ("2024-01-01", "2024-01-02"):
        assert materialize([daily], io, tmp_path, partition_key=day).success
    result = materialize([daily, picked], io, tmp_path, partition_key="2024-01-02",
                          selection=[picked])
    assert result.success
    got = seen["2024-01-02"]
    assert list(got.columns) == ["id", "dt"]
    assert sorted(got["id"]) == [1, 2, 3] and set(got["dt"]) == {"2024-01-02"}


def test_polars_lazy_input(tmp_path: Path) -> None:
    @dg.asset(key=["p", "src"])
    def src() -> pl.DataFrame:
        return pl.DataFrame({"id": [1, 2], "v": ["a", "b"]})

    out: dict[str, Any] = {}

    @dg.asset(key=["p", "dst"], ins={"src": dg.AssetIn(key=["p", "src"])})
    def dst(src: pl.LazyFrame) -> None:
        out["frame"] = src

    assert materialize([src, dst], io_manager("polars", tmp_path), tmp_path).success
    assert isinstance(out["frame"], pl.LazyFrame)
    assert out["frame"].collect().sort("id").to_dicts() == [{"id": 1, "v": "a"},
                                                            {"id": 2, "v": "b"}]


# ------------------------------------------------------------------------------ refusals
def test_schema_update_mode_error_names_the_column(tmp_path: Path) -> None:
    @dg.asset(key=["s", "t"])
    def v1() -> pa.Table:
        return pa.table({"id": [1]})

    @dg.asset(key=["s", "t"], metadata={"schema_update_mode": "error"})
    def v2() -> pa.Table:
        return pa.table({"id": [2], "extra": ["x"]})

    io = io_manager("arrow", tmp_path)
    assert materialize([v1], io, tmp_path).success
    assert "'extra'" in str(refused([v2], io, tmp_path))
    assert FileSystemCatalog(str(tmp_path)).get_table("s.t").schema.field_names == ["id"]


@pytest.mark.parametrize("kind", ["pandas", "polars"])
def test_unstorable_values_are_refused(tmp_path: Path, kind: str) -> None:
    big = 2**63 + 5  # an unsigned 64-bit integer: no Paimon type holds it

    @dg.asset(key=["u", "t"])
    def unsigned() -> Any:
        if kind == "pandas":
            return pd.DataFrame({"id": [1], "big": pd.array([big], dtype="uint64")})
        return pl.DataFrame({"id": [1], "big": pl.Series([big], dtype=pl.UInt64)})

    assert "'big'" in str(refused([unsigned], io_manager(kind, tmp_path), tmp_path))

    @dg.asset(key=["u", "small"])
    def small() -> pa.Table:
        return pa.table({"n": pa.array([1], pa.int32())})

    @dg.asset(key=["u", "small"], metadata={"write_mode": "append"})
    def overflow() -> pa.Table:
        return pa.table({"n": pa.array([2**40], pa.int64())})

    io = io_manager("arrow", tmp_path)
    assert materialize([small], io, tmp_path).success
    assert "'n'" in str(refused([overflow], io, tmp_path))
    assert FileSystemCatalog(str(tmp_path)).get_table("u.small").to_arrow().num_rows == 1


def test_rows_outside_the_partition_and_upsert_without_key(tmp_path: Path) -> None:
    @dg.asset(key=["r", "t"], partitions_def=DAILY, metadata={"partition_expr": "dt"})
    def wrong_day() -> pa.Table:
        return pa.table({"dt": ["2024-01-03"], "id": [1]})

    io = io_manager("arrow", tmp_path)
    assert "outside" in str(refused([wrong_day], io, tmp_path, partition_key="2024-01-01"))

    @dg.asset(key=["r", "plain"], metadata={"write_mode": "upsert"})
    def plain() -> pa.Table:
        return pa.table({"id": [1]})

    assert "primary-key" in str(refused([plain], io, tmp_path))


# ------------------------------------------------------------------------------ observations
def _java_rows(lake: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in
            (lake["root"] / "java_db.t.jsonl").read_text().splitlines()]


@pytest.mark.oracle
def test_observation_of_a_table_java_wrote(lake: dict[str, Any]) -> None:
    java_rows = _java_rows(lake)
    table = FileSystemCatalog(str(lake["wh"])).get_table("java_db.t")
    observed = build_table_observation(["java_db", "t"])
    job = dg.define_asset_job("observe_java", selection=[observed.key])
    defs = dg.Definitions(assets=[observed], jobs=[job],
                          resources={"catalog": PaimonCatalog(warehouse=str(lake["wh"]))})
    res = defs.resolve_job_def("observe_java").execute_in_process()
    assert res.success
    obs = res.asset_observations_for_node(observed.op.name)
    md = {k: getattr(v, "value", v) for k, v in obs[-1].metadata.items()}
    # live rows of a primary-key table Java wrote with updates: 12 records, 8 keys
    assert md["dagster/row_count"] == len(java_rows) == 8
    files = table.inspect.files()
    assert sum(files.column("record_count").to_pylist()) == 12
    assert md["dagster/table_name"] == "java_db.t"
    assert md["paimon/snapshot_id"] == str(table.latest_snapshot().id)
    assert isinstance(md["paimon/snapshot_id"], str)  # an id is text: never plotted as a series
    assert md["paimon/live_files"] == files.num_rows
    assert md["paimon/sorted_runs"] >= md["paimon/max_sorted_runs"] >= 1
    assert [c.name for c in md["dagster/column_schema"].columns] == ["id", "v"]


@pytest.mark.oracle
def test_state_sensor_emits_only_on_a_new_snapshot(lake: dict[str, Any]) -> None:
    key = dg.AssetKey(["java_db", "t"])
    sensor = build_table_state_sensor("java_state", {key: "java_db.t"})
    resources = {"catalog": PaimonCatalog(warehouse=str(lake["wh"]))}
    instance = dg.DagsterInstance.ephemeral()
    first = sensor(dg.build_sensor_context(resources=resources, instance=instance))
    assert [e.asset_key for e in first.asset_events] == [key]
    assert first.asset_events[0].metadata["dagster/row_count"].value == len(_java_rows(lake))
    again = sensor(dg.build_sensor_context(cursor=first.cursor, resources=resources,
                                           instance=instance))
    assert again.asset_events == []  # unchanged table: no observation, no drop to zero


def test_multi_partitions_map_to_two_table_partition_keys(tmp_path: Path) -> None:
    multi = dg.MultiPartitionsDefinition({"date": DAILY, "region": REGIONS})
    written: dict[tuple[str, str], list[dict[str, Any]]] = {}

    @dg.asset(key=["m", "sales"], partitions_def=multi,
              metadata={"partition_expr": {"date": "dt", "region": "region"}})
    def sales(context: dg.AssetExecutionContext) -> pa.Table:
        key = context.partition_key.keys_by_dimension
        rows = [{"id": i, "qty": i + len(written)} for i in range(2)]
        written[(key["date"], key["region"])] = rows
        return pa.Table.from_pylist(rows)  # dt and region are added

    io = io_manager("arrow", tmp_path)
    for date, region in [("2024-01-01", "eu"), ("2024-01-01", "us"), ("2024-01-02", "eu"),
                         ("2024-01-01", "eu")]:
        key = dg.MultiPartitionKey({"date": date, "region": region})
        assert materialize([sales], io, tmp_path, partition_key=key).success
    table = FileSystemCatalog(str(tmp_path)).get_table("m.sales")
    assert table.schema.partition_keys == ("dt", "region")
    expected = [{**r, "dt": d, "region": g} for (d, g), rows in written.items() for r in rows]
    order = ("dt", "region", "id")
    assert sorted_rows(table.to_arrow(), *order) == sorted(
        expected, key=lambda r: tuple(r[c] for c in order))
    assert len(expected) == 6  # the re-run of (01, eu) replaced only that cell


def test_partition_range_run_overwrites_each_day_even_by_nothing(tmp_path: Path) -> None:
    days = {"2024-01-01": [1, 2], "2024-01-02": [3], "2024-01-03": [4, 5], "2024-01-04": [6]}

    @dg.asset(key=["b", "t"], partitions_def=DAILY, metadata={"partition_expr": "dt"},
              backfill_policy=dg.BackfillPolicy.single_run())
    def first(context: dg.AssetExecutionContext) -> pa.Table:
        rows = [{"dt": d, "id": i} for d in context.partition_keys for i in days[d]]
        return pa.Table.from_pylist(rows)

    @dg.asset(key=["b", "t"], partitions_def=DAILY, metadata={"partition_expr": "dt"},
              backfill_policy=dg.BackfillPolicy.single_run())
    def again(context: dg.AssetExecutionContext) -> pa.Table:
        # days 02..03 again: 02 gets new rows, 03 none (it must end up empty)
        return pa.Table.from_pylist([{"dt": "2024-01-02", "id": 30}])

    io = io_manager("arrow", tmp_path)

    def run(asset: Any, start: str, end: str) -> None:
        tags = {"dagster/asset_partition_range_start": start,
                "dagster/asset_partition_range_end": end}
        assert materialize([asset], io, tmp_path, tags=tags).success

    run(first, "2024-01-01", "2024-01-04")
    run(again, "2024-01-02", "2024-01-03")
    table = FileSystemCatalog(str(tmp_path)).get_table("b.t")
    assert sorted_rows(table.to_arrow(), "dt", "id") == [
        {"dt": "2024-01-01", "id": 1}, {"dt": "2024-01-01", "id": 2},
        {"dt": "2024-01-02", "id": 30}, {"dt": "2024-01-04", "id": 6}]


def test_catalog_from_environment_variables(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IO_TEST_WAREHOUSE", str(tmp_path / "from-env"))

    @dg.asset(key=["env", "t"])
    def t() -> pa.Table:
        return pa.table({"id": [1, 2]})

    io = PaimonPyArrowIOManager(catalog=PaimonCatalog(warehouse=dg.EnvVar("IO_TEST_WAREHOUSE")))
    assert dg.materialize([t], resources={"io_manager": io}).success
    assert FileSystemCatalog(str(tmp_path / "from-env")).get_table("env.t").to_arrow().num_rows == 2

