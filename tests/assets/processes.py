"""External processes for the slow assets tests: ``dagster dev``, headless Chromium and a
Debian PostgreSQL server (from ``scripts/topology.py``), each on loopback and torn down by
process group."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.modload import load_module

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

# processes and PostgreSQL: their one home is the process topology (scripts/topology.py)
_topology = sys.modules.get("paimon_topology") or load_module(
    REPO / "scripts" / "topology.py", "paimon_topology")
free_port = _topology.free_port
stop_group = _topology.stop_group
pg_bin = _topology.pg_bin
postgres = _topology.postgres
Postgres = _topology.Postgres


# ------------------------------------------------------------------------------ dagster dev
@dataclass
class DagsterDev:
    url: str
    home: Path
    log: Path

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None,
                timeout: float = 60) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
        req = urllib.request.Request(f"{self.url}/graphql", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            out: dict[str, Any] = json.load(resp)
        if out.get("errors"):
            raise AssertionError(f"GraphQL errors: {out['errors']}")
        return out["data"]


@contextmanager
def dagster_dev(tmp: Path, env: Mapping[str, str], *, startup_timeout: float = 240,
                project: Path | None = None) -> Iterator[DagsterDev]:
    """``dagster dev -w workspace.yaml`` on a free loopback port, DAGSTER_HOME = ``tmp/home``
    set up as the README says (the repository's dagster.yaml, then ``python -m assets.pools``),
    until the code location ``paimon`` is loaded. ``project``: ``dg dev`` in that dg project
    instead (its code location; the project directory first on PYTHONPATH)."""
    home = tmp / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    port = free_port()
    log = tmp / "dagster-dev.log"
    paths = [str(REPO), os.environ.get("PYTHONPATH", "")]
    full_env = {**os.environ, **env, "DAGSTER_HOME": str(home),
                "PYTHONPATH": os.pathsep.join([str(project), *paths] if project else paths)}
    # the runs' shared Spark Connect server (pipelines/connect.py) serves the next test
    # module's runs too, and goes 3 minutes after the last one (not the default 30)
    full_env.setdefault("PAIMON_SPARK_CONNECT_IDLE", "180")
    subprocess.run([sys.executable, "-W", "ignore", "-m", "assets.pools"], cwd=REPO,
                   env=full_env, check=True, capture_output=True, timeout=120)
    with open(log, "wb") as out:
        command = ([str(VENV_BIN / "dg"), "dev", "--host", "127.0.0.1", "--port", str(port)]
                   if project else
                   [str(VENV_BIN / "dagster"), "dev", "-w", str(REPO / "workspace.yaml"),
                    "-h", "127.0.0.1", "-p", str(port)])
        proc = subprocess.Popen(
            command, cwd=project or REPO, env=full_env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    dev = DagsterDev(f"http://127.0.0.1:{port}", home, log)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"dagster dev exited:\n{log.read_text()[-4000:]}")
            try:
                try:
                    loaded = _topology.workspace_loaded(
                        dev.graphql(_topology.WORKSPACE, timeout=10))
                except RuntimeError as e:
                    raise AssertionError(f"{e}\n{log.read_text()[-4000:]}") from e
                if loaded:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"dagster dev not up:\n{log.read_text()[-4000:]}")
            time.sleep(1)
        yield dev
    finally:
        stop_group(proc)


LAUNCH_RUN = """
mutation($p: ExecutionParams!) {
  launchRun(executionParams: $p) {
    __typename
    ... on LaunchRunSuccess { run { runId status } }
    ... on PythonError { message stack }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""

RUN_STATUS = """
query($id: ID!) {
  runOrError(runId: $id) {
    __typename
    ... on Run { status tags { key value } }
  }
}"""


def run_event_time(dev: DagsterDev, run_id: str, event_type: str) -> float:
    """When a run's first event of ``event_type`` was recorded (``RUN_STARTING`` = launched
    by the queue, ``RUN_SUCCESS``...), read from the instance's own storage."""
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(dev.home)) as instance:
        events = instance.all_logs(run_id, of_type=DagsterEventType[event_type])
    assert events, f"run {run_id} has no {event_type} event"
    return float(events[0].timestamp)


def wait_for_run(dev: DagsterDev, run_id: str, timeout: float = 240) -> dict[str, Any]:
    """The run once it has ended. A failed run is returned once it also carries
    ``dagster/will_retry`` (the instance stores the failure, then, separately, that tag: with
    run retries enabled, as in the shipped dagster.yaml, every failed run gets it)."""
    deadline = time.monotonic() + timeout
    while True:
        run = dev.graphql(RUN_STATUS, {"id": run_id})["runOrError"]
        status = run.get("status")
        if status in ("SUCCESS", "CANCELED") or (
                status == "FAILURE"
                and any(t["key"] == "dagster/will_retry" for t in run.get("tags") or ())):
            return run
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} still {run.get('status')}:\n"
                                 f"{dev.log.read_text()[-4000:]}")
        time.sleep(1)


