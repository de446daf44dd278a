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
import shutil
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from assets.cdc import cdc_commit_user
from assets.demo_data import DEMO_DAYS, Feed, generate
from paimon_core import FileIO, FileSystemCatalog
from paimon_core.fsck import fsck
from tests.modload import load_module

REPO = Path(__file__).resolve().parents[2]
ROOT = Path("/tmp/paimon-prod-test_faults")
LOCATION = "paimon"
SENSOR = "cdc_landing_sensor"
INGEST_JOB = "cdc_ingest_job"
COMPACT_JOB = "cdc_orders_compaction_job"
TABLES = {"cdc.customers": "customer_id", "cdc.orders": "order_id"}
FEED_SIZE = {"customers": 60, "orders_per_day": 120}  # small: Spark start-up dominates anyway
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")
RUN_TIMEOUT = 600.0


def _topology_module() -> Any:
    import sys

    return sys.modules.get("paimon_topology") or load_module(
        REPO / "scripts" / "topology.py", "paimon_topology")


@pytest.fixture(scope="module")
def topo() -> Iterator[Any]:
    """The whole topology, up; the derived-table sensor stopped (its runs would compete for
    the two worker cores with the runs under test)."""
    shutil.rmtree(ROOT, ignore_errors=True)
    t = _topology_module().Topology(ROOT)
    try:
        t.start()
        _sensor(t, "cdc_orders_snapshot_sensor", start=False)
        yield t
    finally:
        t.stop()
        shutil.rmtree(ROOT, ignore_errors=True)


# ------------------------------------------------------------------------------ GraphQL
REPOSITORY = "{ repositoriesOrError { ... on RepositoryConnection { nodes { name } } } }"
START_SENSOR = """mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) {
  __typename ... on Sensor { sensorState { status } } ... on PythonError { message } } }"""
SENSOR_ID = """query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) {
  ... on Sensor { id } } }"""
STOP_SENSOR = """mutation($id: String!) { stopSensor(id: $id) {
  __typename ... on StopSensorMutationResult { instigationState { status } }
  ... on PythonError { message } } }"""
TICKS = """query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor {
  sensorState { ticks(limit: 50) { tickId status timestamp runIds runKeys skipReason
  error { message } } } } } }"""
LAUNCH = """mutation($p: ExecutionParams!) { launchPipelineExecution(executionParams: $p) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""
RUNS = """query($f: RunsFilter) { runsOrError(filter: $f) { ... on Runs { results {
  runId jobName status startTime endTime tags { key value } } } } }"""
RUN = """query($id: ID!) { runOrError(runId: $id) { ... on Run { runId status
  tags { key value } } } }"""


def _selector(topo: Any, name: str) -> dict[str, str]:
    [repo] = topo.graphql(REPOSITORY)["repositoriesOrError"]["nodes"]
    return {"repositoryLocationName": LOCATION, "repositoryName": repo["name"],
            "sensorName": name}


def _sensor(topo: Any, name: str, *, start: bool) -> None:
    if start:
        out = topo.graphql(START_SENSOR, {"s": _selector(topo, name)})["startSensor"]
        assert out["__typename"] == "Sensor", out
    else:
        sid = topo.graphql(SENSOR_ID, {"s": _selector(topo, name)})["sensorOrError"]["id"]
        out = topo.graphql(STOP_SENSOR, {"id": sid})["stopSensor"]
        assert out["__typename"] == "StopSensorMutationResult", out


def _ticks(topo: Any) -> list[dict[str, Any]]:
    """The landing sensor's ticks, oldest first."""
    data = topo.graphql(TICKS, {"s": _selector(topo, SENSOR)})
    return sorted(data["sensorOrError"]["sensorState"]["ticks"], key=lambda t: t["timestamp"])


