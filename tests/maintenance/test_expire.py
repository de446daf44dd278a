"""Snapshot expiry (spec §10): the range, what is deleted (exactly), what is protected."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import CorruptMetadataError, SchemaError, UnsupportedError
from paimon_core.expire import INT_MAX, ExpireConfig, ExpireSnapshots, _Tally, expire_end
from paimon_core.fsck import fsck, orphan_files
from paimon_core.io.file_io import FileIO, join
from paimon_core.orphans import remove_orphan_files
from paimon_core.schema_change import SetOption
from paimon_core.spec.file_entries import live_files
from paimon_core.table import FileStoreTable
from tests.maintenance.helpers import (
    FAR_FUTURE,
    append_table,
    assert_clean,
    compact_append,
    pk_table,
    referenced_data_files,
    rows,
    set_snapshot_times,
    set_statistics,
    state,
    tree,
    upgrade_level,
    write,
)


def _now() -> int:
    return int(time.time() * 1000) + 60_000


# ---------------------------------------------------------------------------------------------
# the range (ExpireSnapshotsImpl.expire), pure


def _times(missing: tuple[int, ...] = ()) -> Any:
    """Snapshot i was committed at i seconds; ``missing`` ids do not exist."""
    return lambda sid: None if sid in missing else sid * 1000


ALL_OLD = FAR_FUTURE  # every snapshot is older than this cutoff
ALL_NEW = 0  # every snapshot is newer than this cutoff

# (latest, earliest, retain_min, retain_max, max_deletes, older_than, consumer, missing) -> end
RANGE_CASES = [
    # num-retained.min = 10 keeps the last 10 of 10
    ((10, 1, 10, INT_MAX, 10, ALL_OLD, None, ()), 1),
    # 20 snapshots, keep 10: expire 1..10
    ((20, 1, 10, INT_MAX, 10, ALL_OLD, None, ()), 11),
    # expire.limit 5 caps one run at E + 5
    ((20, 1, 10, INT_MAX, 5, ALL_OLD, None, ()), 6),
    ((20, 7, 10, INT_MAX, 5, ALL_OLD, None, ()), 11),
    # time-retained: ids >= 6 are younger than 5.5 s
    ((20, 1, 10, INT_MAX, 10, 5500, None, ()), 6),
    ((20, 1, 1, INT_MAX, 100, 5500, None, ()), 6),
    # num-retained.max forces 1..8 out whatever their age; the time check starts at 9
    ((20, 1, 10, 12, 10, 5500, None, ()), 9),
    ((20, 1, 1, 5, 100, ALL_NEW, None, ()), 16),
    # ... but never beyond the limit
    ((20, 1, 1, 5, 10, ALL_NEW, None, ()), 11),
    # all young, no max: nothing
    ((20, 1, 1, INT_MAX, 100, ALL_NEW, None, ()), 1),
    # a consumer at 4 keeps 4.. (even against num-retained.max)
    ((20, 1, 1, INT_MAX, 100, ALL_OLD, 4, ()), 4),
    ((20, 1, 1, 2, 100, ALL_OLD, 4, ()), 4),
    ((20, 1, 1, INT_MAX, 100, ALL_OLD, 25, ()), 20),
    ((20, 5, 1, INT_MAX, 100, ALL_OLD, 3, ()), 3),  # end <= earliest: nothing
    # retain_min 1: everything but the latest
    ((5, 1, 1, INT_MAX, 10, ALL_OLD, None, ()), 5),
    ((5, 5, 1, INT_MAX, 10, ALL_OLD, None, ()), 5),
    # a missing snapshot is skipped by the time check
    ((10, 1, 1, INT_MAX, 10, 2500, None, (3,)), 4),
    ((10, 1, 1, INT_MAX, 10, 2500, None, (2, 3, 4)), 5),
    # max_deletes 0: nothing
    ((10, 1, 1, INT_MAX, 0, ALL_OLD, None, ()), 1),
    # later earliest with a limit relative to it
    ((30, 12, 3, INT_MAX, 10, ALL_OLD, None, ()), 22),
    ((30, 12, 3, INT_MAX, 10, 15500, None, ()), 16),
]


@pytest.mark.parametrize(("args", "expected"), RANGE_CASES)
def test_expire_end(args: tuple[Any, ...], expected: int) -> None:
    latest, earliest, rmin, rmax, limit, older, consumer, missing = args
    got = expire_end(latest, earliest, retain_min=rmin, retain_max=rmax, max_deletes=limit,
                     older_than_millis=older, min_consumer_next=consumer,
                     time_millis=_times(missing))
    assert got == expected


# ---------------------------------------------------------------------------------------------
# the range on a real table (12 snapshots committed at 1 s, 2 s, ...)


@pytest.fixture(scope="module")
def twelve(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("twelve") / "wh"
    t = append_table(str(wh))
    for i in range(12):
        write(t, [i], f"v{i}", "ab"[i % 2])
    set_snapshot_times(t, {i: i * 1000 for i in range(1, 13)})
    return wh


def _copy(src: Path, dst: Path, name: str = "db.ap") -> FileStoreTable:
    shutil.copytree(src, dst)
    return FileSystemCatalog(str(dst)).get_table(name)


# (config kwargs, consumer next, expected expired ids); the clock is 20 s
TABLE_CASES = [
    ({"retain_min": 10}, None, [1, 2]),
    ({"retain_min": 2, "max_deletes": 4}, None, [1, 2, 3, 4]),
    ({"retain_min": 2, "time_retained_millis": 14_500}, None, [1, 2, 3, 4, 5]),
    ({"retain_min": 2, "retain_max": 4, "time_retained_millis": 20_000}, None,
     [1, 2, 3, 4, 5, 6, 7, 8]),
    ({"retain_min": 1, "time_retained_millis": 0}, 4, [1, 2, 3]),
    ({"retain_min": 1, "retain_max": 2, "time_retained_millis": 0}, 4, [1, 2, 3]),
    ({"retain_min": 12}, None, []),
    ({"retain_min": 1, "time_retained_millis": 0, "max_deletes": 100}, None, list(range(1, 12))),
]


@pytest.mark.parametrize(("kw", "consumer", "expected"), TABLE_CASES)
def test_range_on_table(twelve: Path, tmp_path: Path, kw: dict[str, int],
                        consumer: int | None, expected: list[int]) -> None:
    t = _copy(twelve, tmp_path / "wh")
    before = state(t)
    if consumer is not None:
        ConsumerManager(t.file_io, t.path).reset_consumer("c", Consumer(consumer))
    cfg = {"retain_min": 10, "retain_max": INT_MAX, "time_retained_millis": 0,
           "max_deletes": 10, **kw}
    exp = ExpireSnapshots(t.file_io, t.path, t.schema, config=ExpireConfig(**cfg),
                          now_millis=20_000)
    result = exp.expire()
    assert list(result.expired_ids) == expected
    first = expected[-1] + 1 if expected else 1
    assert t.snapshot_manager.list_snapshot_ids() == list(range(first, 13))
    assert (Path(t.path) / "snapshot" / "EARLIEST").read_text() == str(first)
    assert result.earliest == first
    after = state(t)
    assert after == {k: v for k, v in before.items() if int(k[1:]) >= first}
    assert_clean(t)
    assert orphan_files(t, _now()) == []


def test_limit_counts_from_the_new_earliest(twelve: Path, tmp_path: Path) -> None:
    t = _copy(twelve, tmp_path / "wh")
    cfg = ExpireConfig(retain_min=2, time_retained_millis=0, max_deletes=4)
    runs = [ExpireSnapshots(t.file_io, t.path, t.schema, config=cfg, now_millis=20_000)
            .expire().expired_ids for _ in range(4)]
    assert runs == [(1, 2, 3, 4), (5, 6, 7, 8), (9, 10), ()]


def test_nothing_to_expire_writes_earliest_once(twelve: Path, tmp_path: Path) -> None:
    t = _copy(twelve, tmp_path / "wh")
    hint = Path(t.path) / "snapshot" / "EARLIEST"
    assert not hint.exists()
    r = t.expire_snapshots(retain_min=12)
    assert r.expired_ids == () and r.deleted_files == 0 and r.earliest == 1
    assert hint.read_text() == "1"
    hint.write_text("0001")  # a valid fence is not rewritten (Java: only when it is missing)
    assert t.expire_snapshots(retain_min=12).expired_ids == ()
    assert hint.read_text() == "0001"


def test_snapshots_below_the_fence_are_finished(twelve: Path, tmp_path: Path) -> None:
    """EARLIEST naming an existing snapshot is the expiry fence (raised before expiry deletes
    anything below it): snapshots still below it are what an interrupted expiry left, and the
    next run finishes them, whatever the retention says."""
    t = _copy(twelve, tmp_path / "wh")
    hint = Path(t.path) / "snapshot" / "EARLIEST"
    hint.write_text("7")
    assert t.snapshot_manager.earliest_snapshot_id() == 7
    r = t.expire_snapshots(retain_min=12)
    assert r.expired_ids == (1, 2, 3, 4, 5, 6) and r.earliest == 7
    assert t.snapshot_manager.list_snapshot_ids() == list(range(7, 13))
    assert hint.read_text() == "7"
    assert fsck(t).ok


# ---------------------------------------------------------------------------------------------
# what is deleted: exactly the files nothing retained references


def _exact_check(t: FileStoreTable, before_tree: dict[str, int], result: Any,
                 first_retained: int, orphans_before: list[str] | None = None) -> None:
    """Everything gone is accounted for, nothing referenced is gone, nothing unreferenced
    remains (but the orphans that were there before)."""
    after_tree = tree(t.file_io, t.path)
    gone = set(before_tree) - set(after_tree)
    assert not set(after_tree) - set(before_tree) - {"snapshot/EARLIEST"}
    assert result.deleted_files == len(gone), sorted(gone)
    assert result.bytes_freed == sum(before_tree[p] for p in gone)
    assert result.data_files + result.changelog_files + result.metadata_files == len(gone)
    snaps = [p for p in gone if p.startswith("snapshot/")]
    assert sorted(snaps) == sorted(f"snapshot/snapshot-{i}" for i in result.expired_ids)
    live = set()
    for sid in t.snapshot_manager.list_snapshot_ids():
        live |= referenced_data_files(t, sid)
    for name, _ in t.list_tags():
        live |= referenced_data_files_of_tag(t, name)
    orphans = orphan_files(t, _now())
    assert orphans == (orphans_before or [])
    on_disk = {p.rsplit("/", 1)[-1] for p in after_tree if "/bucket-" in p}
    changelog = {n for n in on_disk if n.startswith("changelog-")}
    assert on_disk - changelog - {p.rsplit("/", 1)[-1] for p in orphans} == live
    assert_clean(t)
    assert t.snapshot_manager.earliest_snapshot_id() == first_retained


def referenced_data_files_of_tag(t: FileStoreTable, name: str) -> set[str]:
    snap = t.snapshot_manager.tag(name)
    entries = [e for m in t.manifest_io.data_manifests(snap)
               for e in t.manifest_io.manifest(m.file_name)]
    return {e.file.file_name for e in live_files(entries)}


def test_append_overwrite_and_compaction(tmp_path: Path) -> None:
    t = append_table(str(tmp_path / "wh"), **{"manifest.merge-min-count": "3"})
    write(t, range(0, 4), "a1", "a")
    write(t, range(4, 8), "b1", "b")
    write(t, range(8, 12), "a2", "a")
    write(t, range(0, 3), "b2", "b", overwrite=True)   # 4: b files of 2 deleted
    compact_append(t, "a")                              # 5: a files of 1, 3 rewritten
    write(t, range(20, 22), "a3", "a")                  # 6
    write(t, range(30, 32), "c1", "c")                  # 7
    before = state(t)
    before_tree = tree(t.file_io, t.path)
    deleted_b = referenced_data_files(t, 2) - referenced_data_files(t, 4)
    deleted_a = referenced_data_files(t, 4) - referenced_data_files(t, 5)
    assert len(deleted_b) == 1 and len(deleted_a) == 2
    result = t.expire_snapshots(retain_min=2, older_than_millis=FAR_FUTURE)
    assert result.expired_ids == (1, 2, 3, 4, 5)
    assert result.data_files == 3
    remaining = {p.rsplit("/", 1)[-1] for p in tree(t.file_io, t.path)}
    assert not (deleted_a | deleted_b) & remaining
    assert state(t) == {k: v for k, v in before.items() if k in ("s6", "s7")}
    _exact_check(t, before_tree, result, 6)


def test_pk_merged_manifests_level_upgrade_and_changelog(tmp_path: Path) -> None:
    t = pk_table(str(tmp_path / "wh"), **{"manifest.merge-min-count": "2",
                                           "changelog-producer": "input"})
    write(t, range(0, 10), "v1")
    write(t, range(5, 15), "v2", "b")
    upgrade_level(t)                                  # 3: a level-0 file moves to level 5
    write(t, range(0, 5), "v3", delete=True)          # 4: deletes
    write(t, range(0, 3), "v4", "b", overwrite=True)  # 5: partition b replaced
    write(t, range(100, 103), "v5")                   # 6
    before = state(t)
    before_tree = tree(t.file_io, t.path)
    orphans_before = orphan_files(t, _now())  # the overwrite's changelog is not committed
    changelogs = {s: _changelog_files(t, s) for s in range(1, 7)}
    assert all(changelogs[s] for s in (1, 2, 4, 6)) and not changelogs[3] | changelogs[5]
    ever = set().union(*(referenced_data_files(t, s) for s in range(1, 6)))
    overwritten = referenced_data_files(t, 4) - referenced_data_files(t, 5)
    assert ever - referenced_data_files(t, 6) == overwritten and len(overwritten) == 2
    upgraded = [e for e in _live_entries(t, 3) if e.file.level == 5]
    assert len(upgraded) == 1
    result = t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert result.expired_ids == (1, 2, 3, 4, 5)
    assert state(t) == {"s6": before["s6"]}
    # the upgraded file survives (DELETE + ADD of the same file in one delta), b's files go
    assert result.data_files == 2
    assert upgraded[0].file.file_name in referenced_data_files(t, 6)
    # changelog files of 1..5 are gone, 6's stays
    after = {p.rsplit("/", 1)[-1] for p in tree(t.file_io, t.path)}
    gone = changelogs[1] | changelogs[2] | changelogs[4]
    assert not gone & after and changelogs[6] <= after
    assert result.changelog_files == len(gone)
    _exact_check(t, before_tree, result, 6, orphans_before)


def _changelog_files(t: FileStoreTable, sid: int) -> set[str]:
    snap = t.snapshot_manager.snapshot(sid)
    if not snap.changelog_manifest_list:
        return set()
    return {e.file.file_name for m in t.manifest_io.manifest_list(snap.changelog_manifest_list)
            for e in t.manifest_io.manifest(m.file_name)}


def _live_entries(t: FileStoreTable, sid: int) -> list[Any]:
    snap = t.snapshot_manager.snapshot(sid)
    return live_files([e for m in t.manifest_io.data_manifests(snap)
                       for e in t.manifest_io.manifest(m.file_name)])


def test_idempotent_rerun(tmp_path: Path) -> None:
    t = append_table(str(tmp_path / "wh"))
    for i in range(6):
        write(t, [i], f"x{i}", overwrite=i % 2 == 1)
    first = t.expire_snapshots(retain_min=2, older_than_millis=FAR_FUTURE)
    assert first.expired_ids == (1, 2, 3, 4)
    snapshot_tree = tree(t.file_io, t.path)
    again = t.expire_snapshots(retain_min=2, older_than_millis=FAR_FUTURE)
    assert again.expired_ids == () and again.deleted_files == 0 and again.bytes_freed == 0
    assert tree(t.file_io, t.path) == snapshot_tree
    assert_clean(t)


def test_add_only_deltas_are_read_only_after_a_delete(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An APPEND's delta (its list says no manifest deletes a file) frees nothing: it is not
    read until a delta in the range deletes files; after one, it is read, since a later commit
    that adds a deleted file again (here: the first file re-committed under another user) keeps
    that file alive for the retained snapshot."""
    from paimon_core.commit_message import CommitMessage
    from paimon_core.expire_metadata import ExpiryMetadata

    t = append_table(str(tmp_path / "wh"))
    write(t, range(0, 4), "a1", "a")                       # 1
    write(t, range(4, 8), "b1", "b")                       # 2: add-only
    (split,) = t.new_read_builder().with_filter("pt = 'a'").new_scan().plan().splits
    (orig,) = split.files
    compact_append(t, "a")                                 # 3: deletes orig
    t.new_commit("again").commit([CommitMessage(
        split.partition, split.bucket, split.total_buckets, new_files=(orig,),
        table_path=t.path, schema_id=orig.schema_id)])    # 4: add-only, re-adds orig
    write(t, range(8, 10), "c1", "c")                      # 5: add-only
    sm = t.snapshot_manager
    delta_manifests = {sid: {m.file_name for m in t.manifest_io.manifest_list(
        sm.snapshot(sid).delta_manifest_list)} for sid in range(1, 6)}
    read: list[str] = []
    real = ExpiryMetadata.manifest

    def spy(self: ExpiryMetadata, name: str) -> Any:
        read.append(name)
        return real(self, name)

    monkeypatch.setattr(ExpiryMetadata, "manifest", spy)
    before = rows(t)
    result = t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert result.expired_ids == (1, 2, 3, 4)
    assert orig.file_name in referenced_data_files(t, 5)
    assert rows(t) == before  # orig is still there (a missing data file fails the read)
    # deltas 2..5 decide what 1..4 free: 2 is add-only before any delete (not read), 3 deletes,
    # 4 and 5 come after a delete (read: they may add a deleted file again)
    assert not set(read) & delta_manifests[2]
    assert delta_manifests[3] <= set(read) and delta_manifests[4] <= set(read)
    assert_clean(t)


