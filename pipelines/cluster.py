"""The Spark standalone cluster of a deployment: its shape, each run's share of it, and what its
master reports.

**Sizing.** A standalone application takes every free core unless ``spark.cores.max`` caps it:
with N Spark runs allowed at once (the ``paimon-spark`` pool limit of the Dagster instance) the
first run would hold the whole cluster and the others would wait for executors. The one rule
(:func:`run_share`): a run gets ``cores // N`` cores of the cluster, in executors whose size
divides a worker's cores, so the executors of all N runs fit on the workers together.

========================  ===================================================================
``PAIMON_SPARK_WORKERS``  number of Spark workers of the cluster
``SPARK_WORKER_CORES``    cores each worker offers (Spark's own variable: the worker reads it)
``PAIMON_SPARK_CONCURRENT_RUNS``  Spark runs at once, for a job started outside Dagster
                          (``python -m pipelines.jobs.compact``); a Dagster run uses its
                          instance's ``paimon-spark`` pool limit instead
========================  ===================================================================

An explicit ``spark.cores.max`` / ``spark.executor.cores`` in the job's conf wins.

**Master status.** :func:`master_status` reads the master's ``/json/`` page (workers, cores,
running applications); ``python -m pipelines.cluster --ui URL --workers N`` exits 0 once N
workers are alive (the health check of docker/compose.yaml's ``spark-master``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paimon_core import ConfigError

__all__ = [
    "CONCURRENT_RUNS_ENV",
    "WORKERS_ENV",
    "WORKER_CORES_ENV",
    "ClusterShape",
    "alive_workers",
    "master_status",
    "run_share",
]

log = logging.getLogger(__name__)

WORKERS_ENV = "PAIMON_SPARK_WORKERS"
WORKER_CORES_ENV = "SPARK_WORKER_CORES"
CONCURRENT_RUNS_ENV = "PAIMON_SPARK_CONCURRENT_RUNS"
#: the conf keys of a run's share; set explicitly, they win over :func:`run_share`
SHARE_KEYS = ("spark.cores.max", "spark.executor.cores")


def positive_int(env: Mapping[str, str], name: str) -> int | None:
    """``env[name]`` as a positive int, None when unset or blank.

    Raises:
        ConfigError: set but not a positive integer.
    """
    text = (env.get(name) or "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(name, f"{text!r} is not an integer") from None
    if value < 1:
        raise ConfigError(name, f"must be at least 1, got {value}")
    return value


@dataclass(frozen=True)
class ClusterShape:
    """``workers`` workers offering ``worker_cores`` cores each."""

    workers: int
    worker_cores: int

    @property
    def cores(self) -> int:
        return self.workers * self.worker_cores

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClusterShape | None:
        """From :data:`WORKERS_ENV` and :data:`WORKER_CORES_ENV`; None unless both are set."""
        env = os.environ if env is None else env
        workers = positive_int(env, WORKERS_ENV)
        cores = positive_int(env, WORKER_CORES_ENV)
        return None if workers is None or cores is None else cls(workers, cores)


def run_share(shape: ClusterShape, concurrent_runs: int) -> dict[str, str]:
    """``spark.cores.max`` and ``spark.executor.cores`` of one of ``concurrent_runs`` runs.

    The run's cores are ``shape.cores // concurrent_runs``; its executors are the largest size
    dividing ``worker_cores`` that keeps the most of them (so N runs' executors pack onto the
    workers exactly: N * cores.max <= cores, each worker holds whole executors).

    More runs than cores cannot all make progress: each then gets one core (``cores`` of them
    run, the others wait for executors) and a warning says so -- the deployment's own
    configuration is checked for it (tests/assets/test_docker.py).

    Raises:
        ConfigError: ``concurrent_runs`` < 1.
    """
    if concurrent_runs < 1:
        raise ConfigError("concurrent Spark runs", f"must be at least 1, got {concurrent_runs}")
    per_run = shape.cores // concurrent_runs
    if per_run < 1:
        log.warning(
            "%d Spark runs at once on %d x %d worker cores: only %d can run at a time; lower "
            "the paimon-spark pool limit or add cores", concurrent_runs, shape.workers,
            shape.worker_cores, shape.cores)
        per_run = 1
    divisors = [d for d in range(shape.worker_cores, 0, -1)
                if shape.worker_cores % d == 0 and d <= per_run]
    executor = max(divisors, key=lambda d: (per_run - per_run % d, d))
    return {"spark.cores.max": str(per_run - per_run % executor),
            "spark.executor.cores": str(executor)}


def master_status(ui_url: str, *, timeout: float = 5.0) -> dict[str, Any]:
    """The master's ``/json/`` page: ``workers``, ``aliveworkers``, ``cores``, ``coresused``,
    ``activeapps`` (each with ``id``, ``name``, ``cores`` granted, ``state``)...

    Raises:
        OSError: the master's UI does not answer (``urllib.error.URLError`` is one).
    """
    with urllib.request.urlopen(ui_url.rstrip("/") + "/json/", timeout=timeout) as resp:
        status: dict[str, Any] = json.load(resp)
    return status


def alive_workers(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The workers of a :func:`master_status` in state ALIVE."""
    return [w for w in status.get("workers", []) if w.get("state") == "ALIVE"]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m pipelines.cluster",
        description="Exit 0 when the Spark master answers with enough alive workers.")
    p.add_argument("--ui", default="http://127.0.0.1:8080", help="the master's web UI")
    p.add_argument("--workers", type=int, default=None,
                   help=f"workers expected alive (default: ${WORKERS_ENV}, else 1)")
    args = p.parse_args(argv)
    want = args.workers or positive_int(os.environ, WORKERS_ENV) or 1
    try:
        alive = alive_workers(master_status(args.ui))
    except OSError as e:
        print(f"spark master at {args.ui} does not answer: {e}", file=sys.stderr)
        return 1
    cores = sum(int(w.get("cores", 0)) for w in alive)
    print(f"{len(alive)} of {want} workers alive, {cores} cores")
    return 0 if len(alive) >= want else 1


if __name__ == "__main__":
    raise SystemExit(main())
