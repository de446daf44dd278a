"""Compaction of a table's buckets: the public API.

* :func:`compact_bucket` compacts one (partition, bucket) of a snapshot and returns the
  :class:`CommitMessage` (``compact_before`` / ``compact_after`` / ``compact_changelog``), or
  None when there is nothing to do. It depends only on the snapshot's live files, so a Spark
  task can run it (the table and the message pickle); commit the messages of all tasks with
  ``table.new_commit(user).commit(messages)`` (one COMPACT snapshot).
* :func:`compact_table` (``FileStoreTable.compact``) plans every (partition, bucket), compacts
  them and commits one COMPACT snapshot; when the commit conflicts (another compaction or an
  overwrite removed a file first) it deletes what it wrote, re-plans from the fresh snapshot
  and tries again, a bounded number of times. Like Paimon's batch compaction it is a full
  compaction unless ``strategy="minor"`` asks for the universal picker's choice.
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
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paimon_core.compact.append import plan_append, rewrite_append
from paimon_core.compact.changelog import KeyedRecords
from paimon_core.compact.levels import KeyDecoder, Levels
from paimon_core.compact.options import CompactOptions, CompactStrategy, is_full
from paimon_core.compact.picker import (
    CompactUnit,
    ForceUpLevel0Compaction,
    UniversalCompaction,
    pick_full_compaction,
    useful_unit,
)
from paimon_core.compact.rewriter import BucketFiles, MergeTreeRewriter
from paimon_core.compact.task import CompactResult, run_compact_task
from paimon_core.errors import CommitConflictError, SchemaError, UnsupportedError
from paimon_core.io.file_io import FileIO, join
from paimon_core.manifest_io import ManifestIO
from paimon_core.options import CoreOptions
from paimon_core.read.data_file import DataFileReader
from paimon_core.scan.file_entries import live_files
from paimon_core.scan.planner import decode_partition
from paimon_core.scan.predicate_literal import literal_from_text
from paimon_core.scan.predicate_model import Predicate, equal, evaluate_row, is_null
from paimon_core.schema_manager import SchemaManager
from paimon_core.spec.binary_row import deserialize_binary_row
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.partition import partition_path
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import Snapshot
from paimon_core.spec.system_fields import KEY_PREFIX, SEQUENCE_NUMBER
from paimon_core.write.commit_message import CommitMessage
from paimon_core.write.data_file_writer import DataFilePathFactory, DataFileWriter
from paimon_core.write.parquet_layout import ParquetOptions

if TYPE_CHECKING:
    from paimon_core.table import FileStoreTable

__all__ = [
    "BucketCompactor",
    "BucketFilesMap",
    "compact_bucket",
    "compact_table",
    "live_bucket_files",
    "partition_filter",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 5
#: (partition, bucket) -> (total buckets of its files, live files)
BucketFilesMap = dict[tuple[bytes, int], tuple[int, list[DataFileMeta]]]


def key_decoder(schema: TableSchema) -> KeyDecoder:
    """Decodes serialized trimmed primary keys into tuples that compare like Java keys
    (cached: levels and sections decode every file's keys several times)."""
    types = [schema.field(k).type for k in schema.trimmed_primary_keys]
    cache: dict[bytes, tuple[Any, ...]] = {}

    def decode(b: bytes) -> tuple[Any, ...]:
        k = cache.get(b)
        if k is None:
            k = tuple(deserialize_binary_row(b, types))
            cache[b] = k
        return k

    return decode


@dataclass
class BucketCompactor:
    """Compacts buckets of one table (schema) from given live files.

    Args:
        file_io: storage.
        table_path: the table directory.
        schema: the schema to read and write with.
        schemas: the table's schemas (old files are read with their own).
        writer: the data-file writer to use (default: a fresh one per call; the writer's
            ``written_paths`` then lists what a failed call leaves behind).
    """

    file_io: FileIO
    table_path: str
    schema: TableSchema
    schemas: SchemaManager
    writer: DataFileWriter | None = None

    def __post_init__(self) -> None:
        s = self.schema
        self.options = CompactOptions.from_schema(s)
        self.core = CoreOptions(s.options)
        self.is_pk = bool(s.primary_keys)
        if self.core.deletion_vectors_enabled:
            raise UnsupportedError("compacting tables with deletion-vectors.enabled=true "
                                   "(the deletion vectors would have to be rewritten)")
        self.part_keys = list(s.partition_keys)
        self.part_types = [s.field(k).type for k in self.part_keys]
        self.constant = tuple(s.field_names.index(k) for k in self.part_keys)
        self.decode_key = key_decoder(s)
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
        self._parquet = ParquetOptions.from_schema(s)

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        values = decode_partition(partition, self.part_types)
        ppath = partition_path(list(values), self.part_keys, self.part_types,
                               self.core.partition_default_name)
        return join(self.table_path, ppath, f"bucket-{bucket}") if ppath else join(
            self.table_path, f"bucket-{bucket}")

    def new_writer(self) -> DataFileWriter:
        return DataFileWriter(self.file_io, self.schema, DataFilePathFactory(
            self.schema.file_format), parquet=self._parquet)

    # ---- planning (metadata only)
    def levels(self, files: Sequence[DataFileMeta]) -> Levels:
        return Levels(files, self.options.num_levels, self.decode_key)

    def pick(self, levels: Levels, *, full: bool) -> CompactUnit | None:
        """The unit a (full) compaction of these levels would rewrite, if any."""
        runs = levels.level_sorted_runs()
        if full:
            return pick_full_compaction(levels.num_levels, runs)
        return useful_unit(self.strategy.pick(levels.num_levels, runs))

    def needs_compaction(self, files: Sequence[DataFileMeta], *, full: bool = False) -> bool:
        """Whether :meth:`compact` would do anything (no IO)."""
        if self.is_pk:
            return self.pick(self.levels(files), full=full) is not None
        return bool(plan_append(files, self.options, full=full))

    # ---- compaction
    def compact(self, partition: bytes, bucket: int, files: Sequence[DataFileMeta], *,
                full: bool = False) -> CompactResult:
        """Compact one bucket given its live files (an empty result: nothing to do)."""
        own = self.writer is None
        writer = self.writer or self.new_writer()
        io = BucketFiles(self.bucket_dir(partition, bucket), self.reader, writer,
                         self.constant, self.options.target_file_size)
        try:
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

    def _compact_pk(self, io: BucketFiles, files: Sequence[DataFileMeta], full: bool
                    ) -> CompactResult:
        levels = self.levels(files)
        unit = self.pick(levels, full=full)
        if unit is None:
            return CompactResult()
        # no older data left below the output: retractions can go (MergeTreeCompactManager)
        drop_delete = unit.output_level != 0 and (
            unit.output_level >= levels.non_empty_highest_level())
        rewriter = MergeTreeRewriter(io, self.options, self.core, self.records, levels,
                                     self.decode_key)
        return run_compact_task(
            unit, drop_delete=drop_delete, max_level=levels.max_level,
            compaction_file_size=self.options.compaction_file_size, rewriter=rewriter,
            decode_key=self.decode_key)

    def message(self, partition: bytes, bucket: int, total_buckets: int,
                result: CompactResult) -> CommitMessage | None:
        if result.is_empty():
            return None
        return CommitMessage(
            partition=partition, bucket=bucket, total_buckets=total_buckets,
            compact_before=tuple(result.before), compact_after=tuple(result.after),
            compact_changelog=tuple(result.changelog), table_path=self.table_path,
            schema_id=self.schema.id)


def _delete_quietly(file_io: FileIO, path: str) -> None:
    try:
        file_io.delete(path)
    except Exception as e:  # best effort: an orphan is reclaimable
        log.warning("could not delete %s: %s", path, e)


def live_bucket_files(
    manifests: ManifestIO, snapshot: Snapshot | None,
    accept: Callable[[bytes, int], bool] | None = None,
) -> BucketFilesMap:
    """Live files of a snapshot per (partition, bucket) (metadata only)."""
    out: BucketFilesMap = {}
    if snapshot is None:
        return out
    entries = [e for m in manifests.data_manifests(snapshot)
               for e in manifests.manifest(m.file_name, m.file_size)]
    for e in live_files(entries, source=manifests.path(snapshot.base_manifest_list)):
        key = (e.partition, e.bucket)
        if accept is not None and not accept(*key):
            continue
        slot = out.get(key)
        if slot is None:
            out[key] = (e.total_buckets, [e.file])
        else:
            slot[1].append(e.file)
    return out


def partition_filter(schema: TableSchema, specs: Sequence[Mapping[str, Any]] | None
                     ) -> Callable[[bytes], bool]:
    """Matcher of serialized partitions against partition specs (any of them; a spec may be
    partial; a None value or the default partition name matches NULL)."""
    if specs is None:
        return lambda _p: True
    keys = list(schema.partition_keys)
    types = [schema.field(k).type for k in keys]
    default = CoreOptions(schema.options).partition_default_name
    preds: list[list[Predicate]] = []
    for spec in specs:
        one: list[Predicate] = []
        for k, raw in spec.items():
            if k not in keys:
                raise SchemaError(f"{k!r} is not a partition key of {keys}")
            if raw is None or raw == default:
                one.append(is_null(k))
            else:
                t = schema.field(k).type
                one.append(equal(k, literal_from_text(raw, t, k) if isinstance(raw, str)
                                 else raw))
        preds.append(one)
    fields = list(schema.fields)
    cache: dict[bytes, bool] = {}

    def match(p: bytes) -> bool:
        hit = cache.get(p)
        if hit is None:
            row = dict(zip(keys, decode_partition(p, types)))
            hit = any(all(evaluate_row(pr, row, fields=fields) for pr in one) for one in preds)
            cache[p] = hit
        return hit

    return match


def _resolve(table: FileStoreTable, snapshot: Snapshot | int | None) -> Snapshot | None:
    if snapshot is None:
        return table.snapshot_manager.latest_snapshot()
    if isinstance(snapshot, Snapshot):
        return snapshot
    return table.snapshot_manager.snapshot(snapshot)


def compact_bucket(
    table: FileStoreTable, partition: bytes, bucket: int, *, full: bool = False,
    snapshot: Snapshot | int | None = None,
) -> CommitMessage | None:
    """Compact one (partition, bucket) of a snapshot (default: the latest).

    Args:
        table: the table.
        partition: the serialized partition BinaryRow (as in manifests / commit messages).
        bucket: the bucket (0 for unaware-bucket append tables).
        full: full compaction (primary keys: everything to the max level; append tables:
            every small file).
        snapshot: the snapshot (or its id) whose live files to compact.

    Returns:
        The message to commit (``compact_before`` / ``compact_after`` /
        ``compact_changelog``), or None when there is nothing to compact.
    """
    snap = _resolve(table, snapshot)
    groups = live_bucket_files(table.manifest_io, snap,
                               lambda p, b: p == partition and b == bucket)
    slot = groups.get((partition, bucket))
    if slot is None:
        return None
    compactor = BucketCompactor(table.file_io, table.path, table.schema, table.schema_manager)
    result = compactor.compact(partition, bucket, slot[1], full=full)
    return compactor.message(partition, bucket, slot[0], result)


def compact_table(
    table: FileStoreTable,
    *,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    buckets: Sequence[int] | None = None,
    strategy: CompactStrategy = "full",
    commit_user: str | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    max_workers: int = 2,
) -> int | None:
    """Compact the selected buckets of the latest snapshot into one COMPACT snapshot.

    Args:
        table: the table.
        partitions: partition specs to compact (any of them; default: every partition).
        buckets: buckets to compact (default: every bucket).
        strategy: ``full`` (default): every selected bucket with more than one sorted run, or
            with its only run below the max level, ends as one sorted run on the max level;
            ``minor``: what the universal picker asks for (see
            :data:`paimon_core.compact.options.CompactStrategy`).
        commit_user: the commit user (default: a random one).
        max_attempts: plans tried when commits conflict.
        max_workers: buckets compacted in parallel.

    Returns:
        The id of the COMPACT snapshot, or None when nothing needed compaction.

    Raises:
        CommitConflictError: every one of ``max_attempts`` plans conflicted with concurrent
            commits.
        CommitStateUnknownError: the commit's outcome is unknown (nothing was cleaned up).
        SchemaError: an unknown ``strategy``.
    """
    full = is_full(strategy)
    user = commit_user or f"compact-{uuid.uuid4()}"
    accept_part = partition_filter(table.schema, partitions)
    wanted = set(buckets) if buckets is not None else None
    compactor = BucketCompactor(table.file_io, table.path, table.schema, table.schema_manager)
    committer = table.new_commit(user)
    last: CommitConflictError | None = None
    for attempt in range(max(1, max_attempts)):
        snap = table.snapshot_manager.latest_snapshot()
        groups = live_bucket_files(
            table.manifest_io, snap,
            lambda p, b: accept_part(p) and (wanted is None or b in wanted))
        todo = [(k, v) for k, v in sorted(groups.items(), key=lambda kv: kv[0])
                if compactor.needs_compaction(v[1], full=full)]
        if not todo:
            return None
        messages = _run_all(compactor, todo, full, max_workers, committer.abort)
        if not messages:
            return None
        try:
            ids = committer.commit(messages)
        except CommitConflictError as e:
            log.info("compaction attempt %d conflicted (%s); re-planning", attempt + 1, e)
            committer.abort(messages)
            last = e
            continue
        return ids[-1] if ids else None
    raise CommitConflictError(
        f"compaction conflicted with concurrent commits {max_attempts} times: {last}")


def _run_all(
    compactor: BucketCompactor,
    todo: Sequence[tuple[tuple[bytes, int], tuple[int, list[DataFileMeta]]]],
    full: bool, max_workers: int, abort: Callable[[Sequence[CommitMessage]], None],
) -> list[CommitMessage]:
    def one(item: tuple[tuple[bytes, int], tuple[int, list[DataFileMeta]]]
            ) -> CommitMessage | None:
        (part, bucket), (total, files) = item
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
