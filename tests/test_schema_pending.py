"""A commit's schema change lands with its snapshot or not at all
(:mod:`paimon_core.schema_pending`): published after the files, withdrawn when the commit
fails (superseded, never deleted: a snapshot another writer committed meanwhile may use it),
adopted by the same commit user's re-run of the same commit after a crash, left alone while
another user's commit may still be in flight."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import CommitConflictError, FileStoreTable
from paimon_core.fsck import fsck
from paimon_core.schema_change import AddColumn, apply_changes
from paimon_core.schema_pending import (
    PendingSchemaRaceError,
    clear_pending,
    list_pending,
    publish_pending,
    resolve_pending,
    withdraw_pending,
)
from paimon_core.types import parse_sql_type
from tests.tables import make_table, write_rows


def _table(wh: Path) -> FileStoreTable:
    t = make_table(wh, [("id", "BIGINT"), ("v", "STRING")], primary_keys=["id"],
                   options={"bucket": "1"})
    write_rows(t, pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}), 1, user="cdc")
    return t


def _with_phone(t: FileStoreTable) -> FileStoreTable:
    """The table object pinned to the schema with ``phone`` (computed, not written)."""
    schema = apply_changes(t.schema, [AddColumn("phone", parse_sql_type("STRING"))],
                           has_snapshots=True)
    return FileStoreTable(t.file_io, t.path, t.identifier, schema)


def _phone_rows(t: FileStoreTable, ident: int, user: str = "cdc") -> list[int]:
    return write_rows(t, pa.table({"id": pa.array([2], pa.int64()), "v": ["b"],
                                   "phone": ["555"]}), ident, user=user)


def _names(t: FileStoreTable) -> list[str]:
    latest = t.schema_manager.latest()
    assert latest is not None
    return latest.field_names


def test_published_with_the_commit(tmp_path: Path) -> None:
    t = _table(tmp_path)
    pending_t = _with_phone(t)
    assert t.schema_manager.list_schema_ids() == [0]  # computing it wrote nothing
    marker = publish_pending(t, pending_t.schema, "cdc", 2, ["phone"])
    assert [p.schema_id for p in list_pending(t)] == [1]
    (sid,) = _phone_rows(pending_t, 2)
    clear_pending(t, marker)
    assert list_pending(t) == []
    assert t.snapshot_manager.snapshot(sid).schema_id == 1
    assert _names(t) == ["id", "v", "phone"]
    assert fsck(t).ok


def test_withdrawn_schema_is_superseded_never_deleted(tmp_path: Path) -> None:
    t = _table(tmp_path)
    pending_t = _with_phone(t)
    marker = publish_pending(t, pending_t.schema, "cdc", 2, ["phone"])
    # another writer commits while the batch's commit fails: its snapshot records schema 1
    (other,) = write_rows(t, pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}), 7,
                          user="other")
    assert t.snapshot_manager.snapshot(other).schema_id == 1
    new = withdraw_pending(t, marker)
    assert new is not None and new.id == 2
    assert t.schema_manager.list_schema_ids() == [0, 1, 2]  # schema 1 kept: snapshot 2 uses it
    assert _names(t) == ["id", "v"] and list_pending(t) == []
    fresh = FileStoreTable.load(t.file_io, t.path, t.identifier)
    assert fresh is not None
    assert sorted(r["id"] for r in fresh.to_arrow().to_pylist()) == [1, 3]
    assert fresh.to_arrow().column_names == ["id", "v"]
    assert fsck(fresh).ok
    # the column comes back later with a new field id: the old values stay hidden
    again = FileStoreTable(t.file_io, t.path, t.identifier, apply_changes(
        fresh.schema, [AddColumn("phone", parse_sql_type("STRING"))], has_snapshots=True))
    assert again.schema.field("phone").id != pending_t.schema.field("phone").id


def test_schema_id_taken_by_another_writer(tmp_path: Path) -> None:
    t = _table(tmp_path)
    pending_t = _with_phone(t)
    t.alter([AddColumn("other", parse_sql_type("INT"))])  # schema 1 is someone else's
    with pytest.raises(PendingSchemaRaceError, match="schema 1 was published by another"):
        publish_pending(t, pending_t.schema, "cdc", 2, ["phone"])
    assert list_pending(t) == [] and _names(t) == ["id", "v", "other"]


def test_crashed_commit_is_adopted_by_its_rerun(tmp_path: Path) -> None:
    t = _table(tmp_path)
    pending_t = _with_phone(t)
    publish_pending(t, pending_t.schema, "cdc", 2, ["phone"])  # ... and the process died
    adopted = resolve_pending(t, "cdc", 2)
    assert adopted is not None and adopted.schema_id == 1
    assert t.schema_manager.list_schema_ids() == [0, 1]  # kept for the re-run
    (sid,) = _phone_rows(pending_t, 2)
    clear_pending(t, adopted)
    assert t.snapshot_manager.snapshot(sid).schema_id == 1 and list_pending(t) == []


def test_same_user_other_commit_withdraws(tmp_path: Path) -> None:
    t = _table(tmp_path)
    publish_pending(t, _with_phone(t).schema, "cdc", 2, ["phone"])
    assert resolve_pending(t, "cdc", 3) is None
    assert _names(t) == ["id", "v"] and list_pending(t) == []
    assert t.schema_manager.list_schema_ids() == [0, 1, 2]


def test_other_users_marker_waits_for_the_grace_period(tmp_path: Path) -> None:
    t = _table(tmp_path)
    publish_pending(t, _with_phone(t).schema, "cdc", 2, ["phone"])
    assert resolve_pending(t, "someone-else", 1) is None
    assert _names(t) == ["id", "v", "phone"] and len(list_pending(t)) == 1  # may be in flight
    assert resolve_pending(t, "someone-else", 1, grace_millis=-1) is None
    assert _names(t) == ["id", "v"] and list_pending(t) == []


def test_marker_of_a_landed_commit_is_cleared(tmp_path: Path) -> None:
    t = _table(tmp_path)
    pending_t = _with_phone(t)
    publish_pending(t, pending_t.schema, "cdc", 2, ["phone"])
    _phone_rows(pending_t, 2)  # landed, then the process died before clearing the marker
    assert resolve_pending(t, "cdc", 3) is None
    assert list_pending(t) == [] and _names(t) == ["id", "v", "phone"]


def test_failed_commit_withdraws_through_commit_batch(tmp_path: Path) -> None:
    from pipelines.cdc.schema import commit_batch
    from pipelines.config import CatalogSettings, TableHandle

    t = _table(tmp_path)
    settings = CatalogSettings(str(tmp_path))
    handle = TableHandle.load(settings, "db.t")
    pending = TableHandle(settings, "db.t", t.path, _with_phone(t).schema)

    def conflict() -> list[int]:
        raise CommitConflictError("retries exhausted")

    with pytest.raises(CommitConflictError):
        commit_batch(pending, "cdc", 2, ["phone"], None, conflict)
    assert _names(handle.open()) == ["id", "v"] and list_pending(t) == []


def test_files_of_an_unpublished_schema_can_be_aborted(tmp_path: Path) -> None:
    t = _table(tmp_path)
    pending_t = _with_phone(t)  # schema 1, never published: the batch is refused
    with pending_t.new_write("cdc") as w:
        w.write_arrow(pa.table({"id": pa.array([2], pa.int64()), "v": ["b"],
                                "phone": ["555"]}))
        messages = w.prepare_commit()
    files = [f.file_name for m in messages for f in m.new_files]
    assert files and all(m.schema_id == 1 for m in messages)
    t.new_commit("cdc").abort(messages)
    left = {p.name for p in Path(t.path).rglob("data-*")}
    assert not left & set(files)
    assert t.schema_manager.list_schema_ids() == [0]
