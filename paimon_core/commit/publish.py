"""Publishing a snapshot: the commit point (reliability.md, design rules 1, 2 and 5).

``snapshot/snapshot-N`` is created only if absent (:meth:`FileIO.try_create`: ``os.link``
locally, ``If-None-Match: *`` on S3), never below the expiry fence, and a refused or failed
create is resolved by reading the file back: ours (same commit user, identifier, kind and
manifest list) means success, someone else's means the caller re-plans, unreadable means
:class:`CommitStateUnknownError` (nothing is cleaned up). See :mod:`.table_commit`.
"""

from __future__ import annotations

import logging

from paimon_core.errors import (
    CommitStateUnknownError,
    CorruptMetadataError,
    PaimonError,
    SnapshotNotExistError,
)
from paimon_core.io.file_io import FileIO, join
from paimon_core.snapshot_manager import LATEST_HINT, SnapshotManager
from paimon_core.spec.snapshot import Snapshot

log = logging.getLogger(__name__)


class SnapshotPublisher:
    """Creates snapshots of one table and its ``LATEST`` hint."""

    def __init__(self, file_io: FileIO, snapshots: SnapshotManager) -> None:
        self.file_io = file_io
        self.snapshots = snapshots

    def publish(self, snapshot: Snapshot) -> bool:
        """Create ``snapshot-N`` only if absent and never below expiry (see the module docs);
        True only for a verified snapshot of ours."""
        if self.snapshots.below_expiry_fence(snapshot.id):
            log.info("snapshot id %s was expired while this commit was prepared: re-planning",
                     snapshot.id)
            return False
        if not self._create(snapshot):
            return False
        try:
            stray = self.snapshots.is_stray(snapshot.id)
        except PaimonError as e:  # created, but not verified: never clean up
            raise CommitStateUnknownError(
                f"snapshot {snapshot.id} was created but checking it against expiry failed "
                f"({e}); the commit may have landed: nothing was cleaned up"
            ) from e
        if not stray:
            return True
        # created in a slot that expiry had emptied: withdraw it (nothing can build on it:
        # LATEST was not written, lookups stop at the fence), then re-plan
        log.warning("snapshot id %s had been expired: withdrawing the file this commit created "
                    "there and re-planning on the latest snapshot", snapshot.id)
        path = self.snapshots.snapshot_path(snapshot.id)
        try:
            self.file_io.delete(path)
        except PaimonError as e:  # lookups ignore it; the next expiry removes it
            log.warning("could not withdraw stray %s: %s", path, e)
        return False

    def _create(self, snapshot: Snapshot) -> bool:
        """Create ``snapshot-N`` only if absent; decide ours / theirs / unknown by reading it
        back (reliability rule 2)."""
        path = self.snapshots.snapshot_path(snapshot.id)
        error: BaseException | None = None
        try:
            if self.file_io.try_create(path, snapshot.to_json_bytes()):
                return True
        except Exception as e:  # any failure: the outcome is decided by reading back
            error = e
        self.file_io.invalidate(path)
        try:
            existing = self.snapshots.snapshot(snapshot.id)
        except SnapshotNotExistError as e:
            if error is None:
                return False  # refused, then gone (expired meanwhile): re-plan
            raise CommitStateUnknownError(
                f"publishing snapshot {snapshot.id} failed ({error}) and it cannot be found; "
                "the commit may still land: nothing was cleaned up"
            ) from e
        except (CorruptMetadataError, PaimonError) as e:
            raise CommitStateUnknownError(
                f"publishing snapshot {snapshot.id} failed ({error or 'exists'}) and the existing "
                f"file cannot be read ({e}); nothing was cleaned up"
            ) from e
        # ours when it is exactly this attempt (the manifest list name is unique per attempt):
        # a retried request, or a lost response, whose write landed
        return (
            existing.commit_user == snapshot.commit_user
            and existing.commit_identifier == snapshot.commit_identifier
            and existing.commit_kind is snapshot.commit_kind
            and existing.base_manifest_list == snapshot.base_manifest_list
        )

    def write_hint(self, snapshot_id: int) -> None:
        try:
            self.file_io.write_bytes(join(self.snapshots.snapshot_dir, LATEST_HINT),
                                     str(snapshot_id).encode())
        except PaimonError as e:  # a hint is only a hint
            log.warning("could not update LATEST hint: %s", e)
