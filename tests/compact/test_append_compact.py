"""Append tables: Java 0.9's small-file pickers and end-to-end compaction."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa

from paimon_core.compact.append import pack_unaware, pick_bucketed, pick_bucketed_full
from paimon_core.compact.manager import live_bucket_files
from paimon_core.fsck import fsck
from paimon_core.spec.manifest import FileSource
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.compact.helpers import fmeta
from tests.tables import make_table, write_rows


def names(files: list | None) -> list[str] | None:
    return None if files is None else [f.file_name for f in files]


def seqfiles(*sizes: int) -> list:
    return [fmeta(s, seq=(i * 10, i * 10 + 9), name=f"f{i}") for i, s in enumerate(sizes)]


def test_pick_bucketed() -> None:
    """``BucketedAppendCompactManager.pickCompactBefore``: a sliding window in sequence
    order."""
    # 5 small files reach max.file-num 5
    assert names(pick_bucketed(seqfiles(1, 1, 1, 1, 1), min_file_num=5, max_file_num=5,
                               target_file_size=100)) == ["f0", "f1", "f2", "f3", "f4"]
    assert pick_bucketed(seqfiles(1, 1, 1, 1), min_file_num=5, max_file_num=5,
                         target_file_size=100) is None
    # the target size is reached with 3 files (>= min 3): compact them
    assert names(pick_bucketed(seqfiles(50, 30, 30, 1), min_file_num=3, max_file_num=10,
                               target_file_size=100)) == ["f0", "f1", "f2"]
    # a big file fills the window alone and is dropped; the window slides on
    assert names(pick_bucketed(seqfiles(200, 1, 1, 1), min_file_num=3, max_file_num=10,
                               target_file_size=100)) is None
    assert names(pick_bucketed(seqfiles(200, 60, 60, 60), min_file_num=2, max_file_num=10,
                               target_file_size=100)) == ["f1", "f2"]
    # order is by sequence number, not by the given order
    files = seqfiles(1, 1, 1, 1, 1)
    assert names(pick_bucketed(files[::-1], min_file_num=5, max_file_num=5,
                               target_file_size=100)) == ["f0", "f1", "f2", "f3", "f4"]


def test_pick_bucketed_full() -> None:
    assert pick_bucketed_full(seqfiles(1, 1), target_file_size=100) is None  # < 3 files
    assert names(pick_bucketed_full(seqfiles(200, 1, 1, 1), target_file_size=100)) == [
        "f1", "f2", "f3"]  # leading big file skipped
    assert pick_bucketed_full(seqfiles(1, 200, 200), target_file_size=100) is None  # 1 small
    assert names(pick_bucketed_full(seqfiles(1, 200, 1, 1), target_file_size=100)) == [
        "f0", "f1", "f2", "f3"]


def test_pack_unaware() -> None:
    files = seqfiles(10, 80, 5, 30, 69, 70, 20)
    # files >= 70 (70 % of 100) are left alone; bins by ascending size
    bins = pack_unaware(files, target_file_size=100, compaction_file_size=70, min_file_num=2,
                        max_file_num=50)
    assert [names(b) for b in bins] == [["f2", "f0", "f6", "f3", "f4"]]
    bins = pack_unaware(files, target_file_size=100, compaction_file_size=70, min_file_num=2,
                        max_file_num=2)
    assert [names(b) for b in bins] == [["f2", "f0"], ["f6", "f3"]]
    assert pack_unaware(seqfiles(1, 2), target_file_size=100, compaction_file_size=70,
                        min_file_num=5, max_file_num=50) == []
    full = pack_unaware(seqfiles(1, 2, 90), target_file_size=100, compaction_file_size=70,
                        min_file_num=5, max_file_num=50, full=True)
    assert [names(b) for b in full] == [["f0", "f1"]]


def append_table(tmp_path: Path, **options: str) -> FileStoreTable:
    return make_table(tmp_path / "wh", [("pt", "STRING"), ("id", "BIGINT"), ("s", "STRING")],
                      name="db.a", partition_keys=["pt"], options=options)


def write(table: FileStoreTable, k: int, pts: list[str | None]) -> list[int]:
    n = len(pts)
    return write_rows(table, pa.table({
        "pt": pts, "id": pa.array(range(k * 100, k * 100 + n), pa.int64()), "s": [f"s{k}"] * n,
    }), k)


def content(table: FileStoreTable) -> Counter[tuple[object, ...]]:
    return Counter(tuple(r.values()) for r in table.to_arrow().to_pylist())


def test_bucketed_append_inline_and_explicit(tmp_path: Path) -> None:
    table = append_table(tmp_path, bucket="1", **{"bucket-key": "id"})
    ids = [write(table, k, ["x", "x", None]) for k in range(5)]
    # the 5th commit's writer compacts each partition's 5 small files (max.file-num 5)
    assert ids[:4] == [[1], [2], [3], [4]] and ids[4] == [5, 6]
    snap = table.snapshot_manager.snapshot(6)
    assert snap.commit_kind is CommitKind.COMPACT and snap.delta_record_count == 0
    groups = live_bucket_files(table.manifest_io, snap)
    assert len(groups) == 2
    for _, files in groups.values():
        [f] = files
        assert f.file_source is FileSource.COMPACT and f.level == 0
        assert (f.min_sequence_number, f.max_sequence_number) == (0, f.row_count - 1)
    expected = Counter((pt, k * 100 + i, f"s{k}") for k in range(5)
                       for i, pt in enumerate(["x", "x", None]))
    assert content(table) == expected
    assert fsck(table).ok
    # explicit full compaction: 2 files per partition are not enough (3 needed)
    write(table, 5, ["x"])
    assert table.compact() is None
    write(table, 6, ["x"])
    sid = table.compact(partitions=[{"pt": "x"}])
    assert sid is not None
    files = live_bucket_files(table.manifest_io, table.latest_snapshot())
    assert sorted(len(v[1]) for v in files.values()) == [1, 1]


def test_unaware_append_compaction(tmp_path: Path) -> None:
    table = append_table(tmp_path, **{"compaction.min.file-num": "2"})
    for k in range(4):
        assert write(table, k, ["p", "q"]) == [k + 1]  # unaware: writers never compact
    # normal: a bin needs the target size (256 MiB) or 50 files: nothing to do
    assert table.compact(strategy="minor") is None
    # max.file-num 3 (+ min 2 in the options): one bin of 3 per partition
    from paimon_core.schema_change import SetOption

    table.alter([SetOption("compaction.max.file-num", "3")])
    before = content(table)
    sid = table.compact(strategy="minor")
    assert sid == 5
    per_part = {k[0]: v[1] for k, v in live_bucket_files(
        table.manifest_io, table.latest_snapshot()).items()}
    assert sorted(len(v) for v in per_part.values()) == [2, 2]
    assert content(table) == before
    sid = table.compact()
    assert sid == 6
    assert all(len(v[1]) == 1 for v in live_bucket_files(
        table.manifest_io, table.latest_snapshot()).values())
    assert content(table) == before
    report = fsck(table)
    assert report.ok, [f.to_json() for f in report.errors]
