"""``make prod-demo``: the compose deployment as local processes (``scripts/topology.py``),
then the demo's story driven only through the daemon and GraphQL, as an operator would:

0. the services come up (Postgres, moto S3 behind the fault proxy, a Spark master and two
   workers, the code server, the pools, the webserver, the daemon); a Spark probe shows the
   driver and the executors import the project from the deployed copy;
1. the demo feed lands on S3 (``python -m assets.demo_data``, the services' environment);
2. the landing sensor, started through GraphQL, starts one ingestion run per landing day;
3. compaction runs of ``cdc.orders``, launched through GraphQL as the UI does, run as Spark
   applications on the cluster (executors in the workers' JVMs: the master's and workers'
   JSON);
4. the expiry job frees bytes on S3 (the warehouse listed before and after);
5. every run's stdout/stderr is read back through the webserver (compute logs on S3).

Then it prints where to open the UI and the Spark master UI and keeps everything up until
Ctrl-C (``--stop``: stop at the end). Exits non-zero on any failure.

The same functions drive ``tests/prod/test_topology.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _topology_module() -> ModuleType:
    key = "paimon_topology"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name("topology.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------ GraphQL
REPOSITORY = "{ repositoriesOrError { ... on RepositoryConnection { nodes { name } } } }"

START_SENSOR = """
mutation($s: SensorSelector!) {
  startSensor(sensorSelector: $s) {
    __typename
    ... on Sensor { sensorState { status } }
    ... on PythonError { message }
  }
}"""

SENSOR_ID = """
query($s: SensorSelector!) {
  sensorOrError(sensorSelector: $s) { __typename ... on Sensor { sensorState { id } } }
}"""

STOP_SENSOR = """
mutation($id: String!) {
  stopSensor(id: $id) {
    __typename
    ... on StopSensorMutationResult { instigationState { status } }
    ... on PythonError { message }
  }
}"""

LAUNCH = """
mutation($p: ExecutionParams!) {
  launchPipelineExecution(executionParams: $p) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message stack }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""

RUNS = """
query($f: RunsFilter) {
  runsOrError(filter: $f) {
    ... on Runs { results { runId jobName status startTime endTime tags { key value } } }
  }
}"""

RUN = """
query($id: ID!) {
  runOrError(runId: $id) {
    __typename
    ... on Run {
      runId jobName status startTime endTime
      tags { key value }
      eventConnection(limit: 5000) {
        events {
          __typename
          ... on MessageEvent { message stepKey }
          ... on LogsCapturedEvent { fileKey stepKeys }
          ... on MaterializationEvent {
            assetKey { path }
            metadataEntries {
              label
              ... on IntMetadataEntry { intValue }
              ... on FloatMetadataEntry { floatValue }
              ... on TextMetadataEntry { text }
            }
          }
        }
      }
    }
  }
}"""

CAPTURED = """
query($id: ID!, $key: String!) {
  runOrError(runId: $id) { ... on Run { capturedLogs(fileKey: $key) { stdout stderr } } }
}"""

FINISHED = ("SUCCESS", "FAILURE", "CANCELED")


def repository(topo: Any) -> str:
    [repo] = topo.graphql(REPOSITORY)["repositoriesOrError"]["nodes"]
    return str(repo["name"])


def sensor(topo: Any, name: str, *, start: bool = True) -> str:
    """Start (or stop) sensor ``name`` as the UI's toggle does; its new status."""
    selector = {"repositoryLocationName": "paimon", "repositoryName": repository(topo),
                "sensorName": name}
    if start:
        out = topo.graphql(START_SENSOR, {"s": selector})["startSensor"]
        if out["__typename"] != "Sensor" or out["sensorState"]["status"] != "RUNNING":
            raise RuntimeError(f"sensor {name} not started: {out}")
        return str(out["sensorState"]["status"])
    found = topo.graphql(SENSOR_ID, {"s": selector})["sensorOrError"]
    assert found["__typename"] == "Sensor", found
    # the UI's toggle: stopSensor(id) with the sensor's InstigationState id
    out = topo.graphql(STOP_SENSOR, {"id": found["sensorState"]["id"]})["stopSensor"]
    assert out["__typename"] == "StopSensorMutationResult", out
    if out["instigationState"]["status"] != "STOPPED":
        raise RuntimeError(f"sensor {name} not stopped: {out}")
    return str(out["instigationState"]["status"])


