"""Compaction inside TableWrite (Java's writer behaviour) and the ``paimon compact`` CLI."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from paimon_core.cli.main import main as paimon_main
from paimon_core.compact.manager import live_bucket_files
from paimon_core.fsck import fsck
from paimon_core.read.data_file import DataFileReader
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.compact.helpers import pk_table, read_sorted, rows


def commit_round(table: FileStoreTable, w: Any, k: int, ids: list[int]) -> list[int]:
    w.write_arrow(rows(ids, [f"r{k}"] * len(ids)))
    return table.new_commit("w").commit(w.prepare_commit(), k)


def kinds(table: FileStoreTable) -> list[str]:
    return [s.commit_kind.value for s in table.snapshot_manager.snapshots()]


def test_writer_compacts_at_the_trigger_without_io_before(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    table = pk_table(str(tmp_path / "wh"), bucket="1")
    reads = []
    orig = DataFileReader.read

    def counting(self: DataFileReader, *a: Any, **kw: Any) -> Any:
        reads.append(a[1].file_name)
        return orig(self, *a, **kw)

    orig_iter = DataFileReader.iter_read

    def counting_iter(self: DataFileReader, *a: Any, **kw: Any) -> Any:
        reads.append(a[0].file.file_name)  # a file streamed (compaction reads sections so)
        return orig_iter(self, *a, **kw)

    monkeypatch.setattr(DataFileReader, "read", counting)
    monkeypatch.setattr(DataFileReader, "iter_read", counting_iter)
    w = table.new_write("w")  # one long-lived writer
    for k in range(4):
        assert commit_round(table, w, k, [k, k + 1]) == [k + 1]
    assert reads == []  # 4 runs: nothing to compact, no data file read
    assert commit_round(table, w, 4, [9]) == [5, 6]  # 5 runs: APPEND + COMPACT
    assert len(reads) == 5
    assert kinds(table) == ["APPEND"] * 5 + ["COMPACT"]
    assert [r["id"] for r in read_sorted(table)] == [0, 1, 2, 3, 4, 9]
    w.close()


def test_write_only_never_compacts(tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "wh"), bucket="1", **{"write-only": "true"})
    w = table.new_write("w")
    assert [commit_round(table, w, k, [k]) for k in range(7)] == [[k + 1] for k in range(7)]
    assert table.compact(strategy="minor") == 8  # 7 runs > trigger: a compactor does
    w.close()


def test_full_compaction_delta_commits(tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "wh"), bucket="1",
                     **{"full-compaction.delta-commits": "2"})
    w = table.new_write("w")
    ids = [commit_round(table, w, k, [k % 3]) for k in range(4)]
    assert ids == [[1], [2, 3], [4], [5, 6]]
    files = next(iter(live_bucket_files(table.manifest_io, table.latest_snapshot()).values()))[1]
    assert [f.level for f in files] == [5]
    w.close()


def test_writer_follows_a_dedicated_compactor(tmp_path: Path) -> None:
    """The writer sees another user's COMPACT snapshot (its DELETE and ADD entries): its own
    later compaction includes the compactor's file and commits without conflict."""
    table = pk_table(str(tmp_path / "wh"), bucket="1")
    w = table.new_write("w")
    for k in range(3):
        commit_round(table, w, k, [k])
    assert table.compact(commit_user="compactor") == 4
    for k in range(3, 6):
        assert commit_round(table, w, k, [k]) == [k + 2]  # 1 + 3 runs: nothing
    ids = commit_round(table, w, 6, [6])  # 5 runs
    assert len(ids) == 2
    assert kinds(table)[-1] == "COMPACT"
    assert [r["id"] for r in read_sorted(table)] == list(range(7))
    assert fsck(table).ok
    w.close()


