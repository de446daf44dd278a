"""Pruned reading of a snapshot's manifests: the one home of "which manifests, which rows".

Mirrors the order of ``org.apache.paimon.operation.AbstractFileStoreScan`` (0.9): manifest
files are skipped by the manifest list's partition stats (``filterManifestFileMeta``), then
each remaining manifest's rows are filtered by partition and bucket before the rest of the
row is read (``ManifestFile.read`` with the scan's entry row filter); value-stats pruning
comes after, on the built entries (the planner's business). The scan planner and the
commit's read of the live entries of the partitions it touches both read through
:func:`read_entries`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from paimon_core.manifest_io import ManifestIO
from paimon_core.scan.predicate import ColumnStats, Predicate, might_match
from paimon_core.scan.predicate_model import (
    and_,
    greater_or_equal,
    is_in,
    is_null,
    less_or_equal,
    or_,
)
from paimon_core.spec.binary_row import deserialize_binary_row
from paimon_core.spec.manifest import ManifestEntry
from paimon_core.spec.manifest_list import ManifestFileMeta
from paimon_core.spec.stats import SimpleStats
from paimon_core.types import DataType

IntArray = npt.NDArray[np.int64]

#: above this many distinct values of a partition field, a set of partitions prunes manifests
#: by the values' range instead of by each value (a commit touching thousands of partitions
#: checks every manifest against a range, not against thousands of values)
_MAX_IN_VALUES = 256


@dataclass
class EntryFilter:
    """What a read keeps of a snapshot's manifests.

    Args:
        manifest_ok: whether a manifest (by its partition stats) may hold a wanted entry.
        partition_ok: whether entries of a partition (serialized BinaryRow) are wanted;
            evaluated once per distinct partition of a read.
        buckets_of: the buckets wanted among ``total_buckets`` (None: all of them).
        partition_pred: a predicate on the partition fields (with their names and types)
            that prunes the blocks of manifests our writer indexed (:meth:`block_ok`).
    """

    manifest_ok: Callable[[ManifestFileMeta], bool] | None = None
    partition_ok: Callable[[bytes], bool] | None = None
    buckets_of: Callable[[int], Collection[int] | None] | None = None
    partition_pred: tuple[Predicate, Sequence[str], Sequence[DataType]] | None = None
    _verdicts: dict[bytes, bool] = field(default_factory=dict, repr=False)

    @classmethod
    def of_predicate(
        cls,
        pred: Predicate,
        keys: Sequence[str],
        types: Sequence[DataType],
        partition_ok: Callable[[bytes], bool],
        buckets_of: Callable[[int], Collection[int] | None] | None = None,
    ) -> EntryFilter:
        """Manifests and blocks by ``pred`` (a predicate on the partition fields ``keys``)
        against their partition ranges, rows by ``partition_ok`` and ``buckets_of``."""
        return cls(
            manifest_ok=lambda m: manifest_may_match(m, pred, keys, types),
            partition_ok=partition_ok,
            buckets_of=buckets_of,
            partition_pred=(pred, keys, types),
        )

    def block_ok(self, first: bytes, last: bytes, count: int) -> bool:
        """Whether a block of a manifest ordered by partition values, from partition
        ``first`` to ``last``, may hold a wanted row: the first field lies between theirs;
        a later field too when every field before it is the same in both (else unknown)."""
        if self.partition_pred is None:
            return True
        pred, keys, types = self.partition_pred
        nullable = [t.with_nullable(True) for t in types]
        try:
            lo = deserialize_binary_row(first, nullable)
            hi = deserialize_binary_row(last, nullable)
        except Exception:  # not a partition row of this table: keep the block
            return True
        stats: dict[str, ColumnStats] = {}
        for i, key in enumerate(keys):
            if lo[i] is None or hi[i] is None:
                break  # nulls sort first: a range from null is unknown
            stats[key] = ColumnStats(lo[i], hi[i], 0)
            if lo[i] != hi[i]:
                break
        return might_match(pred, stats, count)

    @property
    def selects(self) -> bool:
        """Whether it drops rows at all (else manifests are read whole)."""
        return self.partition_ok is not None or self.buckets_of is not None

    def rows(
        self, partitions: list[bytes], buckets: list[int], totals: list[int]
    ) -> IntArray | None:
        """The indices of the rows kept among these columns (None: all), vectorised over rows:
        the partition test runs once per distinct partition."""
        n = len(partitions)
        keep: npt.NDArray[np.bool_] | None = None
        if self.partition_ok is not None:
            verdicts = self._verdicts
            test = self.partition_ok
            for p in dict.fromkeys(partitions).keys() - verdicts.keys():
                verdicts[p] = test(p)
            keep = np.fromiter(map(verdicts.__getitem__, partitions), np.bool_, n)
        if self.buckets_of is not None:
            b = np.asarray(buckets, dtype=np.int64)
            t = np.asarray(totals, dtype=np.int64)
            in_bucket = np.ones(n, np.bool_)
            for total in np.unique(t).tolist():
                allowed = self.buckets_of(total)
                if allowed is not None:
                    rows = t == total
                    in_bucket[rows] = np.isin(b[rows], np.fromiter(allowed, np.int64))
            keep = in_bucket if keep is None else keep & in_bucket
        return None if keep is None or bool(keep.all()) else np.flatnonzero(keep)

    @classmethod
    def of_partitions(
        cls, partitions: Collection[bytes], keys: Sequence[str], types: Sequence[DataType]
    ) -> EntryFilter:
        """Entries of exactly these partitions (serialized BinaryRows of ``keys``/``types``);
        manifests are pruned by a per-field test of their values (IN, or a range when there
        are many), which can keep a manifest no partition of the set is in, never the
        reverse."""
        wanted = frozenset(partitions)
        if not keys:
            return cls(partition_ok=wanted.__contains__)
        nullable = [t.with_nullable(True) for t in types]
        rows = [deserialize_binary_row(p, nullable) for p in wanted]
        fields = []
        for i, key in enumerate(keys):
            values = {r[i] for r in rows if r[i] is not None}
            tests = []
            if len(values) > _MAX_IN_VALUES:
                lo, hi = min(values), max(values)
                tests.append(and_(greater_or_equal(key, lo), less_or_equal(key, hi)))
            elif values:
                tests.append(is_in(key, values))
            if any(r[i] is None for r in rows):
                tests.append(is_null(key))
            fields.append(or_(*tests) if tests else None)
        pred = None if any(f is None for f in fields) else and_(*fields)  # type: ignore[arg-type]
        if pred is None:  # an empty set: no manifest holds an entry of it
            return cls(manifest_ok=lambda _: False, partition_ok=wanted.__contains__)
        return cls.of_predicate(pred, keys, types, wanted.__contains__)


def manifest_may_match(
    meta: ManifestFileMeta, pred: Predicate, keys: Sequence[str], types: Sequence[DataType]
) -> bool:
    """Whether a manifest whose partition stats are ``meta``'s may hold an entry of a partition
    matching ``pred`` (a predicate on the partition fields)."""
    stats = stats_to_columns(meta.partition_stats, keys, types)
    return might_match(pred, stats, meta.num_added_files + meta.num_deleted_files)


def stats_to_columns(
    stats: SimpleStats, names: Sequence[str], types: Sequence[DataType]
) -> dict[str, ColumnStats]:
    """Decode a SimpleStats record over ``names`` into per-column stats (unknown -> empty)."""
    if not names:
        return {}
    nullable = [t.with_nullable(True) for t in types]
    try:
        mins = deserialize_binary_row(stats.min_values, nullable)
        maxs = deserialize_binary_row(stats.max_values, nullable)
    except Exception:  # stats of another arity (dense mode, old writer): treat as unknown
        return {}
    counts = stats.null_counts
    out = {}
    for i, name in enumerate(names):
        nc = counts[i] if counts is not None and i < len(counts) else None
        out[name] = ColumnStats(mins[i], maxs[i], nc)
    return out


def read_entries(
    manifests: ManifestIO,
    metas: Sequence[ManifestFileMeta],
    flt: EntryFilter,
    *,
    max_workers: int = 8,
) -> list[ManifestEntry]:
    """The entries ``flt`` keeps of the given manifests, in list order (manifests its
    ``manifest_ok`` rejects are not read)."""
    if flt.manifest_ok is not None:
        ok = flt.manifest_ok
        metas = [m for m in metas if ok(m)]
    select = flt.rows if flt.selects else None
    blocks = flt.block_ok if select is not None and flt.partition_pred is not None else None
    return manifests.manifests(metas, select=select, blocks=blocks, max_workers=max_workers)
