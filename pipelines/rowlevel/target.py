"""The target of a row-level change: one snapshot of the table as a Spark DataFrame whose
rows know where they are stored.

Every row carries two hidden columns:

* ``_paimon_file``: on append tables, the index of the data file holding the row in
  :attr:`TargetSnapshot.files` (what a copy-on-write rewrites and deletes); NULL on
  primary-key tables (rows there are merged from several files and changed by key);
* ``_paimon_row``: an id unique to the row within the snapshot (file or split index in the
  high 32 bits, row number in the low ones), which tells whether two source rows matched the
  same target row.

The snapshot is pinned once, on the driver: every evaluation of the DataFrame (a MERGE reads
it to find the touched files, then again to rewrite them) reads exactly the same rows. Each
Spark task reads a few files (append) or splits (primary key) with ``paimon_core``'s
``TableRead``, deletion vectors applied.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from paimon_core import CommitMessage, DataSplit, TableRead
from paimon_core.integration import DataFileMeta
from pipelines.config import TableHandle, limit_task_threads
from pipelines.spark_types import arrow_for_spark, conform_to_spark, spark_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FILE_COLUMN", "ROW_COLUMN", "TargetSnapshot"]

FILE_COLUMN = "_paimon_file"
ROW_COLUMN = "_paimon_row"
_ROWS_PER_UNIT = 1 << 32


@dataclass(frozen=True)
class TargetSnapshot:
    """One snapshot of a table, planned on the driver.

    Attributes:
        handle: the table, schema pinned.
        snapshot_id: the snapshot read (None: the table has no snapshot yet).
        units: what the tasks read: one split per data file on append tables (the file's
            index is its position here), the planned splits on primary-key tables.
    """

    handle: TableHandle
    snapshot_id: int | None
    units: tuple[DataSplit, ...]

    @classmethod
    def plan(cls, handle: TableHandle) -> TargetSnapshot:
        """The latest snapshot of ``handle``'s table."""
        table = handle.open()
        snapshot = table.latest_snapshot()
        if snapshot is None:
            return cls(handle, None, ())
        splits = table.new_planner(handle.schema, None).plan(snapshot).splits
        if table.is_primary_key_table:
            return cls(handle, snapshot.id, tuple(splits))
        units = tuple(dataclasses.replace(s, files=(f,), raw_convertible=True)
                      for s in splits for f in s.files)
        return cls(handle, snapshot.id, units)

    @property
    def copy_on_write(self) -> bool:
        """Whether changes rewrite files (append tables) instead of writing rows by key."""
        return not self.handle.schema.primary_keys

    def file(self, index: int) -> tuple[DataSplit, DataFileMeta]:
        unit = self.units[index]
        return unit, unit.files[0]

    def deletions(self, indexes: Sequence[int]) -> list[CommitMessage]:
        """Commit messages deleting the data files ``indexes`` (one per partition and bucket):
        the copy-on-write's removal of the files it rewrote."""
        groups: dict[tuple[bytes, int, int], list[DataFileMeta]] = {}
        for i in sorted(set(indexes)):
            split, meta = self.file(i)
            groups.setdefault((split.partition, split.bucket, split.total_buckets),
                              []).append(meta)
        return [CommitMessage(partition=p, bucket=b, total_buckets=n, deleted_files=tuple(fs),
                              table_path=self.handle.path, schema_id=self.handle.schema.id)
                for (p, b, n), fs in groups.items()]

    def frame(self, spark: SparkSession) -> DataFrame:
        """The snapshot's rows with ``_paimon_file`` and ``_paimon_row`` (see the module docs).
        """
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        schema = spark_schema(self.handle.schema.fields)
        out = T.StructType([*schema.fields,
                            T.StructField(FILE_COLUMN, T.IntegerType(), True),
                            T.StructField(ROW_COLUMN, T.LongType(), False)])
        if not self.units:
            return spark.createDataFrame([], out)
        handle, units, cow = self.handle, self.units, self.copy_on_write
        target = arrow_for_spark(out)

        def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            limit_task_threads()
            table = handle.open()
            reader = TableRead(table.file_io, handle.schema, table.schema_manager, None, None)
            for batch in batches:
                for i in batch.column("unit").to_pylist():
                    data = reader.read_split(units[i])
                    if data.num_rows == 0:
                        continue
                    n = data.num_rows
                    files = pa.array(np.full(n, i, np.int32)) if cow else pa.nulls(n, pa.int32())
                    rows = np.arange(i * _ROWS_PER_UNIT, i * _ROWS_PER_UNIT + n, dtype=np.int64)
                    data = data.append_column(FILE_COLUMN, files)
                    data = data.append_column(ROW_COLUMN, pa.array(rows))
                    yield from conform_to_spark(data, target).to_batches(max_chunksize=65536)

        tasks = max(1, min(len(units), spark.sparkContext.defaultParallelism * 2))
        ids = spark.createDataFrame([(i,) for i in range(len(units))], "unit int")
        return ids.repartitionById(tasks, F.col("unit")).mapInArrow(read, out)
