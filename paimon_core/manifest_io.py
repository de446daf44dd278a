"""Thin IO around the manifest codecs: ``read(path) = decode(file_io.read(path))``."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar, cast

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout
from paimon_core.spec.index_manifest import IndexManifestEntry, decode_index_manifest
from paimon_core.spec.manifest import (
    BlockRangeTest,
    EntrySelect,
    ManifestEntry,
    decode_manifest,
    decode_manifests,
)
from paimon_core.spec.manifest_list import ManifestFileMeta, decode_manifest_list
from paimon_core.spec.snapshot import Snapshot

_T = TypeVar("_T")

_listings = 0
_listings_lock = threading.Lock()


def snapshot_listings() -> int:
    """How many times this process has listed a snapshot's data files
    (:meth:`ManifestIO.data_manifests`: planning a scan or a compaction, a commit's conflict
    check). A diagnostic: jobs report it, tests assert that a step lists only once."""
    return _listings


class ManifestCache:
    """Decoded manifest lists and manifests shared by every table of one catalog (Java's
    ``CachingCatalog`` manifest cache, ``cache.manifest.small-file-memory`` /
    ``cache.manifest.small-file-threshold``). These files are immutable once written (unique
    names), so an entry stays valid; it is keyed by full path and checked against the size
    the referencing metadata records. Files above ``threshold`` bytes are not kept; the
    total of the kept files' sizes stays under ``memory`` bytes (least recently used out)."""

    def __init__(self, memory: int = 128 << 20, threshold: int = 1 << 20) -> None:
        self.memory = memory
        self.threshold = threshold
        self._entries: OrderedDict[str, tuple[int, object]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, path: str, size: int | None) -> object | None:
        with self._lock:
            hit = self._entries.get(path)
            if hit is None or (size is not None and hit[0] != size):
                return None
            self._entries.move_to_end(path)
            return hit[1]

    def keeps(self, size: int) -> bool:
        """Whether a file of ``size`` bytes is kept by :meth:`put`."""
        return size <= self.threshold and size <= self.memory

    def put(self, path: str, size: int, value: object) -> None:
        if not self.keeps(size):
            return
        with self._lock:
            old = self._entries.pop(path, None)
            if old is not None:
                self._bytes -= old[0]
            self._entries[path] = (size, value)
            self._bytes += size
            while self._bytes > self.memory:
                _, (n, _) = self._entries.popitem(last=False)
                self._bytes -= n