# ---------------------------------------------------------------------------------------------
# tags


def test_tags_protect_their_files_and_outlive_their_snapshot(tmp_path: Path) -> None:
    t = pk_table(str(tmp_path / "wh"), **{"changelog-producer": "input"})
    write(t, range(0, 6), "v1")
    write(t, range(0, 6), "v2")
    t.create_tag("t2", 2)
    write(t, range(0, 6), "v3", overwrite=True)
    write(t, range(0, 6), "v4")
    t.create_tag("t4", 4)
    write(t, range(0, 6), "v5", overwrite=True)
    write(t, range(0, 2), "v6")
    before = state(t)
    before_tree = tree(t.file_io, t.path)
    orphans_before = orphan_files(t, _now())  # the overwrites' changelog is not committed
    changelog_1 = _changelog_files(t, 1)
    result = t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert result.expired_ids == (1, 2, 3, 4, 5)
    # every overwritten file is held by the nearest earlier tag; only 1's changelog goes
    assert result.data_files == 0 and result.changelog_files == len(changelog_1) > 0
    assert t.snapshot_manager.list_snapshot_ids() == [6]
    # both tags read as before, though their snapshots are gone
    assert rows(t, tag="t2") == before["tag:t2"] and rows(t, tag="t4") == before["tag:t4"]
    # v1 and v3 went (overwritten, untagged); v2 and v4 stay
    kept = {v for _, _, v in rows(t, tag="t2") + rows(t, tag="t4") + rows(t)}
    assert kept == {"v2", "v4", "v6", "v5"}
    # the tagged snapshots keep their changelog (the tag file names its list)
    t2 = t.snapshot_manager.tag("t2")
    assert t2.changelog_manifest_list
    assert (Path(t.path) / "manifest" / t2.changelog_manifest_list).exists()
    _exact_check(t, before_tree, result, 6, orphans_before)

    # deleting a tag makes what only it referenced orphans: its manifest lists and changelog
    # (its data files stay named by the DELETE entries of later manifests, as in Java, until a
    # manifest compaction drops them); orphan cleaning reclaims them and nothing live
    t2_own = {t2.base_manifest_list, t2.delta_manifest_list, t2.changelog_manifest_list}
    t2_own |= _changelog_files_of(t, t2)
    t.delete_tag("t2")
    assert t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE).expired_ids == ()
    removed = remove_orphan_files(t, FAR_FUTURE)
    removed_names = {p.rsplit("/", 1)[-1] for p in removed.paths}
    assert t2_own <= removed_names
    assert set(orphans_before) <= set(removed.paths)
    live = referenced_data_files_of_tag(t, "t4") | referenced_data_files(t, 6)
    assert not live & removed_names
    assert rows(t, tag="t4") == before["tag:t4"]
    assert_clean(t)
    assert orphan_files(t, _now()) == []


