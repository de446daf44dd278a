"""A commit costs what it adds (issue 28): which manifests a commit decodes, and that the
conflict checks it no longer runs for an APPEND of new files still hold where they matter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import paimon_core.manifest_io as manifest_io
from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit.manifest_concat import concat_manifests
from paimon_core.commit.manifest_merge import merge_manifests
from paimon_core.commit.manifest_writer import ManifestWriter
from paimon_core.commit_message import CommitMessage
from paimon_core.errors import CommitConflictError
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import SetOption
from paimon_core.spec.binary_row import deserialize_binary_row, serialize_binary_row
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.manifest import FileKind, ManifestEntry
from paimon_core.spec.manifest_list import ManifestFileMeta
from paimon_core.table import FileStoreTable
from paimon_core.types import parse_sql_type
from tests.commit.helpers import data_file, message

INT = parse_sql_type("INT")
# a one-entry manifest takes ~2 kB (mostly the Avro header), each entry ~50 B more
SMALL = {"manifest.target-file-size": "4 kb", "manifest.merge-min-count": "3",
         "manifest.full-compaction-threshold-size": "12 kb"}


def _ipart(i: int) -> bytes:
    return serialize_binary_row([i], [INT])


def _int_table(tmp_path: Path, **opts: str) -> FileStoreTable:
    return FileSystemCatalog(str(tmp_path)).create_table(
        "db.t", Schema.of([("pt", "INT"), ("v", "BIGINT")], partition_keys=["pt"],
                          options={**SMALL, **opts}))


def _reopen(t: FileStoreTable) -> FileStoreTable:
    """A fresh catalog: a cold manifest cache, as a commit job in a process of its own."""
    return FileSystemCatalog(str(Path(t.path).parent.parent)).get_table("db.t")


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths of the manifests decoded (cache misses) while the test runs."""
    seen: list[str] = []
    real = manifest_io.decode_manifest

    def spy(data: bytes, path: str) -> list[ManifestEntry]:
        seen.append(path)
        return real(data, path)

    monkeypatch.setattr(manifest_io, "decode_manifest", spy)
    yield seen


def _build(t: FileStoreTable, commits: int, width: int = 10, files: int = 8) -> dict[str, int]:
    """``commits`` APPENDs; commit i adds ``files`` files to each partition of
    [width*i, width*(i+1)). Returns file name -> partition."""
    model: dict[str, int] = {}
    for c in range(commits):
        msgs = []
        for p in range(width * c, width * (c + 1)):
            fs = [data_file(1) for _ in range(files)]
            model.update((f.file_name, p) for f in fs)
            msgs.append(CommitMessage(_ipart(p), 0, -1, new_files=tuple(fs), table_path=t.path,
                                      schema_id=0))
        t.new_commit("w").commit(msgs, c + 1)
    return model


def _live_names(t: FileStoreTable) -> set[str]:
    plan = t.new_planner(t.schema, None).plan(t.latest_snapshot())
    return {f.file_name for s in plan.splits for f in s.files}


def test_a_one_file_commit_decodes_a_bounded_number_of_manifests(
        tmp_path: Path, decoded: list[str]) -> None:
    t = _int_table(tmp_path)
    model = _build(t, 12)
    snap = t.latest_snapshot()
    assert snap is not None
    n_manifests = len(t.manifest_io.data_manifests(snap))
    assert n_manifests >= 8
    decoded.clear()
    f = data_file(1)
    _reopen(t).new_commit("one").commit(
        [CommitMessage(_ipart(3), 0, -1, new_files=(f,), table_path=t.path, schema_id=0)], 1)
    # no live-file read for an APPEND of new files; merging reads at most a trailing group
    # of small manifests (fewer than manifest.merge-min-count + the group reaching the target)
    assert len(decoded) <= 4, (len(decoded), n_manifests)
    model[f.file_name] = 3
    assert _live_names(_reopen(t)) == set(model)


def test_full_compaction_decodes_only_base_manifests_that_may_hold_a_deleted_file(
        tmp_path: Path) -> None:
    t = _int_table(tmp_path, **{"manifest.full-compaction-threshold-size": "1 gb"})
    model = _build(t, 10)
    snap = t.latest_snapshot()
    assert snap is not None
    metas = t.manifest_io.data_manifests(snap)
    reads: list[ManifestFileMeta] = []

    def read(m: ManifestFileMeta) -> list[ManifestEntry]:
        reads.append(m)
        return t.manifest_io.manifest(m.file_name, m.file_size)

    # a compaction in partition 25 (written by commit 3) lands after the base
    victim = next(name for name, p in model.items() if p == 25)
    entries = [e for m in metas for e in read(m)]
    victim_entry = next(e for e in entries if e.file.file_name == victim)
    after = data_file(1)
    writer = ManifestWriter(t.file_io, t.path, [INT], dict(t.schema.options), 0,
                            target_file_size=4096)
    delta = writer.write_manifests([
        ManifestEntry(FileKind.DELETE, _ipart(25), 0, -1, victim_entry.file),
        ManifestEntry(FileKind.ADD, _ipart(25), 0, -1, after)])
    base = merge_manifests(metas, read, writer, target_size=4096, min_count=3,
                           full_threshold=1 << 30)  # settle the base first (minor)
    reads.clear()
    merged = merge_manifests(base + delta, read, writer, target_size=4096, min_count=3,
                             full_threshold=1, partition_types=[INT])
    # decoded: every manifest that is not done (small, or holding the DELETE: twice, for its
    # DELETEs then its ADDs), and of the done ones (full, no DELETE) only those whose
    # partition stats include partition 25
    done = [m for m in base if m.file_size >= 4096 and not m.num_deleted_files]
    assert len(done) >= 5
    not_done = {m.file_name for m in base + delta if m not in done}
    read_done = [m for m in done if m.file_name in {r.file_name for r in reads}]
    assert not_done <= {m.file_name for m in reads}
    assert {m.file_name for m in reads} <= not_done | {m.file_name for m in read_done}
    assert 1 <= len(read_done) <= 2
    assert all(_stats_include(m, 25) for m in read_done)
    assert any(_may_hold(t, m, 25) for m in read_done)
    live = live_files(e for m in merged for e in read(m))
    expected = (set(model) - {victim}) | {after.file_name}
    assert {e.file.file_name for e in live} == expected
    assert all(m.num_deleted_files == 0 for m in merged)


