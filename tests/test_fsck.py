"""``fsck``: clean on healthy tables, and detects each kind of injected corruption."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_core.fsck as fsck_mod
from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit.manifest_writer import ManifestWriter
from paimon_core.errors import CorruptMetadataError
from paimon_core.fsck import FindingKind, FsckReport, Severity, fsck, orphan_files
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import AddColumn
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.index_manifest import IndexManifestEntry, encode_index_manifest
from paimon_core.spec.manifest import FileKind, ManifestEntry
from paimon_core.spec.snapshot import CommitKind, Snapshot
from paimon_core.table import FileStoreTable
from tests.tables import PT_ID_V, make_table


def _write(t: FileStoreTable, ids: Sequence[int], tag: str, pt: str = "a", *,
           user: str = "u", identifier: int | None = None, overwrite: bool = False) -> int:
    w = t.new_write(user)
    cols: dict[str, Any] = {"id": pa.array(ids, pa.int32()), "v": [tag] * len(ids)}
    if "pt" in t.schema.field_names:
        cols = {"pt": [pt] * len(ids), **cols}
    table = pa.table(cols)
    for f in t.schema.fields:
        if f.name not in cols:
            table = table.append_column(f.name, pa.nulls(len(ids), pa.int64()))
    w.write_arrow(table)
    msgs = w.prepare_commit()
    w.close()
    c = t.new_commit(user)
    if overwrite:
        out = c.overwrite(msgs)
    elif identifier is None:
        out = c.commit(msgs)
    else:
        out = c.commit(msgs, identifier)
    return out[-1]


@pytest.fixture
def pk(catalog: FileSystemCatalog) -> FileStoreTable:
    """Partitioned PK table, bucket=2, 3 snapshots (keys overlap between commits)."""
    t = make_table(catalog, PT_ID_V, name="db.pk", partition_keys=["pt"],
                   primary_keys=["pt", "id"], options={"bucket": "2"})
    _write(t, range(0, 20), "s1")
    _write(t, range(10, 30), "s2", "b")
    _write(t, range(5, 15), "s3")
    return t


@pytest.fixture
def append(catalog: FileSystemCatalog) -> FileStoreTable:
    t = make_table(catalog, [("id", "INT"), ("v", "STRING")], name="db.ap")
    _write(t, range(5), "a")
    _write(t, range(5, 9), "b")
    return t


def kinds(r: FsckReport) -> set[FindingKind]:
    return {f.kind for f in r.findings}


def _live(t: FileStoreTable, sid: int | None = None) -> list[ManifestEntry]:
    snap = t.snapshot_manager.snapshot(sid or t.snapshot_manager.latest_snapshot_id() or 0)
    metas = t.manifest_io.manifest_list(snap.base_manifest_list) + t.manifest_io.manifest_list(
        snap.delta_manifest_list)
    return live_files([e for m in metas for e in t.manifest_io.manifest(m.file_name)])


def _file_path(t: FileStoreTable, e: ManifestEntry) -> Path:
    hits = list(Path(t.path).rglob(e.file.file_name))
    assert len(hits) == 1
    return hits[0]


def _publish_raw(t: FileStoreTable, entries: Sequence[ManifestEntry], *, total_delta: int = 0,
                 kind: CommitKind = CommitKind.APPEND, **snap_fields: Any) -> int:
    """A snapshot with exactly ``entries`` as its delta, bypassing every conflict check."""
    latest = t.snapshot_manager.latest_snapshot()
    assert latest is not None
    part_types = [t.schema.field(k).type for k in t.schema.partition_keys]
    w = ManifestWriter(t.file_io, t.path, part_types, dict(t.schema.options), t.schema.id)
    base = t.manifest_io.manifest_list(latest.base_manifest_list) + t.manifest_io.manifest_list(
        latest.delta_manifest_list)
    base_name, _ = w.write_manifest_list(base)
    delta_name, _ = w.write_manifest_list(w.write_manifests(list(entries)))
    fields: dict[str, Any] = dict(
        id=latest.id + 1, schema_id=t.schema.id, base_manifest_list=base_name,
        delta_manifest_list=delta_name, commit_user="raw", commit_identifier=2**63 - 1,
        commit_kind=kind, time_millis=int(time.time() * 1000), log_offsets={},
        total_record_count=(latest.total_record_count or 0) + total_delta,
        delta_record_count=total_delta, index_manifest=latest.index_manifest)
    fields.update(snap_fields)
    snap = Snapshot(**fields)
    t.file_io.write_bytes(t.snapshot_manager.snapshot_path(snap.id), snap.to_json_bytes())
    return snap.id


def _edit_snapshot(t: FileStoreTable, sid: int, **changes: Any) -> None:
    p = Path(t.snapshot_manager.snapshot_path(sid))
    obj = json.loads(p.read_text())
    obj.update(changes)
    p.write_text(json.dumps(obj))


# ---------------------------------------------------------------------------------------------
# healthy tables


def test_healthy_tables_are_clean(pk: FileStoreTable, append: FileStoreTable) -> None:
    pk.alter([AddColumn("n", "BIGINT")])
    _write(pk, range(3), "o", overwrite=True)
    pk.create_tag("t1", 2)
    for t in (pk, append):
        r = fsck(t, deep=True)
        assert r.ok, r.findings
        assert r.findings == ()
    r = fsck(pk)
    assert r.snapshot_ids == (1, 2, 3, 4) and r.tags == ("t1",)
    assert r.data_files_checked == len({e.file.file_name for s in (1, 2, 3, 4)
                                        for e in _live(pk, s)})


def test_empty_table_is_clean(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.e", Schema.of([("id", "INT")]))
    r = fsck(t, deep=True)
    assert r.ok and r.findings == () and r.snapshot_ids == ()


# ---------------------------------------------------------------------------------------------
# one test per finding kind


def test_missing_data_file(pk: FileStoreTable) -> None:
    victim = _live(pk)[0]
    _file_path(pk, victim).unlink()
    r = fsck(pk)
    assert not r.ok
    missing = r.of_kind(FindingKind.MISSING_DATA_FILE)
    assert len(missing) == 1 and missing[0].path and missing[0].path.endswith(
        victim.file.file_name)
    assert FindingKind.UNREADABLE in kinds(r)  # and the latest snapshot does not read


def test_data_file_size_mismatch(append: FileStoreTable) -> None:
    victim = _live(append)[0]
    with _file_path(append, victim).open("ab") as f:
        f.write(b"x")
    r = fsck(append)
    # (a parquet file with a byte appended also no longer reads)
    assert [f.kind for f in r.errors] == [FindingKind.DATA_FILE_SIZE_MISMATCH,
                                          FindingKind.UNREADABLE]


def test_unreadable_data_file_of_the_right_size(append: FileStoreTable) -> None:
    victim = _live(append)[0]
    p = _file_path(append, victim)
    p.write_bytes(b"\0" * p.stat().st_size)
    r = fsck(append)
    assert [f.kind for f in r.errors] == [FindingKind.UNREADABLE]
    assert "snapshot 2" in r.errors[0].message


def test_missing_manifest(pk: FileStoreTable) -> None:
    snap = pk.snapshot_manager.snapshot(2)
    name = pk.manifest_io.manifest_list(snap.delta_manifest_list)[0].file_name
    (Path(pk.path) / "manifest" / name).unlink()
    r = fsck(pk)
    found = r.of_kind(FindingKind.MISSING_MANIFEST)
    assert len(found) == 1 and found[0].snapshot_id == 2 and name in found[0].message


def test_missing_manifest_list(pk: FileStoreTable) -> None:
    snap = pk.snapshot_manager.snapshot(3)
    (Path(pk.path) / "manifest" / snap.delta_manifest_list).unlink()
    r = fsck(pk)
    assert FindingKind.MISSING_MANIFEST_LIST in kinds(r)
    assert r.of_kind(FindingKind.MISSING_MANIFEST_LIST)[0].snapshot_id == 3


def test_corrupt_manifest(pk: FileStoreTable) -> None:
    snap = pk.snapshot_manager.snapshot(1)
    name = pk.manifest_io.manifest_list(snap.delta_manifest_list)[0].file_name
    (Path(pk.path) / "manifest" / name).write_bytes(b"Obj\x01garbage")
    r = fsck(pk)
    found = r.of_kind(FindingKind.CORRUPT_METADATA)
    assert len(found) == 1 and found[0].path and found[0].path.endswith(name)


def test_duplicate_add(pk: FileStoreTable) -> None:
    victim = _live(pk)[0]
    sid = _publish_raw(pk, [victim], total_delta=victim.file.row_count)
    r = fsck(pk)
    dup = r.of_kind(FindingKind.DUPLICATE_ADD)
    assert len(dup) == 1 and dup[0].snapshot_id == sid
    assert victim.file.file_name in dup[0].message


def test_delete_of_an_unknown_file(pk: FileStoreTable) -> None:
    e = _live(pk)[0]
    ghost = replace(e, kind=FileKind.DELETE, file=replace(e.file, file_name="data-ghost.parquet"))
    sid = _publish_raw(pk, [ghost])
    r = fsck(pk)
    found = r.of_kind(FindingKind.UNMATCHED_DELETE)
    assert len(found) == 1 and found[0].snapshot_id == sid and "data-ghost" in found[0].message


def test_gap_in_snapshot_ids(pk: FileStoreTable) -> None:
    (Path(pk.path) / "snapshot" / "snapshot-2").unlink()
    r = fsck(pk)
    gap = r.of_kind(FindingKind.SNAPSHOT_GAP)
    assert len(gap) == 1 and "missing 2" in gap[0].message


def test_snapshot_id_mismatch_and_garbage_snapshot(pk: FileStoreTable) -> None:
    _edit_snapshot(pk, 2, id=7)
    (Path(pk.path) / "snapshot" / "snapshot-3").write_text("{not json")
    r = fsck(pk)
    assert r.of_kind(FindingKind.SNAPSHOT_ID_MISMATCH)[0].snapshot_id == 2
    assert r.of_kind(FindingKind.SNAPSHOT_UNREADABLE)[0].snapshot_id == 3


def test_overlapping_level_1_files(pk: FileStoreTable) -> None:
    # snapshots 1 and 3 both wrote keys 5..14 of partition a: "upgrade" every level-0 file of
    # one bucket to level 1 without merging them (what two racing compactions would leave)
    live = [e for e in _live(pk) if e.file.level == 0]
    by_bucket: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for e in live:
        by_bucket.setdefault((e.partition, e.bucket), []).append(e)
    files = next(g for g in by_bucket.values() if len(g) >= 2)
    entries = [replace(e, kind=FileKind.DELETE) for e in files]
    entries += [replace(e, file=replace(e.file, level=1)) for e in files]
    _publish_raw(pk, entries, kind=CommitKind.COMPACT)
    r = fsck(pk)
    assert [f.kind for f in r.errors] == [FindingKind.LEVEL_OVERLAP]
    assert r.errors[0].snapshot_id == 4


def test_single_upgraded_file_is_no_overlap(pk: FileStoreTable) -> None:
    e = _live(pk)[0]
    _publish_raw(pk, [replace(e, kind=FileKind.DELETE), replace(e, file=replace(e.file, level=1))],
                 kind=CommitKind.COMPACT)
    assert fsck(pk).ok


def test_mismatched_bucket_counts(pk: FileStoreTable) -> None:
    e = _live(pk)[0]
    src = _file_path(pk, e)
    name = f"data-{uuid.uuid4()}-0.parquet"
    shutil.copy(src, src.with_name(name))
    copy = replace(e, total_buckets=4, file=replace(e.file, file_name=name))
    _publish_raw(pk, [copy], total_delta=e.file.row_count)
    r = fsck(pk)
    found = r.of_kind(FindingKind.MIXED_BUCKET_COUNTS)
    assert len(found) == 1 and "[2, 4]" in found[0].message and "pt=a" in found[0].message


def test_wrong_total_record_count(pk: FileStoreTable) -> None:
    snap = pk.snapshot_manager.snapshot(3)
    _edit_snapshot(pk, 3, totalRecordCount=(snap.total_record_count or 0) + 1)
    r = fsck(pk)
    found = r.of_kind(FindingKind.RECORD_COUNT_MISMATCH)
    assert [f.snapshot_id for f in found] == [3] and [f.kind for f in r.errors] == [
        FindingKind.RECORD_COUNT_MISMATCH]


def test_append_rows_read_must_equal_total(append: FileStoreTable) -> None:
    _edit_snapshot(append, 1, totalRecordCount=99)
    r = fsck(append, deep=True)
    assert {f.snapshot_id for f in r.of_kind(FindingKind.RECORD_COUNT_MISMATCH)} == {1}


def test_duplicate_commit(append: FileStoreTable) -> None:
    _write(append, [1], "x", user="pipe", identifier=7)
    _write(append, [2], "y", user="pipe", identifier=8)
    # snapshots 1 and 2 are both (u, Long.MAX, APPEND): batch commits are never a finding
    assert fsck(append).ok
    _edit_snapshot(append, 4, commitIdentifier=7)
    r = fsck(append)
    found = r.of_kind(FindingKind.DUPLICATE_COMMIT)
    assert len(found) == 1 and "snapshots 3 and 4" in found[0].message


def test_missing_schema(pk: FileStoreTable) -> None:
    pk.alter([AddColumn("n", "INT")])
    _write(pk, [1], "z")
    (Path(pk.path) / "schema" / "schema-1").unlink()
    t = FileSystemCatalog(str(Path(pk.path).parents[1])).get_table("db.pk")
    r = fsck(t)
    assert r.of_kind(FindingKind.MISSING_SCHEMA)[0].snapshot_id == 4


def test_missing_index_manifest_and_index_file(append: FileStoreTable) -> None:
    _publish_raw(append, [], index_manifest="index-manifest-nope-0")
    r = fsck(append)
    assert r.of_kind(FindingKind.MISSING_INDEX_MANIFEST)[0].snapshot_id == 3
    name = f"index-manifest-{uuid.uuid4()}-0"
    entry = IndexManifestEntry(FileKind.ADD, _live(append)[0].partition, 0, "HASH",
                               "index-missing-0", 8, 2, None)
    (Path(append.path) / "manifest" / name).write_bytes(encode_index_manifest([entry]))
    _publish_raw(append, [], index_manifest=name)
    r = fsck(append)
    found = r.of_kind(FindingKind.MISSING_INDEX_FILE)
    assert len(found) == 1 and "index-missing-0" in found[0].message


def test_missing_changelog_file(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.cl", Schema.of(
        [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "input"}))
    _write(t, [1, 2], "a")
    assert fsck(t).ok
    changelog = next(Path(t.path).rglob("changelog-*.parquet"))
    changelog.unlink()
    r = fsck(t)
    found = r.of_kind(FindingKind.MISSING_DATA_FILE)
    assert len(found) == 1 and "changelog file" in found[0].message


def test_hints_are_warnings(pk: FileStoreTable) -> None:
    hint = Path(pk.path) / "snapshot" / "LATEST"
    hint.write_text("1")
    r = fsck(pk)
    assert r.ok and [f.kind for f in r.warnings] == [FindingKind.HINT_LAG]
    assert "lags" in r.warnings[0].message
    for garbage in ("abc", "", "-8", str(2**64)):
        hint.write_text(garbage)
        r = fsck(pk)
        assert r.ok and [f.kind for f in r.warnings] == [FindingKind.HINT_INVALID], garbage
    hint.write_text("9")
    (Path(pk.path) / "snapshot" / "EARLIEST").write_text("0")  # garbage: not a fence
    r = fsck(pk)
    assert r.ok and len(r.of_kind(FindingKind.HINT_LAG)) == 1
    assert len(r.of_kind(FindingKind.HINT_INVALID)) == 1
    # EARLIEST above snapshot 1 is the expiry fence: snapshot 1 lies below it (an interrupted
    # expiry's leftover, or a stray a delayed writer re-created), reported, not an error
    (Path(pk.path) / "snapshot" / "EARLIEST").write_text("2")
    r = fsck(pk)
    assert r.ok and len(r.of_kind(FindingKind.HINT_LAG)) == 1
    assert "[1]" in r.of_kind(FindingKind.STRAY_SNAPSHOT)[0].message
    assert all(f.severity is Severity.WARNING for f in r.findings)


def test_unverifiable_merge_engine_is_a_warning(pk: FileStoreTable) -> None:
    p = Path(pk.path) / "schema" / "schema-0"
    obj = json.loads(p.read_text())
    # an aggregate function this implementation cannot evaluate: fsck cannot merge the table
    obj["options"]["merge-engine"] = "aggregation"
    obj["options"]["fields.v.aggregate-function"] = "collect"
    p.write_text(json.dumps(obj))
    t = FileSystemCatalog(str(Path(pk.path).parents[1])).get_table("db.pk")
    r = fsck(t)
    assert r.ok and [f.kind for f in r.warnings] == [FindingKind.UNVERIFIABLE]


def test_tag_of_an_expired_snapshot_is_checked(pk: FileStoreTable) -> None:
    pk.create_tag("keep", 1)
    _write(pk, range(0, 20), "o", overwrite=True)  # replaces every file snapshot 1 had
    for sid in (1, 2, 3):  # expired: only the tag still references snapshot 1's files
        (Path(pk.path) / "snapshot" / f"snapshot-{sid}").unlink()
    (Path(pk.path) / "snapshot" / "EARLIEST").write_text("4")
    assert fsck(pk).ok
    tag_only = {e.file.file_name for e in _live_of_tag(pk, "keep")}
    assert tag_only and not tag_only & {e.file.file_name for e in _live(pk)}
    next(Path(pk.path).rglob(sorted(tag_only)[0])).unlink()
    r = fsck(pk)
    assert [(f.kind, f.snapshot_id) for f in r.errors] == [(FindingKind.MISSING_DATA_FILE, 1)]


def _live_of_tag(t: FileStoreTable, name: str) -> list[ManifestEntry]:
    snap = t.tag_manager().get(name)
    metas = t.manifest_io.manifest_list(snap.base_manifest_list) + t.manifest_io.manifest_list(
        snap.delta_manifest_list)
    return live_files([e for m in metas for e in t.manifest_io.manifest(m.file_name)])


# ---------------------------------------------------------------------------------------------
# speed: every manifest decoded once


def test_many_snapshots_decode_each_manifest_once(
    catalog: FileSystemCatalog, monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = catalog.create_table("db.many", Schema.of([("id", "INT"), ("v", "STRING")],
                                                  options={"manifest.merge-min-count": "10"}))
    for i in range(40):
        _write(t, [i], "x")
    calls: dict[str, int] = {}
    real = fsck_mod.decode_manifest

    def counting(data: bytes, path: str) -> Any:
        calls[path] = calls.get(path, 0) + 1
        return real(data, path)

    monkeypatch.setattr(fsck_mod, "decode_manifest", counting)
    t0 = time.monotonic()
    r = fsck(t)
    took = time.monotonic() - t0
    assert r.ok, r.findings
    assert len(r.snapshot_ids) == 40 and r.data_files_checked == 40
    assert calls and max(calls.values()) == 1
    assert took < 5, took
    # with merges every 10 manifests, some snapshots do not extend the previous sequence
    lists = [t.manifest_io.manifest_list(t.snapshot_manager.snapshot(i).base_manifest_list)
             for i in (30, 40)]
    assert len(lists[1]) < len(lists[0]) + 10


# ---------------------------------------------------------------------------------------------
# orphan files


def test_orphan_files(pk: FileStoreTable) -> None:
    now = int(time.time() * 1000) + 10_000
    assert orphan_files(pk, now) == []
    bucket_dir = _file_path(pk, _live(pk)[0]).parent
    stray = bucket_dir / "data-stray.parquet"
    stray.write_bytes(b"x")
    tmp = Path(pk.path) / "snapshot" / ".snapshot-9.abc.tmp"
    tmp.write_bytes(b"{}")
    manifest = Path(pk.path) / "manifest" / "manifest-orphan-0"
    manifest.write_bytes(b"x")
    got = orphan_files(pk, now)
    assert got == sorted(str(p) for p in (stray, tmp, manifest))
    assert orphan_files(pk, 0) == []  # nothing is older than the epoch
    # a file only a tag references is not an orphan
    pk.create_tag("t", 1)
    first = {e.file.file_name for e in _live(pk, 1)}
    _write(pk, range(0, 20), "o", overwrite=True)
    (Path(pk.path) / "snapshot" / "snapshot-1").unlink()
    got = orphan_files(pk, now)
    assert not any(Path(g).name in first for g in got)
    # unknown references: refuse rather than list live files
    snap = pk.snapshot_manager.snapshot(2)
    (Path(pk.path) / "manifest" / snap.delta_manifest_list).unlink()
    with pytest.raises(CorruptMetadataError, match="missing"):
        orphan_files(pk, now)


# ---------------------------------------------------------------------------------------------
# the same on S3 (moto_server on loopback)


@pytest.mark.s3
def test_alter_tags_fsck_and_orphans_on_s3(s3_root: tuple[str, dict[str, str]]) -> None:
    root, opts = s3_root
    cat = FileSystemCatalog(root, opts)
    t = cat.create_table("db.s3", Schema.of(
        [("pt", "STRING"), ("id", "INT"), ("v", "STRING")], partition_keys=["pt"],
        primary_keys=["pt", "id"], options={"bucket": "2"}))
    _write(t, range(6), "a")
    t.alter([AddColumn("n", "BIGINT")])
    _write(t, range(3, 9), "b", "b")
    t.create_tag("first", 1)
    assert t.list_tags() == [("first", 1)]
    assert t.to_arrow(tag="first").num_rows == 6
    r = fsck(cat.get_table("db.s3"), deep=True)
    assert r.ok and r.findings == () and r.snapshot_ids == (1, 2)
    assert orphan_files(t, int(time.time() * 1000) + 60_000) == []
    victim = _live(t)[0]
    bucket_files = [f for f in t.file_io.fs.find(t.path.split("://", 1)[1])
                    if f.endswith(victim.file.file_name)]
    assert len(bucket_files) == 1
    t.file_io.fs.rm_file(bucket_files[0])
    r = fsck(cat.get_table("db.s3"))
    assert [f.kind for f in r.errors][:1] == [FindingKind.MISSING_DATA_FILE]


def test_hints_of_an_empty_table_and_binary_garbage(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.h", Schema.of([("id", "INT")]))
    snap_dir = Path(t.path) / "snapshot"
    snap_dir.mkdir()
    (snap_dir / "LATEST").write_text("3")
    (snap_dir / "EARLIEST").write_bytes(b"\xff\xfe")
    r = fsck(t)
    assert r.ok
    assert {f.kind for f in r.warnings} == {FindingKind.HINT_LAG, FindingKind.HINT_INVALID}
    assert "there is no snapshot" in r.of_kind(FindingKind.HINT_LAG)[0].message