def _launch(topo: Any, job: str, partition: str | None = None,
            run_config: Mapping[str, Any] | None = None) -> str:
    [repo] = topo.graphql(REPOSITORY)["repositoriesOrError"]["nodes"]
    tags = [{"key": "dagster/partition", "value": partition}] if partition else []
    out = topo.graphql(LAUNCH, {"p": {
        "mode": "default", "executionMetadata": {"tags": tags},
        "runConfigData": json.dumps(dict(run_config or {})),
        "selector": {"repositoryLocationName": LOCATION, "repositoryName": repo["name"],
                     "pipelineName": job}}})["launchPipelineExecution"]
    assert out["__typename"] == "LaunchRunSuccess", out
    return str(out["run"]["runId"])


def _tags(run: Mapping[str, Any]) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


def _runs(topo: Any, job: str | None = None) -> list[dict[str, Any]]:
    flt = {"pipelineName": job} if job else {}
    found = topo.graphql(RUNS, {"f": flt})["runsOrError"]["results"]
    return sorted(found, key=lambda r: r["startTime"] or float("inf"))


def _chains(runs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Root run id -> the attempts of that run (the daemon's retries), oldest first."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        out.setdefault(_tags(r).get("dagster/root_run_id", r["runId"]), []).append(r)
    return out


def _wait_chain(topo: Any, root: str, timeout: float = RUN_TIMEOUT) -> list[dict[str, Any]]:
    """The attempts of run ``root`` once the last one has finished and the daemon will not
    retry it any more (a failed attempt is followed by its retry within the wait)."""
    deadline = time.monotonic() + timeout
    settled_since: float | None = None
    while True:
        topo.check_alive()
        chain = _chains(_runs(topo)).get(root, [])
        last = chain[-1] if chain else None
        if last and last["status"] == "SUCCESS":
            return chain
        if last and last["status"] in FINISHED:
            # a failure: give the daemon's run-retry loop time to launch the next attempt
            settled_since = settled_since or time.monotonic()
            if time.monotonic() - settled_since > 90:
                return chain
        else:
            settled_since = None
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {root}: {[(r['runId'], r['status']) for r in chain]}")
        time.sleep(2)


def _day_chains(topo: Any, day: str) -> list[list[dict[str, Any]]]:
    """The ingestion runs of landing day ``day`` (one list of attempts per requested run)."""
    return [c for c in _chains(_runs(topo, INGEST_JOB)).values()
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
    for identifier, key in TABLES.items():
        table = cat.get_table(identifier)
        report = fsck(table)
        assert report.ok, (identifier, report.errors)
        rows = {r[key]: {k: v for k, v in r.items() if k != "src_lsn"}
                for r in table.to_arrow().to_pylist()}
        assert rows == feed.expected(identifier), identifier
        users = Counter(s.commit_user for s in table.snapshot_manager.snapshots()
                        if s.commit_user.startswith("dagster-cdc."))
        assert users == Counter({cdc_commit_user(_spec(identifier), d): 1
                                 for d in feed.days}), (identifier, users)


def _spec(identifier: str) -> Any:
    from assets.tables import CUSTOMERS, ORDERS

    return {s.identifier: s for s in (CUSTOMERS, ORDERS)}[identifier]


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
def test_code_server_restarted_during_a_sensor_tick(topo: Any) -> None:
    day = DEMO_DAYS[0]
    feed = _land(topo, 1)
    # a slow landing zone keeps the tick's evaluation (its listing) in flight for a while
    rule = topo.proxy.add(topo_rule("GET", r"/landing|prefix=landing", "delay", delay=3.0))
    try:
        _sensor(topo, SENSOR, start=True)
        tick = _wait("a landing sensor tick in flight",
                     lambda: next((t for t in _ticks(topo) if t["status"] == "STARTED"),
                                  None), 120, interval=0.2)
        restarted_at = time.time()
        topo.restart_code_server()
    finally:
        topo.proxy.remove(rule)

    # later ticks work: one after the restart completes (SUCCESS, or SKIPPED: nothing new)
    def later_tick() -> dict[str, Any] | None:
        return next((t for t in _ticks(topo) if t["timestamp"] > restarted_at
                     and t["status"] in ("SUCCESS", "SKIPPED")), None)

    _wait("a sensor tick after the code server restart", later_tick, 180, interval=2)
    interrupted = next(t for t in _ticks(topo) if t["tickId"] == tick["tickId"])
    assert interrupted["status"] in ("FAILURE", "SUCCESS", "SKIPPED"), interrupted
    # one run for the landed day, however many ticks requested it
    chains = _day_chains(topo, day)
    assert len(chains) == 1, chains
    attempts = _wait_chain(topo, chains[0][0]["runId"])
    assert attempts[-1]["status"] == "SUCCESS", attempts
    assert [r["runId"] for c in _chains(_runs(topo, INGEST_JOB)).values() for r in c] == [
        r["runId"] for r in attempts], "an ingestion run of a day that did not land"
    _assert_lake(topo, feed)


def topo_rule(method: str, path: str, action: str, **kw: Any) -> Any:
    """A fault rule of the topology's proxy (``scripts/s3proxy.py``), unbounded count."""
    import sys

    return sys.modules["paimon_s3proxy"].Rule(method, path, action, count=10**9, **kw)


def test_s3_unavailable_during_an_ingestion_run(topo: Any) -> None:
    day = DEMO_DAYS[1]
    feed = _land(topo, 2)  # the sensor (still running) requests the new day
    chains = _wait(f"the ingestion run of {day}", lambda: _day_chains(topo, day), 180, 2)
    root = chains[0][0]["runId"]
    # the run is on the cluster (its Spark application has executors) -> S3 answers 503
    _wait("the ingestion run's Spark application", lambda: _active_apps(topo), 300)
    outage = 25.0
    with topo.s3_outage():
        time.sleep(outage)
    attempts = _wait_chain(topo, root)
    assert attempts[-1]["status"] == "SUCCESS", [(r["runId"], r["status"]) for r in attempts]
    assert len(_day_chains(topo, day)) == 1
    _sensor(topo, SENSOR, start=False)
    _assert_lake(topo, feed)
    # the proxy did answer 503s while the run was going
    assert any(status == 503 for _, _, status, _ in topo.proxy.log)


def test_spark_worker_killed_mid_compaction(topo: Any) -> None:
    feed = _land(topo, 2)  # unchanged: the days already landed (no sensor running)
    config = {"ops": {"maintenance__cdc_orders_compaction": {"config": {"full": True}}}}
    root = _launch(topo, COMPACT_JOB, "cdc.orders/bucket-0", config)

    def victim() -> list[int]:  # [index] (worker 0 is a valid answer)
        apps = set(_active_apps(topo))
        return [i for i, on in _executor_workers(topo).items() if on & apps][:1]

    [worker] = _wait("an executor of the compaction run on a worker", victim, 300, 0.3)
    topo.kill_spark_worker(worker)
    attempts = _wait_chain(topo, root)
    # the run failed (and maybe its retries), or Spark rescheduled the tasks: either way the
    # table is consistent and nothing acknowledged is lost
    assert attempts[-1]["status"] in FINISHED
    _assert_lake(topo, feed)
    topo.start_spark_worker(worker)
    after = _wait_chain(topo, _launch(topo, COMPACT_JOB, "cdc.orders/bucket-0", config))
    assert after[-1]["status"] == "SUCCESS", after
    _assert_lake(topo, feed)


def test_postgres_restarted_between_runs(topo: Any) -> None:
    feed = _land(topo, 2)
    before = {r["runId"]: (r["jobName"], r["status"]) for r in _runs(topo)}
    assert before
    topo.restart_postgres()
    history = {r["runId"]: (r["jobName"], r["status"]) for r in _runs(topo)}
    assert history == before
    # runs after it launch and complete: the expiry job through GraphQL (as the UI does)
    attempts = _wait_chain(topo, _launch(topo, "expiry_job"))
    assert attempts[-1]["status"] == "SUCCESS", attempts
    assert topo.wait_daemon(60) >= 0
    after = {r["runId"]: (r["jobName"], r["status"]) for r in _runs(topo)}
    assert {k: after[k] for k in before} == before
    _assert_lake(topo, feed)
