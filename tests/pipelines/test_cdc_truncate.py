"""Truncate (``op: "t"``) through the CDC job: a snapshot of its own at its position in the
stream. A batch holding truncates is committed in steps under its one identifier: the changes
before the truncate (APPEND), the truncate (OVERWRITE, the table empty), the changes after it
(APPEND); a crash between two of those snapshots is resumed by a re-run without losing or
applying anything twice. The events are Debezium's documented Postgres create and truncate
examples (``tests/pipelines/cdc_corpus/postgresql/``, sources in its README); the expected
rows are written by hand from the events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import TableCommit
from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.fsck import fsck, orphan_files
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from pipelines.cdc.ingest import BatchReport, CdcOptions, ingest
from pipelines.config import CatalogSettings
from tests.pipelines.cdcgen import corpus_landing

CUSTOMERS = [("id", "INT NOT NULL"), ("first_name", "STRING NOT NULL"),
             ("last_name", "STRING NOT NULL"), ("email", "STRING NOT NULL")]
ANNE = {"id": 1, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
SALLY = {"id": 2, "first_name": "Sally", "last_name": "Thomas", "email": "sally.thomas@acme.com"}
EDWARD = {"id": 3, "first_name": "Edward", "last_name": "Walker", "email": "ed@walker.com"}
#: batch 1 of the two-batch case: partial_before.jsonl (Anne created, then renamed "Anne
#: Marie" with the new column vip = true)
ANNE_MARIE = {**ANNE, "first_name": "Anne Marie", "vip": True}


def _ingest(spark: Any, tmp: Path, **opts: Any) -> list[BatchReport]:
    schema = Schema.of(CUSTOMERS, primary_keys=["id"], options={"bucket": "2"})
    return ingest(spark, CatalogSettings(str(tmp / "wh")), "db.customers",
                  str(tmp / "landing"), CdcOptions(**opts), schema=schema)


def _table(tmp: Path) -> FileStoreTable:
    return FileSystemCatalog(str(tmp / "wh")).get_table("db.customers")


def _rows(t: FileStoreTable, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    rb = t.new_read_builder()
    if snapshot_id is not None:
        rb = rb.with_time_travel(snapshot_id=snapshot_id)
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits).to_pylist()
    return sorted(rows, key=lambda r: r["id"])


def _snapshots(t: FileStoreTable) -> list[tuple[int, str, int, str | None]]:
    """(id, kind, identifier, commit.step) of every snapshot."""
    out = []
    for sid in range(1, (t.snapshot_manager.latest_snapshot_id() or 0) + 1):
        s = t.snapshot_manager.snapshot(sid)
        out.append((sid, s.commit_kind.value, s.commit_identifier,
                    (s.properties or {}).get("commit.step")))
    return out


#: the two-batch case: batch 1 = partial_before.jsonl, batch 2 = after_truncate.jsonl +
#: truncate.jsonl (create id 1 at lsn 24023128, truncate at 46523128, create id 3 at 46523200)
TWO_BATCHES = [["postgresql/partial_before.jsonl"],
               ["postgresql/after_truncate.jsonl", "postgresql/truncate.jsonl"]]
#: its snapshots: batch 1, then batch 2 in three steps
TWO_BATCH_SNAPSHOTS = [(1, "APPEND", 1, None), (2, "APPEND", 2, "1/3"),
                       (3, "OVERWRITE", 2, "2/3"), (4, "APPEND", 2, "3/3")]


def _check_two_batches(t: FileStoreTable) -> None:
    """The table's history after the two-batch case (written by hand from the events)."""
    assert _snapshots(t) == TWO_BATCH_SNAPSHOTS
    assert _rows(t, 1) == [ANNE_MARIE]
    # the create of id 1 before the truncate replaces batch 1's row (vip: not in the event)
    assert _rows(t, 2) == [{**ANNE, "vip": None}]
    assert _rows(t, 3) == []  # the truncate: the table is empty
    assert _rows(t, 4) == [{**EDWARD, "vip": None}]
    assert _rows(t) == [{**EDWARD, "vip": None}]
    # the changes of the batch in stream order: the create before the truncate, then the one
    # after it (OVERWRITE snapshots are not changes for incremental readers, as in Paimon)
    changes = t.read_unmerged_changes(1, 4, columns=["id", "first_name"]).to_pylist()
    assert [(c["_kind"], c["id"]) for c in changes] == [("+I", 1), ("+I", 3)]
    report = fsck(t)
    assert report.ok, report.errors


@pytest.mark.spark
def test_truncate_is_a_snapshot_between_the_changes_before_and_after_it(
        spark: Any, tmp_path: Path) -> None:
    # before: the batch became one OVERWRITE holding only the changes after the truncate:
    # the create of id 1 before it was never visible, nor the empty table
    corpus_landing(tmp_path, TWO_BATCHES)
    reports = _ingest(spark, tmp_path)
    assert [(r.truncates, r.malformed, r.valid) for r in reports] == [(0, 0, 2), (1, 0, 2)]
    assert [r.snapshot_ids for r in reports] == [[1], [2, 3, 4]]
    t = _table(tmp_path)
    _check_two_batches(t)
    assert t.new_commit("cdc-db.customers").landed(2) == [2, 3, 4]
    again = _ingest(spark, tmp_path)  # a re-run applies nothing twice
    assert [r.skipped for r in again] == [True, True]
    assert _table(tmp_path).snapshot_manager.latest_snapshot_id() == 4


