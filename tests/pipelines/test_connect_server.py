"""The shared Spark Connect server's life (pipelines.connect), through its command as
``make ui`` and the Spark resource use it: two processes asking at once start one server
(the lock), its state and log sit in the known directory, it serves jobs, and it stops by
itself once no client holds it for the idle timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pipelines.connect import (
    connect_mode,
    read_info,
    release,
    server_conf,
    server_dir,
    stop_server,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


#: a run's resource starts a 10-minute Spark job, then the run ends (resource teardown)
INTERRUPTED = """
import threading, time
import dagster as dg
from assets.resources import SparkResource

def slow(batches):
    import time
    time.sleep(600)
    yield from batches

failed = {}
with dg.build_resources({"spark": SparkResource(master="local[2]")}) as res:
    session = res.spark.session()
    print(session.range(5).count(), session.conf.get("spark.scheduler.mode"), flush=True)
    def job():
        try:
            session.range(0, 2, 1, 2).mapInArrow(slow, "id long").collect()
        except Exception as e:
            failed["at"] = time.monotonic()
    thread = threading.Thread(target=job, daemon=True)
    thread.start()
    time.sleep(10)  # the tasks are running
    ended = time.monotonic()
thread.join(120)
print(f"interrupted after {failed['at'] - ended:.1f} s" if failed else "still running")
"""


#: a user's own asset writing with ``df.write.format("paimon")`` on its run's session (a
#: Spark Connect one): no mode given, a primary-key table's rows from 4 tasks (shuffled by
#: bucket first: a bucket takes rows from one task); then a column the table lacks
USER_WRITE = """
import sys
import dagster as dg
from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from assets.resources import SparkResource
from pipelines.session import is_connect

wh = sys.argv[1]
cat = FileSystemCatalog(wh)
cat.create_database("db", ignore_if_exists=True)
cat.create_table("db.kv", Schema.of([("id", "BIGINT NOT NULL"), ("v", "STRING")],
                                    primary_keys=["id"], options={"bucket": "2"}))
with dg.build_resources({"spark": SparkResource(master="local[2]")}) as res:
    spark = res.spark.session()
    print("connect" if is_connect(spark) else "classic", flush=True)
    df = spark.createDataFrame([(i, f"v{i}") for i in range(12)], "id long, v string")
    df = df.repartition(4)
    df.write.format("paimon").option("warehouse", wh).save("db.kv")
    got = sorted(tuple(r) for r in cat.get_table("db.kv").to_arrow().to_pylist()
                 for r in [r.values()])
    print(got, flush=True)
    try:
        spark.createDataFrame([(1, "x", 3)], "id long, v string, extra int").write.format(
            "paimon").option("warehouse", wh).save("db.kv")
        print("extra column written")
    except Exception as e:
        print(type(e).__name__, str(e).splitlines()[0], flush=True)
"""


def _start(env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-W", "ignore", "-m", "pipelines.connect", "start"],
                         env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_concurrent_starts_share_one_server_that_stops_when_idle(tmp_path: Path) -> None:
    env = {**os.environ, "PAIMON_SPARK_CONNECT_DIR": str(tmp_path), "PAIMON_SPARK_MASTER": "",
           "PAIMON_SPARK_CONNECT_IDLE": "30", "PYTHONPATH": str(REPO),
           "PAIMON_SPARK_CONNECT": "auto"}
    with ThreadPoolExecutor(2) as pool:
        said = list(pool.map(_start, [env, env]))
    try:
        assert sorted(s.split(":", 1)[0] for s in said) == ["running", "started"], said
        [directory] = list(tmp_path.iterdir())
        info = read_info(directory)
        assert info is not None and info.alive() and info.master == "local[2]"
        assert all(info.url in s for s in said), said
        assert Path(info.log) == directory / "server.log"
        # this test holds the server as a client would while it checks it (a loaded machine
        # can take longer than the idle timeout to start the next client)
        (directory / "leases" / str(os.getpid())).touch()
        # the end of a run (the Spark resource's teardown, as on a failed or terminated run)
        # interrupts what its session still runs on the shared server
        out = subprocess.run([sys.executable, "-W", "ignore", "-c", INTERRUPTED], env=env,
                             cwd=REPO, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        counted, verdict = out.stdout.strip().splitlines()[-2:]
        assert counted.split() == ["5", "FAIR"], out.stdout  # a job ran there, FAIR-scheduled
        assert verdict.startswith("interrupted after"), (verdict, out.stderr[-3000:])
        assert float(verdict.split()[2]) < 60, verdict  # not the task's 10 minutes
        assert info.alive()
        # a user's own asset writes df.write.format("paimon") on that server as in process
        out = subprocess.run([sys.executable, "-W", "ignore", "-c", USER_WRITE,
                              str(tmp_path / "wh")], env={**env, "PAIMON_SPARK_CONNECT_DIR":
                                                          str(directory.parent)},
                             cwd=REPO, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        kind, got, refused = out.stdout.strip().splitlines()[-3:]
        assert kind == "connect"
        assert got == str([(k, f"v{k}") for k in range(12)]), out.stdout
        assert refused.startswith("SchemaError") and "extra" in refused, out.stdout
        release(info)
        # no client left: it stops after the idle timeout, and says so in its log
        deadline = time.monotonic() + 120
        while info.alive() and time.monotonic() < deadline:
            time.sleep(1)
        assert not info.alive()
        assert read_info(directory) is None
        log = Path(info.log).read_text()
        assert "no client for 30 s: stopping" in log
        # every session's jobs land in the default pool: FAIR within, not Spark's FIFO
        assert "Created pool: default, schedulingMode: FAIR" in log
    finally:
        for d in tmp_path.iterdir():
            stop_server(d)


def test_settings() -> None:
    assert connect_mode(None) is None and connect_mode("off") is None
    assert connect_mode("auto") == "auto" and connect_mode("sc://h:1") == "sc://h:1"
    local = server_conf("local[3]", {"spark.sql.shuffle.partitions": "8"})
    assert local["spark.default.parallelism"] == "3" and local["spark.scheduler.mode"] == "FAIR"
    assert local["spark.sql.shuffle.partitions"] == "8"
    assert local["spark.driver.bindAddress"] == "127.0.0.1"
    cluster = server_conf("spark://m:7077", {})
    assert "spark.driver.bindAddress" not in cluster and "spark.default.parallelism" not in cluster
    # one server per master and conf
    assert server_dir("local[2]", local) != server_dir("local[3]", local)
    assert server_dir("local[2]", local) != server_dir("local[2]", cluster)
    assert server_dir("local[2]", local) == server_dir("local[2]", dict(local))
