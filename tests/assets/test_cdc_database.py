"""``PaimonCdcDatabase`` as a user meets it: README.md's "A whole database from one feed" entry
in a ``dg`` project (the project files of "Your own table in 10 lines of YAML"), served by
``dg dev`` (one for the module), over a landing of canal-json events of three tables
(``tests/pipelines/cdc_corpus/database/canal_inventory_1.jsonl``: inventory.products,
customers, orders interleaved; its trailing ``CREATE TABLE addresses`` DDL is held back for the
second batch, so that ``addresses`` first appears there):

* every landed table is an asset of the code location (GraphQL), and headless Chromium's asset
  graph shows them;
* one run launched as the UI's "Materialize all" does (the implicit asset job, all three keys)
  writes the three tables (rows written by hand from the events), each materialization with
  its own row count and batches, the run in the Spark pool; each asset page shows its row
  count;
* a fourth table that lands later (``canal_inventory_2.jsonl``: ``addresses``) is synced by the
  next run -- its materialization recorded under ``[ods, addresses]`` -- and is an asset after
  the code location's Reload, with no change to the YAML.

Cost: one ``dg dev`` start, two sync runs (one Spark session each), one Reload, three Chromium
pages.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assets.resources import SPARK_POOL
from tests.assets.processes import (
    REPO,
    REPOSITORY_NAME,
    VENV_BIN,
    DagsterDev,
    chromium,
    dagster_dev,
    materialization_metadata,
    render_dom,
    run_log_messages,
    run_records,
    ui_materialize,
    ui_reload,
    wait_for_run,
)
from tests.assets.test_components_project import section_files
from tests.readme_harness import README

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SECTION = "## A whole database from one feed"
PROJECT_SECTION = "## Your own table in 10 lines of YAML"
#: the files of the project section this test's project takes (the rest declare other tables)
PROJECT_FILES = ("pyproject.toml", "my_lake/definitions.py", "my_lake/defs/lake/defs.yaml")
CORPUS = REPO / "tests" / "pipelines" / "cdc_corpus" / "database"
FIRST = ["ods", "customers"], ["ods", "orders"], ["ods", "products"]
LATER = ["ods", "addresses"]

#: the tables after batch 1, by hand from the events (INSERT 101, 102; UPDATE 102 weight 8.5;
#: DELETE 101 / INSERT 1001, 1002; UPDATE 1001 email / INSERT 10001, 10002)
PRODUCTS_1 = {102: ("car battery", "12V car battery")}
CUSTOMERS_1 = {1001: "sally@example.com", 1002: "gbailey@foobar.com"}
ORDERS_1 = {10001: (1001, 1, 102), 10002: (1002, 2, 101)}
#: after batch 2: INSERT 103 / DELETE 1002 / addresses INSERT 10, 11, UPDATE 11
PRODUCTS_2 = {**PRODUCTS_1, 103: ("12-pack drill bits",
                                  "12-pack of drill bits with sizes ranging from #40 to #3")}
CUSTOMERS_2 = {1001: "sally@example.com"}
ADDRESSES_2 = {10: ("3183 Moore Avenue", "Euless"), 11: ("2389 Hidden Valley Road", "Harrisburg")}

LATEST = """
query($k: AssetKeyInput!) { assetOrError(assetKey: $k) { ... on Asset {
    assetMaterializations(limit: 1) { runId metadataEntries {
        label ... on IntMetadataEntry { intValue } } } } } }"""


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:] if end < 0 else text[start:end]


def _events(name: str) -> list[str]:
    return [line for line in (CORPUS / name).read_text().splitlines() if line.strip()]


def _land(landing: Path, batch: int, lines: list[str]) -> None:
    """One batch of the feed, as upstream lands it (written aside, renamed into place)."""
    feed = landing / "inventory"
    feed.mkdir(parents=True, exist_ok=True)
    tmp = feed / f".batch-{batch:06d}"
    tmp.mkdir()
    (tmp / "part-0.jsonl").write_text("".join(line + "\n" for line in lines))
    tmp.rename(feed / f"batch-{batch:06d}")


class Project:
    def __init__(self, root: Path, dev: DagsterDev) -> None:
        self.root, self.dev = root, dev
        entries = dev.graphql("{ workspaceOrError { ... on Workspace { locationEntries {"
                              " name } } } }")["workspaceOrError"]["locationEntries"]
        [self.location] = [e["name"] for e in entries]

    def asset_keys(self) -> set[str]:
        [repo] = self.dev.graphql(REPOSITORY_NAME)["repositoriesOrError"]["nodes"]
        nodes = self.dev.graphql(
            "query($r: RepositorySelector!) { repositoryOrError(repositorySelector: $r) {"
            " ... on Repository { assetNodes { assetKey { path } } } } }",
            {"r": {"repositoryName": repo["name"], "repositoryLocationName": self.location}},
        )["repositoryOrError"]["assetNodes"]
        return {"/".join(n["assetKey"]["path"]) for n in nodes}

    def materialize(self, keys: list[list[str]]) -> str:
        run_id = ui_materialize(self.dev, keys, location=self.location)
        run = wait_for_run(self.dev, run_id, timeout=1200)
        assert run["status"] == "SUCCESS", self.dev.log.read_text()[-5000:]
        return run_id

    def rows(self, table: str) -> list[dict[str, Any]]:
        from paimon_core import FileSystemCatalog

        return FileSystemCatalog(str(self.root / "warehouse")).get_table(
            f"ods.{table}").to_arrow().to_pylist()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    tmp = tmp_path_factory.mktemp("cdc-database")
    root = tmp / "my_lake"
    files = section_files(_section(PROJECT_SECTION))
    files.update(section_files(_section(SECTION)))
    for name in (*PROJECT_FILES, "my_lake/defs/ods/defs.yaml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(files[name])
    first = _events("canal_inventory_1.jsonl")
    assert json.loads(first[-1])["isDdl"] is True  # the CREATE TABLE addresses, held back
    _land(root / "landing", 1, first[:-1])
    env = {"PAIMON_WAREHOUSE": str(root / "warehouse"), "PAIMON_LANDING": str(root / "landing"),
           "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
           "VIRTUAL_ENV": str(VENV_BIN.parent)}
    with dagster_dev(tmp, env, project=root) as dev:
        yield Project(root, dev)


def _metadata(project: Project, run_id: str) -> dict[str, dict[str, Any]]:
    return materialization_metadata(project.dev, run_id)


def test_every_table_is_an_asset_and_one_run_writes_them(project: Project) -> None:
    keys = project.asset_keys()
    assert {"/".join(k) for k in FIRST} <= keys, keys
    assert "/".join(LATER) not in keys  # not landed yet
    run_id = project.materialize([list(k) for k in FIRST])
    # the run holds the Spark pool, as every Spark asset's run
    [record] = run_records(project.dev, run_ids=[run_id])
    assert record.dagster_run.run_op_concurrency is not None
    assert SPARK_POOL in record.dagster_run.run_op_concurrency.all_pools
    assert {r["id"]: (r["name"], r["description"]) for r in project.rows("products")} == \
        PRODUCTS_1
    assert {r["id"]: r["email"] for r in project.rows("customers")} == CUSTOMERS_1
    # the entry's metadata_columns: the events' database on every row
    assert {r["database_name"] for r in project.rows("customers")} == {"inventory"}
    assert {r["order_number"]: (r["purchaser"], r["quantity"], r["product_id"])
            for r in project.rows("orders")} == ORDERS_1
    md = _metadata(project, run_id)
    counts = {"ods/products": len(PRODUCTS_1), "ods/customers": len(CUSTOMERS_1),
              "ods/orders": len(ORDERS_1)}
    for key, rows in counts.items():
        assert md[key]["dagster/row_count"] == rows, md[key]
        assert md[key]["cdc/batches"] == [1], md[key]
        assert md[key]["paimon/snapshot_id"] == "1", md[key]
        assert md[key]["paimon/table"] == key.replace("/", "."), md[key]
    # the changes each table's batch carried, per table: products +I 102, -D 101 (the
    # UPDATE and the INSERT of 102 fold into one row)
    assert md["ods/products"]["cdc/rows_written"] == 2
    # three canal events of products: one INSERT of two rows, one UPDATE, one DELETE
    assert md["ods/products"]["cdc/events"] == md["ods/products"]["cdc/valid_events"] == 3
    assert md["ods/orders"]["cdc/rows_written"] == 2


@pytest.mark.skipif(chromium() is None, reason="needs the Debian chromium package")
def test_the_asset_graph_and_pages_show_every_table(project: Project) -> None:
    dom = render_dom(f"{project.dev.url}/asset-groups")
    (project.root / "asset-graph.html").write_text(dom)
    text = re.sub(r"<[^>]+>", " ", dom)
    for _, name in FIRST:
        assert re.search(rf"\b{name}\b", text), f"{name} not on the asset graph"
    dom = render_dom(f"{project.dev.url}/assets/ods/products")
    text = " ".join(re.sub(r"<[^>]+>", " ", dom).split())
    assert re.search(rf"Row count {len(PRODUCTS_1)}\b", text), text[-3000:]


def test_a_table_that_lands_later_is_an_asset_after_a_reload(project: Project) -> None:
    second = _events("canal_inventory_2.jsonl")
    ddl = _events("canal_inventory_1.jsonl")[-1]
    _land(project.root / "landing", 2, [ddl, *second])
    # the next run syncs it (not an asset yet): its materialization is recorded all the same
    run_id = project.materialize([list(k) for k in FIRST])
    assert {r["id"]: (r["street"], r["city"]) for r in project.rows("addresses")} == ADDRESSES_2
    assert {r["id"]: r["name"] for r in project.rows("products")} == {
        k: v[0] for k, v in PRODUCTS_2.items()}
    assert {r["id"]: r["email"] for r in project.rows("customers")} == CUSTOMERS_2
    md = _metadata(project, run_id)
    assert md["ods/addresses"]["dagster/row_count"] == len(ADDRESSES_2), md
    assert md["ods/products"]["dagster/row_count"] == len(PRODUCTS_2)
    assert md["ods/orders"]["paimon/commit_kind"] == "NONE"  # nothing of orders in batch 2
    assert "/".join(LATER) not in project.asset_keys()
    said = [m for m in run_log_messages(project.dev, run_id) if "ods.addresses was synced" in m]
    assert said and "reload the code location to see it as ods/addresses" in said[0], said
    # the UI's Reload: the state is read again, the table is an asset; no YAML changed
    ui_reload(project.dev, project.location)
    assert "/".join(LATER) in project.asset_keys()
    latest = project.dev.graphql(LATEST, {"k": {"path": LATER}})["assetOrError"][
        "assetMaterializations"]
    assert latest and latest[0]["runId"] == run_id
    rows = {e["label"]: e.get("intValue") for e in latest[0]["metadataEntries"]}
    assert rows["dagster/row_count"] == len(ADDRESSES_2)
    if chromium() is not None:
        dom = render_dom(f"{project.dev.url}/assets/ods/addresses")
        text = " ".join(re.sub(r"<[^>]+>", " ", dom).split())
        assert re.search(rf"Row count {len(ADDRESSES_2)}\b", text), text[-3000:]
