"""Enumerated table-option values (the enums of ``org.apache.paimon.CoreOptions``); pure.

Each member's value is Paimon's option string, so ``MergeEngine.FIRST_ROW == "first-row"``
holds and the members print as the option text. The option keys and their typed accessors are
in :mod:`paimon_core.options`. :class:`BucketMode` is what the ``bucket`` option means for a table,
with :func:`parse_bucket`, the one parse of that option's value.
"""

from __future__ import annotations

from enum import StrEnum

from paimon_core.errors import SchemaError

__all__ = ["BucketMode", "ChangelogProducer", "MergeEngine", "StartupMode", "parse_bucket"]

#: the largest ``bucket`` count (``Integer.MAX_VALUE``)
MAX_BUCKETS = 2**31 - 1
#: ``bucket = -1``: dynamic buckets (primary-key tables) or no buckets (append tables)
DYNAMIC_BUCKET = -1
#: ``bucket = -2``: postponed buckets (``BucketMode.POSTPONE_BUCKET``, Paimon 1.1+)
POSTPONE_BUCKET = -2


class MergeEngine(StrEnum):
    """``merge-engine`` (``CoreOptions.MergeEngine``); default ``deduplicate``."""

    DEDUPLICATE = "deduplicate"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATE = "aggregation"
    FIRST_ROW = "first-row"


class ChangelogProducer(StrEnum):
    """``changelog-producer`` (``CoreOptions.ChangelogProducer``); default ``none``."""

    NONE = "none"
    INPUT = "input"
    FULL_COMPACTION = "full-compaction"
    LOOKUP = "lookup"


class StartupMode(StrEnum):
    """``scan.mode`` (``CoreOptions.StartupMode``, Paimon 0.9); default ``default``.

    ``full`` is the deprecated alias of ``latest-full``.
    """

    DEFAULT = "default"
    FULL = "full"
    LATEST_FULL = "latest-full"
    LATEST = "latest"
    FROM_SNAPSHOT = "from-snapshot"
    FROM_SNAPSHOT_FULL = "from-snapshot-full"
    FROM_TIMESTAMP = "from-timestamp"
    COMPACTED_FULL = "compacted-full"
    FROM_FILE_CREATION_TIME = "from-file-creation-time"
    INCREMENTAL = "incremental"


def parse_bucket(raw: str) -> int:
    """The value of the ``bucket`` option: a count in ``1..2^31-1``, ``-1`` or ``-2``.

    Raises:
        SchemaError: not an integer, or ``0`` / below ``-2`` (naming the value).
    """
    try:
        n = int(raw.strip())
    except ValueError as e:
        raise SchemaError(f"option bucket={raw!r} is not an integer") from e
    if n == 0 or n < POSTPONE_BUCKET or n > MAX_BUCKETS:
        raise SchemaError(f"option bucket={raw!r}: must be -1 (dynamic/unaware), -2 (postpone) "
                          f"or in 1..{MAX_BUCKETS}")
    return n


class BucketMode(StrEnum):
    """How a table's rows find their bucket (``org.apache.paimon.table.BucketMode``)."""

    #: ``bucket > 0``: the bucket key's hash modulo the count
    HASH_FIXED = "hash-fixed"
    #: ``bucket = -1`` on a primary-key table: each key's bucket kept in a hash index
    HASH_DYNAMIC = "hash-dynamic"
    #: ``bucket = -1`` on a primary-key table whose key lacks a partition key: a key may move
    #: to another partition; a global index (key -> partition, bucket) finds its old row
    #: (Java 0.9 ``CROSS_PARTITION``, ``GlobalIndexAssigner``; no index files)
    CROSS_PARTITION = "cross-partition"
    #: ``bucket = -1`` on an append table: no buckets (every file in ``bucket-0``)
    BUCKET_UNAWARE = "bucket-unaware"
    #: ``bucket = -2`` on a primary-key table: files wait in ``bucket-postpone``
    POSTPONE = "postpone"

    @classmethod
    def of(cls, num_buckets: int, primary_key: bool, *,
           cross_partition: bool = False) -> BucketMode:
        """The mode of a table with ``bucket = num_buckets`` (see :func:`parse_bucket`), as
        Java's ``KeyValueFileStore.bucketMode`` (primary-key tables: -2 postpone, -1 dynamic,
        or cross-partition when ``cross_partition``: the primary key lacks a partition key,
        ``TableSchema.crossPartitionUpdate``; else fixed) and
        ``AppendOnlyFileStore.bucketMode`` (append tables: -1 unaware, else fixed).

        Raises:
            SchemaError: ``-2`` on an append table (Java's ``SchemaValidation``: postpone
                bucket is for primary-key tables), a cross-partition key with a bucket other
                than -1 (``SchemaValidation``), or a count :func:`parse_bucket` refuses.
        """
        if cross_partition and primary_key and num_buckets != DYNAMIC_BUCKET:
            raise SchemaError(
                f"option bucket={num_buckets}: a primary key without all partition keys "
                "(cross-partition update) needs dynamic bucket mode (bucket = -1), as Paimon "
                "requires")
        if num_buckets > 0:
            return cls.HASH_FIXED
        if num_buckets == DYNAMIC_BUCKET:
            if not primary_key:
                return cls.BUCKET_UNAWARE
            return cls.CROSS_PARTITION if cross_partition else cls.HASH_DYNAMIC
        if num_buckets == POSTPONE_BUCKET and primary_key:
            return cls.POSTPONE
        what = "an append table" if num_buckets == POSTPONE_BUCKET else "any table"
        raise SchemaError(f"option bucket={num_buckets} is not valid for {what}")
