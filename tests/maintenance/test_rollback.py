"""Rollback (``FileStoreTable.rollback_to``, Java's ``Table.rollbackTo``): the table equals
the target snapshot as time travel read it before, newer snapshots and tags are gone, the
files only they referenced are deleted (no orphan left, nothing live deleted: fsck clean),
refusals change nothing, and a rollback killed part way finishes when run again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paimon_core import FileStoreTable, SchemaError
from paimon_core.errors import SnapshotExpiredError, SnapshotNotExistError, TagNotExistError
from paimon_core.fsck import orphan_files
from paimon_core.orphans import remove_orphan_files
from tests.maintenance.helpers import (
    FAR_FUTURE,
    append_table,
    assert_clean,
    compact_append,
    pk_table,
    rows,
    tree,
    upgrade_level,
    write,
)


def _history(t: FileStoreTable) -> dict[int, list[tuple[Any, ...]]]:
    return {sid: rows(t, snapshot_id=sid) for sid in t.snapshot_manager.list_snapshot_ids()}


def _pk_history(tmp_path: Path) -> FileStoreTable:
    """Six snapshots: appends, an update, a delete, a level upgrade (a DELETE + ADD of one
    file that the earlier snapshots hold), another partition; tags at 2 and 5."""
    t = pk_table(tmp_path)
    write(t, [1, 2, 3], "s1")
    write(t, [2, 4], "s2")
    t.create_tag("t2")
    assert upgrade_level(t)  # snapshot 3: a file of snapshots 1-2 moves up, same name
    write(t, [1], "s4", delete=True)
    write(t, [7, 8], "s5", pt="b")
    t.create_tag("t5")
    write(t, [3, 9], "s6")
    return t


def _assert_no_orphans(t: FileStoreTable) -> None:
    assert orphan_files(t, FAR_FUTURE) == []


def test_rollback_to_snapshot_equals_its_time_travel(tmp_path: Path) -> None:
    t = _pk_history(tmp_path)
    history = _history(t)
    assert sorted(history) == [1, 2, 3, 4, 5, 6]
    res = t.rollback_to(3)
    assert res.snapshot_id == 3 and res.removed_snapshots == (6, 5, 4)
    assert res.removed_tags == ("t5",) and res.deleted_files > 0
    assert t.snapshot_manager.latest_snapshot_id() == 3
    assert t.snapshot_manager.list_snapshot_ids() == [1, 2, 3]
    assert rows(t) == history[3]
    assert [n for n, _ in t.list_tags()] == ["t2"] and rows(t, tag="t2") == history[2]
    for sid in (1, 2):
        assert rows(t, snapshot_id=sid) == history[sid]
    assert_clean(t)
    _assert_no_orphans(t)
    # the table goes on from there
    assert write(t, [5], "after") == [4]
    assert rows(t) == sorted([*history[3], ("a", 5, "after")])
    assert_clean(t)
    # back past the level upgrade of snapshot 3 (it re-ADDed a file snapshot 2 holds: Java's
    # "delete the newer ADDs" would delete it; deep fsck reads every data file)
    t.rollback_to("t2")
    assert rows(t) == history[2] and t.snapshot_manager.list_snapshot_ids() == [1, 2]
    assert_clean(t)
    _assert_no_orphans(t)


def test_rollback_to_latest_and_append_table(tmp_path: Path) -> None:
    t = append_table(tmp_path)
    write(t, [1, 2], "x")
    write(t, [3], "y")
    assert compact_append(t, "a")
    write(t, [4], "z", pt="b")
    history = _history(t)
    before = tree(t.file_io, t.path)
    res = t.rollback_to(4)  # the latest: nothing to do
    assert res.removed_snapshots == () and res.deleted_files == 0
    assert tree(t.file_io, t.path).keys() - {"snapshot/LATEST"} == before.keys() - {
        "snapshot/LATEST"}
    t.rollback_to(2)  # before the compaction: the compacted file goes, the originals stay
    assert rows(t) == history[2]
    assert_clean(t)
    _assert_no_orphans(t)


def test_rollback_to_a_tag_whose_snapshot_expired(tmp_path: Path) -> None:
    t = _pk_history(tmp_path)
    tagged = rows(t, tag="t2")
    t.expire_snapshots(retain_max=2, retain_min=2, older_than_millis=FAR_FUTURE)
    assert t.snapshot_manager.earliest_snapshot_id() == 5
    res = t.rollback_to("t2")
    assert res.snapshot_id == 2 and res.removed_snapshots == (6, 5)
    assert t.snapshot_manager.list_snapshot_ids() == [2]
    assert t.snapshot_manager.earliest_snapshot_id() == 2
    assert t.snapshot_manager.latest_snapshot_id() == 2
    assert rows(t) == tagged and rows(t, snapshot_id=2) == tagged
    assert [n for n, _ in t.list_tags()] == ["t2"]
    assert_clean(t)
    _assert_no_orphans(t)
    assert write(t, [10], "next") == [3]
    assert_clean(t)


def test_refusals_change_nothing(tmp_path: Path) -> None:
    t = _pk_history(tmp_path)
    t.expire_snapshots(retain_max=3, retain_min=3, older_than_millis=FAR_FUTURE)
    before = tree(t.file_io, t.path)
    with pytest.raises(SnapshotExpiredError, match="snapshot 2: it has expired"):
        t.rollback_to(2)
    with pytest.raises(SnapshotNotExistError, match="snapshot 9 does not exist"):
        t.rollback_to(9)
    with pytest.raises(TagNotExistError):
        t.rollback_to("nope")
    with pytest.raises(SchemaError, match="snapshot id or a tag name"):
        t.rollback_to(2.0)  # type: ignore[arg-type]
    assert tree(t.file_io, t.path) == before


def test_a_killed_rollback_finishes_when_run_again(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    t = _pk_history(tmp_path)
    history = _history(t)
    real_delete = t.file_io.delete
    calls = {"n": 0}

    class Killed(Exception):
        pass

    def delete(path: str) -> bool:
        calls["n"] += 1
        if calls["n"] == 3:  # the tag and one snapshot are gone
            raise Killed(path)
        return real_delete(path)

    monkeypatch.setattr(t.file_io, "delete", delete)
    with pytest.raises(Killed):
        t.rollback_to(3)
    monkeypatch.undo()
    # part way back: a readable table whose snapshots are still contiguous
    assert t.snapshot_manager.list_snapshot_ids() == [1, 2, 3, 4, 5]
    assert rows(t) == history[5]
    assert_clean(t, deep=False)
    t.rollback_to(3)
    assert rows(t) == history[3] and t.snapshot_manager.list_snapshot_ids() == [1, 2, 3]
    assert_clean(t)
    # what only the snapshot removed before the kill referenced is orphaned, and reclaimable
    remove_orphan_files(t, older_than_millis=FAR_FUTURE)
    _assert_no_orphans(t)
    assert rows(t) == history[3] and rows(t, tag="t2") == history[2]
