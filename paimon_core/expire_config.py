"""Retention settings, the expired range and the result of a snapshot expiry.

``ExpireConfig`` mirrors ``org.apache.paimon.options.ExpireConfig`` (built from table options
like ``CoreOptions.expireConfig``), :func:`expire_end` the range choice of
``org.apache.paimon.table.ExpireSnapshotsImpl.expire`` (spec §10). The expiry itself is
:mod:`paimon_core.expire`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from paimon_core.errors import SchemaError
from paimon_core.options import INT_MAX, CoreOptions

__all__ = ["INT_MAX", "ExpireConfig", "ExpireResult", "expire_end"]

_HOUR_MILLIS = 3_600_000


@dataclass(frozen=True, slots=True)
class ExpireConfig:
    """``org.apache.paimon.options.ExpireConfig`` as built by ``CoreOptions.expireConfig``.

    Attributes:
        retain_min: ``snapshot.num-retained.min`` (>= 1).
        retain_max: ``snapshot.num-retained.max`` (>= retain_min).
        time_retained_millis: ``snapshot.time-retained``.
        max_deletes: ``snapshot.expire.limit``: at most this many snapshots per run.
        consumer_expiration_millis: ``consumer.expiration-time`` (None: consumers never expire).
        changelog_decoupled: ``CoreOptions.changelogLifecycleDecoupled``.
    """

    retain_min: int = 10
    retain_max: int = INT_MAX
    time_retained_millis: int = _HOUR_MILLIS
    max_deletes: int = 10
    consumer_expiration_millis: int | None = None
    changelog_decoupled: bool = False

    def __post_init__(self) -> None:
        if self.retain_min < 1:
            raise SchemaError(f"snapshot.num-retained.min must be >= 1, got {self.retain_min}")
        if self.retain_max < self.retain_min:
            raise SchemaError(
                f"snapshot.num-retained.max ({self.retain_max}) must not be smaller than "
                f"snapshot.num-retained.min ({self.retain_min})"
            )
        if self.max_deletes < 0:
            raise SchemaError(f"snapshot.expire.limit must be >= 0, got {self.max_deletes}")
        if self.time_retained_millis < 0:
            raise SchemaError("snapshot.time-retained must not be negative")

    @classmethod
    def from_options(cls, options: CoreOptions | Mapping[str, str]) -> ExpireConfig:
        """The configuration a table's options give (Java 0.9 defaults: min 10, max
        Integer.MAX, 1 h, limit 10): its parsed options (``table.options``), or a raw option
        map (parsed here)."""
        o = options if isinstance(options, CoreOptions) else CoreOptions(options)
        retain_min = o.snapshot_num_retained_min
        retain_max = o.snapshot_num_retained_max
        time_retained = o.snapshot_time_retained_millis
        limit = o.snapshot_expire_limit
        cl_min = o.changelog_num_retained_min
        cl_max = o.changelog_num_retained_max
        cl_time = o.changelog_time_retained_millis
        return cls(
            retain_min=retain_min,
            retain_max=retain_max,
            time_retained_millis=time_retained,
            max_deletes=limit,
            consumer_expiration_millis=o.consumer_expiration_millis,
            changelog_decoupled=(cl_max > retain_max or cl_time > time_retained
                                 or cl_min > retain_min),
        )

    def with_overrides(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        max_deletes: int | None = None,
        time_retained_millis: int | None = None,
    ) -> ExpireConfig:
        """Explicit values (API / CLI) over the table's. An explicit ``retain_max`` below the
        table's ``retain_min`` (or an explicit ``retain_min`` above its ``retain_max``) moves
        the other bound along, as asked; two explicit values that contradict each other raise
        :class:`SchemaError`."""
        lo = self.retain_min if retain_min is None else retain_min
        hi = self.retain_max if retain_max is None else retain_max
        if retain_min is None and retain_max is not None:
            lo = min(lo, max(retain_max, 1))
        if retain_max is None and retain_min is not None:
            hi = max(hi, retain_min)
        return dataclasses.replace(
            self,
            retain_min=lo,
            retain_max=hi,
            max_deletes=self.max_deletes if max_deletes is None else max_deletes,
            time_retained_millis=(self.time_retained_millis if time_retained_millis is None
                                  else time_retained_millis),
        )


def expire_end(
    latest: int,
    earliest: int,
    *,
    retain_min: int,
    retain_max: int,
    max_deletes: int,
    older_than_millis: int,
    min_consumer_next: int | None,
    time_millis: Callable[[int], int | None],
) -> int:
    """The exclusive end of the expired range (``ExpireSnapshotsImpl.expire``); pure.

    Args:
        latest / earliest: the latest and earliest snapshot ids.
        retain_min / retain_max / max_deletes: see :class:`ExpireConfig`.
        older_than_millis: snapshots with ``timeMillis >= older_than_millis`` are kept (unless
            ``retain_max`` forces them out).
        min_consumer_next: the smallest ``nextSnapshot`` of all consumers, None without any.
        time_millis: ``timeMillis`` of a snapshot id, None when it does not exist.

    Returns:
        ``end``: snapshots ``[earliest, end)`` expire (none when ``end <= earliest``).
    """
    lo = max(latest - retain_max + 1, earliest)
    end = latest - retain_min + 1
    if min_consumer_next is not None:
        end = min(end, min_consumer_next)
    end = min(end, earliest + max_deletes)
    for sid in range(lo, end):
        t = time_millis(sid)
        if t is not None and older_than_millis <= t:
            return sid
    return end


@dataclass(frozen=True)
class ExpireResult:
    """What one expiry did.

    Attributes:
        expired_ids: the snapshot ids whose files were removed, ascending.
        earliest: the earliest snapshot afterwards (the ``EARLIEST`` written), None if no snapshot.
        deleted_files: files deleted (data, changelog, metadata and snapshot files).
        bytes_freed: their total size.
        data_files / changelog_files / metadata_files: the deleted files by kind (data files
            include extra files; metadata includes manifests, lists, index and statistics
            files and the snapshot files).
        kept_files: deletion candidates that were kept (a tag or the first retained snapshot
            holds them, or they lie outside the table).
        expired_consumers: consumer ids removed by ``consumer.expiration-time``.
    """

    expired_ids: tuple[int, ...] = ()
    earliest: int | None = None
    deleted_files: int = 0
    bytes_freed: int = 0
    data_files: int = 0
    changelog_files: int = 0
    metadata_files: int = 0
    kept_files: int = 0
    expired_consumers: tuple[str, ...] = ()

    @property
    def expired(self) -> int:
        """How many snapshots expired (what Java's ``expire()`` returns)."""
        return len(self.expired_ids)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": "expire",
            "expired": self.expired,
            "expired_ids": list(self.expired_ids),
            "earliest": self.earliest,
            "deleted_files": self.deleted_files,
            "bytes_freed": self.bytes_freed,
            "data_files": self.data_files,
            "changelog_files": self.changelog_files,
            "metadata_files": self.metadata_files,
            "kept_files": self.kept_files,
            "expired_consumers": list(self.expired_consumers),
        }
