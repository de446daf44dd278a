"""A Spark run's share of a standalone cluster (pipelines.cluster.run_share) and the master
health check (``python -m pipelines.cluster``). No Spark here: the share is checked against a
model of the standalone master's executor placement; bench/cluster_sizing.py measures it on a
real master + 2 workers."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from assets.resources import SPARK_POOL, SparkResource
from assets.runs import register_pools
from paimon_core import ConfigError
from pipelines.cluster import ClusterShape, run_share
from pipelines.config import SparkSettings

REPO = Path(__file__).resolve().parents[2]


def _place(shape: ClusterShape, apps: list[dict[str, int | None]]) -> list[int]:
    """Cores each application gets from a standalone master that serves them in order
    (Master.startExecutorsOnWorkers, spreadOut): an executor of ``executor`` cores (all of a
    worker's free cores when unset) wherever one fits, until the app has ``cores_max``
    (unbounded when unset)."""
    free = [shape.worker_cores] * shape.workers
    granted = []
    for app in apps:
        want = app["cores_max"] if app["cores_max"] is not None else shape.cores
        got = 0
        progress = True
        while got < want and progress:
            progress = False
            for w in range(shape.workers):  # one executor per worker per round (spread out)
                size = app["executor"] or free[w]
                if size and free[w] >= size and got + size <= want:
                    free[w] -= size
                    got += size
                    progress = True
        granted.append(got)
    return granted


SHAPES = [ClusterShape(w, c) for w in (1, 2, 3) for c in (1, 2, 3, 4, 6, 8)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s.workers}x{s.worker_cores}")
def test_every_allowed_run_gets_cores(shape: ClusterShape) -> None:
    for runs in range(1, shape.cores + 1):
        share = run_share(shape, runs)
        cores_max, executor = int(share["spark.cores.max"]), int(share["spark.executor.cores"])
        granted = _place(shape, [{"cores_max": cores_max, "executor": executor}] * runs)
        assert granted == [cores_max] * runs, (runs, share)
        # and no core a run could use is left idle: one more core per run would not fit
        assert cores_max >= shape.cores // runs - (shape.worker_cores - 1), (runs, share)


def test_without_a_cap_the_first_run_takes_every_core() -> None:
    shape = ClusterShape(2, 2)
    assert _place(shape, [{"cores_max": None, "executor": None}] * 3) == [4, 0, 0]
    share = run_share(shape, 3)
    assert share == {"spark.cores.max": "1", "spark.executor.cores": "1"}


def test_more_runs_than_cores_get_one_core_each_and_a_warning(
    caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="pipelines.cluster"):
        share = run_share(ClusterShape(2, 2), 5)
    assert share == {"spark.cores.max": "1", "spark.executor.cores": "1"}
    assert "5 Spark runs at once on 2 x 2 worker cores: only 4 can run" in caplog.text
    assert _place(ClusterShape(2, 2), [{"cores_max": 1, "executor": 1}] * 5) == [1] * 4 + [0]


def test_malformed_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="at least 1, got 0"):
        run_share(ClusterShape(2, 2), 0)
    with pytest.raises(ConfigError, match=r"SPARK_WORKER_CORES.*'two' is not an integer"):
        ClusterShape.from_env({"PAIMON_SPARK_WORKERS": "2", "SPARK_WORKER_CORES": "two"})
    with pytest.raises(ConfigError, match=r"PAIMON_SPARK_CONCURRENT_RUNS.*at least 1"):
        SparkSettings.from_env({"PAIMON_SPARK_CONCURRENT_RUNS": "0"})


def test_session_conf_applies_the_share_on_a_cluster_only() -> None:
    env = {"PAIMON_SPARK_WORKERS": "2", "SPARK_WORKER_CORES": "2",
           "PAIMON_SPARK_CONCURRENT_RUNS": "2", "PAIMON_SPARK_CONF": "spark.executor.memory=1g"}
    local = SparkSettings.from_env(env)
    assert local.is_local and local.session_conf() == {"spark.executor.memory": "1g"}
    cluster = SparkSettings.from_env({**env, "PAIMON_SPARK_MASTER": "spark://m:7077"})
    assert cluster.session_conf() == {"spark.executor.memory": "1g", "spark.cores.max": "2",
                                      "spark.executor.cores": "2"}
    # an explicit cap wins, and the rule is not applied at all then
    explicit = SparkSettings.from_env({**env, "PAIMON_SPARK_MASTER": "spark://m:7077",
                                       "PAIMON_SPARK_CONF": "spark.cores.max=3"})
    assert explicit.session_conf() == {"spark.cores.max": "3"}
    # unknown shape: nothing derived
    assert SparkSettings.from_env({"PAIMON_SPARK_MASTER": "spark://m:7077"}).session_conf() == {}


def test_a_dagster_run_takes_the_pool_limit_as_its_concurrency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAIMON_SPARK_WORKERS", "2")
    monkeypatch.setenv("SPARK_WORKER_CORES", "3")
    monkeypatch.delenv("PAIMON_SPARK_CONCURRENT_RUNS", raising=False)
    with dg.instance_for_test(temp_dir=str(tmp_path), overrides={
            "concurrency": {"pools": {"granularity": "run", "default_limit": 3}}}) as instance:
        register_pools(instance)
        resource = SparkResource(master="spark://m:7077")
        with dg.build_resources({"spark": resource}, instance=instance) as res:
            assert res.spark.settings().session_conf() == {
                "spark.cores.max": "2", "spark.executor.cores": "1"}
        # the operator lowers the pool to 2 runs: each gets 3 cores
        instance.event_log_storage.set_concurrency_slots(SPARK_POOL, 2)
        with dg.build_resources({"spark": resource}, instance=instance) as res:
            assert res.spark.settings().session_conf() == {
                "spark.cores.max": "3", "spark.executor.cores": "3"}


@pytest.fixture(scope="module")
def fake_master() -> Iterator[dict[str, Any]]:
    """An HTTP server answering ``/json/`` with whatever ``state["json"]`` holds."""
    state: dict[str, Any] = {"json": {}}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(state["json"]).encode()
            self.send_response(200 if self.path == "/json/" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


def _health(ui: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cluster", "--ui", ui],
                          cwd=REPO, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO),
                                         **env}, capture_output=True, text=True, timeout=60)


def test_master_health_check_waits_for_every_worker(fake_master: dict[str, Any]) -> None:
    worker = {"id": "w1", "state": "ALIVE", "cores": 2}
    fake_master["json"] = {"workers": [worker, {**worker, "id": "w2", "state": "DEAD"}]}
    env = {"PAIMON_SPARK_WORKERS": "2"}
    res = _health(fake_master["url"], env)
    assert res.returncode == 1 and "1 of 2 workers alive" in res.stdout
    fake_master["json"]["workers"][1]["state"] = "ALIVE"
    res = _health(fake_master["url"], env)
    assert res.returncode == 0 and "2 of 2 workers alive, 4 cores" in res.stdout
    # no master: unhealthy, saying where it looked
    res = _health("http://127.0.0.1:9", env)
    assert res.returncode == 1 and "does not answer" in res.stderr


def test_runs_on_a_shared_spark_connect_server_take_no_share_of_their_own(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the shared server (the Spark resource's default, ``connect: auto``) the runs are
    sessions of one application: no per-run core cap is sent (the server's FAIR scheduler
    shares its cores between the runs' jobs); the classic opt-out keeps the per-run share."""
    from pipelines.connect import server_conf

    monkeypatch.setenv("PAIMON_SPARK_WORKERS", "2")
    monkeypatch.setenv("SPARK_WORKER_CORES", "2")
    monkeypatch.setenv("PAIMON_SPARK_CONCURRENT_RUNS", "4")
    monkeypatch.delenv("PAIMON_SPARK_CONNECT", raising=False)
    shared = SparkResource(master="spark://m:7077", conf={"spark.executor.memory": "1g"})
    assert shared.settings().connect == "auto"
    assert shared.settings().connect_conf() == {"spark.executor.memory": "1g"}
    assert server_conf("spark://m:7077", shared.settings().connect_conf())[
        "spark.scheduler.mode"] == "FAIR"
    classic = SparkResource(master="spark://m:7077", connect="off")
    assert classic.settings().connect is None
    assert classic.settings().session_conf() == {"spark.cores.max": "1",
                                                 "spark.executor.cores": "1"}
    monkeypatch.setenv("PAIMON_SPARK_CONNECT", "sc://spark-connect:15002")
    assert SparkResource(master="spark://m:7077").settings().connect == \
        "sc://spark-connect:15002"
    with pytest.raises(ConfigError, match=r"PAIMON_SPARK_CONNECT: 'yes please': expected auto"):
        SparkResource(master="spark://m:7077", connect="yes please").settings()