def launch(topo: Any, job: str, *, partition: str | None = None,
           run_config: Mapping[str, Any] | None = None,
           tags: Mapping[str, str] | None = None) -> str:
    """One run of ``job`` (of ``partition``) as the UI's launchpad does; its id."""
    all_tags = dict(tags or {})
    if partition is not None:
        all_tags["dagster/partition"] = partition
    out = topo.graphql(LAUNCH, {"p": {
        "mode": "default",
        "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in all_tags.items()]},
        "runConfigData": json.dumps(dict(run_config or {})),
        "selector": {"repositoryLocationName": "paimon", "repositoryName": repository(topo),
                     "pipelineName": job},
    }})["launchPipelineExecution"]
    if out["__typename"] != "LaunchRunSuccess":
        raise RuntimeError(f"launching {job}: {out}")
    return str(out["run"]["runId"])


def runs(topo: Any, job: str) -> list[dict[str, Any]]:
    """The runs of ``job``, oldest first."""
    found = topo.graphql(RUNS, {"f": {"pipelineName": job}})["runsOrError"]["results"]
    return sorted(found, key=lambda r: r["startTime"] or float("inf"))


def wait_runs(topo: Any, job: str, count: int, timeout: float) -> list[dict[str, Any]]:
    """The first ``count`` runs of ``job`` once all of them have finished (a run the daemon
    retried counts by its last attempt)."""
    deadline = time.monotonic() + timeout
    while True:
        topo.check_alive()
        found = runs(topo, job)
        latest = _latest_attempts(found)
        if len(latest) >= count and all(r["status"] in FINISHED for r in latest):
            return latest
        if time.monotonic() > deadline:
            raise TimeoutError(f"{job}: {[(r['runId'], r['status']) for r in found]} "
                               f"(want {count} finished)")
        time.sleep(2)


def wait_run(topo: Any, run_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        topo.check_alive()
        run = topo.graphql(RUN, {"id": run_id})["runOrError"]
        if run.get("status") in FINISHED:
            return dict(run)
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} still {run.get('status')}")
        time.sleep(2)


