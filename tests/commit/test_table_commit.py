from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from paimon_core import CommitOptions
from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit_message import CommitMessage, InvalidCommitMessageError
from paimon_core.errors import CommitConflictError, CommitStateUnknownError, SchemaError
from paimon_core.io.file_io import FileIO
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.commit.helpers import data_file, message, part
from tests.tables import make_table


def _append_table(tmp_path: Path, **opts: str) -> FileStoreTable:
    return make_table(tmp_path, [("pt", "STRING"), ("v", "BIGINT")], partition_keys=["pt"],
                      options=opts)


def _pk_table(tmp_path: Path) -> FileStoreTable:
    return make_table(tmp_path, [("pt", "STRING"), ("k", "INT"), ("v", "STRING")],
                      name="db.pk", partition_keys=["pt"], primary_keys=["pt", "k"],
                      options={"bucket": "2"})


def _live_names(t: FileStoreTable, snapshot_id: int | None = None) -> set[str]:
    snap = t.snapshot_manager.snapshot(snapshot_id) if snapshot_id else t.latest_snapshot()
    plan = t.new_planner(t.schema, None).plan(snap)
    return {f.file_name for s in plan.splits for f in s.files}


def test_commit_counts_and_exactly_once(tmp_path: Path) -> None:
    t = _append_table(tmp_path)
    c = t.new_commit("u1")
    a, b = data_file(3), data_file(4)
    assert c.commit([message(t.path, "x", a), message(t.path, None, b)], 1) == [1]
    s1 = t.snapshot_manager.snapshot(1)
    assert (s1.total_record_count, s1.delta_record_count, s1.commit_kind) == (
        7,
        7,
        CommitKind.APPEND,
    )
    assert _live_names(t) == {a.file_name, b.file_name}
    # the same identifier again is not applied twice (I2)
    assert c.commit([message(t.path, "x", data_file(5))], 1) == [1]
    assert t.snapshot_manager.latest_snapshot_id() == 1
    assert c.filter_committed([1, 2, 3]) == [2, 3]
    assert t.new_commit("someone-else").filter_committed([1]) == [1]
    c.commit([message(t.path, "x", data_file(1))], 2,
             options=CommitOptions(properties={"dagster/run_id": "r-1"}))
    assert t.latest_snapshot().properties == {"dagster/run_id": "r-1"}  # type: ignore[union-attr]
    assert (tmp_path / "db.db" / "t" / "snapshot" / "LATEST").read_text() == "2"


def test_overwrite_static_dynamic_truncate(tmp_path: Path) -> None:
    t = _append_table(tmp_path)
    c = t.new_commit("u")
    a, b, n = data_file(1), data_file(2), data_file(3)
    c.commit([message(t.path, "a", a), message(t.path, "b", b), message(t.path, None, n)])
    # dynamic: only partitions receiving files are replaced
    a2 = data_file(5)
    assert c.overwrite([message(t.path, "a", a2)]) == [2]
    assert _live_names(t) == {a2.file_name, b.file_name, n.file_name}
    assert t.latest_snapshot().commit_kind is CommitKind.OVERWRITE  # type: ignore[union-attr]
    # dynamic with nothing: no snapshot, with or without a static spec
    assert c.overwrite([]) == []
    assert c.overwrite([], {"pt": "__DEFAULT_PARTITION__"}) == []
    # static: the NULL partition via the default name, replaced by nothing
    assert c.overwrite([], {"pt": "__DEFAULT_PARTITION__"}, dynamic=False) == [3]
    assert _live_names(t) == {a2.file_name, b.file_name}
    # static spec must contain the new files
    with pytest.raises(SchemaError, match="received rows of partition"):
        c.overwrite([message(t.path, "b", data_file())], {"pt": "a"})
    assert c.truncate() == [4]
    assert _live_names(t) == set()
    assert t.latest_snapshot().total_record_count == 0  # type: ignore[union-attr]