def _changelog_files_of(t: FileStoreTable, snap: Any) -> set[str]:
    return {e.file.file_name for m in t.manifest_io.manifest_list(snap.changelog_manifest_list)
            for e in t.manifest_io.manifest(m.file_name)}


def test_tag_inside_the_range_keeps_shared_manifests(tmp_path: Path) -> None:
    t = append_table(str(tmp_path / "wh"), **{"manifest.merge-min-count": "2"})
    for i in range(8):
        write(t, [i], f"x{i}", "ab"[i % 2], overwrite=i in (3, 6))
        if i == 2:
            t.create_tag("mid", 3)
    before = state(t)
    t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE, max_deletes=3)
    t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE, max_deletes=3)
    t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE, max_deletes=3)
    assert t.snapshot_manager.list_snapshot_ids() == [8]
    assert state(t) == {"s8": before["s8"], "tag:mid": before["tag:mid"]}
    assert_clean(t)
    assert orphan_files(t, _now()) == []


# ---------------------------------------------------------------------------------------------
# consumers


def test_consumers_hold_snapshots_and_expire_by_age(tmp_path: Path) -> None:
    t = append_table(str(tmp_path / "wh"))
    for i in range(6):
        write(t, [i], f"x{i}")
    mgr = ConsumerManager(t.file_io, t.path)
    mgr.reset_consumer("etl", Consumer(3))
    r = t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert r.expired_ids == (1, 2) and r.expired_consumers == ()
    # the consumer can still read what it has not read
    assert t.read_unmerged_changes(2, 6).num_rows == 4
    # consumer.expiration-time: a consumer not updated for 2 h goes first (Java: before the
    # snapshot expiry, so that it does not hold it back)
    t.alter([SetOption("consumer.expiration-time", "1 h")])
    mgr.reset_consumer("fresh", Consumer(5))
    old = time.time() - 7200
    os.utime(mgr.consumer_path("etl"), (old, old))
    r = t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert r.expired_consumers == ("etl",)
    assert r.expired_ids == (3, 4)  # "fresh" holds 5
    assert mgr.consumers() == {"fresh": 5}
    assert_clean(t)


