"""Stale writers racing snapshot expiry (reliability.md design rule 5; issue 13, defect 1).

Expiry frees snapshot ids, and create-if-absent cannot tell a freed id from a new one: a
writer that planned snapshot ``N`` and stalled while expiry removed ``N`` would re-create it,
far below the latest snapshot, and (with ``LATEST = N``) hide every later commit. Here stale
writers stall until expiry has removed exactly the id they planned, either before the
committer's own fence check (``after_plan``: the check refuses the id) or inside the create
(``in_publish``: the create lands, the committer finds it below the fence and withdraws it),
while steady writers keep committing and an expirer keeps only the last 3 snapshots.
Afterwards every acknowledged commit is in the latest snapshot, no snapshot file lies below the
fence, ids are contiguous, the hints are right and fsck is clean. Then a stray file left by a
writer that died before withdrawing it, with ``LATEST`` pointing at it, fools no lookup.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import CommitStateUnknownError, SnapshotExpiredError, StorageError
from paimon_core.fsck import fsck
from paimon_core.identifier import Identifier
from paimon_core.io.file_io import FileIO, join
from paimon_core.spec.snapshot import CommitKind
from tests.reliability.harness import (
    AppendModel,
    append_rows,
    assert_fsck_clean,
    create_table,
    open_table,
    run_processes,
)
from tests.reliability.minwrite import writer_for
from tests.reliability.workers import expirer, stale_writer, steady_writer

ROUNDS_LOCAL = int(os.environ.get("PAIMON_REL_STALE_ROUNDS", "8"))
ROUNDS_S3 = int(os.environ.get("PAIMON_REL_STALE_ROUNDS_S3", "3"))
RETAIN = 3


def _race(warehouse: str, options: dict[str, str] | None, signal_dir: Path, *,
          stale_per_mode: int, rounds: int, steady: int) -> dict[str, Any]:
    create_table(warehouse, options, "append")
    signal_dir.mkdir()
    n_stale = 2 * stale_per_mode
    modes = ["after_plan"] * stale_per_mode + ["in_publish"] * stale_per_mode
    args: list[tuple[Any, ...]] = [(warehouse, options, rounds, m, str(signal_dir))
                                   for m in modes]
    res = run_processes(
        _dispatch,
        [("stale", a) for a in args]
        + [("steady", (warehouse, options, n_stale, str(signal_dir), 5000))] * steady
        + [("expire", (warehouse, options, RETAIN, n_stale, str(signal_dir)))],
        timeout=600)
    errors = [r.error or f"exit code {r.exitcode}" for r in res if r.error or r.exitcode != 0]
    assert not errors, errors[:2]
    stale = [r.value for r in res[:n_stale]]
    table = open_table(warehouse, options)
    sm = table.snapshot_manager
    ids = sm.list_snapshot_ids()
    fence = int(table.file_io.read_text(join(sm.snapshot_dir, "EARLIEST")))
    assert ids[0] >= fence and ids == list(range(ids[0], ids[-1] + 1)), (fence, ids[:5])
    assert sm.latest_snapshot_id() == ids[-1] == int(
        table.file_io.read_text(join(sm.snapshot_dir, "LATEST")))
    assert_fsck_clean(table)
    model = AppendModel()
    for i in range(n_stale):
        for k in range(rounds):
            model.add(append_rows(f"s{i}", i, k))
    for j, r in enumerate(res[n_stale:n_stale + steady]):
        for k in range(r.value["commits"]):
            model.add(append_rows(f"w{n_stale + j}", 100 + n_stale + j, k))
    model.check(table)
    for mode, v in zip(modes, stale):
        assert v["timeouts"] == 0 and v["stalls"] == rounds, v
        assert len(v["snapshots"]) == rounds, v  # every commit acknowledged, once
        if mode == "after_plan":
            # the fence check refused the expired id of every round; under load a round's
            # re-planned attempt can fall behind the expirer again and be refused once more
            assert v["refused"] >= rounds, v
    # in_publish: every round's create went to an emptied slot; it landed there (then was
    # withdrawn) unless the other in_publish writer's stray took the slot first (a lost
    # race): each stray accounts for at most two rounds
    withdrawn = sum(v["withdrawn"] for m, v in zip(modes, stale) if m == "in_publish")
    assert 2 * withdrawn >= stale_per_mode * rounds, stale

    # the next commit continues right above the latest
    w = writer_for(table, "after")
    w.write_arrow(append_rows("after", 0, 0))
    assert table.new_commit("after").commit(w.prepare_commit(), 1) == [ids[-1] + 1]
    return {"snapshots": ids[-1], "expired": res[-1].value["expired"],
            "withdrawn": sum(v["withdrawn"] for v in stale),
            "refused": sum(v["refused"] for v in stale)}


def _dispatch(index: int, barrier: Any, role: str, args: tuple[Any, ...]) -> Any:
    """One entry point for the pool (the stale writers come first, so their index is the
    partition they write)."""
    if role == "stale":
        return stale_writer(index, barrier, *args)
    if role == "steady":
        return steady_writer(index, barrier, *args)
    return expirer(index, barrier, *args)


def test_stale_writers_race_expiry_local(tmp_path: Path) -> None:
    report = _race(str(tmp_path / "wh"), None, tmp_path / "signals", stale_per_mode=2,
                   rounds=ROUNDS_LOCAL, steady=1)
    print(f"\nstale writers vs expiry (local): {report}")


@pytest.mark.s3
def test_stale_writers_race_expiry_s3(s3_bucket: tuple[str, dict[str, str]],
                                      tmp_path: Path) -> None:
    root, opts = s3_bucket
    report = _race(root, opts, tmp_path / "signals", stale_per_mode=1, rounds=ROUNDS_S3,
                   steady=1)
    print(f"\nstale writers vs expiry (s3): {report}")


def test_a_stray_left_behind_fools_no_lookup(tmp_path: Path) -> None:
    """A writer died between landing in an expired slot and withdrawing it, after writing
    ``LATEST`` there (as a writer without the fence check did): reads, writers, time travel,
    exactly-once and fsck all ignore the stray, and the next expiry removes it."""
    wh = str(tmp_path / "wh")
    table = create_table(wh, None, "append")
    model = AppendModel()
    for k in range(21):
        w = writer_for(table, "u")
        rows = append_rows("p", 0, k)
        w.write_arrow(rows)
        table.new_commit("u").commit(w.prepare_commit(), k)
        model.add(rows)
    assert table.expire_snapshots(retain_min=11, retain_max=11).expired_ids == tuple(
        range(1, 11))
    sm = table.snapshot_manager
    # the strays: id 2 (below a gap) and id 10 (right below the fence), each a copy of a real
    # snapshot's content with another user's identifier; LATEST names one of them
    for sid in (2, 10):
        stray = sm.snapshot(11).model_copy(update={"id": sid, "commit_user": "ghost",
                                                   "commit_identifier": 1})
        assert table.file_io.try_create(sm.snapshot_path(sid), stray.to_json_bytes())
    table.file_io.write_bytes(join(sm.snapshot_dir, "LATEST"), b"2")
    fresh = open_table(wh)
    fsm = fresh.snapshot_manager
    assert fsm.latest_snapshot_id() == 21 and fsm.earliest_snapshot_id() == 11
    model.check(fresh)
    with pytest.raises(SnapshotExpiredError):
        fresh.to_arrow(snapshot_id=10)
    # the user whose stray copies hold identifier 1 has committed nothing
    assert fresh.new_commit("ghost").filter_committed([1]) == [1]
    report = fsck(fresh)
    assert report.ok and [f.kind.value for f in report.warnings] == ["stray_snapshot", "hint_lag"]
    w = writer_for(fresh, "u")
    w.write_arrow(append_rows("p", 0, 99))
    assert fresh.new_commit("u").commit(w.prepare_commit(), 99) == [22]
    assert fresh.latest_snapshot().commit_kind is CommitKind.APPEND  # type: ignore[union-attr]
    r = fresh.expire_snapshots(retain_min=12, retain_max=12)
    assert set(r.expired_ids) == {2, 10}
    assert fsm.list_snapshot_ids() == list(range(11, 23))
    assert_fsck_clean(fresh)


def test_a_failed_check_after_the_create_is_an_unknown_state(tmp_path: Path) -> None:
    """The create landed but checking it against expiry failed (the listing errs): the commit
    may have landed, so the caller gets CommitStateUnknownError, nothing is cleaned up, and
    resolving with filter_committed finds the commit (never a StorageError that a pipeline
    would answer by deleting the files of a landed commit)."""
    wh = str(tmp_path / "wh")
    create_table(wh, None, "append")

    class ListingFailsAfterCreate(FileIO):
        armed = False

        def try_create(self, path: str, data: bytes) -> bool:
            created = super().try_create(path, data)
            type(self).armed = created and "/snapshot/snapshot-" in path
            return created

        def list_names(self, directory: str) -> list[str]:
            if type(self).armed and directory.endswith("/snapshot"):
                type(self).armed = False
                raise StorageError(directory, "listing failed (injected)")
            return super().list_names(directory)

    cat = FileSystemCatalog(wh)
    cat.file_io = ListingFailsAfterCreate(cat.warehouse)
    table = cat.get_table(Identifier.parse("db.t"))
    w = writer_for(table, "u")
    rows = append_rows("p", 0, 0)
    w.write_arrow(rows)
    msgs = w.prepare_commit()
    with pytest.raises(CommitStateUnknownError, match="may have landed"):
        table.new_commit("u").commit(msgs, 7)
    fresh = open_table(wh)
    assert fresh.new_commit("u").filter_committed([7]) == []
    model = AppendModel()
    model.add(rows)
    model.check(fresh)
    assert_fsck_clean(fresh)


@pytest.mark.parametrize("stage", ["write", "commit"])
def test_a_writer_whose_base_snapshot_expires_while_it_reads_replans(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stage: str) -> None:
    """A writer read the latest snapshot N; before it read N's manifests, other writers
    committed and expiry removed N with its manifest lists (the writer was slower than
    retention) — while the writer restored its buckets' sequence numbers (``write``) or while
    the commit planned (``commit``). It reads the latest snapshot again, as after a lost race,
    instead of failing with "manifest list referenced by a snapshot is missing" (seen once in
    the race above)."""
    from paimon_core.manifest_io import ManifestCache, ManifestIO

    wh = str(tmp_path / "wh")
    table = create_table(wh, None, "append")
    model = AppendModel()

    def commit(user: str, part: int, k: int) -> list[int]:
        w = writer_for(table, user)
        rows = append_rows(user, part, k)
        w.write_arrow(rows)
        ids = table.new_commit(user).commit(w.prepare_commit(), k)
        model.add(rows)
        return ids

    for k in range(3):
        commit("a", 0, k)
    orig = ManifestIO.data_manifests
    fired: list[int] = []
    armed: list[bool] = []

    def slower_than_retention(self: ManifestIO, snapshot: Any) -> Any:
        if armed and not fired and snapshot is not None:
            fired.append(snapshot.id)
            commit("a", 0, 3)
            commit("a", 0, 4)
            expired = table.expire_snapshots(retain_min=1, retain_max=1).expired_ids
            assert snapshot.id in expired
            # the slow writer is another process: nothing of N is in its manifest cache
            self.cache = ManifestCache(32 << 20)
        return orig(self, snapshot)

    monkeypatch.setattr(ManifestIO, "data_manifests", slower_than_retention)
    slow = writer_for(table, "slow")
    rows = append_rows("slow", 1, 0)
    if stage == "write":
        armed.append(True)
    slow.write_arrow(rows)
    messages = slow.prepare_commit()
    armed.append(True)  # the commit's own reads
    ids = table.new_commit("slow").commit(messages, 1)
    model.add(rows)
    assert fired == [3] and ids == [6]
    fresh = open_table(wh)
    model.check(fresh)
    assert_fsck_clean(fresh)
