"""Snapshot expiration: ``org.apache.paimon.table.ExpireSnapshotsImpl`` with
``org.apache.paimon.operation.SnapshotDeletion`` / ``FileDeletionBase`` (Paimon 0.9, spec §10).

**Range** (``ExpireSnapshotsImpl.expire``), for the latest snapshot L and the earliest E::

    min          = max(L - retain_max + 1, E)
    maxExclusive = min(L - retain_min + 1, min nextSnapshot of all consumers, E + max_deletes)
    end          = the first id in [min, maxExclusive) whose timeMillis >= older_than,
                   else maxExclusive

Snapshots ``[b, end)`` are expired, ``b`` = E (or, going back from ``end - 1``, the id after
the first missing snapshot). Nothing expires when ``end <= E``; ``EARLIEST`` is then written
only if it does not exist. ``older_than`` = now - ``snapshot.time-retained`` unless given.

**What goes** for an expired snapshot ``j`` (as Java):

* data files: the net DELETE entries of the *delta* manifest list of ``j + 1`` (a DELETE with
  an ADD of the same file in the same delta is a level upgrade: the file stays), with their
  extra files, unless the nearest tag at or before ``j`` holds them;
* changelog files: the ADD entries of ``j``'s changelog manifest list;
* metadata: ``j``'s base / delta / changelog manifest lists and their manifests, its index
  manifest and index files, its statistics file, except what the skip set holds: everything
  (manifest lists, manifests, index manifest and files, statistics) referenced by the first
  retained snapshot and by the tags overlapping the expired range
  (``findOverlappedSnapshots``);
* then ``snapshot/snapshot-<j>``.

**Order and crash safety** (as Java, stage by stage over the whole range). Everything is
worked out first, reading each snapshot, manifest list and delta manifest once (bad metadata
stops the expiry before it deleted anything); then ``EARLIEST`` (the fence) is raised to the
first retained id, and the files go: data files, changelog files, manifests and index files,
the manifest lists / index manifests / statistics files that name them, the snapshot files
last; on S3 each stage in ``DeleteObjects`` batches of up to 1,000 keys. The retained
snapshots keep all their files at every moment. A kill at any point leaves the snapshots below
the fence expired (a read raises ``SnapshotExpiredError``), some of their files gone; a re-run
finds them below the fence and finishes them: their data was deleted before any manifest (a
delta whose manifests are gone has nothing left to free), a delta manifest list missing below
the fence means that snapshot's metadata is going already, a manifest list is deleted only
after its manifests, and every deletion accepts an already-missing file.

**Deviations from Java**, all keeping more, never less:

* Nothing the first retained snapshot holds live is ever deleted (defence in depth against a
  table that re-adds a deleted file name), comparing full paths: a file DELETEd by the delta of
  ``j + 1`` stays when a later delta up to the first retained snapshot ADDs it again (every
  file live there was ADDed by one of those deltas, already read); when one of them cannot be
  read, the first retained snapshot's live files are read whole instead.
* A tagged snapshot's changelog list, manifests and files are kept (the tag references them;
  Java deletes them and leaves the tag naming a missing changelog list). Orphan cleaning
  reclaims them once the tag is gone.
* Consumers are read again after planning, just before the fence is raised (Java reads them
  once): one registered while the expiry planned shrinks the range. One registered after the
  fence went up names an expired snapshot, as in Java.
* A data-file deletion whose delta manifests cannot all be read is skipped (Java does the same
  for the manifest it fails on); the files become orphans.
* ``snapshot.clean-empty-directories`` is not implemented (never deletes directories).
* A decoupled changelog lifecycle (``changelog.num-retained.*`` / ``changelog.time-retained``
  larger than the snapshot values) raises :class:`UnsupportedError` before anything happens.

**Deleting elsewhere.** ``bulk_delete`` hands the range's data and changelog files (when at
least ``bulk_min_files``) to another executor, e.g. Spark tasks (``pipelines.expire``): the
driver plans, executors delete in parallel; the order above is kept (the call returns before
any metadata goes).

Files are only ever deleted under the table directory; names read from metadata that are not a
single path segment, and external paths outside the table, are left alone (``kept_files``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from paimon_core.consumer import ConsumerManager
from paimon_core.errors import (
    CorruptMetadataError,
    FileNotFoundInTableError,
    SnapshotNotExistError,
    StorageError,
    UnsupportedError,
)
from paimon_core.expire_config import INT_MAX, ExpireConfig, ExpireResult, expire_end
from paimon_core.expire_metadata import (
    Delta,
    ExpiryMetadata,
    ExpiryPaths,
    overlapped_tags,
    previous_tag,
    read_again_if_corrupt,
    read_delta,
)
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableContext
from paimon_core.snapshot_manager import EARLIEST_HINT, SnapshotManager, contiguous_tail
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.manifest import FileKind, ManifestEntry
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import Snapshot, decode_snapshot
from paimon_core.tags import TagManager

__all__ = [
    "INT_MAX", "BulkDelete", "ExpireConfig", "ExpireResult", "ExpireSnapshots", "expire_end",
]


BulkDelete = Callable[[Sequence[tuple[str, "int | None"]]], Sequence["int | None"]]
"""Deletes ``(path, size if known)`` items (all under the table directory, already checked);
returns, per item in order, the bytes freed, or None when the file was already missing. It
must delete every item or raise."""

@dataclass
class _Plan:
    """What an expiry deletes, stage by stage (path -> size when known)."""

    expired: list[int] = dataclasses.field(default_factory=list)
    data: dict[str, int | None] = dataclasses.field(default_factory=dict)
    changelog: dict[str, int | None] = dataclasses.field(default_factory=dict)
    files: dict[str, int | None] = dataclasses.field(default_factory=dict)
    owners: dict[str, int | None] = dataclasses.field(default_factory=dict)
    kept: int = 0


@dataclass
class _Tally:
    data: int = 0
    changelog: int = 0
    metadata: int = 0
    bytes: int = 0
    kept: int = 0


class ExpireSnapshots:
    """Expires old snapshots of one table (``ExpireSnapshotsImpl``); see the module docs.

    Args:
        file_io: storage.
        table_path: the table directory.
        schema: the table's (latest) schema, or that schema resolved (its options parsed once:
            :meth:`FileStoreTable.latest_context`).
        config: retention; default :meth:`ExpireConfig.from_options` of the schema's options.
        older_than_millis: epoch-millis cutoff replacing ``now - time_retained``.
        now_millis: the clock (tests).
        delete_threads: parallel deletions (default 1 on local disk, 8 on object stores).
        bulk_delete: deletes a snapshot's data and changelog files elsewhere (e.g. in Spark
            tasks) when there are at least ``bulk_min_files`` of them.
        bulk_min_files: the smallest batch handed to ``bulk_delete``.

    Example:
        >>> ExpireSnapshots(t.file_io, t.path, t.latest_context()).expire()  # doctest: +SKIP
        ExpireResult(expired_ids=(1, 2), earliest=3, ...)
    """

    def __init__(
        self,
        file_io: FileIO,
        table_path: str,
        schema: TableSchema | TableContext,
        *,
        config: ExpireConfig | None = None,
        older_than_millis: int | None = None,
        now_millis: int | None = None,
        delete_threads: int | None = None,
        bulk_delete: BulkDelete | None = None,
        bulk_min_files: int = 64,
    ) -> None:
        self.file_io = file_io
        self.bulk_delete = bulk_delete
        self.bulk_min_files = max(1, bulk_min_files)
        self.table_path = table_path.rstrip("/") or "/"
        ctx = (schema if isinstance(schema, TableContext)
               else TableContext.of(self.table_path, schema))
        self.schema = ctx.schema
        self.config = config or ExpireConfig.from_options(ctx.options)
        self.now_millis = now_millis
        self.older_than_millis = older_than_millis
        self.delete_threads = delete_threads or (1 if file_io.is_local else 8)
        self.snapshots = SnapshotManager(file_io, self.table_path)
        self.tags = TagManager(file_io, self.table_path)
        self.consumers = ConsumerManager(file_io, self.table_path)
        self.layout = ctx.layout
        self.meta = ExpiryMetadata(file_io, self.layout)
        self.paths = ExpiryPaths(self.table_path, self.layout)
        self._refs: dict[tuple[int, str], frozenset[str]] = {}
        self._tag_files: dict[tuple[int, str], frozenset[str] | None] = {}
        self._tag_cache: tuple[frozenset[str], list[Snapshot]] | None = None
        self._snaps: dict[int, Snapshot] = {}

    # ------------------------------------------------------------------ public API
    def expire(self) -> ExpireResult:
        """Expire consumers (``consumer.expiration-time``), then snapshots, as Java's
        ``TableCommitImpl.expire`` does after a commit.

        Raises:
            UnsupportedError: the changelog lifecycle is decoupled.
            CorruptMetadataError: metadata that decides what is protected (a retained
                snapshot's or a tag's manifests, a consumer or tag file) cannot be read;
                nothing more is deleted.
        """
        if self.config.changelog_decoupled:
            raise UnsupportedError(
                "expiring a table whose changelog lifecycle is decoupled from its snapshots "
                "(changelog.num-retained.* / changelog.time-retained larger than snapshot.*) "
                "is not supported"
            )
        now = int(time.time() * 1000) if self.now_millis is None else self.now_millis
        expired_consumers: list[str] = []
        if self.config.consumer_expiration_millis is not None:
            # expire consumers first, so that they do not hold back snapshot expiration
            expired_consumers = self.consumers.expire(
                now - self.config.consumer_expiration_millis)
        older_than = (now - self.config.time_retained_millis
                      if self.older_than_millis is None else self.older_than_millis)
        # one fresh listing and one fence read serve the range and the expiry (rule 5)
        ids, fence = self._listing()
        if not ids:
            return ExpireResult(expired_consumers=tuple(expired_consumers))
        earliest = fence if fence is not None else contiguous_tail(ids)[0]
        consumer_next = self._min_consumer_next()
        c = self.config
        end = expire_end(
            ids[-1], earliest, retain_min=c.retain_min, retain_max=c.retain_max,
            max_deletes=c.max_deletes, older_than_millis=older_than,
            min_consumer_next=consumer_next, time_millis=self._time_millis,
        )
        result = self._expire_until(earliest, end, ids, fence, consumer_next)
        return dataclasses.replace(result, expired_consumers=tuple(expired_consumers))

    def expire_until(self, earliest: int, end_exclusive: int) -> ExpireResult:
        """Expire snapshots ``[earliest, end_exclusive)`` (``ExpireSnapshotsImpl.expireUntil``)
        and write ``EARLIEST``.

        Below the expiry fence (``earliest`` when ``EARLIEST`` names an existing snapshot) every
        snapshot file is finished too: the ones an interrupted expiry left (contiguous with
        the retained ones: expired like any other), and strays a delayed writer re-created in
        an expired slot (below a gap: only the file goes; what it references is orphaned).
        The fence is raised to the first retained id before anything is deleted.
        """
        ids, fence = self._listing()  # fresh (reliability rule 5)
        return self._expire_until(earliest, end_exclusive, ids, fence, self._min_consumer_next())

    def _listing(self) -> tuple[list[int], int | None]:
        """The snapshot ids and the expiry fence: ``EARLIEST`` is read only when the listing
        shows it (no hint, no fence: the GET would have found nothing either)."""
        ids, hints = self.snapshots.list_snapshot_dir()
        return ids, self.snapshots.expiry_fence() if EARLIEST_HINT in hints else None

    def _expire_until(self, earliest: int, end_exclusive: int, ids: Sequence[int],
                      fence: int | None, consumer_next: int | None) -> ExpireResult:
        """:meth:`expire_until` with the snapshot listing, the fence and the consumers'
        next snapshot read just before."""
        floor = max(end_exclusive, earliest)
        present = set(ids)
        begin = floor
        while begin > 1 and begin - 1 in present:
            begin -= 1
        tally = _Tally()
        strays = self._remove_strays(ids, begin, fence, tally)
        plan: _Plan | None = None
        while True:
            floor = _consumer_floor(floor, consumer_next, earliest, begin)
            if begin >= floor:
                self._raise_fence(earliest)
                return ExpireResult(earliest=earliest, expired_ids=strays,
                                    deleted_files=tally.metadata, metadata_files=tally.metadata)
            plan = self._plan(begin, floor, below_fence=fence or 0)
            # consumers again, last thing before the fence (a reader registered while this
            # expiry planned): a smaller range is planned again from what was read
            consumer_next = self._min_consumer_next()
            if _consumer_floor(floor, consumer_next, earliest, begin) == floor:
                break
        tally.kept += plan.kept
        # the fence first: from here on these ids are expired (a writer that re-creates one
        # withdraws its file), and readers start at the first retained snapshot
        self._raise_fence(floor)
        self._delete(plan.data, tally, "data")
        self._delete(plan.changelog, tally, "changelog")
        self._delete(plan.files, tally, "metadata")
        self._delete(plan.owners, tally, "metadata")
        self._delete({self.snapshots.snapshot_path(i): None for i in plan.expired}, tally,
                     "metadata")
        return ExpireResult(
            expired_ids=strays + tuple(plan.expired),
            earliest=floor,
            deleted_files=tally.data + tally.changelog + tally.metadata,
            bytes_freed=tally.bytes,
            data_files=tally.data,
            changelog_files=tally.changelog,
            metadata_files=tally.metadata,
            kept_files=tally.kept,
        )

    # ------------------------------------------------------------------ planning
    def _plan(self, begin: int, floor: int, *, below_fence: int) -> _Plan:
        """Everything snapshots ``[begin, floor)`` free, worked out before anything is deleted
        (bad metadata stops the expiry before it deleted anything)."""
        retained = self._snapshot(floor)
        if retained is None:
            raise SnapshotNotExistError(
                f"snapshot {floor}, the first one to retain, does not exist (expired "
                "concurrently?)")
        tags = self._tagged_snapshots()
        tagged = {t.id for t in tags}
        deltas = self._deltas(begin + 1, floor, below_fence)
        protected: frozenset[str] | None = None
        if any(d is None for d in deltas.values()):
            # a delta cannot be read: what it re-added is unknown, keep what the first
            # retained snapshot holds live (read whole)
            protected = self._live_paths(retained, f"snapshot {floor}")
        skip = set(self._refs_of(retained, "retained snapshot"))
        for tag in overlapped_tags(tags, begin, floor):
            skip |= self._refs_of(tag, "tag")
        plan = _Plan()
        for sid in range(begin, floor):
            snap = self._snapshot(sid)
            if snap is None:
                continue  # expired concurrently
            if self._snapshot(sid + 1) is None:
                raise SnapshotNotExistError(
                    f"snapshot {sid + 1} vanished while expiring snapshot {sid}")
            delta = deltas.get(sid + 1)
            data = self._freed_data(sid, delta, deltas, protected, tags, plan)
            plan.data.update(data)
            keep_changelog = sid in tagged  # the tag references it
            if snap.changelog_manifest_list and not keep_changelog:
                plan.changelog.update(self._added_by_list(snap.changelog_manifest_list))
            self._plan_metadata(snap, keep_changelog, skip, plan)
            plan.expired.append(sid)
        return plan

    def _freed_data(self, sid: int, delta: Delta | None, deltas: Mapping[int, Delta | None],
                    protected: frozenset[str] | None, tags: Sequence[Snapshot],
                    plan: _Plan) -> dict[str, int | None]:
        """The data files snapshot ``sid`` frees: what the delta of ``sid + 1`` removes for
        good, minus what a later delta (up to the first retained snapshot) adds again (so
        nothing the first retained snapshot holds live goes) and what the nearest tag holds."""
        if delta is None:
            return {}
        data = dict(delta.deleted)
        keep: set[str] = set()
        if protected is not None:
            keep |= protected & data.keys()
        else:
            for path in data:
                if any(d is not None and path in d.added
                       for k, d in deltas.items() if k > sid + 1):
                    keep.add(path)
        previous = previous_tag(tags, sid + 1)
        if data and previous is not None:
            tag_files = self._tag_live_paths(previous)
            if tag_files is None:
                return {}  # cannot tell what the tag holds: leave the files (Java too)
            keep |= tag_files & data.keys()
        plan.kept += len(keep)
        return {p: size for p, size in data.items() if p not in keep}

    def _plan_metadata(self, snap: Snapshot, keep_changelog: bool, skip: set[str],
                       plan: _Plan) -> None:
        """The manifests / index files and the lists naming them that only ``snap`` (and
        other expired snapshots) reference."""
        lists = [snap.base_manifest_list, snap.delta_manifest_list]
        if snap.changelog_manifest_list and not keep_changelog:
            lists.append(snap.changelog_manifest_list)
        for name in lists:
            for m in self.meta.manifest_list(name) or []:
                if m.file_name not in skip:
                    plan.files[self.paths.manifest(m.file_name)] = m.file_size
        if snap.index_manifest:
            for ie in self.meta.index_manifest(snap.index_manifest) or []:
                if ie.file_name not in skip:
                    plan.files[self.paths.index(ie)] = ie.file_size
        sizes = {snap.base_manifest_list: snap.base_manifest_list_size,
                 snap.delta_manifest_list: snap.delta_manifest_list_size}
        for name in lists:
            if name not in skip:
                plan.owners[self.paths.manifest(name)] = sizes.get(name)
        if snap.index_manifest and snap.index_manifest not in skip:
            plan.owners[self.paths.manifest(snap.index_manifest)] = None
        if snap.statistics and snap.statistics not in skip:
            plan.owners[self.paths.child(self.layout.statistics_dir, snap.statistics)] = None

    def _deltas(self, first: int, last: int, below_fence: int) -> dict[int, Delta | None]:
        """The deltas of snapshots ``[first, last]``, each read once; None when one cannot be
        read completely. A snapshot below ``below_fence`` whose delta list is gone was being
        expired by an interrupted run (its lists go after its data): nothing to free.

        Until a delta deletes files, a delta whose manifests delete none (their list says so:
        an APPEND's) is not read: it frees nothing, and what it adds matters only to keep a
        file an earlier delta deleted (:meth:`_freed_data`). Java 0.9 reads them all."""
        out: dict[int, Delta | None] = {}
        deletes_seen = False
        for sid in range(first, last + 1):
            snap = self._snapshot(sid)
            if snap is None:
                out[sid] = None
                continue
            metas = self.meta.manifest_list(snap.delta_manifest_list)
            if metas is None:
                if sid < below_fence:
                    out[sid] = Delta()
                    continue
                raise CorruptMetadataError(
                    self.paths.manifest(snap.delta_manifest_list),
                    f"delta manifest list of snapshot {sid} is missing")
            if not deletes_seen and not any(m.num_deleted_files for m in metas):
                out[sid] = Delta()
                continue
            delta = out[sid] = read_delta(self.meta, self.paths, metas)
            deletes_seen = deletes_seen or delta is None or bool(delta.deleted)
        return out

    def _added_by_list(self, list_name: str) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for m in self.meta.manifest_list(list_name) or []:
            for e in self.meta.manifest(m.file_name) or []:
                if e.kind is not FileKind.ADD:
                    continue
                path = self.paths.data(e)
                if path is not None:
                    out[path] = e.file.file_size
                    for extra in self.paths.extras(e, path):
                        out[extra] = None
        return out

    # ------------------------------------------------------------------ protection
    def _refs_of(self, snap: Snapshot, what: str) -> frozenset[str]:
        """``FileDeletionBase.manifestSkippingSet`` for one snapshot or tag."""
        key = (snap.id, snap.base_manifest_list)
        hit = self._refs.get(key)
        if hit is not None:
            return hit
        owner = f"{what} {snap.id}"
        refs = {snap.base_manifest_list, snap.delta_manifest_list}
        for name in (snap.base_manifest_list, snap.delta_manifest_list):
            metas = self.meta.required(self.meta.manifest_list(name), name, owner)
            refs.update(m.file_name for m in metas)
        if snap.index_manifest:
            refs.add(snap.index_manifest)
            entries = self.meta.required(self.meta.index_manifest(snap.index_manifest),
                                         snap.index_manifest, owner)
            refs.update(ie.file_name for ie in entries)
        if snap.statistics:
            refs.add(snap.statistics)
        out = frozenset(refs)
        self._refs[key] = out
        return out

    def _live_paths(self, snap: Snapshot, owner: str) -> frozenset[str]:
        """Paths of every data file (and extra file) live in the snapshot; raises when its
        manifests cannot be read."""
        entries: list[ManifestEntry] = []
        for name in (snap.base_manifest_list, snap.delta_manifest_list):
            for m in self.meta.required(self.meta.manifest_list(name), name, owner):
                entries += self.meta.required(self.meta.manifest(m.file_name), m.file_name, owner)
        live: set[str] = set()
        for e in live_files(entries, source=f"{owner} ({self.table_path})"):
            path = self.paths.data(e)
            if path is not None:
                live.add(path)
                live.update(self.paths.extras(e, path))
        return frozenset(live)

    def _tag_live_paths(self, tag: Snapshot) -> frozenset[str] | None:
        key = (tag.id, tag.base_manifest_list)
        if key not in self._tag_files:
            try:
                self._tag_files[key] = self._live_paths(tag, f"tag of snapshot {tag.id}")
            except CorruptMetadataError:
                self._tag_files[key] = None
        return self._tag_files[key]

    def _tagged_snapshots(self) -> list[Snapshot]:
        """``TagManager.taggedSnapshots``: one snapshot per tagged id, by id. Re-listed on
        every call; re-read when the set of tag names changed."""
        names = frozenset(
            n for n in self.file_io.list_names(self.tags.tag_dir)
            if n.startswith("tag-") and not n.startswith(".")
        )
        if self._tag_cache is not None and self._tag_cache[0] == names:
            return self._tag_cache[1]
        by_id: dict[int, Snapshot] = {}
        for fname in sorted(names):
            path = join(self.tags.tag_dir, fname)
            tag = read_again_if_corrupt(functools.partial(self._read_tag, path))
            if tag is not None:
                by_id.setdefault(tag.id, tag)
        tags = [by_id[i] for i in sorted(by_id)]
        self._tag_cache = (names, tags)
        return tags

    def _read_tag(self, path: str) -> Snapshot | None:
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundInTableError:
            return None  # deleted while listing
        return decode_snapshot(data, path)

    def _min_consumer_next(self) -> int | None:
        """``ConsumerManager.minNextSnapshot``."""
        return read_again_if_corrupt(self.consumers.min_next_snapshot)

    # ------------------------------------------------------------------ IO
    def _snapshot(self, sid: int) -> Snapshot | None:
        """Snapshot ``sid`` (read once per expiry), None when it does not exist."""
        if sid not in self._snaps:
            try:
                self._snaps[sid] = self.snapshots.snapshot(sid)
            except SnapshotNotExistError:
                return None
        return self._snaps[sid]

    def _time_millis(self, sid: int) -> int | None:
        snap = self._snapshot(sid)
        return None if snap is None else snap.time_millis

    def _raise_fence(self, sid: int) -> None:
        """``EARLIEST = sid`` unless a valid fence is already at or above it (a concurrent
        expiry got further); written before the snapshots below it are deleted, so that a
        delayed writer that re-creates one of their ids sees it has been expired."""
        fence = self.snapshots.expiry_fence()
        if fence is None or fence < sid:
            self.file_io.write_bytes(join(self.snapshots.snapshot_dir, EARLIEST_HINT),
                                     str(sid).encode())

    def _remove_strays(self, ids: Sequence[int], begin: int, fence: int | None,
                       tally: _Tally) -> tuple[int, ...]:
        """Delete the snapshot files (of the listing ``ids``) below ``begin`` that are below
        the expiry fence found when this expiry started, i.e. strays: ids a delayed writer
        re-created after expiry had removed them (the writer withdraws them itself unless it
        died first)."""
        if fence is None:
            return ()  # no evidence that expiry passed them: fsck reports the gap
        strays = tuple(i for i in ids if i < min(begin, fence))
        self._delete({self.snapshots.snapshot_path(sid): None for sid in strays}, tally,
                     "metadata")
        return strays

    def _delete(self, files: Mapping[str, int | None], tally: _Tally, kind: str) -> None:
        """Delete ``files`` (path -> known size); missing files are fine. Paths outside the
        table are kept. On S3 one ``DeleteObjects`` per 1,000 files."""
        todo = []
        for path, size in files.items():
            if self.paths.inside(path):
                todo.append((path, size))
            else:
                tally.kept += 1

        def one(item: tuple[str, int | None]) -> int | None:
            path, size = item
            if size is None:
                try:
                    size = self.file_io.size(path)
                except FileNotFoundInTableError:
                    return None
            return size if self.file_io.delete(path) else None

        sizes: Sequence[int | None]
        if (
            self.bulk_delete is not None
            and kind in ("data", "changelog")
            and len(todo) >= self.bulk_min_files
        ):
            sizes = list(self.bulk_delete(todo))
            if len(sizes) != len(todo):
                raise StorageError(
                    self.table_path,
                    f"bulk delete returned {len(sizes)} results for {len(todo)} files",
                )
        elif self.file_io.is_s3 and todo:
            # batched (DeleteObjects), without asking first: S3 does not say whether a key
            # existed, so a file an interrupted run already deleted counts again, with the
            # size its metadata records (0 when it records none)
            self.file_io.delete_files([p for p, _ in todo])
            sizes = [size or 0 for _, size in todo]
        elif self.delete_threads > 1 and len(todo) > 1:
            with ThreadPoolExecutor(min(self.delete_threads, len(todo))) as pool:
                sizes = list(pool.map(one, todo))
        else:
            sizes = [one(item) for item in todo]
        for size in sizes:
            if size is None:
                continue
            tally.bytes += size
            if kind == "data":
                tally.data += 1
            elif kind == "changelog":
                tally.changelog += 1
            else:
                tally.metadata += 1


def _consumer_floor(floor: int, consumer_next: int | None, earliest: int, begin: int) -> int:
    """The first snapshot to retain once the consumers' next snapshot is kept (snapshots
    below ``earliest``, left by an interrupted expiry, go whatever consumers say)."""
    if consumer_next is None:
        return floor
    return min(floor, max(earliest, begin, consumer_next))
