"""A real ``dagster dev``: the code location loads, a run launched over GraphQL materializes
an asset (its snapshot names the run), the run queue never runs two compactions of one bucket
at once (tag concurrency limit of dagster.yaml), and headless Chromium renders the asset graph
page with our asset names in it. The screenshot is kept as docs/asset-graph.png (README)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from assets.metadata import RUN_ID_PROPERTY
from assets.tables import ORDERS, ORDERS_ENRICHED
from paimon_core.catalog import FileSystemCatalog
from tests.assets.helpers import by_key, commit_orders, order_rows
from tests.assets.processes import (
    LAUNCH_RUN,
    REPO,
    chromium,
    dagster_dev,
    render_dom,
    run_event_time,
    screenshot,
    wait_for_run,
)

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


def test_dagster_dev_graphql_run_and_asset_graph(tmp_path: Path, lake: dict[str, Path]) -> None:
    cat = FileSystemCatalog(str(lake["warehouse"]))
    orders = ORDERS.ensure(cat)
    commit_orders(orders, order_rows([1, 2, 3, 4], "new"), 1)
    commit_orders(orders, order_rows([4], "new", "-D"), 2)
    env = {"PAIMON_WAREHOUSE": str(lake["warehouse"]), "PAIMON_LANDING": str(lake["landing"])}
    with dagster_dev(tmp_path, env) as dev:
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
        shot = tmp_path / "asset-graph.png"
        screenshot(url, shot, window="1600,1700")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
        docs = REPO / "docs"
        docs.mkdir(exist_ok=True)
        shutil.copy(shot, docs / "asset-graph.png")
