"""Which snapshots hold a commit user's commit (exactly once, reliability.md rule 3).

A pipeline commits with a stable commit user and increasing commit identifiers; a commit
whose (user, identifier) already landed is not applied again. Multi-step commits
(:mod:`.steps`) have landed once their last step has.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from paimon_core.errors import SnapshotNotExistError
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot


class CommittedLookup:
    """The snapshots of one commit user of one table."""

    def __init__(self, snapshots: SnapshotManager, commit_user: str) -> None:
        self.snapshots = snapshots
        self.commit_user = commit_user
        #: the latest snapshot the last lookup read (None: it read none); a commit builds its
        #: first attempt on it (a newer one only makes that attempt lose the race and retry)
        self.latest_seen: Snapshot | None = None

    def unfinished_steps(self, identifier: int) -> list[Snapshot]:
        """This user's snapshots of ``identifier`` (oldest first) when they are the first
        steps of a multi-step commit whose last step has not landed (a crash between two of
        its snapshots); ``[]`` otherwise."""
        found = self.landed_snapshots(identifier)
        return found if found and not _finished(found) else []

    def filter_committed(self, identifiers: Sequence[int]) -> list[int]:
        """The identifiers that have NOT been committed by this commit user yet (Java's
        ``filterCommitted``: everything up to the user's latest committed identifier is
        done; that identifier itself is not, while it is a multi-step commit whose last step
        has not landed)."""
        last: Snapshot | None = next(self.own_snapshots_newest_first(), None)
        if last is None:
            return list(identifiers)
        step = last.commit_step
        if step is not None and step[0] < step[1]:
            return [i for i in identifiers if i >= last.commit_identifier]
        return [i for i in identifiers if i > last.commit_identifier]

    def latest_committed_identifier(self) -> int | None:
        for snap in self.own_snapshots_newest_first():
            return snap.commit_identifier
        return None

    def own_snapshots_newest_first(self) -> Iterator[Snapshot]:
        """This commit user's snapshots, latest first (expired ones are skipped). The latest
        snapshot read is kept in :attr:`latest_seen`; the earliest id is looked up only when
        the walk goes past the latest snapshot."""
        latest = self.snapshots.latest_snapshot()
        self.latest_seen = latest
        if latest is None:
            return
        if latest.commit_user == self.commit_user:
            yield latest
        earliest = self.snapshots.earliest_snapshot_id()
        if earliest is None:
            return
        for sid in range(latest.id - 1, earliest - 1, -1):
            try:
                snap = self.snapshots.snapshot(sid)
            except SnapshotNotExistError:
                continue
            if snap.commit_user == self.commit_user:
                yield snap

    def landed(self, identifier: int) -> list[int]:
        """The snapshots (oldest first) in which this user's ``identifier`` already landed, of
        any kind: a commit of it again is a no-op (Java's committer skips the whole
        committable). The batch identifier (Long.MAX) is reused by design and never checked.
        The walk stops at the user's first older identifier (identifiers increase per user,
        reliability.md rule 3). A multi-step commit (:meth:`commit_steps`) has landed once its
        last step has: before, ``[]`` (see :meth:`unfinished_steps`)."""
        found = self.landed_snapshots(identifier)
        return [s.id for s in found] if _finished(found) else []

    def landed_snapshots(self, identifier: int) -> list[Snapshot]:
        """This user's snapshots of ``identifier``, oldest first."""
        self.latest_seen = None
        if identifier == BATCH_COMMIT_IDENTIFIER:
            return []
        found: list[Snapshot] = []
        for snap in self.own_snapshots_newest_first():
            if snap.commit_identifier == identifier:
                found.append(snap)
            elif snap.commit_identifier < identifier:
                break
        return sorted(found, key=lambda s: s.id)

    def find_committed(
        self, kind: CommitKind, identifier: int, after: int | None, latest: int | None
    ) -> int | None:
        """A snapshot in (after, latest] with our user, identifier and kind (never a stray
        below the expiry fence)."""
        if latest is None:
            return None
        start = max((after or 0) + 1, self.snapshots.earliest_snapshot_id() or 1)
        for sid in range(latest, start - 1, -1):
            try:
                snap = self.snapshots.snapshot(sid)
            except SnapshotNotExistError:
                break
            if (
                snap.commit_user == self.commit_user
                and snap.commit_identifier == identifier
                and snap.commit_kind is kind
            ):
                return sid
        return None


def _finished(landed: Sequence[Snapshot]) -> bool:
    """Whether the snapshots of one identifier hold its whole commit: any snapshot of a
    one-snapshot commit, or the last step of a multi-step one."""
    steps = [s.commit_step for s in landed]
    return bool(landed) and (any(s is None for s in steps)
                             or any(s is not None and s[0] == s[1] for s in steps))
