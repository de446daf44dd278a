"""Per-commit settings carried as one object (delta-rs' ``CommitProperties``).

A commit used to receive its settings as loose keyword arguments threaded through
``TableCommit`` / ``commit`` / ``overwrite`` and the pipelines' writers; :class:`CommitOptions`
carries them together, from a :class:`~paimon_core.write.builder.BatchWriteBuilder` (or a
caller of :meth:`FileStoreTable.new_commit`) down to the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

__all__ = ["CommitOptions"]


@dataclass(frozen=True, kw_only=True)
class CommitOptions:
    """Settings of one commit (or of every commit of one committer).

    Attributes:
        properties: snapshot properties (``Snapshot.properties``), e.g. the Dagster run id.
        max_retries: attempts after losing the race for a snapshot id; None = the table's
            ``commit.max-retries``.
        dynamic_partition_overwrite: overwrite only: replace just the partitions that receive
            rows (True) or everything the static spec matches (False); None = the table's
            ``dynamic-partition-overwrite``.
        watermark: the snapshot's watermark (``Snapshot.watermark``), None = unset.
    """

    properties: Mapping[str, str] = field(default_factory=dict)
    max_retries: int | None = None
    dynamic_partition_overwrite: bool | None = None
    watermark: int | None = None

    def __post_init__(self) -> None:
        # a private copy: the caller's dict may change after the options were made
        object.__setattr__(self, "properties", dict(self.properties))
        if self.max_retries is not None and self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, not {self.max_retries}")

    def with_properties(self, properties: Mapping[str, str] | None) -> CommitOptions:
        """These options with ``properties`` added (they win over existing keys)."""
        if not properties:
            return self
        return replace(self, properties={**self.properties, **properties})