# ------------------------------------------------------------------------------ as the UI does
#: the implicit asset job the UI launches asset materializations with
ASSET_JOB = "__ASSET_JOB"

# the queries and mutations of the UI (dagster-webserver 1.13's bundle: "Materialize" of one
# partition = ConfigPartitionForAssetJobQuery, then LaunchPipelineExecution with the tags it
# returned; of several partitions = LaunchPartitionBackfill; "Re-execute" =
# LaunchPipelineReexecution from the parent run)
PARTITION_FOR_ASSET_JOB = """
query($repositoryName: String!, $repositoryLocationName: String!, $jobName: String!,
      $partitionName: String!, $assetKeys: [AssetKeyInput!]!) {
  pipelineOrError(params: {pipelineName: $jobName, repositoryName: $repositoryName,
                           repositoryLocationName: $repositoryLocationName}) {
    __typename
    ... on Pipeline {
      partition(partitionName: $partitionName, selectedAssetKeys: $assetKeys) {
        runConfigOrError { ... on PartitionRunConfig { yaml } ... on PythonError { message } }
        tagsOrError { ... on PartitionTags { results { key value } }
                      ... on PythonError { message } }
      }
    }
  }
}"""

# the UI's launch mutation and the repository query: one home, the production story's
# (scripts/prod_demo.py)
_prod_demo = sys.modules.get("paimon_prod_demo") or load_module(
    REPO / "scripts" / "prod_demo.py", "paimon_prod_demo")
LAUNCH_PIPELINE_EXECUTION = _prod_demo.LAUNCH

LAUNCH_BACKFILL = """
mutation($p: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $p) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message stack }
  }
}"""

LAUNCH_REEXECUTION = """
mutation($p: ReexecutionParams!) {
  launchPipelineReexecution(reexecutionParams: $p) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message stack }
  }
}"""

REPOSITORY_NAME = _prod_demo.REPOSITORY


def _keys(asset_keys: list[list[str]]) -> list[dict[str, list[str]]]:
    return [{"path": list(k)} for k in asset_keys]


