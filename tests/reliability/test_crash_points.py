"""Crash points (reliability.md, "Crash points"): a child process ``os._exit``s at each named
step of a commit; a restarted pipeline (same commit user and identifier, ``filter_committed``
first) applies the batch exactly once; orphans are listed and removable without touching a live
file. Plus: garbage LATEST, disk full while writing a manifest, abort after prepare_commit,
exhausted retry budget."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest

from paimon_core.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    PaimonError,
    StorageError,
)
from paimon_core.io.file_io import join
from paimon_core.table import FileStoreTable
from tests.reliability.faults import CRASH_POINTS, EXIT_CODE, Fault, FaultFileIO
from tests.reliability.harness import (
    AppendModel,
    append_rows,
    assert_fsck_clean,
    create_table,
    list_tree,
    open_table,
    orphan_files,
    remove_orphans,
    run_child,
)
from tests.reliability.minwrite import writer_for
from tests.reliability.workers import crash_writer

LANDED = {"during_publish", "before_latest_hint", "after_publish"}
USER, IDENT = "pipeline-1", 7


def _storage(storage: str, tmp_path: Path, request: pytest.FixtureRequest
             ) -> tuple[str, dict[str, str] | None]:
    if storage == "local":
        return str(tmp_path / "wh"), None
    root, opts = request.getfixturevalue("s3_bucket")
    return root, opts


def _commit(table: FileStoreTable, user: str, ident: int, data: Any) -> list[int]:
    w = writer_for(table, user)
    w.write_arrow(data)
    return table.new_commit(user).commit(w.prepare_commit(), ident)


CRASH_CASES = [pytest.param(p, "local", id=f"{p}-local") for p in CRASH_POINTS] + [
    pytest.param(p, "s3", id=f"{p}-s3", marks=pytest.mark.s3)
    for p in ("during_publish",)
]


@pytest.mark.parametrize(("point", "storage"), CRASH_CASES)
def test_kill_at_commit_step_then_restart_applies_exactly_once(
    point: str, storage: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    wh, opts = _storage(storage, tmp_path, request)
    create_table(wh, opts, "append")
    table = open_table(wh, opts)
    model = AppendModel()
    other = append_rows("q", 9, 0)
    assert _commit(table, "other", 1, other) == [1]
    model.add(other)

    res = run_child(crash_writer, (wh, opts, point, USER, IDENT, 0), timeout=120)
    assert res.error is None, res.error
    assert res.exitcode == EXIT_CODE, f"the child did not die at {point}: {res}"

    table = open_table(wh, opts)
    sm = table.snapshot_manager
    landed = point in LANDED
    assert sm.list_snapshot_ids() == ([1, 2] if landed else [1])
    hint = table.file_io.read_text(join(sm.snapshot_dir, "LATEST")).strip()
    if point in ("during_publish", "before_latest_hint"):
        assert hint == "1"  # the hint lags: readers must still find snapshot 2 (I5)
    assert sm.latest_snapshot_id() == (2 if landed else 1)

    # restart: the pipeline filters what already landed, then re-runs the rest
    commit = table.new_commit(USER)
    pending = commit.filter_committed([IDENT])
    assert pending == ([] if landed else [IDENT])
    batch = append_rows("p", 0, 0)
    if pending:
        assert _commit(table, USER, IDENT, batch) == [2]
    model.add(batch)
    # a blind re-commit of the same identifier (no filtering) is not applied twice (I2)
    assert _commit(table, USER, IDENT, batch) == [2]
    assert sm.list_snapshot_ids() == [1, 2]
    model.check(table)
    refs = assert_fsck_clean(table, expect_snapshots=2)

    # orphans: what the crash (and the blind re-commit) left behind, never a live file
    orphans = orphan_files(table, refs)
    assert not (orphans & refs.all())
    kinds = {"manifest" if o.startswith("manifest/") else "data" for o in orphans}
    if not landed:
        # the crashed attempt's data file, and its manifests once they were written
        expect = {"data"} if point in ("after_data_write",) else {"data", "manifest"}
        assert kinds == expect, (point, sorted(orphans))
    else:
        # the blind re-commit's data file (its commit was recognised as done: no manifests)
        assert kinds == {"data"}, (point, sorted(orphans))
    live_before = {p for p in list_tree(table.file_io, table.path) if p in refs.all()}
    remove_orphans(table)
    after = list_tree(table.file_io, table.path)
    assert live_before <= after, "orphan cleaning removed a live file"
    assert not orphan_files(table)
    table = open_table(wh, opts)
    model.check(table)
    assert_fsck_clean(table, expect_snapshots=2)


#: point -> what the committer reports when that write raises (in-process, no crash)
RAISE_OUTCOME = {
    "after_data_write": StorageError,  # the pipeline's write step fails
    "after_manifest_write": StorageError,  # manifests cleaned up, nothing published
    "after_manifest_list_write": StorageError,
    "before_publish": CommitStateUnknownError,  # a failed PUT proves nothing: unknown
    "during_publish": None,  # landed, error on the way back: read-back says ours -> success
    "before_latest_hint": None,  # the hint is only a hint
    "after_publish": None,
}


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_storage_error_at_each_commit_step(point: str, tmp_path: Path) -> None:
    """The same steps raising a storage error instead of killing the process: a typed error
    or a correct success, never a half commit; a pipeline retry (filter_committed first)
    applies the batch exactly once; leftovers are reclaimable orphans."""
    wh = str(tmp_path / "wh")
    create_table(wh, None, "append")
    table = open_table(wh, faults=[Fault(point, "raise")])
    fio = table.file_io
    assert isinstance(fio, FaultFileIO)
    batch = append_rows("p", 0, 0)
    model = AppendModel()
    model.add(batch)
    expected = RAISE_OUTCOME[point]
    attempts = 0
    while True:  # the pipeline: write, commit; on failure resolve and re-run
        attempts += 1
        commit = table.new_commit(USER)
        if not commit.filter_committed([IDENT]):
            break
        w = writer_for(table, USER)
        w.write_arrow(batch)
        try:
            msgs = w.prepare_commit()
            if point == "after_data_write":
                fio.reached(point)
            ids = commit.commit(msgs, IDENT)
        except (StorageError, CommitStateUnknownError) as e:
            assert expected is not None and isinstance(e, expected), (point, repr(e))
            assert attempts == 1
            continue
        assert ids == [1]
        assert expected is None or attempts == 2, (point, attempts)
        break
    assert fio.fired() == [point]
    assert attempts <= 2
    clean = open_table(wh)
    assert clean.snapshot_manager.list_snapshot_ids() == [1]
    model.check(clean)
    if point == "before_latest_hint":
        assert not clean.file_io.exists(join(clean.snapshot_manager.snapshot_dir, "LATEST"))
    refs = assert_fsck_clean(clean, expect_snapshots=1)
    remove_orphans(clean)
    assert refs.all() <= list_tree(clean.file_io, clean.path)
    model.check(open_table(wh))


@pytest.mark.parametrize("storage", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_garbage_latest_hint(storage: str, tmp_path: Path,
                             request: pytest.FixtureRequest) -> None:
    """LATEST that is empty, not a number, negative, huge, a missing id or stale: readers
    read the true latest; a writer never publishes an id <= the real latest."""
    wh, opts = _storage(storage, tmp_path, request)
    create_table(wh, opts, "append")
    table = open_table(wh, opts)
    model = AppendModel()
    for i in range(3):
        data = append_rows(f"p{i}", 0, i)
        _commit(table, "u", i, data)
        model.add(data)
    latest_path = join(table.snapshot_manager.snapshot_dir, "LATEST")
    garbage = [b"", b"abc", b"-8", b"99999999999999999999999999", b"1000", b"1", b"\x00\xff",
               b"3\n4", b" 2 "]
    if storage == "s3":
        garbage = garbage[:5]
    ident = 3
    earliest_path = join(table.snapshot_manager.snapshot_dir, "EARLIEST")
    for g in garbage:
        table.file_io.write_bytes(latest_path, g)
        table.file_io.write_bytes(earliest_path, g)
        real = table.snapshot_manager.list_snapshot_ids()[-1]
        fresh = open_table(wh, opts)
        assert fresh.snapshot_manager.latest_snapshot_id() == real, g
        assert fresh.snapshot_manager.earliest_snapshot_id() == 1, g
        assert fresh.new_commit("u").filter_committed([ident - 1, ident]) == [ident], g
        latest = fresh.latest_snapshot()
        assert latest is not None and latest.id == real
        model.check(fresh)
        data = append_rows("g", 1, ident)
        assert _commit(fresh, "u", ident, data) == [real + 1], g
        model.add(data)
        ident += 1
    table = open_table(wh, opts)
    assert_fsck_clean(table, expect_snapshots=3 + len(garbage))
    model.check(table)


def test_disk_full_while_writing_a_manifest(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    create_table(wh, None, "append")
    table = open_table(wh)
    model = AppendModel()
    first = append_rows("a", 0, 0)
    _commit(table, "u", 1, first)
    model.add(first)
    faulty = open_table(wh, faults=[Fault("after_manifest_write", "enospc")])
    w = writer_for(faulty, "u")
    w.write_arrow(append_rows("b", 0, 1))
    msgs = w.prepare_commit()
    with pytest.raises(StorageError) as ei:
        faulty.new_commit("u").commit(msgs, 2)
    assert isinstance(ei.value.__cause__, OSError)
    assert ei.value.__cause__.errno == errno.ENOSPC
    assert "manifest" in ei.value.path
    fio = faulty.file_io
    assert isinstance(fio, FaultFileIO) and fio.fired() == ["after_manifest_write"]
    table = open_table(wh)
    assert table.snapshot_manager.list_snapshot_ids() == [1]
    model.check(table)
    refs = assert_fsck_clean(table, expect_snapshots=1)
    # the failed attempt left at most reclaimable orphans (its data file, a partial manifest)
    orphans = orphan_files(table, refs)
    assert orphans and not (orphans & refs.all())
    # once there is space again, the same commit goes through exactly once
    assert table.new_commit("u").filter_committed([2]) == [2]
    assert table.new_commit("u").commit(msgs, 2) == [2]
    model.add(append_rows("b", 0, 1))
    model.check(table)
    remove_orphans(table)
    model.check(open_table(wh))
    assert_fsck_clean(open_table(wh), expect_snapshots=2)


def test_failed_manifest_write_leaves_no_manifest_behind(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    create_table(wh, None, "append")
    faulty = open_table(wh, faults=[Fault("after_manifest_write", "enospc")])
    w = writer_for(faulty, "u")
    w.write_arrow(append_rows("b", 0, 1))
    msgs = w.prepare_commit()
    with pytest.raises(StorageError):
        faulty.new_commit("u").commit(msgs, 1)
    faulty.new_commit("u").abort(msgs)
    assert orphan_files(open_table(wh)) == set()


def test_disk_full_on_the_snapshot_itself_is_typed_and_resolvable(tmp_path: Path) -> None:
    """ENOSPC while creating snapshot-N: a typed error (the committer cannot tell whether a
    remote write landed: CommitStateUnknownError, manifests kept); filter_committed resolves
    it and the retry applies the batch once."""
    wh = str(tmp_path / "wh")
    create_table(wh, None, "append")
    faulty = open_table(wh, faults=[Fault("before_publish", "enospc")])
    w = writer_for(faulty, "u")
    data = append_rows("a", 0, 0)
    w.write_arrow(data)
    msgs = w.prepare_commit()
    with pytest.raises((CommitStateUnknownError, StorageError)):
        faulty.new_commit("u").commit(msgs, 1)
    table = open_table(wh)
    assert table.snapshot_manager.list_snapshot_ids() == []
    assert table.new_commit("u").filter_committed([1]) == [1]
    assert table.new_commit("u").commit(msgs, 1) == [1]
    model = AppendModel()
    model.add(data)
    model.check(table)
    assert_fsck_clean(table, expect_snapshots=1)


def test_abort_after_prepare_commit_leaves_no_data_files(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    create_table(wh, None, "append")
    create_table(wh, None, "pk", name="db.pk")
    for name in ("db.t", "db.pk"):
        table = open_table(wh, name=name)
        before = list_tree(table.file_io, table.path)
        w = writer_for(table, "u")
        if name == "db.t":
            w.write_arrow(append_rows("a", 0, 0))
            w.write_arrow(append_rows("b", 0, 0))
        else:
            import pyarrow as pa

            w.write_arrow(pa.table({"k": pa.array(range(50), pa.int32()), "v": ["x"] * 50,
                                    "writer": pa.array([0] * 50, pa.int32()),
                                    "round": pa.array([0] * 50, pa.int32())}))
        msgs = w.prepare_commit()
        assert msgs and all(m.new_files for m in msgs)
        written = list_tree(table.file_io, table.path) - before
        assert written
        table.new_commit("u").abort(msgs)
        assert list_tree(table.file_io, table.path) == before, "abort left files behind"
        # TableWrite.abort() before prepare_commit: nothing written remains either
        w2 = writer_for(table, "u")
        if name == "db.t":
            w2.write_arrow(append_rows("c", 0, 0))
        else:
            w2.write_arrow(pa.table({"k": pa.array([1], pa.int32()), "v": ["y"],
                                     "writer": pa.array([0], pa.int32()),
                                     "round": pa.array([0], pa.int32())}))
        w2.abort()
        assert list_tree(table.file_io, table.path) == before
        assert table.snapshot_manager.list_snapshot_ids() == []


def test_retry_budget_exhausted_is_a_typed_conflict(tmp_path: Path) -> None:
    """Another committer wins every race: after commit.max-retries the commit fails with
    CommitConflictError; nothing of it is visible, its manifests are cleaned up."""
    wh = str(tmp_path / "wh")
    create_table(wh, None, "append")

    class AlwaysBeaten(FaultFileIO):
        rival: FileStoreTable | None = None
        n = 0

        def try_create(self, path: str, data: bytes) -> bool:
            if "/snapshot/snapshot-" in path and self.rival is not None:
                rival = self.rival
                self.n += 1
                w = writer_for(rival, "rival")
                w.write_arrow(append_rows("r", 1, self.n))
                rival.new_commit("rival").commit(w.prepare_commit(), self.n)
            return super().try_create(path, data)

    table = open_table(wh)
    fio = AlwaysBeaten(table.file_io.root, None)
    loser = FileStoreTable(fio, table.path, table.identifier, table.schema)
    fio.rival = open_table(wh)
    w = writer_for(loser, "loser")
    w.write_arrow(append_rows("l", 0, 0))
    msgs = w.prepare_commit()
    with pytest.raises(CommitConflictError, match="gave up after 3 attempts"):
        loser.new_commit("loser", max_retries=2).commit(msgs, 1)
    fio.rival = None
    table = open_table(wh)
    assert table.snapshot_manager.list_snapshot_ids() == [1, 2, 3]
    assert all(table.snapshot_manager.snapshot(i).commit_user == "rival" for i in (1, 2, 3))
    refs = assert_fsck_clean(table, expect_snapshots=3)
    # only the loser's (not yet aborted) data file is unreferenced: its manifests were removed
    orphans = orphan_files(table, refs)
    assert {o.rsplit("/", 1)[-1] for o in orphans} == {
        f.file_name for m in msgs for f in m.new_files}
    table.new_commit("loser").abort(msgs)
    assert not orphan_files(table)


def test_crash_point_table_is_complete() -> None:
    assert set(CRASH_POINTS) == {
        "after_data_write", "after_manifest_write", "after_manifest_list_write",
        "before_publish", "during_publish", "after_publish", "before_latest_hint"}
    with pytest.raises(ValueError):
        Fault("nowhere")
    assert issubclass(StorageError, PaimonError)
