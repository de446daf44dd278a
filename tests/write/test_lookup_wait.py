"""``lookup-wait`` and ``TableWrite.prepare_commit(wait_compaction=...)``.

Java 0.9: ``CoreOptions.prepareCommitWaitCompaction()`` is ``lookup-wait`` when the table needs
a lookup, else false; only Flink's streaming sink passes it to ``prepareCommit(waitCompaction,
id)``. Batch writes (``TableWriteImpl.prepareCommit()``, Spark) always wait. Without waiting,
a round's level-0 files are committed alone and the compaction's result goes out with the next
round; a deletion-vector table's readers skip level 0, so they see a round's rows one commit
later (``tests/interop/test_lookup_wait_interop.py`` shows Java reads the same).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.compact.options import CompactOptions
from paimon_core.errors import SchemaError
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable


def table_of(tmp_path: Path, **options: str) -> FileStoreTable:
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    return cat.create_table("db.t", Schema.of(
        [("id", "INT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", **options}))


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int32()), "v": [f"{tag}{i}" for i in ids]})


def ids_read(table: FileStoreTable) -> list[int]:
    return sorted(table.to_arrow().column("id").to_pylist())


def kinds_since(table: FileStoreTable, first: int) -> list[CommitKind]:
    latest = table.latest_snapshot()
    assert latest is not None
    return [table.snapshot_manager.snapshot(i).commit_kind for i in range(first, latest.id + 1)]


@pytest.mark.parametrize(("options", "waits"), [
    ({}, True),
    ({"lookup-wait": "false"}, False),
    ({"changelog-producer.lookup-wait": "false"}, False),  # Java's fallback key
    ({"lookup-wait": "true"}, True),
    ({"deletion-vectors.enabled": "false", "lookup-wait": "true"}, False),  # no lookup
    ({"deletion-vectors.enabled": "false", "changelog-producer": "lookup",
      "lookup-wait": "false"}, False),
    ({"deletion-vectors.enabled": "false", "merge-engine": "first-row"}, True),
])
def test_prepare_commit_wait_compaction_as_java(
    tmp_path: Path, options: dict[str, str], waits: bool
) -> None:
    t = table_of(tmp_path, **options)
    assert CompactOptions.of(t.schema, t.options).prepare_commit_wait_compaction is waits


def test_a_bad_value_is_refused(tmp_path: Path) -> None:
    t = table_of(tmp_path, **{"lookup-wait": "maybe"})
    with pytest.raises(SchemaError, match="lookup-wait"):
        t.new_write("u")


def test_a_batch_write_waits_whatever_lookup_wait_says(tmp_path: Path) -> None:
    """Java's batch ``prepareCommit()`` waits: one APPEND and one COMPACT snapshot, rows read
    at once."""
    t = table_of(tmp_path, **{"lookup-wait": "false"})
    builder = t.new_batch_write_builder("u")
    with builder.new_write() as w:
        w.write_arrow(rows(range(5), "a"))
        builder.new_commit().commit(w.prepare_commit())
    assert kinds_since(t, 1) == [CommitKind.APPEND, CommitKind.COMPACT]
    assert ids_read(t) == list(range(5))


def test_rounds_without_waiting_commit_the_compaction_one_round_later(tmp_path: Path) -> None:
    t = table_of(tmp_path, **{"lookup-wait": "false"})
    wait = CompactOptions.of(t.schema, t.options).prepare_commit_wait_compaction
    commit = t.new_commit("s")
    with t.new_write("s") as w:
        w.write_arrow(rows(range(0, 200), "a"))
        (m1,) = w.prepare_commit(wait_compaction=wait)
        assert [f.level for f in m1.new_files] == [0]
        assert not m1.compact_before and not m1.compact_after and not m1.dv_index_added
        commit.commit([m1], 1)
        assert kinds_since(t, 1) == [CommitKind.APPEND]
        assert ids_read(t) == []  # level 0 is not read on a deletion-vector table

        w.write_arrow(rows(range(2, 6), "b"))  # keys 2..5 replace round 1's rows
        (m2,) = w.prepare_commit(wait_compaction=wait)
        assert [f.file_name for f in m2.compact_before] == [m1.new_files[0].file_name]
        assert [f.level for f in m2.new_files] == [0] and m2.compact_after
        commit.commit([m2], 2)
        assert kinds_since(t, 2) == [CommitKind.APPEND, CommitKind.COMPACT]
        assert ids_read(t) == list(range(200))
        assert t.to_arrow().sort_by("id").column("v").to_pylist()[:4] == ["a0", "a1", "a2", "a3"]

        (m3,) = w.prepare_commit()  # end of input: waits (Flink's endInput, a batch write)
        assert not m3.new_files
        assert [f.file_name for f in m3.compact_before] == [m2.new_files[0].file_name]
        assert m3.dv_index_added  # round 2 superseded keys 2..5 of round 1's file
        commit.commit([m3], 3)
    assert ids_read(t) == list(range(200)) and fsck(t).ok
    assert t.to_arrow().sort_by("id").column("v").to_pylist()[:7] == [
        "a0", "a1", "b2", "b3", "b4", "b5", "a6"]


def test_closing_with_a_held_compaction_deletes_its_files(tmp_path: Path) -> None:
    t = table_of(tmp_path)
    w = t.new_write("s")
    w.write_arrow(rows(range(200), "a"))
    t.new_commit("s").commit(w.prepare_commit(), 1)
    w.write_arrow(rows(range(3), "b"))
    (m2,) = w.prepare_commit(wait_compaction=False)
    t.new_commit("s").commit([m2], 2)
    held = list(w.writer.written_paths)
    assert held  # the held compaction's deletion vectors, not handed out yet
    w.close()
    assert not any(t.file_io.exists(p) for p in held)
    assert fsck(t).ok and ids_read(t) == list(range(200))
    assert t.to_arrow().sort_by("id").column("v").to_pylist()[:1] == ["a0"]