def ui_materialize(dev: DagsterDev, asset_keys: list[list[str]], partition: str | None = None,
                   tags: Mapping[str, str] | None = None,
                   run_config: Mapping[str, Any] | None = None, *,
                   location: str = "paimon") -> str:
    """"Materialize" ``asset_keys`` (one ``partition`` of them) as the UI does: for a
    partition, its tags and config from the asset job first; then one run of the asset job
    (with ``run_config``: as the launchpad, "Open launchpad" then edited) of code location
    ``location``. Returns the run id."""
    [repo] = dev.graphql(REPOSITORY_NAME)["repositoriesOrError"]["nodes"]
    run_tags, config = [], "{}"
    if partition is not None:
        job = dev.graphql(PARTITION_FOR_ASSET_JOB, {
            "repositoryName": repo["name"], "repositoryLocationName": location,
            "jobName": ASSET_JOB, "partitionName": partition, "assetKeys": _keys(asset_keys),
        })["pipelineOrError"]
        assert job["__typename"] == "Pipeline", job
        part = job["partition"]
        run_tags = list(part["tagsOrError"]["results"])
        config = part["runConfigOrError"]["yaml"] or "{}"
    run_tags += [{"key": k, "value": v} for k, v in (tags or {}).items()]
    if run_config is not None:
        config = json.dumps(run_config)
    out = dev.graphql(LAUNCH_PIPELINE_EXECUTION, {"p": {
        "mode": "default",
        "executionMetadata": {"tags": run_tags},
        "runConfigData": config,
        "selector": {"repositoryLocationName": location, "repositoryName": repo["name"],
                     "pipelineName": ASSET_JOB, "assetSelection": _keys(asset_keys),
                     "assetCheckSelection": []},
    }})["launchPipelineExecution"]
    assert out["__typename"] == "LaunchRunSuccess", out
    return str(out["run"]["runId"])


def ui_backfill(dev: DagsterDev, asset_keys: list[list[str]], partitions: list[str]) -> str:
    """A backfill of ``partitions`` of ``asset_keys`` as the UI launches it; its id."""
    out = dev.graphql(LAUNCH_BACKFILL, {"p": {
        "tags": [], "assetSelection": _keys(asset_keys), "partitionNames": partitions,
        "fromFailure": False,
    }})["launchPartitionBackfill"]
    assert out["__typename"] == "LaunchBackfillSuccess", out
    return str(out["backfillId"])


SENSOR_LAST_TICK = """
query($s: SensorSelector!) {
  sensorOrError(sensorSelector: $s) {
    __typename ... on Sensor { sensorState { ticks(limit: 1) { tickId status } } }
  }
}"""


def ui_stop_sensor(dev: DagsterDev, name: str, *, location: str = "paimon",
                   quiet: float = 20, timeout: float = 180) -> None:
    """Stop sensor ``name`` as the UI's toggle does (``stopSensor`` with its state's id; the
    queries are the production story's, scripts/prod_demo.py), then wait until no tick of
    it is in flight and none began for ``quiet`` seconds: the daemon reads the sensors'
    states when an iteration starts, so under load a tick it queued before the stop can
    still begin after it (and see what landed since)."""
    [repo] = dev.graphql(REPOSITORY_NAME)["repositoriesOrError"]["nodes"]
    selector = {"repositoryLocationName": location, "repositoryName": repo["name"],
                "sensorName": name}
    found = dev.graphql(_prod_demo.SENSOR_ID, {"s": selector})["sensorOrError"]
    assert found["__typename"] == "Sensor", found
    out = dev.graphql(_prod_demo.STOP_SENSOR, {"id": found["sensorState"]["id"]})["stopSensor"]
    assert out["__typename"] == "StopSensorMutationResult", out
    assert out["instigationState"]["status"] == "STOPPED", out
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while True:
        state = dev.graphql(SENSOR_LAST_TICK, {"s": selector})["sensorOrError"]["sensorState"]
        ticks = state["ticks"]
        if ticks != last:
            last, since = ticks, time.monotonic()
        elif (all(t["status"] != "STARTED" for t in ticks)
              and time.monotonic() - since >= quiet):
            return
        assert time.monotonic() < deadline, f"{name} still ticking after its stop: {state}"
        time.sleep(1)


def ui_reexecute(dev: DagsterDev, run_id: str) -> str:
    """"Re-execute all" of a finished run, as the UI does; the new run's id."""
    out = dev.graphql(LAUNCH_REEXECUTION, {"p": {
        "parentRunId": run_id, "strategy": "ALL_STEPS"}})["launchPipelineReexecution"]
    assert out["__typename"] == "LaunchRunSuccess", out
    return str(out["run"]["runId"])


