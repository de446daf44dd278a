"""Compaction vs writers (reliability.md, "Compaction vs writers"):

* two compactors on one bucket: the second one's commit conflicts (its inputs were compacted
  away), it deletes what it wrote, re-plans from the fresh snapshot and succeeds;
* the same as a real race of processes (two compactors, one writer);
* write-only writers in several processes plus one dedicated compactor over hundreds of
  commits: zero conflicts, every row present, fsck clean, no orphans but the cancelled work;
* a cancelled (aborted) compaction leaves only reclaimable files and never touches live ones.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit_message import CommitMessage
from paimon_core.compact import manager
from paimon_core.compact.manager import compact_bucket, live_bucket_files
from paimon_core.errors import CommitConflictError
from paimon_core.schema_builder import Schema
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.reliability.harness import assert_fsck_clean, orphan_files, run_processes

COLUMNS = [("k", "INT NOT NULL"), ("v", "STRING"), ("writer", "INT")]


def create(warehouse: str, **options: str) -> FileStoreTable:
    return FileSystemCatalog(warehouse).create_table("db.t", Schema.of(
        COLUMNS, primary_keys=["k"], options={"bucket": "2", **options}))


def open_table(warehouse: str) -> FileStoreTable:
    return FileSystemCatalog(warehouse).get_table("db.t")


def batch(keys: Sequence[int], tag: str, writer: int = 0) -> pa.Table:
    return pa.table({"k": pa.array(list(keys), pa.int32()),
                     "v": pa.array([f"{tag}-{k}" for k in keys]),
                     "writer": pa.array([writer] * len(keys), pa.int32())})


def write(table: FileStoreTable, keys: Sequence[int], tag: str, ident: int,
          user: str = "w") -> list[int]:
    w = table.new_write(user)
    w.write_arrow(batch(keys, tag))
    ids = table.new_commit(user).commit(w.prepare_commit(), ident)
    w.close()
    return ids


def values(table: FileStoreTable) -> dict[int, str]:
    return {r["k"]: r["v"] for r in table.to_arrow().to_pylist()}


def test_second_compactor_conflicts_and_succeeds_on_retry(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    wh = str(tmp_path / "wh")
    table = create(wh, **{"write-only": "true"})
    for i in range(4):
        write(table, range(i, i + 20), f"r{i}", i)
    snap = table.latest_snapshot()
    assert snap is not None
    # compactor A plans on the same snapshot; it will commit while B is between its plan
    # and its commit (A also lets a writer add a file, so B's retry has work to do)
    a_msgs = [m for (p, b) in live_bucket_files(table.manifest_io, snap)
              if (m := compact_bucket(table, p, b, full=True, snapshot=snap)) is not None]
    assert a_msgs
    real_run_all = manager._run_all
    attempts: list[list[CommitMessage]] = []

    def run_all(*args: Any, **kw: Any) -> list[CommitMessage]:
        msgs = real_run_all(*args, **kw)
        attempts.append(msgs)
        if len(attempts) == 1:
            open_table(wh).new_commit("compactor-a").commit(a_msgs)
            write(open_table(wh), [100], "late", 10)
        return msgs

    monkeypatch.setattr(manager, "_run_all", run_all)
    sid = table.compact(commit_user="compactor-b")
    assert sid is not None and len(attempts) == 2
    kinds = [s.commit_kind for s in table.snapshot_manager.snapshots()]
    assert kinds[-3:] == [CommitKind.COMPACT, CommitKind.APPEND, CommitKind.COMPACT]
    # the first attempt's output was deleted (nothing of it is live, nothing left over)
    first = {f.file_name for m in attempts[0] for f in m.written_files()}
    assert first
    refs = assert_fsck_clean(table)
    leftovers = orphan_files(table, refs)
    assert not {p.rsplit("/", 1)[-1] for p in leftovers} & first
    expected = {k: f"r{min(k, 3)}-{k}" for k in range(23)}
    expected[100] = "late-100"
    assert values(table) == expected
    # a bare commit of stale compaction messages is refused
    with pytest.raises(CommitConflictError):
        table.new_commit("compactor-a").commit(a_msgs)


def test_aborted_compaction_leaves_only_reclaimable_files(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    table = create(wh, **{"write-only": "true", "target-file-size": "1 kb"})
    write(table, range(300), "big", 1)
    for i in range(3):
        write(table, [i], f"s{i}", 2 + i)
    snap = table.latest_snapshot()
    assert snap is not None
    msgs = [m for (p, b) in live_bucket_files(table.manifest_io, snap)
            if (m := compact_bucket(table, p, b, full=True)) is not None]
    upgraded = {f.file_name for m in msgs for f in m.compact_after} & {
        f.file_name for m in msgs for f in m.compact_before}
    assert upgraded  # big files are moved, not rewritten
    before = values(table)
    table.new_commit("c").abort(msgs)
    assert values(table) == before  # no live (upgraded) file was deleted
    refs = assert_fsck_clean(table)
    written = {f.file_name for m in msgs for f in m.written_files()}
    assert not {p.rsplit("/", 1)[-1] for p in orphan_files(table, refs)} & written


# ---------------------------------------------------------------------------------------------
# processes (module level: spawned workers import them)


def writer_proc(index: int, barrier: Any, warehouse: str, n_commits: int, n_keys: int
                ) -> dict[str, Any]:
    table = open_table(warehouse)
    user = f"writer-{index}"
    w = table.new_write(user)
    commit = table.new_commit(user)
    conflicts = 0
    if barrier is not None:
        barrier.wait()
    for c in range(n_commits):
        keys = [index * 1_000_000 + c * n_keys + j for j in range(n_keys)]
        w.write_arrow(batch(keys, f"w{index}c{c}", index))
        msgs = w.prepare_commit()
        try:
            commit.commit(msgs, c)
        except CommitConflictError:
            conflicts += 1
            raise
    w.close()
    return {"conflicts": conflicts}


def compactor_proc(index: int, barrier: Any, warehouse: str, stop_after: float,
                   max_attempts: int) -> dict[str, Any]:
    table = open_table(warehouse)
    if barrier is not None:
        barrier.wait()
    done, conflicts, rounds = 0, 0, 0
    deadline = time.monotonic() + stop_after
    while time.monotonic() < deadline:
        rounds += 1
        try:
            sid = table.compact(strategy="minor", commit_user=f"compactor-{index}",
                                max_attempts=max_attempts)
        except CommitConflictError:
            conflicts += 1
            continue
        if sid is not None:
            done += 1
        else:
            time.sleep(0.05)
    return {"compactions": done, "conflicts": conflicts, "rounds": rounds}


def test_write_only_writers_and_a_dedicated_compactor(tmp_path: Path) -> None:
    """3 write-only writer processes x 60 commits + one compactor (universal picks, one
    attempt per round so that any conflict is seen): zero conflicts, all rows present."""
    wh = str(tmp_path / "wh")
    create(wh, **{"write-only": "true", "num-sorted-run.compaction-trigger": "3"})
    n_writers, n_commits, n_keys = 3, 60, 5
    t0 = time.monotonic()
    args: list[tuple[Any, ...]] = [(wh, n_commits, n_keys)] * n_writers
    res = run_processes(_dispatch, [("w", *a) for a in args] + [("c", wh, 12.0, 1)],
                        timeout=120)
    elapsed = time.monotonic() - t0
    errors = [r.error for r in res if r.error]
    assert not errors, errors[:1]
    comp = res[-1].value
    assert sum(r.value["conflicts"] for r in res[:-1]) == 0
    assert comp["conflicts"] == 0 and comp["compactions"] > 0, comp
    table = open_table(wh)
    snaps = list(table.snapshot_manager.snapshots())
    assert len(snaps) == n_writers * n_commits + comp["compactions"]
    table.compact()  # a last full compaction (None: the compactor did it already)
    files = [f for v in live_bucket_files(table.manifest_io, table.latest_snapshot()).values()
             for f in v[1]]
    assert {f.level for f in files} == {3}  # trigger 3: num-levels 4, max level 3
    got = values(table)
    assert len(got) == n_writers * n_commits * n_keys
    for i in range(n_writers):
        for c in range(n_commits):
            for j in range(n_keys):
                k = i * 1_000_000 + c * n_keys + j
                assert got[k] == f"w{i}c{c}-{k}"
    refs = assert_fsck_clean(table)
    assert not orphan_files(table, refs)  # nothing was cancelled: no leftovers
    print(f"\nwrite-only writers + compactor: {len(snaps)} snapshots, {comp} in {elapsed:.1f} s")


def test_racing_compactors_and_a_writer(tmp_path: Path) -> None:
    """Two compactors (full compactions, retried on conflict) race a writer whose table is
    write-only: whatever interleaving happens, nothing is lost and fsck stays clean."""
    wh = str(tmp_path / "wh")
    create(wh, **{"write-only": "true"})
    res = run_processes(_dispatch, [("w", wh, 25, 4), ("f", wh, 4.0), ("f", wh, 4.0)],
                        timeout=120)
    errors = [r.error for r in res if r.error]
    assert not errors, errors[:1]
    table = open_table(wh)
    got = values(table)
    assert len(got) == 25 * 4
    assert_fsck_clean(table)
    compacts = [s for s in table.snapshot_manager.snapshots()
                if s.commit_kind is CommitKind.COMPACT]
    assert compacts
    print(f"\nracing compactors: {len(compacts)} compactions, "
          f"{[r.value for r in res[1:]]}")


def full_compactor_proc(index: int, barrier: Any, warehouse: str, stop_after: float
                        ) -> dict[str, Any]:
    table = open_table(warehouse)
    if barrier is not None:
        barrier.wait()
    done = rounds = gave_up = 0
    deadline = time.monotonic() + stop_after
    while time.monotonic() < deadline:
        rounds += 1
        try:
            if table.compact(commit_user=f"full-{index}") is not None:
                done += 1
        except CommitConflictError:  # lost every re-plan to the other compactor: next round
            gave_up += 1
        time.sleep(0.02)
    return {"compactions": done, "rounds": rounds, "gave_up": gave_up}


def _dispatch(index: int, barrier: Any, role: str, *args: Any) -> dict[str, Any]:
    if role == "w":
        return writer_proc(index, barrier, *args)
    if role == "c":
        return compactor_proc(index, barrier, *args)
    return full_compactor_proc(index, barrier, *args)
