"""Listing orphan files: files under a table that no snapshot, tag or changelog references.

Mirrors the "used files" side of ``org.apache.paimon.operation.OrphanFilesClean`` (0.9):
references are collected by *file name* from every snapshot, tag and decoupled-changelog file
of the table and of its branches (branches share the table's data and manifest directories):
manifest lists, manifests, index manifests and index files, statistics files, data files with
their extra files, changelog files. Every file in the directories ``OrphanFilesClean`` lists
(``manifest/``, ``index/``, ``statistics/`` and the bucket directories ``[k=v/...]bucket-N/``)
whose name is not referenced and whose modification time is before the cutoff is an orphan;
so are leftover hidden temp files of atomic writes (``.<name>.<uuid>.tmp``) in the metadata
directories (``schema/``, ``snapshot/``, ``tag/``, ``changelog/``, ``consumer/``,
``branch/``). Files anywhere else (the table root itself, unknown directories) are never
listed.

This module only lists. When metadata that a live snapshot or tag needs cannot be read, the
referenced set is unknown, so it raises instead of listing (a later deletion must never hit a
live file). Races and glitches it guards against:

* snapshots committed (or tags created) while the files are listed: the snapshot, tag and
  changelog directories are listed again after the candidates, until no unvisited file shows
  up (at least twice each time, and every file any listing showed counts: a transiently
  empty listing of ``tag/`` does not hide a tag);
* a snapshot expired while it is read (its manifests vanish): skipped when its own file is
  gone by then (it references nothing any more), an error while it still exists;
* a transiently empty or incomplete listing of ``snapshot/``: when the ``LATEST`` hint names a
  snapshot file that exists but was not listed, listing fails with :class:`StorageError`;
* tags and changelog files whose changelog manifest list was removed by a (Java) snapshot
  expiry, and decoupled changelogs whose base/delta lists are gone: tolerated, as Java does.
"""

from __future__ import annotations

from collections.abc import Iterator

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError, StorageError
from paimon_core.io.file_io import FileIO, FileStatus, join
from paimon_core.layout import (
    BRANCH_DIR,
    BUCKET_DIR_PREFIX,
    CHANGELOG_DIR,
    CHANGELOG_PREFIX,
    CONSUMER_DIR,
    INDEX_DIR,
    MANIFEST_DIR,
    SCHEMA_DIR,
    SNAPSHOT_DIR,
    STATISTICS_DIR,
    TAG_DIR,
    TableLayout,
)
from paimon_core.snapshot_manager import LATEST_HINT
from paimon_core.spec.index_manifest import decode_index_manifest
from paimon_core.spec.manifest import decode_manifest
from paimon_core.spec.manifest_list import decode_manifest_list
from paimon_core.spec.snapshot import Snapshot, decode_snapshot
from paimon_core.table import FileStoreTable

__all__ = [
    "METADATA_DIRS",
    "ReferencedFiles",
    "is_temp_file",
    "list_orphans",
    "orphan_statuses",
    "referenced_names",
]

#: Top-level directories of a table that hold metadata JSON, never data or manifests.
METADATA_DIRS = frozenset({SCHEMA_DIR, SNAPSHOT_DIR, TAG_DIR, CHANGELOG_DIR, CONSUMER_DIR,
                           BRANCH_DIR})

#: Top-level directories of a table that hold manifests, index and statistics files.
_FILE_DIRS = frozenset({MANIFEST_DIR, INDEX_DIR, STATISTICS_DIR})

_SNAPSHOT_LIKE = ((SNAPSHOT_DIR, "snapshot-"), (TAG_DIR, "tag-"),
                  (CHANGELOG_DIR, CHANGELOG_PREFIX))
#: Listing rounds after which a table that keeps committing is taken as it is (snapshots
#: published later only reference files that were live before them or are too young).
_MAX_ROUNDS = 10


def _roots(file_io: FileIO, table_path: str) -> list[str]:
    roots = [table_path]
    for st in file_io.list_status(TableLayout(table_path).branch_dir):
        name = st.path.rsplit("/", 1)[-1]
        if st.is_dir and name.startswith("branch-"):
            roots.append(st.path)
    return roots


def _snapshot_files(file_io: FileIO, root: str) -> Iterator[tuple[str, str]]:
    """(directory kind, path) of every snapshot, tag and changelog file under ``root``."""
    for directory, prefix in _SNAPSHOT_LIKE:
        d = join(root, directory)
        for name in file_io.list_names(d):
            if name.startswith(prefix) and not name.startswith("."):
                if directory != "tag" and not name[len(prefix):].isdigit():
                    continue
                yield directory, join(d, name)


