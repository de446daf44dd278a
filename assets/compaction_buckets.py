"""The compaction partitions of a table: one per bucket (``cdc.orders/bucket-3``), per day x
bucket for a table partitioned by day (``ref.fx_rates/bucket-1|2025-01-06``), and the bucket
layout they come from (:class:`BucketLayout`): a fixed-bucket table's ``0..N-1``, bucket 0 of
an unaware-bucket append table, the live buckets of a dynamic-bucket primary-key table
(dynamic partitions, added as the table grows: :func:`missing_buckets`)."""

from dataclasses import dataclass

import dagster as dg

from assets.labels import SettingsError
from assets.tables import DAILY_START, TableSpec
from paimon_core import FileStoreTable

__all__ = [
    "BUCKET_DIM",
    "DAY_DIM",
    "BucketLayout",
    "bucket_partitions",
    "dynamic_buckets_name",
    "live_buckets",
    "missing_buckets",
    "partition_key_of",
    "split_key",
    "table_bucket_layout",
    "table_buckets",
]

DAY_DIM, BUCKET_DIM = "dt", "bucket"


def _bucket_key(spec: TableSpec, bucket: int) -> str:
    return f"{spec.identifier}/bucket-{bucket}"


@dataclass(frozen=True)
class BucketLayout:
    """How a table spreads its rows over buckets, as its compaction sees it: the ``bucket``
    option and whether the table has a primary key. ``bucket > 0``: fixed buckets
    ``0..N-1``; ``-1`` with a primary key: dynamic buckets (a hash index assigns keys to
    buckets, new buckets appear as the table grows); ``-1`` without: an unaware-bucket append
    table (its files in bucket 0 of each partition, compacted there, as Paimon Java's
    ``BUCKET_UNAWARE`` compaction does); ``-2``: postponed buckets (not supported here).
    ``primary_key`` None: not known (a count restated for a table declared elsewhere)."""

    bucket: int
    primary_key: bool | None

    @classmethod
    def of_option(cls, text: str, primary_key: bool | None, where: str) -> "BucketLayout":
        """The layout of a ``bucket`` option's text (``where``: who declares it).

        Raises:
            SettingsError: not an integer, 0 or below -2.
        """
        try:
            bucket = int(text)
        except ValueError:
            bucket = 0
        if bucket == 0 or bucket < -2:
            raise SettingsError(f"{where}: bucket {text!r} is not a bucket count (N > 0, -1 "
                                "or -2)")
        return cls(bucket, primary_key)

    @property
    def mode(self) -> str:
        if self.bucket > 0:
            return "fixed"
        if self.bucket == -2:
            return "postpone"
        return {True: "dynamic", False: "unaware", None: "dynamic or unaware"}[
            self.primary_key]

    def __str__(self) -> str:
        return f"bucket = {self.bucket} ({self.mode})"

    def known_buckets(self) -> list[int] | None:
        """The buckets the layout alone names: ``0..N-1`` (fixed), ``[0]`` (unaware); None
        for dynamic buckets (the table's live buckets say).

        Raises:
            SettingsError: postponed buckets (``bucket = -2``).
        """
        if self.mode == "postpone":
            raise SettingsError(
                f"{self}: compaction of postponed buckets (they are rescaled into real "
                "buckets by Paimon Java's compact action) is not supported here")
        if self.bucket > 0:
            return list(range(self.bucket))
        return [0] if self.mode == "unaware" else None


def table_bucket_layout(table: FileStoreTable) -> BucketLayout:
    """The bucket layout of an open table (its schema's ``bucket``, Paimon's rule for an
    unset one; whether it has a primary key): the one place that asks the table."""
    return BucketLayout(table.schema.num_buckets, bool(table.schema.primary_keys))


def live_buckets(table: FileStoreTable) -> list[int]:
    """The buckets that hold files in the latest snapshot (any partition), ascending
    (metadata only)."""
    return sorted({int(b) for b in table.inspect.buckets().column("bucket").to_pylist()})


def table_buckets(table: FileStoreTable) -> list[int]:
    """The buckets of a table to compact: its layout's, or the live ones of a dynamic-bucket
    table."""
    known = table_bucket_layout(table).known_buckets()
    return live_buckets(table) if known is None else known


def dynamic_buckets_name(spec: TableSpec) -> str:
    """The name of the dynamic partitions of a table's compaction buckets."""
    return f"{spec.slug}_compaction_buckets"


def bucket_partitions(spec: TableSpec, day_start: str = DAILY_START,
                      layout: BucketLayout | None = None) -> dg.PartitionsDefinition:
    """The table's buckets (``cdc.orders/bucket-0`` ...), or ``dt x bucket`` for a table
    partitioned by day (days from ``day_start``): every key names the table, so no two
    compaction assets share one. The buckets: those ``layout`` names (fixed or unaware),
    else dynamic partitions (:func:`dynamic_buckets_name`) the compaction schedule fills
    from the table (dynamic buckets, or a layout not known when the code loads)."""
    known = layout.known_buckets() if layout is not None else None
    buckets: dg.PartitionsDefinition = (
        dg.DynamicPartitionsDefinition(name=dynamic_buckets_name(spec)) if known is None
        else dg.StaticPartitionsDefinition([_bucket_key(spec, b) for b in known]))
    if not spec.partition_keys:
        return buckets
    return dg.MultiPartitionsDefinition({
        DAY_DIM: dg.DailyPartitionsDefinition(start_date=day_start), BUCKET_DIM: buckets})


def split_key(spec: TableSpec, key: str) -> tuple[dict[str, str] | None, int]:
    """(table partition spec, bucket) of a compaction partition key (``cdc.orders/bucket-3``,
    or the multi-partition key ``ref.fx_rates/bucket-1|2025-01-06`` = bucket x day)."""
    if spec.partition_keys:
        mk = key if isinstance(key, dg.MultiPartitionKey) else dg.MultiPartitionKey(
            dict(zip(sorted((BUCKET_DIM, DAY_DIM)), str(key).split("|"))))
        dims = mk.keys_by_dimension
        partition: dict[str, str] | None = {spec.partition_keys[0]: dims[DAY_DIM]}
        bucket_key = dims[BUCKET_DIM]
    else:
        partition, bucket_key = None, str(key)
    table, _, bucket = bucket_key.rpartition("/bucket-")
    if table != spec.identifier or not bucket.isdigit():
        raise ValueError(f"{key!r} is not a compaction partition of {spec.identifier}")
    return partition, int(bucket)


def partition_key_of(spec: TableSpec, partition: dict[str, str] | None, bucket: int) -> str:
    """The compaction partition key of one bucket (the inverse of :func:`split_key`): the
    ``dagster/partition`` tag value its runs are limited by."""
    if partition:
        return str(dg.MultiPartitionKey({DAY_DIM: next(iter(partition.values())),
                                         BUCKET_DIM: _bucket_key(spec, bucket)}))
    return _bucket_key(spec, bucket)


def missing_buckets(instance: dg.DagsterInstance, spec: TableSpec,
                    table: FileStoreTable) -> list[str]:
    """The keys of the table's buckets (:func:`table_buckets`) its dynamic compaction
    partitions lack."""
    have = set(instance.get_dynamic_partitions(dynamic_buckets_name(spec)))
    return [k for k in (_bucket_key(spec, b) for b in table_buckets(table)) if k not in have]
