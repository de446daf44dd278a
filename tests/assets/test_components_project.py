"""A new dg project, as a user builds it from README.md's "Your own table in 10 lines of
YAML" section (issue 17): its files and commands are read out of that section, written and
run in a temporary directory (not the demo), then

* ``dg check defs`` passes (subprocess; the maintenance of the user's own CDC table
  included), and fails with one line naming file, field, value and the closest table when
  the derived table's ``source:`` has a typo;
* through ``dg dev`` (the webserver's GraphQL, the daemon's sensor loop): the CDC table's
  landing sensor adds the landed day to its partitions (``partition_keys: landed``) and runs
  it; the partition counts are those of the landed days (not every day since ``start``), and a
  backfill of the landed day from the UI applies nothing twice; a tick of the derived table's
  snapshot sensor and the run it requests (the user's own transform), a compaction run of one
  bucket of a table Paimon Java wrote (the oracle), launched without config (full, as the
  CLI); a UI backfill of every bucket of a dynamic-bucket table another engine wrote
  (``bucket = -1``, 3 live buckets of 3 level-0 files each: the partitions are the live
  buckets the component's sensor reads from the table, not a restated count); with the
  landing sensor stopped from the UI, a day that lands is a Missing
  partition, and a UI backfill of it ingests it;
* the tables then hold what an independent model says: the CDC events replayed by key, the
  transform over that state, and the rows Java wrote (one sorted run left in the bucket,
  fsck clean); every bucket of the dynamic-bucket table one file, its hash index the same,
  Paimon Java reading the rows written by hand;
* headless Chromium renders the CDC table's asset page with the row count and the columns
  paimon_core reads.

One ``dg dev`` and one oracle batch for the module. Cost on a quiet 2-core machine: about two
minutes and a half (two ``dg check defs`` ~15 s each, dagster dev start-up, three Spark runs,
one Chromium page); 15 min at a load average of 20-36.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.assets.processes import (
    LAUNCH_RUN,
    REPO,
    REPOSITORY_NAME,
    VENV_BIN,
    DagsterDev,
    chromium,
    dagster_dev,
    render_dom,
    run_records,
    ui_backfill,
    ui_stop_sensor,
    wait_for_run,
    wait_for_runs,
)
from tests.interop.oracle import Batch, ensure_ready
from tests.readme_harness import README, command_key, readme_commands

pytestmark = [pytest.mark.slow, pytest.mark.oracle]

SECTION = "## Your own table in 10 lines of YAML"
DAY = "2025-01-06"
#: a day landed while the landing sensor is stopped
LATE_DAY = "2025-01-07"
#: the README's placeholder for the repository checkout beside the project
REPO_PLACEHOLDER = "../paimon-pipelines"
PARTITION_KEYS = """
query($k: AssetKeyInput!) { assetNodeOrError(assetKey: $k) { ... on AssetNode {
    partitionKeys } } }"""
PARTITION_STATS = """
query($k: AssetKeyInput!) { assetNodeOrError(assetKey: $k) { ... on AssetNode {
    partitionStats { numMaterialized numPartitions numFailed numMaterializing } } } }"""


def section() -> str:
    text = README.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:] if end < 0 else text[start:end]


def section_files(text: str) -> dict[str, str]:
    """The files of the section: fenced toml / yaml / python blocks whose first line is a
    comment naming the file."""
    out: dict[str, str] = {}
    for m in re.finditer(r"^```(toml|yaml|python)\n(.*?)^```", text, flags=re.S | re.M):
        first = m.group(2).splitlines()[0]
        assert first.startswith("# "), f"README block without its file name: {first!r}"
        out[first[2:].strip()] = m.group(2)
    return out


def _env() -> dict[str, str]:
    """The environment of the README's commands: this repository's virtual environment
    active, the worktree first on PYTHONPATH (as the editable install would put it)."""
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
            "VIRTUAL_ENV": str(VENV_BIN.parent), "TZ": "UTC",
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


FIRST_DAY_EVENTS: list[tuple[int, str, dict[str, Any] | None, dict[str, Any] | None]] = [
    (16, "u", {"id": 2, "status": "new"}, {"id": 2, "status": "done"}),
    (8, "c", None, {"id": 1, "status": "new"}),
    (10, "c", None, {"id": 2, "status": "new"}),
    (12, "c", None, {"id": 3, "status": "new"}),
    (24, "d", {"id": 3, "status": "new"}, None),
    (20, "u", {"id": 1, "status": "new"}, {"id": 1, "status": "paid"}),
]
LATE_DAY_EVENTS: list[tuple[int, str, dict[str, Any] | None, dict[str, Any] | None]] = [
    (40, "c", None, {"id": 4, "status": "new"}),
    (36, "u", {"id": 1, "status": "paid"}, {"id": 1, "status": "done"}),
]


def _events(changes: list[tuple[int, str, dict[str, Any] | None, dict[str, Any] | None]]
            = FIRST_DAY_EVENTS) -> list[dict[str, Any]]:
    """Debezium (Postgres connector) events of one landing day, shuffled on purpose: the
    source position orders them."""
    ts = 1736150400000
    out = []
    for lsn, op, before, after in changes:
        out.append({"before": before and {**before, "lsn": 0}, "after": after and {
            **after, "lsn": lsn}, "op": op, "ts_ms": ts + lsn, "source": {
                "connector": "postgresql", "db": "shop", "lsn": lsn, "ts_ms": ts + lsn}})
    return out


def _replay(events: list[dict[str, Any]]) -> dict[int, str]:
    """The model: events applied in source-position order -> {id: status}."""
    state: dict[int, str] = {}
    for e in sorted(events, key=lambda e: e["source"]["lsn"]):
        if e["op"] == "d":
            state.pop(e["before"]["id"], None)
        else:
            state[e["after"]["id"]] = e["after"]["status"]
    return state


JAVA_SCHEMA = {"fields": [{"name": "id", "type": "BIGINT"}, {"name": "name", "type": "STRING"}],
               "primary_keys": ["id"], "options": {"bucket": "2"}}
JAVA_COMMITS = [[{"id": i, "name": f"v{c}-{i}"} for i in range(c, 40, 2 + c)] for c in range(3)]


def _java_table(work: Path, warehouse: Path) -> Batch:
    """``java.items`` written by Paimon Java 0.9: three commits (several sorted runs per
    bucket), in the background."""
    (work / "items.json").write_text(json.dumps(JAVA_SCHEMA))
    cmds: list[dict[str, Any]] = [{"cmd": "create", "warehouse": str(warehouse),
                                   "table": "java.items", "schema": str(work / "items.json")}]
    for k, rows in enumerate(JAVA_COMMITS):
        path = work / f"items-{k}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        cmds.append({"cmd": "write", "warehouse": str(warehouse), "table": "java.items",
                     "input": str(path)})
    return Batch("java-items", cmds, work)


#: the dynamic-bucket table another engine writes (README: maintenance of ``flink.clicks``)
CLICKS = "flink.clicks"
CLICKS_COMPACTION = ["maintenance", "flink_clicks_compaction"]
#: three commits of (id, page); 10 keys per bucket: ids 0..29 open buckets 0, 1, 2
CLICKS_COMMITS = [[(i, "a") for i in range(30)], [(i, "b") for i in range(30)],
                  [(i, "c") for i in range(0, 30, 2)]]
#: the rows after them, by hand: even ids last written "c", odd ones "b"
CLICKS_ROWS = {i: "c" if i % 2 == 0 else "b" for i in range(30)}


def _clicks_table(warehouse: Path) -> None:
    """``flink.clicks``: a primary-key table with dynamic buckets (``bucket = -1``, 10 keys
    a bucket), three write-only commits touching every bucket."""
    import pyarrow as pa

    from paimon_core.catalog import FileSystemCatalog
    from paimon_core.schema_builder import Schema

    catalog = FileSystemCatalog(str(warehouse))
    catalog.create_database("flink", ignore_if_exists=True)
    table = catalog.create_table(CLICKS, Schema.of(
        [("id", "BIGINT NOT NULL"), ("page", "STRING")], primary_keys=["id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "10",
                 "write-only": "true"}))
    for k, rows in enumerate(CLICKS_COMMITS):
        data = pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                         "page": [r[1] for r in rows]})
        with table.new_write("flink") as w:
            w.write_arrow(data)
            table.new_commit("flink").commit(w.prepare_commit(), k)


class Project:
    """The project built from the README section, with its ``dg dev``."""

    def __init__(self, root: Path, dev: DagsterDev, check_output: str) -> None:
        self.root, self.dev, self.check_output = root, dev, check_output
        [repo] = dev.graphql(REPOSITORY_NAME)["repositoriesOrError"]["nodes"]
        self.repository = repo["name"]
        entries = dev.graphql("{ workspaceOrError { ... on Workspace { locationEntries {"
                              " name } } } }")["workspaceOrError"]["locationEntries"]
        [self.location] = [e["name"] for e in entries]

    def launch(self, job: str, tags: dict[str, str] | None = None,
               run_config: dict[str, Any] | None = None) -> str:
        out = self.dev.graphql(LAUNCH_RUN, {"p": {
            "mode": "default",
            "selector": {"repositoryLocationName": self.location,
                         "repositoryName": self.repository, "pipelineName": job},
            "executionMetadata": {"tags": [{"key": k, "value": v}
                                           for k, v in (tags or {}).items()]},
            "runConfigData": json.dumps(run_config or {}),
        }})["launchRun"]
        assert out["__typename"] == "LaunchRunSuccess", out
        return str(out["run"]["runId"])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    ensure_ready()
    tmp = tmp_path_factory.mktemp("components")
    text = section()
    files = section_files(text)
    env = _env()
    cwd = tmp
    root: Path | None = None
    java: Batch | None = None
    check_output = ""
    serve = False
    for _, command in readme_commands(text):
        key = command_key(command)
        if key.startswith("mkdir -p my_lake/"):
            subprocess.run(["bash", "-c", command], cwd=cwd, env=env, check=True)
        elif key == "cd my_lake":
            cwd = root = tmp / "my_lake"
            for name, content in files.items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(content)
            # the lake: a table Paimon Java writes, and a landing day of change events
            java = _java_table(tmp, root / "warehouse")
            _clicks_table(root / "warehouse")
            day = root / "landing" / "shop.orders" / f"dt={DAY}"
            day.mkdir(parents=True)
            (day / "part-0.json").write_text(
                "".join(json.dumps(e) + "\n" for e in _events()))
        elif key == "dg check defs":
            p = subprocess.run(shlex.split(command), cwd=cwd, env=env, capture_output=True,
                               text=True, timeout=600)
            check_output = p.stdout + p.stderr
            assert p.returncode == 0, check_output[-4000:]
        elif key.startswith("export "):
            for pair in shlex.split(command)[1:]:
                k, _, v = pair.partition("=")
                env[k] = v.replace("$PWD", str(cwd))
        elif key.startswith("mkdir -p $DAGSTER_HOME"):
            subprocess.run(["bash", "-c", command.replace(REPO_PLACEHOLDER, str(REPO))],
                           cwd=cwd, env=env, check=True, capture_output=True, timeout=300)
        elif key.startswith("dg dev"):
            serve = True
        else:
            raise AssertionError(f"README section command without a step here: {command!r}")
    assert root is not None and java is not None and serve, "the section's steps are missing"
    result = java.wait()
    assert result.returncode == 0 and not result.failures(), result.stderr[-3000:]
    keep = {k: env[k] for k in ("PAIMON_WAREHOUSE", "PAIMON_LANDING", "PATH", "VIRTUAL_ENV")}
    assert env["DAGSTER_HOME"] == str(root / "dagster_home")
    with dagster_dev(root, keep, project=root) as dev:
        yield Project(root, dev, check_output)


def test_dg_check_defs(project: Project) -> None:
    assert "All definitions loaded successfully" in project.check_output


def test_materialize_sensor_and_maintenance(project: Project) -> None:
    from paimon_core import FileSystemCatalog
    from paimon_core.fsck import fsck
    from pipelines.compact import list_buckets
    from pipelines.config import CatalogSettings, TableHandle

    dev = project.dev
    warehouse = project.root / "warehouse"
    # 1. the landing sensor (the daemon) adds the landed day to the table's partitions and
    # requests its run of the table's named job
    [record] = wait_for_runs(dev, 1, timeout=600, job_name="shop_orders_ingest_job")
    assert record.dagster_run.status.value == "SUCCESS", dev.log.read_text()[-4000:]
    assert record.dagster_run.tags.get("dagster/partition") == DAY
    cat = FileSystemCatalog(str(warehouse))
    orders = cat.get_table("shop.orders").to_arrow(columns=["id", "status"]).to_pylist()
    expected = _replay(_events())
    assert {r["id"]: r["status"] for r in orders} == expected
    # the partitions are the landed days: nothing "Missing" for a day without events (the
    # calendar from 'start' would count every day since 2025-01-01)
    key = {"path": ["shop", "orders"]}
    stats = dev.graphql(PARTITION_STATS, {"k": key})["assetNodeOrError"]["partitionStats"]
    assert stats == {"numPartitions": 1, "numMaterialized": 1, "numFailed": 0,
                     "numMaterializing": 0}
    # a backfill of the landed day from the UI: exactly once, nothing applied again
    latest = cat.get_table("shop.orders").latest_snapshot().id
    backfill = ui_backfill(dev, [key["path"]], [DAY])
    [again] = wait_for_runs(dev, 1, timeout=300, tags={"dagster/backfill": backfill})
    assert again.dagster_run.status.value == "SUCCESS", dev.log.read_text()[-4000:]
    assert cat.get_table("shop.orders").latest_snapshot().id == latest

    # 2. the sensor's tick (the daemon) requests one run of the derived table's job
    [record] = wait_for_runs(dev, 1, timeout=180, job_name="mart_order_flags_job")
    assert record.dagster_run.status.value == "SUCCESS", dev.log.read_text()[-4000:]
    assert record.dagster_run.tags.get("paimon/source-range") == "(0, 1]"
    flags = cat.get_table("mart.order_flags").to_arrow().to_pylist()
    assert {r["id"]: r["is_open"] for r in flags} == {
        k: v != "done" for k, v in expected.items()}
    assert {r["source_snapshot"] for r in flags} == {1}

    # 3. maintenance of the table Java wrote: a compaction of bucket 0 launched without any
    # config is a full one, as `python -m pipelines.jobs.compact` (3 sorted runs: the universal
    # picker, below its trigger of 5, would compact nothing)
    table = cat.get_table("java.items")
    settings = CatalogSettings(str(warehouse))
    _, before = list_buckets(TableHandle.of(settings, table), buckets=[0])
    assert sum(len(files) for _, files in before.values()) > 1
    # no bucket count restated: the component's sensor reads java.items' two buckets
    assert _partition_keys(dev, ["maintenance", "java_items_compaction"], 2) == [
        "java.items/bucket-0", "java.items/bucket-1"]
    run_id = project.launch(
        "java_items_compaction_job", tags={"dagster/partition": "java.items/bucket-0"})
    run = wait_for_run(dev, run_id, timeout=300)
    assert run["status"] == "SUCCESS", dev.log.read_text()[-4000:]
    table = FileSystemCatalog(str(warehouse)).get_table("java.items")
    assert table.latest_snapshot().commit_kind.name == "COMPACT"
    _, after = list_buckets(TableHandle.of(settings, table), buckets=[0])
    assert len({f.level for _, files in after.values() for f in files}) == 1
    model: dict[int, str] = {}
    for rows in JAVA_COMMITS:
        model.update({r["id"]: r["name"] for r in rows})
    assert {r["id"]: r["name"] for r in table.to_arrow().to_pylist()} == model
    assert fsck(table).ok


def _partition_keys(dev: DagsterDev, key: list[str], count: int,
                    timeout: float = 300) -> list[str]:
    """The partition keys of asset ``key`` once there are ``count`` (as the UI lists them)."""
    deadline = time.monotonic() + timeout
    while True:
        keys = dev.graphql(PARTITION_KEYS, {"k": {"path": key}})["assetNodeOrError"][
            "partitionKeys"]
        if len(keys) >= count:
            return sorted(keys)
        assert time.monotonic() < deadline, f"{key}: partitions {keys}, not {count}"
        time.sleep(2)


def test_every_bucket_of_a_dynamic_bucket_table_is_compacted(project: Project) -> None:
    """The issue-29 case: maintenance of a ``bucket = -1`` primary-key table (no bucket count
    in the YAML): its compaction partitions are its live buckets, a UI backfill of all of
    them leaves each bucket one file, the hash index as it was, and Paimon Java reads the
    rows."""
    from paimon_core import FileSystemCatalog
    from paimon_core.fsck import fsck
    from paimon_core.table import FileStoreTable
    from pipelines.compact import list_buckets
    from pipelines.config import CatalogSettings, TableHandle

    dev = project.dev
    warehouse = project.root / "warehouse"
    settings = CatalogSettings(str(warehouse))

    def files_per_bucket(t: FileStoreTable) -> dict[int, int]:
        _, groups = list_buckets(TableHandle.of(settings, t))
        return {b: len(files) for (_, b), (_, files) in groups.items()}

    def index_entries(t: FileStoreTable) -> list[tuple[int, str, int]]:
        snap = t.latest_snapshot()
        assert snap is not None and snap.index_manifest
        return sorted((e.bucket, e.file_name, e.row_count) for e in t.new_planner(
            t.schema, None).manifests.index_manifest(snap.index_manifest))

    table = FileSystemCatalog(str(warehouse)).get_table(CLICKS)
    assert files_per_bucket(table) == {0: 3, 1: 3, 2: 3}
    index_before = index_entries(table)
    assert [e[0] for e in index_before] == [0, 1, 2]
    # the buckets come from the table: today's `buckets: -1` gave one partition, bucket-0
    keys = _partition_keys(dev, CLICKS_COMPACTION, 3)
    assert keys == [f"{CLICKS}/bucket-{b}" for b in range(3)]
    backfill = ui_backfill(dev, [CLICKS_COMPACTION], keys)
    runs = wait_for_runs(dev, 3, timeout=900, tags={"dagster/backfill": backfill})
    assert [r.dagster_run.status.value for r in runs] == ["SUCCESS"] * 3, (
        dev.log.read_text()[-4000:])
    assert sorted(r.dagster_run.tags["dagster/partition"] for r in runs) == keys
    table = FileSystemCatalog(str(warehouse)).get_table(CLICKS)
    assert files_per_bucket(table) == {0: 1, 1: 1, 2: 1}
    assert {s.commit_kind.name for s in table.snapshot_manager.snapshots()} == {
        "APPEND", "COMPACT"}
    assert index_entries(table) == index_before  # the dynamic-bucket index kept as it was
    assert {r["id"]: r["page"] for r in table.to_arrow().to_pylist()} == CLICKS_ROWS
    assert fsck(table, deep=True).ok
    out = project.root.parent / "clicks-java.jsonl"
    result = Batch("clicks-read", [{"cmd": "read", "warehouse": str(warehouse),
                                    "table": CLICKS, "engine": "java", "output": str(out)}],
                   project.root.parent).wait()
    assert result.returncode == 0 and not result.failures(), result.stderr[-3000:]
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["id"]: r["page"] for r in got} == CLICKS_ROWS
    assert len(got) == len(CLICKS_ROWS)


@pytest.mark.skipif(chromium() is None, reason="needs the Debian chromium package")
def test_asset_page_shows_row_count_and_schema(project: Project) -> None:
    """The "done when" UI check: the YAML-declared table's asset page (headless Chromium)
    shows its row count and column schema, as paimon_core reads them."""
    from paimon_core import FileSystemCatalog

    wait_for_runs(project.dev, 1, timeout=300, job_name="shop_orders_ingest_job")
    table = FileSystemCatalog(str(project.root / "warehouse")).get_table("shop.orders")
    rows = table.to_arrow().num_rows
    dom = render_dom(f"{project.dev.url}/assets/shop/orders")
    (project.root / "asset-page.html").write_text(dom)
    text = " ".join(re.sub(r"<[^>]+>", " ", dom).split())
    assert re.search(rf"Row count {rows}\b", text), text[-3000:]
    for f in table.schema.fields:
        assert re.search(rf"\b{f.name} {re.escape(f.type.sql())}", text), (f.name, text[-3000:])


def _land(root: Path, day: str, events: list[dict[str, Any]]) -> None:
    """One landing day of ``events`` under the project's landing zone, as upstream lands it
    (written aside, then renamed into place: the day's file appears whole)."""
    directory = root / "landing" / "shop.orders" / f"dt={day}"
    directory.mkdir(parents=True)
    tmp = directory.parent / f".{day}.json"
    tmp.write_text("".join(json.dumps(e) + "\n" for e in events))
    tmp.rename(directory / "part-0.json")


def test_a_day_landed_while_the_landing_sensor_is_stopped_is_a_missing_partition(
        project: Project) -> None:
    """The README: "Missing" is a landed day not ingested yet, the landing sensor stopped
    included. Stopped from the UI, a day lands: the partition appears (Missing), and a UI
    backfill of it ingests its events."""
    from paimon_core import FileSystemCatalog

    dev = project.dev
    key = {"path": ["shop", "orders"]}
    wait_for_runs(dev, 1, timeout=600, job_name="shop_orders_ingest_job")
    ui_stop_sensor(dev, "shop_orders_landing_sensor", location=project.location)
    _land(project.root, LATE_DAY, _events(LATE_DAY_EVENTS))
    deadline = time.monotonic() + 180
    while True:
        stats = dev.graphql(PARTITION_STATS, {"k": key})["assetNodeOrError"]["partitionStats"]
        if stats["numPartitions"] == 2 or time.monotonic() > deadline:
            break
        time.sleep(2)
    # one more partition, not materialized: "Missing (1)"; no run was requested for it
    assert stats == {"numPartitions": 2, "numMaterialized": 1, "numFailed": 0,
                     "numMaterializing": 0}, dev.log.read_text()[-3000:]
    assert [r.dagster_run.tags.get("dagster/partition") for r in run_records(
        dev, job_name="shop_orders_ingest_job")] == [DAY]
    backfill = ui_backfill(dev, [key["path"]], [LATE_DAY])
    [run] = wait_for_runs(dev, 1, timeout=600, tags={"dagster/backfill": backfill})
    assert run.dagster_run.status.value == "SUCCESS", dev.log.read_text()[-4000:]
    rows = FileSystemCatalog(str(project.root / "warehouse")).get_table(
        "shop.orders").to_arrow(columns=["id", "status"]).to_pylist()
    assert {r["id"]: r["status"] for r in rows} == _replay(
        _events() + _events(LATE_DAY_EVENTS)) == {1: "done", 2: "done", 4: "new"}
    stats = dev.graphql(PARTITION_STATS, {"k": key})["assetNodeOrError"]["partitionStats"]
    assert (stats["numPartitions"], stats["numMaterialized"]) == (2, 2)


def test_a_typo_in_a_derived_source_fails_dg_check_defs(tmp_path: Path) -> None:
    """The README's project with ``source: shop.ordres``: ``dg check defs`` fails with one
    line naming the file, the field, the value and the closest table (before: it loaded, the
    lineage pointed at a phantom asset and the sensor skipped every tick)."""
    root = tmp_path / "my_lake"
    for name, content in section_files(section()).items():
        if name == "my_lake/defs/order_flags/defs.yaml":
            assert "  source: shop.orders\n" in content
            content = content.replace("  source: shop.orders\n", "  source: shop.ordres\n")
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    p = subprocess.run([str(VENV_BIN / "dg"), "check", "defs"], cwd=root, env=_env(),
                       capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-3000:]
    expected = ("my_lake/defs/order_flags/defs.yaml:9: source: 'shop.ordres' is no table of "
                "this code location (did you mean 'shop.orders'?); its components write "
                "flink.clicks, java.items, shop.orders (a table only another engine writes: add "
                "source_external: true)")
    assert expected in out.splitlines()[-20:] or any(
        line.endswith(expected) for line in out.splitlines()), out[-3000:]
