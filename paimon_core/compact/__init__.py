"""Compaction: LSM compaction of primary-key buckets (universal picker, full compaction,
level upgrades, ``full-compaction`` / ``lookup`` changelog) and small-file compaction of
append tables. See :mod:`paimon_core.compact.manager` for the public API."""

from paimon_core.compact.manager import (
    BucketCompactor,
    compact_bucket,
    compact_table,
    live_bucket_files,
)
from paimon_core.compact.options import CompactOptions

__all__ = [
    "BucketCompactor",
    "CompactOptions",
    "compact_bucket",
    "compact_table",
    "live_bucket_files",
]