class _Missing(Exception):
    """A metadata file a snapshot-like file references does not exist."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(path)
        self.path = path
        self.what = what


class ReferencedFiles:
    """The names of every file referenced by the table's snapshots, tags and changelogs (and
    its branches'), collected incrementally: :meth:`refresh` visits only snapshot-like files
    not seen before (tag files are re-read: a tag may be re-created)."""

    def __init__(self, table: FileStoreTable) -> None:
        self.table = table
        self.file_io = table.file_io
        self.manifest_dir = table.layout.manifest_dir
        self.names: set[str] = set()
        self.snapshots_seen = 0
        self._visited: set[str] = set()
        self._tags: dict[str, bytes] = {}
        self._lists: set[str] = set()
        self._manifests: set[str] = set()
        self._index: set[str] = set()

    def refresh(self) -> None:
        """List the snapshot-like files until a listing shows nothing new; visit the new.

        Raises:
            CorruptMetadataError: a live snapshot or tag references a missing or undecodable
                file.
            StorageError: the listing of ``snapshot/`` misses the snapshot ``LATEST`` names.
        """
        for rounds in range(_MAX_ROUNDS):
            new = False
            for root in _roots(self.file_io, self.table.path):
                for kind, path in _snapshot_files(self.file_io, root):
                    new |= self._visit_path(kind, path)
            if not new and rounds > 0:
                break  # two listings at least: one glitch cannot hide a tag
        self._check_latest()

    def _check_latest(self) -> None:
        for root in _roots(self.file_io, self.table.path):
            sdir = TableLayout(root).snapshot_dir
            try:
                text = self.file_io.read_text(join(sdir, LATEST_HINT)).strip()
            except (FileNotFoundInTableError, StorageError):
                continue
            if not text.isdigit() or int(text) <= 0:
                continue
            path = join(sdir, f"snapshot-{int(text)}")
            if path not in self._visited and self.file_io.exists(path):
                raise StorageError(
                    sdir, f"the listing of {sdir} does not show {path}, which exists (LATEST "
                    "names it): the listing is incomplete, so the referenced files are unknown")

    def _visit_path(self, kind: str, path: str) -> bool:
        if kind != "tag" and path in self._visited:
            return False
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundInTableError:
            return False  # expired or deleted while listing: references nothing any more
        if kind == "tag":
            if self._tags.get(path) == data:
                return False
            self._tags[path] = data
        snap = decode_snapshot(data, path)
        try:
            self._visit(snap, kind)
        except _Missing as e:
            if kind == "snapshot" and not self.file_io.exists(path):
                return True  # expired while we read it
            raise CorruptMetadataError(
                e.path, f"{e.what} referenced by {path} is missing; the set of referenced "
                "files is unknown (an interrupted snapshot expiry? run it again)") from None
        self._visited.add(path)
        if kind == "snapshot":
            self.snapshots_seen += 1
        return True

    def _read(self, name: str, what: str) -> bytes:
        path = join(self.manifest_dir, name)
        try:
            return self.file_io.read_bytes(path)
        except FileNotFoundInTableError:
            raise _Missing(path, what) from None

    def _visit_list(self, name: str, tolerate_missing: bool) -> None:
        if name in self._lists:
            return
        try:
            data = self._read(name, "manifest list")
        except _Missing:
            if tolerate_missing:
                return
            raise
        metas = decode_manifest_list(data, join(self.manifest_dir, name))
        complete = True
        for meta in metas:
            if meta.file_name in self._manifests:
                continue
            try:
                mdata = self._read(meta.file_name, "manifest")
            except _Missing:
                if tolerate_missing:
                    complete = False
                    continue
                raise
            path = join(self.manifest_dir, meta.file_name)
            entries = decode_manifest(mdata, path)
            self.names.add(meta.file_name)
            self._manifests.add(meta.file_name)
            for e in entries:
                self.names.add(e.file.file_name)
                self.names.update(e.file.extra_files)
                if e.file.external_path:
                    self.names.add(e.file.external_path.rsplit("/", 1)[-1])
        self.names.add(name)
        if complete:
            self._lists.add(name)

    def _visit(self, snap: Snapshot, kind: str) -> None:
        # a changelog file's base/delta lists may be gone (decoupled changelog, Java's
        # ChangelogDeletion); a snapshot expiry (Java's) deletes a tagged snapshot's
        # changelog list
        data_missing_ok = kind == "changelog"
        self.names.update(n for n in (snap.base_manifest_list, snap.delta_manifest_list,
                                      snap.changelog_manifest_list) if n)
        self._visit_list(snap.base_manifest_list, data_missing_ok)
        self._visit_list(snap.delta_manifest_list, data_missing_ok)
        if snap.changelog_manifest_list:
            self._visit_list(snap.changelog_manifest_list, kind != "snapshot")
        if snap.index_manifest and snap.index_manifest not in self._index:
            self.names.add(snap.index_manifest)
            try:
                data = self._read(snap.index_manifest, "index manifest")
            except _Missing:
                if kind != "changelog":
                    raise
            else:
                path = join(self.manifest_dir, snap.index_manifest)
                for ie in decode_index_manifest(data, path):
                    self.names.add(ie.file_name)
                self._index.add(snap.index_manifest)
        if snap.statistics:
            self.names.add(snap.statistics)


def referenced_names(table: FileStoreTable) -> set[str]:
    """Names of every file referenced by a snapshot, tag or changelog of the table (and of its
    branches).

    Raises:
        CorruptMetadataError: a live snapshot or tag references a metadata file that is
            missing or cannot be decoded.
        StorageError: the snapshot listing is incomplete (see the module docs).
    """
    refs = ReferencedFiles(table)
    refs.refresh()
    return refs.names


def _walk(file_io: FileIO, directory: str) -> Iterator[FileStatus]:
    for st in file_io.list_status(directory):
        if st.is_dir:
            yield from _walk(file_io, st.path)
        else:
            yield st


def is_temp_file(name: str) -> bool:
    """A hidden temp file of an atomic write (``.<name>.<uuid>.tmp``)."""
    return name.startswith(".") and name.endswith(".tmp")


def _data_files(file_io: FileIO, directory: str) -> Iterator[FileStatus]:
    """Files of the bucket directories under ``directory`` (partition directories are
    ``k=v``; a file directly in a partition directory is nobody's business)."""
    in_bucket = directory.rsplit("/", 1)[-1].startswith(BUCKET_DIR_PREFIX)
    for st in file_io.list_status(directory):
        name = st.path.rsplit("/", 1)[-1]
        if st.is_dir:
            if "=" in name or name.startswith(BUCKET_DIR_PREFIX):
                yield from _data_files(file_io, st.path)
        elif in_bucket:
            yield st


def _candidates(file_io: FileIO, table_path: str, older_than_millis: int) -> list[FileStatus]:
    """What ``OrphanFilesClean`` lists (``manifest/``, ``index/``, ``statistics/`` and the
    bucket directories), plus hidden temp files of the metadata directories."""
    out = []
    for st in file_io.list_status(table_path):
        top = st.path.rsplit("/", 1)[-1]
        if not st.is_dir:
            continue  # nothing Paimon writes lives there
        if top in METADATA_DIRS:
            candidates: Iterator[FileStatus] = (
                s for s in _walk(file_io, st.path) if is_temp_file(s.path.rsplit("/", 1)[-1]))
        elif top in _FILE_DIRS:
            candidates = _walk(file_io, st.path)
        elif "=" in top or top.startswith(BUCKET_DIR_PREFIX):
            candidates = _data_files(file_io, st.path)
        else:
            continue  # not a directory of this format
        for c in candidates:
            if c.mtime_millis is not None and c.mtime_millis < older_than_millis:
                out.append(c)
    return out


def orphan_statuses(table: FileStoreTable, older_than_millis: int) -> list[FileStatus]:
    """The orphans with their sizes, by path. The referenced set is collected before the
    candidates are listed and completed after (snapshots and tags published meanwhile).

    Raises:
        CorruptMetadataError / StorageError: see :func:`referenced_names`.
    """
    refs = ReferencedFiles(table)
    refs.refresh()
    candidates = _candidates(table.file_io, table.path, older_than_millis)
    refs.refresh()
    out = [c for c in candidates if c.path.rsplit("/", 1)[-1] not in refs.names]
    return sorted(out, key=lambda s: s.path)


def list_orphans(table: FileStoreTable, older_than_millis: int) -> list[str]:
    """See :func:`paimon_core.fsck.orphan_files`."""
    return [s.path for s in orphan_statuses(table, older_than_millis)]