def test_consumer_created_during_expiry_is_honoured(tmp_path: Path) -> None:
    """A consumer registered while the expiry plans (after it chose its range, before it
    raised the fence and deleted anything) is honoured: the range shrinks to keep it."""
    t = append_table(str(tmp_path / "wh"))
    for i in range(6):
        write(t, [i], f"x{i}")

    class Hooked(FileIO):
        def read_bytes(self, path: str) -> bytes:
            if "/manifest/manifest-list-" in path and not ConsumerManager(
                    self, t.path).consumers():
                ConsumerManager(self, t.path).reset_consumer("late", Consumer(3))
            return super().read_bytes(path)

    fio = Hooked(t.file_io.root)
    r = ExpireSnapshots(fio, t.path, t.schema, config=ExpireConfig(retain_min=1),
                        older_than_millis=FAR_FUTURE).expire()
    assert r.expired_ids == (1, 2)
    assert t.snapshot_manager.list_snapshot_ids() == [3, 4, 5, 6]
    assert (Path(t.path) / "snapshot" / "EARLIEST").read_text() == "3"
    assert_clean(t)


# ---------------------------------------------------------------------------------------------
# statistics, errors, options, containment


def test_statistics_files(tmp_path: Path) -> None:
    t = append_table(str(tmp_path / "wh"))
    for i in range(5):
        write(t, [i], f"x{i}")
    set_statistics(t, {1: "stats-a", 2: "stats-a", 3: "stats-b", 4: "stats-b", 5: "stats-c"})
    stats = Path(t.path) / "statistics"
    t.expire_snapshots(retain_min=3, older_than_millis=FAR_FUTURE)  # 1, 2 expire; 3 keeps b
    assert sorted(p.name for p in stats.iterdir()) == ["stats-b", "stats-c"]
    t.expire_snapshots(retain_min=2, older_than_millis=FAR_FUTURE)  # 3 expires; 4 keeps b
    assert sorted(p.name for p in stats.iterdir()) == ["stats-b", "stats-c"]
    t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)  # 4 expires
    assert sorted(p.name for p in stats.iterdir()) == ["stats-c"]


