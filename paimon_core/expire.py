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
  retained snapshot, by the tags overlapping the expired range (``findOverlappedSnapshots``),
  and by ``j + 1``;
* then ``snapshot/snapshot-<j>``; at the end ``snapshot/EARLIEST = end``.

**Order and crash safety.** Snapshots are expired one at a time, oldest first; within one
snapshot data files go first, then changelog files, then manifests and index files, then the
manifest lists / index manifest / statistics file that name them, and the snapshot file last.
Every snapshot newer than the one being expired keeps all its files at every moment (its
metadata is in the skip set, its data files are not DELETEd by any delta it precedes), so a
kill at any point leaves at most the oldest snapshot incomplete. A re-run finds that snapshot
as the earliest and finishes it: the data to delete comes from the intact delta of the next
snapshot, a manifest list is deleted only after its manifests (a missing list means its
manifests are gone too), and every deletion accepts an already-missing file.

**Deviations from Java**, all keeping more, never less:

* Nothing the first retained snapshot holds live is ever deleted (defence in depth against a
  table that re-adds a deleted file name), comparing full paths.
* A tagged snapshot's changelog list, manifests and files are kept (the tag references them;
  Java deletes them and leaves the tag naming a missing changelog list). Orphan cleaning
  reclaims them once the tag is gone.
* Consumers and tags are re-read before each snapshot is expired (Java reads them once), so
  one created while an expiry runs is honoured from the next snapshot on.
* A data-file deletion whose delta manifests cannot all be read is skipped (Java does the same
  for the manifest it fails on); the files become orphans.
* ``snapshot.clean-empty-directories`` is not implemented (never deletes directories).
* A decoupled changelog lifecycle (``changelog.num-retained.*`` / ``changelog.time-retained``
  larger than the snapshot values) raises :class:`UnsupportedError` before anything happens.

