"""A writer restores only the partitions it touches (``paimon_core.write.restore``): a write
into one partition of a many-partition table reads the manifests that can hold that
partition, and its sequence numbers still continue above every live file of its buckets --
after other writers' commits, compactions and expiry."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.table import FileStoreTable
from tests.tables import make_table, spy_manifest_reads, write_rows


def _rows(days: list[int], ids: list[int], v: str) -> pa.Table:
    return pa.table({"day": pa.array(days, pa.int32()), "id": pa.array(ids, pa.int32()),
                     "v": pa.array([v] * len(ids))})


def _table(where: Path, **options: str) -> FileStoreTable:
    """20 commits, each into a partition of its own (``day = 0..19``), 2 buckets."""
    catalog = FileSystemCatalog(str(where), {"cache.manifest.small-file-threshold": "1 b"})
    t = make_table(catalog, [("day", "INT NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING")],
                   partition_keys=["day"], primary_keys=["day", "id"],
                   options={"bucket": "2", **options})
    for day in range(20):
        write_rows(t, _rows([day] * 4, list(range(4)), f"d{day}"))
    return catalog.get_table("db.t")


def _max_seq(t: FileStoreTable, day: int) -> int:
    splits = t.new_read_builder().with_filter(f"day = {day}").new_scan().plan().splits
    return max(f.max_sequence_number for s in splits for f in s.files)


def _latest(t: FileStoreTable, day: int) -> dict[int, str]:
    rb = t.new_read_builder().with_filter(f"day = {day}")
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits)
    return dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist()))


def test_a_write_into_one_partition_reads_only_its_manifests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path, **{"write-only": "true"})
    metas = t.manifest_io.data_manifests(t.latest_snapshot())
    assert len(metas) >= 20
    before = _max_seq(t, 12)
    reads = spy_manifest_reads(monkeypatch)
    with t.new_write("u2") as w:
        w.write_arrow(_rows([12], [2], "new"))
        messages = w.prepare_commit()
    assert len(reads) == 1  # of 20 manifests, the one whose partition range holds day 12
    assert min(f.min_sequence_number for m in messages for f in m.new_files) > before
    reads.clear()
    t.new_commit("u2").commit(messages)
    assert reads == []  # an APPEND of new level-0 files checks no live file (Java 0.9)
    assert _latest(t, 12) == {0: "d12", 1: "d12", 2: "new", 3: "d12"}


def test_sequence_numbers_continue_over_rounds_and_other_writers(tmp_path: Path) -> None:
    t = _table(tmp_path)
    w = t.new_write("mine")
    commit = t.new_commit("mine")
    # round 1: two partitions in one call (restored in one read)
    w.write_arrow(_rows([3, 5], [0, 0], "r1"))
    commit.commit(w.prepare_commit(), 1)
    # another writer updates day 3 (restored) and day 7 (not yet) several times
    for i in range(3):
        write_rows(t, _rows([3, 7], [1, 1], f"other{i}"), user="other")
    # round 2: day 3 comes from the deltas, day 7 is read now; both must land on top
    w.write_arrow(_rows([3, 7], [1, 1], "r2"))
    commit.commit(w.prepare_commit(), 2)
    w.close()
    assert _latest(t, 3) == {0: "r1", 1: "r2", 2: "d3", 3: "d3"}
    assert _latest(t, 7) == {0: "d7", 1: "r2", 2: "d7", 3: "d7"}
    assert _latest(t, 5)[0] == "r1"


def test_a_restore_that_outlives_its_snapshot_reads_every_partition_again(
    tmp_path: Path,
) -> None:
    """Day 1 is restored at snapshot S; other writers commit to it and expiry removes S; the
    same round then touches day 2, whose read at S fails: both days are read again at the
    latest snapshot, so the next round's deltas (which start there) miss nothing of day 1."""
    t = _table(tmp_path, **{"write-only": "true"})
    w = t.new_write("mine")
    commit = t.new_commit("mine")
    w.write_arrow(_rows([1], [0], "mine1"))  # restores day 1 at the latest snapshot
    for i in range(3):
        write_rows(t, _rows([1], [0], f"other{i}"), user="other")
    while t.expire_snapshots(retain_min=1, retain_max=1).expired_ids:  # 10 per run
        pass  # until the snapshot day 1 was read at is gone
    w.write_arrow(_rows([2], [0], "mine1"))  # day 2's read fails: both read again
    commit.commit(w.prepare_commit(), 1)
    w.write_arrow(_rows([1], [0], "mine2"))  # continues above the others' files of day 1
    commit.commit(w.prepare_commit(), 2)
    w.close()
    assert _latest(t, 1)[0] == "mine2"
    assert _latest(t, 2)[0] == "mine1"