def _stats_include(m: ManifestFileMeta, p: int) -> bool:
    lo = deserialize_binary_row(m.partition_stats.min_values, [INT])[0]
    hi = deserialize_binary_row(m.partition_stats.max_values, [INT])[0]
    return bool(lo <= p <= hi)


def _may_hold(t: FileStoreTable, m: ManifestFileMeta, p: int) -> bool:
    return any(e.partition == _ipart(p) for e in t.manifest_io.manifest(m.file_name))


def test_append_to_a_rescaled_partition_is_still_checked(tmp_path: Path) -> None:
    """bucket=2 files in partition b; ALTER bucket=4; an APPEND of bucket=4 files to b mixes
    two bucket counts in one partition: the schema history makes the APPEND read b."""
    t = FileSystemCatalog(str(tmp_path)).create_table(
        "db.pk", Schema.of([("pt", "STRING"), ("k", "INT"), ("v", "STRING")],
                           partition_keys=["pt"], primary_keys=["pt", "k"],
                           options={"bucket": "2"}))
    t.new_commit("w").commit([message(t.path, "b", data_file(key_range=(1, 2)),
                                      total_buckets=2)], 1)
    t.alter([SetOption("bucket", "4")])
    t = FileSystemCatalog(str(tmp_path)).get_table("db.pk")
    fresh = message(t.path, "b", data_file(key_range=(3, 4)), total_buckets=4)
    with pytest.raises(CommitConflictError, match="bucket counts"):
        t.new_commit("w4").commit([fresh], 1)
    # a partition without files of the old count takes it
    ok = message(t.path, "c", data_file(key_range=(3, 4)), total_buckets=4)
    assert t.new_commit("w4").commit([ok], 1)


def test_append_of_a_level_1_file_is_checked_for_overlap(tmp_path: Path) -> None:
    t = FileSystemCatalog(str(tmp_path)).create_table(
        "db.pk", Schema.of([("pt", "STRING"), ("k", "INT"), ("v", "STRING")],
                           partition_keys=["pt"], primary_keys=["pt", "k"],
                           options={"bucket": "2"}))
    t.new_commit("w").commit([message(t.path, "a", data_file(key_range=(0, 10), level=1),
                                      total_buckets=2)], 1)
    with pytest.raises(CommitConflictError, match="LSM conflict"):
        t.new_commit("w").commit([message(t.path, "a", data_file(key_range=(5, 20), level=1),
                                          total_buckets=2)], 2)


def test_add_only_manifests_fold_by_copying_to_what_the_writer_would_write(
        tmp_path: Path) -> None:
    """Three ADD-only manifests (INT and STRING partition fields, a NULL one, two buckets,
    two levels) folded by copying their blocks: the result decodes to their entries in order
    and its meta equals the one the writer computes for those entries."""
    types = [INT, parse_sql_type("STRING")]
    t = _int_table(tmp_path)
    writer = ManifestWriter(t.file_io, t.path, types, dict(t.schema.options), 0,
                            target_file_size=1 << 20)

    def entry(p: int, s: str | None, bucket: int, level: int) -> ManifestEntry:
        return ManifestEntry(FileKind.ADD, serialize_binary_row([p, s], types), bucket, 2,
                             data_file(1, level=level))

    groups = [[entry(5, "x", 0, 0), entry(7, None, 1, 0)],
              [entry(3, "b", 1, 1)],
              [entry(9, "a", 0, 0), entry(4, "z", 0, 1), entry(6, None, 1, 0)]]
    metas = [writer.write_manifests(g)[0] for g in groups]
    folded = concat_manifests(metas, lambda m: t.manifest_io.manifest_bytes(
        m.file_name, m.file_size), writer, types)
    assert folded is not None
    everything = [e for m in metas for e in t.manifest_io.manifest(m.file_name, m.file_size)]
    assert sorted(e.file.file_name for e in everything) == sorted(
        e.file.file_name for g in groups for e in g)
    assert t.manifest_io.manifest(folded.file_name, folded.file_size) == everything
    expected = writer.write_manifests(everything)[0]
    for name in ("num_added_files", "num_deleted_files", "partition_stats", "schema_id",
                 "min_bucket", "max_bucket", "min_level", "max_level"):
        assert getattr(folded, name) == getattr(expected, name), name
    # a manifest with a DELETE is folded by decoding (its DELETE may cancel an ADD)
    with_delete = writer.write_manifests([ManifestEntry(
        FileKind.DELETE, everything[0].partition, 0, 2, everything[0].file)])
    assert concat_manifests(metas + with_delete, lambda m: t.manifest_io.manifest_bytes(
        m.file_name, m.file_size), writer, types) is None
