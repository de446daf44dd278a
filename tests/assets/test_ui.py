"""A real ``dagster dev`` (one for the module): the code location loads, a run launched over
GraphQL materializes an asset (its snapshot names the run), the run queue never runs two
compactions of one bucket at once (tag concurrency limit of dagster.yaml), and headless
Chromium renders the asset graph page with our asset names in it (the screenshot is kept as
docs/asset-graph.png, README); and a table's asset Overview shows the table as it is after a
CDC ingestion, a compaction and an expiry launched over GraphQL, then after another engine's
commit (the table's state sensor, on by default)."""

from __future__ import annotations

import datetime
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from assets.demo_data import generate
from assets.metadata import RUN_ID_PROPERTY
from assets.tables import CUSTOMERS, ORDERS, ORDERS_ENRICHED
from paimon_core.catalog import FileSystemCatalog
from paimon_core.io.file_io import FileIO
from tests.assets.helpers import by_key, commit_orders, order_rows
from tests.assets.processes import (
    LAUNCH_RUN,
    REPO,
    DagsterDev,
    chromium,
    dagster_dev,
    render_dom,
    run_event_time,
    screenshot,
    ui_materialize,
    wait_for_run,
)
from tests.tables import write_rows

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium() is None, reason="needs the Debian chromium package"),
]

REPOSITORY = """
{ repositoriesOrError { ... on RepositoryConnection { nodes {
    name location { name }
    jobs { name } sensors { name } schedules { name }
    assetNodes { assetKey { path } }
} } } }"""

ASSET_NAMES = ("customers", "orders", "fx_rates", "orders_enriched", "cdc_orders_compaction",
               "cdc_orders_expiry", "ref_fx_rates_compaction", "mart_orders_enriched_expiry")


#: the landing day the Overview test ingests into cdc.customers
DAY = "2025-01-06"


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DagsterDev, Path]]:
    """``dagster dev`` over a lake holding cdc.orders (two commits), cdc.customers (one
    commit of another engine) and a landing day of the demo feed; and the lake's root."""
    root = tmp_path_factory.mktemp("ui")
    lake = {"warehouse": root / "warehouse", "landing": root / "landing"}
    for p in lake.values():
        p.mkdir()
    cat = FileSystemCatalog(str(lake["warehouse"]))
    orders = ORDERS.ensure(cat)
    commit_orders(orders, order_rows([1, 2, 3, 4], "new"), 1)
    commit_orders(orders, order_rows([4], "new", "-D"), 2)
    write_rows(CUSTOMERS.ensure(cat), customer_rows([9001, 9002, 9003, 9004]), user="elsewhere")
    generate(FileIO(str(lake["landing"])), str(lake["landing"]), days=[DAY], customers=20,
             orders_per_day=12)
    env = {"PAIMON_WAREHOUSE": str(lake["warehouse"]), "PAIMON_LANDING": str(lake["landing"])}
    with dagster_dev(root, env) as dev:
        yield dev, root


def customer_rows(ids: list[int]) -> pa.Table:
    """``cdc.customers`` rows as another engine writes them (source positions beyond the
    feed's)."""
    n = len(ids)
    return pa.table({
        "customer_id": pa.array(ids, pa.int64()),
        "name": [f"Other {i}" for i in ids], "email": [f"o{i}@example.com" for i in ids],
        "country": ["PT"] * n, "tier": ["gold"] * n,
        "updated_at": pa.array([datetime.datetime(2025, 2, 1)] * n, pa.timestamp("ms")),
        "src_lsn": pa.array([10**12 + i for i in ids], pa.int64()),
    })


