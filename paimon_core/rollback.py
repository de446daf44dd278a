"""Rolling a table back to a snapshot or a tag: ``Table.rollbackTo`` of Paimon 0.9
(``AbstractFileStoreTable.rollbackTo(long | String)`` with ``org.apache.paimon.table
.RollbackHelper.cleanLargerThan``).

What goes, for a target snapshot ``T`` (a retained snapshot, or a tag's snapshot):

* every tag of a snapshot after ``T`` (its file);
* every snapshot after ``T`` (its file), newest first;
* then every file those snapshots and tags referenced that nothing retained references any
  more: data and changelog files (with their extra files), manifests, manifest lists, index
  manifests and index files, statistics files. "Retained" is decided by name, by the same
  collector orphan cleaning uses (:func:`paimon_core.fsck_orphans.referenced_names`), over
  the table as it is after the metadata went (every retained snapshot, tag and changelog).

Rolling back to a *tag* whose snapshot has expired (Java's second case) removes every
snapshot (all are after the tag), then publishes the tag's JSON as ``snapshot-<T>`` and sets
``EARLIEST`` to ``T``. A snapshot id that has expired (below ``EARLIEST``) is refused with
:class:`~paimon_core.errors.SnapshotExpiredError`, one that never existed with
:class:`~paimon_core.errors.SnapshotNotExistError`; nothing is changed then.

**Order and crash safety.** Pointers go before what they point at: tag files first, then
snapshot files newest first (the remaining snapshots stay a contiguous run from ``EARLIEST``:
a kill leaves a readable table that is part way back), then the ``LATEST`` hint, and the files
last (a kill leaves only orphans, which ``remove_orphan_files`` reclaims). Running the same
rollback again after a kill finishes it. (Java deletes the data files of the newer snapshots
before their tags: a kill in between leaves tags naming deleted files; here the tags go
first.)

**Deviations from Java**, all keeping more, never less: files are compared against every
retained reference (Java deletes the ADD entries of the newer deltas: a level upgrade re-ADDs
a file the target still holds); files outside the table directory (external paths) are kept;
empty directories are kept. Consumers are left as they are (as Java): a consumer that had read
past ``T`` resumes at its recorded snapshot id. A table with decoupled changelog files after
``T`` (``changelog/``) is refused with :class:`~paimon_core.errors.UnsupportedError`.

Rolling back while another writer commits is not safe (as in Java): stop the writers first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from paimon_core.errors import (
    FileNotFoundInTableError,
    SnapshotExpiredError,
    SnapshotNotExistError,
    UnsupportedError,
)
from paimon_core.fsck_orphans import referenced_names
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import CHANGELOG_PREFIX, TableLayout
from paimon_core.snapshot_manager import EARLIEST_HINT, LATEST_HINT, SnapshotManager
from paimon_core.spec.index_manifest import decode_index_manifest
from paimon_core.spec.manifest import decode_manifest
from paimon_core.spec.manifest_list import decode_manifest_list
from paimon_core.spec.snapshot import Snapshot
from paimon_core.table import FileStoreTable
from paimon_core.tags import TagManager

__all__ = ["RollbackResult", "rollback_to"]


@dataclass(frozen=True)
class RollbackResult:
    """The outcome of :func:`rollback_to`.

    Attributes:
        snapshot_id: the snapshot the table is at now.
        removed_snapshots: the ids of the snapshots removed (newest first).
        removed_tags: the names of the tags removed.
        deleted_files: data, changelog, manifest, index and statistics files deleted.
    """

    snapshot_id: int
    removed_snapshots: tuple[int, ...]
    removed_tags: tuple[str, ...]
    deleted_files: int


def _plain(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


class _Candidates:
    """Paths of every file the removed snapshots and tags reference, by file name."""

    def __init__(self, file_io: FileIO, layout: TableLayout) -> None:
        self.file_io = file_io
        self.layout = layout
        self.paths: dict[str, str] = {}  # name -> path
        self._lists: set[str] = set()
        self._manifests: set[str] = set()

    def _add(self, directory: str, name: str | None) -> None:
        if name and _plain(name):
            self.paths.setdefault(name, join(directory, name))

    def _read(self, name: str) -> bytes | None:
        try:
            return self.file_io.read_bytes(join(self.layout.manifest_dir, name))
        except FileNotFoundInTableError:
            return None  # gone already (an interrupted rollback or expiry): nothing to add

    def _visit_list(self, name: str | None) -> None:
        if not name or not _plain(name) or name in self._lists:
            return
        self._lists.add(name)
        self._add(self.layout.manifest_dir, name)
        data = self._read(name)
        if data is None:
            return
        for meta in decode_manifest_list(data, join(self.layout.manifest_dir, name)):
            if meta.file_name in self._manifests or not _plain(meta.file_name):
                continue
            self._manifests.add(meta.file_name)
            self._add(self.layout.manifest_dir, meta.file_name)
            mdata = self._read(meta.file_name)
            if mdata is None:
                continue
            for e in decode_manifest(mdata, join(self.layout.manifest_dir, meta.file_name)):
                if e.file.external_path:
                    continue  # outside the table: kept
                bucket_dir = self.layout.bucket_dir(e.partition, e.bucket)
                self._add(bucket_dir, e.file.file_name)
                for extra in e.file.extra_files:
                    self._add(bucket_dir, extra)

    def visit(self, snap: Snapshot) -> None:
        for name in (snap.base_manifest_list, snap.delta_manifest_list,
                     snap.changelog_manifest_list):
            self._visit_list(name)
        if snap.index_manifest and _plain(snap.index_manifest):
            self._add(self.layout.manifest_dir, snap.index_manifest)
            data = self._read(snap.index_manifest)
            if data is not None:
                path = join(self.layout.manifest_dir, snap.index_manifest)
                for ie in decode_index_manifest(data, path):
                    if not ie.external_path:
                        self._add(self.layout.index_dir, ie.file_name)
        if snap.statistics:
            self._add(self.layout.statistics_dir, snap.statistics)


def _target(snapshots: SnapshotManager, tags: TagManager, snapshot_id: int | None,
            tag: str | None) -> tuple[Snapshot, str | None]:
    """The target snapshot, and the tag file to restore it from when it has expired."""
    if (snapshot_id is None) == (tag is None):
        raise ValueError("rollback_to needs exactly one of snapshot_id and tag")
    if tag is not None:
        snap = tags.get(tag)  # TagNotExistError
        exists = snapshots.snapshot_exists(snap.id) and not snapshots.below_expiry_fence(snap.id)
        return snap, None if exists else tags.tag_path(tag)
    assert snapshot_id is not None
    if snapshots.below_expiry_fence(snapshot_id):
        raise SnapshotExpiredError(
            f"cannot roll back to snapshot {snapshot_id}: it has expired (earliest is "
            f"{snapshots.earliest_snapshot_id()}); roll back to a tag of it instead")
    try:
        return snapshots.snapshot(snapshot_id), None  # SnapshotExpiredError / NotExist
    except SnapshotExpiredError as e:
        raise SnapshotExpiredError(f"cannot roll back: {e}") from e
    except SnapshotNotExistError as e:
        raise SnapshotNotExistError(f"cannot roll back to snapshot {snapshot_id}: {e}") from e


def _newer_changelogs(file_io: FileIO, layout: TableLayout, after: int) -> list[str]:
    out = []
    for name in file_io.list_names(layout.changelog_dir):
        rest = name[len(CHANGELOG_PREFIX):] if name.startswith(CHANGELOG_PREFIX) else ""
        if rest.isdigit() and int(rest) > after:
            out.append(name)
    return out


def rollback_to(table: FileStoreTable, *, snapshot_id: int | None = None,
                tag: str | None = None) -> RollbackResult:
    """Roll ``table`` back to ``snapshot_id`` or to the snapshot of ``tag`` (exactly one);
    see the module docs. Front door: :meth:`FileStoreTable.rollback_to`.

    Returns:
        A :class:`RollbackResult`.

    Raises:
        SnapshotExpiredError: ``snapshot_id`` has expired (roll back to a tag of it).
        SnapshotNotExistError: ``snapshot_id`` does not exist.
        TagNotExistError: no tag ``tag``.
        UnsupportedError: decoupled changelog files after the target exist.
        CorruptMetadataError: metadata of a retained snapshot or tag cannot be read (nothing
            is deleted then, beyond the snapshot and tag files already removed).
    """
    file_io, table_path = table.file_io, table.path
    snapshots = SnapshotManager(file_io, table_path)
    tags = TagManager(file_io, table_path)
    layout = table.latest_context().layout
    target, restore_from = _target(snapshots, tags, snapshot_id, tag)
    if _newer_changelogs(file_io, layout, target.id):
        raise UnsupportedError(
            f"cannot roll back to snapshot {target.id}: the table keeps decoupled changelog "
            "files after it (changelog/), which rollback does not clean")
    latest = snapshots.latest_snapshot_id() or 0
    newer = [i for i in range(latest, target.id, -1) if snapshots.snapshot_exists(i)]
    newer_tags = [(name, sid) for name, sid in tags.list() if sid > target.id]

    # what the removed snapshots and tags reference, read before their files go
    candidates = _Candidates(file_io, layout)
    for name, _ in newer_tags:
        candidates.visit(tags.get(name))
    for sid in newer:
        candidates.visit(snapshots.snapshot(sid))

    # pointers first: tags, then snapshots newest first, then the restored snapshot and hints
    for name, _ in newer_tags:
        file_io.delete(tags.tag_path(name))
    for sid in newer:
        file_io.delete(snapshots.snapshot_path(sid))
    if restore_from is not None:
        file_io.try_create(snapshots.snapshot_path(target.id), file_io.read_bytes(restore_from))
        file_io.write_bytes(join(snapshots.snapshot_dir, EARLIEST_HINT), str(target.id).encode())
    file_io.write_bytes(join(snapshots.snapshot_dir, LATEST_HINT), str(target.id).encode())

    # then the files nothing retained references any more
    kept = referenced_names(table)
    deleted = _delete(file_io, table_path,
                      (p for n, p in candidates.paths.items() if n not in kept))
    return RollbackResult(target.id, tuple(newer), tuple(n for n, _ in newer_tags), deleted)


def _delete(file_io: FileIO, table_path: str, paths: Iterable[str]) -> int:
    prefix = table_path.rstrip("/") + "/"
    n = 0
    for path in paths:
        rest = path[len(prefix):] if path.startswith(prefix) else ""
        if not rest or any(p in ("", ".", "..") for p in rest.split("/")):
            continue  # only ever under the table directory
        if file_io.delete(path):
            n += 1
    return n
