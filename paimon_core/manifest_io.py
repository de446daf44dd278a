"""Thin IO around the manifest codecs: ``read(path) = decode(file_io.read(path))``."""

from __future__ import annotations

import threading
from collections import OrderedDict

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError
from paimon_core.io.file_io import FileIO, join
from paimon_core.spec.index_manifest import IndexManifestEntry, decode_index_manifest
from paimon_core.spec.manifest import ManifestEntry, decode_manifest
from paimon_core.spec.manifest_list import ManifestFileMeta, decode_manifest_list


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

    def _read(self, name: str, what: str) -> bytes:
        path = self.path(name)
        try:
            return self.file_io.read_bytes(path)
        except FileNotFoundInTableError as e:
            raise CorruptMetadataError(path, f"{what} referenced by a snapshot is missing") from e

    def manifest_list(self, name: str) -> list[ManifestFileMeta]:
        return decode_manifest_list(self._read(name, "manifest list"), self.path(name))

    def manifest(self, name: str) -> list[ManifestEntry]:
        with self._lock:
            hit = self._cache.get(name)
            if hit is not None:
                self._cache.move_to_end(name)
                return hit
        entries = decode_manifest(self._read(name, "manifest"), self.path(name))
        with self._lock:
            self._cache[name] = entries
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return entries

    def index_manifest(self, name: str) -> list[IndexManifestEntry]:
        return decode_index_manifest(self._read(name, "index manifest"), self.path(name))