def test_unreadable_protection_metadata_deletes_nothing(tmp_path: Path) -> None:
    base = tmp_path / "base"
    t = append_table(str(base / "wh"))
    for i in range(5):
        write(t, [i], f"x{i}", overwrite=i == 3)
    cases = {
        "consumer": lambda t: (Path(t.path) / "consumer").mkdir() or
        (Path(t.path) / "consumer" / "consumer-bad").write_text("{not json"),
        "tag": lambda t: (Path(t.path) / "tag").mkdir() or
        (Path(t.path) / "tag" / "tag-bad").write_text("[]"),
        "retained": lambda t: (Path(t.path) / "manifest" /
                               t.snapshot_manager.snapshot(5).delta_manifest_list).unlink(),
    }
    for name, damage in cases.items():
        c = _copy(base / "wh", tmp_path / name)
        damage(c)
        before = tree(c.file_io, c.path)
        with pytest.raises(CorruptMetadataError):
            c.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
        assert tree(c.file_io, c.path) == before, name


def test_decoupled_changelog_is_refused(tmp_path: Path) -> None:
    t = pk_table(str(tmp_path / "wh"), **{"changelog.num-retained.max": "50",
                                           "snapshot.num-retained.max": "5",
                                           "snapshot.num-retained.min": "1"})
    for i in range(3):
        write(t, [i], "x")
    before = tree(t.file_io, t.path)
    with pytest.raises(UnsupportedError, match="decoupled"):
        t.expire_snapshots(older_than_millis=FAR_FUTURE)
    assert tree(t.file_io, t.path) == before


