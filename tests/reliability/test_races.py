"""Concurrent writers (reliability.md, "Concurrent writers"): processes and threads racing for
snapshot ids, checked against a model and fsck."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from paimon_core.errors import CommitConflictError
from paimon_core.io.file_io import FileIO, join
from paimon_core.schema_change import SetOption
from paimon_core.spec.snapshot import CommitKind
from tests.reliability.harness import (
    AppendModel,
    PkModel,
    append_rows,
    assert_fsck_clean,
    create_table,
    open_table,
    orphan_files,
    rows_of,
    run_processes,
)
from tests.reliability.minwrite import writer_for
from tests.reliability.workers import (
    append_writer,
    mixed_appender,
    overwrite_writer,
    pk_writer,
)

N_PROCS, ROWS = 16, 3
N_COMMITS_LOCAL = 20
# 16 x 20 on moto costs ~7 CPU-minutes here (every S3 request is ~8 ms of Python CPU in
# botocore + moto); the issue asks for the full 16 x 20, which is the default here
# (PAIMON_REL_S3_COMMITS=3 gives a quick local run).
N_COMMITS_S3 = int(os.environ.get("PAIMON_REL_S3_COMMITS", "20"))
RACE_REPORT: dict[str, Any] = {}


def _race_appends(warehouse: str, options: dict[str, str] | None, label: str,
                  n_commits: int) -> None:
    create_table(warehouse, options, "append")
    t0 = time.monotonic()
    res = run_processes(append_writer, [(warehouse, options, n_commits, ROWS)] * N_PROCS,
                        timeout=900)
    elapsed = time.monotonic() - t0
    errors = [r.error or f"exit code {r.exitcode}" for r in res if r.error or r.exitcode != 0]
    assert not errors, errors[:2]
    table = open_table(warehouse, options)
    total = N_PROCS * n_commits
    refs = assert_fsck_clean(table, expect_snapshots=total)
    model = AppendModel()
    for i in range(N_PROCS):
        for k in range(n_commits):
            model.add(append_rows(f"p{i}", i, k, ROWS))
    model.check(table)
    # every process got its own snapshot ids acknowledged, together exactly 1..total
    acked = sorted(s for r in res for s in r.value["snapshots"])
    assert acked == list(range(1, total + 1))
    for sid in (1, total):
        snap = table.snapshot_manager.snapshot(sid)
        assert snap.commit_kind is CommitKind.APPEND
    assert len(refs.data) == total  # one data file per commit, none lost, none extra
    RACE_REPORT[label] = {
        "commits": total,
        "seconds": round(elapsed, 1),
        "lost_races": sum(r.value["lost_races"] for r in res),
        "budget_exhausted_retries": sum(r.value["budget_exhausted"] for r in res),
        "state_unknown": sum(r.value["state_unknown"] for r in res),
    }
    print(f"\nrace {label}: {RACE_REPORT[label]}")


def test_16_processes_x_20_appends_local(tmp_path: Path) -> None:
    _race_appends(str(tmp_path / "wh"), None, "local", N_COMMITS_LOCAL)


@pytest.mark.s3
def test_16_processes_x_n_appends_s3(s3_bucket: tuple[str, dict[str, str]]) -> None:
    root, opts = s3_bucket
    _race_appends(root, opts, "s3", N_COMMITS_S3)


def test_pk_writers_same_keys_highest_sequence_wins(tmp_path: Path) -> None:
    """4 processes upsert the same 24 keys for 3 rounds each (bucket=2). The model is built
    from the rows each acknowledged commit actually wrote (their _SEQUENCE_NUMBER read back
    from the writer's own files): per key the highest sequence wins (ties: any of them)."""
    wh = str(tmp_path / "wh")
    # several writers of the same buckets: write-only, as Paimon requires (a writer that
    # compacts would conflict with the others' compactions)
    create_table(wh, None, "pk", **{"write-only": "true"})
    keys = list(range(24))
    res = run_processes(pk_writer, [(wh, None, 3, keys)] * 4, timeout=300)
    errors = [r.error or f"exit code {r.exitcode}" for r in res if r.error or r.exitcode != 0]
    assert not errors, errors[:2]
    table = open_table(wh)
    assert_fsck_clean(table, expect_snapshots=12)
    model = PkModel()
    for r in res:
        assert len(r.value["acked"]) == 3 * len(keys)  # every round acknowledged
        for k, seq, row in r.value["acked"]:
            model.add(k, seq, row)
    model.check(table)
    # a writer opened after everything landed continues above every sequence number
    w = writer_for(table, "late")
    import pyarrow as pa

    w.write_arrow(pa.table({"k": pa.array([0], pa.int32()), "v": ["late"],
                            "writer": pa.array([99], pa.int32()),
                            "round": pa.array([0], pa.int32())}))
    table.new_commit("late").commit(w.prepare_commit(), 1)
    got = {r[0]: r for r in rows_of(table.to_arrow(), ["k", "v"])}
    assert got[0] == (0, "late")
    RACE_REPORT["pk"] = {"ties": model.ties(),
                         "lost_races": sum(r.value["lost_races"] for r in res)}
    print(f"\npk race: {RACE_REPORT['pk']}")


def test_overwrite_racing_append(tmp_path: Path) -> None:
    """An INSERT OVERWRITE of p0 races an appender writing p0 and p1. Replaying the
    snapshots in id order (what each commit wrote) must give exactly the table."""
    wh = str(tmp_path / "wh")
    create_table(wh, None, "append")
    rounds = 6
    res = run_processes(_race_entry, [(wh, rounds), (wh, rounds)], timeout=300)
    errors = [r.error or f"exit code {r.exitcode}" for r in res if r.error or r.exitcode != 0]
    assert not errors, errors[:2]
    table = open_table(wh)
    assert_fsck_clean(table, expect_snapshots=2 * rounds)
    # replay: OVERWRITE r replaces p0 with the overwriter's round-r rows; APPEND r adds the
    # appender's round-r rows of p0 and p1
    model: dict[str, list[tuple[Any, ...]]] = {"p0": [], "p1": []}
    cols = ["pt", "writer", "seq", "v"]
    for sid in table.snapshot_manager.list_snapshot_ids():
        snap = table.snapshot_manager.snapshot(sid)
        r = snap.commit_identifier
        if snap.commit_kind is CommitKind.OVERWRITE:
            model["p0"] = rows_of(append_rows("p0", 100, r, 2), cols)
        else:
            assert snap.commit_kind is CommitKind.APPEND
            model["p0"] += rows_of(append_rows("p0", 1, r, 2), cols)
            model["p1"] += rows_of(append_rows("p1", 1, r, 2), cols)
    got = sorted(rows_of(table.to_arrow(), cols))
    assert got == sorted(model["p0"] + model["p1"])


def _race_entry(index: int, barrier: Any, wh: str, rounds: int) -> Any:
    if index == 0:
        return overwrite_writer(0, barrier, wh, None, rounds)
    return mixed_appender(1, barrier, wh, None, rounds)


def test_partition_rewriter_and_appender_raise_no_false_conflict(tmp_path: Path) -> None:
    """Thread A rewrites partition a (deletes its live file, adds a new one) while thread B
    appends to partition b: A's deletions are checked on every retry and must never conflict
    with B's additions."""
    wh = str(tmp_path / "wh")
    table = create_table(wh, None, "append")

    def write(t: Any, user: str, pt: str, seq: int) -> list[Any]:
        w = writer_for(t, user)
        w.write_arrow(append_rows(pt, 0, seq, 1))
        return list(w.prepare_commit())

    first = write(table, "a", "a", 0)
    table.new_commit("a").commit(first, 0)
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)
    final: list[str] = []

    def rewriter() -> None:
        t = open_table(wh)
        c = t.new_commit("a")
        live = first[0].new_files[0]
        barrier.wait()
        try:
            for i in range(1, 16):
                (m,) = write(t, "a", "a", i)
                c.commit([replace(m, deleted_files=(live,))], i)
                live = m.new_files[0]
            final.append(live.file_name)
        except BaseException as e:
            errors.append(e)

    def appender() -> None:
        t = open_table(wh)
        c = t.new_commit("b")
        barrier.wait()
        try:
            for i in range(15):
                c.commit(write(t, "b", "b", i), i)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=f) for f in (rewriter, appender)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    table = open_table(wh)
    assert_fsck_clean(table, expect_snapshots=31)
    assert sorted(rows_of(table.to_arrow(), ["pt", "seq"])) == [("a", 15)] + [
        ("b", i) for i in range(15)]
    # the 15 rewritten files are orphans now? no: they were deleted by snapshots, and are
    # still referenced by older snapshots (no expiry): nothing to reclaim
    assert not orphan_files(table)


