"""Commits made of several snapshots under one commit identifier, in order, exactly once.

A CDC batch holding a truncate is committed as the changes before it (APPEND), the truncate
(an OVERWRITE deleting every live file) and the changes after it (APPEND), all with the
batch's identifier. Each snapshot records its step (:data:`STEP_PROPERTY` = ``"i/n"``), so
that a writer restarted after a crash between two snapshots resumes after the last step that
landed instead of applying the first ones again or treating the commit as done:

* :meth:`TableCommit.landed` / :meth:`TableCommit.filter_committed` count an identifier as
  committed only once its last step landed;
* :meth:`TableCommit.commit_steps` skips the steps found and commits the rest;
* ``fsck``'s I2 (no commit applied twice) tells the steps apart.

The steps must be the same on every run of the commit (same count, same order): a run that
plans another count than the snapshots found is refused (:class:`CommitConflictError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from paimon_core.commit_message import CommitMessage
from paimon_core.errors import CommitConflictError, SchemaError
from paimon_core.spec.snapshot import STEP_PROPERTY, Snapshot

__all__ = ["STEP_PROPERTY", "CommitStep", "steps_done"]


@dataclass(frozen=True)
class CommitStep:
    """One snapshot of a multi-step commit: ``append`` commits new files (the messages may not
    compact or delete: one snapshot per step), ``truncate`` deletes every live file (an
    OVERWRITE snapshot; no messages)."""

    kind: Literal["append", "truncate"]
    messages: Sequence[CommitMessage] = ()

    def __post_init__(self) -> None:
        if self.kind == "truncate":
            if self.messages:
                raise SchemaError("a truncate step takes no messages")
            return
        if self.kind != "append":
            raise ValueError(f"kind must be 'append' or 'truncate', not {self.kind!r}")
        if any(m.compact_before or m.compact_after or m.deleted_files for m in self.messages):
            raise SchemaError("an append step takes only new files (write it with "
                              "write-only=true: no compaction)")
        if not any(m.new_files for m in self.messages):
            raise SchemaError("an append step without new files would make no snapshot")


def steps_done(landed: Sequence[Snapshot], planned: int) -> int | None:
    """How many of ``planned`` steps the snapshots ``landed`` (one identifier's, oldest
    first) hold: ``None`` when the identifier was committed in one snapshot (nothing to
    resume).

    Raises:
        CommitConflictError: the snapshots are steps of a commit of another step count.
    """
    if not landed:
        return 0
    steps = [s.commit_step for s in landed]
    if any(s is None for s in steps):
        return None
    counts = {s[1] for s in steps if s is not None}
    if counts != {planned}:
        raise CommitConflictError(
            f"identifier {landed[0].commit_identifier} was committed in steps of "
            f"{sorted(counts)} (snapshots {[s.id for s in landed]}); this commit plans "
            f"{planned}: the steps must be the same on every run")
    return max(s[0] for s in steps if s is not None)