**Deleting elsewhere.** ``bulk_delete`` hands a snapshot's data and changelog files (when at
least ``bulk_min_files``) to another executor, e.g. Spark tasks (``pipelines.expire``): the
driver plans, executors delete in parallel; the order above is kept (the call returns before
the snapshot's metadata goes).

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
from typing import Any, TypeVar

from paimon_core.consumer import ConsumerManager
from paimon_core.errors import (
    CorruptMetadataError,
    FileNotFoundInTableError,
    SnapshotNotExistError,
    StorageError,
    UnsupportedError,
)
from paimon_core.expire_config import INT_MAX, ExpireConfig, ExpireResult, expire_end
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.index_manifest import IndexManifestEntry, decode_index_manifest
from paimon_core.spec.manifest import FileKind, ManifestEntry, decode_manifest
from paimon_core.spec.manifest_list import ManifestFileMeta, decode_manifest_list
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import Snapshot, decode_snapshot
from paimon_core.tags import TagManager

__all__ = [
    "INT_MAX", "BulkDelete", "ExpireConfig", "ExpireResult", "ExpireSnapshots", "expire_end",
]

_T = TypeVar("_T")

BulkDelete = Callable[[Sequence[tuple[str, "int | None"]]], Sequence["int | None"]]
"""Deletes ``(path, size if known)`` items (all under the table directory, already checked);
returns, per item in order, the bytes freed, or None when the file was already missing. It
must delete every item or raise."""

@dataclass
class _Tally:
    data: int = 0
    changelog: int = 0
    metadata: int = 0
    bytes: int = 0
    kept: int = 0


def _plain_name(name: str) -> bool:
    """A file name read from metadata that is one path segment."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


class _Metadata:
    """Decoded manifest lists / manifests / index manifests by name; None = the file is gone
    (deleted by an earlier, interrupted or concurrent expiry). Undecodable files raise."""

    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.manifest_dir = TableLayout(table_path).manifest_dir
        self._lists: dict[str, list[ManifestFileMeta] | None] = {}
        self._index: dict[str, list[IndexManifestEntry] | None] = {}

    def _bytes(self, name: str) -> bytes | None:
        if not _plain_name(name):
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


class ExpireSnapshots:
    """Expires old snapshots of one table (``ExpireSnapshotsImpl``); see the module docs.

    Args:
        file_io: storage.
        table_path: the table directory.
        schema: the table's (latest) schema: partition layout and options.
        config: retention; default :meth:`ExpireConfig.from_options` of ``schema.options``.
        older_than_millis: epoch-millis cutoff replacing ``now - time_retained``.
        now_millis: the clock (tests).
        delete_threads: parallel deletions (default 1 on local disk, 8 on object stores).
        bulk_delete: deletes a snapshot's data and changelog files elsewhere (e.g. in Spark
            tasks) when there are at least ``bulk_min_files`` of them.
        bulk_min_files: the smallest batch handed to ``bulk_delete``.

    Example:
        >>> ExpireSnapshots(t.file_io, t.path, t.schema).expire()  # doctest: +SKIP
        ExpireResult(expired_ids=(1, 2), earliest=3, ...)
    """

    def __init__(
        self,
        file_io: FileIO,
        table_path: str,
        schema: TableSchema,
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
        self.schema = schema
        self.config = config or ExpireConfig.from_options(schema.options)
        self.now_millis = now_millis
        self.older_than_millis = older_than_millis
        self.delete_threads = delete_threads or (1 if file_io.is_local else 8)
        self.snapshots = SnapshotManager(file_io, self.table_path)
        self.tags = TagManager(file_io, self.table_path)
        self.consumers = ConsumerManager(file_io, self.table_path)
        self.meta = _Metadata(file_io, self.table_path)
        self.layout = TableLayout.of(self.table_path, schema)
        self._bucket_dirs: dict[tuple[bytes, int], str] = {}
        self._refs: dict[tuple[int, str], frozenset[str]] = {}
        self._tag_files: dict[tuple[int, str], frozenset[str] | None] = {}
        self._tag_cache: tuple[frozenset[str], list[Snapshot]] | None = None

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
        latest = self.snapshots.latest_snapshot_id()
        earliest = self.snapshots.earliest_snapshot_id()
        if latest is None or earliest is None:
            return ExpireResult(expired_consumers=tuple(expired_consumers))
        c = self.config
        end = expire_end(
            latest, earliest, retain_min=c.retain_min, retain_max=c.retain_max,
            max_deletes=c.max_deletes, older_than_millis=older_than,
            min_consumer_next=self._min_consumer_next(), time_millis=self._time_millis,
        )
        result = self.expire_until(earliest, end)
        return dataclasses.replace(result, expired_consumers=tuple(expired_consumers))

    def expire_until(self, earliest: int, end_exclusive: int) -> ExpireResult:
        """Expire snapshots ``[earliest, end_exclusive)`` (``ExpireSnapshotsImpl.expireUntil``)
        and write ``EARLIEST``.

        Below the expiry fence (``earliest`` when ``EARLIEST`` names an existing snapshot) every
        snapshot file is finished too: the one an interrupted expiry left (contiguous with
        the retained ones: expired like any other), and strays a delayed writer re-created in
        an expired slot (below a gap: only the file goes; what it references is orphaned).
        The fence is raised to ``j + 1`` before anything of snapshot ``j`` is deleted.
        """
        fence = self.snapshots.expiry_fence()
        floor = max(end_exclusive, earliest)
        begin = floor
        while begin > 1 and self.snapshots.snapshot_exists(begin - 1):
            begin -= 1
        tally = _Tally()
        if begin == floor:
            strays = self._remove_strays(begin, fence, tally)
            self._raise_fence(earliest)
            return ExpireResult(earliest=earliest, expired_ids=strays,
                                deleted_files=tally.metadata, metadata_files=tally.metadata)
        retained = self._snapshot(floor)
        if retained is None:
            raise SnapshotNotExistError(
                f"snapshot {floor}, the first one to retain, does not exist (expired "
                "concurrently?)")
        protected = self._live_paths(retained, f"snapshot {floor}")
        expired: list[int] = list(self._remove_strays(begin, fence, tally))
        stop = floor
        for sid in range(begin, floor):
            consumer_next = self._min_consumer_next()
            if sid >= earliest and consumer_next is not None and consumer_next <= sid:
                stop = sid  # a consumer appeared meanwhile: keep what it will read
                break
            snap = self._snapshot(sid)
            if snap is None:
                continue  # expired concurrently
            nxt = self._snapshot(sid + 1)
            if nxt is None:
                raise SnapshotNotExistError(
                    f"snapshot {sid + 1} vanished while expiring snapshot {sid}")
            self._expire_one(snap, nxt, retained, floor, protected, tally)
            expired.append(sid)
        self._raise_fence(stop)
        return ExpireResult(
            expired_ids=tuple(expired),
            earliest=stop,
            deleted_files=tally.data + tally.changelog + tally.metadata,
            bytes_freed=tally.bytes,
            data_files=tally.data,
            changelog_files=tally.changelog,
            metadata_files=tally.metadata,
            kept_files=tally.kept,
        )

    # ------------------------------------------------------------------ one snapshot
    def _expire_one(self, snap: Snapshot, nxt: Snapshot, retained: Snapshot, end: int,
                    protected: frozenset[str], tally: _Tally) -> None:
        """Everything to delete is worked out first (so that bad metadata stops the step
        before it deleted anything), then deleted in crash-safe order."""
        tags = self._tagged_snapshots()
        keep_changelog = snap.id in {t.id for t in tags}  # the tag references it

        # 1. data files no longer used from the next snapshot on
        data = self._deleted_by_delta(nxt) or {}
        keep = protected
        previous_tag = _previous(tags, nxt.id)
        if data and previous_tag is not None:
            tag_files = self._tag_live_paths(previous_tag)
            if tag_files is None:
                data = {}  # cannot tell what the tag holds: leave the files (Java too)
            else:
                keep = keep | tag_files
        tally.kept += sum(1 for p in data if p in keep)
        data = {p: size for p, size in data.items() if p not in keep}

        # 2. changelog files
        changelog: dict[str, int | None] = {}
        if snap.changelog_manifest_list and not keep_changelog:
            changelog = self._added_by_list(snap.changelog_manifest_list)

        # 3. metadata not referenced by what stays
        skip = set(self._refs_of(retained, "retained snapshot"))
        skip |= self._refs_of(nxt, "snapshot")
        for tag in _overlapped(tags, snap.id, end):
            skip |= self._refs_of(tag, "tag")
        lists = [snap.base_manifest_list, snap.delta_manifest_list]
        if snap.changelog_manifest_list and not keep_changelog:
            lists.append(snap.changelog_manifest_list)
        files: dict[str, int | None] = {}  # manifests and index files
        for name in lists:
            for m in self.meta.manifest_list(name) or []:
                if m.file_name not in skip:
                    files[self._manifest_path(m.file_name)] = m.file_size
        if snap.index_manifest:
            for ie in self.meta.index_manifest(snap.index_manifest) or []:
                if ie.file_name not in skip:
                    files[self._index_path(ie)] = ie.file_size
        owners: dict[str, int | None] = {}  # what names them: lists, index manifest, stats
        for name in lists:
            if name not in skip:
                owners[self._manifest_path(name)] = None
        if snap.index_manifest and snap.index_manifest not in skip:
            owners[self._manifest_path(snap.index_manifest)] = None
        if snap.statistics and snap.statistics not in skip:
            owners[self._child(self.layout.statistics_dir, snap.statistics)] = None

        # the fence first: from here on the id is expired (a writer that re-creates it
        # withdraws its file), and readers start at the next snapshot
        self._raise_fence(snap.id + 1)
        self._delete(data, tally, "data")
        self._delete(changelog, tally, "changelog")
        self._delete(files, tally, "metadata")
        self._delete(owners, tally, "metadata")
        # 4. the snapshot file itself, last
        self._delete({self.snapshots.snapshot_path(snap.id): None}, tally, "metadata")

    def _deleted_by_delta(self, snap: Snapshot) -> dict[str, int | None] | None:
        """Paths (with sizes) of the files the snapshot's delta removes for good: DELETE
        entries without an ADD of the same path in the same delta. None when the delta cannot
        be read completely."""
        metas = self.meta.manifest_list(snap.delta_manifest_list)
        if metas is None:
            raise CorruptMetadataError(
                self._manifest_path(snap.delta_manifest_list),
                f"delta manifest list of snapshot {snap.id} is missing")
        added: set[str] = set()
        deleted: dict[str, ManifestEntry] = {}
        for m in metas:
            entries = self.meta.manifest(m.file_name)
            if entries is None:
                return None
            for e in entries:
                path = self._data_path(e)
                if path is None:
                    continue
                if e.kind is FileKind.ADD:
                    added.add(path)
                else:
                    deleted[path] = e
        out: dict[str, int | None] = {}
        for path, e in deleted.items():
            if path in added:
                continue
            out[path] = e.file.file_size
            for extra in self._extra_paths(e, path):
                out[extra] = None
        return out

    def _added_by_list(self, list_name: str) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for m in self.meta.manifest_list(list_name) or []:
            for e in self.meta.manifest(m.file_name) or []:
                if e.kind is not FileKind.ADD:
                    continue
                path = self._data_path(e)
                if path is not None:
                    out[path] = e.file.file_size
                    for extra in self._extra_paths(e, path):
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
            path = self._data_path(e)
            if path is not None:
                live.add(path)
                live.update(self._extra_paths(e, path))
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
            tag = _read_again_if_corrupt(functools.partial(self._read_tag, path))
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
        return _read_again_if_corrupt(self.consumers.min_next_snapshot)

    # ------------------------------------------------------------------ paths
    def _child(self, directory: str, name: str) -> str:
        if not _plain_name(name):
            raise CorruptMetadataError(directory, f"file name {name!r} is not a plain name")
        return join(directory, name)

    def _manifest_path(self, name: str) -> str:
        return self._child(self.meta.manifest_dir, name)

    def _index_path(self, ie: IndexManifestEntry) -> str:
        if ie.external_path:
            return ie.external_path
        return self._child(self.layout.index_dir, ie.file_name)

    def _bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        hit = self._bucket_dirs.get(key)
        if hit is None:
            hit = self.layout.bucket_dir(partition, bucket)
            self._bucket_dirs[key] = hit
        return hit

    def _data_path(self, e: ManifestEntry) -> str | None:
        if e.file.external_path:
            return e.file.external_path
        if not _plain_name(e.file.file_name):
            return None
        return join(self._bucket_dir(e.partition, e.bucket), e.file.file_name)

    def _extra_paths(self, e: ManifestEntry, path: str) -> list[str]:
        directory = path.rsplit("/", 1)[0]
        return [join(directory, x) for x in e.file.extra_files if _plain_name(x)]

    def _inside(self, path: str) -> bool:
        prefix = self.table_path + "/"
        if not path.startswith(prefix):
            return False
        parts = path[len(prefix):].split("/")
        return all(p not in ("", ".", "..") for p in parts)

    # ------------------------------------------------------------------ IO
    def _snapshot(self, sid: int) -> Snapshot | None:
        try:
            return self.snapshots.snapshot(sid)
        except SnapshotNotExistError:
            return None

    def _time_millis(self, sid: int) -> int | None:
        snap = self._snapshot(sid)
        return None if snap is None else snap.time_millis

    def _raise_fence(self, sid: int) -> None:
        """``EARLIEST = sid`` unless a valid fence is already at or above it (a concurrent
        expiry got further); written before the snapshots below it are deleted, so that a
        delayed writer that re-creates one of their ids sees it has been expired."""
        fence = self.snapshots.expiry_fence()
        if fence is None or fence < sid:
            self.file_io.write_bytes(join(self.snapshots.snapshot_dir, "EARLIEST"),
                                     str(sid).encode())

    def _remove_strays(self, begin: int, fence: int | None, tally: _Tally) -> tuple[int, ...]:
        """Delete the snapshot files below ``begin`` that are below the expiry fence found
        when this expiry started, i.e. strays: ids a delayed writer re-created after expiry
        had removed them (the writer withdraws them itself unless it died first)."""
        if fence is None:
            return ()  # no evidence that expiry passed them: fsck reports the gap
        strays = tuple(i for i in self.snapshots.list_snapshot_ids() if i < min(begin, fence))
        for sid in strays:
            self._delete({self.snapshots.snapshot_path(sid): None}, tally, "metadata")
        return strays

    def _delete(self, files: Mapping[str, int | None], tally: _Tally, kind: str) -> None:
        """Delete ``files`` (path -> known size); missing files are fine. Paths outside the
        table are kept."""
        todo = []
        for path, size in files.items():
            if self._inside(path):
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


def _read_again_if_corrupt(read: Callable[[], _T]) -> _T:
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


def _previous(tags: Sequence[Snapshot], sid: int) -> Snapshot | None:
    """``findPreviousSnapshot``: the last tag with id < sid."""
    for t in reversed(tags):
        if t.id < sid:
            return t
    return None


def _overlapped(tags: Sequence[Snapshot], begin: int, end: int) -> list[Snapshot]:
    """``SnapshotManager.findOverlappedSnapshots``: from the last tag with id <= begin (or the
    first tag) to the last tag with id < end."""
    right = max((i for i, t in enumerate(tags) if t.id < end), default=-1)
    if right < 0:
        return []
    left = max((i for i, t in enumerate(tags) if t.id <= begin), default=0)
    return list(tags[left:right + 1])

