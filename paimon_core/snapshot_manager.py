"""Finding snapshots: latest / earliest (hints verified), by id, by time, by tag.

Mirrors ``org.apache.paimon.utils.SnapshotManager``. ``LATEST``/``EARLIEST`` are only hints
(invariant I5): a hint that is garbage, stale or points at a missing file falls back to a fresh
listing of ``snapshot/``.
"""

from __future__ import annotations

from collections.abc import Iterator

from paimon_core.errors import (
    CorruptMetadataError,
    FileNotFoundInTableError,
    SnapshotExpiredError,
    SnapshotNotExistError,
    StorageError,
    TagNotExistError,
)
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout
from paimon_core.spec.snapshot import Snapshot, decode_snapshot

SNAPSHOT_PREFIX = "snapshot-"
TAG_PREFIX = "tag-"
#: the hint files in ``snapshot/`` (Java's ``SnapshotManager.EARLIEST`` / ``LATEST``); EARLIEST
#: is also the expiry fence (reliability rule 5)
EARLIEST_HINT = "EARLIEST"
LATEST_HINT = "LATEST"


def _expired(snapshot_id: int, earliest: int | None) -> SnapshotExpiredError:
    return SnapshotExpiredError(
        f"snapshot {snapshot_id} has expired (earliest is {earliest}); keep more "
        "snapshots with 'snapshot.num-retained.min' / 'snapshot.time-retained', or "
        "register a consumer ('consumer-id') so expiry keeps what it has not read"
    )


def contiguous_tail(ids: list[int]) -> list[int]:
    """The ids of the longest run of consecutive ids ending at the highest (``ids`` sorted)."""
    start = len(ids) - 1
    while start > 0 and ids[start - 1] == ids[start] - 1:
        start -= 1
    return ids[start:]


