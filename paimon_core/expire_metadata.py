"""What snapshot expiry reads: manifest lists, manifests and index manifests by name (each
read once per expiry), and the helpers that pick tags (``paimon_core.expire``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout
from paimon_core.spec.index_manifest import IndexManifestEntry, decode_index_manifest
from paimon_core.spec.manifest import ManifestEntry, decode_manifest
from paimon_core.spec.manifest_list import ManifestFileMeta, decode_manifest_list
from paimon_core.spec.snapshot import Snapshot

_T = TypeVar("_T")


def plain_name(name: str) -> bool:
    """A file name read from metadata that is one path segment."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


class ExpiryMetadata:
    """Decoded manifest lists / manifests / index manifests by name; None = the file is gone
    (deleted by an earlier, interrupted or concurrent expiry). Undecodable files raise."""

    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.manifest_dir = TableLayout(table_path).manifest_dir
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

