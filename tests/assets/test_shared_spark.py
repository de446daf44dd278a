"""Dagster runs share one long-lived Spark Connect server (pipelines.connect) instead of
starting a JVM each -- checked on a real ``dagster dev`` with the shipped resources
(``connect: auto``), runs launched through GraphQL as the UI launches them:

* the first Spark run starts the server (its log says so), the next run connects to it: both
  runs' materializations name the same Spark application, the server's;
* the server is the one its state directory describes (address, master), its log in the
  known place;
* a run that fails in Spark fails with the job's typed error, and the server serves the next
  run.

The figures (launch -> session, session open time) are printed, not asserted: timings here
depend on the machine's load.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assets.resources import SPARK_STARTED
from assets.tables import CUSTOMERS
from paimon_core.io.file_io import FileIO
from pipelines.connect import read_info, stop_server
from tests.assets.processes import (
    DagsterDev,
    dagster_dev,
    run_event_time,
    run_log_messages,
    ui_materialize,
    wait_for_run,
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("shared-spark")
    out = {"root": root, "warehouse": root / "warehouse", "landing": root / "landing",
           "connect": root / "connect"}
    for key in ("warehouse", "landing"):
        out[key].mkdir()
    return out


@pytest.fixture(scope="module")
def dev(lake: dict[str, Path]) -> Iterator[DagsterDev]:
    env = {"PAIMON_WAREHOUSE": str(lake["warehouse"]), "PAIMON_LANDING": str(lake["landing"]),
           # this module's own server (the default directory is shared by the machine's runs)
           "PAIMON_SPARK_CONNECT_DIR": str(lake["connect"]), "PAIMON_SPARK_CONNECT_IDLE": "600"}
    try:
        with dagster_dev(lake["root"], env) as d:
            yield d
    finally:
        for directory in lake["connect"].glob("*"):
            stop_server(directory)


def _spark_metadata(dev: DagsterDev, run_id: str) -> dict[str, str]:
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(dev.home)) as instance:
        events = instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
    assert events, run_id
    md = events[0].dagster_event.event_specific_data.materialization.metadata  # type: ignore
    return {k: v.value for k, v in md.items() if k.startswith("spark/")}


def _session_line(dev: DagsterDev, run_id: str) -> str:
    lines = [m for m in run_log_messages(dev, run_id) if SPARK_STARTED in m]
    assert len(lines) == 1, run_log_messages(dev, run_id)
    return lines[0]


def _figures(dev: DagsterDev, run_id: str, line: str) -> str:
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(dev.home)) as instance:
        logs = instance.all_logs(run_id)
    opened = next(e.timestamp for e in logs if e.user_message and SPARK_STARTED in e.user_message)
    launched = run_event_time(dev, run_id, "RUN_STARTING")
    done = next(e.timestamp for e in logs if e.dagster_event is not None
                and e.dagster_event.event_type == DagsterEventType.STEP_SUCCESS)
    took = re.search(r"in ([0-9.]+) s$", line)
    return (f"launch -> session {opened - launched:.1f} s (opened in "
            f"{took.group(1) if took else '?'} s), launch -> step done {done - launched:.1f} s")


def test_runs_share_one_spark_connect_server(dev: DagsterDev, lake: dict[str, Path],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from assets.demo_data import generate

    landing = str(lake["landing"])
    feed = generate(FileIO(landing), landing, days=("2025-01-06", "2025-01-07"), customers=20,
                    orders_per_day=10)
    runs = []
    for day in feed.days:
        rid = ui_materialize(dev, [CUSTOMERS.key_path], day)
        assert wait_for_run(dev, rid, timeout=600)["status"] == "SUCCESS", \
            dev.log.read_text()[-4000:]
        runs.append(rid)
    first, second = (_session_line(dev, r) for r in runs)
    assert "started a server" in first, first
    assert "connected to the existing server" in second, second
    apps = [_spark_metadata(dev, r) for r in runs]
    assert apps[0]["spark/application_id"] == apps[1]["spark/application_id"], apps
    assert apps[0]["spark/application_id"].startswith("local-"), apps
    assert {a["spark/master"] for a in apps} == {"local[2]"}, apps

    [directory] = list(lake["connect"].glob("*"))
    info = read_info(directory)
    assert info is not None and info.alive() and info.master == "local[2]"
    assert info.url in first and info.url in second
    log = Path(info.log).read_text(errors="replace")
    # the server's own log, in its directory: the supervisor's line and Spark's
    assert f"Spark Connect server for local[2] at {info.url}" in log
    assert "SparkConnectServer: Spark Connect server started" in log
    with capsys.disabled():
        for rid, line in zip(runs, (first, second)):
            print(f"\n[shared spark] run {rid[:8]}: {_figures(dev, rid, line)}")


def test_a_failing_spark_job_fails_its_run_and_the_server_serves_on(
        dev: DagsterDev, lake: dict[str, Path]) -> None:
    # a day of malformed events only: the ingestion job refuses it (its error ratio) with its
    # typed error, the run fails -- and the next run still gets the shared server
    day_dir = lake["landing"] / CUSTOMERS.identifier / "dt=2025-01-09"
    day_dir.mkdir(parents=True)
    (day_dir / "bad.json").write_text("\n".join(json.dumps({"op": "?", "x": i})
                                                for i in range(4)) + "\n")
    rid = ui_materialize(dev, [CUSTOMERS.key_path], "2025-01-09")
    run: dict[str, Any] = wait_for_run(dev, rid, timeout=600)
    assert run["status"] == "FAILURE", run
    messages = run_log_messages(dev, rid)
    assert any("events malformed" in m for m in messages), messages
    [directory] = list(lake["connect"].glob("*"))
    info = read_info(directory)
    assert info is not None and info.alive()
    assert any("connected to the existing server" in m for m in messages), messages