def test_config_from_options() -> None:
    assert ExpireConfig.from_options({}) == ExpireConfig(10, INT_MAX, 3_600_000, 10, None, False)
    c = ExpireConfig.from_options({
        "snapshot.num-retained.min": "3", "snapshot.num-retained.max": "7",
        "snapshot.time-retained": "30 min", "snapshot.expire.limit": "4",
        "consumer.expiration-time": "2 d"})
    assert c == ExpireConfig(3, 7, 1_800_000, 4, 172_800_000, False)
    assert ExpireConfig.from_options({"changelog.time-retained": "2 h"}).changelog_decoupled
    assert not ExpireConfig.from_options({"changelog.time-retained": "1 h"}).changelog_decoupled
    assert ExpireConfig.from_options({"snapshot.time-retained": "1500 ms"}).time_retained_millis \
        == 1500
    for bad in ({"snapshot.num-retained.min": "0"}, {"snapshot.num-retained.min": "x"},
                {"snapshot.time-retained": "soon"},
                {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "4"}):
        with pytest.raises(SchemaError):
            ExpireConfig.from_options(bad)
    # explicit values move the other bound along; contradicting explicit values raise
    assert ExpireConfig().with_overrides(retain_max=3) == ExpireConfig(3, 3)
    assert ExpireConfig(2, 5).with_overrides(retain_min=8) == ExpireConfig(8, 8)
    assert ExpireConfig().with_overrides(max_deletes=0, time_retained_millis=5) == \
        ExpireConfig(max_deletes=0, time_retained_millis=5)
    with pytest.raises(SchemaError):
        ExpireConfig().with_overrides(retain_min=5, retain_max=4)


