"""Open once, ask once: how often one CDC day and one bucket's compaction open the catalog,
build a FileIO on the warehouse, make a table object, ask "already committed?" and list the
bucket's live files, on the driver (the Dagster process; Spark tasks open their own copy of
the table in their own processes and are not counted).

Measured before issue 14 (part "api"): one CDC day made 4 catalogs, 6 warehouse FileIOs and
5 table objects and asked "already committed?" 3 times (the asset, ``ingest_batch``,
``commit_messages``); one bucket's compaction made 6 catalogs, 10 warehouse FileIOs and 7
table objects and listed the bucket's live files 4 times (3 before the compaction: the
asset's state, the asset's plan, the job's plan). The commit itself still checks that its
identifier has not landed (exactly once is the committer's guarantee, not a question the
pipeline asks), which is not counted here."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

import paimon_core.compact.manager
import paimon_core.inspect
from assets.cdc import cdc_customers
from assets.demo_data import Feed, generate
from assets.maintenance import compactions
from assets.tables import ORDERS
from paimon_core import FileStoreTable, FileSystemCatalog, TableCommit
from paimon_core.integration import FileIO
from tests.assets.helpers import commit_orders, order_rows

pytestmark = pytest.mark.spark

ORDERS_COMPACTION = next(c for c in compactions if c.asset.key.path[-1] == "cdc_orders_compaction")


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch, lake: dict[str, Path]) -> Iterator[Counter[str]]:
    """Counts, from when it is requested: catalogs, FileIOs on the warehouse, table objects,
    "already committed?" questions (``filter_committed`` / ``landed``) and live-file listings
    of buckets."""
    seen: Counter[str] = Counter()
    warehouse = str(lake["warehouse"])

    def counting(name: str, fn: Callable[..., Any],
                 when: Callable[..., bool] = lambda *a, **k: True) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if when(*args, **kwargs):
                seen[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(FileSystemCatalog, "__init__",
                        counting("catalogs", FileSystemCatalog.__init__))
    monkeypatch.setattr(FileIO, "__init__", counting(
        "warehouse_file_ios", FileIO.__init__,
        lambda self, root, *a, **k: str(root).startswith(warehouse)))
    monkeypatch.setattr(FileStoreTable, "__init__", counting("tables", FileStoreTable.__init__))
    monkeypatch.setattr(TableCommit, "filter_committed",
                        counting("already_committed", TableCommit.filter_committed))
    # the question asked by the pipeline; the committer's own check at commit (Java's
    # committer skips a landed identifier too) is not one of them
    monkeypatch.setattr(TableCommit, "landed", counting(
        "already_committed", TableCommit.landed,
        lambda *a, **k: not sys._getframe(2).f_globals["__name__"].startswith(
            "paimon_core.commit")))
    for module in (paimon_core.compact.manager, paimon_core.inspect):
        monkeypatch.setattr(module, "live_bucket_files",
                            counting("listings", module.live_bucket_files))
    yield seen


def test_one_cdc_day_opens_the_table_once_and_asks_once(
    spark: Any, lake: dict[str, Path], resources: dict[str, Any], counts: Counter[str]
) -> None:
    landing = str(lake["landing"])
    feed: Feed = generate(FileIO(landing), landing, customers=30, orders_per_day=10)
    counts.clear()  # the landing zone's FileIO above is not the job's
    result = dg.materialize([cdc_customers], resources=resources, partition_key=feed.days[0])
    assert result.success
    # listings: the table's live files once, after the commit, for the metadata describing
    # the table (row count, sorted runs per bucket: assets.metadata.table_state_metadata)
    assert dict(counts) == {"catalogs": 1, "warehouse_file_ios": 1, "tables": 1,
                            "already_committed": 1, "listings": 1}


def test_one_bucket_compaction_opens_once_and_lists_once(
    spark: Any, lake: dict[str, Path], resources: dict[str, Any], counts: Counter[str]
) -> None:
    table = ORDERS.ensure(FileSystemCatalog(str(lake["warehouse"])))
    for i in range(6):
        commit_orders(table, order_rows(range(1, 41), f"s{i}"), i + 1)
    counts.clear()
    result = dg.materialize([ORDERS_COMPACTION.asset], partition_key="cdc.orders/bucket-2",
                            resources={k: resources[k] for k in ("catalog", "spark")})
    assert result.success
    # listings: the bucket before (state and plan: one) and after the compaction (one), and
    # the table's state reported on the table's own asset (assets.observations
    # .report_table_state: the asset Overview shows the compacted table)
    assert dict(counts) == {"catalogs": 1, "warehouse_file_ios": 1, "tables": 1,
                            "listings": 3}
