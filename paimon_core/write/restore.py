"""What a writer restores of the table before it writes a bucket: the largest sequence number
of the bucket's live files (new files continue above it) and, for inline compaction, the live
files themselves.

Restored per partition, when the writer first touches it (Java's ``AbstractFileStoreWrite``
scans the existing files of one (partition, bucket) when it creates that bucket's writer): the
live entries of the partitions a write call touches are read in one pruned read of the
snapshot the round started from (:func:`paimon_core.scan.manifest_filter.read_entries`, only
the manifests whose partition range may hold them). A writer of one file into a table of a
million files reads the manifests of one partition, not the table.

At the start of each round (the first bucket touched after :meth:`TableWrite.prepare_commit
<paimon_core.write.table_write.TableWrite.prepare_commit>`) the restored partitions are brought
up to the latest snapshot from the delta manifests of the snapshots *other* commit users made
since (this writer's own files already carry higher sequence numbers); when one of those
snapshots is gone (expired) or unreadable, everything restored is forgotten and partitions are
read again as they are touched. Re-applying a delta already contained in a partition's read is
harmless: maxima and the live-file view are idempotent under it. Every restored partition is
read at one snapshot (when it expires under a partition's read, all are read again at the
latest), so the deltas of the next round start where every partition stands.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from paimon_core.errors import CorruptMetadataError, SnapshotNotExistError
from paimon_core.scan.manifest_filter import EntryFilter, read_entries
from paimon_core.scan.planner import ScanPlanner
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.manifest import FileKind, ManifestEntry
from paimon_core.spec.snapshot import Snapshot
from paimon_core.types import DataType
from paimon_core.write.inline_compact import InlineCompaction

BucketKey = tuple[bytes, int]


class BucketRestore:
    """The restored state of the partitions a writer has touched (module docs)."""

    def __init__(
        self,
        planner: ScanPlanner,
        snapshots: SnapshotManager,
        commit_user: str,
        partition_keys: Sequence[str],
        partition_types: Sequence[DataType],
        inline: InlineCompaction | None,
    ) -> None:
        self.planner = planner
        self.snapshots = snapshots
        self.commit_user = commit_user
        self.partition_keys = list(partition_keys)
        self.partition_types = list(partition_types)
        self.inline = inline
        self._max_seq: dict[BucketKey, int] | None = None  # None: start over
        self._partitions: set[bytes] = set()
        self._snapshot: Snapshot | None = None  # what the restored partitions were read at

    def invalidate(self) -> None:
        """Forget everything restored (the writer's view is inconsistent: aborted files, an
        inline compaction that found a file gone); partitions are read again when touched."""
        self._max_seq = None

    def refresh(self) -> None:
        """Bring the restored partitions up to the latest snapshot (module docs)."""
        sm = self.snapshots
        if self._max_seq is not None:
            cached = self._snapshot.id if self._snapshot is not None else None
            latest_id = sm.latest_snapshot_id()
            if latest_id == cached:
                return
            if latest_id is not None and self._apply_deltas(cached, latest_id):
                return
        self._max_seq = {}
        self._partitions = set()
        self._snapshot = sm.latest_snapshot()
        if self.inline is not None:
            self.inline.reset()

    def _apply_deltas(self, cached: int | None, latest_id: int) -> bool:
        """Apply the deltas of the snapshots after ``cached`` up to ``latest_id``; False when
        one is gone or unreadable (then start over)."""
        sm = self.snapshots
        if not self._partitions:  # nothing restored to bring up to date
            self._snapshot = sm.latest_snapshot()
            return True
        try:
            snaps = [sm.snapshot(i) for i in range((cached or 0) + 1, latest_id + 1)]
        except SnapshotNotExistError:
            return False
        flt = self._filter(self._partitions)
        try:
            for snap in snaps:
                if snap.commit_user == self.commit_user:
                    continue
                metas = self.planner.manifests.manifest_list(
                    snap.delta_manifest_list, snap.delta_manifest_list_size)
                self._note(read_entries(self.planner.manifests, metas, flt))
        except CorruptMetadataError:
            if not any(sm.has_expired(s.id) for s in snaps):
                raise
            return False  # expired while read
        self._snapshot = snaps[-1]
        return True

    def ensure(self, partitions: Iterable[bytes]) -> None:
        """Read the live files of those of ``partitions`` not restored yet, in one read."""
        assert self._max_seq is not None, "refresh() first"
        wanted = set(partitions) - self._partitions
        if not wanted:
            return
        while self._snapshot is not None:
            snap = self._snapshot
            try:
                entries = read_entries(self.planner.manifests,
                                       self.planner.data_manifests(snap), self._filter(wanted))
                live = live_files(entries, source=self.planner.manifests.path(
                    snap.base_manifest_list))
                break
            except CorruptMetadataError:
                if not self.snapshots.has_expired(snap.id):
                    raise
                # expired while this writer read it (slower than retention): everything
                # restored is read again at the latest snapshot, so that all restored
                # partitions stay at one snapshot (the next round's deltas start there)
                wanted |= self._partitions
                self._partitions = set()
                self._max_seq.clear()
                if self.inline is not None:
                    self.inline.reset()
                self._snapshot = self.snapshots.latest_snapshot()
        else:
            live = []
        self._note(live)
        self._partitions |= wanted

    def max_sequence(self, key: BucketKey) -> int | None:
        """Largest ``_MAX_SEQUENCE_NUMBER`` of the bucket's live files (None: no file), its
        partition restored first."""
        self.ensure((key[0],))
        assert self._max_seq is not None
        return self._max_seq.get(key)

    @property
    def valid(self) -> bool:
        return self._max_seq is not None

    def _filter(self, partitions: Collection[bytes]) -> EntryFilter:
        return EntryFilter.of_partitions(partitions, self.partition_keys, self.partition_types)

    def _note(self, entries: Sequence[ManifestEntry]) -> None:
        assert self._max_seq is not None
        seqs = self._max_seq
        for e in entries:
            if e.kind is FileKind.ADD:
                k = (e.partition, e.bucket)
                seqs[k] = max(seqs.get(k, -1), e.file.max_sequence_number)
        if self.inline is not None:
            self.inline.note(entries)
