"""Multi-step commits (:meth:`TableCommit.commit_steps`): several snapshots under one commit
identifier, in order, exactly once across a crash between them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import CommitMessage, TableCommit
from paimon_core.errors import CommitConflictError, SchemaError
from paimon_core.fsck import fsck
from paimon_core.integration import CommitStep
from paimon_core.table import FileStoreTable
from tests.tables import make_table


def _table(tmp_path: Path) -> FileStoreTable:
    return make_table(tmp_path, [("k", "INT NOT NULL"), ("v", "STRING")], primary_keys=["k"],
                      options={"bucket": "2", "write-only": "true"})


def _write(t: FileStoreTable, rows: list[tuple[int, str]]) -> list[CommitMessage]:
    w = t.new_write("u")
    w.write_arrow(pa.table({"k": pa.array([r[0] for r in rows], pa.int32()),
                            "v": [r[1] for r in rows]}))
    return w.prepare_commit()


def _rows(t: FileStoreTable, sid: int | None = None) -> list[tuple[int, str]]:
    rb = t.new_read_builder()
    if sid is not None:
        rb = rb.with_time_travel(snapshot_id=sid)
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits)
    return sorted(zip(got.column("k").to_pylist(), got.column("v").to_pylist()))


def _steps(t: FileStoreTable) -> list[CommitStep]:
    return [CommitStep("append", _write(t, [(1, "a"), (2, "b")])), CommitStep("truncate"),
            CommitStep("append", _write(t, [(3, "c")]))]


def test_steps_land_in_order_once(tmp_path: Path) -> None:
    t = _table(tmp_path)
    c = t.new_commit("u")
    assert c.commit(_write(t, [(9, "old")]), 6) == [1]
    steps = _steps(t)
    assert c.commit_steps(steps, 7) == [2, 3, 4]
    snaps = [t.snapshot_manager.snapshot(i) for i in (2, 3, 4)]
    assert [(s.commit_kind.value, s.commit_identifier, s.commit_step) for s in snaps] == [
        ("APPEND", 7, (1, 3)), ("OVERWRITE", 7, (2, 3)), ("APPEND", 7, (3, 3))]
    assert [_rows(t, i) for i in (1, 2, 3, 4)] == [
        [(9, "old")], [(1, "a"), (2, "b"), (9, "old")], [], [(3, "c")]]
    assert c.landed(7) == [2, 3, 4] and c.unfinished_steps(7) == []
    assert c.filter_committed([7, 8]) == [8]
    assert c.commit_steps(steps, 7) == [2, 3, 4]  # again: nothing applied
    assert t.snapshot_manager.latest_snapshot_id() == 4
    report = fsck(t)
    assert report.ok, report.errors  # I2: one OVERWRITE and two APPEND steps of one commit


class _Crash(BaseException):
    pass


@pytest.mark.parametrize("landed", [1, 2])
def test_a_crash_between_steps_is_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          landed: int) -> None:
    t = _table(tmp_path)
    steps = _steps(t)
    real = TableCommit._try_commit
    calls: list[int | None] = []

    def crashing(self: TableCommit, *args: Any, **kwargs: Any) -> int | None:
        calls.append(real(self, *args, **kwargs))
        if len(calls) == landed:
            raise _Crash
        return calls[-1]

    monkeypatch.setattr(TableCommit, "_try_commit", crashing)
    with pytest.raises(_Crash):
        t.new_commit("u").commit_steps(steps, 7)
    monkeypatch.setattr(TableCommit, "_try_commit", real)
    c = t.new_commit("u")
    # not committed until the last step landed
    assert c.landed(7) == [] and c.filter_committed([7]) == [7]
    assert [s.id for s in c.unfinished_steps(7)] == list(range(1, landed + 1))
    assert c.commit_steps(steps, 7) == [1, 2, 3]
    assert _rows(t) == [(3, "c")]
    assert [t.snapshot_manager.snapshot(i).commit_step for i in (1, 2, 3)] == [
        (1, 3), (2, 3), (3, 3)]
    report = fsck(t)
    assert report.ok, report.errors


def test_a_resumed_commit_must_plan_the_same_steps(tmp_path: Path) -> None:
    t = _table(tmp_path)
    c = t.new_commit("u")
    steps = _steps(t)
    c.commit_steps(steps, 7)
    with pytest.raises(CommitConflictError, match="steps must be the same"):
        c.commit_steps([*steps, CommitStep("truncate")], 7)
    one = t.new_commit("v")
    assert one.commit_steps([CommitStep("truncate")], 1) == [4]  # one step: a plain truncate
    assert t.snapshot_manager.snapshot(4).commit_step is None


def test_step_validation(tmp_path: Path) -> None:
    t = _table(tmp_path)
    with pytest.raises(SchemaError, match="no messages"):
        CommitStep("truncate", _write(t, [(1, "a")]))
    with pytest.raises(SchemaError, match="without new files"):
        CommitStep("append", [])
    with pytest.raises(ValueError, match="own commit identifier"):
        t.new_commit("u").commit_steps(_steps(t), 2**63 - 1)