class ManifestIO:
    """Reads manifest lists, manifests and index manifests of one table.

    Manifest lists and manifests are immutable once written, so decoded ones are kept in a
    :class:`ManifestCache` (the catalog's, shared by its tables, or a private one).
    """

    def __init__(
        self, file_io: FileIO, table_path: str, cache: ManifestCache | None = None
    ) -> None:
        self.file_io = file_io
        self.manifest_dir = TableLayout(table_path).manifest_dir
        self.cache = cache if cache is not None else ManifestCache(32 << 20)

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

    def _decoded(
        self, name: str, size: int | None, what: str, decode: Callable[[bytes, str], list[_T]]
    ) -> list[_T]:
        """``decode`` of the file, served from the cache when it holds it."""
        path = self.path(name)
        hit = self.cache.get(path, size)
        if hit is not None:
            return list(cast(tuple[_T, ...], hit))
        data = self._read(name, what, size)
        out = decode(data, path)
        self.cache.put(path, len(data), tuple(out))
        return out

    def manifest_list(self, name: str, size: int | None = None) -> list[ManifestFileMeta]:
        """Decode a manifest list (cached); ``size`` = the exact size recorded in the
        snapshot."""
        return self._decoded(name, size, "manifest list", decode_manifest_list)

    def is_cached(self, name: str, size: int | None = None) -> bool:
        """Whether :meth:`manifest` / :meth:`manifest_list` of ``name`` is served from the
        cache (no IO, no decoding)."""
        return self.cache.get(self.path(name), size) is not None

    def manifest(
        self,
        name: str,
        size: int | None = None,
        *,
        select: EntrySelect | None = None,
        blocks: BlockRangeTest | None = None,
    ) -> list[ManifestEntry]:
        """Decode a manifest (cached); ``size`` = ``_FILE_SIZE`` from the manifest list.

        ``select``: only the rows it keeps are returned, and only they are built. The cache
        only ever holds whole files: a cached file is selected from (as Java's manifest cache
        filters cached rows); an uncached one is decoded selectively and not kept (decoding
        all of it to keep it would cost what the selection saves: a 1 MB manifest can hold
        40k entries). ``blocks`` (with ``select``): the blocks of a manifest our writer
        indexed (see ``spec.manifest.BLOCK_INDEX_KEY``) that it rejects are not decoded; it
        must reject only blocks none of whose rows ``select`` keeps."""
        if select is None:
            return self._decoded(name, size, "manifest", decode_manifest)
        path = self.path(name)
        hit = self.cache.get(path, size)
        if hit is None:
            return decode_manifest(self._read(name, "manifest", size), path, select, blocks)
        return _selected(list(cast(tuple[ManifestEntry, ...], hit)), select)

    def manifests(
        self,
        metas: Sequence[ManifestFileMeta],
        *,
        select: EntrySelect | None = None,
        blocks: BlockRangeTest | None = None,
        max_workers: int = 8,
    ) -> list[ManifestEntry]:
        """The entries of several manifests, in order: :meth:`manifest` of each (the same
        cache rules), the files not cached read in parallel (on an object store) and decoded
        together."""
        chunks: list[list[ManifestEntry]] = [[] for _ in metas]
        whole: list[int] = []  # decoded whole (and cached when small)
        selective: list[int] = []
        for i, m in enumerate(metas):
            hit = self.cache.get(self.path(m.file_name), m.file_size)
            if hit is not None:
                chunks[i] = _selected(list(cast(tuple[ManifestEntry, ...], hit)), select)
            elif select is None:
                whole.append(i)
            else:
                selective.append(i)
        datas = self._read_all([metas[i] for i in whole + selective], max_workers)
        files = [(data, self.path(metas[i].file_name)) for i, data in zip(whole + selective, datas)]
        for i, (data, path), entries in zip(whole, files, decode_manifests(files[: len(whole)])):
            self.cache.put(path, len(data), tuple(entries))
            chunks[i] = entries
        for i, entries in zip(selective, decode_manifests(files[len(whole):], select, blocks)):
            chunks[i] = entries
        return [e for chunk in chunks for e in chunk]

    def _read_all(self, metas: Sequence[ManifestFileMeta], max_workers: int) -> list[bytes]:
        """The bytes of these manifests; in threads on an object store (they overlap
        requests), in turn on a local disk."""

        def read(m: ManifestFileMeta) -> bytes:
            return self._read(m.file_name, "manifest", m.file_size)

        if len(metas) <= 1 or self.file_io.is_local:
            return [read(m) for m in metas]
        with ThreadPoolExecutor(min(max_workers, len(metas))) as pool:
            return list(pool.map(read, metas))

    def manifest_bytes(self, name: str, size: int | None = None) -> bytes:
        """The bytes of a manifest as stored (checked against ``size``), undecoded."""
        return self._read(name, "manifest", size)

    def index_manifest(self, name: str) -> list[IndexManifestEntry]:
        return decode_index_manifest(self._read(name, "index manifest", None), self.path(name))

    def data_manifests(self, snapshot: Snapshot | None) -> list[ManifestFileMeta]:
        """The snapshot's data manifests: its base list, then its delta list."""
        global _listings
        if snapshot is None:
            return []
        with _listings_lock:
            _listings += 1
        return self.manifest_list(
            snapshot.base_manifest_list, snapshot.base_manifest_list_size
        ) + self.manifest_list(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)


def _selected(entries: list[ManifestEntry], select: EntrySelect | None) -> list[ManifestEntry]:
    """The entries ``select`` keeps (all without one)."""
    if select is None:
        return entries
    kept = select([e.partition for e in entries], [e.bucket for e in entries],
                  [e.total_buckets for e in entries])
    return entries if kept is None else [entries[i] for i in kept.tolist()]
