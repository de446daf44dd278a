"""Listing orphan files: files under a table that no snapshot, tag or changelog references.

Mirrors the "used files" side of ``org.apache.paimon.operation.OrphanFilesClean`` (0.9):
references are collected by *file name* from every snapshot, tag and decoupled-changelog file
of the table and of its branches (branches share the table's data and manifest directories):
manifest lists, manifests, index manifests and index files, statistics files, data files with
their extra files, changelog files. Every file under the table directory, except the metadata
directories (``schema/``, ``snapshot/``, ``tag/``, ``changelog/``, ``consumer/``,
``branch/``), whose name is not referenced and whose modification time is before the cutoff,
is an orphan. Leftover hidden temp files of atomic writes (``.<name>.<uuid>.tmp``) in the
metadata directories are orphans too.

This module only lists. When any metadata cannot be read the referenced set is unknown, so it
raises instead of listing (a later deletion must never hit a live file).
"""

from __future__ import annotations

from collections.abc import Iterator

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError
from paimon_core.io.file_io import FileIO, FileStatus, join
from paimon_core.spec.index_manifest import decode_index_manifest
from paimon_core.spec.manifest import decode_manifest
from paimon_core.spec.manifest_list import decode_manifest_list
from paimon_core.spec.snapshot import Snapshot, decode_snapshot
from paimon_core.table import FileStoreTable

__all__ = ["METADATA_DIRS", "list_orphans", "referenced_names"]

#: Top-level directories of a table that hold metadata JSON, never data or manifests.
METADATA_DIRS = frozenset({"schema", "snapshot", "tag", "changelog", "consumer", "branch"})

_SNAPSHOT_LIKE = (("snapshot", "snapshot-"), ("tag", "tag-"), ("changelog", "changelog-"))


def _roots(file_io: FileIO, table_path: str) -> list[str]:
    roots = [table_path]
    for st in file_io.list_status(join(table_path, "branch")):
        name = st.path.rsplit("/", 1)[-1]
        if st.is_dir and name.startswith("branch-"):
            roots.append(st.path)
    return roots


def _snapshot_files(file_io: FileIO, root: str) -> Iterator[str]:
    for directory, prefix in _SNAPSHOT_LIKE:
        d = join(root, directory)
        for name in file_io.list_names(d):
            if name.startswith(prefix) and not name.startswith("."):
                if directory != "tag" and not name[len(prefix):].isdigit():
                    continue
                yield join(d, name)


def referenced_names(table: FileStoreTable) -> set[str]:
    """Names of every file referenced by a snapshot, tag or changelog of the table (and of its
    branches).

    Raises:
        CorruptMetadataError: a snapshot-like file or a metadata file it references cannot be
            read or is missing.
    """
    file_io = table.file_io
    manifest_dir = join(table.path, "manifest")
    used: set[str] = set()
    seen_lists: set[str] = set()
    seen_manifests: set[str] = set()

    def read(name: str, what: str) -> bytes:
        path = join(manifest_dir, name)
        try:
            return file_io.read_bytes(path)
        except FileNotFoundInTableError as e:
            raise CorruptMetadataError(
                path, f"{what} referenced by a snapshot is missing; the set of referenced "
                "files is unknown"
            ) from e

    def visit_list(name: str) -> None:
        if name in seen_lists:
            return
        seen_lists.add(name)
        used.add(name)
        for meta in decode_manifest_list(read(name, "manifest list"), join(manifest_dir, name)):
            used.add(meta.file_name)
            if meta.file_name in seen_manifests:
                continue
            seen_manifests.add(meta.file_name)
            path = join(manifest_dir, meta.file_name)
            for e in decode_manifest(read(meta.file_name, "manifest"), path):
                used.add(e.file.file_name)
                used.update(e.file.extra_files)
                if e.file.external_path:
                    used.add(e.file.external_path.rsplit("/", 1)[-1])

    def visit(snap: Snapshot) -> None:
        for name in (snap.base_manifest_list, snap.delta_manifest_list,
                     snap.changelog_manifest_list):
            if name:
                visit_list(name)
        if snap.index_manifest and snap.index_manifest not in used:
            used.add(snap.index_manifest)
            path = join(manifest_dir, snap.index_manifest)
            for ie in decode_index_manifest(read(snap.index_manifest, "index manifest"), path):
                used.add(ie.file_name)
        if snap.statistics:
            used.add(snap.statistics)

    for root in _roots(file_io, table.path):
        for path in _snapshot_files(file_io, root):
            try:
                data = file_io.read_bytes(path)
            except FileNotFoundInTableError:
                continue  # expired or deleted while listing: references nothing any more
            visit(decode_snapshot(data, path))
    return used


def _walk(file_io: FileIO, directory: str) -> Iterator[FileStatus]:
    for st in file_io.list_status(directory):
        if st.is_dir:
            yield from _walk(file_io, st.path)
        else:
            yield st


def _is_temp(name: str) -> bool:
    return name.startswith(".") and name.endswith(".tmp")


def list_orphans(table: FileStoreTable, older_than_millis: int) -> list[str]:
    """See :func:`paimon_core.fsck.orphan_files`."""
    file_io = table.file_io
    used = referenced_names(table)
    out = []
    for st in file_io.list_status(table.path):
        top = st.path.rsplit("/", 1)[-1]
        if not st.is_dir:
            candidates: Iterator[FileStatus] = iter([st])
        elif top in METADATA_DIRS:
            candidates = (s for s in _walk(file_io, st.path)
                          if _is_temp(s.path.rsplit("/", 1)[-1]))
        else:
            candidates = _walk(file_io, st.path)
        for c in candidates:
            name = c.path.rsplit("/", 1)[-1]
            if name in used or c.mtime_millis is None or c.mtime_millis >= older_than_millis:
                continue
            out.append(c.path)
    return sorted(out)