def test_delete_of_a_file_no_longer_live_is_a_conflict(tmp_path: Path) -> None:
    t = _append_table(tmp_path)
    a = data_file()
    t.new_commit("w").commit([message(t.path, "a", a)])
    t.new_commit("x").truncate()
    stale = CommitMessage(part("a"), 0, -1, deleted_files=(a,), table_path=t.path)
    with pytest.raises(CommitConflictError, match="no longer live"):
        t.new_commit("w").commit([stale])
    assert t.snapshot_manager.latest_snapshot_id() == 2


def test_adding_a_live_file_again_is_a_conflict(tmp_path: Path) -> None:
    t = _append_table(tmp_path)
    a, b = data_file(), data_file()
    t.new_commit("w").commit([message(t.path, "a", a)], 1)
    # a compaction result that is live already (checked against the live files)
    again = CommitMessage(part("a"), 0, -1, compact_after=(a,),
                          table_path=t.path)
    with pytest.raises(CommitConflictError, match="already live"):
        t.new_commit("other").commit([again], 1)
    # an APPEND of new files is checked from its own entries (conflicts.py): twice in it
    with pytest.raises(CommitConflictError, match="same file twice"):
        t.new_commit("other").commit([message(t.path, "a", b), message(t.path, "a", b)], 1)
    assert t.snapshot_manager.latest_snapshot_id() == 1


def test_lsm_overlap_at_level_1_is_a_conflict(tmp_path: Path) -> None:
    t = _pk_table(tmp_path)
    base = data_file(key_range=(0, 10))
    t.new_commit("w").commit([message(t.path, "a", base, total_buckets=2)])
    # two compactions of the same bucket: each rewrites the level-0 file to level 1
    out1 = data_file(key_range=(0, 10), level=1)
    out2 = data_file(key_range=(5, 20), level=1)
    m1 = CommitMessage(
        part("a"), 0, 2, compact_before=(base,), compact_after=(out1,), table_path=t.path
    )
    assert t.new_commit("c1").commit([m1]) == [2]
    m2 = CommitMessage(
        part("a"), 0, 2, compact_before=(base,), compact_after=(out2,), table_path=t.path
    )
    with pytest.raises(CommitConflictError, match="no longer live"):
        t.new_commit("c2").commit([m2])
    # an overlapping level-1 file added next to out1 is caught by the level check
    m3 = CommitMessage(part("a"), 0, 2, compact_after=(out2,), table_path=t.path)
    with pytest.raises(CommitConflictError, match="LSM conflict"):
        t.new_commit("c3").commit([m3])


def test_stale_bucket_count_is_rejected(tmp_path: Path) -> None:
    t = _pk_table(tmp_path)
    with pytest.raises(CommitConflictError, match="stale bucket count"):
        t.new_commit("w").commit(
            [message(t.path, "a", data_file(key_range=(1, 2)), total_buckets=4)]
        )


@pytest.mark.parametrize(
    "bad",
    [
        {"new_files": "rename"},
        {"partition": b"\x00\x00\x00\x02" + b"\x00" * 24},
        {"bucket": 7, "total_buckets": 2},
        {"table_path": "/elsewhere"},
    ],
)
def test_hostile_messages_are_rejected(tmp_path: Path, bad: dict[str, Any]) -> None:
    t = _pk_table(tmp_path)
    f = data_file(key_range=(1, 2))
    kw: dict[str, Any] = {
        "partition": part("a"),
        "bucket": 0,
        "total_buckets": 2,
        "new_files": (f,),
        "table_path": t.path,
    }
    if bad.get("new_files") == "rename":
        import dataclasses

        kw["new_files"] = (dataclasses.replace(f, file_name="../../../etc/passwd"),)
    else:
        kw.update(bad)
    with pytest.raises(InvalidCommitMessageError):
        t.new_commit("w").commit([CommitMessage(**kw)])
    assert t.snapshot_manager.latest_snapshot_id() is None


