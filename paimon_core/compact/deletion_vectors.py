"""The deletion vectors of one primary-key bucket while it is compacted
(``org.apache.paimon.deletionvectors.DeletionVectorsMaintainer`` and ``CompactDeletionFile`` of
Paimon 0.9).

A ``deletion-vectors.enabled=true`` table keeps at most one live record per key on the levels
>= 1, which readers scan raw minus each file's deletion vector. Compaction keeps it so:

* a level-0 record merged into a level >= 1 supersedes the key's record found by the lookup
  in the levels above the output: that record's row position is added to its file's vector
  (:meth:`BucketDeletionVectors.notify`, Java's ``notifyNewDeletion``);
* a file that is rewritten loses its vector (``removeDeletionVectorOf``): its superseded rows
  were left out of the rewrite;
* once per commit the bucket's vectors are written to ONE new index file
  (``index-<uuid>-<n>``, :func:`~paimon_core.spec.deletion_vector.encode_deletion_vectors`),
  which replaces the bucket's previous DV index file(s) in the index manifest (ADD of the new
  one, DELETE of the old ones: ``CompactDeletionFile.generateFiles``), with the COMPACT
  snapshot. A bucket left without any vector gets no new file, only the DELETEs.

The vectors are loaded from the index manifest of the snapshot the compaction starts from
(:func:`load_bucket_vectors`); the commit refuses the change when another commit replaced the
bucket's DV index meanwhile (:mod:`paimon_core.commit.index_changes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from paimon_core.compact.task import CompactResult
from paimon_core.datafile.writer import DataFileWriter
from paimon_core.io.file_io import FileIO
from paimon_core.layout import DataFilePathFactory, TableLayout
from paimon_core.manifest_io import ManifestIO
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.deletion_vector import decode_deletion_vectors, encode_deletion_vectors
from paimon_core.spec.index_manifest import (
    DELETION_VECTORS_INDEX,
    IndexFileMeta,
    IndexManifestEntry,
)
from paimon_core.spec.manifest import FileKind
from paimon_core.spec.snapshot import Snapshot

__all__ = [
    "BucketDeletionVectors",
    "DvIndexChange",
    "DvSource",
    "LatestDvSource",
    "dv_index_entries",
    "load_bucket_vectors",
    "snapshot_dv_source",
    "write_vectors",
]

BucketKey = tuple[bytes, int]
#: the DV index entries of a (partition, bucket)
DvSource = Callable[[bytes, int], Sequence[IndexManifestEntry]]


@dataclass(frozen=True)
class DvIndexChange:
    """The DV index files a compaction adds and the ones it replaces (``IndexIncrement``)."""

    added: tuple[IndexFileMeta, ...] = ()
    deleted: tuple[IndexFileMeta, ...] = ()


@dataclass
class BucketDeletionVectors:
    """Deleted row positions per data file of one bucket (sorted unique ``int64`` arrays) and
    the index files they were loaded from."""

    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    loaded_from: tuple[IndexFileMeta, ...] = ()
    modified: bool = False

    def of(self, file_name: str) -> np.ndarray | None:
        return self.vectors.get(file_name)

    def deleted_rows(self) -> dict[str, np.ndarray]:
        return dict(self.vectors)

    def notify(self, file_name: str, positions: np.ndarray) -> None:
        """Add deleted positions of ``file_name`` (``notifyNewDeletion``)."""
        if not len(positions):
            return
        old = self.vectors.get(file_name)
        new = np.asarray(positions, dtype=np.int64)
        merged = np.unique(new if old is None else np.concatenate([old, new]))
        if old is None or len(merged) != len(old):
            self.vectors[file_name] = merged
            self.modified = True

    def remove(self, file_names: Iterable[str]) -> None:
        """Forget the vectors of rewritten files (``removeDeletionVectorOf``)."""
        for name in file_names:
            if self.vectors.pop(name, None) is not None:
                self.modified = True

    def write(self, file_io: FileIO, layout: TableLayout, names: DataFilePathFactory,
              written: list[str]) -> DvIndexChange:
        """The index change of this round (nothing when nothing changed): a new index file
        holding every vector, replacing the files the vectors were loaded from. The new
        file's path is appended to ``written`` before it is written (an abort deletes it).

        Vectors of files outside the compaction's view are kept as loaded (a file added after
        the compaction was planned keeps its rows deleted); the commit checks that the
        bucket's index is still the one they were loaded from."""
        if not self.modified:
            return DvIndexChange()
        self.modified = False
        added: tuple[IndexFileMeta, ...] = ()
        if self.vectors:
            data, metas = encode_deletion_vectors(self.vectors)
            name = names.new_index_file_name()
            path = layout.index_file(name)
            written.append(path)
            file_io.write_bytes(path, data)
            added = (IndexFileMeta(DELETION_VECTORS_INDEX, name, len(data), len(metas),
                                   tuple(metas)),)
        change = DvIndexChange(added, self.loaded_from)
        self.loaded_from = added
        return change


