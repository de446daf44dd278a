"""Compaction job: every (partition, bucket) that needs it compacted in its own Spark task,
one COMPACT commit on the driver.

1. The driver reads the latest snapshot's live files per (partition, bucket) (manifests only)
   and keeps the pairs with something to compact: by default (``--strategy full``, as
   ``paimon compact`` and Paimon's batch compaction) every pair that is not one sorted run on
   the max level already; with ``--strategy minor`` the pairs the universal picker would
   compact (``paimon_core.compact.BucketCompactor.needs_compaction``).
2. Each pair, with its planned file list, goes to one task (a small DataFrame of the pickled
   work units, one per partition, through ``mapInArrow``: the same on a classic and a Spark
   Connect session), which rewrites it with
   ``BucketCompactor.compact`` (the same code as ``FileStoreTable.compact``; built once per
   reused Python worker, never listing the snapshot again) and returns its ``CommitMessage``
   (``compact_before`` / ``compact_after``), pickled. The task's pools and Arrow's use the
   task's cores (:func:`pipelines.config.limit_task_threads`).
3. The driver commits all messages as one COMPACT snapshot. When that conflicts with a
   concurrent commit (an overwrite or another compaction removed an input file first), the
   files written are deleted and everything is planned again from the fresh snapshot, at most
   ``max_attempts`` times.

A failed task deletes the files it wrote; files of killed attempts are reclaimable orphans.

Run (:mod:`pipelines.jobs.compact`)::

    python -m pipelines.jobs.compact --warehouse W --table db.t [--strategy full|minor]
        [--partition k=v,...] [--bucket N] [--max-attempts 5]

(``--full`` is the explicit spelling of the default ``--strategy full``.)
"""

from __future__ import annotations

import functools
import json
import logging
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core import CommitMessage, CommitOptions, FileStoreTable
from paimon_core.commit.users import new_commit_user
from paimon_core.integration import (
    DEFAULT_COMPACT_STRATEGY,
    DEFAULT_MAX_ATTEMPTS,
    BucketCompactor,
    BucketWork,
    CompactSource,
    CompactStrategy,
    DataFileMeta,
    TableLayout,
    compact_with_retries,
    is_full,
    new_compactor,
    snapshot_listings,
)
from paimon_core.integration import list_buckets as core_list_buckets
from paimon_core.integration import pick_buckets as core_pick_buckets
from pipelines.config import (
    CatalogSettings,
    TableHandle,
    limit_task_threads,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "BucketFiles", "CompactReport", "compact", "list_buckets", "pick_buckets",
    "plan_compaction",
]

log = logging.getLogger(__name__)


@dataclass
class CompactReport:
    """What the job did.

    Attributes:
        snapshot_id: the COMPACT snapshot (None: nothing needed compaction).
        buckets: (partition path, bucket) pairs compacted.
        tasks: (Spark partition id, attempt number) of the task that compacted each pair.
        files_before / files_after: data files replaced / written.
        attempts: planning rounds (more than one after a conflict).
        listings: snapshot listings (:func:`paimon_core.snapshot_listings`) on the driver:
            one plan and one commit check per round.
        task_listings: listings made by the tasks (0: they compact the files planned).
    """

    table: str
    snapshot_id: int | None = None
    buckets: list[tuple[str, int]] = field(default_factory=list)
    tasks: list[tuple[int, int]] = field(default_factory=list)
    files_before: int = 0
    files_after: int = 0
    attempts: int = 0
    listings: int = 0
    task_listings: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


#: the live files of buckets: (partition, bucket) -> (total buckets, files)
BucketFiles = dict[tuple[bytes, int], tuple[int, list[DataFileMeta]]]


def list_buckets(
    handle: TableHandle,
    *,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    buckets: Sequence[int] | None = None,
) -> tuple[int | None, BucketFiles]:
    """The latest snapshot id and the live files of the selected buckets in it (one listing
    of the manifests; metadata only)."""
    return core_list_buckets(handle.open(), partitions=partitions, buckets=buckets)


def pick_buckets(handle: TableHandle, groups: BucketFiles, *,
                 strategy: CompactStrategy = DEFAULT_COMPACT_STRATEGY) -> list[BucketWork]:
    """The buckets of ``groups`` (:func:`list_buckets`) the strategy would compact."""
    return core_pick_buckets(handle.open(), groups, full=is_full(strategy))


def plan_compaction(
    handle: TableHandle,
    *,
    strategy: CompactStrategy = DEFAULT_COMPACT_STRATEGY,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    buckets: Sequence[int] | None = None,
) -> tuple[int | None, list[BucketWork]]:
    """The latest snapshot id and the buckets the strategy would compact (metadata only)."""
    sid, groups = list_buckets(handle, partitions=partitions, buckets=buckets)
    return sid, pick_buckets(handle, groups, strategy=strategy)


#: the compactors of this (worker) process, by table and schema: a reused Python worker
#: opens each table once, not once per task
_COMPACTORS: dict[tuple[object, ...], BucketCompactor] = {}
_MAX_CACHED = 4


def _worker_compactor(handle: TableHandle) -> BucketCompactor:
    s = handle.settings
    key = (s.warehouse, tuple(sorted(s.storage_options.items())), handle.path,
           handle.schema.id)
    compactor = _COMPACTORS.get(key)
    if compactor is None:
        if len(_COMPACTORS) >= _MAX_CACHED:
            _COMPACTORS.pop(next(iter(_COMPACTORS)))
        compactor = _COMPACTORS[key] = new_compactor(handle.open())
    return compactor


