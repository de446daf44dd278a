"""How fast a Dagster run reaches Spark: a real ``dagster dev`` (the embedded defaults), CDC
ingestion runs of one small landing day each launched through GraphQL as the UI's
"Materialize" does, with the Spark resource in classic mode (a JVM per run,
``PAIMON_SPARK_CONNECT=off``) and on the shared Spark Connect server (``auto``).

Per run: launch (the run's RUN_STARTING event) -> the step's "Spark session started" line
(the session open), -> the step's success, and the 1-minute load average.

    python bench/run_start.py [--modes off,auto] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from assets.resources import SPARK_STARTED  # noqa: E402
from assets.tables import CUSTOMERS  # noqa: E402
from pipelines.connect import stop_server  # noqa: E402
from tests.assets.processes import (  # noqa: E402
    DagsterDev,
    dagster_dev,
    run_event_time,
    ui_materialize,
    wait_for_run,
)


def _figures(dev: DagsterDev, run_id: str) -> tuple[float, float, float, str]:
    """Seconds from launch to the step's start (the run process up, the code loaded), to the
    Spark session, to the step's success; the session's log line."""
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(dev.home)) as instance:
        logs = instance.all_logs(run_id)
    launched = run_event_time(dev, run_id, "RUN_STARTING")

    def first(kind: DagsterEventType) -> float:
        return next(e.timestamp for e in logs
                    if e.dagster_event is not None and e.dagster_event.event_type == kind)

    line = next(e for e in logs if e.user_message and SPARK_STARTED in e.user_message)
    return (first(DagsterEventType.STEP_START) - launched, line.timestamp - launched,
            first(DagsterEventType.STEP_SUCCESS) - launched, line.user_message)


def bench(mode: str, runs: int, root: Path) -> None:
    from assets.demo_data import generate
    from paimon_core.io.file_io import FileIO

    lake = {k: root / mode / k for k in ("warehouse", "landing", "connect")}
    for p in lake.values():
        p.mkdir(parents=True)
    env = {"PAIMON_WAREHOUSE": str(lake["warehouse"]), "PAIMON_LANDING": str(lake["landing"]),
           "PAIMON_SPARK_CONNECT": mode, "PAIMON_SPARK_CONNECT_DIR": str(lake["connect"])}
    days = tuple(f"2025-01-{6 + i:02d}" for i in range(runs))
    generate(FileIO(str(lake["landing"])), str(lake["landing"]), days=days, customers=20,
             orders_per_day=10)
    try:
        with dagster_dev(root / mode, env) as dev:
            for day in days:
                rid = ui_materialize(dev, [CUSTOMERS.key_path], day)
                status = wait_for_run(dev, rid, timeout=900)["status"]
                load = os.getloadavg()[0]
                to_step, to_session, to_done, line = _figures(dev, rid)
                print(f"{mode:<5} {day} {status:<8} launch->step start {to_step:5.1f} s  "
                      f"->session {to_session:6.1f} s  ->step done {to_done:6.1f} s  "
                      f"load {load:5.1f}  | {line}", flush=True)
    finally:
        for d in lake["connect"].glob("*"):
            stop_server(d)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--modes", default="off,auto")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="run-start-") as tmp:
        for mode in args.modes.split(","):
            bench(mode, args.runs, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