def test_dagster_dev_graphql_run_and_asset_graph(ui: tuple[DagsterDev, Path]) -> None:
    dev, root = ui
    cat = FileSystemCatalog(str(root / "warehouse"))
    [repo] = dev.graphql(REPOSITORY)["repositoriesOrError"]["nodes"]
    assert repo["location"]["name"] == "paimon"
    keys = {"/".join(n["assetKey"]["path"]) for n in repo["assetNodes"]}
    assert {"cdc/orders", "cdc/customers", "ref/fx_rates", "mart/orders_enriched"} <= keys
    assert "cdc_orders_snapshot_sensor" in {s["name"] for s in repo["sensors"]}

    launched = dev.graphql(LAUNCH_RUN, {"p": {
        "selector": {"repositoryLocationName": "paimon",
                     "repositoryName": repo["name"],
                     "jobName": "mart_orders_enriched_job"},
        "runConfigData": {},
        "executionMetadata": {"tags": [{"key": "test", "value": "graphql"}]},
    }})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run = wait_for_run(dev, launched["run"]["runId"])
    assert run["status"] == "SUCCESS", dev.log.read_text()[-4000:]
    assert {"key": "paimon/derived", "value": "mart.orders_enriched"} in run["tags"]

    target = cat.get_table(ORDERS_ENRICHED.identifier)
    assert sorted(by_key(target, "order_id")) == [1, 2, 3]
    # lineage: the snapshot names a successful run of this instance (ours, or the
    # sensor's if its tick got there first; the other one then applied nothing)
    writer = target.latest_snapshot().properties[RUN_ID_PROPERTY]
    assert wait_for_run(dev, writer)["status"] == "SUCCESS"

    # the run queue: two compaction runs of the same bucket never run at once (tag limit
    # on dagster/partition in dagster.yaml); another bucket is not held back by them
    def launch_compaction(bucket: str) -> str:
        out = dev.graphql(LAUNCH_RUN, {"p": {
            "selector": {"repositoryLocationName": "paimon", "repositoryName": repo["name"],
                         "jobName": "cdc_orders_compaction_job"},
            "runConfigData": {},
            "executionMetadata": {"tags": [
                {"key": "dagster/partition", "value": f"cdc.orders/bucket-{bucket}"}]},
        }})["launchRun"]
        assert out["__typename"] == "LaunchRunSuccess", out
        return str(out["run"]["runId"])

    same = [launch_compaction("1"), launch_compaction("1")]
    other = launch_compaction("2")
    for rid in [*same, other]:
        assert wait_for_run(dev, rid)["status"] == "SUCCESS", dev.log.read_text()[-4000:]
    # the queue launched the second one only after the first had finished
    first, second = sorted(same, key=lambda r: run_event_time(dev, r, "RUN_STARTING"))
    assert run_event_time(dev, second, "RUN_STARTING") >= run_event_time(
        dev, first, "RUN_SUCCESS"), "two compactions of bucket 1 were running at once"

    # every group expanded (the UI collapses groups when there are several)
    groups = ",".join(f"global@global:{g}" for g in ("ingestion", "derived", "maintenance"))
    url = f"{dev.url}/asset-groups?expanded={groups}"
    dom = render_dom(url)
    text = re.sub(r"<[^>]+>", " ", dom)
    for name in ASSET_NAMES:
        assert re.search(rf"\b{name}\b", text), f"{name} not rendered"
    shot = root / "asset-graph.png"
    screenshot(url, shot, window="1600,1700")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    docs = REPO / "docs"
    docs.mkdir(exist_ok=True)
    shutil.copy(shot, docs / "asset-graph.png")


# ------------------------------------------------------------------------------ asset Overview
#: what the asset Overview reads (dagster-webserver 1.13: AssetOverviewMetadataEventsQuery):
#: the latest materialization's metadata
LATEST_MATERIALIZATION = """
query($k: AssetKeyInput!) { assetOrError(assetKey: $k) { ... on Asset {
    assetMaterializations(limit: 1) { runId metadataEntries {
        label ... on TextMetadataEntry { text } } } } } }"""


def _overview(dev: DagsterDev, key: list[str], save: Path) -> str:
    """The text of the asset's Overview page as headless Chromium renders it."""
    dom = render_dom(f"{dev.url}/assets/{'/'.join(key)}")
    save.write_text(dom)
    return " ".join(re.sub(r"<[^>]+>", " ", dom).split())


