"""Picklable units of read work: one (partition, bucket) of one snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paimon_core.spec.manifest import DataFileMeta


@dataclass(frozen=True, slots=True)
class DeletionFile:
    """Where a data file's deletion vector lives (an index file range)."""

    path: str
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class DataSplit:
    """Files of one bucket to read together (``org.apache.paimon.table.source.DataSplit``).

    ``bucket_path`` is the directory holding the files; ``deletion_files`` maps a data file
    name to its deletion vector. ``raw_convertible`` is True when the files can be read
    without merging (append table, or key ranges that cannot contain the same key twice).
    """

    snapshot_id: int
    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    total_buckets: int
    bucket_path: str
    files: tuple[DataFileMeta, ...]
    deletion_files: tuple[tuple[str, DeletionFile], ...] = ()
    raw_convertible: bool = False

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    def deletion_file(self, file_name: str) -> DeletionFile | None:
        for name, df in self.deletion_files:
            if name == file_name:
                return df
        return None


@dataclass(frozen=True, slots=True)
class Plan:
    snapshot_id: int | None
    splits: tuple[DataSplit, ...]

    @property
    def row_count(self) -> int:
        return sum(s.row_count for s in self.splits)