def test_stale_view_is_reread(tmp_path: Path) -> None:
    """A writer whose message was never committed holds a wrong view of the live files; an
    inconsistency (overlapping levels) makes it re-read them instead of failing."""
    table = pk_table(str(tmp_path / "wh"), bucket="1", **{"full-compaction.delta-commits": "1"})
    w = table.new_write("w")
    w.write_arrow(rows([1, 2], ["a", "b"]))
    lost = w.prepare_commit()  # a level-5 file that never lands
    assert lost[0].compact_after
    other = table.new_write("other")
    other.write_arrow(rows([1, 2], ["c", "d"]))
    table.new_commit("other").commit(other.prepare_commit(), 1)  # its own level-5 file
    w.write_arrow(rows([3], ["e"]))
    msgs = w.prepare_commit()  # the view overlaps on level 5: re-read, no compaction
    assert not any(m.compact_after for m in msgs)
    table.new_commit("w").commit(msgs, 2)
    assert [r["v"] for r in read_sorted(table)] == ["c", "d", "e"]
    w.close()
    other.close()


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = paimon_main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_cli_compact(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    table = pk_table(wh, partitioned=True, **{"write-only": "true"})
    for k in range(3):
        w = table.new_write("w")
        w.write_arrow(rows([1, 2, 3], [f"v{k}"] * 3, pt=["a", "b", "a"]))
        table.new_commit("w").commit(w.prepare_commit(), k)
        w.close()
    base = ["compact", "--warehouse", wh, "--table", "db.t"]
    rc, out, err = cli([*base, "--strategy", "minor"])
    assert (rc, json.loads(out)) == (0, {"op": "compact", "snapshot": None, "strategy": "minor"})
    rc, out, _ = cli([*base, "--full", "--partition", "pt=a", "--bucket", "0",
                      "--bucket", "1"])
    assert rc == 0 and json.loads(out)["snapshot"] == 4
    compacted = {(k[0], k[1]) for k, v in live_bucket_files(
        table.manifest_io, table.latest_snapshot()).items() if all(f.level == 5 for f in v[1])}
    parts = {k[0] for k in compacted}
    assert len(parts) == 1  # only partition a
    rc, out, _ = cli([*base, "--full"])
    assert rc == 0 and json.loads(out)["snapshot"] == 5
    assert table.snapshot_manager.snapshot(5).commit_kind is CommitKind.COMPACT
    rc, out, err = cli([*base, "--partition", "nope"])
    assert rc == 2 and "k=v" in err
    rc, out, err = cli([*base, "--partition", "zz=1"])
    assert rc == 1 and "partition key" in err
    assert [r["v"] for r in read_sorted(table)] == ["v2"] * 3


def test_recommit_of_a_landed_identifier_is_a_no_op_whatever_it_carries(tmp_path: Path) -> None:
    """Issue 13, defect 2: a restarted job regenerates batch 2 (same commit user) and commits
    it again; its writer compacted inline this time (3 sorted runs now reach the trigger), the
    first time it did not. The whole commit is skipped by (user, identifier), as Java's
    committer does, and the regenerated files are orphans that orphan cleaning reclaims."""
    import pyarrow as pa

    from paimon_core.orphans import remove_orphan_files

    table = pk_table(str(tmp_path / "wh"), bucket="1", **{
        "merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
        "num-sorted-run.compaction-trigger": "3"})

    def batch(k: int) -> pa.Table:
        return pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"],
                         "n": pa.array([k, k], pa.int64())})

    for k in (1, 2):
        w = table.new_write("u")
        w.write_arrow(batch(k))
        assert table.new_commit("u").commit(w.prepare_commit(), k) == [k]
        w.close()
    before = table.snapshot_manager.list_snapshot_ids()
    for _restart in range(2):  # every restart would repeat it
        w = table.new_write("u")
        w.write_arrow(batch(2))
        msgs = w.prepare_commit()
        assert any(m.compact_after for m in msgs)  # this writer compacted inline
        assert table.new_commit("u").commit(msgs, 2) == [2]  # the snapshot it landed in
        w.close()
    assert table.snapshot_manager.list_snapshot_ids() == before
    assert sorted(r["n"] for r in read_sorted(table)) == [3, 3]  # 1 + 2, not 1 + 2 + 2
    assert fsck(table).ok
    orphans = remove_orphan_files(table, 2**62).paths
    assert len(orphans) >= 4 and all("/bucket-0/data-" in p for p in orphans)
    assert sorted(r["n"] for r in read_sorted(table)) == [3, 3]
