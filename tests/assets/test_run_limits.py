"""The run limits of the instance hold however a run is launched — checked on a real
``dagster dev`` (the shipped ``dagster.yaml``) through the webserver's GraphQL, sending what the
UI sends: "Materialize" of one partition of an asset (the implicit asset job, with the
partition's tags from the webserver), a backfill of several partitions, a re-execution.

* the queue never runs two compactions of one bucket at once, nor more Spark runs than the
  Spark pool allows; the runs carry the partition tag and the pool the limits work on;
* a run failing with a failure no retry can fix is not retried by the instance's run
  retries, while any other failure still is;
* a CDC run with nothing to ingest (already committed, or an empty landing day), or an
  expiry with nothing to delete, starts no Spark session (the run's log says when the
  resource starts one).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from assets.cdc import cdc_commit_user
from assets.maintenance import partition_key_of
from assets.resources import SPARK_POOL, SPARK_STARTED
from assets.runs import DERIVED_POOL
from assets.tables import CUSTOMERS, FX_RATES, ORDERS, ORDERS_ENRICHED
from paimon_core.catalog import FileSystemCatalog
from paimon_core.io.file_io import FileIO
from tests.assets.helpers import commit_orders, order_rows
from tests.assets.processes import (
    DagsterDev,
    dagster_dev,
    pool_limits,
    run_event_time,
    run_log_messages,
    run_records,
    ui_backfill,
    ui_materialize,
    ui_reexecute,
    wait_for_run,
    wait_for_runs,
)

pytestmark = pytest.mark.slow

#: dagster.yaml: Spark runs at once (the pool's limit in the embedded deployment)
SPARK_RUNS = 2
PARTITION_TAG = "dagster/partition"
WILL_RETRY_TAG = "dagster/will_retry"
COMPACTION = ["maintenance", "cdc_orders_compaction"]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("run-limits")
    out = {"root": root, "warehouse": root / "warehouse", "landing": root / "landing"}
    for key in ("warehouse", "landing"):
        out[key].mkdir()
    return out


@pytest.fixture(scope="module")
def dev(lake: dict[str, Path]) -> Iterator[DagsterDev]:
    env = {"PAIMON_WAREHOUSE": str(lake["warehouse"]), "PAIMON_LANDING": str(lake["landing"])}
    with dagster_dev(lake["root"], env) as d:
        yield d


def _held(dev: DagsterDev, records: list[Any]) -> list[tuple[float, float]]:
    """When each run held its place in the queue: from its launch (``RUN_STARTING``, the
    queue let it go) to its end."""
    return [(run_event_time(dev, r.dagster_run.run_id, "RUN_STARTING"), r.end_time)
            for r in records]


def _max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans that were open at the same moment."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    now = peak = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        now += step
        peak = max(peak, now)
    return peak


def test_compaction_limits_hold_for_ui_launches(dev: DagsterDev, lake: dict[str, Path]) -> None:
    orders = ORDERS.ensure(FileSystemCatalog(str(lake["warehouse"])))
    commit_orders(orders, order_rows(range(1, 41), "new"), 1)
    keys = [partition_key_of(ORDERS, None, b) for b in range(4)]
    # the first runs of a fresh instance are a burst: "Materialize" bucket 1 from the asset
    # graph and backfill every bucket (two runs of bucket 1, five Spark runs at once); then
    # re-execute the first run while bucket 1 is materialized once more
    single = ui_materialize(dev, [COMPACTION], keys[1])
    backfill = ui_backfill(dev, [COMPACTION], keys)
    filled = [r.dagster_run.run_id for r in wait_for_runs(
        dev, 4, tags={"dagster/backfill": backfill})]
    assert wait_for_run(dev, single)["status"] == "SUCCESS", dev.log.read_text()[-4000:]
    again = ui_reexecute(dev, single)
    once_more = ui_materialize(dev, [COMPACTION], keys[1])
    for rid in (again, once_more):
        wait_for_run(dev, rid)
    records = run_records(dev, run_ids=[single, again, once_more, *filled])
    assert len(records) == 7
    for rec in records:
        assert rec.dagster_run.status.value == "SUCCESS", dev.log.read_text()[-4000:]
    bucket_one = [r for r in records if r.dagster_run.tags[PARTITION_TAG] == keys[1]]
    assert len(bucket_one) == 4  # the first, the backfill's, the re-execution, once more
    assert _max_overlap(_held(dev, bucket_one)) == 1, _held(dev, bucket_one)
    assert _max_overlap(_held(dev, records)) <= SPARK_RUNS, _held(dev, records)
    # what the limits work on is on every run: the bucket's partition tag and the Spark pool,
    # which the instance knew before the first run (python -m assets.pools)
    assert pool_limits(dev)[SPARK_POOL] == SPARK_RUNS
    for rec in records:
        run = rec.dagster_run
        assert run.tags.get(PARTITION_TAG) in keys, run.tags
        assert run.run_op_concurrency is not None, run.tags
        assert SPARK_POOL in run.run_op_concurrency.all_pools


def test_non_retryable_failure_is_not_retried(dev: DagsterDev, lake: dict[str, Path]) -> None:
    # nothing has landed for that day: a failure no retry can fix
    refused = ui_materialize(dev, [CUSTOMERS.key_path], "2025-02-01")
    run = wait_for_run(dev, refused)
    assert run["status"] == "FAILURE"
    assert {"key": WILL_RETRY_TAG, "value": "false"} in run["tags"]
    # a compaction run over a range of buckets (the launchpad's "single run" of a range: range
    # tags, no dagster/partition to limit it by) is refused before any work, not retried
    ranged = ui_materialize(dev, [COMPACTION], tags={
        "dagster/asset_partition_range_start": partition_key_of(ORDERS, None, 0),
        "dagster/asset_partition_range_end": partition_key_of(ORDERS, None, 2)})
    run = wait_for_run(dev, ranged)
    assert run["status"] == "FAILURE"
    assert {"key": WILL_RETRY_TAG, "value": "false"} in run["tags"]
    assert any("compacts one bucket" in m for m in run_log_messages(dev, ranged))
    # any other failure is retried: a table whose snapshot file cannot be read (one retry)
    table = FX_RATES.ensure(FileSystemCatalog(str(lake["warehouse"])))
    with table.new_write("test") as w:
        w.write_arrow(pa.table({
            "dt": ["2025-01-06"], "currency": ["EUR"],
            "rate_to_eur": pa.array([Decimal("1")], pa.decimal128(18, 6)), "source": ["t"]}))
        msgs = w.prepare_commit()
    table.new_commit("test").commit(msgs, commit_identifier=1)
    (Path(table.path) / "snapshot" / "snapshot-1").write_text("{ not json")
    broken = ui_materialize(
        dev, [["maintenance", "ref_fx_rates_compaction"]],
        partition_key_of(FX_RATES, {"dt": "2025-01-06"}, 0), tags={"dagster/max_retries": "1"})
    assert wait_for_run(dev, broken)["status"] == "FAILURE"
    [retry] = wait_for_runs(dev, 1, tags={"dagster/parent_run_id": broken})
    assert retry.dagster_run.status.value == "FAILURE"
    # the retry daemon handles failures in the order they happened: it has passed the others
    for rid in (refused, ranged):
        assert not run_records(dev, tags={"dagster/parent_run_id": rid})
        assert not any(SPARK_STARTED in m for m in run_log_messages(dev, rid))
    assert any("no change events have landed" in m for m in run_log_messages(dev, refused))


def test_cdc_run_with_nothing_to_do_starts_no_spark(dev: DagsterDev,
                                                     lake: dict[str, Path]) -> None:
    from assets.demo_data import generate

    landing = str(lake["landing"])
    feed = generate(FileIO(landing), landing, days=("2025-01-06",), customers=20,
                    orders_per_day=10)
    day = feed.days[0]
    (lake["landing"] / CUSTOMERS.identifier / "dt=2025-01-05").mkdir(parents=True)

    ingested = ui_materialize(dev, [CUSTOMERS.key_path], day)
    assert wait_for_run(dev, ingested)["status"] == "SUCCESS", dev.log.read_text()[-4000:]
    assert any(SPARK_STARTED in m for m in run_log_messages(dev, ingested))
    snap = FileSystemCatalog(str(lake["warehouse"])).get_table(
        CUSTOMERS.identifier).latest_snapshot()
    assert snap is not None and snap.commit_user == cdc_commit_user(CUSTOMERS, day)

    for partition, says in ((day, "already committed"), ("2025-01-05", "nothing to ingest")):
        rid = ui_materialize(dev, [CUSTOMERS.key_path], partition)
        assert wait_for_run(dev, rid)["status"] == "SUCCESS", dev.log.read_text()[-4000:]
        messages = run_log_messages(dev, rid)
        assert any(says in m for m in messages), messages
        assert not any(SPARK_STARTED in m for m in messages), partition


def test_expiry_with_nothing_to_delete_starts_no_spark(dev: DagsterDev,
                                                      lake: dict[str, Path]) -> None:
    CUSTOMERS.ensure(FileSystemCatalog(str(lake["warehouse"])))  # at most one snapshot
    rid = ui_materialize(dev, [["maintenance", "cdc_customers_expiry"]])
    assert wait_for_run(dev, rid)["status"] == "SUCCESS", dev.log.read_text()[-4000:]
    messages = run_log_messages(dev, rid)
    assert any("0 snapshots expired" in m for m in messages), messages
    assert not any(SPARK_STARTED in m for m in messages)


def test_derived_runs_one_at_a_time_from_the_ui(dev: DagsterDev, lake: dict[str, Path]) -> None:
    orders = ORDERS.ensure(FileSystemCatalog(str(lake["warehouse"])))
    commit_orders(orders, order_rows([101, 102], "new"), 2)
    # "Materialize" mart/orders_enriched twice at once: the runs apply snapshot ranges and
    # must not overlap (the sensor's runs carry paimon/derived; these carry no job tag)
    runs = [ui_materialize(dev, [ORDERS_ENRICHED.key_path]) for _ in range(2)]
    for rid in runs:
        assert wait_for_run(dev, rid)["status"] == "SUCCESS", dev.log.read_text()[-4000:]
    records = run_records(dev, run_ids=runs)
    assert _max_overlap(_held(dev, records)) == 1, _held(dev, records)
    for rec in records:
        assert DERIVED_POOL in rec.dagster_run.run_op_concurrency.all_pools
    assert pool_limits(dev)[DERIVED_POOL] == 1