def test_stale_bucket_count_writer_is_rejected(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    create_table(wh, None, "pk", bucket="2")
    stale = open_table(wh)  # a writer's view: bucket=2
    import pyarrow as pa

    def rows(v: str) -> pa.Table:
        return pa.table({"k": pa.array(range(8), pa.int32()), "v": [v] * 8,
                         "writer": pa.array([0] * 8, pa.int32()),
                         "round": pa.array([0] * 8, pa.int32())})

    w = writer_for(stale, "stale")
    w.write_arrow(rows("v1"))
    stale.new_commit("stale").commit(w.prepare_commit(), 1)
    # rescale: ALTER bucket=4, then INSERT OVERWRITE with 4 buckets
    fresh = open_table(wh)
    fresh.alter([SetOption("bucket", "4")])
    fresh = open_table(wh)
    w4 = writer_for(fresh, "rescale")
    w4.write_arrow(rows("v2"))
    fresh.new_commit("rescale").overwrite(w4.prepare_commit())
    # the stale writer still writes for bucket=2: rejected, nothing published
    w2 = writer_for(stale, "stale")
    w2.write_arrow(rows("v3"))
    msgs = w2.prepare_commit()
    assert {m.total_buckets for m in msgs} == {2}
    before = fresh.snapshot_manager.list_snapshot_ids()
    with pytest.raises(CommitConflictError, match="bucket"):
        open_table(wh).new_commit("stale").commit(msgs, 2)
    assert fresh.snapshot_manager.list_snapshot_ids() == before
    table = open_table(wh)
    assert_fsck_clean(table)
    assert sorted(rows_of(table.to_arrow(), ["k", "v"])) == [(k, "v2") for k in range(8)]


def _storage(storage: str, tmp_path: Path, request: pytest.FixtureRequest
             ) -> tuple[str, dict[str, str] | None]:
    if storage == "local":
        return str(tmp_path / "wh"), None
    root, opts = request.getfixturevalue("s3_bucket")
    return root, opts


STORAGES = ["local", pytest.param("s3", marks=pytest.mark.s3)]


@pytest.mark.parametrize("storage", STORAGES)
def test_32_threads_sharing_one_file_io_put_if_absent(storage: str, tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    """32 threads on ONE FileIO: private writes / reads / listings interleaved with a 32-way
    create-if-absent race on one key -> exactly one winner, whose bytes are stored."""
    wh, opts = _storage(storage, tmp_path, request)
    fio = FileIO(wh, opts)
    n = 32
    barrier = threading.Barrier(n)
    wins: list[int] = []
    errors: list[BaseException] = []
    target = join(wh, "race", "snapshot-1")

    def run(i: int) -> None:
        try:
            own = join(wh, "own", f"f-{i}")
            fio.write_bytes(own, f"mine {i}".encode())
            barrier.wait()
            if fio.try_create(target, f"winner {i}".encode()):
                wins.append(i)
            assert fio.read_bytes(own) == f"mine {i}".encode()
            assert fio.exists(own)
            assert f"f-{i}" in fio.list_names(join(wh, "own"))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[:3]
    assert len(wins) == 1, wins
    assert fio.read_bytes(target) == f"winner {wins[0]}".encode()
    assert len(fio.list_names(join(wh, "own"))) == n


@pytest.mark.parametrize("storage", STORAGES)
def test_32_threads_sharing_one_file_io_commit(storage: str, tmp_path: Path,
                                               request: pytest.FixtureRequest) -> None:
    """32 threads write and commit through ONE table object (one FileIO, one s3fs
    instance): exactly one snapshot per commit, all rows present, fsck clean."""
    wh, opts = _storage(storage, tmp_path, request)
    table = create_table(wh, opts, "append")
    n_threads = 32
    per_thread = 2 if storage == "local" else 1
    # on S3 at most 4 threads are inside commit() at once (a 32-way commit race costs ~75 s
    # of CPU on moto; the 32-way create-if-absent race is the test above)
    gate = threading.Semaphore(32 if storage == "local" else 4)
    barrier = threading.Barrier(n_threads)
    errors: list[BaseException] = []
    model = AppendModel()
    lock = threading.Lock()

    def run(i: int) -> None:
        c = table.new_commit(f"t{i}")
        try:
            writes = []
            for k in range(per_thread):
                w = writer_for(table, f"t{i}")
                data = append_rows(f"p{i % 8}", i, k, 2)
                w.write_arrow(data)
                writes.append((k, w.prepare_commit(), data))
            barrier.wait()
            for k, msgs, data in writes:
                while True:
                    try:
                        with gate:
                            c.commit(msgs, k)
                        break
                    except CommitConflictError as e:
                        if "gave up after" not in str(e):
                            raise
                with lock:
                    model.add(data)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[:3]
    fresh = open_table(wh, opts)
    assert_fsck_clean(fresh, expect_snapshots=n_threads * per_thread)
    model.check(fresh)
