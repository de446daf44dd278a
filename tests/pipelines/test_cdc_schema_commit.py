"""A CDC batch's new column lands in the same commit as its rows, or not at all (issue 27,
item 9), through ``python -m pipelines.jobs.cdc_ingest`` as the README writes it, in a subprocess,
on hand-written Debezium events:

* a day with a new ``phone`` field and 2 of its 4 events malformed is refused by the error
  ratio: the table keeps schema 0 (no ``schema-1`` file, no pending marker);
* the day fixed, the run is killed between the schema's file and the snapshot (the
  snapshot's create never happens): ``schema-1`` and its marker are there, no snapshot;
* the re-run adopts the schema and lands ``phone`` and the rows in one snapshot, once.

Three runs of the job (three JVM start-ups) in one test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.schema_pending import PENDING_PREFIX
from paimon_core.table import FileStoreTable
from pipelines.session import source_root
from tests.reliability.faults import EXIT_CODE

pytestmark = pytest.mark.spark

SCHEMA = {"fields": [{"name": "id", "type": "BIGINT"}, {"name": "name", "type": "STRING"}],
          "primary_keys": ["id"], "options": {"bucket": "1"}}

#: the job with the process killed when it is about to create a snapshot file (after the
#: batch's schema was published: its manifests are written, the snapshot is not)
CRASH_BEFORE_SNAPSHOT = f"""
import os, sys
from paimon_core.io.file_io import FileIO
from tests.reliability.faults import path_kind
create = FileIO.try_create
def try_create(self, path, data):
    if path_kind(path) == "snapshot":
        os._exit({EXIT_CODE})
    return create(self, path, data)
FileIO.try_create = try_create
sys.argv[0] = "pipelines.jobs.cdc_ingest"
from pipelines.jobs.runner import run_job_main
run_job_main("pipelines.jobs.cdc_ingest")
"""


def _event(op: str, lsn: int, after: dict[str, Any] | None) -> str:
    return json.dumps({"op": op, "ts_ms": 1_700_000_000_000 + lsn, "before": None,
                       "after": after, "source": {"connector": "postgresql", "lsn": lsn}})


ANN = _event("c", 100, {"id": 1, "name": "ann", "phone": "555-0101"})
BOB = _event("c", 101, {"id": 2, "name": "bob", "phone": "555-0102"})
CID = _event("c", 102, {"id": 3, "name": "cid", "phone": None})
DAN = _event("u", 103, {"id": 1, "name": "ann", "phone": "555-0199"})
BROKEN = '{"op": "c", "after": {"id": 4'  # cut off
NO_AFTER = _event("u", 104, None)


def _run(tmp: Path, *args: str, crash: bool = False) -> subprocess.CompletedProcess[str]:
    """``python -m pipelines.jobs.cdc_ingest --warehouse wh --table shop.customers --landing
    landing --schema customers.json ...``, in a subprocess."""
    (tmp / "customers.json").write_text(json.dumps(SCHEMA))
    argv = ["--warehouse", str(tmp / "wh"), "--table", "shop.customers", "--landing",
            str(tmp / "landing"), "--schema", str(tmp / "customers.json"),
            "--master", "local[2]", *args]
    head = ["-c", CRASH_BEFORE_SNAPSHOT] if crash else ["-m", "pipelines.jobs.cdc_ingest"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [source_root(), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, *head, *argv], env=env, capture_output=True,
                          text=True, timeout=900, check=False, cwd=tmp)


def _land(tmp: Path, batch: int, lines: list[str]) -> None:
    d = tmp / "landing"
    d.mkdir(exist_ok=True)
    (d / f"batch-{batch:06d}.jsonl").write_text("\n".join(lines) + "\n")


def _table(tmp: Path) -> FileStoreTable:
    return FileSystemCatalog(str(tmp / "wh")).get_table("shop.customers")


def _schema_files(t: FileStoreTable) -> list[str]:
    return sorted(t.file_io.list_names(t.schema_manager.schema_dir))


def _reports(p: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]


def _rows(t: FileStoreTable) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["name"], r["phone"]) for r in t.to_arrow().to_pylist())


def test_refused_batch_adds_no_column_and_a_crashed_one_lands_once(tmp_path: Path) -> None:
    _land(tmp_path, 1, [ANN, BROKEN, BOB, NO_AFTER])
    p = _run(tmp_path, "--max-error-ratio", "0.1")
    assert p.returncode == 3, p.stderr[-3000:]
    (report,) = _reports(p)
    assert (report["events"], report["malformed"], report["snapshot_ids"]) == (4, 2, [])
    assert "2 of 4 events malformed" in p.stderr
    t = _table(tmp_path)
    assert t.latest_snapshot() is None
    assert _schema_files(t) == ["schema-0"]  # no schema-1, no pending marker
    assert t.schema.field_names == ["id", "name"]

    # the day fixed and landed again; the process dies between the schema and the snapshot
    _land(tmp_path, 1, [ANN, BOB, CID, DAN])
    p = _run(tmp_path, "--max-error-ratio", "0.1", crash=True)
    assert p.returncode == EXIT_CODE, p.stderr[-3000:]
    t = _table(tmp_path)
    assert t.latest_snapshot() is None
    # the schema was published (its marker names the batch), the snapshot never was
    assert _schema_files(t) == [f"{PENDING_PREFIX}1", "schema-0", "schema-1"]

    # the re-run adopts the schema: the column and the rows in one commit, once
    p = _run(tmp_path, "--max-error-ratio", "0.1")
    assert p.returncode == 0, p.stderr[-3000:]
    (report,) = _reports(p)
    assert report["new_columns"] == {"phone": "STRING"} and report["snapshot_ids"] == [1]
    t = _table(tmp_path)
    assert _schema_files(t) == ["schema-0", "schema-1"]  # no marker, no schema-2
    snaps = list(t.snapshot_manager.snapshots())
    assert [(s.id, s.schema_id, s.commit_identifier) for s in snaps] == [(1, 1, 1)]
    assert t.schema.id == 1 and t.schema.field_names == ["id", "name", "phone"]
    assert _rows(t) == [(1, "ann", "555-0199"), (2, "bob", "555-0102"), (3, "cid", None)]
    assert fsck(t).ok
