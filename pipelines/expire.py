"""Expiry job: snapshot expiration, then orphan-file removal with the deletions spread over
Spark tasks.

* **Snapshots**: ``paimon_core.expire.ExpireSnapshots`` plans on the driver (retention from
  the table's ``snapshot.*`` options or the flags; what each expired snapshot frees), one
  snapshot at a time, oldest first, in its crash-safe order (data files, then metadata, the
  snapshot file last). A snapshot's data and changelog files, when there are at least
  ``--bulk-min-files`` (default 64), are deleted by Spark tasks in parallel
  (:func:`bulk_deleter`); fewer are deleted by ``delete_threads`` driver threads, as are the
  metadata files.
* **Orphans** (``--remove-orphans``): the driver lists them
  (``paimon_core.orphans.remove_orphan_files(dry_run=True)``: files no snapshot, tag or
  changelog references, last modified before ``--older-than-ms``, default now - 1 day), then
  Spark tasks delete them through FileIO, each path checked again to lie inside the table.

The session may be given as a function that starts it: it is then called only when there are
files for Spark tasks to delete (an expiry with nothing to do starts no JVM).

Run (:mod:`pipelines.jobs.expire`)::

    python -m pipelines.jobs.expire --warehouse W --table db.t [--retain-min N] [--retain-max N]
        [--older-than-ms T] [--remove-orphans] [--orphans-older-than-ms T] [--dry-run]
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from paimon_core import ExpireConfig, ExpireSnapshots, PaimonError, remove_orphan_files
from paimon_core.errors import FileNotFoundInTableError
from paimon_core.integration import BulkDelete
from pipelines.config import (
    CatalogSettings,
    TableHandle,
)
from pipelines.session import default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ExpireReport", "SparkLike", "bulk_deleter", "delete_files", "expire"]

log = logging.getLogger(__name__)

#: a session, or a function returning one (called only when Spark has work)
SparkLike: TypeAlias = "SparkSession | Callable[[], SparkSession]"


def _session(spark: SparkLike) -> SparkSession:
    return spark() if callable(spark) else spark


@dataclass
class ExpireReport:
    """What the job did: the snapshot expiry's summary and the orphans removed."""

    table: str
    expire: dict[str, Any] = field(default_factory=dict)
    orphans: list[str] = field(default_factory=list)
    orphan_bytes: int = 0
    orphans_deleted: int = 0
    dry_run: bool = False

    def to_json(self) -> str:
        return json.dumps({"table": self.table, "expire": self.expire,
                           "orphans": len(self.orphans), "orphan_bytes": self.orphan_bytes,
                           "orphans_deleted": self.orphans_deleted, "dry_run": self.dry_run},
                          sort_keys=True)


def delete_files(spark: SparkLike, handle: TableHandle, paths: Sequence[str],
                 *, parallelism: int | None = None) -> int:
    """Delete ``paths`` (files of the table) in Spark tasks through FileIO; returns how many
    were deleted (missing ones are fine). Paths outside the table are refused in the task."""
    # a known size (0) spares the tasks a size lookup: only whether each file went counts
    freed = bulk_deleter(spark, handle, parallelism=parallelism)([(p, 0) for p in paths])
    return sum(1 for x in freed if x is not None)


def bulk_deleter(
    spark: SparkLike, handle: TableHandle, *, parallelism: int | None = None
) -> BulkDelete:
    """A ``bulk_delete`` for :class:`ExpireSnapshots`: the files are deleted by Spark tasks
    through FileIO (each path checked again to lie inside the table); returns the bytes freed
    per file (None = already missing)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    prefix = handle.path.rstrip("/") + "/"
    out_schema = pa.schema([pa.field("path", pa.string()), pa.field("freed", pa.int64())])

    def delete(items: Sequence[tuple[str, int | None]]) -> list[int | None]:
        if not items:
            return []
        session = _session(spark)
        n = max(1, min(len(items), parallelism or default_parallelism(session) * 2))
        df = session.createDataFrame(
            [(i % n, p, s) for i, (p, s) in enumerate(items)], "idx int, path string, size long"
        ).repartitionById(n, F.col("idx")).select("path", "size")

        def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            fio = handle.settings.file_io()
            for b in batches:
                paths, freed = [], []
                for path, size in zip(b.column("path").to_pylist(), b.column("size").to_pylist()):
                    rest = path[len(prefix):] if path.startswith(prefix) else None
                    if not rest or any(x in ("", ".", "..") for x in rest.split("/")):
                        raise PaimonError(f"refusing to delete {path!r}: not a file of the table")
                    if size is None:
                        try:
                            size = fio.size(path)
                        except FileNotFoundInTableError:
                            size = None
                    paths.append(path)
                    freed.append(size if size is not None and fio.delete(path) else None)
                yield pa.RecordBatch.from_pydict({"path": paths, "freed": freed},
                                                 schema=out_schema)

        rows = df.mapInArrow(task, StructType([StructField("path", StringType()),
                                               StructField("freed", LongType())])).collect()
        got = {r["path"]: r["freed"] for r in rows}
        if len(got) != len({p for p, _ in items}):
            raise PaimonError(f"bulk delete: {len(got)} results for {len(items)} files")
        return [None if got[p] is None else int(got[p]) for p, _ in items]

    return delete


def expire(
    spark: SparkLike,
    settings: CatalogSettings,
    identifier: str,
    *,
    retain_min: int | None = None,
    retain_max: int | None = None,
    older_than_millis: int | None = None,
    max_deletes: int | None = None,
    expire_snapshots: bool = True,
    remove_orphans: bool = False,
    orphans_older_than_millis: int | None = None,
    dry_run: bool = False,
    delete_threads: int | None = None,
    bulk_min_files: int = 64,
) -> ExpireReport:
    """Expire snapshots (planned on the driver, big batches of data files deleted by Spark
    tasks) and remove orphan files (Spark tasks); see the module docs. ``dry_run`` only lists
    orphans (snapshot expiry is skipped then)."""
    handle = TableHandle.load(settings, identifier)
    report = ExpireReport(handle.identifier, dry_run=dry_run)
    table = handle.open()
    if expire_snapshots and not dry_run:
        config = ExpireConfig.from_options(table.schema.options).with_overrides(
            retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes)
        result = ExpireSnapshots(table.file_io, table.path, table.schema, config=config,
                                 older_than_millis=older_than_millis,
                                 delete_threads=delete_threads,
                                 bulk_delete=bulk_deleter(spark, handle),
                                 bulk_min_files=bulk_min_files).expire()
        report.expire = result.to_json()
    if remove_orphans:
        found = remove_orphan_files(table, orphans_older_than_millis, dry_run=True)
        report.orphans = list(found.paths)
        report.orphan_bytes = found.bytes
        if not dry_run:
            report.orphans_deleted = delete_files(spark, handle, found.paths)
    return report
