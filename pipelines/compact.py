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

Run::

    python -m pipelines.compact --warehouse W --table db.t [--strategy full|minor]
        [--partition k=v,...] [--bucket N] [--max-attempts 5]

(``--full`` is the explicit spelling of the default ``--strategy full``.)

Start-up: when the job starts its own local session, the driver JVM gets
:data:`LOCAL_JVM_FLAGS` and a class-data archive (:mod:`pipelines.jvm_archive`; the first run
on a machine writes it, ``PAIMON_SPARK_CDS_DIR=off`` turns it off), and the ``paimon`` data
source is not registered (the tasks use ``paimon_core`` directly). ``PAIMON_JOB_CPU_LOG=1``
prints the CPU of the job's process tree at session-ready and after the work
(:mod:`pipelines.cputrace`; what ``bench/scale.py --spark`` splits a run with).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import pickle
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core import CommitMessage, CommitOptions, FileStoreTable, PaimonError
from paimon_core.cli.compact_cmds import add_strategy_args
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
    SparkSettings,
    TableHandle,
    add_catalog_args,
    add_spark_args,
    check_table,
    configure_logging,
    limit_task_threads,
    parse_pairs,
    run_job_main,
)
from pipelines.cputrace import mark
from pipelines.jvm_archive import ClassArchive, class_archive

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "BucketFiles", "CompactReport", "compact", "list_buckets", "main", "pick_buckets",
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
        commit_user=commit_user or f"spark-compact-{uuid.uuid4()}", max_attempts=max_attempts,
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


#: JIT flags for the driver JVM of a local session this job starts: that JVM only schedules
#: one task per bucket and collects messages, so the C1 compiler alone and the serial GC do it
#: with less CPU than the default tiers and parallel GC threads (4M rows, 8 buckets: session
#: start-up 13.3 -> 8.1 s CPU, under load); a class-data archive
#: (:mod:`pipelines.jvm_archive`) halves what is left of the JVM's start-up
LOCAL_JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def _owns_jvm(settings: SparkSettings) -> bool:
    """Whether this process is about to start the session's driver JVM itself, so that this
    job chooses its flags: local, not under ``spark-submit``, no JVM running yet (a session
    already running in this process is reused as it is), Java options not set by the user."""
    if not settings.is_local or _JAVA_OPTIONS in settings.conf:
        return False
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit started the JVM
        return False
    from pyspark import SparkContext

    return SparkContext._gateway is None


def _local_archive(settings: SparkSettings) -> ClassArchive | None:
    """The class-data archive of the driver JVM this job starts (None: not ours to start,
    or archives turned off)."""
    return class_archive(LOCAL_JVM_FLAGS) if _owns_jvm(settings) else None


#: Arrow's memory pool in the job's Python workers (unless the user chose one): a worker is a
#: fresh process whose heap grows from nothing, and mimalloc (pyarrow's default) zeroes a fresh
#: huge page at every first touch; with the system allocator the workers' system CPU went
#: 1.1 -> 0.6 s for 4M rows in 8 buckets (user CPU unchanged, under load)
WORKER_MEMORY_POOL = "system"
_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"


def _session_conf(settings: SparkSettings, local_defaults: Mapping[str, str],
                  archive: ClassArchive | None = None) -> dict[str, str]:
    """This job's additions to the session's conf: the workers' memory pool
    (:data:`WORKER_MEMORY_POOL`, unless set in the conf or the environment); for a local
    session whose driver Java options the user did not set, :data:`LOCAL_JVM_FLAGS` and the
    archive's option."""
    conf: dict[str, str] = {}
    pool_key = f"spark.executorEnv.{_POOL_ENV}"
    if pool_key not in settings.conf and _POOL_ENV not in os.environ:
        conf[pool_key] = WORKER_MEMORY_POOL
    if settings.is_local and _JAVA_OPTIONS not in settings.conf:
        flags = [local_defaults.get(_JAVA_OPTIONS, ""), LOCAL_JVM_FLAGS]
        if archive is not None:
            flags.append(archive.jvm_option)
        conf[_JAVA_OPTIONS] = " ".join(f for f in flags if f)
    return conf


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pipelines.compact",
                                description=__doc__.split("\n\n")[0] if __doc__ else None)
    add_catalog_args(p)
    add_spark_args(p)
    add_strategy_args(p)
    p.add_argument("--partition", action="append", metavar="K=V,...",
                   help="only this partition (repeatable)")
    p.add_argument("--bucket", type=int, action="append", help="only this bucket (repeatable)")
    p.add_argument("--commit-user")
    p.add_argument("--max-attempts", type=int, default=DEFAULT_MAX_ATTEMPTS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; prints the report as JSON. Exit codes: 0 ok, 1 error."""
    args = build_parser().parse_args(argv)
    configure_logging()
    from pipelines.session import LOCAL_DEFAULTS, get_session

    settings = CatalogSettings.from_args(args)
    if (rc := check_table(settings, args.table, "compact")) is not None:
        return rc
    spark_settings = SparkSettings.from_args(args, app_name="paimon-compact")
    archive = _local_archive(spark_settings)
    spark = get_session(spark_settings,
                        conf=_session_conf(spark_settings, LOCAL_DEFAULTS, archive),
                        register_source=False)  # the tasks use paimon_core, not the source
    mark("session")
    try:
        if archive is not None:
            archive.check(spark)
        parts = ([parse_pairs(x.replace(",", ";"), what="partition") for x in args.partition]
                 if args.partition else None)
        try:
            report = compact(spark, settings, args.table, strategy=args.strategy,
                             partitions=parts, buckets=args.bucket,
                             commit_user=args.commit_user, max_attempts=args.max_attempts)
        except PaimonError as e:
            print(f"compact: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        mark("work")
        print(report.to_json(), flush=True)
        return 0
    finally:
        if archive is not None and archive.part is not None:
            archive.publish(spark)  # a first run: end the JVM so that it writes the archive


if __name__ == "__main__":  # pragma: no cover
    run_job_main("pipelines.compact")
