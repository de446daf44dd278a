"""What ``python -m pipelines.jobs.compact`` pays to start (issue 16, the lean Spark job): its
class-data archive (:mod:`pipelines.jvm_archive`) written by a first run and mapped by the
next, and the CPU markers of its process tree (:mod:`pipelines.cputrace`) that the bench splits
a run with. The process-tree CPU is checked against what the processes themselves report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import CommitKind, FileSystemCatalog
from pipelines.config import SparkSettings
from pipelines.cputrace import CPU_LOG_ENV, read_marks
from pipelines.jobs.compact import LOCAL_JVM_FLAGS, _local_archive, _session_conf
from pipelines.jvm_archive import CDS_DIR_ENV, class_archive
from pipelines.session import LOCAL_DEFAULTS, source_root
from tests.tables import pk_table, sorted_rows, write_rows

BURN = ("import time, resource\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.3: pass\n"
        "r = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(r.ru_utime + r.ru_stime, flush=True)\n"
        "time.sleep(30)\n")


TREE_CHECK = f"""
import subprocess, sys
from pipelines.cputrace import tree_cpu_s
BURN = {BURN!r}
before = tree_cpu_s()
child = subprocess.Popen([sys.executable, "-c", BURN], stdout=subprocess.PIPE, text=True)
own = float(child.stdout.readline())  # the child's own figure, burnt and still alive
live = tree_cpu_s() - before
alone = tree_cpu_s(child.pid)
child.kill()
child.wait()
reaped = tree_cpu_s() - before
print(own, live, alone, reaped)
"""


def test_tree_cpu_counts_live_and_reaped_children() -> None:
    # Measured from a process of its own: pytest's tree also holds the session's JVM and
    # its workers, whose exits (a worker reparented away from the tree) move CPU out of it
    # between two readings -- CI once saw the tree's figure fall by 0.5 s meanwhile.
    out = subprocess.run([sys.executable, "-c", TREE_CHECK], capture_output=True, text=True,
                         check=True, cwd=source_root(), timeout=60).stdout
    own, live, alone, reaped = map(float, out.split())
    assert own >= 0.3
    assert live >= own - 0.02  # the child's ticks are in the tree (plus its parent's meanwhile)
    assert alone == pytest.approx(own, abs=0.03)
    assert reaped >= own - 0.02  # reaped: its CPU now counts in the parent's children times


def test_markers_only_when_asked(monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    from pipelines.cputrace import mark

    monkeypatch.delenv(CPU_LOG_ENV, raising=False)
    mark("session")
    assert capsys.readouterr().err == ""
    monkeypatch.setenv(CPU_LOG_ENV, "1")
    mark("session")
    mark("work")
    marks = read_marks(capsys.readouterr().err)
    assert list(marks) == ["session", "work"]
    assert 0 < marks["session"]["tree_cpu_s"] <= marks["work"]["tree_cpu_s"]


def test_archive_location_and_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert class_archive(LOCAL_JVM_FLAGS, {CDS_DIR_ENV: "off"}) is None
    assert class_archive(LOCAL_JVM_FLAGS, {CDS_DIR_ENV: ""}) is None
    first = class_archive(LOCAL_JVM_FLAGS, {CDS_DIR_ENV: str(tmp_path)})
    assert first is not None and first.part is not None
    assert first.path.parent == tmp_path and not first.path.exists()
    assert first.jvm_option.startswith(f"-XX:ArchiveClassesAtExit={first.part} ")
    other = class_archive(LOCAL_JVM_FLAGS + " -Xss2m", {CDS_DIR_ENV: str(tmp_path)})
    assert other is not None and other.path != first.path  # other flags, other archive
    first.path.write_bytes(b"x")
    again = class_archive(LOCAL_JVM_FLAGS, {CDS_DIR_ENV: str(tmp_path)})
    assert again is not None and again.part is None
    assert again.jvm_option == f"-XX:SharedArchiveFile={first.path}"
    conf = _session_conf(SparkSettings(), LOCAL_DEFAULTS, again)
    assert conf["spark.driver.extraJavaOptions"].split() == [
        *LOCAL_DEFAULTS["spark.driver.extraJavaOptions"].split(), *LOCAL_JVM_FLAGS.split(),
        again.jvm_option]
    assert conf["spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL"] == "system"
    # the user's Java options, or a cluster: no JVM flags; the user's memory pool is kept
    pool = {"spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL": "system"}
    assert _session_conf(SparkSettings(conf={"spark.driver.extraJavaOptions": "-Dx=1"}),
                         LOCAL_DEFAULTS, again) == pool
    assert _session_conf(SparkSettings(master="spark://h:7077"), LOCAL_DEFAULTS, again) == pool
    mine = {"spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}
    assert "spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL" not in _session_conf(
        SparkSettings(master="spark://h:7077", conf=mine), LOCAL_DEFAULTS)


@pytest.mark.spark
def test_no_archive_for_a_running_session(spark: Any) -> None:
    # main() called in a process whose session is up (a test, a notebook) reuses that JVM:
    # no archive to write, and the job must not stop the session to write one
    assert _local_archive(SparkSettings(master="local[2]")) is None
    assert spark.sparkContext.parallelize([1, 2], 2).sum() == 3


def _job(wh: Path, cds: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, CPU_LOG_ENV: "1", CDS_DIR_ENV: str(cds),
           "PYTHONPATH": os.pathsep.join([source_root(),
                                          *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run(
        [sys.executable, "-m", "pipelines.jobs.compact", "--warehouse", str(wh), "--table",
         "db.pk", "--full", "--master", "local[2]"],
        env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.spark
def test_first_run_writes_the_archive_and_the_next_maps_it(tmp_path: Path) -> None:
    wh, cds = tmp_path / "wh", tmp_path / "cds"
    t = pk_table(wh, bucket="2")
    for c in range(2):
        write_rows(t, pa.table({"pt": ["a", "b"] * 20, "id": list(range(c, c + 40)),
                                "v": [f"v{c}"] * 40}), c + 1)
    before = sorted_rows(t, "pt", "id", "v")

    started = time.time()
    first = _job(wh, cds)
    assert first.returncode == 0, first.stderr[-3000:]
    assert json.loads(first.stdout.strip().splitlines()[-1])["snapshot_id"] == 3
    t = FileSystemCatalog(str(wh)).get_table("db.pk")
    latest = t.snapshot_manager.latest_snapshot()
    assert latest is not None and latest.commit_kind is CommitKind.COMPACT
    assert sorted_rows(t, "pt", "id", "v") == before
    # the markers: session before work, both within the run, CPU growing
    marks = read_marks(first.stderr)
    s, w = marks["session"], marks["work"]
    assert started < s["unix_time"] <= w["unix_time"] < time.time()
    assert 0 < s["tree_cpu_s"] < w["tree_cpu_s"]
    # the archive: in place, complete, no part file left, no CDS noise in the log
    archives = sorted(cds.iterdir())
    assert [p.suffix for p in archives] == [".jsa"] and archives[0].stat().st_size > 1 << 20
    assert "[cds]" not in first.stderr and "class-data archive written" in first.stderr
    stamp = archives[0].stat().st_mtime_ns

    second = _job(wh, cds)  # nothing left to compact; maps the archive
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads(second.stdout.strip().splitlines()[-1])["snapshot_id"] is None
    # the JVM took the archive (ClassArchive.check asked it: java.vm.info says "sharing")
    assert "[cds]" not in second.stderr and "not used by the JVM" not in second.stderr
    assert {"session", "work"} <= read_marks(second.stderr).keys()
    assert sorted(cds.iterdir()) == archives and archives[0].stat().st_mtime_ns == stamp


class _Jvm:
    """What ``spark._jvm.java.lang.System.getProperty("java.vm.info")`` answers."""

    def __init__(self, info: str) -> None:
        self.java = self
        self.lang = self
        self.System = self
        self.info = info

    def getProperty(self, key: str) -> str:  # the Java name
        assert key == "java.vm.info"
        return self.info


def _session(info: str) -> Any:
    """A stand-in SparkSession whose JVM reports ``info`` as ``java.vm.info``."""
    return type("Session", (), {"_jvm": _Jvm(info)})()


def test_an_archive_the_jvm_did_not_take_is_deleted(tmp_path: Path) -> None:
    # a JVM given a SharedArchiveFile it cannot use runs with no sharing at all, silently
    # ("mixed mode" instead of "mixed mode, sharing"); the next run must write a new one
    env = {CDS_DIR_ENV: str(tmp_path)}
    first = class_archive(LOCAL_JVM_FLAGS, env)
    assert first is not None and first.part is not None
    first.path.write_bytes(b"damaged")
    archive = class_archive(LOCAL_JVM_FLAGS, env)
    assert archive is not None and archive.part is None  # this run maps it
    assert not first.check(_session("mixed mode"))  # a run that writes it checks nothing
    assert archive.check(_session("mixed mode, sharing")) and archive.path.exists()
    assert not archive.check(_session("mixed mode")) and not archive.path.exists()
    again = class_archive(LOCAL_JVM_FLAGS, env)
    assert again is not None and again.part is not None  # the next run writes a new one
