"""Thin IO around the manifest codecs: ``read(path) = decode(file_io.read(path))``."""

from __future__ import annotations

import threading
from collections import OrderedDict

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError
from paimon_core.io.file_io import FileIO, join
from paimon_core.spec.index_manifest import IndexManifestEntry, decode_index_manifest
from paimon_core.spec.manifest import ManifestEntry, decode_manifest
from paimon_core.spec.manifest_list import ManifestFileMeta, decode_manifest_list
from paimon_core.spec.snapshot import Snapshot


class ManifestIO:
    """Reads manifest lists, manifests and index manifests of one table.

    Manifest files are immutable once written, so decoded manifests are kept in a small LRU
    cache keyed by file name.
    """

    def __init__(self, file_io: FileIO, table_path: str, cache_size: int = 256) -> None:
        self.file_io = file_io
        self.manifest_dir = join(table_path, "manifest")
        self._cache: OrderedDict[str, list[ManifestEntry]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def path(self, name: str) -> str:
        return join(self.manifest_dir, name)

    def _read(self, name: str, what: str, size: int | None) -> bytes:
        path = self.path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundInTableError as e:
            raise CorruptMetadataError(path, f"{what} referenced by a snapshot is missing") from e
        # Avro has no record count: a file cut at a block boundary would decode as a shorter
        # valid file. The referencing metadata records the exact size (Java bounds its read
        # with it), so check it.
        if size is not None and len(data) != size:
            raise CorruptMetadataError(
                path, f"{what} has {len(data)} bytes, but {size} are recorded for it"
            )
        return data

    def manifest_list(self, name: str, size: int | None = None) -> list[ManifestFileMeta]:
        """Decode a manifest list; ``size`` = the exact size recorded in the snapshot."""
        return decode_manifest_list(self._read(name, "manifest list", size), self.path(name))

    def manifest(self, name: str, size: int | None = None) -> list[ManifestEntry]:
        """Decode a manifest (cached); ``size`` = ``_FILE_SIZE`` from the manifest list."""
        with self._lock:
            hit = self._cache.get(name)
            if hit is not None:
                self._cache.move_to_end(name)
                return hit
        entries = decode_manifest(self._read(name, "manifest", size), self.path(name))
        with self._lock:
            self._cache[name] = entries
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return entries

    def index_manifest(self, name: str) -> list[IndexManifestEntry]:
        return decode_index_manifest(self._read(name, "index manifest", None), self.path(name))

    def data_manifests(self, snapshot: Snapshot | None) -> list[ManifestFileMeta]:
        """The snapshot's data manifests: its base list, then its delta list."""
        if snapshot is None:
            return []
        return self.manifest_list(
            snapshot.base_manifest_list, snapshot.base_manifest_list_size
        ) + self.manifest_list(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)
