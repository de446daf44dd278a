"""Commit users (``Snapshot.commitUser``: who committed a snapshot), named by one scheme,
``<kind>-<name>``, and what one write commits as (:class:`WriteSpec`).

* a one-off writer (a batch write, a compaction, a Spark write given no identity):
  :func:`new_commit_user` -> ``<kind>-<uuid>`` (``batch-…``, ``compact-…``, ``spark-…``);
* a writer whose later runs must find its earlier commits (exactly-once by commit identifier:
  a CDC table's ingest, a derived table, a streaming query): :func:`stable_commit_user` ->
  ``<kind>-<name>`` (``cdc-shop.orders``, ``dagster-mart-orders-enriched``,
  ``spark-stream-<digest>``);
* one orchestrator run (a Dagster run's compaction or overwrite): :func:`run_commit_user` ->
  ``dagster-run-<run id>`` (runs before issue 29 committed as ``dagster:<run id>``:
  :data:`LEGACY_RUN_USER` keeps that form for finding their snapshots).

A stable user must not change its spelling: a re-run finds its committed identifiers by it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from paimon_core.commit.options import CommitOptions
from paimon_core.errors import ConfigError

__all__ = [
    "LEGACY_RUN_USER",
    "WriteSpec",
    "new_commit_user",
    "run_commit_user",
    "stable_commit_user",
]

#: the commit user of a Dagster run before issue 29 (``dagster:<run id>``)
LEGACY_RUN_USER = "dagster:{run_id}"


def stable_commit_user(kind: str, name: str) -> str:
    """``<kind>-<name>``: the same writer, the same user, run after run."""
    if not kind or not name:
        raise ConfigError("commit user", f"needs a kind and a name, got {kind!r} / {name!r}")
    return f"{kind}-{name}"


def new_commit_user(kind: str) -> str:
    """``<kind>-<uuid>``: a writer of its own, never the same twice."""
    return stable_commit_user(kind, str(uuid.uuid4()))


def run_commit_user(run_id: str) -> str:
    """``dagster-run-<run id>``: one per run, so a run never takes another's snapshot for its
    own, and the snapshot names the run (stable across the run's step retries)."""
    return stable_commit_user("dagster-run", run_id)


@dataclass(frozen=True)
class WriteSpec:
    """What one write commits as, made by its caller: the commit ``user``, the commit
    ``identifier`` (a monotonically increasing batch id: a re-run of a committed one writes
    nothing; None: a batch commit, never deduplicated) and the commit's ``options``
    (snapshot properties, ``dynamic_partition_overwrite``, ...)."""

    user: str
    identifier: int | None = None
    options: CommitOptions = field(default_factory=CommitOptions)

    @classmethod
    def new(cls, kind: str, *, user: str | None = None, identifier: int | None = None,
            options: CommitOptions | None = None) -> WriteSpec:
        """A spec for ``user``, or for a fresh :func:`new_commit_user` of ``kind``."""
        return cls(user or new_commit_user(kind), identifier, options or CommitOptions())
