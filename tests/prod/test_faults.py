"""Faults on the production topology (issue 19, scope 2), each as an operator meets it, on ONE
topology for the module (``scripts/topology.py``), driven only through the daemon and GraphQL:

1. the code server restarted while the landing sensor's tick is in flight: the tick fails or
   is retried, one ingestion run per landed day (run keys), later ticks work;
2. S3 answering 503 for a while during an ingestion run: the run succeeds through retries or
   fails and the daemon retries it; nothing acknowledged lost, no duplicate commit;
3. a Spark worker SIGKILLed while a compaction run has an executor on it: the run fails, is
   retried, or Spark reschedules; the table stays consistent and a following compaction
   succeeds;
4. Postgres restarted between runs: the run history is intact, runs after it launch and
   complete.

After each fault both CDC tables pass ``fsck`` and hold exactly the rows of the landed days,
as the feed generator computed them (:func:`assets.demo_data.generate`, independent of the
pipeline), and each day is committed once per table.

The tests share the topology and the table state, in file order (each step builds on the
previous one's landed days).
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.request
from collections import Counter
from types import ModuleType
from typing import Any

import pytest

from assets.cdc import cdc_commit_user
from assets.demo_data import DEMO_DAYS, Feed, generate
from assets.tables import CUSTOMERS, ORDERS
from paimon_core import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.integration import FileIO

SENSOR = "cdc_landing_sensor"
INGEST_JOB = "cdc_ingest_job"
COMPACT_JOB = "cdc_orders_compaction_job"
TABLES = ((CUSTOMERS, "customer_id"), (ORDERS, "order_id"))
FEED_SIZE = {"customers": 60, "orders_per_day": 120}  # small: Spark start-up dominates anyway
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")
RUN_TIMEOUT = 600.0
#: seconds a failed run is given for the daemon to launch its retry (run_retries)
RETRY_GRACE = 90.0
#: how long S3 answers 503 (longer than botocore's and FileIO's own retries)
OUTAGE_SECONDS = 25.0
#: a request of the CDC tables' files (the ingestion run's, during the S3 test)
WAREHOUSE_WRITE = re.compile(r"/warehouse/cdc\.db/")


COMPACT_FULL = {"ops": {"maintenance__cdc_orders_compaction": {"config": {"full": True}}}}


@pytest.fixture(scope="module")
def demo(topo: Any, prod_demo: ModuleType) -> ModuleType:
    """The GraphQL helpers of ``scripts/prod_demo.py``, on the module's topology; the
    derived table's snapshot sensor (it ships running) stopped: its runs would compete for
    the two worker cores with the runs under test."""
    prod_demo.sensor(topo, "cdc_orders_snapshot_sensor", start=False)
    return prod_demo


TICKS = """query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor {
  sensorState { ticks(limit: 50) { tickId status timestamp runIds runKeys skipReason
  error { message } } } } } }"""


def _ticks(topo: Any, demo: ModuleType) -> list[dict[str, Any]]:
    """The landing sensor's ticks, oldest first."""
    selector = {"repositoryLocationName": "paimon", "repositoryName": demo.repository(topo),
                "sensorName": SENSOR}
    data = topo.graphql(TICKS, {"s": selector})
    return sorted(data["sensorOrError"]["sensorState"]["ticks"], key=lambda t: t["timestamp"])


def _tags(run: dict[str, Any]) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


def _all_runs(topo: Any, demo: ModuleType) -> list[dict[str, Any]]:
    """Every run of the instance (``demo.RUNS`` unfiltered), oldest first."""
    found = topo.graphql(demo.RUNS, {"f": {}})["runsOrError"]["results"]
    return sorted(found, key=lambda r: r["startTime"] or float("inf"))


