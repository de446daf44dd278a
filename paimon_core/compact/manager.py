"""Compaction of a table's buckets: the public API.

* :func:`compact_bucket` compacts one (partition, bucket) of a snapshot and returns the
  :class:`CommitMessage` (``compact_before`` / ``compact_after`` / ``compact_changelog``), or
  None when there is nothing to do. It depends only on the snapshot's live files, so a Spark
  task can run it (the table and the message pickle); commit the messages of all tasks with
  ``table.new_commit(user).commit(messages)`` (one COMPACT snapshot).
* :func:`compact_with_retries` is the one compaction loop: it plans every (partition, bucket)
  (:func:`plan_compaction`), has a :class:`CompactExecutor` compact them and commits one
  COMPACT snapshot; when the commit conflicts (another compaction or an overwrite removed a
  file first) it deletes what was written, re-plans from the fresh snapshot and tries again,
  a bounded number of times. :func:`compact_table` (``FileStoreTable.compact``) runs it with
  the in-process :class:`LocalExecutor`; ``pipelines.compact`` passes one that runs the tasks
  on Spark. Like Paimon's batch compaction it is a full compaction unless
  ``strategy="minor"`` asks for the universal picker's choice.
* Everything here takes a :class:`CompactSource` (file io, schema and snapshot managers,
  manifests, a committer factory), not a ``FileStoreTable``.
* :class:`BucketCompactor` is the engine under both and under the writer's inline
  compaction (``MergeTreeCompactManager`` / ``BucketedAppendCompactManager`` /
  ``UnawareAppendCompactionTask``): universal compaction (or the forced full one) for
  primary-key tables, small-file compaction for append tables.

Example:
    >>> sid = table.compact()  # full (strategy="minor": the picker)     # doctest: +SKIP
    >>> msg = compact_bucket(table, partition_bytes, 0)                 # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from paimon_core.commit.options import CommitOptions
from paimon_core.commit.table_commit import TableCommit
from paimon_core.commit.users import new_commit_user
from paimon_core.commit_message import CommitMessage
from paimon_core.compact.append import plan_append, rewrite_append
from paimon_core.compact.changelog import KeyedRecords
from paimon_core.compact.deletion_vectors import (
    BucketDeletionVectors,
    DvSource,
    LatestDvSource,
    dv_index_entries,
    load_bucket_vectors,
    snapshot_dv_source,
    write_vectors,
)
from paimon_core.compact.levels import Levels
from paimon_core.compact.listing import BucketFilesMap, live_bucket_files
from paimon_core.compact.options import (
    DEFAULT_COMPACT_STRATEGY,
    CompactOptions,
    CompactStrategy,
    is_full,
)
from paimon_core.compact.picker import (
    CompactUnit,
    ForceUpLevel0Compaction,
    UniversalCompaction,
    pick_full_compaction,
    useful_unit,
)
from paimon_core.compact.rewriter import BucketFiles, MergeTreeRewriter
from paimon_core.compact.task import CompactResult, run_compact_task
from paimon_core.datafile.formats import format_options
from paimon_core.datafile.writer import DataFileWriter
from paimon_core.errors import CommitConflictError, UnsupportedError
from paimon_core.io.file_io import FileIO
from paimon_core.layout import TableContext
from paimon_core.manifest_io import ManifestIO
from paimon_core.option_validation import check_deletion_vectors
from paimon_core.read.data_file import DataFileReader
from paimon_core.scan.manifest_filter import EntryFilter
from paimon_core.schema_manager import SchemaManager
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.keys import key_decoder
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import Snapshot
from paimon_core.spec.system_fields import KEY_PREFIX, SEQUENCE_NUMBER
from paimon_core.threads import pool_threads

__all__ = [
    "BucketCompactor",
    "BucketFilesMap",
    "BucketWork",
    "CompactExecutor",
    "CompactOutcome",
    "CompactSource",
    "LocalExecutor",
    "compact_bucket",
    "compact_table",
    "compact_with_retries",
    "list_buckets",
    "live_bucket_files",
    "new_compactor",
    "pick_buckets",
    "plan_compaction",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 5
#: one compaction task: (partition, bucket, total buckets, live files of the bucket)
BucketWork = tuple[bytes, int, int, list[DataFileMeta]]


@dataclass
class BucketCompactor:
    """Compacts buckets of one table (schema) from given live files.

    Args:
        file_io: storage.
        context: the table with the schema to read and write with, resolved.
        schemas: the table's schemas (old files are read with their own).
        writer: the data-file writer to use (default: a fresh one per call; the writer's
            ``written_paths`` then lists what a failed call leaves behind).
        dv_source: ``deletion-vectors.enabled`` tables: the DV index entries of the snapshot
            compacted, per (partition, bucket) (default: those of the latest snapshot).
    """

    file_io: FileIO
    context: TableContext
    schemas: SchemaManager
    writer: DataFileWriter | None = None
    dv_source: DvSource | None = None

    def __post_init__(self) -> None:
        s = self.schema = self.context.schema
        self.table_path = self.context.table_path
        self.core = self.context.options
        self.options = CompactOptions.of(s, self.core)
        self.is_pk = bool(s.primary_keys)
        self.dv = self.core.deletion_vectors_enabled
        if self.dv and not self.is_pk:
            raise UnsupportedError("compacting an append table with deletion-vectors.enabled=true "
                                   "(its files' deletion vectors would have to be applied)")
        if self.dv:
            check_deletion_vectors(self.core.changelog_producer.value, self.core.merge_engine.value)
        self._latest_dvs = LatestDvSource(self.file_io, self.table_path)
        self.layout = self.context.layout
        self.constant = tuple(s.field_names.index(k) for k in s.partition_keys)
        self.decode_key = key_decoder(s, cached=True)
        self.reader = DataFileReader(self.file_io, s, self.schemas)
        self.records = KeyedRecords(
            key_columns=tuple(KEY_PREFIX + k for k in s.trimmed_primary_keys),
            sequence_columns=(*self.core.sequence_fields, SEQUENCE_NUMBER),
            value_columns=tuple(s.field_names),
            options=self.core,
            row_deduplicate=self.options.row_deduplicate,
            primary_keys=tuple(s.primary_keys),
        )
        universal = UniversalCompaction(self.options.max_size_amp, self.options.size_ratio,
                                        self.options.trigger)
        self.strategy: UniversalCompaction | ForceUpLevel0Compaction = (
            ForceUpLevel0Compaction(universal) if self.options.lookup else universal)
        self._format = format_options(s, self.core)

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        return self.layout.bucket_dir(partition, bucket)

    def new_writer(self) -> DataFileWriter:
        return DataFileWriter(self.file_io, self.schema, self.layout.new_file_names(),
                              format_options=self._format)

    # ---- planning (metadata only)
    def levels(self, files: Sequence[DataFileMeta]) -> Levels:
        return Levels(files, self.options.num_levels, self.decode_key)

    def pick(self, levels: Levels, *, full: bool, dv_files: Collection[str] = ()
             ) -> CompactUnit | None:
        """The unit a (full) compaction of these levels would rewrite, if any (a full one
        also rewrites max-level files with a deletion vector, ``dv_files``)."""
        runs = levels.level_sorted_runs()
        if full:
            return pick_full_compaction(levels.num_levels, runs, dv_files)
        return useful_unit(self.strategy.pick(levels.num_levels, runs))

    def needs_compaction(self, files: Sequence[DataFileMeta], *, full: bool = False,
                         dv_files: Collection[str] = ()) -> bool:
        """Whether :meth:`compact` would do anything (no IO; ``dv_files``: the files with a
        deletion vector)."""
        if self.is_pk:
            return self.pick(self.levels(files), full=full, dv_files=dv_files) is not None
        return bool(plan_append(files, self.options, full=full))

    def load_vectors(self, partition: bytes, bucket: int) -> BucketDeletionVectors:
        """The deletion vectors of a bucket (:attr:`dv_source`'s index entries)."""
        source = self.dv_source or self._latest_dvs()
        return load_bucket_vectors(self.file_io, self.layout, source(partition, bucket))

    # ---- compaction
    def compact(self, partition: bytes, bucket: int, files: Sequence[DataFileMeta], *,
                full: bool = False, dvs: BucketDeletionVectors | None = None) -> CompactResult:
        """Compact one bucket given its live files (an empty result: nothing to do).

        Deletion-vector tables: ``dvs`` are the bucket's vectors, maintained and left to the
        caller to write (the writer writes them once per commit); without them they are
        loaded (:meth:`load_vectors`) and the result carries the bucket's new index file."""
        own = self.writer is None
        writer = self.writer or self.new_writer()
        io = BucketFiles(self.bucket_dir(partition, bucket), self.reader, writer,
                         self.constant, self.options.target_file_size)
        try:
            if self.dv:
                vectors = dvs if dvs is not None else self.load_vectors(partition, bucket)
                result = self._compact_pk(io, files, full, vectors)
                if dvs is None:
                    write_vectors(vectors, self.file_io, self.layout, writer, result)
                return result
            if self.is_pk:
                return self._compact_pk(io, files, full)
            result = CompactResult()
            for group in plan_append(files, self.options, full=full):
                result.merge(rewrite_append(io, group))
            return result
        except BaseException:
            if own:  # nothing references these files: remove them
                for p in writer.written_paths:
                    _delete_quietly(self.file_io, p)
            raise

    def _compact_pk(self, io: BucketFiles, files: Sequence[DataFileMeta], full: bool,
                    dvs: BucketDeletionVectors | None = None) -> CompactResult:
        levels = self.levels(files)
        dv_files = frozenset(dvs.vectors) if dvs is not None else frozenset()
        unit = self.pick(levels, full=full, dv_files=dv_files)
        if unit is None:
            return CompactResult()
        # no older data left below the output: retractions can go (MergeTreeCompactManager);
        # with deletion vectors always above level 0 (the older records are marked deleted)
        drop_delete = unit.output_level != 0 and (
            unit.output_level >= levels.non_empty_highest_level() or dvs is not None)
        rewriter = MergeTreeRewriter(io, self.options, self.core, self.records, levels,
                                     self.decode_key, dvs)
        result = run_compact_task(
            unit, drop_delete=drop_delete, max_level=levels.max_level,
            compaction_file_size=self.options.compaction_file_size, rewriter=rewriter,
            decode_key=self.decode_key, dv_files=dv_files)
        if dvs is not None:  # rewritten files left their deleted rows behind
            kept = {f.file_name for f in result.after}
            dvs.remove(f.file_name for f in result.before if f.file_name not in kept)
        return result

    def message(self, partition: bytes, bucket: int, total_buckets: int,
                result: CompactResult) -> CommitMessage | None:
        if result.is_empty():
            return None
        return CommitMessage(
            partition=partition, bucket=bucket, total_buckets=total_buckets,
            compact_before=tuple(result.before), compact_after=tuple(result.after),
            compact_changelog=tuple(result.changelog), table_path=self.table_path,
            schema_id=self.schema.id, dv_index_added=tuple(result.index_added),
            dv_index_deleted=tuple(result.index_deleted))


def _delete_quietly(file_io: FileIO, path: str) -> None:
    try:
        file_io.delete(path)
    except Exception as e:  # best effort: an orphan is reclaimable
        log.warning("could not delete %s: %s", path, e)


def bucket_filter(
    source: CompactSource,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    buckets: Collection[int] | None = None,
) -> EntryFilter:
    """The manifests and rows of the given partition specs and buckets (default: all):
    manifests pruned by the specs' predicate, rows by partition and bucket."""
    layout = source.context.layout
    wanted = frozenset(buckets) if buckets is not None else None
    buckets_of = None if wanted is None else (lambda _total: wanted)
    if partitions is None:
        return EntryFilter(buckets_of=buckets_of)
    matcher = layout.partition_matcher(partitions)
    pred = layout.partition_predicate(partitions)
    if pred is None:
        return EntryFilter(partition_ok=matcher, buckets_of=buckets_of)
    return EntryFilter.of_predicate(pred, layout.partition_keys, layout.partition_types,
                                    matcher, buckets_of)


class CompactSource(Protocol):
    """The pieces of a table compaction needs (a ``FileStoreTable`` has them all)."""

    @property
    def file_io(self) -> FileIO: ...

    @property
    def path(self) -> str: ...

    @property
    def schema(self) -> TableSchema: ...

    @property
    def context(self) -> TableContext: ...

    @property
    def schema_manager(self) -> SchemaManager: ...

    @property
    def snapshot_manager(self) -> SnapshotManager: ...

    @property
    def manifest_io(self) -> ManifestIO: ...

    def new_commit(self, commit_user: str, *,
                   options: CommitOptions | None = None) -> TableCommit: ...


def new_compactor(source: CompactSource, snapshot: Snapshot | None = None) -> BucketCompactor:
    """The compactor of ``source``'s current schema (deletion vectors: those of ``snapshot``,
    default the latest at each compaction)."""
    dv_source = None
    if snapshot is not None and source.context.options.deletion_vectors_enabled:
        dv_source = snapshot_dv_source(source.manifest_io, snapshot)
    return BucketCompactor(source.file_io, source.context, source.schema_manager,
                           dv_source=dv_source)


def _resolve(source: CompactSource, snapshot: Snapshot | int | None) -> Snapshot | None:
    if snapshot is None:
        return source.snapshot_manager.latest_snapshot()
    if isinstance(snapshot, Snapshot):
        return snapshot
    return source.snapshot_manager.snapshot(snapshot)


def compact_bucket(
    source: CompactSource, partition: bytes, bucket: int, *, full: bool = False,
    snapshot: Snapshot | int | None = None,
) -> CommitMessage | None:
    """Compact one (partition, bucket) of a snapshot (default: the latest).

    Args:
        source: the table (or any :class:`CompactSource`).
        partition: the serialized partition BinaryRow (as in manifests / commit messages).
        bucket: the bucket (0 for unaware-bucket append tables).
        full: full compaction (primary keys: everything to the max level; append tables:
            every small file).
        snapshot: the snapshot (or its id) whose live files to compact.

    Returns:
        The message to commit (``compact_before`` / ``compact_after`` /
        ``compact_changelog``), or None when there is nothing to compact.
    """
    snap = _resolve(source, snapshot)
    layout = source.context.layout
    only = replace(EntryFilter.of_partitions({partition}, layout.partition_keys,
                                             layout.partition_types),
                   buckets_of=lambda _total: (bucket,))
    groups = live_bucket_files(source.manifest_io, snap,
                               lambda p, b: p == partition and b == bucket, only)
    slot = groups.get((partition, bucket))
    if slot is None:
        return None
    compactor = new_compactor(source, snap)
    result = compactor.compact(partition, bucket, slot[1], full=full)
    return compactor.message(partition, bucket, slot[0], result)


def list_buckets(
    source: CompactSource,
    *,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    buckets: Sequence[int] | None = None,
) -> tuple[int | None, BucketFilesMap]:
    """The latest snapshot id and the live files of the selected buckets in it (one listing
    of the manifests; metadata only)."""
    snap = source.snapshot_manager.latest_snapshot()
    if snap is None:
        return None, {}
    return snap.id, live_bucket_files(source.manifest_io, snap,
                                      entries=bucket_filter(source, partitions, buckets))


def pick_buckets(source: CompactSource, groups: BucketFilesMap, *,
                 full: bool) -> list[BucketWork]:
    """The buckets of ``groups`` (:func:`list_buckets`) that need compaction, in
    (partition, bucket) order."""
    compactor = new_compactor(source)
    dvs = (dv_index_entries(source.manifest_io, source.snapshot_manager.latest_snapshot())
           if compactor.dv and full else {})

    def dv_files(key: tuple[bytes, int]) -> set[str]:
        return {r.data_file_name for e in dvs.get(key, []) for r in e.dv_ranges or ()}

    return [(p, b, total, files) for (p, b), (total, files) in sorted(groups.items())
            if compactor.needs_compaction(files, full=full, dv_files=dv_files((p, b)))]


def plan_compaction(
    source: CompactSource,
    *,
    full: bool,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    buckets: Sequence[int] | None = None,
) -> tuple[int | None, list[BucketWork]]:
    """The latest snapshot id and the selected buckets that need compaction, in
    (partition, bucket) order (metadata only)."""
    sid, groups = list_buckets(source, partitions=partitions, buckets=buckets)
    return sid, pick_buckets(source, groups, full=full)


class CompactExecutor(Protocol):
    """Runs the per-bucket compaction tasks of one round and returns their messages.

    The local one (:class:`LocalExecutor`) runs them in this process; the Spark job runs them
    as Spark tasks. On failure an executor deletes what it wrote (``abort`` deletes the files
    of messages already returned) and raises.
    """

    def __call__(self, source: CompactSource, work: Sequence[BucketWork], *, full: bool,
                 abort: Callable[[Sequence[CommitMessage]], None]) -> list[CommitMessage]: ...


@dataclass(frozen=True)
class LocalExecutor:
    """Compacts the buckets in this process, ``max_workers`` in parallel (default:
    :func:`paimon_core.threads.pool_threads`)."""

    max_workers: int | None = None

    def __call__(self, source: CompactSource, work: Sequence[BucketWork], *, full: bool,
                 abort: Callable[[Sequence[CommitMessage]], None]) -> list[CommitMessage]:
        return _run_all(new_compactor(source), work, full,
                        self.max_workers or pool_threads(), abort)


@dataclass
class CompactOutcome:
    """What :func:`compact_with_retries` did.

    Attributes:
        snapshot_id: the COMPACT snapshot (None: nothing needed compaction).
        attempts: planning rounds (more than one after a conflict).
        messages: the committed messages.
        source: the table as of the last round.
    """

    snapshot_id: int | None = None
    attempts: int = 0
    messages: list[CommitMessage] = field(default_factory=list)
    source: CompactSource | None = None


def compact_with_retries(
    open_source: Callable[[], CompactSource],
    *,
    strategy: CompactStrategy = DEFAULT_COMPACT_STRATEGY,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    buckets: Sequence[int] | None = None,
    commit_user: str,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    executor: CompactExecutor | None = None,
    options: CommitOptions | None = None,
    planned: Sequence[BucketWork] | None = None,
) -> CompactOutcome:
    """The compaction loop: plan the latest snapshot, run the tasks with ``executor``, commit
    one COMPACT snapshot; on a commit conflict delete what was written and plan again from
    the fresh snapshot, at most ``max_attempts`` rounds.

    Args:
        open_source: the table for one round (called once per round: a fresh handle sees a
            changed schema).
        strategy: ``full`` or ``minor`` (see :data:`paimon_core.compact.options.CompactStrategy`).
        partitions / buckets: what to compact (default: everything).
        commit_user: the commit user.
        max_attempts: rounds tried when commits conflict.
        executor: runs the tasks (default: :class:`LocalExecutor`).
        options: the commit's options (e.g. the COMPACT snapshot's properties).
        planned: the first round's work, planned by the caller on the table ``open_source``
            returns first (:func:`plan_compaction`); later rounds plan afresh.

    Raises:
        CommitConflictError: every one of ``max_attempts`` rounds conflicted.
        CommitStateUnknownError: the commit's outcome is unknown (nothing was cleaned up).
        SchemaError: an unknown ``strategy``.
    """
    full = is_full(strategy)
    run = executor or LocalExecutor()
    outcome = CompactOutcome()
    last: CommitConflictError | None = None
    for attempt in range(1, max(1, max_attempts) + 1):
        outcome.attempts = attempt
        source = open_source()
        outcome.source = source
        if attempt == 1 and planned is not None:
            work = list(planned)
        else:
            _, work = plan_compaction(source, full=full, partitions=partitions, buckets=buckets)
        if not work:
            return outcome
        committer = source.new_commit(commit_user, options=options)
        messages = run(source, work, full=full, abort=committer.abort)
        if not messages:
            return outcome
        try:
            ids = committer.commit(messages)
        except CommitConflictError as e:
            log.info("compaction attempt %d conflicted (%s); planning again", attempt, e)
            committer.abort(messages)
            last = e
            continue
        outcome.snapshot_id = ids[-1] if ids else None
        outcome.messages = messages
        return outcome
    raise CommitConflictError(
        f"compaction conflicted with concurrent commits {max_attempts} times: {last}")


def compact_table(
    source: CompactSource,
    *,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    buckets: Sequence[int] | None = None,
    strategy: CompactStrategy = DEFAULT_COMPACT_STRATEGY,
    commit_user: str | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    max_workers: int | None = None,
) -> int | None:
    """Compact the selected buckets of the latest snapshot into one COMPACT snapshot, in this
    process (:func:`compact_with_retries` with a :class:`LocalExecutor`).

    Args:
        source: the table.
        partitions: partition specs to compact (any of them; default: every partition).
        buckets: buckets to compact (default: every bucket).
        strategy: ``full`` (default): every selected bucket with more than one sorted run, or
            with its only run below the max level, ends as one sorted run on the max level;
            ``minor``: what the universal picker asks for (see
            :data:`paimon_core.compact.options.CompactStrategy`).
        commit_user: the commit user (default: a random one).
        max_attempts: plans tried when commits conflict.
        max_workers: buckets compacted in parallel (default:
            :func:`paimon_core.threads.pool_threads`).

    Returns:
        The id of the COMPACT snapshot, or None when nothing needed compaction.

    Raises:
        CommitConflictError: every one of ``max_attempts`` plans conflicted with concurrent
            commits.
        CommitStateUnknownError: the commit's outcome is unknown (nothing was cleaned up).
        SchemaError: an unknown ``strategy``.
    """
    return compact_with_retries(
        lambda: source, strategy=strategy, partitions=partitions, buckets=buckets,
        commit_user=commit_user or new_commit_user("compact"), max_attempts=max_attempts,
        executor=LocalExecutor(max_workers)).snapshot_id


def _run_all(
    compactor: BucketCompactor, todo: Sequence[BucketWork], full: bool, max_workers: int,
    abort: Callable[[Sequence[CommitMessage]], None],
) -> list[CommitMessage]:
    def one(item: BucketWork) -> CommitMessage | None:
        part, bucket, total, files = item
        return compactor.message(part, bucket, total,
                                 compactor.compact(part, bucket, files, full=full))

    if len(todo) == 1 or max_workers <= 1:
        results: list[CommitMessage | None] = []
        try:
            for item in todo:
                results.append(one(item))
        except BaseException:
            abort([m for m in results if m is not None])
            raise
        return [m for m in results if m is not None]
    with ThreadPoolExecutor(min(max_workers, len(todo)),
                            thread_name_prefix="paimon-compact") as pool:
        futures = [pool.submit(one, item) for item in todo]
        done: list[CommitMessage] = []
        error: BaseException | None = None
        for f in futures:
            exc = f.exception()
            if exc is not None:
                error = error or exc
                continue
            m = f.result()
            if m is not None:
                done.append(m)
    if error is not None:
        abort(done)
        raise error
    return done
