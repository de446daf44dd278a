"""Orphan removal: what is an orphan, the age guard, metadata and containment guards, races."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import CorruptMetadataError, StorageError
from paimon_core.fsck_orphans import referenced_names
from paimon_core.io.file_io import FileIO, FileStatus
from paimon_core.orphans import DEFAULT_OLDER_THAN_MILLIS, remove_orphan_files
from paimon_core.table import FileStoreTable
from tests.maintenance.helpers import (
    FAR_FUTURE,
    append_table,
    assert_clean,
    pk_table,
    rows,
    state,
    tree,
    upgrade_level,
    write,
)

DAY_AGO = time.time() - 2 * 86400


def _age(*paths: Path, when: float = DAY_AGO) -> None:
    for p in paths:
        os.utime(p, (when, when))


def _age_all(root: Path) -> None:
    for dirpath, _, files in os.walk(root):
        _age(*(Path(dirpath) / f for f in files))


def _uncommitted(t: FileStoreTable, ids: range) -> list[Path]:
    """A write whose commit never happened (a crashed job): its data files."""
    w = t.new_write("crashed")
    w.write_arrow(pa.table({"pt": ["a"] * len(ids), "id": pa.array(list(ids), pa.int32()),
                            "v": ["lost"] * len(ids)}))
    msgs = w.prepare_commit()
    w.close()
    out = []
    for m in msgs:
        for f in m.new_files:
            out += list(Path(t.path).rglob(f.file_name))
    return out


@pytest.fixture
def table(tmp_path: Path) -> FileStoreTable:
    t = pk_table(str(tmp_path / "wh"))
    write(t, range(0, 10), "v1")
    write(t, range(5, 15), "v2", "b")
    write(t, range(0, 3), "v3", overwrite=True)
    t.create_tag("t1", 1)
    ConsumerManager(t.file_io, t.path).reset_consumer("c", Consumer(2))
    return t


def test_removes_exactly_the_old_orphans(table: FileStoreTable) -> None:
    root = Path(table.path)
    lost = _uncommitted(table, range(100, 104))
    stray_manifest = root / "manifest" / "manifest-stray-0"
    stray_manifest.write_bytes(b"x" * 10)
    tmp = root / "snapshot" / ".snapshot-9.1b2c.tmp"
    tmp.write_bytes(b"{}")
    young = root / "pt=a" / "bucket-0" / "data-young.parquet"
    young.write_bytes(b"y")
    _age_all(root)
    _age(young, when=time.time())
    before = state(table)
    expected = sorted(str(p) for p in [*lost, stray_manifest, tmp])
    dry = remove_orphan_files(table, dry_run=True)
    assert list(dry.paths) == expected and dry.dry_run
    assert dry.bytes == sum(p.stat().st_size for p in [*lost, stray_manifest, tmp])
    assert all(p.exists() for p in [*lost, stray_manifest, tmp])
    done = remove_orphan_files(table)
    assert done.paths == dry.paths and done.bytes == dry.bytes and not done.dry_run
    assert not any(p.exists() for p in [*lost, stray_manifest, tmp])
    assert young.exists()
    assert state(table) == before
    assert_clean(table)
    assert remove_orphan_files(table).paths == ()


def test_default_cutoff_is_one_day(table: FileStoreTable) -> None:
    lost = _uncommitted(table, range(100, 102))
    now = int(time.time() * 1000)
    r = remove_orphan_files(table, dry_run=True, now_millis=now)
    assert r.older_than_millis == now - DEFAULT_OLDER_THAN_MILLIS == now - 86_400_000
    assert r.paths == ()  # written just now
    _age(*lost, when=time.time() - 86_400 + 60)  # 23 h 59 min old
    assert remove_orphan_files(table, dry_run=True).paths == ()
    _age(*lost, when=time.time() - 86_400 - 60)
    assert len(remove_orphan_files(table, dry_run=True).paths) == len(lost)


def test_metadata_and_outside_files_are_never_removed(table: FileStoreTable,
                                                      tmp_path: Path) -> None:
    root = Path(table.path)
    other = append_table(str(tmp_path / "wh"), name="db.other")
    write(other, [1], "x")
    outside = tmp_path / "wh" / "stray-in-warehouse"
    outside.write_text("x")
    db_level = tmp_path / "wh" / "db.db" / "stray-in-db"
    db_level.write_text("x")
    unknown_meta = root / "snapshot" / "snapshot-garbage"
    unknown_meta.write_text("x")
    old_consumer_tmp = root / "consumer" / ".consumer-c.55.tmp"
    old_consumer_tmp.write_text("{}")
    (root / "README").write_text("not paimon's")          # the table root itself
    (root / "notes").mkdir()                               # an unknown directory
    (root / "notes" / "x.parquet").write_text("x")
    (root / "pt=a" / "loose.parquet").write_text("x")      # not in a bucket directory
    _age_all(tmp_path / "wh")
    everything_else = tree(FileIO(str(tmp_path)), str(tmp_path / "wh"))
    r = remove_orphan_files(table, FAR_FUTURE)
    assert list(r.paths) == [str(old_consumer_tmp)]
    after = tree(FileIO(str(tmp_path)), str(tmp_path / "wh"))
    assert set(everything_else) - set(after) == {
        str(old_consumer_tmp.relative_to(tmp_path / "wh"))}
    for p in ("schema/schema-0", "snapshot/snapshot-1", "snapshot/LATEST", "tag/tag-t1",
              "consumer/consumer-c", "snapshot/snapshot-garbage"):
        assert (root / p).exists(), p
    assert rows(other) == [("a", 1, "x")]


def test_incomplete_snapshot_listing_deletes_nothing(table: FileStoreTable) -> None:
    _uncommitted(table, range(100, 102))
    _age_all(Path(table.path))

    class EmptySnapshotDir(FileIO):
        def list_status(self, directory: str) -> list[FileStatus]:
            if directory.rstrip("/").endswith("/snapshot"):
                return []  # a transiently empty listing
            return super().list_status(directory)

    t = FileSystemCatalog(str(Path(table.path).parents[1])).get_table("db.pk")
    t.file_io = EmptySnapshotDir(t.file_io.root)
    before = tree(table.file_io, table.path)
    with pytest.raises(StorageError, match="listing"):
        remove_orphan_files(t, FAR_FUTURE)
    assert tree(table.file_io, table.path) == before


def test_transiently_empty_tag_listing_hides_no_tag(table: FileStoreTable) -> None:
    ConsumerManager(table.file_io, table.path).delete_consumer("c")
    assert table.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE).expired_ids == (
        1, 2)
    tag = table.snapshot_manager.tag("t1")
    only_tag = [Path(table.path) / "manifest" / n
                for n in (tag.base_manifest_list, tag.delta_manifest_list)]
    assert all(p.exists() for p in only_tag)
    calls: list[str] = []

    class Glitch(FileIO):
        def list_status(self, directory: str) -> list[FileStatus]:
            if directory.rstrip("/").endswith("/tag"):
                calls.append(directory)
                if len(calls) == 1:
                    return []
            return super().list_status(directory)

    t = FileSystemCatalog(str(Path(table.path).parents[1])).get_table("db.pk")
    t.file_io = Glitch(t.file_io.root)
    before = rows(table, tag="t1")
    remove_orphan_files(t, FAR_FUTURE)
    assert len(calls) >= 2
    assert all(p.exists() for p in only_tag)
    assert rows(table, tag="t1") == before
    assert_clean(table)


def test_snapshot_committed_while_listing_protects_its_files(tmp_path: Path) -> None:
    """The first pass sees snapshot 1 only; while the candidates are listed a level upgrade
    (snapshot 2) re-adds an old file and snapshot 1 expires: the old file is then referenced
    only by snapshot 2, which the second pass must visit."""
    t = pk_table(str(tmp_path / "wh"))
    write(t, range(0, 4), "v1")
    _age_all(Path(t.path))
    fired: list[bool] = []

    class Racing(FileIO):
        def list_status(self, directory: str) -> list[FileStatus]:
            if directory.rstrip("/") == t.path and not fired:
                fired.append(True)
                upgrade_level(t)
                t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
                # and the manifests of snapshot 1 that 2 no longer needs are gone
            return super().list_status(directory)

    racing = FileSystemCatalog(str(tmp_path / "wh")).get_table("db.pk")
    racing.file_io = Racing(racing.file_io.root)
    before = rows(t)
    remove_orphan_files(racing, FAR_FUTURE)
    assert fired
    assert rows(t) == before
    assert_clean(t)


def test_interrupted_expiry_blocks_until_rerun(table: FileStoreTable) -> None:
    snap = table.snapshot_manager.snapshot(1)
    write(table, range(0, 3), "v4", overwrite=True)
    # an expiry killed after deleting snapshot 1's manifest list, before its snapshot file
    (Path(table.path) / "manifest" / snap.delta_manifest_list).unlink()
    with pytest.raises(CorruptMetadataError, match="expiry"):
        remove_orphan_files(table, FAR_FUTURE)
    ConsumerManager(table.file_io, table.path).delete_consumer("c")
    table.delete_tag("t1")
    table.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    remove_orphan_files(table, FAR_FUTURE)
    assert_clean(table)


def test_tag_whose_changelog_list_was_expired_by_java(tmp_path: Path) -> None:
    t = pk_table(str(tmp_path / "wh"), **{"changelog-producer": "input"})
    write(t, range(0, 4), "v1")
    write(t, range(0, 4), "v2")
    t.create_tag("t", 1)
    tag = t.snapshot_manager.tag("t")
    assert tag.changelog_manifest_list
    # Java's expiry deletes a tagged snapshot's changelog list (ours keeps it)
    assert t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE).expired_ids == (1,)
    (Path(t.path) / "manifest" / tag.changelog_manifest_list).unlink()
    names = referenced_names(t)
    assert tag.base_manifest_list in names and tag.delta_manifest_list in names
    before = rows(t, tag="t")
    remove_orphan_files(t, FAR_FUTURE)
    assert rows(t, tag="t") == before


def test_s3(s3_root: tuple[str, dict[str, str]]) -> None:
    root, opts = s3_root
    t = append_table(root, storage=opts)
    write(t, range(0, 4), "v1")
    write(t, range(4, 8), "v2", overwrite=True)
    # an uncommitted write on S3: its files exist, nothing references them
    w = t.new_write("crashed")
    w.write_arrow(pa.table({"pt": ["a"], "id": pa.array([9], pa.int32()), "v": ["lost"]}))
    msgs = w.prepare_commit()
    w.close()
    names = {f.file_name for m in msgs for f in m.new_files}
    before = t.to_arrow().num_rows
    cutoff = int(time.time() * 1000) + 120_000  # moto's clock: everything is older
    r = remove_orphan_files(t, cutoff)
    removed = {p.rsplit("/", 1)[-1] for p in r.paths}
    assert names <= removed
    assert t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE).expired_ids == (1,)
    assert remove_orphan_files(t, cutoff).paths == ()
    assert t.to_arrow().num_rows == before
    assert_clean(t)