def _latest_attempts(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run per retry chain (``dagster/root_run_id``): its newest attempt."""
    chains: dict[str, dict[str, Any]] = {}
    for r in found:
        tags = {t["key"]: t["value"] for t in r["tags"]}
        chains[tags.get("dagster/root_run_id", r["runId"])] = r
    return list(chains.values())


def run_details(topo: Any, run_id: str) -> dict[str, Any]:
    return dict(topo.graphql(RUN, {"id": run_id})["runOrError"])


def materializations(run: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Asset key -> metadata of a run's materializations (from :data:`RUN`)."""
    out: dict[str, dict[str, Any]] = {}
    for e in run["eventConnection"]["events"]:
        if e["__typename"] != "MaterializationEvent":
            continue
        md = {m["label"]: m.get("intValue", m.get("floatValue", m.get("text")))
              for m in e["metadataEntries"]}
        out["/".join(e["assetKey"]["path"])] = md
    return out


def captured_logs(topo: Any, run_id: str) -> dict[str, dict[str, str]]:
    """File key -> {stdout, stderr} of a run, as the UI's log viewer reads them."""
    run = run_details(topo, run_id)
    keys = {e["fileKey"] for e in run["eventConnection"]["events"]
            if e["__typename"] == "LogsCapturedEvent"}
    out = {}
    for key in sorted(keys):
        logs = topo.graphql(CAPTURED, {"id": run_id, "key": key})["runOrError"]["capturedLogs"]
        out[key] = {"stdout": logs["stdout"] or "", "stderr": logs["stderr"] or ""}
    return out


# ------------------------------------------------------------------------------ Spark
PROBE = r"""
import json, os
import paimon_core
import pyarrow as pa
from pipelines.config import SparkSettings
from pipelines.session import application_of, get_session

# as a run's Spark resource does: a session on the deployment's Spark Connect server
spark = get_session(SparkSettings.from_env())

def where(batches):
    import os, sys
    import paimon_core
    for _ in batches:
        yield pa.RecordBatch.from_pylist([{
            "file": paimon_core.__file__, "cwd": os.getcwd(), "python": sys.executable,
            "pid": os.getpid(), "ppid": os.getppid()}])

seen = spark.range(0, 8, 1, 8).mapInArrow(
    where, "file string, cwd string, python string, pid long, ppid long").collect()
app = application_of(spark)
print(json.dumps({"driver": paimon_core.__file__, "cwd": os.getcwd(),
                  "app": app.application_id, "master": app.master,
                  "executors": [r.asDict() for r in seen]}))
spark.stop()
"""


def probe_deployment(topo: Any) -> dict[str, Any]:
    """A Spark job on the cluster, started as a run starts one (the services' environment and
    working directory: a session on the deployment's Spark Connect server): which
    ``paimon_core`` the client and the executors' Python workers import."""
    out = subprocess.run([sys.executable, "-c", PROBE], env=topo.env, cwd=topo.run_dir,
                         capture_output=True, text=True, timeout=240)
    if out.returncode:
        raise RuntimeError(f"Spark probe failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def spark_apps(topo: Any) -> dict[str, dict[str, Any]]:
    """Application id -> the master's record (running and completed)."""
    state = topo_json(f"{topo.spark_master_ui}/json/")
    return {a["id"]: a for a in [*state.get("activeapps", ()), *state.get("completedapps", ())]}


def worker_executors(topo: Any) -> dict[str, list[str]]:
    """Application id -> the workers (by UI) that ran one of its executors."""
    out: dict[str, list[str]] = {}
    for i in range(topo.workers):
        url = topo.spark_worker_ui(i)
        try:
            state = topo_json(f"{url}/json/")
        except OSError:
            continue  # a killed worker
        for e in [*state.get("executors", ()), *state.get("finishedexecutors", ())]:
            app = e.get("appid") or e.get("appId")
            if app:
                out.setdefault(app, []).append(url)
    return out


def topo_json(url: str) -> dict[str, Any]:
    result: dict[str, Any] = _topology_module().http_json(url)
    return result


# ------------------------------------------------------------------------------ the story
def feed(topo: Any) -> str:
    """``python -m assets.demo_data`` with the services' environment (landing on S3)."""
    out = subprocess.run([sys.executable, "-m", "assets.demo_data"], env=topo.env,
                         cwd=topo.run_dir, capture_output=True, text=True, timeout=300)
    if out.returncode:
        raise RuntimeError(f"python -m assets.demo_data failed:\n{out.stderr[-3000:]}")
    return out.stdout


def _kib(n: float) -> str:
    return f"{n / 1024:,.1f} KiB"


def _secs(run: Mapping[str, Any]) -> str:
    if run.get("startTime") and run.get("endTime"):
        return f"{run['endTime'] - run['startTime']:.1f} s"
    return "-"


def story(topo: Any, *, days: int = 3, buckets: Iterable[int] = range(4),
          retain_max: int | None = None, say: Any = print, timeout: float = 900
          ) -> dict[str, Any]:
    """The story on a started topology; the figures of each step (raises on failure).

    ``buckets``: the cdc.orders buckets compacted; ``retain_max``: the expiry run's
    ``retain_max`` for cdc.orders (launchpad config; default the table's option)."""
    figures: dict[str, Any] = {}

    say("[0] the deployed copy: a Spark probe on the cluster")
    probe = probe_deployment(topo)
    figures["probe"] = probe
    say(f"      driver imports {probe['driver']}")
    files = sorted({e["file"] for e in probe["executors"]})
    say(f"      executors ({len({e['pid'] for e in probe['executors']})} Python workers, "
        f"app {probe['app']}) import {files}")

    say("[1] feed the landing zone (python -m assets.demo_data)")
    landing_before = topo.s3_bytes(topo.env["PAIMON_LANDING"])
    out = feed(topo)
    for line in out.strip().splitlines():
        say(f"      {line}")
    figures["landing"] = topo.s3_bytes(topo.env["PAIMON_LANDING"])
    say(f"      landing: {figures['landing'][0]} objects, {_kib(figures['landing'][1])} "
        f"(before: {landing_before[0]})")

    say("[2] start the landing sensor (GraphQL startSensor) -> one ingestion run per day")
    t0 = time.monotonic()
    figures["sensor_status"] = sensor(topo, "cdc_landing_sensor")
    ingest = wait_runs(topo, "cdc_ingest_job", days, timeout)
    figures["ingest_runs"] = ingest
    figures["ingest_seconds"] = time.monotonic() - t0
    for r in ingest:
        tags = {t["key"]: t["value"] for t in r["tags"]}
        md = materializations(run_details(topo, r["runId"]))
        snaps = {k: v.get("paimon/snapshot_id") for k, v in md.items()}
        say(f"      {tags.get('dagster/partition')}: run {r['runId'][:8]} {r['status']} in "
            f"{_secs(r)} (sensor {tags.get('dagster/sensor_name', '-')}), snapshots {snaps}")
    say(f"      {len(ingest)} runs in {figures['ingest_seconds']:.0f} s after the sensor "
        "started")
    sensor(topo, "cdc_landing_sensor", start=False)
    failed = [r["runId"] for r in ingest if r["status"] != "SUCCESS"]
    if failed:
        raise RuntimeError(f"ingestion runs failed: {failed}")

    say("[3] compaction of cdc.orders (cdc_orders_compaction_job, full, launched as the UI "
        "does), two runs at a time")
    t0 = time.monotonic()
    compactions: list[dict[str, Any]] = []
    todo = [f"cdc.orders/bucket-{b}" for b in buckets]
    while todo:
        batch, todo = todo[:2], todo[2:]
        ids = [launch(topo, "cdc_orders_compaction_job", partition=p,
                      run_config={"ops": {"maintenance__cdc_orders_compaction": {
                          "config": {"full": True}}}}) for p in batch]
        compactions += [wait_run(topo, i, timeout) for i in ids]
    figures["compaction_seconds"] = time.monotonic() - t0
    figures["compaction_runs"] = compactions
    for r in compactions:
        md = materializations(r).get("maintenance/cdc_orders_compaction", {})
        tags = {t["key"]: t["value"] for t in r["tags"]}
        say(f"      {tags.get('dagster/partition')}: {r['status']} in {_secs(r)}, "
            f"{md.get('compact/status')}, files {md.get('compact/files_before')} -> "
            f"{md.get('compact/files_after')}, {_kib(md.get('compact/bytes_written') or 0)} "
            f"written (snapshot {md.get('paimon/snapshot_id')})")
    failed = [r["runId"] for r in compactions if r["status"] != "SUCCESS"]
    if failed:
        raise RuntimeError(f"compaction runs failed: {failed}")
    # the applications the runs name (the shared Spark Connect server's, or one per run with
    # PAIMON_SPARK_CONNECT=off) as the master knows them
    named = {materializations(r).get("maintenance/cdc_orders_compaction", {})
             .get("spark/application_id") for r in compactions} - {None}
    apps = {k: v for k, v in spark_apps(topo).items() if k in named}
    executors = worker_executors(topo)
    figures["compaction_apps"] = {a: executors.get(a, []) for a in apps}
    for app, rec in sorted(apps.items()):
        say(f"      Spark app {app} ({rec.get('name')}, {rec.get('state')}): executors on "
            f"{len(set(executors.get(app, [])))} worker(s) {sorted(set(executors.get(app, [])))}")

    say("[4] expiry (expiry_job, launched through GraphQL): bytes on S3 before and after")
    warehouse = topo.env["PAIMON_WAREHOUSE"]
    before = topo.s3_bytes(warehouse)
    config = ({"ops": {"maintenance__cdc_orders_expiry": {"config": {
        "retain_max": retain_max}}}} if retain_max is not None else None)
    expiry = wait_run(topo, launch(topo, "expiry_job", run_config=config), timeout)
    after = topo.s3_bytes(warehouse)
    figures.update(expiry_run=expiry, warehouse_before=before, warehouse_after=after)
    for key, md in sorted(materializations(expiry).items()):
        # a table the story has not created reports 0 and says so (expire/status)
        say(f"      {md.get('paimon/table', key):<20} {md.get('expire/status')}: expired "
            f"{md.get('expire/snapshots_expired')} snapshot(s), "
            f"{md.get('expire/files_deleted')} files / {_kib(md.get('expire/bytes_freed') or 0)}"
            " freed")
    say(f"      warehouse on S3: {before[0]} objects / {_kib(before[1])} -> {after[0]} objects"
        f" / {_kib(after[1])} ({_kib(before[1] - after[1])} freed)")
    if expiry["status"] != "SUCCESS":
        raise RuntimeError(f"expiry run {expiry['runId']} {expiry['status']}")

    say("[5] each run's stdout/stderr through the webserver (compute logs on S3)")
    logs: dict[str, dict[str, dict[str, str]]] = {}
    for r in [*ingest, *compactions, expiry]:
        logs[r["runId"]] = captured_logs(topo, r["runId"])
        sizes = [(len(v["stdout"]), len(v["stderr"])) for v in logs[r["runId"]].values()]
        say(f"      {r['jobName']:<28} {r['runId'][:8]}: {len(sizes)} capture(s), "
            f"stdout/stderr bytes {sizes}")
    figures["logs"] = logs
    figures["compute_logs_on_s3"] = topo.s3_bytes(
        f"s3://{topo.env['DAGSTER_COMPUTE_LOGS_BUCKET']}/"
        f"{topo.env['DAGSTER_COMPUTE_LOGS_PREFIX']}")
    say(f"      compute logs on S3: {figures['compute_logs_on_s3'][0]} objects")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make prod-demo", description=__doc__.split("\n")[0])
    parser.add_argument("--root", default="/tmp/paimon-prod-demo",
                        help="scratch directory of the run (replaced; default %(default)s)")
    parser.add_argument("--stop", action="store_true",
                        help="stop the services at the end instead of waiting for Ctrl-C")
    args = parser.parse_args(argv)
    root = Path(args.root)
    shutil.rmtree(root, ignore_errors=True)
    topo = _topology_module().Topology(root)
    started = time.monotonic()
    try:
        print(f"starting the topology under {root} (logs: {root / 'logs'})", flush=True)
        topo.start()
        print("      up in " + ", ".join(f"{k} {v:.0f} s" for k, v in topo.timings.items()))
        print(f"      services: {', '.join(topo.services)} + postgres; "
              f"RSS {topo.process_tree_rss() / 2**20:,.0f} MiB")
        story(topo, say=lambda s: print(s, flush=True))
        print(f"\nstory done in {time.monotonic() - started:.0f} s; "
              f"RSS {topo.process_tree_rss() / 2**20:,.0f} MiB")
        print(f"Dagster UI:        {topo.ui_url}")
        print(f"Spark master UI:   {topo.spark_master_ui}")
        print(f"S3 endpoint:       {topo.s3_endpoint} (credentials in the services' env)")
        if not args.stop:
            print("services stay up: Ctrl-C stops them", flush=True)
            while True:
                time.sleep(5)
                topo.check_alive()
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        topo.stop()
        print(f"stopped; logs and data remain in {root}")


if __name__ == "__main__":
    raise SystemExit(main())
