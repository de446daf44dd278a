"""Writing manifest files and manifest lists (``ManifestFile`` / ``ManifestList`` writers).

Manifests roll at ``manifest.target-file-size``; each one's :class:`ManifestFileMeta` carries
exact partition stats (min / max / null counts over the ``_PARTITION`` rows, in Java's order),
bucket and level ranges, so that Java and we can skip whole manifests by partition.
Every file gets a fresh name (``manifest-<uuid>-<n>``): names are never reused, so a failed
commit's files are orphans that nothing references.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout
from paimon_core.manifest_io import ManifestCache
from paimon_core.options import CoreOptions
from paimon_core.scan.predicate_literal import java_compare
from paimon_core.spec.binary_row import deserialize_binary_row, serialize_binary_row
from paimon_core.spec.index_manifest import IndexManifestEntry, encode_index_manifest
from paimon_core.spec.manifest import FileKind, ManifestEntry, encode_manifest
from paimon_core.spec.manifest_list import ManifestFileMeta, encode_manifest_list
from paimon_core.spec.stats import SimpleStats
from paimon_core.types import DataType, TypeRoot

# Java checks the rolling size every 1000 records; an encoded entry is ~200-400 bytes.
_ROLL_CHECK = 1000


def _codec(options: CoreOptions | Mapping[str, str]) -> str:
    o = options if isinstance(options, CoreOptions) else CoreOptions(options)
    c = o.manifest_compression
    return {"zstd": "zstandard", "zstandard": "zstandard", "none": "null", "null": "null",
            "deflate": "deflate", "snappy": "snappy"}.get(c, "zstandard")


def _partition_values(
    part: bytes, nullable: Sequence[DataType], cache: dict[bytes, list[Any]]
) -> list[Any]:
    values = cache.get(part)
    if values is None:
        values = deserialize_binary_row(part, nullable, exact_timestamps=True)
        cache[part] = values
    return values


def clustered(
    entries: Sequence[ManifestEntry], types: Sequence[DataType], cache: dict[bytes, list[Any]]
) -> tuple[Sequence[ManifestEntry], bool]:
    """``entries`` ordered by (partition values, bucket), stably: the manifests rolled from
    them each cover a narrow partition range, so their partition stats prune reads (Java's
    writers hand entries over per partition and bucket already; ours may not, and a
    merge of manifests interleaves them). Entries of one file identifier (same partition
    and bucket) keep their relative order, so folding ADD/DELETE gives the same live set.

    Returns:
        The entries, and whether they are ordered by partition values (field by field, nulls
        first) in the order predicates compare them (not for FLOAT/DOUBLE fields, whose NaN
        has no place in it): only then may a block index describe them."""
    n = len(entries)
    parts = [e.partition for e in entries]
    distinct = list(dict.fromkeys(parts))
    buckets = np.fromiter((e.bucket for e in entries), np.int64, n)
    comparable = not any(t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE) for t in types)
    if len(distinct) == 1 and (n == 0 or bool((buckets == buckets[0]).all())):
        return entries, comparable
    nullable = [t.with_nullable(True) for t in types]
    keys = [
        tuple((0, 0) if v is None else (1, v) for v in _partition_values(p, nullable, cache))
        for p in distinct
    ]
    try:
        order = sorted(range(len(distinct)), key=keys.__getitem__)
    except TypeError:  # values Python cannot order (mixed types): partition bytes instead
        order = sorted(range(len(distinct)), key=distinct.__getitem__)
        comparable = False
    rank = {distinct[i]: r for r, i in enumerate(order)}
    ranks = np.fromiter(map(rank.__getitem__, parts), np.int64, n)
    return [entries[i] for i in np.lexsort((buckets, ranks)).tolist()], comparable


def partition_stats(
    partitions: Sequence[bytes], types: Sequence[DataType], cache: dict[bytes, list[Any]]
) -> SimpleStats:
    """Min / max / null count per partition column over the given partition rows."""
    nullable = [t.with_nullable(True) for t in types]
    n = len(types)
    mins: list[Any] = [None] * n
    maxs: list[Any] = [None] * n
    nulls = [0] * n
    for part in set(partitions):
        for i, v in enumerate(_partition_values(part, nullable, cache)):
            if v is None:
                nulls[i] += 1
                continue
            if mins[i] is None or (java_compare(v, mins[i]) or 0) < 0:
                mins[i] = v
            if maxs[i] is None or (java_compare(v, maxs[i]) or 0) > 0:
                maxs[i] = v
    # null counts are per entry, not per distinct partition
    counts = [0] * n
    for part in partitions:
        for i, v in enumerate(cache[part]):
            if v is None:
                counts[i] += 1
    return SimpleStats(serialize_binary_row(mins, nullable), serialize_binary_row(maxs, nullable),
                       tuple(counts))


class ManifestWriter:
    """Writes manifests and manifest lists into ``<table>/manifest/`` for one commit attempt."""

    def __init__(
        self,
        file_io: FileIO,
        table_path: str,
        partition_types: Sequence[DataType],
        options: CoreOptions | Mapping[str, str],
        schema_id: int,
        *,
        target_file_size: int = 8 * 1024 * 1024,
        cache: ManifestCache | None = None,
    ) -> None:
        self.file_io = file_io
        # what we write is what a reader would decode (the codecs round-trip exactly), so
        # the next plan or commit of this process is served without reading it back
        self.cache = cache
        self.dir = TableLayout(table_path).manifest_dir
        self.partition_types = list(partition_types)
        self.codec = _codec(options)
        self.schema_id = schema_id
        self.target_file_size = target_file_size
        self.prefix = str(uuid.uuid4())
        self.counter = 0
        self.written: list[str] = []  # every file this writer created (for cleanup)
        self._partition_cache: dict[bytes, list[Any]] = {}
        #: encoded bytes per entry of the last manifest encoded (sizes the next one)
        self.bytes_per_entry: float | None = None

    def _next_name(self, kind: str) -> str:
        name = f"{kind}-{self.prefix}-{self.counter}"
        self.counter += 1
        return name

    def _write(self, name: str, data: bytes) -> None:
        # recorded first: a write that fails half way (disk full) leaves a partial file that
        # cleanup must still remove
        self.written.append(name)
        self.file_io.write_bytes(join(self.dir, name), data)

    def write_manifests(self, entries: Sequence[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into one or more rolling manifests (none for no entries), ordered
        by partition and bucket (see :func:`clustered`)."""
        return self.write_full_manifests(entries, last=True)[0]

    def write_full_manifests(
        self, entries: Sequence[ManifestEntry], *, last: bool = False
    ) -> tuple[list[ManifestFileMeta], Sequence[ManifestEntry]]:
        """Write the leading entries into manifests that reach ``manifest.target-file-size``
        (Java's ``RollingFileWriter``: a manifest rolls once it has reached the target, checked
        every 1000 records), and return them with the entries left over: too few to reach the
        target, a streaming caller adds more to them. ``last``: write those too, as the last,
        smaller manifest (nothing is left over)."""
        metas: list[ManifestFileMeta] = []
        if not entries:
            return metas, entries
        entries, ordered = clustered(entries, self.partition_types, self._partition_cache)
        chunk = self._chunk(self.target_file_size) if self.bytes_per_entry else _ROLL_CHECK
        start = 0
        while start < len(entries):
            part = entries[start:start + chunk]
            data = encode_manifest(part, codec=self.codec, ordered=ordered)
            self.bytes_per_entry = len(data) / len(part)
            if len(data) < self.target_file_size:
                if start + len(part) >= len(entries):
                    if last:
                        metas.append(self._write_entries(part, data))
                        start += len(part)
                    break  # the rest cannot reach the target
                # grow by the estimated missing entries (re-encoding the part)
                chunk = len(part) + self._chunk(self.target_file_size - len(data))
                continue
            metas.append(self._write_entries(part, data))
            start += len(part)
            chunk = self._chunk(self.target_file_size)
        return metas, entries[start:]

    def _chunk(self, size: int) -> int:
        """Entries for ``size`` more bytes by the last encoding, 5 % over (an estimate from a
        small sample runs short; Java overshoots by up to 1000 records too), in 1000s."""
        per_entry = self.bytes_per_entry or 1.0
        return _ROLL_CHECK * (int(size * 1.05 / per_entry) // _ROLL_CHECK + 1)

    def _write_entries(self, entries: Sequence[ManifestEntry], data: bytes) -> ManifestFileMeta:
        name = self._write_manifest(data)
        if self.cache is not None:
            self.cache.put(join(self.dir, name), len(data), tuple(entries))
        return self._meta(name, len(data), entries)

    def write_raw_manifest(self, data: bytes) -> str:
        """Write an already encoded manifest; returns its new name."""
        return self._write_manifest(data)

    def _write_manifest(self, data: bytes) -> str:
        name = self._next_name("manifest")
        self._write(name, data)
        return name

    def _meta(self, name: str, size: int, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        added = sum(1 for e in entries if e.kind is FileKind.ADD)
        stats = partition_stats([e.partition for e in entries], self.partition_types,
                                self._partition_cache)
        return ManifestFileMeta(
            file_name=name, file_size=size, num_added_files=added,
            num_deleted_files=len(entries) - added, partition_stats=stats,
            schema_id=max((e.file.schema_id for e in entries), default=self.schema_id),
            min_bucket=min(e.bucket for e in entries), max_bucket=max(e.bucket for e in entries),
            min_level=min(e.file.level for e in entries),
            max_level=max(e.file.level for e in entries),
        )

    def write_manifest_list(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        data = encode_manifest_list(metas, codec=self.codec)
        name = self._next_name("manifest-list")
        self._write(name, data)
        if self.cache is not None:
            self.cache.put(join(self.dir, name), len(data), tuple(metas))
        return name, len(data)

    def write_index_manifest(self, entries: Sequence[IndexManifestEntry]) -> str:
        """Write an index manifest (``index-manifest-<uuid>-<n>``) holding ``entries``."""
        data = encode_index_manifest(entries, codec=self.codec)
        name = self._next_name("index-manifest")
        self._write(name, data)
        return name

    def cleanup(self, keep: set[str] | frozenset[str] = frozenset()) -> None:
        """Delete what this writer created (after a lost race), except ``keep``."""
        for name in self.written:
            if name not in keep:
                self.file_io.delete(join(self.dir, name))
        self.written = [n for n in self.written if n in keep]