def _chains(runs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Root run id -> the attempts of that run (the daemon's retries), oldest first."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        out.setdefault(_tags(r).get("dagster/root_run_id", r["runId"]), []).append(r)
    return out


def _wait_chain(topo: Any, demo: ModuleType, root: str, *, down: tuple[str, ...] = (),
                timeout: float = RUN_TIMEOUT) -> list[dict[str, Any]]:
    """The attempts of run ``root`` once one succeeded, or the last one failed and the daemon
    launched no retry within :data:`RETRY_GRACE` seconds (every service but ``down``, the
    ones the test killed, must stay up meanwhile)."""
    deadline = time.monotonic() + timeout
    failed_since: float | None = None
    while True:
        dead = [n for n, svc in topo.services.items() if not svc.alive and n not in down]
        assert not dead, f"services not running: {dead}"
        chain = _chains(_all_runs(topo, demo)).get(root, [])
        last = chain[-1] if chain else None
        if last and last["status"] == "SUCCESS":
            return chain
        if last and last["status"] in FINISHED:
            failed_since = failed_since or time.monotonic()
            if time.monotonic() - failed_since > RETRY_GRACE:
                return chain
        else:
            failed_since = None
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {root}: {[(r['runId'], r['status']) for r in chain]}")
        time.sleep(2)


def _day_chains(topo: Any, demo: ModuleType, day: str) -> list[list[dict[str, Any]]]:
    """The ingestion runs of landing day ``day`` (one list of attempts per requested run)."""
    return [c for c in _chains(demo.runs(topo, INGEST_JOB)).values()
            if _tags(c[0]).get("dagster/partition") == day]


def _wait(what: str, probe: Any, timeout: float, interval: float = 0.5) -> Any:
    """Poll ``probe`` until it returns something true; GraphQL answers without the object
    (the webserver reloading a restarted code location) count as "not yet"."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            got = probe()
        except (KeyError, TypeError, ValueError, RuntimeError, OSError) as e:
            got, last = None, e
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} (last error: {last!r})")
        time.sleep(interval)


# ------------------------------------------------------------------------------ the lake
def _land(topo: Any, days: int) -> Feed:
    """Land the first ``days`` demo days on the topology's S3 (the same files each time for
    a day) and return what the tables must hold then (the generator's own model)."""
    landing = topo.env["PAIMON_LANDING"]
    return generate(FileIO(landing, topo.s3_options()), landing, days=DEMO_DAYS[:days],
                    **FEED_SIZE)


def _catalog(topo: Any) -> FileSystemCatalog:
    return FileSystemCatalog(topo.env["PAIMON_WAREHOUSE"], topo.s3_options())


def _assert_lake(topo: Any, feed: Feed) -> None:
    """Both CDC tables: fsck clean, exactly the feed's rows, each landed day committed once
    (its commit user and identifier in one snapshot)."""
    cat = _catalog(topo)
    for spec, key in TABLES:
        table = cat.get_table(spec.identifier)
        report = fsck(table)
        assert report.ok, (spec.identifier, report.errors)
        rows = {r[key]: {k: v for k, v in r.items() if k != "src_lsn"}
                for r in table.to_arrow().to_pylist()}
        assert rows == feed.expected(spec.identifier), spec.identifier
        users = Counter(s.commit_user for s in table.snapshot_manager.snapshots()
                        if s.commit_user.startswith("dagster-cdc."))
        assert users == Counter({cdc_commit_user(spec, d): 1 for d in feed.days}), (
            spec.identifier, users)


# ------------------------------------------------------------------------------ Spark
def _json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        out: dict[str, Any] = json.load(resp)
    return out


def _executor_workers(topo: Any) -> dict[int, set[str]]:
    """Worker index -> the applications with a running executor on it (the worker's JSON)."""
    out: dict[int, set[str]] = {}
    for i in range(topo.workers):
        try:
            state = _json(f"{topo.spark_worker_ui(i)}/json/")
        except OSError:
            continue
        out[i] = {e["appid"] for e in state.get("executors", ()) if e.get("appid")}
    return out


def _active_apps(topo: Any) -> list[str]:
    return [a["id"] for a in _json(f"{topo.spark_master_ui}/json/").get("activeapps", ())]


# ------------------------------------------------------------------------------ the faults
def _proxy_rule(method: str, path: str, action: str, **kw: Any) -> Any:
    """An unbounded fault rule of the topology's S3 proxy (``scripts/s3proxy.py``)."""
    return sys.modules["paimon_s3proxy"].Rule(method, path, action, count=10**9, **kw)


def test_code_server_restarted_during_a_sensor_tick(topo: Any, demo: ModuleType) -> None:
    day = DEMO_DAYS[0]
    feed = _land(topo, 1)
    # a slow landing zone keeps the tick's evaluation (its listing) in flight for a while
    slow = topo.proxy.add(_proxy_rule("GET", r"/landing|prefix=landing", "delay", delay=3.0))
    try:
        demo.sensor(topo, SENSOR, start=True)
        tick = _wait("a landing sensor tick in flight",
                     lambda: next((t for t in _ticks(topo, demo) if t["status"] == "STARTED"),
                                  None), 120, interval=0.2)
        restarted_at = time.time()
        topo.restart_code_server()
    finally:
        topo.proxy.remove(slow)

    # later ticks work: one after the restart completes (SUCCESS, or SKIPPED: nothing new)
    _wait("a sensor tick after the code server restart",
          lambda: [t for t in _ticks(topo, demo) if t["timestamp"] > restarted_at
                   and t["status"] in ("SUCCESS", "SKIPPED")], 180, interval=2)
    interrupted = next(t for t in _ticks(topo, demo) if t["tickId"] == tick["tickId"])
    assert interrupted["status"] in ("FAILURE", "SUCCESS", "SKIPPED"), interrupted
    # one run for the landed day, however many ticks requested it (run key = the day)
    chains = _day_chains(topo, demo, day)
    assert len(chains) == 1, chains
    attempts = _wait_chain(topo, demo, chains[0][0]["runId"])
    assert attempts[-1]["status"] == "SUCCESS", attempts
    assert [r["runId"] for r in demo.runs(topo, INGEST_JOB)] == [r["runId"] for r in attempts]
    _assert_lake(topo, feed)


def test_s3_unavailable_during_an_ingestion_run(topo: Any, demo: ModuleType) -> None:
    day = DEMO_DAYS[1]
    feed = _land(topo, 2)  # the landing sensor (still running) requests the new day
    chains = _wait(f"the ingestion run of {day}", lambda: _day_chains(topo, demo, day), 180, 2)
    root = chains[0][0]["runId"]
    # once the run is on the cluster (its Spark application is up) and writing the table
    # (its first data file PUT), S3 answers 503 for a while
    _wait("the ingestion run's Spark application", lambda: _active_apps(topo), 300)
    seen = len(topo.proxy.log)
    _wait("the ingestion run writing the table", lambda: [
        e for e in topo.proxy.log[seen:] if e[0] == "PUT" and WAREHOUSE_WRITE.search(e[1])],
        300, 0.05)
    served = len(topo.proxy.log)
    with topo.s3_outage():
        time.sleep(OUTAGE_SECONDS)
    refused = [e for e in topo.proxy.log[served:] if e[2] == 503]
    # the run's own requests were refused (nothing else touches the tables meanwhile)
    assert [e for e in refused if WAREHOUSE_WRITE.search(e[1])], refused[:20]
    attempts = _wait_chain(topo, demo, root)
    print(f"S3 outage: {len(refused)} requests refused; ingestion attempts "
          f"{[r['status'] for r in attempts]}")
    assert attempts[-1]["status"] == "SUCCESS", [(r["runId"], r["status"]) for r in attempts]
    assert len(_day_chains(topo, demo, day)) == 1
    demo.sensor(topo, SENSOR, start=False)
    _assert_lake(topo, feed)


def test_spark_worker_killed_mid_compaction(topo: Any, demo: ModuleType) -> None:
    feed = _land(topo, 2)  # the days already landed (the sensor is stopped)
    root = demo.launch(topo, COMPACT_JOB, partition="cdc.orders/bucket-0",
                       run_config=COMPACT_FULL)

    def victim() -> list[int]:  # [worker index]: worker 0 is a valid answer
        apps = set(_active_apps(topo))
        return [i for i, on in _executor_workers(topo).items() if on & apps][:1]

    [worker] = _wait("an executor of the compaction run on a worker", victim, 300, 0.3)
    topo.kill_spark_worker(worker)
    attempts = _wait_chain(topo, demo, root, down=(f"spark-worker-{worker}",))
    print(f"worker {worker} killed: compaction attempts {[r['status'] for r in attempts]}")
    # the run failed (and its retries too), or Spark rescheduled the tasks on the other
    # worker: either way the table is consistent and nothing acknowledged is lost
    assert attempts[-1]["status"] in FINISHED
    _assert_lake(topo, feed)
    topo.start_spark_worker(worker)
    # a following compaction, of a bucket that still has one file per landed day: it
    # rewrites them on the cluster (the restarted worker included)
    after = _wait_chain(topo, demo, demo.launch(
        topo, COMPACT_JOB, partition="cdc.orders/bucket-1", run_config=COMPACT_FULL))
    assert after[-1]["status"] == "SUCCESS", after
    md = demo.materializations(demo.run_details(topo, after[-1]["runId"]))
    assert md["maintenance/cdc_orders_compaction"]["compact/status"] == "compacted", md
    _assert_lake(topo, feed)


def test_postgres_restarted_between_runs(topo: Any, demo: ModuleType) -> None:
    feed = _land(topo, 2)
    before = {r["runId"]: (r["jobName"], r["status"]) for r in _all_runs(topo, demo)}
    assert before
    topo.restart_postgres()
    # dagster-webserver holds one pooled connection per storage (run, event log, schedule;
    # optimize_for_webserver, no pre-ping): its first reads after the restart answer 500
    # until it reconnects (the hook waits for that). Each storage answers again:
    some_run = next(iter(before))
    reads = {
        "runs": lambda: {r["runId"]: (r["jobName"], r["status"])
                         for r in _all_runs(topo, demo)},
        "events": lambda: demo.run_details(topo, some_run)["eventConnection"]["events"],
        "ticks": lambda: _ticks(topo, demo) or [{}],
    }
    got = {name: _wait(f"the webserver reading {name} after the restart", read, 60, 1)
           for name, read in reads.items()}
    assert got["runs"] == before  # the run history is intact
    # runs after it launch and complete: the expiry job, launched as the UI does
    attempts = _wait_chain(topo, demo, demo.launch(topo, "expiry_job"))
    assert attempts[-1]["status"] == "SUCCESS", attempts
    topo.wait_daemon(60)
    after = {r["runId"]: (r["jobName"], r["status"]) for r in _all_runs(topo, demo)}
    assert {k: after[k] for k in before} == before
    _assert_lake(topo, feed)