class SnapshotManager:
    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.snapshot_dir = TableLayout(table_path).snapshot_dir
        self.tag_dir = TableLayout(table_path).tag_dir

    def snapshot_path(self, snapshot_id: int) -> str:
        return join(self.snapshot_dir, f"{SNAPSHOT_PREFIX}{snapshot_id}")

    def tag_path(self, name: str) -> str:
        return join(self.tag_dir, f"{TAG_PREFIX}{name}")

    # ---- ids
    def list_snapshot_ids(self) -> list[int]:
        return self.list_snapshot_dir()[0]

    def list_snapshot_dir(self) -> tuple[list[int], frozenset[str]]:
        """One listing of ``snapshot/``: the snapshot ids (sorted) and the hint files present
        (:data:`EARLIEST_HINT`, :data:`LATEST_HINT`)."""
        ids = []
        hints = set()
        for name in self.file_io.list_names(self.snapshot_dir):
            if name.startswith(SNAPSHOT_PREFIX):
                rest = name[len(SNAPSHOT_PREFIX) :]
                if rest.isdigit():
                    ids.append(int(rest))
            elif name in (EARLIEST_HINT, LATEST_HINT):
                hints.add(name)
        return sorted(ids), frozenset(hints)

    def _read_hint(self, name: str, *, strict: bool = False) -> int | None:
        """The id a hint holds, or None when it is missing or garbage. ``strict``: digits
        only, as Java's ``Long.parseLong`` takes it (for the fence, which is authoritative)."""
        try:
            raw = self.file_io.read_text(join(self.snapshot_dir, name))
        except (FileNotFoundInTableError, StorageError):
            return None
        text = raw if strict else raw.strip()
        if not (text.isascii() and text.isdigit()):
            return None
        value = int(text)
        return value if 0 < value < 2**63 else None

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return self.file_io.is_file(self.snapshot_path(snapshot_id))

    def latest_snapshot_id(self) -> int | None:
        hint = self._read_hint(LATEST_HINT)
        if (hint is not None and self.snapshot_exists(hint)
                and not self.snapshot_exists(hint + 1) and not self.below_expiry_fence(hint)):
            return hint
        ids = self.list_snapshot_ids()
        return ids[-1] if ids else None

    def _hinted_latest(self) -> Snapshot | None:
        """The snapshot ``LATEST`` names when it is the latest (read whole: its ``GET`` also
        proves it exists; then no ``snapshot-<id+1>``, and not below the expiry fence), as
        Java's ``findLatest``: four requests, no listing. None: ask a listing."""
        hint = self._read_hint(LATEST_HINT)
        if hint is None:
            return None
        path = self.snapshot_path(hint)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundInTableError:
            return None
        if self.snapshot_exists(hint + 1) or self.below_expiry_fence(hint):
            return None
        return decode_snapshot(data, path, expected_id=hint)

    def earliest_snapshot_id(self) -> int | None:
        """The expiry fence when it names an existing snapshot; else, from a listing, the
        first id of the contiguous run that ends at the highest id (strays below a gap are
        not snapshots)."""
        fence = self.expiry_fence()
        if fence is not None:
            return fence
        ids = self.list_snapshot_ids()
        return contiguous_tail(ids)[0] if ids else None

    def expiry_fence(self) -> int | None:
        """``EARLIEST`` when it names an existing snapshot (expiry raises it before deleting,
        so the snapshot it names is deleted only after a higher fence was written: a fence
        that names a missing file is re-read, then, still missing, garbage)."""
        seen: int | None = None
        for _ in range(4):
            fence = self._read_hint(EARLIEST_HINT, strict=True)
            if fence is None or fence == seen:
                return None
            if self.snapshot_exists(fence):
                return fence
            seen = fence  # expired meanwhile (a higher fence follows) or garbage
        return None

    def below_expiry_fence(self, snapshot_id: int) -> bool:
        """Has expiry passed ``snapshot_id`` (its slot must never be published again)?"""
        hint = self._read_hint(EARLIEST_HINT, strict=True)
        if hint is None or hint <= snapshot_id:
            return False  # the common case: one read
        fence = self.expiry_fence()
        return fence is not None and fence > snapshot_id

    def has_expired(self, snapshot_id: int) -> bool:
        """Has expiry removed ``snapshot_id``, or begun to (below the fence)? For a reader that
        finds a file of the snapshot it read missing: True means it was slower than retention
        (read the latest snapshot again), False that the table is damaged."""
        path = self.snapshot_path(snapshot_id)
        self.file_io.invalidate(path)
        return self.below_expiry_fence(snapshot_id) or not self.file_io.is_file(path)

    def is_stray(self, snapshot_id: int) -> bool:
        """Is the existing file ``snapshot-<id>`` a stray, not a snapshot: below the expiry
        fence, or below a gap under the highest id (ids are only ever deleted oldest first,
        so a real snapshot below a missing id would have been deleted before it)?"""
        if self.below_expiry_fence(snapshot_id):
            return True
        ids = self.list_snapshot_ids()
        return bool(ids) and ids[-1] > snapshot_id and snapshot_id + 1 not in set(ids)

    # ---- snapshots
    def snapshot(self, snapshot_id: int) -> Snapshot:
        path = self.snapshot_path(snapshot_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundInTableError as e:
            earliest = self.earliest_snapshot_id()
            if earliest is not None and snapshot_id < earliest:
                raise _expired(snapshot_id, earliest) from e
            latest = self.latest_snapshot_id()
            raise SnapshotNotExistError(
                f"snapshot {snapshot_id} does not exist (latest is {latest})"
            ) from e
        return decode_snapshot(data, path, expected_id=snapshot_id)

    def retained_snapshot(self, snapshot_id: int) -> Snapshot:
        """:meth:`snapshot` for time travel: an id below the expiry fence has expired, even
        when a stray file holds it."""
        if self.below_expiry_fence(snapshot_id):
            raise _expired(snapshot_id, self.earliest_snapshot_id())
        return self.snapshot(snapshot_id)

    def latest_snapshot(self) -> Snapshot | None:
        """The latest snapshot: through the ``LATEST`` hint when it holds (no listing), else
        from a fresh listing."""
        hinted = self._hinted_latest()
        if hinted is not None:
            return hinted
        sid = self.latest_snapshot_id()
        return None if sid is None else self.snapshot(sid)

    def earliest_snapshot(self) -> Snapshot | None:
        sid = self.earliest_snapshot_id()
        return None if sid is None else self.snapshot(sid)

    def snapshots(self) -> Iterator[Snapshot]:
        """The snapshots, oldest first (none below the expiry fence)."""
        fence = self.expiry_fence() or 0
        for sid in self.list_snapshot_ids():
            if sid < fence:
                continue
            try:
                yield self.snapshot(sid)
            except SnapshotNotExistError:
                continue  # expired while iterating

    def earlier_or_equal_time_millis(self, timestamp_millis: int) -> Snapshot | None:
        """The latest snapshot with ``timeMillis <= timestamp_millis`` (ties: highest id)."""
        best: Snapshot | None = None
        for snap in self.snapshots():
            if snap.time_millis <= timestamp_millis and (best is None or snap.id > best.id):
                best = snap
        return best

    # ---- tags
    def list_tags(self) -> list[str]:
        return sorted(
            n[len(TAG_PREFIX) :]
            for n in self.file_io.list_names(self.tag_dir)
            if n.startswith(TAG_PREFIX)
        )

    def tag(self, name: str) -> Snapshot:
        path = self.tag_path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundInTableError as e:
            raise TagNotExistError(name) from e
        snap = decode_snapshot(data, path)
        if snap is None:  # pragma: no cover
            raise CorruptMetadataError(path, "empty tag")
        return snap
