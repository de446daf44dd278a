"""Which task of the CDC job's write stage gets each decoded row.

* Fixed-bucket tables (``bucket = N``): the row's bucket (Paimon's bucket-key hash, computed
  by the decoder); task ``b`` writes bucket ``b`` and holds every row of its keys.
* Dynamic bucket tables (``bucket = -1``): buckets come from the table's hash index, so rows
  are routed as Paimon's Flink sink routes them to its bucket assigners: task ``c`` runs
  assigner channel ``c`` (:func:`paimon_core.channel_ids`: the row's partition hash and
  trimmed primary key hash), holds every row of its keys, loads the index of its slice of the
  key hashes, and writes with a :class:`paimon_core.AssignerChannel` writer: new keys go to the
  channel's own buckets (one index file per bucket, from one task), stored keys stay where
  the index says. The number of channels is ``dynamic-bucket.assigner-parallelism`` (default:
  the Spark parallelism, as Flink's default is the sink parallelism); ``initial-buckets``
  bounds the bucket residue classes (``min(initial-buckets, channels)``).
* Cross-partition tables (``bucket = -1``, a primary key without every partition key): a key
  may move partition, so rows go by the hash of the whole primary key only
  (:func:`paimon_core.integration.key_slices`): task ``t`` holds every version of its keys in
  every partition, bootstraps its slice of the table's global key index, deletes a moved key
  from its old partition, and creates only buckets ``b % tasks == t``
  (Java's ``GlobalDynamicBucketSink``). Tasks: as for dynamic buckets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from paimon_core import CoreOptions, DataType, SchemaError, TableSchema, UnsupportedError
from paimon_core.integration import (
    AssignerChannel,
    CompactOptions,
    channel_ids,
    conform_column,
    key_slices,
)

__all__ = ["Routing", "routing"]


@dataclass(frozen=True)
class Routing:
    """How decoded rows reach the write tasks.

    Attributes:
        tasks: number of write tasks (buckets, or assigner channels).
        assigners: bucket residue classes of a dynamic bucket table (0 for fixed buckets).
        cross_partition: rows go by their whole primary key (key slices), not by partition.
    """

    tasks: int
    assigners: int = 0
    cross_partition: bool = False

    @property
    def dynamic(self) -> bool:
        return self.assigners > 0

    def task_ids(self, rows: pa.Table, schema: TableSchema, bucket_column: str) -> np.ndarray:
        """The write task of every decoded row (rejected rows, whose keys are NULL, too)."""
        if not self.dynamic:
            return np.asarray(rows.column(bucket_column).to_numpy(zero_copy_only=False))
        if not rows.num_rows:
            return np.zeros(0, np.int32)

        def cols(names: list[str]) -> tuple[list[pa.Array], list[DataType]]:
            types = [schema.field(k).type.with_nullable(True) for k in names]
            return [conform_column(rows.column(k), t, k) for k, t in zip(names, types)], types

        if self.cross_partition:
            keys, key_types = cols(list(schema.primary_keys))
            return key_slices(keys, key_types, self.tasks)
        part, part_types = cols(list(schema.partition_keys))
        keys, key_types = cols(list(schema.trimmed_primary_keys))
        return channel_ids(part, part_types, keys, key_types, self.tasks, self.assigners)

    def key_columns(self, schema: TableSchema) -> list[str]:
        """The columns :meth:`task_ids` reads."""
        if self.cross_partition:
            return list(schema.primary_keys)
        return [*schema.partition_keys, *schema.trimmed_primary_keys]

    def channel(self, task: int) -> AssignerChannel | None:
        """The assigner channel write task ``task`` runs (None for fixed buckets)."""
        if not self.dynamic:
            return None
        return AssignerChannel(task, self.tasks, self.assigners)


def routing(schema: TableSchema, parallelism: int) -> Routing:
    """The routing of a primary-key table's Spark write tasks (the CDC job's write stage,
    :func:`pipelines.writer.write_dataframe`).

    Raises:
        UnsupportedError: a bucket mode the job cannot write, or a dynamic bucket table that
            needs lookup compaction (the message names the option that needs it, e.g.
            ``deletion-vectors.enabled``, and ``bucket``).
        SchemaError: invalid ``dynamic-bucket.*`` options.
    """
    n = schema.num_buckets
    if n > 0:
        return Routing(n)
    if n != -1:
        raise UnsupportedError(f"CDC cannot write a table with bucket={n}: set the table "
                               "option 'bucket' to a fixed count (> 0) or to -1 (dynamic)")
    settings = CompactOptions.from_schema(schema).lookup_settings
    if settings:
        raise UnsupportedError(
            f"CDC cannot write a dynamic bucket table (bucket=-1) with {' and '.join(settings)}"
            ": its assigner tasks may share a bucket, and that option needs every level-0 file "
            "compacted at each commit by the bucket's one writer; set the table option "
            "'bucket' to a fixed count (> 0)")
    options = CoreOptions(schema.options)
    tasks = options.dynamic_bucket_assigner_parallelism or max(1, parallelism)
    initial = options.dynamic_bucket_initial_buckets
    if tasks < 1:
        raise SchemaError("dynamic-bucket.assigner-parallelism must be >= 1")
    if schema.cross_partition_update:
        return Routing(tasks, tasks, cross_partition=True)
    return Routing(tasks, min(initial or tasks, tasks))
