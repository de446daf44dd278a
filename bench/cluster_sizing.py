"""Three concurrent compaction runs on a real Spark standalone cluster (a master + 2 workers on
127.0.0.1, started here with pyspark's ``spark-class``), with and without each run's share
of the cores (:func:`pipelines.cluster.run_share`: ``spark.cores.max`` /
``spark.executor.cores`` from ``PAIMON_SPARK_WORKERS`` x ``SPARK_WORKER_CORES`` and
``PAIMON_SPARK_CONCURRENT_RUNS``) -- what the daemon launches when three compaction runs of the
``paimon-spark`` pool are in flight (issue 19, scope 4).

Per round: three fresh copies of three primary-key tables, three ``python -m pipelines.jobs.compact
--master spark://...`` started at once. Measured: the master's ``/json/`` every 0.25 s (cores
each application was granted, when it first got any), each run's wall time, the CPU seconds
and peak RSS of the whole process forest (master, workers, executors, drivers and their
Python workers: every process is a descendant of this script), and each table checked after
(``fsck`` clean, rows unchanged, one COMPACT snapshot).

    .venv/bin/python bench/cluster_sizing.py [--rounds 3] [--rows 200000] [--worker-cores 2]

Scratch data under /tmp/i19-compose/ (deleted at the end); results on stdout and in
bench/results/cluster_sizing.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from proctree import PAGE, TICK, proc_stat, tree

from paimon_core import FileSystemCatalog, Schema  # (proctree put this checkout first)
from paimon_core.fsck import fsck
from pipelines.cluster import alive_workers, master_status

REPO = Path(__file__).resolve().parent.parent
SCRATCH = Path("/tmp/i19-compose")
RUNS = 3
WORKERS = 2
TABLES = [f"bench.t{i}" for i in range(RUNS)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def base_env() -> dict[str, str]:
    import pyspark

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PAIMON_", "SPARK_", "PYSPARK_"))}
    env.update(SPARK_HOME=str(Path(pyspark.__file__).parent), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(REPO), TZ="UTC")
    return env


class Cluster:
    """A master and :data:`WORKERS` workers on 127.0.0.1 (stopped by their process ids)."""

    def __init__(self, root: Path, worker_cores: int) -> None:
        self.port, self.ui_port = free_port(), free_port()
        self.worker_cores = worker_cores
        self.url = f"spark://127.0.0.1:{self.port}"
        self.ui = f"http://127.0.0.1:{self.ui_port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.root = root

    def start(self) -> None:
        env = base_env()
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self._spawn("master", [spark_class(), "org.apache.spark.deploy.master.Master",
                               "--host", "127.0.0.1", "--port", str(self.port),
                               "--webui-port", str(self.ui_port)], env, logs)
        for i in range(WORKERS):
            work = self.root / f"work-{i}"
            work.mkdir(exist_ok=True)
            # cores / memory as compose gives them: the worker reads its own variables
            wenv = {**env, "SPARK_WORKER_CORES": str(self.worker_cores),
                    "SPARK_WORKER_MEMORY": "1g", "SPARK_WORKER_DIR": str(work)}
            self._spawn(f"worker-{i}", [spark_class(), "org.apache.spark.deploy.worker.Worker",
                                        "--host", "127.0.0.1", "--webui-port", "0", self.url],
                        wenv, logs)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if len(alive_workers(master_status(self.ui))) == WORKERS:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the cluster did not come up (logs in {logs})")

    def _spawn(self, name: str, argv: list[str], env: dict[str, str], logs: Path) -> None:
        out = open(logs / f"{name}.log", "wb")  # noqa: SIM115 (closed with the process)
        self.procs.append(subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                           cwd=self.root, start_new_session=True))

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, 15)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait()


def make_tables(warehouse: Path, rows: int, commits: int) -> dict[str, int]:
    """:data:`TABLES`: key ``id``, 4 buckets, ``commits`` upsert commits each (write-only:
    every commit leaves its sorted runs for the compaction)."""
    cat = FileSystemCatalog(str(warehouse))
    rng = np.random.default_rng(19)
    counts = {}
    for name in TABLES:
        table = cat.create_table(name, Schema.of(
            [("id", "BIGINT"), ("v", "BIGINT"), ("s", "STRING")], primary_keys=["id"],
            options={"bucket": "4", "write-only": "true"}))
        for c in range(commits):
            ids = rng.choice(rows, size=rows // commits * 2, replace=False).astype("int64")
            data = pa.table({"id": ids, "v": ids * 16 + c,
                             "s": pa.array([f"r{c}"] * len(ids))})
            with table.new_write("bench") as w:
                w.write_arrow(data)
                msgs = w.prepare_commit()
            table.new_commit("bench").commit(msgs)
        counts[name] = table.to_arrow().num_rows
    return counts


class Forest:
    """CPU seconds and peak RSS of every descendant of this process, sampled every 0.2 s
    (a process loses at most its last 0.2 s)."""

    def __init__(self) -> None:
        self.base = self._cpu_by_proc()
        self.last = dict(self.base)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _cpu_by_proc() -> dict[tuple[int, int], int]:
        out = {}
        for pid in tree(os.getpid()):
            if pid == os.getpid():
                continue
            st = proc_stat(pid)
            if st is not None:
                out[(pid, int(st[19]))] = int(st[11]) + int(st[12])
        return out

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            rss = 0
            for pid in tree(os.getpid()):
                if pid == os.getpid():
                    continue
                st = proc_stat(pid)
                if st is None:
                    continue
                # utime + stime (children are processes of the forest themselves)
                self.last[(pid, int(st[19]))] = int(st[11]) + int(st[12])
                rss += int(st[21]) * PAGE
            self.peak = max(self.peak, rss)

    def __enter__(self) -> Forest:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def cpu_s(self) -> float:
        return sum(v - self.base.get(k, 0) for k, v in self.last.items()) / TICK


def one_round(cluster: Cluster, master_wh: Path, rows: dict[str, int], sized: bool,
              worker_cores: int) -> dict[str, Any]:
    wh = SCRATCH / "round"
    shutil.rmtree(wh, ignore_errors=True)
    shutil.copytree(master_wh, wh)
    env = base_env()
    env["PAIMON_SPARK_CONF"] = ";".join([
        "spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1",
        "spark.executor.memory=512m", "spark.driver.memory=512m", "spark.ui.enabled=false"])
    if sized:  # the deployment's variables (docker/paimon.env), N = the pool limit
        env.update(PAIMON_SPARK_WORKERS=str(WORKERS), SPARK_WORKER_CORES=str(worker_cores),
                   PAIMON_SPARK_CONCURRENT_RUNS=str(RUNS))
    seen: dict[str, dict[str, Any]] = {}
    stop = threading.Event()
    t0 = time.monotonic()

    def watch() -> None:
        while not stop.wait(0.25):
            try:
                status = master_status(cluster.ui, timeout=2)
            except OSError:
                continue
            now = time.monotonic() - t0
            for app in status.get("activeapps", []):
                s = seen.setdefault(app["id"], {"name": app["name"], "registered_s": now,
                                                "first_cores_s": None, "max_cores": 0})
                cores = int(app.get("cores", 0))
                if cores and s["first_cores_s"] is None:
                    s["first_cores_s"] = now
                s["max_cores"] = max(s["max_cores"], cores)

    watcher = threading.Thread(target=watch, daemon=True)
    with Forest() as forest:
        watcher.start()
        runs: dict[str, dict[str, Any]] = {}

        def run(name: str) -> None:
            cmd = [sys.executable, "-m", "pipelines.jobs.compact", "--warehouse", str(wh),
                   "--table", name, "--master", cluster.url,
                   "--conf", f"spark.app.name=compact-{name}"]
            started = time.monotonic()
            p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                               timeout=900)
            runs[name] = {"rc": p.returncode, "wall_s": round(time.monotonic() - started, 2)}
            if p.returncode:
                runs[name]["stderr"] = p.stderr[-2000:]

        threads = [threading.Thread(target=run, args=(n,)) for n in TABLES]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        stop.set()
        watcher.join()
    # each table: compacted once, fsck clean, the same rows
    cat = FileSystemCatalog(str(wh))
    for name in TABLES:
        table = cat.get_table(name)
        snap = table.latest_snapshot()
        runs[name].update(
            compacted=snap is not None and snap.commit_kind.value == "COMPACT",
            fsck_ok=fsck(table).ok, rows_ok=table.to_arrow().num_rows == rows[name])
    apps = {v["name"].removeprefix("compact-"): v for v in seen.values()}
    for name in TABLES:
        runs[name]["app"] = apps.get(name)
    shutil.rmtree(wh, ignore_errors=True)
    return {"sized": sized, "wall_s": round(wall, 2), "cpu_s": round(forest.cpu_s(), 1),
            "peak_rss_mb": round(forest.peak / 2**20), "runs": runs}


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    def med(values: list[float]) -> float:
        return round(statistics.median(values), 2)

    out: dict[str, Any] = {
        "rounds": len(rounds),
        "wall_s": med([r["wall_s"] for r in rounds]),
        "cpu_s": med([r["cpu_s"] for r in rounds]),
        "peak_rss_mb": med([r["peak_rss_mb"] for r in rounds]),
        "all_ok": all(v["rc"] == 0 and v["compacted"] and v["fsck_ok"] and v["rows_ok"]
                      for r in rounds for v in r["runs"].values()),
    }
    apps = [v["app"] for r in rounds for v in r["runs"].values()]
    out["every_app_got_cores"] = all(a and a["max_cores"] > 0 for a in apps)
    out["max_cores_per_app"] = sorted({a["max_cores"] for a in apps if a})
    # how long each run waited for its first executor, the slowest of the three per round
    waits = [max((v["app"]["first_cores_s"] or v["wall_s"]) - v["app"]["registered_s"]
                 for v in r["runs"].values() if v["app"]) for r in rounds]
    out["slowest_wait_for_cores_s"] = med(waits)
    out["run_wall_s"] = med([v["wall_s"] for r in rounds for v in r["runs"].values()])
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows", type=int, default=200_000, help="keys per table")
    p.add_argument("--commits", type=int, default=5)
    p.add_argument("--worker-cores", type=int, default=2)
    args = p.parse_args()
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    cluster = Cluster(SCRATCH, args.worker_cores)
    result: dict[str, Any] = {"load_before": os.getloadavg()}
    try:
        master_wh = SCRATCH / "warehouse"
        t = time.monotonic()
        rows = make_tables(master_wh, args.rows, args.commits)
        print(f"tables: {rows} in {time.monotonic() - t:.1f} s", flush=True)
        cluster.start()
        print(f"cluster: {cluster.url} ({WORKERS} workers x {args.worker_cores} cores), "
              f"UI {cluster.ui}", flush=True)
        rounds: dict[str, list[dict[str, Any]]] = {"unsized": [], "sized": []}
        for i in range(args.rounds):  # interleaved, so load drifts hit both alike
            for mode in ("unsized", "sized"):
                r = one_round(cluster, master_wh, rows, mode == "sized", args.worker_cores)
                rounds[mode].append(r)
                print(f"round {i + 1} {mode}: wall {r['wall_s']} s, cpu {r['cpu_s']} s, "
                      f"peak rss {r['peak_rss_mb']} MB, apps " + ", ".join(
                          f"{n}: {v['app'] and v['app']['max_cores']} cores after "
                          f"{v['app'] and v['app']['first_cores_s']} s, wall {v['wall_s']} s"
                          for n, v in r["runs"].items()), flush=True)
        result.update({mode: summary(rs) for mode, rs in rounds.items()})
        result["raw"] = rounds
    finally:
        cluster.stop()
        result["load_after"] = os.getloadavg()
        shutil.rmtree(SCRATCH, ignore_errors=True)
    out = REPO / "bench" / "results" / "cluster_sizing.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "raw"}, indent=1))
    ok = result["sized"]["all_ok"] and result["unsized"]["all_ok"]
    return 0 if ok and result["sized"]["every_app_got_cores"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