def dv_index_entries(manifests: ManifestIO, snapshot: Snapshot | None
                     ) -> dict[BucketKey, list[IndexManifestEntry]]:
    """The DV index entries of a snapshot per (partition, bucket)."""
    out: dict[BucketKey, list[IndexManifestEntry]] = {}
    if snapshot is None or not snapshot.index_manifest:
        return out
    for e in manifests.index_manifest(snapshot.index_manifest):
        if e.index_type == DELETION_VECTORS_INDEX and e.kind is FileKind.ADD:
            out.setdefault((e.partition, e.bucket), []).append(e)
    return out


def load_bucket_vectors(file_io: FileIO, layout: TableLayout,
                        entries: Sequence[IndexManifestEntry]) -> BucketDeletionVectors:
    """The vectors of one bucket from its DV index entries (every range decoded and checked)."""
    vectors: dict[str, np.ndarray] = {}
    metas = []
    for e in entries:
        path = layout.index_file(e.file_name)
        ranges = e.dv_ranges or ()
        if ranges:
            vectors.update(decode_deletion_vectors(file_io.read_bytes(path), ranges, path))
        metas.append(IndexFileMeta(e.index_type, e.file_name, e.file_size, e.row_count,
                                   e.dv_ranges))
    return BucketDeletionVectors({k: np.unique(v) for k, v in vectors.items() if len(v)},
                                 tuple(metas))


def snapshot_dv_source(manifests: ManifestIO, snapshot: Snapshot | None) -> DvSource:
    """The DV index entries of ``snapshot``, per bucket (one index manifest read)."""
    entries = dv_index_entries(manifests, snapshot)
    return lambda p, b: entries.get((p, b), [])


@dataclass
class LatestDvSource:
    """:func:`snapshot_dv_source` of the table's latest snapshot, read at each call; its index
    manifest is decoded once per index manifest (the buckets of one compaction or one writer
    share it, instead of one read of every bucket's entries per bucket)."""

    file_io: FileIO
    table_path: str
    _cached: tuple[str | None, DvSource] | None = None

    def __call__(self) -> DvSource:
        latest = SnapshotManager(self.file_io, self.table_path).latest_snapshot()
        name = latest.index_manifest if latest is not None else None
        cached = self._cached
        if cached is None or cached[0] != name:
            manifests = ManifestIO(self.file_io, self.table_path)
            cached = self._cached = (name, snapshot_dv_source(manifests, latest))
        return cached[1]


def write_vectors(dvs: BucketDeletionVectors, file_io: FileIO, layout: TableLayout,
                  writer: DataFileWriter, result: CompactResult) -> None:
    """Write a bucket's vectors when they changed (one new DV index file replacing the old
    ones, :meth:`BucketDeletionVectors.write`, named and recorded by ``writer``); the change
    joins ``result``."""
    change = dvs.write(file_io, layout, writer.path_factory, writer.written_paths)
    result.index_added += change.added
    result.index_deleted += change.deleted
