"""Compaction: LSM compaction of primary-key buckets (universal picker, full compaction,
level upgrades, ``full-compaction`` / ``lookup`` changelog) and small-file compaction of
append tables. See :mod:`paimon_core.compact.manager` for the public API."""

from paimon_core.compact.manager import (
    BucketCompactor,
    CompactExecutor,
    CompactSource,
    LocalExecutor,
    compact_bucket,
    compact_table,
    compact_with_retries,
    live_bucket_files,
)
from paimon_core.compact.options import CompactOptions

__all__ = [
    "BucketCompactor",
    "CompactExecutor",
    "CompactOptions",
    "CompactSource",
    "LocalExecutor",
    "compact_bucket",
    "compact_table",
    "compact_with_retries",
    "live_bucket_files",
]
