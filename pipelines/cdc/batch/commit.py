"""The commit of a CDC batch holding truncates: its changes and truncates in steps, each one
snapshot, all with the batch's identifier, committed once (a re-run after a crash commits the
steps that did not land)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from paimon_core import CommitMessage, CommitOptions, CommitStateUnknownError, PaimonError
from paimon_core.integration import CommitStep
from pipelines.config import TableHandle

__all__ = ["commit_steps", "plan_steps", "position_key"]

log = logging.getLogger(__name__)


def position_key(p: Sequence[object]) -> tuple[tuple[int, object], ...]:
    """A position (the values of the position columns) as a sort key: NULL first."""
    return tuple((0, 0) if v is None else (1, v) for v in p)


def plan_steps(segments: Sequence[Sequence[CommitMessage]]) -> list[CommitStep]:
    """The steps of a batch holding truncates: the changes before the first truncate (an
    APPEND, when there are any), the truncate (an OVERWRITE emptying the table), the changes
    up to the next truncate... the changes after the last one."""
    steps: list[CommitStep] = []
    for s, msgs in enumerate(segments):
        if any(m.new_files for m in msgs):
            steps.append(CommitStep("append", [m for m in msgs if m.new_files]))
        if s < len(segments) - 1:
            steps.append(CommitStep("truncate"))
    return steps


def commit_steps(handle: TableHandle, user: str, steps: Sequence[CommitStep], batch: int,
                  options: CommitOptions) -> list[int]:
    """Commit the steps of a batch holding truncates, once (see
    :meth:`paimon_core.TableCommit.commit_steps`): a re-run after a crash between two of its
    snapshots deletes the files it wrote again for the steps that landed and commits the
    rest. A failed commit deletes the files of the steps that did not land; a commit whose
    state is unknown keeps every file."""
    commit = handle.open().new_commit(user, options=options)
    done = len(commit.unfinished_steps(batch))
    if done:
        log.info("batch %s: %s of its %s snapshots landed before; committing the rest",
                 batch, done, len(steps))
        commit.abort([m for st in steps[:done] for m in st.messages])
    try:
        return commit.commit_steps(steps, batch)
    except CommitStateUnknownError:
        raise  # the snapshot may have landed: keep every file
    except BaseException:
        with contextlib.suppress(PaimonError):  # best effort: orphans are reclaimable
            done = (len(steps) if commit.landed(batch)
                    else len(commit.unfinished_steps(batch)))
            commit.abort([m for st in steps[done:] for m in st.messages])
        raise
