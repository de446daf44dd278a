"""What snapshot expiry (``paimon_core.expire``) reads and where the files it names live:
manifest lists, manifests and index manifests by name (lists read once per expiry), one
snapshot's delta as ADDed / removed paths, the paths of data, extra, manifest and index files
(plain names under the table only), and the helpers that pick tags."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout
from paimon_core.spec.index_manifest import IndexManifestEntry, decode_index_manifest
from paimon_core.spec.manifest import FileKind, ManifestEntry, decode_manifest
from paimon_core.spec.manifest_list import ManifestFileMeta, decode_manifest_list
from paimon_core.spec.snapshot import Snapshot

_T = TypeVar("_T")


def plain_name(name: str) -> bool:
    """A file name read from metadata that is one path segment."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


class ExpiryMetadata:
    """Decoded manifest lists / manifests / index manifests by name; None = the file is gone
    (deleted by an earlier, interrupted or concurrent expiry). Undecodable files raise."""

    def __init__(self, file_io: FileIO, layout: TableLayout) -> None:
        self.file_io = file_io
        self.manifest_dir = layout.manifest_dir
        self._lists: dict[str, list[ManifestFileMeta] | None] = {}
        self._index: dict[str, list[IndexManifestEntry] | None] = {}

    def _bytes(self, name: str) -> bytes | None:
        if not plain_name(name):
            raise CorruptMetadataError(join(self.manifest_dir, "?"), f"bad file name {name!r}")
        try:
            return self.file_io.read_bytes(join(self.manifest_dir, name))
        except FileNotFoundInTableError:
            return None

    def manifest_list(self, name: str) -> list[ManifestFileMeta] | None:
        if name not in self._lists:
            data = self._bytes(name)
            self._lists[name] = (None if data is None
                                 else decode_manifest_list(data, join(self.manifest_dir, name)))
        return self._lists[name]

    def manifest(self, name: str) -> list[ManifestEntry] | None:
        data = self._bytes(name)
        return None if data is None else decode_manifest(data, join(self.manifest_dir, name))

    def index_manifest(self, name: str) -> list[IndexManifestEntry] | None:
        if name not in self._index:
            data = self._bytes(name)
            self._index[name] = (None if data is None
                                 else decode_index_manifest(data, join(self.manifest_dir, name)))
        return self._index[name]

    def required(self, value: list[Any] | None, name: str, owner: str) -> list[Any]:
        if value is None:
            raise CorruptMetadataError(
                join(self.manifest_dir, name),
                f"missing, but {owner} references it (expiry cannot tell what is protected)",
            )
        return value


class ExpiryPaths:
    """Where the files metadata names live (a name that is not one plain path segment is
    refused or skipped; see :func:`plain_name`)."""

    def __init__(self, table_path: str, layout: TableLayout) -> None:
        self.table_path = table_path
        self.layout = layout
        self.manifest_dir = layout.manifest_dir
        self._bucket_dirs: dict[tuple[bytes, int], str] = {}

    def child(self, directory: str, name: str) -> str:
        if not plain_name(name):
            raise CorruptMetadataError(directory, f"file name {name!r} is not a plain name")
        return join(directory, name)

    def manifest(self, name: str) -> str:
        return self.child(self.manifest_dir, name)

    def index(self, ie: IndexManifestEntry) -> str:
        if ie.external_path:
            return ie.external_path
        return self.child(self.layout.index_dir, ie.file_name)

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        hit = self._bucket_dirs.get(key)
        if hit is None:
            hit = self.layout.bucket_dir(partition, bucket)
            self._bucket_dirs[key] = hit
        return hit

    def data(self, e: ManifestEntry) -> str | None:
        if e.file.external_path:
            return e.file.external_path
        if not plain_name(e.file.file_name):
            return None
        return join(self.bucket_dir(e.partition, e.bucket), e.file.file_name)

    def extras(self, e: ManifestEntry, path: str) -> list[str]:
        directory = path.rsplit("/", 1)[0]
        return [join(directory, x) for x in e.file.extra_files if plain_name(x)]

    def inside(self, path: str) -> bool:
        """Is ``path`` under the table directory (no ``.``/``..``/empty segment)?"""
        prefix = self.table_path + "/"
        if not path.startswith(prefix):
            return False
        parts = path[len(prefix):].split("/")
        return all(p not in ("", ".", "..") for p in parts)


@dataclass
class Delta:
    """What one snapshot's delta adds, and removes for good (path -> size when known)."""

    added: set[str] = field(default_factory=set)
    deleted: dict[str, int | None] = field(default_factory=dict)



def read_delta(meta: ExpiryMetadata, paths: ExpiryPaths,
               metas: Sequence[ManifestFileMeta]) -> Delta | None:
    """A delta's ADDed paths and the paths (with sizes) it DELETEs for good (no ADD of the
    same path in the same delta: a level upgrade keeps the file); None when one of its
    manifests is gone."""
    delta = Delta()
    deleted: dict[str, ManifestEntry] = {}
    for m in metas:
        entries = meta.manifest(m.file_name)
        if entries is None:
            return None
        for e in entries:
            path = paths.data(e)
            if path is None:
                continue
            if e.kind is FileKind.ADD:
                delta.added.add(path)
            else:
                deleted[path] = e
    for path, e in deleted.items():
        if path in delta.added:
            continue
        delta.deleted[path] = e.file.file_size
        for extra in paths.extras(e, path):
            delta.deleted[extra] = None
    return delta


def read_again_if_corrupt(read: Callable[[], _T]) -> _T:
    """Java overwrites consumer (and some tag) files in place: a reader can catch one empty or
    half-written. Read again a few times (``Consumer.fromPath`` retries 5 times, 100 ms apart)
    before taking the file as corrupt."""
    for attempt in range(5):
        try:
            return read()
        except CorruptMetadataError:
            if attempt == 4:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")  # pragma: no cover


def previous_tag(tags: Sequence[Snapshot], sid: int) -> Snapshot | None:
    """``findPreviousSnapshot``: the last tag with id < sid."""
    for t in reversed(tags):
        if t.id < sid:
            return t
    return None


def overlapped_tags(tags: Sequence[Snapshot], begin: int, end: int) -> list[Snapshot]:
    """``SnapshotManager.findOverlappedSnapshots``: from the last tag with id <= begin (or the
    first tag) to the last tag with id < end."""
    right = max((i for i, t in enumerate(tags) if t.id < end), default=-1)
    if right < 0:
        return []
    left = max((i for i, t in enumerate(tags) if t.id <= begin), default=0)
    return list(tags[left:right + 1])