def _shown(text: str, label: str) -> str:
    """The value the Overview's metadata table shows for ``label`` (after the event's time:
    ``paimon/snapshot_id Nov 28, 10:27 AM 3``)."""
    m = re.search(rf"{re.escape(label)} (?:\w{{3}} \d+, \d+:\d+ [AP]M )?(\S+)", text)
    assert m, f"{label} not on the Overview: {text[-3000:]}"
    return m.group(1)


def _reported_snapshot(dev: DagsterDev, key: list[str]) -> str | None:
    mats = dev.graphql(LATEST_MATERIALIZATION, {"k": {"path": key}})["assetOrError"][
        "assetMaterializations"]
    entries = {e["label"]: e.get("text") for e in mats[0]["metadataEntries"]} if mats else {}
    return entries.get("paimon/snapshot_id")


def test_overview_shows_the_table_after_maintenance_and_other_engines(
        ui: tuple[DagsterDev, Path]) -> None:
    """After a CDC ingestion, a full compaction of a bucket and an expiry (each launched over
    GraphQL as the UI does), the table's Overview shows the table's current snapshot, live
    files, earliest snapshot and row count -- not the ingestion's superseded snapshot; a
    commit by another engine (paimon_core directly) shows there after the table's state
    sensor ticked."""
    dev, root = ui
    key = ["cdc", "customers"]
    cat = FileSystemCatalog(str(root / "warehouse"))
    runs: list[str] = [ui_materialize(dev, [key], partition=DAY)]  # the landed day
    assert wait_for_run(dev, runs[-1], timeout=600)["status"] == "SUCCESS", \
        dev.log.read_text()[-4000:]
    runs.append(ui_materialize(
        dev, [["maintenance", "cdc_customers_compaction"]], partition="cdc.customers/bucket-0",
        run_config={"ops": {"maintenance__cdc_customers_compaction": {"config": {
            "full": True}}}}))
    assert wait_for_run(dev, runs[-1], timeout=600)["status"] == "SUCCESS", \
        dev.log.read_text()[-4000:]
    runs.append(ui_materialize(
        dev, [["maintenance", "cdc_customers_expiry"]],
        run_config={"ops": {"maintenance__cdc_customers_expiry": {"config": {
            "retain_min": 1, "retain_max": 1}}}}))
    assert wait_for_run(dev, runs[-1], timeout=600)["status"] == "SUCCESS", \
        dev.log.read_text()[-4000:]
    table = cat.get_table(CUSTOMERS.identifier)
    snap = table.latest_snapshot()
    # another engine's commit, the ingestion, the compaction; expiry left only the latest
    assert (snap.id, snap.commit_kind.value) == (3, "COMPACT")
    assert table.snapshot_manager.earliest_snapshot_id() == 3
    files = table.inspect.files().num_rows
    rows = table.to_arrow().num_rows
    assert rows == 20 + 4  # the feed's 20 customers and the 4 written elsewhere

    text = _overview(dev, key, root / "overview-maintained.html")
    assert _shown(text, "paimon/snapshot_id") == "3"
    assert _shown(text, "paimon/commit_kind") == "COMPACT"
    assert _shown(text, "paimon/live_files") == str(files)
    assert _shown(text, "paimon/earliest_snapshot") == "3"
    assert re.search(rf"Row count {rows}\b", text), text[-3000:]

    # another engine commits; the table's state sensor (every 30 s) reports it
    write_rows(table, customer_rows([9005]), user="elsewhere")
    deadline = time.monotonic() + 240
    while _reported_snapshot(dev, key) != "4":
        assert time.monotonic() < deadline, "the state sensor did not report snapshot 4"
        time.sleep(3)
    text = _overview(dev, key, root / "overview-elsewhere.html")
    assert _shown(text, "paimon/snapshot_id") == "4"
    assert _shown(text, "paimon/commit_kind") == "APPEND"
    assert _shown(text, "paimon/live_files") == str(files + 1)  # one new file
    assert re.search(rf"Row count {rows + 1}\b", text), text[-3000:]
    assert "elsewhere (APPEND), seen by sensor cdc_customers_state_sensor" in text