def _compact_units(handle: TableHandle, full: bool,
                   batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One Spark task (``mapInArrow``): compact its (partition, bucket) work units (pickled in
    the ``unit`` column) with the planned files (no listing: the driver planned them) and
    answer with their commit messages, pickled, the task's (partition id, attempt) and the
    listings it made."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    ids = (tc.partitionId(), tc.attemptNumber()) if tc is not None else (0, 0)
    limit_task_threads()
    listed = snapshot_listings()
    compactor = _worker_compactor(handle)
    out: list[CommitMessage] = []
    for batch in batches:
        for blob in batch.column("unit").to_pylist():  # one unit per task (a failed one
            part, bucket, total, files = pickle.loads(blob)  # cleans up)
            msg = compactor.message(part, bucket, total,
                                    compactor.compact(part, bucket, files, full=full))
            if msg is not None:
                out.append(msg)
    yield pa.RecordBatch.from_pydict(
        {"messages": [pickle.dumps(out)], "partition": [ids[0]], "attempt": [ids[1]],
         "listed": [snapshot_listings() - listed]}, schema=_RESULT_SCHEMA)


_RESULT_SCHEMA = pa.schema([("messages", pa.binary()), ("partition", pa.int32()),
                            ("attempt", pa.int32()), ("listed", pa.int64())])


def _run_tasks(spark: SparkSession, handle: TableHandle, todo: Sequence[BucketWork],
               full: bool) -> tuple[list[CommitMessage], list[tuple[int, int]], int]:
    """Compact ``todo`` with one Spark task per (partition, bucket): a small DataFrame of the
    planned work units (picklable, metadata only), one per partition (``repartitionById``),
    each compacted by ``mapInArrow`` -- the same on a classic and a Spark Connect session;
    the messages come back pickled. Returns the messages, the (partition id, attempt) of the
    task behind each, and the listings the tasks made."""
    units = spark.createDataFrame(
        [(i, pickle.dumps(unit)) for i, unit in enumerate(todo)], "i int, unit binary")
    work = units.repartitionById(len(todo), "i").mapInArrow(
        functools.partial(_compact_units, handle, full),
        "messages binary, partition int, attempt int, listed bigint")
    messages: list[CommitMessage] = []
    tasks: list[tuple[int, int]] = []
    listings = 0
    for row in work.collect():
        msgs: list[CommitMessage] = pickle.loads(row["messages"])
        messages.extend(msgs)
        tasks.extend([(row["partition"], row["attempt"])] * len(msgs))
        listings += row["listed"]
    return messages, tasks, listings


@dataclass
class SparkExecutor:
    """Runs each bucket's compaction as a Spark task (a :class:`CompactExecutor`); the
    table is opened from a fresh :class:`TableHandle` every round (:meth:`open`), but for
    the first round's ``table`` when the caller has it open already."""

    spark: SparkSession
    settings: CatalogSettings
    identifier: str
    table: FileStoreTable | None = None
    handle: TableHandle | None = None
    tasks: list[tuple[int, int]] = field(default_factory=list)
    task_listings: int = 0

    def open(self) -> FileStoreTable:
        if self.table is not None:
            self.handle, self.table = TableHandle.of(self.settings, self.table), None
        else:
            self.handle = TableHandle.load(self.settings, self.identifier)
        return self.handle.open()

    def __call__(self, source: CompactSource, work: Sequence[BucketWork], *, full: bool,
                 abort: Callable[[Sequence[CommitMessage]], None]) -> list[CommitMessage]:
        # a failed Spark task deletes what it wrote; files of killed attempts are orphans
        assert self.handle is not None
        messages, self.tasks, listed = _run_tasks(self.spark, self.handle, work, full)
        self.task_listings += listed
        return messages


def compact(
    spark: SparkSession,
    settings: CatalogSettings,
    identifier: str,
    *,
    strategy: CompactStrategy = DEFAULT_COMPACT_STRATEGY,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    buckets: Sequence[int] | None = None,
    commit_user: str | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    properties: Mapping[str, str] | None = None,
    table: FileStoreTable | None = None,
    planned: Sequence[BucketWork] | None = None,
) -> CompactReport:
    """Compact the table's buckets into one COMPACT snapshot (module docs): fully by default,
    the universal picker's choice with ``strategy="minor"``; ``properties`` go into the
    snapshot's properties. ``table`` (opened from ``settings``' catalog) and ``planned``
    (:func:`plan_compaction`'s buckets on it): what the caller already opened and planned,
    used by the first round instead of opening and planning again.

    Raises:
        CommitConflictError: every one of ``max_attempts`` rounds conflicted.
        CommitStateUnknownError: the commit's outcome is unknown (nothing was cleaned up).
    """
    executor = SparkExecutor(spark, settings, identifier, table=table)
    listed = snapshot_listings()
    outcome = compact_with_retries(
        executor.open, strategy=strategy, partitions=partitions, buckets=buckets,
        commit_user=commit_user or new_commit_user("spark-compact"), max_attempts=max_attempts,
        executor=executor, options=CommitOptions(properties=dict(properties or {})),
        planned=planned)
    report = CompactReport(identifier, attempts=outcome.attempts,
                           listings=snapshot_listings() - listed,
                           task_listings=executor.task_listings)
    messages = outcome.messages
    if not messages or outcome.source is None:
        return report
    layout = TableLayout.of(outcome.source.path, outcome.source.schema)
    report.snapshot_id = outcome.snapshot_id
    report.tasks = executor.tasks
    report.buckets = [(_partition_text(layout, m.partition), m.bucket) for m in messages]
    report.files_before = sum(len(m.compact_before) for m in messages)
    report.files_after = sum(len(m.compact_after) for m in messages)
    return report


def _partition_text(layout: TableLayout, partition: bytes) -> str:
    values = layout.decode_partition(partition)
    return ",".join(f"{k}={v}" for k, v in zip(layout.partition_keys, values))