@pytest.mark.spark
def test_two_truncates_in_one_batch_each_empty_the_table(spark: Any, tmp_path: Path) -> None:
    # the lines are out of stream order: create 1, truncate, create 2, truncate, create 3
    # by position
    corpus_landing(tmp_path, [["postgresql/two_truncates.jsonl"]])
    (rep,) = _ingest(spark, tmp_path)
    assert (rep.events, rep.truncates, rep.valid, rep.malformed) == (5, 2, 3, 0)
    t = _table(tmp_path)
    assert _snapshots(t) == [(1, "APPEND", 1, "1/5"), (2, "OVERWRITE", 1, "2/5"),
                             (3, "APPEND", 1, "3/5"), (4, "OVERWRITE", 1, "4/5"),
                             (5, "APPEND", 1, "5/5")]
    assert [_rows(t, s) for s in range(1, 6)] == [[ANNE], [], [SALLY], [], [EDWARD]]
    changes = t.read_unmerged_changes(0, 5, columns=["id"]).to_pylist()
    assert [(c["_kind"], c["id"]) for c in changes] == [("+I", 1), ("+I", 2), ("+I", 3)]
    report = fsck(t)
    assert report.ok, report.errors  # I2: the two OVERWRITEs of batch 1 are two steps


class _Crash(BaseException):
    """The driver dies right after a snapshot was published."""


@pytest.mark.spark
@pytest.mark.parametrize("after_step", [1, 2])
def test_crash_between_the_snapshots_of_a_truncate_resumes(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after_step: int) -> None:
    # batch 2 is committed in three snapshots; the driver dies after the first (the changes
    # before the truncate) or the second (the truncate). A re-run commits only the rest.
    corpus_landing(tmp_path, TWO_BATCHES)
    real = TableCommit._try_commit
    published: list[int | None] = []

    def crashing(self: TableCommit, *args: Any, **kwargs: Any) -> int | None:
        sid = real(self, *args, **kwargs)
        published.append(sid)
        if len(published) == 1 + after_step:  # batch 1's snapshot, then the steps
            raise _Crash(f"killed after snapshot {sid}")
        return sid

    monkeypatch.setattr(TableCommit, "_try_commit", crashing)
    with pytest.raises(_Crash):
        _ingest(spark, tmp_path)
    monkeypatch.setattr(TableCommit, "_try_commit", real)
    t = _table(tmp_path)
    assert _snapshots(t) == TWO_BATCH_SNAPSHOTS[:1 + after_step]
    commit = t.new_commit("cdc-db.customers")
    # the batch is not committed until its last step landed
    assert commit.landed(2) == [] and commit.filter_committed([1, 2, 3]) == [2, 3]
    assert [s.id for s in commit.unfinished_steps(2)] == list(range(2, 2 + after_step))

    reports = _ingest(spark, tmp_path)
    assert [r.skipped for r in reports] == [True, False]
    assert reports[1].snapshot_ids == [2, 3, 4]  # the steps found, then those committed
    t = _table(tmp_path)
    _check_two_batches(t)
    # no file of the re-run's repeated steps is left behind (they were written again and
    # deleted: only the snapshots' files are in the buckets)
    leftover = [p for p in orphan_files(t, 2**62) if "/bucket-" in p]
    assert leftover == []
    again = _ingest(spark, tmp_path)
    assert [r.skipped for r in again] == [True, True]


@pytest.mark.spark
@pytest.mark.oracle
def test_java_reads_every_step_of_a_truncate(spark: Any, tmp_path: Path) -> None:
    from tests.interop.oracle import ensure_ready, run_batches

    corpus_landing(tmp_path, TWO_BATCHES)
    _ingest(spark, tmp_path)
    t = _table(tmp_path)
    ensure_ready()
    cmds = [{"cmd": "read", "warehouse": str(tmp_path / "wh"), "table": "db.customers",
             "engine": "java", "snapshot": sid, "output": str(tmp_path / f"java-{sid}.jsonl")}
            for sid in (1, 2, 3, 4)]
    result = run_batches({"truncate": cmds}, tmp_path)["truncate"]
    assert not result.failures(), (result.failures(), result.stderr[-3000:])
    for sid, expected in zip((1, 2, 3, 4), ([ANNE_MARIE], [{**ANNE, "vip": None}], [],
                                            [{**EDWARD, "vip": None}])):
        java = (tmp_path / f"java-{sid}.jsonl").read_text().splitlines()
        ours = pa.Table.from_pylist(expected, schema=t.to_arrow().schema)
        assert java == canonical_lines(ours, list(t.schema.fields)), sid


@pytest.mark.spark
def test_a_toast_placeholder_after_a_truncate_has_no_previous_value(
        spark: Any, tmp_path: Path) -> None:
    # batch 1 creates Anne; batch 2: a truncate, then an update whose email is the TOAST
    # placeholder. The table was emptied: the email before the truncate is not the previous
    # value (before: it was taken from the table as the batch started, silently)
    corpus_landing(tmp_path, [["postgresql/toast_create.jsonl"],
                     ["postgresql/truncate_before_toast.jsonl",
                      "postgresql/toast_update.jsonl"]])
    reports = _ingest(spark, tmp_path, max_error_ratio=1.0)
    assert reports[1].reasons == {"unchanged TOAST value without a previous value for email": 1}
    t = _table(tmp_path)
    assert _snapshots(t) == [(1, "APPEND", 1, None), (2, "OVERWRITE", 2, None)]
    assert _rows(t, 1) == [ANNE] and _rows(t) == []