def test_deletes_nothing_outside_the_table(tmp_path: Path) -> None:
    t = append_table(str(tmp_path / "wh"))
    write(t, [1], "x")
    outside = tmp_path / "precious"
    outside.write_text("keep")
    sibling = tmp_path / "wh" / "db.db" / "ap2"
    sibling.mkdir(parents=True)
    (sibling / "f").write_text("keep")
    inside = Path(t.path) / "stray"
    inside.write_text("x")
    exp = ExpireSnapshots(t.file_io, t.path, t.schema)
    tally = _Tally()
    exp._delete({str(outside): None, str(sibling / "f"): None,
                 join(t.path, "..", "ap2", "f"): None, t.path + "2/x": None,
                 str(inside): None}, tally, "data")
    assert outside.exists() and (sibling / "f").exists() and not inside.exists()
    assert tally.kept == 4 and tally.data == 1 and tally.bytes == 1


def test_hostile_file_names_in_metadata_are_not_followed(tmp_path: Path) -> None:
    t = append_table(str(tmp_path / "wh"))
    write(t, [1], "x")
    write(t, [2], "y")
    snap = t.snapshot_manager.snapshot(1)
    obj = json.loads(Path(t.snapshot_manager.snapshot_path(1)).read_text())
    obj["statistics"] = "../../../precious"
    Path(t.snapshot_manager.snapshot_path(1)).write_text(json.dumps(obj))
    precious = tmp_path / "wh" / "precious"
    precious.write_text("keep")
    with pytest.raises(CorruptMetadataError, match="not a plain name"):
        t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert precious.exists()
    assert snap.id == 1