def run_records(dev: DagsterDev, **filters: Any) -> list[Any]:
    """The run records of the instance (``RunsFilter(**filters)``), oldest first."""
    from dagster import DagsterInstance, RunsFilter

    with DagsterInstance.from_config(str(dev.home)) as instance:
        records = instance.get_run_records(RunsFilter(**filters))
    return sorted(records, key=lambda r: r.create_timestamp)


def wait_for_runs(dev: DagsterDev, count: int, timeout: float = 300, **filters: Any
                  ) -> list[Any]:
    """The records of the ``count`` runs matching ``filters`` once all of them finished."""
    deadline = time.monotonic() + timeout
    while True:
        records = run_records(dev, **filters)
        if len(records) >= count and all(r.dagster_run.is_finished for r in records):
            return records
        if time.monotonic() > deadline:
            state = [(r.dagster_run.run_id, r.dagster_run.status.value) for r in records]
            raise AssertionError(f"{len(records)}/{count} runs ({state}):\n"
                                 f"{dev.log.read_text()[-4000:]}")
        time.sleep(1)


RELOAD_LOCATION = """
mutation($name: String!) {
  reloadRepositoryLocation(repositoryLocationName: $name) {
    __typename ... on PythonError { message }
  }
}"""


def ui_reload(dev: DagsterDev, location: str, timeout: float = 600) -> None:
    """"Reload" of a code location, as the UI's button does (after its files were edited),
    until it has loaded again."""
    # the mutation answers once the code server has reloaded (minutes on a loaded machine)
    out = dev.graphql(RELOAD_LOCATION, {"name": location},
                      timeout=timeout)["reloadRepositoryLocation"]
    assert out["__typename"] == "WorkspaceLocationEntry", out
    deadline = time.monotonic() + timeout
    while not _topology.workspace_loaded(dev.graphql(_topology.WORKSPACE, timeout=10)):
        if time.monotonic() > deadline:
            raise AssertionError(f"{location} not reloaded:\n{dev.log.read_text()[-4000:]}")
        time.sleep(1)


def materialization_metadata(dev: DagsterDev, run_id: str) -> dict[str, dict[str, Any]]:
    """``{asset key: {metadata key: value}}`` of a run's materializations."""
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(dev.home)) as instance:
        events = instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        mat = e.asset_materialization
        if mat is not None:
            out[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    return out


def pool_limits(dev: DagsterDev) -> dict[str, int]:
    """The pools the instance knows, with their limits."""
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(dev.home)) as instance:
        return {p.name: p.limit for p in instance.event_log_storage.get_pool_limits()}


def run_log_messages(dev: DagsterDev, run_id: str) -> list[str]:
    """The messages of a run's event log (user logs and Dagster events)."""
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(dev.home)) as instance:
        return [e.user_message for e in instance.all_logs(run_id)]


# ------------------------------------------------------------------------------ Chromium
def chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _chromium_args(window: str) -> list[str]:
    exe = chromium()
    assert exe, "chromium is not installed (apt-get install -y chromium)"
    return [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--disable-dev-shm-usage", "--no-first-run", f"--window-size={window}",
            "--virtual-time-budget=25000"]


def render_dom(url: str, *, window: str = "1400,1250", timeout: float = 120) -> str:
    """The DOM of ``url`` after its scripts ran (``--dump-dom``)."""
    out = subprocess.run([*_chromium_args(window), "--dump-dom", url], capture_output=True,
                         timeout=timeout, check=True)
    return out.stdout.decode("utf-8", "replace")


def screenshot(url: str, path: Path, *, window: str = "1400,1250", timeout: float = 120
               ) -> None:
    subprocess.run([*_chromium_args(window), f"--screenshot={path}", url],
                   capture_output=True, timeout=timeout, check=True)
