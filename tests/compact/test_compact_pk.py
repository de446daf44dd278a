"""Primary-key compaction end to end: reads unchanged, levels >= 1 disjoint, retractions
dropped only on the way to the max level, file metadata exact, fsck clean, changelog replay
equal to the table (lookup / full-compaction producers)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core.compact.manager import compact_bucket, live_bucket_files
from paimon_core.fsck import fsck
from paimon_core.io.file_io import join
from paimon_core.spec.binary_row import deserialize_binary_row
from paimon_core.spec.manifest import FileSource
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.compact.helpers import pk_table, read_sorted, rows
from tests.profiles import examples

_dirs = itertools.count()
KINDS = ["+I", "+U", "-U", "-D"]


def check_files(table: FileStoreTable) -> None:
    """Every live file: sorted unique keys equal to its min/max key, sequence range and
    delete count exact; levels >= 1 disjoint (Levels would raise); no deletes on the max
    level."""
    snap = table.latest_snapshot()
    from paimon_core.compact.manager import BucketCompactor

    c = BucketCompactor(table.file_io, table.context, table.schema_manager)
    key_types = [table.schema.field(k).type for k in table.schema.trimmed_primary_keys]
    for (part, bucket), (_, files) in live_bucket_files(table.manifest_io, snap).items():
        levels = c.levels(files)  # raises on overlapping levels
        for f in files:
            path = join(c.bucket_dir(part, bucket), f.file_name)
            t = pq.read_table(table.file_io.arrow_filesystem(path)[1])
            keys = t.column("_KEY_id").to_pylist()
            assert keys == sorted(set(keys)), f.file_name
            assert [keys[0]] == deserialize_binary_row(f.min_key, key_types)
            assert [keys[-1]] == deserialize_binary_row(f.max_key, key_types)
            seq = t.column("_SEQUENCE_NUMBER").to_numpy()
            assert (f.min_sequence_number, f.max_sequence_number) == (seq.min(), seq.max())
            kinds = t.column("_VALUE_KIND").to_numpy()
            assert f.delete_row_count == int(np.isin(kinds, (1, 3)).sum())
            assert f.row_count == t.num_rows
            if f.level == levels.max_level:
                assert f.delete_row_count == 0, "retractions on the max level"
            if f.file_source is FileSource.COMPACT:
                assert f.level > 0


def replay(table: FileStoreTable, model: dict[tuple[Any, ...], tuple[Any, ...]],
           start: int, end: int) -> None:
    """Apply the changelog of snapshots (start, end] to ``model``: per key and snapshot the
    changelog is -U/+U, +I or -D (order within a snapshot does not matter then)."""
    for sid in range(start + 1, end + 1):
        log = table.read_unmerged_changes(sid - 1, sid).to_pylist()
        per_key: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for r in log:
            per_key.setdefault((r["pt"], r["id"]), []).append(r)
        for k, rs in per_key.items():
            kinds = sorted(r["_kind"] for r in rs)
            assert kinds in (["+I"], ["-D"], ["+U", "-U"]), (sid, k, kinds)
            after = [r for r in rs if r["_kind"] in ("+I", "+U")]
            before = [r for r in rs if r["_kind"] in ("-U", "-D")]
            if before:
                assert model.get(k) == (before[0]["v"], before[0]["n"]), (sid, k)
            else:
                assert k not in model, (sid, k)
            if after:
                model[k] = (after[0]["v"], after[0]["n"])
            else:
                model.pop(k)


ops = st.lists(
    st.tuples(
        st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 30),
                           st.sampled_from(KINDS)), min_size=1, max_size=25),
        st.sampled_from(["none", "bucket", "table", "full"]),
    ),
    min_size=2, max_size=7,
)


@settings(max_examples=examples(25), suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops, producer=st.sampled_from(["none", "lookup", "full-compaction"]),
       write_only=st.booleans())
def test_compaction_keeps_reads(tmp_path_factory: pytest.TempPathFactory,
                                ops: list[tuple[list[tuple[str, int, str]], str]],
                                producer: str, write_only: bool) -> None:
    root = str(tmp_path_factory.mktemp(f"p{next(_dirs)}"))
    table = pk_table(root, partitioned=True, **{
        "num-sorted-run.compaction-trigger": "3", "target-file-size": "2 kb",
        "changelog-producer": producer, "write-only": str(write_only).lower()})
    model: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    replayed: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    replayed_at = 0
    full_state: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for i, (batch, compaction) in enumerate(ops):
        w = table.new_write("writer")
        data = rows([k for _, k, _ in batch], [f"v{i}-{k}" for _, k, _ in batch],
                    pt=[p for p, _, _ in batch], kinds=[kd for _, _, kd in batch])
        w.write_arrow(data, row_kind_column="_k")
        for p, k, kd in batch:
            if kd in ("+I", "+U"):
                model[(p, k)] = (f"v{i}-{k}", k * 10)
            else:
                model.pop((p, k), None)
        table.new_commit("writer").commit(w.prepare_commit(), i)
        w.close()
        if compaction == "bucket":
            msgs = [m for key in live_bucket_files(table.manifest_io, table.latest_snapshot())
                    if (m := compact_bucket(table, key[0], key[1])) is not None]
            if msgs:
                table.new_commit("compactor").commit(msgs)
        elif compaction in ("table", "full"):
            table.compact(strategy="full" if compaction == "full" else "minor",
                          commit_user="compactor")
        got = {(r["pt"], r["id"]): (r["v"], r["n"]) for r in read_sorted(table)}
        assert got == model, (i, compaction)
        check_files(table)
        latest = table.latest_snapshot()
        assert latest is not None
        if producer == "lookup":
            # every commit pushes level 0 up: the changelog replays to the table, commit by
            # commit (when the writer does not compact: only after compactions)
            replay(table, replayed, replayed_at, latest.id)
            replayed_at = latest.id
            if not write_only or compaction != "none":
                assert replayed == model
        if producer == "full-compaction" and compaction == "full":
            replay(table, full_state, replayed_at, latest.id)
            replayed_at = latest.id
            assert full_state == model
    report = fsck(table)
    assert report.ok, [f.to_json() for f in report.errors]


def test_retractions_kept_below_the_highest_level(tmp_path: Path) -> None:
    """Two overlapping level-0 files compacted to level 4 (level 5 holds older data): the
    delete survives (it must still hide the level-5 row); a full compaction drops it."""
    table = pk_table(str(tmp_path / "wh"), bucket="1", **{
        "num-sorted-run.compaction-trigger": "2", "num-levels": "6", "write-only": "true"})
    big = list(range(2000))
    w = table.new_write("u")
    w.write_arrow(rows(big, [f"x{i}" for i in big]))
    table.new_commit("u").commit(w.prepare_commit(), 1)
    assert table.compact() is not None  # everything on level 5
    for k, (ids, kinds) in enumerate([([1, 2], ["-D", "+I"]), ([2, 3], ["+U", "-D"])]):
        w = table.new_write("u")
        w.write_arrow(rows(ids, ["y", "y"], kinds=kinds), row_kind_column="_k")
        table.new_commit("u").commit(w.prepare_commit(), 2 + k)
    sid = table.compact(strategy="minor")
    assert sid is not None
    files = live_bucket_files(table.manifest_io, table.latest_snapshot())[(
        next(iter(live_bucket_files(table.manifest_io, table.latest_snapshot()))))][1]
    by_level = {f.level: f for f in files}
    assert sorted(by_level) == [4, 5]
    assert by_level[4].delete_row_count == 2  # -D 1 and -D 3 kept
    assert by_level[4].file_source is FileSource.COMPACT
    expected = [i for i in big if i not in (1, 3)]
    assert [r["id"] for r in read_sorted(table)] == expected
    table.compact()
    files = next(iter(live_bucket_files(table.manifest_io, table.latest_snapshot()).values()))[1]
    assert [(f.level, f.delete_row_count) for f in files] == [(5, 0)]
    assert [r["id"] for r in read_sorted(table)] == expected
    check_files(table)


def test_compact_bucket_is_pure_and_picklable(tmp_path: Path) -> None:
    import pickle

    table = pk_table(str(tmp_path / "wh"), bucket="1", **{"write-only": "true"})
    for i in range(3):
        w = table.new_write("u")
        w.write_arrow(rows([1, 2, 3], [f"v{i}"] * 3))
        table.new_commit("u").commit(w.prepare_commit(), i)
    part = next(iter(live_bucket_files(table.manifest_io, table.latest_snapshot())))[0]
    clone = pickle.loads(pickle.dumps(table))
    snap = table.latest_snapshot()
    assert compact_bucket(clone, part, 0, snapshot=snap) is None  # 3 runs < trigger 5
    msg = compact_bucket(clone, part, 0, full=True, snapshot=snap.id if snap else None)
    assert msg is not None
    msg = pickle.loads(pickle.dumps(msg))
    assert len(msg.compact_before) == 3 and len(msg.compact_after) == 1
    assert msg.compact_after[0].level == 5
    assert not msg.new_files and not msg.compact_changelog
    # nothing was committed yet: the table is unchanged
    assert table.latest_snapshot() == snap
    [sid] = table.new_commit("c").commit([msg])
    assert table.snapshot_manager.snapshot(sid).commit_kind is CommitKind.COMPACT
    assert [r["v"] for r in read_sorted(table)] == ["v2"] * 3


def test_upgrade_without_rewrite_and_abort_keeps_upgraded_files(tmp_path: Path) -> None:
    """A big file alone is upgraded (DELETE level 0 + ADD level 5 of the same file); aborting
    such a message must not delete the live file."""
    table = pk_table(str(tmp_path / "wh"), bucket="1", **{
        "write-only": "true", "target-file-size": "1 kb"})
    w = table.new_write("u")
    w.write_arrow(rows(list(range(500)), ["v"] * 500))
    table.new_commit("u").commit(w.prepare_commit(), 1)
    [(part, bucket)] = list(live_bucket_files(table.manifest_io, table.latest_snapshot()))
    msg = compact_bucket(table, part, bucket, full=True)
    assert msg is not None
    assert [f.file_name for f in msg.compact_after] == [f.file_name for f in msg.compact_before]
    assert {f.level for f in msg.compact_after} == {5}  # (the writer rolled several files)
    assert msg.written_files() == ()
    table.new_commit("c").abort([msg])
    assert len(read_sorted(table)) == 500  # the file is still there
    table.new_commit("c").commit([msg])
    assert len(read_sorted(table)) == 500
    assert fsck(table).ok


def test_string_keys_and_sequence_field(tmp_path: Path) -> None:
    """Composite string keys and a user sequence field: compaction merges like the reader."""
    from paimon_core.catalog import FileSystemCatalog
    from paimon_core.schema_builder import Schema

    cat = FileSystemCatalog(str(tmp_path / "wh"))
    table = cat.create_table("db.s", Schema.of(
        [("a", "STRING NOT NULL"), ("b", "STRING NOT NULL"), ("ts", "BIGINT"), ("v", "STRING")],
        primary_keys=["a", "b"], options={"bucket": "1", "sequence.field": "ts",
                                          "write-only": "true"}))
    batches = [
        [("x", "é", 5, "new"), ("x", "a", 1, "old"), ("y", "", 3, "y3")],
        [("x", "é", 2, "stale"), ("x", "a", 7, "newer"), ("z", "\U0001f600", 1, "emoji")],
    ]
    for i, b in enumerate(batches):
        w = table.new_write("u")
        w.write_arrow(pa.table({"a": [r[0] for r in b], "b": [r[1] for r in b],
                                "ts": pa.array([r[2] for r in b], pa.int64()),
                                "v": [r[3] for r in b]}))
        table.new_commit("u").commit(w.prepare_commit(), i)
    before = sorted(table.to_arrow().to_pylist(), key=lambda r: (r["a"], r["b"]))
    assert {(r["a"], r["b"]): r["v"] for r in before}[("x", "é")] == "new"
    assert table.compact() is not None
    after = sorted(table.to_arrow().to_pylist(), key=lambda r: (r["a"], r["b"]))
    assert after == before
    files = next(iter(live_bucket_files(table.manifest_io, table.latest_snapshot()).values()))[1]
    assert [f.level for f in files] == [5]


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_first_row_compaction(tmp_path: Path, producer: str) -> None:
    """first-row tables (readers skip level 0): every compaction pushes level 0 up; a key
    already on a level above the output is left out (``FirstRowMergeFunctionWrapper``); with
    the lookup producer the new first rows are +I."""
    table = pk_table(str(tmp_path / "wh"), bucket="1", **{
        "merge-engine": "first-row", "write-only": "true", "changelog-producer": producer})
    for i, (ids, v) in enumerate([([1, 2], "a"), ([2, 3], "b")]):
        w = table.new_write("u")
        w.write_arrow(rows(ids, [v] * len(ids)))
        table.new_commit("u").commit(w.prepare_commit(), i)
    assert read_sorted(table) == []  # level 0 is invisible
    sid = table.compact(strategy="minor")
    assert sid is not None
    assert [(r["id"], r["v"]) for r in read_sorted(table)] == [(1, "a"), (2, "a"), (3, "b")]
    w = table.new_write("u")
    w.write_arrow(rows([1, 4], ["c", "c"]))
    table.new_commit("u").commit(w.prepare_commit(), 5)
    sid2 = table.compact(strategy="minor")
    assert sid2 is not None
    got = [(r["id"], r["v"]) for r in read_sorted(table)]
    assert got == [(1, "a"), (2, "a"), (3, "b"), (4, "c")]
    files = next(iter(live_bucket_files(table.manifest_io, table.latest_snapshot()).values()))[1]
    assert sorted(f.level for f in files) == [4, 5]  # key 1 was not written again
    assert sum(f.row_count for f in files) == 4
    if producer == "lookup":
        first = sorted((r["_kind"], r["id"], r["v"])
                       for r in table.read_unmerged_changes(sid - 1, sid).to_pylist())
        assert first == [("+I", 1, "a"), ("+I", 2, "a"), ("+I", 3, "b")]
        second = table.read_unmerged_changes(sid2 - 1, sid2).to_pylist()
        assert [(r["_kind"], r["id"]) for r in second] == [("+I", 4)]
    else:
        assert table.snapshot_manager.snapshot(sid2).changelog_manifest_list is None
    assert fsck(table).ok