class _LosingResponse(FileIO):
    """try_create writes the snapshot, then the 'response' is lost (raises)."""

    def try_create(self, path: str, data: bytes) -> bool:
        created = super().try_create(path, data)
        if "snapshot-" in path:
            raise ConnectionError(f"response lost (created={created})")
        return created


class _RetriedRequest(FileIO):
    """The request is retried by the client after it landed: the retry sees 'exists'."""

    def try_create(self, path: str, data: bytes) -> bool:
        super().try_create(path, data)
        return "snapshot-" not in path


class _NeverLands(FileIO):
    def try_create(self, path: str, data: bytes) -> bool:
        if "snapshot-" in path:
            raise TimeoutError("no answer")
        return super().try_create(path, data)


@pytest.mark.parametrize("io_cls", [_LosingResponse, _RetriedRequest])
def test_lost_response_is_reported_as_success(tmp_path: Path, io_cls: type[FileIO]) -> None:
    t0 = _append_table(tmp_path)
    t = FileStoreTable(io_cls(str(tmp_path)), t0.path, t0.identifier, t0.schema)
    a = data_file()
    assert t.new_commit("w").commit([message(t.path, "a", a)], 5) == [1]
    assert _live_names(t0) == {a.file_name}
    manifests = sorted((tmp_path / "db.db" / "t" / "manifest").iterdir())
    assert len(manifests) == 3  # delta manifest + two lists: nothing deleted


def test_unknown_state_keeps_everything(tmp_path: Path) -> None:
    t0 = _append_table(tmp_path)
    t = FileStoreTable(_NeverLands(str(tmp_path)), t0.path, t0.identifier, t0.schema)
    with pytest.raises(CommitStateUnknownError):
        t.new_commit("w").commit([message(t.path, "a", data_file())], 5)
    assert len(list((tmp_path / "db.db" / "t" / "manifest").iterdir())) == 3


def test_retry_budget_exhausted_is_a_typed_conflict(tmp_path: Path) -> None:
    t = _append_table(tmp_path)

    class _AlwaysLoses(FileIO):
        def try_create(self, path: str, data: bytes) -> bool:
            if "snapshot-" in path:
                # someone else always takes the id first
                other = FileSystemCatalog(str(tmp_path)).get_table("db.t")
                other.new_commit("intruder").commit([message(t.path, "z", data_file())])
            return super().try_create(path, data)

    tl = FileStoreTable(_AlwaysLoses(str(tmp_path)), t.path, t.identifier, t.schema)
    commit = tl.new_commit("w", max_retries=3)
    commit._sleep = lambda s: None
    with pytest.raises(CommitConflictError, match="gave up after 4 attempts"):
        commit.commit([message(t.path, "a", data_file())])
    # the loser's manifests were removed; the intruder's commits are all there
    assert t.snapshot_manager.latest_snapshot_id() == 4


def test_threads_racing_commit_each_exactly_once(tmp_path: Path) -> None:
    t = _append_table(tmp_path)
    n_threads, per_thread = 8, 5
    barrier = threading.Barrier(n_threads)
    errors: list[BaseException] = []
    files: dict[int, list[str]] = {}

    def run(i: int) -> None:
        table = FileSystemCatalog(str(tmp_path)).get_table("db.t")
        commit = table.new_commit(f"writer-{i}")
        barrier.wait()
        try:
            for k in range(per_thread):
                f = data_file(1)
                files.setdefault(i, []).append(f.file_name)
                commit.commit([message(t.path, f"p{i}", f)], k)
        except BaseException as e:  # pragma: no cover - surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    ids = t.snapshot_manager.list_snapshot_ids()
    assert ids == list(range(1, n_threads * per_thread + 1))
    assert _live_names(t) == {n for names in files.values() for n in names}
    assert t.latest_snapshot().total_record_count == n_threads * per_thread  # type: ignore[union-attr]
