"""Changelog producers, against what Paimon Java 0.9 produced for the same commits (recorded
with the oracle: a bucket=1 table, the writes r1, r2, r3, r1, r2, r3, r1 below)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.compact.manager import live_bucket_files
from paimon_core.schema_builder import Schema
from paimon_core.spec.manifest import DataFileMeta, FileSource
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.tables import make_table

R1 = [(1, "a", "+I"), (2, "b", "+I")]
R2 = [(1, "a2", "+I"), (3, "c", "+I")]
R3 = [(2, "b", "-D"), (4, "d", "+I")]
WRITES = [R1, R2, R3, R1, R2, R3, R1]

# Java 0.9, changelog-producer=lookup: every write is an APPEND + a COMPACT snapshot whose
# changelog is (sorted canonical lines of the oracle's `incremental`):
JAVA_LOOKUP = {
    2: ["+I 1 a", "+I 2 b"],
    4: ["+I 3 c", "+U 1 a2", "-U 1 a"],
    6: ["+I 4 d", "-D 2 b"],
    8: ["+I 2 b", "+U 1 a", "-U 1 a2"],
    10: ["+U 1 a2", "+U 3 c", "-U 1 a", "-U 3 c"],
    12: ["+U 4 d", "-D 2 b", "-U 4 d"],
    14: ["+I 2 b", "+U 1 a", "-U 1 a2"],
}
# Java 0.9, changelog-producer=full-compaction: the 5th write compacts everything to the max
# level (size amplification), then a full compaction after the 7th write:
JAVA_FULL = {
    6: ["+I 1 a2", "+I 2 b", "+I 3 c", "+I 4 d"],
    9: ["+U 1 a", "+U 2 b", "+U 4 d", "-U 1 a2", "-U 2 b", "-U 4 d"],
}


def make(tmp_path: Path, **options: str) -> FileStoreTable:
    return make_table(tmp_path / "wh", [("id", "INT NOT NULL"), ("v", "STRING")],
                      primary_keys=["id"], options={"bucket": "1", **options})


def write_all(table: FileStoreTable, writes: list[list[tuple[int, str, str]]]) -> list[list[int]]:
    out = []
    for i, batch in enumerate(writes):
        w = table.new_write("u")  # a fresh writer per commit, as the oracle's Java writes
        w.write_arrow(pa.table({"id": pa.array([r[0] for r in batch], pa.int32()),
                                "v": [r[1] for r in batch], "k": [r[2] for r in batch]}),
                      row_kind_column="k")
        out.append(table.new_commit("u").commit(w.prepare_commit(), i))
        w.close()
    return out


def lines(table: FileStoreTable, sid: int) -> list[str]:
    rows = table.read_unmerged_changes(sid - 1, sid).to_pylist()
    return sorted(f"{r['_kind']} {r['id']} {r['v']}" for r in rows)


def changelog_files(table: FileStoreTable, sid: int) -> list[Any]:
    snap = table.snapshot_manager.snapshot(sid)
    assert snap.changelog_manifest_list is not None
    mio = table.manifest_io
    return [e.file for m in mio.manifest_list(snap.changelog_manifest_list)
            for e in mio.manifest(m.file_name)]


def test_lookup_changelog_equals_java(tmp_path: Path) -> None:
    table = make(tmp_path, **{"changelog-producer": "lookup"})
    ids = write_all(table, WRITES)
    assert ids == [[2 * i + 1, 2 * i + 2] for i in range(7)]  # APPEND + COMPACT each
    for sid, expected in JAVA_LOOKUP.items():
        snap = table.snapshot_manager.snapshot(sid)
        assert snap.commit_kind is CommitKind.COMPACT
        assert lines(table, sid) == expected, sid
        assert snap.changelog_record_count == len(expected)
        for f in changelog_files(table, sid):
            assert f.file_name.startswith("changelog-") and f.file_name.endswith(".parquet")
            assert f.level > 0 and f.file_source is FileSource.APPEND
    for sid in range(1, 15, 2):
        snap = table.snapshot_manager.snapshot(sid)
        assert snap.commit_kind is CommitKind.APPEND
        assert snap.changelog_manifest_list is None and snap.changelog_record_count == 0


def test_full_compaction_changelog_equals_java(tmp_path: Path) -> None:
    table = make(tmp_path, **{"changelog-producer": "full-compaction"})
    ids = write_all(table, WRITES)
    assert ids == [[1], [2], [3], [4], [5, 6], [7], [8]]
    sid = table.compact()
    assert sid == 9
    for s, expected in JAVA_FULL.items():
        assert lines(table, s) == expected, s
    [f] = changelog_files(table, 9)
    # Java: level 5, sequence 5..13, 6 rows
    assert (f.level, f.min_sequence_number, f.max_sequence_number, f.row_count) == (5, 5, 13, 6)
    assert table.snapshot_manager.snapshot(9).changelog_record_count == 6
    # nothing changed since: a second full compaction has nothing to do
    assert table.compact() is None


def test_row_deduplicate_skips_equal_updates(tmp_path: Path) -> None:
    table = make(tmp_path, **{"changelog-producer": "full-compaction",
                              "changelog-producer.row-deduplicate": "true"})
    write_all(table, WRITES)
    sid = table.compact()
    assert sid is not None
    assert lines(table, sid) == ["+U 1 a", "-U 1 a2"]


def test_input_changelog_is_every_input_record(tmp_path: Path) -> None:
    """Java writes every input record (sorted by key, then sequence) into changelog files
    listed in the APPEND snapshot's changelog manifest list (oracle README 4.5)."""
    table = make(tmp_path, **{"changelog-producer": "input", "write-only": "true"})
    batch = [(2, "b", "+I"), (1, "a", "+I"), (1, "a", "-U"), (1, "a2", "+U"), (3, "x", "-D")]
    [[sid]] = write_all(table, [batch])
    snap = table.snapshot_manager.snapshot(sid)
    assert snap.commit_kind is CommitKind.APPEND and snap.changelog_record_count == 5
    got = [(r["_kind"], r["id"], r["v"]) for r in table.read_unmerged_changes(0, sid).to_pylist()]
    assert got == [("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "a2"), ("+I", 2, "b"),
                   ("-D", 3, "x")]
    [f] = changelog_files(table, sid)
    assert f.level == 0 and f.row_count == 5 and f.delete_row_count == 2


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_write_only_tables_produce_changelog_only_when_compacted(tmp_path: Path,
                                                                 producer: str) -> None:
    table = make(tmp_path, **{"changelog-producer": producer, "write-only": "true"})
    ids = write_all(table, WRITES[:3])
    assert ids == [[1], [2], [3]]
    sid = table.compact()
    assert lines(table, sid or 0) == ["+I 1 a2", "+I 3 c", "+I 4 d"]


def test_lookup_upgrade_rewrites_with_sequence_field(tmp_path: Path) -> None:
    """The lookup producer moves a level-0 file up below the max level without rewriting it
    only for ``deduplicate`` without ``sequence.field``
    (``LookupMergeTreeCompactRewriter.upgradeStrategy``): with a sequence field the record
    above may be newer, and the rewritten file holds the merge result."""
    table = FileSystemCatalog(str(tmp_path / "wh")).create_table("db.s", Schema.of(
        [("id", "INT NOT NULL"), ("s", "BIGINT"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "lookup", "sequence.field": "s",
                 "target-file-size": "2 kb"}))  # files of a few rows are not "small"

    def write(ids: list[int], s: int, v: str) -> list[int]:
        w = table.new_write("u")
        w.write_arrow(pa.table({"id": pa.array(ids, pa.int32()),
                                "s": pa.array([s] * len(ids), pa.int64()), "v": [v] * len(ids)}))
        out = table.new_commit("u").commit(w.prepare_commit(), s)
        w.close()
        return out

    write(list(range(400)), 10, "old")
    table.compact()  # one sorted run on level 5, far bigger than the next level-0 file
    append, compact = write([1], 5, "late")  # an older sequence value than level 5 holds

    def files(sid: int) -> list[DataFileMeta]:
        return [f for _, fs in live_bucket_files(
            table.manifest_io, table.snapshot_manager.snapshot(sid)).values() for f in fs]

    [added] = [f for f in files(append) if f.level == 0]
    assert added.file_size >= 2048 // 10 * 7  # an upgrade candidate (not small)
    moved = [f for f in files(compact) if f.level != 5]
    assert [f.level for f in moved] == [4]
    assert moved[0].file_name != added.file_name  # rewritten, not upgraded
    assert moved[0].max_sequence_number < added.min_sequence_number  # the record from above
    assert [(r["id"], r["s"], r["v"]) for r in table.to_arrow(filter="id = 1").to_pylist()] \
        == [(1, 10, "old")]
    log = sorted((r["_kind"], r["s"], r["v"]) for r in table.read_unmerged_changes(append, compact)
                 .to_pylist())
    assert log == [("+U", 10, "old"), ("-U", 10, "old")]
